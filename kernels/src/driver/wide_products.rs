//! The product-lane tiling of the wide path (f64 sums, blocks of any length): a tile is all rows of A by a strip of
//! rows of B; per piece of a chunk its rows of A are decoded once, and B's rows, decoded a group of eight at a time,
//! run through `kernel::wide_product_blocks` with every row of the tile.

use super::products::{decode_group, decode_rows, CHAINS};
use super::tiles::strip_piece_len;
use super::{ChunkPlan, Job, Piece, TileOutputs};
use crate::kernel::wide_product_blocks;
use crate::tables::ZERO_EXP;
use std::ops::Range;

/// One product-lane tile of a wide-path job: rows `rows` of A against rows `cols` of B, every split and chunk.
/// Returns `rows.len()` rows of `cols.len()` results. `HT`: the level truncates in hardware (SSE4.1 and up);
/// `AVX512`: the step's passes in AVX-512 instructions (the caller is compiled for them).
#[inline(always)]
pub fn wide_strip_tile<const HT: bool, const AVX512: bool>(
    job: &Job,
    rows: Range<usize>,
    cols: Range<usize>,
) -> Vec<f32> {
    let (nr, nc) = (rows.len(), cols.len());
    // Outputs rounded up to whole groups; the extra rows of B are zeros.
    let ncp = nc.div_ceil(CHAINS) * CHAINS;
    let piece_len = strip_piece_len(job.p.nfma);
    let tile = TileOutputs::new(&rows, &cols, ncp);
    let mut piece = WidePiece::<HT, AVX512> {
        rows,
        cols,
        ga: vec![0u8; nr * piece_len],
        av: vec![0f32; nr * piece_len],
        ae: vec![ZERO_EXP; nr * piece_len],
        gb: vec![0u8; CHAINS * piece_len],
        bv: vec![0f32; CHAINS * piece_len],
        be: vec![ZERO_EXP; CHAINS * piece_len],
    };
    let acc = job.accumulate(&tile, piece_len, &mut piece);
    let mut out = Vec::with_capacity(nr * nc);
    acc.chunks_exact(ncp).for_each(|r| out.extend_from_slice(&r[..nc]));
    out
}

/// The scratch of a wide product-lane tile: the tile's rows of A and a group of rows of B, gathered and decoded.
struct WidePiece<const HT: bool, const AVX512: bool> {
    rows: Range<usize>,
    cols: Range<usize>,
    ga: Vec<u8>,
    av: Vec<f32>,
    ae: Vec<i8>,
    gb: Vec<u8>,
    bv: Vec<f32>,
    be: Vec<i8>,
}

impl<const HT: bool, const AVX512: bool> Piece for WidePiece<HT, AVX512> {
    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        let (nr, nc) = (self.rows.len(), self.cols.len());
        let ncp = nc.div_ceil(CHAINS) * CHAINS;
        let len = q1 - q0;
        let nblk = len / job.p.nfma;
        let single = super::one_run(chunk, q0, q1);
        let (at, bt) = ((job.a, job.k, &job.la, AVX512), (job.b, job.k, &job.lb, AVX512));
        decode_rows(at, self.rows.clone(), chunk, q0, q1, &single, &mut self.ga, &mut self.av, &mut self.ae);
        for g in (0..ncp).step_by(CHAINS) {
            let brows = self.cols.start + g..self.cols.start + g + CHAINS.min(nc - g);
            if let Some(kr) = &single {
                let next = brows.end..(brows.end + CHAINS).min(self.cols.end);
                next.for_each(|i| prefetch(&job.b[i * job.k + kr.start..i * job.k + kr.end]));
            }
            let (bvs, bes, seen) =
                decode_group(bt, brows, chunk, (q0, q1), &single, (&mut self.gb, &mut self.bv, &mut self.be));
            if seen {
                job.saw_nonfinite_b();
            }
            for r in 0..nr {
                let Ok(c) = <&mut [f32; CHAINS]>::try_from(&mut acc[r * ncp + g..r * ncp + g + CHAINS]) else {
                    continue;
                };
                let (a, e) = (&self.av[r * len..(r + 1) * len], &self.ae[r * len..(r + 1) * len]);
                wide_product_blocks::<CHAINS, HT, AVX512>(a, e, bvs, bes, nblk, c, &job.p);
            }
        }
    }
}

/// Asks for `codes` in the first-level cache: the next group's rows of B while the step runs over this group's (they
/// are read from memory once, in runs of a piece, too short and too many for the hardware's prefetching).
#[inline(always)]
fn prefetch(codes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in codes.chunks(64) {
        // SAFETY: x86-64 has SSE, the prefetch's instruction set, on every CPU; a prefetch reads nothing.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line.as_ptr().cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = codes;
}
