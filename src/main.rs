//! The `mmaemu` command line: parse the arguments, run one subcommand (`cmd`), print its error and turn
//! how it ended into the exit status (0 ok, 1 something failed, 2 usage or unreadable input, 4 no device).

mod cmd;

use clap::{Parser, Subcommand};
use cmd::CommandResult;
use std::path::PathBuf;
use std::process::ExitCode;

/// Bit-exact emulation of NVIDIA FP8 tensor-core GEMMs (cuBLASLt 12.8.3.14, torch._scaled_mm).
#[derive(Parser)]
#[command(name = "mmaemu", version, about)]
struct Cli {
    /// The most bytes a recording may make mmaemu allocate (operands, call tensors, results); default
    /// 4 GiB, or MMAEMU_MAX_BYTES.
    #[arg(long, global = true)]
    max_bytes: Option<u64>,
    /// A platform bundle to load (repeatable), so that its profiles are known by name; MMAEMU_PLATFORMS lists
    /// more. Wherever a profile is taken, `--profile PATH[#NAME]` takes a bundle's profile directly.
    #[arg(long, global = true, value_name = "DIR", value_parser = cmd::platform::platform_value)]
    platform: Vec<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay recordings (Parquet files or directories of them) through the model and compare every bit.
    Replay {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// The backend computing the GEMMs: reference (the model), cpu, cpu:<simd>, auto.
        #[arg(long, default_value = "reference")]
        backend: String,
        /// Accept a file whose rows were all skipped (by default nothing verified in a file exits 1).
        #[arg(long)]
        allow_skips: bool,
        /// Also print the status table (validated / experimental / failing per preset, profile and feature).
        #[arg(long)]
        status: bool,
        /// Replay every row under this profile (`NAME` or a bundle's `PATH[#NAME]`) instead of the one it names:
        /// scaled_mm rows through the profile, the other ops with its preset.
        #[arg(long, value_parser = cmd::platform::profile_value)]
        profile: Option<String>,
        /// Recording files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Explain a torch._scaled_mm call without computing it: checks, profile, split-K decision, backend.
    Explain(Box<cmd::explain::ExplainArgs>),
    /// Replay recordings and print the computed status: validated / experimental / failing per preset,
    /// profile and feature.
    Status {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Accept a file whose rows were all skipped.
        #[arg(long)]
        allow_skips: bool,
        /// Replay every row under this profile (`NAME` or a bundle's `PATH[#NAME]`) instead of the one it names.
        #[arg(long, value_parser = cmd::platform::profile_value)]
        profile: Option<String>,
        /// Recording files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Tools over recording files: verify, stats, show.
    Datasets {
        #[command(subcommand)]
        command: cmd::datasets::DatasetsCommand,
    },
    /// Fit split-K reduction rules and split envelopes from recorded data.
    Fit {
        #[command(subcommand)]
        command: cmd::fit::FitCommand,
    },
    /// Replay the datasets through every backend, fuzz, benchmark; write report.json, report.md and
    /// report.html; with --baseline list every change and exit 1 on a regression.
    Report(Box<cmd::report::ReportArgs>),
    /// Benchmarks: an emulated GEMM against a native fp32 GEMM of the same shape.
    Bench {
        #[command(subcommand)]
        command: cmd::bench::BenchCommand,
    },
    /// Run the CUDA kernels' self-test gate: PASS/FAIL per kernel (exit 0 pass, 1 fail, 4 no device).
    Selftest(cmd::selftest::SelftestArgs),
    /// Platform bundles: build one from a recorded table and recordings, or check one against its recordings.
    Platform {
        #[command(subcommand)]
        command: cmd::platform::PlatformCommand,
    },
    /// The trace of one output element: plan, every block, every fp32 addition, the epilogue.
    Trace(Box<cmd::trace::TraceArgs>),
    /// Attribute every output's error to its sources (term and block truncation, additions, epilogue), compare variants.
    Attribute(Box<cmd::attribute::AttributeArgs>),
    /// Profiles, presets, backends, split-K tables and environment.
    Info {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

impl Command {
    /// The subcommand's name, for error messages (`fit splitk`, `bench gemm`).
    fn name(&self) -> &'static str {
        use cmd::fit::FitCommand;
        match self {
            Command::Replay { .. } => "replay",
            Command::Explain(_) => "explain",
            Command::Status { .. } => "status",
            Command::Datasets { .. } => "datasets",
            Command::Fit { command: FitCommand::Splitk { .. } } => "fit splitk",
            Command::Fit { command: FitCommand::Envelope { .. } } => "fit envelope",
            Command::Fit { command: FitCommand::Preset { .. } } => "fit preset",
            Command::Report(_) => "report",
            Command::Bench { command: cmd::bench::BenchCommand::Gemm(_) } => "bench gemm",
            Command::Bench { command: cmd::bench::BenchCommand::Suite(_) } => "bench suite",
            Command::Selftest(_) => "selftest",
            Command::Platform { command: cmd::platform::PlatformCommand::Build(_) } => "platform build",
            Command::Platform { command: cmd::platform::PlatformCommand::Check { .. } } => "platform check",
            Command::Info { .. } => "info",
            Command::Trace(_) => "trace",
            Command::Attribute(_) => "attribute",
        }
    }

    fn run(self) -> CommandResult {
        use cmd::replay::Scope;
        match self {
            Command::Replay { json, backend, allow_skips, status, profile, paths } => {
                let scope = if status { Scope::Everything } else { Scope::Files };
                cmd::replay::run(json, &paths, scope, &backend, allow_skips, &cmd::replay::under(profile)?)
            }
            Command::Status { json, allow_skips, profile, paths } => cmd::replay::run(
                json,
                &paths,
                Scope::StatusOnly,
                "reference",
                allow_skips,
                &cmd::replay::under(profile)?,
            ),
            Command::Explain(args) => cmd::explain::run(*args),
            Command::Datasets { command } => cmd::datasets::run(command),
            Command::Fit { command } => cmd::fit::run(command),
            Command::Report(args) => cmd::report::run(*args),
            Command::Bench { command } => cmd::bench::run(command),
            Command::Selftest(args) => cmd::selftest::run(&args),
            Command::Platform { command } => cmd::platform::run(command),
            Command::Info { json } => cmd::info::run(json),
            Command::Trace(args) => cmd::trace::run(*args),
            Command::Attribute(args) => cmd::attribute::run(*args),
        }
    }
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so a closed pipe makes printing fail (and println! panic). A command-line
    // filter should instead end quietly when its reader goes away, with the conventional status.
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // The memory ceiling in force (`mmaemu_datasets::limits::ceiling`): MMAEMU_MAX_BYTES, before the bundles are
    // read; `--max-bytes` replaces it below, and a bad value of the variable is exit 2 at `check_env`.
    mmaemu_datasets::limits::set_ceiling(
        mmaemu_api::env::max_bytes().unwrap_or(mmaemu_datasets::limits::DEFAULT_MAX_BYTES),
    );
    // Bundles first: MMAEMU_PLATFORMS here, then `--platform` and `--profile PATH` as the arguments are parsed;
    // every command then knows their profiles by name.
    let env_platforms = cmd::platform::register_env();
    let cli = Cli::parse();
    if let Some(bytes) = cli.max_bytes {
        mmaemu_datasets::limits::set_ceiling(bytes);
    }
    let command = cli.command;
    let name = command.name();
    let exit = env_platforms.and_then(|()| cmd::vars::check_env()).and_then(|()| command.run()).unwrap_or_else(|e| {
        if e.verbatim {
            eprintln!("{}", e.message);
        } else {
            eprintln!("mmaemu {name}: {}", cmd::in_flag_words(&e.message));
        }
        e.exit
    });

    ExitCode::from(exit.code())
}
