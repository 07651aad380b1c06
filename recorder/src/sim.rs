//! The simulated device: the recording pipeline run against the mmaemu model instead of a GPU, for machines
//! without one (CI, development). Rows it produces carry `truth = "model"`: self-consistency vectors, never
//! validation evidence.
//!
//! - The heuristic answers like the profile's reference platform: the profile's cuBLAS rejections
//!   (`CUBLAS_STATUS_NOT_SUPPORTED`), then the exact row of the profile's recorded split-K table at the
//!   requested workspace (its algo id, tile, stages, numSplitsK, customOption, reduction scheme, swizzling),
//!   else the model's split resolution (workspace 0, envelope inference), else S = 1 as an assumption (noted
//!   in the `algo` column's `source`).
//! - A run is `ScaledMm` on the profile with that split passed explicitly, the operands laid out as the
//!   case's geometry says, computed by the fastest CPU backend that passed its self-check
//!   (`mmaemu_api::registry().resolve("auto")`, bit-identical to the model by its checks); the model is
//!   deterministic, so every run returns the same bits (a test hook can make one run differ). The amax of
//!   a Transformer Engine call is not modelled: simulated rows carry none. A scale recipe's call gets the
//!   recipe's scale tensors; when the model does not compute it, the outcome is a skip with the model's
//!   message (the loaded-cuBLASLt gate of a real device does not apply: the model is the device).
//! - The calls of a sweep repeat their accumulations: the settings of one shape differ mostly in the
//!   epilogue (out dtype, scales). [`MemoEngine`] keeps the last accumulations, keyed by the whole input
//!   of [`ChainEngine::run_plan`] (preset, plan, formats, sizes and the operand bytes, compared in full),
//!   so each is computed once; the bits are the engine's either way.

use crate::descriptor::CallConfig;
use crate::device::{AlgoInfo, Call, Device, Heuristic, Inputs, Platform, RunOutcome};
use crate::error::RecordError;
use crate::scaling::RecipeScales;
use mmaemu_model::block_call::{BlockMode, BlockScaledCall};
use mmaemu_model::block_gemm::Dims;
use mmaemu_model::dtype::Dtype;
use mmaemu_model::scaled_mm::{ProfileArg, ScaleTensor, ScaledMm};
use mmaemu_model::splitk::{resolve_splitk, try_table_lookup, SplitKey, SplitRequest};
use mmaemu_model::tensor::View;
use mmaemu_model::{Category, ChainEngine, Format, Operands, Plan, Preset, Profile, Scheme};
use serde_json::json;
use std::sync::Mutex;

/// The simulated device of one profile.
pub struct SimDevice {
    profile: Profile,
    engine: MemoEngine,
    platform: Platform,
    /// Test hook: every `n`-th run call returns a last result that differs in one bit.
    flaky_every: Option<u64>,
    calls: u64,
}

impl SimDevice {
    /// The simulated device of profile `name`.
    pub fn new(name: &str) -> Result<SimDevice, RecordError> {
        let profile =
            mmaemu_api::catalogue().profile(name).map_err(|e| RecordError::Usage(format!("--profile: {e}")))?;
        SimDevice::from_profile(profile)
    }

    /// The simulated device that plays `profile`, which it owns: nothing else in the process needs to know it (no
    /// catalogue entry), so a bring-up's fitting side cannot reach the GPU's truth but through the device's calls.
    pub fn from_profile(profile: Profile) -> Result<SimDevice, RecordError> {
        let engine = mmaemu_api::registry()
            .resolve("auto")
            .map_err(|e| RecordError::Model(format!("no CPU backend for the simulated device: {e}")))?
            .engine;
        let gpu = profile.gpu_name.clone().unwrap_or_else(|| "no reference GPU".to_string());
        let json = json!({
            "gpu": format!("simulated: {gpu} (mmaemu model, profile {})", profile.name),
            "capability": [profile.capability.0, profile.capability.1],
            "sm_count": profile.sm_count,
            "driver": null,
            "cuda_runtime": null,
            "cublaslt": profile.cublaslt_version,
            "torch": null,
            "caller": null,
            "workspace_bytes": null,
            "simulated": true,
            "profile": profile.name,
            "engine": engine.name(),
            "recorder": format!("mmaemu-record {}", env!("CARGO_PKG_VERSION")),
        });
        let platform = Platform {
            json,
            gpu_short: "simulated".into(),
            capability: profile.capability,
            cublaslt: profile.cublaslt_version.clone(),
            simulated: true,
        };
        Ok(SimDevice { profile, engine: MemoEngine::new(engine), platform, flaky_every: None, calls: 0 })
    }

    /// Test hook: every `n`-th run returns a last result with one flipped bit (a simulated nondeterminism).
    pub fn with_flaky_every(mut self, n: u64) -> SimDevice {
        self.flaky_every = Some(n.max(1));
        self
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }
}

fn algo(split_s: i64, source: &'static str) -> AlgoInfo {
    AlgoInfo {
        algo_id: -1,
        tile_id: -1,
        stages_id: -1,
        split_s,
        reduction_scheme: -1,
        custom_option: -1,
        cta_swizzling: -1,
        inner_shape_id: None,
        cluster_shape_id: None,
        workspace_bytes: 0,
        waves_count: 0.0,
        source,
    }
}

impl Device for SimDevice {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    fn heuristic(&mut self, cfg: &CallConfig) -> Result<Heuristic, RecordError> {
        self.answer(cfg)
    }

    fn run(&mut self, cfg: &CallConfig, inputs: &Inputs<'_>, runs: usize) -> Result<RunOutcome, RecordError> {
        let outcome = self.compute(cfg, inputs, runs)?;
        Ok(self.flake(outcome))
    }

    /// The calls of a chunk computed in parallel (the model is deterministic and the device holds no
    /// state but the test hook's counter, applied afterwards in call order).
    fn run_batch(&mut self, calls: &[Call<'_>], runs: usize) -> Result<Vec<RunOutcome>, RecordError> {
        use rayon::prelude::*;
        let this = &*self;
        let outcomes: Vec<Result<RunOutcome, RecordError>> =
            calls.par_iter().map(|c| this.compute(&c.cfg, &c.inputs, runs)).collect();
        outcomes.into_iter().map(|o| o.map(|o| self.flake(o))).collect()
    }
}

impl SimDevice {
    /// The simulated heuristic (see the module documentation).
    fn answer(&self, cfg: &CallConfig) -> Result<Heuristic, RecordError> {
        let p = &self.profile;
        let key = cfg.problem;
        if let Some(rule) = p.rejection(key.fa, key.fb, key.out) {
            return Ok(Heuristic::Rejected(format!(
                "CUBLAS_STATUS_NOT_SUPPORTED (simulated: profile {}: {})",
                p.name, rule.message
            )));
        }
        // The table holds the standard layout's decisions (reference §6.3 step 5); padded or transposed
        // operands go to the model's split resolution.
        let layout_std = cfg.geometry.is_contiguous();
        if let (Some(table), true) = (p.splitk_table, layout_std) {
            let row =
                try_table_lookup(table, &key, cfg.workspace_bytes).map_err(|e| RecordError::Model(e.to_string()))?;
            if let Some(r) = row {
                return Ok(Heuristic::Algo(AlgoInfo {
                    algo_id: r.algo_id.into(),
                    tile_id: r.tile_id.into(),
                    stages_id: r.stages_id.into(),
                    split_s: i64::from(r.split_s.max(1)),
                    reduction_scheme: r.reduction_scheme.into(),
                    custom_option: r.custom_option.into(),
                    cta_swizzling: r.cta_swizzling.into(),
                    inner_shape_id: None,
                    cluster_shape_id: None,
                    workspace_bytes: 0,
                    waves_count: 0.0,
                    source: "simulated: the profile's split-K table row",
                }));
            }
        }
        let mut at_ws = p.clone();
        at_ws.workspace_bytes = Some(cfg.workspace_bytes);
        Ok(Heuristic::Algo(match resolve_splitk(&at_ws, &key, &SplitRequest::Auto, layout_std, false) {
            Ok((d, _)) => algo(d.s as i64, "simulated: the model's split decision (no table row)"),
            Err(_) => algo(1, "simulated: no table row and no envelope inference; S = 1 assumed"),
        }))
    }

    /// One call, `runs` times (the model's bits each time).
    fn compute(&self, cfg: &CallConfig, inputs: &Inputs<'_>, runs: usize) -> Result<RunOutcome, RecordError> {
        let algo = match self.answer(cfg)? {
            Heuristic::Rejected(status) => return Ok(RunOutcome::Rejected { stage: "heuristic", status }),
            Heuristic::Algo(a) => a,
        };
        // A block-scaled recipe's GEMM is unsplit (§12.4, §12.5): neither the split nor the operand views are needed.
        if let Some((x, mode)) = inputs.scales.and_then(|x| Some((x, x.recipe.block_mode()?))) {
            return self.block_scaled(cfg, inputs, x, mode).map(|r| match r {
                Ok(bits) => RunOutcome::Ran { algo, results: vec![bits; runs.max(1)], amax: Vec::new() },
                Err(why) => RunOutcome::Skipped(why),
            });
        }
        let s = algo.split_s.max(1);
        let splitk = if s == 1 {
            SplitRequest::Count(1)
        } else {
            // The profile's table maps the customOption to its scheme; a profile without a table splits only by
            // the model's resolution, whose scheme is the preset's own (contiguous here, as the H100's).
            let scheme = match self.profile.splitk_table {
                None => Scheme::Contiguous,
                Some(t) => t.custom_scheme(algo.custom_option).ok_or_else(|| {
                    RecordError::Model(format!(
                        "profile '{}' splits with customOption {}, whose split layout its table does not know: the \
                         simulated device cannot play it",
                        self.profile.name, algo.custom_option
                    ))
                })?,
            };
            SplitRequest::Pair(s, scheme.name().to_string())
        };
        let g = &cfg.geometry;
        let SplitKey { m, n, k, fa, fb, out, fast } = cfg.problem;
        let (sa, sb) = (g.mat1_storage(inputs.a, m, k), g.mat2_storage(inputs.b, n, k));
        let a = operand_view(fa, [m, k], g.mat1_strides(m, k), g.mat1.offset, &sa);
        let b = operand_view(fb, [k, n], g.mat2_strides(n, k), g.mat2.offset, &sb);
        let mut call = ScaledMm::new(a, b, inputs.scale_a, inputs.scale_b);
        if let Some(x) = inputs.scales {
            let tensor = |s: &mmaemu_datasets::ScaleSpec| s.model_tensor().map_err(RecordError::Model);
            (call.scale_a, call.scale_b) = (tensor(&x.a)?, tensor(&x.b)?);
        }
        call.scale_result = inputs.scale_result.map(ScaleTensor::scalar);
        call.out_dtype = Some(Dtype::of_out(out));
        call.use_fast_accum = fast;
        call.profile = ProfileArg::Value(Box::new(self.profile.clone()));
        call.splitk = splitk;
        call.backend = "reference".into();
        // The device computes whatever it accepts: the simulated one opts in to the experimental modes.
        call.experimental = true;
        let out = match call.run_with(&self.engine) {
            Ok(o) => o,
            // A recipe the model does not compute (or whose torch 2.7.1 checks refuse what cuBLASLt would
            // take) is not a row: the simulated device says so instead.
            Err(e) if inputs.scales.is_some() => {
                let recipe = inputs.scales.map_or("?", |x| x.recipe.word());
                return Ok(RunOutcome::Skipped(format!(
                    "the simulated device (mmaemu {}, profile {}) does not compute scaling {recipe:?}: {}",
                    env!("CARGO_PKG_VERSION"),
                    self.profile.name,
                    e.message()
                )));
            }
            Err(e) if e.category() == Category::ReferenceRejects => {
                return Ok(RunOutcome::Rejected {
                    stage: "matmul",
                    status: format!("CUBLAS_STATUS_NOT_SUPPORTED (simulated: {})", e.message()),
                })
            }
            Err(e) => return Err(RecordError::Model(e.to_string())),
        };
        let bits = out.out.logical_bytes();
        Ok(RunOutcome::Ran { algo, results: vec![bits; runs.max(1)], amax: Vec::new() })
    }

    /// A block-scaled recipe's call (standard operand layouts, as the harness replays them): the model's
    /// `BlockScaledCall` on the profile, opted in, as replay computes it; the output's bytes, or why the model does
    /// not compute the call (a skip, as for the other recipes).
    fn block_scaled(
        &self,
        cfg: &CallConfig,
        inputs: &Inputs<'_>,
        x: &RecipeScales,
        mode: BlockMode,
    ) -> Result<Result<Vec<u8>, String>, RecordError> {
        let SplitKey { m, n, k, fa, fb, out, fast } = cfg.problem;
        let skip = |why: String| {
            format!(
                "the simulated device (mmaemu {}, profile {}) does not compute scaling {:?}: {why}",
                env!("CARGO_PKG_VERSION"),
                self.profile.name,
                x.recipe.word()
            )
        };
        if !cfg.geometry.is_standard() {
            return Ok(Err(skip("block-scaled calls are computed with standard operand layouts only".into())));
        }
        let call = BlockScaledCall {
            mode,
            dims: Dims { m, n, k },
            dtypes: Some((Dtype::of_format(fa), Dtype::of_format(fb))),
            out: Dtype::of_out(out),
            fast,
            bias: false,
            experimental: true,
        };
        let scales = mmaemu_datasets::block_scales(mode, &x.a, &x.b).map_err(RecordError::Model)?;
        match call.compute(&self.profile, self.engine.inner, (fa, fb), (inputs.a, inputs.b), &scales) {
            Ok((bits, out)) => Ok(Ok(mmaemu_model::epilogue::to_le_bytes(&bits, out))),
            Err(e) if e.category() == Category::Mmaemu => Err(RecordError::Model(e.to_string())),
            Err(e) => Ok(Err(skip(e.message().to_string()))),
        }
    }

    /// The test hook: every `n`-th call that ran gets a last run with one flipped bit.
    fn flake(&mut self, mut outcome: RunOutcome) -> RunOutcome {
        if let RunOutcome::Ran { results, .. } = &mut outcome {
            self.calls += 1;
            if self.flaky_every.is_some_and(|n| self.calls.is_multiple_of(n)) {
                if let Some(byte) = results.last_mut().and_then(|r| r.first_mut()) {
                    *byte ^= 1;
                }
            }
        }
        outcome
    }
}

/// One FP8 operand of a call (mat1 or mat2): its `shape` elements at `strides` from `offset` in `storage`.
fn operand_view(format: Format, shape: [usize; 2], strides: [usize; 2], offset: usize, storage: &[u8]) -> View<'_> {
    View { dtype: Dtype::of_format(format), shape: shape.to_vec(), strides: strides.to_vec(), offset, storage }
}

/// One remembered accumulation: the whole input of `run_plan`, and its result.
struct Memo {
    preset: String,
    plan: Plan,
    shape: (Format, Format, usize, usize, usize),
    a: Vec<u8>,
    b: Vec<u8>,
    out: Vec<f32>,
}

/// A chain engine that remembers its last accumulations (see the module documentation).
pub struct MemoEngine {
    inner: &'static dyn ChainEngine,
    memo: Mutex<Vec<Memo>>,
}

impl MemoEngine {
    /// Accumulations remembered (the settings of a shape come in runs; two threads each hold a few).
    const SIZE: usize = 16;

    fn new(inner: &'static dyn ChainEngine) -> MemoEngine {
        MemoEngine { inner, memo: Mutex::new(Vec::new()) }
    }
}

impl ChainEngine for MemoEngine {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn chains(&self, preset: &Preset, ops: &Operands<'_>) -> Vec<f32> {
        self.inner.chains(preset, ops)
    }

    fn any_nonfinite(&self, f: mmaemu_model::Format, codes: &[u8]) -> bool {
        self.inner.any_nonfinite(f, codes)
    }

    fn run_plan(&self, preset: &Preset, plan: &Plan, ops: &Operands<'_>) -> Vec<f32> {
        let shape = (ops.fa, ops.fb, ops.m, ops.n, ops.k);
        let hit =
            |e: &Memo| e.shape == shape && e.preset == preset.name() && e.plan == *plan && e.a == ops.a && e.b == ops.b;
        {
            let memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(e) = memo.iter().find(|e| hit(e)) {
                return e.out.clone();
            }
        }
        let out = self.inner.run_plan(preset, plan, ops);
        let mut memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
        memo.insert(
            0,
            Memo {
                preset: preset.name().to_string(),
                plan: plan.clone(),
                shape,
                a: ops.a.to_vec(),
                b: ops.b.to_vec(),
                out: out.clone(),
            },
        );
        memo.truncate(Self::SIZE);
        out
    }

    fn serves(&self, preset: &Preset, fa: Format, fb: Format) -> bool {
        self.inner.serves(preset, fa, fb)
    }
}
