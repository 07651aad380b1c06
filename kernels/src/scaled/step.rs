//! The e8m0 block-scaled block step of docs/reference.md §2.8 for W chains at once (one row of A against a panel of W
//! rows of B), early or late c: `crate::kernel::block_steps`'s arithmetic with the scale exponents folded into each
//! block's exponent and term scaling, and a record of the outputs whose block results leave the normal fp32 range.

// The model's block step (`mmaemu_model::Chain::block_scaled`), per output, with s = e(sa) + e(sb) the block's scale
// exponent:
//
// 1. E = the largest of: every nonzero product's exponent ea + eb plus s; c's fp32 exponent if c is nonzero; the
//    preset's min_exp if some product has a zero operand (a real one: the positions past K in the last block are no
//    products) or c is zero. (Without scales the floor can always be taken; with them products can lie below it.)
// 2. Each product enters as trunc(a · b · 2^(frac - E + s)), c as trunc(c · 2^(frac - E)); the exact sum is truncated
//    (or rounded, nearest-even presets) to frac_out bits and multiplied by 2^(E - frac).
//
// A late c (docs/reference.md §2.3 with §2.8) takes no part in either step: E is the products' (with min_exp wherever
// a product has a zero operand), the block's result d is normalised alone, and c + d is one fp32 addition, which the
// kernel makes as the model does. A sum that overflows is the model's too: an infinite c stays out of E, and the
// model's next blocks keep it (the IEEE class of c plus finite products, §2.5), as c + d does here.
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
//
// The i32 step (`ScaledLane` for f32, presets that `int32_serves`: frac <= 28) runs step 2 over f32 values, with the
// factor 2^(frac - E + s) an f32 whose exponent is clamped to `INT32_SCALE`: a · b is exact in f32 (at most 8
// significant bits, between 2^-32 and 2^32), and times a factor inside the bounds only its exponent moves wherever
// the result reaches 1 (below 1 it truncates to 0 however it rounds), so its conversion to i32 is the term, below
// 2^(frac + 2). A nonzero product has frac - E + s <= frac - (ea + eb) <= 28 + 28, inside the upper bound, which
// therefore only changes the factor of zero products (0 either way: the factor stays finite); below the lower bound
// every product is below 2^32 · 2^-126 < 1 times the true factor or the clamped one: 0 either way. A group's sum of at
// most `Params::int32_group` terms is below 2^31, exact in i32; the groups' sums and c's term (in f64, as above) add
// exactly in f64 (the block sums stay below 2^53 off `Path::Scalar`).

use crate::kernel::{block_max, exp_f32, Lane, Params, MIN_INT32_GROUP};
use crate::small::add_i32_terms;
use crate::tables::Lut;

/// The bounds of the exponent of the i32 step's f32 factor (see the comment at the top of this file): normal f32.
const INT32_SCALE: (i32, i32) = (-126, 127);

/// Whether the block-scaled step sums a preset's terms in i32 lanes (`ScaledLane` for f32): its groups
/// (`Params::int32_group`, 0 above frac 28) hold at least `MIN_INT32_GROUP` products or the whole block.
pub fn int32_serves(p: &Params) -> bool {
    p.int32_group >= p.nfma.min(MIN_INT32_GROUP)
}

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

/// The largest and the smallest product exponent per output over the first `len` positions of a block (saturating
/// i8 lanes), in one pass.
#[inline(always)]
fn block_range<const W: usize>(ab: &[u8], la: &Lut, pe: &[i8], len: usize) -> ([i8; W], [i8; W]) {
    let (mut hi, mut lo) = ([i8::MIN; W], [i8::MAX; W]);
    for (&code, row) in ab.iter().zip(pe.chunks_exact(W)).take(len) {
        let ea = la.e[code as usize];
        let row: &[i8; W] = row.try_into().unwrap_or(&[0; W]);
        for j in 0..W {
            let e = ea.saturating_add(row[j]);
            (hi[j], lo[j]) = (hi[j].max(e), lo[j].min(e));
        }
    }
    (hi, lo)
}

/// Step 1 for the W chains of one block (see the comment at the top of this file): the block exponent E of each
/// output, its scale exponent s, and whether a NaN scale marks it. `ab` holds the row's codes of the block, `be` the
/// panel's exponents (W per position), `real` the block's positions before K, `c` the accumulators.
#[inline(always)]
fn exponents<const W: usize>(
    ab: &[u8],
    la: &Lut,
    be: &[i8],
    real: usize,
    (xa, xb): (i32, &[i32; W]),
    min_exp: i32,
    (c, late): (&[f32; W], bool),
) -> ([i32; W], [i32; W], [bool; W]) {
    // The zero-product rule: a nonzero early c is normal, at or above 2^-126, so a min_exp at or below -126 only
    // decides E with c = 0, when the rule holds anyway; the smallest exponents are needed only above it. A late c
    // takes no part, so the rule needs them always. (The padding past the real positions holds zero products, whose
    // exponents lie below `REAL` as every zero product's does: leaving them out of the maximum changes no E.)
    let (hi, lo) = if late || min_exp > -126 {
        block_range::<W>(ab, la, be, real)
    } else {
        (block_max::<W>(ab, la, be), [i8::MAX; W])
    };
    let (mut e, mut s, mut nan) = ([0i32; W], [0i32; W], [false; W]);
    for j in 0..W {
        s[j] = xa + xb[j];
        nan[j] = xa == NAN_SCALE || xb[j] == NAN_SCALE;
        let h = hi[j] as i32;
        // A late c counts as a nonzero one here, which neither enters E nor calls for the floor.
        let (cz, ce) = if late { (false, NONE) } else { (c[j] == 0.0, exp_f32(c[j])) };
        e[j] = if h > REAL { h + s[j] } else { NONE };
        e[j] = e[j].max(if cz { NONE } else { ce });
        e[j] = e[j].max(if cz || (lo[j] as i32) <= REAL { min_exp } else { NONE });
    }
    (e, s, nan)
}

/// Step 1 for each of the `nblk` blocks of a piece in turn (`a`, `pe` and `bl` as for [`ScaledLane::scaled_steps`]),
/// then `end(blk, the row's codes of the block, (E, s, NaN scale) per output, c)`, which ends the block.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) fn each_block<const W: usize>(
    a: &[u8],
    nblk: usize,
    la: &Lut,
    pe: &[i8],
    bl: &Blocks<'_>,
    c: &mut [f32; W],
    mut end: impl FnMut(usize, &[u8], (&[i32; W], &[i32; W], &[bool; W]), &mut [f32; W]),
) {
    let nfma = bl.p.nfma;
    for blk in 0..nblk {
        let ab = &a[blk * nfma..(blk + 1) * nfma];
        let be = &pe[blk * nfma * W..(blk + 1) * nfma * W];
        let real = if blk + 1 == nblk { bl.last } else { nfma };
        let xb: &[i32; W] = bl.xb[blk * W..(blk + 1) * W].try_into().unwrap_or(&[0; W]);
        let (e, s, nan) = exponents::<W>(ab, la, be, real, (bl.xa[blk], xb), bl.min_exp, (c, bl.p.late));
        end(blk, ab, (&e, &s, &nan), c);
    }
}

/// Step 2's end for the W chains of one block: `terms` is the exact sum of the products' terms; an early c's term
/// trunc(c · 2^(frac - E)) is added, the sum kept to frac_out bits and scaled by 2^(E - frac), and an output whose
/// result is not zero or a normal fp32 (or that `nan` or a NaN c marks) becomes NaN. A late c (`p.late`) then takes
/// the result in one fp32 addition (see the comment at the top of this file).
#[inline(always)]
fn block_ends<const W: usize, const HT: bool>(
    terms: &[f64; W],
    e: &[i32; W],
    nan: &[bool; W],
    c: &mut [f32; W],
    p: &Params,
) {
    for j in 0..W {
        let ct = if p.late { 0.0 } else { Lane::trunc::<HT>(f64::from(c[j]) * <f64 as Lane>::pow2(p.frac - e[j])) };
        let r = (terms[j] + ct).keep_frac_out(p) * <f64 as Lane>::pow2(e[j] - p.frac);
        let d = block_result(r, nan[j] || c[j].is_nan());
        c[j] = if p.late { c[j] + d } else { d };
    }
}

/// A block's result `r` as the output's accumulator: `r` in fp32 where it is zero or a normal fp32 (then exact) and
/// nothing marks the output (`marked`: a NaN scale, or a NaN accumulator), else NaN, which marks it for the model's
/// chain (see the comment at the top of this file).
#[inline(always)]
pub(super) fn block_result(r: f64, marked: bool) -> f32 {
    let m = r.abs();
    let ok = !marked && (r == 0.0 || (m >= f64::from(f32::MIN_POSITIVE) && m <= f64::from(f32::MAX)));
    if ok {
        r as f32
    } else {
        f32::NAN
    }
}

/// The lane type of a block-scaled step's planes: f64 (every preset the panels serve) or f32 (the i32 step, presets
/// that [`int32_serves`]), and step 2's sum of a block's terms over them.
pub trait ScaledLane: Lane {
    /// The scaled chains of one row against a W-wide panel over one piece of `nblk` blocks: `a` holds the row's
    /// codes, `pv`/`pe` the panel's values and exponents (one row of W per position) and `c` the W running
    /// accumulators: normal or zero (a late c: any finite fp32), or NaN for a marked output (see the comment at the
    /// top of this file). `HT`: truncate with the hardware instruction.
    #[inline(always)]
    fn scaled_steps<const W: usize, const HT: bool>(
        a: &[u8],
        nblk: usize,
        la: &Lut,
        pv: &[Self],
        pe: &[i8],
        bl: &Blocks<'_>,
        c: &mut [f32; W],
    ) {
        let (p, nfma) = (bl.p, bl.p.nfma);
        each_block::<W>(a, nblk, la, pe, bl, c, |blk, ab, (e, s, nan), c| {
            let bv = &pv[blk * nfma * W..(blk + 1) * nfma * W];
            // The exponents of the factors 2^(frac - E + s).
            let x: [i32; W] = std::array::from_fn(|j| p.frac - e[j] + s[j]);
            let terms = Self::terms::<W, HT>(ab, bv, la, &x, p);
            block_ends::<W, HT>(&terms, e, nan, c, p);
        });
    }

    /// Step 2's sum of a block's terms trunc(a · b · 2^x) for each of the W outputs, exact: `ab` the row's codes, `bv`
    /// the panel's values (W per position), `x` each output's factor exponent frac - E + s.
    fn terms<const W: usize, const HT: bool>(ab: &[u8], bv: &[Self], la: &Lut, x: &[i32; W], p: &Params) -> [f64; W];
}

impl ScaledLane for f64 {
    /// Each term exact in f64 and truncated there.
    #[inline(always)]
    fn terms<const W: usize, const HT: bool>(ab: &[u8], bv: &[f64], la: &Lut, x: &[i32; W], _: &Params) -> [f64; W] {
        let f: [f64; W] = std::array::from_fn(|j| <f64 as Lane>::pow2(x[j]));
        let zero = [0f64; W];
        let mut acc = [0f64; W];
        for (&code, row) in ab.iter().zip(bv.chunks_exact(W)) {
            let va = <f64 as Lane>::value(la, code);
            let row: &[f64; W] = row.try_into().unwrap_or(&zero);
            for j in 0..W {
                acc[j] += Lane::trunc::<HT>(va * row[j] * f[j]);
            }
        }
        acc
    }
}

impl ScaledLane for f32 {
    /// The i32 step: each term scaled in f32 (the factor's exponent clamped to [`INT32_SCALE`]) and truncated by its
    /// conversion to i32, the terms of a group of `Params::int32_group` products added in i32, the groups' sums in
    /// f64 (see the comment at the top of this file).
    #[inline(always)]
    fn terms<const W: usize, const HT: bool>(ab: &[u8], bv: &[f32], la: &Lut, x: &[i32; W], p: &Params) -> [f64; W] {
        let f: [f32; W] = std::array::from_fn(|j| <f32 as Lane>::pow2(x[j].clamp(INT32_SCALE.0, INT32_SCALE.1)));
        let group = p.int32_group.clamp(1, p.nfma);
        let mut terms = [0f64; W];
        for (codes, rows) in ab.chunks(group).zip(bv.chunks(group * W)) {
            let mut t = [0i32; W];
            // SAFETY: every term is finite and below 2^(frac + 2) <= 2^30, and a group's sum below 2^31 (see the
            // comment at the top of this file).
            unsafe { add_i32_terms::<W>(codes, rows, la, &f, &mut t) };
            for j in 0..W {
                terms[j] += f64::from(t[j]);
            }
        }
        terms
    }
}
