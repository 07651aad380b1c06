//! The report's benchmarks: a few fixed GEMM shapes (fast and slow, unsplit and split, both presets), emulated through
//! every backend with the measurement of `mmaemu bench gemm` ([`mmaemu_bench::gemm`]).

// That measurement: the time of the plan execution (non-finite scan, chains, slow sums, split combination) over fixed
// pseudo-random finite codes, best of a few repetitions after a warm-up, and its throughput in multiply-accumulates per
// second.

use super::backends::Backend;
use mmaemu_bench::gemm::{gemm, GemmBench};
use mmaemu_model::{Format, Scheme};
use serde_json::{json, Value};

/// One benchmark shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// Stable name: `<preset> <fast|slow> MxNxK S=s[,scheme]`.
    pub name: String,
    /// Preset name.
    pub preset: &'static str,
    /// M: rows of A.
    pub m: usize,
    /// N: rows of B.
    pub n: usize,
    /// K: the reduction length.
    pub k: usize,
    /// Fast accumulation?
    pub fast: bool,
    /// S: the split count (1: unsplit).
    pub s: usize,
    /// The scheme.
    pub scheme: Scheme,
}

fn shape(preset: &'static str, m: usize, n: usize, k: usize, fast: bool, s: usize, scheme: Scheme) -> Shape {
    let split = if s == 1 { "S=1".to_string() } else { format!("S={s},{}", scheme.name()) };
    let name = format!("{preset} {} {m}x{n}x{k} {split}", if fast { "fast" } else { "slow" });
    Shape { name, preset, m, n, k, fast, s, scheme }
}

/// The shapes every report measures.
pub fn shapes() -> Vec<Shape> {
    vec![
        shape("ada", 64, 64, 2048, true, 1, Scheme::None),
        shape("ada", 64, 64, 2048, false, 1, Scheme::None),
        shape("ada", 32, 64, 4096, true, 4, Scheme::Pairwise),
        shape("ada", 32, 64, 4096, false, 3, Scheme::Serial),
        shape("hopper", 64, 64, 2048, true, 1, Scheme::None),
        shape("hopper", 32, 64, 8192, false, 2, Scheme::Contiguous),
    ]
}

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// The shape's name.
    pub shape: String,
    /// The backend.
    pub backend: String,
    /// M·N·K.
    pub macs: u64,
    /// Best repetition, seconds.
    pub seconds: f64,
    /// Repetitions run.
    pub reps: usize,
    /// Multiply-accumulates per second (macs / seconds).
    pub macs_per_s: f64,
}

impl Measurement {
    /// The JSON form.
    pub fn json(&self) -> Value {
        json!({
            "shape": self.shape, "backend": self.backend, "macs": self.macs, "seconds": self.seconds,
            "reps": self.reps, "macs_per_s": self.macs_per_s,
        })
    }
}

/// Measure every shape on every backend with `mmaemu bench gemm`'s measurement ([`mmaemu_bench::gemm::gemm`]:
/// one warm-up run, then the best of `reps`, every thread, no native GEMM). A shape a backend cannot run is
/// left out.
pub fn run(backends: &[Box<dyn Backend>], reps: usize) -> Vec<Measurement> {
    let mut out = Vec::new();
    for sh in shapes() {
        for be in backends {
            let bench = GemmBench {
                m: sh.m,
                n: sh.n,
                k: sh.k,
                profile: None,
                preset: Some(sh.preset.to_string()),
                fast: sh.fast,
                splitk: if sh.s == 1 { "1".into() } else { format!("{},{}", sh.s, sh.scheme.name()) },
                fmt_a: Format::E4m3,
                fmt_b: Format::E4m3,
                threads: None,
                backend: be.name(),
                tiling: None,
                reps: reps.max(1),
                no_native: true,
                verify: false,
                scales: Default::default(),
                bias: false,
            };
            if let Ok(r) = gemm(&bench) {
                let macs = (sh.m * sh.n * sh.k) as u64;
                out.push(Measurement {
                    shape: sh.name.clone(),
                    backend: be.name(),
                    macs,
                    seconds: r.emulated_s,
                    reps: reps.max(1),
                    macs_per_s: if r.emulated_s > 0.0 { macs as f64 / r.emulated_s } else { 0.0 },
                });
            }
        }
    }
    out
}
