//! §1 and §2 of docs/reference.md: the format table, the block step's worked examples and edge cases,
//! chains and `dot`.

use super::*;
use mmaemu_model::{gemm, Operands, OutDtype, SplitK};

// ---------------------------------------------------------------------------------------------------------
// §1: the format table (checked on the model's decoder, independently of the oracle's)

#[test]
fn s1_format_table() {
    assert_eq!(E4.to_f64(0x7E), 448.0);
    assert_eq!(E4.to_f64(0xFE), -448.0);
    assert_eq!(E5.to_f64(0x7B), 57344.0);
    assert_eq!(E5.to_f64(0xFB), -57344.0);
    assert!(E4.to_f64(0x7F).is_nan() && E4.to_f64(0xFF).is_nan());
    assert_eq!(E5.to_f64(0x7C), f64::INFINITY);
    assert_eq!(E5.to_f64(0xFC), f64::NEG_INFINITY);
    for c in [0x7Du8, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF] {
        assert!(E5.to_f64(c).is_nan());
    }
    // Subnormals: exponent field 0 -> (m / 2^mbits) * 2^emin.
    assert_eq!(E4.to_f64(0x01), p2(-9));
    assert_eq!(E4.to_f64(0x07), 7.0 * p2(-9));
    assert_eq!(E4.to_f64(0x08), p2(-6));
    assert_eq!(E5.to_f64(0x01), p2(-16));
    assert_eq!(E5.to_f64(0x04), p2(-14));
    // The oracle's decoder agrees with the model's on every code.
    for f in [E4, E5] {
        for c in 0..=255u8 {
            let (m, o) = (f.to_f64(c), oracle::fp8_f64(ofmt(f), c));
            assert!(m.to_bits() == o.to_bits() || (m.is_nan() && o.is_nan()), "{} 0x{c:02X}", f.name());
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// §2.6 worked examples

#[test]
fn s2_6_truncated_small_term() {
    // 256*1 + 2^-6*1 (same block) -> 0x1.0000p+8 = 256.
    chain_case(&Preset::ada(), E4, E4, &[(256.0, 1.0), (p2(-6), 1.0)], 0, 0x4380_0000, "256 + 2^-6");
}

#[test]
fn s2_6_kept_small_term() {
    // 256*1 + 2^-5*1 -> 0x1.0008p+8 = 256 + 2^-5: 2^-5 / 2^-15 (fp32 ulp at 256) = 0x400.
    chain_case(&Preset::ada(), E4, E4, &[(256.0, 1.0), (p2(-5), 1.0)], 0, 0x4380_0400, "256 + 2^-5");
}

#[test]
fn s2_6_truncation_toward_zero() {
    // 256*1 - 2^-6*1 -> 0x1.0000p+8 (toward zero, not down).
    chain_case(&Preset::ada(), E4, E4, &[(256.0, 1.0), (-p2(-6), 1.0)], 0, 0x4380_0000, "256 - 2^-6");
}

#[test]
fn s2_6_product_exponent_grid() {
    // 448*448 + 1*1 -> 0x1.8800p+17 = 200704: exponent field 144 = 0x90, fraction 0.53125 * 2^23 = 0x440000.
    chain_case(&Preset::ada(), E4, E4, &[(448.0, 448.0), (1.0, 1.0)], 0, 0x4844_0000, "448*448 + 1");
}

#[test]
fn s2_6_c_large() {
    // c = 2^20, product 1*1 -> 0x1.0000p+20.
    chain_case(&Preset::ada(), E4, E4, &[(1.0, 1.0)], 0x4980_0000, 0x4980_0000, "2^20 + 1");
}

#[test]
fn s2_6_b200_late_c_tie_to_even() {
    // b200: c = 2^20, product 2^-4 -> 0x1.0000p+20 (RN32 tie to even of 2^20 + 2^-4).
    let b200 = Preset::b200_mma_sync();
    chain_case(&b200, E4, E4, &[(p2(-4), 1.0)], 0x4980_0000, 0x4980_0000, "2^20 + 2^-4 (2^-4 x 1)");
    chain_case(&b200, E4, E4, &[(p2(-2), p2(-2))], 0x4980_0000, 0x4980_0000, "2^20 + 2^-4 (2^-2 x 2^-2)");
}

#[test]
fn s2_6_ada_vs_hopper_block_size() {
    // 16 x (2^-6 * 1) at k = 0..15, then 256 * 1 at k = 16, K = 32.
    // ada: 0x1.004p+8 = 256.25 (0.25 / 2^-15 = 0x2000); hopper: 0x1.000p+8.
    let mut pairs = vec![(p2(-6), 1.0); 16];
    pairs.push((256.0, 1.0));
    pairs.resize(32, (0.0, 0.0));
    chain_case(&Preset::ada(), E4, E4, &pairs, 0, 0x4380_2000, "16 x 2^-6 then 256 (ada)");
    chain_case(&Preset::hopper(), E4, E4, &pairs, 0, 0x4380_0000, "16 x 2^-6 then 256 (hopper)");
}

#[test]
fn s2_6_subnormal_operand_exponent() {
    // 2^-9 * 2^-9 + 1 * 2^-6 (e4m3; 2^-9 is subnormal, e = -6) -> 0x1.001p-6: field 121 = 0x79, fraction 0x800.
    chain_case(&Preset::ada(), E4, E4, &[(p2(-9), p2(-9)), (1.0, p2(-6))], 0, 0x3C80_0800, "2^-18 + 2^-6");
}

#[test]
fn s2_6_e5m2_x_e4m3_hardware_value() {
    // scaled_mm, e5m2 A, e4m3 B: a = [2^-9, 2^-12], b = [1, 2^-9] -> 2^-9 + 2^-21 = 0x1.001p-9 (RTX 4060).
    let want = 0x3B00_0800u32; // field 118 = 0x76, fraction 2^-12 * 2^23 = 0x800
    chain_case(&Preset::ada(), E5, E4, &[(p2(-9), 1.0), (p2(-12), p2(-9))], 0, want, "e5m2 x e4m3");
    // The same through the GEMM (M = N = 1; K = 2 and K = 16 with zero padding; fast and slow; fp32 out).
    let a = [code(E5, p2(-9)), code(E5, p2(-12))];
    let b = [code(E4, 1.0), code(E4, p2(-9))];
    for k in [2usize, 16] {
        let mut ak = a.to_vec();
        let mut bk = b.to_vec();
        ak.resize(k, 0);
        bk.resize(k, 0);
        for fast in [true, false] {
            let ops = Operands { fa: E5, fb: E4, a: &ak, b: &bk, m: 1, n: 1, k };
            let out = gemm(&Preset::ada(), &ops, fast, SplitK::NONE, &epi(OutDtype::Float32)).unwrap();
            assert_eq!(out.bits, vec![want], "gemm K = {k}, fast = {fast}");
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// §2.5 edge cases of the block step

/// A block with no nonzero products (one zero pair, and a whole block of zeros) from the accumulator c.
fn no_products(preset: &Preset, c: u32, want: u32, what: &str) {
    for k in [1usize, 16, 33] {
        let z = vec![0u8; k];
        chain_codes(preset, E4, E4, &z, &z, c, want, &format!("{what}, K = {k} zeros"));
    }
}

#[test]
fn s2_5_c_subnormal_examples() {
    let ada = Preset::ada();
    no_products(&ada, 0x0000_0200, 0x0000_0000, "c = 2^-140 -> +0");
    no_products(&ada, 0x0000_0001, 0x0000_0000, "c = 2^-149 -> +0");
    no_products(&ada, 0x0000_0C00, 0x0000_0C00, "c = 3 * 2^-139 unchanged");
    no_products(&ada, 0x0008_0000, 0x0008_0000, "c = 2^-130 unchanged");
    no_products(&ada, 0x0001_16C2, 0x0001_1400, "c = 1e-40 (0x000116C2) -> 0x00011400");
    // The same on hopper (same frac, frac_out, min_exp; the block size does not matter without products).
    let hopper = Preset::hopper();
    no_products(&hopper, 0x0000_0200, 0x0000_0000, "hopper c = 2^-140 -> +0");
    no_products(&hopper, 0x0001_16C2, 0x0001_1400, "hopper c = 1e-40 -> 0x00011400");
}

#[test]
fn s2_5_tiny_negative_c_gives_plus_zero() {
    let ada = Preset::ada();
    no_products(&ada, 0x8000_03FF, 0x0000_0000, "c = -(2^-139 - 2^-149) -> +0");
    no_products(&ada, 0x8000_0200, 0x0000_0000, "c = -2^-140 -> +0");
    no_products(&ada, 0x8000_0010, 0x0000_0000, "c = -2^-145 -> +0");
}

#[test]
fn s2_5_zero_rules() {
    let ada = Preset::ada();
    // All products zero, c = +-0 -> +0; c = -0 behaves as 0.
    no_products(&ada, 0x0000_0000, 0x0000_0000, "c = +0");
    no_products(&ada, 0x8000_0000, 0x0000_0000, "c = -0");
    // Zero operands of either sign times anything: excluded, contribute 0.
    let a = [0x80u8, 0x00, code(E4, 3.0)];
    let b = [code(E4, 448.0), 0x80, 0x80];
    chain_codes(&ada, E4, E4, &a, &b, 0x8000_0000, 0x0000_0000, "signed zero operands, c = -0");
    // Exact cancellation x + (-x) -> +0, also with c = -0 and on hopper.
    for preset in [Preset::ada(), Preset::hopper()] {
        for c in [0u32, 0x8000_0000] {
            chain_case(&preset, E4, E4, &[(3.0, 5.0), (-3.0, 5.0)], c, 0, "x + (-x)");
            chain_case(&preset, E5, E4, &[(-1.5, 2.0), (3.0, 1.0)], c, 0, "x + (-x) (e5m2 x e4m3)");
        }
    }
    // Cancellation against c: c = 15 with the product -15 -> +0.
    chain_case(&ada, E4, E4, &[(-15.0, 1.0)], 0x4170_0000, 0, "c = 15, product -15");
}

#[test]
fn s2_5_c_more_than_14_bits_truncated_at_first_block() {
    // Derived from §2.2 steps 3-7: c = 1 + 2^-23 (0x3F800001) with no products: E = 0, grid 2^-13, so c
    // truncates to 1.0 (0x3F800000); c = -(1 + 2^-13 + 2^-14) (0xBF800600) -> -(1 + 2^-13) (0xBF800400).
    no_products(&Preset::ada(), 0x3F80_0001, 0x3F80_0000, "c = 1 + 2^-23");
    no_products(&Preset::ada(), 0xBF80_0600, 0xBF80_0400, "c = -(1 + 2^-13 + 2^-14)");
}

#[test]
fn s2_5_c_much_smaller_than_products_truncated() {
    // Derived from §2.2 step 5: c = 2^-20 next to the product 1 (grid 2^-13) is truncated away.
    chain_case(&Preset::ada(), E4, E4, &[(1.0, 1.0)], 0x3580_0000, 0x3F80_0000, "1 + 2^-20");
    // ... and toward zero when negative: 1 - 2^-20 -> 1.
    chain_case(&Preset::ada(), E4, E4, &[(1.0, 1.0)], 0xB580_0000, 0x3F80_0000, "1 - 2^-20");
}

#[test]
fn s2_5_non_finite_c_and_operands() {
    let one_e5 = code(E5, 1.0);
    let one_e4 = code(E4, 1.0);
    for preset in [Preset::ada(), Preset::hopper(), Preset::b200_mma_sync()] {
        // c = +Inf with a -Inf product -> NaN (canonical).
        chain_codes(&preset, E5, E4, &[0xFC], &[one_e4], 0x7F80_0000, 0x7FFF_FFFF, "+Inf c, -Inf product");
        // c = +-Inf propagates.
        chain_codes(&preset, E4, E4, &[one_e4], &[one_e4], 0x7F80_0000, 0x7F80_0000, "+Inf c");
        chain_codes(&preset, E4, E4, &[one_e4], &[one_e4], 0xFF80_0000, 0xFF80_0000, "-Inf c");
        // ... across later blocks too (K = 40 > one block of either size).
        let a = vec![one_e4; 40];
        chain_codes(&preset, E4, E4, &a, &a, 0xFF80_0000, 0xFF80_0000, "-Inf c, K = 40");
        // c = NaN (any payload, either sign) -> canonical NaN.
        for c in [0x7FC0_0000u32, 0xFFC0_0000, 0x7F80_0001, 0xFFFF_FFFF] {
            chain_codes(&preset, E4, E4, &[one_e4], &[one_e4], c, 0x7FFF_FFFF, "NaN c");
        }
        // NaN operands: e4m3 0x7F / 0xFF, e5m2 0x7D..0x7F / 0xFD..0xFF.
        for n in [0x7Fu8, 0xFF] {
            chain_codes(&preset, E4, E4, &[n], &[one_e4], 0, 0x7FFF_FFFF, "e4m3 NaN operand");
            chain_codes(&preset, E4, E4, &[one_e4], &[n], 0, 0x7FFF_FFFF, "e4m3 NaN operand (b)");
            chain_codes(&preset, E4, E4, &[n], &[0x00], 0, 0x7FFF_FFFF, "e4m3 NaN x 0");
        }
        for n in [0x7Du8, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF] {
            chain_codes(&preset, E5, E5, &[n], &[one_e5], 0, 0x7FFF_FFFF, "e5m2 NaN operand");
        }
        // Inf x 0 -> NaN.
        chain_codes(&preset, E5, E4, &[0x7C], &[0x00], 0, 0x7FFF_FFFF, "Inf x 0");
        chain_codes(&preset, E4, E5, &[0x80], &[0xFC], 0, 0x7FFF_FFFF, "-0 x -Inf");
        // Inf x finite: the Inf of the product's sign; Inf x Inf.
        chain_codes(&preset, E5, E4, &[0xFC], &[one_e4 | 0x80], 0, 0x7F80_0000, "-Inf x -1");
        chain_codes(&preset, E5, E5, &[0x7C], &[0xFC], 0, 0xFF80_0000, "Inf x -Inf");
        // Infinite products of both signs -> NaN, even in different blocks.
        let mut a = vec![0u8; 40];
        let b = vec![one_e5; 40];
        a[0] = 0x7C;
        a[39] = 0xFC;
        chain_codes(&preset, E5, E5, &a, &b, 0, 0x7FFF_FFFF, "+Inf and -Inf products");
    }
}

#[test]
fn s2_3_b200_minus_zero_c() {
    // §2.3 step 7: an all-zero block gives d = +0 and the result +0 + c, which is +0 when c = -0.
    let b200 = Preset::b200_mma_sync();
    no_products(&b200, 0x8000_0000, 0x0000_0000, "b200 c = -0");
    // With nonzero products the result is RN32(d + c): c = 2^-149 is kept next to a zero block.
    no_products(&b200, 0x0000_0001, 0x0000_0001, "b200 c = 2^-149 (no truncation of c)");
}

// ---------------------------------------------------------------------------------------------------------
// §2.7 dot: K = 0 returns c unchanged

#[test]
fn s2_7_k0_returns_c_unchanged() {
    for preset in [Preset::ada(), Preset::hopper(), Preset::b200_mma_sync()] {
        for c in [0x8000_0000u32, 0x0000_0001, 0x0001_16C2, 0x3F80_0001, 0x8000_03FF, 0x7F80_0000, 0x7F7F_FFFF] {
            let got = dot(&preset, E4, E5, &[], &[], Some(f32::from_bits(c))).unwrap().to_bits();
            assert_eq!(got, c, "{}: K = 0, c = 0x{c:08X}", preset.name());
            let o = oracle::chain(&params(&preset), Fp8::E4m3, Fp8::E5m2, &[], &[], c);
            assert_eq!(o, c, "oracle: K = 0, c = 0x{c:08X}");
        }
        // c = None starts from +0.
        assert_eq!(dot(&preset, E4, E4, &[], &[], None).unwrap().to_bits(), 0);
        // A NaN c is returned as the canonical NaN.
        assert_eq!(dot(&preset, E4, E4, &[], &[], Some(f32::from_bits(0xFFC0_0001))).unwrap().to_bits(), 0x7FFF_FFFF);
    }
    // K >= 1 applies at least one block: -0 becomes +0.
    assert_eq!(dot(&Preset::ada(), E4, E4, &[0], &[0], Some(-0.0)).unwrap().to_bits(), 0);
}

#[test]
fn s2_7_mismatched_k_is_refused() {
    assert!(dot(&Preset::ada(), E4, E4, &[0, 0], &[0], None).is_err());
}
