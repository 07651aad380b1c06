//! Block-wise 1x128 / 128x128 scaling on the CPU backend (docs/reference.md §12.5): one job whose chunks are the K
//! blocks, each block's chains scaled per output and added in fp32 inside the tile, so that every block of a GEMM
//! runs in one pass over the output tiles (as the slow plan runs its chunks) instead of one engine call per block.

// Per tile and block t the executor runs the chains of the block from +0 into the tile's accumulators (the chunk
// of `Job::chains` over that block: the same bits as `ChainEngine::chains` of the gathered block), then adds
// part = part + c_t · (sa · sb), each operation one fp32 rounding, in block order: the model's
// `blockwise_chains_by_blocks` step for step. Where A and B are exchanged (few outputs per row), the scales are
// exchanged with them: sb · sa is sa · sb (an fp32 product does not depend on the order of its operands, but for
// which NaN's payload it keeps, which the compiler chooses anyway).

use super::{ChunkPlan, Job, TileOutputs};
use crate::kernel::Path;
use crate::tiling::transpose;
use crate::CpuEngine;
use mmaemu_model::block_gemm::blockwise_chains_by_blocks;
use mmaemu_model::interrupt::Interrupt;
use mmaemu_model::{ChainEngine, Format, Operands, Preset, ReferenceEngine};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// The fp32 scales of a block-wise job, block-major: [nb, m] for the job's rows of A, [nb, n] for its rows of B (a
/// block's scales of a tile's outputs lie side by side, so that its scaled add runs in vector lanes).
#[derive(Clone, Copy, Debug)]
pub struct BlockScales<'a> {
    a: &'a [f32],
    b: &'a [f32],
    m: usize,
    n: usize,
}

impl BlockScales<'_> {
    /// part = part + c · (sa · sb) over the real outputs of a tile, for block `t`; then every accumulator of the
    /// tile (c) is +0 again, the start of the next block's chains (one pass over the tile while its rows are in
    /// cache, where a separate fill read them again).
    #[inline(always)]
    pub(super) fn add(&self, tile: &TileOutputs, t: usize, acc: &mut [f32], part: &mut [f32]) {
        let (nc, sb) = (tile.cols.len(), &self.b[t * self.n..(t + 1) * self.n][tile.cols.clone()]);
        for (r, &sa) in self.a[t * self.m..(t + 1) * self.m][tile.rows.clone()].iter().enumerate() {
            let at = r * tile.width;
            let (part, acc) = (&mut part[at..at + nc], &mut acc[at..at + tile.width]);
            part.iter_mut().zip(&*acc).zip(sb).for_each(|((p, &c), &sb)| *p += c * (sa * sb));
            acc.fill(0.0);
        }
    }
}

impl<'a> Job<'a> {
    /// The job of block-wise chains over finite operands: one split whose chunks are the K blocks of `block`
    /// positions (the last holds the rest of K), each chunk's chains scaled by `scales` before they are added.
    fn blockwise(preset: &Preset, ops: &Operands<'a>, block: usize, scales: BlockScales<'a>) -> Job<'a> {
        let mut job = Job::chains(preset, ops);
        let (nfma, skip) = (job.p.nfma, job.p.zero_block_is_identity);
        let blocks = (0..ops.k.div_ceil(block)).map(|t| {
            let r = t * block..((t + 1) * block).min(ops.k);
            ChunkPlan::new(std::slice::from_ref(&r), r.len(), nfma, skip)
        });
        job.splits = vec![blocks.collect()];
        job.fast = false;
        job.scales = Some(scales);
        job
    }
}

/// [`ChainEngine::blockwise_chains`] on the CPU backend: the blocks as the chunks of one job, tiled and exchanged as
/// the engine chooses for plain chains; the model's blocks one by one ([`blockwise_chains_by_blocks`], through the
/// engine's `chains`) for a preset on the scalar path; operands with a non-finite code by [`patched`].
pub fn blockwise_chains(
    engine: &CpuEngine,
    preset: &Preset,
    ops: &Operands<'_>,
    block: usize,
    scale_a: &[f32],
    scale_b: &[f32],
) -> Vec<f32> {
    let (m, n, k) = (ops.m, ops.n, ops.k);
    let nb = k.div_ceil(block.max(1));
    let by_blocks = || blockwise_chains_by_blocks(engine, preset, ops, block, scale_a, scale_b);
    if m == 0 || n == 0 || k == 0 || block == 0 {
        return by_blocks();
    }
    let (ta, tb) = (transpose(scale_a, m, nb), transpose(scale_b, n, nb));
    let job = Job::blockwise(preset, ops, block, BlockScales { a: &ta, b: &tb, m, n });
    if job.path() == Path::Scalar {
        return by_blocks();
    }
    let patched = || patched(engine, preset, ops, block, scale_a, scale_b);
    if engine.any_nonfinite(ops.fa, ops.a) {
        return patched();
    }
    // B is scanned where the tiles do not report its non-finite codes as they read them (as the plans' executor).
    let seen = AtomicBool::new(false);
    let watched = engine.watches_b(&job);
    if !watched && engine.any_nonfinite(ops.fb, ops.b) {
        return patched();
    }
    let job = if watched { job.watching(&seen) } else { job };
    let swapped = BlockScales { a: &tb, b: &ta, m: n, n: m };
    let out = engine.compute(job, ops, |ops| Job::blockwise(preset, ops, block, swapped));
    if seen.into_inner() {
        return patched();
    }
    out
}

/// The block-wise chains of operands with non-finite codes: every output whose row of A and row of B are finite by
/// the job over the operands with those codes replaced by zeros (an output's chains read its two rows alone, so
/// these are its bits), every other output by the model's blocks one by one over the codes as given; rows of the
/// result in parallel.
fn patched(
    engine: &CpuEngine,
    preset: &Preset,
    ops: &Operands<'_>,
    block: usize,
    scale_a: &[f32],
    scale_b: &[f32],
) -> Vec<f32> {
    let (n, k, nb) = (ops.n, ops.k, ops.k.div_ceil(block));
    let rows = |f: Format, x: &[u8]| -> Vec<bool> { x.chunks_exact(k).map(|r| f.any_nonfinite(r)).collect() };
    let zeroed =
        |f: Format, x: &[u8]| -> Vec<u8> { x.iter().map(|&c| if f.is_nonfinite(c) { 0 } else { c }).collect() };
    let (bad_a, bad_b) = (rows(ops.fa, ops.a), rows(ops.fb, ops.b));
    let (a, b) = (zeroed(ops.fa, ops.a), zeroed(ops.fb, ops.b));
    let mut out = blockwise_chains(engine, preset, &Operands { a: &a, b: &b, ..*ops }, block, scale_a, scale_b);
    let interrupt = Interrupt::current();
    out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for (j, o) in row.iter_mut().enumerate().filter(|&(j, _)| bad_a[i] || bad_b[j]) {
            if interrupt.requested() {
                return;
            }
            let one = Operands { a: &ops.a[i * k..(i + 1) * k], b: &ops.b[j * k..(j + 1) * k], m: 1, n: 1, ..*ops };
            let (sa, sb) = (&scale_a[i * nb..(i + 1) * nb], &scale_b[j * nb..(j + 1) * nb]);
            *o = blockwise_chains_by_blocks(&ReferenceEngine, preset, &one, block, sa, sb)[0];
        }
    });
    out
}
