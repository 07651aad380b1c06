//! Recordings written from Python (`python -m mmaemu.record`): rows given as dicts of the format's columns
//! (the keys `read_recording_rows` returns, plus the extension columns `note` and `algo`), validated and
//! written by the datasets crate's writer, so every file obeys docs/recording-format.md.

use crate::errors::{internal, no_panic, to_py};
use mmaemu_api::model::{Category, Error};
use mmaemu_datasets::{write_recording, Call, Expectation, FileMeta, Op, OutSelect, Recording, Row, RowExt, Truth};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::Path;

fn data_error(msg: String) -> Error {
    Error::new(Category::Data, msg)
}

fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>> {
    match d.get_item(key)? {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => v.extract::<T>().map(Some).map_err(|e| {
            let e: PyErr = e.into();
            pyo3::exceptions::PyTypeError::new_err(format!("row column `{key}`: {e}"))
        }),
    }
}

fn need<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    get(d, key)?.ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(format!("row column `{key}` is missing")))
}

fn row_of(py: Python<'_>, d: &Bound<'_, PyDict>) -> PyResult<Row> {
    let bad = |msg: String| to_py(py, &data_error(msg));
    let op: String = need(d, "op")?;
    let truth: String = need(d, "truth")?;
    let (kind, value): (String, Bound<'_, PyAny>) = need(d, "expected")?;
    let expected = match kind.as_str() {
        "bits" => Expectation::Bits(value.extract()?),
        "sha256" => Expectation::Sha256(value.extract()?),
        "error" => Expectation::Error(value.extract()?),
        other => return Err(bad(format!("expected kind {other:?} is not bits, sha256 or error"))),
    };
    let call = match get::<String>(d, "call")? {
        None => None,
        Some(text) => Some(Call::parse(&text).map_err(|e| bad(format!("call object: {e}")))?),
    };
    let select: Option<String> = get(d, "out_select")?;
    Ok(Row {
        id: need(d, "id")?,
        op: Op::parse(&op).ok_or_else(|| bad(format!("op {op:?} is not an op of the format")))?,
        preset: need(d, "preset")?,
        profile: get(d, "profile")?,
        gpu: need(d, "gpu")?,
        truth: Truth::parse(&truth).ok_or_else(|| bad(format!("truth {truth:?} is not hardware or model")))?,
        fmt_a: need(d, "fmt_a")?,
        fmt_b: need(d, "fmt_b")?,
        batch: get(d, "batch")?.unwrap_or(1),
        m: need(d, "m")?,
        n: need(d, "n")?,
        k: need(d, "k")?,
        a: need(d, "a")?,
        b: need(d, "b")?,
        c: get(d, "c")?,
        scale_a: get(d, "scale_a")?,
        scale_b: get(d, "scale_b")?,
        scale_result: get(d, "scale_result")?,
        out_dtype: get(d, "out_dtype")?,
        fast_accum: get(d, "fast_accum")?,
        split_s: get(d, "split_s")?,
        split_scheme: get(d, "split_scheme")?,
        algo: get(d, "algo")?,
        call,
        out_select: OutSelect::parse(select.as_deref())
            .ok_or_else(|| bad(format!("out_select {select:?} is not null or diagonal")))?,
        expected,
        scope: get(d, "scope")?,
        origin: need(d, "origin")?,
        ext: RowExt { note: get(d, "note")?, ..RowExt::default() },
    })
}

/// Writes `rows` (a list of dicts) to `path` as one `mmaemu-recording/1` file with the given platform and
/// provenance JSON objects; returns the row count. A row that breaks the format raises DataError.
#[pyfunction]
#[pyo3(signature = (path, rows, platform=None, provenance=None))]
pub fn write_recording_rows(
    py: Python<'_>,
    path: &str,
    rows: &Bound<'_, PyList>,
    platform: Option<String>,
    provenance: Option<String>,
) -> PyResult<usize> {
    no_panic(|| {
        let json = |what: &str, text: Option<String>| -> PyResult<Option<serde_json::Value>> {
            text.map(|t| serde_json::from_str(&t).map_err(|e| to_py(py, &data_error(format!("{what}: {e}")))))
                .transpose()
        };
        let meta = FileMeta {
            platform: json("platform", platform)?,
            provenance: json("provenance", provenance)?,
            ..FileMeta::default()
        };
        let rows = rows.iter().map(|r| row_of(py, r.cast::<PyDict>()?)).collect::<PyResult<Vec<Row>>>()?;
        let count = rows.len();
        let rec = Recording { path: Path::new(path).to_path_buf(), meta, rows };
        py.detach(|| crate::errors::catch(|| write_recording(Path::new(path), &rec)))
            .map_err(internal)?
            .map_err(|e| to_py(py, &data_error(e.to_string())))?;
        Ok(count)
    })
}
