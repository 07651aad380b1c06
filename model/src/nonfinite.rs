//! The IEEE class of a sum with a term that is not finite (docs/reference.md §2.5, §3.7): `c + Σ a[k]·b[k]` as
//! float64 would classify it. The one classifier of the chain, the GEMM's row patch and the trace.

use crate::format::{Class, Decoded};
use crate::round::CANONICAL_NAN_F32;

/// Why a sum is not finite, in the order a reader checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// c or an operand is NaN: canonical NaN.
    Nan,
    /// Some k has Inf × 0: canonical NaN.
    InfTimesZero,
    /// Infinities of both signs meet: canonical NaN.
    BothSigns,
    /// Infinite terms, all positive: +Inf.
    PositiveInf,
    /// Infinite terms, all negative: −Inf.
    NegativeInf,
}

impl Cause {
    /// The sum's value: the canonical NaN (0x7FFFFFFF) or the Inf of the infinite terms' sign.
    pub fn value(self) -> f32 {
        match self {
            Cause::Nan | Cause::InfTimesZero | Cause::BothSigns => f32::from_bits(CANONICAL_NAN_F32),
            Cause::PositiveInf => f32::INFINITY,
            Cause::NegativeInf => f32::NEG_INFINITY,
        }
    }
}

/// The running class of a sum: start from c ([`NonfiniteSum::with_c`]), add each product's operands, then read
/// [`NonfiniteSum::cause`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NonfiniteSum {
    nan: bool,
    inf_zero: bool,
    pos: bool,
    neg: bool,
}

impl NonfiniteSum {
    /// The class of c alone (+0 when there is no c).
    pub fn with_c(c: f32) -> NonfiniteSum {
        NonfiniteSum { nan: c.is_nan(), inf_zero: false, pos: c == f32::INFINITY, neg: c == f32::NEG_INFINITY }
    }

    /// Add the product of two decoded operands: a NaN operand, Inf × 0, or an infinite product of its sign.
    #[inline]
    pub fn add(&mut self, a: Decoded, b: Decoded) {
        match (a.class, b.class) {
            (Class::Nan, _) | (_, Class::Nan) => self.nan = true,
            (Class::Inf, Class::Zero) | (Class::Zero, Class::Inf) => self.inf_zero = true,
            (Class::Inf, _) | (_, Class::Inf) => {
                if a.neg != b.neg {
                    self.neg = true
                } else {
                    self.pos = true
                }
            }
            _ => {}
        }
    }

    /// Record a NaN operand seen apart from its product (a row known to hold a NaN code).
    pub fn add_nan(&mut self) {
        self.nan = true;
    }

    /// Why the sum is not finite, None when every term is finite.
    pub fn cause(&self) -> Option<Cause> {
        if self.nan {
            Some(Cause::Nan)
        } else if self.inf_zero {
            Some(Cause::InfTimesZero)
        } else if self.pos && self.neg {
            Some(Cause::BothSigns)
        } else if self.pos {
            Some(Cause::PositiveInf)
        } else if self.neg {
            Some(Cause::NegativeInf)
        } else {
            None
        }
    }

    /// The sum's value when it is not finite ([`Cause::value`]), None when every term is finite.
    pub fn value(&self) -> Option<f32> {
        self.cause().map(Cause::value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;

    #[test]
    fn the_class_follows_float64() {
        let e4 = Format::E4m3;
        let d = |v: f32| e4.decoded(e4.from_f32_saturating(v));
        let (one, zero, nan) = (d(1.0), d(0.0), e4.decoded(0x7F));
        let sum = |c: f32, terms: &[(Decoded, Decoded)]| {
            let mut s = NonfiniteSum::with_c(c);
            terms.iter().for_each(|&(a, b)| s.add(a, b));
            s.value().map(f32::to_bits)
        };
        let canonical = Some(CANONICAL_NAN_F32);
        assert_eq!(sum(1.0, &[(one, zero)]), None);
        assert_eq!(sum(f32::INFINITY, &[(one, one)]), Some(f32::INFINITY.to_bits()));
        assert_eq!(sum(f32::NEG_INFINITY, &[]), Some(f32::NEG_INFINITY.to_bits()));
        assert_eq!(sum(0.0, &[(nan, one)]), canonical);
        assert_eq!(sum(f32::NAN, &[]), canonical);
        let inf5 = Format::E5m2.decoded(0x7C);
        let ninf5 = Format::E5m2.decoded(0xFC);
        assert_eq!(sum(0.0, &[(inf5, zero)]), canonical);
        assert_eq!(sum(0.0, &[(inf5, one), (ninf5, one)]), canonical);
        assert_eq!(sum(f32::NEG_INFINITY, &[(inf5, one)]), canonical);
        assert_eq!(sum(0.0, &[(ninf5, one)]), Some(f32::NEG_INFINITY.to_bits()));
        let mut s = NonfiniteSum::default();
        s.add_nan();
        assert_eq!(s.cause(), Some(Cause::Nan));
    }
}
