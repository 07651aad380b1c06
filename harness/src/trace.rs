//! The trace of one element of a recorded row: the row's call rebuilt as the replay rebuilds it (ops `mma`,
//! `accumulator`, `gemm`, `scaled_mm`), traced with `mmaemu_trace`, and the element's recorded bits; the
//! attribution of a whole row's GEMM.

use crate::call::{split_request, CallParts};
use crate::replay::{format_of, gemm_epilogue, split_of};
use mmaemu_datasets::{Expectation, Op, OutSelect, Row};
use mmaemu_model::epilogue::from_le_bytes;
use mmaemu_model::{Operands, OutDtype, Plan};
use mmaemu_trace::summary::{attribute_gemm_with, GemmAttribution};
use mmaemu_trace::{attribute_scaled_mm_with, trace_dot, trace_element, trace_scaled_mm, Trace};

/// (batch, m, n, k) of a row as sizes.
fn dims(row: &Row) -> Result<(usize, usize, usize, usize), String> {
    let conv = |x: i64| usize::try_from(x).map_err(|_| format!("negative dimension {x}"));
    Ok((conv(row.batch)?, conv(row.m)?, conv(row.n)?, conv(row.k)?))
}

/// The number of elements of a row's result.
pub fn element_count(row: &Row) -> Result<usize, String> {
    let (batch, m, n, _) = dims(row)?;
    Ok(match row.out_select {
        OutSelect::Full => batch * m * n,
        OutSelect::Diagonal => batch * m.min(n),
    })
}

/// The flat index of element (t, i, j) of a row's result (the diagonal's index for `out_select = diagonal`).
pub fn flat_index(row: &Row, t: usize, i: usize, j: usize) -> Result<usize, String> {
    let (batch, m, n, _) = dims(row)?;
    if t >= batch.max(1) || i >= m || j >= n {
        return Err(format!("element [{t}, {i}, {j}] is outside the row's [{batch}, {m}, {n}] result"));
    }
    match row.out_select {
        OutSelect::Full => Ok((t * m + i) * n + j),
        OutSelect::Diagonal if i == j => Ok(t * m.min(n) + i),
        OutSelect::Diagonal => Err(format!("the row keeps only the diagonal; [{i}, {j}] is not on it")),
    }
}

/// (t, i, j) of flat element `index`.
pub fn position(row: &Row, index: usize) -> Result<(usize, usize, usize), String> {
    let (_, m, n, _) = dims(row)?;
    let count = element_count(row)?;
    if index >= count {
        return Err(format!("element {index} is outside the row's {count} elements"));
    }
    Ok(match row.out_select {
        OutSelect::Full => (index / (m * n), (index / n) % m, index % n),
        OutSelect::Diagonal => (index / m.min(n), index % m.min(n), index % m.min(n)),
    })
}

/// The recorded bits of flat element `index` in `dtype`: from the full result, or from the samples of a row that
/// ships only a sha256. None when the row expects an error or does not hold that element.
pub fn expected_bits(row: &Row, index: usize, dtype: OutDtype) -> Option<u32> {
    match &row.expected {
        Expectation::Bits(bytes) => from_le_bytes(bytes, dtype).get(index).copied(),
        Expectation::Sha256(_) => {
            let s = mmaemu_datasets::inputs::Samples::parse(row.ext.expected_samples.as_deref()?).ok()?;
            s.index.iter().position(|&x| x == index as u64).map(|p| s.bits[p])
        }
        Expectation::Error(_) => None,
    }
}

/// Trace flat element `index` of a row. `Err` says why it cannot be traced (the reason a replay would skip the
/// row, or the error the call raises).
pub fn trace_row(row: &Row, index: usize) -> Result<Trace, String> {
    let (t, i, j) = position(row, index)?;
    let (_, m, n, k) = dims(row)?;
    match row.op {
        Op::Mma => {
            let preset = mmaemu_api::catalogue().preset(&row.preset).map_err(|e| e.to_string())?;
            let (fa, fb) = (format_of(&row.fmt_a)?, format_of(&row.fmt_b)?);
            let c = row.c.as_deref().ok_or("op mma without c")?;
            let o = (t * m + i) * n + j;
            let cv = c.get(4 * o..4 * o + 4).ok_or("c is shorter than the result")?;
            let cv = f32::from_bits(u32::from_le_bytes([cv[0], cv[1], cv[2], cv[3]]));
            let ra = row.a.get((t * m + i) * k..(t * m + i + 1) * k).ok_or("a is shorter than its shape")?;
            let rb = row.b.get((t * n + j) * k..(t * n + j + 1) * k).ok_or("b is shorter than its shape")?;
            let mut tr = trace_dot(&preset, fa, fb, ra, rb, Some(cv)).map_err(|e| e.to_string())?;
            tr.element = Some((i, j));
            Ok(tr)
        }
        Op::Accumulator | Op::Gemm => {
            let preset = mmaemu_api::catalogue().preset(&row.preset).map_err(|e| e.to_string())?;
            let (fa, fb) = (format_of(&row.fmt_a)?, format_of(&row.fmt_b)?);
            let fast = row.fast_accum.ok_or("fast_accum is null")?;
            let plan = Plan::new(&preset, k, fast, split_of(row, &crate::Under::own().resolve(row))?)
                .map_err(|e| e.to_string())?;
            let ra = row.a.get(i * k..(i + 1) * k).ok_or("a is shorter than its shape")?;
            let rb = row.b.get(j * k..(j + 1) * k).ok_or("b is shorter than its shape")?;
            let ops = Operands { fa, fb, a: ra, b: rb, m: 1, n: 1, k };
            let epi = match row.op {
                Op::Gemm => Some(gemm_epilogue(row, fa)?),
                _ => None,
            };
            let mut tr = trace_element(&preset, &plan, &ops, 0, 0, epi.as_ref()).map_err(|e| e.to_string())?;
            tr.element = Some((i, j));
            Ok(tr)
        }
        Op::ScaledMm => {
            let parts = CallParts::of_row(row)?;
            trace_scaled_mm(&parts.call(split_request(row, &crate::Under::own().resolve(row))?), i, j)
                .map_err(|e| e.to_string())
        }
    }
}

/// Attribute every output of a row's GEMM (ops `accumulator`, `gemm`, `scaled_mm`; one batch), rebuilt as
/// [`trace_row`] rebuilds it, calling `progress(outputs done)`.
pub fn attribute_row(row: &Row, progress: &(dyn Fn(usize) + Sync)) -> Result<GemmAttribution, String> {
    let (batch, m, n, k) = dims(row)?;
    if batch > 1 {
        return Err(format!("the row holds {batch} batched products: attribution takes one GEMM"));
    }
    if row.out_select != OutSelect::Full {
        return Err("the row keeps only the diagonal of its result: attribution takes a full GEMM".into());
    }
    match row.op {
        Op::Mma => Err("op mma is one block chain per element from c, not a GEMM: use `mmaemu trace`".into()),
        Op::Accumulator | Op::Gemm => {
            let preset = mmaemu_api::catalogue().preset(&row.preset).map_err(|e| e.to_string())?;
            let (fa, fb) = (format_of(&row.fmt_a)?, format_of(&row.fmt_b)?);
            let fast = row.fast_accum.ok_or("fast_accum is null")?;
            let plan = Plan::new(&preset, k, fast, split_of(row, &crate::Under::own().resolve(row))?)
                .map_err(|e| e.to_string())?;
            let a = row.a.get(..m * k).ok_or("a is shorter than its shape")?;
            let b = row.b.get(..n * k).ok_or("b is shorter than its shape")?;
            let ops = Operands { fa, fb, a, b, m, n, k };
            let epi = match row.op {
                Op::Gemm => Some(gemm_epilogue(row, fa)?),
                _ => None,
            };
            attribute_gemm_with(&preset, &plan, &ops, epi.as_ref(), progress).map_err(|e| e.to_string())
        }
        Op::ScaledMm => {
            let parts = CallParts::of_row(row)?;
            attribute_scaled_mm_with(&parts.call(split_request(row, &crate::Under::own().resolve(row))?), progress)
                .map_err(|e| e.to_string())
        }
    }
}
