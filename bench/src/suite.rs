//! The benchmark suite (`mmaemu bench suite`): LLM-shaped GEMMs (decode steps with M = 1, small batches, long K)
//! for hopper and ada, fast and slow, each measured with `auto`, with every SIMD level above portable, and
//! against the native fp32 GEMM of the same shape on the same threads — the rows of kernels/performance.md's tables.

use crate::gemm::{gemm_planted, GemmBench, GemmResult, Planted};
use mmaemu_kernels::SimdLevel;
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
    /// Timed runs of each GEMM below 2^32 multiply-adds, at least (more for small ones: about 2^31
    /// multiply-adds, at most 50); the best counts. Larger ones run once.
    pub reps: usize,
    /// Presets (profiles' presets by name).
    pub presets: Vec<String>,
    /// Skip shapes above this many multiply-adds (None: run all).
    pub max_macs: Option<u64>,
    /// Rounds: every measurement of a row is repeated this many times, in turn, and its best round counts.
    pub rounds: usize,
    /// The memory ceiling of each benchmark, in bytes.
    pub max_bytes: u64,
}

/// Two runs of the same benchmark: the faster emulated time and the faster native time.
fn best_of(a: GemmResult, b: GemmResult) -> GemmResult {
    let emulated = if b.emulated_s < a.emulated_s { &b } else { &a };
    let native = match (a.native_s, b.native_s) {
        (Some(x), Some(y)) if y < x => &b,
        _ => &a,
    };
    let mut r = emulated.clone();
    r.native_s = native.native_s;
    r.native_f32_gmacs = native.native_f32_gmacs;
    r.native = native.native.clone();
    r.ratio = r.native_s.map(|ns| ns / r.emulated_s);
    r
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
    let levels: Vec<SimdLevel> =
        mmaemu_api::env::simd_levels().into_iter().filter(|l| *l != SimdLevel::portable()).collect();
    let mut out = Vec::new();
    for (m, n, k) in shapes() {
        let macs = (m * n * k) as u64;
        if s.max_macs.is_some_and(|most| macs > most) {
            continue;
        }
        // Small GEMMs take milliseconds, where one descheduling decides a run: more runs (about 2^31
        // multiply-adds in all, at most 50), the best counts.
        let reps = if macs < 1 << 32 { s.reps.max(((1u64 << 31) / macs.max(1)).min(50) as usize) } else { 0 };
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
                    scales: Default::default(),
                    bias: false,
                };
                let gemm = |b: GemmBench| {
                    gemm_planted(&b, &Planted::default(), s.max_bytes, mmaemu_model::Catalogue::builtin())
                };
                // Rounds of auto, the native GEMM and every level in turn; each keeps its best round, so a
                // slow spell of the machine does not fall on one side only.
                let mut auto = gemm(bench("auto".into(), false))?;
                let mut lv: Vec<(String, f64)> = levels.iter().map(|l| (l.name().to_string(), 0.0)).collect();
                for round in 0..s.rounds.max(1) {
                    if round > 0 {
                        let again = gemm(bench("auto".into(), false))?;
                        auto = best_of(auto, again);
                    }
                    for (l, g) in levels.iter().zip(lv.iter_mut()) {
                        g.1 = g.1.max(gemm(bench(format!("cpu:{}", l.name()), true))?.emulated_gmacs);
                    }
                }
                let r = SuiteRow { auto, levels: lv };
                row(&r);
                out.push(r);
            }
        }
    }
    Ok(out)
}
