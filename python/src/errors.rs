//! Model errors as Python exceptions (docs/reference.md R.3, §7.1): the categories become the classes of
//! `mmaemu.errors`, invalid arguments TypeError, ValueError or KeyError; a Rust panic becomes a
//! RuntimeError instead of crossing into Python.

use mmaemu_api::model::error::{Category, Error, InvalidKind};
use mmaemu_api::model::warning::Warning;
use pyo3::exceptions::{PyKeyError, PyKeyboardInterrupt, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The Python exception of a model error, carrying the warnings the call reported before it failed in
/// its attribute `mmaemu_warnings` (the Python layer emits them, then re-raises).
pub fn raise(py: Python<'_>, e: &Error, warnings: &[Warning]) -> PyErr {
    let msg = e.message().to_string();
    let err = match e.category() {
        Category::InvalidArgument(InvalidKind::WrongType) => PyTypeError::new_err(msg),
        Category::InvalidArgument(InvalidKind::InvalidValue) => PyValueError::new_err(msg),
        Category::InvalidArgument(InvalidKind::UnknownName) => PyKeyError::new_err(msg),
        Category::Interrupted => PyKeyboardInterrupt::new_err(msg),
        category => named(py, category.name(), msg),
    };
    if !warnings.is_empty() {
        let list: Vec<(&str, &str)> = warnings.iter().map(|w| (w.kind.name(), w.message.as_str())).collect();
        if let Err(e) = err.value(py).setattr("mmaemu_warnings", list) {
            return e;
        }
    }
    err
}

/// [`raise`] without warnings.
pub fn to_py(py: Python<'_>, e: &Error) -> PyErr {
    raise(py, e, &[])
}

/// An exception of `mmaemu.errors` by class name (`ReferenceRejectsError`, ...).
fn named(py: Python<'_>, class: &str, msg: String) -> PyErr {
    match py.import("mmaemu.errors").and_then(|m| m.getattr(class)).and_then(|cls| cls.call1((msg,))) {
        Ok(v) => PyErr::from_value(v),
        Err(e) => e,
    }
}

fn panic_message(p: Box<dyn Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Run `f` (which holds the GIL), turning a panic into a RuntimeError: a bug of mmaemu, never an answer.
pub fn no_panic<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(internal(panic_message(p))))
}

/// Run `f` (without the GIL), turning a panic into its message.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(panic_message)
}

/// The RuntimeError of a panic caught by [`catch`].
pub fn internal(what: String) -> PyErr {
    PyRuntimeError::new_err(format!("mmaemu internal error (please report it): {what}"))
}
