//! mmaemu: the FP8 GEMM results NVIDIA tensor cores produce through cuBLASLt, bit for bit, on a CPU. For Rust users
//! this package's library is `mmaemu_api` (the registry, the environment, the catalogue and the model's types), the
//! same library the Python package binds; the `mmaemu` command line is this package's binary.

// A re-export rather than the library itself: the Python package depends on `mmaemu-api` and must not pull in the
// command line's crates (clap, the harness, the reports, the benchmarks) that this package builds its binary from.

pub use mmaemu_api::*;
