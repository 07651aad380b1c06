//! Raw Parquet for the tests that need files the validating writer refuses (mislabelled rows, bad metadata):
//! one file read as its single record batch and its key-value metadata, and written back the same way.

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_writer::{ArrowWriter, ArrowWriterOptions};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::path::Path;

/// The file's rows as one record batch, and its key-value metadata without `ARROW:schema` (the writer adds
/// it again).
pub fn read(path: &Path) -> Result<(RecordBatch, Vec<KeyValue>), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| e.to_string())?;
    let rows = builder.metadata().file_metadata().num_rows().max(1) as usize;
    let kv: Vec<KeyValue> = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.key != "ARROW:schema")
        .collect();
    let mut batches: Vec<RecordBatch> = builder
        .with_batch_size(rows)
        .build()
        .map_err(|e| e.to_string())?
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    if batches.len() != 1 {
        return Err(format!("{}: {} batches, expected one", path.display(), batches.len()));
    }
    Ok((batches.remove(0), kv))
}

/// The bytes of a Parquet file holding `batch` with the key-value metadata `kv`; with `skip_arrow_schema` the
/// writer leaves out its `ARROW:schema` entry.
pub fn encode(batch: &RecordBatch, kv: Vec<KeyValue>, skip_arrow_schema: bool) -> Result<Vec<u8>, String> {
    let props = WriterProperties::builder().set_key_value_metadata(Some(kv)).build();
    let opts = ArrowWriterOptions::new().with_properties(props).with_skip_arrow_metadata(skip_arrow_schema);
    let mut w = ArrowWriter::try_new_with_options(Vec::new(), batch.schema(), opts).map_err(|e| e.to_string())?;
    w.write(batch).map_err(|e| e.to_string())?;
    w.into_inner().map_err(|e| e.to_string())
}

/// Writes `batch` with the key-value metadata `kv` to `path`.
pub fn write(path: &Path, batch: &RecordBatch, kv: Vec<KeyValue>) -> Result<(), String> {
    let bytes = encode(batch, kv, false)?;
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}
