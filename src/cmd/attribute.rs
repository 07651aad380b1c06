//! `mmaemu attribute`: every output of a generated call traced exactly, its error split into sources (term and block
//! truncation, chunk and split additions, epilogue rounding), summarised per source in ulps of the out dtype.

use super::trace::{with_call, CallFlags};
use super::{CommandError, CommandResult, Exit};
use clap::Args;
use mmaemu_model::trace::attribute_scaled_mm;
use mmaemu_model::trace::summary::{GemmAttribution, BIN_EDGES};
use serde_json::json;

/// The arguments of `mmaemu attribute`.
#[derive(Args, Debug)]
pub struct AttributeArgs {
    /// The call (operands from the generator).
    #[command(flatten)]
    pub call: CallFlags,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run `mmaemu attribute`.
pub fn run(args: AttributeArgs) -> CommandResult {
    let r = with_call(&args.call, None, |call| {
        attribute_scaled_mm(call).map_err(|e| CommandError {
            exit: Exit::Failed,
            message: e.to_string(),
            verbatim: false,
        })
    })?;
    if args.json {
        println!("{}", to_json(&r));
    } else {
        print!("{}", to_text(&r));
    }
    Ok(Exit::Success)
}

fn bins() -> Vec<String> {
    let mut v = vec!["0".to_string()];
    for w in BIN_EDGES.windows(2) {
        v.push(format!("({}, {}]", w[0], w[1]));
    }
    v.push(format!("> {}", BIN_EDGES[BIN_EDGES.len() - 1]));
    v
}

/// The attribution as JSON.
pub fn to_json(r: &GemmAttribution) -> serde_json::Value {
    json!({
        "outputs": r.outputs, "attributed": r.attributed, "exact_checks": r.exact_checks, "inexact": r.inexact,
        "histogram_bins_ulps": bins(),
        "sources": r.sources.iter().map(|s| json!({
            "source": s.name, "affected": s.affected,
            "share_affected": s.affected as f64 / r.attributed.max(1) as f64,
            "mean_ulps": s.mean_ulps, "max_ulps": s.max_ulps, "histogram": s.histogram,
        })).collect::<Vec<_>>(),
    })
}

/// The attribution as a table.
pub fn to_text(r: &GemmAttribution) -> String {
    let mut s = format!(
        "{} outputs, {} attributed (parts checked to add up exactly on each), {} differ from the exact result\n",
        r.outputs, r.attributed, r.inexact
    );
    s += &format!(
        "{:<27} {:>9} {:>11} {:>11}  histogram of |part| in ulps {:?}\n",
        "source",
        "affected",
        "mean ulps",
        "max ulps",
        bins()
    );
    for src in &r.sources {
        s += &format!(
            "{:<27} {:>8.2}% {:>11.4} {:>11.4}  {:?}\n",
            src.name,
            100.0 * src.affected as f64 / r.attributed.max(1) as f64,
            src.mean_ulps,
            src.max_ulps,
            src.histogram
        );
    }
    s
}
