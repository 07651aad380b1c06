//! The input generator `mmaemu-inputs/1` against its written definition: rounding, the data classes,
//! and the regeneration of operands shipped by reference.

use super::*;

fn spec(data: DataClass) -> InputSpec {
    InputSpec { generator: GENERATOR_V1.into(), seed: 1, stream: 0, data }
}

#[test]
fn rounding_matches_known_codes() {
    let f = Fp8::E4m3;
    assert_eq!(f.round(448.0), 0x7E);
    assert_eq!(f.round(1e30), 0x7E);
    assert_eq!(f.round(-1e30), 0xFE);
    assert_eq!(f.round(2f64.powi(-9)), 0x01);
    assert_eq!(f.round(2f64.powi(-10)), 0x00);
    assert_eq!(f.round(3.0 * 2f64.powi(-10)), 0x02);
    assert_eq!(f.round(15.0), 0x57);
    assert_eq!(f.round(-0.1), 0x9D);
    assert_eq!(f.round(-0.0), 0x80);
    assert_eq!(f.round(1.0), 0x38);
    let g = Fp8::E5m2;
    assert_eq!(g.round(448.0), 0x5F);
    assert_eq!(g.round(480.0), 0x60);
    assert_eq!(g.round(1e30), 0x7B);
    assert_eq!(g.round(1.0), 0x3C);
    for c in 0..=f.max_code() {
        assert_eq!(f.round(f.magnitude(c)), c);
    }
    for c in 0..=g.max_code() {
        assert_eq!(g.round(g.magnitude(c)), c);
    }
}

#[test]
fn rounding_by_arithmetic_equals_rounding_by_search() {
    for f in [Fp8::E4m3, Fp8::E5m2] {
        let r = Rounder::new(f);
        let mut xs = vec![0.0, 1e-30, 1e30, 3.0e4, 1e5];
        for c in 0..f.max_code() as usize {
            let (v, w) = (r.values[c], r.values[c + 1]);
            let mid = (v + w) / 2.0;
            xs.extend([v, mid, w, (v + mid) / 2.0, (mid + w) / 2.0]);
            xs.extend([f64::from_bits(mid.to_bits() - 1), f64::from_bits(mid.to_bits() + 1)]);
        }
        let w = Words::new(&spec(DataClass::Gaussian { scale: 1.0 }), Operand::A);
        xs.extend((0..20_000).map(|i| w.gaussian(i) * 64.0));
        for x in xs {
            for y in [x, -x] {
                assert_eq!(r.round(y), r.round_by_search(y), "{f:?} {y:e}");
            }
        }
    }
}

#[test]
fn classes_have_their_shapes() {
    let a = generate(&spec(DataClass::AllCodes { finite: false }), Operand::A, "e4m3", 2, 256).unwrap();
    let mut seen = [false; 256];
    a[..256].iter().for_each(|&c| seen[c as usize] = true);
    assert!(seen.iter().all(|&s| s));
    let a = generate(&spec(DataClass::AllCodes { finite: true }), Operand::B, "e5m2", 4, 248).unwrap();
    assert!(a.iter().all(|&c| Fp8::E5m2.is_finite(c)));
    let a = generate(&spec(DataClass::Bits { finite: true }), Operand::A, "e4m3", 64, 64).unwrap();
    assert!(a.iter().all(|&c| Fp8::E4m3.is_finite(c)));
    let s = generate(&spec(DataClass::Special { scale: 1.0 }), Operand::A, "e5m2", 64, 32).unwrap();
    assert!(s.contains(&0x7C) && s.iter().any(|&c| c == 0xFC || c == 0x7F));
    let z = generate(&spec(DataClass::Subnormal { scale: 1.0 }), Operand::A, "e4m3", 16, 64).unwrap();
    assert!(z.iter().filter(|&&c| c & 0x78 == 0).count() > 16 * 64 / 2);
    assert!(generate(&spec(DataClass::Gaussian { scale: f64::NAN }), Operand::A, "e4m3", 1, 1).is_err());
    assert!(generate(&spec(DataClass::Gaussian { scale: 1.0 }), Operand::A, "bfloat16", 1, 1).is_err());
}

#[test]
fn gaussian_is_roughly_standard() {
    let w = Words::new(&spec(DataClass::Gaussian { scale: 1.0 }), Operand::A);
    let n = 20_000;
    let xs: Vec<f64> = (0..n).map(|i| w.gaussian(i)).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    assert!(mean.abs() < 0.05, "{mean}");
    assert!((var - 1.0).abs() < 0.05, "{var}");
}

#[test]
fn a_row_range_is_those_rows_of_the_whole_operand() {
    let classes = [
        DataClass::Gaussian { scale: 1.0 },
        DataClass::Bits { finite: false },
        DataClass::Split { scale: 1.0 },
        DataClass::AllCodes { finite: true },
        DataClass::Subnormal { scale: 1.0 },
        DataClass::Special { scale: 1.0 },
        DataClass::Binades { scale: 1.0, width: 5, silent: 1, mirror: true },
    ];
    let (rows, k) = (23, 37);
    for data in classes {
        for (operand, fmt) in [(Operand::A, "e4m3"), (Operand::B, "e5m2")] {
            let whole = generate(&spec(data.clone()), operand, fmt, rows, k).unwrap();
            for range in [0..1, 5..6, 7..19, 22..23, 0..23, 9..9] {
                let part = generate_rows(&spec(data.clone()), operand, fmt, range.clone(), k).unwrap();
                assert_eq!(part, whole[range.start * k..range.end * k], "{data:?} {operand:?} {range:?}");
            }
        }
    }
}

/// The signed value of a finite code.
fn value(f: Fp8, code: u8) -> f64 {
    let m = f.magnitude(code & 0x7F);
    if code & 0x80 != 0 {
        -m
    } else {
        m
    }
}

#[test]
fn binades_blocks_share_a_shift_and_a_silence_across_both_operands() {
    // Against the written definition: element i of a live block is round(g(i) · 2^t) where `gaussian` (same seed and
    // stream) is round(g(i)), so where both are normal and non-zero their ratio is 2^t, one t per block, the same for
    // A and B; a silent block is +0 in both operands.
    let (k, width) = (4096usize, 16u64);
    for seed in 0..8u64 {
        for silent in [0u32, 2] {
            let spec_of = |data| InputSpec { generator: GENERATOR_V1.into(), seed, stream: 3, data };
            let bin = spec_of(DataClass::Binades { scale: 1.0, width, silent, mirror: false });
            let gau = spec_of(DataClass::Gaussian { scale: 1.0 });
            let f = Fp8::E5m2;
            // Normal and past the smallest normal binade (a subnormal value may round up into it).
            let normal = |c: u8| (c & 0x7F) >= 8 && f.is_finite(c);
            let mut shifts = std::collections::BTreeSet::new();
            let mut live = 0;
            let (mut a_ops, mut g_ops) = (Vec::new(), Vec::new());
            for op in [Operand::A, Operand::B] {
                a_ops.push(generate(&bin, op, "e5m2", 2, k).unwrap());
                g_ops.push(generate(&gau, op, "e5m2", 2, k).unwrap());
            }
            for row in 0..2 {
                for block in 0..k / width as usize {
                    let idx = |j: usize| row * k + block * width as usize + j;
                    let silent_here = (0..2).all(|o| (0..width as usize).all(|j| a_ops[o][idx(j)] == 0));
                    if silent_here {
                        continue;
                    }
                    live += 1;
                    let mut t = None;
                    for o in 0..2 {
                        for j in 0..width as usize {
                            let (b, g) = (a_ops[o][idx(j)], g_ops[o][idx(j)]);
                            if normal(b) && normal(g) {
                                let ratio = (value(f, b) / value(f, g)).log2();
                                assert_eq!(ratio.fract(), 0.0, "seed {seed} block {block}");
                                assert_eq!(*t.get_or_insert(ratio), ratio, "seed {seed} block {block}: one shift");
                            }
                        }
                    }
                    let t = t.expect("a live block has normal elements");
                    assert!(t.abs() <= 12.0, "seed {seed}: shift {t} past emax - 3");
                    shifts.insert(t as i64);
                }
            }
            let blocks = 2 * k / width as usize;
            let expected = blocks >> silent;
            assert!(live * 2 > expected && live < expected * 2, "seed {seed} silent {silent}: {live} of {blocks} live");
            assert!(shifts.len() >= 8.min(live / 2), "seed {seed}: shifts {shifts:?} are not spread over the binades");
        }
    }
    assert!(DataClass::Binades { scale: 1.0, width: 0, silent: 0, mirror: false }.check().is_err());
    assert!(DataClass::Binades { scale: f64::INFINITY, width: 16, silent: 0, mirror: false }.check().is_err());
}

#[test]
fn mirrored_binades_cancel_exactly() {
    // The second half of each row repeats the first, negated in B, so every term has its negation: the exact sum is 0.
    for (k, fmt) in [(96usize, "e4m3"), (97, "e5m2")] {
        let data = DataClass::Binades { scale: 1.0, width: 16, silent: 1, mirror: true };
        let plain = DataClass::Binades { scale: 1.0, width: 16, silent: 1, mirror: false };
        let a = generate(&spec(data.clone()), Operand::A, fmt, 3, k).unwrap();
        let b = generate(&spec(data), Operand::B, fmt, 3, k).unwrap();
        let a0 = generate(&spec(plain.clone()), Operand::A, fmt, 3, k).unwrap();
        let b0 = generate(&spec(plain), Operand::B, fmt, 3, k).unwrap();
        let f = Fp8::parse(fmt).unwrap();
        let h = k / 2;
        for r in 0..3 {
            let row = |x: &[u8]| x[r * k..(r + 1) * k].iter().map(|&c| value(f, c)).collect::<Vec<f64>>();
            let (ar, br) = (row(&a), row(&b));
            // The first half is the plain class's; the sum over both halves is exactly zero (products of FP8 values
            // and their sum over < 2^10 terms are exact in f64).
            assert_eq!(a[r * k..r * k + h], a0[r * k..r * k + h]);
            assert_eq!(b[r * k..r * k + h], b0[r * k..r * k + h]);
            let sum: f64 = (0..2 * h).map(|c| ar[c] * br[c]).sum();
            assert_eq!(sum, 0.0, "k {k} row {r}");
            assert!(ar[..h].iter().zip(&br[..h]).any(|(x, y)| x * y != 0.0), "k {k} row {r}: all zero");
        }
    }
}

#[test]
fn codes_repeat_the_given_bytes() {
    // Worked example: a = 01 02 03, b = ff; rows of k = 2 number their elements row-major, so A's rows are
    // [01 02] [03 01] [02 03] and every element of B is ff.
    let data = DataClass::Codes { a: "010203".into(), b: "ff".into() };
    let json = r#"{"generator": "mmaemu-inputs/1", "seed": 9, "stream": 4, "data": {"class": "codes", "a": "010203", "b": "ff"}}"#;
    let parsed: InputSpec = serde_json::from_str(json).unwrap();
    assert_eq!(parsed.data, data);
    assert_eq!(generate(&parsed, Operand::A, "e4m3", 3, 2).unwrap(), [1, 2, 3, 1, 2, 3]);
    assert_eq!(generate_rows(&parsed, Operand::A, "e5m2", 1..3, 2).unwrap(), [3, 1, 2, 3]);
    assert_eq!(generate(&parsed, Operand::B, "e4m3", 2, 2).unwrap(), [0xFF; 4]);
    assert_eq!(hex(&[0, 0x7E, 0xFF]), "007eff");
    for (a, why) in [
        ("", "1 to"),
        ("0", "1 to"),
        ("0G", "hex"),
        ("AB", "hex"),
        ("éé", "hex"),
        (&"00".repeat(MAX_CODES + 1), "1 to"),
    ] {
        let e = DataClass::Codes { a: a.to_string(), b: "00".into() }.check().unwrap_err();
        assert!(e.contains(why), "{a:.8}: {e}");
    }
}
