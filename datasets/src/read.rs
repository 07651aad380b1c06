//! Reading a recording: open the Parquet file, check the metadata and the column types, decode every row into a [`Row`]
//! and validate it ([`crate::validate`]). Operands shipped by reference are regenerated ([`crate::inputs`]).

// Unknown extra columns are skipped without being decoded; the optional `algo` column and the extension columns
// (`inputs`, `expected_samples`, `note`, `amax_d`) read as null when absent.

use crate::call::Call;
use crate::error::DatasetError;
use crate::row::{Expectation, FileMeta, Op, OutSelect, Recording, Row, RowExt, Truth};
use crate::schema::{Kind, COLUMNS, EXT_COLUMNS};
use crate::validate::{check_meta, check_rows};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type};
use arrow_array::{Array, BooleanArray, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// How [`read_recording_with`] treats rows whose operands are shipped by reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Regenerate the `a` and `b` of rows that ship them by reference (empty, with an `inputs` spec) and
    /// check their sha256 (true for [`read_recording`]). With false such rows keep empty operands: for
    /// tools that copy rows from file to file.
    pub materialise_inputs: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { materialise_inputs: true }
    }
}

/// Reads and validates one recording file. Rows that ship their operands by reference (extension column
/// `inputs`) get them regenerated and checked against the recorded sha256.
pub fn read_recording(path: &Path) -> Result<Recording, DatasetError> {
    read_recording_with(path, &ReadOptions::default())
}

/// Reads and validates one recording file with the given options.
pub fn read_recording_with(path: &Path, options: &ReadOptions) -> Result<Recording, DatasetError> {
    // The Parquet decoder is third-party code fed with untrusted bytes: should it panic on a malformed
    // file, report that as corrupt data instead of taking the caller down.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read_inner(path, options))) {
        Ok(result) => result,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(corrupt(path, format!("the Parquet decoder failed: {msg}")))
        }
    }
}

fn read_inner(path: &Path, options: &ReadOptions) -> Result<Recording, DatasetError> {
    let file = open_regular(path)?;
    let plain = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| footer_error(path, e))?;

    let meta = read_meta(path, plain.metadata().file_metadata().key_value_metadata())?;
    check_meta(path, &meta)?;

    // Column presence and types; project onto the known columns.
    let schema = plain.schema().clone();
    let mut roots = Vec::new();
    for c in COLUMNS.iter().chain(EXT_COLUMNS) {
        match schema.fields().iter().position(|f| f.name() == c.name) {
            Some(i) => {
                let dt = schema.field(i).data_type();
                if !c.kind.accepts(dt) {
                    return Err(DatasetError::WrongType {
                        path: path.to_path_buf(),
                        column: c.name.to_string(),
                        expected: format!("{}", c.kind.data_type()),
                        found: format!("{dt}"),
                    });
                }
                roots.push(i);
            }
            None if c.optional => {}
            None => return Err(DatasetError::MissingColumn { path: path.to_path_buf(), column: c.name.to_string() }),
        }
    }

    // Decode the binary columns as views: they then point into the decoded pages (dictionary pages
    // included) instead of being materialised once more, which halves the memory traffic of big files.
    let view_schema = Arc::new(Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Binary | DataType::LargeBinary
                    if COLUMNS.iter().any(|c| c.name == f.name() && c.kind == Kind::Binary) =>
                {
                    Field::new(f.name(), DataType::BinaryView, f.is_nullable())
                }
                _ => f.as_ref().clone(),
            })
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ));
    let reader_meta =
        ArrowReaderMetadata::try_new(plain.metadata().clone(), ArrowReaderOptions::new().with_schema(view_schema))
            .unwrap_or(plain);
    let mask = ProjectionMask::roots(reader_meta.parquet_schema(), roots);

    // Decode contiguous runs of row groups on a few threads (big recordings have several row groups); each
    // thread opens the file itself, so the readers share no file offset.
    let groups = reader_meta.metadata().row_groups();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4).min(groups.len().max(1));
    let runs = split_runs(&groups.iter().map(|g| g.compressed_size().max(0) as u64).collect::<Vec<_>>(), workers);
    let mut first_index = Vec::with_capacity(runs.len());
    let mut acc = 0usize;
    for run in &runs {
        first_index.push(acc);
        acc = run.iter().fold(acc, |a, &g| a.saturating_add(usize::try_from(groups[g].num_rows()).unwrap_or(0)));
    }
    let decode = |file: File, run: Vec<usize>, base: usize| -> Result<Vec<Row>, DatasetError> {
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, reader_meta.clone())
            .with_projection(mask.clone())
            .with_row_groups(run)
            .with_batch_size(256)
            .build()
            .map_err(|e| corrupt(path, e))?;
        let mut rows = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|e| corrupt(path, e))?;
            decode_batch(path, &batch, base, &mut rows)?;
        }
        Ok(rows)
    };
    let mut rows = Vec::new();
    if runs.len() <= 1 {
        rows = decode(file, runs.into_iter().next().unwrap_or_default(), 0)?;
    } else {
        let results: Vec<Result<Vec<Row>, DatasetError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = runs
                .into_iter()
                .zip(first_index)
                .map(|(run, base)| {
                    let decode = &decode;
                    scope.spawn(move || {
                        let file = File::open(path).map_err(|e| DatasetError::io(path, e))?;
                        decode(file, run, base)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(corrupt(path, "the Parquet decoder failed (panic)"))))
                .collect()
        });
        for part in results {
            rows.extend(part?);
        }
    }
    if options.materialise_inputs {
        crate::inputs::materialise_rows(path, &mut rows)?;
    }
    check_rows(path, &rows)?;
    Ok(Recording { path: path.to_path_buf(), meta, rows })
}

/// The error of a footer that could not be decoded. Text in the footer (the key-value metadata, column names) that
/// is not UTF-8 is named as such: the file is Parquet, but the format requires UTF-8 text there
/// (docs/recording-format.md).
pub(crate) fn footer_error(path: &Path, e: parquet::errors::ParquetError) -> DatasetError {
    match &e {
        parquet::errors::ParquetError::External(inner)
            if inner.is::<std::string::FromUtf8Error>() || inner.is::<std::str::Utf8Error>() =>
        {
            DatasetError::invalid(
                path,
                None,
                format!("its footer (key-value metadata or schema) holds text that is not valid UTF-8 ({inner})"),
            )
        }
        _ => DatasetError::NotParquet { path: path.to_path_buf(), detail: e.to_string() },
    }
}

fn corrupt(path: &Path, e: impl std::fmt::Display) -> DatasetError {
    DatasetError::Corrupt { path: path.to_path_buf(), detail: e.to_string() }
}

fn read_meta(path: &Path, kv: Option<&Vec<parquet::file::metadata::KeyValue>>) -> Result<FileMeta, DatasetError> {
    let meta = KvMeta { path, kv };
    let format = meta.format()?;
    if format != crate::FORMAT_V1 {
        return Err(DatasetError::WrongFormat { path: path.to_path_buf(), found: format.to_string() });
    }
    Ok(FileMeta {
        format: format.to_string(),
        platform: meta.json("mmaemu:platform")?,
        provenance: meta.json("mmaemu:provenance")?,
    })
}

/// The `mmaemu:*` key-value metadata of a Parquet file (recordings and split-K tables alike).
pub(crate) struct KvMeta<'a> {
    /// The file, for errors.
    pub path: &'a Path,
    /// Its key-value metadata.
    pub kv: Option<&'a Vec<parquet::file::metadata::KeyValue>>,
}

impl KvMeta<'_> {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.kv.and_then(|kv| kv.iter().find(|e| e.key == key)).and_then(|e| e.value.as_deref())
    }

    /// `mmaemu:format`, which every mmaemu file carries.
    pub fn format(&self) -> Result<&str, DatasetError> {
        self.get("mmaemu:format").ok_or_else(|| DatasetError::MissingMetadata {
            path: self.path.to_path_buf(),
            key: "mmaemu:format".to_string(),
        })
    }

    /// The JSON value of `key`, if present; invalid JSON is an error naming the key.
    pub fn json(&self, key: &str) -> Result<Option<serde_json::Value>, DatasetError> {
        match self.get(key) {
            None => Ok(None),
            Some(text) => serde_json::from_str(text).map(Some).map_err(|e| {
                DatasetError::invalid(self.path, None, format!("metadata `{key}` is not valid JSON: {e}"))
            }),
        }
    }
}

/// A string column of any accepted Arrow string type.
enum StrCol<'a> {
    Utf8(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
}

impl<'a> StrCol<'a> {
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            StrCol::Utf8(a) => (!a.is_null(i)).then(|| a.value(i)),
            StrCol::Large(a) => (!a.is_null(i)).then(|| a.value(i)),
            StrCol::View(a) => (!a.is_null(i)).then(|| a.value(i)),
        }
    }
}

/// A binary column of any accepted Arrow binary type.
enum BinCol<'a> {
    Binary(&'a arrow_array::BinaryArray),
    Large(&'a arrow_array::LargeBinaryArray),
    View(&'a arrow_array::BinaryViewArray),
}

impl<'a> BinCol<'a> {
    fn get(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            BinCol::Binary(a) => (!a.is_null(i)).then(|| a.value(i)),
            BinCol::Large(a) => (!a.is_null(i)).then(|| a.value(i)),
            BinCol::View(a) => (!a.is_null(i)).then(|| a.value(i)),
        }
    }
}

fn prim<T: arrow_array::ArrowPrimitiveType>(a: &PrimitiveArray<T>, i: usize) -> Option<T::Native> {
    (!a.is_null(i)).then(|| a.value(i))
}

fn boolean(a: &BooleanArray, i: usize) -> Option<bool> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// Looks up a column of the batch; the type was checked against the file schema already, so a mismatch
/// here is reported as corrupt data rather than trusted.
fn column<'a>(
    path: &Path,
    batch: &'a RecordBatch,
    name: &str,
    kind: Kind,
) -> Result<Option<&'a dyn Array>, DatasetError> {
    let Some(a) = batch.column_by_name(name) else {
        return Ok(None);
    };
    if !kind.accepts(a.data_type()) {
        return Err(DatasetError::WrongType {
            path: path.to_path_buf(),
            column: name.to_string(),
            expected: format!("{}", kind.data_type()),
            found: format!("{}", a.data_type()),
        });
    }
    Ok(Some(a.as_ref()))
}

fn str_col<'a>(a: &'a dyn Array) -> Option<StrCol<'a>> {
    match a.data_type() {
        DataType::Utf8 => Some(StrCol::Utf8(a.as_string::<i32>())),
        DataType::LargeUtf8 => Some(StrCol::Large(a.as_string::<i64>())),
        DataType::Utf8View => Some(StrCol::View(a.as_string_view())),
        _ => None,
    }
}

fn bin_col<'a>(a: &'a dyn Array) -> Option<BinCol<'a>> {
    match a.data_type() {
        DataType::Binary => Some(BinCol::Binary(a.as_binary::<i32>())),
        DataType::LargeBinary => Some(BinCol::Large(a.as_binary::<i64>())),
        DataType::BinaryView => Some(BinCol::View(a.as_binary_view())),
        _ => None,
    }
}

struct Cols<'a> {
    id: StrCol<'a>,
    op: StrCol<'a>,
    preset: StrCol<'a>,
    profile: StrCol<'a>,
    gpu: StrCol<'a>,
    truth: StrCol<'a>,
    fmt_a: StrCol<'a>,
    fmt_b: StrCol<'a>,
    batch: &'a PrimitiveArray<Int64Type>,
    m: &'a PrimitiveArray<Int64Type>,
    n: &'a PrimitiveArray<Int64Type>,
    k: &'a PrimitiveArray<Int64Type>,
    a: BinCol<'a>,
    b: BinCol<'a>,
    c: BinCol<'a>,
    scale_a: &'a PrimitiveArray<UInt32Type>,
    scale_b: &'a PrimitiveArray<UInt32Type>,
    scale_result: &'a PrimitiveArray<UInt32Type>,
    out_dtype: StrCol<'a>,
    fast_accum: &'a BooleanArray,
    split_s: &'a PrimitiveArray<Int32Type>,
    split_scheme: StrCol<'a>,
    algo: Option<StrCol<'a>>,
    inputs: Option<StrCol<'a>>,
    expected_samples: Option<StrCol<'a>>,
    note: Option<StrCol<'a>>,
    amax_d: Option<&'a PrimitiveArray<UInt32Type>>,
    call: StrCol<'a>,
    out_select: StrCol<'a>,
    expected: BinCol<'a>,
    expected_sha256: StrCol<'a>,
    expected_error: StrCol<'a>,
    scope: StrCol<'a>,
    origin: StrCol<'a>,
}

impl<'a> Cols<'a> {
    fn new(path: &Path, batch: &'a RecordBatch) -> Result<Self, DatasetError> {
        let get = |name: &str, kind: Kind| -> Result<&'a dyn Array, DatasetError> {
            column(path, batch, name, kind)?
                .ok_or_else(|| DatasetError::MissingColumn { path: path.to_path_buf(), column: name.to_string() })
        };
        // The `accepts` check in `column` guarantees the helper conversions below succeed; the errors are
        // there so that nothing panics even if they did not.
        let bad = |name: &str| corrupt(path, format!("column `{name}` could not be decoded"));
        let s = |name: &str| get(name, Kind::Utf8).and_then(|a| str_col(a).ok_or_else(|| bad(name)));
        let bin = |name: &str| get(name, Kind::Binary).and_then(|a| bin_col(a).ok_or_else(|| bad(name)));
        let i64c = |name: &str| {
            get(name, Kind::Int64).and_then(|a| a.as_primitive_opt::<Int64Type>().ok_or_else(|| bad(name)))
        };
        let u32c = |name: &str| {
            get(name, Kind::UInt32).and_then(|a| a.as_primitive_opt::<UInt32Type>().ok_or_else(|| bad(name)))
        };
        let optional = |name: &str| -> Result<Option<StrCol<'a>>, DatasetError> {
            match column(path, batch, name, Kind::Utf8)? {
                Some(a) => Ok(Some(str_col(a).ok_or_else(|| bad(name))?)),
                None => Ok(None),
            }
        };
        let algo = optional("algo")?;
        Ok(Cols {
            id: s("id")?,
            op: s("op")?,
            preset: s("preset")?,
            profile: s("profile")?,
            gpu: s("gpu")?,
            truth: s("truth")?,
            fmt_a: s("fmt_a")?,
            fmt_b: s("fmt_b")?,
            batch: i64c("batch")?,
            m: i64c("m")?,
            n: i64c("n")?,
            k: i64c("k")?,
            a: bin("a")?,
            b: bin("b")?,
            c: bin("c")?,
            scale_a: u32c("scale_a")?,
            scale_b: u32c("scale_b")?,
            scale_result: u32c("scale_result")?,
            out_dtype: s("out_dtype")?,
            fast_accum: get("fast_accum", Kind::Boolean)
                .and_then(|a| a.as_boolean_opt().ok_or_else(|| bad("fast_accum")))?,
            split_s: get("split_s", Kind::Int32)
                .and_then(|a| a.as_primitive_opt::<Int32Type>().ok_or_else(|| bad("split_s")))?,
            split_scheme: s("split_scheme")?,
            algo,
            inputs: optional("inputs")?,
            expected_samples: optional("expected_samples")?,
            note: optional("note")?,
            amax_d: match column(path, batch, "amax_d", Kind::UInt32)? {
                Some(a) => Some(a.as_primitive_opt::<UInt32Type>().ok_or_else(|| bad("amax_d"))?),
                None => None,
            },
            call: s("call")?,
            out_select: s("out_select")?,
            expected: bin("expected")?,
            expected_sha256: s("expected_sha256")?,
            expected_error: s("expected_error")?,
            scope: s("scope")?,
            origin: s("origin")?,
        })
    }
}

/// Decodes the rows of one batch; `base` is the file-wide index of the first row this reader returns.
fn decode_batch(path: &Path, batch: &RecordBatch, base: usize, rows: &mut Vec<Row>) -> Result<(), DatasetError> {
    let cols = Cols::new(path, batch)?;
    rows.reserve(batch.num_rows());
    for i in 0..batch.num_rows() {
        let index = base.saturating_add(rows.len());
        let row = decode_row(path, &cols, i, index)?;
        rows.push(row);
    }
    Ok(())
}

/// Splits row groups 0..sizes.len() into at most `parts` contiguous runs of roughly equal total size.
fn split_runs(sizes: &[u64], parts: usize) -> Vec<Vec<usize>> {
    let total: u64 = sizes.iter().sum();
    let parts = parts.max(1) as u64;
    let mut runs: Vec<Vec<usize>> = Vec::new();
    let mut current = Vec::new();
    let mut done = 0u64;
    for (g, &size) in sizes.iter().enumerate() {
        current.push(g);
        done += size;
        // Close the run once it reaches its share of the total.
        let boundary = total.saturating_mul(runs.len() as u64 + 1) / parts;
        if done >= boundary && (runs.len() as u64) + 1 < parts {
            runs.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() || runs.is_empty() {
        runs.push(current);
    }
    runs
}

fn decode_row(path: &Path, c: &Cols<'_>, i: usize, index: usize) -> Result<Row, DatasetError> {
    let id =
        c.id.get(i).ok_or_else(|| DatasetError::invalid(path, None, format!("row {index} (0-based): `id` is null")))?;
    let err = |what: String| DatasetError::invalid(path, Some(id), what);
    let null = |name: &str| err(format!("`{name}` is null (the column is not nullable)"));

    let req_s = |col: &StrCol<'_>, name: &str| col.get(i).map(str::to_string).ok_or_else(|| null(name));
    let opt_s = |col: &StrCol<'_>| col.get(i).map(str::to_string);
    let req_i64 = |col: &PrimitiveArray<Int64Type>, name: &str| prim(col, i).ok_or_else(|| null(name));
    let req_bin = |col: &BinCol<'_>, name: &str| col.get(i).map(<[u8]>::to_vec).ok_or_else(|| null(name));

    let op_s = c.op.get(i).ok_or_else(|| null("op"))?;
    let op =
        Op::parse(op_s).ok_or_else(|| err(format!("`op` {op_s:?} is not one of scaled_mm, gemm, accumulator, mma")))?;
    let truth_s = c.truth.get(i).ok_or_else(|| null("truth"))?;
    let truth =
        Truth::parse(truth_s).ok_or_else(|| err(format!("`truth` {truth_s:?} is not one of hardware, model")))?;
    let out_select_s = c.out_select.get(i);
    let out_select = OutSelect::parse(out_select_s).ok_or_else(|| {
        err(format!("`out_select` {:?} is neither null nor \"diagonal\"", out_select_s.unwrap_or_default()))
    })?;

    let expected = match (c.expected.get(i), c.expected_sha256.get(i), c.expected_error.get(i)) {
        (Some(bits), None, None) => Expectation::Bits(bits.to_vec()),
        (None, Some(h), None) => Expectation::Sha256(h.to_string()),
        (None, None, Some(e)) => Expectation::Error(e.to_string()),
        (bits, h, e) => {
            let set: Vec<&str> = [bits.map(|_| "expected"), h.map(|_| "expected_sha256"), e.map(|_| "expected_error")]
                .into_iter()
                .flatten()
                .collect();
            return Err(err(if set.is_empty() {
                "none of expected, expected_sha256, expected_error is set (exactly one must be)".to_string()
            } else {
                format!(
                    "{} are all set (exactly one of expected, expected_sha256, expected_error must be)",
                    set.join(" and ")
                )
            }));
        }
    };

    let call = match c.call.get(i) {
        None => None,
        Some(text) => Some(Call::parse(text).map_err(|e| err(format!("`call` is not a valid call object: {e}")))?),
    };

    Ok(Row {
        id: id.to_string(),
        op,
        preset: req_s(&c.preset, "preset")?,
        profile: opt_s(&c.profile),
        gpu: req_s(&c.gpu, "gpu")?,
        truth,
        fmt_a: req_s(&c.fmt_a, "fmt_a")?,
        fmt_b: req_s(&c.fmt_b, "fmt_b")?,
        batch: req_i64(c.batch, "batch")?,
        m: req_i64(c.m, "m")?,
        n: req_i64(c.n, "n")?,
        k: req_i64(c.k, "k")?,
        a: req_bin(&c.a, "a")?,
        b: req_bin(&c.b, "b")?,
        c: c.c.get(i).map(<[u8]>::to_vec),
        scale_a: prim(c.scale_a, i),
        scale_b: prim(c.scale_b, i),
        scale_result: prim(c.scale_result, i),
        out_dtype: opt_s(&c.out_dtype),
        fast_accum: boolean(c.fast_accum, i),
        split_s: prim(c.split_s, i),
        split_scheme: opt_s(&c.split_scheme),
        algo: c.algo.as_ref().and_then(|a| a.get(i)).map(str::to_string),
        call,
        out_select,
        expected,
        scope: opt_s(&c.scope),
        origin: req_s(&c.origin, "origin")?,
        ext: RowExt {
            inputs: c.inputs.as_ref().and_then(|a| a.get(i)).map(str::to_string),
            expected_samples: c.expected_samples.as_ref().and_then(|a| a.get(i)).map(str::to_string),
            note: c.note.as_ref().and_then(|a| a.get(i)).map(str::to_string),
            amax_d: c.amax_d.and_then(|a| prim(a, i)),
        },
    })
}

/// Open `path` for reading if it is a regular file: a FIFO, socket or device is refused before it is
/// opened, since opening or reading it could block forever.
pub fn open_regular(path: &Path) -> Result<File, DatasetError> {
    match std::fs::metadata(path) {
        Err(e) => Err(DatasetError::io(path, e)),
        Ok(m) if !m.is_file() => Err(DatasetError::NotRegular { path: path.to_path_buf() }),
        Ok(_) => File::open(path).map_err(|e| DatasetError::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::split_runs;

    #[test]
    fn runs_cover_every_group_in_order() {
        for sizes in [vec![], vec![5], vec![1, 1, 1, 1, 1], vec![100, 1, 1, 1], vec![1, 1, 1, 100], vec![0, 0, 0]] {
            for parts in 1..5 {
                let runs = split_runs(&sizes, parts);
                assert!(runs.len() <= parts.max(1));
                let flat: Vec<usize> = runs.concat();
                assert_eq!(flat, (0..sizes.len()).collect::<Vec<_>>(), "{sizes:?} {parts}");
                assert!(runs.iter().all(|r| !r.is_empty()) || sizes.is_empty());
            }
        }
    }
}
