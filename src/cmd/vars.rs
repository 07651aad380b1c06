//! The `MMAEMU_*` variables and the name-valued flags, checked before a command runs: a value the library
//! cannot use is a usage error (exit 2) that names the variable or flag, never a silent default.

use super::CommandError;
use mmaemu_kernels::registry::{registry, Placement};
use mmaemu_model::{Category, InvalidKind};

/// Every variable's value, checked; the first bad one is the error.
pub fn check_env() -> Result<(), CommandError> {
    let var = |name: &str| std::env::var(name).ok();
    if let Some(v) = var(mmaemu_model::limits::MAX_BYTES_ENV) {
        if v.trim().parse::<u64>().is_err() {
            return Err(bad("MMAEMU_MAX_BYTES", &v, "a number of bytes"));
        }
    }
    if let Some(v) = var("MMAEMU_PROFILE").filter(|v| !v.is_empty()) {
        profile("MMAEMU_PROFILE", &v)?;
    }
    if let Some(v) = var("MMAEMU_SPLITK_STRICT") {
        if !matches!(v.as_str(), "" | "0" | "1") {
            return Err(bad("MMAEMU_SPLITK_STRICT", &v, "1 (strict split-K) or 0"));
        }
    }
    if let Some(v) = var("MMAEMU_DISABLE_CUDA") {
        const KNOWN: [&str; 9] = ["", "0", "1", "true", "false", "yes", "no", "on", "off"];
        if !KNOWN.iter().any(|k| v.eq_ignore_ascii_case(k)) {
            return Err(bad("MMAEMU_DISABLE_CUDA", &v, "1, true, yes, on (off the GPU) or 0, false, no, off"));
        }
    }
    if let Err(e) = mmaemu_kernels::env::simd_limit() {
        return Err(CommandError::bad_input(e.message().to_string()));
    }
    if let Some(v) = var("MMAEMU_BACKEND").filter(|v| !v.is_empty() && v != "auto") {
        backend("MMAEMU_BACKEND", &v)?;
    }
    Ok(())
}

/// A profile name given by `what` (a flag or variable): exit 2 naming it when no profile has that name.
pub fn profile(what: &str, name: &str) -> Result<(), CommandError> {
    match mmaemu_datasets::platform::catalogue().profile(name) {
        Ok(_) => Ok(()),
        Err(e) => Err(CommandError::bad_input(format!("{what}: {}", e.message()))),
    }
}

/// A backend name given by `what`: exit 2 naming it when the library does not know the name (an unavailable
/// backend is not a usage error: the command reports it).
pub fn backend(what: &str, name: &str) -> Result<(), CommandError> {
    if name == "auto" {
        return Ok(());
    }
    match registry().resolve_for(name, Some(Placement::Host), None) {
        Err(e) if e.category() == Category::InvalidArgument(InvalidKind::InvalidValue) => {
            Err(CommandError::bad_input(format!("{what}: {}", e.message())))
        }
        _ => Ok(()),
    }
}

fn bad(name: &str, value: &str, expected: &str) -> CommandError {
    CommandError::bad_input(format!("{name}={value:?}: expected {expected}"))
}
