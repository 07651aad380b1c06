//! mmaemu-datasets: reads, validates and writes mmaemu recordings, the Parquet interchange format `mmaemu-recording/1`
//! (`docs/recording-format.md`), and finds recording files on disk.

// The crate knows the format only: shapes, dtype widths, the call object, the expected outcome of each row. It knows
// nothing about the numerics (no FP8 arithmetic) and nothing about cuBLASLt. `read_recording` reads one file and
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
mod schema;
pub mod select;
pub mod shard;
pub mod splitk_table;
pub mod splitk_write;
mod validate;
pub use validate::UNKNOWN_PRESET;
mod write;

pub use call::{BiasSpec, Call, FillValue, MatSpec, OutSpec, ScaleSpec, ScaleValue};
pub use discover::{discover, is_recording_name};
pub use error::DatasetError;
pub use merge::{merge, MergeReport};
pub use read::{open_regular, read_recording, read_recording_with, ReadOptions};
pub use row::{
    dtype_width, torch_dtype_name, Expectation, FileMeta, Op, OutSelect, Recording, Row, RowExt, Truth,
    EXPECTED_ERRORS, FORMAT_V1, SPLIT_SCHEMES,
};
pub use schema::{column_names, extension_column_names};
pub use splitk_table::{read_splitk_table, SplitKTable, SplitKTableRow, SPLITK_TABLE_FORMAT};
pub use write::{write_file_atomic, write_recording, RecordingWriter};
