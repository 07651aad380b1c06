//! The one description of a `torch._scaled_mm` call on the command line, shared by `explain`, `trace` and
//! `attribute` (flattened into each): shape, formats, out dtype, scales, fast accumulation, split-K and profile,
//! and, for the commands that compute, the generator of the operands.

use super::CommandError;
use clap::Args;
use mmaemu_api::model::block_call::{BlockMode, SCALING_NAMES};
use mmaemu_api::model::dtype::Dtype;
use mmaemu_api::model::epilogue::{f32_to_bf16, f32_to_f16};
use mmaemu_api::model::scaled_mm::{BiasSpec, ScaleTensor};
use mmaemu_api::model::OutDtype;

/// A call: its shape by `--m --n --k` (`explain` also takes them as positional M N K), its formats and options.
#[derive(Args, Clone, Debug)]
pub struct CallArgs {
    /// M (rows of mat1).
    #[arg(long)]
    pub m: Option<usize>,
    /// N (columns of mat2).
    #[arg(long)]
    pub n: Option<usize>,
    /// K: the reduction length.
    #[arg(long)]
    pub k: Option<usize>,
    /// Format of mat1.
    #[arg(long, default_value = "e4m3")]
    pub a: String,
    /// Format of mat2.
    #[arg(long, default_value = "e4m3")]
    pub b: String,
    /// out_dtype: float32|bfloat16|float16|e4m3|e5m2 (fp32, bf16, fp16 accepted); default: the input dtype.
    #[arg(long)]
    pub out: Option<String>,
    /// use_fast_accum=True.
    #[arg(long)]
    pub fast: bool,
    /// scale_a: the scale of mat1.
    #[arg(long, default_value_t = 1.0)]
    pub scale_a: f32,
    /// scale_b: the scale of mat2.
    #[arg(long, default_value_t = 1.0)]
    pub scale_b: f32,
    /// scale_result: the output scale (FP8 out dtypes).
    #[arg(long)]
    pub scale_result: Option<f32>,
    /// Scaling: tensorwise (one scale each), or rowwise: scale_a (M, 1) holds scale_a · r(i) and scale_b (1, N)
    /// scale_b · r(j), with r(i) = 0.25 + 0.0625 · ((7 i) mod 16) (the recording format's `rowwise` scale); explain
    /// also takes the block-scaled modes block128 (1x128 x 1x128), block128x128 (1x128 x 128x128), mx and nvfp4.
    #[arg(long, default_value = "tensorwise", value_parser = SCALING_NAMES)]
    pub scales: String,
    /// A bias of N elements of this dtype (bf16, fp16, fp32), element j = 0.125 j - 1 (the recording format's).
    #[arg(long)]
    pub bias: Option<String>,
    /// Profile (default: MMAEMU_PROFILE, else hopper).
    #[arg(long, value_parser = crate::cmd::platform::profile_value)]
    pub profile: Option<String>,
    /// Split-K: auto, an integer S, or S,scheme.
    #[arg(long, default_value = "auto")]
    pub splitk: String,
    /// Opt in to the experimental modes (row-wise scales, with or without --bias, and the block-scaled modes); also
    /// MMAEMU_EXPERIMENTAL=1.
    #[arg(long)]
    pub experimental: bool,
}

impl CallArgs {
    /// (M, N, K): the flags, else `positional` (explain's M N K); a usage error naming both forms without them.
    pub fn shape(&self, positional: Option<(usize, usize, usize)>) -> Result<(usize, usize, usize), CommandError> {
        match (self.m, self.n, self.k) {
            (Some(m), Some(n), Some(k)) => Ok((m, n, k)),
            (None, None, None) => positional.ok_or_else(|| {
                CommandError::bad_input("give a recording FILE with --row, or a call with --m, --n and --k")
            }),
            _ => Err(CommandError::bad_input("a call needs all of --m, --n and --k")),
        }
    }
}

/// Element i of the recording format's `rowwise` scale pattern.
fn rowwise_pattern(i: usize) -> f64 {
    0.25 + 0.0625 * ((7 * i as u64) % 16) as f64
}

/// The scale tensors of a call (`scales` a word of `--scales`): tensor-wise scalars, or row-wise (M, 1) and (1, N)
/// vectors of the pattern times the given scales (each product rounded once to fp32). A block-scaled mode is a usage
/// error here: only `explain` describes those calls.
pub fn call_scales(
    scales: &str,
    scale_a: f32,
    scale_b: f32,
    m: usize,
    n: usize,
) -> Result<(ScaleTensor, ScaleTensor), CommandError> {
    if let Some(mode) = BlockMode::from_name(scales) {
        return Err(CommandError::bad_input(format!(
            "--scales {}: {} calls are described by `mmaemu explain`; trace and attribute take tensorwise or rowwise",
            mode.name(),
            mode.label()
        )));
    }
    if scales != "rowwise" {
        return Ok((ScaleTensor::scalar(scale_a), ScaleTensor::scalar(scale_b)));
    }
    let vector = |s: f32, len: usize, shape: Vec<usize>| ScaleTensor {
        dtype: Dtype::Float32,
        shape,
        values: (0..len).map(|i| (s as f64 * rowwise_pattern(i)) as f32 as f64).collect(),
        contiguous: true,
    };
    Ok((vector(scale_a, m, vec![m, 1]), vector(scale_b, n, vec![1, n])))
}

/// The bias of a call (`--bias DTYPE`): N elements, element j = 0.125 j - 1 in the dtype, held as its exact value.
pub fn call_bias(dtype: Option<&str>, n: usize) -> Option<BiasSpec> {
    let dtype = crate::cmd::explain::dtype_arg(dtype?);
    let value = |j: usize| {
        let x = (0.125 * j as f64 - 1.0) as f32;
        match dtype {
            Dtype::BFloat16 => OutDtype::BFloat16.to_f64(f32_to_bf16(x) as u32) as f32,
            Dtype::Float16 => OutDtype::Float16.to_f64(f32_to_f16(x) as u32) as f32,
            _ => x,
        }
    };
    Some(BiasSpec { values: (0..n).map(value).collect(), dtype, numel: n })
}

/// The operands of a call the command computes (`trace`, `attribute`): the `mmaemu-inputs/1` generator's flags.
#[derive(Args, Clone, Debug)]
pub struct InputArgs {
    /// Data class of the generator: gaussian, bits, split, all_codes, subnormal, special.
    #[arg(long, default_value = "gaussian")]
    pub data: String,
    /// The generator's seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The generator's stream.
    #[arg(long, default_value_t = 0)]
    pub stream: u64,
}

/// A call with operands from the generator (`trace`, `attribute`).
#[derive(Args, Clone, Debug)]
pub struct GeneratedCall {
    /// The call.
    #[command(flatten)]
    pub call: CallArgs,
    /// Its operands.
    #[command(flatten)]
    pub inputs: InputArgs,
}
