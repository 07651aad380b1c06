//! mmaemu-model: the numerics of NVIDIA FP8 tensor-core GEMMs as cuBLASLt runs them, bit for bit. A leaf: no I/O, no
//! threads, no environment and no registry (what a call can name is a `Catalogue` passed in); integer and IEEE-exact
//! arithmetic only, so its results do not depend on the machine, the thread count or the evaluation order.

// The model is written to be obviously right; the fast kernels live in `mmaemu-kernels` and must equal it bit for bit.

pub mod accumulate;
pub mod block_call;
pub mod block_gemm;
pub mod block_scale;
pub mod blocked_layout;
pub mod catalogue;
pub mod chain;
pub mod cutlass_rowwise;
pub mod dtype;
pub mod epilogue;
pub mod error;
pub mod format;
pub mod fpenv;
pub mod gemm;
pub mod group_scale;
pub mod interrupt;
pub mod layout;
pub mod limits;
pub mod manifest;
pub mod nonfinite;
pub mod plan;
pub mod platform;
pub mod preset;
pub mod preset_document;
pub mod profile;
pub mod round;
pub mod rule;
pub mod scaled_mm;
pub mod splitk;
pub mod tensor;
pub mod warning;

pub use accumulate::{accumulate, execute, ChainEngine, Operands, ReferenceEngine};
pub use block_scale::dot_scaled;
pub use catalogue::Catalogue;
pub use chain::{dot, Chain};
pub use epilogue::{Epilogue, OutDtype};
pub use error::{Category, Error, InvalidKind, Result};
pub use format::Format;
pub use gemm::{gemm, gemm_with, Output};
pub use group_scale::{b200_tcgen05_mxf4nvf4, dot_group_scaled, GroupChain};
pub use plan::{Plan, Scheme, SplitK};
pub use platform::Platform;
pub use preset::{BlockRounding, CEntry, Maturity, Preset, PresetSpec, ScaleFormat};
pub use profile::{Caller, Profile, RejectRule};
pub use rule::SplitRule;
pub use splitk::{
    embedded_rows, resolve_splitk, table_info, table_lookup, try_table_lookup, SplitDecision, SplitKey, SplitRequest,
    SplitSource, Table, TableInfo, TableRow, TableSource,
};
pub use warning::{Warning, WarningKind};
