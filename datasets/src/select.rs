//! Reading one row of a recording without decoding the others, so that a trial run alone (`--exact NAME`, as nextest
//! runs every trial in its own process) costs milliseconds instead of a whole file.

use crate::{read_recording, Row};
use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::path::Path;

/// What a trial name is made of: a row's `id`, `op` and `origin`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowKey {
    /// `id`.
    pub id: String,
    /// `op`, as the file spells it.
    pub op: String,
    /// `origin`.
    pub origin: String,
}

fn err(path: &Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", path.display())
}

/// The string values of a column of any Arrow string type (nulls as empty strings).
fn strings(path: &Path, batch: &RecordBatch, name: &str) -> Result<Vec<String>, String> {
    let a = batch.column_by_name(name).ok_or_else(|| err(path, format!("column `{name}` is missing")))?;
    let get = |i: usize| -> Option<String> {
        if a.is_null(i) {
            return Some(String::new());
        }
        if let Some(s) = a.as_string_opt::<i32>() {
            return Some(s.value(i).to_string());
        }
        if let Some(s) = a.as_string_opt::<i64>() {
            return Some(s.value(i).to_string());
        }
        a.as_string_view_opt().map(|s| s.value(i).to_string())
    };
    (0..a.len()).map(|i| get(i).ok_or_else(|| err(path, format!("column `{name}` is not a string column")))).collect()
}

/// The id, op and origin of every row (what trial names are made of), in file order, reading only those three
/// columns.
pub fn row_keys(path: &Path) -> Result<Vec<RowKey>, String> {
    let file = File::open(path).map_err(|e| err(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| err(path, e))?;
    let fields = builder.schema().fields().clone();
    let mut roots = Vec::new();
    for name in ["id", "op", "origin"] {
        let i = fields
            .iter()
            .position(|f| f.name() == name)
            .ok_or_else(|| err(path, format!("column `{name}` is missing")))?;
        roots.push(i);
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder.with_projection(mask).with_batch_size(8192).build().map_err(|e| err(path, e))?;
    let mut keys = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| err(path, e))?;
        let (ids, ops, origins) =
            (strings(path, &batch, "id")?, strings(path, &batch, "op")?, strings(path, &batch, "origin")?);
        for ((id, op), origin) in ids.into_iter().zip(ops).zip(origins) {
            keys.push(RowKey { id, op, origin });
        }
    }
    Ok(keys)
}

/// Decode and validate the row at `index` of a recording: decode that one row with a Parquet row selection, write
/// it as a one-row recording (same schema, same `mmaemu:*` metadata) to a temporary file and read that back with
/// [`crate::read_recording`], so the row is decoded and validated by exactly the code that reads whole files.
pub fn read_row(path: &Path, index: usize) -> Result<Row, String> {
    let file = File::open(path).map_err(|e| err(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| err(path, e))?;
    // The mmaemu:* metadata travels; the Arrow schema entry is written anew by the writer.
    let kv: Vec<KeyValue> = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|kv| kv.iter().filter(|e| e.key != "ARROW:schema").cloned().collect())
        .unwrap_or_default();
    let schema = builder.schema().clone();
    let selection = RowSelection::from(vec![RowSelector::skip(index), RowSelector::select(1)]);
    let reader = builder.with_row_selection(selection).build().map_err(|e| err(path, e))?;
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().map_err(|e| err(path, e))?;
    if batches.iter().map(|b| b.num_rows()).sum::<usize>() != 1 {
        return Err(err(path, format!("no row at index {index}")));
    }
    let tmp = tempfile::Builder::new()
        .prefix(".mmaemu-row-")
        .suffix(".parquet")
        .tempfile()
        .map_err(|e| format!("cannot create a temporary file: {e}"))?;
    let props = WriterProperties::builder().set_key_value_metadata(Some(kv)).build();
    let out = tmp.reopen().map_err(|e| format!("cannot reopen {}: {e}", tmp.path().display()))?;
    let mut writer = ArrowWriter::try_new(out, schema, Some(props)).map_err(|e| err(path, e))?;
    for b in &batches {
        writer.write(b).map_err(|e| err(path, e))?;
    }
    writer.close().map_err(|e| err(path, e))?;
    let rec = read_recording(tmp.path()).map_err(|e| err(path, format!("row {index}: {e}")))?;
    rec.rows.into_iter().next().ok_or_else(|| err(path, format!("no row at index {index}")))
}
