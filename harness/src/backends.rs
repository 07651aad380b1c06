//! The chain engines the fuzz trials compare with the model, bit for bit (`fuzz/backend/<name>` trials).
//!
//! This is the hook a new backend plugs into: add its engine to [`backends`] (behind its cargo feature or
//! run-time detection, as it needs) and `cargo test` fuzzes it against `mmaemu_model::ReferenceEngine`
//! on random GEMMs, fast and slow, unsplit and split.

use mmaemu::kernels::{CpuEngine, SimdLevel};
use mmaemu_model::{ChainEngine, ReferenceEngine};

/// Every chain engine available in this build, the model's own reference engine first, then the CPU
/// backend at every SIMD level this machine supports (best first, portable last).
pub fn backends() -> Vec<Box<dyn ChainEngine>> {
    let mut v: Vec<Box<dyn ChainEngine>> = vec![Box::new(ReferenceEngine)];
    v.extend(SimdLevel::available().into_iter().map(|l| Box::new(CpuEngine::with_level(l)) as Box<dyn ChainEngine>));
    v
}
