//! A second, independent implementation of the block step and the chain (docs/reference.md §1, §2.2–§2.5, §2.7),
//! written straight from the text with exact arbitrary-precision arithmetic; it shares no code with `mmaemu_model`.

// It decodes FP8 codes and fp32 bits itself, computes floor(log2|x|) itself, truncates toward zero itself and builds
// fp32 bit patterns itself.
//
// Every finite value is an exact dyadic rational `num * 2^exp` with a big-integer `num`; nothing is ever rounded except
// where the spec says RN32 (the late-c addition), which is also done here on the exact value. Non-finite operands and
// accumulators follow the IEEE-class rule (§2.5, §2.7): the block's terms (the products a_i * b_i and c) are classified
// as IEEE float64 would classify them, and a block with a non-finite term returns NaN (any NaN term, an Inf times a
// zero, or infinities of both signs) or the Inf.

use num_bigint::BigInt;
use num_traits::{One, Signed, Zero};

/// The FP8 formats of §1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8 {
    /// float8_e4m3fn: bias 7, 3 mantissa bits, NaN = S.1111.111, no Inf.
    E4m3,
    /// float8_e5m2: bias 15, 2 mantissa bits, exponent field 31 = Inf (mantissa 0) / NaN.
    E5m2,
}

impl Fp8 {
    fn exp_bits(self) -> u32 {
        match self {
            Fp8::E4m3 => 4,
            Fp8::E5m2 => 5,
        }
    }
    fn mant_bits(self) -> u32 {
        match self {
            Fp8::E4m3 => 3,
            Fp8::E5m2 => 2,
        }
    }
    fn bias(self) -> i64 {
        match self {
            Fp8::E4m3 => 7,
            Fp8::E5m2 => 15,
        }
    }
    /// Smallest normal exponent (the table of §1: -6 and -14).
    pub fn emin(self) -> i64 {
        match self {
            Fp8::E4m3 => -6,
            Fp8::E5m2 => -14,
        }
    }
}

/// The parameters of a preset (§2.1), as plain numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Products per block.
    pub nfma: usize,
    /// Fraction bits of the aligned terms.
    pub frac: i64,
    /// Fraction bits of the block result.
    pub frac_out: i64,
    /// Floor of the block exponent.
    pub min_exp: i64,
    /// c enters late (fp32 RNE add after the block, §2.3) rather than early (in the alignment, §2.2).
    pub late_c: bool,
}

impl Params {
    /// `ada` from the table of §2.1.
    pub const ADA: Params = Params { nfma: 16, frac: 13, frac_out: 13, min_exp: -132, late_c: false };
    /// `hopper` from the table of §2.1.
    pub const HOPPER: Params = Params { nfma: 32, frac: 13, frac_out: 13, min_exp: -132, late_c: false };
    /// `b200_mma_sync` from the table of §2.1.
    pub const B200: Params = Params { nfma: 32, frac: 25, frac_out: 23, min_exp: -133, late_c: true };
}

/// An exact nonzero-or-zero dyadic rational `num * 2^exp`.
#[derive(Clone, Debug)]
pub struct Exact {
    pub num: BigInt,
    pub exp: i64,
}

impl Exact {
    pub fn new(num: BigInt, exp: i64) -> Exact {
        Exact { num, exp }
    }
    pub fn from_i64(num: i64, exp: i64) -> Exact {
        Exact { num: BigInt::from(num), exp }
    }
    pub fn is_zero(&self) -> bool {
        self.num.is_zero()
    }
    pub fn is_negative(&self) -> bool {
        self.num.is_negative()
    }
    /// The exact product.
    pub fn mul(&self, o: &Exact) -> Exact {
        Exact { num: &self.num * &o.num, exp: self.exp + o.exp }
    }
    /// The exact sum.
    pub fn add(&self, o: &Exact) -> Exact {
        let e = self.exp.min(o.exp);
        let x = &self.num << (self.exp - e) as usize;
        let y = &o.num << (o.exp - e) as usize;
        Exact { num: x + y, exp: e }
    }
    pub fn neg(&self) -> Exact {
        Exact { num: -&self.num, exp: self.exp }
    }
    /// floor(log2 |x|) of a nonzero value: the position of the leading one bit of |num|, plus exp.
    pub fn floor_log2(&self) -> i64 {
        assert!(!self.is_zero(), "floor_log2 of zero");
        self.num.abs().bits() as i64 - 1 + self.exp
    }
    /// trunc(x / 2^g): x divided by the grid 2^g, rounded toward zero, as an integer count of grid units.
    /// Sign-magnitude: the magnitude is shifted down and the sign put back.
    pub fn trunc_units(&self, g: i64) -> BigInt {
        if self.exp >= g {
            &self.num << (self.exp - g) as usize
        } else {
            let mag = self.num.abs() >> (g - self.exp) as usize;
            if self.num.is_negative() {
                -mag
            } else {
                mag
            }
        }
    }
    /// x truncated toward zero to a multiple of 2^g.
    pub fn trunc_to(&self, g: i64) -> Exact {
        Exact { num: self.trunc_units(g), exp: g }
    }
    /// Exact comparison for equality of values.
    pub fn same_value(&self, o: &Exact) -> bool {
        self.add(&o.neg()).is_zero()
    }
    /// The value as f64 (for messages only).
    pub fn approx_f64(&self) -> f64 {
        let s = self.num.to_string();
        s.parse::<f64>().unwrap_or(f64::NAN) * 2f64.powi(self.exp as i32)
    }
}

/// A value as the model sees it: a signed zero, a nonzero finite exact value, an infinity, or NaN.
#[derive(Clone, Debug)]
pub enum Val {
    Zero { neg: bool },
    Num(Exact),
    Inf { neg: bool },
    NaN,
}

/// Decode an FP8 code by the table of §1: sign bit 7; exponent field and mantissa below it; subnormals
/// (exponent field 0) are (m / 2^mbits) * 2^emin; the e4m3 NaN codes are x.1111.111; the e5m2 exponent
/// field 31 is Inf (mantissa 0) or NaN.
pub fn decode(f: Fp8, code: u8) -> Val {
    let neg = code & 0x80 != 0;
    let mb = f.mant_bits();
    let field = ((code & 0x7F) >> mb) as i64;
    let mant = (code & ((1u8 << mb) - 1)) as i64;
    let field_max = (1i64 << f.exp_bits()) - 1;
    match f {
        Fp8::E4m3 => {
            if code & 0x7F == 0x7F {
                return Val::NaN;
            }
        }
        Fp8::E5m2 => {
            if field == field_max {
                return if mant == 0 { Val::Inf { neg } } else { Val::NaN };
            }
        }
    }
    let sign = if neg { -1 } else { 1 };
    if field == 0 {
        if mant == 0 {
            return Val::Zero { neg };
        }
        // (m / 2^mbits) * 2^emin
        return Val::Num(Exact::from_i64(sign * mant, f.emin() - mb as i64));
    }
    // (1 + m / 2^mbits) * 2^(field - bias)
    Val::Num(Exact::from_i64(sign * ((1i64 << mb) + mant), field - f.bias() - mb as i64))
}

/// The operand exponent of §2.2 step 1: e(x) = max(floor(log2|x|), emin_f), for a nonzero finite x.
pub fn operand_exp(f: Fp8, x: &Exact) -> i64 {
    x.floor_log2().max(f.emin())
}

/// Decode fp32 bits: sign, 8-bit exponent field, 23-bit fraction (IEEE 754 binary32).
pub fn f32_val(bits: u32) -> Val {
    let neg = bits >> 31 == 1;
    let field = ((bits >> 23) & 0xFF) as i64;
    let fr = (bits & 0x7F_FFFF) as i64;
    let sign = if neg { -1 } else { 1 };
    if field == 0xFF {
        return if fr == 0 { Val::Inf { neg } } else { Val::NaN };
    }
    if field == 0 {
        if fr == 0 {
            return Val::Zero { neg };
        }
        return Val::Num(Exact::from_i64(sign * fr, -149));
    }
    Val::Num(Exact::from_i64(sign * ((1i64 << 23) + fr), field - 127 - 23))
}

/// RN32 of an exact nonzero value: round to the nearest fp32 value, ties to even, with IEEE subnormals and
/// overflow to +-Inf; returns the bits. (A value that rounds to zero keeps its sign.)
pub fn rn32(x: &Exact) -> u32 {
    assert!(!x.is_zero());
    let neg = x.is_negative();
    let sign_bit = if neg { 0x8000_0000u32 } else { 0 };
    let l = x.floor_log2();
    // The spacing of fp32 values at |x|: 2^(l - 23) for normals, 2^-149 below 2^-126.
    let mut qe = if l < -126 { -149 } else { l - 23 };
    let mag = Exact { num: x.num.abs(), exp: x.exp };
    // r = |x| / 2^qe rounded to nearest, ties to even.
    let mut r: BigInt = if mag.exp >= qe {
        &mag.num << (mag.exp - qe) as usize
    } else {
        let sh = (qe - mag.exp) as usize;
        let kept: BigInt = &mag.num >> sh;
        let rem: BigInt = &mag.num - (&kept << sh);
        let half: BigInt = BigInt::one() << (sh - 1);
        if rem > half || (rem == half && (&kept % 2u32) == BigInt::one()) {
            kept + 1u32
        } else {
            kept
        }
    };
    if r.is_zero() {
        return sign_bit;
    }
    let two23 = BigInt::one() << 23usize;
    let two24 = BigInt::one() << 24usize;
    if r >= two24 {
        // A carry out of the significand: 2^24 * 2^qe = 2^23 * 2^(qe + 1).
        assert!(r == two24);
        r = two23.clone();
        qe += 1;
    }
    let r_u: u32 = u32::try_from(&r).expect("significand fits");
    if r >= two23 {
        // Normal: value = r * 2^qe with r in [2^23, 2^24), so the exponent is qe + 23, the field qe + 150.
        let field = qe + 150;
        if field >= 255 {
            return sign_bit | 0x7F80_0000;
        }
        sign_bit | ((field as u32) << 23) | (r_u - (1 << 23))
    } else {
        // Subnormal: qe = -149, value = r * 2^-149.
        assert_eq!(qe, -149);
        sign_bit | r_u
    }
}

/// fp32 bits of an exact value that must be representable (the early-c block result, §2.2 step 9).
fn exact_f32(x: &Exact) -> u32 {
    let bits = rn32(x);
    match f32_val(bits) {
        Val::Num(y) if y.same_value(x) => bits,
        _ => panic!("oracle: block result {} * 2^{} is not an fp32 value", x.num, x.exp),
    }
}

/// The canonical fp32 NaN (§1).
pub const NAN32: u32 = 0x7FFF_FFFF;

/// The IEEE class of a block's terms (§2.5, §2.7): None if every product and c are finite, otherwise the
/// bits of the non-finite result.
fn ieee_class(fa: Fp8, fb: Fp8, a: &[u8], b: &[u8], c: &Val) -> Option<u32> {
    let (mut nan, mut pos, mut neg) = (false, false, false);
    let mut note = |v: &Val| match v {
        Val::NaN => nan = true,
        Val::Inf { neg: true } => neg = true,
        Val::Inf { neg: false } => pos = true,
        _ => {}
    };
    note(c);
    for (&ca, &cb) in a.iter().zip(b) {
        let (x, y) = (decode(fa, ca), decode(fb, cb));
        // The IEEE product's class.
        let p = match (&x, &y) {
            (Val::NaN, _) | (_, Val::NaN) => Val::NaN,
            (Val::Inf { .. }, Val::Zero { .. }) | (Val::Zero { .. }, Val::Inf { .. }) => Val::NaN,
            (Val::Inf { neg: s }, Val::Inf { neg: t }) => Val::Inf { neg: s != t },
            (Val::Inf { neg: s }, Val::Num(n)) | (Val::Num(n), Val::Inf { neg: s }) => {
                Val::Inf { neg: *s != n.is_negative() }
            }
            _ => Val::Zero { neg: false }, // finite: not needed for the class
        };
        note(&p);
    }
    if nan || (pos && neg) {
        Some(NAN32)
    } else if pos {
        Some(0x7F80_0000)
    } else if neg {
        Some(0xFF80_0000)
    } else {
        None
    }
}

/// The nonzero finite products of a block with their product exponents ep = e(a) + e(b) (§2.2 step 2).
fn products(fa: Fp8, fb: Fp8, a: &[u8], b: &[u8]) -> Vec<(Exact, i64)> {
    let mut out = Vec::new();
    for (&ca, &cb) in a.iter().zip(b) {
        if let (Val::Num(x), Val::Num(y)) = (decode(fa, ca), decode(fb, cb)) {
            let ep = operand_exp(fa, &x) + operand_exp(fb, &y);
            out.push((x.mul(&y), ep));
        }
        // A zero operand gives a zero product: excluded from the maximum, contributes 0.
    }
    out
}

/// §2.2 step 7 / §2.3 step 5: d truncated toward zero to `frac_out` fraction bits relative to
/// max(floor(log2|d|), -126). Zero stays zero.
fn normalise(d: &Exact, frac_out: i64) -> Exact {
    if d.is_zero() {
        return d.clone();
    }
    let ed = d.floor_log2().max(-126);
    d.trunc_to(ed - frac_out)
}

/// One block step (§2.2 early c or §2.3 late c) over `a.len() <= nfma` pairs from the accumulator bits `c`.
/// Returns the new accumulator's fp32 bits (NaN canonical).
pub fn block(p: &Params, fa: Fp8, fb: Fp8, a: &[u8], b: &[u8], c: u32) -> u32 {
    assert_eq!(a.len(), b.len());
    assert!(a.len() <= p.nfma);
    let cv = f32_val(c);
    if let Some(bits) = ieee_class(fa, fb, a, b, &cv) {
        return bits;
    }
    let prods = products(fa, fb, a, b);
    if !p.late_c {
        // §2.2 steps 3-4: E = max(ep_i, max(floor(log2|c|), -126)), then at least min_exp.
        let mut e = p.min_exp;
        let mut any = false;
        let mut emax = i64::MIN;
        for (_, ep) in &prods {
            emax = emax.max(*ep);
            any = true;
        }
        if let Val::Num(cx) = &cv {
            emax = emax.max(cx.floor_log2().max(-126));
            any = true;
        }
        if any {
            e = emax.max(p.min_exp);
        }
        // Step 5: truncate every product and c toward zero to multiples of q = 2^(E - frac).
        let g = e - p.frac;
        let mut s = BigInt::zero();
        for (x, _) in &prods {
            s += x.trunc_units(g);
        }
        if let Val::Num(cx) = &cv {
            s += cx.trunc_units(g);
        }
        // Step 6: d = s * q exactly. Step 7: normalise. Step 8: a zero result is +0.
        let d = normalise(&Exact::new(s, g), p.frac_out);
        if d.is_zero() {
            return 0;
        }
        exact_f32(&d)
    } else {
        // §2.3 step 3: E over the nonzero products only, at least min_exp.
        let e = prods.iter().map(|(_, ep)| *ep).max().unwrap_or(p.min_exp).max(p.min_exp);
        let g = e - p.frac;
        let mut s = BigInt::zero();
        for (x, _) in &prods {
            s += x.trunc_units(g);
        }
        let d = normalise(&Exact::new(s, g), p.frac_out);
        // Step 6: RN32(d + c), an IEEE addition. d is +0 when zero (the sum starts from +0).
        match cv {
            Val::Zero { .. } if d.is_zero() => 0, // +0 + (+-0) = +0 under round-to-nearest
            Val::Zero { .. } => rn32(&d),
            Val::Num(cx) => {
                let sum = d.add(&cx);
                if sum.is_zero() {
                    0 // an exact zero sum of nonzero operands is +0 under round-to-nearest
                } else {
                    rn32(&sum)
                }
            }
            Val::Inf { .. } | Val::NaN => unreachable!("handled by the IEEE class"),
        }
    }
}

/// The chain (§2.4, §2.7): block steps over k in [0, nfma), [nfma, 2 nfma), ... from the accumulator `c`,
/// the ragged tail zero-padded (code 0x00) to a whole block; K = 0 returns c unchanged. NaN is canonical.
pub fn chain(p: &Params, fa: Fp8, fb: Fp8, a: &[u8], b: &[u8], c: u32) -> u32 {
    assert_eq!(a.len(), b.len());
    let mut acc = c;
    let mut start = 0;
    while start < a.len() {
        let end = (start + p.nfma).min(a.len());
        let mut ba = a[start..end].to_vec();
        let mut bb = b[start..end].to_vec();
        ba.resize(p.nfma, 0x00);
        bb.resize(p.nfma, 0x00);
        acc = block(p, fa, fb, &ba, &bb, acc);
        start = end;
    }
    if matches!(f32_val(acc), Val::NaN) {
        NAN32
    } else {
        acc
    }
}

/// The exact value of an FP8 code as f64 (every FP8 value is an f64 value), for building inputs.
pub fn fp8_f64(f: Fp8, code: u8) -> f64 {
    match decode(f, code) {
        Val::Zero { neg } => {
            if neg {
                -0.0
            } else {
                0.0
            }
        }
        Val::Num(x) => x.approx_f64(),
        Val::Inf { neg } => {
            if neg {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        Val::NaN => f64::NAN,
    }
}
