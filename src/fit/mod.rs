//! `mmaemu fit`: establish, from recorded data alone, what the model otherwise takes from behaviour.md —
//! the split-K reduction rule of a GPU's kernels ([`splitk`], over the candidate rules of [`rules`]) and
//! the envelope above which cuBLASLt never splits ([`envelope`]) — each with an honest verdict.
//!
//! Exit codes of the commands ([`run`]): 0 the fit holds; 1 it does not (`fit splitk`: a group without a
//! surviving rule; `fit envelope`: held-out violations, or the table disagrees with its sidecar); 2
//! unreadable input or a usage error.

pub mod envelope;
pub mod rules;
pub mod splitk;

use std::path::PathBuf;

/// The `mmaemu fit` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum FitCommand {
    /// Find the split-K reduction rule (tile width, ownership, slow restart, combination order) that
    /// reproduces the recorded rows with S > 1, per GPU, fast/slow, S and customOption or scheme.
    Splitk {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
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
        #[arg(long, default_value_t = envelope::DEFAULT_SEED)]
        seed: u64,
        /// Fraction of the shapes held out, in [0, 1).
        #[arg(long, default_value_t = envelope::DEFAULT_HOLDOUT)]
        holdout: f64,
        /// Margin applied to the largest split M*N (default: the sidecar's, else 2).
        #[arg(long)]
        margin: Option<u64>,
        /// Rule: max_split_MN (mn) or k_grid (k-grid); default: the sidecar's envelope kind.
        #[arg(long)]
        rule: Option<String>,
        /// The split-K table (Parquet, with its JSON sidecar next to it).
        table: PathBuf,
    },
}

/// Run a `fit` subcommand; returns the exit code.
pub fn run(cmd: FitCommand) -> u8 {
    match cmd {
        FitCommand::Splitk { json, paths } => match splitk::fit_paths(&paths) {
            Err(e) => {
                eprintln!("mmaemu fit splitk: {e}");
                2
            }
            Ok(report) => {
                if json {
                    println!("{}", splitk::json(&report));
                } else {
                    print!("{}", splitk::text(&report));
                }
                u8::from(report.groups.iter().any(|g| g.verdict == splitk::Verdict::None))
            }
        },
        FitCommand::Envelope { json, seed, holdout, margin, rule, table } => {
            if !(0.0..1.0).contains(&holdout) {
                eprintln!("mmaemu fit envelope: --holdout must be in [0, 1), got {holdout}");
                return 2;
            }
            let rule = match rule.as_deref().map(|r| (r, envelope::RuleKind::parse(r))) {
                None => None,
                Some((_, Some(k))) => Some(k),
                Some((r, None)) => {
                    eprintln!("mmaemu fit envelope: unknown rule '{r}' (max_split_MN or k_grid)");
                    return 2;
                }
            };
            let opts = envelope::Options { seed, holdout, margin, rule };
            match envelope::fit_path(&table, &opts) {
                Err(e) => {
                    eprintln!("mmaemu fit envelope: {e}");
                    2
                }
                Ok(r) => {
                    if json {
                        println!("{}", envelope::json(&r));
                    } else {
                        print!("{}", envelope::text(&r));
                    }
                    u8::from(!r.heldout.violations.is_empty() || !r.sidecar_agrees())
                }
            }
        }
    }
}
