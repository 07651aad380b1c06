//! Raw Parquet for the hostile tests: files the validating writer would refuse (mislabelled rows, bad
//! metadata, extreme dimensions) written column by column with arrow and parquet.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------------------------------------------
// Raw Parquet: the writer refuses invalid rows, so mislabelled or malformed files are written with arrow/parquet.

/// One Parquet file as one record batch and its key-value metadata (without `ARROW:schema`).
#[derive(Clone)]
pub(crate) struct Raw {
    pub(crate) batch: RecordBatch,
    pub(crate) kv: Vec<KeyValue>,
}

pub(crate) fn load_raw(path: &Path) -> Result<Raw, String> {
    let (batch, kv) = mmaemu_testkit::raw_parquet::read(path)?;
    Ok(Raw { batch, kv })
}

pub(crate) fn encode(raw: &Raw, skip_arrow_schema: bool) -> Result<Vec<u8>, String> {
    mmaemu_testkit::raw_parquet::encode(&raw.batch, raw.kv.clone(), skip_arrow_schema)
}

pub(crate) fn save_raw(raw: &Raw, path: &Path) -> Result<(), String> {
    mmaemu_testkit::raw_parquet::write(path, &raw.batch, raw.kv.clone())
}

/// One value of a cell.
#[derive(Clone, Debug)]
pub(crate) enum CellValue {
    Str(Option<String>),
    I64(Option<i64>),
    I32(Option<i32>),
    U32(Option<u32>),
    Bool(Option<bool>),
    Bin(Option<Vec<u8>>),
}

impl std::fmt::Display for CellValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = |s: &str| -> String {
            let n = s.chars().count();
            if n > 240 {
                format!("{:?}... ({n} chars)", s.chars().take(240).collect::<String>())
            } else {
                format!("{s:?}")
            }
        };
        match self {
            CellValue::Str(Some(s)) => write!(f, "{}", short(s)),
            CellValue::Bin(Some(b)) => write!(f, "{} bytes {:02x?}...", b.len(), &b[..b.len().min(8)]),
            CellValue::Str(None) | CellValue::Bin(None) => write!(f, "null"),
            CellValue::I64(v) => write!(f, "{v:?}"),
            CellValue::I32(v) => write!(f, "{v:?}"),
            CellValue::U32(v) => write!(f, "{v:?}"),
            CellValue::Bool(v) => write!(f, "{v:?}"),
        }
    }
}

pub(crate) fn strings(a: &ArrayRef) -> Option<Vec<Option<String>>> {
    let own = |x: Option<&str>| x.map(str::to_string);
    if let Some(s) = a.as_string_opt::<i32>() {
        return Some(s.iter().map(own).collect());
    }
    if let Some(s) = a.as_string_opt::<i64>() {
        return Some(s.iter().map(own).collect());
    }
    a.as_string_view_opt().map(|s| s.iter().map(own).collect())
}

pub(crate) fn binaries(a: &ArrayRef) -> Option<Vec<Option<Vec<u8>>>> {
    let own = |x: Option<&[u8]>| x.map(<[u8]>::to_vec);
    if let Some(s) = a.as_binary_opt::<i32>() {
        return Some(s.iter().map(own).collect());
    }
    if let Some(s) = a.as_binary_opt::<i64>() {
        return Some(s.iter().map(own).collect());
    }
    a.as_binary_view_opt().map(|s| s.iter().map(own).collect())
}

/// `batch` with column `name` replaced by `array` (appended when absent); every column nullable.
pub(crate) fn put_column(batch: &RecordBatch, name: &str, array: ArrayRef) -> RecordBatch {
    let schema = batch.schema();
    let mut cols: Vec<(String, ArrayRef, bool)> =
        schema.fields().iter().zip(batch.columns()).map(|(f, c)| (f.name().clone(), c.clone(), true)).collect();
    match cols.iter_mut().find(|(n, _, _)| n == name) {
        Some(slot) => slot.1 = array,
        None => cols.push((name.to_string(), array, true)),
    }
    RecordBatch::try_from_iter_with_nullable(cols).expect("columns of equal length")
}

pub(crate) fn drop_column(batch: &RecordBatch, name: &str) -> RecordBatch {
    let mut b = batch.clone();
    if let Ok(i) = b.schema().index_of(name) {
        b.remove_column(i);
    }
    b
}

/// `batch` with the cell (`name`, `row`) set to `value` (a missing column, or one of another type, becomes a
/// column of the value's type, null elsewhere).
pub(crate) fn set_cell(batch: &RecordBatch, name: &str, row: usize, value: &CellValue) -> RecordBatch {
    let n = batch.num_rows();
    let col = batch.column_by_name(name).cloned();
    pub(crate) fn with<T: Clone>(mut v: Vec<Option<T>>, row: usize, x: &Option<T>) -> Vec<Option<T>> {
        v[row] = x.clone();
        v
    }
    let array: ArrayRef = match value {
        CellValue::Str(x) => {
            Arc::new(StringArray::from(with(col.as_ref().and_then(strings).unwrap_or(vec![None; n]), row, x)))
        }
        CellValue::Bin(x) => {
            let v = with(col.as_ref().and_then(binaries).unwrap_or(vec![None; n]), row, x);
            Arc::new(BinaryArray::from_iter(v))
        }
        CellValue::I64(x) => {
            let old =
                col.as_ref().and_then(|a| a.as_primitive_opt::<Int64Type>().map(|p| p.iter().collect::<Vec<_>>()));
            Arc::new(Int64Array::from(with(old.unwrap_or(vec![None; n]), row, x)))
        }
        CellValue::I32(x) => {
            let old =
                col.as_ref().and_then(|a| a.as_primitive_opt::<Int32Type>().map(|p| p.iter().collect::<Vec<_>>()));
            Arc::new(Int32Array::from(with(old.unwrap_or(vec![None; n]), row, x)))
        }
        CellValue::U32(x) => {
            let old =
                col.as_ref().and_then(|a| a.as_primitive_opt::<UInt32Type>().map(|p| p.iter().collect::<Vec<_>>()));
            Arc::new(UInt32Array::from(with(old.unwrap_or(vec![None; n]), row, x)))
        }
        CellValue::Bool(x) => {
            let old = col.as_ref().and_then(|a| a.as_boolean_opt().map(|p| p.iter().collect::<Vec<_>>()));
            Arc::new(BooleanArray::from(with(old.unwrap_or(vec![None; n]), row, x)))
        }
    };
    put_column(batch, name, array)
}

pub(crate) fn cell_str(batch: &RecordBatch, name: &str, row: usize) -> Option<String> {
    batch.column_by_name(name).and_then(strings).and_then(|v| v.get(row).cloned().flatten())
}

/// Rewrite `src` to `dst` with one string cell changed.
pub(crate) fn rewrite_str(src: &Path, dst: &Path, column: &str, row: usize, value: &str) -> Result<(), String> {
    let mut raw = load_raw(src)?;
    raw.batch = set_cell(&raw.batch, column, row, &CellValue::Str(Some(value.into())));
    save_raw(&raw, dst)
}
