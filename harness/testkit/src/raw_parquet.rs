//! Raw Parquet for the tests that need files the validating writer refuses (mislabelled rows, bad metadata):
//! one file read as its single record batch and its key-value metadata, and written back the same way.

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
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

/// Writes `batch` with the key-value metadata `kv` to `path`.
pub fn write(path: &Path, batch: &RecordBatch, kv: Vec<KeyValue>) -> Result<(), String> {
    let props = WriterProperties::builder().set_key_value_metadata(Some(kv)).build();
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| e.to_string())?;
    w.write(batch).map_err(|e| e.to_string())?;
    w.close().map(|_| ()).map_err(|e| e.to_string())
}
