//! The `MMAEMU_*` variables and the name-valued flags, checked before a command runs: a value the library
//! cannot use is a usage error (exit 2) that names the variable or flag, never a silent default. The variables
//! are parsed by `mmaemu_api::env`, under its one rule.

use super::CommandError;
use mmaemu_api::env;
use mmaemu_api::model::{Category, InvalidKind};
use mmaemu_api::registry::{registry, Placement};

/// Every variable's value, checked; the first bad one is the error.
pub fn check_env() -> Result<(), CommandError> {
    env::check().map_err(|e| CommandError::bad_input(e.message()))?;
    if let Some(v) = env::profile().map_err(|e| CommandError::bad_input(e.message()))? {
        profile("MMAEMU_PROFILE", &v)?;
    }
    if let Some(v) = env::backend().map_err(|e| CommandError::bad_input(e.message()))? {
        backend("MMAEMU_BACKEND", &v)?;
    }
    Ok(())
}

/// A profile name given by `what` (a flag or variable): exit 2 naming it when no profile has that name.
pub fn profile(what: &str, name: &str) -> Result<(), CommandError> {
    match mmaemu_api::catalogue().profile(name) {
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
