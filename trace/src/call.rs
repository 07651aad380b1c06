//! The trace of one element of a `scaled_mm` call (docs/reference.md §5): the call's checks and split decision as
//! `explain` makes them, then the element's plan and epilogue ([`super::trace_element`]).

use super::{trace_element, Trace, TraceOp};
use mmaemu_model::accumulate::Operands;
use mmaemu_model::cutlass_rowwise::{RowwiseEpilogue, RowwiseKernel};
use mmaemu_model::epilogue::{Epilogue, OutDtype};
use mmaemu_model::error::{Error, Result};
use mmaemu_model::plan::Plan;
use mmaemu_model::scaled_mm::{resolve_profile, ScaledMm, Scaling, Validation};

/// Trace element (i, j) of `call`. A call that would raise returns that error; a zero-size call traces +0.
pub fn trace_scaled_mm(call: &ScaledMm<'_>, i: usize, j: usize) -> Result<Trace> {
    let c = checked(call)?;
    let (m, k, n) = (call.input.shape[0], call.input.shape[1], call.mat2.shape[1]);
    if i >= m || j >= n {
        return Err(Error::invalid_value(format!("element ({i}, {j}) is outside the [{m}, {n}] result")));
    }
    let (preset, fa, fb) = (&c.profile.preset, c.fa, c.fb);
    let Some(split) = &c.split else {
        // Zero-size (K = 0 here, since the element exists) or out= returned unchanged: nothing is computed.
        if k != 0 {
            return Err(Error::invalid_value("out= is returned unchanged (§5.2 step 9): no element is computed"));
        }
        let ops = Operands { fa, fb, a: &[], b: &[], m, n, k: 0 };
        let p = Plan::new(preset, 0, call.use_fast_accum, mmaemu_model::plan::SplitK::NONE)?;
        let mut t = trace_element(preset, &p, &ops, i, j, None)?;
        t.op = TraceOp::ScaledMm;
        t.dtype = c.od.unwrap_or(OutDtype::Float32);
        return Ok(t);
    };
    // Only row i of A and row j of B are needed: gather them from the views.
    let ra = row(&call.input, i, "mat1")?;
    let rb = row(&call.mat2.t(), j, "mat2")?;
    let ops = Operands { fa, fb, a: &ra, b: &rb, m: 1, n: 1, k };
    if call.scaling() == Scaling::RowWise {
        return trace_rowwise(call, &c, split, &ops, (i, j));
    }
    let epi = epilogue(call, c.out()?);
    let p = Plan::new(preset, k, call.use_fast_accum, split.try_splitk()?)?;
    let mut t = trace_element(preset, &p, &ops, 0, 0, Some(&epi))?;
    t.op = TraceOp::ScaledMm;
    t.element = Some((i, j));
    t.split_source = Some(format!("{} ({}); profile {}", split.source.name(), split.note, c.profile.name));
    Ok(t)
}

/// Trace element (i, j) of a row-wise call (docs/reference.md §4.2): the accumulator of the CUTLASS kernel's plan
/// (sm_90 slow: 128-wide promotion chunks; otherwise one chain per split), then its epilogue step by step.
fn trace_rowwise(
    call: &ScaledMm<'_>,
    c: &Checked,
    split: &mmaemu_model::splitk::SplitDecision,
    ops: &Operands<'_>,
    (i, j): (usize, usize),
) -> Result<Trace> {
    let (m, n) = (call.input.shape[0], call.mat2.shape[1]);
    let preset = &c.profile.preset;
    let kernel = RowwiseKernel::for_profile(&c.profile, m, n, call.use_fast_accum)?;
    let p = Plan::new(preset, ops.k, !kernel.promotes(), split.try_splitk()?)?;
    let mut t = trace_element(preset, &p, ops, 0, 0, None)?;
    let value = |s: &mmaemu_model::scaled_mm::ScaleTensor, x: usize| s.values.get(x).map_or(0.0, |&v| v as f32);
    let epi = RowwiseEpilogue {
        scale_a: vec![value(&call.scale_a, i)],
        scale_b: vec![value(&call.scale_b, j)],
        bias: call.bias.as_ref().map(|b| vec![b.values.get(j).copied().unwrap_or(0.0)]),
        order: kernel.order(),
    };
    let st = epi.steps(t.accumulator, 0, 0);
    t.op = TraceOp::ScaledMm;
    t.element = Some((i, j));
    t.bits = st.bits as u32;
    t.dtype = OutDtype::BFloat16;
    t.split_source = Some(format!("{} ({}); profile {}", split.source.name(), split.note, c.profile.name));
    t.notes.push(format!("kernel: {}", kernel.describe()));
    t.notes.push(format!(
        "row-wise epilogue: RN32({:e} * acc) = {:e}; RN32({:e} * that) = {:e}; RN32(bias {:e} + that) = {:e}; \
         bf16 0x{:04X}",
        st.first.0, st.first.1, st.second.0, st.second.1, st.biased.0, st.biased.1, st.bits
    ));
    Ok(t)
}

/// Row `i` of a 2-D view as packed bytes (a [1, C] view at the row's offset).
fn row(v: &mmaemu_model::tensor::View<'_>, i: usize, name: &str) -> Result<Vec<u8>> {
    let mut r = v.clone();
    r.offset = v.offset + i * v.strides[0];
    r.shape[0] = 1;
    r.gather_bytes(name)
}

/// Attribute every output of `call` ([`super::summary::attribute_gemm`]) with the call's preset, split and epilogue.
pub fn attribute_scaled_mm(call: &ScaledMm<'_>) -> Result<super::summary::GemmAttribution> {
    attribute_scaled_mm_with(call, &|_| {})
}

/// [`attribute_scaled_mm`], calling `progress(outputs done)` as rows of outputs finish.
pub fn attribute_scaled_mm_with(
    call: &ScaledMm<'_>,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<super::summary::GemmAttribution> {
    let c = checked(call)?;
    let (m, k, n) = (call.input.shape[0], call.input.shape[1], call.mat2.shape[1]);
    let split = c.split.as_ref().ok_or_else(|| Error::invalid_value("a zero-size call has nothing to attribute"))?;
    if call.scaling() == Scaling::RowWise {
        return Err(Error::unsupported(
            "attribution of row-wise calls is not available: trace an element (its accumulator and the CUTLASS \
             epilogue step by step), or attribute the tensor-wise call with unit scales and float32 out",
        ));
    }
    let epi = epilogue(call, c.out()?);
    let a = call.input.gather_bytes("mat1")?;
    let b = call.mat2.t().gather_bytes("mat2")?;
    let ops = Operands { fa: c.fa, fb: c.fb, a: &a, b: &b, m, n, k };
    let p = Plan::new(&c.profile.preset, k, call.use_fast_accum, split.try_splitk()?)?;
    super::summary::attribute_gemm_with(&c.profile.preset, &p, &ops, Some(&epi), progress)
}

/// What tracing and attributing a call share: the call's checks as `explain` makes them (a call that would raise
/// returns that error, with its category), its split decision, profile, operand formats and out dtype (None: not a
/// GEMM output).
struct Checked {
    split: Option<mmaemu_model::splitk::SplitDecision>,
    profile: mmaemu_model::profile::Profile,
    fa: mmaemu_model::format::Format,
    fb: mmaemu_model::format::Format,
    od_dtype: mmaemu_model::dtype::Dtype,
    od: Option<OutDtype>,
}

fn checked(call: &ScaledMm<'_>) -> Result<Checked> {
    let plan = call.explain();
    if let Validation::Error { .. } = plan.validation {
        // The call's own error, with its category: running it stops at the same check.
        return match call.clone().run() {
            Err(e) => Err(e),
            Ok(_) => Err(Error::invalid_value("the call's checks disagree between explain and run")),
        };
    }
    let profile = resolve_profile(&call.profile, call.catalogue)?;
    let od_dtype = call
        .out_dtype
        .clone()
        .or_else(|| call.out.as_ref().map(|o| o.dtype.clone()))
        .unwrap_or_else(|| call.input.dtype.clone());
    let od = od_dtype.out_dtype();
    let fa = call.input.dtype.format().ok_or_else(|| Error::invalid_value("mat1 is not an FP8 operand"))?;
    let fb = call.mat2.dtype.format().ok_or_else(|| Error::invalid_value("mat2 is not an FP8 operand"))?;
    Ok(Checked { split: plan.split, profile, fa, fb, od_dtype, od })
}

impl Checked {
    /// The out dtype, which a computed element needs.
    fn out(&self) -> Result<OutDtype> {
        self.od.ok_or_else(|| Error::invalid_value(format!("out dtype {} is not a GEMM output", self.od_dtype)))
    }
}

/// The call's epilogue with out dtype `out` (the scales' first values: per-tensor scales).
fn epilogue(call: &ScaledMm<'_>, out: OutDtype) -> Epilogue {
    let scale = |v: &[f64]| v.first().copied().unwrap_or(0.0) as f32;
    Epilogue {
        scale_a: scale(&call.scale_a.values),
        scale_b: scale(&call.scale_b.values),
        scale_result: call.scale_result.as_ref().map(|s| scale(&s.values)),
        out,
    }
}
