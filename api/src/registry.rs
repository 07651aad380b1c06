//! Backend selection (docs/reference.md §9.5, §9.3): the registry of chain engines the facade passes to the model's
//! `scaled_mm` ([`mmaemu_model::scaled_mm::Backends`]), and that `replay --backend`, `bench` and `report` use.

// Names:
// - `reference`: the model (`mmaemu_model::ReferenceEngine`);
// - `cpu`: the fast CPU backend (`mmaemu_kernels::CpuEngine`) at the best SIMD level of this CPU that passes its self-check;
//   `cpu:avx512`, `cpu:avx2`, `cpu:portable`: one level;
// - `cuda`: the CUDA backend (`mmaemu_kernels::cuda`) with every kernel that passed its self-test gate on the device, fastest
//   first; `cuda:<kernel>` (`cuda:narrow`, `cuda:tiled`, `cuda:generic`): one kernel;
// - `auto`: the value of MMAEMU_BACKEND if it is set and not empty (used as is: surrounding spaces make it invalid),
//   else the fastest backend that is available and has passed its self-check — cuda, then cpu (best level first), then
//   reference. Why each faster backend was skipped is reported in `CallPlan.fallbacks`; a self-check or gate failure
//   also raises a BackendFallbackWarning.
//
// Where a call's tensors live is its `Placement` (see there).
//
// Each CPU level runs its self-check (`mmaemu_kernels::selfcheck`: adversarial GEMMs against the model) once per process, at its
// first use; a GPU runs its gate (every kernel on `mmaemu_kernels::cuda::gate_cases`) once per process, when it is first opened.
// An explicit name whose backend is unavailable or failed its check raises BackendUnavailableError; an unknown name is
// an invalid argument.

use crate::env;
use mmaemu_kernels::cuda::{self, Gpu, GpuEngine, KernelReport, KERNELS};
use mmaemu_kernels::{selfcheck, CpuEngine, SimdLevel};
use mmaemu_model::scaled_mm::{Backends, Selected};
use mmaemu_model::warning::{Warning, WarningKind};
use mmaemu_model::{Category, ChainEngine, Error, Format, Preset, ReferenceEngine, Result};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Why the GPU backend is skipped for host tensors.
pub const CUDA_SKIP: &str = "cuda: tensors on cpu";

/// Where a call's tensors live (explain's `--device`). Every operand of this library is a host array; the CUDA
/// backend copies it to the device. The default placement ([`Placement::auto`], explain's `--device auto`) is GPU 0
/// when this build has the CUDA backend, MMAEMU_DISABLE_CUDA is not set and the GPU opens (driver, NVRTC, kernels
/// compiled and loaded), else the host; on the host the GPU backend is skipped with "cuda: tensors on cpu", as in
/// the specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Host memory: the GPU backend is skipped.
    Host,
    /// GPU `n`.
    Gpu(usize),
}

impl Placement {
    /// `--device auto`: GPU 0 if it can be used (see [`Placement`]), else the host.
    pub fn auto() -> Placement {
        match registry().gpu(0).gpu {
            Ok(_) => Placement::Gpu(0),
            Err(_) => Placement::Host,
        }
    }

    /// A `--device` value: `auto`, `cpu`, `cuda` (GPU 0) or `cuda:N`. Err: a usage error (unknown value) or
    /// a device that cannot be used (`Ok(Err(why))`).
    pub fn parse(s: &str) -> std::result::Result<std::result::Result<Placement, String>, String> {
        let ordinal = match s {
            "auto" => return Ok(Ok(Placement::auto())),
            "cpu" => return Ok(Ok(Placement::Host)),
            "cuda" => 0,
            _ => match s.strip_prefix("cuda:").and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => n,
                None => return Err(format!("unknown device '{s}'; expected auto, cpu, cuda or cuda:N")),
            },
        };
        Ok(match &registry().gpu(ordinal).gpu {
            Ok(_) => Ok(Placement::Gpu(ordinal)),
            Err(why) => Err(why.clone()),
        })
    }

    /// `cpu` or `cuda:N`.
    pub fn name(self) -> String {
        match self {
            Placement::Host => "cpu".into(),
            Placement::Gpu(n) => format!("cuda:{n}"),
        }
    }
}

/// One SIMD level of the CPU backend and its self-check verdict (computed at first use; a failure is kept only
/// where the calling thread did not flush subnormals, see [`Registry::checked`]).
struct CpuLevel {
    engine: CpuEngine,
    check: Mutex<Option<std::result::Result<(), String>>>,
}

/// One GPU: opened (or why not), its gate reports, and its engines (`cuda` first, then `cuda:<kernel>`
/// for each kernel that passed).
pub struct GpuSlot {
    /// The GPU, or why it cannot be used.
    pub gpu: std::result::Result<Gpu, String>,
    /// The gate's report per kernel (empty when the GPU did not open).
    pub reports: Vec<KernelReport>,
    engines: Vec<GpuEngine>,
}

impl GpuSlot {
    fn open(ordinal: usize, fallback: impl FnOnce() -> Arc<dyn ChainEngine + Send + Sync>) -> GpuSlot {
        let gpu = match env::cuda_disabled() {
            Ok(false) => Gpu::open(ordinal),
            Ok(true) => Err("disabled by MMAEMU_DISABLE_CUDA".to_string()),
            Err(e) => Err(e.message().to_string()),
        };
        let Ok(g) = &gpu else {
            return GpuSlot { gpu, reports: vec![], engines: vec![] };
        };
        let reports = g.self_test(&(0..KERNELS.len()).collect::<Vec<_>>());
        let passed: Vec<usize> = (0..KERNELS.len()).filter(|&k| reports[k].result.is_ok()).collect();
        let mut engines = Vec::new();
        if !passed.is_empty() {
            let fallback = fallback();
            engines.push(g.engine("cuda", passed.clone(), fallback.clone()));
            for &k in &passed {
                engines.push(g.engine(&format!("cuda:{}", KERNELS[k].name), vec![k], fallback.clone()));
            }
        }
        GpuSlot { gpu, reports, engines }
    }

    /// The engine called `name` (`cuda` or `cuda:<kernel>`), if its kernels passed the gate.
    fn engine(&self, name: &str) -> Option<&GpuEngine> {
        self.engines.iter().find(|e| e.engine.name() == name)
    }

    /// Why the gate failed, for the kernels of `name`: "kernel K: first failure; ...".
    fn gate_failure(&self, name: &str) -> String {
        self.reports
            .iter()
            .filter(|r| name == "cuda" || name == format!("cuda:{}", r.kernel))
            .filter_map(|r| r.result.as_ref().err().map(|e| format!("kernel {}: {e}", r.kernel)))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Fallback warnings the engines recorded after selection (launches that failed).
    pub fn warnings(&self) -> Vec<String> {
        self.engines.iter().flat_map(|e| e.warnings()).collect()
    }
}

/// The backends of this build.
pub struct Registry {
    cpu: Vec<CpuLevel>,
    gpus: Mutex<BTreeMap<usize, &'static GpuSlot>>,
}

/// The process-wide registry (self-check verdicts and opened GPUs are cached in it).
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::new)
}

fn unavailable(msg: String) -> Error {
    Error::new(Category::BackendUnavailable, msg)
}

/// The registry with a fixed placement, for `scaled_mm` and explain (`--device`).
pub struct OnPlacement(pub Placement);

impl Backends for OnPlacement {
    fn select(&self, name: &str, preset: &Preset, fa: Format, fb: Format) -> Result<Selected<'_>> {
        registry().resolve_for(name, Some(self.0), Some((preset, fa, fb)))
    }
}

impl Registry {
    fn new() -> Registry {
        let cpu = env::simd_levels()
            .into_iter()
            .map(|level| CpuLevel { engine: CpuEngine::with_level(level), check: Mutex::new(None) })
            .collect();
        Registry { cpu, gpus: Mutex::new(BTreeMap::new()) }
    }

    /// The self-check verdict of a CPU level (run now if it has not run yet). The check runs in the IEEE state
    /// whatever the caller's ([`selfcheck::run`]); should it fail all the same while the calling thread is in a
    /// state the model refuses (it flushes subnormals or rounds off nearest), the failure is not kept, so that a
    /// later call from a thread in the default state checks again.
    fn checked(level: &CpuLevel) -> std::result::Result<(), String> {
        let mut verdict = level.check.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = verdict.as_ref() {
            return v.clone();
        }
        let refused = mmaemu_model::fpenv::refuses();
        let v = selfcheck::run(&level.engine);
        if v.is_ok() || !refused {
            *verdict = Some(v.clone());
        }
        v
    }

    /// GPU `ordinal`: opened and gated at its first use, once per process.
    pub fn gpu(&self, ordinal: usize) -> &'static GpuSlot {
        let mut gpus = self.gpus.lock().unwrap_or_else(|p| p.into_inner());
        gpus.entry(ordinal).or_insert_with(|| Box::leak(Box::new(GpuSlot::open(ordinal, || self.gpu_fallback()))))
    }

    /// The engine a GPU engine computes with when a launch fails: the best CPU level that passed its
    /// self-check, else the model.
    fn gpu_fallback(&self) -> Arc<dyn ChainEngine + Send + Sync> {
        match self.cpu.iter().find(|l| Registry::checked(l).is_ok()) {
            Some(l) => Arc::new(l.engine),
            None => Arc::new(ReferenceEngine),
        }
    }

    fn selected(engine: &dyn ChainEngine, fallbacks: Vec<String>, warnings: Vec<Warning>) -> Selected<'_> {
        Selected { name: engine.name(), engine, fallbacks, warnings }
    }

    /// The backend a name selects with the default placement ([`Placement::auto`]), whatever the call.
    pub fn resolve(&self, name: &str) -> Result<Selected<'_>> {
        self.resolve_for(name, None, None)
    }

    /// The backend a name selects for tensors at `placement` (None: [`Placement::auto`] for `auto`, decided
    /// only when the GPU backend is considered; GPU 0 for an explicit `cuda` name) and, when given, a call's preset and formats
    /// (the GPU kernels serve presets whose block sum fits 64 bits), with the selection's fallbacks and
    /// warnings (see the comment at the top of this file).
    pub fn resolve_for(
        &self,
        name: &str,
        placement: Option<Placement>,
        call: Option<(&Preset, Format, Format)>,
    ) -> Result<Selected<'_>> {
        env::simd_limit()?;
        env::cuda_disabled()?;
        if name == "auto" {
            if let Some(from_env) = env::backend()? {
                // An error of the variable's value names the variable (and its value).
                return self
                    .resolve_name(&from_env, placement, call)
                    .map_err(|e| Error::new(e.category(), format!("MMAEMU_BACKEND={from_env:?}: {}", e.message())));
            }
        }
        self.resolve_name(name, placement, call)
    }

    /// [`Registry::resolve_for`] after MMAEMU_BACKEND was applied: `auto` is the automatic choice.
    fn resolve_name(
        &self,
        name: &str,
        placement: Option<Placement>,
        call: Option<(&Preset, Format, Format)>,
    ) -> Result<Selected<'_>> {
        match name {
            "auto" => {
                let mut warnings = Vec::new();
                let skip = match self.gpu_engine("cuda", placement.unwrap_or_else(Placement::auto), call) {
                    Ok(e) => return Ok(Registry::selected(e, vec![], vec![])),
                    Err(GpuSkip::ByDesign(why)) => why,
                    Err(GpuSkip::Failed(why)) => {
                        warnings.push(Warning::new(
                            WarningKind::BackendFallback,
                            format!("{why}; using the next backend (the results are the same, only slower)"),
                        ));
                        why
                    }
                };
                Ok(self.auto_cpu(vec![skip], warnings))
            }
            "reference" => Ok(Registry::selected(&ReferenceEngine, vec![], vec![])),
            "cpu" => {
                let mut why = Vec::new();
                for level in &self.cpu {
                    match Registry::checked(level) {
                        Ok(()) => return Ok(Registry::selected(&level.engine, vec![], vec![])),
                        Err(e) => why.push(format!("{}: self-check failed: {e}", level.engine.name())),
                    }
                }
                Err(unavailable(format!("backend 'cpu' unavailable: {}", why.join("; "))))
            }
            n if n.starts_with("cpu:") => {
                let level_name = &n[4..];
                if !SimdLevel::all_names().contains(&level_name) {
                    return Err(Error::invalid_value(format!(
                        "unknown CPU backend '{n}'; expected one of {}",
                        SimdLevel::all_names().map(|l| format!("'cpu:{l}'")).join(", ")
                    )));
                }
                let Some(level) = self.cpu.iter().find(|l| l.engine.level().name() == level_name) else {
                    let why = match env::simd_limit() {
                        Ok(Some(limit)) => format!("MMAEMU_SIMD={limit:?} offers no level above {limit}"),
                        _ => format!("this CPU does not support {level_name}"),
                    };
                    return Err(unavailable(format!("backend '{n}' unavailable: {why}")));
                };
                match Registry::checked(level) {
                    Ok(()) => Ok(Registry::selected(&level.engine, vec![], vec![])),
                    Err(e) => Err(unavailable(format!("backend '{n}' unavailable: self-check failed: {e}"))),
                }
            }
            // An explicit GPU name without a placement means GPU 0: the operands are copied there.
            n if n == "cuda" || n.starts_with("cuda:") => {
                match self.gpu_engine(n, placement.unwrap_or(Placement::Gpu(0)), call) {
                    Ok(e) => Ok(Registry::selected(e, vec![], vec![])),
                    Err(GpuSkip::ByDesign(why) | GpuSkip::Failed(why)) => {
                        let why = why.strip_prefix(&format!("{n}: ")).unwrap_or(&why).to_string();
                        Err(unavailable(format!("backend '{n}' unavailable: {why}")))
                    }
                }
            }
            n => Err(Error::invalid_value(format!(
                "unknown backend '{n}'; expected 'auto', 'reference', 'cpu', 'cpu:<simd>' (avx512, avx2, portable), \
                 'cuda' or 'cuda:<kernel>'"
            ))),
        }
    }

    /// The GPU engine `name` (`cuda`, `cuda:<kernel>`) for tensors at `placement` and the call, or why it
    /// is skipped: by design (host tensors, no device, a preset or kernel it does not serve) or because a
    /// gate failed. The reason starts with `name: `.
    fn gpu_engine(
        &self,
        name: &str,
        placement: Placement,
        call: Option<(&Preset, Format, Format)>,
    ) -> std::result::Result<&dyn ChainEngine, GpuSkip> {
        let by_design = |why: &str| GpuSkip::ByDesign(format!("{name}: {why}"));
        let kernel = match name.strip_prefix("cuda:") {
            None => None,
            Some(k) => match cuda::kernel_index(k) {
                Some(i) => Some(i),
                None => {
                    let names: Vec<_> = KERNELS.iter().map(|k| format!("'cuda:{}'", k.name)).collect();
                    return Err(by_design(&format!("unknown kernel '{k}'; the kernels are {}", names.join(", "))));
                }
            },
        };
        let Placement::Gpu(ordinal) = placement else {
            return Err(by_design("tensors on cpu"));
        };
        let slot = self.gpu(ordinal);
        if let Err(why) = &slot.gpu {
            return Err(by_design(why));
        }
        let engine: Option<&dyn ChainEngine> = slot.engine(name).map(|e| e.engine.as_ref() as &dyn ChainEngine);
        let failed = || GpuSkip::Failed(format!("{name}: self-test failed: {}", slot.gate_failure(name)));
        if let Some((preset, fa, fb)) = call {
            // Outside the domain of every kernel of this name: a skip by design; inside it but not served by
            // a kernel that passed its gate: a gate failure.
            let params = cuda::ChainParams::new(preset, fa, fb).map_err(|e| by_design(&e))?;
            let domain: Vec<usize> = kernel.map_or_else(|| (0..KERNELS.len()).collect(), |k| vec![k]);
            if !domain.iter().any(|&k| KERNELS[k].serves(&params).is_ok()) {
                let why = match kernel {
                    Some(k) => KERNELS[k].serves(&params).err().unwrap_or_default(),
                    None => format!("no kernel serves preset '{}'", preset.name()),
                };
                return Err(by_design(&why));
            }
            if !engine.is_some_and(|e| e.serves(preset, fa, fb)) {
                return Err(failed());
            }
        }
        engine.ok_or_else(failed)
    }

    /// `auto` after the GPU: the CPU levels best first, then the model.
    fn auto_cpu(&self, mut fallbacks: Vec<String>, mut warnings: Vec<Warning>) -> Selected<'_> {
        for level in &self.cpu {
            match Registry::checked(level) {
                Ok(()) => return Registry::selected(&level.engine, fallbacks, warnings),
                Err(e) => {
                    let why = format!("{}: self-check failed: {e}", level.engine.name());
                    warnings.push(Warning::new(
                        WarningKind::BackendFallback,
                        format!("{why}; using the next backend (the results are the same, only slower)"),
                    ));
                    fallbacks.push(why);
                }
            }
        }
        Registry::selected(&ReferenceEngine, fallbacks, warnings)
    }

    /// Every backend with its availability, for `mmaemu info`, the report and the trials. Runs the CPU
    /// self-checks that have not run yet and opens GPU 0 (unless MMAEMU_DISABLE_CUDA is set).
    pub fn describe(&self) -> Vec<(String, Availability)> {
        use Availability::{Available, GateFailed, Unavailable};
        let mut v = vec![("reference".to_string(), Available("the model, on the host".to_string()))];
        for level in &self.cpu {
            let status = match Registry::checked(level) {
                Ok(()) => Available(format!(
                    "CPU kernels ({}, panels of {} outputs), self-check passed",
                    level.engine.level(),
                    level.engine.level().width()
                )),
                Err(e) => GateFailed(format!("self-check failed: {e}")),
            };
            v.push((level.engine.name(), status));
        }
        let slot = self.gpu(0);
        match &slot.gpu {
            Err(why) => v.push(("cuda".to_string(), Unavailable(why.clone()))),
            Ok(g) => {
                let passed = slot.reports.iter().filter(|r| r.result.is_ok()).count();
                let status = if passed > 0 {
                    Available(format!(
                        "{passed} kernel(s) on GPU 0, {}, validated on this device by the gate",
                        g.description()
                    ))
                } else {
                    GateFailed(slot.gate_failure("cuda"))
                };
                v.push(("cuda".to_string(), status));
                for r in &slot.reports {
                    let status = match &r.result {
                        Ok(()) => {
                            Available(format!("GPU 0, {}, self-test passed ({} cases)", g.description(), r.cases))
                        }
                        Err(e) => GateFailed(format!("self-test failed: {e}")),
                    };
                    v.push((format!("cuda:{}", r.kernel), status));
                }
            }
        }
        v
    }
}

/// Whether a backend can be used: the one answer `info`, the report and the trials give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// Usable; says what it is and how it was checked.
    Available(String),
    /// Not in this build or on this machine; says why (no driver, no such CPU feature, disabled).
    Unavailable(String),
    /// Present but it failed its self-check or gate; carries the evidence (the first failing case).
    GateFailed(String),
}

impl Availability {
    /// Can the backend be selected?
    pub fn is_available(&self) -> bool {
        matches!(self, Availability::Available(_))
    }
}

impl std::fmt::Display for Availability {
    /// `available: how`, or `unavailable - why` (the evidence of a failed check says "self-check failed").
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Availability::Available(how) => write!(f, "available: {how}"),
            Availability::Unavailable(why) | Availability::GateFailed(why) => write!(f, "unavailable - {why}"),
        }
    }
}

/// Why a GPU engine is not used for a call.
enum GpuSkip {
    /// A silent skip (§9.5): host tensors, no device, a preset or kernel it does not serve.
    ByDesign(String),
    /// A gate failure: reported with a BackendFallbackWarning under `auto`.
    Failed(String),
}

impl Backends for Registry {
    fn select(&self, name: &str, preset: &Preset, fa: Format, fb: Format) -> Result<Selected<'_>> {
        self.resolve_for(name, None, Some((preset, fa, fb)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let r = registry();
        assert_eq!(r.resolve("reference").unwrap().name, "reference");
        let cpu = r.resolve("cpu").unwrap();
        assert!(cpu.name.starts_with("cpu:"));
        assert_eq!(r.resolve("cpu:portable").unwrap().name, "cpu:portable");
        let e = r.resolve("cuda").err().unwrap();
        assert_eq!(e.category(), Category::BackendUnavailable);
        assert!(r.resolve("cpu:sse9").is_err());
        assert!(r.resolve("gpu").is_err());
    }

    /// A thread that flushes subnormals (MXCSR.FTZ and DAZ) makes the first call of a fresh registry: the CPU
    /// levels' self-checks run in the IEEE state and pass, the caller's state is as it was after the call, and once
    /// the thread clears the flags `auto` and `cpu` still choose a CPU kernel level, the best one.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_flushing_first_caller_is_not_remembered() {
        use mmaemu_kernels::fpstate::mxcsr;
        std::thread::spawn(|| {
            let set = |csr: u32| {
                // SAFETY: LDMXCSR of a value read from MXCSR with only its FTZ (15) and DAZ (6) bits changed.
                unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags)) };
            };
            let clear = mxcsr();
            let r = Registry::new();
            let best = format!("cpu:{}", env::simd_levels()[0].name());
            set(clear | 0x8040);
            let first = r.resolve("cpu").map(|s| s.name);
            let flags_after = mxcsr() & 0x8040;
            set(clear);
            assert_eq!(flags_after, 0x8040, "the caller's FTZ and DAZ were not restored after the call");
            assert_eq!(first.ok().as_deref(), Some(best.as_str()), "the first call, from a flushing thread");
            // `auto` after the GPU (MMAEMU_BACKEND left aside).
            assert_eq!(r.auto_cpu(vec![], vec![]).name, best);
            assert_eq!(r.resolve("cpu").map(|s| s.name).ok().as_deref(), Some(best.as_str()));
            for level in &r.cpu {
                assert_eq!(Registry::checked(level), Ok(()), "{}", level.engine.name());
            }
        })
        .join()
        .unwrap();
    }
}
