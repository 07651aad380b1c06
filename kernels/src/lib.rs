//! mmaemu-kernels: the engines of mmaemu. [`CpuEngine`] (and the CUDA kernels of [`cuda`], feature `cuda`) implement
//! the model's [`ChainEngine`] hook and return exactly the bits of [`mmaemu_model::ReferenceEngine`]; choosing one and
//! reading `MMAEMU_*` are `mmaemu-api`'s (its `registry` and `env`), so the kernels take the SIMD limit as a value.

// The one variable read here is `MMAEMU_NVRTC_LIB` (`cuda::nvrtc`): the NVRTC file the device side preloads, a path
// for the loader alone that docs/reference.md §9.3 lists with the tools' variables, not a setting `env` parses.

// Besides what README.md says of the modules: `driver` runs the plan's output tiles in parallel with rayon, and the
// batteries, tests and benchmarks draw their inputs from `rand`'s ChaCha8 (`ChaCha8Rng`) with fixed seeds.

pub mod cuda;
pub mod driver;
pub mod fpstate;
pub mod kernel;
pub mod scaled;
pub mod selfcheck;
pub mod small;
pub mod tables;
pub mod tiling;
pub mod x86;

use driver::Job;
use kernel::Path;
use mmaemu_model::accumulate::{each_output, run_plan_by_chunks};
use mmaemu_model::{Chain, ChainEngine, Format, Operands, Plan, Preset};
use rayon::prelude::*;
use std::fmt;
use std::ops::Range;
use tiling::{swapped, transpose, Choice, Tiling};

/// An instruction-set level of the kernels. A value other than [`SimdLevel::portable`] exists only when
/// the running CPU supports that level (it is made by [`SimdLevel::detect`], [`SimdLevel::available`] or
/// [`SimdLevel::by_name`], which ask `is_x86_feature_detected!`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SimdLevel(Level);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Level {
    Portable,
    Avx2,
    Avx512,
}

impl SimdLevel {
    /// Portable code (every CPU).
    pub fn portable() -> SimdLevel {
        SimdLevel(Level::Portable)
    }

    /// Every level the running CPU supports, best first (portable last), none above the level named `limit`
    /// (None: no limit). The kernels read no environment: the library passes MMAEMU_SIMD's value
    /// (`mmaemu_api::env::simd_levels`).
    pub fn available(limit: Option<&str>) -> Vec<SimdLevel> {
        let mut v = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            // VL, DQ, AVX2 and F16C too: the AVX-512 level's product-lane steps use them (`x86/codes.rs`,
            // `x86/wide.rs`).
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("f16c")
            {
                v.push(SimdLevel(Level::Avx512));
            }
            if is_x86_feature_detected!("avx2") {
                v.push(SimdLevel(Level::Avx2));
            }
        }
        v.push(SimdLevel::portable());
        if let Some(limit) = limit {
            let rank = |n: &str| SimdLevel::all_names().iter().position(|x| *x == n);
            v.retain(|l| rank(l.name()) >= rank(limit));
        }
        v
    }

    /// The best level the running CPU supports.
    pub fn detect() -> SimdLevel {
        SimdLevel::available(None)[0]
    }

    /// The level named `avx512`, `avx2` or `portable`, if the running CPU supports it.
    pub fn by_name(name: &str) -> Option<SimdLevel> {
        SimdLevel::available(None).into_iter().find(|l| l.name() == name)
    }

    /// `avx512`, `avx2` or `portable`.
    pub fn name(self) -> &'static str {
        match self.0 {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// The names of all levels, supported here or not, best first.
    pub fn all_names() -> [&'static str; 3] {
        ["avx512", "avx2", "portable"]
    }

    /// Outputs per panel (the W of the kernels).
    pub fn width(self) -> usize {
        match self.0 {
            Level::Avx512 => 64,
            _ => 32,
        }
    }

    /// Outputs per panel for a job: the fused step's panel where the level runs its panels with it, else
    /// [`Self::width`].
    fn panel_width(self, job: &Job) -> usize {
        if self.fused_panels(job) {
            x86::PANEL
        } else {
            self.width()
        }
    }

    /// Whether this level runs the job's panels with the fused step (a preset with room for its bias, on AVX-512:
    /// `x86::panel_blocks`, or on AVX2 with FMA: `x86::panel_blocks_avx2`).
    fn fused_panels(self, job: &Job) -> bool {
        match self.0 {
            Level::Avx512 => job.biased(),
            Level::Avx2 => driver::avx2_fused(job),
            Level::Portable => false,
        }
    }

    /// Whether this level's panel tiles of the job report B's non-finite codes as they decode its pieces: the fused
    /// panels, and the wide panels of the AVX-512 level (`driver::tile_wide`) and the AVX2 level
    /// (`driver::tile_wide_avx2`).
    fn watching_panels(self, job: &Job) -> bool {
        self.fused_panels(job)
            || match self.0 {
                Level::Avx512 => driver::wide_panels(job),
                Level::Avx2 => driver::wide_panels_avx2(job),
                Level::Portable => false,
            }
    }

    /// One tile of a job on this level with the given tiling.
    fn tile(self, tiling: Tiling, job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => {
                // SAFETY: a `Level::Avx512` value is only made by `SimdLevel::available` after
                // `is_x86_feature_detected!` reported avx512f/bw/vl, avx2 and f16c, so this CPU runs the
                // instructions `tile_avx512` is compiled for.
                unsafe { tile_avx512(tiling, job, rows, cols) }
            }
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => {
                // SAFETY: a `Level::Avx2` value is only made by `SimdLevel::available` after
                // `is_x86_feature_detected!` reported avx2, so this CPU runs the instructions `tile_avx2`
                // is compiled for.
                unsafe { tile_avx2(tiling, job, rows, cols) }
            }
            _ => tile_portable(tiling, job, rows, cols),
        }
    }
}

impl SimdLevel {
    /// Whether this level's product-lane tiles of the job read every code of B in their block step (the AVX-512
    /// level's and, where it serves the job, the AVX2 level's step over codes).
    fn reads_b_codes(self, job: &Job) -> bool {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => driver::reads_b_codes::<{ driver::X86_AVX512 }>(job),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => driver::reads_b_codes::<{ driver::X86_AVX2 }>(job),
            _ => false,
        }
    }

    /// [`Format::any_nonfinite`] compiled for this level, over pieces of `NONFINITE_SCAN` (2^19) codes in parallel,
    /// on the pool the call runs in.
    fn scan(self, f: Format, codes: &[u8]) -> bool {
        if codes.len() <= NONFINITE_SCAN {
            return self.any_nonfinite(f, codes);
        }
        codes.par_chunks(NONFINITE_SCAN).any(|c| self.any_nonfinite(f, c))
    }

    /// [`Format::any_nonfinite`] compiled for this level.
    fn any_nonfinite(self, f: Format, codes: &[u8]) -> bool {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as in `SimdLevel::tile`: the level exists only where its features were detected.
            Level::Avx512 => unsafe { any_nonfinite_avx512(f, codes) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Level::Avx2 => unsafe { any_nonfinite_avx2(f, codes) },
            _ => f.any_nonfinite(codes),
        }
    }
}

/// [`Format::any_nonfinite`] in AVX-512 instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn any_nonfinite_avx512(f: Format, codes: &[u8]) -> bool {
    f.any_nonfinite(codes)
}

/// [`Format::any_nonfinite`] in AVX2 instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn any_nonfinite_avx2(f: Format, codes: &[u8]) -> bool {
    f.any_nonfinite(codes)
}

impl fmt::Display for SimdLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The tiles of the AVX-512 level: panels of 64 with the fused step where the preset has room for its bias (the
/// built-ins), with the wide panel step where a wide-path preset has room for its (`driver::wide_panels`), else the
/// portable source compiled for AVX-512; product lanes read the codes of B in their block step.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c")]
unsafe fn tile_avx512(tiling: Tiling, job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    match tiling {
        Tiling::Panels if job.biased() => driver::tile_fused::<{ driver::X86_AVX512 }>(job, rows, cols),
        Tiling::Panels if driver::wide_panels(job) => driver::tile_wide(job, rows, cols),
        Tiling::Panels => driver::tile::<64, true, { driver::X86_AVX512 }>(job, rows, cols),
        Tiling::Products => driver::strip_tile::<true, { driver::X86_AVX512 }>(job, rows, cols),
    }
}

/// The tiles of the AVX2 level: panels of 64 with the fused step where the preset has room for its bias and the
/// CPU has FMA, panels of 32 with the wide panel step where a wide-path preset has room for its
/// (`driver::wide_panels_avx2`), else the portable source compiled for AVX2, panels of 32; product lanes read the
/// codes of B in their block step where it serves.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tile_avx2(tiling: Tiling, job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    match tiling {
        Tiling::Panels if driver::avx2_fused(job) => driver::tile_fused::<{ driver::X86_AVX2 }>(job, rows, cols),
        Tiling::Panels if driver::wide_panels_avx2(job) => driver::tile_wide_avx2(job, rows, cols),
        Tiling::Panels => driver::tile::<32, true, { driver::X86_AVX2 }>(job, rows, cols),
        Tiling::Products => driver::strip_tile::<true, { driver::X86_AVX2 }>(job, rows, cols),
    }
}

/// Whether the portable build has a vector truncation (every target but x86-64 below SSE4.1).
const PORTABLE_TRUNC: bool = !cfg!(target_arch = "x86_64") || cfg!(target_feature = "sse4.1");

/// The tiles of the portable level: panels of 32, whatever the compiler targets.
fn tile_portable(tiling: Tiling, job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    match tiling {
        Tiling::Panels => driver::tile::<32, PORTABLE_TRUNC, { driver::X86_NONE }>(job, rows, cols),
        Tiling::Products => driver::strip_tile::<PORTABLE_TRUNC, { driver::X86_NONE }>(job, rows, cols),
    }
}

/// Codes per piece of the parallel scan for non-finite codes: a piece takes a few tens of microseconds, and at
/// one row of A the scan of B was a quarter of a call on one thread (`perf record` of `mmaemu bench gemm --m 1
/// --n 4096 --k 4096 --threads 1`).
const NONFINITE_SCAN: usize = 1 << 19;

/// The CPU backend: the chains of every preset at one [`SimdLevel`], bit-identical to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuEngine {
    level: SimdLevel,
    /// A fixed tiling (tests and benchmarks); None: chosen per call from the shape.
    tiling: Option<Tiling>,
}

impl Default for CpuEngine {
    fn default() -> CpuEngine {
        CpuEngine::new()
    }
}

impl CpuEngine {
    /// The engine at the best level of the running CPU.
    pub fn new() -> CpuEngine {
        CpuEngine::with_level(SimdLevel::detect())
    }

    /// The engine at a given level.
    pub fn with_level(level: SimdLevel) -> CpuEngine {
        CpuEngine { level, tiling: None }
    }

    /// The engine at a given level that always uses one tiling (where its kernel serves the preset; product
    /// lanes fall back to panels elsewhere), for the tests and benchmarks of each tiling.
    pub fn with_tiling(level: SimdLevel, tiling: Tiling) -> CpuEngine {
        CpuEngine { level, tiling: Some(tiling) }
    }

    /// Its level.
    pub fn level(&self) -> SimdLevel {
        self.level
    }

    /// The engine and, for an engine that chooses its tiling per call, the same level with each tiling fixed:
    /// what the self-check and the fuzzing run, so that every tiling of a level is tested whatever the shapes.
    pub fn with_every_tiling(self) -> Vec<CpuEngine> {
        let mut v = vec![self];
        if self.tiling.is_none() {
            v.extend([Tiling::Panels, Tiling::Products].map(|t| CpuEngine::with_tiling(self.level, t)));
        }
        v
    }

    /// Which kernel path a preset runs on: `narrow` (f32 lanes), `wide` (f64 lanes) or `scalar` (the model's
    /// chain).
    pub fn path_name(preset: &Preset) -> &'static str {
        kernel::Params::new(preset).path.name()
    }

    /// Which block step a preset's panels run: `narrow` (f32 lanes), `f64` (the wide path's f64 lanes), `i32` (the
    /// wide path's i32 lanes, `small::int32_steps`), `single product` (`small::single_product_steps`) or `scalar`.
    pub fn step_name(preset: &Preset) -> &'static str {
        let p = kernel::Params::new(preset);
        match p.path {
            kernel::Path::Wide if p.single => "single product",
            kernel::Path::Wide if p.int32 => "i32",
            kernel::Path::Wide => "f64",
            path => path.name(),
        }
    }

    /// The tiling this engine runs a job of these operands with (see [`Choice::of`]).
    pub fn choice(&self, preset: &Preset, ops: &Operands<'_>) -> Choice {
        self.choice_of(&Job::chains(preset, ops))
    }

    fn choice_of(&self, job: &Job) -> Choice {
        let avx512 = self.level.0 == Level::Avx512;
        let most = Choice::product_rows(job, self.level.fused_panels(job), avx512 && driver::vbmi(), avx512);
        let mut choice = Choice::of(job, self.level.panel_width(job), most);
        if let Some(t) = self.tiling {
            choice.tiling = if t == Tiling::Products && !driver::products_serve(job) { Tiling::Panels } else { t };
        }
        choice
    }

    /// Run `job` (made of `ops` by `make`) with the tiling its shape calls for: with A and B exchanged (the
    /// job made again of the exchanged operands, the result transposed back) when the choice says so.
    fn compute<'a>(&self, job: Job<'a>, ops: &Operands<'a>, make: impl Fn(&Operands<'a>) -> Job<'a>) -> Vec<f32> {
        let w = self.level.panel_width(&job);
        let choice = self.choice_of(&job);
        let run = |j: Job| j.run(choice.tiles(&j, w), |j, rows, cols| self.level.tile(choice.tiling, j, rows, cols));
        if choice.swap {
            transpose(&run(make(&swapped(ops))), ops.n, ops.m)
        } else {
            run(job)
        }
    }

    /// Whether every code of B goes through a step that reports the non-finite ones as it computes, with the tiling
    /// this engine runs `job` with (see [`ChainEngine::run_plan_checked`]): B then needs no scan of its own.
    fn watches_b(&self, job: &Job) -> bool {
        match self.choice_of(job) {
            Choice { swap: true, .. } => false,
            Choice { tiling: Tiling::Products, .. } => self.level.reads_b_codes(job),
            Choice { tiling: Tiling::Panels, .. } => self.level.watching_panels(job),
        }
    }

    /// The plan of `job` (made of `preset`, `plan` and `ops`): by the kernels, or chunk by chunk where they
    /// cannot compute the preset.
    fn run_job<'a>(&self, job: Job<'a>, preset: &Preset, plan: &Plan, ops: &Operands<'a>) -> Vec<f32> {
        if job.path() == Path::Scalar {
            // Chunk by chunk through `chains`, which runs the model's chain where the kernels cannot.
            return run_plan_by_chunks(self, preset, plan, ops);
        }
        self.compute(job, ops, |ops| Job::new(preset, plan, ops))
    }

    /// The model's chains, one output at a time, rows in parallel: for presets beyond the kernels' bounds
    /// and operands with non-finite codes (which the GEMM paths never pass, see [`ChainEngine::chains`]).
    fn scalar_chains(preset: &Preset, ops: &Operands<'_>) -> Vec<f32> {
        let chain = Chain::new(preset, ops.fa, ops.fb);
        let (n, l) = (ops.n, ops.k);
        let mut out = vec![0f32; ops.m * n];
        let interrupt = mmaemu_model::interrupt::Interrupt::current();
        out.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, row)| {
            if interrupt.requested() {
                return;
            }
            let one_row = Operands { a: &ops.a[i * l..(i + 1) * l], m: 1, ..*ops };
            row.copy_from_slice(&each_output(&one_row, |x, y| chain.run(x, y, 0.0)));
        });
        out
    }
}

impl ChainEngine for CpuEngine {
    /// `cpu:<level>`, and `/<tiling>` for an engine with a fixed tiling.
    fn name(&self) -> String {
        match self.tiling {
            None => format!("cpu:{}", self.level.name()),
            Some(t) => format!("cpu:{}/{}", self.level.name(), t.name()),
        }
    }

    fn chains(&self, preset: &Preset, ops: &Operands<'_>) -> Vec<f32> {
        if ops.m == 0 || ops.n == 0 {
            return Vec::new();
        }
        if ops.k == 0 {
            return vec![0.0; ops.m * ops.n];
        }
        let job = Job::chains(preset, ops);
        if job.path() == Path::Scalar || self.level.scan(ops.fa, ops.a) || self.level.scan(ops.fb, ops.b) {
            return CpuEngine::scalar_chains(preset, ops);
        }
        self.compute(job, ops, |ops| Job::chains(preset, ops))
    }

    /// The panels of [`scaled`] at the engine's level; the model's chain where they do not serve.
    fn scaled_chains(&self, preset: &Preset, ops: &Operands<'_>, scale_a: &[u8], scale_b: &[u8]) -> Vec<f32> {
        scaled::scaled_chains(preset, ops, scale_a, scale_b, self.level)
    }

    /// The group panels of [`scaled`] at the engine's level; the model's chain where they do not serve.
    fn group_chains(&self, preset: &Preset, ops: &Operands<'_>, scale_a: &[u8], scale_b: &[u8]) -> Vec<f32> {
        scaled::group_chains(preset, ops, scale_a, scale_b, self.level)
    }

    /// The K blocks as the chunks of one job, scaled and added inside each output tile (`driver/blockwise.rs`); the
    /// model's blocks one by one where the kernels do not serve.
    fn blockwise_chains(
        &self,
        preset: &Preset,
        ops: &Operands<'_>,
        block: usize,
        scale_a: &[f32],
        scale_b: &[f32],
    ) -> Vec<f32> {
        driver::blockwise_chains(self, preset, ops, block, scale_a, scale_b)
    }

    /// `SimdLevel::scan`: pieces of codes in parallel, each scanned with the level's instructions.
    fn any_nonfinite(&self, f: Format, codes: &[u8]) -> bool {
        self.level.scan(f, codes)
    }

    /// A is scanned; B too, except where every code of B goes through a step that reports the non-finite ones as
    /// it computes: the block step over codes (a decode step on the AVX-512 level) or the decoding of the fused
    /// panel tile's pieces. At one row of A the separate scan of B was a tenth of the call, at 16 rows 6 % (it
    /// reads B from memory a second time).
    fn run_plan_checked(&self, preset: &Preset, plan: &Plan, ops: &Operands<'_>) -> Option<Vec<f32>> {
        if self.any_nonfinite(ops.fa, ops.a) {
            return None;
        }
        let seen = std::sync::atomic::AtomicBool::new(false);
        let job = Job::new(preset, plan, ops);
        let watched = self.watches_b(&job);
        if !watched && self.any_nonfinite(ops.fb, ops.b) {
            return None;
        }
        let job = if watched { job.watching(&seen) } else { job };
        let out = self.run_job(job, preset, plan, ops);
        (!seen.into_inner()).then_some(out)
    }

    fn run_plan(&self, preset: &Preset, plan: &Plan, ops: &Operands<'_>) -> Vec<f32> {
        // The operands are finite (the plan executor replaced non-finite codes by zeros), so no scan here: at one
        // row it cost a tenth of the call.
        self.run_job(Job::new(preset, plan, ops), preset, plan, ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmaemu_model::plan::{Scheme, SplitK};
    use mmaemu_model::{Format, ReferenceEngine};

    /// A call whose interrupt flag is set ends in the Interrupted error on every engine and path (kernels, the
    /// model's chains, slow chunks, non-finite operands), and the same call without the flag computes.
    #[test]
    fn an_interrupted_call_reports_it() {
        use mmaemu_model::interrupt::with_flag;
        use mmaemu_model::{execute, Category};
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let (m, n, k) = (64, 96, 512);
        let a: Vec<u8> = (0..m * k).map(|i| (i * 7 % 0x7E) as u8).collect();
        let mut b: Vec<u8> = (0..n * k).map(|i| (i * 13 % 0x7E) as u8).collect();
        for nonfinite in [false, true] {
            if nonfinite {
                b[5] = 0x7F;
            }
            let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a: &a, b: &b, m, n, k };
            for fast in [true, false] {
                let preset = Preset::hopper();
                let plan = Plan::new(&preset, k, fast, SplitK::NONE).unwrap();
                for engine in [&CpuEngine::new() as &dyn ChainEngine, &ReferenceEngine] {
                    let set = Arc::new(AtomicBool::new(true));
                    let got = with_flag(set, || execute(&preset, &plan, &ops, engine));
                    assert_eq!(got.unwrap_err().category(), Category::Interrupted, "{}", engine.name());
                    let clear = Arc::new(AtomicBool::new(false));
                    assert!(with_flag(clear, || execute(&preset, &plan, &ops, engine)).is_ok());
                }
            }
        }
    }

    /// The parallel scan answers as the format's: a non-finite code in the first piece, in a middle one, in
    /// the short last one, or nowhere, in both formats.
    #[test]
    fn parallel_scan_finds_what_the_format_finds() {
        let len = 3 * NONFINITE_SCAN + 1000;
        for (f, bad) in [(Format::E4m3, 0xFFu8), (Format::E5m2, 0x7Du8)] {
            for at in [None, Some(0), Some(NONFINITE_SCAN + 17), Some(len - 1)] {
                let mut codes: Vec<u8> = (0..len).map(|i| (i % 0x7C) as u8).collect();
                if let Some(i) = at {
                    codes[i] = bad;
                }
                assert_eq!(CpuEngine::new().any_nonfinite(f, &codes), at.is_some(), "{f} at {at:?}");
                assert_eq!(f.any_nonfinite(&codes), at.is_some(), "{f} at {at:?}");
            }
        }
    }

    /// The 64-wide panels of the AVX-512 level, compiled portably, against the model: the same source as
    /// `tile_avx512` without its instructions, so that machines without AVX-512 test its tiling too.
    #[test]
    fn wide_panels_match_the_model() {
        let mut x = 0x1234_5678_9ABC_DEF1u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (preset, split) in [
            (Preset::hopper(), SplitK::new(3, Scheme::Contiguous).unwrap()),
            (Preset::ada(), SplitK::new(2, Scheme::Pairwise).unwrap()),
            (Preset::b200_mma_sync(), SplitK::NONE),
        ] {
            for (fa, fb) in [(Format::E4m3, Format::E4m3), (Format::E5m2, Format::E4m3)] {
                let (m, n, k) = (3, 70, 300);
                let code = |f: Format, r: u64| if f.is_nonfinite(r as u8) { 0x11 } else { r as u8 };
                let a: Vec<u8> = (0..m * k).map(|_| code(fa, next())).collect();
                let b: Vec<u8> = (0..n * k).map(|_| code(fb, next())).collect();
                let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
                for fast in [true, false] {
                    let Ok(plan) = Plan::new(&preset, k, fast, split) else { continue };
                    let want = ReferenceEngine.run_plan(&preset, &plan, &ops);
                    let job = Job::new(&preset, &plan, &ops);
                    let got = job
                        .run(driver::Tiles::panels(&job, 64), driver::tile::<64, PORTABLE_TRUNC, { driver::X86_NONE }>);
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{} {fa} x {fb} fast {fast}", preset.name());
                }
            }
        }
    }
}
