//! `mmaemu fit`: establish, from recorded data alone, what the model otherwise takes from docs/reference.md — the
//! split-K reduction rule of a GPU's kernels ([`splitk`], over the candidate rules of [`rules`]) and the envelope above
//! which cuBLASLt never splits ([`envelope`]) — each with an honest verdict.

// Exit codes of the commands (`mmaemu fit`): 0 the fit holds; 1 it does not (`fit splitk`: a group that no rule, nor
// a mixture of rules, reproduces; `fit envelope`: held-out violations, or the table disagrees with its sidecar); 2
// unreadable input or a usage error.

pub mod envelope;
pub mod preset;
pub mod rules;
pub mod splitk;

use std::path::PathBuf;

/// A row a fit could not use, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRow {
    /// Row id.
    pub id: String,
    /// The recording it comes from.
    pub file: PathBuf,
    /// Why.
    pub reason: String,
}
