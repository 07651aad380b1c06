//! The cases and grid keys of a spec: the fixed numbering of every call a sweep makes (a mixed-radix index
//! over shapes, inputs, formats, out dtypes, accumulation, scales, scaling, scale_result, workspaces and layouts,
//! the first varying slowest) and the keys a heuristic grid queries.

use super::{Sweep, WorkspaceSel};
use crate::descriptor::torch_rejects_before_cublas;
use crate::geometry::Geometry;
use crate::scaling::ScaleRecipe;
use mmaemu_datasets::inputs::{InputSpec, GENERATOR_V1};
use mmaemu_model::SplitKey;

/// One call of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The case index (stable across runs).
    pub index: u64,
    /// Torch's problem: M, N, K, the formats, the out dtype and use_fast_accum.
    pub problem: SplitKey,
    /// scale_a (fp32).
    pub scale_a: f32,
    /// scale_b (fp32).
    pub scale_b: f32,
    /// The scale recipe (tensor-wise: `scale_a` and `scale_b` are the scales).
    pub scaling: ScaleRecipe,
    /// scale_result (fp32), if passed.
    pub scale_result: Option<f32>,
    /// The workspace entry.
    pub workspace: WorkspaceSel,
    /// The operand layouts.
    pub geometry: Geometry,
    /// The generator spec of the operands.
    pub inputs: InputSpec,
    /// Why the call is not made (torch's checks before cuBLASLt, or a setting the caller cannot pass).
    pub skip: Option<String>,
}

/// A heuristic-grid key: torch's problem and the settings the heuristic sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GridKey {
    /// Torch's problem.
    pub problem: SplitKey,
    /// The workspace entry.
    pub workspace: WorkspaceSel,
}

/// The digits of `index` in the mixed radix `radices` (slowest first).
fn digits<const N: usize>(mut rest: u64, radices: [usize; N]) -> [usize; N] {
    let mut d = [0usize; N];
    for (x, &r) in d.iter_mut().zip(radices.iter()).rev() {
        *x = (rest % r as u64) as usize;
        rest /= r as u64;
    }
    d
}

impl Sweep {
    /// The sizes of the mixed-radix case index, slowest first.
    fn radices(&self) -> [usize; 10] {
        let s = &self.spec;
        [
            self.shapes.len(),
            s.inputs.len(),
            self.formats.len(),
            self.outs.len(),
            s.fast_accum.len(),
            s.scales.len(),
            s.scaling.len(),
            s.scale_result.len(),
            s.workspace.len(),
            self.layouts.len(),
        ]
    }

    /// Number of cases (skipped ones included).
    pub fn case_count(&self) -> u64 {
        self.radices().iter().fold(1u64, |a, &r| a.saturating_mul(r as u64))
    }

    /// Case `index` (< [`Sweep::case_count`]).
    pub fn case(&self, index: u64) -> Case {
        let [shape, input, fmts, out, fast, scales, scaling, sr, ws, layout] = digits(index, self.radices());
        let s = &self.spec;
        let problem = self.problem(shape, fmts, out, fast);
        let scale_result = s.scale_result[sr].value();
        let geometry = self.layouts[layout];
        // Operands depend on the shape and the input class only, so every setting of a shape sees the
        // same data (and the Parquet dictionary stores it once).
        let stream = (shape * s.inputs.len() + input) as u64;
        let recipe = s.scaling[scaling];
        let skip = torch_rejects_before_cublas(&problem, &geometry)
            .or_else(|| self.caller.skip(problem.out, scale_result))
            .or_else(|| recipe.precheck(&problem))
            .or_else(|| recipe.scale_pair(s.scales[scales]));
        Case {
            index,
            problem,
            scale_a: s.scales[scales][0] as f32,
            scale_b: s.scales[scales][1] as f32,
            scaling: recipe,
            scale_result,
            workspace: s.workspace[ws],
            geometry,
            inputs: InputSpec { generator: GENERATOR_V1.into(), seed: s.seed, stream, data: s.inputs[input].clone() },
            skip,
        }
    }

    fn grid_radices(&self) -> [usize; 5] {
        let s = &self.spec;
        [self.shapes.len(), self.formats.len(), self.outs.len(), s.fast_accum.len(), s.workspace.len()]
    }

    /// Number of grid keys (the heuristic grid ignores inputs, scales and scale_result).
    pub fn grid_count(&self) -> u64 {
        self.grid_radices().iter().fold(1u64, |a, &r| a.saturating_mul(r as u64))
    }

    /// Grid key `index` (< [`Sweep::grid_count`]), and why torch would not call cuBLASLt for it.
    pub fn grid_key(&self, index: u64) -> (GridKey, Option<String>) {
        let [shape, fmts, out, fast, ws] = digits(index, self.grid_radices());
        let s = &self.spec;
        let key = GridKey { problem: self.problem(shape, fmts, out, fast), workspace: s.workspace[ws] };
        (key, torch_rejects_before_cublas(&key.problem, &Geometry::STANDARD))
    }

    /// The problem of the given shape, format pair, out dtype and accumulation (indices into the sweep's lists).
    fn problem(&self, shape: usize, fmts: usize, out: usize, fast: usize) -> SplitKey {
        let ((m, n, k), (fa, fb)) = (self.shapes[shape], self.formats[fmts]);
        SplitKey { m, n, k, fa, fb, out: self.outs[out], fast: self.spec.fast_accum[fast] }
    }
}
