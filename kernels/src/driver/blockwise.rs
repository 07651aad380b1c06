//! Block-wise 1x128 / 128x128 scaling on the CPU backend (docs/reference.md §12.5): one job whose chunks are the K
//! blocks, each block's chains scaled per output and added in fp32 inside the tile, so that every block of a GEMM
//! runs in one pass over the output tiles (as the slow plan runs its chunks) instead of one engine call per block.

// Per tile and block t the executor runs the chains of the block from +0 into the tile's accumulators (the chunk
// of `Job::chains` over that block: the same bits as `ChainEngine::chains` of the gathered block), then adds
// part = part + c_t · (sa · sb), each operation one fp32 rounding, in block order: the model's
// `blockwise_chains_by_blocks` step for step. Where A and B are exchanged (few outputs per row), the scales are
// exchanged with them and their product is still taken as sa · sb.

use super::{ChunkPlan, Job, TileOutputs};
use crate::kernel::Path;
use crate::CpuEngine;
use mmaemu_model::block_gemm::blockwise_chains_by_blocks;
use mmaemu_model::{ChainEngine, Operands, Preset};
use std::sync::atomic::AtomicBool;

/// The fp32 scales of a block-wise job: row-major [m, nb] for the job's rows of A, [n, nb] for its rows of B.
#[derive(Clone, Copy, Debug)]
pub struct BlockScales<'a> {
    a: &'a [f32],
    b: &'a [f32],
    nb: usize,
    /// The job's A is the caller's B: the product of the scales is taken as the caller's sa · sb.
    swapped: bool,
}

impl BlockScales<'_> {
    /// part = part + c · (sa · sb) over the real outputs of a tile, for block `t`.
    #[inline(always)]
    pub(super) fn add(&self, tile: &TileOutputs, t: usize, acc: &[f32], part: &mut [f32]) {
        let (nb, nc) = (self.nb, tile.cols.len());
        for (r, i) in tile.rows.clone().enumerate() {
            let sa = self.a[i * nb + t];
            let at = r * tile.width;
            for ((p, &c), j) in part[at..at + nc].iter_mut().zip(&acc[at..at + nc]).zip(tile.cols.clone()) {
                let sb = self.b[j * nb + t];
                *p += c * if self.swapped { sb * sa } else { sa * sb };
            }
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
/// engine's `chains`) for a preset on the scalar path or operands with a non-finite code.
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
    if m == 0 || n == 0 || k == 0 || block == 0 {
        return blockwise_chains_by_blocks(engine, preset, ops, block, scale_a, scale_b);
    }
    let by_blocks = || blockwise_chains_by_blocks(engine, preset, ops, block, scale_a, scale_b);
    let job = Job::blockwise(preset, ops, block, BlockScales { a: scale_a, b: scale_b, nb, swapped: false });
    if job.path() == Path::Scalar || engine.any_nonfinite(ops.fa, ops.a) {
        return by_blocks();
    }
    // B is scanned where the tiles do not report its non-finite codes as they read them (as the plans' executor).
    let seen = AtomicBool::new(false);
    let watched = engine.watches_b(&job);
    if !watched && engine.any_nonfinite(ops.fb, ops.b) {
        return by_blocks();
    }
    let job = if watched { job.watching(&seen) } else { job };
    let swapped = BlockScales { a: scale_b, b: scale_a, nb, swapped: true };
    let out = engine.compute(job, ops, |ops| Job::blockwise(preset, ops, block, swapped));
    if seen.into_inner() {
        return by_blocks();
    }
    out
}
