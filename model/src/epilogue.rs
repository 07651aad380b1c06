//! The epilogue of `torch._scaled_mm` with tensor-wise scales (docs/reference.md §4): alpha = RN32(sa * sb),
//! y = RN32(acc * alpha + (+0)) rounded once, then the out dtype: bf16/fp16 by a second rounding from fp32
//! (`half`'s), FP8 through scale_result, saturation and round-to-nearest-even; canonical NaNs, set here.

use crate::format::Format;
use crate::round::CANONICAL_NAN_F32;
use half::{bf16, f16};
use std::fmt;

/// The output dtypes cuBLASLt FP8 GEMMs produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutDtype {
    /// `float32`.
    Float32,
    /// `bfloat16`.
    BFloat16,
    /// `float16`.
    Float16,
    /// `float8_e4m3fn`.
    E4m3,
    /// `float8_e5m2`.
    E5m2,
}

impl OutDtype {
    /// All five, in the tables' code order.
    pub const ALL: [OutDtype; 5] =
        [OutDtype::Float32, OutDtype::BFloat16, OutDtype::Float16, OutDtype::E4m3, OutDtype::E5m2];

    /// torch's dtype name: `float32`, `bfloat16`, `float16`, `float8_e4m3fn`, `float8_e5m2`.
    pub fn name(self) -> &'static str {
        match self {
            OutDtype::Float32 => "float32",
            OutDtype::BFloat16 => "bfloat16",
            OutDtype::Float16 => "float16",
            OutDtype::E4m3 => "float8_e4m3fn",
            OutDtype::E5m2 => "float8_e5m2",
        }
    }
    /// Parse torch's name or a short alias (`fp32`, `bf16`, `fp16`, `e4m3`, `e5m2`).
    pub fn from_name(s: &str) -> Option<OutDtype> {
        match s {
            "float32" | "fp32" => Some(OutDtype::Float32),
            "bfloat16" | "bf16" => Some(OutDtype::BFloat16),
            "float16" | "fp16" => Some(OutDtype::Float16),
            "float8_e4m3fn" | "e4m3" => Some(OutDtype::E4m3),
            "float8_e5m2" | "e5m2" => Some(OutDtype::E5m2),
            _ => None,
        }
    }
    /// The FP8 output of an FP8 format.
    pub fn of_format(f: Format) -> OutDtype {
        match f {
            Format::E4m3 => OutDtype::E4m3,
            Format::E5m2 => OutDtype::E5m2,
        }
    }
    /// The FP8 format of an FP8 output.
    pub fn fp8(self) -> Option<Format> {
        match self {
            OutDtype::E4m3 => Some(Format::E4m3),
            OutDtype::E5m2 => Some(Format::E5m2),
            _ => None,
        }
    }
    /// Element width in bytes.
    pub fn width(self) -> usize {
        match self {
            OutDtype::Float32 => 4,
            OutDtype::BFloat16 | OutDtype::Float16 => 2,
            OutDtype::E4m3 | OutDtype::E5m2 => 1,
        }
    }
    /// The canonical NaN bits of the dtype.
    pub fn canonical_nan(self) -> u32 {
        match self {
            OutDtype::Float32 => CANONICAL_NAN_F32,
            OutDtype::BFloat16 | OutDtype::Float16 => 0x7FFF,
            OutDtype::E4m3 | OutDtype::E5m2 => 0x7F,
        }
    }
    /// The exact value of an element's bits as f64 (for display).
    pub fn to_f64(self, bits: u32) -> f64 {
        match self {
            OutDtype::Float32 => f32::from_bits(bits) as f64,
            OutDtype::BFloat16 => bf16::from_bits(bits as u16).to_f64(),
            OutDtype::Float16 => {
                // Any f16 NaN code displays as the one f64 NaN (`half` would keep its sign and payload).
                let h = f16::from_bits(bits as u16);
                if h.is_nan() {
                    f64::NAN
                } else {
                    h.to_f64()
                }
            }
            OutDtype::E4m3 => Format::E4m3.to_f64(bits as u8),
            OutDtype::E5m2 => Format::E5m2.to_f64(bits as u8),
        }
    }
}

impl fmt::Display for OutDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// fp32 -> bfloat16 bits, round to nearest even, subnormals kept, overflow to Inf, NaN canonical (0x7FFF).
pub fn f32_to_bf16(x: f32) -> u16 {
    // NaN first: `half` keeps a NaN's sign and top payload bits, while the epilogue's NaN is canonical.
    if x.is_nan() {
        return OutDtype::BFloat16.canonical_nan() as u16;
    }
    bf16::from_f32(x).to_bits()
}

/// fp32 -> IEEE binary16 bits, round to nearest even, subnormals kept, overflow to Inf (no saturation),
/// NaN canonical (0x7FFF).
pub fn f32_to_f16(x: f32) -> u16 {
    // As in `f32_to_bf16`: canonical NaN here, `half` only for non-NaN values.
    if x.is_nan() {
        return OutDtype::Float16.canonical_nan() as u16;
    }
    f16::from_f32(x).to_bits()
}

/// The epilogue's parameters: tensor-wise scales (fp32 values), optional scale_result, and the out dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Epilogue {
    /// scale_a: the per-tensor scale of the first operand, applied in the epilogue.
    pub scale_a: f32,
    /// scale_b: the per-tensor scale of the second operand.
    pub scale_b: f32,
    /// scale_result (used only by FP8 outputs).
    pub scale_result: Option<f32>,
    /// The output dtype.
    pub out: OutDtype,
}

impl Epilogue {
    /// alpha = RN32(scale_a * scale_b): Rust's f32 `*` is the exact product rounded once to nearest even,
    /// with subnormals, overflow to Inf and NaN propagation.
    pub fn alpha(&self) -> f32 {
        self.scale_a * self.scale_b
    }

    /// One accumulator value through the epilogue, returned as the out dtype's bits (in the low bits).
    pub fn apply_one(&self, acc: f32, alpha: f32) -> u32 {
        // y = RN32(acc * alpha + (+0)). The product of two fp32 values is exact in f64 (48 significant
        // bits; exponents from -298 to +256 are inside f64's normal range), and adding +0 to it is exact
        // and turns an exactly-zero product of either sign into +0 (IEEE: -0 + +0 = +0 under RNE). The
        // `as f32` conversion then rounds once to nearest even. Inf * 0 gives NaN.
        let y = ((acc as f64) * (alpha as f64) + 0.0) as f32;
        match self.out {
            OutDtype::Float32 => {
                if y.is_nan() {
                    CANONICAL_NAN_F32
                } else {
                    y.to_bits()
                }
            }
            OutDtype::BFloat16 => f32_to_bf16(y) as u32,
            OutDtype::Float16 => f32_to_f16(y) as u32,
            OutDtype::E4m3 | OutDtype::E5m2 => {
                let f = self.out.fp8().unwrap_or(Format::E4m3);
                // A second, plain fp32 multiply (no +0 addend): one IEEE rounding.
                let y = match self.scale_result {
                    Some(sr) => y * sr,
                    None => y,
                };
                f.from_f32_saturating(y) as u32
            }
        }
    }

    /// The whole accumulator through the epilogue.
    pub fn apply(&self, acc: &[f32]) -> Vec<u32> {
        let alpha = self.alpha();
        acc.iter().map(|&x| self.apply_one(x, alpha)).collect()
    }
}

/// Element bits to little-endian bytes in the dtype's width.
pub fn to_le_bytes(bits: &[u32], out: OutDtype) -> Vec<u8> {
    let w = out.width();
    let mut v = Vec::with_capacity(bits.len() * w);
    for &b in bits {
        v.extend_from_slice(&b.to_le_bytes()[..w]);
    }
    v
}

/// Little-endian bytes of the dtype's width to element bits.
pub fn from_le_bytes(bytes: &[u8], out: OutDtype) -> Vec<u32> {
    let w = out.width();
    bytes
        .chunks_exact(w)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..w].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_bit_examples() {
        // docs/reference.md §4 step 3 examples.
        assert_eq!(f32_to_f16(65520.0), 0x7C00);
        assert_eq!(f32_to_f16(65519.0), 0x7BFF);
        assert_eq!(f32_to_f16(70000.0), 0x7C00);
        assert_eq!(f32_to_f16(-1e-8), 0x8000);
        assert_eq!(f32_to_bf16(3.4e38), 0x7F80);
        assert_eq!(f32_to_f16(1.0), 0x3C00);
        assert_eq!(f32_to_bf16(1.0), 0x3F80);
        assert_eq!(f32_to_f16(2f32.powi(-24)), 0x0001);
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0x0000); // tie to even
    }

    #[test]
    fn nan_is_canonical() {
        // Every NaN, whatever its sign and payload, becomes the dtype's canonical NaN (0x7FFF).
        for x in [0x7FC0_0000u32, 0xFFC0_0000, 0x7F80_0001, 0xFF80_0001, 0x7FA0_0000, 0xFFFF_FFFF] {
            assert_eq!(f32_to_bf16(f32::from_bits(x)), 0x7FFF, "{x:#010x}");
            assert_eq!(f32_to_f16(f32::from_bits(x)), 0x7FFF, "{x:#010x}");
        }
        for out in [OutDtype::BFloat16, OutDtype::Float16] {
            let e = Epilogue { scale_a: f32::INFINITY, scale_b: 1.0, scale_result: None, out };
            assert_eq!(e.apply(&[0.0, f32::from_bits(0xFF80_0001)]), vec![0x7FFF, 0x7FFF]);
        }
        // Display values: every f16 NaN code is the one f64 NaN; bf16 NaNs widen like fp32 ones.
        for h in [0x7C01u32, 0x7E00, 0xFC01, 0xFFFF] {
            assert_eq!(OutDtype::Float16.to_f64(h).to_bits(), f64::NAN.to_bits(), "{h:#06x}");
        }
        assert_eq!(OutDtype::BFloat16.to_f64(0xFFC1).to_bits(), 0xFFF8_2000_0000_0000);
    }

    #[test]
    fn saturation_examples() {
        // docs/reference.md §4: acc [8192, -8192, 240, 480, 448, 464, Inf, -Inf, 1e30] with alpha 1.
        let acc = [8192.0, -8192.0, 240.0, 480.0, 448.0, 464.0, f32::INFINITY, f32::NEG_INFINITY, 1e30];
        let e4 = Epilogue { scale_a: 1.0, scale_b: 1.0, scale_result: None, out: OutDtype::E4m3 };
        assert_eq!(e4.apply(&acc), vec![0x7E, 0xFE, 0x77, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7E]);
        let e5 = Epilogue { out: OutDtype::E5m2, ..e4 };
        let r = e5.apply(&acc);
        assert_eq!(&r[..2], &[0x70, 0xF0]);
        assert_eq!(&r[6..], &[0x7B, 0xFB, 0x7B]);
        // scale_result is applied before saturation: 300, 3, -1000 with 2 -> 448, 6, -448.
        let s2 = Epilogue { scale_result: Some(2.0), ..e4 };
        let r = s2.apply(&[300.0, 3.0, -1000.0]);
        let vals: Vec<f64> = r.iter().map(|&b| OutDtype::E4m3.to_f64(b)).collect();
        assert_eq!(vals, vec![448.0, 6.0, -448.0]);
        let q = Epilogue { scale_result: Some(0.25), ..e4 };
        assert_eq!(OutDtype::E4m3.to_f64(q.apply(&[1000.0])[0]), 256.0);
    }

    #[test]
    fn fma_zero_rules() {
        // y = RN32(acc * alpha + (+0)): an exactly zero product is +0; an underflowing one keeps its sign.
        let f = Epilogue { scale_a: -1.0, scale_b: 1.0, scale_result: None, out: OutDtype::Float32 };
        assert_eq!(f.apply(&[0.0])[0], 0x0000_0000);
        let tiny = Epilogue { scale_a: -2f32.powi(-126), scale_b: 2f32.powi(-20), ..f };
        assert_eq!(tiny.apply(&[2f32.powi(-5)])[0], 0x8000_0000); // -2^-151 -> -0
        let inf = Epilogue { scale_a: f32::INFINITY, scale_b: 1.0, ..f };
        assert_eq!(inf.apply(&[0.0])[0], CANONICAL_NAN_F32);
        // Negative scale_result turns +0 into -0 for FP8 outputs (no +0 addend in the second multiply).
        let neg = Epilogue { scale_a: 1.0, scale_b: 1.0, scale_result: Some(-1.0), out: OutDtype::E4m3 };
        assert_eq!(neg.apply(&[0.0])[0], 0x80);
    }
}
