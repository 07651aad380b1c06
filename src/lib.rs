//! mmaemu: the FP8 GEMM results NVIDIA tensor cores produce through cuBLASLt, bit for bit, on a CPU. This facade
//! re-exports the crates of the workspace for Rust users (`model`, `kernels`, `datasets`, `harness`, `fit`, `reports`);
//! the `mmaemu` command line is this package's binary.

pub use mmaemu_datasets as datasets;
pub use mmaemu_fit as fit;
pub use mmaemu_harness as harness;
pub use mmaemu_kernels as kernels;
pub use mmaemu_model as model;
pub use mmaemu_model::{
    accumulate, dot, gemm, Category, Chain, Epilogue, Error, Format, Operands, OutDtype, Plan, Preset, Scheme, SplitK,
};
pub use mmaemu_reports as reports;
