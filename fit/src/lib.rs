//! `mmaemu fit`: establish, from recorded data alone, what the model otherwise takes from docs/reference.md — the
//! split-K reduction rule of a GPU's kernels ([`splitk`], over the candidate rules of [`rules`]) and the envelope above
//! which cuBLASLt never splits ([`envelope`]) — each with an honest verdict.

// Exit codes of the commands (`mmaemu fit`): 0 the fit holds; 1 it does not (`fit splitk`: a group that no rule, nor
// a mixture of rules, reproduces; `fit envelope`: held-out violations, or the table disagrees with its sidecar); 2
// unreadable input or a usage error.

pub mod envelope;
pub mod experiment;
pub mod preset;
pub mod rules;
pub mod splitk;
pub mod verdict;

pub use experiment::Experiment;
pub use verdict::Verdict;

use mmaemu_datasets::{discover, read_recording, DatasetError, Row, Truth};
use std::path::PathBuf;

/// Which rows a fit reads as evidence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Evidence {
    /// Hardware rows only (the default: model rows are never evidence).
    #[default]
    Hardware,
    /// Model rows too, as if recorded: a simulated device's sweeps (`mmaemu-record --simulate`), to rehearse the
    /// bring-up loop without a GPU (docs/bring-up.md). Nothing fitted this way is validated.
    Simulated,
}

/// Every recording under `paths`, as (file, rows) for a fit reading `evidence`.
pub fn read_paths(paths: &[PathBuf], evidence: Evidence) -> Result<Vec<(PathBuf, Vec<Row>)>, DatasetError> {
    let mut recs = Vec::new();
    for f in discover(paths)? {
        let mut rows = read_recording(&f)?.rows;
        if evidence == Evidence::Simulated {
            for r in rows.iter_mut().filter(|r| r.truth == Truth::Model) {
                r.truth = Truth::Hardware;
            }
        }
        recs.push((f, rows));
    }
    Ok(recs)
}

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
