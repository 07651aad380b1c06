//! Every attribute of both callers' cuBLASLt calls, pinned against the upstream sources they come from.
//!
//! - Transformer Engine 2.3: `transformer_engine/common/gemm/cublaslt_gemm.cu` at tag v2.3, cited by line
//!   (`cublas_gemm`), and `transformer_engine/pytorch/module/base.py` (the workspace).
//! - torch 2.7.1: `aten/src/ATen/cuda/CUDABlas.cpp`, `at::cuda::blas::scaled_gemm`, and
//!   `aten/src/ATen/native/cuda/Blas.cpp`, `cublasCommonArgs` / `_scaled_mm_out_cuda`, cited by the
//!   statement (the call was also checked against the cu126 wheel's `libtorch_cuda.so`).
//! - torch ≥ 2.10: `aten/src/ATen/native/cuda/ScaledBlas.cpp`, pytorch/pytorch#190449 (scale_result
//!   dropped) and #190452 / #190979 (forwarded again, FP8 outputs only).
//!
//! The expected values are the upstream code's, written out here by hand; the recorder's descriptor must
//! produce exactly them.

use mmaemu_model::{Format, OutDtype, SplitKey};
use mmaemu_recorder::caller::Caller;
use mmaemu_recorder::descriptor::{
    CPointer, CallConfig, CudaType, DescAttr, DescValue, Descriptor, Layout, PrefAttr, ScalePtr, TorchOperand, Trans,
    EPILOGUE_DEFAULT, MATRIX_SCALE_SCALAR_32F,
};
use mmaemu_recorder::geometry::{Geometry, OperandLayout, Storage};

fn cfg(caller: Caller, out: OutDtype, scale_result: bool) -> CallConfig {
    CallConfig {
        problem: SplitKey { m: 48, n: 32, k: 64, fa: Format::E4m3, fb: Format::E5m2, out, fast: true },
        scale_result,
        workspace_bytes: caller.default_workspace((9, 0)),
        caller,
        geometry: Geometry::STANDARD,
    }
}

use DescAttr as A;
use DescValue as V;

/// torch 2.7.1 `scaled_gemm`, in the order it sets them:
/// `computeDesc.setAttribute(CUBLASLT_MATMUL_DESC_TRANSA, _cublasOpFromChar(transa))` ('t'),
/// `...TRANSB...` ('n'), `computeDesc.setAttribute(matmulDescA, mat1_scale_ptr)` (A_SCALE_POINTER, cuBLAS's
/// A = torch's mat2, whose scale is scale_b: `cublasCommonArgs` swaps the operands and, with them, their
/// scales), `...B_SCALE_POINTER, mat2_scale_ptr` (scale_a), `if
/// (result_scale_ptr != nullptr) computeDesc.setAttribute(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
/// result_scale_ptr)`, `computeDesc.setAttribute(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fastAccuMode)` with
/// `const int8_t fastAccuMode = use_fast_accum ? 1 : 0`. No bias (`if (bias_ptr)` is false), no scale modes
/// (only for e8m0 / e4m3 block scales), no SM_COUNT_TARGET (no carveout).
fn torch_attrs(d_scale: bool) -> Vec<(DescAttr, DescValue)> {
    let mut v = vec![
        (A::TransA, V::Op(Trans::T)),
        (A::TransB, V::Op(Trans::N)),
        (A::AScalePointer, V::Pointer(ScalePtr::ScaleB)),
        (A::BScalePointer, V::Pointer(ScalePtr::ScaleA)),
    ];
    if d_scale {
        v.push((A::DScalePointer, V::Pointer(ScalePtr::ScaleResult)));
    }
    v.push((A::FastAccum, V::I8(1)));
    v
}

#[test]
fn torch_2_7_scaled_gemm() {
    for (out, sr, c_type) in [
        (OutDtype::BFloat16, false, CudaType::R16BF),
        (OutDtype::BFloat16, true, CudaType::R16BF),
        (OutDtype::Float32, false, CudaType::R32F),
        (OutDtype::E4m3, true, CudaType::R16F),
        (OutDtype::E5m2, false, CudaType::R16F),
    ] {
        let d = Descriptor::build(&cfg(Caller::Torch27, out, sr));
        // `CuBlasLtMatmulDescriptor computeDesc(computeType, scaleType)` with `CUBLAS_COMPUTE_32F`, `CUDA_R_32F`.
        assert_eq!((d.compute_type, d.scale_type), (68, CudaType::R32F));
        // torch 2.7.1 passes scale_result whenever it is given, whatever the out dtype.
        assert_eq!(d.attrs, torch_attrs(sr), "{out:?} {sr}");
        // `CuBlasLtMatrixLayout Adesc(mat1_dtype, m, k, mat1_ld, transa == 't')`: rows and cols swapped for
        // 't', so (k, m') with m' = torch's N; B (k, n') with n' = M; `Cdesc(bias_dtype, m, n, result_ld)`
        // where `_scaled_mm_out_cuda` passes, without a bias, the out dtype as `bias_dtype`, and Half for an
        // FP8 out dtype; `Ddesc(result_dtype, m, n, result_ld)`.
        assert_eq!(d.a, Layout { dtype: CudaType::R8FE5M2, rows: 64, cols: 32, ld: 64 });
        assert_eq!(d.b, Layout { dtype: CudaType::R8FE4M3, rows: 64, cols: 48, ld: 64 });
        assert_eq!(d.c, Layout { dtype: c_type, rows: 32, cols: 48, ld: 32 });
        assert_eq!(d.d, Layout { dtype: CudaType::of_out(out), rows: 32, cols: 48, ld: 32 });
        // `cublasLtMatmul(..., &alpha_val, ..., &beta_val, nullptr /* C */, ...)` with alpha 1.0, beta 0.0.
        assert_eq!((d.alpha, d.beta, d.c_pointer), (1.0, 0.0, CPointer::Null));
        // `preference.setAttribute(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspaceSize)` and nothing else;
        // `_getWorkspaceSize()` is `CUBLASLT_WORKSPACE_SIZE`, default 1024 KiB.
        assert_eq!(d.prefs, vec![(PrefAttr::MaxWorkspaceBytes, 1 << 20)]);
        // `cublasLtMatmulAlgoGetHeuristic(..., preference.descriptor(), 1, &heuristicResult, &returnedResult)`.
        assert_eq!(d.requested_algo_count, 1);
        assert_eq!((d.a_operand, d.b_operand), (TorchOperand::Mat2, TorchOperand::Mat1));
        assert!(!d.writes_amax());
    }
}

#[test]
fn torch_2_10_forwards_scale_result_for_fp8_outputs_only() {
    // ScaledBlas.cpp after pytorch/pytorch#190979: `scale_result` reaches `cublasCommonArgs` only when
    // `isFloat8Type(out.scalar_type())` (cuBLAS 13 rejects a D scale on other outputs with INVALID_VALUE).
    let bf16 = Descriptor::build(&cfg(Caller::Torch210, OutDtype::BFloat16, true));
    assert_eq!(bf16.attrs, torch_attrs(false));
    let fp8 = Descriptor::build(&cfg(Caller::Torch210, OutDtype::E4m3, true));
    assert_eq!(fp8.attrs, torch_attrs(true));
    // pytorch/pytorch#190449: torch 2.10's `_scaled_gemm` hardwires `std::nullopt` for scale_result, so
    // D_SCALE_POINTER is never set.
    for out in [OutDtype::BFloat16, OutDtype::E4m3] {
        assert_eq!(Descriptor::build(&cfg(Caller::Torch210NoDScale, out, true)).attrs, torch_attrs(false));
    }
    // Everything else is torch 2.7's call.
    let (a, b) = (
        Descriptor::build(&cfg(Caller::Torch210, OutDtype::E4m3, true)),
        Descriptor::build(&cfg(Caller::Torch27, OutDtype::E4m3, true)),
    );
    assert_eq!(a, b);
}

/// Transformer Engine 2.3 `cublas_gemm` (cublaslt_gemm.cu at v2.3), tensor scaling, no bias, no GELU, FP8
/// inputs, in the order it sets them: TRANSA (line 321), TRANSB (323), FAST_ACCUM (337-339:
/// `fastAccuMode = use_split_accumulator ? 0 : 1`), A_SCALE_POINTER and B_SCALE_POINTER (349-354,
/// `param.A_scale_inv` = the weight's, `param.B_scale_inv` = the input's), A_SCALE_MODE and B_SCALE_MODE
/// (409-412; `CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F`, 356-357, under `#if CUDA_VERSION >= 12080`); for an
/// FP8 output D_SCALE_POINTER and AMAX_D_POINTER (417-420: `outputD->scale.dptr`, `outputD->amax.dptr`) and
/// D_SCALE_MODE (424-426, `scaling_mode_a`); then EPILOGUE (492-493, `CUBLASLT_EPILOGUE_DEFAULT` from
/// line 302, since neither bias nor GELU is set).
fn te_attrs(fp8_out: bool) -> Vec<(DescAttr, DescValue)> {
    let mut v = vec![
        (A::TransA, V::Op(Trans::T)),
        (A::TransB, V::Op(Trans::N)),
        (A::FastAccum, V::I8(1)),
        (A::AScalePointer, V::Pointer(ScalePtr::ScaleB)),
        (A::BScalePointer, V::Pointer(ScalePtr::ScaleA)),
        (A::AScaleMode, V::U32(MATRIX_SCALE_SCALAR_32F)),
        (A::BScaleMode, V::U32(MATRIX_SCALE_SCALAR_32F)),
    ];
    if fp8_out {
        v.push((A::DScalePointer, V::Pointer(ScalePtr::ScaleResult)));
        v.push((A::AmaxDPointer, V::Pointer(ScalePtr::AmaxD)));
        v.push((A::DScaleMode, V::U32(MATRIX_SCALE_SCALAR_32F)));
    }
    v.push((A::Epilogue, V::U32(EPILOGUE_DEFAULT)));
    v
}

#[test]
fn transformer_engine_2_3_cublas_gemm() {
    for (out, c_type, c_ptr) in [
        // 428-431: "For FP8 output, cuBLAS requires C_type to match bias_type and be FP16/BF16":
        // `C_type = bias ? bias_type : CUDA_R_16BF`, and `C = nullptr` (416).
        (OutDtype::E4m3, CudaType::R16BF, CPointer::Null),
        (OutDtype::E5m2, CudaType::R16BF, CPointer::Null),
        // 433: otherwise `Cdesc(D_type, m, n, ldd)`, and C = `outputD->data.dptr` (256), beta 0 (293).
        (OutDtype::BFloat16, CudaType::R16BF, CPointer::D),
        (OutDtype::Float32, CudaType::R32F, CPointer::D),
        (OutDtype::Float16, CudaType::R16F, CPointer::D),
    ] {
        let fp8 = out.fp8().is_some();
        // The D scale is part of the call for FP8 outputs whatever torch's scale_result flag says.
        for sr in [false, true] {
            let d = Descriptor::build(&cfg(Caller::TransformerEngine, out, sr));
            // 307: `gemm_compute_type = CUBLAS_COMPUTE_32F` (TF32 only for fp32 x fp32 -> fp32); 320:
            // `cublasLtMatmulDescCreate(&operationDesc, gemm_compute_type, CUDA_R_32F)`.
            assert_eq!((d.compute_type, d.scale_type), (68, CudaType::R32F));
            assert_eq!(d.attrs, te_attrs(fp8), "{out:?}");
            assert_eq!(d.writes_amax(), fp8);
            // 313-316: `cublasLtMatrixLayoutCreate(&Adesc, A_type, transA == N ? m : k, transA == N ? k : m,
            // param.lda)` with transA = T and `lda = k` (CanonicalizeGemmInput, tensor scaling:
            // `ret.lda = is_A_transposed ? k : m`); B likewise with transB = N, `ldb = k`.
            assert_eq!(d.a, Layout { dtype: CudaType::R8FE5M2, rows: 64, cols: 32, ld: 64 });
            assert_eq!(d.b, Layout { dtype: CudaType::R8FE4M3, rows: 64, cols: 48, ld: 64 });
            // 318 and 431/433: D and C `(m, n, ldd)` with `ldd = m` (246).
            assert_eq!(d.d, Layout { dtype: CudaType::of_out(out), rows: 32, cols: 48, ld: 32 });
            assert_eq!(d.c, Layout { dtype: c_type, rows: 32, cols: 48, ld: 32 });
            assert_eq!(d.c_pointer, c_ptr);
            assert_eq!((d.alpha, d.beta), (1.0, 0.0));
            // 518-531: MAX_WORKSPACE_BYTES = workspaceSize, then MIN_ALIGNMENT_{A,B,C,D}_BYTES =
            // `_getAlignment` of param.A, param.B, C and D (41-48: the largest power of two up to 256
            // dividing the address; 256 for null). The workspace: base.py `get_cublas_workspace_size_bytes`
            // (lines 61-65): 33_554_432 from sm_90 on.
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
            // 533-535: `cublasLtMatmulAlgoGetHeuristic(..., preference, 1, &heuristicResult, &returnedResults)`.
            assert_eq!(d.requested_algo_count, 1);
        }
    }
    // base.py lines 63-65: "Return 32 MiB if using hopper, 4 MiB for all other architectures."
    assert_eq!(Caller::TransformerEngine.default_workspace((8, 9)), 4 << 20);
    assert_eq!(Caller::TransformerEngine.default_workspace((10, 0)), 32 << 20);
}

#[test]
fn transformer_engine_alignment_follows_the_pointers() {
    // A weight (cuBLASLt's A) 16 bytes into its allocation: `_getAlignment(param.A)` = 16.
    let mut c = cfg(Caller::TransformerEngine, OutDtype::BFloat16, false);
    c.geometry.mat2.offset = 16;
    c.geometry.mat1.offset = 96;
    let d = Descriptor::build(&c);
    assert_eq!((d.a_offset, d.b_offset), (16, 96));
    assert_eq!(&d.prefs[1..3], &[(PrefAttr::MinAlignmentA, 16), (PrefAttr::MinAlignmentB, 32)]);
}

#[test]
fn torch_passes_strides_and_offsets() {
    // `cublasCommonArgs`: `lda = mata->stride(...)` (mat2's leading dimension, stride 1 of the [k, n]
    // column-major view), `ldb = matb->stride(...)` (mat1's stride 0); the data pointers include the storage
    // offsets (`data_ptr()`); reference §5.2 step 5.7 for M = 1 or N = 1.
    let mut c = cfg(Caller::Torch27, OutDtype::BFloat16, false);
    c.geometry = Geometry {
        mat1: OperandLayout { storage: Storage::Std, ld_pad: 16, offset: 32 },
        mat2: OperandLayout { storage: Storage::Std, ld_pad: 64, offset: 48 },
    };
    let d = Descriptor::build(&c);
    assert_eq!((d.a.ld, d.b.ld), (128, 80));
    assert_eq!((d.a_offset, d.b_offset), (48, 32));
    assert_eq!(d.prefs, vec![(PrefAttr::MaxWorkspaceBytes, 1 << 20)], "torch sets no alignment preference");
    c.problem.m = 1;
    assert_eq!(Descriptor::build(&c).b.ld, 64);
}
