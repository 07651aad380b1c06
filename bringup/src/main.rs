//! `mmaemu-record`: the recorder's command line (see `recorder/README.md`).
//!
//! - `sweep SPEC --out FILE [--simulate]`: record a sweep into a recording;
//! - `heuristics --grid SPEC --out FILE.parquet [--simulate]`: record a heuristic grid into a split-K table;
//! - `probe`: print the GPU's platform metadata;
//! - `check SPEC`: parse a spec and count its cases (no device);
//! - `descriptor ...`: print the cuBLASLt call of one torch._scaled_mm as JSON (no device);
//! - `dump FILE --out DIR`: write a recording as raw bytes plus a JSON-lines index;
//! - `bring-up --name NAME --out DIR [--device N | --simulate --profile P]`: the whole bring-up of a GPU
//!   (docs/bring-up.md); `truth --seed S --out DIR`: a random GPU for the simulated device to play.
//!
//! Exit codes: `mmaemu_recorder::error` (0 ok, 1 data/I/O, 2 usage, 3 no GPU, 4 CUDA failure, 5 stopped).

use clap::{Args, Parser, Subcommand};
use mmaemu_bringup::Error as BringUpError;
use mmaemu_datasets::shard::Shard;
use mmaemu_model::{Format, OutDtype, SplitKey};
use mmaemu_recorder::caller::Caller;
use mmaemu_recorder::descriptor::{torch_rejects_before_cublas, CallConfig, Descriptor};
use mmaemu_recorder::heuristics::run_heuristics;
use mmaemu_recorder::options::RunOptions;
use mmaemu_recorder::spec::{LayoutSpec, OperandSpec, SpecKind};
use mmaemu_recorder::sweep::run_sweep;
use mmaemu_recorder::{gpu, load_spec, load_spec_for, open_device, RecordError, Target, DEFAULT_SIM_PROFILE};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "mmaemu-record",
    version,
    about = "Record FP8 GEMMs from cuBLASLt, called as torch._scaled_mm calls it"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct RunArgs {
    /// Output file (a recording for `sweep`, a `.parquet` split-K table for `heuristics`).
    #[arg(long)]
    out: PathBuf,
    /// Use the simulated device (the mmaemu model) instead of a GPU.
    #[arg(long)]
    simulate: bool,
    /// Profile: the simulated device's, and the one rows replay under (default: the spec's, else by GPU).
    #[arg(long)]
    profile: Option<String>,
    /// Caller: torch-2.7 (= torch), torch-2.10, torch-2.10-nodscale or transformer-engine; overrides the
    /// spec's.
    #[arg(long)]
    caller: Option<String>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Discard the parts of an interrupted run instead of resuming it.
    #[arg(long)]
    restart: bool,
    /// Keep the parts directory after the merge.
    #[arg(long)]
    keep_parts: bool,
    /// Record only shard I of N (1 <= I <= N): the chunks c with c mod N = I - 1; merge the shards'
    /// outputs with `mmaemu datasets merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Replace an existing output.
    #[arg(long)]
    force: bool,
    /// No progress output.
    #[arg(long, short)]
    quiet: bool,
    /// Only the first N cases (or grid keys).
    #[arg(long)]
    limit: Option<u64>,
    /// A JSON object merged into `mmaemu:platform` (e.g. '{"torch": "2.9.0"}').
    #[arg(long)]
    platform_json: Option<String>,
    /// Stop after writing N chunks (exit code 5); the next run resumes. For testing resumption.
    #[arg(long, hide = true)]
    stop_after_chunks: Option<u64>,
    /// Simulated device only: every N-th call returns a differing second run. For testing.
    #[arg(long, hide = true)]
    flaky_every: Option<u64>,
}

#[derive(Args, Clone)]
struct DescriptorArgs {
    #[arg(long)]
    m: usize,
    #[arg(long)]
    n: usize,
    #[arg(long)]
    k: usize,
    #[arg(long, default_value = "e4m3")]
    fmt_a: String,
    #[arg(long, default_value = "e4m3")]
    fmt_b: String,
    #[arg(long, default_value = "float32")]
    out_dtype: String,
    /// use_fast_accum.
    #[arg(long)]
    fast: bool,
    /// scale_result is passed (torch callers; an FP8 output through Transformer Engine always has its D scale).
    #[arg(long)]
    scale_result: bool,
    /// Workspace bytes (default: the caller's on `--capability`).
    #[arg(long)]
    workspace: Option<u64>,
    /// torch-2.7 (= torch), torch-2.10, torch-2.10-nodscale or transformer-engine.
    #[arg(long, default_value = "torch-2.7")]
    caller: String,
    /// Compute capability for the caller's default workspace, e.g. 9.0.
    #[arg(long, default_value = "9.0")]
    capability: String,
    /// mat1's layout: std (row-major) or col.
    #[arg(long, default_value = "std")]
    mat1_layout: String,
    /// Extra elements in mat1's leading dimension.
    #[arg(long, default_value_t = 0)]
    mat1_ld_pad: u64,
    /// mat1's storage offset in elements.
    #[arg(long, default_value_t = 0)]
    mat1_offset: u64,
    /// mat2's layout: std (the transpose of a row-major [n, k]) or row.
    #[arg(long, default_value = "std")]
    mat2_layout: String,
    /// Extra elements in mat2's leading dimension.
    #[arg(long, default_value_t = 0)]
    mat2_ld_pad: u64,
    /// mat2's storage offset in elements.
    #[arg(long, default_value_t = 0)]
    mat2_offset: u64,
}

#[derive(Subcommand)]
enum Command {
    /// Record a sweep into a recording (mmaemu-recording/1).
    Sweep {
        /// The sweep spec (TOML).
        spec: PathBuf,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Record cuBLASLt heuristic decisions over a grid into a split-K table (mmaemu-splitk-table/1).
    Heuristics {
        /// The grid spec (TOML; the sweep spec format, key fields only).
        #[arg(long)]
        grid: PathBuf,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Print the GPU's platform metadata.
    Probe {
        /// CUDA device ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
    },
    /// Parse a spec and count its cases and grid keys (no device).
    Check {
        /// The spec (TOML).
        spec: PathBuf,
    },
    /// Print the cuBLASLt call of one FP8 GEMM as its caller builds it, as JSON (no device).
    Descriptor(Box<DescriptorArgs>),
    /// Bring up a GPU in one command: probe, heuristic grid, sweeps, fits, experiments, bundle and check (exit 0
    /// only when the bundle replays every recorded row bit for bit; 1 when it does not).
    BringUp(Box<mmaemu_bringup::command::BringUpArgs>),
    /// Write a random GPU (seeded) as a bundle, for `bring-up --simulate --profile DIR` to rehearse on.
    Truth(mmaemu_bringup::command::TruthArgs),
    /// Write a recording as raw bytes (data.bin) plus a JSON-lines index (for tools without Parquet).
    Dump {
        /// The recording.
        file: PathBuf,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
    },
}

/// The options of a sweep or heuristics run from the command line's.
fn run_options(run: &RunArgs) -> Result<RunOptions, RecordError> {
    Ok(RunOptions {
        out: run.out.clone(),
        restart: run.restart,
        keep_parts: run.keep_parts,
        quiet: run.quiet,
        limit: run.limit,
        stop_after_chunks: run.stop_after_chunks,
        profile: run.profile.clone(),
        caller: caller_arg(&run.caller)?,
        platform_extra: platform_arg(&run.platform_json)?,
        shard: run
            .shard
            .as_deref()
            .map(|s| Shard::parse(s).map_err(|e| RecordError::Usage(format!("--shard: {e}"))))
            .transpose()?,
        force: run.force,
    })
}

fn caller_arg(s: &Option<String>) -> Result<Option<Caller>, RecordError> {
    s.as_deref()
        .map(|c| Caller::parse(c).ok_or_else(|| RecordError::Usage(format!("--caller {c:?}: {}", Caller::SPELLINGS))))
        .transpose()
}

fn platform_arg(s: &Option<String>) -> Result<Option<serde_json::Value>, RecordError> {
    match s {
        None => Ok(None),
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) if v.is_object() => Ok(Some(v)),
            _ => Err(RecordError::Usage("--platform-json must be a JSON object".into())),
        },
    }
}

fn device(run: &RunArgs, spec_profile: Option<&str>) -> Target {
    if run.simulate {
        Target::Simulated(
            run.profile.clone().or(spec_profile.map(str::to_string)).unwrap_or(DEFAULT_SIM_PROFILE.into()),
        )
    } else {
        Target::Gpu(run.device)
    }
}

/// The descriptor of the `descriptor` command's call, or why there is none.
fn descriptor(a: &DescriptorArgs) -> Result<Descriptor, RecordError> {
    let fa = Format::from_name(&a.fmt_a).ok_or_else(|| RecordError::Usage(format!("--fmt-a {:?}", a.fmt_a)))?;
    let fb = Format::from_name(&a.fmt_b).ok_or_else(|| RecordError::Usage(format!("--fmt-b {:?}", a.fmt_b)))?;
    let out = OutDtype::from_name(&a.out_dtype)
        .ok_or_else(|| RecordError::Usage(format!("--out-dtype {:?}", a.out_dtype)))?;
    let caller = caller_arg(&Some(a.caller.clone()))?.unwrap_or(Caller::Torch27);
    let cap = a
        .capability
        .split_once('.')
        .and_then(|(x, y)| Some((x.parse().ok()?, y.parse().ok()?)))
        .ok_or_else(|| RecordError::Usage(format!("--capability {:?}: like 9.0", a.capability)))?;
    let operand = |layout: &str, ld_pad, offset| OperandSpec { layout: Some(layout.to_string()), ld_pad, offset };
    let geometry = LayoutSpec {
        mat1: operand(&a.mat1_layout, a.mat1_ld_pad, a.mat1_offset),
        mat2: operand(&a.mat2_layout, a.mat2_ld_pad, a.mat2_offset),
    }
    .geometry()
    .map_err(RecordError::Usage)?;
    let problem = SplitKey { m: a.m, n: a.n, k: a.k, fa, fb, out, fast: a.fast };
    if let Some(why) = torch_rejects_before_cublas(&problem, &geometry) {
        return Err(RecordError::Usage(format!("no cuBLASLt call: {why}")));
    }
    if caller == Caller::TransformerEngine && !geometry.is_contiguous() {
        return Err(RecordError::Usage(
            "transformer-engine passes contiguous operands only (no ld_pad, std layouts)".into(),
        ));
    }
    let cfg = CallConfig {
        problem,
        scale_result: a.scale_result,
        workspace_bytes: a.workspace.unwrap_or(caller.default_workspace(cap)),
        caller,
        geometry,
    };
    Ok(Descriptor::build(&cfg))
}

fn main_inner(cli: Cli) -> Result<(), BringUpError> {
    // The platform bundles MMAEMU_PLATFORMS lists: their profiles can be recorded under by name.
    mmaemu_api::register_env_platforms()
        .map_err(|e| RecordError::Usage(format!("{}: {e}", mmaemu_api::PLATFORMS_ENV)))?;
    match cli.command {
        Command::Sweep { spec, run } => {
            let (sweep, text) = load_spec_for(&spec, SpecKind::Sweep)?;
            let dev = device(&run, sweep.spec.profile.as_deref());
            if run.flaky_every.is_some() && !run.simulate {
                return Err(RecordError::Usage("--flaky-every needs --simulate".into()).into());
            }
            let mut rec_device = open_device(&dev, run.flaky_every)?;
            let sim_profile = match &dev {
                Target::Simulated(p) => Some(p.as_str()),
                Target::Gpu(_) => None,
            };
            let opts = run_options(&run)?;
            let r = run_sweep(&sweep, &text, rec_device.as_mut(), sim_profile, &opts)?;
            eprintln!(
                "mmaemu-record: wrote {}: {} rows from {} cases ({} skipped by torch's checks, {} rejected, {} by \
                 reference, {} nondeterministic, {} chunks resumed)",
                run.out.display(),
                r.rows,
                r.cases,
                r.skipped,
                r.rejected,
                r.by_reference,
                r.nondeterministic.len(),
                r.resumed_chunks
            );
            for id in &r.nondeterministic {
                eprintln!("mmaemu-record: nondeterministic: {id}");
            }
            println!(
                "{}",
                json!({"file": run.out.display().to_string(), "rows": r.rows, "cases": r.cases, "skipped": r.skipped,
                       "rejected": r.rejected, "by_reference": r.by_reference,
                       "nondeterministic": r.nondeterministic, "resumed_chunks": r.resumed_chunks, "sha256": r.sha256})
            );
            Ok(())
        }
        Command::Heuristics { grid, run } => {
            let (sweep, _) = load_spec_for(&grid, SpecKind::Grid)?;
            let dev = device(&run, sweep.spec.profile.as_deref());
            let mut rec_device = open_device(&dev, None)?;
            let opts = run_options(&run)?;
            let r = run_heuristics(&sweep, rec_device.as_mut(), &opts)?;
            eprintln!(
                "mmaemu-record: wrote {}: {} rows ({} split) from {} keys ({} skipped by torch's checks, {} dropped \
                 with a nonzero status, {} out of range, {} duplicates, {} chunks resumed)",
                run.out.display(),
                r.rows,
                r.split_rows,
                r.keys,
                r.skipped,
                r.dropped_status_nonzero,
                r.dropped_out_of_range,
                r.duplicates,
                r.resumed_chunks
            );
            println!(
                "{}",
                json!({"file": run.out.display().to_string(), "rows": r.rows, "split_rows": r.split_rows,
                       "keys": r.keys, "skipped": r.skipped, "dropped_status_nonzero": r.dropped_status_nonzero,
                       "sha256": r.sha256})
            );
            Ok(())
        }
        Command::Probe { device } => {
            let rec_device = gpu::GpuDevice::open(device)?;
            use mmaemu_recorder::device::Device;
            println!("{}", serde_json::to_string_pretty(&rec_device.platform().json).unwrap_or_default());
            Ok(())
        }
        Command::Check { spec } => {
            let (sweep, _) = load_spec(&spec)?;
            let cases = sweep.case_count();
            // Counting the skipped cases visits every case: only for specs of a reasonable size.
            let skipped = (cases <= 10_000_000).then(|| (0..cases).filter(|&i| sweep.case(i).skip.is_some()).count());
            println!(
                "{}",
                json!({"name": sweep.spec.name, "kind": sweep.kind().name(), "caller": sweep.caller.name(),
                       "shapes": sweep.shapes.len(), "cases": cases,
                       "skipped_by_torch_checks": skipped, "grid_keys": sweep.grid_count(), "sha256": sweep.sha256})
            );
            Ok(())
        }
        Command::Descriptor(a) => {
            let d = descriptor(&a)?;
            println!("{}", serde_json::to_string_pretty(&d.to_json()).unwrap_or_default());
            Ok(())
        }
        Command::BringUp(a) => match mmaemu_bringup::command::run_bring_up(&a)? {
            true => Ok(()),
            false => {
                Err(BringUpError::Stage("the bundle does not replay every recorded row (see bring-up.json)".into()))
            }
        },
        Command::Truth(a) => Ok(mmaemu_bringup::command::run_truth(&a)?),
        Command::Dump { file, out } => {
            let n = mmaemu_recorder::dump::dump(&file, &out)?;
            eprintln!("mmaemu-record: dumped {n} rows of {} into {}", file.display(), out.display());
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match main_inner(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mmaemu-record: error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
