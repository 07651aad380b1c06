//! Row-wise `scaled_mm` (docs/reference.md §4.2, §5.2): torch 2.7.1's `check_inputs` of f8f8bf16_rowwise, the
//! kernel's plan (no split on sm_90, an explicit split on sm_89) and its epilogue, every call warned experimental.

use super::*;
use crate::cutlass_rowwise::{RowwiseKernel, SOURCE};
use crate::splitk::resolve::explicit_split;
use crate::splitk::SplitSource;

/// The message of a bare `TORCH_CHECK(cond)` in torch 2.7.1.
fn expected(cond: &str) -> Error {
    r(format!("Expected {cond} to be true, but got false."))
}

impl ScaledMm<'_> {
    /// §5.2 step 5 for row-wise scales: the out dtype, then `check_inputs` of RowwiseScaledMM.cu in its order
    /// (after torch's own checks, which already hold), then what CUTLASS's `can_implement` needs (16-byte
    /// aligned leading dimensions and operand pointers). Returns the formats.
    pub(super) fn rowwise_checks(&self, od: &Dtype) -> Result<(Format, Format, OutDtype)> {
        let (a, b) = (&self.input, &self.mat2);
        let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
        if *od != Dtype::BFloat16 {
            return Err(r(format!(
                "Only bf16 high precision output types are supported for row-wise scaling (got {od})."
            )));
        }
        if a.dtype != Dtype::Float8E4m3fn && a.dtype != Dtype::Float8E5m2 {
            return Err(expected("a.dtype() == at::kFloat8_e4m3fn || a.dtype() == at::kFloat8_e5m2"));
        }
        if b.dtype != Dtype::Float8E4m3fn {
            return Err(expected("b.dtype() == at::kFloat8_e4m3fn"));
        }
        if a.strides[1] != 1 {
            return Err(expected("a.stride(1) == 1"));
        }
        if a.strides[0] < k {
            return Err(expected("a.stride(0) >= a.size(1)"));
        }
        if b.strides[0] != 1 {
            return Err(expected("b.stride(0) == 1"));
        }
        if b.strides[1] < k {
            return Err(expected("b.stride(1) >= b.size(0)"));
        }
        if let Some(out) = &self.out {
            // torch resizes an out= of another shape to a contiguous [M, N] first.
            if out.shape == [m, n] && (out.strides[1] != 1 || out.strides[0] < n) {
                return Err(expected(if out.strides[1] != 1 {
                    "out.stride(1) == 1"
                } else {
                    "out.stride(0) >= out.size(1)"
                }));
            }
        }
        let (lda, ldb) = (a.strides[0], b.strides[1]);
        if lda % 16 != 0 || ldb % 16 != 0 || a.offset % 16 != 0 || b.offset % 16 != 0 {
            return Err(r(format!(
                "cutlass cannot implement (TMA needs 16-byte aligned operands: lda {lda}, ldb {ldb}, offsets {} and {})",
                a.offset, b.offset
            )));
        }
        let fa = a.dtype.format().unwrap_or(Format::E4m3);
        Ok((fa, Format::E4m3, OutDtype::BFloat16))
    }

    /// Steps 8–13 of §5.2 for a row-wise call: the experimental warning, the kernel, its split and plan, and the
    /// row-wise epilogue. On error, the profile and the error.
    pub(super) fn prepare_rowwise<'b>(
        &self,
        dry: bool,
        profile: Profile,
        fa: Format,
        fb: Format,
        od: OutDtype,
        backends: &'b dyn Backends,
    ) -> std::result::Result<Prepared<'b>, Failed> {
        let (m, k, n) = (self.input.shape[0], self.input.shape[1], self.mat2.shape[1]);
        let fast = self.use_fast_accum;
        let fail = |profile: Profile, error: Error| Failed { profile: Some(Box::new(profile)), error };
        macro_rules! tri {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => return Err(fail(profile, e)),
                }
            };
        }
        if profile.caller != crate::profile::Caller::TorchScaledMm {
            let msg = format!(
                "row-wise scales are modelled for torch 2.7.1's torch._scaled_mm only (profile '{}' calls {})",
                profile.name,
                profile.caller.name()
            );
            return Err(fail(profile, Error::unsupported(msg)));
        }
        let kernel = tri!(RowwiseKernel::for_profile(&profile, m, n, fast));
        let mut warnings: Vec<Warning> = maturity_warning(&profile).into_iter().collect();
        warnings.push(Warning::new(
            WarningKind::ExperimentalPreset,
            format!(
                "row-wise scales are experimental: modelled from the source of the kernel torch 2.7.1 runs ({}), not \
                 yet validated by a recording",
                kernel.describe()
            ),
        ));
        // The split: the kernel's own (sm_90), or the caller's (sm_89's stream-K order is not public).
        let given = tri!(explicit_split(&profile, &self.splitk));
        let split = tri!(kernel.split(given, &profile));
        let split = SplitDecision {
            s: split.s(),
            scheme: split.scheme(),
            source: if given.is_some() { SplitSource::Explicit } else { SplitSource::Kernel },
            verified: false,
            table_id: None,
            note: if given.is_some() {
                "given by the caller".into()
            } else {
                "CUTLASS f8f8bf16_rowwise on sm_90 has no split-K or stream-K".into()
            },
        };
        let selected = tri!(backends.select(&self.backend, &profile.preset, fa, fb));
        warnings.extend(selected.warnings.iter().cloned());
        if !dry {
            tri!(crate::fpenv::check());
        }
        // The plan: sm_90 slow promotes every 128 of K into fp32 (the preset's slow chunks, which must be
        // CUTLASS's 128); otherwise one chain per split over its K.
        let promotes = kernel.promotes();
        if promotes && profile.preset.slow_chunk() != Some(128) {
            let msg = format!(
                "preset '{}' has slow chunk {:?}: CUTLASS's sm_90 FP8 mainloop promotes every 128 of K",
                profile.preset.name(),
                profile.preset.slow_chunk()
            );
            return Err(fail(profile, Error::unsupported(msg)));
        }
        let plan = tri!(Plan::new(&profile.preset, k, !promotes, split.splitk()));
        let values = |s: &ScaleTensor| s.values.iter().map(|&v| v as f32).collect::<Vec<f32>>();
        let bias = match &self.bias {
            None => None,
            Some(b) if b.values.len() == b.numel => Some(b.values.clone()),
            Some(_) if dry => None,
            Some(b) => {
                let e = Error::invalid_value(format!("bias: {} values for {} elements", b.values.len(), b.numel));
                return Err(fail(profile, e));
            }
        };
        if !dry && (self.scale_a.values.len() != m || self.scale_b.values.len() != n) {
            return Err(fail(profile, Error::invalid_value("row-wise scales need their values (M and N of them)")));
        }
        let epilogue = CallEpilogue::RowWise(RowwiseEpilogue {
            scale_a: values(&self.scale_a),
            scale_b: values(&self.scale_b),
            bias,
            order: kernel.order(),
        });
        let stage = Stage::Run(Box::new(RunPlan { fa, fb, od, split, plan, epilogue }));
        let kernel = Some(format!("{} [modelled from {SOURCE}]", kernel.describe()));
        Ok(Prepared { profile, warnings, stage, selected: Some(selected), kernel })
    }
}
