//! The block-result roundings of docs/reference.md §2.2 step 7 against IEEE arithmetic: where every term of a block
//! lies on the block's grid (so the aligned sum is exact), a nearest-even preset returns the sum rounded once to fp32
//! (f64 sum, then `as f32`) and a frac_out = 23 truncating preset returns it rounded toward zero.

use mmaemu_model::{dot, BlockRounding, CEntry, Format, Preset, PresetSpec};
use proptest::prelude::*;

fn preset(rounding: BlockRounding) -> Preset {
    Preset::custom(PresetSpec::custom("rounding", 4, 40, 23, -133, CEntry::Early, None).with_rounding(rounding))
        .unwrap()
}

/// The value of a finite E4M3 code (bias 7, subnormals at 2^-6), decoded here from the format's definition.
fn e4m3(x: u8) -> f64 {
    let (e, m) = ((x >> 3) & 15, (x & 7) as f64);
    let v = if e == 0 { m * 2f64.powi(-9) } else { (8.0 + m) * 2f64.powi(e as i32 - 10) };
    if x & 0x80 != 0 {
        -v
    } else {
        v
    }
}

/// The f64 value of an fp32 rounded toward zero from an exact f64 `x` (through the nearest value and a step back).
fn toward_zero(x: f64) -> f32 {
    let n = x as f32;
    if (n as f64).abs() > x.abs() {
        f32::from_bits(n.to_bits() - 1)
    } else {
        n
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]
    #[test]
    fn nearest_even_and_truncation_are_the_ieee_roundings_of_the_exact_sum(
        a in proptest::collection::vec(0x30u8..0x58, 4),
        b in proptest::collection::vec(0x30u8..0x58, 4),
        signs in 0u8..16,
        c_bits in 0x3D80_0000u32..0x4480_0000,
    ) {
        let f = Format::E4m3;
        let a: Vec<u8> = a.iter().enumerate().map(|(i, &x)| x | (((signs >> i) & 1) << 7)).collect();
        // The exact sum in f64 (the cases where a term falls off the 40-bit grid of the block's largest exponent are
        // left out, so the block's aligned sum is exact and only the final rounding differs).
        let c = f32::from_bits(c_bits);
        let terms: Vec<f64> = a.iter().zip(&b).map(|(&x, &y)| e4m3(x) * e4m3(y)).collect();
        let emax = terms.iter().chain([&(c as f64)]).filter(|t| **t != 0.0).map(|t| t.abs().log2().floor() as i32).max().unwrap();
        let grid = 2f64.powi(emax - 40);
        let on_grid = terms.iter().chain([&(c as f64)]).all(|t| (t / grid).fract() == 0.0);
        prop_assume!(on_grid);
        let exact: f64 = terms.iter().sum::<f64>() + c as f64;
        let rne = dot(&preset(BlockRounding::NearestEven), f, f, &a, &b, Some(c)).unwrap();
        let rz = dot(&preset(BlockRounding::Truncate), f, f, &a, &b, Some(c)).unwrap();
        let zero_is_positive = |x: f32| if x == 0.0 { 0.0 } else { x };
        prop_assert_eq!(rne.to_bits(), zero_is_positive(exact as f32).to_bits(), "exact {}", exact);
        prop_assert_eq!(rz.to_bits(), zero_is_positive(toward_zero(exact)).to_bits(), "exact {}", exact);
    }
}

#[test]
fn a_tie_goes_to_the_even_neighbour() {
    // 1 + 2^-24 is half way between 1 and 1 + 2^-23: nearest even gives 1; 1 + 3 * 2^-24 gives 1 + 2^-22.
    // e4m3 0x38 = 1.0; c = 2^-24 and 3 * 2^-24 as exact fp32 values.
    let f = Format::E4m3;
    let one = [0x38u8];
    let rne = preset(BlockRounding::NearestEven);
    assert_eq!(dot(&rne, f, f, &one, &one, Some(2f32.powi(-24))).unwrap(), 1.0);
    assert_eq!(dot(&rne, f, f, &one, &one, Some(3.0 * 2f32.powi(-24))).unwrap(), 1.0 + 2f32.powi(-22));
    let rz = preset(BlockRounding::Truncate);
    assert_eq!(dot(&rz, f, f, &one, &one, Some(3.0 * 2f32.powi(-24))).unwrap(), 1.0 + 2f32.powi(-23));
}

/// §2.3 with §2.8's block scales: a preset whose c enters late keeps c out of the scaled block (one fp32
/// round-to-nearest-even addition after it), so one block from c equals the block from +0 plus c in f32; the same
/// preset with c early takes c into the alignment and, for some c, gives other bits.
#[test]
fn a_late_c_block_scaled_step_adds_c_after_the_block() {
    use mmaemu_model::dot_scaled;
    let spec = |c_entry| PresetSpec::custom("late-mx", 32, 25, 23, -133, c_entry, None).with_scale_block(Some(32));
    let late = Preset::custom(spec(CEntry::Late)).unwrap();
    let early = Preset::custom(spec(CEntry::Early)).unwrap();
    let mut state = 0x5eed_u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let mut differs = 0;
    for _ in 0..2000 {
        let a: Vec<u8> = (0..32).map(|_| (next() % 0x7F) as u8 | ((next() & 1) << 7) as u8).collect();
        let b: Vec<u8> = (0..32).map(|_| (next() % 0x7F) as u8 | ((next() & 1) << 7) as u8).collect();
        let (sa, sb) = ([(100 + next() % 50) as u8], [(100 + next() % 50) as u8]);
        let c = f32::from_bits(next() & 0x7FFF_FFFF) * if next() & 1 == 1 { -1.0 } else { 1.0 };
        if !c.is_finite() {
            continue;
        }
        let fa = Format::E4m3;
        let block = dot_scaled(&late, fa, fa, &a, &b, &sa, &sb, None).unwrap();
        let got = dot_scaled(&late, fa, fa, &a, &b, &sa, &sb, Some(c)).unwrap();
        let want = block + c;
        assert_eq!(got.to_bits(), if want.is_nan() { 0x7FFF_FFFF } else { want.to_bits() }, "c = {c:e}");
        differs += (dot_scaled(&early, fa, fa, &a, &b, &sa, &sb, Some(c)).unwrap().to_bits() != got.to_bits()) as usize;
    }
    assert!(differs > 0, "c entry must change some result");
}

/// §2.2 step 3 and §2.8 step 3, one rule: c's exponent is floor(log2|c|), at least −126 (as fp32 holds a subnormal
/// c). It decides the grid only when every product is zero and frac < frac_out: with frac = 5, a subnormal
/// c = 2^−140 + 2^−144 counts at −126, the grid is 2^−131, and c truncates to +0 — with and without block scales
/// (scales 2^0).
#[test]
fn a_subnormal_c_counts_at_minus_126_with_and_without_scales() {
    use mmaemu_model::dot_scaled;
    let spec = PresetSpec::custom("narrow-frac", 16, 5, 23, -1000, CEntry::Early, None);
    let plain = Preset::custom(spec.clone()).unwrap();
    let scaled = Preset::custom(spec.with_scale_block(Some(16))).unwrap();
    let c = f32::from_bits(0x0000_0220); // 2^-140 + 2^-144
    let zeros = [0u8; 16];
    let fa = Format::E4m3;
    assert_eq!(dot(&plain, fa, fa, &zeros, &zeros, Some(c)).unwrap().to_bits(), 0);
    assert_eq!(dot_scaled(&scaled, fa, fa, &zeros, &zeros, &[127], &[127], Some(c)).unwrap().to_bits(), 0);
    // A normal c is kept on its own grid: 2^-120 (frac 5 keeps it whole).
    let normal = f32::from_bits(0x0380_0000);
    assert_eq!(dot(&plain, fa, fa, &zeros, &zeros, Some(normal)).unwrap().to_bits(), 0x0380_0000);
}
