//! mmaemu-model: the numerics of NVIDIA FP8 tensor-core GEMMs as cuBLASLt runs them, bit for bit.
//!
//! - [`format`]: the FP8 formats, their codes and conversions;
//! - [`preset`]: the tensor-core arithmetics (ada, hopper, b200_mma_sync, user-defined);
//! - [`chain`]: the block step and the chain over K (`dot`);
//! - [`plan`]: how K is cut into chains and partial sums are combined (unsplit, split-K schemes);
//! - [`accumulate`]: plan execution, the fp32 accumulator, non-finite inputs;
//! - [`epilogue`]: scales, out dtypes, double rounding, saturation;
//! - [`gemm`]: plan + epilogue;
//! - [`profile`], [`splitk`]: the reference platforms and their split-K decisions;
//! - [`scaled_mm`]: torch 2.7.1 `torch._scaled_mm` semantics, and `explain`.
//!
//! The model is pure: no I/O, no threads, integer and IEEE-exact arithmetic only, so its results do not
//! depend on the machine, the thread count or the evaluation order. It is written to be obviously right;
//! the fast kernels live in `mmaemu-kernels` and must equal it bit for bit.

pub mod accumulate;
pub mod chain;
pub mod dtype;
pub mod epilogue;
pub mod error;
pub mod format;
pub mod gemm;
pub mod plan;
pub mod preset;
pub mod profile;
pub mod round;
pub mod scaled_mm;
pub mod splitk;
pub mod tensor;
pub mod warning;

pub use accumulate::{accumulate, execute, ChainEngine, Operands, ReferenceEngine};
pub use chain::{dot, Chain};
pub use epilogue::{Epilogue, OutDtype};
pub use error::{Category, Error, InvalidKind, Result};
pub use format::Format;
pub use gemm::{gemm, gemm_with, Output};
pub use plan::{Plan, Scheme, SplitK};
pub use preset::{CEntry, Maturity, Preset, PresetSpec};
pub use profile::{Caller, Profile, RejectRule, TableId};
pub use splitk::{
    embedded_rows, resolve_splitk, table_info, table_lookup, try_table_lookup, SplitDecision, SplitKey, SplitRequest,
    SplitSource, TableInfo, TableRow,
};
pub use warning::{Warning, WarningKind};
