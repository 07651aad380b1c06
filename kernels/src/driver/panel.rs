//! The panel executor: a tile of rows of A against a panel of W rows of B, each piece of the panel's codes moved
//! into position-major order and decoded once, then every row of the tile through the portable panel step.

use super::tiles::{piece_positions, whole_blocks};
use super::{rows_of_a, ChunkPlan, Job, Piece, TileOutputs, X86_AVX512, X86_NONE};
use crate::kernel::{block_steps, Lane, Path};
use crate::small::{int32_steps, single_product_steps};
use crate::tables::ZERO_EXP;
use std::ops::Range;

/// One panel tile with the kernel its job's path needs. `HT`: the level truncates in hardware (SSE4.1 and up);
/// `X86`: the level the tile runs on (`super::X86_NONE`, `X86_AVX2` or `X86_AVX512`): on the AVX-512 level the pieces
/// are decoded as `Lut::decode_on` says (that level runs the wide jobs with room for their bias on its own panels,
/// `super::wide_panel`), and on both x86 levels their codes are moved by [`panel_codes_x86`].
#[inline(always)]
pub fn tile<const W: usize, const HT: bool, const X86: u8>(
    job: &Job,
    rows: Range<usize>,
    cols: Range<usize>,
) -> Vec<f32> {
    let t = (rows, cols, X86);
    match job.p.path {
        Path::Narrow => tile_with::<W, f32, false, false, BLOCKS, HT>(job, t),
        _ if job.p.single => tile_with::<W, f32, true, false, SINGLE, HT>(job, t),
        _ if job.p.int32 && job.p.int32_group >= job.p.nfma => tile_by_entry::<W, f32, INT32, HT>(job, t),
        _ if job.p.int32 => tile_by_entry::<W, f32, INT32_GROUPS, HT>(job, t),
        _ => tile_by_entry::<W, f64, BLOCKS, HT>(job, t),
    }
}

/// [`tile_with`] for the job's c entry (`LATE`) and block rounding (`NE`).
#[inline(always)]
fn tile_by_entry<const W: usize, L: Lane, const STEP: u8, const HT: bool>(
    job: &Job,
    t: (Range<usize>, Range<usize>, u8),
) -> Vec<f32> {
    match (job.p.late, job.p.nearest) {
        (true, true) => tile_with::<W, L, true, true, STEP, HT>(job, t),
        (true, false) => tile_with::<W, L, true, false, STEP, HT>(job, t),
        (false, true) => tile_with::<W, L, false, true, STEP, HT>(job, t),
        (false, false) => tile_with::<W, L, false, false, STEP, HT>(job, t),
    }
}

/// The panel step of a tile: `crate::kernel::block_steps`, or one of `crate::small`'s (f32 values).
const BLOCKS: u8 = 0;
const SINGLE: u8 = 1;
const INT32: u8 = 2;
const INT32_GROUPS: u8 = 3;

/// One panel tile: rows `rows` of A against the panel `cols` of B (at most W rows), every split and chunk, with
/// the lanes along the panel's outputs, on the level `x86` names (how the panel is moved and decoded, see
/// `Lut::decode_on`). Returns `rows.len()` rows of `cols.len()` results.
#[inline(always)]
fn tile_with<const W: usize, L: Lane, const LATE: bool, const NE: bool, const STEP: u8, const HT: bool>(
    job: &Job,
    (rows, cols, x86): (Range<usize>, Range<usize>, u8),
) -> Vec<f32> {
    let nfma = job.p.nfma;
    let nr = rows.len();
    let (j0, ncols) = (cols.start, cols.len());
    let piece_len = whole_blocks(nfma, piece_positions(STEP == INT32 || STEP == INT32_GROUPS, W));
    let tile = TileOutputs::new(&rows, &cols, W);
    let mut piece = PanelPiece::<W, L, LATE, NE, STEP, HT> {
        rows: rows.clone(),
        ncols,
        j0,
        pc: vec![0u8; piece_len * W],
        pv: vec![L::default(); piece_len * W],
        pe: vec![ZERO_EXP; piece_len * W],
        ga: vec![0u8; nr * piece_len],
        x86,
    };
    let acc = job.accumulate(&tile, piece_len, &mut piece);
    // Drop the padding columns of the panel.
    let mut out = Vec::with_capacity(nr * ncols);
    acc.chunks_exact(W).for_each(|r| out.extend_from_slice(&r[..ncols]));
    out
}

/// The scratch of a panel tile: the decoded panel piece and the gathered rows of A.
struct PanelPiece<const W: usize, L, const LATE: bool, const NE: bool, const STEP: u8, const HT: bool> {
    rows: Range<usize>,
    ncols: usize,
    j0: usize,
    /// The panel piece's codes, position-major.
    pc: Vec<u8>,
    pv: Vec<L>,
    pe: Vec<i8>,
    ga: Vec<u8>,
    /// The level the tile runs on (see [`tile`]).
    x86: u8,
}

impl<const W: usize, L: Lane, const LATE: bool, const NE: bool, const STEP: u8, const HT: bool> Piece
    for PanelPiece<W, L, LATE, NE, STEP, HT>
{
    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        let (nfma, nr, ncols, j0) = (job.p.nfma, self.rows.len(), self.ncols, self.j0);
        let (pc, pv, pe, ga) = (&mut self.pc, &mut self.pv, &mut self.pe, &mut self.ga);
        let len = q1 - q0;
        move_codes::<W>(job, chunk, (q0, q1), j0..j0 + ncols, pc, self.x86);
        L::decode(&job.lb, self.x86 == X86_AVX512, &pc[..len * W], &mut pv[..len * W], &mut pe[..len * W]);
        let nblk = len / nfma;
        let (pv, pe) = (&pv[..len * W], &pe[..len * W]);
        let (a, stride) = rows_of_a(job, self.rows.clone(), chunk, q0, q1, &mut ga[..nr * len]);
        let row = |r: usize| &a[r * stride..r * stride + len];
        let accs = acc.chunks_exact_mut(W).filter_map(|c| <&mut [f32; W]>::try_from(c).ok());
        match (STEP, L::f32s(pv)) {
            (INT32, Some(pv)) => return int32_rows::<W, LATE, NE, false>(job, nblk, pv, pe, row, accs),
            (INT32_GROUPS, Some(pv)) => return int32_rows::<W, LATE, NE, true>(job, nblk, pv, pe, row, accs),
            _ => {}
        }
        for (r, c) in accs.enumerate() {
            match (STEP, L::f32s(pv)) {
                (SINGLE, Some(pv)) => single_product_steps::<W>(row(r), &job.la, pv, c),
                _ => block_steps::<W, L, LATE, NE, HT>(row(r), nblk, &job.la, pv, pe, c, &job.p),
            }
        }
    }
}

/// The i32 step (`int32_steps`) over a tile's rows: two at a time (`int32_steps` says why), the last one alone.
#[inline(always)]
fn int32_rows<'a, 'c, const W: usize, const LATE: bool, const NE: bool, const GROUPS: bool>(
    job: &Job,
    nblk: usize,
    pv: &[f32],
    pe: &[i8],
    row: impl Fn(usize) -> &'a [u8],
    mut accs: impl Iterator<Item = &'c mut [f32; W]>,
) {
    let mut r = 0;
    while let Some(c0) = accs.next() {
        match accs.next() {
            Some(c1) => {
                let (a, c) = ([row(r), row(r + 1)], [c0, c1]);
                int32_steps::<W, LATE, NE, 2, GROUPS>(a, nblk, &job.la, pv, pe, c, &job.p);
            }
            None => int32_steps::<W, LATE, NE, 1, GROUPS>([row(r)], nblk, &job.la, pv, pe, [c0], &job.p),
        }
        r += 2;
    }
}

/// The panel's codes (`cols` of B, at most W) at positions [q0, q1) of a chunk, moved into position-major order
/// (W per position; zero codes at padding positions and in the columns past the panel's), ready to be decoded
/// in one pass that vectorises: a copy of bytes and a decoding from the bits cost less than a table lookup of
/// every code at its place in the panel. The move runs in squares of 8 columns by 8 positions, transposed in
/// registers ([`transpose8`]); the edges byte by byte.
#[inline(always)]
pub(super) fn panel_codes<const W: usize>(
    job: &Job,
    chunk: &ChunkPlan,
    q0: usize,
    q1: usize,
    cols: Range<usize>,
    pc: &mut [u8],
) {
    let (k, len) = (job.k, q1 - q0);
    let real: usize = chunk.segments(q0, q1).map(|(_, kr)| kr.len()).sum();
    if real < len || cols.len() < W {
        pc[..len * W].fill(0);
    }
    let pc = &mut pc[..len * W];
    for (off, kr) in chunk.segments(q0, q1) {
        let n = kr.len();
        let row = |j: usize| &job.b[j * k + kr.start..j * k + kr.end];
        let (whole_cols, whole_pos) = (cols.len() / 8 * 8, n / 8 * 8);
        for jj in (0..whole_cols).step_by(8) {
            let rows: [&[u8]; 8] = std::array::from_fn(|i| row(cols.start + jj + i));
            for t in (0..whole_pos).step_by(8) {
                let mut x = [0u64; 8];
                for (x, r) in x.iter_mut().zip(rows) {
                    *x = u64::from_le_bytes(r[t..t + 8].try_into().unwrap_or([0; 8]));
                }
                transpose8(&mut x);
                for (i, x) in x.iter().enumerate() {
                    let at = (off + t + i) * W + jj;
                    pc[at..at + 8].copy_from_slice(&x.to_le_bytes());
                }
            }
            for (i, r) in rows.iter().enumerate() {
                for t in whole_pos..n {
                    pc[(off + t) * W + jj + i] = r[t];
                }
            }
        }
        for jj in whole_cols..cols.len() {
            for (t, &code) in row(cols.start + jj).iter().enumerate() {
                pc[(off + t) * W + jj] = code;
            }
        }
    }
}

/// [`panel_codes`] in a tile of the level `x86` (`super::X86_NONE`, `X86_AVX2` or `X86_AVX512`): on both x86 levels
/// by [`panel_codes_x86`] (checking AVX2, which their CPUs have, so that any caller stays sound).
#[inline(always)]
pub(super) fn move_codes<const W: usize>(
    job: &Job,
    chunk: &ChunkPlan,
    (q0, q1): (usize, usize),
    cols: Range<usize>,
    pc: &mut [u8],
    x86: u8,
) {
    #[cfg(target_arch = "x86_64")]
    if x86 != X86_NONE && std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (just seen).
        return unsafe { panel_codes_x86::<W>(job, chunk, q0, q1, cols, pc) };
    }
    let _ = x86;
    panel_codes::<W>(job, chunk, q0, q1, cols, pc);
}

/// [`panel_codes`] on the x86 levels, whose CPUs have AVX2: a whole panel's piece of one run of k (W a multiple of
/// 32, whole groups of 16 positions) by the byte transposes in registers of `crate::x86::panel_positions_avx2`, any
/// other piece as [`panel_codes`] moves it.
///
/// # Safety
/// The CPU must support AVX2 (the caller is a tile of an x86 level).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) unsafe fn panel_codes_x86<const W: usize>(
    job: &Job,
    chunk: &ChunkPlan,
    q0: usize,
    q1: usize,
    cols: Range<usize>,
    pc: &mut [u8],
) {
    let len = q1 - q0;
    match super::one_run(chunk, q0, q1) {
        Some(kr) if W.is_multiple_of(32) && cols.len() == W && len.is_multiple_of(16) => {
            crate::x86::panel_positions_avx2::<W>(&job.b[cols.start * job.k..], (job.k, kr.start, len), pc)
        }
        _ => panel_codes::<W>(job, chunk, q0, q1, cols, pc),
    }
}

/// Transposes the 8 x 8 bytes of `x` (byte c of `x[r]`, least significant first, becomes byte r of `x[c]`): three
/// rounds of exchanges of 1-, 2- and 4-byte blocks between rows 1, 2 and 4 apart.
#[inline(always)]
fn transpose8(x: &mut [u64; 8]) {
    for (shift, mask, pairs) in [
        (8, 0x00FF_00FF_00FF_00FFu64, [(0, 1), (2, 3), (4, 5), (6, 7)]),
        (16, 0x0000_FFFF_0000_FFFF, [(0, 2), (1, 3), (4, 6), (5, 7)]),
        (32, 0x0000_0000_FFFF_FFFF, [(0, 4), (1, 5), (2, 6), (3, 7)]),
    ] {
        for (r, s) in pairs {
            let t = ((x[r] >> shift) ^ x[s]) & mask;
            x[s] ^= t;
            x[r] ^= t << shift;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::transpose8;

    /// Byte c of row r lands at byte r of row c, for every r and c.
    #[test]
    fn transpose8_transposes() {
        let mut x = [0u64; 8];
        for (r, x) in x.iter_mut().enumerate() {
            *x = u64::from_le_bytes(std::array::from_fn(|c| (16 * r + c) as u8));
        }
        transpose8(&mut x);
        for (c, x) in x.iter().enumerate() {
            assert_eq!(x.to_le_bytes(), std::array::from_fn(|r| (16 * r + c) as u8), "row {c}");
        }
    }
}
