//! What a recording run — a sweep or a heuristics grid — is told by its caller: where to write, whether
//! to resume an interrupted run, how much to do, and the overrides of the spec.

use crate::caller::Caller;
use mmaemu_datasets::shard::Shard;
use serde_json::Value;
use std::path::PathBuf;

/// Options of a sweep or heuristics run (the command line's).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The output: a recording (sweep) or a table, `.parquet`, with its `.json` sidecar (heuristics).
    pub out: PathBuf,
    /// Clear the parts of an interrupted run instead of resuming it.
    pub restart: bool,
    /// Keep the parts directory after the merge.
    pub keep_parts: bool,
    /// No progress output.
    pub quiet: bool,
    /// Run only the first N cases (sweep) or keys (heuristics).
    pub limit: Option<u64>,
    /// Stop (exit code 5) after writing this many chunks in this process (to test resuming).
    pub stop_after_chunks: Option<u64>,
    /// Sweeps: the profile the rows replay under (else the spec's, else by GPU). Heuristics: unused.
    pub profile: Option<String>,
    /// Caller override (else the spec's).
    pub caller: Option<Caller>,
    /// Extra keys merged into the platform (e.g. the torch version of the device).
    pub platform_extra: Option<Value>,
    /// Record only this shard's chunks (`--shard I/N`).
    pub shard: Option<Shard>,
    /// Replace an existing output.
    pub force: bool,
}
