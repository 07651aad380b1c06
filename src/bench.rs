//! `mmaemu bench gemm`: the throughput of one emulated FP8 GEMM and, in the same run and on the same
//! threads, of a native fp32 GEMM of the same shape (matrixmultiply's tuned sgemm), in GMAC/s, and their
//! ratio.
//!
//! The emulated GEMM is the model's plan execution (`execute`: non-finite scan, plan, split combination)
//! on the selected backend, over random finite codes of the chosen formats; the native one is
//! `C = A x B^T` over random fp32 values. The backend is selected (and self-checked) first; then each GEMM
//! is run once to warm up and timed `reps` times, and the best time counts (both sides alike).

use crate::backend::registry;
use mmaemu_kernels::native;
use mmaemu_kernels::rng::Rng;
use mmaemu_model::plan::{Scheme, SplitK};
use mmaemu_model::scaled_mm::resolve_profile;
use mmaemu_model::{execute, Format, Operands, Plan, Preset};
use serde_json::{json, Value};
use std::time::Instant;

/// What to benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmBench {
    /// M.
    pub m: usize,
    /// N.
    pub n: usize,
    /// K.
    pub k: usize,
    /// Profile whose preset is emulated (default: MMAEMU_PROFILE, else hopper).
    pub profile: Option<String>,
    /// A preset by name instead of a profile's.
    pub preset: Option<String>,
    /// Fast accumulation (use_fast_accum=True) or slow.
    pub fast: bool,
    /// The split: `1`, `S` (the preset's first scheme) or `S,scheme`.
    pub splitk: String,
    /// Format of A.
    pub fmt_a: Format,
    /// Format of B.
    pub fmt_b: Format,
    /// Threads (None: rayon's default, every core).
    pub threads: Option<usize>,
    /// Backend name (`auto`, `cpu`, `cpu:<simd>`, `reference`).
    pub backend: String,
    /// Timed repetitions of each side.
    pub reps: usize,
    /// Skip the native GEMM (its fp32 operands take 4x the memory of the FP8 ones).
    pub no_native: bool,
    /// Compare the result bit for bit with a second backend (the CPU backend; the model when the CPU
    /// backend itself is measured).
    pub verify: bool,
}

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmResult {
    /// `MxNxK`.
    pub shape: String,
    /// Preset name.
    pub preset: String,
    /// Fast accumulation?
    pub fast: bool,
    /// The split (`1` or `S,scheme`).
    pub split: String,
    /// Formats `a x b`.
    pub formats: String,
    /// The backend that ran (`cpu:avx2`, `reference`, ...).
    pub backend: String,
    /// Its SIMD level (`avx512`, `avx2`, `portable`; `none` for the model).
    pub simd: String,
    /// Threads.
    pub threads: usize,
    /// Best emulated time, seconds.
    pub emulated_s: f64,
    /// Emulated GMAC/s.
    pub emulated_gmacs: f64,
    /// Best native fp32 time, seconds (None: skipped).
    pub native_s: Option<f64>,
    /// Native fp32 GMAC/s.
    pub native_f32_gmacs: Option<f64>,
    /// emulated / native.
    pub ratio: Option<f64>,
    /// The backend the result was compared with, bit for bit (`--verify`).
    pub verified: Option<String>,
}

/// Random finite codes of a format.
fn codes(n: usize, f: Format, rng: &mut Rng) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let x = rng.word();
        for c in x.to_le_bytes() {
            if v.len() < n && !f.is_nonfinite(c) {
                v.push(c);
            }
        }
    }
    v
}

fn preset_of(b: &GemmBench) -> Result<Preset, String> {
    if let Some(name) = &b.preset {
        return Preset::by_name(name).map_err(|e| e.to_string());
    }
    let profile = resolve_profile(&crate::env::profile_arg(b.profile.as_deref())).map_err(|e| e.to_string())?;
    Ok(profile.preset)
}

fn split_of(s: &str, preset: &Preset) -> Result<SplitK, String> {
    let bad = || format!("malformed --splitk '{s}': expected 1, S or S,scheme");
    let (count, scheme) = match s.split_once(',') {
        Some((c, sc)) => (c.trim(), Some(sc.trim())),
        None => (s.trim(), None),
    };
    let count: usize = count.parse().map_err(|_| bad())?;
    let scheme = match scheme {
        Some(name) => Scheme::from_name(name).ok_or_else(bad)?,
        None if count == 1 => Scheme::None,
        None => {
            *preset.allowed_schemes().first().ok_or_else(|| format!("preset '{}' has no split-K", preset.name()))?
        }
    };
    SplitK::new(count, scheme).map_err(|e| e.to_string())
}

/// Best wall time of `reps` runs of `f` after one warm-up run; `reps = 0`: one run, no warm-up.
fn best_time(reps: usize, mut f: impl FnMut()) -> f64 {
    if reps > 0 {
        f();
    }
    (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Run the benchmark.
pub fn gemm(b: &GemmBench) -> Result<GemmResult, String> {
    let preset = preset_of(b)?;
    let split = split_of(&b.splitk, &preset)?;
    let plan = Plan::new(&preset, b.k, b.fast, split).map_err(|e| e.to_string())?;
    let selected = registry().resolve(&b.backend).map_err(|e| e.to_string())?;
    let engine = selected.engine;
    let pool = match b.threads {
        Some(t) => rayon::ThreadPoolBuilder::new().num_threads(t).build(),
        None => rayon::ThreadPoolBuilder::new().build(),
    }
    .map_err(|e| e.to_string())?;
    let (m, n, k) = (b.m, b.n, b.k);
    let macs = (m * n * k) as f64;
    let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ (m * 31 + n * 17 + k) as u64);
    let a = codes(m * k, b.fmt_a, &mut rng);
    let bb = codes(n * k, b.fmt_b, &mut rng);
    let ops = Operands { fa: b.fmt_a, fb: b.fmt_b, a: &a, b: &bb, m, n, k };
    let mut result = Err(String::from("not run"));
    let emulated_s = pool.install(|| {
        best_time(b.reps, || {
            result = execute(&preset, &plan, &ops, engine).map_err(|e| e.to_string());
        })
    });
    let result = result?;
    // A GPU engine that fell back computed on the CPU: its time is not the GPU's.
    if selected.name.starts_with("cuda") {
        if let Some(w) = registry().gpu(0).warnings().first() {
            return Err(format!("the GPU engine fell back to the CPU: {w}"));
        }
    }
    let verified = if b.verify {
        let other: &dyn mmaemu_model::ChainEngine = if selected.name.starts_with("cpu") {
            &mmaemu_model::ReferenceEngine
        } else {
            registry().resolve("cpu").map_err(|e| e.to_string())?.engine
        };
        let want = pool.install(|| execute(&preset, &plan, &ops, other)).map_err(|e| e.to_string())?;
        if let Some(i) = (0..want.len()).find(|&i| want[i].to_bits() != result[i].to_bits()) {
            return Err(format!(
                "{} differs from {} at output ({}, {}): {:#010x}, expected {:#010x}",
                selected.name,
                other.name(),
                i / n,
                i % n,
                result[i].to_bits(),
                want[i].to_bits()
            ));
        }
        Some(other.name())
    } else {
        None
    };
    drop((a, bb, result));
    let native_s = (!b.no_native).then(|| {
        let af: Vec<f32> = (0..m * k).map(|_| (rng.word() >> 40) as f32 / (1u64 << 24) as f32 - 0.5).collect();
        let bf: Vec<f32> = (0..n * k).map(|_| (rng.word() >> 40) as f32 / (1u64 << 24) as f32 - 0.5).collect();
        let mut c = vec![0f32; m * n];
        pool.install(|| best_time(b.reps, || native::sgemm(m, n, k, &af, &bf, &mut c)))
    });
    let gmacs = |s: f64| macs / s / 1e9;
    let simd = selected.name.strip_prefix("cpu:").unwrap_or("none").to_string();
    Ok(GemmResult {
        shape: format!("{m}x{n}x{k}"),
        preset: preset.name().to_string(),
        fast: b.fast,
        split: split.to_string(),
        formats: format!("{} x {}", b.fmt_a, b.fmt_b),
        backend: selected.name.clone(),
        simd,
        threads: pool.current_num_threads(),
        emulated_s,
        emulated_gmacs: gmacs(emulated_s),
        native_s,
        native_f32_gmacs: native_s.map(gmacs),
        ratio: native_s.map(|ns| ns / emulated_s),
        verified,
    })
}

/// `mmaemu bench ...`.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Time one emulated FP8 GEMM (A [M, K] x B [N, K]^T) and a native fp32 GEMM of the same shape.
    Gemm(GemmArgs),
}

/// `mmaemu bench gemm` arguments.
#[derive(clap::Args, Debug)]
pub struct GemmArgs {
    /// M (rows of A).
    #[arg(long)]
    pub m: usize,
    /// N (rows of B, columns of the result).
    #[arg(long)]
    pub n: usize,
    /// K.
    #[arg(long)]
    pub k: usize,
    /// Profile whose preset is emulated (default: MMAEMU_PROFILE, else hopper).
    #[arg(long)]
    pub profile: Option<String>,
    /// A preset by name (ada, hopper, b200_mma_sync) instead of a profile's.
    #[arg(long, conflicts_with = "profile")]
    pub preset: Option<String>,
    /// Fast accumulation (use_fast_accum=True; the default).
    #[arg(long, conflicts_with = "slow")]
    pub fast: bool,
    /// Slow accumulation (use_fast_accum=False).
    #[arg(long)]
    pub slow: bool,
    /// The split: 1, S (the preset's scheme) or S,scheme.
    #[arg(long, default_value = "1")]
    pub splitk: String,
    /// Format of A: e4m3 or e5m2.
    #[arg(long, default_value = "e4m3")]
    pub fmt_a: String,
    /// Format of B: e4m3 or e5m2.
    #[arg(long, default_value = "e4m3")]
    pub fmt_b: String,
    /// Threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Backend: auto, cpu, cpu:<simd> (avx512, avx2, portable), reference.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Timed repetitions of each GEMM after one warm-up run (the best counts); 0: one run, no warm-up.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Skip the native fp32 GEMM.
    #[arg(long)]
    pub no_native: bool,
    /// Check the result bit for bit against the CPU backend (the model when measuring the CPU backend).
    #[arg(long)]
    pub verify: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Run a bench command: exit code 0, or 2 for a usage or run error (message on stderr).
pub fn run(cmd: BenchCommand) -> u8 {
    let BenchCommand::Gemm(a) = cmd;
    let format = |name: &str| Format::from_name(name).ok_or_else(|| format!("unknown format '{name}' (e4m3 or e5m2)"));
    let bench = match (format(&a.fmt_a), format(&a.fmt_b)) {
        (Ok(fmt_a), Ok(fmt_b)) => GemmBench {
            m: a.m,
            n: a.n,
            k: a.k,
            profile: a.profile,
            preset: a.preset,
            fast: !a.slow,
            splitk: a.splitk,
            fmt_a,
            fmt_b,
            threads: a.threads,
            backend: a.backend,
            reps: a.reps,
            no_native: a.no_native,
            verify: a.verify,
        },
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("mmaemu bench gemm: {e}");
            return 2;
        }
    };
    match gemm(&bench) {
        Ok(r) if a.json => {
            println!("{}", json(&r));
            0
        }
        Ok(r) => {
            print!("{}", text(&r));
            0
        }
        Err(e) => {
            eprintln!("mmaemu bench gemm: {e}");
            2
        }
    }
}

/// The `--json` object.
pub fn json(r: &GemmResult) -> Value {
    json!({
        "shape": r.shape,
        "preset": r.preset,
        "fast": r.fast,
        "split": r.split,
        "formats": r.formats,
        "backend": r.backend,
        "simd": r.simd,
        "threads": r.threads,
        "emulated_gmacs": r.emulated_gmacs,
        "native_f32_gmacs": r.native_f32_gmacs,
        "ratio": r.ratio,
        "emulated_s": r.emulated_s,
        "native_s": r.native_s,
        "verified_against": r.verified,
    })
}

/// The text report.
pub fn text(r: &GemmResult) -> String {
    let mut s = format!(
        "gemm {} ({}), preset {}, {}, split {}, backend {} (simd {}), {} threads\n",
        r.shape,
        r.formats,
        r.preset,
        if r.fast { "fast" } else { "slow" },
        r.split,
        r.backend,
        r.simd,
        r.threads
    );
    s.push_str(&format!("  emulated:    {:8.2} GMAC/s  ({:.4} s)\n", r.emulated_gmacs, r.emulated_s));
    if let (Some(g), Some(t), Some(ratio)) = (r.native_f32_gmacs, r.native_s, r.ratio) {
        s.push_str(&format!("  native fp32: {g:8.2} GMAC/s  ({t:.4} s, matrixmultiply sgemm)\n"));
        s.push_str(&format!("  ratio:       {ratio:8.3}  (1/{:.1} of native fp32)\n", 1.0 / ratio));
    }
    if let Some(v) = &r.verified {
        s.push_str(&format!("  bits:        identical to {v}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_bench_runs() {
        let b = GemmBench {
            m: 16,
            n: 40,
            k: 300,
            profile: None,
            preset: None,
            fast: false,
            splitk: "3".into(),
            fmt_a: Format::E4m3,
            fmt_b: Format::E5m2,
            threads: Some(1),
            backend: "cpu".into(),
            reps: 1,
            no_native: false,
            verify: true,
        };
        let r = gemm(&b).unwrap();
        assert_eq!(r.split, "3,contiguous");
        assert_eq!(r.threads, 1);
        assert_eq!(r.verified.as_deref(), Some("reference"));
        assert!(r.emulated_gmacs > 0.0 && r.ratio.unwrap() > 0.0);
        let j = json(&r);
        for key in [
            "shape",
            "preset",
            "fast",
            "split",
            "backend",
            "simd",
            "threads",
            "emulated_gmacs",
            "native_f32_gmacs",
            "ratio",
        ] {
            assert!(j.get(key).is_some(), "{key}");
        }
        assert!(split_of("2,bogus", &Preset::ada()).is_err());
    }
}
