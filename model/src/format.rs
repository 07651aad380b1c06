//! The two FP8 formats (docs/reference.md §1): exact decoding of all 256 codes, the integer form the block step
//! works on, fp32 -> FP8 conversion with saturation and round-to-nearest-even, and the canonical NaNs.

use crate::round::round_to_narrow;
use std::fmt;

/// An FP8 operand format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// `float8_e4m3fn`: bias 7, 3 mantissa bits, no Inf, NaN = S.1111.111.
    E4m3,
    /// `float8_e5m2`: bias 15, 2 mantissa bits, IEEE-like Inf and NaN.
    E5m2,
}

/// The class of an FP8 code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// +0 or -0.
    Zero,
    /// A finite nonzero value (normal or subnormal).
    Finite,
    /// +Inf or -Inf (E5M2 only).
    Inf,
    /// Any NaN code.
    Nan,
}

/// One FP8 code in the integer form of the block step: `|x| = sig * 2^(exp - mbits)`, where `exp` is the
/// operand exponent e(x) = max(floor(log2|x|), emin) of docs/reference.md §2.2 step 1 and `sig` keeps the
/// denormalised significand of a subnormal (so it is below 2^mbits there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Sign bit.
    pub neg: bool,
    /// Significand as an integer (0 for zeros and non-finite codes).
    pub sig: u8,
    /// Operand exponent e(x) (emin for subnormals; 0 for zeros and non-finite codes).
    pub exp: i8,
    /// Class of the code.
    pub class: Class,
}

impl Format {
    /// Both formats, E4M3 first.
    pub const ALL: [Format; 2] = [Format::E4m3, Format::E5m2];

    /// Exponent bias.
    pub const fn bias(self) -> i32 {
        match self {
            Format::E4m3 => 7,
            Format::E5m2 => 15,
        }
    }
    /// Number of explicit mantissa bits.
    pub const fn mbits(self) -> u32 {
        match self {
            Format::E4m3 => 3,
            Format::E5m2 => 2,
        }
    }
    /// Smallest normal exponent: -6 (E4M3), -14 (E5M2).
    pub const fn emin(self) -> i32 {
        1 - self.bias()
    }
    /// Largest finite value: 448 (E4M3), 57344 (E5M2).
    pub const fn max_finite(self) -> f32 {
        match self {
            Format::E4m3 => 448.0,
            Format::E5m2 => 57344.0,
        }
    }
    /// Code of the largest finite magnitude: 0x7E (E4M3), 0x7B (E5M2).
    pub const fn max_code(self) -> u8 {
        match self {
            Format::E4m3 => 0x7E,
            Format::E5m2 => 0x7B,
        }
    }
    /// The canonical NaN code used everywhere: 0x7F for both formats.
    pub const fn canonical_nan(self) -> u8 {
        0x7F
    }
    /// Short name: `e4m3`, `e5m2`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::E4m3 => "e4m3",
            Format::E5m2 => "e5m2",
        }
    }
    /// torch dtype name: `float8_e4m3fn`, `float8_e5m2`.
    pub const fn dtype_name(self) -> &'static str {
        match self {
            Format::E4m3 => "float8_e4m3fn",
            Format::E5m2 => "float8_e5m2",
        }
    }
    /// Parse a short or torch name (`e4m3`, `float8_e4m3fn`, `e5m2`, `float8_e5m2`).
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "e4m3" | "float8_e4m3fn" => Some(Format::E4m3),
            "e5m2" | "float8_e5m2" => Some(Format::E5m2),
            _ => None,
        }
    }

    /// The bits that are all set in exactly the non-finite codes: E4M3 0x7F (the NaNs, S.1111.111), E5M2 0x7C
    /// (the infinities and NaNs, exponent field all ones).
    pub const fn nonfinite_mask(self) -> u8 {
        match self {
            Format::E4m3 => 0x7F,
            Format::E5m2 => 0x7C,
        }
    }

    /// True for the non-finite codes: `code & mask == mask` ([`Format::nonfinite_mask`]).
    pub const fn is_nonfinite(self, code: u8) -> bool {
        code & self.nonfinite_mask() == self.nonfinite_mask()
    }

    /// True if any of `codes` is non-finite. It runs over every operand of every call, so it is written to
    /// vectorise: a code is non-finite when `!code & mask` is zero, and one minimum over all codes tells (no
    /// branch per code; inlined, so that a caller compiled for wider vectors scans with them).
    #[inline]
    pub fn any_nonfinite(self, codes: &[u8]) -> bool {
        let mask = self.nonfinite_mask();
        codes.iter().fold(u8::MAX, |m, &c| m.min(!c & mask)) == 0
    }

    /// The integer form of a code (a table lookup).
    #[inline]
    pub fn decoded(self, code: u8) -> Decoded {
        match self {
            Format::E4m3 => E4M3_TABLE[code as usize],
            Format::E5m2 => E5M2_TABLE[code as usize],
        }
    }

    /// The 256-entry table of integer forms.
    pub fn table(self) -> &'static [Decoded; 256] {
        match self {
            Format::E4m3 => &E4M3_TABLE,
            Format::E5m2 => &E5M2_TABLE,
        }
    }

    /// The exact value of a code as f64 (every FP8 value is an f64 value).
    pub fn to_f64(self, code: u8) -> f64 {
        let d = self.decoded(code);
        let v = match d.class {
            Class::Zero => 0.0,
            Class::Nan => return f64::NAN,
            Class::Inf => f64::INFINITY,
            Class::Finite => d.sig as f64 * pow2(d.exp as i32 - self.mbits() as i32),
        };
        if d.neg {
            -v
        } else {
            v
        }
    }

    /// Convert an fp32 value to this format as the epilogue does (docs/reference.md §4 step 3): NaN gives the
    /// canonical NaN; otherwise clamp to [-max, +max] (Inf saturates), then round to nearest even with
    /// subnormals. A value that rounds to zero keeps its sign.
    pub fn from_f32_saturating(self, x: f32) -> u8 {
        if x.is_nan() {
            return self.canonical_nan();
        }
        let sign = ((x.to_bits() >> 31) as u8) << 7;
        if x.abs() >= self.max_finite() {
            return sign | self.max_code();
        }
        // Below max the rounded magnitude is at most max (max is on the grid), so no saturation is needed.
        let mag = round_to_narrow(x.to_bits(), self.mbits(), self.emin());
        sign | mag as u8
    }
}

/// `float4_e2m1fn` (docs/reference.md §12.1): bias 1, 1 mantissa bit, no Inf or NaN; one code per byte in its low
/// 4 bits (bit 3 the sign), values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}. torch's `float4_e2m1fn_x2` packs two per byte,
/// the first element in the low nibble ([`e2m1_unpack`]).
pub mod e2m1 {
    use super::{Class, Decoded};

    /// Explicit mantissa bits.
    pub const MBITS: u32 = 1;
    /// The largest magnitude, 6.
    pub const MAX: f32 = 6.0;

    /// The integer form of a code's low nibble (`|x| = sig * 2^(exp - 1)`; the subnormal 0.5 has exp 0, sig 1).
    pub const fn decoded(code: u8) -> Decoded {
        let code = code & 0x0F;
        let neg = code & 0x8 != 0;
        let field = ((code >> 1) & 0x3) as i8;
        let mant = code & 0x1;
        if field == 0 && mant == 0 {
            return Decoded { neg, sig: 0, exp: 0, class: Class::Zero };
        }
        if field == 0 {
            return Decoded { neg, sig: mant, exp: 0, class: Class::Finite };
        }
        Decoded { neg, sig: 2 | mant, exp: field - 1, class: Class::Finite }
    }

    /// The exact value of a code's low nibble.
    pub fn to_f32(code: u8) -> f32 {
        let d = decoded(code);
        let v = d.sig as f32 * f32::from_bits(((127 + d.exp as i32 - 1) as u32) << 23);
        if d.neg {
            -v
        } else {
            v
        }
    }
}

/// The codes of torch's `float4_e2m1fn_x2` bytes, one per byte, two per input byte: the low nibble first.
pub fn e2m1_unpack(packed: &[u8]) -> Vec<u8> {
    packed.iter().flat_map(|&b| [b & 0x0F, b >> 4]).collect()
}

/// One code per byte packed two per byte as torch's `float4_e2m1fn_x2` holds them (element 2i in the low nibble);
/// an odd count leaves the last high nibble zero.
pub fn e2m1_pack(codes: &[u8]) -> Vec<u8> {
    codes.chunks(2).map(|p| (p[0] & 0x0F) | (p.get(1).copied().unwrap_or(0) & 0x0F) << 4).collect()
}

/// A ue4m3 scale code (NVFP4's block scales): an e4m3 code read without its sign bit (MMA-Sim clears it), so
/// 0x7F and 0xFF are NaN and 0x00 / 0x80 are zero.
pub fn ue4m3_decoded(code: u8) -> Decoded {
    Format::E4m3.decoded(code & 0x7F)
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// 2^e as f64 for exponents in the FP8 range.
fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e) as u64) << 52)
}

/// Decode one code of a format with `mbits` mantissa bits and bias `bias`; `ieee_specials` selects the
/// E5M2 rule (all-ones exponent = Inf/NaN) rather than E4M3fn's (only S.1111.111 is NaN).
const fn decode_code(code: u8, mbits: u32, bias: i32, ieee_specials: bool) -> Decoded {
    let neg = code & 0x80 != 0;
    let field = ((code & 0x7F) >> mbits) as i32;
    let mant = code & ((1u8 << mbits) - 1);
    let all_ones = (1i32 << (7 - mbits)) - 1;
    let nonfinite = if ieee_specials { field == all_ones } else { code & 0x7F == 0x7F };
    if nonfinite {
        let class = if ieee_specials && mant == 0 { Class::Inf } else { Class::Nan };
        return Decoded { neg, sig: 0, exp: 0, class };
    }
    if field == 0 {
        if mant == 0 {
            return Decoded { neg, sig: 0, exp: 0, class: Class::Zero };
        }
        // Subnormal: value = mant * 2^(emin - mbits); the operand exponent is emin.
        return Decoded { neg, sig: mant, exp: (1 - bias) as i8, class: Class::Finite };
    }
    // Normal: value = (2^mbits + mant) * 2^(field - bias - mbits).
    Decoded { neg, sig: (1u8 << mbits) | mant, exp: (field - bias) as i8, class: Class::Finite }
}

const fn build_table(mbits: u32, bias: i32, ieee_specials: bool) -> [Decoded; 256] {
    let mut t = [Decoded { neg: false, sig: 0, exp: 0, class: Class::Zero }; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = decode_code(i as u8, mbits, bias, ieee_specials);
        i += 1;
    }
    t
}

static E4M3_TABLE: [Decoded; 256] = build_table(3, 7, false);
static E5M2_TABLE: [Decoded; 256] = build_table(2, 15, true);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_spec_table() {
        // docs/reference.md §1: max finite, max code, non-finite codes.
        assert_eq!(Format::E4m3.to_f64(0x7E), 448.0);
        assert_eq!(Format::E5m2.to_f64(0x7B), 57344.0);
        assert!(Format::E4m3.to_f64(0x7F).is_nan() && Format::E4m3.to_f64(0xFF).is_nan());
        assert_eq!(Format::E5m2.to_f64(0x7C), f64::INFINITY);
        assert_eq!(Format::E5m2.to_f64(0xFC), f64::NEG_INFINITY);
        for c in [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF] {
            assert!(Format::E5m2.to_f64(c).is_nan());
        }
        // Subnormals: exponent field 0 means (m / 2^mbits) * 2^emin.
        assert_eq!(Format::E4m3.to_f64(0x01), 2f64.powi(-9));
        assert_eq!(Format::E5m2.to_f64(0x01), 2f64.powi(-16));
        assert_eq!(Format::E4m3.to_f64(0x80), 0.0);
        assert!(Format::E4m3.to_f64(0x80).is_sign_negative());
        // Every code: the non-finite mask agrees with the decoded class.
        for f in Format::ALL {
            for c in 0..=255u8 {
                let d = f.decoded(c);
                assert_eq!(f.is_nonfinite(c), matches!(d.class, Class::Inf | Class::Nan));
            }
        }
    }

    #[test]
    fn saturating_conversion_spot_values() {
        // docs/reference.md §4 step 3, spot values.
        let e4 = |x: f32| Format::E4m3.from_f32_saturating(x);
        let e5 = |x: f32| Format::E5m2.from_f32_saturating(x);
        for x in [448.0, 464.0, 480.0, 1e30, f32::INFINITY] {
            assert_eq!(e4(x), 0x7E);
        }
        assert_eq!(e4(f32::NEG_INFINITY), 0xFE);
        assert_eq!(e4(2f32.powi(-9)), 0x01);
        assert_eq!(e4(2f32.powi(-10)), 0x00);
        assert_eq!(e4(3.0 * 2f32.powi(-10)), 0x02);
        assert_eq!(e4(15.0), 0x57);
        assert_eq!(e4(-0.1), 0x9D);
        assert_eq!(e4(-0.0), 0x80);
        assert_eq!(e5(448.0), 0x5F);
        assert_eq!(e5(480.0), 0x60);
        assert_eq!(e5(1e30), 0x7B);
        assert_eq!(e5(f32::INFINITY), 0x7B);
        assert_eq!(e5(f32::NEG_INFINITY), 0xFB);
        assert_eq!(e4(f32::NAN), 0x7F);
    }

    #[test]
    fn e2m1_values_and_packing() {
        // docs/reference.md §12.1: the 16 codes.
        let values: Vec<f32> = (0..16u8).map(e2m1::to_f32).collect();
        let expect = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        for (i, v) in expect.iter().enumerate() {
            assert_eq!(values[i], *v);
            assert_eq!(values[i + 8], -v);
        }
        assert_eq!(e2m1_unpack(&[0x72]), [0x2, 0x7]);
        assert_eq!(e2m1_pack(&[0x2, 0x7, 0xF]), [0x72, 0x0F]);
        assert!(ue4m3_decoded(0xFF).class == Class::Nan && ue4m3_decoded(0x80).class == Class::Zero);
        assert_eq!(ue4m3_decoded(0xB8), Format::E4m3.decoded(0x38));
    }

    #[test]
    fn round_trip_every_finite_code() {
        for f in Format::ALL {
            for c in 0..=255u8 {
                if !f.is_nonfinite(c) {
                    assert_eq!(f.from_f32_saturating(f.to_f64(c) as f32), c, "{f} code {c:#04x}");
                }
            }
        }
    }
}
