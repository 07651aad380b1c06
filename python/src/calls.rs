//! `scaled_mm`, `explain` and `accumulate` (docs/reference.md §5, §8.1): a model call built from the
//! described tensors, run on the backend registry with the GIL released, the result written into the
//! tensor the Python layer allocated or into out=.

use crate::budget;
use crate::desc::Desc;
use crate::direct::rows;
use crate::errors::{catch, internal, no_panic, raise};
use crate::interrupt;
use mmaemu_api::env;
use mmaemu_api::model::dtype::Dtype;
use mmaemu_api::model::scaled_mm::{
    maturity_warning, resolve_profile, Backends, BiasSpec, CallPlan, ScaledMm, Validation,
};
use mmaemu_api::model::splitk::{resolve_splitk, SplitKey, SplitRequest};
use mmaemu_api::model::warning::{Warning, WarningKind};
use mmaemu_api::model::{execute, Error, Format, OutDtype, Plan};
use mmaemu_api::registry::{OnPlacement, Placement};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// A split-K request from Python: `("auto", 0, "")`, `("count", S, "")` or `("pair", S, scheme)`.
#[derive(Clone, Debug, FromPyObject)]
pub struct SplitArg(String, i64, String);

impl SplitArg {
    fn request(&self) -> SplitRequest {
        match self.0.as_str() {
            "count" => SplitRequest::Count(self.1),
            "pair" => SplitRequest::Pair(self.1, self.2.clone()),
            _ => SplitRequest::Auto,
        }
    }
}

/// The warnings for Python: (kind name, message).
fn warnings_py(ws: &[Warning]) -> Vec<(String, String)> {
    ws.iter().map(|w| (w.kind.name().to_string(), w.message.clone())).collect()
}

/// The arguments of one call as the Python layer passes them: `((input, mat2, scale_a, scale_b, bias,
/// scale_result), (out_dtype, use_fast_accum, out, profile, splitk, backend, grad, experimental))`; experimental None
/// is MMAEMU_EXPERIMENTAL's.
impl<'a, 'py> FromPyObject<'a, 'py> for CallArgs {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<CallArgs> {
        let (
            (input, mat2, scale_a, scale_b, bias, scale_result),
            (out_dtype, use_fast_accum, out, profile, splitk, backend, grad, experimental),
        ) = obj.extract()?;
        Ok(CallArgs {
            input,
            mat2,
            scale_a,
            scale_b,
            bias,
            scale_result,
            out_dtype,
            use_fast_accum,
            out,
            profile,
            splitk,
            backend,
            grad,
            experimental,
            catalogue: mmaemu_api::catalogue(),
        })
    }
}

/// The tensors and options of one call.
pub struct CallArgs {
    input: Desc,
    mat2: Desc,
    scale_a: Desc,
    scale_b: Desc,
    bias: Option<Desc>,
    scale_result: Option<Desc>,
    out_dtype: Option<String>,
    use_fast_accum: bool,
    out: Option<Desc>,
    profile: Option<String>,
    splitk: SplitArg,
    backend: String,
    /// A tensor argument requires grad under grad mode (docs/reference.md §5.2 step 7.3).
    grad: bool,
    /// The opt-in to the experimental modes (None: MMAEMU_EXPERIMENTAL's).
    experimental: Option<bool>,
    /// The process's catalogue when the call was made: the built-ins and the bundles loaded so far.
    catalogue: std::sync::Arc<mmaemu_api::model::Catalogue>,
}

impl CallArgs {
    /// The multiply-adds of the call's GEMM (M·K·N, saturating), for [`interrupt::interruptible`].
    pub(crate) fn macs(&self) -> u128 {
        interrupt::macs(&self.input.shape, self.mat2.shape.get(1).copied().unwrap_or(0))
    }

    /// The tensors' geometry and the bytes the call sizes from them (an out= copy; for a run, the result,
    /// its accumulator and the operands' rows) against the ceiling, before anything is allocated.
    fn budget(&self, dry: bool) -> Result<(), Error> {
        let tensors = [
            ("input", Some(&self.input)),
            ("mat2", Some(&self.mat2)),
            ("scale_a", Some(&self.scale_a)),
            ("scale_b", Some(&self.scale_b)),
            ("bias", self.bias.as_ref()),
            ("scale_result", self.scale_result.as_ref()),
            ("out", self.out.as_ref()),
        ];
        if dry {
            return budget::check("explain", &tensors, &[]);
        }
        let (a, b) = (&self.input.shape, &self.mat2.shape);
        let (m, k, n) = match (a.len(), b.len()) {
            (2, 2) => (a[0], a[1], b[1]),
            _ => (0, 0, 0),
        };
        let od = self.out_dtype.as_deref().map(Dtype::from_name).unwrap_or_else(|| self.input.model_dtype());
        budget::check(
            "this call (its result, accumulator, operand rows and out= copy)",
            &tensors,
            &[
                Some(self.out.as_ref().map_or(0, Desc::reach_bytes)),
                budget::bytes(&[m, n, 8 + od.size()]),
                budget::bytes(&[m.saturating_add(n), k]),
            ],
        )
    }

    /// The model call over the described memory, after [`CallArgs::budget`].
    ///
    /// # Safety
    /// Every described tensor must stay alive and unwritten while the call is used.
    pub(crate) unsafe fn call(&self, dry: bool) -> Result<ScaledMm<'_>, Error> {
        self.budget(dry)?;
        let strict = env::strict()?;
        let experimental = env::experimental_or(self.experimental)?;
        let out = match &self.out {
            None => None,
            Some(o) => Some(o.shadow(dry)?),
        };
        // SAFETY: forwarded to the caller.
        Ok(unsafe {
            ScaledMm {
                input: self.input.view(),
                mat2: self.mat2.view(),
                scale_a: self.scale_a.scale(),
                scale_b: self.scale_b.scale(),
                bias: self.bias.as_ref().map(|b| BiasSpec {
                    dtype: b.model_dtype(),
                    numel: b.numel(),
                    // Explain (dry) reads no data; inside the block above, whose safety is forwarded.
                    values: if dry { Vec::new() } else { b.values_f32() },
                }),
                scale_result: self.scale_result.as_ref().map(|s| s.scale()),
                out_dtype: self.out_dtype.as_deref().map(Dtype::from_name),
                use_fast_accum: self.use_fast_accum,
                out,
                profile: env::checked_profile_arg(self.profile.as_deref(), &self.catalogue)?,
                catalogue: &self.catalogue,
                splitk: self.splitk.request(),
                backend: self.backend.clone(),
                strict,
                experimental,
            }
        })
    }

    /// Is an error of this class (or invalid-argument name) raised before §5.2 step 7.3, the grad guard?
    /// Steps 1-7.2 raise ReferenceRejectsError, TypeError, KeyError and, for a bias or row-wise scales,
    /// UnsupportedFeatureError; every later step (split, backend, flush-to-zero, plan) raises another.
    fn before_scope_end(&self, name: &str) -> bool {
        match name {
            "ReferenceRejectsError" | "TypeError" | "KeyError" => true,
            "UnsupportedFeatureError" => self.bias.is_some() || self.scale_a.numel() != 1 || self.scale_b.numel() != 1,
            _ => false,
        }
    }

    /// The grad guard (§5.2 step 7.3): UnsupportedFeatureError unless the call returns at step 4 (zero
    /// size) or fails earlier.
    fn grad_error(&self, plan: &CallPlan) -> Option<Error> {
        if !self.grad {
            return None;
        }
        let earlier = match &plan.validation {
            Validation::Ok => plan.backend == "none (zero-size result)",
            Validation::Error { name, .. } => self.before_scope_end(name),
        };
        (!earlier).then(|| Error::unsupported(GRAD_MESSAGE))
    }

    /// The warnings a failing call reported before it failed: the maturity warning (§5.2 step 8) when the
    /// error comes after it (§7.2: `hopper-experimental` warns, then raises SplitKUnknownError).
    fn warnings_before(&self, e: &Error) -> Vec<Warning> {
        if self.before_scope_end(e.category().name()) {
            return vec![];
        }
        match env::profile_arg(self.profile.as_deref()).and_then(|p| resolve_profile(&p, &self.catalogue)) {
            Ok(p) => maturity_warning(&p).into_iter().collect(),
            Err(_) => vec![],
        }
    }
}

/// The grad guard's message.
const GRAD_MESSAGE: &str = "mmaemu is inference-only: an input requires grad while grad mode is enabled (no \
                            autograd); call it under torch.no_grad() or pass detached tensors";

/// A failure of the binding itself (a result tensor that does not fit): never an answer about the call.
fn fault(what: String) -> Failed {
    (Error::new(mmaemu_api::model::Category::Data, format!("mmaemu internal error (please report it): {what}")), vec![])
}

/// A failed call: the error and the warnings it reported before failing.
type Failed = (Error, Vec<Warning>);

/// An error with no warning before it.
fn alone(e: Error) -> Failed {
    (e, vec![])
}

fn backends() -> OnPlacement {
    OnPlacement(Placement::Host)
}

/// What `scaled_mm` returns to Python: the status, the payload of a resized out=, the warnings.
type Outcome<'py> = (&'static str, Option<Bound<'py, PyBytes>>, Vec<(String, String)>);

/// `scaled_mm`: returns `(status, payload, warnings)`. status `result`: written into `dst`; `out`: written
/// into out=; `unchanged`: out= is returned unchanged; `resized`: out= must be resized to [M, N] and filled
/// with `payload` (row-major bytes).
#[pyfunction]
pub fn scaled_mm<'py>(py: Python<'py>, args: CallArgs, dst: Option<Desc>) -> PyResult<Outcome<'py>> {
    no_panic(|| {
        let macs = args.macs();
        let done = interrupt::interruptible(py, macs, || {
            catch(|| {
                // SAFETY: the Python layer keeps every tensor referenced for the duration of this call, and
                // the result is written only into `dst` (fresh) or out=, which the caller hands over.
                let call = unsafe { args.call(false) }.map_err(alone)?;
                let bk = backends();
                let plan = call.explain_on(&bk);
                if let Some(e) = args.grad_error(&plan) {
                    return Err(alone(e));
                }
                // The common case, on the operands where they lie; everything else is the model's run_on.
                let (target, status) = match &args.out {
                    None => (dst.as_ref(), "result"),
                    Some(o) => (Some(o), "out"),
                };
                if let Some(t) = target {
                    // SAFETY: the result tensor is fresh; out= is the caller's, written as torch writes it.
                    if let Some(ws) = unsafe { crate::direct::scaled_mm(&call, &plan, &bk, t) } {
                        return Ok(((status, None), ws));
                    }
                }
                let (m, n) =
                    (call.input.shape.first().copied().unwrap_or(0), call.mat2.shape.get(1).copied().unwrap_or(0));
                let res = call.run_on(&bk).map_err(|e| {
                    let w = args.warnings_before(&e);
                    (e, w)
                })?;
                let unchanged = res.warnings.iter().any(|w| w.kind == WarningKind::OutUnchanged);
                let zeros = res.split.is_none();
                let bytes: Option<&[u8]> = if zeros { None } else { Some(&res.out.storage) };
                let status = match &args.out {
                    _ if unchanged => ("unchanged", None),
                    None => {
                        let dst = dst.as_ref().ok_or_else(|| fault("no result tensor".to_string()))?;
                        // SAFETY: dst is the fresh contiguous [M, N] tensor of the out dtype.
                        unsafe { dst.write_logical(bytes) }.map_err(fault)?;
                        ("result", None)
                    }
                    Some(out) if out.shape == [m, n] => {
                        let logical = if zeros { None } else { Some(res.out.logical_bytes()) };
                        // SAFETY: out= is the caller's, written as torch writes it.
                        unsafe { out.write_logical(logical.as_deref()) }.map_err(fault)?;
                        ("out", None)
                    }
                    Some(out) => {
                        let payload = match bytes {
                            Some(b) => b.to_vec(),
                            None => vec![0u8; m * n * out.itemsize],
                        };
                        ("resized", Some(payload))
                    }
                };
                Ok((status, res.warnings))
            })
        })?;
        let ((status, payload), warnings) = done.map_err(internal)?.map_err(|(e, w)| raise(py, &e, &w))?;
        Ok((status, payload.map(|p| PyBytes::new(py, &p)), warnings_py(&warnings)))
    })
}

/// `explain`: the plan of the call as a dict (docs/reference.md §8.1).
#[pyfunction]
pub fn explain<'py>(py: Python<'py>, args: CallArgs) -> PyResult<Bound<'py, PyDict>> {
    no_panic(|| {
        let plan = py
            .detach(|| {
                catch(|| {
                    // SAFETY: as in scaled_mm; explain reads no operand data.
                    let call = match unsafe { args.call(true) } {
                        Ok(call) => call,
                        Err(e) => return refused(&e),
                    };
                    let plan = call.explain_on(&backends());
                    match args.grad_error(&plan) {
                        None => plan,
                        Some(e) => CallPlan {
                            validation: Validation::Error {
                                name: e.category().name().into(),
                                message: e.message().into(),
                            },
                            split: None,
                            backend: String::new(),
                            fallbacks: vec![],
                            warnings: vec![],
                            ..plan
                        },
                    }
                })
            })
            .map_err(internal)?;
        plan_dict(py, &plan)
    })
}

/// The plan of a call whose arguments cannot even be described (a size beyond 64 bits or the ceiling).
fn refused(e: &Error) -> CallPlan {
    CallPlan {
        validation: Validation::Error { name: e.category().name().into(), message: e.message().into() },
        profile: String::new(),
        preset: String::new(),
        preset_maturity: String::new(),
        split: None,
        backend: String::new(),
        fallbacks: vec![],
        warnings: vec![],
        kernel: None,
    }
}

/// A CallPlan as a dict of plain values.
pub fn plan_dict<'py>(py: Python<'py>, plan: &CallPlan) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match &plan.validation {
        Validation::Ok => d.set_item("validation", py.None())?,
        Validation::Error { name, message } => d.set_item("validation", (name, message))?,
    }
    d.set_item("profile", &plan.profile)?;
    d.set_item("preset", &plan.preset)?;
    d.set_item("preset_maturity", &plan.preset_maturity)?;
    match &plan.split {
        None => d.set_item("split", py.None())?,
        Some(s) => {
            let sd = PyDict::new(py);
            sd.set_item("s", s.s)?;
            sd.set_item("scheme", s.scheme.name())?;
            sd.set_item("source", s.source.name())?;
            sd.set_item("verified", s.verified)?;
            sd.set_item("table_id", &s.table_id)?;
            sd.set_item("note", &s.note)?;
            d.set_item("split", sd)?;
        }
    }
    d.set_item("backend", &plan.backend)?;
    d.set_item("fallbacks", &plan.fallbacks)?;
    d.set_item("warnings", warnings_py(&plan.warnings))?;
    d.set_item("kernel", &plan.kernel)?;
    Ok(d)
}

/// The FP8 format of an `accumulate` operand (§5.6's dtype rule: TypeError otherwise).
fn operand_format(name: &str, d: &Desc) -> Result<Format, Error> {
    match d.model_dtype() {
        Dtype::Float8E4m3fn => Ok(Format::E4m3),
        Dtype::Float8E5m2 => Ok(Format::E5m2),
        Dtype::Float8E4m3fnuz | Dtype::Float8E5m2fnuz => {
            Err(Error::wrong_type(format!("{name}: {} (AMD fnuz encoding) is not supported", d.dtype)))
        }
        _ => Err(Error::wrong_type(format!("{name}: expected a float8_e4m3fn or float8_e5m2 dtype, got {}", d.dtype))),
    }
}

/// `accumulate(a, b, ...)`: the fp32 accumulator of a [M, K] x b [N, K]^T on a profile's preset, written
/// into `dst` (docs/reference.md §5.6). Returns the warnings. The order: operand dtypes (TypeError), shapes
/// (ValueError), the profile (KeyError), the split key's out dtype (TypeError), the grad guard, the
/// maturity warning, the zero-size return, the split decision, the backend, flush-to-zero, the plan.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn accumulate(
    py: Python<'_>,
    a: Desc,
    b: Desc,
    use_fast_accum: bool,
    splitk: SplitArg,
    profile: Option<String>,
    backend: String,
    out_dtype_for_split: String,
    grad: bool,
    dst: Desc,
) -> PyResult<Vec<(String, String)>> {
    no_panic(|| {
        let macs = interrupt::macs(&a.shape, b.shape.first().copied().unwrap_or(0));
        let done = interrupt::interruptible(py, macs, || {
            catch(|| -> Result<Vec<Warning>, Failed> {
                let (fa, fb) = (operand_format("a", &a).map_err(alone)?, operand_format("b", &b).map_err(alone)?);
                if a.shape.len() != 2 || b.shape.len() != 2 {
                    return Err(alone(Error::invalid_value(format!(
                        "expected a [M, K] and b [N, K] (b is mat2 transposed), got shapes {:?} and {:?}",
                        a.shape, b.shape
                    ))));
                }
                if b.shape[1] != a.shape[1] {
                    return Err(alone(Error::invalid_value(format!(
                        "K mismatch: a is {:?} and b is {:?}; a must be [M, K] and b [N, K] (b is mat2 transposed)",
                        a.shape, b.shape
                    ))));
                }
                let (m, k, n) = (a.shape[0], a.shape[1], b.shape[0]);
                budget::check(
                    "this call (its accumulator and operand rows)",
                    &[("a", Some(&a)), ("b", Some(&b)), ("the result", Some(&dst))],
                    &[budget::bytes(&[m, n, 8]), budget::bytes(&[m.saturating_add(n), k])],
                )
                .map_err(alone)?;
                let catalogue = mmaemu_api::catalogue();
                let profile = env::checked_profile_arg(profile.as_deref(), &catalogue)
                    .and_then(|p| resolve_profile(&p, &catalogue))
                    .map_err(alone)?;
                let name = out_dtype_for_split.strip_prefix("torch.").unwrap_or(&out_dtype_for_split);
                let od = OutDtype::from_name(name).ok_or_else(|| {
                    alone(Error::wrong_type(format!(
                        "out_dtype_for_split must be float32, bfloat16, float16, float8_e4m3fn or float8_e5m2, \
                         got {out_dtype_for_split}"
                    )))
                })?;
                if grad {
                    return Err(alone(Error::unsupported(GRAD_MESSAGE)));
                }
                let mut warnings: Vec<Warning> = maturity_warning(&profile).into_iter().collect();
                if m == 0 || n == 0 || k == 0 {
                    // SAFETY: dst is the fresh contiguous float32 [M, N] tensor.
                    unsafe { dst.write_logical(None) }.map_err(fault)?;
                    return Ok(warnings);
                }
                let strict = env::strict().map_err(|e| (e, warnings.clone()))?;
                let key = SplitKey { m, n, k, fa, fb, out: od, fast: use_fast_accum };
                let bk = backends();
                let computed = resolve_splitk(&profile, &key, &splitk.request(), true, strict).and_then(
                    |(split, split_warnings)| {
                        warnings.extend(split_warnings);
                        let selected = bk.select(&backend, &profile.preset, fa, fb)?;
                        warnings.extend(selected.warnings.iter().cloned());
                        mmaemu_api::model::fpenv::check()?;
                        let plan = Plan::new(&profile.preset, k, use_fast_accum, split.try_splitk()?)?;
                        // SAFETY: the Python layer keeps a and b referenced for the duration of this call.
                        let (va, vb) = unsafe { (a.view(), b.view()) };
                        let reach = || Error::invalid_value("an operand reaches beyond its storage".to_string());
                        let (ca, cb) = (rows(&va).ok_or_else(reach)?, rows(&vb).ok_or_else(reach)?);
                        let ops = mmaemu_api::model::Operands { fa, fb, a: &ca, b: &cb, m, n, k };
                        execute(&profile.preset, &plan, &ops, selected.engine)
                    },
                );
                match computed {
                    Err(e) => Err((e, warnings)),
                    Ok(acc) => {
                        let bytes: Vec<u8> = acc.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect();
                        // SAFETY: dst is the fresh contiguous float32 [M, N] tensor.
                        unsafe { dst.write_logical(Some(&bytes)) }.map_err(fault)?;
                        Ok(warnings)
                    }
                }
            })
        })?;
        let warnings = done.map_err(internal)?.map_err(|(e, w)| raise(py, &e, &w))?;
        Ok(warnings_py(&warnings))
    })
}

/// Write `payload` (row-major element bytes) into the described tensor: a resized out=.
#[pyfunction]
pub fn fill(py: Python<'_>, dst: Desc, payload: &[u8]) -> PyResult<()> {
    // SAFETY: the Python layer passes a tensor it owns, just resized to hold exactly these elements.
    no_panic(|| unsafe { dst.write_logical(Some(payload)) }.map_err(|e| raise(py, &fault(e).0, &[])))
}
