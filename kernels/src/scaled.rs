//! The block-scaled chains of the CPU backend (docs/reference.md §2.8, MXFP8's e8m0 scales; §12.2, NVFP4's groups):
//! panels of outputs as the tensor-wise GEMM tiles them, each through the scaled block step of `scaled/step.rs` or
//! the group step of `scaled/group.rs` (whose comments hold the arithmetic); the model's chain for every output a
//! step marks, and for what the steps do not serve.

// What runs on the model instead: presets with group scales, with a block other than their scale block,
// on `Path::Scalar` or with |min_exp| above `step::MIN_EXP_BOUND`; operands with non-finite codes; and, output by
// output, every chain that meets a NaN scale (0xFF) or a block result outside the normal fp32 range.

mod group;
mod panel;
mod step;
mod wide;

use crate::driver::{Job, X86_NONE};
#[cfg(target_arch = "x86_64")]
use crate::driver::{X86_AVX2, X86_AVX512};
use crate::kernel::{Params, Path};
use crate::tables::Lut;
use crate::tiling::{swapped, transpose, Choice};
use crate::{Level, SimdLevel, PORTABLE_TRUNC};
use group::Grouped;
use mmaemu_model::accumulate::{group_chains_by_model, scaled_chains_by_model};
use mmaemu_model::{Chain, GroupChain, Operands, Preset};
use panel::Scaled;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::AtomicBool;

/// Whether the panels can compute a preset's block-scaled chains (see the comment at the top of this file).
pub fn serves(preset: &Preset) -> bool {
    preset.group().is_none()
        && preset.scale_block() == Some(preset.nfma())
        && Params::new(preset).path != Path::Scalar
        && preset.min_exp().abs() <= step::MIN_EXP_BOUND
}

/// The block-scaled chains of [`mmaemu_model::ChainEngine::scaled_chains`] at `level`: `scale_a` and `scale_b` row-major
/// [m, ceil(k / nfma)] and [n, ceil(k / nfma)] e8m0 codes.
pub fn scaled_chains(
    preset: &Preset,
    ops: &Operands<'_>,
    scale_a: &[u8],
    scale_b: &[u8],
    level: SimdLevel,
) -> Vec<f32> {
    if ops.m == 0 || ops.n == 0 {
        return Vec::new();
    }
    if !serves(preset) || ops.k == 0 {
        return scaled_chains_by_model(preset, ops, scale_a, scale_b);
    }
    let out = by_panels(preset, ops, (scale_a, scale_b), (level, true), |ops, sa, sb| Scaled {
        a: ops.a,
        b: ops.b,
        k: ops.k,
        la: Lut::new(ops.fa),
        lb: Lut::new(ops.fb),
        p: Params::new(preset),
        min_exp: preset.min_exp(),
        sa,
        sb,
    });
    // A non-finite code: the model replaces it (docs/reference.md §3.7) and computes every output.
    let Some(mut out) = out else { return scaled_chains_by_model(preset, ops, scale_a, scale_b) };
    let chain = Chain::new(preset, ops.fa, ops.fb);
    let nb = ops.k.div_ceil(preset.nfma());
    recompute_marked(&mut out, ops, |i, j, ra, rb| {
        chain.run_scaled(ra, rb, &scale_a[i * nb..(i + 1) * nb], &scale_b[j * nb..(j + 1) * nb], 0.0)
    });
    out
}

/// The group-scaled chains of [`mmaemu_model::ChainEngine::group_chains`] at `level` (e2m1 codes, one per byte;
/// `scale_a` and `scale_b` row-major [m, ceil(k / group)] and [n, ceil(k / group)] codes of the preset's scale
/// format); empty for a preset without a group.
pub fn group_chains(preset: &Preset, ops: &Operands<'_>, scale_a: &[u8], scale_b: &[u8], level: SimdLevel) -> Vec<f32> {
    let Ok(chain) = GroupChain::new(preset) else { return Vec::new() };
    if ops.m == 0 || ops.n == 0 {
        return Vec::new();
    }
    if !group::serves(preset) || ops.k == 0 {
        return group_chains_by_model(&chain, ops, scale_a, scale_b);
    }
    // e2m1 codes are all finite: nothing to scan.
    let Some(mut out) = by_panels(preset, ops, (scale_a, scale_b), (level, false), |ops, sa, sb| {
        Grouped::new(preset, ops.a, ops.k, sa, sb)
    }) else {
        return group_chains_by_model(&chain, ops, scale_a, scale_b);
    };
    let ns = ops.k.div_ceil(chain.scale_block());
    recompute_marked(&mut out, ops, |i, j, ra, rb| {
        chain.run(ra, rb, &scale_a[i * ns..(i + 1) * ns], &scale_b[j * ns..(j + 1) * ns], 0.0)
    });
    out
}

/// A panel tile of scaled chains: rows of A against a panel of at most W rows of B, NaN where the model must
/// recompute the output (a good result is never NaN). `job` is the chains' job of the same operands
/// ([`Job::chains`]), which moves the panel's codes; `HT`: truncate with the hardware instruction.
pub trait PanelTile: Sync {
    /// `rows.len()` rows of `cols.len()` results.
    /// `X86`: the level the tile runs on (`driver::X86_NONE`, `X86_AVX2` or `X86_AVX512`), which moves and decodes
    /// the panel's codes as the tensor-wise panels on it do.
    fn tile<const W: usize, const HT: bool, const X86: u8>(
        &self,
        job: &Job<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Vec<f32>;
}

/// The chains of `ops` by panel tiles of `make(ops, scale_a, scale_b)` on `level`: the tensor-wise panels' tiles
/// (`tiling::Choice` with no product lanes), A and B exchanged where N is narrower than a panel and M is larger.
/// `checked`: the codes may be non-finite (e4m3 and e5m2 do hold such codes), and None where one is: the tiles' A is
/// scanned first, and their B too, or watched where the level's planes tell non-finite codes as they decode them
/// ([`watches_b`]).
fn by_panels<'o, T: PanelTile>(
    preset: &Preset,
    ops: &Operands<'o>,
    (scale_a, scale_b): (&'o [u8], &'o [u8]),
    (level, checked): (SimdLevel, bool),
    make: impl Fn(&Operands<'o>, &'o [u8], &'o [u8]) -> T,
) -> Option<Vec<f32>> {
    let w = level.width();
    let choice = Choice::of(&Job::chains(preset, ops), w, 0);
    let watched = checked && watches_b(level);
    let run = |ops: &Operands<'o>, sa: &'o [u8], sb: &'o [u8]| -> Option<Vec<f32>> {
        if checked && (level.scan(ops.fa, ops.a) || (!watched && level.scan(ops.fb, ops.b))) {
            return None;
        }
        let seen = AtomicBool::new(false);
        let job = Job::chains(preset, ops);
        let (job, t) = (if watched { job.watching(&seen) } else { job }, make(ops, sa, sb));
        let out = job.run(choice.tiles(&job, w), |job, rows, cols| tile(level, &t, job, rows, cols));
        (!seen.into_inner()).then_some(out)
    };
    if choice.swap {
        run(&swapped(ops), scale_b, scale_a).map(|out| transpose(&out, ops.n, ops.m))
    } else {
        run(ops, scale_a, scale_b)
    }
}

/// Whether the panel tiles on `level` watch their B rather than scan it first: on the AVX-512 level with VBMI, whose
/// decoding of a panel's pieces tells the non-finite codes as it goes (`Lut::vbmi_decodes`; the pieces it does not
/// decode that way are scanned as they are moved, `panel::Planes::fill`). At one row of A the scan of B was 7 to 10 %
/// of an MXFP8 call (kernels/scaling-modes.md).
fn watches_b(level: SimdLevel) -> bool {
    level.0 == Level::Avx512 && Lut::vbmi_decodes(true)
}

/// Every marked (NaN) output (i, j) of `out` replaced by `chain(i, j, row i of A, row j of B)`, rows in parallel.
fn recompute_marked(out: &mut [f32], ops: &Operands<'_>, chain: impl Fn(usize, usize, &[u8], &[u8]) -> f32 + Sync) {
    let k = ops.k;
    out.par_chunks_mut(ops.n).enumerate().for_each(|(i, row)| {
        for (j, x) in row.iter_mut().enumerate().filter(|(_, x)| x.is_nan()) {
            *x = chain(i, j, &ops.a[i * k..(i + 1) * k], &ops.b[j * k..(j + 1) * k]);
        }
    });
}

/// One panel tile on `level`: panels of 64 on AVX-512, of 32 elsewhere, as the tensor-wise tiles of the wide path.
fn tile<T: PanelTile>(level: SimdLevel, t: &T, job: &Job<'_>, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    match level.0 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a `Level::Avx512` value exists only where `is_x86_feature_detected!` reported its features
        // (`SimdLevel::available`).
        Level::Avx512 => unsafe { tile_avx512(t, job, rows, cols) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2.
        Level::Avx2 => unsafe { tile_avx2(t, job, rows, cols) },
        _ => t.tile::<32, PORTABLE_TRUNC, X86_NONE>(job, rows, cols),
    }
}

/// [`PanelTile::tile`] in AVX-512 instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,f16c")]
unsafe fn tile_avx512<T: PanelTile>(t: &T, job: &Job<'_>, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    t.tile::<64, true, X86_AVX512>(job, rows, cols)
}

/// [`PanelTile::tile`] in AVX2 instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tile_avx2<T: PanelTile>(t: &T, job: &Job<'_>, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    t.tile::<32, true, X86_AVX2>(job, rows, cols)
}
