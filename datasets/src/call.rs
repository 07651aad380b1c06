//! The typed "call object" of `scaled_mm` rows (docs/recording-format.md, section "The call object"): how the exact
//! `torch._scaled_mm` call of a row differed from the standard call.

// Parsing applies the spec's defaults for missing keys; unknown keys are rejected (a key this reader does not know
// would change the call, so ignoring it would replay the wrong call). Serialising writes every key explicitly, so a
// written call object parses back to an equal `Call`.

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The call object. `Call::default()` is the standard call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// mat1 (A): dtype, layout (`std` or `col`), leading-dimension padding, storage offset.
    #[serde(default, deserialize_with = "null_as_default")]
    pub mat1: MatSpec,
    /// mat2 (B transposed): dtype, layout (`std` or `row`), leading-dimension padding, storage offset.
    #[serde(default, deserialize_with = "null_as_default")]
    pub mat2: MatSpec,
    /// The scale_a tensor; None (key absent): the tensor-wise `scale_a` column describes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_a: Option<ScaleSpec>,
    /// The scale_b tensor; None (key absent): the tensor-wise `scale_b` column describes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_b: Option<ScaleSpec>,
    /// The scale_result tensor; None when it was not passed. A missing key and `null` both parse to None.
    #[serde(default)]
    pub scale_result: Option<ScaleSpec>,
    /// The bias, None: no bias.
    #[serde(default)]
    pub bias: Option<BiasSpec>,
    /// True if bias was passed as the fifth positional argument.
    #[serde(default)]
    pub positional_bias: bool,
    /// The out= buffer, None: no out=.
    #[serde(default)]
    pub out: Option<OutSpec>,
    /// False if the out_dtype keyword was omitted.
    #[serde(default = "yes")]
    pub out_dtype_passed: bool,
    /// False if the use_fast_accum keyword was omitted (torch's default, false).
    #[serde(default = "yes")]
    pub use_fast_accum_passed: bool,
}

impl Default for Call {
    fn default() -> Self {
        Call {
            mat1: MatSpec::default(),
            mat2: MatSpec::default(),
            scale_a: None,
            scale_b: None,
            scale_result: None,
            bias: None,
            positional_bias: false,
            out: None,
            out_dtype_passed: true,
            use_fast_accum_passed: true,
        }
    }
}

impl Call {
    /// Parses a call object (the `call` column's JSON text).
    pub fn parse(json: &str) -> Result<Call, serde_json::Error> {
        let value: serde_json::Value = serde_json::from_str(json)?;
        // serde's derived structs also accept JSON arrays (fields by position); the format has objects only.
        if !value.is_object() {
            return Err(de::Error::custom("the call object is not a JSON object"));
        }
        if let serde_json::Value::Object(map) = &value {
            for (key, v) in map {
                if let serde_json::Value::Object(inner) = v {
                    if let Some((k, _)) = inner.iter().find(|(k, v)| v.is_array() && *k != "shape") {
                        return Err(de::Error::custom(format!("{key}.{k} must not be an array")));
                    }
                } else if v.is_array() {
                    return Err(de::Error::custom(format!("`{key}` must not be an array")));
                }
            }
        }
        serde_json::from_value(value)
    }

    /// The call object as compact JSON, every key written explicitly.
    pub fn to_json(&self) -> String {
        // Serialising these plain structs cannot fail (string keys, no maps with non-string keys).
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

/// One matrix operand of the call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatSpec {
    /// The torch dtype name; None: the row's fmt_a (mat1) or fmt_b (mat2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// `std` (the standard layout), `col` (mat1 only) or `row` (mat2 only).
    #[serde(default = "std_layout")]
    pub layout: String,
    /// Extra elements in the leading dimension.
    #[serde(default)]
    pub ld_pad: i64,
    /// The tensor starts this many elements into its storage.
    #[serde(default)]
    pub offset: i64,
}

impl Default for MatSpec {
    fn default() -> Self {
        MatSpec { dtype: None, layout: std_layout(), ld_pad: 0, offset: 0 }
    }
}

/// A scale tensor: `shape` filled with `value`, converted from float64 to `dtype`, laid out as `layout` says.
/// `scaling`, `layout` and `global` are the block-scale keys (revision 2 of the call object): absent in a
/// revision 1 object, and written only when they differ from their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleSpec {
    #[serde(default = "float32")]
    pub dtype: String,
    /// The logical shape: `[]` or `[1]` tensor-wise, `[m, 1]` / `[1, n]` row-wise, `[rows, ceil(K / block)]`
    /// block-wise (before any padding or swizzling of `layout`).
    #[serde(default)]
    pub shape: Vec<i64>,
    pub value: ScaleValue,
    /// The ScalingType the scale is passed as; None: told by the shape, as in revision 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<Scaling>,
    /// How the logical scale matrix sits in the tensor torch gets.
    #[serde(default, skip_serializing_if = "ScaleLayout::is_std")]
    pub layout: ScaleLayout,
    /// NVFP4's fp32 tensor-wise (global) scale that accompanies the per-16 e4m3 scales; None: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global: Option<ScaleValue>,
}

impl ScaleSpec {
    /// A revision 1 scale: `shape` of `dtype` filled with `value`, in the plain layout.
    pub fn plain(dtype: &str, shape: Vec<i64>, value: ScaleValue) -> ScaleSpec {
        ScaleSpec { dtype: dtype.into(), shape, value, scaling: None, layout: ScaleLayout::Std, global: None }
    }

    /// The element count of the tensor torch gets: the logical shape's, or for `blocked` the padded
    /// `round_up(rows, 128) * round_up(cols, 4)` (None when a dimension is negative or the count overflows).
    pub fn storage_elements(&self) -> Option<u64> {
        let dims: Vec<u64> = self.shape.iter().map(|&d| u64::try_from(d).ok()).collect::<Option<_>>()?;
        match self.layout {
            ScaleLayout::Blocked => {
                let (rows, cols) = match dims.as_slice() {
                    [r, c] => (*r, *c),
                    _ => return None,
                };
                rows.checked_next_multiple_of(128)?.checked_mul(cols.checked_next_multiple_of(4)?)
            }
            _ => dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)),
        }
    }

    /// The storage position of logical element (r, c) of a [rows, cols] scale matrix in `layout`: `std`
    /// row-major, `col` column-major, `blocked` torch's `to_blocked` (128 x 4 tiles, each stored as 32 x 16
    /// with row r at (r mod 32) * 16 + (r div 32) * 4 + c mod 4; tiles row-block major).
    pub fn position(layout: ScaleLayout, rows: u64, cols: u64, r: u64, c: u64) -> u64 {
        match layout {
            ScaleLayout::Std => r * cols + c,
            ScaleLayout::Col => c * rows + r,
            ScaleLayout::Blocked => {
                let col_blocks = cols.div_ceil(4);
                let tile = (r / 128) * col_blocks + c / 4;
                let (rr, cc) = (r % 128, c % 4);
                tile * 512 + (rr % 32) * 16 + (rr / 32) * 4 + cc
            }
        }
    }
}

/// torch's `ScalingType` (torch 2.10 `torch.nn.functional.ScalingType`; the recipe of one scale tensor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scaling {
    /// One fp32 scale for the tensor.
    TensorWise,
    /// One fp32 scale per row of mat1 ([m, 1]) or column of mat2 ([1, n]).
    RowWise,
    /// One scale per 16 elements of K (NVFP4: e4m3 scales, plus a `global` fp32 scale).
    BlockWise1x16,
    /// One scale per 32 elements of K (MXFP8 / MXFP4: e8m0 scales).
    BlockWise1x32,
    /// One fp32 scale per 128 elements of K (DeepSeek's activations).
    BlockWise1x128,
    /// One fp32 scale per 128 x 128 block (DeepSeek's weights).
    BlockWise128x128,
}

impl Scaling {
    /// The block along K (1 for tensor-wise and row-wise: the whole K).
    pub fn block_k(self) -> Option<u64> {
        match self {
            Scaling::TensorWise | Scaling::RowWise => None,
            Scaling::BlockWise1x16 => Some(16),
            Scaling::BlockWise1x32 => Some(32),
            Scaling::BlockWise1x128 | Scaling::BlockWise128x128 => Some(128),
        }
    }
}

/// How a scale matrix is stored (torch's `SwizzleType`: `NO_SWIZZLE` is `std` or `col`, `SWIZZLE_32_4_4` is
/// `blocked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScaleLayout {
    /// Row-major `shape`.
    #[default]
    Std,
    /// Column-major `shape` (torch's 1 x 128 scales of mat1: stride (1, m)).
    Col,
    /// cuBLAS's blocked layout (torch's `to_blocked`), a 1-D tensor of `round_up(rows, 128) *
    /// round_up(cols, 4)` elements; padding elements hold the all-zero bit pattern.
    Blocked,
}

impl ScaleLayout {
    fn is_std(&self) -> bool {
        *self == ScaleLayout::Std
    }
}

/// The value a scale tensor is filled with. Equality compares numbers bit for bit (`-0.0 != 0.0`).
#[derive(Debug, Clone, Copy)]
pub enum ScaleValue {
    /// A JSON number.
    Number(f64),
    /// `"nan"`
    Nan,
    /// `"inf"`
    Inf,
    /// `"-inf"`
    NegInf,
    /// `"-0.0"`
    NegZero,
    /// `"rowwise"`: element i holds 0.25 + 0.0625 * ((7 i) mod 16).
    Rowwise,
    /// `"pow2"`: element i holds 2^(((5 i) mod 7) - 3), exact in fp32, e4m3 and e8m0 (revision 2).
    Pow2,
}

impl ScaleValue {
    /// The float64 value of element `i` of the tensor (before conversion to the scale's dtype).
    pub fn element(&self, i: usize) -> f64 {
        match *self {
            ScaleValue::Number(x) => x,
            ScaleValue::Nan => f64::NAN,
            ScaleValue::Inf => f64::INFINITY,
            ScaleValue::NegInf => f64::NEG_INFINITY,
            ScaleValue::NegZero => -0.0,
            ScaleValue::Rowwise => 0.25 + 0.0625 * ((7 * (i as u64)) % 16) as f64,
            ScaleValue::Pow2 => 2f64.powi(((5 * (i as u64)) % 7) as i32 - 3),
        }
    }
}

/// The bias: element j is 0.125 j - 1 in `dtype`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BiasSpec {
    pub dtype: String,
    pub len: i64,
}

impl BiasSpec {
    /// The float64 value of element `j` (before conversion to the bias dtype).
    pub fn element(j: usize) -> f64 {
        0.125 * j as f64 - 1.0
    }
}

/// An out= buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutSpec {
    pub dtype: String,
    /// As recorded: usually `[r, c]`; torch resizes a buffer of another shape (even `[0]`).
    pub shape: Vec<i64>,
    /// False: column-major.
    #[serde(default = "yes")]
    pub contiguous: bool,
    /// The pre-fill value; None (absent or null): every byte 0x7F.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<FillValue>,
}

/// The value an out= buffer is pre-filled with. Equality compares numbers bit for bit.
#[derive(Debug, Clone, Copy)]
pub enum FillValue {
    Number(f64),
    /// `"nan"`
    Nan,
    /// `"inf"`
    Inf,
}

impl FillValue {
    /// The float64 value (before conversion to the buffer's dtype).
    pub fn value(&self) -> f64 {
        match *self {
            FillValue::Number(x) => x,
            FillValue::Nan => f64::NAN,
            FillValue::Inf => f64::INFINITY,
        }
    }
}

impl PartialEq for ScaleValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ScaleValue::Number(a), ScaleValue::Number(b)) => a.to_bits() == b.to_bits(),
            (ScaleValue::Nan, ScaleValue::Nan)
            | (ScaleValue::Inf, ScaleValue::Inf)
            | (ScaleValue::NegInf, ScaleValue::NegInf)
            | (ScaleValue::NegZero, ScaleValue::NegZero)
            | (ScaleValue::Rowwise, ScaleValue::Rowwise)
            | (ScaleValue::Pow2, ScaleValue::Pow2) => true,
            _ => false,
        }
    }
}

impl PartialEq for FillValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (FillValue::Number(a), FillValue::Number(b)) => a.to_bits() == b.to_bits(),
            (FillValue::Nan, FillValue::Nan) | (FillValue::Inf, FillValue::Inf) => true,
            _ => false,
        }
    }
}

fn yes() -> bool {
    true
}

fn std_layout() -> String {
    String::from("std")
}

fn float32() -> String {
    String::from("float32")
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A JSON number or one of a fixed set of strings.
enum NumOrWord {
    Number(f64),
    Word(String),
}

struct NumOrWordVisitor(&'static str);

impl<'de> Visitor<'de> for NumOrWordVisitor {
    type Value = NumOrWord;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a number or one of {}", self.0)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<NumOrWord, E> {
        Ok(NumOrWord::Number(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<NumOrWord, E> {
        Ok(NumOrWord::Number(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<NumOrWord, E> {
        Ok(NumOrWord::Number(v as f64))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<NumOrWord, E> {
        Ok(NumOrWord::Word(v.to_string()))
    }
}

const SCALE_WORDS: &str = "\"nan\", \"inf\", \"-inf\", \"-0.0\", \"rowwise\", \"pow2\"";
const FILL_WORDS: &str = "\"nan\", \"inf\"";

impl<'de> Deserialize<'de> for ScaleValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match d.deserialize_any(NumOrWordVisitor(SCALE_WORDS))? {
            NumOrWord::Number(x) => Ok(ScaleValue::Number(x)),
            NumOrWord::Word(w) => match w.as_str() {
                "nan" => Ok(ScaleValue::Nan),
                "inf" => Ok(ScaleValue::Inf),
                "-inf" => Ok(ScaleValue::NegInf),
                "-0.0" => Ok(ScaleValue::NegZero),
                "rowwise" => Ok(ScaleValue::Rowwise),
                "pow2" => Ok(ScaleValue::Pow2),
                _ => Err(de::Error::invalid_value(de::Unexpected::Str(&w), &NumOrWordVisitor(SCALE_WORDS))),
            },
        }
    }
}

impl Serialize for ScaleValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            // JSON has no non-finite numbers: write them as the spec's words.
            ScaleValue::Number(x) if x.is_nan() => s.serialize_str("nan"),
            ScaleValue::Number(x) if x == f64::INFINITY => s.serialize_str("inf"),
            ScaleValue::Number(x) if x == f64::NEG_INFINITY => s.serialize_str("-inf"),
            ScaleValue::Number(x) => s.serialize_f64(x),
            ScaleValue::Nan => s.serialize_str("nan"),
            ScaleValue::Inf => s.serialize_str("inf"),
            ScaleValue::NegInf => s.serialize_str("-inf"),
            ScaleValue::NegZero => s.serialize_str("-0.0"),
            ScaleValue::Rowwise => s.serialize_str("rowwise"),
            ScaleValue::Pow2 => s.serialize_str("pow2"),
        }
    }
}

impl<'de> Deserialize<'de> for FillValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match d.deserialize_any(NumOrWordVisitor(FILL_WORDS))? {
            NumOrWord::Number(x) => Ok(FillValue::Number(x)),
            NumOrWord::Word(w) => match w.as_str() {
                "nan" => Ok(FillValue::Nan),
                "inf" => Ok(FillValue::Inf),
                _ => Err(de::Error::invalid_value(de::Unexpected::Str(&w), &NumOrWordVisitor(FILL_WORDS))),
            },
        }
    }
}

impl Serialize for FillValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            FillValue::Number(x) if x.is_nan() => s.serialize_str("nan"),
            FillValue::Number(x) if x == f64::INFINITY => s.serialize_str("inf"),
            // -inf has no spelling in the spec; serde_json would write null, which reads back as 0x7F bytes.
            FillValue::Number(x) => s.serialize_f64(x),
            FillValue::Nan => s.serialize_str("nan"),
            FillValue::Inf => s.serialize_str("inf"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = Call::parse("{}").unwrap();
        assert_eq!(c, Call::default());
        assert_eq!(c.mat1.layout, "std");
        assert!(c.out_dtype_passed && c.use_fast_accum_passed && !c.positional_bias);
        let c = Call::parse(r#"{"scale_result": null, "mat1": null}"#).unwrap();
        assert_eq!(c, Call::default());
    }

    #[test]
    fn values_and_round_trip() {
        let text = r#"{"mat1":{"dtype":"bfloat16","layout":"col","ld_pad":16,"offset":2},
            "scale_a":{"value":"rowwise","shape":[16,1]},"scale_b":{"dtype":"float64","value":-0.0},
            "scale_result":{"value":0.3},"bias":{"dtype":"float16","len":32},"positional_bias":true,
            "out":{"dtype":"float32","shape":[0],"contiguous":false,"fill":"nan"},
            "out_dtype_passed":false,"use_fast_accum_passed":false}"#;
        let c = Call::parse(text).unwrap();
        assert_eq!(c.scale_a.as_ref().unwrap().value, ScaleValue::Rowwise);
        assert_eq!(c.scale_a.as_ref().unwrap().dtype, "float32");
        let b = c.scale_b.as_ref().unwrap().value;
        assert!(matches!(b, ScaleValue::Number(x) if x == 0.0 && x.is_sign_negative()));
        assert_ne!(b, ScaleValue::Number(0.0));
        assert_eq!(c.out.as_ref().unwrap().fill, Some(FillValue::Nan));
        let again = Call::parse(&c.to_json()).unwrap();
        assert_eq!(again, c);
        assert_eq!(ScaleValue::Rowwise.element(1), 0.25 + 0.0625 * 7.0);
        assert_eq!(ScaleValue::Rowwise.element(3), 0.25 + 0.0625 * 5.0);
    }

    #[test]
    fn revision_1_objects_are_written_as_before() {
        // The block-scale keys are written only when set, so a revision 1 object reads and writes unchanged.
        let text = r#"{"mat1":{"layout":"std","ld_pad":0,"offset":0},"mat2":{"layout":"std","ld_pad":0,"offset":0},"scale_a":{"dtype":"float32","shape":[16,1],"value":"rowwise"},"scale_result":null,"bias":null,"positional_bias":false,"out":null,"out_dtype_passed":true,"use_fast_accum_passed":true}"#;
        assert_eq!(Call::parse(text).unwrap().to_json(), text);
    }

    #[test]
    fn block_scales_round_trip() {
        let text = r#"{"mat1":{"dtype":"float4_e2m1fn_x2"},"mat2":{"dtype":"float4_e2m1fn_x2"},
            "scale_a":{"dtype":"float8_e4m3fn","shape":[128,4],"value":"pow2","scaling":"BlockWise1x16",
                       "layout":"blocked","global":0.5},
            "scale_b":{"dtype":"float8_e8m0fnu","shape":[256,2],"value":"pow2","scaling":"BlockWise1x32",
                       "layout":"blocked"}}"#;
        let c = Call::parse(text).unwrap();
        let a = c.scale_a.as_ref().unwrap();
        assert_eq!(
            (a.scaling, a.layout, a.global),
            (Some(Scaling::BlockWise1x16), ScaleLayout::Blocked, Some(ScaleValue::Number(0.5)))
        );
        assert_eq!(Call::parse(&c.to_json()).unwrap(), c);
        // [256, 2] pads to [256, 4].
        assert_eq!(c.scale_b.as_ref().unwrap().storage_elements(), Some(1024));
        let col =
            Call::parse(r#"{"scale_a":{"shape":[64,3],"value":"rowwise","scaling":"BlockWise1x128","layout":"col"}}"#)
                .unwrap();
        assert_eq!(col.scale_a.as_ref().unwrap().layout, ScaleLayout::Col);
        assert_eq!(Call::parse(&col.to_json()).unwrap(), col);
        // pow2: 2^(((5 i) mod 7) - 3).
        let p: Vec<f64> = (0..8).map(|i| ScaleValue::Pow2.element(i)).collect();
        assert_eq!(p, [0.125, 4.0, 1.0, 0.25, 8.0, 2.0, 0.5, 0.125]);
    }

    #[test]
    fn blocked_positions_are_torchs_to_blocked() {
        // torch's to_blocked for a [130, 5] matrix (pads to [256, 8]): written out from its view / permute /
        // reshape / transpose steps, independently of `position`.
        let (rows, cols) = (130u64, 5u64);
        let (rb, cb) = (rows.div_ceil(128), cols.div_ceil(4));
        let mut flat = vec![u64::MAX; (rb * 128 * cb * 4) as usize];
        let mut out = 0usize;
        for r_blk in 0..rb {
            for c_blk in 0..cb {
                // blocks[r_blk, c_blk] is [128, 4] -> reshape [4, 32, 4] -> transpose(1, 2) -> [32, 4, 4].
                for j in 0..32 {
                    for i in 0..4 {
                        for cc in 0..4 {
                            let (r, c) = (r_blk * 128 + i * 32 + j, c_blk * 4 + cc);
                            flat[out] = r * 1000 + c;
                            out += 1;
                        }
                    }
                }
            }
        }
        for r in 0..rows {
            for c in 0..cols {
                let p = ScaleSpec::position(ScaleLayout::Blocked, rows, cols, r, c) as usize;
                assert_eq!(flat[p], r * 1000 + c, "({r}, {c})");
            }
        }
        assert_eq!(ScaleSpec::position(ScaleLayout::Col, 3, 4, 1, 2), 7);
    }

    #[test]
    fn rejects() {
        assert!(Call::parse(r#"{"scale_a": {"value": 1, "scaling": "ColumnWise"}}"#).is_err());
        assert!(Call::parse(r#"{"scale_a": {"value": 1, "layout": "swizzled"}}"#).is_err());
        assert!(Call::parse(r#"{"scale_a": {"value": 1, "swizzle": "SWIZZLE_32_4_4"}}"#).is_err());
        assert!(Call::parse(r#"{"nope": 1}"#).is_err());
        assert!(Call::parse(r#"{"scale_a": {"value": "huge"}}"#).is_err());
        assert!(Call::parse(r#"{"scale_a": {}}"#).is_err());
        assert!(Call::parse(r#"{"out": {"dtype": "float32", "shape": [1, 1], "fill": "-inf"}}"#).is_err());
        assert!(Call::parse("[]").is_err());
        assert!(Call::parse(r#"{"mat1": ["e4m3", "std", 0, 0]}"#).is_err());
        assert!(Call::parse(r#"{"scale_a": {"value": [1.0]}}"#).is_err());
        assert!(Call::parse(r#"{"out_dtype_passed": 1}"#).is_err());
    }
}
