//! mmaemu-harness: the test harness of mmaemu.
//!
//! - [`recordings`]: one libtest-mimic trial per recorded row of every Parquet recording (the `recordings`
//!   test target), each replayed lazily through the model, with a readable diff and a one-line reproduction
//!   command when it fails;
//! - [`gen`]: input generators after TestFloat and MMA-Sim (curated exponents x significand patterns,
//!   random bit-streams, subnormal and NaN/Inf codes, huge and ragged K) for the `fuzz` test target;
//! - [`seed`]: seeded, deterministic proptest runners (`MMAEMU_FUZZ_SEED`, `MMAEMU_FUZZ_CASES`);
//! - [`select`]: reading one row of a recording without decoding the others (one trial run alone);
//! - [`backends`]: the chain engines every fuzz run compares with the model (the hook the kernels plug into).
//!
//! The computed status table (validated / experimental / failing per preset, profile and feature) lives in
//! the root crate as `mmaemu::status`, so that the `mmaemu` command line can print it without depending on
//! this crate (this crate depends on `mmaemu`).

pub mod backends;
pub mod gen;
pub mod recordings;
pub mod seed;
pub mod select;

pub use backends::backends;
