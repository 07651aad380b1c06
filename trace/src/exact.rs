//! Exact dyadic values for the trace: `m * 2^e` with a big-integer m, their sums and products, the one rounding
//! to fp32 (round to nearest even, subnormals, overflow to Inf) and their display as hex floats and decimals.

// Every value a trace shows (an FP8 product, an aligned term, a block sum, an fp32 sum before its rounding, acc times
// alpha) is a dyadic rational, so a big integer and a power of two hold it without error whatever its range.

use num_bigint::{BigInt, Sign};
use std::cmp::Ordering;
use std::fmt;

/// An exact value `mant * 2^exp`. Zero is `mant = 0` (a trace keeps the sign of fp32 zeros apart, in `f32`s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exact {
    mant: BigInt,
    exp: i32,
}

impl Exact {
    /// Zero.
    pub fn zero() -> Exact {
        Exact { mant: BigInt::from(0), exp: 0 }
    }

    /// `mant * 2^exp`.
    pub fn new(mant: impl Into<BigInt>, exp: i32) -> Exact {
        Exact { mant: mant.into(), exp }.normalised()
    }

    /// `(-1)^neg * mag * 2^exp`.
    pub fn signed(neg: bool, mag: u128, exp: i32) -> Exact {
        let m = BigInt::from(mag);
        Exact::new(if neg { -m } else { m }, exp)
    }

    /// The value of a finite fp32 number (both zeros give zero). None for Inf and NaN.
    pub fn of_f32(x: f32) -> Option<Exact> {
        if !x.is_finite() {
            return None;
        }
        let bits = x.to_bits();
        let field = ((bits >> 23) & 0xFF) as i32;
        let frac = (bits & 0x7F_FFFF) as u128;
        let (mag, exp) = if field == 0 { (frac, -149) } else { (frac | 0x80_0000, field - 150) };
        Some(Exact::signed(bits >> 31 == 1, mag, exp))
    }

    /// Drop trailing zero bits of the mantissa (a canonical form, so that equal values compare equal).
    fn normalised(mut self) -> Exact {
        if self.mant.sign() == Sign::NoSign {
            return Exact::zero();
        }
        let tz = self.mant.trailing_zeros().unwrap_or(0);
        if tz > 0 {
            self.mant >>= tz;
            self.exp += tz as i32;
        }
        self
    }

    /// Is it zero?
    pub fn is_zero(&self) -> bool {
        self.mant.sign() == Sign::NoSign
    }

    /// Is it below zero?
    pub fn is_negative(&self) -> bool {
        self.mant.sign() == Sign::Minus
    }

    /// The exact sum.
    pub fn add(&self, o: &Exact) -> Exact {
        if self.is_zero() {
            return o.clone();
        }
        if o.is_zero() {
            return self.clone();
        }
        let e = self.exp.min(o.exp);
        let a = &self.mant << (self.exp - e) as usize;
        let b = &o.mant << (o.exp - e) as usize;
        Exact::new(a + b, e)
    }

    /// The exact difference `self - o`.
    pub fn sub(&self, o: &Exact) -> Exact {
        self.add(&o.neg())
    }

    /// The negation.
    pub fn neg(&self) -> Exact {
        Exact { mant: -self.mant.clone(), exp: self.exp }
    }

    /// The exact product.
    pub fn mul(&self, o: &Exact) -> Exact {
        Exact::new(&self.mant * &o.mant, self.exp + o.exp)
    }

    /// The absolute value.
    pub fn abs(&self) -> Exact {
        Exact { mant: self.mant.magnitude().clone().into(), exp: self.exp }
    }

    /// floor(log2|x|) of a nonzero value.
    pub fn ilog2(&self) -> Option<i32> {
        (!self.is_zero()).then(|| self.mant.bits() as i32 - 1 + self.exp)
    }

    /// The value in units of `2^g`, truncated toward zero (the alignment of the block step).
    pub fn trunc_units(&self, g: i32) -> BigInt {
        let sh = self.exp - g;
        if sh >= 0 {
            &self.mant << sh as usize
        } else {
            // Truncate the magnitude: shifting a negative BigInt right rounds toward -inf.
            let mag: BigInt = self.mant.magnitude().clone().into();
            let t = mag >> (-sh) as usize;
            if self.is_negative() {
                -t
            } else {
                t
            }
        }
    }

    /// The value in units of `2^g`, rounded to the nearest with ties to even (the nearest-even block rounding, and
    /// the one rounding of [`Exact::to_f32`]).
    pub fn round_units(&self, g: i32) -> BigInt {
        let sh = self.exp - g;
        if sh >= 0 {
            return &self.mant << sh as usize;
        }
        let s = (-sh) as usize;
        let mag: BigInt = self.mant.magnitude().clone().into();
        let q: BigInt = &mag >> s;
        let rem: BigInt = &mag - (&q << s);
        let half: BigInt = BigInt::from(1) << (s - 1);
        let up = match rem.cmp(&half) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => q.bit(0),
        };
        let q = if up { q + 1 } else { q };
        if self.is_negative() {
            -q
        } else {
            q
        }
    }

    /// Compare values.
    pub fn cmp_value(&self, o: &Exact) -> Ordering {
        let d = self.sub(o);
        d.mant.sign().cmp(&Sign::NoSign)
    }

    /// RN32: the value rounded once to fp32, to nearest with ties to even, subnormals kept, beyond the range
    /// ±Inf. A zero gives +0 (the caller applies IEEE's sign rules for exact zeros).
    pub fn to_f32(&self) -> f32 {
        if self.is_zero() {
            return 0.0;
        }
        let neg = self.is_negative();
        let sign = if neg { 0x8000_0000u32 } else { 0 };
        // floor(log2|x|), then the unit in the last place: 2^(lead - 23) for normals, 2^-149 below 2^-126.
        let lead = self.mant.bits() as i32 - 1 + self.exp;
        let ulp = (lead - 23).max(-149);
        let q = self.abs().round_units(ulp);
        // q * 2^ulp, q < 2^25 (rounding may carry into a new leading bit).
        let q = u64::try_from(q).unwrap_or(u64::MAX);
        let (q, ulp) = if q >= 1 << 24 { (q >> 1, ulp + 1) } else { (q, ulp) };
        if q == 0 {
            return f32::from_bits(sign);
        }
        let top = 63 - q.leading_zeros() as i32 + ulp;
        if top > 127 {
            return f32::from_bits(sign | 0x7F80_0000);
        }
        if top < -126 {
            return f32::from_bits(sign | q as u32); // subnormal: ulp = -149
        }
        let field = (top + 127) as u32;
        let frac = ((q << (23 - (top - ulp))) as u32) & 0x7F_FFFF;
        f32::from_bits(sign | (field << 23) | frac)
    }

    /// The nearest f64 (for decimals).
    pub fn to_f64(&self) -> f64 {
        if self.is_zero() {
            return 0.0;
        }
        let bits = self.mant.bits() as i32;
        let (m, e) = if bits > 60 {
            let s = (bits - 60) as usize;
            // Keep a sticky bit so that the f64 conversion rounds like the exact value would.
            let mag: BigInt = self.mant.magnitude().clone().into();
            let q: BigInt = &mag >> s;
            let sticky = if (&q << s) != mag { 1 } else { 0 };
            let q = i128::try_from(q).unwrap_or(0) | sticky;
            (if self.is_negative() { -q } else { q }, self.exp + s as i32)
        } else {
            (i128::try_from(&self.mant).unwrap_or(0), self.exp)
        };
        (m as f64) * 2f64.powi(e.clamp(-1100, 1100)) * if e < -1100 { 0.0 } else { 1.0 }
    }

    /// Hex-float form `±0x1.xxxp±e`, exact (`0` for zero).
    pub fn hex(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let sign = if self.is_negative() { "-" } else { "" };
        let mag = self.mant.magnitude();
        let bits = mag.bits() as i32;
        let lead = bits - 1 + self.exp;
        // Fraction bits below the leading one, padded to a multiple of 4.
        let fbits = bits - 1;
        let digits = (fbits + 3) / 4;
        if digits == 0 {
            return format!("{sign}0x1p{lead:+}");
        }
        let one = num_bigint::BigUint::from(1u8) << (fbits as usize);
        let frac = (mag - &one) << ((digits * 4 - fbits) as usize);
        let s = format!("{:0width$x}", frac, width = digits as usize);
        format!("{sign}0x1.{s}p{lead:+}")
    }

    /// Decimal form: exact when it has at most 17 significant digits as an f64, else `≈` and 17 digits.
    pub fn decimal(&self) -> String {
        let v = self.to_f64();
        let exact = Exact::of_f64(v).is_some_and(|x| x == *self);
        let s = format!("{v:e}");
        if exact {
            s
        } else {
            format!("≈{v:.16e}")
        }
    }

    /// The value of a finite f64.
    pub fn of_f64(v: f64) -> Option<Exact> {
        if !v.is_finite() {
            return None;
        }
        let bits = v.to_bits();
        let field = ((bits >> 52) & 0x7FF) as i32;
        let frac = (bits & ((1u64 << 52) - 1)) as u128;
        let (mag, exp) = if field == 0 { (frac, -1074) } else { (frac | (1 << 52), field - 1075) };
        Some(Exact::signed(bits >> 63 == 1, mag, exp))
    }

    /// The value in units of 2^exp when that is exact and fits an i128 (used by the printer and tests).
    pub fn units(&self, exp: i32) -> Option<i128> {
        if self.is_zero() {
            return Some(0);
        }
        if exp > self.exp {
            return None;
        }
        i128::try_from(&self.mant << (self.exp - exp) as usize).ok()
    }
}

impl fmt::Display for Exact {
    /// `hex (decimal)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.hex(), self.decimal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rn32_against_ieee() {
        // The one rounding of a sum of two fp32 values equals IEEE's `+` (round to nearest even).
        let vals = [1.0f32, 2f32.powi(-24), 3.0e-39, -1.5, 1e30, 7.0e-45, f32::MAX, 0.1, -0.3, 1.0 + 2f32.powi(-23)];
        for &a in &vals {
            for &b in &vals {
                let s = Exact::of_f32(a).unwrap().add(&Exact::of_f32(b).unwrap());
                let want = a + b;
                let got = s.to_f32();
                if want == 0.0 {
                    assert_eq!(got, 0.0);
                } else {
                    assert_eq!(got.to_bits(), want.to_bits(), "{a:e} + {b:e}");
                }
            }
        }
        // Ties to even: 1 + 2^-24 -> 1; 1 + 3 * 2^-24 -> 1 + 2^-22.
        assert_eq!(Exact::new(BigInt::from((1i64 << 24) + 1), -24).to_f32(), 1.0);
        assert_eq!(Exact::new(BigInt::from((1i64 << 24) + 3), -24).to_f32(), 1.0 + 2f32.powi(-22));
        assert_eq!(Exact::new(1, -150).to_f32(), 0.0); // tie to even at the bottom: 0
        assert_eq!(Exact::new(3, -151).to_f32().to_bits(), 1); // 0.75 * 2^-149 -> 2^-149
        assert_eq!(Exact::new(1, 128).to_f32(), f32::INFINITY);
    }

    #[test]
    fn hex_and_decimal() {
        assert_eq!(Exact::new(257, 0).hex(), "0x1.01p+8");
        assert_eq!(Exact::new(-1, -6).hex(), "-0x1p-6");
        assert_eq!(Exact::new(3, 0).hex(), "0x1.8p+1");
        // 0x88008 * 2^-2 = 139266 = 2^17 + 2 * 0x1001: trailing zero bits are not printed.
        assert_eq!(Exact::new(0x88008, -2).hex(), "0x1.1001p+17");
        assert_eq!(Exact::new(5, -1).decimal(), "2.5e0");
        assert!(Exact::new((BigInt::from(1) << 80) + 1, 0).decimal().starts_with('≈'));
        assert_eq!(Exact::new(-7, 3).trunc_units(5), BigInt::from(-1)); // -56 / 32 toward zero
    }
}
