//! The one description of a `torch._scaled_mm` call on the command line, shared by `explain`, `trace` and
//! `attribute` (flattened into each): shape, formats, out dtype, scales, fast accumulation, split-K and profile,
//! and, for the commands that compute, the generator of the operands.

use super::CommandError;
use clap::Args;

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
    /// Profile (default: MMAEMU_PROFILE, else hopper).
    #[arg(long, value_parser = crate::cmd::platform::profile_value)]
    pub profile: Option<String>,
    /// Split-K: auto, an integer S, or S,scheme.
    #[arg(long, default_value = "auto")]
    pub splitk: String,
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
