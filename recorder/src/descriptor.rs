//! The cuBLASLt call of one `torch._scaled_mm`, as data: which descriptor attributes are set to what, the
//! four matrix layouts, the heuristic preferences and the operand order. Pure (no CUDA), so every detail is
//! unit-tested without a GPU; [`crate::gpu`] turns a [`Descriptor`] into cuBLASLt calls attribute by
//! attribute, and nothing else.
//!
//! # torch 2.7.1's call, attribute by attribute
//!
//! torch computes a row-major `out[m, n] = mat1[m, k] @ mat2[k, n]` where mat1 is row-major and mat2 is
//! column-major (the transpose of a row-major `[n, k]` weight). cuBLASLt is column-major, so torch
//! (`cublasCommonArgs` in `aten/src/ATen/native/cuda/Blas.cpp`, `transpose_result = true`) asks it for the
//! transposed product `out^T[n, m] = mat2^T[n, k] @ mat1^T[k, m]`: **cuBLASLt sees the (n, m, k) problem**,
//! its operand A is mat2 and its operand B is mat1. Then `at::cuda::blas::scaled_gemm`
//! (`aten/src/ATen/cuda/CUDABlas.cpp`) builds:
//!
//! | what | value | why |
//! |---|---|---|
//! | `cublasLtMatmulDescCreate` compute type | `CUBLAS_COMPUTE_32F` | FP8 GEMMs accumulate in fp32 |
//! | scale type | `CUDA_R_32F` | alpha / beta and the scale pointers are fp32 |
//! | `CUBLASLT_MATMUL_DESC_TRANSA` | `CUBLAS_OP_T` | A = mat2's `[n, k]` row-major storage, read as a column-major `k x n` and transposed; FP8 GEMMs need the "TN" layout (torch checks `transa == 't' && transb == 'n'`) |
//! | `CUBLASLT_MATMUL_DESC_TRANSB` | `CUBLAS_OP_N` | B = mat1's `[m, k]` row-major storage = a column-major `k x m` |
//! | `CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` | device fp32 scale of A = **scale_b** | torch 2.7.1 swaps the scales with the operands ("we run the gemm as B.T @ A.T ... flip the scales"); for tensor-wise scales cuBLASLt multiplies them, so the order cannot change a bit |
//! | `CUBLASLT_MATMUL_DESC_B_SCALE_POINTER` | device fp32 scale of B = **scale_a** | the same swap |
//! | `CUBLASLT_MATMUL_DESC_D_SCALE_POINTER` | device fp32 `scale_result` | set exactly when torch sets it: whenever `scale_result` is passed (`result_scale_ptr != nullptr`). cuBLASLt applies it to FP8 outputs (mmaemu's epilogue ignores it for 16/32-bit outputs, behaviour.md §4) |
//! | `CUBLASLT_MATMUL_DESC_FAST_ACCUM` | int8 `use_fast_accum` (0 or 1) | always set (torch sets it on every non-ROCm build) |
//! | A layout | (type of mat2, rows k, cols n, ld k) | `CuBlasLtMatrixLayout(type, m'=n, k, lda, transposed)` swaps rows and cols for a transposed operand |
//! | B layout | (type of mat1, rows k, cols m, ld k) | not transposed: rows k, cols m' = m |
//! | C layout | (bias type, rows n, cols m, ld n) | torch passes the bias dtype as C's type, and without a bias that is **the out dtype, or float16 for FP8 outputs**; C is never read (beta = 0, C pointer null) but its type selects kernels |
//! | D layout | (out dtype, rows n, cols m, ld n) | the column-major `n x m` D is the row-major `[m, n]` result |
//! | alpha, beta | 1.0, 0.0 (fp32, host) | the scales travel by pointer, not in alpha |
//! | `CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES` | the workspace (torch: 1 MiB) | `_getWorkspaceSize()`; the same size is passed to `cublasLtMatmul` |
//! | `CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES` | only in `transformer-engine` mode: 256 | Transformer Engine sets them from the pointers' alignment; torch 2.7.1's `scaled_gemm` sets none |
//! | `cublasLtMatmulAlgoGetHeuristic` | `requestedAlgoCount = 1` | torch takes the first algorithm; none returned is `CUBLAS_STATUS_NOT_SUPPORTED` |
//! | `cublasLtMatmul` | C pointer null, D = out, the heuristic's algorithm, the workspace | as torch |
//!
//! No bias (`EPILOGUE`, `BIAS_POINTER`, `BIAS_DATA_TYPE` stay unset): the recorder records bias-free calls
//! only, like the model's scope (bias is out of scope in mmaemu 0.1). No amax, no row-wise scale modes.
//!
//! # Transformer Engine mode
//!
//! `--caller transformer-engine` keeps torch's descriptor and changes what the TE profiles of behaviour.md
//! §6.1 change: the workspace (TE's `get_cublas_workspace_size_bytes`: 32 MiB on sm_90 and later, 4 MiB
//! before) and the MIN_ALIGNMENT preferences (256 bytes). It is the descriptor of the profiles' live query,
//! not a reproduction of every attribute of TE's own `cublas_gemm`.

use mmaemu_model::{Format, OutDtype};
use serde_json::json;

/// 1 MiB: torch 2.7.1's cuBLASLt workspace.
pub const TORCH_WORKSPACE: u64 = 1 << 20;
/// 4 MiB: Transformer Engine's workspace before sm_90.
pub const TE_WORKSPACE_PRE_HOPPER: u64 = 4 << 20;
/// 32 MiB: Transformer Engine's workspace on sm_90 and later.
pub const TE_WORKSPACE_HOPPER: u64 = 32 << 20;
/// The largest workspace the recorder allocates.
pub const MAX_WORKSPACE: u64 = 32 << 20;
/// Transformer Engine's MIN_ALIGNMENT preference.
pub const TE_ALIGNMENT: u64 = 256;

/// Who calls cuBLASLt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    /// torch 2.7.1 `torch._scaled_mm`.
    Torch,
    /// Transformer Engine (workspace by architecture, MIN_ALIGNMENT 256).
    TransformerEngine,
}

impl Caller {
    /// `torch` or `transformer-engine` (the spelling of specs and the command line).
    pub fn name(self) -> &'static str {
        match self {
            Caller::Torch => "torch",
            Caller::TransformerEngine => "transformer-engine",
        }
    }

    /// Parses `torch` / `torch._scaled_mm` / `transformer-engine` / `transformer_engine` / `te`.
    pub fn parse(s: &str) -> Option<Caller> {
        match s {
            "torch" | "torch._scaled_mm" => Some(Caller::Torch),
            "transformer-engine" | "transformer_engine" | "te" => Some(Caller::TransformerEngine),
            _ => None,
        }
    }

    /// The caller name of `mmaemu:platform` (`torch._scaled_mm`, `transformer_engine`).
    pub fn platform_name(self) -> &'static str {
        match self {
            Caller::Torch => "torch._scaled_mm",
            Caller::TransformerEngine => "transformer_engine",
        }
    }

    /// The caller's default workspace on a GPU of compute capability `cap`.
    pub fn default_workspace(self, cap: (u32, u32)) -> u64 {
        match self {
            Caller::Torch => TORCH_WORKSPACE,
            Caller::TransformerEngine if cap.0 >= 9 => TE_WORKSPACE_HOPPER,
            Caller::TransformerEngine => TE_WORKSPACE_PRE_HOPPER,
        }
    }

    /// The MIN_ALIGNMENT preference the caller sets, if any.
    pub fn alignment(self) -> Option<u64> {
        match self {
            Caller::Torch => None,
            Caller::TransformerEngine => Some(TE_ALIGNMENT),
        }
    }
}

/// `cudaDataType_t` values (library_types.h; identical in CUDA 12 and 13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CudaType {
    /// `CUDA_R_32F` = 0.
    R32F,
    /// `CUDA_R_16F` = 2.
    R16F,
    /// `CUDA_R_16BF` = 14.
    R16BF,
    /// `CUDA_R_8F_E4M3` = 28.
    R8FE4M3,
    /// `CUDA_R_8F_E5M2` = 29.
    R8FE5M2,
}

impl CudaType {
    /// The numeric value of the enum in `library_types.h`.
    pub fn value(self) -> u32 {
        match self {
            CudaType::R32F => 0,
            CudaType::R16F => 2,
            CudaType::R16BF => 14,
            CudaType::R8FE4M3 => 28,
            CudaType::R8FE5M2 => 29,
        }
    }

    /// The name in `library_types.h`.
    pub fn name(self) -> &'static str {
        match self {
            CudaType::R32F => "CUDA_R_32F",
            CudaType::R16F => "CUDA_R_16F",
            CudaType::R16BF => "CUDA_R_16BF",
            CudaType::R8FE4M3 => "CUDA_R_8F_E4M3",
            CudaType::R8FE5M2 => "CUDA_R_8F_E5M2",
        }
    }

    /// The type of an FP8 operand.
    pub fn of_format(f: Format) -> CudaType {
        match f {
            Format::E4m3 => CudaType::R8FE4M3,
            Format::E5m2 => CudaType::R8FE5M2,
        }
    }

    /// The type of an output dtype.
    pub fn of_out(o: OutDtype) -> CudaType {
        match o {
            OutDtype::Float32 => CudaType::R32F,
            OutDtype::BFloat16 => CudaType::R16BF,
            OutDtype::Float16 => CudaType::R16F,
            OutDtype::E4m3 => CudaType::R8FE4M3,
            OutDtype::E5m2 => CudaType::R8FE5M2,
        }
    }
}

/// `cublasOperation_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trans {
    /// `CUBLAS_OP_N` = 0.
    N,
    /// `CUBLAS_OP_T` = 1.
    T,
}

/// The `cublasLtMatmulDescAttributes_t` the recorder sets (values from cublasLt.h, equal in 12.x and 13.x).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DescAttr {
    /// `CUBLASLT_MATMUL_DESC_TRANSA` = 3.
    TransA,
    /// `CUBLASLT_MATMUL_DESC_TRANSB` = 4.
    TransB,
    /// `CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` = 17.
    AScalePointer,
    /// `CUBLASLT_MATMUL_DESC_B_SCALE_POINTER` = 18.
    BScalePointer,
    /// `CUBLASLT_MATMUL_DESC_D_SCALE_POINTER` = 20.
    DScalePointer,
    /// `CUBLASLT_MATMUL_DESC_FAST_ACCUM` = 25.
    FastAccum,
}

impl DescAttr {
    /// The numeric value in cublasLt.h.
    pub fn value(self) -> u32 {
        match self {
            DescAttr::TransA => 3,
            DescAttr::TransB => 4,
            DescAttr::AScalePointer => 17,
            DescAttr::BScalePointer => 18,
            DescAttr::DScalePointer => 20,
            DescAttr::FastAccum => 25,
        }
    }

    /// The name in cublasLt.h.
    pub fn name(self) -> &'static str {
        match self {
            DescAttr::TransA => "CUBLASLT_MATMUL_DESC_TRANSA",
            DescAttr::TransB => "CUBLASLT_MATMUL_DESC_TRANSB",
            DescAttr::AScalePointer => "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER",
            DescAttr::BScalePointer => "CUBLASLT_MATMUL_DESC_B_SCALE_POINTER",
            DescAttr::DScalePointer => "CUBLASLT_MATMUL_DESC_D_SCALE_POINTER",
            DescAttr::FastAccum => "CUBLASLT_MATMUL_DESC_FAST_ACCUM",
        }
    }
}

/// A device fp32 scalar the call points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalePtr {
    /// torch's `scale_a` (mat1's scale).
    ScaleA,
    /// torch's `scale_b` (mat2's scale).
    ScaleB,
    /// torch's `scale_result`.
    ScaleResult,
}

/// The value of a descriptor attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DescValue {
    /// A `cublasOperation_t` (int32).
    Op(Trans),
    /// A device pointer to an fp32 scalar.
    Pointer(ScalePtr),
    /// An int8 flag.
    I8(i8),
}

/// `cublasLtMatmulPreferenceAttributes_t` the recorder sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrefAttr {
    /// `CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES` = 1 (uint64).
    MaxWorkspaceBytes,
    /// `CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES` = 5 (uint32).
    MinAlignmentA,
    /// `CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES` = 6 (uint32).
    MinAlignmentB,
    /// `CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES` = 7 (uint32).
    MinAlignmentC,
    /// `CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES` = 8 (uint32).
    MinAlignmentD,
}

impl PrefAttr {
    /// The numeric value in cublasLt.h.
    pub fn value(self) -> u32 {
        match self {
            PrefAttr::MaxWorkspaceBytes => 1,
            PrefAttr::MinAlignmentA => 5,
            PrefAttr::MinAlignmentB => 6,
            PrefAttr::MinAlignmentC => 7,
            PrefAttr::MinAlignmentD => 8,
        }
    }

    /// The name in cublasLt.h.
    pub fn name(self) -> &'static str {
        match self {
            PrefAttr::MaxWorkspaceBytes => "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES",
            PrefAttr::MinAlignmentA => "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES",
            PrefAttr::MinAlignmentB => "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES",
            PrefAttr::MinAlignmentC => "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES",
            PrefAttr::MinAlignmentD => "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES",
        }
    }

    /// The size in bytes of the attribute's value (uint64 for the workspace, uint32 for alignments).
    pub fn size(self) -> usize {
        match self {
            PrefAttr::MaxWorkspaceBytes => 8,
            _ => 4,
        }
    }
}

/// Which host buffer a cuBLASLt operand is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TorchOperand {
    /// mat1 = the recording's A, `[m, k]` row-major.
    Mat1,
    /// mat2 = the transpose of the recording's B, stored as B `[n, k]` row-major.
    Mat2,
}

/// One `cublasLtMatrixLayoutCreate` (column-major; no other layout attribute is set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Element type.
    pub dtype: CudaType,
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Leading dimension.
    pub ld: i64,
}

/// What one `torch._scaled_mm` call is, for the descriptor: torch's problem and settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallConfig {
    /// Rows of mat1 (torch's M).
    pub m: usize,
    /// Columns of mat2 (torch's N).
    pub n: usize,
    /// K.
    pub k: usize,
    /// mat1's format.
    pub fmt_a: Format,
    /// mat2's format.
    pub fmt_b: Format,
    /// The out dtype.
    pub out: OutDtype,
    /// use_fast_accum.
    pub fast_accum: bool,
    /// Whether scale_result is passed.
    pub scale_result: bool,
    /// MAX_WORKSPACE_BYTES (and the workspace size passed to cublasLtMatmul).
    pub workspace_bytes: u64,
    /// MIN_ALIGNMENT_{A,B,C,D}_BYTES, if set.
    pub align: Option<u64>,
}

/// The whole cuBLASLt call, as data.
#[derive(Debug, Clone, PartialEq)]
pub struct Descriptor {
    /// Always `CUBLAS_COMPUTE_32F` (68).
    pub compute_type: u32,
    /// Always `CUDA_R_32F`.
    pub scale_type: CudaType,
    /// The descriptor attributes, in the order they are set.
    pub attrs: Vec<(DescAttr, DescValue)>,
    /// Layout of cuBLASLt's A (mat2).
    pub a: Layout,
    /// Layout of cuBLASLt's B (mat1).
    pub b: Layout,
    /// Layout of C (never read).
    pub c: Layout,
    /// Layout of D (the result).
    pub d: Layout,
    /// The heuristic preferences, in the order they are set.
    pub prefs: Vec<(PrefAttr, u64)>,
    /// `requestedAlgoCount` of the heuristic query.
    pub requested_algo_count: i32,
    /// alpha (host fp32).
    pub alpha: f32,
    /// beta (host fp32).
    pub beta: f32,
    /// The host buffer of cuBLASLt's A.
    pub a_operand: TorchOperand,
    /// The host buffer of cuBLASLt's B.
    pub b_operand: TorchOperand,
    /// The workspace passed to cublasLtMatmul.
    pub workspace_bytes: u64,
}

/// `CUBLAS_COMPUTE_32F`.
pub const CUBLAS_COMPUTE_32F: u32 = 68;

/// The one-line summary stored in table sidecars and platform metadata.
pub const DESCRIPTOR_SUMMARY: &str = "torch 2.7.1 scaled_gemm (m=N, n=M, k=K; A=mat2 transa=T; B=mat1; C=out dtype, \
     fp16 for fp8 outputs; D=out dtype; A/B scale pointers (scale_b, scale_a); D scale pointer when scale_result is \
     passed; FAST_ACCUM; MAX_WORKSPACE_BYTES; MIN_ALIGNMENT_A/B/C/D 256 in transformer-engine mode), \
     requestedAlgoCount 1";

impl Descriptor {
    /// torch 2.7.1's cuBLASLt call for `cfg` (see the module documentation for every attribute).
    pub fn scaled_mm(cfg: &CallConfig) -> Descriptor {
        let (m, n, k) = (cfg.m as u64, cfg.n as u64, cfg.k as u64);
        let mut attrs = vec![
            (DescAttr::TransA, DescValue::Op(Trans::T)),
            (DescAttr::TransB, DescValue::Op(Trans::N)),
            (DescAttr::AScalePointer, DescValue::Pointer(ScalePtr::ScaleB)),
            (DescAttr::BScalePointer, DescValue::Pointer(ScalePtr::ScaleA)),
        ];
        if cfg.scale_result {
            attrs.push((DescAttr::DScalePointer, DescValue::Pointer(ScalePtr::ScaleResult)));
        }
        attrs.push((DescAttr::FastAccum, DescValue::I8(i8::from(cfg.fast_accum))));
        let c_type = if cfg.out.fp8().is_some() { CudaType::R16F } else { CudaType::of_out(cfg.out) };
        let mut prefs = vec![(PrefAttr::MaxWorkspaceBytes, cfg.workspace_bytes)];
        if let Some(al) = cfg.align {
            for p in
                [PrefAttr::MinAlignmentA, PrefAttr::MinAlignmentB, PrefAttr::MinAlignmentC, PrefAttr::MinAlignmentD]
            {
                prefs.push((p, al));
            }
        }
        Descriptor {
            compute_type: CUBLAS_COMPUTE_32F,
            scale_type: CudaType::R32F,
            attrs,
            a: Layout { dtype: CudaType::of_format(cfg.fmt_b), rows: k, cols: n, ld: k as i64 },
            b: Layout { dtype: CudaType::of_format(cfg.fmt_a), rows: k, cols: m, ld: k as i64 },
            c: Layout { dtype: c_type, rows: n, cols: m, ld: n as i64 },
            d: Layout { dtype: CudaType::of_out(cfg.out), rows: n, cols: m, ld: n as i64 },
            prefs,
            requested_algo_count: 1,
            alpha: 1.0,
            beta: 0.0,
            a_operand: TorchOperand::Mat2,
            b_operand: TorchOperand::Mat1,
            workspace_bytes: cfg.workspace_bytes,
        }
    }

    /// The descriptor as JSON (for `mmaemu-record descriptor` and the documentation).
    pub fn to_json(&self) -> serde_json::Value {
        let layout = |l: &Layout| json!({"type": l.dtype.name(), "rows": l.rows, "cols": l.cols, "ld": l.ld});
        let value = |v: &DescValue| match v {
            DescValue::Op(Trans::N) => json!("CUBLAS_OP_N"),
            DescValue::Op(Trans::T) => json!("CUBLAS_OP_T"),
            DescValue::Pointer(p) => json!(format!(
                "device fp32 {}",
                match p {
                    ScalePtr::ScaleA => "scale_a",
                    ScalePtr::ScaleB => "scale_b",
                    ScalePtr::ScaleResult => "scale_result",
                }
            )),
            DescValue::I8(x) => json!(x),
        };
        let operand = |o: TorchOperand| match o {
            TorchOperand::Mat1 => "mat1 (A [m, k] row-major)",
            TorchOperand::Mat2 => "mat2 (B [n, k] row-major)",
        };
        json!({
            "compute_type": "CUBLAS_COMPUTE_32F",
            "scale_type": self.scale_type.name(),
            "attributes": self.attrs.iter().map(|(a, v)| json!([a.name(), value(v)])).collect::<Vec<_>>(),
            "A": layout(&self.a),
            "B": layout(&self.b),
            "C": layout(&self.c),
            "D": layout(&self.d),
            "A_buffer": operand(self.a_operand),
            "B_buffer": operand(self.b_operand),
            "preferences": self.prefs.iter().map(|(p, v)| json!([p.name(), v])).collect::<Vec<_>>(),
            "requested_algo_count": self.requested_algo_count,
            "alpha": self.alpha,
            "beta": self.beta,
            "C_pointer": "null",
            "workspace_bytes": self.workspace_bytes,
        })
    }
}

/// The checks torch 2.7.1 applies before cuBLASLt sees a standard call (behaviour.md §5.2 step 2 and the
/// zero-size return of step 4): such calls never reach cuBLASLt, so the recorder does not record them.
/// Returns the reason, or None when torch would call cuBLASLt.
pub fn torch_rejects_before_cublas(m: usize, n: usize, k: usize, fa: Format, fb: Format) -> Option<String> {
    if k % 16 != 0 {
        return Some(format!("K = {k} is not a multiple of 16 (torch rejects it)"));
    }
    if n % 16 != 0 {
        return Some(format!("N = {n} is not a multiple of 16 (torch rejects it)"));
    }
    if fa == Format::E5m2 && fb == Format::E5m2 {
        return Some("e5m2 x e5m2 (torch rejects it before cuBLASLt)".into());
    }
    if m == 0 || n == 0 || k == 0 {
        return Some("a zero-size call (torch returns zeros without calling cuBLASLt)".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(out: OutDtype) -> CallConfig {
        CallConfig {
            m: 48,
            n: 32,
            k: 64,
            fmt_a: Format::E4m3,
            fmt_b: Format::E5m2,
            out,
            fast_accum: true,
            scale_result: false,
            workspace_bytes: TORCH_WORKSPACE,
            align: None,
        }
    }

    #[test]
    fn torch_call_swaps_operands_and_scales() {
        let d = Descriptor::scaled_mm(&cfg(OutDtype::BFloat16));
        assert_eq!(d.compute_type, 68);
        assert_eq!(d.scale_type, CudaType::R32F);
        assert_eq!(
            d.attrs,
            vec![
                (DescAttr::TransA, DescValue::Op(Trans::T)),
                (DescAttr::TransB, DescValue::Op(Trans::N)),
                (DescAttr::AScalePointer, DescValue::Pointer(ScalePtr::ScaleB)),
                (DescAttr::BScalePointer, DescValue::Pointer(ScalePtr::ScaleA)),
                (DescAttr::FastAccum, DescValue::I8(1)),
            ]
        );
        // cuBLASLt sees (n, m, k): A = mat2 (e5m2) k x n, B = mat1 (e4m3) k x m, D n x m.
        assert_eq!(d.a, Layout { dtype: CudaType::R8FE5M2, rows: 64, cols: 32, ld: 64 });
        assert_eq!(d.b, Layout { dtype: CudaType::R8FE4M3, rows: 64, cols: 48, ld: 64 });
        assert_eq!(d.c, Layout { dtype: CudaType::R16BF, rows: 32, cols: 48, ld: 32 });
        assert_eq!(d.d, d.c);
        assert_eq!((d.a_operand, d.b_operand), (TorchOperand::Mat2, TorchOperand::Mat1));
        assert_eq!(d.prefs, vec![(PrefAttr::MaxWorkspaceBytes, 1 << 20)]);
        assert_eq!((d.requested_algo_count, d.alpha, d.beta), (1, 1.0, 0.0));
    }

    #[test]
    fn fp8_outputs_get_an_fp16_c_and_the_d_scale() {
        let mut c = cfg(OutDtype::E4m3);
        c.scale_result = true;
        c.fast_accum = false;
        let d = Descriptor::scaled_mm(&c);
        assert_eq!(d.c.dtype, CudaType::R16F);
        assert_eq!(d.d.dtype, CudaType::R8FE4M3);
        assert!(d.attrs.contains(&(DescAttr::DScalePointer, DescValue::Pointer(ScalePtr::ScaleResult))));
        assert_eq!(d.attrs.last(), Some(&(DescAttr::FastAccum, DescValue::I8(0))));
        for (out, ty) in
            [(OutDtype::Float32, CudaType::R32F), (OutDtype::Float16, CudaType::R16F), (OutDtype::E5m2, CudaType::R16F)]
        {
            assert_eq!(Descriptor::scaled_mm(&cfg(out)).c.dtype, ty);
        }
        // scale_result with a 16-bit output: torch still passes the pointer.
        let mut c = cfg(OutDtype::BFloat16);
        c.scale_result = true;
        assert!(Descriptor::scaled_mm(&c).attrs.iter().any(|(a, _)| *a == DescAttr::DScalePointer));
    }

    #[test]
    fn transformer_engine_mode() {
        assert_eq!(Caller::TransformerEngine.default_workspace((9, 0)), 32 << 20);
        assert_eq!(Caller::TransformerEngine.default_workspace((8, 9)), 4 << 20);
        assert_eq!(Caller::Torch.default_workspace((9, 0)), 1 << 20);
        let mut c = cfg(OutDtype::Float32);
        c.workspace_bytes = Caller::TransformerEngine.default_workspace((9, 0));
        c.align = Caller::TransformerEngine.alignment();
        let d = Descriptor::scaled_mm(&c);
        assert_eq!(
            d.prefs,
            vec![
                (PrefAttr::MaxWorkspaceBytes, 32 << 20),
                (PrefAttr::MinAlignmentA, 256),
                (PrefAttr::MinAlignmentB, 256),
                (PrefAttr::MinAlignmentC, 256),
                (PrefAttr::MinAlignmentD, 256),
            ]
        );
        assert_eq!(Caller::parse("te"), Some(Caller::TransformerEngine));
        assert_eq!(Caller::parse("cublas"), None);
    }

    #[test]
    fn torch_prechecks() {
        assert!(torch_rejects_before_cublas(16, 16, 24, Format::E4m3, Format::E4m3).is_some());
        assert!(torch_rejects_before_cublas(16, 24, 32, Format::E4m3, Format::E4m3).is_some());
        assert!(torch_rejects_before_cublas(16, 16, 32, Format::E5m2, Format::E5m2).is_some());
        assert!(torch_rejects_before_cublas(0, 16, 32, Format::E4m3, Format::E4m3).is_some());
        assert_eq!(torch_rejects_before_cublas(1, 16, 32, Format::E5m2, Format::E4m3), None);
    }

    #[test]
    fn json_names_everything() {
        let j = Descriptor::scaled_mm(&cfg(OutDtype::E5m2)).to_json();
        assert_eq!(j["C"]["type"], "CUDA_R_16F");
        assert_eq!(j["attributes"][0][0], "CUBLASLT_MATMUL_DESC_TRANSA");
        assert_eq!(j["attributes"][2][1], "device fp32 scale_b");
    }
}
