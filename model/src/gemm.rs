//! The `gemm` entry: the numerics of one FP8 GEMM without torch's argument checks — the accumulation plan
//! with a given split, then the epilogue (docs/reference.md §3 and §4; op `gemm` of the recording format).

use crate::accumulate::{execute, ChainEngine, Operands, ReferenceEngine};
use crate::epilogue::{Epilogue, OutDtype};
use crate::error::Result;
use crate::plan::{Plan, SplitK};
use crate::preset::Preset;

/// A GEMM result: the out dtype's bits per element, [m, n] row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// Element dtype.
    pub dtype: OutDtype,
    /// Rows of the result (M).
    pub m: usize,
    /// Columns of the result (N).
    pub n: usize,
    /// Element bits (in the low `dtype.width()` bytes).
    pub bits: Vec<u32>,
}

impl Output {
    /// The result as little-endian bytes of the dtype's width (the recording format's encoding).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        crate::epilogue::to_le_bytes(&self.bits, self.dtype)
    }
}

/// The GEMM A x B^T of a preset with fast or slow accumulation and a given split, then the epilogue.
/// K = 0 gives +0 everywhere without an epilogue (torch returns before calling cuBLASLt).
pub fn gemm(preset: &Preset, ops: &Operands<'_>, fast: bool, split: SplitK, epi: &Epilogue) -> Result<Output> {
    gemm_with(preset, ops, fast, split, epi, &ReferenceEngine)
}

/// [`gemm`] with a chosen chain engine.
pub fn gemm_with(
    preset: &Preset,
    ops: &Operands<'_>,
    fast: bool,
    split: SplitK,
    epi: &Epilogue,
    engine: &dyn ChainEngine,
) -> Result<Output> {
    let plan = Plan::new(preset, ops.k, fast, split)?;
    let acc = execute(preset, &plan, ops, engine)?;
    let bits = if ops.k == 0 { vec![0; acc.len()] } else { epi.apply(&acc) };
    Ok(Output { dtype: epi.out, m: ops.m, n: ops.n, bits })
}
