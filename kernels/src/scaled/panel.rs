//! The panel tile of the block-scaled chains: rows of A against a panel of W rows of B, K in pieces of whole blocks
//! whose panel codes are decoded once into position-major planes and whose scales are read once, every row of the
//! tile through the scaled block step.

use super::step::{int32_serves, scale_exp, Blocks, ScaledLane};
use super::PanelTile;
use crate::driver::{piece_positions, whole_blocks, Job, X86_AVX512};
use crate::kernel::Params;
use crate::tables::{Lut, ZERO_EXP};
use std::ops::Range;

/// The operands of a block-scaled GEMM in the kernels' form: A's codes (m x k, row-major; B's are read through the
/// job), and the e8m0 scale codes row-major [m, ceil(k / nfma)] and [n, ceil(k / nfma)].
pub struct Scaled<'a> {
    /// A's codes.
    pub a: &'a [u8],
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
            panel_tile::<W, f32, HT, X86>(self, job, rows, cols)
        } else {
            panel_tile::<W, f64, HT, X86>(self, job, rows, cols)
        }
    }
}

/// [`PanelTile::tile`] of the e8m0 block-scaled chains, over planes of `L` values: f32 for the i32 step, f64 for the
/// other.
#[inline(always)]
fn panel_tile<const W: usize, L: ScaledLane, const HT: bool, const X86: u8>(
    s: &Scaled<'_>,
    job: &Job<'_>,
    rows: Range<usize>,
    cols: Range<usize>,
) -> Vec<f32> {
    let (k, nfma, nr) = (s.k, s.p.nfma, rows.len());
    let nb = k.div_ceil(nfma);
    let piece_len = whole_blocks(nfma, piece_positions(int32_serves(&s.p), W));
    let mut pc = vec![0u8; piece_len * W];
    let (mut pv, mut pe) = (vec![L::default(); piece_len * W], vec![ZERO_EXP; piece_len * W]);
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
        job.chain_panel_codes::<W>(q0, q1, cols.clone(), &mut pc, X86);
        L::decode(&s.lb, X86 == X86_AVX512, &pc[..len * W], &mut pv[..len * W], &mut pe[..len * W]);
        for (jj, j) in cols.clone().enumerate() {
            for (bi, &code) in s.sb[j * nb + b0..j * nb + b0 + nblk].iter().enumerate() {
                xb[bi * W + jj] = scale_exp(code);
            }
        }
        let last = if q1 == nb * nfma { k - (nb - 1) * nfma } else { nfma };
        let (pv, pe) = (&pv[..len * W], &pe[..len * W]);
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
            L::scaled_steps::<W, HT>(a, nblk, &s.la, pv, pe, &bl, c);
        }
    }
    let mut out = Vec::with_capacity(nr * cols.len());
    c.chunks_exact(W).for_each(|c| out.extend_from_slice(&c[..cols.len()]));
    out
}
