//! `mmaemu fit splitk|envelope|preset`: the arguments, over `mmaemu_fit`.

use super::{CommandError, CommandResult, Exit};
use std::path::PathBuf;

/// The `mmaemu fit` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum FitCommand {
    /// Find the split-K reduction rule (tile width, ownership, slow restart, combination order) that
    /// reproduces the recorded rows with S > 1, per GPU, fast/slow, S and customOption or scheme; where no
    /// single rule does, the smallest set of rules that does (a mixture) and the rows each reproduces.
    Splitk {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Also fit rows of a simulated device (truth = model) as if recorded (see `fit preset --simulated`).
        #[arg(long)]
        simulated: bool,
        /// Recording files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Find every preset of a bounded parameter space (docs/reference.md §2.9) that reproduces every
    /// recorded bit of the instruction rows (op mma), unsplit accumulator rows (and gemm rows that are
    /// accumulators: fp32 out, unit scales) and unsplit fp32 MXFP8 scaled_mm rows (which decide the scale
    /// block); the preset column is ignored (it may be `unknown`). Verdict unique, ambiguous or none.
    Preset {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Write the winner as a preset document (docs/preset-format.md): the survivor that is a built-in
        /// preset's arithmetic, else the first.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The name of the written preset.
        #[arg(long, default_value = "fit")]
        name: String,
        /// Also fit rows of a simulated device (truth = model) as if recorded: rehearsing the bring-up loop
        /// without a GPU (docs/bring-up.md). Nothing fitted this way is validated.
        #[arg(long)]
        simulated: bool,
        /// Recording files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Fit the bound above which cuBLASLt never splits, per setting, from a split-K table; test it on a
    /// sealed held-out part; compare the full-data statistics with the table's sidecar.
    Envelope {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Seed of the train/held-out partition of the shapes.
        #[arg(long, default_value_t = mmaemu_fit::envelope::DEFAULT_SEED)]
        seed: u64,
        /// Fraction of the shapes held out, in [0, 1).
        #[arg(long, default_value_t = mmaemu_fit::envelope::DEFAULT_HOLDOUT)]
        holdout: f64,
        /// Margin applied to the largest split M*N (default: the sidecar's, else 2).
        #[arg(long)]
        margin: Option<u64>,
        /// Rule: max_split_MN (mn) or k_grid (k-grid); default: the sidecar's envelope kind.
        #[arg(long)]
        rule: Option<String>,
        /// Write the fitted envelope as an envelope document (`mmaemu-envelope/1`), which `mmaemu platform build
        /// --envelope` puts into the bundle's copy of the table's sidecar.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The split-K table (Parquet, with its JSON sidecar next to it).
        table: PathBuf,
    },
}

/// Run a `fit` subcommand.
pub fn run(cmd: FitCommand) -> CommandResult {
    match cmd {
        FitCommand::Splitk { json, simulated, paths } => {
            let report = mmaemu_fit::splitk::fit_paths(&paths, evidence(simulated)).map_err(CommandError::bad_input)?;
            {
                if json {
                    println!("{}", mmaemu_fit::splitk::json(&report));
                } else {
                    print!("{}", mmaemu_fit::splitk::text(&report));
                }
                // No row with S > 1 to fit decides nothing: a failed fit, said at once.
                if report.rows.is_empty() {
                    eprintln!(
                        "mmaemu fit splitk: no row with S > 1 to fit (a split rule is decided by split rows only)"
                    );
                    return Ok(Exit::Failed);
                }
                Ok(Exit::failed_if(report.groups.iter().any(|g| g.verdict == mmaemu_fit::splitk::Verdict::None)))
            }
        }
        FitCommand::Preset { json, out, name, simulated, paths } => {
            use mmaemu_fit::preset;
            let fit = preset::fit_paths(&paths, evidence(simulated)).map_err(CommandError::bad_input)?;
            if json {
                println!("{}", preset::json(&fit));
            } else {
                print!("{}", preset::text(&fit));
            }
            // No fittable row decides nothing: a failed fit, said at once, and no preset written.
            if fit.rows.is_empty() {
                eprintln!(
                    "mmaemu fit preset: no fittable row (op mma, or unsplit fast gemm rows with fp32 out and unit \
                     scales, recorded on hardware or with --simulated); nothing written"
                );
                return Ok(Exit::Failed);
            }
            if let Some(path) = out {
                let winner =
                    fit.winner(&name).ok_or_else(|| CommandError::bad_input("no preset to write: no survivor"))?;
                std::fs::write(&path, winner.to_document())
                    .map_err(|e| CommandError::bad_input(format!("cannot write {}: {e}", path.display())))?;
                if !json {
                    println!("wrote {} to {}", winner.name(), path.display());
                }
            }
            // An open parameter (more experiments needed) fails the fit as no survivor does.
            Ok(Exit::failed_if(!fit.holds()))
        }
        FitCommand::Envelope { json, seed, holdout, margin, rule, out, table } => {
            if !(0.0..1.0).contains(&holdout) {
                return Err(CommandError::bad_input(format!("--holdout must be in [0, 1), got {holdout}")));
            }
            let rule = match rule.as_deref().map(|r| (r, mmaemu_fit::envelope::RuleKind::parse(r))) {
                None => None,
                Some((_, Some(k))) => Some(k),
                Some((r, None)) => {
                    return Err(CommandError::bad_input(format!("unknown rule '{r}' (max_split_MN or k_grid)")));
                }
            };
            let opts = mmaemu_fit::envelope::Options { seed, holdout, margin, rule };
            let r = mmaemu_fit::envelope::fit_path(&table, &opts).map_err(CommandError::bad_input)?;
            if json {
                println!("{}", mmaemu_fit::envelope::json(&r));
            } else {
                print!("{}", mmaemu_fit::envelope::text(&r));
            }
            if let Some(path) = out {
                let doc = mmaemu_fit::envelope::fitted(&r);
                doc.write(&path).map_err(CommandError::bad_input)?;
                if !json {
                    let inference = doc.envelope["inference"].as_bool() == Some(true);
                    println!(
                        "wrote the envelope to {} ({}); build it into a bundle with `mmaemu platform build --envelope {}`",
                        path.display(),
                        if inference { "it infers S = 1 outside the table" } else { "inference off: held-out rows split above their bound" },
                        path.display()
                    );
                }
            }
            Ok(Exit::failed_if(!r.heldout.violations.is_empty() || !r.sidecar_agrees()))
        }
    }
}

/// The rows a fit reads: hardware rows, and with `--simulated` model rows too.
fn evidence(simulated: bool) -> mmaemu_fit::Evidence {
    if simulated {
        mmaemu_fit::Evidence::Simulated
    } else {
        mmaemu_fit::Evidence::Hardware
    }
}
