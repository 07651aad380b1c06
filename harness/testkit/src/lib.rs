//! mmaemu-testkit: what the differential tests of model, kernels and harness share, in one place: the independent
//! oracle, the proptest generators and the seeded runners.

// - `oracle`: a second, independent implementation of the block step and the chain in exact big-integer arithmetic (it
//   shares no code with the model);
// - `generators`: proptest strategies for operands, accumulators and GEMM shapes (TestFloat-style curated codes,
//   bit-streams, windows, subnormals and specials, huge and ragged K);
// - `raw_parquet`: Parquet files read and written without the recording format's checks;
// - `recordings`: recordings crafted from the shipped ones that tests of several crates replay;
// - `seed`: seeded, deterministic runners and the case budget (`MMAEMU_FUZZ_SEED`, `MMAEMU_FUZZ_CASES`).

pub mod generators;
pub mod oracle;
pub mod raw_parquet;
pub mod recordings;
pub mod seed;
