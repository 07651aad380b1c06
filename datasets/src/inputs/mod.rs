//! The input generator `mmaemu-inputs/1`: FP8 operands computed from a small spec, the same bytes on every
//! machine, so that a recording can ship a spec and two sha256 instead of the operands of a large GEMM.
//! It keeps its own frozen generator, not `rand` like the tests and batteries: recorded operands must
//! regenerate bit for bit forever, independent of any crate's version.
//!
//! # Determinism
//!
//! The generator is counter-based: element `index` of operand `o` (A = 0, B = 1) of the spec with `seed`
//! and `stream` is a pure function of (seed, stream, operand, index), computed with SplitMix64's 64-bit
//! finaliser ([`mix`]) on wrapping integer arithmetic. Nothing depends on the order of evaluation, the
//! thread count, the platform's libm or its floating-point environment:
//!
//! - uniform words: `word(index, j) = mix(key + (16 * index + j + 1) * GOLDEN)` (SplitMix64's output
//!   function on a counter), with `key = mix(mix(mix(seed ^ SALT) ^ mix(stream + GOLDEN)) ^ o * GOLDEN)`,
//!   o = 1 for A and 2 for B;
//! - a standard normal variate is the Irwin–Hall sum of twelve uniform 16-bit quarters of three words,
//!   centred, computed exactly in integers and converted exactly to f64 (mean 0, variance 1, support
//!   [-6, 6]);
//! - `value * scale` is one IEEE f64 multiplication (correctly rounded everywhere);
//! - the FP8 code of a real value is found by exact comparisons with the midpoints between neighbouring
//!   codes (round to nearest, ties to the even code), saturating at the largest finite magnitude; the sign
//!   of a value that rounds to zero is kept.
//!
//! # Data classes
//!
//! - `gaussian {scale}`: N(0, 1) × scale, rounded to the format;
//! - `bits {finite}`: a uniformly random byte: every code, NaN and Inf included (with `finite`, the first
//!   finite byte of the element's words);
//! - `split {scale}`: adversarial split-discriminating data: one element in eight is ±2^(emax-1) (128 for
//!   e4m3, 16384 for e5m2, random sign), the others N(0, 1) × scale, so the fp32 sums absorb the small terms
//!   at points that depend on how K is cut and in which order partial sums are combined;
//! - `all_codes {finite}`: the codes in order, A element i = code (i + offset) mod C, B element i = code
//!   (167 i + offset) mod C (C = 256, or the finite codes only with `finite`; the offset comes from the
//!   stream), so every code meets every other across a K of a few hundred;
//! - `subnormal {scale}`: three elements in four are a random subnormal or zero code with a random sign,
//!   the others N(0, 1) × scale;
//! - `special {scale}`: N(0, 1) × scale, with one row (of A: an output row; of B: an output column) in
//!   eight poisoned by each of: one NaN; one +Inf; one -Inf; +Inf and -Inf (two positions). e4m3fn has no
//!   infinities: its Inf rows hold NaN (0x7F, or 0xFF for -Inf).
//! - `binades {scale, width, silent}`: K is cut into blocks of `width` consecutive elements; each block has a shift of
//!   t binades (|t| <= emax - 3, the same draw for A and B) and is live in one draw of 2^silent (both operands +0
//!   elsewhere); a live element is N(0, 1) × scale × 2^t. Partial sums over different parts of K then differ by many
//!   binades, so the fp32 order in which a split-K GEMM adds them shows in its last bits. With `mirror`, the second
//!   half of each row (columns k/2 .. 2 (k/2)) repeats the first, negated in B: the exact dot product is zero (odd k:
//!   the last column's term) and the result is the accumulation's rounding alone, which shows even in a narrow out
//!   dtype.
//! - `codes {a, b}`: given codes, repeated: element i of A is byte i mod len of `a` (lower-case hex, 1 to 65,536
//!   bytes), of B of `b`: a call whose every product a fit chose (the designed experiments of `fit preset`).

use crate::error::DatasetError;
use crate::row::{dims_product, Row};
use serde::{Deserialize, Serialize};
use std::path::Path;

mod fp8;
use fp8::{pow2, Fp8, Rounder};

/// The `generator` value of specs this module understands.
pub const GENERATOR_V1: &str = "mmaemu-inputs/1";

/// The golden-ratio increment of SplitMix64.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// Salt of the seed ("mmaemu-1").
const SALT: u64 = 0x6D6D_6165_6D75_2D31;
/// Salt of the per-row words of the `special` class ("SPECIAL").
const ROW_SALT: u64 = 0x5350_4543_4941_4C00;
/// Salt of the per-block words of the `binades` class ("BINADES").
const BLOCK_SALT: u64 = 0x4249_4E41_4445_5300;

/// One input spec: which generator, the seed, the stream (one per operand pair within a sweep) and the
/// data class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// Always [`GENERATOR_V1`].
    pub generator: String,
    /// The sweep's seed.
    pub seed: u64,
    /// The stream: distinguishes operand pairs generated from one seed.
    pub stream: u64,
    /// The data class and its parameters.
    pub data: DataClass,
}

fn one() -> f64 {
    1.0
}

/// The data classes (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case", deny_unknown_fields)]
pub enum DataClass {
    /// N(0, 1) × scale.
    Gaussian {
        #[serde(default = "one")]
        scale: f64,
    },
    /// Uniformly random codes (finite ones only with `finite`).
    Bits {
        #[serde(default)]
        finite: bool,
    },
    /// Split-discriminating: one element in eight is ±2^(emax-1).
    Split {
        #[serde(default = "one")]
        scale: f64,
    },
    /// Every code in turn (finite ones only with `finite`).
    AllCodes {
        #[serde(default)]
        finite: bool,
    },
    /// Three elements in four subnormal or zero.
    Subnormal {
        #[serde(default = "one")]
        scale: f64,
    },
    /// Rows poisoned with NaN / Inf.
    Special {
        #[serde(default = "one")]
        scale: f64,
    },
    /// Blocks of K at magnitudes binades apart, one block in 2^silent live.
    Binades {
        #[serde(default = "one")]
        scale: f64,
        #[serde(default = "sixteen")]
        width: u64,
        #[serde(default)]
        silent: u32,
        /// The second half of K repeats the first, negated in B: the exact sum is zero, the result its rounding.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        mirror: bool,
    },
    /// Given codes, repeated: element i of A is byte i mod len of `a`, of B of `b` (lower-case hex).
    Codes { a: String, b: String },
}

/// The most bytes a `codes` operand gives.
pub const MAX_CODES: usize = 1 << 16;

/// The bytes of a `codes` operand: lower-case hex, 1 to [`MAX_CODES`] bytes.
fn codes_bytes(digits: &str) -> Result<Vec<u8>, String> {
    let n = digits.len() / 2;
    if digits.is_empty() || !digits.len().is_multiple_of(2) || n > MAX_CODES {
        return Err(format!(
            "data class codes: an operand is 1 to {MAX_CODES} bytes as lower-case hex, not {} digits",
            digits.len()
        ));
    }
    let lower = digits.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    lower
        .then(|| hex::decode(digits).ok())
        .flatten()
        .ok_or_else(|| "data class codes: an operand is lower-case hex digits".to_string())
}

fn sixteen() -> u64 {
    16
}

impl DataClass {
    /// The class name as a spec spells it.
    pub fn name(&self) -> &'static str {
        match self {
            DataClass::Gaussian { .. } => "gaussian",
            DataClass::Bits { .. } => "bits",
            DataClass::Split { .. } => "split",
            DataClass::AllCodes { .. } => "all_codes",
            DataClass::Subnormal { .. } => "subnormal",
            DataClass::Special { .. } => "special",
            DataClass::Binades { .. } => "binades",
            DataClass::Codes { .. } => "codes",
        }
    }

    /// Checks the parameters: scales must be finite.
    pub fn check(&self) -> Result<(), String> {
        match self {
            DataClass::Gaussian { scale }
            | DataClass::Split { scale }
            | DataClass::Subnormal { scale }
            | DataClass::Special { scale } => {
                if scale.is_finite() {
                    Ok(())
                } else {
                    Err(format!("data class {}: scale {scale} is not finite", self.name()))
                }
            }
            DataClass::Binades { scale, width, silent, .. } => {
                if !scale.is_finite() {
                    Err(format!("data class binades: scale {scale} is not finite"))
                } else if *width == 0 || *silent > 32 {
                    Err(format!("data class binades: width {width} must be >= 1 and silent {silent} <= 32"))
                } else {
                    Ok(())
                }
            }
            DataClass::Codes { a, b } => codes_bytes(a).and(codes_bytes(b)).map(|_| ()),
            DataClass::Bits { .. } | DataClass::AllCodes { .. } => Ok(()),
        }
    }
}

/// Which operand a generator call produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A, [m, k] (mat1).
    A,
    /// B, [n, k] (mat2 transposed).
    B,
}

/// The JSON of the extension column `inputs`: the spec and the sha256 of both generated operands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowInputs {
    /// The generator spec.
    pub spec: InputSpec,
    /// Lower-case hex sha256 of A's bytes.
    pub a_sha256: String,
    /// Lower-case hex sha256 of B's bytes.
    pub b_sha256: String,
}

impl RowInputs {
    /// Parses the column's JSON.
    pub fn parse(json: &str) -> Result<RowInputs, String> {
        let v: RowInputs = serde_json::from_str(json).map_err(|e| e.to_string())?;
        if v.spec.generator != GENERATOR_V1 {
            return Err(format!("generator {:?} is not {GENERATOR_V1:?}", v.spec.generator));
        }
        v.spec.data.check()?;
        for (name, h) in [("a_sha256", &v.a_sha256), ("b_sha256", &v.b_sha256)] {
            if !is_sha256_hex(h) {
                return Err(format!("{name} {h:?} is not 64 lower-case hex digits"));
            }
        }
        Ok(v)
    }

    /// The column's JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The JSON of the extension column `expected_samples`: some elements of the full result (flat row-major
/// index, bits in the low bits of a u32), for rows that ship only `expected_sha256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Samples {
    /// Flat indices into the [batch, m, n] result.
    pub index: Vec<u64>,
    /// The element bits at those indices.
    pub bits: Vec<u32>,
}

impl Samples {
    /// Parses the column's JSON (equal lengths required).
    pub fn parse(json: &str) -> Result<Samples, String> {
        let v: Samples = serde_json::from_str(json).map_err(|e| e.to_string())?;
        if v.index.len() != v.bits.len() {
            return Err(format!("{} indices but {} bits", v.index.len(), v.bits.len()));
        }
        Ok(v)
    }

    /// The column's JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

pub use crate::digest::{hex, is_sha256_hex, sha256_hex};

/// SplitMix64's finaliser: a bijective 64-bit mixing function.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The word generator of one (seed, stream, operand).
struct Words {
    key: u64,
    /// The key before the operand is mixed in: the same for A and B (class `binades`).
    shared: u64,
}

impl Words {
    fn new(spec: &InputSpec, operand: Operand) -> Words {
        let o = match operand {
            Operand::A => 1u64,
            Operand::B => 2u64,
        };
        let k0 = mix(spec.seed ^ SALT);
        let k1 = mix(k0 ^ mix(spec.stream.wrapping_add(GOLDEN)));
        Words { key: mix(k1 ^ o.wrapping_mul(GOLDEN)), shared: k1 }
    }

    /// Word j (0..16) of element `index`.
    fn word(&self, index: u64, j: u64) -> u64 {
        mix(self.key.wrapping_add(index.wrapping_mul(16).wrapping_add(j).wrapping_add(1).wrapping_mul(GOLDEN)))
    }

    /// The word of row `row` (class `special`).
    fn row_word(&self, row: u64) -> u64 {
        mix(self.key ^ mix(row.wrapping_add(1).wrapping_mul(GOLDEN) ^ ROW_SALT))
    }

    /// The word of K-block `block` (class `binades`): the same for A and B.
    fn block_word(&self, block: u64) -> u64 {
        mix(self.shared ^ mix(block.wrapping_add(1).wrapping_mul(GOLDEN) ^ BLOCK_SALT))
    }

    /// A standard normal variate (Irwin–Hall of twelve 16-bit uniforms), exact, from words 0..3.
    fn gaussian(&self, index: u64) -> f64 {
        let mut sum: u64 = 0;
        for j in 0..3 {
            let w = self.word(index, j);
            sum += (w & 0xFFFF) + ((w >> 16) & 0xFFFF) + ((w >> 32) & 0xFFFF) + (w >> 48);
        }
        // Twelve uniforms on [0, 1) in steps of 2^-16, minus 6 (plus half a step, to centre them).
        let centred = (2 * sum as i64) - (12i64 << 16) + 12;
        centred as f64 * pow2(-17)
    }
}

/// Generates operand `operand` ([rows, k] row-major, one byte per code) of format `fmt` (`e4m3`, `e5m2`
/// or the torch names) from `spec`. Errors: an unknown generator, format or bad parameter.
pub fn generate(spec: &InputSpec, operand: Operand, fmt: &str, rows: usize, k: usize) -> Result<Vec<u8>, String> {
    generate_rows(spec, operand, fmt, 0..rows, k)
}

/// Rows `rows` of the operand [`generate`] makes, the same bytes: the generator is counter-based, so a row is made
/// without the rows before it.
pub fn generate_rows(
    spec: &InputSpec,
    operand: Operand,
    fmt: &str,
    rows: std::ops::Range<usize>,
    k: usize,
) -> Result<Vec<u8>, String> {
    if spec.generator != GENERATOR_V1 {
        return Err(format!("generator {:?} is not {GENERATOR_V1:?}", spec.generator));
    }
    spec.data.check()?;
    let f = Fp8::parse(fmt).ok_or_else(|| format!("format {fmt:?} is not an FP8 format the generator knows"))?;
    let span = |r: usize| r.checked_mul(k).map(|x| x as u64).ok_or_else(|| "operand size overflows".to_string());
    let (start, end) = (span(rows.start)?, span(rows.end.max(rows.start))?);
    let n = (end - start) as usize;
    let w = Words::new(spec, operand);
    let r = Rounder::new(f);
    // Fallible: under a raised ceiling an allocation the machine cannot give is a refusal, not an abort.
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| format!("cannot allocate the {n} bytes of the operand's rows"))?;
    match &spec.data {
        DataClass::Codes { a, b } => {
            let codes = codes_bytes(if operand == Operand::A { a } else { b })?;
            out.extend((start..end).map(|i| codes[(i % codes.len() as u64) as usize]));
        }
        &DataClass::Gaussian { scale } => {
            for i in start..end {
                out.push(r.round(w.gaussian(i) * scale));
            }
        }
        &DataClass::Bits { finite } => {
            for i in start..end {
                let mut code = None;
                'words: for j in 0..16 {
                    let word = w.word(i, j);
                    for byte in word.to_le_bytes() {
                        if !finite || f.is_finite(byte) {
                            code = Some(byte);
                            break 'words;
                        }
                    }
                }
                out.push(code.unwrap_or(0));
            }
        }
        &DataClass::Split { scale } => {
            let big = r.round(pow2(f.emax() - 1));
            for i in start..end {
                let sel = w.word(i, 7);
                if sel & 7 == 0 {
                    out.push(big | if sel & 8 != 0 { 0x80 } else { 0 });
                } else {
                    out.push(r.round(w.gaussian(i) * scale));
                }
            }
        }
        &DataClass::AllCodes { finite } => {
            let codes: Vec<u8> = (0..=255u8).filter(|&c| !finite || f.is_finite(c)).collect();
            let len = codes.len() as u64;
            let offset = w.word(0, 15) % len;
            let mult = match operand {
                Operand::A => 1u64,
                Operand::B => 167u64,
            };
            for i in start..end {
                let pos = (i % len * mult + offset) % len;
                out.push(codes[pos as usize]);
            }
        }
        &DataClass::Subnormal { scale } => {
            let mmask = (1u64 << f.mantissa_bits()) - 1;
            for i in start..end {
                let sel = w.word(i, 7);
                if sel & 3 != 0 {
                    let mant = ((sel >> 8) & mmask) as u8;
                    let sign = if (sel >> 16) & 1 == 1 { 0x80 } else { 0 };
                    out.push(sign | mant);
                } else {
                    out.push(r.round(w.gaussian(i) * scale));
                }
            }
        }
        &DataClass::Binades { scale, width, silent, mirror } => {
            let h = f.emax() as u64 - 3;
            let live_mask = (1u64 << silent) - 1;
            let (k, half) = (k as u64, k as u64 / 2);
            for i in start..end {
                // A mirrored element is its source's (half a row back), negated in B.
                let c = i % k;
                let (i, c, negate) = match mirror && c >= half && c < 2 * half {
                    true => (i - half, c - half, operand == Operand::B),
                    false => (i, c, false),
                };
                let word = w.block_word(c / width);
                if word & live_mask != 0 {
                    out.push(0);
                    continue;
                }
                let t = (((word >> 32) * (2 * h + 1)) >> 32) as i32 - h as i32;
                let code = r.round(w.gaussian(i) * scale * pow2(t));
                out.push(if negate { code ^ 0x80 } else { code });
            }
        }
        &DataClass::Special { scale } => {
            for i in start..end {
                out.push(r.round(w.gaussian(i) * scale));
            }
            if k > 0 {
                for (local, r) in rows.clone().enumerate() {
                    let rw = w.row_word(r as u64);
                    let p1 = local * k + ((rw >> 8) % k as u64) as usize;
                    let p2 = local * k + ((rw >> 32) % k as u64) as usize;
                    match rw % 8 {
                        0 => out[p1] = f.nan(false),
                        1 => out[p1] = f.inf(false),
                        2 => out[p1] = f.inf(true),
                        3 => {
                            out[p1] = f.inf(false);
                            if p2 != p1 {
                                out[p2] = f.inf(true);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Whether a row ships its operands by reference: `inputs` is set and `a` or `b` is empty while the shape
/// says it holds elements.
pub fn by_reference(row: &Row) -> bool {
    let holds = |rows: i64| dims_product(&[row.batch, rows, row.k]).is_some_and(|x| x > 0);
    row.ext.inputs.is_some() && ((row.a.is_empty() && holds(row.m)) || (row.b.is_empty() && holds(row.n)))
}

/// Regenerates the operands of every row that ships them by reference and checks their sha256.
pub(crate) fn materialise_rows(path: &Path, rows: &mut [Row]) -> Result<(), DatasetError> {
    for row in rows.iter_mut() {
        if !by_reference(row) {
            continue;
        }
        let err = |what: String| DatasetError::invalid(path, Some(&row.id), what);
        let inputs = RowInputs::parse(row.ext.inputs.as_deref().unwrap_or_default())
            .map_err(|e| err(format!("`inputs` is not a valid inputs object: {e}")))?;
        if row.batch != 1 {
            return Err(err(format!("operands by reference need batch 1 (batch {})", row.batch)));
        }
        let dims = |x: i64| usize::try_from(x).map_err(|_| err(format!("negative dimension {x}")));
        let (m, n, k) = (dims(row.m)?, dims(row.n)?, dims(row.k)?);
        // Operands and the fp32 result, before anything is allocated.
        let (m64, n64, k64) = (m as u64, n as u64, k as u64);
        let bytes = crate::limits::sum(&[
            crate::limits::product(&[m64, k64]),
            crate::limits::product(&[n64, k64]),
            crate::limits::product(&[4, m64, n64]),
        ]);
        crate::limits::check_in_force("regenerating the operands", bytes).map_err(err)?;
        let a = generate(&inputs.spec, Operand::A, &row.fmt_a, m, k).map_err(|e| err(format!("`inputs`: {e}")))?;
        let b = generate(&inputs.spec, Operand::B, &row.fmt_b, n, k).map_err(|e| err(format!("`inputs`: {e}")))?;
        for (name, bytes, want) in [("a", &a, &inputs.a_sha256), ("b", &b, &inputs.b_sha256)] {
            let got = sha256_hex(bytes);
            if &got != want {
                return Err(err(format!(
                    "regenerated operand {name} has sha256 {got}, the row records {want} (generator mismatch)"
                )));
            }
        }
        row.a = a;
        row.b = b;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
