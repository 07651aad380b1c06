//! Reading split-K decision tables, the Parquet companion format `mmaemu-splitk-table/1` (`docs/recording-format.md`,
//! "Companion format: split-K decision tables"), and their JSON sidecars.

// One row per cuBLASLt heuristic query, keyed by (`m`, `n`, `k`, `fmt_a`, `fmt_b`, `out_dtype`, `fast_accum`,
// `workspace_bytes`); the value columns are the first algorithm the heuristic returned. The sidecar (same stem,
// `.json`) holds the settings, the envelope, the verified split combinations and the file's sha256.

use crate::error::DatasetError;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use mmaemu_model::splitk::{SplitKey, TableRow};
use mmaemu_model::{Format, OutDtype};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::{Deserialize, Deserializer, Serialize};
use std::path::{Path, PathBuf};

/// The `mmaemu:format` value (and the sidecar's `format`) of split-K decision tables.
pub const SPLITK_TABLE_FORMAT: &str = "mmaemu-splitk-table/1";

/// The operand formats a table row may name (`fmt_a`, `fmt_b`).
pub const SPLITK_FMTS: [&str; 2] = ["e4m3", "e5m2"];

/// The out dtypes a table row may name (`out_dtype`), in the tables' code order.
pub const SPLITK_OUT_DTYPES: [&str; 5] = ["float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"];

/// The columns of a split-K table, in the file's order.
pub const SPLITK_COLUMNS: [&str; 15] = [
    "m",
    "n",
    "k",
    "fmt_a",
    "fmt_b",
    "out_dtype",
    "fast_accum",
    "workspace_bytes",
    "split_s",
    "custom_option",
    "algo_id",
    "tile_id",
    "stages_id",
    "reduction_scheme",
    "cta_swizzling",
];

/// A format or out-dtype name of a table row, one of the `&'static str` of [`SPLITK_FMTS`] or
/// [`SPLITK_OUT_DTYPES`]. (A named type: serde's derive would make a `&'static str` field borrow from the
/// input, so that rows could be read only from `'static` text.)
pub type Name = &'static str;

/// One row of a split-K table: the key (torch's problem m, n, k, the formats of mat1 / mat2, the out dtype,
/// use_fast_accum, the cuBLASLt workspace) and the decision cuBLASLt's heuristic returned first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SplitKTableRow {
    /// torch's M (cuBLASLt itself sees m' = n).
    pub m: i32,
    /// torch's N.
    pub n: i32,
    /// K, the reduction length.
    pub k: i32,
    /// Format of mat1: one of [`SPLITK_FMTS`].
    #[serde(deserialize_with = "fmt_name")]
    pub fmt_a: Name,
    /// Format of mat2: one of [`SPLITK_FMTS`].
    #[serde(deserialize_with = "fmt_name")]
    pub fmt_b: Name,
    /// Out dtype: one of [`SPLITK_OUT_DTYPES`].
    #[serde(deserialize_with = "out_dtype_name")]
    pub out_dtype: Name,
    /// use_fast_accum: fast (true) or slow accumulation.
    pub fast_accum: bool,
    /// cuBLASLt MAX_WORKSPACE_BYTES.
    pub workspace_bytes: i64,
    /// The decision: the first algorithm cuBLASLt's heuristic returned for the key (the value columns; in
    /// JSON, fields of the row itself).
    #[serde(flatten)]
    pub decision: TableRow,
}

/// The key of a table row (unique within a table): m, n, k, fmt_a, fmt_b, out_dtype, fast_accum, workspace_bytes.
pub type TableKey = (i32, i32, i32, &'static str, &'static str, &'static str, bool, i64);

impl SplitKTableRow {
    /// The key (unique within a table).
    pub fn key(&self) -> TableKey {
        (self.m, self.n, self.k, self.fmt_a, self.fmt_b, self.out_dtype, self.fast_accum, self.workspace_bytes)
    }

    /// The model's split-K key of the row (None for names or sizes outside the format: rows read by
    /// [`read_splitk_table`] always have one).
    pub fn split_key(&self) -> Option<SplitKey> {
        Some(SplitKey {
            m: usize::try_from(self.m).ok()?,
            n: usize::try_from(self.n).ok()?,
            k: usize::try_from(self.k).ok()?,
            fa: Format::from_name(self.fmt_a)?,
            fb: Format::from_name(self.fmt_b)?,
            out: OutDtype::from_name(self.out_dtype)?,
            fast: self.fast_accum,
        })
    }
}

/// One of `names`, as the `&'static str` of the list (rows keep their names interned, as [`read_splitk_table`] does).
fn one_of<'de, D: Deserializer<'de>>(d: D, names: &[&'static str], what: &str) -> Result<&'static str, D::Error> {
    let s = String::deserialize(d)?;
    names
        .iter()
        .find(|n| **n == s)
        .copied()
        .ok_or_else(|| serde::de::Error::custom(format!("{what} {s:?} is not one of {}", names.join(", "))))
}

fn fmt_name<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    one_of(d, &SPLITK_FMTS, "format")
}

fn out_dtype_name<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    one_of(d, &SPLITK_OUT_DTYPES, "out dtype")
}

/// A split-K table as read: its rows, metadata and sidecar.
#[derive(Clone, Debug)]
pub struct SplitKTable {
    /// The Parquet file.
    pub path: PathBuf,
    /// The JSON sidecar that was checked against it.
    pub sidecar_path: PathBuf,
    /// Lower-case hex sha256 of the Parquet file (equal to the sidecar's `parquet_sha256`).
    pub sha256: String,
    /// Lower-case hex sha256 of the sidecar file.
    pub sidecar_sha256: String,
    /// `mmaemu:platform` (JSON), if present.
    pub platform: Option<serde_json::Value>,
    /// `mmaemu:provenance` (JSON), if present.
    pub provenance: Option<serde_json::Value>,
    /// The parsed sidecar.
    pub sidecar: serde_json::Value,
    /// Every row, in file order.
    pub rows: Vec<SplitKTableRow>,
}

/// The sidecar of a table file: the same path with the extension `.json`.
pub fn splitk_sidecar_path(path: &Path) -> PathBuf {
    path.with_extension("json")
}

/// Reads a split-K table and checks it against its sidecar (`<stem>.json` next to it): the file's key-value
/// metadata (`mmaemu:format`), the sidecar's `format`, the file's sha256 against the sidecar's `parquet_sha256` and
/// the row count against the sidecar's `rows`, then returns every row. Every problem is a [`DatasetError`], never a
/// panic.
pub fn read_splitk_table(path: &Path) -> Result<SplitKTable, DatasetError> {
    read_splitk_table_with_sidecar(path, &splitk_sidecar_path(path))
}

/// Reads a split-K table and checks it against the given sidecar: the sidecar's `format` must be
/// `mmaemu-splitk-table/1`, its `parquet_sha256` must equal the file's sha256, and its `rows` (when present)
/// the number of rows read. Each file is opened once, as a regular file (a link, FIFO or device is refused before it
/// is read: a sidecar linked to /dev/zero would never end), and read under the memory ceiling.
pub fn read_splitk_table_with_sidecar(path: &Path, sidecar_path: &Path) -> Result<SplitKTable, DatasetError> {
    let ceiling = crate::limits::ceiling();
    let sidecar_bytes = crate::platform::read_regular(sidecar_path, ceiling, "the table's sidecar")?;
    let parquet = crate::platform::read_regular(path, ceiling, "the split-K table")?;
    splitk_table_from_bytes(path, parquet, sidecar_path, &sidecar_bytes)
}

/// [`read_splitk_table_with_sidecar`] from the bytes of both files, read once (a platform bundle's, hashed from
/// the same bytes): `path` and `sidecar_path` only name them in messages.
pub fn splitk_table_from_bytes(
    path: &Path,
    parquet: Vec<u8>,
    sidecar_path: &Path,
    sidecar_bytes: &[u8],
) -> Result<SplitKTable, DatasetError> {
    let sha256 = crate::digest::sha256_hex(&parquet);
    let sidecar = check_sidecar(path, &sha256, sidecar_path, sidecar_bytes)?;
    read_table_rows(path, sha256, bytes::Bytes::from(parquet), sidecar_path, sidecar, sidecar_bytes)
}

/// The sidecar, its `format` checked and its `parquet_sha256` against the table's `sha256`.
fn check_sidecar(
    path: &Path,
    sha256: &str,
    sidecar_path: &Path,
    sidecar_bytes: &[u8],
) -> Result<serde_json::Value, DatasetError> {
    let sidecar: serde_json::Value = serde_json::from_slice(sidecar_bytes)
        .map_err(|e| DatasetError::invalid(sidecar_path, None, format!("the sidecar is not valid JSON: {e}")))?;
    match sidecar.get("format").and_then(|v| v.as_str()) {
        Some(SPLITK_TABLE_FORMAT) => {}
        other => {
            return Err(DatasetError::invalid(
                sidecar_path,
                None,
                format!("sidecar `format` is {other:?}, expected \"{SPLITK_TABLE_FORMAT}\""),
            ))
        }
    }
    let want_sha = sidecar.get("parquet_sha256").and_then(|v| v.as_str()).ok_or_else(|| {
        DatasetError::invalid(sidecar_path, None, "the sidecar has no string `parquet_sha256`".to_string())
    })?;
    if !sha256.eq_ignore_ascii_case(want_sha) {
        return Err(DatasetError::invalid(
            path,
            None,
            format!(
                "sha256 {sha256} differs from the sidecar's parquet_sha256 {want_sha} ({})",
                sidecar_path.display()
            ),
        ));
    }
    Ok(sidecar)
}

/// The rows of a table file already checked against its sidecar.
fn read_table_rows<R: parquet::file::reader::ChunkReader + 'static>(
    path: &Path,
    sha256: String,
    file: R,
    sidecar_path: &Path,
    sidecar: serde_json::Value,
    sidecar_bytes: &[u8],
) -> Result<SplitKTable, DatasetError> {
    let sidecar_sha256 = crate::digest::sha256_hex(sidecar_bytes);
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| crate::read::footer_error(path, e))?;
    let kv = builder.metadata().file_metadata().key_value_metadata();
    let meta = crate::read::KvMeta { path, kv };
    let format = meta.format()?;
    if format != SPLITK_TABLE_FORMAT {
        return Err(DatasetError::invalid(
            path,
            None,
            format!("metadata `mmaemu:format` is {format:?}, expected \"{SPLITK_TABLE_FORMAT}\""),
        ));
    }
    let platform = meta.json("mmaemu:platform")?;
    let provenance = meta.json("mmaemu:provenance")?;

    let schema = builder.schema().clone();
    for c in SPLITK_COLUMNS {
        if schema.fields().iter().all(|f| f.name() != c) {
            return Err(DatasetError::MissingColumn { path: path.to_path_buf(), column: c.to_string() });
        }
    }
    let total = usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let reader = builder.with_batch_size(1 << 16).build().map_err(|e| corrupt(path, e))?;
    // The footer's row count is the file's word, not a size to trust: reserve no more than a million rows up front.
    let mut rows = Vec::with_capacity(total.min(1 << 20));
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(path, e))?;
        decode_batch(path, &batch, &mut rows)?;
    }
    if let Some(want) = sidecar.get("rows").and_then(|v| v.as_u64()) {
        if want != rows.len() as u64 {
            return Err(DatasetError::invalid(
                path,
                None,
                format!("{} rows, the sidecar says {want} ({})", rows.len(), sidecar_path.display()),
            ));
        }
    }
    Ok(SplitKTable {
        path: path.to_path_buf(),
        sidecar_path: sidecar_path.to_path_buf(),
        sha256,
        sidecar_sha256,
        platform,
        provenance,
        sidecar,
        rows,
    })
}

fn corrupt(path: &Path, e: impl std::fmt::Display) -> DatasetError {
    DatasetError::Corrupt { path: path.to_path_buf(), detail: e.to_string() }
}

fn wrong_type(path: &Path, column: &str, expected: &str, found: &DataType) -> DatasetError {
    DatasetError::WrongType {
        path: path.to_path_buf(),
        column: column.to_string(),
        expected: expected.to_string(),
        found: format!("{found}"),
    }
}

/// An integer column of any Arrow integer type, read as i64 (nulls are refused).
fn int_column(path: &Path, batch: &RecordBatch, name: &str) -> Result<Vec<i64>, DatasetError> {
    let a = batch
        .column_by_name(name)
        .ok_or_else(|| DatasetError::MissingColumn { path: path.to_path_buf(), column: name.to_string() })?;
    if a.null_count() > 0 {
        return Err(DatasetError::invalid(path, None, format!("column `{name}` has nulls (it is not nullable)")));
    }
    macro_rules! ints {
        ($t:ty) => {
            a.as_primitive_opt::<$t>().map(|p| p.values().iter().map(|&v| v as i64).collect::<Vec<i64>>())
        };
    }
    let values = match a.data_type() {
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        DataType::UInt64 => a
            .as_primitive_opt::<UInt64Type>()
            .and_then(|p| p.values().iter().map(|&v| i64::try_from(v).ok()).collect::<Option<Vec<i64>>>()),
        dt => return Err(wrong_type(path, name, "an integer type", dt)),
    };
    values.ok_or_else(|| corrupt(path, format!("column `{name}` could not be decoded as integers")))
}

/// A string column (Utf8, LargeUtf8, Utf8View, or a dictionary of one of them), mapped onto `allowed`.
fn enum_column(
    path: &Path,
    batch: &RecordBatch,
    name: &str,
    allowed: &[&'static str],
) -> Result<Vec<&'static str>, DatasetError> {
    let a = batch
        .column_by_name(name)
        .ok_or_else(|| DatasetError::MissingColumn { path: path.to_path_buf(), column: name.to_string() })?;
    if a.null_count() > 0 {
        return Err(DatasetError::invalid(path, None, format!("column `{name}` has nulls (it is not nullable)")));
    }
    let map = |s: &str| -> Result<&'static str, DatasetError> {
        allowed.iter().copied().find(|&x| x == s).ok_or_else(|| {
            DatasetError::invalid(path, None, format!("column `{name}` holds {s:?}, expected one of {allowed:?}"))
        })
    };
    let strings = |arr: &dyn Array| -> Result<Vec<&'static str>, DatasetError> {
        let mut out = Vec::with_capacity(arr.len());
        match arr.data_type() {
            DataType::Utf8 => {
                let s = arr.as_string::<i32>();
                for i in 0..s.len() {
                    out.push(if s.is_null(i) { "" } else { map(s.value(i))? });
                }
            }
            DataType::LargeUtf8 => {
                let s = arr.as_string::<i64>();
                for i in 0..s.len() {
                    out.push(if s.is_null(i) { "" } else { map(s.value(i))? });
                }
            }
            DataType::Utf8View => {
                let s = arr.as_string_view();
                for i in 0..s.len() {
                    out.push(if s.is_null(i) { "" } else { map(s.value(i))? });
                }
            }
            dt => return Err(wrong_type(path, name, "a string type or a dictionary of strings", dt)),
        }
        Ok(out)
    };
    match a.data_type() {
        DataType::Dictionary(_, _) => {
            let d =
                a.as_any_dictionary_opt().ok_or_else(|| corrupt(path, format!("column `{name}`: bad dictionary")))?;
            // Map the dictionary's values once; values that no key uses may be anything.
            let raw = strings_any(d.values().as_ref())
                .ok_or_else(|| wrong_type(path, name, "a dictionary of strings", a.data_type()))?;
            let mapped: Vec<Option<&'static str>> =
                raw.iter().map(|s| s.as_deref().and_then(|s| allowed.iter().copied().find(|&x| x == s))).collect();
            let keys = d.normalized_keys();
            let mut out = Vec::with_capacity(keys.len());
            for key in keys {
                match (mapped.get(key), raw.get(key)) {
                    (Some(Some(v)), _) => out.push(*v),
                    (_, Some(Some(s))) => return Err(map(s).err().unwrap_or_else(|| corrupt(path, name))),
                    _ => {
                        return Err(DatasetError::invalid(
                            path,
                            None,
                            format!("column `{name}` has a key outside its dictionary or a null value"),
                        ))
                    }
                }
            }
            Ok(out)
        }
        _ => strings(a.as_ref()),
    }
}

/// The strings of a string array of any string type (None: not a string array).
fn strings_any(arr: &dyn Array) -> Option<Vec<Option<String>>> {
    let get = |len: usize, f: &dyn Fn(usize) -> Option<String>| (0..len).map(f).collect::<Vec<_>>();
    match arr.data_type() {
        DataType::Utf8 => {
            let s = arr.as_string::<i32>();
            Some(get(s.len(), &|i| (!s.is_null(i)).then(|| s.value(i).to_string())))
        }
        DataType::LargeUtf8 => {
            let s = arr.as_string::<i64>();
            Some(get(s.len(), &|i| (!s.is_null(i)).then(|| s.value(i).to_string())))
        }
        DataType::Utf8View => {
            let s = arr.as_string_view();
            Some(get(s.len(), &|i| (!s.is_null(i)).then(|| s.value(i).to_string())))
        }
        _ => None,
    }
}

fn bool_column(path: &Path, batch: &RecordBatch, name: &str) -> Result<Vec<bool>, DatasetError> {
    let a = batch
        .column_by_name(name)
        .ok_or_else(|| DatasetError::MissingColumn { path: path.to_path_buf(), column: name.to_string() })?;
    if a.null_count() > 0 {
        return Err(DatasetError::invalid(path, None, format!("column `{name}` has nulls (it is not nullable)")));
    }
    let b = a.as_boolean_opt().ok_or_else(|| wrong_type(path, name, "Boolean", a.data_type()))?;
    Ok((0..b.len()).map(|i| b.value(i)).collect())
}

fn decode_batch(path: &Path, batch: &RecordBatch, rows: &mut Vec<SplitKTableRow>) -> Result<(), DatasetError> {
    let ints = |name: &str| int_column(path, batch, name);
    let (m, n, k) = (ints("m")?, ints("n")?, ints("k")?);
    let fmt_a = enum_column(path, batch, "fmt_a", &SPLITK_FMTS)?;
    let fmt_b = enum_column(path, batch, "fmt_b", &SPLITK_FMTS)?;
    let out = enum_column(path, batch, "out_dtype", &SPLITK_OUT_DTYPES)?;
    let fast = bool_column(path, batch, "fast_accum")?;
    let ws = ints("workspace_bytes")?;
    let split_s = ints("split_s")?;
    let custom = ints("custom_option")?;
    let algo = ints("algo_id")?;
    let tile = ints("tile_id")?;
    let stages = ints("stages_id")?;
    let reduction = ints("reduction_scheme")?;
    let cta = ints("cta_swizzling")?;
    let first = rows.len();
    for i in 0..batch.num_rows() {
        let bad = |col: &str, v: i64| {
            DatasetError::invalid(path, None, format!("row {} (0-based): `{col}` = {v} is out of range", first + i))
        };
        macro_rules! conv {
            ($col:literal, $v:expr) => {
                $v.try_into().map_err(|_| bad($col, $v))?
            };
        }
        let row = SplitKTableRow {
            m: conv!("m", m[i]),
            n: conv!("n", n[i]),
            k: conv!("k", k[i]),
            fmt_a: fmt_a[i],
            fmt_b: fmt_b[i],
            out_dtype: out[i],
            fast_accum: fast[i],
            workspace_bytes: ws[i],
            decision: TableRow {
                split_s: conv!("split_s", split_s[i]),
                custom_option: conv!("custom_option", custom[i]),
                algo_id: conv!("algo_id", algo[i]),
                tile_id: conv!("tile_id", tile[i]),
                stages_id: conv!("stages_id", stages[i]),
                reduction_scheme: conv!("reduction_scheme", reduction[i]),
                cta_swizzling: conv!("cta_swizzling", cta[i]),
            },
        };
        if row.m < 0 || row.n < 0 || row.k < 0 || row.workspace_bytes < 0 {
            return Err(DatasetError::invalid(
                path,
                None,
                format!("row {} (0-based): negative m, n, k or workspace_bytes", first + i),
            ));
        }
        rows.push(row);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(stem: &str, ext: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("platforms").join(stem).join(format!("{stem}.{ext}"))
    }

    #[test]
    fn reads_the_rtx4060_table() {
        let t = read_splitk_table(&table("rtx4060-cublaslt-12.8.3.14", "parquet")).unwrap();
        assert_eq!(t.rows.len(), 1_228_448);
        assert_eq!(t.sidecar.get("table_id").and_then(|v| v.as_str()), Some("heur_rtx4060_lt12.8.3.14"));
        assert_eq!(t.rows.iter().filter(|r| r.decision.split_s > 1).count(), 125_980);
    }

    #[test]
    fn refuses_a_sidecar_of_another_file() {
        let err = read_splitk_table_with_sidecar(
            &table("rtx4060-cublaslt-12.8.3.14", "parquet"),
            &table("h100pcie-cublaslt-12.8.3.14", "json"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("sha256"), "{err}");
    }

    /// A sidecar linked to /dev/zero, or the table itself a link, is refused before it is read (it would never end).
    #[cfg(unix)]
    #[test]
    fn refuses_links_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let good = table("rtx4060-cublaslt-12.8.3.14", "parquet");
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.json")).unwrap();
        let err = read_splitk_table_with_sidecar(&good, &dir.path().join("zero.json")).unwrap_err();
        assert!(matches!(err, DatasetError::NotRegular { .. }), "{err}");
        std::os::unix::fs::symlink(&good, dir.path().join("t.parquet")).unwrap();
        let err =
            read_splitk_table_with_sidecar(&dir.path().join("t.parquet"), &good.with_extension("json")).unwrap_err();
        assert!(matches!(err, DatasetError::NotRegular { .. }), "{err}");
    }
}
