//! Replaying op `scaled_mm` rows: the recording's call object (layouts, leading-dimension padding,
//! storage offsets, scale tensors, bias, out=, omitted keywords) rebuilt as a [`ScaledMm`] call on the
//! row's profile, with the recorded split passed explicitly.

use crate::replay::Computed;
use crate::under::{Resolved, Under};
use mmaemu_datasets::{limits, Call, Expectation, MatSpec, Row, ScaleSpec};
use mmaemu_model::dtype::Dtype;
use mmaemu_model::epilogue::{f32_to_bf16, f32_to_f16};
use mmaemu_model::scaled_mm::{BiasSpec, ProfileArg, ScaleTensor, ScaledMm, Validation};
use mmaemu_model::splitk::SplitRequest;
use mmaemu_model::tensor::{Tensor, View};
use mmaemu_model::{Category, Format, OutDtype};

/// An operand's storage and its view geometry.
struct Operand {
    dtype: Dtype,
    storage: Vec<u8>,
    shape: [usize; 2],
    strides: [usize; 2],
    offset: usize,
}

impl Operand {
    fn view(&self) -> View<'_> {
        View {
            dtype: self.dtype.clone(),
            shape: self.shape.to_vec(),
            strides: self.strides.to_vec(),
            offset: self.offset,
            storage: &self.storage,
        }
    }
}

fn usize_of(x: i64, what: &str) -> Result<usize, String> {
    usize::try_from(x).map_err(|_| format!("{what} is negative ({x})"))
}

/// Lay out a logical row-major [rows, cols] matrix (`data`, `w` bytes per element) into a buffer whose
/// element (i, j) sits at `offset + i * s0 + j * s1`.
fn lay_out(
    data: &[u8],
    w: usize,
    rows: usize,
    cols: usize,
    offset: usize,
    s0: usize,
    s1: usize,
) -> Result<Vec<u8>, String> {
    let extent = if rows == 0 || cols == 0 {
        Some(0)
    } else {
        ((rows - 1) as u64).checked_mul(s0 as u64).and_then(|x| x.checked_add((cols - 1) as u64 * s1 as u64 + 1))
    };
    let bytes = extent.and_then(|e| e.checked_add(offset as u64)).and_then(|e| e.checked_mul(w as u64));
    limits::check_in_force("an operand's storage", bytes)?;
    if data.len() < rows * cols * w {
        return Err(format!("the operand holds {} bytes, its shape needs {}", data.len(), rows * cols * w));
    }
    let mut buf = vec![0u8; bytes.unwrap_or(0) as usize];
    if cols == 0 {
        // Nothing to copy: without this, a zero-width operand with 2^36 rows loops 2^36 times.
        return Ok(buf);
    }
    for i in 0..rows {
        if s1 == 1 {
            // A contiguous row: one copy.
            let (src, dst) = (i * cols * w, (offset + i * s0) * w);
            buf[dst..dst + cols * w].copy_from_slice(&data[src..src + cols * w]);
            continue;
        }
        for j in 0..cols {
            let src = (i * cols + j) * w;
            let dst = (offset + i * s0 + j * s1) * w;
            if w == 1 {
                // FP8 operands: one byte, not a memmove call per element.
                buf[dst] = data[src];
            } else {
                buf[dst..dst + w].copy_from_slice(&data[src..src + w]);
            }
        }
    }
    Ok(buf)
}

/// mat1 from the row's A ([m, k]) and its call spec: `std` row-major with ld k + ld_pad; `col` the
/// transpose of a row-major [k, m + ld_pad] buffer.
fn mat1(row: &Row, spec: &MatSpec, m: usize, k: usize) -> Result<Operand, String> {
    let dtype = Dtype::from_name(spec.dtype.as_deref().unwrap_or(&row.fmt_a));
    let (pad, offset) = (usize_of(spec.ld_pad, "ld_pad")?, usize_of(spec.offset, "offset")?);
    let strides = match spec.layout.as_str() {
        "std" => [k + pad, 1],
        "col" => [1, m + pad],
        other => return Err(format!("mat1 layout '{other}' is not a layout of the format")),
    };
    let storage = lay_out(&row.a, dtype.size(), m, k, offset, strides[0], strides[1])?;
    Ok(Operand { dtype, storage, shape: [m, k], strides, offset })
}

/// mat2 ([k, n]) from the row's B ([n, k]) and its call spec: `std` the transpose of a row-major
/// [n, k + ld_pad] buffer; `row` row-major [k, n + ld_pad].
fn mat2(row: &Row, spec: &MatSpec, n: usize, k: usize) -> Result<Operand, String> {
    let dtype = Dtype::from_name(spec.dtype.as_deref().unwrap_or(&row.fmt_b));
    let (pad, offset) = (usize_of(spec.ld_pad, "ld_pad")?, usize_of(spec.offset, "offset")?);
    // The buffer holds B^T's elements: element (kk, j) of mat2 is B[j, kk].
    let (strides, storage) = match spec.layout.as_str() {
        "std" => {
            let st = [1, k + pad];
            // Lay B out as rows of k + pad: B[j, kk] at offset + j * (k + pad) + kk.
            (st, lay_out(&row.b, dtype.size(), n, k, offset, k + pad, 1)?)
        }
        "row" => {
            let st = [n + pad, 1];
            // B[j, kk] at offset + kk * (n + pad) + j: B's (j, kk) with strides (1, n + pad).
            (st, lay_out(&row.b, dtype.size(), n, k, offset, 1, n + pad)?)
        }
        other => return Err(format!("mat2 layout '{other}' is not a layout of the format")),
    };
    Ok(Operand { dtype, storage, shape: [k, n], strides, offset })
}

fn scale_tensor(spec: &ScaleSpec) -> Result<ScaleTensor, String> {
    spec.model_tensor()
}

fn scale_from_bits(bits: Option<u32>, what: &str) -> Result<ScaleTensor, String> {
    let b = bits.ok_or_else(|| format!("{what}: neither the column nor the call gives it"))?;
    Ok(ScaleTensor::scalar(f32::from_bits(b)))
}

/// One element of `dtype` holding `v`, as little-endian bytes.
fn element_bytes(dtype: &Dtype, v: f64) -> Vec<u8> {
    let x = v as f32;
    match dtype {
        Dtype::Float32 => x.to_bits().to_le_bytes().to_vec(),
        Dtype::BFloat16 => f32_to_bf16(x).to_le_bytes().to_vec(),
        Dtype::Float16 => f32_to_f16(x).to_le_bytes().to_vec(),
        Dtype::Float8E4m3fn => vec![Format::E4m3.from_f32_saturating(x)],
        Dtype::Float8E5m2 => vec![Format::E5m2.from_f32_saturating(x)],
        Dtype::Float64 => v.to_bits().to_le_bytes().to_vec(),
        other => vec![0x7F; other.size()],
    }
}

/// The recording's bias: element j is `BiasSpec::element(j)` in its dtype (docs/recording-format.md), held as the
/// exact value of that element.
fn bias_spec(dtype: &str, len: i64) -> Result<BiasSpec, String> {
    let dtype = Dtype::from_name(dtype);
    let numel = len.max(0) as usize;
    limits::check_in_force("the bias", Some((numel as u64).saturating_mul(4)))?;
    let value = |v: f64| -> f32 {
        let x = v as f32;
        match dtype {
            Dtype::BFloat16 => OutDtype::BFloat16.to_f64(f32_to_bf16(x) as u32) as f32,
            Dtype::Float16 => OutDtype::Float16.to_f64(f32_to_f16(x) as u32) as f32,
            _ => x,
        }
    };
    let values = (0..numel).map(|j| value(mmaemu_datasets::BiasSpec::element(j))).collect();
    Ok(BiasSpec { dtype, numel, values })
}

/// The recorded split as an explicit request.
pub(crate) fn split_request(row: &Row, resolved: &Resolved) -> Result<SplitRequest, String> {
    let s = row.split_s.unwrap_or(1) as i64;
    match resolved.scheme.as_str() {
        "unknown" => Err(format!("split S = {s} with scheme 'unknown': no reduction rule is established")),
        "none" => Ok(SplitRequest::Count(s)),
        scheme => Ok(SplitRequest::Pair(s, scheme.to_string())),
    }
}

/// Everything a `scaled_mm` row's call needs, owned; [`CallParts::call`] borrows views from it.
pub struct CallParts {
    a: Operand,
    b: Operand,
    scale_a: ScaleTensor,
    scale_b: ScaleTensor,
    scale_result: Option<ScaleTensor>,
    bias: Option<BiasSpec>,
    out: Option<Tensor>,
    out_dtype: Option<Dtype>,
    fast: bool,
    profile: ProfileArg,
    /// The row is evidence of its call (scope null or `in`), so an experimental mode is opted in to; a row
    /// recorded as out of scope (`out:row-wise`) replays without the opt-in and expects UnsupportedFeatureError.
    experimental: bool,
    /// The catalogue the row's profile name is looked up in (the process's: built-ins and loaded bundles).
    catalogue: std::sync::Arc<mmaemu_model::Catalogue>,
}

impl CallParts {
    /// Rebuild a row's call. `Err(reason)` means the row cannot be replayed.
    pub fn of_row(row: &Row) -> Result<CallParts, String> {
        CallParts::of_row_under(row, &Under::own())
    }

    /// [`CallParts::of_row`] with the call under `under`'s profile for the row (see [`Under::profile`]).
    pub fn of_row_under(row: &Row, under: &Under) -> Result<CallParts, String> {
        CallParts::of_row_resolved(row, &under.resolve(row))
    }

    /// [`CallParts::of_row`] with the row's profile resolved ([`Under::resolve`]).
    pub fn of_row_resolved(row: &Row, resolved: &Resolved) -> Result<CallParts, String> {
        let default_call = Call::default();
        let call = row.call.as_ref().unwrap_or(&default_call);
        let (m, n, k) = (usize_of(row.m, "m")?, usize_of(row.n, "n")?, usize_of(row.k, "k")?);
        limits::check_in_force("the result", limits::product(&[m as u64, n as u64, 4]))?;
        let scale = |spec: &Option<ScaleSpec>, bits: Option<u32>, what: &str| match spec {
            Some(s) => scale_tensor(s),
            None => scale_from_bits(bits, what),
        };
        let scale_result = match (&call.scale_result, row.scale_result) {
            (Some(s), _) => Some(scale_tensor(s)?),
            (None, Some(bits)) => Some(ScaleTensor::scalar(f32::from_bits(bits))),
            (None, None) => None,
        };
        let out = match &call.out {
            None => None,
            Some(o) => {
                let dtype = Dtype::from_name(&o.dtype);
                let shape: Vec<usize> = o.shape.iter().map(|&x| usize_of(x, "out shape")).collect::<Result<_, _>>()?;
                let dims: Vec<u64> = shape.iter().map(|&x| x as u64).collect();
                let bytes = limits::product(&dims).and_then(|c| c.checked_mul(dtype.size() as u64));
                limits::check_in_force("the out= tensor", bytes)?;
                let element = match &o.fill {
                    Some(f) => element_bytes(&dtype, f.value()),
                    None => vec![0x7F; dtype.size()],
                };
                Some(if shape.len() == 2 {
                    Tensor::filled(dtype, [shape[0], shape[1]], !o.contiguous, &element)
                } else {
                    let mut t = Tensor::zeros(dtype, &shape);
                    t.storage = element.repeat(shape.iter().product());
                    t
                })
            }
        };
        Ok(CallParts {
            a: mat1(row, &call.mat1, m, k)?,
            b: mat2(row, &call.mat2, n, k)?,
            scale_a: scale(&call.scale_a, row.scale_a, "scale_a")?,
            scale_b: scale(&call.scale_b, row.scale_b, "scale_b")?,
            scale_result,
            bias: match &call.bias {
                None => None,
                Some(bias) => Some(bias_spec(&bias.dtype, bias.len)?),
            },
            out,
            out_dtype: row.out_dtype.as_deref().map(Dtype::from_name),
            fast: row.fast_accum.unwrap_or(false),
            experimental: row.scope.as_deref().is_none_or(|s| s == "in"),
            catalogue: mmaemu_api::catalogue(),
            profile: match (resolved.profile.clone()?, &row.profile) {
                (Some(p), _) => ProfileArg::Value(Box::new(p)),
                (None, Some(p)) => ProfileArg::Name(p.clone()),
                (None, None) => return Err("op scaled_mm without a profile".into()),
            },
        })
    }

    /// The call with a split request, on the reference backend, not strict.
    pub fn call(&self, splitk: SplitRequest) -> ScaledMm<'_> {
        ScaledMm {
            input: self.a.view(),
            mat2: self.b.view(),
            scale_a: self.scale_a.clone(),
            scale_b: self.scale_b.clone(),
            bias: self.bias.clone(),
            scale_result: self.scale_result.clone(),
            out_dtype: self.out_dtype.clone(),
            use_fast_accum: self.fast,
            out: self.out.clone(),
            profile: self.profile.clone(),
            catalogue: &self.catalogue,
            splitk,
            backend: "reference".into(),
            strict: false,
            experimental: self.experimental,
        }
    }
}

/// Replay a `scaled_mm` row with its recorded split. `Err(reason)` is a skip.
pub fn compute_scaled_mm(row: &Row) -> Result<Computed, String> {
    compute_scaled_mm_on(row, &mmaemu_model::ReferenceEngine)
}

/// [`compute_scaled_mm`] with a chain engine computing the chains.
pub fn compute_scaled_mm_on(row: &Row, engine: &dyn mmaemu_model::ChainEngine) -> Result<Computed, String> {
    compute_scaled_mm_under(row, engine, &Under::own())
}

/// [`compute_scaled_mm_on`] with the call under `under`'s profile for the row.
pub fn compute_scaled_mm_under(
    row: &Row,
    engine: &dyn mmaemu_model::ChainEngine,
    under: &Under,
) -> Result<Computed, String> {
    compute_scaled_mm_resolved(row, engine, &under.resolve(row))
}

/// [`compute_scaled_mm_on`] with the row's profile and scheme resolved ([`Under::resolve`]).
pub fn compute_scaled_mm_resolved(
    row: &Row,
    engine: &dyn mmaemu_model::ChainEngine,
    resolved: &Resolved,
) -> Result<Computed, String> {
    if let Some(block) = crate::block_call::mode_of(row) {
        return crate::block_call::compute(row, block, engine, resolved);
    }
    let parts = CallParts::of_row_resolved(row, resolved)?;
    let result = parts.call(split_request(row, resolved)?).run_with(engine);
    Ok(match result {
        Err(e) => Err(e),
        Ok(res) => {
            let out = &res.out;
            let dtype = out.dtype.out_dtype().unwrap_or(OutDtype::Float32);
            let bytes = if out.shape.len() == 2 { out.logical_bytes() } else { out.storage.clone() };
            Ok((mmaemu_model::epilogue::from_le_bytes(&bytes, dtype), dtype))
        }
    })
}

/// How `splitk = auto` compares with the split a `scaled_mm` row recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoSplit {
    /// auto resolves to the recorded S and scheme.
    Agrees,
    /// auto resolves to another split.
    Differs,
    /// auto cannot resolve the shape (SplitKUnknownError).
    Unresolved,
    /// No split is decided for this row (it is rejected, zero-size, or not a scaled_mm row).
    NotApplicable,
}

/// Resolve a `scaled_mm` row's split with `splitk = auto` (information, not pass/fail).
pub fn auto_split(row: &Row) -> AutoSplit {
    auto_split_under(row, &Under::own())
}

/// [`auto_split`] with the call under `under`'s profile for the row.
pub fn auto_split_under(row: &Row, under: &Under) -> AutoSplit {
    // A row that expects an error records no split.
    if row.op != mmaemu_datasets::Op::ScaledMm || matches!(row.expected, Expectation::Error(_)) {
        return AutoSplit::NotApplicable;
    }
    let resolved = under.resolve(row);
    let Ok(parts) = CallParts::of_row_resolved(row, &resolved) else { return AutoSplit::NotApplicable };
    let plan = parts.call(SplitRequest::Auto).explain();
    match (&plan.validation, &plan.split) {
        (Validation::Ok, Some(d)) => {
            let recorded = (row.split_s.unwrap_or(1) as usize, resolved.scheme.as_str());
            if (d.s, &*d.scheme.name()) == recorded {
                AutoSplit::Agrees
            } else {
                AutoSplit::Differs
            }
        }
        (Validation::Error { name, .. }, _) if name == Category::SplitKUnknown.name() => AutoSplit::Unresolved,
        _ => AutoSplit::NotApplicable,
    }
}
