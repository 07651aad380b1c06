//! Bit-level rounding and exact construction of binary floating-point values, written as integer code:
//! [`round_to_narrow`] and [`f32_from_parts`] live here and nowhere else.

/// The canonical fp32 NaN, 0x7FFFFFFF.
pub const CANONICAL_NAN_F32: u32 = 0x7FFF_FFFF;

/// fp32 bits with every NaN replaced by the canonical NaN.
#[inline]
pub fn canonical_f32(x: f32) -> f32 {
    if x.is_nan() {
        f32::from_bits(CANONICAL_NAN_F32)
    } else {
        x
    }
}

// `round_to_narrow` rounds a finite fp32 value to nearest-even in a narrower IEEE-like format with subnormals (the FP8
// formats; fp16 and bf16 come from `half`), returning the magnitude code; overflow handling is the caller's.
// `f32_from_parts` builds the fp32 value `(-1)^neg * mag * 2^exp` when it is exactly representable.
//
// A narrow format here is described by its mantissa width `mbits` and its smallest normal exponent `emin`. Its codes
// (sign bit aside) are ordered like the values they encode, which is what makes the "quantum" construction below work:
// a value `r * 2^q` with `q = max(e, emin) - mbits` has the magnitude code `((q - qmin) << mbits) + r`, where
// `qmin = emin - mbits`; a carry out of `r` moves into the exponent field exactly as it should.

/// Round the finite fp32 value with bits `x` (sign ignored) to nearest, ties to even, in the format with
/// `mbits <= 23` mantissa bits and smallest normal exponent `emin >= -126`, and return the magnitude code (exponent
/// field and mantissa, no sign). The result may be the code just above the largest finite value (or the
/// Inf code) when `x` rounds past it: callers saturate or map to Inf as their format requires.
pub fn round_to_narrow(x: u32, mbits: u32, emin: i32) -> u32 {
    let abs = x & 0x7FFF_FFFF;
    debug_assert!(abs < 0x7F80_0000, "round_to_narrow takes finite values");
    let field = (abs >> 23) as i32;
    let frac = abs & 0x7F_FFFF;
    // |x| = sig * 2^xexp exactly, with sig < 2^24.
    let (sig, xexp) = if field == 0 { (frac as u64, -149) } else { ((frac | 0x80_0000) as u64, field - 150) };
    if sig == 0 {
        return 0;
    }
    // floor(log2|x|) and the quantum 2^q of the narrow format at that binade.
    let e = xexp + 63 - sig.leading_zeros() as i32;
    let q = e.max(emin) - mbits as i32;
    let shift = q - xexp;
    // A narrow grid is never finer than fp32's (mbits <= 23, emin >= -126), so shift >= 0.
    debug_assert!(shift >= 0, "round_to_narrow takes formats no wider than fp32");
    let r = if shift == 0 {
        // fp32's own grid (mbits = 23): exact.
        sig
    } else if shift >= 40 {
        // sig < 2^24 <= 2^(shift - 16): far below half a quantum, rounds to zero.
        0
    } else {
        let kept = sig >> shift;
        let rem = sig & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        // Round to nearest; on a tie, to the even neighbour.
        if rem > half || (rem == half && kept & 1 == 1) {
            kept + 1
        } else {
            kept
        }
    };
    if r == 0 {
        return 0;
    }
    let qmin = emin - mbits as i32;
    (((q - qmin) as u32) << mbits) + r as u32
}

/// The fp32 value `(-1)^neg * mag * 2^exp`, which must be exactly representable (a debug assertion checks
/// that no bit is lost). A zero magnitude gives a zero of the given sign. A value beyond the fp32 range
/// gives Inf of that sign (the callers' derivations show it cannot happen; see docs/reference.md §2.5).
pub fn f32_from_parts(neg: bool, mag: u128, exp: i32) -> f32 {
    let sign = if neg { 0x8000_0000u32 } else { 0 };
    if mag == 0 {
        return f32::from_bits(sign);
    }
    let lead = 127 - mag.leading_zeros() as i32; // mag in [2^lead, 2^(lead+1))
    let ev = lead + exp; // floor(log2|value|)
    if ev > 127 {
        return f32::from_bits(sign | 0x7F80_0000);
    }
    if ev >= -126 {
        // Normal: 24 significant bits with the leading one at bit 23.
        let sig = if lead >= 23 {
            debug_assert_eq!(mag & ((1u128 << (lead - 23)) - 1), 0, "inexact f32_from_parts");
            (mag >> (lead - 23)) as u32
        } else {
            (mag << (23 - lead)) as u32
        };
        f32::from_bits(sign | (((ev + 127) as u32) << 23) | (sig & 0x7F_FFFF))
    } else {
        // Subnormal: the value is frac * 2^-149.
        let shift = exp + 149;
        let frac = if shift >= 0 {
            (mag << shift) as u32
        } else {
            debug_assert_eq!(mag & ((1u128 << (-shift)) - 1), 0, "inexact f32_from_parts");
            (mag >> (-shift)) as u32
        };
        f32::from_bits(sign | frac)
    }
}

/// Split a finite nonzero fp32 value into `(neg, sig, exp)` with `|x| = sig * 2^exp`, `sig < 2^24`.
/// Zeros give `sig = 0`.
pub fn f32_parts(x: f32) -> (bool, u32, i32) {
    let bits = x.to_bits();
    let neg = bits >> 31 == 1;
    let field = (bits >> 23) & 0xFF;
    let frac = bits & 0x7F_FFFF;
    debug_assert!(field != 0xFF, "f32_parts takes finite values");
    if field == 0 {
        (neg, frac, -149)
    } else {
        (neg, frac | 0x80_0000, field as i32 - 150)
    }
}

/// floor(log2(sig)) for a nonzero integer.
pub fn ilog2(sig: u128) -> i32 {
    127 - sig.leading_zeros() as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip() {
        for x in [1.0f32, -3.5, 1e-40, -1e-45, f32::MAX, f32::MIN_POSITIVE, 0.1] {
            let (neg, sig, exp) = f32_parts(x);
            assert_eq!(f32_from_parts(neg, sig as u128, exp).to_bits(), x.to_bits());
        }
        assert_eq!(f32_from_parts(true, 0, 0).to_bits(), 0x8000_0000);
    }
}
