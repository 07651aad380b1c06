//! The instruction model (docs/reference.md §2.2–§2.5, §2.7): one block step of a tensor-core FP8 multiply-accumulate,
//! and the chain of block steps over K that every GEMM plan is built from.

// Everything here is integer arithmetic on exact values, except the late-c preset's final fp32 addition, which is one
// IEEE round-to-nearest-even operation by definition (§2.3 step 6). No step depends on evaluation order, so the result
// is the same on every device and thread count.
//
// Integer form: an FP8 operand is `sig * 2^(e - mbits)` with e its operand exponent (format.rs), so a product is
// `P * 2^(ep - ma - mb)` with `P = sig_a * sig_b < 2^8` and `ep = e(a) + e(b)`. With the block grid `2^g`,
// `g = E - frac`, the aligned term is `trunc(P * 2^(ep - ma - mb - g))`: a shift of an integer. Bounds: `ep <= E`, so a
// term is below `2^(frac + 2)` (< 2^42); c is below `2^(frac + 1)` after alignment; the sum of a block is kept in i128,
// which holds any block size.

use crate::error::{Error, Result};
use crate::format::{Class, Decoded, Format};
use crate::nonfinite::NonfiniteSum;
use crate::preset::{BlockRounding, CEntry, Preset};
pub use crate::round::{canonical_f32, CANONICAL_NAN_F32};
use crate::round::{f32_from_parts, f32_parts, ilog2};

/// A chain evaluator for one preset and one pair of operand formats.
#[derive(Clone, Debug)]
pub struct Chain {
    nfma: usize,
    frac: i32,
    frac_out: i32,
    min_exp: i32,
    c_entry: CEntry,
    rounding: BlockRounding,
    ta: &'static [Decoded; 256],
    tb: &'static [Decoded; 256],
    /// ma + mb: the product `P` is scaled by `2^(ep - mab)`.
    mab: i32,
}

/// Shift a magnitude left by `sh` (sh >= 0) or truncate it right by `-sh` (toward zero; 64 or more
/// places leave 0): the alignment of every term to the block's exponent (§2.2).
#[inline]
pub fn align(mag: u64, sh: i32) -> u64 {
    if sh >= 0 {
        mag << sh
    } else if sh <= -64 {
        0
    } else {
        mag >> (-sh)
    }
}

impl Chain {
    /// The chain of `preset` for operands of formats `fa` (A) and `fb` (B).
    pub fn new(preset: &Preset, fa: Format, fb: Format) -> Chain {
        Chain {
            nfma: preset.nfma(),
            frac: preset.frac() as i32,
            frac_out: preset.frac_out() as i32,
            min_exp: preset.min_exp(),
            c_entry: preset.c_entry(),
            rounding: preset.rounding(),
            ta: fa.table(),
            tb: fb.table(),
            mab: (fa.mbits() + fb.mbits()) as i32,
        }
    }

    /// Products per block.
    pub(crate) fn nfma(&self) -> usize {
        self.nfma
    }
    /// Fraction bits of the aligned terms.
    pub(crate) fn frac(&self) -> i32 {
        self.frac
    }
    /// The block-exponent floor (the zero terms' exponent).
    pub(crate) fn min_exp(&self) -> i32 {
        self.min_exp
    }
    /// How c enters a block.
    pub(crate) fn c_entry(&self) -> CEntry {
        self.c_entry
    }
    /// The operand tables of A and B.
    pub(crate) fn tables(&self) -> (&'static [Decoded; 256], &'static [Decoded; 256]) {
        (self.ta, self.tb)
    }

    /// Run the chain over `a[k] * b[k]`, k = 0..K-1, from the accumulator `c`: block steps over
    /// [0, nfma), [nfma, 2 nfma), ... (the ragged tail is one shorter block, which equals a zero-padded one).
    /// K = 0 returns c unchanged. NaN results are canonical. `a` and `b` must have equal length.
    pub fn run(&self, a: &[u8], b: &[u8], c: f32) -> f32 {
        debug_assert_eq!(a.len(), b.len());
        let mut acc = c;
        for (ba, bb) in a.chunks(self.nfma).zip(b.chunks(self.nfma)) {
            acc = self.block(ba, bb, acc);
        }
        canonical_f32(acc)
    }

    /// One block step over up to nfma pairs (docs/reference.md §2.2 or §2.3, by the preset's c entry).
    pub fn block(&self, a: &[u8], b: &[u8], c: f32) -> f32 {
        debug_assert!(a.len() == b.len() && a.len() <= self.nfma);
        // Block maximum over the nonzero products, noting any non-finite operand on the way.
        let mut emax = i32::MIN;
        let mut nonfinite = !c.is_finite();
        for (&ca, &cb) in a.iter().zip(b) {
            let (da, db) = (self.ta[ca as usize], self.tb[cb as usize]);
            match (da.class, db.class) {
                (Class::Finite, Class::Finite) => emax = emax.max(da.exp as i32 + db.exp as i32),
                (Class::Inf | Class::Nan, _) | (_, Class::Inf | Class::Nan) => nonfinite = true,
                _ => {} // a zero product takes no part (§2.2 step 2)
            }
        }
        if nonfinite {
            return self.nonfinite_block(a, b, c);
        }
        match self.c_entry {
            CEntry::Early => self.block_early(a, b, c, emax),
            CEntry::Late => self.block_late(a, b, c, emax),
        }
    }

    /// Sum of the nonzero products truncated to the grid 2^g (§2.2 step 5), as a signed integer count of
    /// grid units.
    #[inline]
    pub(crate) fn product_terms_at(&self, a: &[u8], b: &[u8], g: i32) -> i128 {
        let mut sum: i128 = 0;
        for (&ca, &cb) in a.iter().zip(b) {
            let (da, db) = (self.ta[ca as usize], self.tb[cb as usize]);
            if da.class != Class::Finite || db.class != Class::Finite {
                continue;
            }
            let p = da.sig as u64 * db.sig as u64;
            let t = align(p, da.exp as i32 + db.exp as i32 - self.mab - g) as i128;
            sum += if da.neg != db.neg { -t } else { t };
        }
        sum
    }

    /// §2.2: c takes part in the maximum and the alignment; the result is truncated to frac_out bits.
    fn block_early(&self, a: &[u8], b: &[u8], c: f32, emax: i32) -> f32 {
        let (cneg, csig, cexp) = f32_parts(c);
        let mut e = emax;
        if csig != 0 {
            e = e.max(c_exponent(csig, cexp)); // §2.2 step 3
        }
        let e = e.max(self.min_exp); // §2.2 step 4
        let g = e - self.frac;
        let mut sum = self.product_terms_at(a, b, g);
        if csig != 0 {
            let t = align(csig as u64, cexp - g) as i128;
            sum += if cneg { -t } else { t };
        }
        self.normalise(sum, g)
    }

    /// §2.3: c is excluded from the maximum and added to the normalised block sum in fp32.
    fn block_late(&self, a: &[u8], b: &[u8], c: f32, emax: i32) -> f32 {
        let e = emax.max(self.min_exp);
        let g = e - self.frac;
        let d = self.normalise(self.product_terms_at(a, b, g), g);
        // One IEEE fp32 addition, round to nearest even (§2.3 step 6): Rust's f32 `+` is exactly that.
        d + c
    }

    /// §2.2 steps 6–8: the exact sum `sum * 2^g`, truncated toward zero to frac_out fraction bits relative
    /// to max(floor(log2|d|), -126), or rounded to the nearest fp32 (ties to even) by a nearest-even preset; a
    /// zero result is +0 (the c2-M1 rule).
    pub(crate) fn normalise(&self, sum: i128, g: i32) -> f32 {
        if sum == 0 {
            return 0.0;
        }
        let neg = sum < 0;
        let mut mag = sum.unsigned_abs();
        let ed = (ilog2(mag) + g).max(-126);
        let target = ed - self.frac_out;
        let mut exp = g;
        if target > g {
            let sh = (target - g) as u32;
            let kept = if sh >= 128 { 0 } else { mag >> sh };
            mag = match self.rounding {
                BlockRounding::Truncate => kept,
                BlockRounding::NearestEven => {
                    // The dropped part against half a unit of the kept one: above, or equal with an odd kept part,
                    // rounds up (a carry to 2^24 stays exact). sh >= 128 drops everything, below half a unit.
                    let round_up = sh < 128 && {
                        let half = 1u128 << (sh - 1);
                        let rest = mag & ((half << 1) - 1);
                        rest > half || (rest == half && kept & 1 == 1)
                    };
                    kept + round_up as u128
                }
            };
            exp = target;
        }
        if mag == 0 {
            return 0.0;
        }
        f32_from_parts(neg, mag, exp)
    }

    /// A block with a non-finite c or operand (reachable through `dot` only; the GEMM paths replace
    /// non-finite codes first, §3.7): the class of the IEEE evaluation ([`nonfinite_sum`]).
    fn nonfinite_block(&self, a: &[u8], b: &[u8], c: f32) -> f32 {
        nonfinite_sum(self.ta, self.tb, a, b, c).unwrap_or(f32::NEG_INFINITY)
    }
}

/// c's exponent in a block's maximum (§2.2 step 3, §2.8 step 3): floor(log2|c|), at least −126, as fp32 holds a
/// subnormal c — the one rule of the unscaled and the block-scaled steps (MMA-Sim's form). It decides a grid only
/// when every product is zero, and then only for a preset with frac < frac_out.
#[inline]
pub(crate) fn c_exponent(csig: u32, cexp: i32) -> i32 {
    (cexp + ilog2(csig as u128)).max(-126)
}

/// The IEEE class of `c + sum a[k] * b[k]` when a term is not finite (§2.5, §3.7; [`NonfiniteSum`]). None when
/// every term is finite.
pub(crate) fn nonfinite_sum(ta: &[Decoded; 256], tb: &[Decoded; 256], a: &[u8], b: &[u8], c: f32) -> Option<f32> {
    let mut sum = NonfiniteSum::with_c(c);
    for (&ca, &cb) in a.iter().zip(b) {
        sum.add(ta[ca as usize], tb[cb as usize]);
    }
    sum.value()
}

/// The model-level chain (docs/reference.md §2.7): `c + sum a[k] * b[k]` as the preset's tensor core computes
/// it, from `c` (None: +0). `a` and `b` are FP8 codes of formats `fa` and `fb` of equal length K
/// (no broadcasting). K = 0 returns c unchanged. NaN results are canonical (0x7FFFFFFF).
pub fn dot(preset: &Preset, fa: Format, fb: Format, a: &[u8], b: &[u8], c: Option<f32>) -> Result<f32> {
    if a.len() != b.len() {
        return Err(Error::invalid_value(format!(
            "a and b must have the same shape [..., K] (no broadcasting): got K = {} and K = {}",
            a.len(),
            b.len()
        )));
    }
    // docs/reference.md §5.2 step 12: the late-c presets add c in fp32, which needs subnormals.
    crate::fpenv::check()?;
    Ok(Chain::new(preset, fa, fb).run(a, b, c.unwrap_or(0.0)))
}
