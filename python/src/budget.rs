//! What a call of the extension checks before it allocates or decides anything: every described tensor's
//! geometry in checked arithmetic, the buffers it sizes from its arguments (results, out= copies, gathered
//! operands) against the ceiling `MMAEMU_MAX_BYTES`, and the value of `MMAEMU_SPLITK_STRICT`.

use crate::desc::Desc;
use crate::errors::{no_panic, to_py};
use mmaemu_model::{limits, Error};
use pyo3::prelude::*;

/// Ok when every named tensor has a geometry that fits 64 bits and the `terms` (bytes; None: overflow)
/// together fit the ceiling; else the ValueError that names `what`, the ceiling and how to raise it.
pub fn check(what: &str, tensors: &[(&str, Option<&Desc>)], terms: &[Option<u64>]) -> Result<(), Error> {
    max_bytes_var()?;
    for (name, d) in tensors {
        if let Some(d) = d {
            d.geometry(name)?;
        }
    }
    limits::check(what, limits::sum(terms)).map_err(Error::invalid_value)
}

/// The product of `factors` in bytes, None when it overflows.
pub fn bytes(factors: &[usize]) -> Option<u64> {
    limits::product(&factors.iter().map(|&x| x as u64).collect::<Vec<_>>())
}

/// `check_bytes(what, bytes)`: the Python layer's check before it allocates a result (ValueError above the
/// ceiling). `bytes` is a Python int of any size.
#[pyfunction]
pub fn check_bytes(py: Python<'_>, what: &str, bytes: &Bound<'_, PyAny>) -> PyResult<()> {
    no_panic(|| {
        let n: Option<u64> = bytes.extract().ok();
        max_bytes_var().map_err(|e| to_py(py, &e))?;
        limits::check(what, n).map_err(|e| to_py(py, &Error::invalid_value(e)))
    })
}

/// MMAEMU_MAX_BYTES, when set, must be a number of bytes: any other value is the ValueError that names the
/// variable (not a silent default ceiling).
fn max_bytes_var() -> Result<(), Error> {
    match std::env::var(limits::MAX_BYTES_ENV) {
        Ok(v) if v.trim().parse::<u64>().is_err() => {
            Err(Error::invalid_value(format!("{}={v:?}: expected a number of bytes", limits::MAX_BYTES_ENV)))
        }
        _ => Ok(()),
    }
}

/// MMAEMU_SPLITK_STRICT as a call reads it: unset, empty or `0` (off), `1` (on); any other value is the
/// ValueError that names the variable (a `true` is not silently off).
pub fn strict() -> Result<bool, Error> {
    match std::env::var("MMAEMU_SPLITK_STRICT").as_deref() {
        Err(_) | Ok("") | Ok("0") => Ok(false),
        Ok("1") => Ok(true),
        Ok(other) => {
            Err(Error::invalid_value(format!("MMAEMU_SPLITK_STRICT={other:?}: expected 1 (strict split-K) or 0")))
        }
    }
}
