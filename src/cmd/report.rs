//! `mmaemu report`: the arguments, over `mmaemu_reports::report`.

use super::{CommandError, CommandResult, Exit};
use mmaemu_reports::report::{make, write, ReportOptions};
use std::path::PathBuf;

/// Arguments of `mmaemu report`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// Directory to write report.json, report.md and report.html into (created if needed).
    #[arg(long, default_value = "report")]
    pub out: PathBuf,
    /// A previous report.json: list every change since, exit 1 on a regression.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Seed of the differential fuzz.
    #[arg(long, default_value_t = mmaemu_reports::report::fuzz::DEFAULT_SEED)]
    pub fuzz_seed: u64,
    /// Cases per fuzz check (0: skip the fuzz).
    #[arg(long, default_value_t = mmaemu_reports::report::fuzz::DEFAULT_CASES)]
    pub fuzz_cases: usize,
    /// Skip the benchmarks.
    #[arg(long)]
    pub no_bench: bool,
    /// Timed repetitions per benchmark (after one warm-up; the best counts).
    #[arg(long, default_value_t = 3)]
    pub bench_reps: usize,
    /// Count a throughput drop beyond 10 % as a regression.
    #[arg(long)]
    pub fail_on_slowdown: bool,
    /// Recording files or directories (default: datasets/recordings).
    pub paths: Vec<PathBuf>,
}

impl From<ReportArgs> for ReportOptions {
    fn from(a: ReportArgs) -> ReportOptions {
        ReportOptions {
            out: a.out,
            baseline: a.baseline,
            fuzz_seed: a.fuzz_seed,
            fuzz_cases: a.fuzz_cases,
            no_bench: a.no_bench,
            bench_reps: a.bench_reps,
            fail_on_slowdown: a.fail_on_slowdown,
            paths: a.paths,
        }
    }
}

/// `mmaemu report`: make and write the report, print a summary.
pub fn run(args: ReportArgs) -> CommandResult {
    let args = ReportOptions::from(args);
    writable_dir(&args.out).map_err(CommandError::bad_input)?;
    let progress = |s: &str| eprintln!("mmaemu report: {s}");
    let report = make(&args, &progress).map_err(CommandError::bad_input)?;
    write(&report, &args.out).map_err(CommandError::bad_input)?;
    print!("{}", mmaemu_reports::report::render::summary(&report, &args.out));
    Ok(Exit::failed_if(report.regressed()))
}

/// Ok when `dir` exists or can be created and a file can be written in it: checked before the replay, so
/// an unwritable --out fails at once (exit 2), not after minutes of work.
fn writable_dir(dir: &std::path::Path) -> Result<(), String> {
    let shown = dir.display();
    std::fs::create_dir_all(dir).map_err(|e| format!("--out {shown}: cannot create the directory: {e}"))?;
    let probe = dir.join(".mmaemu-report-write-check");
    std::fs::write(&probe, b"").map_err(|e| format!("--out {shown}: cannot write into it: {e}"))?;
    std::fs::remove_file(&probe).map_err(|e| format!("--out {shown}: cannot remove a file it wrote: {e}"))
}
