//! What the trace's test files draw their calls from: FP8 codes in an exponent band with edge codes mixed in, and
//! the epilogue's scales (each file keeps the SplitMix64 stream of `model/tests/common` as `crate::common`).
#![allow(dead_code)]

use crate::common::SplitMix64 as Rng;
use mmaemu_model::Format;

/// Mostly finite codes in an exponent band; zeros, subnormals, the largest finite codes and, with `specials`
/// (rarely), any byte, non-finite ones included.
pub fn code(r: &mut Rng, f: Format, band: u8, specials: bool) -> u8 {
    let sign = (r.below(2) as u8) << 7;
    let max = f.max_code();
    match r.below(40) {
        0 => 0x80 * r.below(2) as u8,
        1 | 2 => sign | (r.below(8) as u8),
        3 => sign | max,
        4 if specials && r.below(8) == 0 => r.next() as u8,
        _ => {
            let c = (band as u64 + r.below(24)) as u8 & 0x7F;
            if f.is_nonfinite(c) {
                sign | max
            } else {
                sign | c
            }
        }
    }
}

/// A scale of the epilogue: 1, a power of two, -0, a subnormal, huge, or any normal in a moderate range.
pub fn scale(r: &mut Rng) -> f32 {
    match r.below(8) {
        0 => 1.0,
        1 => 0.5,
        2 => -0.0,
        3 => f32::from_bits(r.next() as u32 & 0x807F_FFFF), // subnormal
        4 => 1e30,
        _ => f32::from_bits((r.next() as u32 & 0x807F_FFFF) | ((100 + r.below(50) as u32) << 23)),
    }
}
