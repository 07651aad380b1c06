//! Profiles, presets and backends as plain Python values (docs/reference.md §6.1, §2.1, §9.5), and the
//! recordings of `datasets/recordings` row by row (docs/recording-format.md).

use crate::errors::{internal, no_panic, to_py};
use mmaemu_api::env;
use mmaemu_api::model::scaled_mm::resolve_profile;
use mmaemu_api::model::{Category, Error, Preset, Profile};
use mmaemu_api::registry::{registry, Placement};
use mmaemu_datasets::{read_recording, Expectation};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::path::Path;

fn profile_dict<'py>(py: Python<'py>, p: &Profile) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &p.name)?;
    d.set_item("preset", p.preset.name())?;
    d.set_item("gpu_name", &p.gpu_name)?;
    d.set_item("capability", p.capability)?;
    d.set_item("sm_count", p.sm_count)?;
    d.set_item("cublaslt_version", &p.cublaslt_version)?;
    d.set_item("caller", p.caller.name())?;
    d.set_item("torch_version", &p.torch_version)?;
    d.set_item("workspace_bytes", p.workspace_bytes)?;
    d.set_item("align", p.align)?;
    d.set_item("splitk_table", p.splitk_table.map(|t| t.id()))?;
    let rejects = PyList::empty(py);
    for r in &p.rejects {
        let rd = PyDict::new(py);
        rd.set_item("fmt_a", r.fmt_a.map(|f| f.dtype_name()))?;
        rd.set_item("fmt_b", r.fmt_b.map(|f| f.dtype_name()))?;
        rd.set_item("out", r.out.map(|o| o.name()))?;
        rd.set_item("message", &r.message)?;
        rejects.append(rd)?;
    }
    d.set_item("rejects", rejects)?;
    d.set_item("maturity", p.maturity.name())?;
    d.set_item("splitk_maturity", p.splitk_maturity.map(|m| m.name()))?;
    d.set_item("description", &p.description)?;
    Ok(d)
}

/// A profile by name (None: MMAEMU_PROFILE, else the default), as a dict of its fields.
#[pyfunction]
#[pyo3(signature = (name=None))]
pub fn get_profile<'py>(py: Python<'py>, name: Option<String>) -> PyResult<Bound<'py, PyDict>> {
    no_panic(|| {
        let catalogue = mmaemu_api::catalogue();
        let p = env::checked_profile_arg(name.as_deref(), &catalogue)
            .and_then(|p| resolve_profile(&p, &catalogue))
            .map_err(|e| to_py(py, &e))?;
        profile_dict(py, &p)
    })
}

/// Load a platform bundle's profile (`DIR` or `DIR#NAME`, docs/platform-format.md), add its platform to the
/// process's catalogue (so that its profiles are known by name), and return the profile as a dict. A bad bundle
/// is a data error naming the file.
#[pyfunction]
pub fn load_profile<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyDict>> {
    no_panic(|| {
        crate::budget::apply_ceiling(py)?;
        let data = |e: mmaemu_datasets::DatasetError| to_py(py, &Error::new(Category::Data, e.to_string()));
        let p = py.detach(|| {
            let p = mmaemu_api::load_profile(path)?;
            mmaemu_api::register_platform(Path::new(path.split('#').next().unwrap_or(path)))?;
            Ok(p)
        });
        profile_dict(py, &p.map_err(data)?)
    })
}

/// The profile names, in the reference's order.
#[pyfunction]
pub fn list_profiles() -> Vec<String> {
    mmaemu_api::catalogue().profiles().map(|p| p.name.clone()).collect()
}

/// A preset by name (aliases accepted), as a dict of its parameters.
#[pyfunction]
pub fn get_preset<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
    no_panic(|| {
        let catalogue = mmaemu_api::catalogue();
        let p = catalogue
            .preset_or_path(name, mmaemu_datasets::platform::read_preset_document)
            .map_err(|e| to_py(py, &e))?;
        let d = PyDict::new(py);
        d.set_item("name", p.name())?;
        d.set_item("nfma", p.nfma())?;
        d.set_item("frac", p.frac())?;
        d.set_item("frac_out", p.frac_out())?;
        d.set_item("min_exp", p.min_exp())?;
        d.set_item("c_entry", p.c_entry().name())?;
        d.set_item("slow_chunk", p.slow_chunk())?;
        d.set_item("maturity", p.maturity().name())?;
        d.set_item("schemes", catalogue.schemes(&p).iter().map(|s| s.name()).collect::<Vec<_>>())?;
        Ok(d)
    })
}

/// The built-in preset names.
#[pyfunction]
pub fn list_presets() -> Vec<&'static str> {
    Preset::list()
}

/// `backends_status`'s answer: (name, available, status) per backend, auto's choice, auto's fallbacks.
type Status = (Vec<(String, bool, String)>, String, Vec<String>);

/// Every backend with its availability (`available: HOW` / `unavailable - WHY`), and what `auto` selects
/// for tensors on `device` (`cpu`, `cuda`, `cuda:N`) with why faster ones were skipped.
#[pyfunction]
pub fn backends_status(py: Python<'_>, device: &str) -> PyResult<Status> {
    no_panic(|| {
        let placement = match Placement::parse(device) {
            Err(usage) => return Err(to_py(py, &Error::invalid_value(usage))),
            Ok(Err(why)) => {
                let e = Error::new(Category::BackendUnavailable, format!("device '{device}' unavailable: {why}"));
                return Err(to_py(py, &e));
            }
            Ok(Ok(p)) => p,
        };
        py.detach(|| {
            crate::errors::catch(|| {
                let all = registry()
                    .describe()
                    .into_iter()
                    .map(|(name, a)| (name, a.is_available(), a.to_string()))
                    .collect::<Vec<_>>();
                let auto = registry().resolve_for("auto", Some(placement), None);
                (all, auto.map(|s| (s.name, s.fallbacks)))
            })
        })
        .map_err(internal)
        .and_then(|(all, auto)| {
            let (name, fallbacks) = auto.map_err(|e| to_py(py, &e))?;
            Ok((all, name, fallbacks))
        })
    })
}

/// Every row of one recording file, as dicts of the format's columns (docs/recording-format.md): binary
/// columns as bytes, `call` as its JSON text, `expected` as `("bits", bytes)`, `("sha256", hex)` or
/// `("error", name)`.
#[pyfunction]
pub fn read_recording_rows<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyList>> {
    no_panic(|| {
        crate::budget::apply_ceiling(py)?;
        let rec = py
            .detach(|| crate::errors::catch(|| read_recording(Path::new(path))))
            .map_err(internal)?
            .map_err(|e| to_py(py, &Error::new(Category::Data, e.to_string())))?;
        let rows = PyList::empty(py);
        for r in &rec.rows {
            let d = PyDict::new(py);
            d.set_item("id", &r.id)?;
            d.set_item("op", r.op.as_str())?;
            d.set_item("preset", &r.preset)?;
            d.set_item("profile", &r.profile)?;
            d.set_item("gpu", &r.gpu)?;
            d.set_item("truth", r.truth.as_str())?;
            d.set_item("fmt_a", &r.fmt_a)?;
            d.set_item("fmt_b", &r.fmt_b)?;
            d.set_item("batch", r.batch)?;
            d.set_item("m", r.m)?;
            d.set_item("n", r.n)?;
            d.set_item("k", r.k)?;
            d.set_item("a", PyBytes::new(py, &r.a))?;
            d.set_item("b", PyBytes::new(py, &r.b))?;
            d.set_item("c", r.c.as_deref().map(|c| PyBytes::new(py, c)))?;
            d.set_item("scale_a", r.scale_a)?;
            d.set_item("scale_b", r.scale_b)?;
            d.set_item("scale_result", r.scale_result)?;
            d.set_item("out_dtype", &r.out_dtype)?;
            d.set_item("fast_accum", r.fast_accum)?;
            d.set_item("split_s", r.split_s)?;
            d.set_item("split_scheme", &r.split_scheme)?;
            d.set_item("call", r.call.as_ref().map(|c| c.to_json()))?;
            d.set_item("out_select", r.out_select.as_column())?;
            match &r.expected {
                Expectation::Bits(b) => d.set_item("expected", ("bits", PyBytes::new(py, b)))?,
                Expectation::Sha256(h) => d.set_item("expected", ("sha256", h))?,
                Expectation::Error(e) => d.set_item("expected", ("error", e))?,
            }
            d.set_item("scope", &r.scope)?;
            d.set_item("origin", &r.origin)?;
            rows.append(d)?;
        }
        Ok(rows)
    })
}
