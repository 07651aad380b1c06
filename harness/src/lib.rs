//! mmaemu-harness: the differential-testing harness, the one place that turns hardware recordings into verdicts,
//! compared bit for bit through any chain engine. The command line, the trials, the report and the Python tests all
//! call it.

pub mod block_call;
pub mod call;
pub mod engines;
pub mod files;
pub mod inspect;
pub mod recordings;
pub mod replay;
pub mod status;
pub mod trace;
pub mod under;

pub use replay::{Failure, Verdict};
pub use under::{Resolved, Under};
