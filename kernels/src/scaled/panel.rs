//! The panel tile of the block-scaled chains: rows of A against a panel of W rows of B, K in pieces of whole blocks
//! whose panel codes are decoded once into position-major planes and whose scales are read once, every row of the
//! tile through the scaled block step of the planes' kind ([`Planes`]).

use super::step::{int32_serves, scale_exp, Blocks, ScaledLane};
use super::wide::WidePlanes;
use super::PanelTile;
use crate::driver::{piece_positions, whole_blocks, Job, X86_AVX512};
use crate::kernel::Params;
use crate::tables::{Lut, ZERO_EXP};
use std::ops::Range;

/// The operands of a block-scaled GEMM in the kernels' form: A's and B's codes (m x k and n x k, row-major), and the
/// e8m0 scale codes row-major [m, ceil(k / nfma)] and [n, ceil(k / nfma)].
pub struct Scaled<'a> {
    /// A's codes.
    pub a: &'a [u8],
    /// B's codes.
    pub b: &'a [u8],
    /// The reduction length.
    pub k: usize,
    /// A's table.
    pub la: Lut,
    /// B's table.
    pub lb: Lut,
    /// The preset's kernel parameters.
    pub p: Params,
    /// The preset's min_exp.
    pub min_exp: i32,
    /// A's scale codes.
    pub sa: &'a [u8],
    /// B's scale codes.
    pub sb: &'a [u8],
}

impl PanelTile for Scaled<'_> {
    /// Rows `rows` of A against the panel `cols` of B (at most W rows), NaN where the model must recompute.
    #[inline(always)]
    fn tile<const W: usize, const HT: bool, const X86: u8>(
        &self,
        job: &Job<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Vec<f32> {
        if int32_serves(&self.p) {
            panel_tile::<W, Lanes<W, f32>, HT, X86>(self, job, rows, cols)
        } else if super::wide::serves(&self.p, W, X86) {
            panel_tile::<W, WidePlanes, HT, X86>(self, job, rows, cols)
        } else {
            panel_tile::<W, Lanes<W, f64>, HT, X86>(self, job, rows, cols)
        }
    }
}

/// The decoded planes of one piece of a panel of W rows of B, and the block step over them.
pub trait Planes<const W: usize> {
    /// The target positions of a piece.
    fn piece(p: &Params) -> usize;
    /// Room for a piece of `len` positions.
    fn new(len: usize) -> Self;
    /// The planes of the positions `q.0 .. q.1` (whole blocks; those from K on are zero padding) of the panel `cols`
    /// of B, on the level `X86` names. Returns whether a code of the piece was non-finite, where B is watched
    /// ([`Job::watching`]; false otherwise).
    fn fill<const X86: u8>(&mut self, s: &Scaled<'_>, job: &Job<'_>, q: (usize, usize), cols: Range<usize>) -> bool;
    /// The scaled chains of one row (`a`, its codes over the piece) against the planes over `nblk` blocks, as
    /// [`ScaledLane::scaled_steps`].
    fn steps<const HT: bool>(&self, a: &[u8], nblk: usize, la: &Lut, bl: &Blocks<'_>, c: &mut [f32; W]);
}

/// The planes of [`ScaledLane::scaled_steps`]: the piece's codes, their values in lanes of `L` and their exponents.
pub struct Lanes<const W: usize, L> {
    pc: Vec<u8>,
    pv: Vec<L>,
    pe: Vec<i8>,
    len: usize,
}

impl<const W: usize, L: ScaledLane> Planes<W> for Lanes<W, L> {
    #[inline(always)]
    fn piece(p: &Params) -> usize {
        piece_positions(int32_serves(p), W)
    }
    #[inline(always)]
    fn new(len: usize) -> Self {
        Lanes { pc: vec![0u8; len * W], pv: vec![L::default(); len * W], pe: vec![ZERO_EXP; len * W], len: 0 }
    }
    #[inline(always)]
    fn fill<const X86: u8>(
        &mut self,
        s: &Scaled<'_>,
        job: &Job<'_>,
        (q0, q1): (usize, usize),
        cols: Range<usize>,
    ) -> bool {
        let (len, pc) = (q1 - q0, &mut self.pc[..(q1 - q0) * W]);
        job.chain_panel_codes::<W>(q0, q1, cols, pc, X86);
        self.len = len;
        let seen = L::decode(&s.lb, X86 == X86_AVX512, pc, &mut self.pv[..len * W], &mut self.pe[..len * W]);
        seen.unwrap_or_else(|| job.nonfinite_in_watched(pc))
    }
    #[inline(always)]
    fn steps<const HT: bool>(&self, a: &[u8], nblk: usize, la: &Lut, bl: &Blocks<'_>, c: &mut [f32; W]) {
        let n = self.len * W;
        L::scaled_steps::<W, HT>(a, nblk, la, &self.pv[..n], &self.pe[..n], bl, c);
    }
}

/// [`PanelTile::tile`] of the e8m0 block-scaled chains, over planes of the kind `P`.
#[inline(always)]
fn panel_tile<const W: usize, P: Planes<W>, const HT: bool, const X86: u8>(
    s: &Scaled<'_>,
    job: &Job<'_>,
    rows: Range<usize>,
    cols: Range<usize>,
) -> Vec<f32> {
    let (k, nfma, nr) = (s.k, s.p.nfma, rows.len());
    let nb = k.div_ceil(nfma);
    let piece_len = whole_blocks(nfma, P::piece(&s.p));
    let mut planes = P::new(piece_len);
    let (mut xa, mut xb) = (vec![0i32; piece_len / nfma], vec![0i32; piece_len / nfma * W]);
    let mut ga = vec![0u8; piece_len];
    let mut c = vec![0f32; nr * W];
    for q0 in (0..nb * nfma).step_by(piece_len) {
        let q1 = (q0 + piece_len).min(nb * nfma);
        let (len, nblk, b0) = (q1 - q0, (q1 - q0) / nfma, q0 / nfma);
        // The positions before K (the last block's rest is zero padding: zero codes, no products).
        let real = q1.min(k) - q0;
        if cols.len() < W {
            xb.fill(0);
        }
        if planes.fill::<X86>(s, job, (q0, q1), cols.clone()) {
            job.saw_nonfinite_b();
        }
        for (jj, j) in cols.clone().enumerate() {
            for (bi, &code) in s.sb[j * nb + b0..j * nb + b0 + nblk].iter().enumerate() {
                xb[bi * W + jj] = scale_exp(code);
            }
        }
        let last = if q1 == nb * nfma { k - (nb - 1) * nfma } else { nfma };
        for (c, i) in c.chunks_exact_mut(W).zip(rows.clone()) {
            let Ok(c) = <&mut [f32; W]>::try_from(c) else { continue };
            let row = &s.a[i * k + q0..i * k + q0 + real];
            let a = if real < len {
                ga[..real].copy_from_slice(row);
                ga[real..len].fill(0);
                &ga[..len]
            } else {
                row
            };
            for (x, &code) in xa.iter_mut().zip(&s.sa[i * nb + b0..i * nb + b0 + nblk]) {
                *x = scale_exp(code);
            }
            let bl = Blocks { p: &s.p, min_exp: s.min_exp, xa: &xa[..nblk], xb: &xb[..nblk * W], last };
            planes.steps::<HT>(a, nblk, &s.la, &bl, c);
        }
    }
    let mut out = Vec::with_capacity(nr * cols.len());
    c.chunks_exact(W).for_each(|c| out.extend_from_slice(&c[..cols.len()]));
    out
}
