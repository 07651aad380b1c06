//! torch element dtypes, by torch's names (docs/reference.md R.2): the FP8 formats the GEMM computes with, the
//! output dtypes, and the dtypes the reference rejects (fnuz and e8m0 FP8 variants, fp64, int32, ...),
//! which a faithful `scaled_mm` must be able to name in order to reject them at the right point.

use crate::epilogue::OutDtype;
use crate::format::Format;
use std::fmt;

/// A torch dtype.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// `float8_e4m3fn`.
    Float8E4m3fn,
    /// `float8_e5m2`.
    Float8E5m2,
    /// `float8_e4m3fnuz` (AMD encoding).
    Float8E4m3fnuz,
    /// `float8_e5m2fnuz` (AMD encoding).
    Float8E5m2fnuz,
    /// `float8_e8m0fnu` (scale format).
    Float8E8m0fnu,
    /// `float32`.
    Float32,
    /// `bfloat16`.
    BFloat16,
    /// `float16`.
    Float16,
    /// `float64`.
    Float64,
    /// `int32`.
    Int32,
    /// Any other torch dtype, by name.
    Other(String),
}

impl Dtype {
    /// Parse a torch dtype name (with or without `torch.`); short FP8 names `e4m3`/`e5m2` are accepted.
    pub fn from_name(name: &str) -> Dtype {
        let n = name.strip_prefix("torch.").unwrap_or(name);
        match n {
            "float8_e4m3fn" | "e4m3" => Dtype::Float8E4m3fn,
            "float8_e5m2" | "e5m2" => Dtype::Float8E5m2,
            "float8_e4m3fnuz" => Dtype::Float8E4m3fnuz,
            "float8_e5m2fnuz" => Dtype::Float8E5m2fnuz,
            "float8_e8m0fnu" => Dtype::Float8E8m0fnu,
            "float32" | "float" => Dtype::Float32,
            "bfloat16" => Dtype::BFloat16,
            "float16" | "half" => Dtype::Float16,
            "float64" | "double" => Dtype::Float64,
            "int32" | "int" => Dtype::Int32,
            other => Dtype::Other(other.to_string()),
        }
    }
    /// torch's name.
    pub fn name(&self) -> &str {
        match self {
            Dtype::Float8E4m3fn => "float8_e4m3fn",
            Dtype::Float8E5m2 => "float8_e5m2",
            Dtype::Float8E4m3fnuz => "float8_e4m3fnuz",
            Dtype::Float8E5m2fnuz => "float8_e5m2fnuz",
            Dtype::Float8E8m0fnu => "float8_e8m0fnu",
            Dtype::Float32 => "float32",
            Dtype::BFloat16 => "bfloat16",
            Dtype::Float16 => "float16",
            Dtype::Float64 => "float64",
            Dtype::Int32 => "int32",
            Dtype::Other(s) => s,
        }
    }
    /// Element size in bytes (1 for unknown names; they are rejected before any data is read).
    pub fn size(&self) -> usize {
        match self {
            Dtype::Float8E4m3fn | Dtype::Float8E5m2 | Dtype::Float8E4m3fnuz | Dtype::Float8E5m2fnuz => 1,
            Dtype::Float8E8m0fnu => 1,
            Dtype::BFloat16 | Dtype::Float16 => 2,
            Dtype::Float32 | Dtype::Int32 => 4,
            Dtype::Float64 => 8,
            Dtype::Other(_) => 1,
        }
    }
    /// One of torch's five float8 dtypes.
    pub fn is_float8(&self) -> bool {
        matches!(
            self,
            Dtype::Float8E4m3fn
                | Dtype::Float8E5m2
                | Dtype::Float8E4m3fnuz
                | Dtype::Float8E5m2fnuz
                | Dtype::Float8E8m0fnu
        )
    }
    /// The FP8 format the GEMM computes with (e4m3fn, e5m2 only).
    pub fn format(&self) -> Option<Format> {
        match self {
            Dtype::Float8E4m3fn => Some(Format::E4m3),
            Dtype::Float8E5m2 => Some(Format::E5m2),
            _ => None,
        }
    }
    /// The cuBLASLt output dtype, if it is one of the five.
    pub fn out_dtype(&self) -> Option<OutDtype> {
        OutDtype::from_name(self.name())
    }
    /// The dtype of an FP8 format.
    pub fn of_format(f: Format) -> Dtype {
        match f {
            Format::E4m3 => Dtype::Float8E4m3fn,
            Format::E5m2 => Dtype::Float8E5m2,
        }
    }
    /// The dtype of an output dtype.
    pub fn of_out(o: OutDtype) -> Dtype {
        Dtype::from_name(o.name())
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
