//! The backends a report replays the datasets through, benchmarks and fuzzes: the model itself
//! (`reference`, the canonical replay of [`crate::replay::replay_row`]) and every chain engine this build
//! offers ([`ChainEngine`]: the hook the fast kernels plug into).
//!
//! To add a backend, register its engine in [`crate::backend`] (or push it in [`available`]): an engine
//! backend replays `gemm`, `accumulator` and `scaled_mm` rows through its engine (plan, split and epilogue
//! from the model), and `mma` rows — whose chains start from a recorded accumulator, which the engine
//! interface does not take — are skips for it.

use crate::replay::{judge, Computed, Outcome};
use crate::replay_call::CallParts;
use mmaemu_datasets::{Op, OutSelect, Row};
use mmaemu_model::splitk::SplitRequest;
use mmaemu_model::{
    execute, ChainEngine, Epilogue, Format, Operands, OutDtype, Plan, Preset, ReferenceEngine, Scheme, SplitK,
};

/// One backend of the report.
pub trait Backend: Sync {
    /// Its name in the report (`reference`, `cpu:avx2`, ...).
    fn name(&self) -> String;
    /// One line saying what it is.
    fn describe(&self) -> String;
    /// Replay one recorded row.
    fn replay(&self, row: &Row) -> Outcome;
    /// Its chain engine (benchmarks and the differential fuzz run through it).
    fn engine(&self) -> &dyn ChainEngine;
    /// Is it the model itself (the fuzz compares the others with it)?
    fn is_reference(&self) -> bool {
        false
    }
}

/// The model: the canonical replay.
pub struct Reference;

impl Backend for Reference {
    fn name(&self) -> String {
        "reference".into()
    }
    fn describe(&self) -> String {
        "the model (mmaemu_model::ReferenceEngine: one Chain::run per output); the canonical replay".into()
    }
    fn replay(&self, row: &Row) -> Outcome {
        crate::replay::replay_row(row)
    }
    fn engine(&self) -> &dyn ChainEngine {
        &ReferenceEngine
    }
    fn is_reference(&self) -> bool {
        true
    }
}

/// Any chain engine, replaying through the model's plans and epilogue.
pub struct EngineBackend {
    engine: &'static dyn ChainEngine,
    status: String,
}

impl EngineBackend {
    /// Wrap an engine; `status` says how it was found (e.g. its self-check verdict).
    pub fn new(engine: &'static dyn ChainEngine, status: impl Into<String>) -> EngineBackend {
        EngineBackend { engine, status: status.into() }
    }
}

impl Backend for EngineBackend {
    fn name(&self) -> String {
        self.engine.name()
    }
    fn describe(&self) -> String {
        format!("chain engine '{}' ({}; plans, splits and epilogue from the model)", self.engine.name(), self.status)
    }
    fn replay(&self, row: &Row) -> Outcome {
        match compute_with(row, self.engine) {
            Ok(c) => judge(row, c),
            Err(reason) => Outcome::Skip(reason),
        }
    }
    fn engine(&self) -> &dyn ChainEngine {
        self.engine
    }
}

const UNKNOWN: &str = "split scheme 'unknown': no reduction rule is established (mmaemu fit splitk)";

/// Every backend of this build, the reference first, then every engine of the facade's registry
/// ([`crate::backend::registry`]: each SIMD level of the CPU backend) that is available and passed its
/// self-check.
pub fn available() -> Vec<Box<dyn Backend>> {
    let mut out: Vec<Box<dyn Backend>> = vec![Box::new(Reference)];
    let registry = crate::backend::registry();
    for (name, status) in registry.describe() {
        if name == "reference" || !status.starts_with("available") {
            continue;
        }
        if let Ok(selected) = registry.resolve(&name) {
            if selected.name == name {
                out.push(Box::new(EngineBackend::new(selected.engine, status)));
            }
        }
    }
    out
}

/// Compute a row with a chain engine. `Err(reason)` is a skip. `mma` rows are skips (the engine interface
/// starts every chain from +0); rows the model cannot replay either are the model's skips.
pub fn compute_with(row: &Row, engine: &dyn ChainEngine) -> Result<Computed, String> {
    match row.op {
        Op::Mma => Err("op mma: chain engines start every chain from +0 (replayed by the reference only)".into()),
        Op::ScaledMm => {
            let parts = CallParts::of_row(row)?;
            let s = row.split_s.unwrap_or(1) as i64;
            let request = match row.split_scheme.as_deref().unwrap_or("none") {
                "unknown" => return Err(UNKNOWN.into()),
                "none" => SplitRequest::Count(s),
                scheme => SplitRequest::Pair(s, scheme.to_string()),
            };
            Ok(match parts.call(request).run_with(engine) {
                Err(e) => Err(e),
                Ok(res) => {
                    let out = &res.out;
                    let dtype = out.dtype.out_dtype().unwrap_or(OutDtype::Float32);
                    let bytes = if out.shape.len() == 2 { out.logical_bytes() } else { out.storage.clone() };
                    Ok((mmaemu_model::epilogue::from_le_bytes(&bytes, dtype), dtype))
                }
            })
        }
        Op::Gemm | Op::Accumulator => gemm_with(row, engine),
    }
}

fn gemm_with(row: &Row, engine: &dyn ChainEngine) -> Result<Computed, String> {
    let preset = match Preset::by_name(&row.preset) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let fmt = |n: &str| Format::from_name(n).ok_or_else(|| format!("operand format '{n}' is not an FP8 format"));
    let (fa, fb) = (fmt(&row.fmt_a)?, fmt(&row.fmt_b)?);
    let dim = |x: i64| usize::try_from(x).map_err(|_| format!("negative dimension {x}"));
    let (m, n, k) = (dim(row.m)?, dim(row.n)?, dim(row.k)?);
    if row.batch != 1 {
        return Err(format!("op {} with batch {} (the format says 1)", row.op.as_str(), row.batch));
    }
    if row.split_scheme.as_deref() == Some("unknown") {
        return Err(UNKNOWN.into());
    }
    let fast = row.fast_accum.ok_or("fast_accum is null")?;
    let s = row.split_s.unwrap_or(1).max(1) as usize;
    let scheme = Scheme::from_name(row.split_scheme.as_deref().unwrap_or("none")).ok_or("unknown split scheme")?;
    let split = match SplitK::new(s, scheme) {
        Ok(x) => x,
        Err(e) => return Ok(Err(e)),
    };
    let plan = match Plan::new(&preset, k, fast, split) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let ops = Operands { fa, fb, a: &row.a, b: &row.b, m, n, k };
    let acc = match execute(&preset, &plan, &ops, engine) {
        Ok(a) => a,
        Err(e) => return Ok(Err(e)),
    };
    let (bits, dtype) = if row.op == Op::Accumulator {
        (acc.iter().map(|x| x.to_bits()).collect::<Vec<u32>>(), OutDtype::Float32)
    } else {
        let out = match row.out_dtype.as_deref() {
            None => OutDtype::of_format(fa),
            Some(name) => OutDtype::from_name(name).ok_or_else(|| format!("out dtype '{name}' is not replayable"))?,
        };
        let epi = Epilogue {
            scale_a: f32::from_bits(row.scale_a.ok_or("scale_a is null")?),
            scale_b: f32::from_bits(row.scale_b.ok_or("scale_b is null")?),
            scale_result: row.scale_result.map(f32::from_bits),
            out,
        };
        let bits = if k == 0 { vec![0; acc.len()] } else { epi.apply(&acc) };
        (bits, out)
    };
    let bits = match row.out_select {
        OutSelect::Full => bits,
        OutSelect::Diagonal => (0..m.min(n)).map(|i| bits[i * n + i]).collect(),
    };
    Ok(Ok((bits, dtype)))
}
