//! The memory ceiling in force in this process, which the readers of untrusted input (recordings' regenerated
//! operands, bundle files, the harness's call tensors and results) check against: the model's checked arithmetic
//! and refusal, and one process-wide value that the edge sets (`--max-bytes`, `MMAEMU_MAX_BYTES`).

pub use mmaemu_model::limits::*;
use std::sync::atomic::{AtomicU64, Ordering};

static CEILING: AtomicU64 = AtomicU64::new(DEFAULT_MAX_BYTES);

/// The ceiling in force: the last [`set_ceiling`], else [`DEFAULT_MAX_BYTES`].
pub fn ceiling() -> u64 {
    CEILING.load(Ordering::Relaxed)
}

/// Set the ceiling in force for the whole process (the command line's `--max-bytes` or `MMAEMU_MAX_BYTES`, as
/// `mmaemu_api::env::max_bytes` reads it; a test's own ceiling).
pub fn set_ceiling(bytes: u64) {
    CEILING.store(bytes, Ordering::Relaxed);
}

/// [`check`] against the ceiling in force.
pub fn check_in_force(what: &str, bytes: Option<u64>) -> Result<(), String> {
    check(what, bytes, ceiling())
}
