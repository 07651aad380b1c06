//! The cuBLASLt side of one call: a [`Descriptor`] turned into a matmul descriptor, four layouts and a
//! preference, attribute by attribute in the descriptor's order ([`LtCall`]); the heuristic query; and the
//! read-back of the chosen algorithm's configuration, where every failure is an error.

use crate::descriptor::{CudaType, DescAttr, DescValue, Descriptor, Layout, PrefAttr, ScalePtr, Trans};
use crate::device::AlgoInfo;
use crate::error::RecordError;
use cudarc::cublaslt::sys as lt;
use std::ffi::c_void;

/// The sys value of a data type.
pub fn sys_type(t: CudaType) -> lt::cudaDataType {
    match t {
        CudaType::R32F => lt::cudaDataType::CUDA_R_32F,
        CudaType::R16F => lt::cudaDataType::CUDA_R_16F,
        CudaType::R16BF => lt::cudaDataType::CUDA_R_16BF,
        CudaType::R8FE4M3 => lt::cudaDataType::CUDA_R_8F_E4M3,
        CudaType::R8FE5M2 => lt::cudaDataType::CUDA_R_8F_E5M2,
    }
}

/// The sys value of a descriptor attribute.
pub fn sys_desc_attr(a: DescAttr) -> lt::cublasLtMatmulDescAttributes_t {
    use lt::cublasLtMatmulDescAttributes_t as A;
    match a {
        DescAttr::TransA => A::CUBLASLT_MATMUL_DESC_TRANSA,
        DescAttr::TransB => A::CUBLASLT_MATMUL_DESC_TRANSB,
        DescAttr::Epilogue => A::CUBLASLT_MATMUL_DESC_EPILOGUE,
        DescAttr::AScalePointer => A::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
        DescAttr::BScalePointer => A::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
        DescAttr::DScalePointer => A::CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
        DescAttr::AmaxDPointer => A::CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,
        DescAttr::FastAccum => A::CUBLASLT_MATMUL_DESC_FAST_ACCUM,
        DescAttr::AScaleMode => A::CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
        DescAttr::BScaleMode => A::CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
        DescAttr::DScaleMode => A::CUBLASLT_MATMUL_DESC_D_SCALE_MODE,
    }
}

/// The sys value of a preference attribute.
pub fn sys_pref_attr(a: PrefAttr) -> lt::cublasLtMatmulPreferenceAttributes_t {
    use lt::cublasLtMatmulPreferenceAttributes_t as P;
    match a {
        PrefAttr::MaxWorkspaceBytes => P::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
        PrefAttr::MinAlignmentA => P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        PrefAttr::MinAlignmentB => P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        PrefAttr::MinAlignmentC => P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        PrefAttr::MinAlignmentD => P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
    }
}

/// The `cublasOperation_t` value of a transpose flag (cublas_api.h: `CUBLAS_OP_N` = 0, `CUBLAS_OP_T` = 1;
/// the cuBLASLt bindings do not carry that enum).
pub fn sys_op(t: Trans) -> i32 {
    match t {
        Trans::N => 0,
        Trans::T => 1,
    }
}

/// The name of a cuBLAS status.
pub fn status_name(s: lt::cublasStatus_t) -> String {
    format!("{s:?}")
}

pub(super) fn check(what: &str, s: lt::cublasStatus_t) -> Result<(), RecordError> {
    if s == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(RecordError::Cuda(format!("{what}: {}", status_name(s))))
    }
}

pub(super) fn drv(what: &str, e: impl std::fmt::Display) -> RecordError {
    RecordError::Cuda(format!("{what}: {e}"))
}

/// The cuBLASLt objects of one call, destroyed on drop.
pub(super) struct LtCall {
    pub(super) desc: lt::cublasLtMatmulDesc_t,
    pub(super) layouts: [lt::cublasLtMatrixLayout_t; 4],
    pub(super) pref: lt::cublasLtMatmulPreference_t,
}

impl Drop for LtCall {
    fn drop(&mut self) {
        // SAFETY: each handle was created by this struct's constructor and is destroyed once; a null one
        // (creation failed) is skipped.
        unsafe {
            if !self.pref.is_null() {
                lt::cublasLtMatmulPreferenceDestroy(self.pref);
            }
            for l in self.layouts {
                if !l.is_null() {
                    lt::cublasLtMatrixLayoutDestroy(l);
                }
            }
            if !self.desc.is_null() {
                lt::cublasLtMatmulDescDestroy(self.desc);
            }
        }
    }
}

/// Device addresses of the scale scalars and of the amax cuBLASLt writes.
#[derive(Clone, Copy)]
pub(super) struct ScaleAddrs {
    pub(super) a: u64,
    pub(super) b: u64,
    pub(super) result: u64,
    pub(super) amax: u64,
}

impl LtCall {
    /// Creates the descriptor, layouts and preference of `d`, setting every attribute in order.
    pub(super) fn new(d: &Descriptor, scales: ScaleAddrs) -> Result<LtCall, RecordError> {
        let mut call =
            LtCall { desc: std::ptr::null_mut(), layouts: [std::ptr::null_mut(); 4], pref: std::ptr::null_mut() };
        // SAFETY: plain cuBLASLt object creation and attribute setting; every buffer passed lives on this
        // stack frame for the duration of the call and has the size passed with it.
        unsafe {
            check(
                "cublasLtMatmulDescCreate",
                lt::cublasLtMatmulDescCreate(
                    &mut call.desc,
                    lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    sys_type(d.scale_type),
                ),
            )?;
            for (attr, value) in &d.attrs {
                let name = attr.name();
                let status = match *value {
                    DescValue::Op(t) => {
                        let v: i32 = sys_op(t);
                        lt::cublasLtMatmulDescSetAttribute(
                            call.desc,
                            sys_desc_attr(*attr),
                            (&v as *const i32).cast(),
                            std::mem::size_of::<i32>(),
                        )
                    }
                    DescValue::Pointer(p) => {
                        let addr = match p {
                            ScalePtr::ScaleA => scales.a,
                            ScalePtr::ScaleB => scales.b,
                            ScalePtr::ScaleResult => scales.result,
                            ScalePtr::AmaxD => scales.amax,
                        };
                        let v = addr as usize as *const c_void;
                        lt::cublasLtMatmulDescSetAttribute(
                            call.desc,
                            sys_desc_attr(*attr),
                            (&v as *const *const c_void).cast(),
                            std::mem::size_of::<*const c_void>(),
                        )
                    }
                    DescValue::I8(x) => lt::cublasLtMatmulDescSetAttribute(
                        call.desc,
                        sys_desc_attr(*attr),
                        (&x as *const i8).cast(),
                        std::mem::size_of::<i8>(),
                    ),
                    // The scale modes (int32 enums) and the epilogue (a uint32 enum): 4 bytes each.
                    DescValue::U32(x) => lt::cublasLtMatmulDescSetAttribute(
                        call.desc,
                        sys_desc_attr(*attr),
                        (&x as *const u32).cast(),
                        std::mem::size_of::<u32>(),
                    ),
                };
                check(name, status)?;
            }
            for (i, l) in [d.a, d.b, d.c, d.d].iter().enumerate() {
                let Layout { dtype, rows, cols, ld } = *l;
                check(
                    "cublasLtMatrixLayoutCreate",
                    lt::cublasLtMatrixLayoutCreate(&mut call.layouts[i], sys_type(dtype), rows, cols, ld),
                )?;
            }
            check("cublasLtMatmulPreferenceCreate", lt::cublasLtMatmulPreferenceCreate(&mut call.pref))?;
            for &(attr, value) in &d.prefs {
                let status = if attr.size() == 8 {
                    let v: u64 = value;
                    lt::cublasLtMatmulPreferenceSetAttribute(
                        call.pref,
                        sys_pref_attr(attr),
                        (&v as *const u64).cast(),
                        8,
                    )
                } else {
                    let v =
                        u32::try_from(value).map_err(|_| RecordError::Usage(format!("{} too large", attr.name())))?;
                    lt::cublasLtMatmulPreferenceSetAttribute(
                        call.pref,
                        sys_pref_attr(attr),
                        (&v as *const u32).cast(),
                        4,
                    )
                };
                check(attr.name(), status)?;
            }
        }
        Ok(call)
    }

    /// The heuristic query (requestedAlgoCount from the descriptor).
    pub(super) fn heuristic(
        &self,
        handle: lt::cublasLtHandle_t,
        d: &Descriptor,
    ) -> Result<HeuristicResult, RecordError> {
        // SAFETY: the result array has room for `requested_algo_count` (= 1) results.
        let mut result: lt::cublasLtMatmulHeuristicResult_t = unsafe { std::mem::zeroed() };
        let mut count: i32 = 0;
        let status = unsafe {
            lt::cublasLtMatmulAlgoGetHeuristic(
                handle,
                self.desc,
                self.layouts[0],
                self.layouts[1],
                self.layouts[2],
                self.layouts[3],
                self.pref,
                d.requested_algo_count.min(1),
                &mut result,
                &mut count,
            )
        };
        if status != lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Ok(HeuristicResult::Rejected(status_name(status)));
        }
        if count == 0 {
            return Ok(HeuristicResult::Rejected(
                "CUBLAS_STATUS_NOT_SUPPORTED (the heuristic returned no algorithm)".into(),
            ));
        }
        if result.state != lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Ok(HeuristicResult::Rejected(format!("{} (heuristic result state)", status_name(result.state))));
        }
        Ok(HeuristicResult::Algo(Box::new(result)))
    }
}

pub(super) enum HeuristicResult {
    Algo(Box<lt::cublasLtMatmulHeuristicResult_t>),
    Rejected(String),
}

/// One attribute of an algorithm's configuration, as a signed integer. Every way the read can fail (a
/// status other than success, a size of 0 or above 8 bytes, fewer bytes written than announced) is a
/// [`RecordError::Cuda`] naming the attribute: a configuration that cannot be read back is never recorded
/// with a default in its place (exit code 4, nothing recorded).
fn algo_attr(
    algo: &lt::cublasLtMatmulAlgo_t,
    attr: lt::cublasLtMatmulAlgoConfigAttributes_t,
    signed: bool,
) -> Result<i64, RecordError> {
    let fail = |what: String| RecordError::Cuda(format!("reading back {attr:?} of the heuristic's algorithm: {what}"));
    let mut buf = [0u8; 8];
    let mut needed: usize = 0;
    // cuBLASLt wants the exact size of the attribute: ask for it first (sizeInBytes 0), then read.
    // SAFETY: with sizeInBytes 0 nothing is written to the buffer; the second call writes `needed` <= 8
    // bytes into an 8-byte buffer.
    let status =
        unsafe { lt::cublasLtMatmulAlgoConfigGetAttribute(algo, attr, buf.as_mut_ptr().cast(), 0, &mut needed) };
    if status != lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Err(fail(format!("the size query returned {}", status_name(status))));
    }
    if needed == 0 || needed > 8 {
        return Err(fail(format!("cuBLASLt announced {needed} bytes (1 to 8 expected)")));
    }
    let mut written: usize = 0;
    let status =
        unsafe { lt::cublasLtMatmulAlgoConfigGetAttribute(algo, attr, buf.as_mut_ptr().cast(), needed, &mut written) };
    if status != lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Err(fail(format!("the read returned {}", status_name(status))));
    }
    if written != needed {
        return Err(fail(format!("{written} bytes written, {needed} announced")));
    }
    Ok(sign_extend(u64::from_le_bytes(buf), written, signed))
}

/// The value of a little-endian integer of `bytes` bytes (1 to 8) held in the low bytes of `raw`.
pub fn sign_extend(raw: u64, bytes: usize, signed: bool) -> i64 {
    let bits = bytes * 8;
    if signed && bits < 64 && raw >> (bits - 1) & 1 == 1 {
        (raw | (!0u64 << bits)) as i64
    } else {
        raw as i64
    }
}

/// The algorithm of a heuristic result, every configuration attribute read back; any failure is an error.
pub(super) fn algo_info(r: &lt::cublasLtMatmulHeuristicResult_t) -> Result<AlgoInfo, RecordError> {
    use lt::cublasLtMatmulAlgoConfigAttributes_t as C;
    let get = |a, signed| algo_attr(&r.algo, a, signed);
    let info = AlgoInfo {
        algo_id: get(C::CUBLASLT_ALGO_CONFIG_ID, true)?,
        tile_id: get(C::CUBLASLT_ALGO_CONFIG_TILE_ID, false)?,
        stages_id: get(C::CUBLASLT_ALGO_CONFIG_STAGES_ID, false)?,
        split_s: get(C::CUBLASLT_ALGO_CONFIG_SPLITK_NUM, true)?,
        reduction_scheme: get(C::CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, false)?,
        custom_option: get(C::CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, false)?,
        cta_swizzling: get(C::CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, false)?,
        inner_shape_id: Some(get(C::CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, false)?),
        cluster_shape_id: Some(get(C::CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, false)?),
        workspace_bytes: r.workspaceSize as u64,
        waves_count: r.wavesCount,
        source: "cublasLt heuristic",
    };
    check_split(info.split_s)?;
    Ok(info)
}

/// `CUBLASLT_ALGO_CONFIG_SPLITK_NUM` is at least 1 (cublasLt.h: "default: 1"); anything else read back is
/// an error, not "unsplit".
pub fn check_split(split_s: i64) -> Result<(), RecordError> {
    if split_s < 1 {
        return Err(RecordError::Cuda(format!(
            "CUBLASLT_ALGO_CONFIG_SPLITK_NUM read back as {split_s}: a split count is at least 1"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_values_match_the_bindings() {
        for t in [CudaType::R32F, CudaType::R16F, CudaType::R16BF, CudaType::R8FE4M3, CudaType::R8FE5M2] {
            assert_eq!(sys_type(t) as u32, t.value(), "{}", t.name());
        }
        for a in DescAttr::ALL {
            assert_eq!(sys_desc_attr(a) as u32, a.value(), "{}", a.name());
        }
        for p in PrefAttr::ALL {
            assert_eq!(sys_pref_attr(p) as u32, p.value(), "{}", p.name());
        }
        assert_eq!(sys_op(Trans::N), 0);
        assert_eq!(sys_op(Trans::T), 1);
        assert_eq!(
            lt::cublasLtMatmulMatrixScale_t::CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F as u32,
            crate::descriptor::MATRIX_SCALE_SCALAR_32F
        );
        assert_eq!(lt::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT as u32, crate::descriptor::EPILOGUE_DEFAULT);
        use crate::scaling::ScaleMode;
        use lt::cublasLtMatmulMatrixScale_t as S;
        assert_eq!(S::CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 as u32, ScaleMode::Vec16Ue4m3.value());
        assert_eq!(S::CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 as u32, ScaleMode::Vec32Ue8m0.value());
        // OUTER_VEC_32F, VEC128_32F and BLK128x128_32F: in the 12.9 and 13.0 bindings, not in 12.8's.
        #[cfg(feature = "cuda-13000")]
        for (sys, mode) in [
            (S::CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, ScaleMode::OuterVec32F),
            (S::CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, ScaleMode::Vec128_32F),
            (S::CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, ScaleMode::Blk128x128_32F),
        ] {
            assert_eq!(sys as u32, mode.value(), "{}", mode.name());
        }
        assert_eq!(lt::cublasComputeType_t::CUBLAS_COMPUTE_32F as u32, crate::descriptor::CUBLAS_COMPUTE_32F);
        assert_eq!(status_name(lt::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
    }

    #[test]
    fn read_back_values_and_failures() {
        // A 4-byte int32 -1 (the algo id of no algorithm) and a 4-byte uint32.
        assert_eq!(sign_extend(0xFFFF_FFFF, 4, true), -1);
        assert_eq!(sign_extend(0xFFFF_FFFF, 4, false), 0xFFFF_FFFF);
        assert_eq!(sign_extend(0x7F, 1, true), 127);
        assert_eq!(sign_extend(0x80, 1, true), -128);
        assert_eq!(sign_extend(5, 8, true), 5);
        // A split count read back below 1 is a CUDA failure (exit 4), never "unsplit".
        for s in [0, -1] {
            let e = check_split(s).unwrap_err();
            assert_eq!(e.exit_code(), 4, "{e}");
            assert!(e.to_string().contains("SPLITK_NUM read back as"), "{e}");
        }
        assert!(check_split(1).is_ok() && check_split(24).is_ok());
    }
}
