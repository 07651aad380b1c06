//! Who calls cuBLASLt, and which version of that caller: the choices of a recording that change the call
//! (the D scale, the C type, the amax, the scale modes, the workspace, the alignment preferences). The
//! descriptor ([`crate::descriptor`]) turns a caller into attributes; this file owns the names and rules.
//!
//! | caller | D scale (`D_SCALE_POINTER`) | amax, scale modes, epilogue | workspace |
//! |---|---|---|---|
//! | `torch-2.7` (torch 2.7.1 to 2.9.x) | whenever `scale_result` is passed | none | 1 MiB |
//! | `torch-2.10` (torch ≥ 2.10, as fixed upstream) | only for FP8 outputs | none | 1 MiB |
//! | `torch-2.10-nodscale` (torch 2.10 releases without that fix) | never | none | 1 MiB |
//! | `transformer-engine` (TE 2.3, CUDA ≥ 12.8 build) | always for FP8 outputs (the output tensor's scale) | amax for FP8 outputs; A/B (and D) scale modes; epilogue DEFAULT | 32 MiB on sm_90+, 4 MiB before |
//!
//! The torch ≥ 2.10 rows: torch 2.10 moved `_scaled_mm` into `ScaledBlas.cpp` and stopped forwarding
//! `scale_result` (pytorch/pytorch#190449); the fix (pytorch/pytorch#190452, #190979) forwards it only
//! for FP8 outputs, because cuBLAS 13 rejects a D scale on a 16/32-bit output with
//! `CUBLAS_STATUS_INVALID_VALUE` where cuBLAS 12 ignored it. So the call of torch 2.7.1 made on cuBLAS 13
//! records rejections a torch 2.10 user never sees; a recording says which call it made
//! (`mmaemu:platform` `caller_version`, next to `cublaslt`).

use mmaemu_model::OutDtype;

/// 1 MiB: torch's cuBLASLt workspace (`_getWorkspaceSize`, `CUBLASLT_WORKSPACE_SIZE` default 1024 KiB).
pub const TORCH_WORKSPACE: u64 = 1 << 20;
/// 4 MiB: Transformer Engine's workspace before sm_90.
pub const TE_WORKSPACE_PRE_HOPPER: u64 = 4 << 20;
/// 32 MiB: Transformer Engine's workspace on sm_90 and later.
pub const TE_WORKSPACE_HOPPER: u64 = 32 << 20;
/// The largest workspace the recorder allocates.
pub const MAX_WORKSPACE: u64 = 32 << 20;

/// Who calls cuBLASLt, in which version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    /// torch 2.7.1 `torch._scaled_mm` (the call of 2.8 and 2.9 too): `at::cuda::blas::scaled_gemm` of
    /// `aten/src/ATen/cuda/CUDABlas.cpp`; the D scale whenever `scale_result` is passed.
    Torch27,
    /// torch ≥ 2.10 with `scale_result` forwarded for FP8 outputs only.
    Torch210,
    /// torch 2.10 without the fix: `scale_result` is checked and dropped, no D scale ever.
    Torch210NoDScale,
    /// Transformer Engine 2.3 `cublas_gemm` (`transformer_engine/common/gemm/cublaslt_gemm.cu`), built with
    /// CUDA ≥ 12.8.
    TransformerEngine,
}

impl Caller {
    /// Every caller, in the order of the documentation.
    pub const ALL: [Caller; 4] =
        [Caller::Torch27, Caller::Torch210, Caller::Torch210NoDScale, Caller::TransformerEngine];

    /// `torch-2.7`, `torch-2.10`, `torch-2.10-nodscale`, `transformer-engine` (specs and the command line).
    pub fn name(self) -> &'static str {
        match self {
            Caller::Torch27 => "torch-2.7",
            Caller::Torch210 => "torch-2.10",
            Caller::Torch210NoDScale => "torch-2.10-nodscale",
            Caller::TransformerEngine => "transformer-engine",
        }
    }

    /// Parses a caller name; `torch` and `torch._scaled_mm` are torch 2.7 (the reference platforms' torch),
    /// `te` and `transformer_engine` are Transformer Engine.
    pub fn parse(s: &str) -> Option<Caller> {
        match s {
            "torch" | "torch._scaled_mm" | "torch-2.7" => Some(Caller::Torch27),
            "torch-2.10" => Some(Caller::Torch210),
            "torch-2.10-nodscale" => Some(Caller::Torch210NoDScale),
            "transformer-engine" | "transformer_engine" | "te" => Some(Caller::TransformerEngine),
            _ => None,
        }
    }

    /// The accepted spellings, for error messages.
    pub const SPELLINGS: &'static str =
        "torch (= torch-2.7), torch-2.7, torch-2.10, torch-2.10-nodscale or transformer-engine";

    /// The caller name of `mmaemu:platform` `caller` (`torch._scaled_mm`, `transformer_engine`).
    pub fn platform_name(self) -> &'static str {
        match self {
            Caller::TransformerEngine => "transformer_engine",
            _ => "torch._scaled_mm",
        }
    }

    /// The caller version of `mmaemu:platform` `caller_version`.
    pub fn version(self) -> &'static str {
        match self {
            Caller::Torch27 => "torch 2.7.1 (scale_result forwarded whenever passed)",
            Caller::Torch210 => "torch >= 2.10 (scale_result forwarded for FP8 outputs only)",
            Caller::Torch210NoDScale => "torch 2.10 without the scale_result fix (scale_result never forwarded)",
            Caller::TransformerEngine => "Transformer Engine 2.3, CUDA >= 12.8 build",
        }
    }

    /// Is this a torch caller?
    pub fn is_torch(self) -> bool {
        !matches!(self, Caller::TransformerEngine)
    }

    /// The caller's default workspace on a GPU of compute capability `cap`: torch 1 MiB; TE 2.3
    /// `get_cublas_workspace_size_bytes` 32 MiB from sm_90 on, 4 MiB before.
    pub fn default_workspace(self, cap: (u32, u32)) -> u64 {
        match self {
            Caller::TransformerEngine if cap.0 >= 9 => TE_WORKSPACE_HOPPER,
            Caller::TransformerEngine => TE_WORKSPACE_PRE_HOPPER,
            _ => TORCH_WORKSPACE,
        }
    }

    /// Whether the call sets `D_SCALE_POINTER`, given the out dtype and whether `scale_result` is passed
    /// (for TE: the output tensor's scale, always there).
    pub fn sets_d_scale(self, out: OutDtype, scale_result_passed: bool) -> bool {
        let fp8 = out.fp8().is_some();
        match self {
            Caller::Torch27 => scale_result_passed,
            Caller::Torch210 => scale_result_passed && fp8,
            Caller::Torch210NoDScale => false,
            Caller::TransformerEngine => fp8,
        }
    }

    /// Why this caller does not make a case's call the model replays as recorded, if it does not: TE passes
    /// no D scale for a 16/32-bit output, so a case asking for one is not a TE call; torch 2.10 without the
    /// fix drops `scale_result` for FP8 outputs too, so the bits are those of the call without it (the
    /// model applies it, §4 of the reference).
    pub fn skip(self, out: OutDtype, scale_result: Option<f32>) -> Option<String> {
        let fp8 = out.fp8().is_some();
        match (self, scale_result.is_some(), fp8) {
            (Caller::TransformerEngine, true, false) => Some(format!(
                "transformer-engine sets no D scale for a {} output (only FP8 outputs have one)",
                out.name()
            )),
            (Caller::Torch210NoDScale, true, true) => {
                Some("torch-2.10-nodscale drops scale_result for FP8 outputs: the call is the one without it".into())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for c in Caller::ALL {
            assert_eq!(Caller::parse(c.name()), Some(c));
        }
        assert_eq!(Caller::parse("torch"), Some(Caller::Torch27));
        assert_eq!(Caller::parse("te"), Some(Caller::TransformerEngine));
        assert_eq!(Caller::parse("cublas"), None);
        assert_eq!(Caller::TransformerEngine.platform_name(), "transformer_engine");
        assert_eq!(Caller::Torch210.platform_name(), "torch._scaled_mm");
    }

    #[test]
    fn d_scale_rules() {
        use OutDtype::*;
        for (caller, out, passed, want) in [
            (Caller::Torch27, BFloat16, true, true),
            (Caller::Torch27, E4m3, false, false),
            (Caller::Torch210, BFloat16, true, false),
            (Caller::Torch210, E4m3, true, true),
            (Caller::Torch210NoDScale, E4m3, true, false),
            (Caller::TransformerEngine, E5m2, false, true),
            (Caller::TransformerEngine, Float32, false, false),
        ] {
            assert_eq!(caller.sets_d_scale(out, passed), want, "{caller:?} {out:?} {passed}");
        }
        assert!(Caller::TransformerEngine.skip(Float32, Some(0.5)).is_some());
        assert!(Caller::TransformerEngine.skip(E4m3, Some(0.5)).is_none());
        assert!(Caller::Torch210NoDScale.skip(E4m3, Some(0.5)).is_some());
        assert!(Caller::Torch210.skip(BFloat16, Some(0.5)).is_none());
    }
}
