//! The real device: cuBLASLt through cudarc, loaded at run time (cudarc's dynamic loading), so the binary
//! builds and starts on machines without CUDA.
//!
//! cudarc panics when a library or a symbol is missing. Nothing here lets that happen on purpose:
//! [`probe_libraries`] tries to load the driver and cuBLASLt under exactly the names cudarc will use before
//! the first cudarc call, and [`guard`] turns any panic that still escapes (a symbol missing from an old
//! library, say) into a typed error, so every GPU command fails with a message and exit code 3 or 4.
//!
//! [`GpuDevice`] makes each call from a [`Descriptor`] and nothing else: every attribute of the descriptor
//! is set, in its order, by `ltcall::LtCall`; the algorithm configuration of the heuristic's first result
//! is read back attribute by attribute.

mod ltcall;

use crate::caller::MAX_WORKSPACE;
use crate::descriptor::{CPointer, CallConfig, Descriptor, TorchOperand};
use crate::device::{Device, Heuristic, Inputs, Platform, RunOutcome};
use crate::error::RecordError;
use cudarc::cublaslt::sys as lt;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};
use ltcall::{algo_info, check, drv, status_name, HeuristicResult, LtCall, ScaleAddrs};
pub use ltcall::{check_split, sign_extend, sys_desc_attr, sys_op, sys_pref_attr, sys_type};
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
        // scale_a, scale_b, the D scale, the amax.
        let scales = stream.alloc_zeros::<f32>(4).map_err(|e| drv("scales", e))?;

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
            "descriptor": null,
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
        ScaleAddrs { a: base, b: base + 4, result: base + 8, amax: base + 12 }
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
            let d = Descriptor::build(cfg);
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
        let recipe = inputs.scales.map(|x| x.recipe).unwrap_or_default();
        let d = Descriptor::build(cfg).with_scaling(recipe);
        if d.workspace_bytes > MAX_WORKSPACE {
            return Err(RecordError::Usage(format!("workspace {} exceeds {MAX_WORKSPACE} bytes", d.workspace_bytes)));
        }
        let s = &self.stream;
        let (g, p) = (&cfg.geometry, &cfg.problem);
        // The operands' storage, padding and offset included, as torch's tensors hold it.
        let storage = |o: TorchOperand| match o {
            TorchOperand::Mat1 => g.mat1_storage(inputs.a, p.m, p.k),
            TorchOperand::Mat2 => g.mat2_storage(inputs.b, p.n, p.k),
        };
        // The host copies live until the end of the call, past every synchronize.
        let (a_host, b_host) = (storage(d.a_operand), storage(d.b_operand));
        let a_dev = s.clone_htod(&*a_host).map_err(|e| drv("upload A", e))?;
        let b_dev = s.clone_htod(&*b_host).map_err(|e| drv("upload B", e))?;
        // A recipe's scale tensors, as torch's tensors hold them; the scale pointers point at them.
        let vectors = match inputs.scales {
            None => None,
            Some(x) => Some((
                s.clone_htod(&x.a_bytes[..]).map_err(|e| drv("upload scale_a", e))?,
                s.clone_htod(&x.b_bytes[..]).map_err(|e| drv("upload scale_b", e))?,
            )),
        };
        let mut addrs = self.scale_addrs();
        if let Some((va, vb)) = &vectors {
            let ((pa, _ra), (pb, _rb)) = (va.device_ptr(s), vb.device_ptr(s));
            (addrs.a, addrs.b) = (pa, pb);
        }
        let call = LtCall::new(&d, addrs)?;
        let values = [inputs.scale_a, inputs.scale_b, inputs.scale_result.unwrap_or(1.0), 0.0];
        s.memcpy_htod(&values, &mut self.scales).map_err(|e| drv("scales", e))?;
        let result = match call.heuristic(self.handle, &d)? {
            HeuristicResult::Rejected(status) => return Ok(RunOutcome::Rejected { stage: "heuristic", status }),
            HeuristicResult::Algo(r) => r,
        };
        let algo = algo_info(&result)?;
        let out_bytes = p.m * p.n * p.out.width();
        let mut results = Vec::with_capacity(runs);
        let mut amax = Vec::new();
        for run in 0..runs.max(1) {
            let out = s.alloc_zeros::<u8>(out_bytes.max(1)).map_err(|e| drv("output", e))?;
            // The amax starts from 0 in every run, so each run's value is its own.
            s.memcpy_htod(&values, &mut self.scales).map_err(|e| drv("scales", e))?;
            let status = {
                let (a_base, _ra) = a_dev.device_ptr(s);
                let (b_base, _rb) = b_dev.device_ptr(s);
                let (d_ptr, _rd) = out.device_ptr(s);
                let (w_ptr, _rw) = self.workspace.device_ptr(s);
                for (what, base) in [("A", a_base), ("B", b_base), ("D", d_ptr)] {
                    // The descriptor's alignments (TE's MIN_ALIGNMENT preferences) assume 256-byte
                    // aligned allocations, as cudaMalloc gives.
                    if base % 256 != 0 {
                        return Err(RecordError::Cuda(format!("the allocation of {what} is not 256-byte aligned")));
                    }
                }
                let (a_ptr, b_ptr) = (a_base + d.a_offset, b_base + d.b_offset);
                let c_ptr = match d.c_pointer {
                    CPointer::Null => std::ptr::null(),
                    CPointer::D => d_ptr as usize as *const c_void,
                };
                let (alpha, beta) = (d.alpha, d.beta);
                // SAFETY: every pointer is inside a live device allocation of the size its layout needs (A,
                // B uploaded above with their storage offsets and padding; D (and C = D, never read with beta
                // 0) m * n elements of the out dtype; the workspace MAX_WORKSPACE bytes); alpha and beta are
                // host fp32 values (pointer mode host, the default).
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
                        c_ptr,
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
            if d.writes_amax() {
                let back = s.clone_dtoh(&self.scales).map_err(|e| drv("download the amax", e))?;
                amax.push(back[3].to_bits());
            }
        }
        Ok(RunOutcome::Ran { algo, results, amax })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_turns_panics_into_errors() {
        let r: Result<(), RecordError> = guard("test", || panic!("Unable to dynamically load the \"cuda\" library"));
        let e = r.unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("Unable to dynamically load"), "{e}");
    }
}
