//! Writing a recording: validate the rows, build Arrow batches with exactly the version 1 schema, encode them as
//! snappy-compressed Parquet with the `mmaemu:*` key-value metadata, and publish the file atomically.

// Atomically: a temporary file in the same directory, fsync, rename, so an interrupted write never leaves a partial
// file under the final name. `RecordingWriter` does the same for rows that arrive in parts.

use crate::error::DatasetError;
use crate::row::{Expectation, FileMeta, Recording, Row};
use crate::schema::arrow_schema;
use crate::validate::{check_meta, check_rows};
use arrow_array::{ArrayRef, BinaryArray, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray, UInt32Array};
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows per Arrow batch (and at most per row group).
const BATCH_ROWS: usize = 1024;
/// Binary bytes per Arrow batch, kept far below the 2 GiB offset limit of `Binary`.
const BATCH_BYTES: usize = 256 << 20;
/// Estimated encoded bytes per row group.
const ROW_GROUP_BYTES: usize = 64 << 20;
/// Dictionary page limit. Recordings repeat operands a lot (sub-blocks of one hardware call share A or B);
/// with Parquet's usual 1 MiB limit the binary columns fall back to plain encoding and files grow 4 to 5
/// times larger.
const DICTIONARY_PAGE_BYTES: usize = 32 << 20;
/// Largest single binary value the writer accepts.
const MAX_VALUE_BYTES: usize = 1 << 30;

/// Validates `rec` and writes it to `path` atomically. `rec.path` is ignored; `rec.meta.format` must be
/// `mmaemu-recording/1`. An existing file at `path` is replaced. The extension columns are written only
/// when a row uses them.
pub fn write_recording(path: &Path, rec: &Recording) -> Result<(), DatasetError> {
    // Everything is validated before a temporary file exists (write_rows checks the rows again, cheaply).
    check_meta(path, &rec.meta)?;
    check_rows(path, &rec.rows)?;
    let ext = rec.rows.iter().any(|r| !r.ext.is_empty());
    let mut w = RecordingWriter::create(path, &rec.meta, ext)?;
    w.write_rows(&rec.rows)?;
    w.finish()
}

/// A recording written in several steps: rows are validated and encoded as they come, and the file
/// appears under its final name only when [`RecordingWriter::finish`] succeeds (temporary file in the same
/// directory, fsync, rename). Dropping the writer without finishing removes the temporary file.
pub struct RecordingWriter {
    path: PathBuf,
    dir: PathBuf,
    tmp_path: PathBuf,
    guard: TempGuard,
    /// A second handle on the temporary file, to fsync it after the Parquet writer closed.
    sync: File,
    writer: ArrowWriter<File>,
    schema: Arc<Schema>,
    ext: bool,
    ids: HashSet<String>,
    rows: usize,
}

impl RecordingWriter {
    /// Starts writing `path` (the file appears on [`RecordingWriter::finish`]). `ext`: write the extension
    /// columns (`inputs`, `expected_samples`, `note`, `amax_d`); without them, rows that use them are refused.
    pub fn create(path: &Path, meta: &FileMeta, ext: bool) -> Result<RecordingWriter, DatasetError> {
        check_meta(path, meta)?;
        let file_name = path.file_name().ok_or_else(|| DatasetError::invalid(path, None, "the path names no file"))?;
        let dir = parent_dir(path);
        let (tmp_path, file) = create_temp(&dir, &file_name.to_string_lossy())?;
        let guard = TempGuard(Some(tmp_path.clone()));
        let sync = file.try_clone().map_err(|e| DatasetError::io(&tmp_path, e))?;
        let werr =
            |e: parquet::errors::ParquetError| DatasetError::Write { path: path.to_path_buf(), detail: e.to_string() };
        let mut kv = vec![KeyValue::new("mmaemu:format".to_string(), meta.format.clone())];
        if let Some(p) = &meta.platform {
            kv.push(KeyValue::new("mmaemu:platform".to_string(), p.to_string()));
        }
        if let Some(p) = &meta.provenance {
            kv.push(KeyValue::new("mmaemu:provenance".to_string(), p.to_string()));
        }
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_key_value_metadata(Some(kv))
            .set_max_row_group_row_count(Some(BATCH_ROWS))
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .set_dictionary_page_size_limit(DICTIONARY_PAGE_BYTES)
            .set_created_by(format!("mmaemu-datasets {}", env!("CARGO_PKG_VERSION")))
            .build();
        let schema = Arc::new(arrow_schema(ext));
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(werr)?;
        Ok(RecordingWriter {
            path: path.to_path_buf(),
            dir,
            tmp_path,
            guard,
            sync,
            writer,
            schema,
            ext,
            ids: HashSet::new(),
            rows: 0,
        })
    }

    /// Validates and encodes `rows` (ids must be unique over every call).
    pub fn write_rows(&mut self, rows: &[Row]) -> Result<(), DatasetError> {
        let path = self.path.as_path();
        check_rows(path, rows)?;
        for row in rows {
            if !self.ext && !row.ext.is_empty() {
                return Err(DatasetError::invalid(
                    path,
                    Some(&row.id),
                    "the row uses the extension columns, but the writer was created without them",
                ));
            }
            let biggest = [
                row.a.len(),
                row.b.len(),
                row.c.as_ref().map_or(0, Vec::len),
                row.expected_bits().map_or(0, <[u8]>::len),
            ];
            if biggest.iter().any(|&n| n > MAX_VALUE_BYTES) {
                return Err(DatasetError::invalid(
                    path,
                    Some(&row.id),
                    "a binary value exceeds 1 GiB, which this writer does not support",
                ));
            }
            if !self.ids.insert(row.id.clone()) {
                return Err(DatasetError::invalid(
                    path,
                    Some(&row.id),
                    "duplicate id (ids must be unique within a file)",
                ));
            }
        }
        let werr =
            |e: parquet::errors::ParquetError| DatasetError::Write { path: path.to_path_buf(), detail: e.to_string() };
        let mut start = 0;
        while start < rows.len() {
            let mut end = start;
            let mut bytes = 0usize;
            while end < rows.len() && end - start < BATCH_ROWS {
                let r = &rows[end];
                let n =
                    r.a.len() + r.b.len() + r.c.as_ref().map_or(0, Vec::len) + r.expected_bits().map_or(0, <[u8]>::len);
                if end > start && bytes + n > BATCH_BYTES {
                    break;
                }
                bytes += n;
                end += 1;
            }
            let batch = RecordBatch::try_new(self.schema.clone(), columns(&rows[start..end], self.ext))
                .map_err(|e| DatasetError::Write { path: path.to_path_buf(), detail: e.to_string() })?;
            self.writer.write(&batch).map_err(werr)?;
            start = end;
        }
        self.rows += rows.len();
        Ok(())
    }

    /// Rows written so far.
    pub fn rows_written(&self) -> usize {
        self.rows
    }

    /// Closes the Parquet file, syncs it and publishes it under its final name.
    pub fn finish(self) -> Result<(), DatasetError> {
        let RecordingWriter { path, dir, tmp_path, guard, sync, writer, .. } = self;
        writer.close().map_err(|e| DatasetError::Write { path: path.clone(), detail: e.to_string() })?;
        sync.sync_all().map_err(|e| DatasetError::io(&tmp_path, e))?;
        drop(sync);
        publish(guard, &tmp_path, &path, &dir)
    }
}

/// Writes `bytes` to `path` atomically (a temporary file in the same directory, fsync, rename, directory
/// fsync): readers see the old file or the whole new one, never a part. For any file next to the
/// recordings: reports, manifests, tables, the recorder's chunks.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<(), DatasetError> {
    use std::io::Write;
    let dir = parent_dir(path);
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let (tmp_path, mut file) = create_temp(&dir, &name)?;
    let guard = TempGuard(Some(tmp_path.clone()));
    file.write_all(bytes).map_err(|e| DatasetError::io(&tmp_path, e))?;
    file.sync_all().map_err(|e| DatasetError::io(&tmp_path, e))?;
    drop(file);
    publish(guard, &tmp_path, path, &dir)
}

/// The directory a file at `path` is written in (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Publishes a synced temporary file under its final name (the guard removes it if the rename fails), then
/// makes the rename itself durable where the platform allows syncing a directory.
fn publish(guard: TempGuard, tmp_path: &Path, path: &Path, dir: &Path) -> Result<(), DatasetError> {
    std::fs::rename(tmp_path, path).map_err(|e| DatasetError::io(path, e))?;
    guard.disarm();
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes the temporary file unless disarmed (on every error path and on panic).
struct TempGuard(Option<PathBuf>);

impl TempGuard {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn create_temp(dir: &Path, name: &str) -> Result<(PathBuf, File), DatasetError> {
    let pid = std::process::id();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let mut last = None;
    for attempt in 0..100u32 {
        let p = dir.join(format!(".{name}.{pid}.{nanos:x}.{attempt}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some((p, e)),
            Err(e) => return Err(DatasetError::io(&p, e)),
        }
    }
    let (p, e) =
        last.unwrap_or_else(|| (dir.to_path_buf(), std::io::Error::other("could not create a temporary file")));
    Err(DatasetError::io(&p, e))
}

/// The columns of `rows`, in the order of [`crate::schema::COLUMNS`] (then the extension columns).
fn columns(rows: &[Row], ext: bool) -> Vec<ArrayRef> {
    fn s<'a>(rows: &'a [Row], f: impl Fn(&'a Row) -> Option<&'a str>) -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<StringArray>())
    }
    fn bin<'a>(rows: &'a [Row], f: impl Fn(&'a Row) -> Option<&'a [u8]>) -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<BinaryArray>())
    }
    fn i64s(rows: &[Row], f: impl Fn(&Row) -> i64) -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<Int64Array>())
    }
    fn u32s(rows: &[Row], f: impl Fn(&Row) -> Option<u32>) -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<UInt32Array>())
    }
    let calls: Vec<Option<String>> = rows.iter().map(|r| r.call.as_ref().map(|c| c.to_json())).collect();
    let mut cols = vec![
        s(rows, |r| Some(&r.id)),
        s(rows, |r| Some(r.op.as_str())),
        s(rows, |r| Some(&r.preset)),
        s(rows, |r| r.profile.as_deref()),
        s(rows, |r| Some(&r.gpu)),
        s(rows, |r| Some(r.truth.as_str())),
        s(rows, |r| Some(&r.fmt_a)),
        s(rows, |r| Some(&r.fmt_b)),
        i64s(rows, |r| r.batch),
        i64s(rows, |r| r.m),
        i64s(rows, |r| r.n),
        i64s(rows, |r| r.k),
        bin(rows, |r| Some(&r.a)),
        bin(rows, |r| Some(&r.b)),
        bin(rows, |r| r.c.as_deref()),
        u32s(rows, |r| r.scale_a),
        u32s(rows, |r| r.scale_b),
        u32s(rows, |r| r.scale_result),
        s(rows, |r| r.out_dtype.as_deref()),
        Arc::new(rows.iter().map(|r| r.fast_accum).collect::<BooleanArray>()),
        Arc::new(rows.iter().map(|r| r.split_s).collect::<Int32Array>()),
        s(rows, |r| r.split_scheme.as_deref()),
        s(rows, |r| r.algo.as_deref()),
        Arc::new(calls.iter().map(Option::as_deref).collect::<StringArray>()),
        s(rows, |r| r.out_select.as_column()),
        bin(rows, |r| r.expected_bits()),
        s(rows, |r| match &r.expected {
            Expectation::Sha256(h) => Some(h),
            _ => None,
        }),
        s(rows, |r| r.expected_error()),
        s(rows, |r| r.scope.as_deref()),
        s(rows, |r| Some(&r.origin)),
    ];
    if ext {
        cols.push(s(rows, |r| r.ext.inputs.as_deref()));
        cols.push(s(rows, |r| r.ext.expected_samples.as_deref()));
        cols.push(s(rows, |r| r.ext.note.as_deref()));
        cols.push(u32s(rows, |r| r.ext.amax_d));
    }
    cols
}
