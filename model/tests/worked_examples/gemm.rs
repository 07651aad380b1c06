//! §3 and §4 of docs/reference.md: split-K worked examples, non-finite inputs in the GEMM paths and the
//! epilogue.

use super::*;
use mmaemu_model::{accumulate, gemm, Epilogue, Operands, OutDtype, Scheme, SplitK};

// ---------------------------------------------------------------------------------------------------------
// §3.2 / §3.3 split-K worked examples

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
