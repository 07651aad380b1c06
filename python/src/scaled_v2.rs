//! The block-scaled calls of `mmaemu.scaled_mm_v2` (docs/reference.md §12.4-§12.6, experimental): MXFP8, NVFP4 and
//! block-wise 1x128 / 128x128 GEMMs on the model, over operands the Python layer has laid out (`_v2.py`).

// The Python layer reads torch's tensors into plain row-major byte strings (A as M x K, B as N x K, one code per
// byte; NVFP4 unpacked; blocked scales as torch holds them; block-wise scales as their logical row-major matrices),
// so this file only checks sizes, runs the model with the GIL released, and returns the output's bits.

use crate::errors::{catch, internal, no_panic, raise};
use mmaemu_api::model::block_gemm::{block_epilogue, blockwise_gemm, mx_gemm, nvfp4_gemm, BlockShape, Dims};
use mmaemu_api::model::warning::{Warning, WarningKind};
use mmaemu_api::model::{b200_tcgen05_mxf4nvf4, Error, Format, OutDtype, Preset};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The experimental warning every block-scaled call carries (no recording validates these modes yet).
fn experimental_warning(mode: &str, preset: &Preset) -> Warning {
    Warning::new(
        WarningKind::ExperimentalPreset,
        format!(
            "{mode} is experimental: modelled on preset '{}' from its published sources (docs/reference.md §12), \
             not validated by recordings of a GPU",
            preset.name()
        ),
    )
}

/// Without the opt-in, a block-scaled call is outside the validated scope.
fn opt_in_message(mode: &str) -> String {
    format!(
        "{mode} scaling is not supported in mmaemu 0.1 without opting in to experimental modes: it is modelled from \
         published sources and not yet validated by a recording; opt in with experimental=True or \
         mmaemu.experimental() in Python, or MMAEMU_EXPERIMENTAL=1"
    )
}

fn format_arg(f: &str) -> Result<Format, Error> {
    Format::from_name(f).ok_or_else(|| Error::wrong_type(format!("expected a float8 operand, got '{f}'")))
}

fn shape_arg(s: &str) -> Result<BlockShape, Error> {
    match s {
        "1x128" => Ok(BlockShape::Vec1x128),
        "128x128" => Ok(BlockShape::Blk128x128),
        _ => Err(Error::invalid_value(format!("unknown block shape '{s}'; expected '1x128' or '128x128'"))),
    }
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// One block-scaled GEMM: `mode` is `mxfp8`, `nvfp4` or `blockwise`; returns the output's bits (u32 per element,
/// little-endian, in the low bits for narrower dtypes) and the warnings. `shapes` names the block-wise shapes of A
/// and B; `globals` are NVFP4's tensor scales (1, 1 otherwise).
/// The result bits and the warnings (category, message) of a block-scaled call.
type Scaled<'py> = (Bound<'py, PyBytes>, Vec<(String, String)>);

#[pyfunction]
#[pyo3(signature = (mode, preset, fa, fb, a, b, m, n, k, scale_a, scale_b, shapes, globals, out, experimental))]
#[allow(clippy::too_many_arguments)]
pub fn block_scaled_mm<'py>(
    py: Python<'py>,
    mode: &str,
    preset: &str,
    fa: &str,
    fb: &str,
    a: &Bound<'py, PyBytes>,
    b: &Bound<'py, PyBytes>,
    m: usize,
    n: usize,
    k: usize,
    scale_a: &Bound<'py, PyBytes>,
    scale_b: &Bound<'py, PyBytes>,
    shapes: (String, String),
    globals: (f32, f32),
    out: &str,
    experimental: Option<bool>,
) -> PyResult<Scaled<'py>> {
    no_panic(|| {
        // The scope step after torch's checks (docs/reference.md §5.2 step 7): experimental modes are opt-in.
        let opted_in = match experimental {
            Some(on) => Ok(on),
            None => mmaemu_api::env::experimental(),
        };
        match opted_in {
            Ok(true) => {}
            Ok(false) => return Err(raise(py, &Error::unsupported(opt_in_message(mode)), &[])),
            Err(e) => return Err(raise(py, &e, &[])),
        }
        let (a, b, sa, sb) = (a.as_bytes(), b.as_bytes(), scale_a.as_bytes(), scale_b.as_bytes());
        let d = Dims { m, n, k };
        let done = py.detach(|| {
            catch(|| -> Result<(Vec<u8>, Warning), Error> {
                let out = OutDtype::from_name(out)
                    .ok_or_else(|| Error::invalid_value(format!("unknown output dtype '{out}'")))?;
                let (acc, warning) = match mode {
                    "mxfp8" => {
                        let p = mmaemu_api::catalogue().preset(preset)?;
                        let acc = mx_gemm(&p, format_arg(fa)?, format_arg(fb)?, a, b, d, sa, sb)?;
                        (acc, experimental_warning("MXFP8 (BlockWise1x32, VEC32_UE8M0)", &p))
                    }
                    "nvfp4" => {
                        let p = b200_tcgen05_mxf4nvf4();
                        (
                            nvfp4_gemm(&p, a, b, d, sa, sb)?,
                            experimental_warning("NVFP4 (BlockWise1x16, VEC16_UE4M3)", &p),
                        )
                    }
                    "blockwise" => {
                        let p = mmaemu_api::catalogue().preset(preset)?;
                        let (xa, xb) = (f32s(sa), f32s(sb));
                        let (ha, hb) = (shape_arg(&shapes.0)?, shape_arg(&shapes.1)?);
                        let acc = blockwise_gemm(&p, format_arg(fa)?, format_arg(fb)?, a, b, d, (&xa, ha), (&xb, hb))?;
                        (acc, experimental_warning("block-wise 1x128/128x128 scaling (VEC128_32F, BLK128x128_32F)", &p))
                    }
                    _ => return Err(Error::invalid_value(format!("unknown block-scaled mode '{mode}'"))),
                };
                let bits = block_epilogue(&acc, globals.0, globals.1, out);
                Ok((bits.iter().flat_map(|x| x.to_le_bytes()).collect(), warning))
            })
        });
        match done {
            Ok(Ok((bytes, w))) => Ok((PyBytes::new(py, &bytes), vec![(w.kind.name().to_string(), w.message)])),
            Ok(Err(e)) => Err(raise(py, &e, &[])),
            Err(p) => Err(internal(p)),
        }
    })
}
