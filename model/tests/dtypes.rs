//! The names, widths, canonical NaNs and byte layouts of the operand formats and output dtypes
//! (docs/reference.md §1 and §4), as the contract writes them: literal tables, not the code's own.

use mmaemu_model::epilogue::{from_le_bytes, to_le_bytes};
use mmaemu_model::{Format, OutDtype};

/// (dtype, torch name, short alias, width in bytes, canonical NaN bits, FP8 format).
type OutRow = (OutDtype, &'static str, &'static str, usize, u32, Option<Format>);
const OUT: [OutRow; 5] = [
    (OutDtype::Float32, "float32", "fp32", 4, 0x7FFF_FFFF, None),
    (OutDtype::BFloat16, "bfloat16", "bf16", 2, 0x7FFF, None),
    (OutDtype::Float16, "float16", "fp16", 2, 0x7FFF, None),
    (OutDtype::E4m3, "float8_e4m3fn", "e4m3", 1, 0x7F, Some(Format::E4m3)),
    (OutDtype::E5m2, "float8_e5m2", "e5m2", 1, 0x7F, Some(Format::E5m2)),
];

#[test]
fn out_dtypes_by_the_table() {
    assert_eq!(OutDtype::ALL.to_vec(), OUT.iter().map(|o| o.0).collect::<Vec<_>>());
    for (d, name, alias, width, nan, fp8) in OUT {
        assert_eq!(d.name(), name);
        assert_eq!(d.to_string(), name);
        assert_eq!(OutDtype::from_name(name), Some(d));
        assert_eq!(OutDtype::from_name(alias), Some(d), "{alias}");
        assert_eq!(d.width(), width, "{name}");
        assert_eq!(d.canonical_nan(), nan, "{name}");
        assert_eq!(d.fp8(), fp8, "{name}");
        if let Some(f) = fp8 {
            assert_eq!(OutDtype::of_format(f), d);
        }
    }
    for bad in ["", "float64", "half", "FLOAT32", "e4m3fn", "float8_e4m3fnuz"] {
        assert_eq!(OutDtype::from_name(bad), None, "{bad}");
    }
}

#[test]
fn out_values_for_display() {
    // 1.0 and -2.5 in each dtype, written out bit by bit; every NaN code of a dtype shows as NaN.
    let cases: [(OutDtype, u32, f64); 10] = [
        (OutDtype::Float32, 0x3F80_0000, 1.0),
        (OutDtype::Float32, 0xC020_0000, -2.5),
        (OutDtype::BFloat16, 0x3F80, 1.0),
        (OutDtype::BFloat16, 0xC020, -2.5),
        (OutDtype::Float16, 0x3C00, 1.0),
        (OutDtype::Float16, 0xC100, -2.5),
        (OutDtype::E4m3, 0x38, 1.0),
        (OutDtype::E4m3, 0xC2, -2.5),
        (OutDtype::E5m2, 0x3C, 1.0),
        (OutDtype::E5m2, 0xC1, -2.5),
    ];
    for (d, bits, want) in cases {
        assert_eq!(d.to_f64(bits), want, "{d} {bits:#x}");
    }
    // The smallest subnormals: 2^-149, 2^-133, 2^-24, 2^-9, 2^-16.
    let tiny: [(OutDtype, f64); 5] = [
        (OutDtype::Float32, 2f64.powi(-149)),
        (OutDtype::BFloat16, 2f64.powi(-133)),
        (OutDtype::Float16, 2f64.powi(-24)),
        (OutDtype::E4m3, 2f64.powi(-9)),
        (OutDtype::E5m2, 2f64.powi(-16)),
    ];
    for (d, want) in tiny {
        assert_eq!(d.to_f64(1), want, "{d}");
    }
    for (d, bits) in [
        (OutDtype::Float32, 0x7FC0_0000),
        (OutDtype::Float32, 0xFFFF_FFFF),
        (OutDtype::BFloat16, 0xFFC1),
        (OutDtype::Float16, 0x7E00),
        (OutDtype::Float16, 0xFC01),
        (OutDtype::E4m3, 0xFF),
        (OutDtype::E5m2, 0x7D),
    ] {
        assert!(d.to_f64(bits).is_nan(), "{d} {bits:#x}");
    }
    assert_eq!(OutDtype::Float16.to_f64(0xFC00), f64::NEG_INFINITY);
}

#[test]
fn element_bytes_are_little_endian_in_the_dtype_width() {
    let bits = [0x3F80_0000u32, 0xC020_0000];
    assert_eq!(to_le_bytes(&bits, OutDtype::Float32), [0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x20, 0xC0]);
    assert_eq!(from_le_bytes(&[0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x20, 0xC0], OutDtype::Float32), bits);
    for d in [OutDtype::BFloat16, OutDtype::Float16] {
        assert_eq!(to_le_bytes(&[0x3F80, 0xC100], d), [0x80, 0x3F, 0x00, 0xC1]);
        assert_eq!(from_le_bytes(&[0x80, 0x3F, 0x00, 0xC1], d), [0x3F80, 0xC100]);
    }
    for d in [OutDtype::E4m3, OutDtype::E5m2] {
        assert_eq!(to_le_bytes(&[0x38, 0xC2, 0x7F], d), [0x38, 0xC2, 0x7F]);
        assert_eq!(from_le_bytes(&[0x38, 0xC2, 0x7F], d), [0x38, 0xC2, 0x7F]);
    }
    assert_eq!(to_le_bytes(&[], OutDtype::Float32), Vec::<u8>::new());
}

/// (format, short name, torch name, bias, mantissa bits, smallest normal exponent, largest finite value and
/// its code).
type FormatRow = (Format, &'static str, &'static str, i32, u32, i32, f32, u8);
const FORMATS: [FormatRow; 2] = [
    (Format::E4m3, "e4m3", "float8_e4m3fn", 7, 3, -6, 448.0, 0x7E),
    (Format::E5m2, "e5m2", "float8_e5m2", 15, 2, -14, 57344.0, 0x7B),
];

#[test]
fn operand_formats_by_the_table() {
    assert_eq!(Format::ALL.to_vec(), FORMATS.iter().map(|f| f.0).collect::<Vec<_>>());
    for (f, name, dtype, bias, mbits, emin, max, max_code) in FORMATS {
        assert_eq!((f.name(), f.dtype_name()), (name, dtype));
        assert_eq!(f.to_string(), name);
        assert_eq!(Format::from_name(name), Some(f));
        assert_eq!(Format::from_name(dtype), Some(f));
        assert_eq!((f.bias(), f.mbits(), f.emin()), (bias, mbits, emin), "{name}");
        assert_eq!((f.max_finite(), f.max_code(), f.canonical_nan()), (max, max_code, 0x7F), "{name}");
        assert_eq!(f.to_f64(max_code), max as f64, "{name}");
        assert_eq!(f.to_f64(max_code | 0x80), -max as f64, "{name}");
    }
    for bad in ["", "E4M3", "e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz", "e8m0"] {
        assert_eq!(Format::from_name(bad), None, "{bad}");
    }
}

#[test]
fn non_finite_codes_are_found_wherever_they_stand() {
    // E4M3: the NaNs S.1111.111; E5M2: the Infs S.11111.00 and the NaNs S.11111.{01,10,11}.
    let nonfinite = |f: Format| -> Vec<u8> {
        match f {
            Format::E4m3 => vec![0x7F, 0xFF],
            Format::E5m2 => vec![0x7C, 0x7D, 0x7E, 0x7F, 0xFC, 0xFD, 0xFE, 0xFF],
        }
    };
    for f in Format::ALL {
        let bad = nonfinite(f);
        let finite: Vec<u8> = (0..=255u8).filter(|c| !bad.contains(c)).collect();
        for c in 0..=255u8 {
            assert_eq!(f.is_nonfinite(c), bad.contains(&c), "{f} {c:#04x}");
        }
        assert!(!f.any_nonfinite(&finite));
        assert!(!f.any_nonfinite(&[]));
        // One non-finite code at any place of 132 (past several vector widths), and two or three close together.
        for &x in &bad {
            for at in [0, 1, 63, 64, 100, 127, 128, 129] {
                let mut v: Vec<u8> = finite.iter().copied().cycle().take(132).collect();
                v[at] = x;
                assert!(f.any_nonfinite(&v), "{f} {x:#04x} at {at}");
                v[at ^ 1] = x;
                assert!(f.any_nonfinite(&v), "{f} two {x:#04x} at {at}");
                v[at ^ 2] = x;
                assert!(f.any_nonfinite(&v), "{f} three {x:#04x} at {at}");
            }
        }
    }
}
