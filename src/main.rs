//! The `mmaemu` command line: `replay` recordings through the model and report what matches the hardware.

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use mmaemu::replay_files::{files, json_report, replay_file, summary_line, totals, FileReport};
use std::collections::BTreeMap;
use std::io::IsTerminal;
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
        /// Recording files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Replay { json, paths } => replay(json, &paths),
    }
}

/// Exit codes: 0 all passed, 1 a row failed, 2 unreadable input.
fn replay(json: bool, paths: &[PathBuf]) -> ExitCode {
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
        match replay_file(path, &tick) {
            Ok(r) => reports.push(r),
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
    let (passed, failed, skipped) = totals(&reports);
    if json {
        println!("{}", json_report(&reports));
    } else {
        for r in &reports {
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
        }
        for r in &reports {
            for f in &r.failures {
                println!("FAIL {}: {}: {}", r.path.display(), f.id, f.failure);
            }
        }
        println!("{}", summary_line(passed, failed, skipped));
    }
    if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
