//! `scaled_mm` with torch 2.7.1 `torch._scaled_mm` semantics on a profile's reference platform (docs/reference.md §5),
//! and `explain` (§8.1), which runs the same checks and decisions without computing.

// The checks run in exactly the order of §5.2; the first failing one decides the error. Step 1 (Python argument types)
// is empty: the Rust types make those mistakes impossible. Step 5.2's device check and the autograd check (R.5) never
// fire in a host-only library.

mod checks;
mod rowwise;
mod scaling;

pub use scaling::Scaling;

use crate::accumulate::{execute, ChainEngine, Operands, ReferenceEngine};
use crate::catalogue::Catalogue;
use crate::cutlass_rowwise::RowwiseEpilogue;
use crate::dtype::Dtype;
use crate::epilogue::{Epilogue, OutDtype};
use crate::error::{Category, Error, Result};
use crate::format::Format;
use crate::plan::Plan;
use crate::preset::{Maturity, Preset};
use crate::profile::{Profile, DEFAULT_PROFILE};
use crate::splitk::{resolve_splitk, SplitDecision, SplitKey, SplitRequest};
use crate::tensor::{is_col_major, is_contiguous, is_row_major, Tensor, View};
use crate::warning::{Warning, WarningKind};

/// Step 7.2 without the opt-in: row-wise scales (and a bias with them) stay outside the validated scope.
pub const ROWWISE_OPT_IN: &str = "row-wise scales are not supported in mmaemu 0.1 without opting in to experimental \
     modes: the row-wise kernel (CUTLASS f8f8bf16_rowwise, with its bias) is modelled from its source and not yet \
     validated by a recording; opt in with experimental=True or mmaemu.experimental() in Python, --experimental on the \
     command line, or MMAEMU_EXPERIMENTAL=1";

/// A scale tensor (`scale_a`, `scale_b`, `scale_result`): dtype, shape and element values (as f64; a
/// float32 scale's value is `value as f32`, i.e. the f64 value rounded to nearest even).
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleTensor {
    /// Element dtype (torch requires float32).
    pub dtype: Dtype,
    /// Shape ([] for a 0-dim scalar).
    pub shape: Vec<usize>,
    /// Element values, row-major (one per element; may be empty for a scale of more than one element,
    /// whose values no check reads).
    pub values: Vec<f64>,
    /// Is the tensor contiguous (row-wise scales must be).
    pub contiguous: bool,
}

impl ScaleTensor {
    /// A 0-dim float32 scale.
    pub fn scalar(v: f32) -> ScaleTensor {
        ScaleTensor { dtype: Dtype::Float32, shape: vec![], values: vec![v as f64], contiguous: true }
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// The tensor-wise fp32 value.
    fn value_f32(&self) -> f32 {
        self.values.first().copied().unwrap_or(0.0) as f32
    }
}

/// A bias argument: dtype, length and element values (the exact values of its elements, a bf16 or fp16 value
/// widened to f32; may be empty when no result is computed from it, e.g. a bias that is refused or `explain`).
#[derive(Clone, Debug, PartialEq)]
pub struct BiasSpec {
    /// Element dtype.
    pub dtype: Dtype,
    /// Number of elements.
    pub numel: usize,
    /// Element values (numel of them, or none).
    pub values: Vec<f32>,
}

/// Which profile a call uses.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum ProfileArg {
    /// The default profile (`hopper`; the facade applies MMAEMU_PROFILE).
    #[default]
    Default,
    /// A profile by name.
    Name(String),
    /// A profile value (built-in or user-defined).
    Value(Box<Profile>),
}

/// The arguments of one `scaled_mm` call: torch 2.7.1's eight, then out=, and mmaemu's profile, splitk,
/// backend and strict.
#[derive(Clone, Debug)]
pub struct ScaledMm<'a> {
    /// mat1 = A, [M, K].
    pub input: View<'a>,
    /// mat2 = B, [K, N] (normally the transpose of a row-major [N, K] weight).
    pub mat2: View<'a>,
    /// scale_a: the scale of `input` (one value, or one per row).
    pub scale_a: ScaleTensor,
    /// scale_b: the scale of `mat2` (one value, or one per column).
    pub scale_b: ScaleTensor,
    /// bias: added in the epilogue, if given.
    pub bias: Option<BiasSpec>,
    /// scale_result: the output scale of FP8 out dtypes, if given.
    pub scale_result: Option<ScaleTensor>,
    /// out_dtype (None: the input's dtype).
    pub out_dtype: Option<Dtype>,
    /// use_fast_accum (torch's default: false).
    pub use_fast_accum: bool,
    /// out=.
    pub out: Option<Tensor>,
    /// The profile.
    pub profile: ProfileArg,
    /// The catalogue the profile's name is looked up in (the built-ins unless the caller loaded bundles).
    pub catalogue: &'a Catalogue,
    /// The split-K request.
    pub splitk: SplitRequest,
    /// The backend name: `auto`, `reference`, `cuda`, `cuda:<kernel>`, or any other name the [`Backends`]
    /// the call runs on knows (the facade adds `cpu`).
    pub backend: String,
    /// Strict split-K mode (no envelope inference).
    pub strict: bool,
    /// Opt-in to the experimental scaling modes (row-wise scales, with or without a bias): without it they raise
    /// UnsupportedFeatureError, as the 0.1 contract and the recordings' `out:row-wise` rows say (§5.2 step 7).
    pub experimental: bool,
}

/// The outcome of `explain`'s validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Validation {
    /// The call would run.
    Ok,
    /// The first error the call would raise.
    Error {
        /// The category (or invalid-argument kind) name.
        name: String,
        /// The message.
        message: String,
    },
}

/// What a call would do (docs/reference.md §8.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallPlan {
    /// "ok" or the first error.
    pub validation: Validation,
    /// Profile name ("" if it did not resolve).
    pub profile: String,
    /// Preset name.
    pub preset: String,
    /// Preset maturity.
    pub preset_maturity: String,
    /// The split decision (None for zero-size, out-unchanged and error cases).
    pub split: Option<SplitDecision>,
    /// The backend, or why none is needed.
    pub backend: String,
    /// Why each faster backend was skipped.
    pub fallbacks: Vec<String>,
    /// Every warning the call reports.
    pub warnings: Vec<Warning>,
    /// The kernel the reference runs and the source it is modelled from, where mmaemu models a named kernel
    /// (row-wise scales: CUTLASS f8f8bf16_rowwise); None for the cuBLASLt calls of the tables.
    pub kernel: Option<String>,
}

/// The result of a call: the output tensor (or out= itself) and the warnings it reports.
#[derive(Clone, Debug)]
pub struct ScaledMmOutput {
    /// The result; when out= was given, that buffer (possibly resized).
    pub out: Tensor,
    /// Warnings, in the order they arose.
    pub warnings: Vec<Warning>,
    /// The split used (None when nothing was computed).
    pub split: Option<SplitDecision>,
}

/// What remains to do after the checks.
enum Stage {
    /// A zero-size call: zeros of this dtype.
    Zero(Dtype),
    /// out= is neither row- nor column-major: returned unchanged.
    Unchanged,
    /// A GEMM to compute.
    Run(Box<RunPlan>),
}

struct RunPlan {
    fa: Format,
    fb: Format,
    od: OutDtype,
    split: SplitDecision,
    plan: Plan,
    epilogue: CallEpilogue,
}

/// The epilogue a call runs: cuBLASLt's tensor-wise one (§4.1) or the CUTLASS row-wise kernel's (§4.2).
enum CallEpilogue {
    TensorWise(Epilogue),
    RowWise(RowwiseEpilogue),
}

struct Prepared<'b> {
    profile: Profile,
    warnings: Vec<Warning>,
    stage: Stage,
    /// The backend (selected for calls that compute).
    selected: Option<Selected<'b>>,
    /// The modelled kernel and its source (`CallPlan.kernel`).
    kernel: Option<String>,
}

/// What `prepare` knows when it fails: the profile if it resolved.
struct Failed {
    profile: Option<Box<Profile>>,
    error: Error,
}

fn r(msg: String) -> Error {
    Error::rejects(msg)
}

/// The effective profile, names looked up in `catalogue`.
pub fn resolve_profile(p: &ProfileArg, catalogue: &Catalogue) -> Result<Profile> {
    match p {
        ProfileArg::Default => catalogue.profile(DEFAULT_PROFILE),
        ProfileArg::Name(n) => catalogue.profile(n),
        ProfileArg::Value(p) => Ok((**p).clone()),
    }
}

/// The maturity warning of §5.2 step 8, if any.
pub fn maturity_warning(profile: &Profile) -> Option<Warning> {
    let preset = &profile.preset;
    let msg = match preset.maturity() {
        Maturity::Validated if profile.maturity == Maturity::Experimental => {
            Some(format!("profile '{}' is experimental: {}", profile.name, profile.description))
        }
        _ => preset.maturity_note(),
    };
    msg.map(|m| Warning::new(WarningKind::ExperimentalPreset, m))
}

/// A backend chosen for one call (docs/reference.md §9.5): the engine that computes its chains, the name
/// `explain` reports, why each faster backend was skipped, and the warnings the selection raised.
pub struct Selected<'e> {
    /// The engine.
    pub engine: &'e dyn ChainEngine,
    /// The backend name for `CallPlan.backend` (`reference`, `cuda:<kernel>`, ...).
    pub name: String,
    /// Why each backend tried before this one was skipped (`CallPlan.fallbacks`).
    pub fallbacks: Vec<String>,
    /// Warnings of the selection (BackendFallbackWarning for a backend that failed its self-check).
    pub warnings: Vec<Warning>,
}

/// Backend selection (§5.2 step 11, §9.5): what a backend name means for a call. The model knows only its
/// own reference engine ([`ReferenceBackends`]); the `mmaemu` facade passes a registry that also knows the
/// fast backends, to [`ScaledMm::explain_on`] and [`ScaledMm::run_on`]. Every backend gives the same bits.
pub trait Backends: Sync {
    /// The backend `name` (`auto`, `reference`, ...) for a call of `preset` with formats fa x fb, or the
    /// error the call raises (BackendUnavailableError; an invalid value for an unknown name).
    fn select(&self, name: &str, preset: &Preset, fa: Format, fb: Format) -> Result<Selected<'_>>;
}

/// The model's own backend selection: host views and no CUDA, so everything runs on [`ReferenceEngine`]
/// ([`select_backend`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ReferenceBackends;

impl Backends for ReferenceBackends {
    fn select(&self, name: &str, _preset: &Preset, _fa: Format, _fb: Format) -> Result<Selected<'_>> {
        let (name, fallbacks) = select_backend(name)?;
        Ok(Selected { engine: &ReferenceEngine, name, fallbacks, warnings: vec![] })
    }
}

/// [`ScaledMm::run_with`]: the names of [`ReferenceBackends`], computed with one given engine.
struct FixedEngine<'e>(&'e dyn ChainEngine);

impl Backends for FixedEngine<'_> {
    fn select(&self, name: &str, preset: &Preset, fa: Format, fb: Format) -> Result<Selected<'_>> {
        let s = ReferenceBackends.select(name, preset, fa, fb)?;
        Ok(Selected { engine: self.0, name: self.0.name(), ..s })
    }
}

/// Backend selection (§5.2 step 11, §9.5) for host views: returns (backend, fallbacks).
pub fn select_backend(name: &str) -> Result<(String, Vec<String>)> {
    match name {
        "auto" => Ok(("reference".into(), vec!["cuda: tensors on cpu".into()])),
        "reference" => Ok(("reference".into(), vec![])),
        n if n == "cuda" || n.starts_with("cuda:") => {
            Err(Error::new(Category::BackendUnavailable, format!("backend '{n}' unavailable: tensors on cpu")))
        }
        n => Err(Error::invalid_value(format!(
            "unknown backend '{n}'; expected 'auto', 'reference', 'cuda' or 'cuda:<kernel>'"
        ))),
    }
}

impl<'a> ScaledMm<'a> {
    /// A standard call: input [M, K] row-major, mat2 the transpose of a row-major [N, K], float32
    /// tensor-wise scales, no bias, default out dtype, slow accumulation, default profile, auto split.
    pub fn new(input: View<'a>, mat2: View<'a>, scale_a: f32, scale_b: f32) -> ScaledMm<'a> {
        ScaledMm {
            input,
            mat2,
            scale_a: ScaleTensor::scalar(scale_a),
            scale_b: ScaleTensor::scalar(scale_b),
            bias: None,
            scale_result: None,
            out_dtype: None,
            use_fast_accum: false,
            out: None,
            profile: ProfileArg::Default,
            catalogue: Catalogue::builtin(),
            splitk: SplitRequest::Auto,
            backend: "auto".into(),
            strict: false,
            experimental: false,
        }
    }

    /// Steps 2–13 of §5.2. `explain` stops here; `run` goes on to step 14.
    fn prepare<'b>(&self, dry: bool, backends: &'b dyn Backends) -> std::result::Result<Prepared<'b>, Failed> {
        let fail = |profile: Option<&Profile>, error: Error| Failed { profile: profile.cloned().map(Box::new), error };
        self.argument_checks(dry).map_err(|e| fail(None, e))?;
        self.torch_checks().map_err(|e| fail(None, e))?;
        // Step 3: the profile, before the zero-size return.
        let profile = resolve_profile(&self.profile, self.catalogue).map_err(|e| fail(None, e))?;
        let p = Some(&profile);
        let (m, k, n) = (self.input.shape[0], self.input.shape[1], self.mat2.shape[1]);
        let od = self.effective_out_dtype();
        // Step 4: zero-size early return.
        if m == 0 || n == 0 || k == 0 {
            return Ok(Prepared { profile, warnings: vec![], stage: Stage::Zero(od), selected: None, kernel: None });
        }
        let (fa, fb, od, copied) = self.cublas_checks(&od).map_err(|e| fail(p, e))?;
        // Step 6: the profile's cuBLAS rejections.
        if let Some(rule) = profile.rejection(fa, fb, od) {
            return Err(fail(p, r(format!("{} [profile {}]", rule.message, profile.name))));
        }
        // Step 7: scope. A bias with tensor-wise scales is added by cuBLASLt's EPILOGUE_BIAS, whose add
        // precision and fusion cuBLAS does not document: refused. Row-wise scales run the CUTLASS kernel
        // (§4.2), modelled from its source, with or without a bias.
        let scaling = self.scaling();
        if self.bias.is_some() && scaling == Scaling::TensorWise {
            return Err(fail(
                p,
                Error::unsupported(
                    "bias is not supported with tensor-wise scales: torch 2.7.1 adds it in cuBLASLt's EPILOGUE_BIAS, \
                     whose add precision and fusion cuBLAS does not document (pass bias=None and add it yourself; \
                     with row-wise scales and experimental modes on, the bias is modelled)",
                ),
            ));
        }
        if scaling == Scaling::RowWise {
            if !self.experimental {
                return Err(fail(p, Error::unsupported(ROWWISE_OPT_IN)));
            }
            return self.prepare_rowwise(dry, profile, fa, fb, od, backends);
        }
        // Step 8: maturity warning.
        let mut warnings: Vec<Warning> = maturity_warning(&profile).into_iter().collect();
        // Step 9: an out= of the right shape that is neither row- nor column-major is returned unchanged.
        if let Some(out) = &self.out {
            if out.shape == [m, n] && !is_row_major(&out.shape, &out.strides) && !is_col_major(&out.shape, &out.strides)
            {
                warnings.push(Warning::new(
                    WarningKind::OutUnchanged,
                    format!(
                        "out= with strides {:?} is neither row- nor column-major: torch 2.7.1 computes into a contiguous \
                         copy and never copies it back, so out= is returned unchanged",
                        out.strides
                    ),
                ));
                return Ok(Prepared { profile, warnings, stage: Stage::Unchanged, selected: None, kernel: None });
            }
        }
        // Step 10: split-K resolution (§6.2 key).
        let out_col = self.out.as_ref().is_some_and(|o| o.shape == [m, n] && is_col_major(&o.shape, &o.strides));
        let key = if out_col {
            SplitKey { m: n, n: m, k, fa: fb, fb: fa, out: od, fast: self.use_fast_accum }
        } else {
            SplitKey { m, n, k, fa, fb, out: od, fast: self.use_fast_accum }
        };
        let input_contig = copied || self.input.is_contiguous();
        let layout_std = input_contig && self.mat2.t().is_contiguous();
        let (split, split_warnings) =
            resolve_splitk(&profile, &key, &self.splitk, layout_std, self.strict).map_err(|e| fail(p, e))?;
        warnings.extend(split_warnings);
        // Step 11: backend selection.
        let selected = backends.select(&self.backend, &profile.preset, fa, fb).map_err(|e| fail(p, e))?;
        warnings.extend(selected.warnings.iter().cloned());
        // Step 12: the FTZ check (not in explain).
        if !dry {
            crate::fpenv::check().map_err(|e| fail(p, e))?;
        }
        // Step 13: plan construction.
        // The plan (§3.4): the profile's GPU splits as its kernels do, then the preset's arithmetic plans it.
        profile.check_split(split.splitk(), self.use_fast_accum, k).map_err(|e| fail(p, e))?;
        let plan = Plan::new(&profile.preset, k, self.use_fast_accum, split.splitk()).map_err(|e| fail(p, e))?;
        let epilogue = CallEpilogue::TensorWise(Epilogue {
            scale_a: self.scale_a.value_f32(),
            scale_b: self.scale_b.value_f32(),
            scale_result: self.scale_result.as_ref().map(|s| s.value_f32()),
            out: od,
        });
        let stage = Stage::Run(Box::new(RunPlan { fa, fb, od, split, plan, epilogue }));
        Ok(Prepared { profile, warnings, stage, selected: Some(selected), kernel: None })
    }

    fn effective_out_dtype(&self) -> Dtype {
        self.out_dtype
            .clone()
            .or_else(|| self.out.as_ref().map(|o| o.dtype.clone()))
            .unwrap_or_else(|| self.input.dtype.clone())
    }

    fn is_rowwise(&self) -> bool {
        !(self.scale_a.numel() == 1 && self.scale_b.numel() == 1)
    }

    /// The scaling kind of the call, once torch's checks have passed (§5.2 step 2.4).
    pub fn scaling(&self) -> Scaling {
        if self.is_rowwise() {
            Scaling::RowWise
        } else {
            Scaling::TensorWise
        }
    }

    /// `explain` (§8.1): the plan of the call without computing it, with the model's own backends
    /// ([`ReferenceBackends`]). Never fails: errors are reported in `validation`.
    pub fn explain(&self) -> CallPlan {
        self.explain_on(&ReferenceBackends)
    }

    /// [`ScaledMm::explain`] with the backends of a registry.
    pub fn explain_on(&self, backends: &dyn Backends) -> CallPlan {
        match self.prepare(true, backends) {
            Err(Failed { profile, error }) => {
                let (profile, preset, maturity) = match &profile {
                    Some(p) => (p.name.clone(), p.preset.name().to_string(), p.preset.maturity().name().to_string()),
                    None => (String::new(), String::new(), String::new()),
                };
                CallPlan {
                    validation: Validation::Error {
                        name: error.category().name().into(),
                        message: error.message().into(),
                    },
                    profile,
                    preset,
                    preset_maturity: maturity,
                    split: None,
                    backend: String::new(),
                    fallbacks: vec![],
                    warnings: vec![],
                    kernel: None,
                }
            }
            Ok(prep) => {
                let kernel = prep.kernel;
                let (split, backend, fallbacks) = match (prep.stage, prep.selected) {
                    (Stage::Zero(_), _) => (None, "none (zero-size result)".to_string(), vec![]),
                    (Stage::Unchanged, _) => (None, "none (out= is returned unchanged)".to_string(), vec![]),
                    (Stage::Run(run), Some(sel)) => (Some(run.split), sel.name, sel.fallbacks),
                    (Stage::Run(run), None) => (Some(run.split), String::new(), vec![]),
                };
                CallPlan {
                    validation: Validation::Ok,
                    profile: prep.profile.name.clone(),
                    preset: prep.profile.preset.name().to_string(),
                    preset_maturity: prep.profile.preset.maturity().name().to_string(),
                    split,
                    backend,
                    fallbacks,
                    warnings: prep.warnings,
                    kernel,
                }
            }
        }
    }

    /// Run the call with the model's own backends ([`ReferenceBackends`]).
    pub fn run(self) -> Result<ScaledMmOutput> {
        self.run_on(&ReferenceBackends)
    }

    /// Run the call with a chain engine (the backend name is checked as [`ReferenceBackends`] does).
    pub fn run_with(self, engine: &dyn ChainEngine) -> Result<ScaledMmOutput> {
        self.run_on(&FixedEngine(engine))
    }

    /// Run the call (§5.2 steps 2–14) on the backend the registry selects for it.
    pub fn run_on(self, backends: &dyn Backends) -> Result<ScaledMmOutput> {
        let prep = self.prepare(false, backends).map_err(|f| f.error)?;
        let (m, k, n) = (self.input.shape[0], self.input.shape[1], self.mat2.shape[1]);
        let mut warnings = prep.warnings;
        let run = match prep.stage {
            Stage::Unchanged => {
                let out = self.out.unwrap_or_else(|| Tensor::zeros(Dtype::Float32, &[m, n]));
                return Ok(ScaledMmOutput { out, warnings, split: None });
            }
            Stage::Zero(od) => {
                let mut out = place_out(self.out, od, m, n, &mut warnings);
                // An empty result of 2^31 rows must not take 2^31 steps.
                let rows = if n > 0 { m } else { 0 };
                for i in 0..rows {
                    for j in 0..n {
                        out.set(i, j, 0);
                    }
                }
                return Ok(ScaledMmOutput { out, warnings, split: None });
            }
            Stage::Run(run) => run,
        };
        // A as a packed [M, K]: reading the view element by element is what torch's contiguous copy of an
        // input that is neither row- nor column-major (§5.2 step 5.3) amounts to.
        let a = self.input.gather_bytes("mat1")?;
        // B as [N, K]: the transpose of mat2.
        let b = self.mat2.t().gather_bytes("mat2")?;
        let ops = Operands { fa: run.fa, fb: run.fb, a: &a, b: &b, m, n, k };
        let engine: &dyn ChainEngine = match &prep.selected {
            Some(sel) => sel.engine,
            None => &ReferenceEngine,
        };
        let acc = execute(&prep.profile.preset, &run.plan, &ops, engine)?;
        let bits = match &run.epilogue {
            CallEpilogue::TensorWise(e) => e.apply(&acc),
            CallEpilogue::RowWise(e) => e.apply(&acc, m, n),
        };
        let mut out = place_out(self.out, Dtype::of_out(run.od), m, n, &mut warnings);
        write_result(&mut out, &bits, m, n);
        Ok(ScaledMmOutput { out, warnings, split: Some(run.split) })
    }
}

/// Write the row-major [m, n] element bits into `out`: in one pass when out is packed row-major from the start of
/// its storage (a new result, a contiguous out=), else element by element at out's strides.
fn write_result(out: &mut Tensor, bits: &[u32], m: usize, n: usize) {
    let w = out.dtype.size().min(4);
    if out.offset == 0 && is_contiguous(&out.shape, &out.strides) && out.storage.len() == bits.len() * w {
        match w {
            1 => out.storage.iter_mut().zip(bits).for_each(|(d, &b)| *d = b as u8),
            2 => out
                .storage
                .chunks_exact_mut(2)
                .zip(bits)
                .for_each(|(d, &b)| d.copy_from_slice(&(b as u16).to_le_bytes())),
            _ => out.storage.chunks_exact_mut(4).zip(bits).for_each(|(d, &b)| d.copy_from_slice(&b.to_le_bytes())),
        }
        return;
    }
    // No columns: nothing to write, however many rows (M can be huge when N = 0).
    let rows = if n > 0 { m } else { 0 };
    for i in 0..rows {
        for j in 0..n {
            out.set(i, j, bits[i * n + j]);
        }
    }
}

/// §5.4: the tensor the result goes into — a new contiguous one, out= itself, or out= resized to a
/// contiguous [m, n] (with the out-resized warning when it had elements).
fn place_out(out: Option<Tensor>, od: Dtype, m: usize, n: usize, warnings: &mut Vec<Warning>) -> Tensor {
    match out {
        None => Tensor::zeros(od, &[m, n]),
        Some(o) if o.shape == [m, n] => o,
        Some(o) => {
            if o.numel() >= 1 {
                warnings.push(Warning::new(
                    WarningKind::OutResized,
                    format!(
                        "An output with one or more elements was resized since it had shape {:?}, which does not match \
                         the required output shape [{m}, {n}].",
                        o.shape
                    ),
                ));
            }
            Tensor::zeros(o.dtype, &[m, n])
        }
    }
}
