//! The GEMM benchmark (`mmaemu bench gemm`, the report's throughput): the throughput of one emulated FP8 GEMM and, in the same run and on the same
//! threads, of a native fp32 GEMM of the same shape (matrixmultiply's tuned sgemm), in GMAC/s, and their
//! ratio.
//!
//! The emulated GEMM is the model's plan execution (`execute`: non-finite scan, plan, split combination)
//! on the selected backend, over random finite codes of the chosen formats; the native one is
//! `C = A x B^T` over random fp32 values. The backend is selected (and self-checked) first; then each GEMM
//! is run once to warm up and timed `reps` times, and the best time counts (both sides alike).

use crate::native;
use crate::scales::{ScaledCall, Scales};
use mmaemu_api::env;
use mmaemu_api::registry::registry;
use mmaemu_kernels::tiling::Tiling;
use mmaemu_kernels::{CpuEngine, SimdLevel};
use mmaemu_model::format::Class;
use mmaemu_model::plan::{Scheme, SplitK};
use mmaemu_model::scaled_mm::resolve_profile;
use mmaemu_model::{Catalogue, Format, Operands, Plan, Preset};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

/// What to benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmBench {
    /// M: rows of A and of the result.
    pub m: usize,
    /// N: rows of B (columns of mat2) and columns of the result.
    pub n: usize,
    /// K: the reduction length.
    pub k: usize,
    /// Profile whose preset is emulated (default: MMAEMU_PROFILE, else hopper).
    pub profile: Option<String>,
    /// A preset instead of a profile's: a built-in name or the path of a preset document.
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
    /// A fixed tiling of the CPU backend (None: chosen from the shape, as every call does).
    pub tiling: Option<Tiling>,
    /// Timed repetitions of each side.
    pub reps: usize,
    /// Skip the native GEMM (its fp32 operands take 4x the memory of the FP8 ones).
    pub no_native: bool,
    /// Compare the result bit for bit with a second backend (the CPU backend; the model when the CPU
    /// backend itself is measured).
    pub verify: bool,
    /// How the call scales its product (`--scales`).
    pub scales: Scales,
    /// Row-wise with a bf16 bias (`--bias`).
    pub bias: bool,
}

/// Non-finite codes planted in both operands (`mmaemu bench gemm --nan F --inf F`): each a fraction of the codes,
/// at positions drawn from the benchmark's seeded generator. Zero and zero: the operands stay finite.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Planted {
    /// Fraction of the codes replaced by NaN codes.
    pub nan: f64,
    /// Fraction of the codes replaced by Inf codes of either sign (E5M2 only: E4M3 has none).
    pub inf: f64,
}

/// A benchmark with planted non-finite codes: the same GEMM over the finite operands, timed in the same run.
#[derive(Clone, Debug, PartialEq)]
pub struct PlantedResult {
    /// What was asked for.
    pub planted: Planted,
    /// Codes replaced in A and B together.
    pub codes: usize,
    /// Best time of the finite operands, seconds.
    pub finite_s: f64,
    /// Planted time / finite time.
    pub slowdown: f64,
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
    /// The scaling mode (`tensorwise`, `rowwise`, `rowwise+bias`, `block128`, `block128x128`, `mx`, `nvfp4`).
    pub scales: String,
    /// The split (`1` or `S,scheme`).
    pub split: String,
    /// Formats `a x b`.
    pub formats: String,
    /// The backend that ran (`cpu:avx2`, `reference`, ...).
    pub backend: String,
    /// Its SIMD level (`avx512`, `avx2`, `portable`; `none` for the model).
    pub simd: String,
    /// The CPU backend's tiling of this shape (`panels`, `products`, `+swap` when A and B exchange roles;
    /// `none` for other backends).
    pub tiling: String,
    /// The CPU backend's block step for the preset (`CpuEngine::step_name`: `narrow`, `f64`, `i32`, `single
    /// product`, `scalar`; `none` for other backends).
    pub step: String,
    /// The rayon threads both GEMMs ran on.
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
    /// The native GEMM (`OpenBLAS ...` or `matrixmultiply`; `... (sgemv)` when, for one row, the
    /// matrix-vector product was the faster; None: skipped).
    pub native: Option<String>,
    /// The backend the result was compared with, bit for bit (`--verify`).
    pub verified: Option<String>,
    /// With planted non-finite codes: the finite operands' time next to it (`emulated_s` is the planted one's).
    pub planted: Option<PlantedResult>,
}

/// Random finite codes of a format.
fn codes(n: usize, f: Format, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let c: u8 = rng.random();
        if !f.is_nonfinite(c) {
            v.push(c);
        }
    }
    v
}

/// Replace about `fraction * len` codes (drawn with repetition) by codes of `pick`; returns how many were drawn.
fn plant(codes: &mut [u8], fraction: f64, pick: &[u8], rng: &mut ChaCha8Rng) -> usize {
    let count = (fraction * codes.len() as f64).round() as usize;
    if pick.is_empty() || codes.is_empty() {
        return 0;
    }
    for _ in 0..count {
        let at = rng.random_range(0..codes.len());
        codes[at] = pick[rng.random_range(0..pick.len())];
    }
    count
}

/// Refuse a fraction outside [0, 1] and Inf codes in a format that has none.
fn check_planted(p: &Planted, fa: Format, fb: Format) -> Result<(), String> {
    for (name, x) in [("--nan", p.nan), ("--inf", p.inf)] {
        if !(0.0..=1.0).contains(&x) {
            return Err(format!("{name} {x} is not a fraction of the codes (0 to 1)"));
        }
    }
    if p.inf > 0.0 && fa != Format::E5m2 && fb != Format::E5m2 {
        return Err("--inf needs an e5m2 operand: e4m3 has no infinities".into());
    }
    Ok(())
}

/// NaN and Inf codes of a format.
fn nonfinite_codes(f: Format) -> (Vec<u8>, Vec<u8>) {
    let class = |c: u8| f.decoded(c).class;
    let all = 0..=255u8;
    (all.clone().filter(|&c| class(c) == Class::Nan).collect(), all.filter(|&c| class(c) == Class::Inf).collect())
}

fn preset_of(b: &GemmBench, catalogue: &Catalogue) -> Result<Preset, String> {
    if let Some(name) = &b.preset {
        return catalogue
            .preset_or_path(name, mmaemu_datasets::platform::read_preset_document)
            .map_err(|e| e.to_string());
    }
    let profile = env::profile_arg(b.profile.as_deref())
        .and_then(|p| resolve_profile(&p, catalogue))
        .map_err(|e| e.to_string())?;
    Ok(profile.preset)
}

fn split_of(s: &str, preset: &Preset, catalogue: &Catalogue) -> Result<SplitK, String> {
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
            *catalogue.schemes(preset).first().ok_or_else(|| format!("preset '{}' has no split-K", preset.name()))?
        }
    };
    SplitK::new(count, scheme).map_err(|e| e.to_string())
}

/// Wall time of one run of `f`.
fn time(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
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

/// The most threads a benchmark may ask for: four per core.
pub fn max_threads() -> usize {
    4 * std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Refuse a shape or thread count before anything is allocated: an empty GEMM (its throughput means
/// nothing), a size that overflows, memory above the ceiling (operands, result, and the native GEMM's
/// fp32 copies unless skipped), no threads or more than [`max_threads`].
fn check_size(b: &GemmBench, max_bytes: u64) -> Result<(), String> {
    use mmaemu_model::limits::{check, product, sum};
    if b.m == 0 || b.n == 0 || b.k == 0 {
        return Err(format!("{}x{}x{} is an empty GEMM: M, N and K must be at least 1", b.m, b.n, b.k));
    }
    match b.threads {
        Some(0) => return Err("--threads must be at least 1".into()),
        Some(t) if t > max_threads() => {
            return Err(format!("--threads {t} is more than {} (four per core)", max_threads()));
        }
        _ => {}
    }
    let (m, n, k) = (b.m as u64, b.n as u64, b.k as u64);
    let (ak, bk, mn) = (product(&[m, k]), product(&[n, k]), product(&[m, n]));
    // The accumulator and the result; with scales, a block's partials and the output next to them.
    let per_output = if b.scales == Scales::TensorWise { 8 } else { 16 };
    let fp8 = sum(&[ak, bk, mn.and_then(|x| x.checked_mul(per_output))]);
    let native = if b.no_native { Some(0) } else { sum(&[ak, bk, mn]).and_then(|x| x.checked_mul(4)) };
    check(&format!("the {}x{}x{} benchmark", b.m, b.n, b.k), sum(&[fp8, native]), max_bytes)
}

/// Run the benchmark under the ceiling of MMAEMU_MAX_BYTES.
pub fn gemm(b: &GemmBench) -> Result<GemmResult, String> {
    let max_bytes = env::max_bytes().map_err(|e| e.message().to_string())?;
    gemm_planted(b, &Planted::default(), max_bytes, Catalogue::builtin())
}

/// Run the benchmark with non-finite codes planted in both operands (profile and preset names looked up in
/// `catalogue`); when some are, the finite operands are timed too, in turn with the planted ones (repetition by
/// repetition), on the same pool. Nothing is allocated above `max_bytes`.
pub fn gemm_planted(
    b: &GemmBench,
    planted: &Planted,
    max_bytes: u64,
    catalogue: &Catalogue,
) -> Result<GemmResult, String> {
    check_size(b, max_bytes)?;
    env::native_matrixmultiply().map_err(|e| e.message().to_string())?;
    check_planted(planted, b.fmt_a, b.fmt_b)?;
    let preset = preset_of(b, catalogue)?;
    let split = split_of(&b.splitk, &preset, catalogue)?;
    let plan = Plan::new(&preset, b.k, b.fast, split).map_err(|e| e.to_string())?;
    let selected = registry().resolve(&b.backend).map_err(|e| e.to_string())?;
    let level = selected.name.strip_prefix("cpu:").and_then(SimdLevel::by_name);
    let fixed = match (level, b.tiling) {
        (Some(level), Some(t)) => Some(CpuEngine::with_tiling(level, t)),
        (None, Some(_)) => return Err(format!("--tiling applies to the CPU backend, not to {}", selected.name)),
        _ => None,
    };
    let engine: &dyn mmaemu_model::ChainEngine = match &fixed {
        Some(e) => e,
        None => selected.engine,
    };
    let pool = match b.threads {
        Some(t) => rayon::ThreadPoolBuilder::new().num_threads(t).build(),
        None => rayon::ThreadPoolBuilder::new().build(),
    }
    .map_err(|e| e.to_string())?;
    let (m, n, k) = (b.m, b.n, b.k);
    let macs = (m * n * k) as f64;
    let mut rng = ChaCha8Rng::seed_from_u64(0x2545_F491_4F6C_DD1D ^ (m * 31 + n * 17 + k) as u64);
    let a = codes(m * k, b.fmt_a, &mut rng);
    let bb = codes(n * k, b.fmt_b, &mut rng);
    let finite = Operands { fa: b.fmt_a, fb: b.fmt_b, a: &a, b: &bb, m, n, k };
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    let mut count = 0;
    if *planted != Planted::default() {
        // A second copy of each operand, with the planted codes (the check above counted one copy only: the ceiling
        // is checked again with both).
        let bytes = Some(2 * (m as u64 * k as u64 + n as u64 * k as u64));
        mmaemu_model::limits::check("the planted operands", bytes, max_bytes)?;
        (pa, pb) = (a.clone(), bb.clone());
        for (codes, f) in [(&mut pa, b.fmt_a), (&mut pb, b.fmt_b)] {
            let (nans, infs) = nonfinite_codes(f);
            count += plant(codes, planted.nan, &nans, &mut rng) + plant(codes, planted.inf, &infs, &mut rng);
        }
    }
    let is_planted = !pa.is_empty();
    let ops = if is_planted { Operands { a: &pa, b: &pb, ..finite } } else { finite };
    let tiling = match level {
        Some(level) => {
            let c = fixed.unwrap_or(CpuEngine::with_level(level)).choice(&preset, &ops);
            format!("{}{}", c.tiling.name(), if c.swap { "+swap" } else { "" })
        }
        None => "none".to_string(),
    };
    let step = if level.is_some() { CpuEngine::step_name(&preset) } else { "none" }.to_string();
    let dims = mmaemu_model::block_gemm::Dims { m, n, k };
    let call = ScaledCall::new(&preset, &plan, dims, b.scales, b.bias, &mut rng)?;
    let mut result = Err(String::from("not run"));
    let mut run = |o: &Operands<'_>| result = call.run(o, engine);
    let (emulated_s, finite_s) = pool.install(|| {
        if is_planted {
            // The finite and the planted operands in turn, so that both see the same load.
            let (mut planted_s, mut finite_s) = (f64::INFINITY, f64::INFINITY);
            for r in 0..=b.reps {
                let f = time(|| run(&finite));
                let p = time(|| run(&ops));
                if r > 0 || b.reps == 0 {
                    (planted_s, finite_s) = (planted_s.min(p), finite_s.min(f));
                }
            }
            (planted_s, finite_s)
        } else {
            (best_time(b.reps, || run(&ops)), f64::NAN)
        }
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
        let want = pool.install(|| call.run(&ops, other))?;
        if let Some(i) = (0..want.len()).find(|&i| want[i] != result[i]) {
            return Err(format!(
                "{} differs from {} at output ({}, {}): {:#010x}, expected {:#010x}",
                selected.name,
                other.name(),
                i / n,
                i % n,
                result[i],
                want[i]
            ));
        }
        Some(other.name())
    } else {
        None
    };
    drop((a, bb, pa, pb, result));
    // The native GEMM; for one row also the matrix-vector product, and the faster of the two counts.
    let native = (!b.no_native).then(|| {
        let af: Vec<f32> = (0..m * k).map(|_| rng.random::<f32>() - 0.5).collect();
        let bf: Vec<f32> = (0..n * k).map(|_| rng.random::<f32>() - 0.5).collect();
        let mut c = vec![0f32; m * n];
        let t = pool.current_num_threads();
        let gemm = pool.install(|| best_time(b.reps, || native::sgemm(m, n, k, &af, &bf, &mut c, t)));
        let gemv = (m == 1 && native::sgemv(n, k, &af, &bf, &mut c, t).is_some()).then(|| {
            best_time(b.reps, || {
                let _ = native::sgemv(n, k, &af, &bf, &mut c, t);
            })
        });
        match gemv {
            Some(v) if v < gemm => (v, format!("{} (sgemv)", native::name())),
            _ => (gemm, native::name()),
        }
    });
    let native_s = native.as_ref().map(|n| n.0);
    let gmacs = |s: f64| macs / s / 1e9;
    let simd = selected.name.strip_prefix("cpu:").unwrap_or("none").to_string();
    Ok(GemmResult {
        shape: format!("{m}x{n}x{k}"),
        preset: preset.name().to_string(),
        fast: b.fast,
        scales: format!("{}{}", b.scales.name(), if b.bias { "+bias" } else { "" }),
        split: split.to_string(),
        formats: format!("{} x {}", b.fmt_a, b.fmt_b),
        backend: selected.name.clone(),
        simd,
        tiling,
        step,
        threads: pool.current_num_threads(),
        emulated_s,
        emulated_gmacs: gmacs(emulated_s),
        native_s,
        native_f32_gmacs: native_s.map(gmacs),
        ratio: native_s.map(|ns| ns / emulated_s),
        native: native.map(|n| n.1),
        verified,
        planted: is_planted.then(|| PlantedResult {
            planted: *planted,
            codes: count,
            finite_s,
            slowdown: emulated_s / finite_s,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small benchmark on the CPU backend, one thread, one repetition, verified; E4M3 x E5M2.
    fn small(m: usize, n: usize, k: usize, fast: bool, splitk: &str, no_native: bool) -> GemmBench {
        GemmBench {
            m,
            n,
            k,
            profile: None,
            preset: None,
            fast,
            splitk: splitk.into(),
            fmt_a: Format::E4m3,
            fmt_b: Format::E5m2,
            threads: Some(1),
            backend: "cpu".into(),
            tiling: None,
            reps: 1,
            no_native,
            verify: true,
            scales: Scales::TensorWise,
            bias: false,
        }
    }

    #[test]
    fn small_bench_runs() {
        let r = gemm(&small(16, 40, 300, false, "3", false)).unwrap();
        assert_eq!(r.split, "3,contiguous");
        assert_eq!(r.threads, 1);
        assert_eq!(r.verified.as_deref(), Some("reference"));
        assert!(r.emulated_gmacs > 0.0 && r.ratio.unwrap() > 0.0);
        assert!(split_of("2,bogus", &Preset::ada(), Catalogue::builtin()).is_err());
    }

    /// The block-wise modes (1x128, and 1x128 on A with 128x128 on B) on the CPU backend, at every tiling, with and
    /// without planted NaN and Inf codes, are the model's bits (`--verify` fails on the first differing output); K is
    /// not a multiple of 128, and 150 rows of B span two 128-row scale tiles.
    #[test]
    fn blockwise_bench_is_verified_against_the_model() {
        for scales in [Scales::Block128, Scales::Block128x128] {
            for (tiling, threads) in [(None, Some(1)), (Some(Tiling::Panels), None), (Some(Tiling::Products), None)] {
                let b = GemmBench {
                    scales,
                    tiling,
                    threads,
                    preset: Some("hopper".into()),
                    ..small(7, 150, 300, false, "1", true)
                };
                for (nan, inf) in [(0.0, 0.0), (0.002, 0.002)] {
                    let limit = mmaemu_model::limits::DEFAULT_MAX_BYTES;
                    let r = gemm_planted(&b, &Planted { nan, inf }, limit, Catalogue::builtin()).unwrap();
                    assert_eq!(r.verified.as_deref(), Some("reference"), "{scales:?} {tiling:?} nan {nan}");
                    assert_eq!(r.scales, scales.name());
                }
            }
        }
        assert!(Scales::NAMES.iter().all(|n| Scales::from_name(n).map(Scales::name) == Some(*n)));
    }

    /// Planted NaN and Inf codes: counted, timed next to the finite operands, the result verified against the
    /// model; a fraction outside [0, 1] and Inf codes without an E5M2 operand are refused.
    #[test]
    fn planted_bench_runs() {
        let mut b = small(8, 24, 200, true, "1", true);
        let run = |b: &GemmBench, nan: f64, inf: f64| {
            gemm_planted(b, &Planted { nan, inf }, mmaemu_model::limits::DEFAULT_MAX_BYTES, Catalogue::builtin())
        };
        let r = run(&b, 0.01, 0.02).unwrap();
        let p = r.planted.unwrap();
        // 1 % of A's and B's codes as NaN, 2 % of B's as Inf (A is E4M3).
        assert_eq!(p.codes, 16 + 48 + 96);
        assert!(p.finite_s > 0.0 && p.slowdown > 0.0 && r.verified.is_some());
        assert!(run(&b, 1.5, 0.0).is_err());
        b.fmt_b = Format::E4m3;
        assert!(run(&b, 0.0, 0.01).unwrap_err().contains("e5m2"));
        assert!(gemm(&b).unwrap().planted.is_none());
    }
}
