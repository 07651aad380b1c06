//! `mmaemu bench gemm`: the arguments and the printed forms (text, JSON) of
//! `mmaemu_bench::gemm`.

use super::{CommandError, CommandResult, Exit};
use mmaemu_api::kernels::tiling::Tiling;
use mmaemu_api::model::Format;
use mmaemu_bench::gemm::{gemm_planted, GemmBench, GemmResult, Planted};
use mmaemu_bench::scales::Scales;
use mmaemu_bench::suite::{self, Suite, SuiteRow};
use serde_json::{json, Value};

/// `mmaemu bench ...`.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Time one emulated FP8 GEMM (A [M, K] x B [N, K]^T) and a native fp32 GEMM of the same shape.
    Gemm(GemmArgs),
    /// The LLM-shaped suite: decode, small-batch, long-K and square GEMMs for hopper and ada, fast and slow,
    /// with `auto` and every SIMD level, against the native fp32 GEMM; prints a Markdown table.
    Suite(SuiteArgs),
}

/// `mmaemu bench suite` arguments.
#[derive(clap::Args, Debug)]
pub struct SuiteArgs {
    /// Threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Timed runs of each GEMM below 2^32 multiply-adds after a warm-up, at least (small ones run until about
    /// 2^31 multiply-adds, at most 50 times); the best counts. Larger ones run once.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Presets, comma-separated.
    #[arg(long, default_value = "hopper,ada")]
    pub presets: String,
    /// Skip shapes of more multiply-adds than this.
    #[arg(long)]
    pub max_macs: Option<u64>,
    /// Rounds: each measurement of a row is repeated this many times in turn, and its best round counts.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Print one JSON object per row instead of the table.
    #[arg(long)]
    pub json: bool,
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
    #[arg(long, value_parser = crate::cmd::platform::profile_value)]
    pub profile: Option<String>,
    /// A preset instead of a profile's: a built-in name (see `mmaemu info`) or the path of a preset document
    /// (docs/preset-format.md, e.g. bench/presets/nearest-late-16.toml).
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
    /// Tiling of the CPU backend: auto (from the shape, as every call), panels or products.
    #[arg(long, default_value = "auto")]
    pub tiling: String,
    /// Timed repetitions of each GEMM after one warm-up run (the best counts); 0: one run, no warm-up.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Skip the native fp32 GEMM.
    #[arg(long)]
    pub no_native: bool,
    /// Check the result bit for bit against the CPU backend (the model when measuring the CPU backend).
    #[arg(long)]
    pub verify: bool,
    /// Plant NaN codes in this fraction of both operands' codes (seeded); the finite operands are timed in turn.
    #[arg(long, default_value_t = 0.0)]
    pub nan: f64,
    /// Plant Inf codes of either sign in this fraction of the codes of the e5m2 operands (seeded).
    #[arg(long, default_value_t = 0.0)]
    pub inf: f64,
    /// Scaling of the call: tensorwise (the accumulator), rowwise (torch 2.7.1's CUTLASS row-wise epilogue),
    /// block128 (1x128 block-wise scales), block128x128 (1x128 on A, 128x128 on B), mx (MXFP8 e8m0 scales; a
    /// block-scaled preset: b200_tcgen05) or nvfp4 (NVFP4 ue4m3 scales on the operands' low nibbles: b200_tcgen05's
    /// e2m1 instruction).
    #[arg(long, default_value = "tensorwise")]
    pub scales: String,
    /// With --scales rowwise: add a bf16 bias.
    #[arg(long)]
    pub bias: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Run a bench command: success, or a usage or run error.
pub fn run(cmd: BenchCommand) -> CommandResult {
    let a = match cmd {
        BenchCommand::Gemm(a) => a,
        BenchCommand::Suite(s) => return suite(s),
    };
    let format = |name: &str| Format::from_name(name).ok_or_else(|| format!("unknown format '{name}' (e4m3 or e5m2)"));
    let tiling = match a.tiling.as_str() {
        "auto" => None,
        "panels" => Some(Tiling::Panels),
        "products" => Some(Tiling::Products),
        t => return Err(CommandError::bad_input(format!("unknown --tiling '{t}' (auto, panels or products)"))),
    };
    let Some(scales) = Scales::from_name(&a.scales) else {
        let names = Scales::NAMES.join(", ");
        return Err(CommandError::bad_input(format!("unknown --scales '{}' ({names})", a.scales)));
    };
    let bench = match (format(&a.fmt_a), format(&a.fmt_b)) {
        (Ok(fmt_a), Ok(fmt_b)) => GemmBench {
            tiling,
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
            scales,
            bias: a.bias,
        },
        (Err(e), _) | (_, Err(e)) => return Err(CommandError::bad_input(e)),
    };
    let planted = Planted { nan: a.nan, inf: a.inf };
    let catalogue = mmaemu_api::catalogue();
    let r = gemm_planted(&bench, &planted, mmaemu_datasets::limits::ceiling(), &catalogue)
        .map_err(CommandError::bad_input)?;
    if a.json {
        println!("{}", json(&r));
    } else {
        print!("{}", text(&r));
    }
    Ok(Exit::Success)
}

/// `mmaemu bench suite`: the table (or JSON lines) row by row as the suite runs.
fn suite(a: SuiteArgs) -> CommandResult {
    let s = Suite {
        threads: a.threads,
        reps: a.reps,
        presets: a.presets.split(',').map(|p| p.trim().to_string()).collect(),
        max_macs: a.max_macs,
        rounds: a.rounds,
        max_bytes: mmaemu_datasets::limits::ceiling(),
    };
    if !a.json {
        println!("{}", SUITE_HEADER.join("\n"));
    }
    let rows = suite::run(&s, |r| {
        if a.json {
            let mut v = json(&r.auto);
            v["levels"] = r.levels.iter().map(|(l, g)| json!({ "level": l, "gmacs": g })).collect();
            v["auto_over_best_level"] = json!(r.auto_over_best());
            println!("{v}");
        } else {
            println!("{}", suite_row(r));
        }
    })
    .map_err(CommandError::bad_input)?;
    if rows.is_empty() {
        return Err(CommandError::bad_input("no shape of the suite is within --max-macs"));
    }
    Ok(Exit::Success)
}

/// The suite table's header.
const SUITE_HEADER: [&str; 2] = [
    "| M×N×K | preset | acc. | threads | auto: level, tiling | auto GMAC/s | levels GMAC/s | auto / best level \
     | native fp32 GMAC/s | auto / native |",
    "|---|---|---|---|---|---|---|---|---|---|",
];

/// One row of the suite table.
fn suite_row(r: &SuiteRow) -> String {
    let a = &r.auto;
    let levels: Vec<String> = r.levels.iter().map(|(l, g)| format!("{l} {g:.2}")).collect();
    let ratio = a.ratio.map_or("-".to_string(), |x| format!("{x:.2}"));
    format!(
        "| {} | {} | {} | {} | {}, {} | {:.2} | {} | {:.2} | {} | {} |",
        a.shape.replace('x', "×"),
        a.preset,
        if a.fast { "fast" } else { "slow" },
        a.threads,
        a.simd,
        a.tiling,
        a.emulated_gmacs,
        levels.join(", "),
        r.auto_over_best(),
        a.native_f32_gmacs.map_or("-".to_string(), |g| format!("{g:.2}")),
        ratio
    )
}

/// The `--json` object.
pub fn json(r: &GemmResult) -> Value {
    json!({
        "shape": r.shape,
        "preset": r.preset,
        "fast": r.fast,
        "scales": r.scales,
        "split": r.split,
        "formats": r.formats,
        "backend": r.backend,
        "simd": r.simd,
        "tiling": r.tiling,
        "step": r.step,
        "threads": r.threads,
        "emulated_gmacs": r.emulated_gmacs,
        "native_f32_gmacs": r.native_f32_gmacs,
        "ratio": r.ratio,
        "native": r.native,
        "emulated_s": r.emulated_s,
        "native_s": r.native_s,
        "verified_against": r.verified,
        "planted": r.planted.as_ref().map(|p| json!({
            "nan": p.planted.nan,
            "inf": p.planted.inf,
            "codes": p.codes,
            "finite_s": p.finite_s,
            "planted_over_finite": p.slowdown,
        })),
    })
}

/// The text report.
pub fn text(r: &GemmResult) -> String {
    let mut s = format!(
        "gemm {} ({}), preset {}, {}, scales {}, split {}, backend {} (simd {}, tiling {}, step {}), {} threads\n",
        r.shape,
        r.formats,
        r.preset,
        if r.fast { "fast" } else { "slow" },
        r.scales,
        r.split,
        r.backend,
        r.simd,
        r.tiling,
        r.step,
        r.threads
    );
    s.push_str(&format!("  emulated:    {:8.2} GMAC/s  ({:.4} s)\n", r.emulated_gmacs, r.emulated_s));
    if let (Some(g), Some(t), Some(ratio), Some(name)) = (r.native_f32_gmacs, r.native_s, r.ratio, &r.native) {
        s.push_str(&format!("  native fp32: {g:8.2} GMAC/s  ({t:.4} s, {name})\n"));
        s.push_str(&format!("  ratio:       {ratio:8.3}  (1/{:.1} of native fp32)\n", 1.0 / ratio));
    }
    if let Some(p) = &r.planted {
        s.push_str(&format!(
            "  planted:     {} non-finite codes ({} NaN, {} Inf); finite operands {:.4} s; planted / finite {:.3}\n",
            p.codes, p.planted.nan, p.planted.inf, p.finite_s, p.slowdown
        ));
    }
    if let Some(v) = &r.verified {
        s.push_str(&format!("  bits:        identical to {v}\n"));
    }
    s
}
