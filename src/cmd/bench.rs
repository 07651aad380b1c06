//! `mmaemu bench gemm`: the arguments and the printed forms (text, JSON) of
//! `mmaemu_kernels::bench`.

use super::{CommandError, CommandResult, Exit};
use mmaemu_kernels::bench::{gemm, GemmBench, GemmResult};
use mmaemu_model::Format;
use serde_json::{json, Value};

/// `mmaemu bench ...`.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Time one emulated FP8 GEMM (A [M, K] x B [N, K]^T) and a native fp32 GEMM of the same shape.
    Gemm(GemmArgs),
}

/// `mmaemu bench gemm` arguments.
#[derive(clap::Args, Debug)]
pub struct GemmArgs {
    /// M (rows of A).
    #[arg(long)]
    pub m: usize,
    /// N (rows of B, columns of the result).
    #[arg(long)]
    pub n: usize,
    /// K: the reduction length.
    #[arg(long)]
    pub k: usize,
    /// Profile whose preset is emulated (default: MMAEMU_PROFILE, else hopper).
    #[arg(long)]
    pub profile: Option<String>,
    /// A preset by name (ada, hopper, b200_mma_sync) instead of a profile's.
    #[arg(long, conflicts_with = "profile")]
    pub preset: Option<String>,
    /// Fast accumulation (use_fast_accum=True; the default).
    #[arg(long, conflicts_with = "slow")]
    pub fast: bool,
    /// Slow accumulation (use_fast_accum=False).
    #[arg(long)]
    pub slow: bool,
    /// The split: 1, S (the preset's scheme) or S,scheme.
    #[arg(long, default_value = "1")]
    pub splitk: String,
    /// Format of A: e4m3 or e5m2.
    #[arg(long, default_value = "e4m3")]
    pub fmt_a: String,
    /// Format of B: e4m3 or e5m2.
    #[arg(long, default_value = "e4m3")]
    pub fmt_b: String,
    /// Threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Backend: auto, cpu, cpu:<simd> (avx512, avx2, portable), reference.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Timed repetitions of each GEMM after one warm-up run (the best counts); 0: one run, no warm-up.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Skip the native fp32 GEMM.
    #[arg(long)]
    pub no_native: bool,
    /// Check the result bit for bit against the CPU backend (the model when measuring the CPU backend).
    #[arg(long)]
    pub verify: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Run a bench command: success, or a usage or run error.
pub fn run(cmd: BenchCommand) -> CommandResult {
    let BenchCommand::Gemm(a) = cmd;
    let format = |name: &str| Format::from_name(name).ok_or_else(|| format!("unknown format '{name}' (e4m3 or e5m2)"));
    let bench = match (format(&a.fmt_a), format(&a.fmt_b)) {
        (Ok(fmt_a), Ok(fmt_b)) => GemmBench {
            m: a.m,
            n: a.n,
            k: a.k,
            profile: a.profile,
            preset: a.preset,
            fast: !a.slow,
            splitk: a.splitk,
            fmt_a,
            fmt_b,
            threads: a.threads,
            backend: a.backend,
            reps: a.reps,
            no_native: a.no_native,
            verify: a.verify,
        },
        (Err(e), _) | (_, Err(e)) => return Err(CommandError::bad_input(e)),
    };
    let r = gemm(&bench).map_err(CommandError::bad_input)?;
    if a.json {
        println!("{}", json(&r));
    } else {
        print!("{}", text(&r));
    }
    Ok(Exit::Success)
}

/// The `--json` object.
pub fn json(r: &GemmResult) -> Value {
    json!({
        "shape": r.shape,
        "preset": r.preset,
        "fast": r.fast,
        "split": r.split,
        "formats": r.formats,
        "backend": r.backend,
        "simd": r.simd,
        "threads": r.threads,
        "emulated_gmacs": r.emulated_gmacs,
        "native_f32_gmacs": r.native_f32_gmacs,
        "ratio": r.ratio,
        "emulated_s": r.emulated_s,
        "native_s": r.native_s,
        "verified_against": r.verified,
    })
}

/// The text report.
pub fn text(r: &GemmResult) -> String {
    let mut s = format!(
        "gemm {} ({}), preset {}, {}, split {}, backend {} (simd {}), {} threads\n",
        r.shape,
        r.formats,
        r.preset,
        if r.fast { "fast" } else { "slow" },
        r.split,
        r.backend,
        r.simd,
        r.threads
    );
    s.push_str(&format!("  emulated:    {:8.2} GMAC/s  ({:.4} s)\n", r.emulated_gmacs, r.emulated_s));
    if let (Some(g), Some(t), Some(ratio)) = (r.native_f32_gmacs, r.native_s, r.ratio) {
        s.push_str(&format!("  native fp32: {g:8.2} GMAC/s  ({t:.4} s, matrixmultiply sgemm)\n"));
        s.push_str(&format!("  ratio:       {ratio:8.3}  (1/{:.1} of native fp32)\n", 1.0 / ratio));
    }
    if let Some(v) = &r.verified {
        s.push_str(&format!("  bits:        identical to {v}\n"));
    }
    s
}
