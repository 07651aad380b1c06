//! `mmaemu-record dump FILE --out DIR`: a recording as raw bytes for tools without a Parquet reader (the
//! device script's torch cross-check when pyarrow is missing). Operands shipped by reference are
//! regenerated first, so every row of the dump is complete.
//!
//! `DIR/data.bin` holds the operands and results back to back; `DIR/index.jsonl` has one JSON object per
//! row: `id`, `op`, `m`, `n`, `k`, `fmt_a`, `fmt_b` (torch dtype names), `out_dtype`, `fast_accum`,
//! `scale_a`, `scale_b`, `scale_result` (fp32 bit patterns, or null), `split_s`, `split_scheme`,
//! `a` and `b` (`[offset, length]` into data.bin; A is [m, k] row-major, B is [n, k] row-major, so torch's
//! mat2 is `B.t()`), `expected` (`[offset, length]` or null), `expected_sha256`, `expected_error`, `note`.

use crate::error::RecordError;
use mmaemu_datasets::write_file_atomic;
use mmaemu_datasets::{read_recording, torch_dtype_name, Expectation};
use serde_json::json;
use std::path::Path;

/// Writes the dump of `file` into `dir` (created if missing); returns the number of rows.
pub fn dump(file: &Path, dir: &Path) -> Result<usize, RecordError> {
    let rec = read_recording(file)?;
    std::fs::create_dir_all(dir).map_err(|e| RecordError::io(dir, e))?;
    let mut data: Vec<u8> = Vec::new();
    let mut index = String::new();
    let put = |bytes: &[u8], data: &mut Vec<u8>| {
        let off = data.len();
        data.extend_from_slice(bytes);
        json!([off, bytes.len()])
    };
    for row in &rec.rows {
        let a = put(&row.a, &mut data);
        let b = put(&row.b, &mut data);
        let (expected, sha, err) = match &row.expected {
            Expectation::Bits(bits) => (put(bits, &mut data), None, None),
            Expectation::Sha256(h) => (serde_json::Value::Null, Some(h.clone()), None),
            Expectation::Error(e) => (serde_json::Value::Null, None, Some(e.clone())),
        };
        let line = json!({
            "id": row.id,
            "op": row.op.as_str(),
            "m": row.m,
            "n": row.n,
            "k": row.k,
            "fmt_a": torch_dtype_name(&row.fmt_a),
            "fmt_b": torch_dtype_name(&row.fmt_b),
            "out_dtype": row.effective_out_dtype(),
            "fast_accum": row.fast_accum,
            "scale_a": row.scale_a,
            "scale_b": row.scale_b,
            "scale_result": row.scale_result,
            "split_s": row.split_s,
            "split_scheme": row.split_scheme,
            "a": a,
            "b": b,
            "expected": expected,
            "expected_sha256": sha,
            "expected_error": err,
            "note": row.ext.note,
        });
        index.push_str(&line.to_string());
        index.push('\n');
    }
    write_file_atomic(&dir.join("data.bin"), &data)?;
    write_file_atomic(&dir.join("index.jsonl"), index.as_bytes())?;
    Ok(rec.rows.len())
}
