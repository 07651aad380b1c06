//! Every `MMAEMU_*` variable of docs/reference.md §9.3, read here at the library's edge (the model reads no
//! environment), under one rule: unset or empty is the default, and a value the library cannot use is an invalid
//! value (ValueError in Python, exit 2 on the command line) that names the variable and its value.

use mmaemu_kernels::SimdLevel;
use mmaemu_model::limits::DEFAULT_MAX_BYTES;
use mmaemu_model::scaled_mm::ProfileArg;
use mmaemu_model::{Catalogue, Error};

/// The variables `mmaemu info` reports, in its order.
pub const VARIABLES: [&str; 10] = [
    "MMAEMU_PROFILE",
    "MMAEMU_SPLITK_STRICT",
    "MMAEMU_EXPERIMENTAL",
    "MMAEMU_BACKEND",
    "MMAEMU_SIMD",
    "MMAEMU_DISABLE_CUDA",
    "MMAEMU_ALLOW_GATED_KERNELS",
    "MMAEMU_NATIVE",
    "MMAEMU_PLATFORMS",
    "MMAEMU_MAX_BYTES",
];

/// The value of `name`: None when unset or empty; a value that is not Unicode is an invalid value.
fn var(name: &str) -> Result<Option<String>, Error> {
    match std::env::var(name) {
        Ok(v) if v.is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(invalid(name, &v.to_string_lossy(), "a Unicode value")),
    }
}

/// The invalid value `name=value`, saying what was expected.
pub fn invalid(name: &str, value: &str, expected: &str) -> Error {
    Error::invalid_value(format!("{name}={value:?}: expected {expected}"))
}

/// The value of `name` parsed by `parse` (None: not a value it takes, then the error says `expected`); unset or
/// empty: `default`.
fn parsed<T>(name: &str, default: T, expected: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T, Error> {
    match var(name)? {
        None => Ok(default),
        Some(v) => parse(&v).ok_or_else(|| invalid(name, &v, expected)),
    }
}

/// MMAEMU_PROFILE: the default profile's name (None: unset or empty). The name itself is checked where a profile
/// is resolved ([`checked_profile_arg`]).
pub fn profile() -> Result<Option<String>, Error> {
    var("MMAEMU_PROFILE")
}

/// A profile name given by the caller, or MMAEMU_PROFILE's, or the default.
pub fn profile_arg(name: Option<&str>) -> Result<ProfileArg, Error> {
    Ok(match name {
        Some(n) => ProfileArg::Name(n.to_string()),
        None => profile()?.map_or(ProfileArg::Default, ProfileArg::Name),
    })
}

/// [`profile_arg`], with MMAEMU_PROFILE checked when it applies: a name no profile has is the error of
/// [`Catalogue::profile`] (KeyError in Python) naming the variable and its value.
pub fn checked_profile_arg(name: Option<&str>, catalogue: &Catalogue) -> Result<ProfileArg, Error> {
    let arg = profile_arg(name)?;
    if let (None, ProfileArg::Name(v)) = (name, &arg) {
        if let Err(e) = catalogue.profile(v) {
            return Err(Error::new(e.category(), format!("MMAEMU_PROFILE={v:?}: {}", e.message())));
        }
    }
    Ok(arg)
}

/// MMAEMU_SPLITK_STRICT: `1` strict split-K mode, `0` (or unset, empty) not; read on every call.
pub fn strict() -> Result<bool, Error> {
    parsed("MMAEMU_SPLITK_STRICT", false, "1 (strict split-K) or 0", |v| match v {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    })
}

/// MMAEMU_EXPERIMENTAL: `1` opts every call in to the experimental scaling modes (row-wise scales, with or without
/// a bias), `0` (or unset, empty) leaves them refused as the 0.1 contract refuses them; read on every call.
pub fn experimental() -> Result<bool, Error> {
    parsed("MMAEMU_EXPERIMENTAL", false, "1 (experimental modes) or 0", |v| match v {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    })
}

/// A call's own opt-in to the experimental modes (Python's `experimental=`, the command line's `--experimental`),
/// else MMAEMU_EXPERIMENTAL's ([`experimental`]): the call's choice takes precedence, and the variable is then not read.
pub fn experimental_or(given: Option<bool>) -> Result<bool, Error> {
    given.map_or_else(experimental, Ok)
}

/// MMAEMU_BACKEND: the backend `auto` stands for (None: unset or empty). The raw value; the name is checked
/// where it is resolved (`registry::Registry::resolve_for`), whose errors name the variable.
pub fn backend() -> Result<Option<String>, Error> {
    var("MMAEMU_BACKEND")
}

/// MMAEMU_SIMD: the best SIMD level the CPU backend offers (`avx512`, `avx2` or `portable`; unset or empty: the
/// CPU's best), so that the levels below the CPU's best can be selected by `auto` and measured as on a CPU without
/// the levels above.
pub fn simd_limit() -> Result<Option<&'static str>, Error> {
    parsed("MMAEMU_SIMD", None, "avx512, avx2 or portable", |v| {
        SimdLevel::all_names().into_iter().find(|n| *n == v).map(Some)
    })
}

/// The SIMD levels the CPU backend offers: those the running CPU supports, best first, none above
/// [`simd_limit`]'s (a bad value sets no limit here; it is reported where a backend is resolved).
pub fn simd_levels() -> Vec<SimdLevel> {
    SimdLevel::available(simd_limit().ok().flatten())
}

/// MMAEMU_DISABLE_CUDA: 1, true, yes, on (ignoring case) keep the library off the GPU — auto selection and
/// `--device auto` use the host, explicit cuda names are unavailable, and `info` does not touch CUDA; 0, false,
/// no, off (or unset, empty) do not.
pub fn cuda_disabled() -> Result<bool, Error> {
    parsed("MMAEMU_DISABLE_CUDA", false, "1, true, yes, on (off the GPU) or 0, false, no, off", |v| {
        let is = |set: [&str; 4]| set.iter().any(|t| v.eq_ignore_ascii_case(t));
        if is(["1", "true", "yes", "on"]) {
            Some(true)
        } else if is(["0", "false", "no", "off"]) {
            Some(false)
        } else {
            None
        }
    })
}

/// MMAEMU_NATIVE: `matrixmultiply` makes the benchmarks' native fp32 GEMM matrixmultiply's even where OpenBLAS is
/// installed (true); unset or empty: OpenBLAS where installed (false).
pub fn native_matrixmultiply() -> Result<bool, Error> {
    parsed("MMAEMU_NATIVE", false, "matrixmultiply", |v| (v == "matrixmultiply").then_some(true))
}

/// MMAEMU_MAX_BYTES: the memory ceiling in bytes (a decimal number); unset or empty:
/// [`DEFAULT_MAX_BYTES`].
pub fn max_bytes() -> Result<u64, Error> {
    parsed("MMAEMU_MAX_BYTES", DEFAULT_MAX_BYTES, "a number of bytes", |v| v.parse().ok())
}

/// Every variable with a value to check, checked; the first bad one is the error. A profile or backend name is
/// checked where it is resolved.
pub fn check() -> Result<(), Error> {
    profile()?;
    strict()?;
    experimental()?;
    backend()?;
    simd_limit()?;
    cuda_disabled()?;
    native_matrixmultiply()?;
    max_bytes()?;
    Ok(())
}

/// The variables and their values, for `mmaemu info`.
pub fn report() -> Vec<(&'static str, Option<String>)> {
    VARIABLES.into_iter().map(|k| (k, std::env::var(k).ok())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one rule, on a variable no other test sets: unset and empty are the default, a value is parsed, a bad
    /// value is an invalid value naming the variable and the value.
    #[test]
    fn one_rule() {
        let name = "MMAEMU_ENV_RULE_TEST";
        let get = || parsed(name, 7u64, "a number", |v| v.parse().ok());
        assert_eq!(get().unwrap(), 7);
        std::env::set_var(name, "");
        assert_eq!(get().unwrap(), 7);
        std::env::set_var(name, "12");
        assert_eq!(get().unwrap(), 12);
        std::env::set_var(name, " 12");
        let e = get().unwrap_err();
        assert_eq!(e.category(), mmaemu_model::Category::InvalidArgument(mmaemu_model::InvalidKind::InvalidValue));
        assert_eq!(e.message(), "MMAEMU_ENV_RULE_TEST=\" 12\": expected a number");
        std::env::remove_var(name);
    }
}
