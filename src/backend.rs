//! Backend selection (behaviour.md §9.5, §9.3): the registry of chain engines the facade passes to the
//! model's `scaled_mm` ([`mmaemu_model::scaled_mm::Backends`]), and that `replay --backend` and `bench`
//! use.
//!
//! Names:
//! - `reference`: the model ([`mmaemu_model::ReferenceEngine`]);
//! - `cpu`: the fast CPU backend ([`mmaemu_kernels::CpuEngine`]) at the best SIMD level of this CPU that
//!   passes its self-check; `cpu:avx512`, `cpu:avx2`, `cpu:portable`: one level;
//! - `cuda`, `cuda:<kernel>`: the slot of the GPU backend; every call of this library has host operands,
//!   so it is unavailable ("tensors on cpu");
//! - `auto`: the value of MMAEMU_BACKEND if it is set and not empty (used as is: surrounding spaces make
//!   it invalid), else the fastest backend that is available and has passed its self-check — cuda, then
//!   cpu (best level first), then reference. Why each faster backend was skipped is reported in
//!   `CallPlan.fallbacks`; a self-check failure also raises a BackendFallbackWarning.
//!
//! Each CPU level runs its self-check ([`mmaemu_kernels::selfcheck`]: adversarial GEMMs against the
//! model) once per process, at its first use. An explicit name whose backend is unavailable or failed its
//! self-check raises BackendUnavailableError; an unknown name is an invalid argument.

use mmaemu_kernels::{selfcheck, CpuEngine, SimdLevel};
use mmaemu_model::scaled_mm::{Backends, Selected};
use mmaemu_model::warning::{Warning, WarningKind};
use mmaemu_model::{Category, ChainEngine, Error, Format, Preset, ReferenceEngine, Result};
use std::sync::OnceLock;

/// Why the GPU backend is skipped: every operand of this library is a host array.
pub const CUDA_SKIP: &str = "cuda: tensors on cpu";

/// One SIMD level of the CPU backend and its self-check verdict (computed at first use).
struct CpuLevel {
    engine: CpuEngine,
    check: OnceLock<std::result::Result<(), String>>,
}

/// The backends of this build.
pub struct Registry {
    cpu: Vec<CpuLevel>,
}

/// The process-wide registry (self-check verdicts are cached in it).
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::new)
}

fn unavailable(msg: String) -> Error {
    Error::new(Category::BackendUnavailable, msg)
}

impl Registry {
    fn new() -> Registry {
        let cpu = SimdLevel::available()
            .into_iter()
            .map(|level| CpuLevel { engine: CpuEngine::with_level(level), check: OnceLock::new() })
            .collect();
        Registry { cpu }
    }

    /// The self-check verdict of a CPU level (run now if it has not run yet).
    fn checked(level: &CpuLevel) -> std::result::Result<(), String> {
        level.check.get_or_init(|| selfcheck::run(&level.engine)).clone()
    }

    fn selected(engine: &dyn ChainEngine, fallbacks: Vec<String>, warnings: Vec<Warning>) -> Selected<'_> {
        Selected { name: engine.name(), engine, fallbacks, warnings }
    }

    /// The backend a name selects (see the module documentation), with the fallbacks and warnings of the
    /// selection.
    pub fn resolve(&self, name: &str) -> Result<Selected<'_>> {
        let from_env;
        let name = if name == "auto" {
            from_env = std::env::var("MMAEMU_BACKEND").unwrap_or_default();
            if from_env.is_empty() {
                "auto"
            } else {
                from_env.as_str()
            }
        } else {
            name
        };
        match name {
            "auto" => Ok(self.auto()),
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
                    return Err(unavailable(format!(
                        "backend '{n}' unavailable: this CPU does not support {level_name}"
                    )));
                };
                match Registry::checked(level) {
                    Ok(()) => Ok(Registry::selected(&level.engine, vec![], vec![])),
                    Err(e) => Err(unavailable(format!("backend '{n}' unavailable: self-check failed: {e}"))),
                }
            }
            n if n == "cuda" || n.starts_with("cuda:") => {
                Err(unavailable(format!("backend '{n}' unavailable: tensors on cpu")))
            }
            n => Err(Error::invalid_value(format!(
                "unknown backend '{n}'; expected 'auto', 'reference', 'cpu', 'cpu:<simd>' (avx512, avx2, portable), \
                 'cuda' or 'cuda:<kernel>'"
            ))),
        }
    }

    /// `auto`: cuda (the slot: skipped for host operands), then the CPU levels best first, then the model.
    fn auto(&self) -> Selected<'_> {
        let mut fallbacks = vec![CUDA_SKIP.to_string()];
        let mut warnings = Vec::new();
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

    /// Every backend with its status, for `mmaemu info`: (name, "available: how" or "unavailable - why").
    /// Runs the CPU self-checks that have not run yet.
    pub fn describe(&self) -> Vec<(String, String)> {
        let mut v = vec![("reference".to_string(), "available: the model, on the host".to_string())];
        for level in &self.cpu {
            let status = match Registry::checked(level) {
                Ok(()) => format!(
                    "available: CPU kernels ({}, panels of {} outputs), self-check passed",
                    level.engine.level(),
                    level.engine.level().width()
                ),
                Err(e) => format!("unavailable - self-check failed: {e}"),
            };
            v.push((level.engine.name(), status));
        }
        v.push(("cuda".to_string(), "unavailable - no CUDA backend in this build".to_string()));
        v
    }
}

impl Backends for Registry {
    fn select(&self, name: &str, _preset: &Preset, _fa: Format, _fb: Format) -> Result<Selected<'_>> {
        self.resolve(name)
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
}
