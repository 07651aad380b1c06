//! `mmaemu datasets verify|stats|show|merge`: the arguments, over `mmaemu_harness::inspect` and
//! `mmaemu_datasets::merge`.

use super::{CommandError, CommandResult, Exit};
use mmaemu_harness::inspect;
use std::path::PathBuf;

/// The `datasets` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum DatasetsCommand {
    /// Check recordings against the format: schema, sizes, one expectation per row, unique ids, presets of
    /// profiles; with --sha256 also the consistency of the result hashes.
    Verify {
        /// Also check result hashes: equal inputs expect equal results, expected_sha256 matches the replay.
        #[arg(long)]
        sha256: bool,
        /// Recording files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Row counts by op, preset, profile, gpu, truth, formats, out dtype, split and expectation.
    Stats {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Recording files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// One row decoded: matrices as values, the expected result against the replayed one.
    Show {
        /// The recording file.
        file: PathBuf,
        /// The row id.
        #[arg(long, required_unless_present = "ids", conflicts_with = "ids")]
        id: Option<String>,
        /// List every row's id and what it is (op, preset, profile, shape, split, expected result or error).
        #[arg(long)]
        ids: bool,
        /// Largest number of matrix rows, columns and result elements printed (0: all).
        #[arg(long, default_value_t = 16)]
        max: usize,
    },
    /// Merge the shards of one recorder run (`mmaemu-record sweep|heuristics --shard I/N`) into the file
    /// the unsharded run writes: same spec and platform, every chunk exactly once, rows in chunk order,
    /// written atomically. Recordings, or split-K tables with their sidecars.
    Merge {
        /// The shard files (any order).
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// The merged file.
        #[arg(long)]
        out: PathBuf,
        /// Replace an existing output.
        #[arg(long)]
        force: bool,
    },
}

/// Run a `datasets` subcommand, printing the report to stdout and a fatal error (a line starting with
/// `mmaemu datasets`) to stderr.
pub fn run(cmd: DatasetsCommand) -> CommandResult {
    let (text, code) = match cmd {
        DatasetsCommand::Verify { sha256, paths } => inspect::verify(&paths, sha256),
        DatasetsCommand::Stats { json, paths } => inspect::stats(&paths, json),
        DatasetsCommand::Show { file, ids: true, .. } => inspect::ids(&file),
        DatasetsCommand::Show { file, id, max, .. } => {
            inspect::show(&file, id.as_deref().unwrap_or_default(), if max == 0 { usize::MAX } else { max })
        }
        DatasetsCommand::Merge { shards, out, force } => return merge(&shards, &out, force),
    };
    for line in text.lines() {
        if line.starts_with(inspect::FATAL) {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    Ok(match code {
        0 => Exit::Success,
        1 => Exit::Failed,
        _ => Exit::BadInput,
    })
}

/// `datasets merge`: a refusal (shards of different runs, overlapping or incomplete shards, an existing
/// output without --force) is unreadable input (exit 2), with the reason.
fn merge(shards: &[PathBuf], out: &std::path::Path, force: bool) -> CommandResult {
    let r = mmaemu_datasets::merge(shards, out, force).map_err(CommandError::bad_input)?;
    println!(
        "merged {} shards of a {}-chunk run into {} ({}, {} rows)",
        r.shards,
        r.chunks,
        r.out.display(),
        r.kind,
        r.rows
    );
    Ok(Exit::Success)
}
