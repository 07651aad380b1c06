//! The semantic rules of `mmaemu-recording/1` that go beyond column types: shapes, binary lengths, the one
//! expectation per row, known enumeration values, the call object's constraints, unique ids and the
//! metadata JSON. The reader applies them to every row it reads, the writer to every row before it writes.

use crate::call::{Call, FillValue, MatSpec, ScaleLayout, ScaleSpec, Scaling};
use crate::error::DatasetError;
use crate::inputs::{by_reference, RowInputs, Samples};
use crate::row::{
    dims_product, dtype_packing, dtype_width, Expectation, FileMeta, Op, OutSelect, Row, EXPECTED_ERRORS, FORMAT_V1,
    SPLIT_SCHEMES,
};
use std::collections::HashSet;
use std::path::Path;

/// Checks one row; the error text says what is wrong (the caller adds file and row id).
/// The `preset` value of a row whose preset is not known yet.
pub const UNKNOWN_PRESET: &str = "unknown";

pub(crate) fn check_row(row: &Row) -> Result<(), String> {
    for (name, v) in [("batch", row.batch), ("m", row.m), ("n", row.n), ("k", row.k)] {
        if v < 0 {
            return Err(format!("`{name}` is negative ({v})"));
        }
    }
    if row.op == Op::ScaledMm && row.profile.is_none() {
        return Err("`profile` is null; it is required for scaled_mm rows".into());
    }
    // The labels are evidence only if they name what the model replays: a known preset, and the preset
    // of the row's profile (a row cannot count as hardware evidence for a preset its profile does not run).
    // `unknown`: a recording of a GPU whose preset is still to be found (`mmaemu fit preset` input, not replayable);
    // no profile can name it.
    if row.preset == UNKNOWN_PRESET {
        if row.profile.is_some() {
            return Err("`preset` is unknown, so `profile` must be null".into());
        }
    } else {
        let catalogue = crate::platform::catalogue();
        let preset = catalogue
            .preset(&row.preset)
            .map_err(|_| format!("`preset` {:?} is not a preset of the model", row.preset))?;
        if let Some(name) = &row.profile {
            let profile = catalogue.profile(name).map_err(|_| format!("`profile` {name:?} is not a profile"))?;
            if profile.preset.name() != preset.name() {
                return Err(format!(
                    "profile {name} runs preset {}, the row says preset {}",
                    profile.preset.name(),
                    row.preset
                ));
            }
        }
    }
    if let Some(s) = &row.split_scheme {
        if !SPLIT_SCHEMES.contains(&s.as_str()) {
            return Err(format!("`split_scheme` {s:?} is not one of {}", SPLIT_SCHEMES.join(", ")));
        }
    }
    if let Some(s) = row.split_s {
        if s < 1 {
            return Err(format!("`split_s` is {s}, must be at least 1"));
        }
    }
    if let Some(scope) = &row.scope {
        let ok = scope == "in" || scope.strip_prefix("out:").is_some_and(|r| !r.is_empty());
        if !ok {
            return Err(format!("`scope` {scope:?} is neither \"in\" nor \"out:<reason>\""));
        }
    }

    if let Some(algo) = &row.algo {
        match serde_json::from_str::<serde_json::Value>(algo) {
            Ok(v) if v.is_object() => {}
            Ok(_) => return Err("`algo` is not a JSON object".into()),
            Err(e) => return Err(format!("`algo` is not valid JSON: {e}")),
        }
    }

    // Extension columns.
    if let Some(inputs) = &row.ext.inputs {
        RowInputs::parse(inputs).map_err(|e| format!("`inputs` is not a valid inputs object: {e}"))?;
    }
    if let Some(samples) = &row.ext.expected_samples {
        let samples =
            Samples::parse(samples).map_err(|e| format!("`expected_samples` is not a valid samples object: {e}"))?;
        let total = mmaemu_model::limits::product(&[row.batch as u64, row.m as u64, row.n as u64]).unwrap_or(u64::MAX);
        if let Some(i) = samples.index.iter().find(|&&i| i >= total) {
            return Err(format!("`expected_samples` index {i} is outside the result's {total} elements"));
        }
    }

    // Operands (empty ones are shipped by reference when `inputs` gives their generator).
    let by_ref = by_reference(row);
    if !(by_ref && row.a.is_empty()) {
        check_operand("a", &row.a, &row.fmt_a, &[row.batch, row.m, row.k])?;
    }
    if !(by_ref && row.b.is_empty()) {
        check_operand("b", &row.b, &row.fmt_b, &[row.batch, row.n, row.k])?;
    }
    match (row.op, &row.c) {
        (Op::Mma, None) => return Err("`c` is null; mma rows require it".into()),
        (Op::Mma, Some(c)) => {
            let want = bytes(&[row.batch, row.m, row.n], 4, "c")?;
            if c.len() != want {
                return Err(format!(
                    "`c` holds {} bytes, expected {want} (batch {} x m {} x n {} x 4)",
                    c.len(),
                    row.batch,
                    row.m,
                    row.n
                ));
            }
        }
        (_, Some(_)) => return Err(format!("`c` is set on a {} row (mma only)", row.op)),
        (_, None) => {}
    }

    // Call object.
    if let Some(call) = &row.call {
        if row.op != Op::ScaledMm {
            return Err(format!("`call` is set on a {} row (scaled_mm only)", row.op));
        }
        check_call(call).map_err(|e| format!("`call`: {e}"))?;
    }

    // Expectation.
    if row.out_select == OutSelect::Diagonal && row.m != row.n {
        return Err(format!("out_select is diagonal but m ({}) != n ({})", row.m, row.n));
    }
    match &row.expected {
        Expectation::Bits(bits) => {
            let dtype = row.effective_out_dtype();
            let width =
                dtype_width(dtype).ok_or_else(|| format!("unknown out dtype {dtype:?}: cannot check `expected`"))?;
            let elems = row.expected_elems().ok_or_else(|| "result shape overflows".to_string())?;
            let want = elems.checked_mul(width).ok_or_else(|| "result shape overflows".to_string())?;
            if bits.len() != want {
                let shape = match row.out_select {
                    OutSelect::Full => format!("batch {} x m {} x n {}", row.batch, row.m, row.n),
                    OutSelect::Diagonal => format!("batch {} x m {} (diagonal)", row.batch, row.m),
                };
                return Err(format!(
                    "`expected` holds {} bytes, expected {want} ({shape} x {width} bytes of {dtype})",
                    bits.len()
                ));
            }
        }
        Expectation::Sha256(h) => {
            if h.len() != 64 || !h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(format!("`expected_sha256` {h:?} is not 64 lower-case hex digits"));
            }
        }
        Expectation::Error(e) => {
            if !EXPECTED_ERRORS.contains(&e.as_str()) {
                return Err(format!("`expected_error` {e:?} is not one of {}", EXPECTED_ERRORS.join(", ")));
            }
        }
    }
    Ok(())
}

fn bytes(dims: &[i64], width: usize, what: &str) -> Result<usize, String> {
    dims_product(dims).and_then(|n| n.checked_mul(width)).ok_or_else(|| format!("the shape of `{what}` overflows"))
}

fn check_operand(col: &str, data: &[u8], fmt: &str, dims: &[i64]) -> Result<(), String> {
    let fmt_col = if col == "a" { "fmt_a" } else { "fmt_b" };
    let width =
        dtype_width(fmt).ok_or_else(|| format!("unknown `{fmt_col}` {fmt:?}: cannot check the length of `{col}`"))?;
    let packing = dtype_packing(fmt);
    if packing > 1 && dims[2] % packing as i64 != 0 {
        return Err(format!("k = {} is not a multiple of {packing}, as `{col}` of {fmt} needs", dims[2]));
    }
    let want = bytes(dims, width, col)? / packing as usize;
    if data.len() != want {
        let r = if col == "a" { "m" } else { "n" };
        return Err(format!(
            "`{col}` holds {} bytes, expected {want} (batch {} x {r} {} x k {} x {width} bytes of {fmt})",
            data.len(),
            dims[0],
            dims[1],
            dims[2]
        ));
    }
    Ok(())
}

fn check_mat(name: &str, mat: &MatSpec, other_layout: &str) -> Result<(), String> {
    if mat.layout != "std" && mat.layout != other_layout {
        return Err(format!("{name}.layout {:?} is neither \"std\" nor {other_layout:?}", mat.layout));
    }
    if mat.ld_pad < 0 {
        return Err(format!("{name}.ld_pad is negative ({})", mat.ld_pad));
    }
    if mat.offset < 0 {
        return Err(format!("{name}.offset is negative ({})", mat.offset));
    }
    Ok(())
}

/// The block-scale keys: a `blocked` or `col` layout is a 2-D matrix; `global` only with 1 x 16 scales.
fn check_scale_layout(name: &str, s: &ScaleSpec) -> Result<(), String> {
    if s.layout != ScaleLayout::Std && s.shape.len() != 2 {
        return Err(format!("{name}: a {:?} layout needs a 2-D shape, not {:?}", s.layout, s.shape));
    }
    if s.global.is_some() && s.scaling != Some(Scaling::BlockWise1x16) {
        return Err(format!("{name}.global needs scaling BlockWise1x16 (NVFP4's tensor scale)"));
    }
    if s.storage_elements().is_none() {
        return Err(format!("{name}: the element count of shape {:?} overflows", s.shape));
    }
    Ok(())
}

fn check_call(call: &Call) -> Result<(), String> {
    check_mat("mat1", &call.mat1, "col")?;
    check_mat("mat2", &call.mat2, "row")?;
    for (name, s) in [("scale_a", &call.scale_a), ("scale_b", &call.scale_b), ("scale_result", &call.scale_result)] {
        if let Some(s) = s {
            if s.shape.iter().any(|&d| d < 0) {
                return Err(format!("{name}.shape {:?} has a negative dimension", s.shape));
            }
            check_scale_layout(name, s)?;
        }
    }
    if let Some(b) = &call.bias {
        if b.len < 0 {
            return Err(format!("bias.len is negative ({})", b.len));
        }
    }
    if let Some(out) = &call.out {
        if out.shape.iter().any(|&d| d < 0) {
            return Err(format!("out.shape {:?} has a negative dimension", out.shape));
        }
        if let Some(FillValue::Number(x)) = out.fill {
            if x == f64::NEG_INFINITY {
                return Err("out.fill -inf cannot be written in a call object".into());
            }
        }
    }
    Ok(())
}

/// Checks every row and that ids are unique; errors name `path` and the row.
pub(crate) fn check_rows(path: &Path, rows: &[Row]) -> Result<(), DatasetError> {
    let mut seen: HashSet<&str> = HashSet::with_capacity(rows.len());
    for row in rows {
        check_row(row).map_err(|what| DatasetError::invalid(path, Some(&row.id), what))?;
        if !seen.insert(&row.id) {
            return Err(DatasetError::invalid(path, Some(&row.id), "duplicate id (ids must be unique within a file)"));
        }
    }
    Ok(())
}

/// Checks the file metadata: the format key and that platform/provenance are JSON objects.
pub(crate) fn check_meta(path: &Path, meta: &FileMeta) -> Result<(), DatasetError> {
    if meta.format != FORMAT_V1 {
        return Err(DatasetError::WrongFormat { path: path.to_path_buf(), found: meta.format.clone() });
    }
    for (key, v) in [("mmaemu:platform", &meta.platform), ("mmaemu:provenance", &meta.provenance)] {
        if let Some(v) = v {
            if !v.is_object() {
                return Err(DatasetError::invalid(path, None, format!("metadata `{key}` is not a JSON object")));
            }
        }
    }
    Ok(())
}
