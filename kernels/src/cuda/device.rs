//! The device side of the CUDA backend: open the first GPU, compile the kernels for its architecture with NVRTC, run
//! the self-test gate, and serve chains as a [`ChainEngine`].

// Nothing here panics when CUDA is missing: the driver and NVRTC are probed first, cudarc calls are wrapped in
// `catch_unwind`, and every failure is a reason string. A kernel is used only after it has reproduced the model's bits
// on every case of the gate (`super::gate_cases`); a launch that fails later makes the engine compute that call with
// its fallback engine (the CPU backend) and record a fallback warning.

use super::{fallback_warning, gate_cases, nvrtc, ChainParams, KernelReport, KERNELS};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};
use mmaemu_model::accumulate::{ChainEngine, Operands};
use mmaemu_model::format::Format;
use mmaemu_model::preset::Preset;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

// SAFETY: ChainParams is #[repr(C)] with eight i32 fields, the layout of `struct ChainParams` in chain.cu.
unsafe impl DeviceRepr for ChainParams {}

/// Run `f`, turning a panic (cudarc panics when a library or symbol is missing) into an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(format!("{what}: cudarc panicked")))
}

/// Whether the CUDA driver library can be loaded, or why not.
pub fn probe_driver() -> Result<(), String> {
    // SAFETY: is_culib_present only tries to load the library by name.
    let present = catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false);
    if present {
        Ok(())
    } else {
        Err("no CUDA driver (libcuda.so not found)".into())
    }
}

/// One GPU with the kernels loaded.
pub struct CudaDevice {
    _ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    funcs: Vec<CudaFunction>,
    /// The GPU's name.
    pub name: String,
    /// Compute capability (major, minor).
    pub cc: (i32, i32),
    /// The virtual architecture the kernels were compiled for.
    pub arch: &'static str,
}

impl CudaDevice {
    /// Open GPU `ordinal`, compile the kernels for its architecture and load them.
    pub fn open(ordinal: usize) -> Result<CudaDevice, String> {
        probe_driver()?;
        nvrtc::probe()?;
        guarded("CUDA initialisation", || {
            let ctx = CudaContext::new(ordinal).map_err(|e| format!("no usable CUDA device {ordinal}: {e:?}"))?;
            let cc = ctx.compute_capability().map_err(|e| format!("compute capability: {e:?}"))?;
            let name = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
            let arch: &'static str = Box::leak(format!("compute_{}{}", cc.0, cc.1).into_boxed_str());
            let ptx = nvrtc::compile(arch)?;
            let module = ctx.load_module(ptx).map_err(|e| format!("loading the kernels' PTX for {arch}: {e:?}"))?;
            let mut funcs = Vec::new();
            for k in KERNELS {
                funcs.push(module.load_function(k.function).map_err(|e| format!("kernel {}: {e:?}", k.name))?);
            }
            let stream = ctx.default_stream();
            Ok(CudaDevice { _ctx: ctx, stream, funcs, name, cc, arch })
        })
    }

    /// Run kernel `kernel` (an index into [`KERNELS`]): `m * n` chains of length `k` from +0.
    pub fn run(&self, kernel: usize, p: &ChainParams, ops: &Operands<'_>) -> Result<Vec<f32>, String> {
        let Operands { a, b, m, n, k: l, .. } = *ops;
        let kname = KERNELS[kernel].name;
        KERNELS[kernel].serves(p)?;
        if a.len() != m * l || b.len() != n * l {
            return Err("operand sizes do not match the shape".into());
        }
        if m == 0 || n == 0 {
            return Ok(Vec::new());
        }
        if l == 0 {
            return Ok(vec![0.0; m * n]);
        }
        let tile = KERNELS[kernel].tile;
        let (gx, gy) = (n.div_ceil(tile), m.div_ceil(tile));
        let fits = |x: usize| i32::try_from(x).is_ok();
        if !fits(m) || !fits(n) || !fits(l) || gx > i32::MAX as usize || gy > 65535 {
            return Err(format!("shape [{m}, {n}] x {l} exceeds the kernel's launch limits"));
        }
        let (mi, ni, li) = (m as i32, n as i32, l as i32);
        let cfg = LaunchConfig { grid_dim: (gx as u32, gy as u32, 1), block_dim: (16, 16, 1), shared_mem_bytes: 0 };
        guarded("kernel launch", || {
            fn err(kname: &'static str, what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> String {
                move |e| format!("{kname}: {what}: {e:?}")
            }
            let da = self.stream.clone_htod(a).map_err(err(kname, "copy A"))?;
            let db = self.stream.clone_htod(b).map_err(err(kname, "copy B"))?;
            let mut dout = self.stream.alloc_zeros::<f32>(m * n).map_err(err(kname, "alloc"))?;
            let mut launch = self.stream.launch_builder(&self.funcs[kernel]);
            launch.arg(p).arg(&da).arg(&db).arg(&mut dout).arg(&mi).arg(&ni).arg(&li);
            // SAFETY: the arguments match the kernel's signature (ChainParams, two byte pointers of m*l and
            // n*l codes, an fp32 pointer of m*n outputs, m, n, l) and the grid covers the output.
            unsafe { launch.launch(cfg) }.map_err(err(kname, "launch"))?;
            self.stream.clone_dtoh(&dout).map_err(err(kname, "copy out"))
        })
    }

    /// The self-test gate: each of `kernels` (indices into [`KERNELS`]) on every case it serves, compared
    /// bit for bit with the model.
    pub fn self_test(&self, kernels: &[usize]) -> Vec<KernelReport> {
        let cases: Vec<_> = gate_cases().into_iter().map(|c| (c.expected(), c)).collect();
        let mut reports = Vec::new();
        for &ki in kernels {
            let mut report = KernelReport { kernel: KERNELS[ki].name, cases: 0, result: Ok(()) };
            for (expected, case) in &cases {
                let p = match ChainParams::new(&case.preset, case.fa, case.fb) {
                    Ok(p) if KERNELS[ki].serves(&p).is_ok() => p,
                    _ => continue,
                };
                report.cases += 1;
                let got = self.run(ki, &p, &case.operands());
                let mismatch = match got {
                    Err(e) => Some(e),
                    Ok(got) => got.iter().zip(expected).position(|(g, e)| g.to_bits() != *e).map(|o| {
                        format!(
                            "case '{}': output ({}, {}) is {:#010x}, the model gives {:#010x}",
                            case.name,
                            o / case.n,
                            o % case.n,
                            got[o].to_bits(),
                            expected[o]
                        )
                    }),
                };
                if let Some(why) = mismatch {
                    report.result = Err(why);
                    break;
                }
            }
            reports.push(report);
        }
        reports
    }
}

/// The CUDA backend as a [`ChainEngine`]: the kernels that passed the gate, fastest first, with a fallback
/// engine (the CPU backend) for a launch that fails. Made by [`super::Gpu::engine`].
pub struct CudaEngine {
    pub(super) device: Arc<Mutex<CudaDevice>>,
    pub(super) kernels: Vec<usize>,
    pub(super) name: String,
    pub(super) fallback: Arc<dyn ChainEngine + Send + Sync>,
    pub(super) warnings: Arc<Mutex<Vec<String>>>,
}

impl ChainEngine for CudaEngine {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn chains(&self, preset: &Preset, ops: &Operands<'_>) -> Vec<f32> {
        let why = match ChainParams::new(preset, ops.fa, ops.fb) {
            Err(e) => e,
            Ok(p) => match self.kernels.iter().copied().find(|&k| KERNELS[k].serves(&p).is_ok()) {
                None => format!("no kernel that passed the gate serves preset '{}'", preset.name()),
                Some(k) => {
                    let got = match self.device.lock() {
                        Ok(d) => d.run(k, &p, ops),
                        Err(_) => Err("the device lock is poisoned".into()),
                    };
                    match got {
                        Ok(out) => return out,
                        Err(e) => e,
                    }
                }
            },
        };
        if let Ok(mut w) = self.warnings.lock() {
            w.push(fallback_warning(&why));
        }
        self.fallback.chains(preset, ops)
    }

    fn serves(&self, preset: &Preset, fa: Format, fb: Format) -> bool {
        ChainParams::new(preset, fa, fb).is_ok_and(|p| self.kernels.iter().any(|&k| KERNELS[k].serves(&p).is_ok()))
    }

    /// The scan runs on the CPU: the fallback's.
    fn any_nonfinite(&self, f: Format, codes: &[u8]) -> bool {
        self.fallback.any_nonfinite(f, codes)
    }
}
