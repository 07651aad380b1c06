//! The worked examples of docs/reference.md as unit tests. Expected bits are literal constants taken from the
//! spec text (hex floats and byte values written there, converted to fp32 bits by hand); where a test
//! states a value the spec gives only as a rule, the comment shows the hand derivation. Inputs are built
//! with `Format::from_f32_saturating`, and every input code that is meant to be an exact value is checked
//! against the independent decoder of `tests/oracle`. The chain-level examples are also checked against
//! the oracle, so they validate it too.

use mmaemu_testkit::oracle;

use mmaemu_model::{accumulate, dot, gemm, Chain, Epilogue, Format, Operands, OutDtype, Preset, Scheme, SplitK};
use oracle::{Fp8, Params};

const E4: Format = Format::E4m3;
const E5: Format = Format::E5m2;

fn ofmt(f: Format) -> Fp8 {
    match f {
        Format::E4m3 => Fp8::E4m3,
        Format::E5m2 => Fp8::E5m2,
    }
}

/// The code of the exact value x in format f (checked with the oracle's own decoder).
fn code(f: Format, x: f64) -> u8 {
    let c = f.from_f32_saturating(x as f32);
    assert_eq!(oracle::fp8_f64(ofmt(f), c), x, "{x} is not an exact {} value (code 0x{c:02X})", f.name());
    c
}

fn p2(e: i32) -> f64 {
    2f64.powi(e)
}

fn params(preset: &Preset) -> Params {
    match preset.name() {
        "ada" => Params::ADA,
        "hopper" => Params::HOPPER,
        "b200_mma_sync" => Params::B200,
        n => panic!("no oracle parameters for {n}"),
    }
}

/// Run a chain given as (a value, b value) pairs with c, through `Chain::run`, `dot` and the oracle, and
/// check all three against the spec's bits.
fn chain_case(preset: &Preset, fa: Format, fb: Format, pairs: &[(f64, f64)], c: u32, want: u32, what: &str) {
    let a: Vec<u8> = pairs.iter().map(|p| code(fa, p.0)).collect();
    let b: Vec<u8> = pairs.iter().map(|p| code(fb, p.1)).collect();
    chain_codes(preset, fa, fb, &a, &b, c, want, what);
}

#[allow(clippy::too_many_arguments)]
fn chain_codes(preset: &Preset, fa: Format, fb: Format, a: &[u8], b: &[u8], c: u32, want: u32, what: &str) {
    let got = Chain::new(preset, fa, fb).run(a, b, f32::from_bits(c)).to_bits();
    assert_eq!(got, want, "{what} [{}]: Chain::run gave 0x{got:08X}, spec 0x{want:08X}", preset.name());
    let got = dot(preset, fa, fb, a, b, Some(f32::from_bits(c))).unwrap().to_bits();
    assert_eq!(got, want, "{what} [{}]: dot gave 0x{got:08X}, spec 0x{want:08X}", preset.name());
    let o = oracle::chain(&params(preset), ofmt(fa), ofmt(fb), a, b, c);
    assert_eq!(o, want, "{what} [{}]: the ORACLE gave 0x{o:08X}, spec 0x{want:08X}", preset.name());
}

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

// ---------------------------------------------------------------------------------------------------------
// §3.2 / §3.3 split-K worked examples

fn epi(out: OutDtype) -> Epilogue {
    Epilogue { scale_a: 1.0, scale_b: 1.0, scale_result: None, out }
}

/// The fp32 accumulator and the fp32 gemm output of the 1x1 GEMM with a = b.
fn acc_1x1(preset: &Preset, a: &[u8], fast: bool, split: SplitK) -> u32 {
    let ops = Operands { fa: E4, fb: E4, a, b: a, m: 1, n: 1, k: a.len() };
    let acc = accumulate(preset, &ops, fast, split).unwrap()[0].to_bits();
    let out = gemm(preset, &ops, fast, split, &epi(OutDtype::Float32)).unwrap();
    assert_eq!(out.bits, vec![acc], "gemm fp32 output with scales 1 equals the accumulator");
    acc
}

#[test]
fn s3_2_ada_serial_split_example() {
    // K = 128, a = b, a[0] = 1, a[64..79] = 2^-9 (e4m3), fast, ada: unsplit -> 1.0; S = 2 serial -> 0x1.0004p+0
    // (= 1 + 2^-14: fraction 2^-14 * 2^23 = 0x200).
    let mut a = vec![0u8; 128];
    a[0] = code(E4, 1.0);
    for x in &mut a[64..80] {
        *x = code(E4, p2(-9));
    }
    let ada = Preset::ada();
    assert_eq!(acc_1x1(&ada, &a, true, SplitK::NONE), 0x3F80_0000);
    assert_eq!(acc_1x1(&ada, &a, true, SplitK::new(2, Scheme::Serial).unwrap()), 0x3F80_0200);
    // Derived: S = 2 pairwise is p_1 + p_0, the same single fp32 addition.
    assert_eq!(acc_1x1(&ada, &a, true, SplitK::new(2, Scheme::Pairwise).unwrap()), 0x3F80_0200);
}

#[test]
fn s3_3_hopper_contiguous_split_example() {
    // K = 256, a = b, a[0] = 1, a[128..143] = 2^-9, fast, hopper: unsplit -> 1.0; S = 2 contiguous -> 0x1.0004p+0.
    let mut a = vec![0u8; 256];
    a[0] = code(E4, 1.0);
    for x in &mut a[128..144] {
        *x = code(E4, p2(-9));
    }
    let hopper = Preset::hopper();
    assert_eq!(acc_1x1(&hopper, &a, true, SplitK::NONE), 0x3F80_0000);
    assert_eq!(acc_1x1(&hopper, &a, true, SplitK::new(2, Scheme::Contiguous).unwrap()), 0x3F80_0200);
    // Derived from §3.1 / §3.3: slow accumulation restarts every 128-element tile, so the small terms are
    // a chain of their own and survive in both the unsplit and the split slow plans.
    assert_eq!(acc_1x1(&hopper, &a, false, SplitK::NONE), 0x3F80_0200);
    assert_eq!(acc_1x1(&hopper, &a, false, SplitK::new(2, Scheme::Contiguous).unwrap()), 0x3F80_0200);
}

// ---------------------------------------------------------------------------------------------------------
// §3.7 non-finite FP8 inputs in the GEMM paths

/// The fp32 accumulator [m, n] for A [m, k] (format fa) and B^T [n, k] (format fb).
#[allow(clippy::too_many_arguments)]
fn acc_bits(
    preset: &Preset,
    fa: Format,
    fb: Format,
    a: &[u8],
    b: &[u8],
    m: usize,
    n: usize,
    fast: bool,
    split: SplitK,
) -> Vec<u32> {
    let k = a.len() / m;
    let ops = Operands { fa, fb, a, b, m, n, k };
    accumulate(preset, &ops, fast, split).unwrap().iter().map(|x| x.to_bits()).collect()
}

#[test]
fn s3_7_non_finite_rules() {
    let k = 128;
    let one4 = code(E4, 1.0);
    let one5 = code(E5, 1.0);
    // Rows of A (e5m2):
    //  0: +Inf at k = 0, ones elsewhere        -> +Inf against finite nonzero B rows
    //  1: NaN at k = 5, zeros elsewhere        -> NaN even against a zero B row
    //  2: -Inf at k = 3, ones elsewhere        -> -Inf
    //  3: +Inf at k = 0 and -Inf at k = 127    -> NaN (both signs)
    //  4: ones                                 -> finite (untouched) against finite rows
    let m = 5;
    let mut a = vec![one5; m * k];
    a[0] = 0x7C;
    for x in &mut a[k..2 * k] {
        *x = 0;
    }
    a[k + 5] = 0x7E;
    a[2 * k + 3] = 0xFC;
    a[3 * k] = 0x7C;
    a[3 * k + 127] = 0xFC;
    // Rows of B^T (e4m3): 0: ones; 1: zeros; 2: ones but 0 at k = 0; 3: ones with a NaN (0x7F) at k = 100.
    let n = 4;
    let mut b = vec![one4; n * k];
    for x in &mut b[k..2 * k] {
        *x = 0;
    }
    b[2 * k] = 0;
    b[3 * k + 100] = 0x7F;
    const NAN: u32 = 0x7FFF_FFFF;
    const PINF: u32 = 0x7F80_0000;
    const NINF: u32 = 0xFF80_0000;
    let want: [[u32; 4]; 5] = [
        [PINF, NAN, NAN, NAN],              // +Inf x 1; +Inf x 0; +Inf x 0 at k = 0; NaN in B row
        [NAN, NAN, NAN, NAN],               // NaN code in the A row, even against zeros
        [NINF, NAN, NINF, NAN],             // -Inf x 0 in B row 1; B row 2 is 1 at k = 3
        [NAN, NAN, NAN, NAN],               // infinite products of both signs (or Inf x 0)
        [0x4300_0000, 0, 0x42FE_0000, NAN], // finite: 128, 0, 127 untouched; NaN in the B row poisons
    ];
    let ada = Preset::ada();
    let splits = [
        (true, SplitK::NONE),
        (false, SplitK::NONE),
        (true, SplitK::new(2, Scheme::Serial).unwrap()),
        (false, SplitK::new(3, Scheme::Pairwise).unwrap()),
    ];
    for (fast, split) in splits {
        let got = acc_bits(&ada, E5, E4, &a, &b, m, n, fast, split);
        for i in 0..m {
            for j in 0..n {
                assert_eq!(
                    got[i * n + j],
                    want[i][j],
                    "ada fast = {fast} split {split}: output ({i}, {j}) = 0x{:08X}, want 0x{:08X}",
                    got[i * n + j],
                    want[i][j]
                );
            }
        }
    }
    let hopper = Preset::hopper();
    for (fast, split) in [(true, SplitK::NONE), (false, SplitK::new(2, Scheme::Contiguous).unwrap())] {
        let got = acc_bits(&hopper, E5, E4, &a, &b, m, n, fast, split);
        for i in 0..m {
            for j in 0..n {
                assert_eq!(got[i * n + j], want[i][j], "hopper fast = {fast} split {split}: ({i}, {j})");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// §4 epilogue

fn apply(e: &Epilogue, acc: f32) -> u32 {
    e.apply(&[acc])[0]
}

#[test]
fn s4_fma_rule_and_zero_signs() {
    let f = Epilogue { scale_a: -1.0, scale_b: 1.0, scale_result: None, out: OutDtype::Float32 };
    // An exactly zero product gives +0 (acc = +-0 with alpha < 0, or alpha = +-0).
    assert_eq!(apply(&f, 0.0), 0x0000_0000);
    assert_eq!(apply(&f, -0.0), 0x0000_0000);
    let z = Epilogue { scale_a: -0.0, scale_b: 1.0, ..f };
    assert_eq!(apply(&z, 5.0), 0x0000_0000);
    // A nonzero product that underflows keeps its sign: -2^-151 -> -0.
    let tiny = Epilogue { scale_a: -(2f32.powi(-126)), scale_b: 2f32.powi(-20), ..f };
    assert_eq!(apply(&tiny, 2f32.powi(-5)), 0x8000_0000);
    // Inf * 0 -> NaN (canonical); overflow -> +-Inf.
    let inf = Epilogue { scale_a: f32::INFINITY, scale_b: 1.0, ..f };
    assert_eq!(apply(&inf, 0.0), 0x7FFF_FFFF);
    let big = Epilogue { scale_a: 2f32.powi(100), scale_b: 1.0, ..f };
    assert_eq!(apply(&big, 2f32.powi(30)), 0x7F80_0000);
    assert_eq!(apply(&big, -(2f32.powi(30))), 0xFF80_0000);
    // alpha = RN32(scale_a * scale_b) overflowing: finite nonzero -> +-Inf, zero -> NaN.
    let ovf = Epilogue { scale_a: 2f32.powi(100), scale_b: 2f32.powi(100), ..f };
    assert_eq!(apply(&ovf, 1.0), 0x7F80_0000);
    assert_eq!(apply(&ovf, -1.0), 0xFF80_0000);
    assert_eq!(apply(&ovf, 0.0), 0x7FFF_FFFF);
    // NaN in -> canonical NaN out, every dtype.
    for (out, nan) in [
        (OutDtype::Float32, 0x7FFF_FFFFu32),
        (OutDtype::BFloat16, 0x7FFF),
        (OutDtype::Float16, 0x7FFF),
        (OutDtype::E4m3, 0x7F),
        (OutDtype::E5m2, 0x7F),
    ] {
        assert_eq!(apply(&epi(out), f32::from_bits(0xFFC0_1234)), nan, "{out}");
    }
}

#[test]
fn s4_fma_single_rounding() {
    // Derived from §4 step 2: y = RN32(acc * alpha) rounded once, ties to even, subnormals kept.
    // acc = alpha = 1 + 2^-23: exact 1 + 2^-22 + 2^-46 -> 1 + 2^-22 (0x3F800002).
    // alpha = 3 * 2^-149 (0x00000003), acc = 0.5: exact 1.5 * 2^-149, a tie -> even -> 2^-148 (0x00000002).
    let f = |sa: f32, acc: f32| {
        apply(&Epilogue { scale_a: sa, scale_b: 1.0, scale_result: None, out: OutDtype::Float32 }, acc)
    };
    assert_eq!(f(f32::from_bits(0x3F80_0001), f32::from_bits(0x3F80_0001)), 0x3F80_0002);
    assert_eq!(f(f32::from_bits(0x0000_0003), 0.5), 0x0000_0002);
}

#[test]
fn s4_sixteen_bit_examples() {
    let h = epi(OutDtype::Float16);
    assert_eq!(apply(&h, 65520.0), 0x7C00);
    assert_eq!(apply(&h, 65519.0), 0x7BFF);
    assert_eq!(apply(&h, 70000.0), 0x7C00);
    assert_eq!(apply(&h, -1e-8), 0x8000);
    let bf = epi(OutDtype::BFloat16);
    assert_eq!(apply(&bf, 3.4e38), 0x7F80);
}

#[test]
fn s4_sixteen_bit_double_rounding() {
    // Derived from §4 step 3 (exact -> fp32 -> 16-bit). alpha = 1 - 2^-24 (0x3F7FFFFF).
    // fp16: acc = 1 + 2^-11 + 2^-23; exact = 1 + 2^-11 + 2^-24 - 2^-35 - 2^-47 -> RN32 1 + 2^-11, an fp16
    // tie -> even -> 1.0 (0x3C00); a single rounding would give 0x3C01.
    let alpha = f32::from_bits(0x3F7F_FFFF);
    let h = Epilogue { scale_a: alpha, scale_b: 1.0, scale_result: None, out: OutDtype::Float16 };
    assert_eq!(apply(&h, f32::from_bits(0x3F80_1001)), 0x3C00);
    // bf16: acc = 1 + 2^-8 + 2^-23 -> exact 1 + 2^-8 + 2^-24 - ... -> RN32 1 + 2^-8, a bf16 tie -> 1.0 (0x3F80).
    let bf = Epilogue { out: OutDtype::BFloat16, ..h };
    assert_eq!(apply(&bf, f32::from_bits(0x3F80_8001)), 0x3F80);
}

#[test]
fn s4_fp8_spot_values() {
    let e4 = epi(OutDtype::E4m3);
    for x in [448.0f32, 464.0, 480.0, 1e30, f32::INFINITY] {
        assert_eq!(apply(&e4, x), 0x7E, "e4m3 {x}");
        assert_eq!(E4.from_f32_saturating(x), 0x7E, "e4m3 conversion {x}");
    }
    assert_eq!(apply(&e4, f32::NEG_INFINITY), 0xFE);
    assert_eq!(apply(&e4, 2f32.powi(-9)), 0x01);
    assert_eq!(apply(&e4, 2f32.powi(-10)), 0x00);
    assert_eq!(apply(&e4, 3.0 * 2f32.powi(-10)), 0x02);
    assert_eq!(apply(&e4, 15.0), 0x57);
    assert_eq!(apply(&e4, -0.1), 0x9D);
    // -0 reaches the conversion only through a negative scale_result (y = +0 otherwise).
    assert_eq!(E4.from_f32_saturating(-0.0), 0x80);
    assert_eq!(apply(&epi(OutDtype::E4m3), -0.0), 0x00);
    let e5 = epi(OutDtype::E5m2);
    assert_eq!(apply(&e5, 448.0), 0x5F);
    assert_eq!(apply(&e5, 480.0), 0x60);
    assert_eq!(apply(&e5, 1e30), 0x7B);
    assert_eq!(apply(&e5, f32::INFINITY), 0x7B);
    assert_eq!(apply(&e5, f32::NEG_INFINITY), 0xFB);
    // A value that rounds to zero keeps its sign (-tiny -> 0x80).
    assert_eq!(apply(&e4, -(2f32.powi(-12))), 0x80);
}

#[test]
fn s4_saturation_examples() {
    let acc = [8192.0f32, -8192.0, 240.0, 480.0, 448.0, 464.0, f32::INFINITY, f32::NEG_INFINITY, 1e30];
    let e4 = epi(OutDtype::E4m3);
    assert_eq!(e4.apply(&acc), vec![0x7E, 0xFE, 0x77, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7E]);
    let r = epi(OutDtype::E5m2).apply(&acc);
    assert_eq!(&r[..2], &[0x70, 0xF0]);
    assert_eq!(&r[6..], &[0x7B, 0xFB, 0x7B]);
    // scale_result before saturation: 300, 3, -1000 with 2 -> 448, 6, -448; 1000 with 0.25 -> 256.
    let s2 = Epilogue { scale_result: Some(2.0), ..e4 };
    let vals: Vec<f64> =
        s2.apply(&[300.0, 3.0, -1000.0]).iter().map(|&c| oracle::fp8_f64(Fp8::E4m3, c as u8)).collect();
    assert_eq!(vals, vec![448.0, 6.0, -448.0]);
    let q = Epilogue { scale_result: Some(0.25), ..e4 };
    assert_eq!(oracle::fp8_f64(Fp8::E4m3, q.apply(&[1000.0])[0] as u8), 256.0);
    // scale_result is ignored for non-FP8 outputs.
    for out in [OutDtype::Float32, OutDtype::BFloat16, OutDtype::Float16] {
        let with = Epilogue { scale_result: Some(2.0), ..epi(out) };
        assert_eq!(with.apply(&[3.0, -7.5]), epi(out).apply(&[3.0, -7.5]), "{out}");
    }
}

#[test]
fn s4_extra_consequences() {
    // A negative scale_result turns +0 into -0 for FP8 outputs (0x80).
    let neg = Epilogue { scale_a: 1.0, scale_b: 1.0, scale_result: Some(-1.0), out: OutDtype::E4m3 };
    assert_eq!(apply(&neg, 0.0), 0x80);
    assert_eq!(apply(&Epilogue { out: OutDtype::E5m2, ..neg }, 0.0), 0x80);
    // A NaN scale_result makes every FP8 output 0x7F.
    for out in [OutDtype::E4m3, OutDtype::E5m2] {
        let nan = Epilogue { scale_a: 1.0, scale_b: 1.0, scale_result: Some(f32::NAN), out };
        assert_eq!(nan.apply(&[0.0, 1.0, -448.0, f32::INFINITY]), vec![0x7F; 4], "{out}");
    }
}

#[test]
fn s4_k0_skips_the_epilogue() {
    // K = 0 gives +0 for every scale, even NaN / Inf scales, and every out dtype.
    for out in [OutDtype::Float32, OutDtype::BFloat16, OutDtype::Float16, OutDtype::E4m3, OutDtype::E5m2] {
        for (sa, sr) in [(f32::NAN, None), (f32::INFINITY, Some(-2.0)), (2.0, Some(f32::NAN))] {
            let e = Epilogue { scale_a: sa, scale_b: 1.0, scale_result: sr, out };
            let ops = Operands { fa: E4, fb: E4, a: &[], b: &[], m: 2, n: 3, k: 0 };
            for fast in [true, false] {
                let o = gemm(&Preset::ada(), &ops, fast, SplitK::NONE, &e).unwrap();
                assert_eq!(o.bits, vec![0; 6], "{out} scale {sa} sr {sr:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// §9.6 hardware-confirmed end-to-end facts (RTX 4060, profile ada)

#[test]
fn s9_6_fp8_outputs() {
    let (m, n, k) = (16usize, 16usize, 32usize);
    let b = vec![code(E4, 16.0); n * k];
    let cases: [(Format, OutDtype, [u32; 5]); 3] = [
        (E4, OutDtype::E4m3, [0x7E, 0xFE, 0x77, 0x7E, 0x7E]),
        (E5, OutDtype::E4m3, [0x7E, 0xFE, 0x78, 0x7E, 0x7E]),
        (E5, OutDtype::E5m2, [0x70, 0xF0, 0x5C, 0x60, 0x5F]),
    ];
    for (fa, out, want) in cases {
        // A 16x32 all 16.0; row 1 -16; row 2: 15 at k = 0 else 0; row 3: 30 at k = 0; row 4: 29 (e4m3) or
        // 28 (e5m2) at k = 0. Values are converted to A's format as the caller's cast does (RNE).
        let cv = |x: f32| fa.from_f32_saturating(x);
        let mut a = vec![cv(16.0); m * k];
        for x in &mut a[k..2 * k] {
            *x = cv(-16.0);
        }
        for (row, v) in [(2usize, 15.0f32), (3, 30.0), (4, if fa == E4 { 29.0 } else { 28.0 })] {
            for x in &mut a[row * k..(row + 1) * k] {
                *x = 0;
            }
            a[row * k] = cv(v);
        }
        let ops = Operands { fa, fb: E4, a: &a, b: &b, m, n, k };
        let o = gemm(&Preset::ada(), &ops, true, SplitK::NONE, &epi(out)).unwrap();
        let col0: Vec<u32> = (0..5).map(|i| o.bits[i * n]).collect();
        assert_eq!(col0, want.to_vec(), "A {} -> out {out}", fa.name());
    }
}

#[test]
fn s9_6_fp8_specials() {
    let (m, n, k) = (16usize, 16usize, 32usize);
    let mut a = vec![0u8; m * k];
    a[0] = 0x7C; // +Inf
    a[k] = 0x7E; // NaN
    a[2 * k] = 0xFC; // -Inf
    let b = vec![code(E4, 1.0); n * k];
    let ops = Operands { fa: E5, fb: E4, a: &a, b: &b, m, n, k };
    for (out, want) in [
        (OutDtype::E4m3, [0x7Eu32, 0x7F, 0xFE]),
        (OutDtype::E5m2, [0x7B, 0x7F, 0xFB]),
        (OutDtype::Float32, [0x7F80_0000, 0x7FFF_FFFF, 0xFF80_0000]),
    ] {
        let o = gemm(&Preset::ada(), &ops, true, SplitK::NONE, &epi(out)).unwrap();
        let col0: Vec<u32> = (0..3).map(|i| o.bits[i * n]).collect();
        assert_eq!(col0, want.to_vec(), "out {out}");
        // The remaining rows are all-zero: +0.
        assert!((3..m).all(|i| o.bits[i * n] == 0), "out {out}: zero rows");
    }
}
