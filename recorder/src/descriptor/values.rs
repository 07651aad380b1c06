//! The cuBLASLt enums and attribute names a descriptor is written in: data types, operations, matmul
//! descriptor and preference attributes with their cublasLt.h values and sizes, the pointers a call
//! passes and the enum values of the scale modes and the epilogue.

use mmaemu_model::{Format, OutDtype};

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

/// The `cublasLtMatmulDescAttributes_t` the recorder sets (values from cublasLt.h, equal in 12.8 and 13.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DescAttr {
    /// `CUBLASLT_MATMUL_DESC_TRANSA` = 3 (int32).
    TransA,
    /// `CUBLASLT_MATMUL_DESC_TRANSB` = 4 (int32).
    TransB,
    /// `CUBLASLT_MATMUL_DESC_EPILOGUE` = 7 (uint32).
    Epilogue,
    /// `CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` = 17.
    AScalePointer,
    /// `CUBLASLT_MATMUL_DESC_B_SCALE_POINTER` = 18.
    BScalePointer,
    /// `CUBLASLT_MATMUL_DESC_D_SCALE_POINTER` = 20.
    DScalePointer,
    /// `CUBLASLT_MATMUL_DESC_AMAX_D_POINTER` = 21.
    AmaxDPointer,
    /// `CUBLASLT_MATMUL_DESC_FAST_ACCUM` = 25 (int8).
    FastAccum,
    /// `CUBLASLT_MATMUL_DESC_A_SCALE_MODE` = 31 (int32).
    AScaleMode,
    /// `CUBLASLT_MATMUL_DESC_B_SCALE_MODE` = 32 (int32).
    BScaleMode,
    /// `CUBLASLT_MATMUL_DESC_D_SCALE_MODE` = 34 (int32).
    DScaleMode,
}

impl DescAttr {
    /// Every attribute the recorder knows.
    pub const ALL: [DescAttr; 11] = [
        DescAttr::TransA,
        DescAttr::TransB,
        DescAttr::Epilogue,
        DescAttr::AScalePointer,
        DescAttr::BScalePointer,
        DescAttr::DScalePointer,
        DescAttr::AmaxDPointer,
        DescAttr::FastAccum,
        DescAttr::AScaleMode,
        DescAttr::BScaleMode,
        DescAttr::DScaleMode,
    ];

    /// The numeric value in cublasLt.h.
    pub fn value(self) -> u32 {
        match self {
            DescAttr::TransA => 3,
            DescAttr::TransB => 4,
            DescAttr::Epilogue => 7,
            DescAttr::AScalePointer => 17,
            DescAttr::BScalePointer => 18,
            DescAttr::DScalePointer => 20,
            DescAttr::AmaxDPointer => 21,
            DescAttr::FastAccum => 25,
            DescAttr::AScaleMode => 31,
            DescAttr::BScaleMode => 32,
            DescAttr::DScaleMode => 34,
        }
    }

    /// The name in cublasLt.h.
    pub fn name(self) -> &'static str {
        match self {
            DescAttr::TransA => "CUBLASLT_MATMUL_DESC_TRANSA",
            DescAttr::TransB => "CUBLASLT_MATMUL_DESC_TRANSB",
            DescAttr::Epilogue => "CUBLASLT_MATMUL_DESC_EPILOGUE",
            DescAttr::AScalePointer => "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER",
            DescAttr::BScalePointer => "CUBLASLT_MATMUL_DESC_B_SCALE_POINTER",
            DescAttr::DScalePointer => "CUBLASLT_MATMUL_DESC_D_SCALE_POINTER",
            DescAttr::AmaxDPointer => "CUBLASLT_MATMUL_DESC_AMAX_D_POINTER",
            DescAttr::FastAccum => "CUBLASLT_MATMUL_DESC_FAST_ACCUM",
            DescAttr::AScaleMode => "CUBLASLT_MATMUL_DESC_A_SCALE_MODE",
            DescAttr::BScaleMode => "CUBLASLT_MATMUL_DESC_B_SCALE_MODE",
            DescAttr::DScaleMode => "CUBLASLT_MATMUL_DESC_D_SCALE_MODE",
        }
    }
}

/// A device fp32 scalar the call points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalePtr {
    /// torch's `scale_a` (mat1's scale; TE: the input's scale_inv).
    ScaleA,
    /// torch's `scale_b` (mat2's scale; TE: the weight's scale_inv).
    ScaleB,
    /// torch's `scale_result` (TE: the output tensor's scale).
    ScaleResult,
    /// Where cuBLASLt writes the amax of D (TE: the output tensor's amax).
    AmaxD,
}

impl ScalePtr {
    /// The name in the descriptor's JSON.
    pub fn name(self) -> &'static str {
        match self {
            ScalePtr::ScaleA => "scale_a",
            ScalePtr::ScaleB => "scale_b",
            ScalePtr::ScaleResult => "scale_result",
            ScalePtr::AmaxD => "amax_d",
        }
    }
}

/// `cublasLtMatmulMatrixScale_t::CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F` (one fp32 scale per matrix).
pub const MATRIX_SCALE_SCALAR_32F: u32 = 0;
/// `cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT`.
pub const EPILOGUE_DEFAULT: u32 = 1;

/// The value of a descriptor attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DescValue {
    /// A `cublasOperation_t` (int32).
    Op(Trans),
    /// A device pointer to an fp32 scalar.
    Pointer(ScalePtr),
    /// An int8 flag.
    I8(i8),
    /// A 4-byte enum value (`cublasLtMatmulMatrixScale_t`, `cublasLtEpilogue_t`).
    U32(u32),
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
    /// Every preference the recorder knows.
    pub const ALL: [PrefAttr; 5] = [
        PrefAttr::MaxWorkspaceBytes,
        PrefAttr::MinAlignmentA,
        PrefAttr::MinAlignmentB,
        PrefAttr::MinAlignmentC,
        PrefAttr::MinAlignmentD,
    ];

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
    /// mat1 = the recording's A, `[m, k]`.
    Mat1,
    /// mat2 = the transpose of the recording's B, `[n, k]`.
    Mat2,
}

/// What `cublasLtMatmul` gets as its C pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CPointer {
    /// A null pointer (torch; TE for FP8 outputs).
    Null,
    /// D's pointer (TE for 16/32-bit outputs, with beta 0).
    D,
}
