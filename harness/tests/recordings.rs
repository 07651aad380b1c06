//! The `recordings` test target: one libtest-mimic trial per row of every recording under `datasets/recordings/` (or
//! the paths of `MMAEMU_RECORDINGS`), named `<file stem>/<op>/<origin>`.

// `cargo test -p mmaemu-harness --test recordings -- toolbox-h200` runs the rows of one file; `-- --exact NAME` runs
// one row and decodes only that row (so nextest's one process per trial stays fast). Finding no recording at all is a
// panic, never a pass.

use libtest_mimic::Arguments;
use mmaemu_harness::recordings::{load, load_exact, recording_paths, trial};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = Arguments::from_args();
    // `--exact NAME` (one trial, as nextest runs each) reads just that row; anything else reads every file.
    let trials = match (&args.filter, args.exact, args.list) {
        (Some(name), true, false) => load_exact(&recording_paths(), name),
        _ => load(&recording_paths(), None),
    };
    let trials = match trials {
        Ok(t) => t,
        Err(e) => panic!("mmaemu-harness recordings: {e}"),
    };
    libtest_mimic::run(&args, trials.into_iter().map(trial).collect()).exit_code()
}
