//! The block-scaled calls of `mmaemu.scaled_mm_v2` (docs/reference.md §12.4-§12.6, experimental): MXFP8, NVFP4 and
//! block-wise 1x128 / 128x128 GEMMs on the model, over operands the Python layer has laid out (`_v2.py`).

// The Python layer reads torch's tensors into plain row-major byte strings (A as M x K, B as N x K, one code per
// byte; NVFP4 unpacked; blocked scales as torch holds them; block-wise scales as their logical row-major matrices),
// so this file only checks sizes, runs the model with the GIL released, and returns the output's bits.

use crate::errors::{catch, internal, no_panic, raise};
use mmaemu_api::model::block_call::{BlockMode, BlockScaledCall};
use mmaemu_api::model::block_gemm::{block_epilogue, blockwise_gemm_on, mx_gemm_on, nvfp4_gemm_on, BlockShape, Dims};
use mmaemu_api::model::dtype::Dtype;
use mmaemu_api::model::{Error, Format, Preset};
use mmaemu_api::Placement;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

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

/// The model's description of a call (`mode` a block-scaled word of `SCALING_NAMES`; `dtypes` those of the FP8
/// operands, None for NVFP4) and the profile it runs on (the mode's default profile).
#[allow(clippy::too_many_arguments)]
fn described(
    mode: &str,
    d: Dims,
    dtypes: Option<(Dtype, Dtype)>,
    out: &str,
    fast: bool,
    bias: bool,
    experimental: bool,
) -> Result<(BlockScaledCall, mmaemu_api::model::Profile), Error> {
    let mode = BlockMode::from_name(mode)
        .ok_or_else(|| Error::invalid_value(format!("unknown block-scaled mode '{mode}'")))?;
    let call = BlockScaledCall { mode, dims: d, dtypes, out: Dtype::from_name(out), fast, bias, experimental };
    Ok((call, mmaemu_api::catalogue().profile(mode.default_profile())?))
}

/// torch's checks of a block-scaled call before its scales (the model's `BlockScaledCall::check`, shared with
/// `explain`): bias, out dtype, K and N multiples of 16, use_fast_accum, the operands' dtypes.
#[pyfunction]
#[pyo3(signature = (mode, m, n, k, dtypes, out, fast, bias))]
#[allow(clippy::too_many_arguments)]
pub fn block_scaled_check(
    py: Python<'_>,
    mode: &str,
    m: usize,
    n: usize,
    k: usize,
    dtypes: Option<(String, String)>,
    out: &str,
    fast: bool,
    bias: bool,
) -> PyResult<()> {
    no_panic(|| {
        let dtypes = dtypes.map(|(a, b)| (Dtype::from_name(&a), Dtype::from_name(&b)));
        let checked = described(mode, Dims { m, n, k }, dtypes, out, fast, bias, true)
            .and_then(|(call, profile)| call.check(&profile).map(|_| ()));
        checked.map_err(|e| raise(py, &e, &[]))
    })
}

/// `explain` of a block-scaled call (docs/reference.md §12.7): the model's plan as a dict, on `profile` (None: the
/// mode's default profile), as `mmaemu explain --scales MODE` prints it.
#[pyfunction]
#[pyo3(signature = (mode, m, n, k, dtypes, out, fast, bias, experimental, profile))]
#[allow(clippy::too_many_arguments)]
pub fn block_scaled_explain<'py>(
    py: Python<'py>,
    mode: &str,
    m: usize,
    n: usize,
    k: usize,
    dtypes: Option<(String, String)>,
    out: &str,
    fast: bool,
    bias: bool,
    experimental: Option<bool>,
    profile: Option<&str>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    no_panic(|| {
        let dtypes = dtypes.map(|(a, b)| (Dtype::from_name(&a), Dtype::from_name(&b)));
        let call = mmaemu_api::env::experimental_or(experimental)
            .and_then(|on| described(mode, Dims { m, n, k }, dtypes, out, fast, bias, on));
        let (call, default) = call.map_err(|e| raise(py, &e, &[]))?;
        let profile = match profile {
            None => Ok(default),
            Some(name) => mmaemu_api::catalogue().profile(name),
        };
        crate::calls::plan_dict(py, &call.explain(profile))
    })
}

/// The out dtype of a checked call.
fn block_out(call: &BlockScaledCall) -> Result<mmaemu_api::model::OutDtype, Error> {
    call.out.out_dtype().ok_or_else(|| Error::invalid_value(format!("unknown output dtype '{}'", call.out.name())))
}

/// One block-scaled GEMM: `mode` is `mx`, `nvfp4`, `block128` or `block128x128` (`SCALING_NAMES`); returns the output's bits (u32 per element,
/// little-endian, in the low bits for narrower dtypes) and the warnings. `shapes` names the block-wise shapes of A
/// and B; `globals` are NVFP4's tensor scales (1, 1 otherwise).
/// The result bits and the warnings (category, message) of a block-scaled call.
type Scaled<'py> = (Bound<'py, PyBytes>, Vec<(String, String)>);

#[pyfunction]
#[pyo3(signature = (mode, fa, fb, a, b, m, n, k, scale_a, scale_b, shapes, globals, out, experimental))]
#[allow(clippy::too_many_arguments)]
pub fn block_scaled_mm<'py>(
    py: Python<'py>,
    mode: &str,
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
        let opted_in = mmaemu_api::env::experimental_or(experimental);
        let d = Dims { m, n, k };
        let checked = |on: bool| {
            let fp8 = match mode {
                "nvfp4" => None,
                _ => Some((Dtype::of_format(format_arg(fa)?), Dtype::of_format(format_arg(fb)?))),
            };
            let (call, profile) = described(mode, d, fp8, out, false, false, on)?;
            let (_, preset) = call.check(&profile)?;
            call.check_opt_in()?;
            Ok((call, preset))
        };
        let (call, preset) = match opted_in.and_then(checked) {
            Ok(x) => x,
            Err(e) => return Err(raise(py, &e, &[])),
        };
        let (a, b, sa, sb) = (a.as_bytes(), b.as_bytes(), scale_a.as_bytes(), scale_b.as_bytes());
        let done = py.detach(|| {
            catch(|| -> Result<Vec<u8>, Error> {
                let out = block_out(&call)?;
                let p: &Preset = &preset;
                // The host tensors' backend (MMAEMU_BACKEND, MMAEMU_SIMD apply): the CPU engine's block-scaled
                // chains, bit-identical to the model's.
                let selected = mmaemu_api::registry().resolve_for("auto", Some(Placement::Host), None)?;
                let e = selected.engine;
                let acc = match call.mode {
                    BlockMode::Mx => mx_gemm_on(e, p, format_arg(fa)?, format_arg(fb)?, a, b, d, sa, sb)?,
                    BlockMode::Nvfp4 => nvfp4_gemm_on(e, p, a, b, d, sa, sb)?,
                    BlockMode::Block128 | BlockMode::Block128x128 => {
                        let (xa, xb) = (f32s(sa), f32s(sb));
                        let (ha, hb) = (shape_arg(&shapes.0)?, shape_arg(&shapes.1)?);
                        blockwise_gemm_on(e, p, format_arg(fa)?, format_arg(fb)?, a, b, d, (&xa, ha), (&xb, hb))?
                    }
                };
                let bits = block_epilogue(&acc, globals.0, globals.1, out);
                Ok(bits.iter().flat_map(|x| x.to_le_bytes()).collect())
            })
        });
        let w = call.warning(&preset);
        match done {
            Ok(Ok(bytes)) => Ok((PyBytes::new(py, &bytes), vec![(w.kind.name().to_string(), w.message)])),
            Ok(Err(e)) => Err(raise(py, &e, &[])),
            Err(p) => Err(internal(p)),
        }
    })
}
