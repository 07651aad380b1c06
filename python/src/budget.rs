//! What a call of the extension checks before it allocates or decides anything: every described tensor's
//! geometry in checked arithmetic, and the buffers it sizes from its arguments (results, out= copies, gathered
//! operands) against the ceiling `MMAEMU_MAX_BYTES` (read by `mmaemu_api::env` on every call).

use crate::desc::Desc;
use crate::errors::{no_panic, to_py};
use mmaemu_api::env;
use mmaemu_api::model::{limits, Error};
use pyo3::prelude::*;

/// Ok when every `MMAEMU_*` variable has a value the library can use ([`env::check`]: else the ValueError naming
/// it), every named tensor has a geometry that fits 64 bits and the `terms` (bytes; None: overflow) together fit
/// the ceiling; else the ValueError that names `what`, the ceiling and how to raise it.
pub fn check(what: &str, tensors: &[(&str, Option<&Desc>)], terms: &[Option<u64>]) -> Result<(), Error> {
    env::check()?;
    let limit = env::max_bytes()?;
    for (name, d) in tensors {
        if let Some(d) = d {
            d.geometry(name)?;
        }
    }
    limits::check(what, limits::sum(terms), limit).map_err(Error::invalid_value)
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
        let limit = env::max_bytes().map_err(|e| to_py(py, &e))?;
        limits::check(what, n, limit).map_err(|e| to_py(py, &Error::invalid_value(e)))
    })
}

/// Make `MMAEMU_MAX_BYTES` (read now) the ceiling in force for what the datasets crate reads (a recording's
/// regenerated operands, a bundle's files); a bad value is the ValueError naming the variable.
pub fn apply_ceiling(py: Python<'_>) -> PyResult<()> {
    let limit = env::max_bytes().map_err(|e| to_py(py, &e))?;
    mmaemu_datasets::limits::set_ceiling(limit);
    Ok(())
}
