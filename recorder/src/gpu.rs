//! The real device: cuBLASLt through cudarc, loaded at run time (cudarc's dynamic loading), so the binary
//! builds and starts on machines without CUDA.
//!
//! cudarc panics when a library or a symbol is missing. Nothing here lets that happen on purpose:
//! [`probe_libraries`] tries to load the driver and cuBLASLt under exactly the names cudarc will use before
//! the first cudarc call, and [`guard`] turns any panic that still escapes (a symbol missing from an old
//! library, say) into a typed error, so every GPU command fails with a message and exit code 3 or 4.
//!
//! [`GpuDevice`] makes each call from a [`Descriptor`] and nothing else: every attribute of the descriptor
//! is set, in its order, by [`apply`]'s helpers; the algorithm configuration of the heuristic's first result
//! is read back attribute by attribute.

use crate::descriptor::{
    CallConfig, CudaType, DescAttr, DescValue, Descriptor, Layout, PrefAttr, ScalePtr, TorchOperand, Trans,
    DESCRIPTOR_SUMMARY, MAX_WORKSPACE,
};
use crate::device::{AlgoInfo, Device, Heuristic, Inputs, Platform, RunOutcome};
use crate::error::RecordError;
use cudarc::cublaslt::sys as lt;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};
use serde_json::json;
use std::ffi::c_void;
use std::sync::Arc;

/// Checks that the CUDA driver and cuBLASLt libraries can be loaded, under the names cudarc looks for.
pub fn probe_libraries() -> Result<(), RecordError> {
    // SAFETY: loading a shared library runs its initialisers; these are NVIDIA's own libraries, looked up
    // by the names cudarc would load anyway.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(RecordError::NoGpu(format!(
            "the CUDA driver library could not be loaded (tried {})",
            cudarc::get_lib_name_candidates("cuda").join(", ")
        )));
    }
    // SAFETY: as above.
    if !unsafe { lt::is_culib_present() } {
        return Err(RecordError::NoGpu(format!(
            "cuBLASLt could not be loaded (tried {})",
            cudarc::get_lib_name_candidates("cublasLt").join(", ")
        )));
    }
    Ok(())
}

/// Runs `f`, turning a panic (cudarc's way of reporting a missing library or symbol) into an error.
pub fn guard<T>(what: &str, f: impl FnOnce() -> Result<T, RecordError>) -> Result<T, RecordError> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    match r {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(RecordError::NoGpu(format!("{what}: the CUDA bindings failed: {msg}")))
        }
    }
}

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
        DescAttr::AScalePointer => A::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
        DescAttr::BScalePointer => A::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
        DescAttr::DScalePointer => A::CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
        DescAttr::FastAccum => A::CUBLASLT_MATMUL_DESC_FAST_ACCUM,
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

fn check(what: &str, s: lt::cublasStatus_t) -> Result<(), RecordError> {
    if s == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(RecordError::Cuda(format!("{what}: {}", status_name(s))))
    }
}

fn drv(what: &str, e: impl std::fmt::Display) -> RecordError {
    RecordError::Cuda(format!("{what}: {e}"))
}

/// The cuBLASLt objects of one call, destroyed on drop.
struct LtCall {
    desc: lt::cublasLtMatmulDesc_t,
    layouts: [lt::cublasLtMatrixLayout_t; 4],
    pref: lt::cublasLtMatmulPreference_t,
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

/// Device addresses of the three scale scalars.
#[derive(Clone, Copy)]
struct ScaleAddrs {
    a: u64,
    b: u64,
    result: u64,
}

impl LtCall {
    /// Creates the descriptor, layouts and preference of `d`, setting every attribute in order.
    fn new(d: &Descriptor, scales: ScaleAddrs) -> Result<LtCall, RecordError> {
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
    fn heuristic(&self, handle: lt::cublasLtHandle_t, d: &Descriptor) -> Result<HeuristicResult, RecordError> {
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

enum HeuristicResult {
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
fn algo_info(r: &lt::cublasLtMatmulHeuristicResult_t) -> Result<AlgoInfo, RecordError> {
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

/// The real GPU.
pub struct GpuDevice {
    _ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    handle: lt::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
    scales: CudaSlice<f32>,
    platform: Platform,
}

impl Drop for GpuDevice {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            // SAFETY: created in `open`, destroyed once.
            unsafe {
                lt::cublasLtDestroy(self.handle);
            }
        }
    }
}

/// The driver's version string from `/proc/driver/nvidia/version` (Linux), if readable.
fn kernel_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.148.08  Thu ..."
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

impl GpuDevice {
    /// Opens device `ordinal`: probes the libraries, creates the context, the cuBLASLt handle, the
    /// workspace and the scale buffers, and reads the platform metadata.
    pub fn open(ordinal: usize) -> Result<GpuDevice, RecordError> {
        probe_libraries()?;
        guard("opening the GPU", || Self::open_inner(ordinal))
    }

    fn open_inner(ordinal: usize) -> Result<GpuDevice, RecordError> {
        let ctx = CudaContext::new(ordinal).map_err(|e| RecordError::NoGpu(format!("CUDA device {ordinal}: {e}")))?;
        let stream = ctx.default_stream();
        let mut handle: lt::cublasLtHandle_t = std::ptr::null_mut();
        // SAFETY: creates a handle into `handle`.
        check("cublasLtCreate", unsafe { lt::cublasLtCreate(&mut handle) })
            .map_err(|e| RecordError::NoGpu(e.to_string()))?;
        let workspace = stream.alloc_zeros::<u8>(MAX_WORKSPACE as usize).map_err(|e| drv("workspace", e))?;
        let scales = stream.alloc_zeros::<f32>(3).map_err(|e| drv("scales", e))?;

        let name = ctx.name().map_err(|e| drv("device name", e))?;
        let (major, minor) = ctx.compute_capability().map_err(|e| drv("compute capability", e))?;
        let sm = ctx
            .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| drv("SM count", e))?;
        let mut dv: i32 = 0;
        // SAFETY: writes one int.
        let driver_api = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut dv) };
        let driver_api = (driver_api == cudarc::driver::sys::CUresult::CUDA_SUCCESS)
            .then(|| format!("{}.{}", dv / 1000, (dv % 1000) / 10));
        // SAFETY: plain version queries.
        let (lt_version, cudart) = unsafe { (lt::cublasLtGetVersion(), lt::cublasLtGetCudartVersion()) };
        let mut props = [0i32; 3];
        for (i, p) in [
            lt::libraryPropertyType::MAJOR_VERSION,
            lt::libraryPropertyType::MINOR_VERSION,
            lt::libraryPropertyType::PATCH_LEVEL,
        ]
        .into_iter()
        .enumerate()
        {
            // SAFETY: writes one int.
            unsafe {
                lt::cublasLtGetProperty(p, &mut props[i]);
            }
        }
        let cublaslt = format!("{}.{}.{}", props[0], props[1], props[2]);
        let json = json!({
            "gpu": name,
            "capability": [major, minor],
            "sm_count": sm,
            "driver": kernel_driver_version(),
            "driver_cuda_api": driver_api,
            "cuda_runtime": format!("{}.{}", cudart / 1000, (cudart % 1000) / 10),
            "cublaslt": cublaslt,
            "cublaslt_version_number": lt_version,
            "torch": null,
            "caller": null,
            "workspace_bytes": null,
            "descriptor": DESCRIPTOR_SUMMARY,
            "recorder": format!("mmaemu-record {} (cudarc 0.19, CUDA API {})", env!("CARGO_PKG_VERSION"), cuda_api()),
        });
        let platform = Platform {
            json,
            gpu_short: Platform::short_name(&name),
            capability: (major.max(0) as u32, minor.max(0) as u32),
            cublaslt: Some(cublaslt),
            simulated: false,
        };
        Ok(GpuDevice { _ctx: ctx, stream, handle, workspace, scales, platform })
    }

    fn scale_addrs(&self) -> ScaleAddrs {
        let (base, _sync) = self.scales.device_ptr(&self.stream);
        ScaleAddrs { a: base, b: base + 4, result: base + 8 }
    }
}

/// The CUDA API version the bindings were built for.
pub fn cuda_api() -> &'static str {
    if cfg!(feature = "cuda-13000") {
        "13.0"
    } else {
        "12.8"
    }
}

impl Device for GpuDevice {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    fn heuristic(&mut self, cfg: &CallConfig) -> Result<Heuristic, RecordError> {
        guard("cuBLASLt heuristic", || {
            let d = Descriptor::scaled_mm(cfg);
            let call = LtCall::new(&d, self.scale_addrs())?;
            Ok(match call.heuristic(self.handle, &d)? {
                HeuristicResult::Rejected(s) => Heuristic::Rejected(s),
                HeuristicResult::Algo(r) => Heuristic::Algo(algo_info(&r)?),
            })
        })
    }

    fn run(&mut self, cfg: &CallConfig, inputs: &Inputs<'_>, runs: usize) -> Result<RunOutcome, RecordError> {
        guard("cuBLASLt matmul", || self.run_inner(cfg, inputs, runs))
    }
}

impl GpuDevice {
    fn run_inner(&mut self, cfg: &CallConfig, inputs: &Inputs<'_>, runs: usize) -> Result<RunOutcome, RecordError> {
        let d = Descriptor::scaled_mm(cfg);
        if d.workspace_bytes > MAX_WORKSPACE {
            return Err(RecordError::Usage(format!("workspace {} exceeds {MAX_WORKSPACE} bytes", d.workspace_bytes)));
        }
        let s = &self.stream;
        let values = [inputs.scale_a, inputs.scale_b, inputs.scale_result.unwrap_or(1.0)];
        s.memcpy_htod(&values, &mut self.scales).map_err(|e| drv("scales", e))?;
        let buffer = |o: TorchOperand| match o {
            TorchOperand::Mat1 => inputs.a,
            TorchOperand::Mat2 => inputs.b,
        };
        let a_dev = s.clone_htod(buffer(d.a_operand)).map_err(|e| drv("upload A", e))?;
        let b_dev = s.clone_htod(buffer(d.b_operand)).map_err(|e| drv("upload B", e))?;
        let call = LtCall::new(&d, self.scale_addrs())?;
        let result = match call.heuristic(self.handle, &d)? {
            HeuristicResult::Rejected(status) => return Ok(RunOutcome::Rejected { stage: "heuristic", status }),
            HeuristicResult::Algo(r) => r,
        };
        let algo = algo_info(&result)?;
        let out_bytes = cfg.m * cfg.n * cfg.out.width();
        let mut results = Vec::with_capacity(runs);
        for run in 0..runs.max(1) {
            let out = s.alloc_zeros::<u8>(out_bytes.max(1)).map_err(|e| drv("output", e))?;
            let status = {
                let (a_ptr, _ra) = a_dev.device_ptr(s);
                let (b_ptr, _rb) = b_dev.device_ptr(s);
                let (d_ptr, _rd) = out.device_ptr(s);
                let (w_ptr, _rw) = self.workspace.device_ptr(s);
                let (alpha, beta) = (d.alpha, d.beta);
                // SAFETY: every pointer is a live device allocation of the size its layout needs (A, B
                // uploaded above; D m * n elements of the out dtype; the workspace MAX_WORKSPACE bytes);
                // alpha and beta are host fp32 values (pointer mode host, the default).
                unsafe {
                    lt::cublasLtMatmul(
                        self.handle,
                        call.desc,
                        (&alpha as *const f32).cast(),
                        a_ptr as usize as *const c_void,
                        call.layouts[0],
                        b_ptr as usize as *const c_void,
                        call.layouts[1],
                        (&beta as *const f32).cast(),
                        std::ptr::null(),
                        call.layouts[2],
                        d_ptr as usize as *mut c_void,
                        call.layouts[3],
                        &result.algo,
                        w_ptr as usize as *mut c_void,
                        d.workspace_bytes as usize,
                        s.cu_stream() as lt::cudaStream_t,
                    )
                }
            };
            if status != lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                if run == 0 {
                    return Ok(RunOutcome::Rejected { stage: "matmul", status: status_name(status) });
                }
                return Err(RecordError::Cuda(format!("cublasLtMatmul failed on run {run}: {}", status_name(status))));
            }
            s.synchronize().map_err(|e| drv("synchronize", e))?;
            let mut bytes = s.clone_dtoh(&out).map_err(|e| drv("download D", e))?;
            bytes.truncate(out_bytes);
            results.push(bytes);
        }
        Ok(RunOutcome::Ran { algo, results })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_values_match_the_bindings() {
        for t in [CudaType::R32F, CudaType::R16F, CudaType::R16BF, CudaType::R8FE4M3, CudaType::R8FE5M2] {
            assert_eq!(sys_type(t) as u32, t.value(), "{}", t.name());
        }
        for a in [
            DescAttr::TransA,
            DescAttr::TransB,
            DescAttr::AScalePointer,
            DescAttr::BScalePointer,
            DescAttr::DScalePointer,
            DescAttr::FastAccum,
        ] {
            assert_eq!(sys_desc_attr(a) as u32, a.value(), "{}", a.name());
        }
        for p in [
            PrefAttr::MaxWorkspaceBytes,
            PrefAttr::MinAlignmentA,
            PrefAttr::MinAlignmentB,
            PrefAttr::MinAlignmentC,
            PrefAttr::MinAlignmentD,
        ] {
            assert_eq!(sys_pref_attr(p) as u32, p.value(), "{}", p.name());
        }
        assert_eq!(sys_op(Trans::N), 0);
        assert_eq!(sys_op(Trans::T), 1);
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

    #[test]
    fn guard_turns_panics_into_errors() {
        let r: Result<(), RecordError> = guard("test", || panic!("Unable to dynamically load the \"cuda\" library"));
        let e = r.unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("Unable to dynamically load"), "{e}");
    }
}
