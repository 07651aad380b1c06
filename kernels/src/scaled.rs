//! The block-scaled chains of the CPU backend (docs/reference.md §2.8, MXFP8's e8m0 scales): one row of A against a
//! panel of W rows of B at a time, in exact f64 arithmetic, where every block result is a normal fp32 or zero; the
//! model's chain for every other output.

// The block step of §2.8 with the scale exponent s = e(sa) + e(sb) of the block and output: E = the largest of the
// nonzero products' exponents plus s, c's fp32 exponent (c nonzero), and min_exp when a product or c is zero; each
// product enters as trunc(a · b · 2^(frac - E + s)) and c as trunc(c · 2^(frac - E)), summed exactly, truncated (or
// rounded, nearest-even presets) to frac_out bits, times 2^(E - frac). The arithmetic is `crate::kernel`'s (see
// there): products of two FP8 values are exact in f64, multiplying by a power of two is exact while the result is
// normal (every factor here is between 2^-1022 and 2^1023: checked per block, else the output goes to the model),
// and the sum of nfma + 1 integers below 2^(frac + 2) is exact in f64 for every preset off `Path::Scalar`. Where c
// is normal its exponent field is the model's `c_exponent`; so every block result that is zero or a normal, finite
// fp32 is the model's bits, and an output with any other block result (subnormal or overflowing), a NaN scale
// (0xFF) or a factor out of range is recomputed by the model's `Chain::run_scaled`. Late-c presets, presets on the
// scalar path and operands with non-finite codes run on the model too.

use crate::kernel::{Lane, Params, Path};
use crate::tables::Lut;
use mmaemu_model::accumulate::scaled_chains_by_model;
use mmaemu_model::block_scale::e8m0_exponent;
use mmaemu_model::{CEntry, Chain, Operands, Preset};
use rayon::prelude::*;

/// Outputs per panel (f64 lanes).
const W: usize = 8;

/// The exponent given to a zero code: a product with a zero operand is below every real product by far.
const ZERO: i32 = -(1 << 20);

/// Whether the fast path can compute a preset's block-scaled chains (see the comment at the top of this file).
pub fn serves(preset: &Preset) -> bool {
    preset.c_entry() == CEntry::Early
        && preset.group().is_none()
        && preset.scale_block() == Some(preset.nfma())
        && Params::new(preset).path != Path::Scalar
}

/// The block-scaled chains of [`mmaemu_model::ChainEngine::scaled_chains`]; `hardware_trunc`: the CPU has SSE4.1
/// (the level is not portable), so that truncation vectorises.
pub fn scaled_chains(
    preset: &Preset,
    ops: &Operands<'_>,
    scale_a: &[u8],
    scale_b: &[u8],
    hardware_trunc: bool,
) -> Vec<f32> {
    if !serves(preset) || ops.k == 0 || ops.fa.any_nonfinite(ops.a) || ops.fb.any_nonfinite(ops.b) {
        return scaled_chains_by_model(preset, ops, scale_a, scale_b);
    }
    let (m, n) = (ops.m, ops.n);
    let panels: Vec<(Vec<f32>, Vec<bool>)> = (0..n.div_ceil(W))
        .into_par_iter()
        .map(|p| {
            let cols = p * W..((p + 1) * W).min(n);
            if hardware_trunc {
                panel_ht(preset, ops, scale_a, scale_b, cols)
            } else {
                panel::<false>(preset, ops, scale_a, scale_b, cols)
            }
        })
        .collect();
    let mut out = vec![0.0f32; m * n];
    let chain = Chain::new(preset, ops.fa, ops.fb);
    let nb = ops.k.div_ceil(preset.nfma());
    for (p, (vals, bad)) in panels.iter().enumerate() {
        for i in 0..m {
            for jj in 0..W.min(n - p * W) {
                let j = p * W + jj;
                out[i * n + j] = if bad[i * W + jj] {
                    let (ra, rb) = (&ops.a[i * ops.k..(i + 1) * ops.k], &ops.b[j * ops.k..(j + 1) * ops.k]);
                    chain.run_scaled(ra, rb, &scale_a[i * nb..(i + 1) * nb], &scale_b[j * nb..(j + 1) * nb], 0.0)
                } else {
                    vals[i * W + jj]
                };
            }
        }
    }
    out
}

/// [`panel`] with SSE4.1 to AVX2 instructions.
#[cfg(target_arch = "x86_64")]
fn panel_ht(
    preset: &Preset,
    ops: &Operands<'_>,
    sa: &[u8],
    sb: &[u8],
    cols: std::ops::Range<usize>,
) -> (Vec<f32>, Vec<bool>) {
    #[target_feature(enable = "avx2")]
    unsafe fn run(
        preset: &Preset,
        ops: &Operands<'_>,
        sa: &[u8],
        sb: &[u8],
        cols: std::ops::Range<usize>,
    ) -> (Vec<f32>, Vec<bool>) {
        panel::<true>(preset, ops, sa, sb, cols)
    }
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { run(preset, ops, sa, sb, cols) }
    } else {
        panel::<false>(preset, ops, sa, sb, cols)
    }
}

/// [`panel`] where no vector truncation is known.
#[cfg(not(target_arch = "x86_64"))]
fn panel_ht(
    preset: &Preset,
    ops: &Operands<'_>,
    sa: &[u8],
    sb: &[u8],
    cols: std::ops::Range<usize>,
) -> (Vec<f32>, Vec<bool>) {
    panel::<false>(preset, ops, sa, sb, cols)
}

/// 2^e as an f64, or None outside the normal range.
#[inline(always)]
fn pow2(e: i32) -> Option<f64> {
    (-1022..=1023).contains(&e).then(|| <f64 as Lane>::pow2(e))
}

/// Every row of A against the panel `cols` of B (at most W rows): the m x W results and which of them the model
/// must recompute.
#[inline(always)]
fn panel<const HT: bool>(
    preset: &Preset,
    ops: &Operands<'_>,
    scale_a: &[u8],
    scale_b: &[u8],
    cols: std::ops::Range<usize>,
) -> (Vec<f32>, Vec<bool>) {
    let (p, k, nfma) = (Params::new(preset), ops.k, preset.nfma());
    let (min_exp, nb) = (preset.min_exp(), k.div_ceil(nfma));
    let (la, lb) = (Lut::new(ops.fa), Lut::new(ops.fb));
    let exp = |l: &Lut, c: u8| if l.v64[c as usize] == 0.0 { ZERO } else { l.e[c as usize] as i32 };
    // The panel, position-major (zero codes in the columns past the panel's); its scale exponents (None: NaN
    // scale).
    let (mut pv, mut pe) = (vec![0.0f64; k * W], vec![ZERO; k * W]);
    let mut xb = vec![Some(0i32); nb * W];
    for (jj, j) in cols.clone().enumerate() {
        for (q, &c) in ops.b[j * k..(j + 1) * k].iter().enumerate() {
            (pv[q * W + jj], pe[q * W + jj]) = (lb.v64[c as usize], exp(&lb, c));
        }
        for blk in 0..nb {
            xb[blk * W + jj] = e8m0_exponent(scale_b[j * nb + blk]);
        }
    }
    let (mut out, mut bad) = (vec![0.0f32; ops.m * W], vec![false; ops.m * W]);
    let (mut av, mut ae) = (vec![0.0f64; k], vec![ZERO; k]);
    for i in 0..ops.m {
        for (q, &c) in ops.a[i * k..(i + 1) * k].iter().enumerate() {
            (av[q], ae[q]) = (la.v64[c as usize], exp(&la, c));
        }
        let mut c = [0.0f32; W];
        let mut bad_i = [false; W];
        for blk in 0..nb {
            // The block's positions (the last block holds the rest of K).
            let (o, len) = (blk * nfma, nfma.min(k - blk * nfma));
            let (bv, be) = (&pv[o * W..(o + len) * W], &pe[o * W..(o + len) * W]);
            // The largest and smallest product exponent per output.
            let (mut hi, mut lo) = ([i32::MIN; W], [i32::MAX; W]);
            for (re, &ea) in be.chunks_exact(W).zip(&ae[o..o + len]) {
                let re: &[i32; W] = re.try_into().unwrap_or(&[ZERO; W]);
                for j in 0..W {
                    let e = ea + re[j];
                    hi[j] = hi[j].max(e);
                    lo[j] = lo[j].min(e);
                }
            }
            let xa = e8m0_exponent(scale_a[i * nb + blk]);
            let (mut f, mut fc, mut inv) = ([0.0f64; W], [0.0f64; W], [0.0f64; W]);
            for j in 0..W {
                let (Some(xa), Some(xb)) = (xa, xb[blk * W + j]) else {
                    bad_i[j] = true;
                    continue;
                };
                let s = xa + xb;
                let mut e = if hi[j] > ZERO / 2 { hi[j] + s } else { i32::MIN };
                let mut zero = lo[j] <= ZERO / 2;
                if c[j] == 0.0 {
                    zero = true;
                } else {
                    e = e.max(((c[j].to_bits() >> 23) & 0xFF) as i32 - 127);
                }
                if zero {
                    e = e.max(min_exp);
                }
                match (pow2(p.frac - e + s), pow2(p.frac - e), pow2(e - p.frac)) {
                    (Some(x), Some(y), Some(z)) => (f[j], fc[j], inv[j]) = (x, y, z),
                    _ => bad_i[j] = true,
                }
            }
            // Aligned, truncated terms summed exactly (a bad lane computes zeros; its output is recomputed).
            let mut acc = [0.0f64; W];
            for (row, &va) in bv.chunks_exact(W).zip(&av[o..o + len]) {
                let row: &[f64; W] = row.try_into().unwrap_or(&[0.0; W]);
                for j in 0..W {
                    acc[j] += Lane::trunc::<HT>(va * row[j] * f[j]);
                }
            }
            for j in 0..W {
                let sum = acc[j] + Lane::trunc::<HT>(c[j] as f64 * fc[j]);
                let r = sum.keep_frac_out(&p) * inv[j];
                let normal = r == 0.0 || (r.abs() >= f32::MIN_POSITIVE as f64 && r.abs() < 2f64.powi(128));
                bad_i[j] |= !normal;
                c[j] = if normal { r as f32 } else { 0.0 };
            }
        }
        out[i * W..(i + 1) * W].copy_from_slice(&c);
        bad[i * W..(i + 1) * W].copy_from_slice(&bad_i);
    }
    (out, bad)
}
