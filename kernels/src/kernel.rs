//! The block step of docs/reference.md §2.2–§2.3 for W chains at once (one row of A against a panel of W rows of B), in
//! exact arithmetic that vectorises: an i8 block-maximum pass, exact power-of-two scalings, truncations toward zero and
//! sums of integers.

// The arithmetic.
//
// A product is `p = a * b` with `a`, `b` FP8 values. With the block exponent E and `q = 2^(E - frac)`, the model's
// aligned term is `trunc(p / q)` (§2.2 step 5). Here it is computed as `trunc((a * b) * s)` with `s = 2^(frac - E)`, in
// floating point, and every operation is exact:
//
// - `a * b` has at most 8 significant bits (4 per FP8 significand) and lies in [2^-32, 2^32): exact in f32;
// - multiplying by the power of two `s` only moves the exponent: exact whenever the result is normal, and a result
//   below 2^-126 is below 1, so its truncation is 0 however it rounds;
// - `trunc` is exact, and the term is an integer of magnitude below 2^(frac + 2) (since ep <= E);
// - the block sum of nfma such integers plus the aligned accumulator (below 2^(frac + 1)) is exact in f32 while
//   `nfma * (2^(frac+2) - 1) + 2^(frac+1) <= 2^24` (the *narrow* path: ada and hopper, frac = 13, allow nfma <= 511)
//   and in f64 while that bound is 2^53 (the *wide* path: b200_mma_sync's frac = 25, custom presets up to frac = 40).
//   Integers below 2^24 (2^53) add exactly in f32 (f64) in any order.
//
// Normalisation (§2.2 steps 6–8) of the exact sum S: clearing the low `23 - frac_out` (`52 - frac_out`) mantissa bits
// of S truncates it toward zero to `frac_out` fraction bits relative to its own exponent (sign-magnitude, like the
// model); multiplying by `2^(E - frac)` is exact. S = 0 gives +0 (the zero rule); a sum of integer-valued floats that
// starts at +0 is never -0. The -126 clamp of step 7 never binds: a nonzero accumulator of a chain from +0 over FP8
// products is at least 2^(-28 - frac) >= 2^-68 (a nonzero product exponent is >= -28, and a block result is a nonzero
// multiple of its grid 2^(E - frac)).
//
// Early c (ada, hopper): c takes part in the maximum through its fp32 exponent field (a nonzero accumulator is normal,
// see above; +0 reads as -127, below every real exponent) and enters the sum as `trunc(c * s)`, like a term. Late c
// (b200_mma_sync): the normalised block sum d is converted to f32 (exactly: at most 24 significant bits) and added to c
// with one fp32 round-to-nearest-even addition.
//
// The block maximum runs in i8 lanes with saturating adds: operand exponents are in [-14, 15], so real product
// exponents are in [-28, 30]; a zero code carries `crate::tables::ZERO_EXP`, so a product with a zero operand has an
// exponent <= -81, below every real product exponent and every nonzero accumulator exponent (>= -28 - frac > -81 for
// frac <= 48). It can win only when the block holds nothing nonzero, and then every term is 0 whatever E is. The scale
// exponents are clamped below at `frac - 126` (narrow) or `frac - 1022` (wide), which again only changes E when
// everything is zero, and keeps `s` and `2^(E - frac)` normal.
//
// Nearest-even presets (frac_out = 23) round the exact sum S to 24 significant bits, ties to even, instead of
// truncating it. On the narrow path S is below 2^24 and already has at most 24 significant bits: both roundings leave
// it as it is. On the wide path S is an integer-valued f64 (at most 53 bits) and is rounded in its bits: adding
// `2^28 - 1` plus the lowest kept bit (bit 29) to the magnitude bits and clearing the 29 low bits is round to nearest,
// ties to even, at 24 bits (a carry moves into the exponent field, which is the correct rounding up to the next power
// of two). Integer operations only, so the result does not depend on the caller's rounding mode, like the model's
// integer rounding; the block result is a normal f32 (at least 2^-68, see above), so the -126 clamp never binds.
//
// Wide-path presets whose block sums stay below 2^31 run their panels on `crate::small`'s i32 step instead.
//
// Presets outside these bounds (an nfma so large that the f64 sum could be inexact) run on the model's own chain
// (`Path::Scalar`).

use crate::tables::Lut;
use mmaemu_model::preset::{BlockRounding, CEntry, Preset};
use std::ops::{Add, AddAssign, Mul};

/// How the chains of a preset are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// f32 lanes (early c, block sums below 2^24): ada, hopper and similar presets.
    Narrow,
    /// f64 lanes (block sums below 2^53): the late-c preset and wide custom presets.
    Wide,
    /// The model's chain, one output at a time (presets beyond both bounds).
    Scalar,
}

impl Path {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Path::Narrow => "narrow",
            Path::Wide => "wide",
            Path::Scalar => "scalar",
        }
    }
}

/// The parameters of a preset's block step in kernel form.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Products per block.
    pub nfma: usize,
    /// Fraction bits of the aligned terms.
    pub frac: i32,
    /// c enters after the block (b200_mma_sync).
    pub late: bool,
    /// Lower bound of the block exponent: the preset's min_exp, and the clamp that keeps the scale factors
    /// normal (see the comment at the top of this file).
    pub efloor: i32,
    /// Clears the f32 mantissa bits below frac_out.
    pub mask32: u32,
    /// Clears the f64 mantissa bits below frac_out.
    pub mask64: u64,
    /// Added to an f64 sum's bits before `mask64` clears them: 0 to truncate, `2^28 - 1` to round to nearest even
    /// (with the lowest kept bit, [`Params::tie64`]).
    pub half64: u64,
    /// The position of the lowest kept bit of an f64 sum (52 - frac_out).
    pub shift64: u32,
    /// 1 to round to nearest even (the lowest kept bit, at [`Params::shift64`], is added with
    /// [`Params::half64`]: ties go to even), 0 to truncate.
    pub tie64: u64,
    /// The path.
    pub path: Path,
    /// The narrow path's block sums (terms and c) stay below 2^23 and the bias 2^(E - frac + 23) is an f32 for
    /// every block exponent E: the AVX-512 panel step may carry the sums on that bias (`crate::x86::panel_blocks`).
    /// E is at most max(efloor, 63): products are below 2^32 and |c| at most the sum of K of them, K < 2^31; and
    /// efloor fits a byte (the step makes the bias's exponent field in the bytes of the block maximum). True for
    /// the built-in presets.
    pub biased: bool,
    /// The wide path's block sums (terms and c) stay below 2^52 and the bias 2^(E - frac + 52) is a normal f64 for
    /// every block exponent E: the AVX-512 wide panel step may carry the sums on that bias
    /// (`crate::x86::wide_panel_blocks`). E is at least efloor >= frac - 1022, and at most max(min_exp, 127) (c is
    /// an f32), so min_exp <= frac + 971 keeps the bias's exponent inside f64's.
    pub biased64: bool,
    /// A block of zero products leaves every accumulator of a chain from +0 unchanged, so trailing zero
    /// padding may be skipped: late c (d = +0, and c + 0 = c as c is never -0), or early c with
    /// frac >= frac_out (c has at most frac_out + 1 significant bits, so aligning it to its own exponent
    /// and normalising is exact) and min_exp <= -28 - frac (the lowest exponent of a nonzero accumulator,
    /// so E is c's own exponent). True for the built-in presets (docs/reference.md §2.4).
    pub zero_block_is_identity: bool,
    /// Late c, one product per block, and the block result is that product itself, so a block step is
    /// `c + a * b` in one fp32 addition (`crate::small::single_product_steps`): the product exponent is the
    /// block exponent (efloor is at most [`LOWEST_PRODUCT_EXP`]), its at most 6 bits below the leading one are
    /// kept by frac >= 6, and its at most 8 significant bits by frac_out >= 7.
    pub single: bool,
    /// A wide-path preset whose aligned terms stay below 2^31 and whose scale factors are normal f32 (min_exp <=
    /// frac + 126, as on the narrow path), with at least [`MIN_INT32_GROUP`] products (or the whole block) to an
    /// i32 sum: the panel step sums in i32 lanes (`crate::small::int32_steps`).
    pub int32: bool,
    /// Products per i32 sum ([`Params::int32`]): the most whose terms (each below 2^(frac + 2)) and an early c's
    /// term (below 2^(frac + 1)) stay below 2^31; 0 where frac > 28. Fewer than the block's products: the block
    /// sums its groups' i32 sums in f64 (exact: below 2^53 on the wide path).
    pub int32_group: usize,
    /// Nearest-even blocks (frac_out 23): the exact block sum, scaled back, is rounded by one conversion to
    /// fp32 (Rust's `as f32` rounds to nearest, ties to even, and the result is a normal f32: at least
    /// 2^-76, see the comment at the top of this file).
    pub nearest: bool,
}

pub use mmaemu_model::preset::LOWEST_PRODUCT_EXP;

/// The fewest products per i32 sum for which a block longer than that runs the i32 step in groups
/// ([`Params::int32_group`]) rather than in f64 lanes.
pub const MIN_INT32_GROUP: usize = 8;

impl Params {
    /// The kernel parameters and path of a preset.
    pub fn new(preset: &Preset) -> Params {
        let frac = preset.frac() as i32;
        let frac_out = preset.frac_out().min(23);
        let late = preset.c_entry() == CEntry::Late;
        let min_exp = preset.min_exp();
        // The largest block sum: nfma terms below 2^(frac + 2) and c below 2^(frac + 1).
        let bound =
            (preset.nfma() as u128).saturating_mul((1u128 << (frac + 2)) - 1).saturating_add(1u128 << (frac + 1));
        // Nearest even: frac_out is 23 (the preset checks it), 29 bits of an f64 sum are dropped.
        let nearest = preset.rounding() == BlockRounding::NearestEven;
        let narrow = !late && frac <= 48 && bound <= 1 << 24 && min_exp <= frac + 126;
        let wide = frac <= 48 && bound <= 1 << 53 && min_exp <= frac + 1000;
        let path = if narrow {
            Path::Narrow
        } else if wide {
            Path::Wide
        } else {
            Path::Scalar
        };
        let efloor = match path {
            Path::Narrow => min_exp.max(frac - 126),
            _ => min_exp.max(frac - 1022),
        };
        let zero_block_is_identity = preset.zero_block_is_identity();
        let int32_group =
            if frac <= 28 { (((1u64 << 31) - (1 << (frac + 1)) - 1) / ((1u64 << (frac + 2)) - 1)) as usize } else { 0 };
        Params {
            zero_block_is_identity,
            single: late
                && preset.nfma() == 1
                && frac >= 6
                && frac_out >= 7
                && efloor <= LOWEST_PRODUCT_EXP
                && path == Path::Wide,
            int32: path == Path::Wide && min_exp <= frac + 126 && int32_group >= preset.nfma().min(MIN_INT32_GROUP),
            int32_group,
            nearest,
            biased: path == Path::Narrow
                && bound < 1 << 23
                && min_exp.max(63) - frac + 23 <= 127
                && i8::try_from(efloor).is_ok(),
            biased64: path == Path::Wide && bound < 1 << 52 && min_exp <= frac + 971,
            nfma: preset.nfma(),
            frac,
            late,
            efloor,
            mask32: !((1u32 << (23 - frac_out)) - 1),
            mask64: !((1u64 << (52 - frac_out)) - 1),
            half64: if nearest { (1u64 << (51 - frac_out)) - 1 } else { 0 },
            shift64: 52 - frac_out,
            tie64: nearest as u64,
            path,
        }
    }
}

/// The block maximum of nonzero product exponents of one block, per output: `max_k ea[k] + eb[k][j]` in
/// saturating i8 lanes (`pe` holds the block's `nfma` rows of W exponents).
#[inline(always)]
pub(crate) fn block_max<const W: usize>(ab: &[u8], la: &Lut, pe: &[i8]) -> [i8; W] {
    block_max_above(ab, la, pe, i8::MIN)
}

/// [`block_max`] and `floor`: the maximum starts from it.
#[inline(always)]
pub(crate) fn block_max_above<const W: usize>(ab: &[u8], la: &Lut, pe: &[i8], floor: i8) -> [i8; W] {
    let mut e = [floor; W];
    for (&code, row) in ab.iter().zip(pe.chunks_exact(W)) {
        let ea = la.e[code as usize];
        let row: &[i8; W] = row.try_into().unwrap_or(&[0; W]);
        for j in 0..W {
            e[j] = e[j].max(ea.saturating_add(row[j]));
        }
    }
    e
}

/// The fp32 exponent floor(log2|c|) of a normal or zero accumulator (+0 gives -127).
#[inline(always)]
pub(crate) fn exp_f32(c: f32) -> i32 {
    ((c.to_bits() >> 23) & 0xFF) as i32 - 127
}

/// The lane type of a path: f32 on the narrow path, f64 on the wide one. Every operation the block step
/// needs is exact in it (see the comment at the top of this file).
pub trait Lane: Copy + Default + Add<Output = Self> + Mul<Output = Self> + AddAssign {
    /// A code's exact value.
    fn value(l: &Lut, code: u8) -> Self;
    /// The values and exponents of finite codes, as [`Lane::value`] and [`Lut::e`] give them (a zero may come
    /// out as -0, see [`Lut::decode`]), in a tile of the AVX-512 level (`avx512`, see [`Lut::decode_on`]) or another;
    /// whether a code was non-finite, where the decoding tells.
    fn decode(l: &Lut, avx512: bool, codes: &[u8], v: &mut [Self], e: &mut [i8]) -> Option<bool>;
    /// 2^e, built from its bits (the callers keep it normal).
    fn pow2(e: i32) -> Self;
    /// trunc(self) for an integer part below 2^(mantissa bits + 8): the hardware rounding instruction
    /// (`HT`, SSE4.1 and up) or an exact integer round trip (baseline x86-64 has no vector truncation; a -0
    /// result is +0 there, which no sum can tell).
    fn trunc<const HT: bool>(self) -> Self;
    /// The value with the mantissa bits below frac_out cleared: truncation toward zero to frac_out
    /// fraction bits relative to its own exponent.
    fn keep_frac_out(self, p: &Params) -> Self;
    /// An fp32 accumulator as a lane value (exact).
    fn widen(c: f32) -> Self;
    /// The value as fp32 (exact for the values the block step produces: at most 24 significant bits).
    fn to_f32(self) -> f32;
    /// Decoded values as f32, where they are f32 (the steps of `crate::small` take f32 values).
    fn f32s(v: &[Self]) -> Option<&[f32]>;
}

impl Lane for f32 {
    #[inline(always)]
    fn value(l: &Lut, code: u8) -> f32 {
        l.v32[code as usize]
    }
    #[inline(always)]
    fn decode(l: &Lut, avx512: bool, codes: &[u8], v: &mut [f32], e: &mut [i8]) -> Option<bool> {
        let seen = l.decode_on(avx512, codes, v, e);
        Lut::vbmi_decodes(avx512).then_some(seen)
    }
    #[inline(always)]
    fn pow2(e: i32) -> f32 {
        f32::from_bits(((127 + e) as u32) << 23)
    }
    #[inline(always)]
    fn trunc<const HT: bool>(self) -> f32 {
        if HT {
            f32::trunc(self)
        } else {
            self as i32 as f32
        }
    }
    #[inline(always)]
    fn keep_frac_out(self, p: &Params) -> f32 {
        f32::from_bits(self.to_bits() & p.mask32)
    }
    #[inline(always)]
    fn widen(c: f32) -> f32 {
        c
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn f32s(v: &[f32]) -> Option<&[f32]> {
        Some(v)
    }
}

impl Lane for f64 {
    #[inline(always)]
    fn value(l: &Lut, code: u8) -> f64 {
        l.v64[code as usize]
    }
    #[inline(always)]
    fn decode(l: &Lut, _: bool, codes: &[u8], v: &mut [f64], e: &mut [i8]) -> Option<bool> {
        for ((&c, v), e) in codes.iter().zip(v.iter_mut()).zip(e.iter_mut()) {
            (*v, *e) = (l.v64[c as usize], l.e[c as usize]);
        }
        None
    }
    #[inline(always)]
    fn pow2(e: i32) -> f64 {
        f64::from_bits(((1023 + e) as u64) << 52)
    }
    #[inline(always)]
    fn trunc<const HT: bool>(self) -> f64 {
        if HT {
            f64::trunc(self)
        } else {
            self as i64 as f64
        }
    }
    #[inline(always)]
    fn keep_frac_out(self, p: &Params) -> f64 {
        let x = self.to_bits();
        // Truncation: half64 = odd64 = 0. Nearest even: see the comment at the top of this file.
        f64::from_bits((x + p.half64 + ((x >> p.shift64) & p.tie64)) & p.mask64)
    }
    #[inline(always)]
    fn widen(c: f32) -> f64 {
        c as f64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn f32s(_: &[f64]) -> Option<&[f32]> {
        None
    }
}

/// The chains of one row against a W-wide panel over one piece of `nblk` blocks: `a` holds the row's
/// codes, `pv`/`pe` the panel's values and exponents (one row of W per position), and `c` the W running
/// accumulators. Lanes `L` (f32: narrow path, f64: wide path); `LATE`: c out of the maximum, added after
/// the block with one fp32 RNE addition (b200_mma_sync); `HT`: truncate with the hardware instruction.
#[inline(always)]
pub fn block_steps<const W: usize, L: Lane, const LATE: bool, const NE: bool, const HT: bool>(
    a: &[u8],
    nblk: usize,
    la: &Lut,
    pv: &[L],
    pe: &[i8],
    c: &mut [f32; W],
    p: &Params,
) {
    let nfma = p.nfma;
    let zero = [L::default(); W];
    for blk in 0..nblk {
        // (Offsets by multiplication: chunk iterators would divide on every call.)
        let ab = &a[blk * nfma..(blk + 1) * nfma];
        let bv = &pv[blk * nfma * W..(blk + 1) * nfma * W];
        let e = block_exponents::<W, LATE>(&block_max::<W>(ab, la, &pe[blk * nfma * W..(blk + 1) * nfma * W]), c, p);
        let s: [L; W] = std::array::from_fn(|j| L::pow2(p.frac - e[j]));
        // Aligned, truncated terms, summed exactly (integers below 2^24 in f32, 2^53 in f64).
        let mut acc = [L::default(); W];
        for (&code, row) in ab.iter().zip(bv.chunks_exact(W)) {
            let va = L::value(la, code);
            let row: &[L; W] = row.try_into().unwrap_or(&zero);
            for j in 0..W {
                acc[j] += (va * row[j] * s[j]).trunc::<HT>();
            }
        }
        block_ends::<W, L, LATE, NE, HT>(&acc, &e, &s, c, p);
    }
}

/// The block exponents E = max(products' `e`, c (early), floor) of W chains.
#[inline(always)]
pub(crate) fn block_exponents<const W: usize, const LATE: bool>(e: &[i8; W], c: &[f32; W], p: &Params) -> [i32; W] {
    std::array::from_fn(
        |j| if LATE { (e[j] as i32).max(p.efloor) } else { (e[j] as i32).max(p.efloor).max(exp_f32(c[j])) },
    )
}

/// The ends of W chains' blocks of [`block_steps`]: the exact block sums `acc`, of exponents `e` and scales `s` =
/// 2^(frac - E), normalised and scaled back by 2^(E - frac), c's update.
#[inline(always)]
pub(crate) fn block_ends<const W: usize, L: Lane, const LATE: bool, const NE: bool, const HT: bool>(
    acc: &[L; W],
    e: &[i32; W],
    s: &[L; W],
    c: &mut [f32; W],
    p: &Params,
) {
    for j in 0..W {
        let inv = L::pow2(e[j] - p.frac);
        // Truncation: the sum's bits below frac_out cleared, then an exact conversion (at most 24 significant
        // bits). Nearest even (`NE`): the conversion rounds ([`Params::nearest`]).
        let normalise = |sum: L| if NE { (sum * inv).to_f32() } else { (sum.keep_frac_out(p) * inv).to_f32() };
        if LATE {
            // d, then one fp32 RNE addition.
            c[j] += normalise(acc[j]);
        } else {
            // c enters like a term.
            c[j] = normalise(acc[j] + (L::widen(c[j]) * s[j]).trunc::<HT>());
        }
    }
}

/// The chains of one row of A against `J` rows of B over one piece of `nblk` blocks, with the lanes along each
/// block's `NB` products (`NB` = nfma): the tiling for few rows or few outputs, where a panel of outputs would
/// leave lanes empty. `av`/`ae` hold the row's decoded values and exponents, `bv`/`be` those of the J rows of B
/// (the piece's positions, in chain order), `c` the J running accumulators. The narrow path only (f32 lanes,
/// early c); the arithmetic is [`block_steps`]'s, one chain at a time: J independent chains are interleaved so
/// that one block's serial dependency (maximum, scale, sum, normalisation) overlaps the others'.
#[inline(always)]
pub fn product_blocks<const NB: usize, const J: usize, const HT: bool>(
    av: &[f32],
    ae: &[i8],
    bv: [&[f32]; J],
    be: [&[i8]; J],
    nblk: usize,
    c: &mut [f32; J],
    p: &Params,
) {
    for blk in 0..nblk {
        let o = blk * NB;
        let (Ok(a), Ok(ea)) = (<&[f32; NB]>::try_from(&av[o..o + NB]), <&[i8; NB]>::try_from(&ae[o..o + NB])) else {
            return;
        };
        for jj in 0..J {
            let (Ok(b), Ok(eb)) =
                (<&[f32; NB]>::try_from(&bv[jj][o..o + NB]), <&[i8; NB]>::try_from(&be[jj][o..o + NB]))
            else {
                return;
            };
            // Block exponent E = max(products, c, floor), as in `block_steps`; the maximum of the lanes is
            // taken by halving (each step a vector operation).
            let mut e = [0i8; NB];
            for q in 0..NB {
                e[q] = ea[q].saturating_add(eb[q]);
            }
            let mut w = NB / 2;
            while w > 0 {
                for q in 0..w {
                    e[q] = e[q].max(e[q + w]);
                }
                w /= 2;
            }
            let ee = (e[0] as i32).max(p.efloor).max(exp_f32(c[jj]));
            let s = <f32 as Lane>::pow2(p.frac - ee);
            let inv = <f32 as Lane>::pow2(ee - p.frac);
            // Aligned, truncated terms, summed by halving (integers below 2^24: exact in any order).
            let mut t = [0f32; NB];
            for q in 0..NB {
                t[q] = Lane::trunc::<HT>(a[q] * b[q] * s);
            }
            let mut w = NB / 2;
            while w > 0 {
                for q in 0..w {
                    t[q] += t[q + w];
                }
                w /= 2;
            }
            let sum = t[0] + Lane::trunc::<HT>(c[jj] * s);
            c[jj] = sum.keep_frac_out(p) * inv;
        }
    }
}

/// Lanes of the wide product-lane step's block maximum and sums: a block is read in runs of this many products.
const WIDE_RUN: usize = 16;

/// The chains of one row of A against `J` rows of B over one piece of `nblk` blocks of any length (`p.nfma`), with the
/// lanes along each block's products and the sums in f64 lanes: the wide path's tiling for few rows, as
/// [`product_blocks`] is the narrow path's. `av`/`ae` hold the row's decoded values and exponents, `bv`/`be` those of
/// the J rows of B (f32 values: every FP8 value and every product of two is exact in f32), `c` the J running
/// accumulators; `AVX512`: eight chains run in AVX-512 instructions (`x86::wide_product_blocks8`; the caller is
/// compiled for them). The arithmetic is [`block_steps`]'s with f64 lanes, early or late c (`p.late`): the terms
/// `trunc(f64(a * b) * s)` are integers below 2^(frac + 2), their block sum below 2^53, exact in any order.
#[inline(always)]
pub fn wide_product_blocks<const J: usize, const HT: bool, const AVX512: bool>(
    av: &[f32],
    ae: &[i8],
    bv: [&[f32]; J],
    be: [&[i8]; J],
    nblk: usize,
    c: &mut [f32; J],
    p: &Params,
) {
    let nb = p.nfma;
    let len = nblk * nb;
    if av.len() < len || ae.len() < len || bv.iter().zip(&be).any(|(v, e)| v.len() < len || e.len() < len) {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if AVX512 {
        if let (Ok(bv8), Ok(be8), Ok(c8)) =
            (<&[&[f32]; 8]>::try_from(&bv[..]), <&[&[i8]; 8]>::try_from(&be[..]), <&mut [f32; 8]>::try_from(&mut c[..]))
        {
            // SAFETY: `AVX512` is set only by the tiles of the AVX-512 level, which exists only after
            // `is_x86_feature_detected!` reported AVX-512F/BW/VL/DQ; every slice holds `len` elements (checked above).
            unsafe { crate::x86::wide_product_blocks8(av, ae, bv8, be8, nblk, c8, p) };
            return;
        }
    }
    for blk in 0..nblk {
        let o = blk * nb;
        let (a, ea) = (&av[o..o + nb], &ae[o..o + nb]);
        // One phase at a time for the J chains (maxima, scales, sums, normalisations), so that the chains' serial
        // dependencies overlap and the scalar phases run in J lanes.
        let mut ee = [0i32; J];
        for jj in 0..J {
            ee[jj] = wide_max(ea, &be[jj][o..o + nb]) as i32;
        }
        // Block exponent E = max(products, c (early), floor), as in `block_steps`.
        let mut s = [0f64; J];
        let mut inv = [0f64; J];
        for jj in 0..J {
            let mut e = ee[jj].max(p.efloor);
            if !p.late {
                e = e.max(exp_f32(c[jj]));
            }
            s[jj] = <f64 as Lane>::pow2(p.frac - e);
            inv[jj] = <f64 as Lane>::pow2(e - p.frac);
        }
        let mut sum = [0f64; J];
        for jj in 0..J {
            sum[jj] = wide_sum::<HT>(a, &bv[jj][o..o + nb], s[jj]);
        }
        for jj in 0..J {
            if p.late {
                // d has at most 24 significant bits: the conversion is exact; then one fp32 RNE addition.
                c[jj] += (sum[jj].keep_frac_out(p) * inv[jj]).to_f32();
            } else {
                let t = sum[jj] + Lane::trunc::<HT>(f64::from(c[jj]) * s[jj]);
                c[jj] = (t.keep_frac_out(p) * inv[jj]).to_f32();
            }
        }
    }
}

/// `max_k ea[k] + eb[k]` over one block in saturating i8 lanes, runs of [`WIDE_RUN`] and then the rest.
#[inline(always)]
fn wide_max(ea: &[i8], eb: &[i8]) -> i8 {
    let mut m = [i8::MIN; WIDE_RUN];
    let (ra, rb) = (ea.chunks_exact(WIDE_RUN), eb.chunks_exact(WIDE_RUN));
    let mut e = ra.remainder().iter().zip(rb.remainder()).fold(i8::MIN, |e, (x, y)| e.max(x.saturating_add(*y)));
    for (x, y) in ra.zip(rb) {
        let (Ok(x), Ok(y)) = (<&[i8; WIDE_RUN]>::try_from(x), <&[i8; WIDE_RUN]>::try_from(y)) else { continue };
        for q in 0..WIDE_RUN {
            m[q] = m[q].max(x[q].saturating_add(y[q]));
        }
    }
    let mut w = WIDE_RUN / 2;
    while w > 0 {
        for q in 0..w {
            m[q] = m[q].max(m[q + w]);
        }
        w /= 2;
    }
    e = e.max(m[0]);
    e
}

/// `sum_k trunc(f64(a[k] * b[k]) * s)` over one block: runs of [`WIDE_RUN`] in f64 lanes, then the rest (integers
/// below 2^53 in total: exact in any order).
#[inline(always)]
fn wide_sum<const HT: bool>(a: &[f32], b: &[f32], s: f64) -> f64 {
    let mut t = [0f64; WIDE_RUN];
    let (ra, rb) = (a.chunks_exact(WIDE_RUN), b.chunks_exact(WIDE_RUN));
    let rest =
        ra.remainder().iter().zip(rb.remainder()).fold(0f64, |t, (x, y)| t + Lane::trunc::<HT>(f64::from(x * y) * s));
    for (x, y) in ra.zip(rb) {
        let (Ok(x), Ok(y)) = (<&[f32; WIDE_RUN]>::try_from(x), <&[f32; WIDE_RUN]>::try_from(y)) else { continue };
        for q in 0..WIDE_RUN {
            t[q] += Lane::trunc::<HT>(f64::from(x[q] * y[q]) * s);
        }
    }
    let mut w = WIDE_RUN / 2;
    while w > 0 {
        for q in 0..w {
            t[q] += t[q + w];
        }
        w /= 2;
    }
    t[0] + rest
}
