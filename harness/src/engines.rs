//! The chain engines the fuzz trials compare with the model, bit for bit (`fuzz/backend/<name>` trials): the hook a new
//! backend plugs into.

// To plug in a new backend, add its engine to `all` (behind its cargo feature or run-time detection, as it needs) and
// `cargo test` fuzzes it against `mmaemu_model::ReferenceEngine` on random GEMMs, fast and slow, unsplit and split.

use mmaemu_api::registry::{registry, Placement};
use mmaemu_kernels::CpuEngine;
use mmaemu_model::{ChainEngine, ReferenceEngine};

/// Every chain engine available in this build, the model's own reference engine first, then the CPU
/// backend at every SIMD level this machine supports (best first, portable last; each as it chooses its tiling per
/// call, then with each tiling fixed: `cpu:<level>/panels`, `cpu:<level>/products`), then the CUDA backend
/// when GPU 0 opened and at least one kernel passed its gate (builds with the `cuda` feature).
pub fn all() -> Vec<Box<dyn ChainEngine>> {
    let mut v: Vec<Box<dyn ChainEngine>> = vec![Box::new(ReferenceEngine)];
    for level in mmaemu_api::env::simd_levels() {
        v.extend(
            CpuEngine::with_level(level).with_every_tiling().into_iter().map(|e| Box::new(e) as Box<dyn ChainEngine>),
        );
    }
    if let Ok(selected) = registry().resolve_for("cuda", Some(Placement::Gpu(0)), None) {
        v.push(Box::new(selected.engine));
    }
    v
}

/// The fallback warnings of the GPU engines so far: a call a GPU engine computed on the CPU instead
/// (a failed launch) did not test the GPU, so a fuzz trial fails on any.
pub fn gpu_fallbacks() -> Vec<String> {
    if !mmaemu_kernels::cuda::built() {
        return Vec::new();
    }
    registry().gpu(0).warnings()
}
