//! mmaemu-datasets: every file mmaemu reads or writes — recordings (`mmaemu-recording/1`, docs/recording-format.md),
//! split-K tables, platform bundles and the process's catalogue of loaded ones — and the committed data.

// The crate reads and checks files; the numerics are the model's. It checks a row's labels against the catalogue's
// presets and profiles, a split-K table against its cuBLASLt sidecar, and a bundle's files against its manifest. `read_recording` reads one file and
// validates every row (typed `DatasetError`s, never a panic); `write_recording` validates and writes one file
// atomically (`RecordingWriter`: the same, in parts); `shard` and `merge`: the shards of one recorder run, and
// their merge into the file one run writes.

mod call;
pub mod digest;
mod discover;
mod error;
pub mod inputs;
pub mod limits;
mod merge;
pub mod platform;
mod read;
mod row;
mod scale_tensor;
pub use scale_tensor::block_scales;
mod schema;
pub mod select;
pub mod shard;
pub mod splitk_table;
pub mod splitk_write;
mod validate;
pub use validate::UNKNOWN_PRESET;
mod write;

pub use call::{BiasSpec, Call, FillValue, MatSpec, OutSpec, ScaleLayout, ScaleSpec, ScaleValue, Scaling};
pub use discover::{discover, is_recording_name};
pub use error::DatasetError;
pub use merge::{merge, MergeReport};
pub use read::{open_regular, read_recording, read_recording_with, ReadOptions};
pub use row::{
    dtype_packing, dtype_width, torch_dtype_name, Expectation, FileMeta, Op, OutSelect, Recording, Row, RowExt, Truth,
    EXPECTED_ERRORS, FORMAT_V1, SPLIT_SCHEMES,
};
pub use schema::{column_names, extension_column_names};
pub use splitk_table::{read_splitk_table, SplitKTable, SplitKTableRow, SPLITK_TABLE_FORMAT};
pub use write::{write_file_atomic, write_recording, RecordingWriter};
