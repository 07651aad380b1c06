//! Replaying recordings: one recorded row through the model, compared bit for bit with what the hardware returned (+0
//! and -0 differ, NaN payloads are compared), and the per-file and total counts of `replay`.

// This module owns the mapping from a recording row (format `mmaemu-recording/1`) to a model call. Ops `mma`,
// `accumulator` and `gemm` replay here; a row that cannot be replayed yet is a skip with its reason, never a pass.

use crate::under::{Resolved, Under};
use mmaemu_datasets::{Expectation, Op, OutSelect, Row};
use mmaemu_model::{
    epilogue, execute, gemm_with, Chain, ChainEngine, Epilogue, Error, Format, Operands, OutDtype, Plan,
    ReferenceEngine, Scheme, SplitK,
};
use std::fmt;

/// The first element where a replay differs from the recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// Flat index of the element (row-major over [batch, m, n], or the diagonal position).
    pub index: usize,
    /// The recorded bits.
    pub expected: u32,
    /// The replayed bits.
    pub actual: u32,
    /// The element dtype, for display.
    pub dtype: OutDtype,
    /// How many elements differ in all.
    pub count: usize,
    /// Number of elements compared.
    pub total: usize,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.dtype.width() * 2;
        write!(
            f,
            "{} of {} elements differ; first at index {}: expected 0x{:0w$X} ({}) actual 0x{:0w$X} ({}) [{}]",
            self.count,
            self.total,
            self.index,
            self.expected,
            show(self.dtype.to_f64(self.expected)),
            self.actual,
            show(self.dtype.to_f64(self.actual)),
            self.dtype,
        )
    }
}

/// A value for humans: exact-looking decimal and, for finite nonzero values, the hex-float form.
fn show(v: f64) -> String {
    if v.is_finite() && v != 0.0 {
        format!("{v:e} = {}", hexf(v))
    } else {
        format!("{v}")
    }
}

/// `0x1.xxxxp+e` for a finite nonzero f64.
pub fn hexf(v: f64) -> String {
    let bits = v.to_bits();
    let sign = if v < 0.0 { "-" } else { "" };
    let field = ((bits >> 52) & 0x7FF) as i64;
    let mut mant = bits & ((1u64 << 52) - 1);
    let mut exp = field - 1023;
    if field == 0 {
        // Subnormal f64 (not reachable from fp32 values, kept for completeness).
        let lz = mant.leading_zeros() as i64 - 11;
        mant = (mant << lz) & ((1u64 << 52) - 1);
        exp = -1022 - lz;
    }
    let mut digits = format!("{mant:013x}");
    while digits.ends_with('0') && digits.len() > 1 {
        digits.pop();
    }
    if mant == 0 {
        format!("{sign}0x1p{exp:+}")
    } else {
        format!("{sign}0x1.{digits}p{exp:+}")
    }
}

/// The outcome of replaying one row.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every bit matches (or the expected error category was raised).
    Pass,
    /// The replay differs: bits, or the error category.
    Fail(Failure),
    /// The row cannot be replayed here, with the reason.
    Skip(String),
}

impl Verdict {
    /// `pass`, `fail` or `skip`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail(_) => "fail",
            Verdict::Skip(_) => "skip",
        }
    }

    /// The failure or the skip reason, in words; None for a pass.
    pub fn message(&self) -> Option<String> {
        match self {
            Verdict::Pass => None,
            Verdict::Fail(f) => Some(f.to_string()),
            Verdict::Skip(reason) => Some(reason.clone()),
        }
    }
}

/// Why a row failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// Result bits differ.
    Bits(Difference),
    /// The recording expects an error and the replay returned a result, or another error.
    Error { expected: String, actual: String },
    /// The recording expects a result and the replay raised.
    Raised(String),
    /// The result's sha256 differs from the recorded one.
    Sha256 { expected: String, actual: String },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Bits(d) => d.fmt(f),
            Failure::Error { expected, actual } => write!(f, "expected {expected}, got {actual}"),
            Failure::Raised(e) => write!(f, "expected a result, the replay raised {e}"),
            Failure::Sha256 { expected, actual } => write!(f, "sha256 of the result {actual} != recorded {expected}"),
        }
    }
}

/// A row's operand format.
pub(crate) fn format_of(name: &str) -> Result<Format, String> {
    Format::from_name(name).ok_or_else(|| format!("operand format '{name}' is not an FP8 format this op replays"))
}

/// The recorded split of a row.
pub(crate) fn split_of(row: &Row, resolved: &Resolved) -> Result<SplitK, String> {
    let s = row.split_s.unwrap_or(1);
    let scheme = resolved.scheme.as_str();
    if scheme == "unknown" {
        return Err(format!(
            "split S = {s} with scheme 'unknown': no reduction rule is established (mmaemu fit splitk)"
        ));
    }
    let scheme = Scheme::from_name(scheme).ok_or_else(|| format!("unknown split scheme '{scheme}'"))?;
    if s < 1 {
        return Err(format!("invalid split_s {s}"));
    }
    SplitK::new(s as usize, scheme).map_err(|e| e.to_string())
}

/// What the replay computed: element bits of a dtype, or an error.
pub type Computed = Result<(Vec<u32>, OutDtype), Error>;

/// Replay one row through the model and compare it with the recording.
pub fn replay_row(row: &Row) -> Verdict {
    replay_row_on(row, &ReferenceEngine)
}

/// Replay one row with a chain engine computing the chains of its GEMM (ops `accumulator`, `gemm` and
/// `scaled_mm`; op `mma` rows start from a recorded accumulator, which chain engines do not take: only the
/// reference replays them, other engines skip them) and compare it with the recording.
pub fn replay_row_on(row: &Row, engine: &dyn ChainEngine) -> Verdict {
    replay_row_under(row, engine, &Under::own())
}

/// [`replay_row_on`] with the row under `under`'s platform (see [`Under`]).
pub fn replay_row_under(row: &Row, engine: &dyn ChainEngine, under: &Under) -> Verdict {
    let computed = match compute_under(row, engine, under) {
        Ok(c) => c,
        Err(skip) => return Verdict::Skip(skip),
    };
    judge(row, computed)
}

/// Compare a computation with the row's expectation.
pub fn judge(row: &Row, computed: Computed) -> Verdict {
    match (&row.expected, computed) {
        (Expectation::Error(want), Err(e)) => {
            if e.category().name() == want {
                Verdict::Pass
            } else {
                Verdict::Fail(Failure::Error { expected: want.clone(), actual: e.to_string() })
            }
        }
        (Expectation::Error(want), Ok(_)) => {
            Verdict::Fail(Failure::Error { expected: want.clone(), actual: "a result".into() })
        }
        (_, Err(e)) => Verdict::Fail(Failure::Raised(e.to_string())),
        (Expectation::Bits(bytes), Ok((bits, dtype))) => {
            let expected = epilogue::from_le_bytes(bytes, dtype);
            match first_difference(&expected, &bits, dtype) {
                None => Verdict::Pass,
                Some(d) => Verdict::Fail(Failure::Bits(d)),
            }
        }
        (Expectation::Sha256(want), Ok((bits, dtype))) => {
            // The sampled elements a row keeps beside its hash are evidence too: each must match.
            if let Some(d) = sample_difference(row, &bits, dtype) {
                return Verdict::Fail(Failure::Bits(d));
            }
            let got = sha256_hex(&epilogue::to_le_bytes(&bits, dtype));
            if got.eq_ignore_ascii_case(want) {
                Verdict::Pass
            } else {
                Verdict::Fail(Failure::Sha256 { expected: want.clone(), actual: got })
            }
        }
    }
}

pub use mmaemu_datasets::digest::sha256_hex;

/// The first of a row's `expected_samples` that differs from the computed result (an index outside it
/// differs too), as a difference over the samples.
fn sample_difference(row: &Row, bits: &[u32], dtype: OutDtype) -> Option<Difference> {
    let samples = mmaemu_datasets::inputs::Samples::parse(row.ext.expected_samples.as_deref()?).ok()?;
    let got: Vec<u32> =
        samples.index.iter().map(|&i| usize::try_from(i).ok().and_then(|i| bits.get(i)).map_or(!0, |&b| b)).collect();
    first_difference(&samples.bits, &got, dtype)
}

/// The first differing element of two bit vectors, and how many differ (a length mismatch counts the
/// missing elements as differing).
pub fn first_difference(expected: &[u32], actual: &[u32], dtype: OutDtype) -> Option<Difference> {
    let total = expected.len().max(actual.len());
    let mut first = None;
    let mut count = 0;
    for i in 0..total {
        let (e, a) = (expected.get(i).copied(), actual.get(i).copied());
        if e != a {
            count += 1;
            if first.is_none() {
                first = Some((i, e.unwrap_or(0), a.unwrap_or(0)));
            }
        }
    }
    first.map(|(index, expected, actual)| Difference { index, expected, actual, dtype, count, total })
}

/// Compute a row's result with the model. `Err(reason)` means the row cannot be replayed (a skip).
pub fn compute(row: &Row) -> Result<Computed, String> {
    compute_on(row, &ReferenceEngine)
}

/// Why an engine other than the model skips `mma` rows.
pub const MMA_ON_ENGINE: &str =
    "op mma: chain engines start every chain from +0 (mma rows start from a recorded accumulator; the reference replays them)";

/// [`compute`] with a chain engine for the GEMM ops (see [`replay_row_on`]).
pub fn compute_on(row: &Row, engine: &dyn ChainEngine) -> Result<Computed, String> {
    compute_under(row, engine, &Under::own())
}

/// [`compute_on`] with the row under `under`'s platform (see [`Under`]).
pub fn compute_under(row: &Row, engine: &dyn ChainEngine, under: &Under) -> Result<Computed, String> {
    // An engine starts every chain from +0; an mma row starts from its recorded accumulator, so only the model
    // computes it, and another engine must not be credited with its pass.
    if row.op == Op::Mma && engine.name() != ReferenceEngine.name() {
        return Err(MMA_ON_ENGINE.to_string());
    }
    let resolved = under.resolve(row);
    match row.op {
        Op::Mma => compute_mma(row, &resolved),
        Op::Accumulator | Op::Gemm => compute_gemm(row, engine, &resolved),
        Op::ScaledMm => crate::call::compute_scaled_mm_resolved(row, engine, &resolved),
    }
}

/// (batch, m, n, k) of a row, once the fp32 result they describe fits the memory ceiling.
fn dims(row: &Row) -> Result<(usize, usize, usize, usize), String> {
    let conv = |x: i64| usize::try_from(x).map_err(|_| format!("negative dimension {x}"));
    let d = (conv(row.batch)?, conv(row.m)?, conv(row.n)?, conv(row.k)?);
    let elements = mmaemu_datasets::limits::product(&[d.0 as u64, d.1 as u64, d.2 as u64]);
    mmaemu_datasets::limits::check_in_force("the result", elements.and_then(|e| e.checked_mul(4)))?;
    Ok(d)
}

/// op `mma`: out[t, i, j] = the preset's chain over k of a[t, i, k] * b[t, j, k] from c[t, i, j].
fn compute_mma(row: &Row, resolved: &Resolved) -> Result<Computed, String> {
    let preset = resolved.preset.clone()?;
    let (fa, fb) = (format_of(&row.fmt_a)?, format_of(&row.fmt_b)?);
    let (batch, m, n, k) = dims(row)?;
    let c = row.c.as_deref().ok_or("op mma without c")?;
    if batch == 0 || m == 0 || n == 0 {
        // An empty result: nothing to compute (and no loop over a huge other dimension).
        return Ok(Ok((Vec::new(), OutDtype::Float32)));
    }
    let chain = Chain::new(&preset, fa, fb);
    let mut out = Vec::with_capacity(batch * m * n);
    for t in 0..batch {
        for i in 0..m {
            let ra = &row.a[(t * m + i) * k..(t * m + i + 1) * k];
            for j in 0..n {
                let rb = &row.b[(t * n + j) * k..(t * n + j + 1) * k];
                let o = (t * m + i) * n + j;
                let cv = f32::from_bits(u32::from_le_bytes([c[4 * o], c[4 * o + 1], c[4 * o + 2], c[4 * o + 3]]));
                out.push(chain.run(ra, rb, cv).to_bits());
            }
        }
    }
    Ok(Ok((out, OutDtype::Float32)))
}

/// The epilogue of a `gemm` row: its scales and out dtype (null: mat1's own format, docs/recording-format.md),
/// with `fa` the format of mat1.
pub fn gemm_epilogue(row: &Row, fa: Format) -> Result<Epilogue, String> {
    let out = match row.out_dtype.as_deref() {
        None => OutDtype::of_format(fa),
        Some(name) => OutDtype::from_name(name).ok_or_else(|| format!("out dtype '{name}' is not replayable"))?,
    };
    let (sa, sb) = (row.scale_a.ok_or("scale_a is null")?, row.scale_b.ok_or("scale_b is null")?);
    Ok(Epilogue {
        scale_a: f32::from_bits(sa),
        scale_b: f32::from_bits(sb),
        scale_result: row.scale_result.map(f32::from_bits),
        out,
    })
}

/// ops `accumulator` and `gemm`: the plan with the recorded split, then (gemm) the epilogue.
fn compute_gemm(row: &Row, engine: &dyn ChainEngine, resolved: &Resolved) -> Result<Computed, String> {
    let preset = resolved.preset.clone()?;
    let (fa, fb) = (format_of(&row.fmt_a)?, format_of(&row.fmt_b)?);
    let (batch, m, n, k) = dims(row)?;
    if batch != 1 {
        return Err(format!("op {} with batch {batch} (the format says 1)", row.op.as_str()));
    }
    let fast = row.fast_accum.ok_or("fast_accum is null")?;
    let split = split_of(row, resolved)?;
    let ops = Operands { fa, fb, a: &row.a, b: &row.b, m, n, k };
    let (acc, dtype) = match row.op {
        Op::Accumulator => {
            match Plan::new(&preset, k, fast, split).and_then(|plan| execute(&preset, &plan, &ops, engine)) {
                Ok(acc) => (acc.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), OutDtype::Float32),
                Err(e) => return Ok(Err(e)),
            }
        }
        _ => {
            let epi = gemm_epilogue(row, fa)?;
            let out = epi.out;
            match gemm_with(&preset, &ops, fast, split, &epi, engine) {
                Ok(o) => (o.bits, out),
                Err(e) => return Ok(Err(e)),
            }
        }
    };
    let bits = match row.out_select {
        OutSelect::Full => acc,
        OutSelect::Diagonal => (0..m.min(n)).map(|i| acc[i * n + i]).collect(),
    };
    Ok(Ok((bits, dtype)))
}
