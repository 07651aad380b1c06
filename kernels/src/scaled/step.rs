//! The e8m0 block-scaled block step of docs/reference.md §2.8 for W chains at once (one row of A against a panel of W
//! rows of B), early c: `crate::kernel::block_steps`'s arithmetic with the scale exponents folded into each block's
//! exponent and term scaling, and a record of the outputs whose block results leave the normal fp32 range.

// The model's block step (`mmaemu_model::Chain::block_scaled`), per output, with s = e(sa) + e(sb) the block's scale
// exponent:
//
// 1. E = the largest of: every nonzero product's exponent ea + eb plus s; c's fp32 exponent if c is nonzero; the
//    preset's min_exp if some product has a zero operand (a real one: the positions past K in the last block are no
//    products) or c is zero. (Without scales the floor can always be taken; with them products can lie below it.)
// 2. Each product enters as trunc(a · b · 2^(frac - E + s)), c as trunc(c · 2^(frac - E)); the exact sum is truncated
//    (or rounded, nearest-even presets) to frac_out bits and multiplied by 2^(E - frac).
//
// In f64 lanes every step is exact, as in `crate::kernel` (see there): a · b is exact; the power-of-two factor only
// moves the exponent while the result is normal, and a result below 2^-1022 is below 1, which truncates to 0 however
// it rounds; the terms are integers below 2^(frac + 2) (a product's magnitude is below 2^(ea + eb + 2) and
// ea + eb + s <= E), and a block's sum is exact because the preset is off `Path::Scalar` (the sum of nfma + 1 such
// integers is below 2^53). The factors stay normal: product exponents lie in [-28, 30], s in [-254, 256] (the NaN
// code reads as 128 here), so E lies in [min(-282, min_exp), max(286, min_exp)] and, for presets with
// |min_exp| <= `MIN_EXP_BOUND` and frac <= 48, every exponent built below lies within f64's normal range.
//
// A block result that is zero or a normal, finite fp32 is then the model's bits (the model's normalisation and -126
// clamp agree with clearing the low mantissa bits there). Any other block result (subnormal or overflowing) or a NaN
// scale marks the output: its c becomes NaN and stays NaN (its fp32 exponent reads as 128, which keeps the factors
// normal, and the check keeps it NaN even where a truncation without the hardware instruction turns NaN into 0),
// and the model's chain recomputes it afterwards.

use crate::kernel::{block_max, exp_f32, Lane, Params};
use crate::tables::Lut;

/// The largest |min_exp| whose blocks this step computes (see the comment at the top of this file).
pub const MIN_EXP_BOUND: i32 = 700;

/// Above every exponent sum with a zero operand (at most `ZERO_EXP + 15 = -81`), below every real one (at least -28).
const REAL: i32 = -60;

/// An exponent below every candidate of E: no candidate.
pub(super) const NONE: i32 = -4096;

/// The exponent of a NaN scale code (0xFF): 128, as `code - 127` gives it; marks the output.
pub const NAN_SCALE: i32 = 128;

/// The e8m0 scale exponent of a code as the step takes it (the NaN code gives [`NAN_SCALE`]).
#[inline(always)]
pub fn scale_exp(code: u8) -> i32 {
    code as i32 - 127
}

/// One row's view of the scales and the block step's parameters.
pub struct Blocks<'a> {
    /// The preset's kernel parameters (`Params::new`).
    pub p: &'a Params,
    /// The preset's min_exp.
    pub min_exp: i32,
    /// The row's scale exponents of A, one per block of the piece ([`scale_exp`]).
    pub xa: &'a [i32],
    /// The panel's scale exponents of B, W per block of the piece.
    pub xb: &'a [i32],
    /// The real positions of the piece's last block (nfma where it is whole; past them are zero padding).
    pub last: usize,
}

/// The smallest product exponent per output over the first `len` positions of a block (saturating i8 lanes).
#[inline(always)]
fn block_min<const W: usize>(ab: &[u8], la: &Lut, pe: &[i8], len: usize) -> [i8; W] {
    let mut e = [i8::MAX; W];
    for (&code, row) in ab.iter().zip(pe.chunks_exact(W)).take(len) {
        let ea = la.e[code as usize];
        let row: &[i8; W] = row.try_into().unwrap_or(&[0; W]);
        for j in 0..W {
            e[j] = e[j].min(ea.saturating_add(row[j]));
        }
    }
    e
}

/// The scaled chains of one row against a W-wide panel over one piece of `nblk` blocks: `a` holds the row's codes,
/// `pv`/`pe` the panel's values and exponents (one row of W per position) and `c` the W running accumulators: normal,
/// zero, or NaN for a marked output (see the comment at the top of this file). `HT`: truncate with the hardware
/// instruction.
#[inline(always)]
pub fn scaled_block_steps<const W: usize, const HT: bool>(
    a: &[u8],
    nblk: usize,
    la: &Lut,
    pv: &[f64],
    pe: &[i8],
    bl: &Blocks<'_>,
    c: &mut [f32; W],
) {
    let (p, nfma) = (bl.p, bl.p.nfma);
    let zero = [0f64; W];
    for blk in 0..nblk {
        let ab = &a[blk * nfma..(blk + 1) * nfma];
        let bv = &pv[blk * nfma * W..(blk + 1) * nfma * W];
        let be = &pe[blk * nfma * W..(blk + 1) * nfma * W];
        let hi = block_max::<W>(ab, la, be);
        let real = if blk + 1 == nblk { bl.last } else { nfma };
        // The zero-product rule: a nonzero c is normal, at or above 2^-126, so a min_exp at or below -126 only
        // decides E with c = 0, when the rule holds anyway; the pass is needed only above it.
        let lo = if bl.min_exp > -126 { block_min::<W>(ab, la, be, real) } else { [i8::MAX; W] };
        let xa = bl.xa[blk];
        let xb: &[i32; W] = bl.xb[blk * W..(blk + 1) * W].try_into().unwrap_or(&[0; W]);
        // Step 1 and the factors 2^(frac - E + s), 2^(frac - E), 2^(E - frac), branch-free over the lanes.
        let (mut f, mut fc, mut inv) = ([0f64; W], [0f64; W], [0f64; W]);
        let mut nan = [false; W];
        for j in 0..W {
            let s = xa + xb[j];
            nan[j] = xa == NAN_SCALE || xb[j] == NAN_SCALE;
            let h = hi[j] as i32;
            let cz = c[j] == 0.0;
            let mut e = if h > REAL { h + s } else { NONE };
            e = e.max(if cz { NONE } else { exp_f32(c[j]) });
            e = e.max(if cz || (lo[j] as i32) <= REAL { bl.min_exp } else { NONE });
            f[j] = <f64 as Lane>::pow2(p.frac - e + s);
            fc[j] = <f64 as Lane>::pow2(p.frac - e);
            inv[j] = <f64 as Lane>::pow2(e - p.frac);
        }
        // Step 2: the aligned, truncated terms summed exactly.
        let mut acc = [0f64; W];
        for (&code, row) in ab.iter().zip(bv.chunks_exact(W)) {
            let va = <f64 as Lane>::value(la, code);
            let row: &[f64; W] = row.try_into().unwrap_or(&zero);
            for j in 0..W {
                acc[j] += Lane::trunc::<HT>(va * row[j] * f[j]);
            }
        }
        for j in 0..W {
            let sum = acc[j] + Lane::trunc::<HT>(f64::from(c[j]) * fc[j]);
            let r = sum.keep_frac_out(p) * inv[j];
            let m = r.abs();
            let ok = !nan[j]
                && !c[j].is_nan()
                && (r == 0.0 || (m >= f64::from(f32::MIN_POSITIVE) && m <= f64::from(f32::MAX)));
            c[j] = if ok { r as f32 } else { f32::NAN };
        }
    }
}
