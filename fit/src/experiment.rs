//! The calls a fit asks the recorder to make: an [`Experiment`] is one torch call (problem, workspace, operands by
//! generator spec) whose recorded result tells the fit's surviving candidates apart.

use mmaemu_datasets::inputs::InputSpec;
use mmaemu_model::SplitKey;

/// One call a fit designs for the recorder to make (and then refits with its row).
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// Torch's problem: M, N, K, the formats, the out dtype and use_fast_accum.
    pub problem: SplitKey,
    /// The workspace in bytes cuBLASLt is given (None: the caller's default).
    pub workspace: Option<u64>,
    /// The operands, as the recorder's input generator makes them.
    pub inputs: InputSpec,
    /// MXFP8 calls: the exponents (a, b) of the constant e8m0 block scales of mat1 and mat2 (2^a, 2^b; the recorder's
    /// `mxfp8` scaling at that scale pair, no workspace). None: a tensor-wise call with unit scales.
    pub mx_scales: Option<(i32, i32)>,
    /// What the call decides, in words (e.g. "slow_chunk 192 vs 256", "customOption 1: contiguous32 vs 64").
    pub decides: String,
}
