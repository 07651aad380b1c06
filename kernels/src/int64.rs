//! The wide path's panel step in i64 lanes, for the AVX-512 level (whose `vcvttps2qq` truncates eight f32 terms into
//! i64 at once): `kernel::block_steps` on f64 lanes with each term scaled in f32 and its truncation summed as an
//! integer, the block's end in f64 as there.

use crate::kernel::{block_ends, block_exponents, block_max, Lane, Params};
use crate::tables::Lut;

/// The bounds of the exponent x of a term's f32 scale 2^x, x = frac - E clamped to them: 2^x is a normal f32. In
/// the i64 steps (here and `crate::x86::wide_product_blocks8`) the term `trunc(a * b * 2^x)` is computed in f32 and
/// truncated by its conversion to i64, which gives the model's term:
/// - `a * b` is exact (two FP8 values, at most 8 significant bits) and below 2^32;
/// - where frac - E is inside the bounds, `a * b * 2^x` is exact wherever it reaches 1 (below 2^(frac + 2) <= 2^50:
///   no overflow; at or above 1: no underflow), and below 1 truncates to 0 whatever its rounding;
/// - where it is clamped, the term is 0 both ways: frac - E > 127 means E < frac - 127 <= -79, below every nonzero
///   product's exponent (>= -28), so every product is 0; frac - E < -126 means every product times the true scale is
///   below 2^32 * 2^-126 < 1, and so is it times 2^-126;
/// - every value is finite (non-finite codes decode to 0), so the conversion is defined, and below 2^50 it is inside
///   i64's range. The terms' sum stays below 2^53 (`Params`'s bound of the wide path): the i64 additions and the
///   conversion to f64 are exact.
pub(crate) const SCALE_EXPONENTS: (i32, i32) = (-126, 127);

/// [`crate::kernel::block_steps`] for a wide-path job that sums in f64 lanes (`LATE`, `NE` as there), over a panel
/// of f32 values: each term computed in f32 and truncated into i64 ([`SCALE_EXPONENTS`] says why it is exact), the
/// block's end in f64 as `block_steps` does.
#[inline(always)]
pub fn int64_steps<const W: usize, const LATE: bool, const NE: bool>(
    a: &[u8],
    nblk: usize,
    la: &Lut,
    pv: &[f32],
    pe: &[i8],
    c: &mut [f32; W],
    p: &Params,
) {
    let nfma = p.nfma;
    let zero = [0f32; W];
    for blk in 0..nblk {
        let ab = &a[blk * nfma..(blk + 1) * nfma];
        let bv = &pv[blk * nfma * W..(blk + 1) * nfma * W];
        let e = block_exponents::<W, LATE>(&block_max::<W>(ab, la, &pe[blk * nfma * W..(blk + 1) * nfma * W]), c, p);
        let s32: [f32; W] =
            std::array::from_fn(|j| <f32 as Lane>::pow2((p.frac - e[j]).clamp(SCALE_EXPONENTS.0, SCALE_EXPONENTS.1)));
        let mut acc = [0i64; W];
        for (&code, row) in ab.iter().zip(bv.chunks_exact(W)) {
            let va = la.v32[code as usize];
            let row: &[f32; W] = row.try_into().unwrap_or(&zero);
            for j in 0..W {
                // SAFETY: finite and below 2^50 in magnitude ([`SCALE_EXPONENTS`]), so inside i64's range.
                acc[j] += unsafe { (va * row[j] * s32[j]).to_int_unchecked::<i64>() };
            }
        }
        let s: [f64; W] = std::array::from_fn(|j| <f64 as Lane>::pow2(p.frac - e[j]));
        block_ends::<W, f64, LATE, NE, true>(&acc.map(|x| x as f64), &e, &s, c, p);
    }
}
