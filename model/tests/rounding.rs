//! Rounding to a narrow format and the exact construction of fp32 values (docs/reference.md §1, §2.2 step 8, §4),
//! checked against answers computed another way: the nearest-even FP8 value found by comparing with the midpoints
//! of the decoded grid, `half`'s fp16 and bf16 conversions, fp32 itself, and exact f64 products.

use half::{bf16, f16};
use mmaemu_model::round::{f32_from_parts, f32_parts, ilog2, round_to_narrow};
use mmaemu_model::Format;
use mmaemu_testkit::oracle::{self, Fp8};

/// Positive fp32 bit patterns below `end`: a stride through all of them, plus every pattern within 2 of `near`.
fn patterns(end: u32, stride: u32, near: &[u32]) -> Vec<u32> {
    let mut v: Vec<u32> = (0..end).step_by(stride as usize).collect();
    for &x in near {
        v.extend((x.saturating_sub(2)..=x.saturating_add(2)).filter(|&b| b < end));
    }
    v
}

/// The magnitude code nearest to |x| on the FP8 grid, ties to the even code, by comparison with the midpoints
/// of consecutive grid values (exact in f64). `grid` is ascending and one value longer than the finite range
/// (the code above the largest finite value, where round_to_narrow's carry goes).
fn nearest_even(grid: &[f64], x: f64) -> u32 {
    let i = grid.partition_point(|&v| v <= x) - 1; // grid[i] <= x < grid[i + 1]
    let mid = (grid[i] + grid[i + 1]) / 2.0;
    let up = x > mid || (x == mid && i % 2 == 1);
    (i + up as usize) as u32
}

#[test]
fn fp8_rounding_is_nearest_even_on_the_decoded_grid() {
    for (f, o, next) in [(Format::E4m3, Fp8::E4m3, 480.0), (Format::E5m2, Fp8::E5m2, 65536.0)] {
        let mut grid: Vec<f64> = (0..=f.max_code()).map(|c| oracle::fp8_f64(o, c)).collect();
        grid.push(next);
        let end = (next as f32).to_bits();
        // Every midpoint and grid value as fp32 bits (all exact in fp32), and their neighbours.
        let near: Vec<u32> =
            grid.windows(2).flat_map(|w| [(w[0] as f32).to_bits(), (((w[0] + w[1]) / 2.0) as f32).to_bits()]).collect();
        for bits in patterns(end, 4099, &near) {
            let x = f32::from_bits(bits) as f64;
            let want = nearest_even(&grid, x);
            assert_eq!(round_to_narrow(bits, f.mbits(), f.emin()), want, "{f} {x:e} ({bits:#010x})");
            // The sign bit is ignored.
            assert_eq!(round_to_narrow(bits | 0x8000_0000, f.mbits(), f.emin()), want, "{f} -{x:e}");
        }
    }
}

#[test]
fn wide_formats_round_as_half_and_as_fp32_itself() {
    let near = [0x0000_0001, 0x007F_FFFF, 0x0080_0000, 0x3380_0000, 0x3800_0000, 0x477F_F000, 0x7F7F_FFFF];
    for bits in patterns(0x7F80_0000, 8191, &near) {
        let x = f32::from_bits(bits);
        // binary16: 10 mantissa bits, emin -14; below 65536 (f16 rounds x >= 65520 to Inf, 0x7C00, which is
        // also where the carry of round_to_narrow goes).
        if x < 65536.0 {
            assert_eq!(round_to_narrow(bits, 10, -14), (f16::from_f32(x).to_bits() & 0x7FFF) as u32, "f16 {x:e}");
        }
        // bfloat16: 7 mantissa bits, emin -126, on the whole finite range (the carry past the largest finite
        // value is bf16's Inf code).
        assert_eq!(round_to_narrow(bits, 7, -126), (bf16::from_f32(x).to_bits() & 0x7FFF) as u32, "bf16 {x:e}");
        // fp32's own format: every value is on the grid.
        assert_eq!(round_to_narrow(bits, 23, -126), bits, "fp32 {x:e}");
        assert_eq!(round_to_narrow(bits | 0x8000_0000, 23, -126), bits, "fp32 -{x:e}");
    }
}

/// |x| = sig * 2^exp for a finite fp32 x, written from the IEEE layout here, apart from the code under test.
fn split(x: f32) -> (bool, u128, i32) {
    let b = x.to_bits();
    let (field, frac) = ((b >> 23) & 0xFF, b & 0x7F_FFFF);
    let (sig, exp) = if field == 0 { (frac, -149) } else { (frac | 0x80_0000, field as i32 - 150) };
    (b >> 31 == 1, sig as u128, exp)
}

#[test]
fn fp32_values_are_built_exactly_from_any_scaling() {
    let near = [0x0000_0001, 0x0000_0003, 0x007F_FFFF, 0x0080_0000, 0x0080_0001, 0x7F7F_FFFF, 0x3F80_0000];
    for bits in patterns(0x7F80_0000, 6007, &near) {
        for sign in [0, 0x8000_0000] {
            let x = f32::from_bits(bits | sign);
            let (neg, sig, exp) = split(x);
            if sig == 0 {
                continue;
            }
            // The same value with trailing zeros added (right shifts) or removed (left shifts).
            let tz = sig.trailing_zeros() as i32;
            for (mag, e) in
                [(sig, exp), (sig << 5, exp - 5), (sig << 40, exp - 40), (sig << 100, exp - 100), (sig >> tz, exp + tz)]
            {
                assert_eq!(f32_from_parts(neg, mag, e).to_bits(), x.to_bits(), "{x:e} as {mag} * 2^{e}");
            }
            assert_eq!(f32_parts(x), (neg, sig as u32, exp), "{x:e}");
        }
    }
    // Zeros keep their sign; beyond the fp32 range is Inf of the sign.
    assert_eq!(f32_from_parts(true, 0, 7).to_bits(), 0x8000_0000);
    assert_eq!(f32_from_parts(false, 0, -300).to_bits(), 0);
    assert_eq!(f32_from_parts(false, 1, 128), f32::INFINITY);
    assert_eq!(f32_from_parts(true, 3, 127), f32::NEG_INFINITY);
    assert_eq!(f32_from_parts(false, (1 << 24) - 1, 104), f32::MAX);
    assert_eq!(f32_from_parts(true, 1 << 100, 27), -(2f32.powi(127)));
    assert_eq!(f32_from_parts(true, 1 << 100, 28), f32::NEG_INFINITY);
    // ilog2 at the powers of two and just below them.
    for e in 0..128 {
        assert_eq!(ilog2(1u128 << e), e);
        if e > 0 {
            assert_eq!(ilog2((1u128 << e) - 1), e - 1);
        }
    }
}
