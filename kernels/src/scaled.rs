//! The block-scaled chains of the CPU backend (docs/reference.md §2.8, MXFP8's e8m0 scales): panels of outputs as the
//! tensor-wise GEMM tiles them, each through the scaled block step of `scaled/step.rs` (whose comment holds the
//! arithmetic); the model's chain for every output that step marks, and for what it does not serve.

// What runs on the model instead: presets with late c, with group scales, with a block other than their scale block,
// on `Path::Scalar` or with |min_exp| above `step::MIN_EXP_BOUND`; operands with non-finite codes; and, output by
// output, every chain that meets a NaN scale (0xFF) or a block result outside the normal fp32 range.

mod panel;
mod step;

use crate::driver::Job;
use crate::kernel::{Params, Path};
use crate::tables::Lut;
use crate::tiling::{swapped, transpose, Choice};
use crate::{Level, SimdLevel, PORTABLE_TRUNC};
use mmaemu_model::accumulate::scaled_chains_by_model;
use mmaemu_model::{CEntry, Chain, Operands, Preset};
use panel::Scaled;
use rayon::prelude::*;
use std::ops::Range;

/// Whether the panels can compute a preset's block-scaled chains (see the comment at the top of this file).
pub fn serves(preset: &Preset) -> bool {
    preset.c_entry() == CEntry::Early
        && preset.group().is_none()
        && preset.scale_block() == Some(preset.nfma())
        && Params::new(preset).path != Path::Scalar
        && preset.min_exp().abs() <= step::MIN_EXP_BOUND
}

/// The block-scaled chains of [`mmaemu_model::ChainEngine::scaled_chains`] at `level`: `scale_a` and `scale_b` row-major
/// [m, ceil(k / nfma)] and [n, ceil(k / nfma)] e8m0 codes. The tiles are the tensor-wise panels' (`tiling::Choice`
/// with no product lanes: A and B exchange roles where N is narrower than a panel and M is larger).
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
    if !serves(preset) || ops.k == 0 || ops.fa.any_nonfinite(ops.a) || ops.fb.any_nonfinite(ops.b) {
        return scaled_chains_by_model(preset, ops, scale_a, scale_b);
    }
    let (m, n, w) = (ops.m, ops.n, level.width());
    let job = Job::chains(preset, ops);
    let choice = Choice::of(&job, w, 0);
    let run = |ops: &Operands<'_>, sa: &[u8], sb: &[u8]| {
        let job = Job::chains(preset, ops);
        let s = Scaled {
            a: ops.a,
            k: ops.k,
            la: Lut::new(ops.fa),
            lb: Lut::new(ops.fb),
            p: Params::new(preset),
            min_exp: preset.min_exp(),
            sa,
            sb,
        };
        job.run(choice.tiles(&job, w), |job, rows, cols| tile(level, job, &s, rows, cols))
    };
    let mut out =
        if choice.swap { transpose(&run(&swapped(ops), scale_b, scale_a), n, m) } else { run(ops, scale_a, scale_b) };
    // The marked outputs, by the model's chain.
    let chain = Chain::new(preset, ops.fa, ops.fb);
    let (k, nb) = (ops.k, ops.k.div_ceil(preset.nfma()));
    out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for (j, x) in row.iter_mut().enumerate().filter(|(_, x)| x.is_nan()) {
            let (ra, rb) = (&ops.a[i * k..(i + 1) * k], &ops.b[j * k..(j + 1) * k]);
            *x = chain.run_scaled(ra, rb, &scale_a[i * nb..(i + 1) * nb], &scale_b[j * nb..(j + 1) * nb], 0.0);
        }
    });
    out
}

/// One panel tile on `level`: panels of 64 on AVX-512, of 32 elsewhere, as the tensor-wise tiles of the wide path.
fn tile(level: SimdLevel, job: &Job<'_>, s: &Scaled<'_>, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    match level.0 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a `Level::Avx512` value exists only where `is_x86_feature_detected!` reported its features
        // (`SimdLevel::available`).
        Level::Avx512 => unsafe { tile_avx512(job, s, rows, cols) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2.
        Level::Avx2 => unsafe { tile_avx2(job, s, rows, cols) },
        _ => panel::tile::<32, PORTABLE_TRUNC>(job, s, rows, cols),
    }
}

/// [`panel::tile`] in AVX-512 instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,f16c")]
unsafe fn tile_avx512(job: &Job<'_>, s: &Scaled<'_>, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    panel::tile::<64, true>(job, s, rows, cols)
}

/// [`panel::tile`] in AVX2 instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tile_avx2(job: &Job<'_>, s: &Scaled<'_>, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    panel::tile::<32, true>(job, s, rows, cols)
}
