//! Writing `mmaemu-splitk-table/1` Parquet files: the columns and Arrow types of the shipped tables, the `mmaemu:*`
//! key-value metadata, and an atomic publish (temporary file, fsync, rename). [`crate::read_splitk_table`] reads them
//! back.

use crate::{write_file_atomic, DatasetError, SplitKTableRow};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Int16Array, Int32Array, Int64Array, RecordBatch, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

fn dict() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The Arrow schema of a split-K table: the same columns and Arrow types as the shipped tables
/// (`datasets/platforms/*/*.parquet`): int32 m, n, k; dictionary strings for the formats and the out dtype; bool
/// fast_accum; int64 workspace_bytes; uint8 / int16 value columns.
pub fn table_schema() -> Schema {
    Schema::new(vec![
        Field::new("m", DataType::Int32, false),
        Field::new("n", DataType::Int32, false),
        Field::new("k", DataType::Int32, false),
        Field::new("fmt_a", dict(), false),
        Field::new("fmt_b", dict(), false),
        Field::new("out_dtype", dict(), false),
        Field::new("fast_accum", DataType::Boolean, false),
        Field::new("workspace_bytes", DataType::Int64, false),
        Field::new("split_s", DataType::UInt8, false),
        Field::new("custom_option", DataType::UInt8, false),
        Field::new("algo_id", DataType::Int16, false),
        Field::new("tile_id", DataType::Int16, false),
        Field::new("stages_id", DataType::Int16, false),
        Field::new("reduction_scheme", DataType::UInt8, false),
        Field::new("cta_swizzling", DataType::UInt8, false),
    ])
}

/// The sidecar's `settings`: for each (ws, out, fast, fmt_a, fmt_b) of the rows, in that order, the rows,
/// the split rows, the largest split M·N, the smallest split K and the S values, as in the shipped sidecars.
pub fn settings_summary(rows: &[SplitKTableRow]) -> Vec<Value> {
    type Setting = (i64, &'static str, bool, &'static str, &'static str);
    /// rows, split rows, max split M*N, min split K, S values.
    type Summary = (u64, u64, Option<u64>, Option<i32>, BTreeSet<u8>);
    let mut settings: BTreeMap<Setting, Summary> = BTreeMap::new();
    for r in rows {
        let e = settings.entry((r.workspace_bytes, r.out_dtype, r.fast_accum, r.fmt_a, r.fmt_b)).or_insert((
            0,
            0,
            None,
            None,
            BTreeSet::new(),
        ));
        e.0 += 1;
        if r.decision.split_s > 1 {
            e.1 += 1;
            let mn = r.m as u64 * r.n as u64;
            e.2 = Some(e.2.map_or(mn, |x| x.max(mn)));
            e.3 = Some(e.3.map_or(r.k, |x| x.min(r.k)));
            e.4.insert(r.decision.split_s);
        }
    }
    settings
        .into_iter()
        .map(|((ws, out, fast, fa, fb), (n, split, max_mn, min_k, s_values))| {
            json!({"ws": ws, "out": out, "fast": fast, "fmt_a": fa, "fmt_b": fb, "rows": n, "split_rows": split,
                   "max_split_MN": max_mn, "min_split_K": min_k, "S_values": s_values})
        })
        .collect()
}

/// The sidecar's `columns` entry.
pub fn column_docs() -> Value {
    json!({
        "m": {"arrow_type": "int32", "meaning": "torch's M: scaled_mm(a[m, k], b[k, n]) (cuBLASLt itself sees m' = n, n' = m)"},
        "n": {"arrow_type": "int32", "meaning": "torch's N"},
        "k": {"arrow_type": "int32", "meaning": "K"},
        "fmt_a": {"arrow_type": "dictionary<values=string, indices=int32, ordered=0>", "meaning": "format of mat1 (e4m3 = float8_e4m3fn, e5m2 = float8_e5m2)"},
        "fmt_b": {"arrow_type": "dictionary<values=string, indices=int32, ordered=0>", "meaning": "format of mat2"},
        "out_dtype": {"arrow_type": "dictionary<values=string, indices=int32, ordered=0>", "meaning": "torch out dtype name"},
        "fast_accum": {"arrow_type": "bool", "meaning": "use_fast_accum (CUBLASLT_MATMUL_DESC_FAST_ACCUM)"},
        "workspace_bytes": {"arrow_type": "int64", "meaning": "cuBLASLt MAX_WORKSPACE_BYTES of the heuristic query"},
        "split_s": {"arrow_type": "uint8", "meaning": "numSplitsK of the algorithm the heuristic returned first (requestedAlgoCount = 1)"},
        "custom_option": {"arrow_type": "uint8", "meaning": "CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION of that algorithm"},
        "algo_id": {"arrow_type": "int16", "meaning": "CUBLASLT_ALGO_CONFIG_ID"},
        "tile_id": {"arrow_type": "int16", "meaning": "CUBLASLT_ALGO_CONFIG_TILE_ID (cublasLt.h enum)"},
        "stages_id": {"arrow_type": "int16", "meaning": "CUBLASLT_ALGO_CONFIG_STAGES_ID (cublasLt.h enum)"},
        "reduction_scheme": {"arrow_type": "uint8", "meaning": "CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME (cublasLt.h enum)"},
        "cta_swizzling": {"arrow_type": "uint8", "meaning": "CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING"},
    })
}

/// Writes `rows` as a split-K table to `path`, atomically; `created_by` names the writing program.
pub fn write_splitk_table(
    path: &Path,
    rows: &[SplitKTableRow],
    platform: &Value,
    provenance: &Value,
    created_by: &str,
) -> Result<(), DatasetError> {
    let werr = |e: String| DatasetError::Write { path: path.to_path_buf(), detail: e };
    let schema = Arc::new(table_schema());
    let strs = |f: &dyn Fn(&SplitKTableRow) -> &str| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<DictionaryArray<Int32Type>>())
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(rows.iter().map(|r| r.m).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|r| r.n).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|r| r.k).collect::<Int32Array>()),
        strs(&|r| r.fmt_a),
        strs(&|r| r.fmt_b),
        strs(&|r| r.out_dtype),
        Arc::new(rows.iter().map(|r| Some(r.fast_accum)).collect::<BooleanArray>()),
        Arc::new(rows.iter().map(|r| r.workspace_bytes).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.decision.split_s).collect::<UInt8Array>()),
        Arc::new(rows.iter().map(|r| r.decision.custom_option).collect::<UInt8Array>()),
        Arc::new(rows.iter().map(|r| r.decision.algo_id).collect::<Int16Array>()),
        Arc::new(rows.iter().map(|r| r.decision.tile_id).collect::<Int16Array>()),
        Arc::new(rows.iter().map(|r| r.decision.stages_id).collect::<Int16Array>()),
        Arc::new(rows.iter().map(|r| r.decision.reduction_scheme).collect::<UInt8Array>()),
        Arc::new(rows.iter().map(|r| r.decision.cta_swizzling).collect::<UInt8Array>()),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(|e| werr(e.to_string()))?;
    let kv = vec![
        KeyValue::new("mmaemu:format".to_string(), crate::SPLITK_TABLE_FORMAT.to_string()),
        KeyValue::new("mmaemu:platform".to_string(), platform.to_string()),
        KeyValue::new("mmaemu:provenance".to_string(), provenance.to_string()),
    ];
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_key_value_metadata(Some(kv))
        .set_created_by(created_by.to_string())
        .build();
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, schema, Some(props)).map_err(|e| werr(e.to_string()))?;
    writer.write(&batch).map_err(|e| werr(e.to_string()))?;
    writer.close().map_err(|e| werr(e.to_string()))?;
    write_file_atomic(path, &buf)
}
