//! The `mmaemu` command line: `replay` recordings through the model and report what matches the hardware;
//! `explain` what a torch._scaled_mm call would do on a profile; `info` about profiles, presets and tables.

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use mmaemu::backend::Placement;
use mmaemu::explain::{explain_case, parse_case_line, parse_splitk, plan_json, plan_text, Case};
use mmaemu::model::scaled_mm::Validation;
use mmaemu::replay_files::{files, json_report, summary_line, totals, FileReport};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Bit-exact emulation of NVIDIA FP8 tensor-core GEMMs (cuBLASLt 12.8.3.14, torch._scaled_mm).
#[derive(Parser)]
#[command(name = "mmaemu", version, about)]
struct Cli {
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
        /// Recording files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Explain a torch._scaled_mm call without computing it: checks, profile, split-K decision, backend.
    Explain(Box<ExplainArgs>),
    /// Replay recordings and print the computed status: validated / experimental / failing per preset,
    /// profile and feature.
    Status {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Recording files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Tools over recording files: verify, stats, show.
    Datasets {
        #[command(subcommand)]
        command: mmaemu::datasets_cmd::DatasetsCommand,
    },
    /// Fit split-K reduction rules and split envelopes from recorded data.
    Fit {
        #[command(subcommand)]
        command: mmaemu::fit::FitCommand,
    },
    /// Replay the datasets through every backend, fuzz, benchmark; write report.json, report.md and
    /// report.html; with --baseline list every change and exit 1 on a regression.
    Report(Box<mmaemu::report::ReportArgs>),
    /// Benchmarks: an emulated GEMM against a native fp32 GEMM of the same shape.
    Bench {
        #[command(subcommand)]
        command: mmaemu::bench::BenchCommand,
    },
    /// Run the CUDA kernels' self-test gate: PASS/FAIL per kernel (exit 0 pass, 1 fail, 4 no device).
    Selftest(mmaemu::selftest::SelftestArgs),
    /// Profiles, presets, backends, split-K tables and environment.
    Info {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args)]
struct ExplainArgs {
    /// M (rows of mat1).
    #[arg(required_unless_present = "cases")]
    m: Option<usize>,
    /// N (columns of mat2).
    #[arg(required_unless_present = "cases")]
    n: Option<usize>,
    /// K.
    #[arg(required_unless_present = "cases")]
    k: Option<usize>,
    /// Format of mat1.
    #[arg(long, default_value = "e4m3")]
    a: String,
    /// Format of mat2.
    #[arg(long, default_value = "e4m3")]
    b: String,
    /// out_dtype: float32|bfloat16|float16|e4m3|e5m2 (fp32, bf16, fp16 accepted); default: the input dtype.
    #[arg(long)]
    out: Option<String>,
    /// use_fast_accum=True.
    #[arg(long)]
    fast: bool,
    /// scale_a.
    #[arg(long, default_value_t = 1.0)]
    scale_a: f32,
    /// scale_b.
    #[arg(long, default_value_t = 1.0)]
    scale_b: f32,
    /// scale_result.
    #[arg(long)]
    scale_result: Option<f32>,
    /// Profile (default: MMAEMU_PROFILE, else hopper).
    #[arg(long)]
    profile: Option<String>,
    /// auto, an integer, or S,scheme.
    #[arg(long, default_value = "auto")]
    splitk: String,
    /// std, or out-col (a column-major out= of shape [M, N]).
    #[arg(long, default_value = "std", value_parser = ["std", "out-col"])]
    layout: String,
    /// Backend: auto, reference, cpu, cpu:<simd>, cuda, cuda:<kernel>.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Where the tensors live: auto (CUDA if available and not disabled, else cpu), cpu, cuda, cuda:N.
    #[arg(long, default_value = "auto")]
    device: String,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Explain many calls: one JSON object per line (id, m, n, k, a, b, out, fast, profile, splitk, layout).
    #[arg(long, conflicts_with_all = ["m", "n", "k"])]
    cases: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Replay { json, backend, paths } => replay(json, &paths, &backend),
        Command::Explain(args) => explain(*args),
        Command::Info { json } => info(json),
        Command::Selftest(args) => ExitCode::from(mmaemu::selftest::run(&args)),
        Command::Bench { command } => ExitCode::from(mmaemu::bench::run(command)),
        Command::Status { json, paths } => status(json, &paths),
        Command::Datasets { command } => ExitCode::from(mmaemu::datasets_cmd::run(command)),
        Command::Fit { command } => ExitCode::from(mmaemu::fit::run(command)),
        Command::Report(args) => ExitCode::from(mmaemu::report::run(&args)),
    }
}

/// Exit codes: 0 the call would run, 1 it would raise, 2 usage errors, 4 the device cannot be used.
fn explain(args: ExplainArgs) -> ExitCode {
    let splitk = match parse_splitk(&args.splitk) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mmaemu explain: {e}");
            return ExitCode::from(2);
        }
    };
    let device = match Placement::parse(&args.device) {
        Err(usage) => {
            eprintln!("mmaemu explain: {usage}");
            return ExitCode::from(2);
        }
        Ok(Err(why)) => {
            eprintln!("explain unavailable: device '{}': {why}", args.device);
            return ExitCode::from(4);
        }
        Ok(Ok(p)) => p,
    };
    let case = Case {
        m: args.m.unwrap_or(0),
        n: args.n.unwrap_or(0),
        k: args.k.unwrap_or(0),
        a: args.a,
        b: args.b,
        out: args.out,
        fast: args.fast,
        scale_a: args.scale_a,
        scale_b: args.scale_b,
        scale_result: args.scale_result,
        profile: args.profile,
        splitk,
        layout: args.layout,
        backend: args.backend,
        device: Some(device),
    };
    if let Some(path) = args.cases {
        return explain_cases(&path, &case);
    }
    let plan = explain_case(&case);
    if args.json {
        println!("{}", plan_json(&plan));
    } else {
        print!("{}", plan_text(&case, &plan));
    }
    if plan.validation == Validation::Ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `explain --cases FILE`: one output line per input line; exit 1 if any call would raise, 2 on a bad line.
fn explain_cases(path: &std::path::Path, defaults: &Case) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("mmaemu explain: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut any_error = false;
    for (no, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (id, case) = match parse_case_line(line, defaults) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("mmaemu explain: {}:{}: {e}", path.display(), no + 1);
                return ExitCode::from(2);
            }
        };
        let plan = explain_case(&case);
        any_error |= plan.validation != Validation::Ok;
        let mut obj = serde_json::Map::new();
        obj.insert("id".into(), id);
        if let serde_json::Value::Object(fields) = plan_json(&plan) {
            obj.extend(fields);
        }
        if writeln!(out, "{}", serde_json::Value::Object(obj)).is_err() {
            return ExitCode::from(2);
        }
    }
    if any_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn info(json: bool) -> ExitCode {
    let report = mmaemu::info::report();
    if json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        print!("{}", mmaemu::info::text(&report));
    }
    ExitCode::SUCCESS
}

/// Exit codes: 0 all passed, 1 a row failed, 2 unreadable input.
fn replay(json: bool, paths: &[PathBuf], backend: &str) -> ExitCode {
    replay_with(json, paths, false, backend)
}

/// `status`: the replay's status table and closing line only. Exit codes as `replay`.
fn status(json: bool, paths: &[PathBuf]) -> ExitCode {
    replay_with(json, paths, true, "reference")
}

/// The replay; `status_only` prints the status table and the closing line without the per-file report.
fn replay_with(json: bool, paths: &[PathBuf], status_only: bool, backend: &str) -> ExitCode {
    let engine = match mmaemu::backend::registry().resolve(backend) {
        Ok(selected) => selected.engine,
        Err(e) => {
            eprintln!("mmaemu replay: {e}");
            return ExitCode::from(2);
        }
    };
    if backend != "reference" {
        eprintln!("mmaemu replay: backend {}", engine.name());
    }
    let list = match files(paths) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("mmaemu replay: {e}");
            return ExitCode::from(2);
        }
    };
    let bar = if std::io::stderr().is_terminal() && !json {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} rows ({eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let mut reports: Vec<FileReport> = Vec::new();
    let mut facts = Vec::new();
    for path in &list {
        if let Some(b) = &bar {
            b.set_message(path.display().to_string());
        }
        let tick = || {
            if let Some(b) = &bar {
                b.inc(1);
            }
        };
        if let Some(b) = &bar {
            b.inc_length(0);
        }
        match mmaemu::replay_files::replay_file_on(path, &tick, mmaemu::status::facts, engine) {
            Ok((r, f)) => {
                reports.push(r);
                facts.extend(f);
            }
            Err(e) => {
                if let Some(b) = &bar {
                    b.finish_and_clear();
                }
                eprintln!("mmaemu replay: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    // A GPU engine computes a call on the CPU (same bits) when a launch fails: say so, with the first reason.
    if engine.name().starts_with("cuda") {
        let fell_back = mmaemu::backend::registry().gpu(0).warnings();
        if let Some(first) = fell_back.first() {
            eprintln!(
                "mmaemu replay: BackendFallbackWarning: {} call(s) ran on the CPU; first: {first}",
                fell_back.len()
            );
        }
    }
    let (passed, failed, skipped) = totals(&reports);
    let status = mmaemu::status::compute(&facts);
    if json {
        let mut report = json_report(&reports);
        if status_only {
            report = serde_json::json!({"passed": passed, "failed": failed, "skipped": skipped});
        }
        report["status"] = mmaemu::status::json(&status);
        println!("{report}");
    } else {
        for r in reports.iter().filter(|_| !status_only) {
            println!(
                "{}: {} rows, {} passed, {} failed, {} skipped",
                r.path.display(),
                r.rows,
                r.passed,
                r.failures.len(),
                r.skips.len()
            );
            let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
            for s in &r.skips {
                *reasons.entry(s.reason.as_str()).or_default() += 1;
            }
            for (reason, n) in reasons {
                println!("  skipped {n}: {reason}");
            }
            let (agree, differ, unresolved) = r.auto_split;
            if agree + differ + unresolved > 0 {
                println!(
                    "  splitk=auto vs the recorded split (information): {agree} agree, {differ} differ, {unresolved} \
                     unresolved"
                );
            }
        }
        for r in reports.iter().filter(|_| !status_only) {
            for f in &r.failures {
                println!("FAIL {}: {}: {}", r.path.display(), f.id, f.failure);
            }
        }
        // The status table comes before the closing line, which stays the last line.
        print!("{}", mmaemu::status::text(&status));
        println!("{}", summary_line(passed, failed, skipped));
    }
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
