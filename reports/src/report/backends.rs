//! The backends a report replays the datasets through, benchmarks and fuzzes: the model itself (`reference`, the
//! canonical replay of [`mmaemu_harness::replay::replay_row`]) and every chain engine this build offers
//! ([`ChainEngine`]: the hook the fast kernels plug into).

// To add a backend, register its engine in `mmaemu_api::registry` (or push it in `available`). Every backend
// replays through the harness's one replay path (`mmaemu_harness::replay::replay_row_on`): its engine computes the
// chains of `gemm`, `accumulator` and `scaled_mm` rows (plan, split and epilogue from the model); `mma` rows start from
// a recorded accumulator, which engines do not take: the reference replays them and every other backend skips them.

use mmaemu_datasets::Row;
use mmaemu_harness::replay::{replay_row, replay_row_on, Verdict};
use mmaemu_model::{ChainEngine, ReferenceEngine};

/// One backend of the report.
pub trait Backend: Sync {
    /// Its name in the report (`reference`, `cpu:avx2`, ...).
    fn name(&self) -> String;
    /// One line saying what it is.
    fn describe(&self) -> String;
    /// Replay one recorded row.
    fn replay(&self, row: &Row) -> Verdict;
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
    fn replay(&self, row: &Row) -> Verdict {
        replay_row(row)
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
    fn replay(&self, row: &Row) -> Verdict {
        replay_row_on(row, self.engine)
    }
    fn engine(&self) -> &dyn ChainEngine {
        self.engine
    }
}

/// Every backend of this build, the reference first, then every engine of the facade's registry
/// ([`mmaemu_api::registry::registry`]: each SIMD level of the CPU backend) that is available and passed its
/// self-check.
pub fn available() -> Vec<Box<dyn Backend>> {
    let mut out: Vec<Box<dyn Backend>> = vec![Box::new(Reference)];
    let registry = mmaemu_api::registry();
    for (name, status) in registry.describe() {
        if name == "reference" || !status.is_available() {
            continue;
        }
        if let Ok(selected) = registry.resolve(&name) {
            if selected.name == name {
                out.push(Box::new(EngineBackend::new(selected.engine, status.to_string())));
            }
        }
    }
    out
}
