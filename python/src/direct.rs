//! The common `scaled_mm` call computed on the operands where they lie (docs/reference.md §0 steps 6-8): the checks
//! and decisions are `explain`'s, the accumulator is the backend's `execute`, the epilogue is split over the threads.

// Only a call that explain passes, with a split decision, no out= or an out= of the result's shape, and a thread that
// keeps subnormals, is computed here; every other call (errors, zero sizes, an out= returned unchanged or resized, a
// flushing CPU) goes through `ScaledMm::run_on`, which raises or returns exactly what the model does. Any unexpected
// step here also hands the call over to it instead of answering.

use crate::desc::Desc;
use mmaemu_api::model::scaled_mm::{resolve_profile, Backends, CallPlan, ScaledMm, Validation};
use mmaemu_api::model::tensor::View;
use mmaemu_api::model::warning::Warning;
use mmaemu_api::model::{execute, Epilogue, Operands, Plan};
use rayon::prelude::*;
use std::borrow::Cow;

/// Outputs per epilogue task: large enough that a task costs more than handing it to a thread.
const CHUNK: usize = 1 << 16;

/// A 2-D FP8 view as packed row-major codes: borrowed where it lies when it is packed (the standard layout),
/// gathered otherwise (a padded leading dimension, or an input torch would copy).
pub fn rows<'a>(v: &View<'a>) -> Option<Cow<'a, [u8]>> {
    let (r, c) = (v.shape[0], v.shape[1]);
    if v.is_contiguous() {
        return v.storage.get(v.offset..v.offset + r * c).map(Cow::Borrowed);
    }
    v.gather_bytes("operand").ok().map(Cow::Owned)
}

/// Compute the call into `target` (the fresh result, or out= of shape [M, N]) and return its warnings, or None
/// when the call is not the common case (the caller then runs the model's `run_on`).
///
/// # Safety
/// `target` must describe writable memory that nobody else uses meanwhile, as in [`Desc::write_logical`].
pub unsafe fn scaled_mm(
    call: &ScaledMm<'_>,
    plan: &CallPlan,
    backends: &dyn Backends,
    target: &Desc,
) -> Option<Vec<Warning>> {
    // Row-wise scales run another kernel's plan and epilogue (docs/reference.md §4.2): the model's run_on.
    if plan.validation != Validation::Ok || mmaemu_api::model::fpenv::refuses() || plan.kernel.is_some() {
        return None;
    }
    let split = plan.split.as_ref()?;
    let (m, k, n) = (call.input.shape[0], call.input.shape[1], call.mat2.shape[1]);
    if target.shape != [m, n] {
        return None;
    }
    let profile = resolve_profile(&call.profile, call.catalogue).ok()?;
    let preset = &profile.preset;
    let (fa, fb) = (call.input.dtype.format()?, call.mat2.dtype.format()?);
    let od = call
        .out_dtype
        .clone()
        .or_else(|| call.out.as_ref().map(|o| o.dtype.clone()))
        .unwrap_or_else(|| call.input.dtype.clone())
        .out_dtype()?;
    if target.itemsize != od.width() {
        return None;
    }
    let selected = backends.select(&call.backend, preset, fa, fb).ok()?;
    let chains = Plan::new(preset, k, call.use_fast_accum, split.try_splitk().ok()?).ok()?;
    let (a, b) = (rows(&call.input)?, rows(&call.mat2.t())?);
    let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
    let acc = execute(preset, &chains, &ops, selected.engine).ok()?;
    let value = |s: &mmaemu_api::model::scaled_mm::ScaleTensor| s.values.first().map(|&v| v as f32);
    let epilogue = Epilogue {
        scale_a: value(&call.scale_a)?,
        scale_b: value(&call.scale_b)?,
        scale_result: match &call.scale_result {
            Some(s) => Some(value(s)?),
            None => None,
        },
        out: od,
    };
    let w = od.width();
    let to_bytes = |bits: &[u32], dst: &mut [u8]| {
        for (d, &x) in dst.chunks_exact_mut(w).zip(bits) {
            d.copy_from_slice(&x.to_le_bytes()[..w]);
        }
    };
    let contiguous = mmaemu_api::model::tensor::is_contiguous(&target.shape, &target.strides);
    if contiguous && target.base != 0 {
        // SAFETY: the caller's contract; a contiguous [M, N] covers elements offset .. offset + M * N.
        let dst = unsafe { std::slice::from_raw_parts_mut((target.base as *mut u8).add(target.offset * w), m * n * w) };
        if m * n >= 2 * CHUNK {
            dst.par_chunks_mut(CHUNK * w).zip(acc.par_chunks(CHUNK)).for_each(|(d, c)| to_bytes(&epilogue.apply(c), d));
        } else {
            to_bytes(&epilogue.apply(&acc), dst);
        }
    } else {
        // out= at other strides (column-major, a padded leading dimension): the elements where they lie.
        let bits: Vec<u32> = acc.par_chunks(CHUNK).flat_map_iter(|c| epilogue.apply(c)).collect();
        let mut bytes = vec![0u8; m * n * w];
        to_bytes(&bits, &mut bytes);
        // SAFETY: the caller's contract.
        unsafe { target.write_logical(Some(&bytes)) }.ok()?;
    }
    Some(plan.warnings.clone())
}
