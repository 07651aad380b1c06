//! The cuBLASLt call of one FP8 GEMM as its caller builds it, as data: which descriptor attributes are set
//! to what and in which order, the four matrix layouts, the C pointer, the heuristic preferences and the
//! operand order. Pure (no CUDA), so every detail is unit-tested without a GPU; [`crate::gpu`] turns a
//! [`Descriptor`] into cuBLASLt calls attribute by attribute, and nothing else. The callers and their rules
//! are [`crate::caller`]; operand layouts [`crate::geometry`].
//!
//! # torch's call (`torch-2.7`, `torch-2.10`, `torch-2.10-nodscale`)
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
//! | `cublasLtMatmulDescCreate` | `CUBLAS_COMPUTE_32F`, scale type `CUDA_R_32F` | FP8 GEMMs accumulate in fp32 |
//! | `TRANSA`, `TRANSB` | `CUBLAS_OP_T`, `CUBLAS_OP_N` | A = mat2's storage read as a column-major `k x n` and transposed ("TN", which torch checks) |
//! | `A_SCALE_POINTER`, `B_SCALE_POINTER` | device fp32 **scale_b**, **scale_a** | torch swaps the scales with the operands |
//! | `D_SCALE_POINTER` | device fp32 `scale_result` | torch 2.7: whenever passed; torch ≥ 2.10: FP8 outputs only; without the fix: never ([`Caller::sets_d_scale`]) |
//! | `FAST_ACCUM` | int8 `use_fast_accum` | always set |
//! | A, B layouts | (mat2's type, k, n, lda), (mat1's type, k, m, ldb) | the leading dimensions from the strides ([`Geometry::lda`], [`Geometry::ldb`]) |
//! | C layout | (bias type, n, m, n) | without a bias **the out dtype, or float16 for FP8 outputs**; never read (beta 0, C null) but its type selects kernels |
//! | D layout | (out dtype, n, m, n) | the row-major `[m, n]` result |
//! | alpha, beta | 1.0, 0.0 (host fp32) | the scales travel by pointer |
//! | `PREF_MAX_WORKSPACE_BYTES` | the workspace (1 MiB) | the same size is passed to `cublasLtMatmul` |
//! | heuristic | `requestedAlgoCount = 1` | the first algorithm; none returned is `CUBLAS_STATUS_NOT_SUPPORTED` |
//!
//! No bias, no amax, no scale modes, no alignment preferences. The pointers are the operands' data
//! pointers, storage offsets included.
//!
//! # Transformer Engine 2.3 (`transformer-engine`)
//!
//! `cublas_gemm` of `transformer_engine/common/gemm/cublaslt_gemm.cu` for a TE Linear forward (`gemm(weight,
//! input)`, layout "TN": A = the weight = mat2's `[n, k]`, B = the input = mat1, m = N, n = M, so the same
//! orientation as torch), tensor-wise FP8 scaling, no bias, no GELU, no accumulation, `math_sm_count` 0,
//! built with CUDA ≥ 12.8:
//!
//! | what | value |
//! |---|---|
//! | compute type | `CUBLAS_COMPUTE_32F` (TF32 only for pure fp32 GEMMs) |
//! | layouts | A (type, k, n, lda = k), B (type, k, m, ldb = k), D (out, n, m, n); contiguous operands |
//! | `TRANSA`, `TRANSB` | T, N |
//! | `FAST_ACCUM` | int8 1 unless `use_split_accumulator` (= not fast) |
//! | `A_SCALE_POINTER`, `B_SCALE_POINTER` | the weight's and the input's scale_inv (= scale_b, scale_a) |
//! | `A_SCALE_MODE`, `B_SCALE_MODE` | `CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F` |
//! | FP8 output: `D_SCALE_POINTER`, `AMAX_D_POINTER`, `D_SCALE_MODE` | the output tensor's scale, its amax, SCALAR_32F |
//! | C | FP8 output: type **bf16**, pointer null; else the out dtype, pointer = D |
//! | `EPILOGUE` | `CUBLASLT_EPILOGUE_DEFAULT`, always set |
//! | preferences | MAX_WORKSPACE_BYTES (32 MiB sm_90+, 4 MiB before); MIN_ALIGNMENT_{A,B,C,D} = the pointers' alignment (`_getAlignment`: the largest power of two ≤ 256 dividing the address; a null C is 256) |
//! | heuristic | `requestedAlgoCount = 1` |
//!
//! The D scale is the output tensor's scale: a TE row records it as `scale_result` (1.0 when the case
//! gives none), which is how the TE profiles replay it. The amax cuBLASLt writes is recorded in the row
//! (`amax_d`, `docs/recording-format.md`).

mod values;

pub use values::*;

use crate::caller::Caller;
use crate::geometry::Geometry;
use crate::scaling::{ScaleMode, ScaleRecipe};
use mmaemu_model::{Format, SplitKey};
use serde_json::json;

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

/// What one call is, for the descriptor: torch's problem, its settings and its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallConfig {
    /// Torch's problem: M (rows of mat1), N (columns of mat2), K, the formats, the out dtype and
    /// use_fast_accum (TE: not use_split_accumulator).
    pub problem: SplitKey,
    /// Whether torch's `scale_result` is passed (TE: ignored, an FP8 output always has its scale).
    pub scale_result: bool,
    /// MAX_WORKSPACE_BYTES (and the workspace size passed to cublasLtMatmul).
    pub workspace_bytes: u64,
    /// Who makes the call.
    pub caller: Caller,
    /// The operand layouts.
    pub geometry: Geometry,
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
    /// Layout of C (never read: beta is 0).
    pub c: Layout,
    /// Layout of D (the result).
    pub d: Layout,
    /// The C pointer of `cublasLtMatmul`.
    pub c_pointer: CPointer,
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
    /// Bytes from the start of A's allocation to A's pointer (its storage offset).
    pub a_offset: u64,
    /// Bytes from the start of B's allocation to B's pointer.
    pub b_offset: u64,
    /// The workspace passed to cublasLtMatmul.
    pub workspace_bytes: u64,
}

/// `CUBLAS_COMPUTE_32F`.
pub const CUBLAS_COMPUTE_32F: u32 = 68;

/// The alignment Transformer Engine's `_getAlignment` reports for an address: the largest power of two up
/// to 256 that divides it (256 for a null pointer). Allocations are 256-byte aligned (cudaMalloc), so an
/// operand at byte offset `off` into its allocation has the alignment of `off`.
pub fn alignment(off: u64) -> u64 {
    let mut a = 256;
    while !off.is_multiple_of(a) {
        a /= 2;
    }
    a
}

/// The one-line summary of a caller's descriptor, stored in platform metadata and table sidecars.
pub fn summary(caller: Caller) -> String {
    let dscale = match caller {
        Caller::Torch27 => "D scale pointer when scale_result is passed",
        Caller::Torch210 => "D scale pointer when scale_result is passed and the output is FP8",
        Caller::Torch210NoDScale => "no D scale pointer",
        Caller::TransformerEngine => "",
    };
    if caller == Caller::TransformerEngine {
        return "Transformer Engine 2.3 cublas_gemm, CUDA >= 12.8 build (m=N, n=M, k=K; A=weight=mat2 transa=T; \
                B=input=mat1; lda=ldb=k; A/B scale pointers (scale_b, scale_a) and SCALAR_32F scale modes; FP8 \
                outputs: D scale and amax pointers, D scale mode, C type bf16 and C null; other outputs: C = D; \
                FAST_ACCUM; EPILOGUE DEFAULT; MAX_WORKSPACE_BYTES; MIN_ALIGNMENT_A/B/C/D from the pointers), \
                requestedAlgoCount 1"
            .into();
    }
    format!(
        "torch scaled_gemm, {} (m=N, n=M, k=K; A=mat2 transa=T; B=mat1; lda/ldb from the strides; C=out dtype, \
         fp16 for fp8 outputs, C null; D=out dtype; A/B scale pointers (scale_b, scale_a); {dscale}; FAST_ACCUM; \
         MAX_WORKSPACE_BYTES), requestedAlgoCount 1",
        caller.name()
    )
}

impl Descriptor {
    /// The cuBLASLt call of `cfg` as its caller builds it (see the module documentation). The geometry
    /// must be one torch passes to cuBLASLt ([`Geometry::torch_rejects`]); a Transformer Engine call has
    /// contiguous operands.
    pub fn build(cfg: &CallConfig) -> Descriptor {
        match cfg.caller {
            Caller::TransformerEngine => Descriptor::transformer_engine(cfg),
            _ => Descriptor::torch(cfg),
        }
    }

    fn common(cfg: &CallConfig, attrs: Vec<(DescAttr, DescValue)>, c: Layout, lda: i64, ldb: i64) -> Descriptor {
        let p = &cfg.problem;
        let (m, n, k) = (p.m as u64, p.n as u64, p.k as u64);
        Descriptor {
            compute_type: CUBLAS_COMPUTE_32F,
            scale_type: CudaType::R32F,
            attrs,
            a: Layout { dtype: CudaType::of_format(p.fb), rows: k, cols: n, ld: lda },
            b: Layout { dtype: CudaType::of_format(p.fa), rows: k, cols: m, ld: ldb },
            c,
            d: Layout { dtype: CudaType::of_out(p.out), rows: n, cols: m, ld: n as i64 },
            c_pointer: CPointer::Null,
            prefs: vec![(PrefAttr::MaxWorkspaceBytes, cfg.workspace_bytes)],
            requested_algo_count: 1,
            alpha: 1.0,
            beta: 0.0,
            a_operand: TorchOperand::Mat2,
            b_operand: TorchOperand::Mat1,
            a_offset: cfg.geometry.mat2.offset as u64,
            b_offset: cfg.geometry.mat1.offset as u64,
            workspace_bytes: cfg.workspace_bytes,
        }
    }

    fn torch(cfg: &CallConfig) -> Descriptor {
        let p = &cfg.problem;
        let mut attrs = vec![
            (DescAttr::TransA, DescValue::Op(Trans::T)),
            (DescAttr::TransB, DescValue::Op(Trans::N)),
            (DescAttr::AScalePointer, DescValue::Pointer(ScalePtr::ScaleB)),
            (DescAttr::BScalePointer, DescValue::Pointer(ScalePtr::ScaleA)),
        ];
        if cfg.caller.sets_d_scale(p.out, cfg.scale_result) {
            attrs.push((DescAttr::DScalePointer, DescValue::Pointer(ScalePtr::ScaleResult)));
        }
        attrs.push((DescAttr::FastAccum, DescValue::I8(i8::from(p.fast))));
        let c_type = if p.out.fp8().is_some() { CudaType::R16F } else { CudaType::of_out(p.out) };
        let c = Layout { dtype: c_type, rows: p.n as u64, cols: p.m as u64, ld: p.n as i64 };
        let g = &cfg.geometry;
        Descriptor::common(cfg, attrs, c, g.lda(p.n, p.k), g.ldb(p.m, p.k))
    }

    fn transformer_engine(cfg: &CallConfig) -> Descriptor {
        let p = &cfg.problem;
        let fp8_out = p.out.fp8().is_some();
        let mut attrs = vec![
            (DescAttr::TransA, DescValue::Op(Trans::T)),
            (DescAttr::TransB, DescValue::Op(Trans::N)),
            (DescAttr::FastAccum, DescValue::I8(i8::from(p.fast))),
            (DescAttr::AScalePointer, DescValue::Pointer(ScalePtr::ScaleB)),
            (DescAttr::BScalePointer, DescValue::Pointer(ScalePtr::ScaleA)),
            (DescAttr::AScaleMode, DescValue::U32(MATRIX_SCALE_SCALAR_32F)),
            (DescAttr::BScaleMode, DescValue::U32(MATRIX_SCALE_SCALAR_32F)),
        ];
        if fp8_out {
            attrs.push((DescAttr::DScalePointer, DescValue::Pointer(ScalePtr::ScaleResult)));
            attrs.push((DescAttr::AmaxDPointer, DescValue::Pointer(ScalePtr::AmaxD)));
            attrs.push((DescAttr::DScaleMode, DescValue::U32(MATRIX_SCALE_SCALAR_32F)));
        }
        attrs.push((DescAttr::Epilogue, DescValue::U32(EPILOGUE_DEFAULT)));
        let c_type = if fp8_out { CudaType::R16BF } else { CudaType::of_out(p.out) };
        let c = Layout { dtype: c_type, rows: p.n as u64, cols: p.m as u64, ld: p.n as i64 };
        let k = p.k as i64;
        let mut d = Descriptor::common(cfg, attrs, c, k, k);
        d.c_pointer = if fp8_out { CPointer::Null } else { CPointer::D };
        // C is null (alignment 256) or D, which sits at the start of its allocation.
        for (pref, off) in [
            (PrefAttr::MinAlignmentA, d.a_offset),
            (PrefAttr::MinAlignmentB, d.b_offset),
            (PrefAttr::MinAlignmentC, 0),
            (PrefAttr::MinAlignmentD, 0),
        ] {
            d.prefs.push((pref, alignment(off)));
        }
        d
    }

    /// The call with a scale recipe's A and B scale modes ([`crate::scaling`]): set right after the scale
    /// pointers, which then point at the recipe's scale tensors (torch >= 2.9 `scaled_gemm`, which sets
    /// `A_SCALE_MODE` / `B_SCALE_MODE` for row-wise, block-wise and MX scales). Tensor-wise is unchanged.
    pub fn with_scaling(mut self, recipe: ScaleRecipe) -> Descriptor {
        if let Some((a, b)) = recipe.modes() {
            let at = self.attrs.iter().position(|(x, _)| *x == DescAttr::BScalePointer).map_or(0, |i| i + 1);
            self.attrs.insert(at, (DescAttr::AScaleMode, DescValue::U32(a.value())));
            self.attrs.insert(at + 1, (DescAttr::BScaleMode, DescValue::U32(b.value())));
        }
        self
    }

    /// Whether the call has cuBLASLt write the amax of D.
    pub fn writes_amax(&self) -> bool {
        self.attrs.iter().any(|(a, _)| *a == DescAttr::AmaxDPointer)
    }

    /// Whether the call sets the D scale.
    pub fn sets_d_scale(&self) -> bool {
        self.attrs.iter().any(|(a, _)| *a == DescAttr::DScalePointer)
    }

    /// The descriptor as JSON (for `mmaemu-record descriptor` and the documentation).
    pub fn to_json(&self) -> serde_json::Value {
        let layout = |l: &Layout| json!({"type": l.dtype.name(), "rows": l.rows, "cols": l.cols, "ld": l.ld});
        let value = |a: &DescAttr, v: &DescValue| match v {
            DescValue::Op(Trans::N) => json!("CUBLAS_OP_N"),
            DescValue::Op(Trans::T) => json!("CUBLAS_OP_T"),
            DescValue::Pointer(p) => json!(format!("device fp32 {}", p.name())),
            DescValue::I8(x) => json!(x),
            DescValue::U32(x) => match (a, *x) {
                (DescAttr::Epilogue, EPILOGUE_DEFAULT) => json!("CUBLASLT_EPILOGUE_DEFAULT"),
                (DescAttr::AScaleMode | DescAttr::BScaleMode | DescAttr::DScaleMode, v) => {
                    ScaleMode::from_value(v).map_or(json!(v), |m| json!(m.name()))
                }
                _ => json!(x),
            },
        };
        let operand = |o: TorchOperand, off: u64| match o {
            TorchOperand::Mat1 => format!("mat1 (A [m, k]), storage offset {off} bytes"),
            TorchOperand::Mat2 => format!("mat2 (B [n, k]), storage offset {off} bytes"),
        };
        json!({
            "compute_type": "CUBLAS_COMPUTE_32F",
            "scale_type": self.scale_type.name(),
            "attributes": self.attrs.iter().map(|(a, v)| json!([a.name(), value(a, v)])).collect::<Vec<_>>(),
            "A": layout(&self.a),
            "B": layout(&self.b),
            "C": layout(&self.c),
            "D": layout(&self.d),
            "A_buffer": operand(self.a_operand, self.a_offset),
            "B_buffer": operand(self.b_operand, self.b_offset),
            "C_pointer": match self.c_pointer { CPointer::Null => "null", CPointer::D => "D" },
            "preferences": self.prefs.iter().map(|(p, v)| json!([p.name(), v])).collect::<Vec<_>>(),
            "requested_algo_count": self.requested_algo_count,
            "alpha": self.alpha,
            "beta": self.beta,
            "workspace_bytes": self.workspace_bytes,
        })
    }
}

/// The checks torch applies before cuBLASLt sees a call (`docs/reference.md` §5.2: step 2's divisibility
/// and e5m2 × e5m2, step 4's zero-size return, step 5.2's layouts): such calls never reach cuBLASLt, so
/// the recorder does not record them. Returns the reason, or None when torch calls cuBLASLt.
pub fn torch_rejects_before_cublas(problem: &SplitKey, geometry: &Geometry) -> Option<String> {
    let SplitKey { m, n, k, fa, fb, .. } = *problem;
    if !k.is_multiple_of(16) {
        return Some(format!("K = {k} is not a multiple of 16 (torch rejects it)"));
    }
    if !n.is_multiple_of(16) {
        return Some(format!("N = {n} is not a multiple of 16 (torch rejects it)"));
    }
    if fa == Format::E5m2 && fb == Format::E5m2 {
        return Some("e5m2 x e5m2 (torch rejects it before cuBLASLt)".into());
    }
    if m == 0 || n == 0 || k == 0 {
        return Some("a zero-size call (torch returns zeros without calling cuBLASLt)".into());
    }
    geometry.torch_rejects(m, n, k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmaemu_model::OutDtype;

    #[test]
    fn torch_prechecks() {
        let g = Geometry::STANDARD;
        let rejects = |m, n, k, fa, fb| {
            torch_rejects_before_cublas(&SplitKey { m, n, k, fa, fb, out: OutDtype::BFloat16, fast: false }, &g)
        };
        assert!(rejects(16, 16, 24, Format::E4m3, Format::E4m3).is_some());
        assert!(rejects(16, 24, 32, Format::E4m3, Format::E4m3).is_some());
        assert!(rejects(16, 16, 32, Format::E5m2, Format::E5m2).is_some());
        assert!(rejects(0, 16, 32, Format::E4m3, Format::E4m3).is_some());
        assert_eq!(rejects(1, 16, 32, Format::E5m2, Format::E4m3), None);
    }

    #[test]
    fn te_alignment_of_offsets() {
        // _getAlignment: 256 for an aligned (or null) address, else the largest power of two dividing it.
        assert_eq!([alignment(0), alignment(16), alignment(48), alignment(1), alignment(512)], [256, 16, 16, 1, 256]);
    }

    #[test]
    fn json_names_everything() {
        let cfg = CallConfig {
            problem: SplitKey {
                m: 48,
                n: 32,
                k: 64,
                fa: Format::E4m3,
                fb: Format::E5m2,
                out: OutDtype::E5m2,
                fast: true,
            },
            scale_result: false,
            workspace_bytes: 1 << 20,
            caller: Caller::Torch27,
            geometry: Geometry::STANDARD,
        };
        let j = Descriptor::build(&cfg).to_json();
        assert_eq!(j["C"]["type"], "CUDA_R_16F");
        assert_eq!(j["attributes"][0][0], "CUBLASLT_MATMUL_DESC_TRANSA");
        assert_eq!(j["attributes"][2][1], "device fp32 scale_b");
        assert_eq!(j["C_pointer"], "null");
        // A recipe's modes follow the scale pointers: A (mat2) then B (mat1).
        let j = Descriptor::build(&cfg).with_scaling(ScaleRecipe::Blockwise1x128x128x128).to_json();
        assert_eq!(j["attributes"][4][0], "CUBLASLT_MATMUL_DESC_A_SCALE_MODE");
        assert_eq!(j["attributes"][4][1], "CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F");
        assert_eq!(j["attributes"][5][1], "CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F");
        assert_eq!(Descriptor::build(&cfg).with_scaling(ScaleRecipe::Tensorwise), Descriptor::build(&cfg));
    }
}
