//! `mmaemu._core`: the Rust extension of the Python package — the model's `scaled_mm`, `explain`,
//! `accumulate`, `dot` and epilogue over tensors read where they lie, computed with the GIL released on
//! the backend registry's engines (docs/reference.md §5, §8.1, §9.5). The typed API is the Python layer.

mod block_scales;
mod budget;
mod calls;
mod desc;
mod direct;
mod errors;
mod info;
mod interrupt;
mod model_fns;
mod record_fns;
mod scaled_v2;
mod trace_fns;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(calls::scaled_mm, m)?)?;
    m.add_function(wrap_pyfunction!(calls::explain, m)?)?;
    m.add_function(wrap_pyfunction!(calls::accumulate, m)?)?;
    m.add_function(wrap_pyfunction!(calls::fill, m)?)?;
    m.add_function(wrap_pyfunction!(budget::check_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(model_fns::dot, m)?)?;
    m.add_function(wrap_pyfunction!(trace_fns::trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace_fns::attribute, m)?)?;
    m.add_function(wrap_pyfunction!(model_fns::epilogue, m)?)?;
    m.add_function(wrap_pyfunction!(info::get_profile, m)?)?;
    m.add_function(wrap_pyfunction!(info::list_profiles, m)?)?;
    m.add_function(wrap_pyfunction!(info::load_profile, m)?)?;
    m.add_function(wrap_pyfunction!(info::get_preset, m)?)?;
    m.add_function(wrap_pyfunction!(info::list_presets, m)?)?;
    m.add_function(wrap_pyfunction!(info::backends_status, m)?)?;
    m.add_function(wrap_pyfunction!(info::read_recording_rows, m)?)?;
    m.add_function(wrap_pyfunction!(scaled_v2::block_scaled_mm, m)?)?;
    m.add_function(wrap_pyfunction!(scaled_v2::block_scaled_check, m)?)?;
    m.add_function(wrap_pyfunction!(scaled_v2::block_scaled_explain, m)?)?;
    m.add_function(wrap_pyfunction!(record_fns::write_recording_rows, m)?)?;
    Ok(())
}
