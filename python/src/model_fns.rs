//! The model-level functions: `dot`, one chain per output over tensors of any shape [..., K]
//! (docs/reference.md §2.7), and the epilogue over an fp32 accumulator (§4).

use crate::desc::Desc;
use crate::errors::{catch, internal, no_panic, raise};
use mmaemu_api::model::dtype::Dtype;
use mmaemu_api::model::profile::DEFAULT_PROFILE;
use mmaemu_api::model::scaled_mm::maturity_warning;
use mmaemu_api::model::warning::Warning;
use mmaemu_api::model::{dot as model_dot, Epilogue, Error, Format, Maturity, OutDtype, Preset, Profile};
use pyo3::prelude::*;

/// The ExperimentalPresetWarning of a call that uses `preset` (§7.2), as `scaled_mm` words it.
fn preset_warning(preset: &Preset) -> Option<Warning> {
    let profile = mmaemu_api::model::Catalogue::builtin().profile(DEFAULT_PROFILE).ok()?;
    maturity_warning(&Profile { preset: preset.clone(), maturity: Maturity::Validated, ..profile })
}

/// The FP8 codes of an operand in row-major order: float8 codes, uint8 codes, or float32/float64 values
/// that must be exact in `f`.
///
/// # Safety
/// As [`Desc::storage`].
unsafe fn codes(name: &str, d: &Desc, f: Format) -> Result<Vec<u8>, Error> {
    // SAFETY: forwarded.
    let storage = unsafe { d.storage() };
    let gather = || {
        let (mut out, mut reached) = (Vec::with_capacity(d.numel()), true);
        d.each_index(|_, i| match storage.get(i) {
            Some(&b) => out.push(b),
            None => reached = false,
        });
        reached.then_some(out)
    };
    let out: Option<Vec<u8>> = match d.model_dtype() {
        Dtype::Float8E4m3fn | Dtype::Float8E5m2 => gather(),
        Dtype::Other(n) if n == "uint8" => gather(),
        Dtype::Float32 | Dtype::Float64 => {
            // SAFETY: forwarded.
            let values = unsafe { d.values() };
            let table: Vec<f64> = (0..=255u8).map(|c| f.to_f64(c)).collect();
            let mut out = Vec::with_capacity(values.len());
            for (e, v) in values.into_iter().enumerate() {
                let code = if v.is_nan() {
                    Some(0x7F)
                } else {
                    (0..=255u8).find(|&c| table[c as usize].to_bits() == v.to_bits())
                };
                match code {
                    Some(c) => out.push(c),
                    None => {
                        return Err(Error::invalid_value(format!(
                            "{name}: element {e} ({v:e}) is not a {f} value (pass FP8 codes, or values exact in \
                             fmt)"
                        )))
                    }
                }
            }
            Some(out)
        }
        _ => {
            return Err(Error::wrong_type(format!(
                "{name}: expected a float8_e4m3fn or float8_e5m2 tensor, uint8 codes or float32/float64 values \
                 with fmt, got {}",
                d.dtype
            )))
        }
    };
    out.ok_or_else(|| Error::invalid_value(format!("{name}: the view reaches beyond its storage")))
}

fn format_arg(name: &str, f: &str) -> Result<Format, Error> {
    Format::from_name(f)
        .ok_or_else(|| Error::invalid_value(format!("{name}: unknown FP8 format '{f}'; expected 'e4m3' or 'e5m2'")))
}

/// `dot(a, b, c, preset, fa, fb)`: out[i] = the preset's chain over a[i, :] * b[i, :] from c[i] (+0 without
/// c), written into `dst` (float32, shape a.shape[:-1]), with the e8m0 block scales of §2.8 when given. Returns
/// the warnings.
#[pyfunction]
#[pyo3(signature = (a, b, c, preset, fa, fb, dst, scale_a=None, scale_b=None))]
#[allow(clippy::too_many_arguments)]
pub fn dot(
    py: Python<'_>,
    a: Desc,
    b: Desc,
    c: Option<Desc>,
    preset: String,
    fa: String,
    fb: String,
    dst: Desc,
    scale_a: Option<Desc>,
    scale_b: Option<Desc>,
) -> PyResult<Vec<(String, String)>> {
    no_panic(|| {
        let done = py.detach(|| {
            catch(|| -> Result<Vec<Warning>, Error> {
                let preset =
                    mmaemu_api::catalogue().preset_or_path(&preset, mmaemu_datasets::platform::read_preset_document)?;
                let (fa, fb) = (format_arg("fmt", &fa)?, format_arg("fmt", &fb)?);
                if a.shape.is_empty() || a.shape != b.shape {
                    return Err(Error::invalid_value(format!(
                        "a and b must have the same shape [..., K] (no broadcasting): got {:?} and {:?}",
                        a.shape, b.shape
                    )));
                }
                crate::budget::check(
                    "this call (its gathered operands and result)",
                    &[("a", Some(&a)), ("b", Some(&b)), ("c", c.as_ref()), ("the result", Some(&dst))],
                    &[
                        crate::budget::bytes(&[a.numel(), 2]),
                        crate::budget::bytes(&[c.as_ref().map_or(0, Desc::numel), 8]),
                        crate::budget::bytes(&[dst.numel(), 8]),
                    ],
                )?;
                let lead = &a.shape[..a.shape.len() - 1];
                let k = a.shape[a.shape.len() - 1];
                let cv = match &c {
                    None => None,
                    Some(c) => {
                        if c.shape != lead {
                            return Err(Error::invalid_value(format!(
                                "c must have the shape a.shape[:-1] = {lead:?}, got {:?}",
                                c.shape
                            )));
                        }
                        if !matches!(c.model_dtype(), Dtype::Float32 | Dtype::Float64) {
                            return Err(Error::wrong_type(format!(
                                "c must be float32 (or exact float64), got {}",
                                c.dtype
                            )));
                        }
                        // SAFETY: the Python layer keeps c referenced for the duration of this call.
                        let v = unsafe { c.values() };
                        if let Some((i, x)) = v.iter().enumerate().find(|(_, &x)| !x.is_nan() && (x as f32) as f64 != x)
                        {
                            return Err(Error::invalid_value(format!("c: element {i} ({x:e}) is not an fp32 value")));
                        }
                        Some(v)
                    }
                };
                // SAFETY: the Python layer keeps the scales referenced for the duration of this call.
                let scales =
                    unsafe { crate::block_scales::gather(&preset, lead, k, scale_a.as_ref(), scale_b.as_ref())? };
                // SAFETY: the Python layer keeps a and b referenced for the duration of this call.
                let (ca, cb) = unsafe { (codes("a", &a, fa)?, codes("b", &b, fb)?) };
                mmaemu_api::model::fpenv::check()?;
                let mut bytes = Vec::with_capacity(ca.len() / k.max(1) * 4);
                let outputs: usize = lead.iter().product();
                for i in 0..outputs {
                    let c0 = cv.as_ref().map(|v| v[i] as f32);
                    let (ra, rb) = (&ca[i * k..(i + 1) * k], &cb[i * k..(i + 1) * k]);
                    let r = match &scales {
                        None => model_dot(&preset, fa, fb, ra, rb, c0)?,
                        Some(s) => {
                            let (sa, sb) = s.row(i);
                            mmaemu_api::model::dot_scaled(&preset, fa, fb, ra, rb, sa, sb, c0)?
                        }
                    };
                    bytes.extend_from_slice(&r.to_bits().to_le_bytes());
                }
                // SAFETY: dst is the fresh contiguous float32 tensor of shape a.shape[:-1].
                unsafe { dst.write_logical(Some(&bytes)) }.map_err(Error::invalid_value)?;
                Ok(preset_warning(&preset).into_iter().collect())
            })
        });
        let warnings = done.map_err(internal)?.map_err(|e| raise(py, &e, &[]))?;
        Ok(warnings.iter().map(|w| (w.kind.name().to_string(), w.message.clone())).collect())
    })
}

/// `epilogue.apply`: the fp32 accumulator `acc` (any shape) through the epilogue with tensor-wise scales,
/// written into `dst` (the out dtype, acc's shape).
#[pyfunction]
pub fn epilogue(
    py: Python<'_>,
    acc: Desc,
    scale_a: f32,
    scale_b: f32,
    scale_result: Option<f32>,
    out_dtype: String,
    dst: Desc,
) -> PyResult<()> {
    no_panic(|| {
        let done = py.detach(|| {
            catch(|| -> Result<(), Error> {
                let name = out_dtype.strip_prefix("torch.").unwrap_or(&out_dtype);
                let out = OutDtype::from_name(name).ok_or_else(|| {
                    Error::wrong_type(format!(
                        "out_dtype must be float32, bfloat16, float16, float8_e4m3fn or float8_e5m2, got {out_dtype}"
                    ))
                })?;
                if acc.model_dtype() != Dtype::Float32 {
                    return Err(Error::wrong_type(format!("acc must be a float32 accumulator, got {}", acc.dtype)));
                }
                crate::budget::check(
                    "this call (its gathered accumulator and result)",
                    &[("acc", Some(&acc)), ("the result", Some(&dst))],
                    &[crate::budget::bytes(&[acc.numel(), 12 + 2 * dst.itemsize])],
                )?;
                // SAFETY: the Python layer keeps acc referenced for the duration of this call.
                let values: Vec<f32> = unsafe { acc.values() }.into_iter().map(|v| v as f32).collect();
                mmaemu_api::model::fpenv::check()?;
                let epi = Epilogue { scale_a, scale_b, scale_result, out };
                let bytes = mmaemu_api::model::epilogue::to_le_bytes(&epi.apply(&values), out);
                // SAFETY: dst is the fresh contiguous tensor of the out dtype and acc's shape.
                unsafe { dst.write_logical(Some(&bytes)) }.map_err(Error::invalid_value)
            })
        });
        done.map_err(internal)?.map_err(|e| raise(py, &e, &[]))
    })
}
