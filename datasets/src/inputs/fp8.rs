//! The FP8 side of the input generator: the formats it writes, their codes' exact values, and rounding a real value
//! to the nearest code by exact operations.

/// 2^52: adding and subtracting it rounds a small non-negative f64 to an integer, half to even.
const TWO_52: f64 = 4_503_599_627_370_496.0;

/// An FP8 format as the generator knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fp8 {
    E4m3,
    E5m2,
}

impl Fp8 {
    pub(super) fn parse(name: &str) -> Option<Fp8> {
        match name {
            "e4m3" | "float8_e4m3fn" => Some(Fp8::E4m3),
            "e5m2" | "float8_e5m2" => Some(Fp8::E5m2),
            _ => None,
        }
    }

    /// The largest finite magnitude code.
    pub(super) fn max_code(self) -> u8 {
        match self {
            Fp8::E4m3 => 0x7E,
            Fp8::E5m2 => 0x7B,
        }
    }

    pub(super) fn is_finite(self, code: u8) -> bool {
        code & 0x7F <= self.max_code()
    }

    /// The exact value of a finite non-negative code (0 ..= max_code).
    pub(super) fn magnitude(self, code: u8) -> f64 {
        let (e, m, mbits, bias) = match self {
            Fp8::E4m3 => ((code >> 3) & 0xF, code & 7, 3, 7),
            Fp8::E5m2 => ((code >> 2) & 0x1F, code & 3, 2, 15),
        };
        if e == 0 {
            m as f64 * pow2(1 - bias - mbits)
        } else {
            ((1u32 << mbits) + m as u32) as f64 * pow2(e as i32 - bias - mbits)
        }
    }

    /// The unbiased exponent of the largest binade.
    pub(super) fn emax(self) -> i32 {
        match self {
            Fp8::E4m3 => 8,
            Fp8::E5m2 => 15,
        }
    }

    pub(super) fn bias(self) -> i32 {
        match self {
            Fp8::E4m3 => 7,
            Fp8::E5m2 => 15,
        }
    }

    pub(super) fn mantissa_bits(self) -> u32 {
        match self {
            Fp8::E4m3 => 3,
            Fp8::E5m2 => 2,
        }
    }

    pub(super) fn nan(self, negative: bool) -> u8 {
        (if negative { 0x80 } else { 0 }) | 0x7F
    }

    /// +Inf or -Inf; NaN for e4m3fn, which has no infinities.
    pub(super) fn inf(self, negative: bool) -> u8 {
        let sign = if negative { 0x80 } else { 0 };
        match self {
            Fp8::E4m3 => sign | 0x7F,
            Fp8::E5m2 => sign | 0x7C,
        }
    }

    /// Round to nearest (ties to the even code), saturating at the largest finite magnitude; NaN -> NaN.
    #[cfg(test)]
    pub(super) fn round(self, x: f64) -> u8 {
        Rounder::new(self).round(x)
    }
}

/// The magnitudes of a format's finite non-negative codes, for rounding by exact comparisons.
pub(super) struct Rounder {
    pub(super) f: Fp8,
    /// magnitude(c) for c in 0..=max_code, increasing.
    pub(super) values: Vec<f64>,
}

impl Rounder {
    pub(super) fn new(f: Fp8) -> Rounder {
        Rounder { f, values: (0..=f.max_code()).map(|c| f.magnitude(c)).collect() }
    }

    /// Round to nearest (ties to the even code), saturating at the largest finite magnitude; NaN -> NaN.
    ///
    /// |x| is divided by the quantum of its binade (a power of two: exact) and rounded to an integer, half
    /// to even (exact); the code is then the binade's first code plus that count, which carries into the next
    /// binade by itself. Checked against [`Rounder::round_by_search`] on every midpoint in the tests.
    pub(super) fn round(&self, x: f64) -> u8 {
        if x.is_nan() {
            return self.f.nan(false);
        }
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        let a = x.abs();
        let max = self.f.max_code();
        if a >= self.values[max as usize] {
            return sign | max;
        }
        let (mbits, bias) = (self.f.mantissa_bits() as i32, self.f.bias());
        // Unbiased exponent of a's binade, no lower than the smallest normal's (1 - bias).
        let e = if a == 0.0 { 1 - bias } else { ((a.to_bits() >> 52) as i32 - 1023).max(1 - bias) };
        // y < 2^(mbits + 1); adding and removing 2^52 rounds it to an integer, half to even (IEEE default
        // rounding, the only mode Rust runs in), exactly: the same as round_ties_even, without a libm call.
        let y = a * pow2(mbits - e);
        let n = ((y + TWO_52) - TWO_52) as u32; // in [0, 2^(mbits + 1)]
        let code = if e == 1 - bias && n < (1 << mbits) {
            n // subnormal (or zero)
        } else {
            (((e + bias) as u32) << mbits) + n - (1 << mbits)
        };
        sign | code.min(max as u32) as u8
    }

    /// The same rounding by searching the magnitudes (the obviously right reference).
    #[cfg(test)]
    pub(super) fn round_by_search(&self, x: f64) -> u8 {
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        let a = x.abs();
        let max = self.f.max_code();
        if a >= self.values[max as usize] {
            return sign | max;
        }
        let c = self.values.partition_point(|&v| v <= a) - 1;
        let v = self.values[c];
        if v == a {
            return sign | c as u8;
        }
        // Both neighbours are short dyadic numbers, so their midpoint is exact in f64.
        let mid = (v + self.values[c + 1]) / 2.0;
        let code = if a < mid || (a == mid && c % 2 == 0) { c } else { c + 1 };
        sign | code as u8
    }
}

/// 2^p for p in the normal f64 range.
pub(super) fn pow2(p: i32) -> f64 {
    f64::from_bits(((p + 1023) as u64) << 52)
}
