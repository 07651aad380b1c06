//! The `MMAEMU_*` environment variables (docs/reference.md §9.3) read at the library's edge, so the model
//! stays pure: MMAEMU_PROFILE (the default profile), MMAEMU_SPLITK_STRICT (strict split-K mode) and MMAEMU_SIMD
//! (the best SIMD level of the CPU backend).

use mmaemu_model::scaled_mm::ProfileArg;
use mmaemu_model::{Catalogue, Error};

/// The profile to use when the caller names none: MMAEMU_PROFILE if set and non-empty, else the default.
pub fn default_profile() -> ProfileArg {
    match std::env::var("MMAEMU_PROFILE") {
        Ok(v) if !v.is_empty() => ProfileArg::Name(v),
        _ => ProfileArg::Default,
    }
}

/// A profile name given by the caller, or the environment's default.
pub fn profile_arg(name: Option<&str>) -> ProfileArg {
    match name {
        Some(n) => ProfileArg::Name(n.to_string()),
        None => default_profile(),
    }
}

/// [`profile_arg`], with MMAEMU_PROFILE checked when it applies: a name no profile has is the error of
/// [`Catalogue::profile`] (KeyError in Python) naming the variable and its value.
pub fn checked_profile_arg(name: Option<&str>, catalogue: &Catalogue) -> Result<ProfileArg, Error> {
    let arg = profile_arg(name);
    if let (None, ProfileArg::Name(v)) = (name, &arg) {
        if let Err(e) = catalogue.profile(v) {
            return Err(Error::new(e.category(), format!("MMAEMU_PROFILE={v:?}: {}", e.message())));
        }
    }
    Ok(arg)
}

/// Strict split-K mode: MMAEMU_SPLITK_STRICT equals exactly "1" (read on every call).
pub fn strict() -> bool {
    std::env::var("MMAEMU_SPLITK_STRICT").is_ok_and(|v| v == "1")
}

/// MMAEMU_SIMD: the best SIMD level the CPU backend offers (`avx512`, `avx2` or `portable`; unset or empty: the
/// CPU's best), so that the levels below the CPU's best can be selected by `auto` and measured as on a CPU without
/// the levels above. Any other value is an invalid value naming the variable.
pub fn simd_limit() -> Result<Option<&'static str>, Error> {
    match std::env::var("MMAEMU_SIMD") {
        Ok(v) if !v.is_empty() => match crate::SimdLevel::all_names().into_iter().find(|n| *n == v) {
            Some(name) => Ok(Some(name)),
            None => Err(Error::invalid_value(format!("MMAEMU_SIMD={v:?}: expected avx512, avx2 or portable"))),
        },
        _ => Ok(None),
    }
}

/// The variables and their values, for `mmaemu info`.
pub fn report() -> Vec<(&'static str, Option<String>)> {
    [
        "MMAEMU_PROFILE",
        "MMAEMU_SPLITK_STRICT",
        "MMAEMU_BACKEND",
        "MMAEMU_SIMD",
        "MMAEMU_DISABLE_CUDA",
        "MMAEMU_ALLOW_GATED_KERNELS",
        "MMAEMU_NATIVE",
        "MMAEMU_PLATFORMS",
        "MMAEMU_MAX_BYTES",
    ]
    .into_iter()
    .map(|k| (k, std::env::var(k).ok()))
    .collect()
}

/// MMAEMU_DISABLE_CUDA: any of 1, true, yes, on (case-insensitive) keeps the library off the GPU — auto
/// selection and `--device auto` use the host, explicit cuda names are unavailable, and `info` does not
/// touch CUDA (docs/reference.md §9.3).
pub fn cuda_disabled() -> bool {
    std::env::var("MMAEMU_DISABLE_CUDA")
        .is_ok_and(|v| ["1", "true", "yes", "on"].iter().any(|t| v.eq_ignore_ascii_case(t)))
}
