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
