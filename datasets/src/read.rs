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
use arrow_array::types::{
    BinaryViewType, ByteArrayType, ByteViewType, GenericBinaryType, GenericStringType, Int32Type, Int64Type,
    StringViewType, UInt32Type,
};
use arrow_array::{Array, BooleanArray, GenericByteArray, GenericByteViewArray, PrimitiveArray, RecordBatch};
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
    // The rows and their decoded columns, from the footer's counts, must fit the memory ceiling before any is read
    // (a small file of millions of tiny rows decodes to gigabytes).
    let decoded = groups.iter().map(|g| g.total_byte_size().max(0) as u64).fold(0u64, u64::saturating_add);
    let bytes =
        crate::limits::product(&[acc as u64, std::mem::size_of::<Row>() as u64]).and_then(|b| b.checked_add(decoded));
    crate::limits::check_in_force(&format!("reading its {acc} rows"), bytes)
        .map_err(|e| DatasetError::invalid(path, None, e))?;
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

/// The three Arrow types of strings ([`Str`]) or of bytes ([`Bin`]) a column may have (32-bit offsets,
/// 64-bit offsets, views), and the kind of column they make.
trait ByteFamily {
    type Native: ?Sized + 'static;
    type Offsets32: ByteArrayType<Offset = i32, Native = Self::Native>;
    type Offsets64: ByteArrayType<Offset = i64, Native = Self::Native>;
    type View: ByteViewType<Native = Self::Native>;
    const KIND: Kind;
}

/// Strings.
struct Str;
impl ByteFamily for Str {
    type Native = str;
    type Offsets32 = GenericStringType<i32>;
    type Offsets64 = GenericStringType<i64>;
    type View = StringViewType;
    const KIND: Kind = Kind::Utf8;
}

/// Bytes.
struct Bin;
impl ByteFamily for Bin {
    type Native = [u8];
    type Offsets32 = GenericBinaryType<i32>;
    type Offsets64 = GenericBinaryType<i64>;
    type View = BinaryViewType;
    const KIND: Kind = Kind::Binary;
}

/// A string or binary column in any of the Arrow types of its family.
enum ByteCol<'a, F: ByteFamily> {
    Offsets32(&'a GenericByteArray<F::Offsets32>),
    Offsets64(&'a GenericByteArray<F::Offsets64>),
    View(&'a GenericByteViewArray<F::View>),
}

type StrCol<'a> = ByteCol<'a, Str>;
type BinCol<'a> = ByteCol<'a, Bin>;

impl<'a, F: ByteFamily> ByteCol<'a, F> {
    fn get(&self, i: usize) -> Option<&'a F::Native> {
        match self {
            ByteCol::Offsets32(a) => (!a.is_null(i)).then(|| a.value(i)),
            ByteCol::Offsets64(a) => (!a.is_null(i)).then(|| a.value(i)),
            ByteCol::View(a) => (!a.is_null(i)).then(|| a.value(i)),
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

/// A typed view of one column: the kind the column must have, and the conversion from its array.
trait Typed<'a>: Sized {
    const KIND: Kind;
    fn of(a: &'a dyn Array) -> Option<Self>;
}

impl<'a, F: ByteFamily> Typed<'a> for ByteCol<'a, F> {
    const KIND: Kind = F::KIND;
    fn of(a: &'a dyn Array) -> Option<Self> {
        a.as_bytes_opt()
            .map(ByteCol::Offsets32)
            .or_else(|| a.as_bytes_opt().map(ByteCol::Offsets64))
            .or_else(|| a.as_byte_view_opt().map(ByteCol::View))
    }
}

impl<'a> Typed<'a> for &'a BooleanArray {
    const KIND: Kind = Kind::Boolean;
    fn of(a: &'a dyn Array) -> Option<Self> {
        a.as_boolean_opt()
    }
}

macro_rules! typed_primitive {
    ($($t:ty => $kind:ident),*) => {$(
        impl<'a> Typed<'a> for &'a PrimitiveArray<$t> {
            const KIND: Kind = Kind::$kind;
            fn of(a: &'a dyn Array) -> Option<Self> {
                a.as_primitive_opt::<$t>()
            }
        }
    )*};
}
typed_primitive!(Int32Type => Int32, Int64Type => Int64, UInt32Type => UInt32);

/// Column `name` of `batch` as `T`, None when absent. The type check of `read_inner` guarantees the
/// conversion succeeds; a failure is an error all the same, so that nothing panics if it did not.
fn typed<'a, T: Typed<'a>>(path: &Path, batch: &'a RecordBatch, name: &str) -> Result<Option<T>, DatasetError> {
    match column(path, batch, name, T::KIND)? {
        Some(a) => T::of(a).map(Some).ok_or_else(|| corrupt(path, format!("column `{name}` could not be decoded"))),
        None => Ok(None),
    }
}

/// One field of [`Cols`]: a required column (missing is an error) or an optional one (`Option`, missing
/// reads as None).
trait ReadColumn<'a>: Sized {
    fn read(path: &Path, batch: &'a RecordBatch, name: &str) -> Result<Self, DatasetError>;
}

impl<'a, T: Typed<'a>> ReadColumn<'a> for T {
    fn read(path: &Path, batch: &'a RecordBatch, name: &str) -> Result<Self, DatasetError> {
        typed(path, batch, name)?
            .ok_or_else(|| DatasetError::MissingColumn { path: path.to_path_buf(), column: name.to_string() })
    }
}

impl<'a, T: Typed<'a>> ReadColumn<'a> for Option<T> {
    fn read(path: &Path, batch: &'a RecordBatch, name: &str) -> Result<Self, DatasetError> {
        typed(path, batch, name)
    }
}

/// Declares [`Cols`], one field per column named as the column, and its constructor; the columns are
/// listed by type.
macro_rules! cols {
    ($($t:ty: $($name:ident),+;)*) => {
        /// The columns of one batch, typed.
        struct Cols<'a> {
            $($($name: $t,)+)*
        }

        impl<'a> Cols<'a> {
            fn new(path: &Path, batch: &'a RecordBatch) -> Result<Self, DatasetError> {
                Ok(Cols { $($($name: ReadColumn::read(path, batch, stringify!($name))?,)+)* })
            }
        }
    };
}

cols! {
    StrCol<'a>: id, op, preset, profile, gpu, truth, fmt_a, fmt_b, out_dtype, split_scheme, call, out_select,
        expected_sha256, expected_error, scope, origin;
    BinCol<'a>: a, b, c, expected;
    &'a PrimitiveArray<Int64Type>: batch, m, n, k;
    &'a PrimitiveArray<UInt32Type>: scale_a, scale_b, scale_result;
    &'a PrimitiveArray<Int32Type>: split_s;
    &'a BooleanArray: fast_accum;
    Option<StrCol<'a>>: algo, inputs, expected_samples, note;
    Option<&'a PrimitiveArray<UInt32Type>>: amax_d;
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
