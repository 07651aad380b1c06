//! mmaemu: the FP8 GEMM results NVIDIA tensor cores produce through cuBLASLt, bit for bit, on a CPU.
//!
//! This facade re-exports the model (`mmaemu_model`: formats, presets, chains, plans, the epilogue) and the
//! datasets crate (`mmaemu_datasets`: the Parquet recordings), and owns the replay of recordings through
//! the model ([`replay`]), which the `mmaemu` command line and the harness share, the backend registry
//! ([`backend`]: the model, the CPU kernels of `mmaemu_kernels`, the CUDA slot) and the GEMM benchmark
//! ([`bench`]).

pub use mmaemu_datasets as datasets;
pub use mmaemu_kernels as kernels;
pub use mmaemu_model as model;
pub use mmaemu_model::{
    accumulate, dot, gemm, Category, Chain, Epilogue, Error, Format, Operands, OutDtype, Plan, Preset, Scheme, SplitK,
};

pub mod backend;
pub mod bench;
pub mod datasets_cmd;
pub mod env;
pub mod explain;
pub mod fit;
pub mod info;
pub mod replay;
pub mod replay_call;
pub mod replay_files;
pub mod report;
pub mod selftest;
pub mod status;
