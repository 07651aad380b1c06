//! mmaemu-harness: the differential-testing harness, the one place that turns hardware recordings into
//! verdicts. The command line, the trials, the report and the Python tests all call it.
//!
//! - [`replay`]: one recording row to one [`Verdict`] (ops `mma`, `accumulator`, `gemm`, `scaled_mm`),
//!   through any chain engine, compared bit for bit;
//! - [`call`]: the `scaled_mm` rows: a recorded torch call rebuilt as a model call;
//! - [`files`]: a file or directory of recordings to per-file reports and totals;
//! - [`status`]: the computed status (validated / experimental / failing per preset, profile, feature);
//! - [`inspect`]: `verify`, `stats` and `show` over recording files;
//! - [`recordings`]: one libtest-mimic trial per recorded row (the `recordings` test target);
//! - [`engines`]: the chain engines the fuzz trials compare with the model.
//!
//! The oracle, the input generators and the seeded runners of the fuzz trials are `mmaemu_testkit`'s.

pub mod call;
pub mod engines;
pub mod files;
pub mod inspect;
pub mod recordings;
pub mod replay;
pub mod status;

pub use replay::{Failure, Verdict};
