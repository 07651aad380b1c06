//! `trace` and `attribute` for Python: one element of a `scaled_mm` call traced (as the trace's JSON), and every
//! output of a call attributed (the summary as JSON, the per-output figures as little-endian bytes), GIL released.

use crate::calls::CallArgs;
use crate::errors::{catch, internal, no_panic, to_py};
use crate::interrupt;
use mmaemu_api::trace::json::trace_text;
use mmaemu_api::trace::summary::GemmAttribution;
use mmaemu_api::trace::{attribute_scaled_mm, trace_scaled_mm};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The trace of element (i, j) of the call, as JSON text.
#[pyfunction]
pub fn trace(py: Python<'_>, args: CallArgs, i: usize, j: usize) -> PyResult<String> {
    no_panic(|| {
        // A trace takes milliseconds to a minute (K products on exact values): always on a thread of its own, so
        // that Ctrl-C stops it (KeyboardInterrupt).
        let r = interrupt::interruptible(py, u128::MAX, || {
            catch(|| {
                // SAFETY: the Python layer keeps every tensor referenced for the duration of this call; the
                // trace only reads them.
                let call = unsafe { args.call(false) }?;
                trace_scaled_mm(&call, i, j).and_then(trace_text)
            })
        })?
        .map_err(internal)?;
        r.map_err(|e| to_py(py, &e))
    })
}

/// The per-output figures as bytes: bits (u32), attributed (u8), exact and emulated (f64), the five ulps (f64 each,
/// [M, N, 5]). An output without an attribution has NaN as its exact value and its ulps (the trace crate fills
/// them with 0, which would read as "exact, no error"); `attributed` says which outputs these are.
fn columns(r: &GemmAttribution) -> [Vec<u8>; 5] {
    let mut c: [Vec<u8>; 5] = Default::default();
    for f in &r.figures {
        let (exact, ulps) = if f.attributed { (f.exact, f.ulps) } else { (f64::NAN, [f64::NAN; 5]) };
        c[0].extend_from_slice(&f.bits.to_le_bytes());
        c[1].push(u8::from(f.attributed));
        c[2].extend_from_slice(&exact.to_le_bytes());
        c[3].extend_from_slice(&f.emulated.to_le_bytes());
        for u in ulps {
            c[4].extend_from_slice(&u.to_le_bytes());
        }
    }
    c
}

/// The summary of an attribution as JSON text.
fn summary_json(r: &GemmAttribution) -> String {
    serde_json::json!({
        "outputs": r.outputs, "attributed": r.attributed, "exact_checks": r.exact_checks, "inexact": r.inexact,
        "out_dtype": r.out.name(), "m": r.m, "n": r.n,
        "sources": r.sources.iter().map(|s| serde_json::json!({
            "source": s.name, "affected": s.affected, "mean_ulps": s.mean_ulps, "max_ulps": s.max_ulps,
            "histogram": s.histogram,
        })).collect::<Vec<_>>(),
    })
    .to_string()
}

/// The attribution for Python: the summary JSON, then bits, attributed, exact, emulated and ulps as bytes.
type Attributed<'py> =
    (String, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>);

/// Every output of the call attributed: (summary JSON, bits, attributed, exact, emulated, ulps) as bytes.
#[pyfunction]
pub fn attribute<'py>(py: Python<'py>, args: CallArgs) -> PyResult<Attributed<'py>> {
    no_panic(|| {
        // Ctrl-C stops the attribution between rows of outputs (KeyboardInterrupt).
        let macs = args.macs();
        let r = interrupt::interruptible(py, macs, || {
            catch(|| {
                // SAFETY: as in `trace`.
                let call = unsafe { args.call(false) }?;
                attribute_scaled_mm(&call).map(|r| (summary_json(&r), columns(&r)))
            })
        })?
        .map_err(internal)?;
        let (s, [bits, att, exact, emulated, ulps]) = r.map_err(|e| to_py(py, &e))?;
        let b = |v: Vec<u8>| PyBytes::new(py, &v);
        Ok((s, b(bits), b(att), b(exact), b(emulated), b(ulps)))
    })
}
