//! mmaemu-bench: the GEMM benchmark (`mmaemu bench gemm`, the report's throughput), its suite (`mmaemu bench
//! suite`) and the native fp32 GEMM both compare with. The engines it measures are the kernels crate's; this
//! crate only times them.

pub mod gemm;
pub mod native;
pub mod scales;
pub mod suite;
