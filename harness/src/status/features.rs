//! The features a recorded row exercises (harness/src/status/mod.rs turns them into the status): op, accumulation,
//! split, out dtype, formats, epilogue paths (row-wise and block-scaled kernels among them), rejections, shapes.

use super::{block_feature, Feature, Group, ROWWISE, ROWWISE_BIAS};
use mmaemu_datasets::{Expectation, Op, Row};
use mmaemu_model::OutDtype;

/// The largest finite magnitude code of an FP8 out dtype (its saturation value).
fn max_code(od: OutDtype) -> Option<u8> {
    match od {
        OutDtype::E4m3 => Some(0x7E),
        OutDtype::E5m2 => Some(0x7B),
        _ => None,
    }
}

/// The features a row exercises (see the comment at the top of this file). Accumulation, split, out dtype, formats
/// and epilogue paths count only for rows that expect a result; a row that expects an error exercises its
/// rejection rule.
pub fn features(row: &Row) -> Vec<Feature> {
    let mut f = vec![Feature::new(Group::Op, row.op.as_str())];
    let zero = row.m == 0 || row.n == 0 || row.k == 0;
    if zero {
        f.push(Feature::new(Group::Shape, "zero-size"));
    }
    if let Some(call) = &row.call {
        if let Some(out) = &call.out {
            f.push(Feature::new(Group::OutArg, if out.contiguous { "row-major" } else { "column-major" }));
            if out.shape != [row.m, row.n] {
                f.push(Feature::new(Group::OutArg, "resized"));
            }
        }
        let odd = |m: &mmaemu_datasets::MatSpec| m.layout != "std" || m.ld_pad != 0 || m.offset != 0;
        if odd(&call.mat1) || odd(&call.mat2) {
            f.push(Feature::new(Group::Layout, "transposed, padded or offset operands"));
        }
    }
    if let Some(scope) = row.scope.as_deref().and_then(|s| s.strip_prefix("out:")) {
        f.push(Feature::new(Group::Scope, format!("out:{scope}")));
    }
    if let Expectation::Error(e) = &row.expected {
        f.push(Feature::new(Group::Rejection, e.clone()));
        return f;
    }
    if row.op != Op::Mma {
        if let Some(fast) = row.fast_accum {
            f.push(Feature::new(Group::Accumulation, if fast { "fast" } else { "slow" }));
        }
        let scheme = row.split_scheme.as_deref().unwrap_or("none");
        let s = row.split_s.unwrap_or(1);
        f.push(Feature::new(Group::Split, scheme));
        if s > 1 || scheme != "none" {
            f.push(Feature::new(Group::SplitS, format!("{scheme} S={s}")));
        }
        if row.k % 16 != 0 {
            f.push(Feature::new(Group::Shape, "ragged K (K % 16 != 0)"));
        }
    }
    f.push(Feature::new(Group::Formats, format!("{} x {}", row.fmt_a, row.fmt_b)));
    if matches!(row.op, Op::Gemm | Op::ScaledMm) {
        let out = row.effective_out_dtype();
        f.push(Feature::new(Group::Out, mmaemu_datasets::torch_dtype_name(out)));
        let od = OutDtype::from_name(out);
        let scale_result = row.scale_result.is_some() || row.call.as_ref().is_some_and(|c| c.scale_result.is_some());
        if let Some((mode, ..)) = crate::block_call::mode_of(row) {
            // Block-scaled calls run cuBLASLt's block-scaled kernels (docs/reference.md §12).
            f.push(Feature::new(Group::Epilogue, block_feature(mode)));
        } else if let Some(call) = &row.call {
            // Row-wise scales (and their bias) run CUTLASS f8f8bf16_rowwise (docs/reference.md §4.2).
            // Row-wise as torch reads it: both scales 2-D, not both of one element.
            let two_d = |s: &Option<mmaemu_datasets::ScaleSpec>| s.as_ref().is_some_and(|s| s.shape.len() == 2);
            let single = |s: &Option<mmaemu_datasets::ScaleSpec>| s.as_ref().is_some_and(|s| s.shape == [1, 1]);
            if two_d(&call.scale_a) && two_d(&call.scale_b) && !(single(&call.scale_a) && single(&call.scale_b)) {
                f.push(Feature::new(Group::Epilogue, ROWWISE));
                if call.bias.is_some() {
                    f.push(Feature::new(Group::Epilogue, ROWWISE_BIAS));
                }
            }
        }
        match od {
            Some(OutDtype::BFloat16) => f.push(Feature::new(Group::Epilogue, "double rounding to bfloat16")),
            Some(OutDtype::Float16) => f.push(Feature::new(Group::Epilogue, "double rounding to float16")),
            _ => {}
        }
        if let Some(max) = od.and_then(max_code) {
            if scale_result {
                f.push(Feature::new(Group::Epilogue, "scale_result"));
            }
            if let Expectation::Bits(bits) = &row.expected {
                if bits.iter().any(|&b| b & 0x7F == max) {
                    f.push(Feature::new(Group::Epilogue, "FP8 saturation (an output at +-max)"));
                }
            }
        } else if scale_result {
            f.push(Feature::new(Group::Epilogue, "scale_result with a non-FP8 out (unused)"));
        }
    }
    if row.op == Op::Mma && row.k % 16 != 0 {
        f.push(Feature::new(Group::Shape, "ragged K (K % 16 != 0)"));
    }
    f
}
