//! The in-memory form of a recording: [`Row`] (one expected outcome), its enumerations ([`Op`], [`Truth`],
//! [`OutSelect`], [`Expectation`]), the file metadata ([`FileMeta`]) and [`Recording`], plus the dtype-width
//! helpers that tie the binary columns to the shapes.

use crate::call::Call;
use std::fmt;
use std::path::PathBuf;

/// The `mmaemu:format` value of version 1 files.
pub const FORMAT_V1: &str = "mmaemu-recording/1";

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in the spec's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as the file spells it.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// Parses the file's spelling; None for an unknown value.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// What a row replays (column `op`).
    Op {
        /// The whole `torch._scaled_mm` call of the row's profile.
        ScaledMm = "scaled_mm",
        /// The same numerics without torch's argument checks.
        Gemm = "gemm",
        /// The fp32 accumulator of A x B^T, before any epilogue.
        Accumulator = "accumulator",
        /// Instruction level: chains over k starting from c.
        Mma = "mma",
    }
}

string_enum! {
    /// Where the expected values come from (column `truth`).
    Truth {
        /// Recorded on the GPU.
        Hardware = "hardware",
        /// Computed by a model: self-consistency vectors, never validation evidence.
        Model = "model",
    }
}

/// Which part of the result `expected` holds (column `out_select`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OutSelect {
    /// null: the whole [batch, m, n] result.
    #[default]
    Full,
    /// `diagonal`: the m diagonal elements of an [m, m] result.
    Diagonal,
}

impl OutSelect {
    /// The column value: None for Full, `"diagonal"` for Diagonal.
    pub fn as_column(&self) -> Option<&'static str> {
        match self {
            OutSelect::Full => None,
            OutSelect::Diagonal => Some("diagonal"),
        }
    }

    /// Parses the column value (None = Full); None for an unknown value.
    pub fn parse(s: Option<&str>) -> Option<Self> {
        match s {
            None => Some(OutSelect::Full),
            Some("diagonal") => Some(OutSelect::Diagonal),
            Some(_) => None,
        }
    }
}

/// The expected outcome of a row: exactly one of `expected`, `expected_sha256`, `expected_error`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expectation {
    /// The result bits, little-endian, [batch, m, n] row-major (or the diagonal), in the out dtype's width.
    Bits(Vec<u8>),
    /// Lower-case hex sha256 of the full result bits.
    Sha256(String),
    /// The error the call must raise: `ReferenceRejectsError` or `UnsupportedFeatureError`.
    Error(String),
}

/// The values `expected_error` may hold.
pub const EXPECTED_ERRORS: &[&str] = &["ReferenceRejectsError", "UnsupportedFeatureError"];

/// The values `split_scheme` may hold.
pub const SPLIT_SCHEMES: &[&str] = &["none", "serial", "pairwise", "contiguous", "unknown"];

/// One row of a recording: one expected outcome. Field meanings: see docs/recording-format.md, section "Columns".
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub id: String,
    pub op: Op,
    pub preset: String,
    pub profile: Option<String>,
    pub gpu: String,
    pub truth: Truth,
    pub fmt_a: String,
    pub fmt_b: String,
    pub batch: i64,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub a: Vec<u8>,
    pub b: Vec<u8>,
    pub c: Option<Vec<u8>>,
    pub scale_a: Option<u32>,
    pub scale_b: Option<u32>,
    pub scale_result: Option<u32>,
    pub out_dtype: Option<String>,
    pub fast_accum: Option<bool>,
    pub split_s: Option<i32>,
    pub split_scheme: Option<String>,
    /// JSON text of the cuBLASLt algorithm, as stored (optional column; absent = None).
    pub algo: Option<String>,
    /// The call object; None: the standard call.
    pub call: Option<Call>,
    pub out_select: OutSelect,
    pub expected: Expectation,
    pub scope: Option<String>,
    pub origin: String,
    /// The values of the optional extension columns (`inputs`, `expected_samples`, `note`, `amax_d`); all None for
    /// a plain version 1 row.
    pub ext: RowExt,
}

/// The optional extension columns a recorder writes next to the version 1 columns. Readers of version 1
/// ignore unknown columns, so files with them stay readable there; a file without them reads as all None.
///
/// - `inputs`: JSON [`crate::inputs::RowInputs`]: the generator spec that produced `a` and `b`, and their
///   sha256. A row whose `inputs` is set may ship `a` and `b` empty ("by reference"): [`crate::read_recording`]
///   regenerates them and checks their sha256.
/// - `expected_samples`: JSON [`crate::inputs::Samples`]: some result elements (flat index, bits) of a row
///   that ships only `expected_sha256`, so a mismatch can be located without the whole result.
/// - `note`: free text about how the row was recorded (the cuBLAS status of a rejection, a determinism
///   finding, a simulated split).
/// - `amax_d`: the fp32 bits of the amax cuBLASLt wrote through `AMAX_D_POINTER` (a Transformer Engine call
///   with an FP8 output): information, never replayed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowExt {
    pub inputs: Option<String>,
    pub expected_samples: Option<String>,
    pub note: Option<String>,
    pub amax_d: Option<u32>,
}

impl RowExt {
    /// Whether any extension column holds a value.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_none() && self.expected_samples.is_none() && self.note.is_none() && self.amax_d.is_none()
    }
}

/// Width in bytes of one element of a dtype named in `fmt_a`, `fmt_b`, `out_dtype` or a call object
/// (`e4m3`, `e5m2` and torch dtype names); None for a name this crate does not know.
pub fn dtype_width(name: &str) -> Option<usize> {
    match name {
        "e4m3" | "e5m2" | "float8_e4m3fn" | "float8_e5m2" | "float8_e4m3fnuz" | "float8_e5m2fnuz"
        | "float8_e8m0fnu" | "float4_e2m1fn_x2" => Some(1),
        "bfloat16" | "float16" => Some(2),
        "float32" => Some(4),
        _ => None,
    }
}

/// Logical elements per stored element of a dtype: 2 for `float4_e2m1fn_x2` (two e2m1 codes per byte, the
/// element of even index in the low nibble, as torch packs them), 1 for every other dtype.
pub fn dtype_packing(name: &str) -> u64 {
    if name == "float4_e2m1fn_x2" {
        2
    } else {
        1
    }
}

/// The torch dtype name of a format name: `e4m3` -> `float8_e4m3fn`, `e5m2` -> `float8_e5m2`; any other
/// name is returned as it is.
pub fn torch_dtype_name(name: &str) -> &str {
    match name {
        "e4m3" => "float8_e4m3fn",
        "e5m2" => "float8_e5m2",
        other => other,
    }
}

impl Row {
    /// Width in bytes of one element of the named dtype; see [`dtype_width`].
    pub fn elem_width(dtype: &str) -> Option<usize> {
        dtype_width(dtype)
    }

    /// The dtype of the result: `float32` for `mma` and `accumulator`; for `scaled_mm` and `gemm` the
    /// `out_dtype` column, else the call's out= buffer dtype, else A's dtype (`fmt_a`, as spelt there).
    pub fn effective_out_dtype(&self) -> &str {
        match self.op {
            Op::Mma | Op::Accumulator => "float32",
            Op::ScaledMm | Op::Gemm => {
                if let Some(d) = &self.out_dtype {
                    d
                } else if let Some(out) = self.call.as_ref().and_then(|c| c.out.as_ref()) {
                    &out.dtype
                } else {
                    &self.fmt_a
                }
            }
        }
    }

    /// Width in bytes of one expected element (4 for `mma`/`accumulator`, else the width of
    /// [`Row::effective_out_dtype`]); None if that dtype is unknown.
    pub fn out_width(&self) -> Option<usize> {
        dtype_width(self.effective_out_dtype())
    }

    /// Number of expected result elements: batch * m * n, or batch * m for a diagonal; None if a dimension
    /// is negative or the product overflows.
    pub fn expected_elems(&self) -> Option<usize> {
        match self.out_select {
            OutSelect::Full => dims_product(&[self.batch, self.m, self.n]),
            OutSelect::Diagonal => dims_product(&[self.batch, self.m]),
        }
    }

    /// The cuBLASLt customOption of the algorithm the row's GPU ran, where its `algo` column records one
    /// (`custom_option`, or `customOption` as earlier recordings spell it).
    pub fn custom_option(&self) -> Option<i64> {
        let algo: serde_json::Value = serde_json::from_str(self.algo.as_deref()?).ok()?;
        algo.get("custom_option").or_else(|| algo.get("customOption")).and_then(serde_json::Value::as_i64)
    }

    /// The expected bits, if the row ships them.
    pub fn expected_bits(&self) -> Option<&[u8]> {
        match &self.expected {
            Expectation::Bits(b) => Some(b),
            _ => None,
        }
    }

    /// The expected error class, if the row expects one.
    pub fn expected_error(&self) -> Option<&str> {
        match &self.expected {
            Expectation::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// The product of non-negative dimensions as usize; None if one is negative or it overflows.
pub(crate) fn dims_product(dims: &[i64]) -> Option<usize> {
    dims.iter().try_fold(1usize, |acc, &d| {
        let d = usize::try_from(d).ok()?;
        acc.checked_mul(d)
    })
}

/// The file key-value metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct FileMeta {
    /// `mmaemu:format`; [`FORMAT_V1`] for every file this crate reads or writes.
    pub format: String,
    /// `mmaemu:platform` (a JSON object), if present.
    pub platform: Option<serde_json::Value>,
    /// `mmaemu:provenance` (a JSON object), if present.
    pub provenance: Option<serde_json::Value>,
}

impl Default for FileMeta {
    fn default() -> Self {
        FileMeta { format: FORMAT_V1.to_string(), platform: None, provenance: None }
    }
}

/// One recording file, read into memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// The file it was read from.
    pub path: PathBuf,
    pub meta: FileMeta,
    pub rows: Vec<Row>,
}
