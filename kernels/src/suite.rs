//! The benchmark suite (`mmaemu bench suite`): LLM-shaped GEMMs (decode steps with M = 1, small batches, long K)
//! for hopper and ada, fast and slow, each measured with `auto`, with every SIMD level above portable, and
//! against the native fp32 GEMM of the same shape on the same threads — the rows of kernels/README.md's table.

use crate::bench::{gemm, GemmBench, GemmResult};
use crate::SimdLevel;
use mmaemu_model::Format;

/// The suite's shapes (M, N, K): M in {1, 16, 128, 2048} against the (N, K) of common layers, then a long K,
/// a cube and a larger layer.
pub fn shapes() -> Vec<(usize, usize, usize)> {
    let mut v = Vec::new();
    for m in [1, 16, 128, 2048] {
        for (n, k) in [(4096, 4096), (14336, 4096), (4096, 14336)] {
            v.push((m, n, k));
        }
    }
    v.extend([(64, 64, 65536), (1024, 1024, 1024), (2048, 5760, 1920)]);
    v
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Suite {
    /// Threads (None: every core).
    pub threads: Option<usize>,
    /// Timed runs of each GEMM below 2^32 multiply-adds (the best counts); larger ones run once.
    pub reps: usize,
    /// Presets (profiles' presets by name).
    pub presets: Vec<String>,
    /// Skip shapes above this many multiply-adds (None: run all).
    pub max_macs: Option<u64>,
}

/// One row: a shape, preset and accumulation, `auto`'s measurement (with the native GEMM) and each level's.
#[derive(Clone, Debug)]
pub struct SuiteRow {
    /// `auto`'s run: the level and tiling it chose, its GMAC/s, the native GEMM's.
    pub auto: GemmResult,
    /// (level, GMAC/s) of every level above portable, best first.
    pub levels: Vec<(String, f64)>,
}

impl SuiteRow {
    /// The fastest of `auto` and the explicit levels: (name, GMAC/s).
    pub fn best(&self) -> (String, f64) {
        self.levels
            .iter()
            .map(|(l, g)| (format!("cpu:{l}"), *g))
            .chain([(format!("auto ({})", self.auto.simd), self.auto.emulated_gmacs)])
            .fold((String::new(), 0.0), |b, x| if x.1 > b.1 { x } else { b })
    }

    /// `auto`'s rate over the best explicit level's (1 when no level ran).
    pub fn auto_over_best(&self) -> f64 {
        let best = self.levels.iter().map(|(_, g)| *g).fold(0.0, f64::max);
        if best > 0.0 {
            self.auto.emulated_gmacs / best
        } else {
            1.0
        }
    }
}

/// Run the suite, calling `row` after each row (a long run reports as it goes).
pub fn run(s: &Suite, mut row: impl FnMut(&SuiteRow)) -> Result<Vec<SuiteRow>, String> {
    let levels: Vec<SimdLevel> = SimdLevel::available().into_iter().filter(|l| *l != SimdLevel::portable()).collect();
    let mut out = Vec::new();
    for (m, n, k) in shapes() {
        let macs = (m * n * k) as u64;
        if s.max_macs.is_some_and(|most| macs > most) {
            continue;
        }
        let reps = if macs < 1 << 32 { s.reps } else { 0 };
        for preset in &s.presets {
            for fast in [true, false] {
                let bench = |backend: String, no_native: bool| GemmBench {
                    m,
                    n,
                    k,
                    profile: None,
                    preset: Some(preset.clone()),
                    fast,
                    splitk: "1".into(),
                    fmt_a: Format::E4m3,
                    fmt_b: Format::E4m3,
                    threads: s.threads,
                    backend,
                    tiling: None,
                    reps,
                    no_native,
                    verify: false,
                };
                let auto = gemm(&bench("auto".into(), false))?;
                let mut lv = Vec::new();
                for l in &levels {
                    lv.push((l.name().to_string(), gemm(&bench(format!("cpu:{}", l.name()), true))?.emulated_gmacs));
                }
                let r = SuiteRow { auto, levels: lv };
                row(&r);
                out.push(r);
            }
        }
    }
    Ok(out)
}
