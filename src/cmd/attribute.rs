//! `mmaemu attribute`: every output of a generated call or a recorded row attributed (term and block truncation,
//! chunk and split additions, epilogue rounding), summarised per source, compared across variants, as text, JSON or HTML.

use super::call::GeneratedCall;
use super::trace::with_call;
use super::{CommandError, CommandResult, Exit};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use mmaemu_api::trace::attribute_scaled_mm_with;
use mmaemu_api::trace::summary::{GemmAttribution, BIN_EDGES, SOURCES};
use mmaemu_datasets::read_recording;
use mmaemu_harness::trace::attribute_row;
use serde_json::json;
use std::io::IsTerminal;
use std::path::PathBuf;

/// The arguments of `mmaemu attribute`.
#[derive(Args, Debug)]
pub struct AttributeArgs {
    /// A recording file: attribute its row `--row`.
    pub file: Option<PathBuf>,
    /// The row id (with FILE).
    #[arg(long)]
    pub row: Option<String>,
    /// The call (operands from the generator).
    #[command(flatten)]
    pub call: GeneratedCall,
    /// Variants of the call to compare with it, comma-separated; each is `:`-joined changes: a profile name, `fast`,
    /// `slow`, `s1` (no split), `auto` (the table's split), or an out dtype (fp32, bf16, fp16, e4m3, e5m2).
    #[arg(long)]
    pub compare: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write a self-contained HTML page of the attribution (and the comparisons) to FILE.
    #[arg(long)]
    pub html: Option<PathBuf>,
}

/// One variant compared with the base call: its attribution and how its outputs differ from the base's.
pub struct Comparison {
    /// The variant as given.
    pub name: String,
    /// Its attribution.
    pub attribution: GemmAttribution,
    /// Outputs whose values differ from the base's.
    pub differ: usize,
    /// The first differing outputs (i, j), at most 10.
    pub first: Vec<(usize, usize)>,
    /// Per source (the four parts): outputs among the differing ones where the part differs, the mean and the
    /// largest |difference| in ulps of the base's out dtype, and outputs where it differs most.
    pub by_source: Vec<(usize, f64, f64, usize)>,
}

fn failed(e: impl ToString) -> CommandError {
    CommandError { exit: Exit::Failed, message: e.to_string(), verbatim: false }
}

/// A progress bar on stderr when it is a terminal, else nothing.
fn bar(total: usize, what: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} outputs, {eta} left") {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(what.to_string());
    Some(pb)
}

/// Attribute a call by flags, with a progress bar.
fn attribute_flags(f: &GeneratedCall, what: &str) -> Result<GemmAttribution, CommandError> {
    let (m, n, _) = f.call.shape(None)?;
    let pb = bar(m.saturating_mul(n), what);
    let r = with_call(f, None, |call| {
        attribute_scaled_mm_with(call, &|d: usize| {
            if let Some(pb) = &pb {
                pb.set_position(d as u64)
            }
        })
        .map_err(failed)
    });
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    r
}

/// The call `base` with the changes of one `--compare` item.
pub fn variant(base: &GeneratedCall, spec: &str) -> Result<GeneratedCall, String> {
    let mut f = base.clone();
    for change in spec.split(':').map(str::trim) {
        match change {
            "fast" => f.call.fast = true,
            "slow" => f.call.fast = false,
            "s1" => f.call.splitk = "1".into(),
            "auto" => f.call.splitk = "auto".into(),
            "fp32" | "float32" | "bf16" | "bfloat16" | "fp16" | "float16" | "e4m3" | "e5m2" => {
                f.call.out = Some(change.into())
            }
            "" => return Err(format!("empty change in --compare item '{spec}'")),
            profile => f.call.profile = Some(profile.into()),
        }
    }
    Ok(f)
}

/// Compare a variant's outputs with the base's.
pub fn compare(name: &str, base: &GemmAttribution, v: GemmAttribution) -> Comparison {
    let (mut differ, mut first) = (0, Vec::new());
    let mut acc = vec![(0usize, 0.0f64, 0.0f64, 0usize); 4];
    for (idx, (b, x)) in base.figures.iter().zip(&v.figures).enumerate() {
        let same = b.emulated == x.emulated || (b.emulated.is_nan() && x.emulated.is_nan());
        if same {
            continue;
        }
        differ += 1;
        if first.len() < 10 {
            first.push((idx / base.n.max(1), idx % base.n.max(1)));
        }
        if !(b.attributed && x.attributed) {
            continue;
        }
        // The difference of the values is the sum of the parts' differences (both against the same exact result).
        let d: Vec<f64> =
            (1..5).map(|s| x.ulps[s] * 2f64.powi(x.ulp_exp - b.ulp_exp) - b.ulps[s]).map(f64::abs).collect();
        let top = (0..4).fold(0, |t, s| if d[s] > d[t] { s } else { t });
        for (s, a) in acc.iter_mut().enumerate() {
            if d[s] != 0.0 {
                a.0 += 1;
                a.1 += d[s];
                a.2 = a.2.max(d[s]);
            }
        }
        acc[top].3 += usize::from(d[top] != 0.0);
    }
    let by_source = acc.into_iter().map(|(c, sum, max, top)| (c, sum / differ.max(1) as f64, max, top)).collect();
    Comparison { name: name.to_string(), attribution: v, differ, first, by_source }
}

/// Run `mmaemu attribute`.
pub fn run(args: AttributeArgs) -> CommandResult {
    let base = match &args.file {
        Some(path) => {
            if args.compare.is_some() {
                return Err(CommandError::bad_input("--compare takes a call by flags, not a recording row"));
            }
            let id = args.row.as_deref().ok_or_else(|| CommandError::bad_input("a recording needs --row ID"))?;
            let rec = read_recording(path).map_err(CommandError::bad_input)?;
            let row = rec
                .rows
                .iter()
                .find(|r| r.id == id)
                .ok_or_else(|| CommandError::bad_input(format!("{}: no row with id {id:?}", path.display())))?;
            let total = usize::try_from(row.m.saturating_mul(row.n)).unwrap_or(0);
            let pb = bar(total, &format!("row {id}"));
            let r = attribute_row(row, &|d: usize| {
                if let Some(pb) = &pb {
                    pb.set_position(d as u64)
                }
            })
            .map_err(|e| failed(format!("row {id:?}: {e}")));
            if let Some(pb) = pb {
                pb.finish_and_clear();
            }
            r?
        }
        None => attribute_flags(&args.call, "base")?,
    };
    let mut comparisons = Vec::new();
    for spec in args.compare.iter().flat_map(|c| c.split(',')) {
        let f = variant(&args.call, spec).map_err(CommandError::bad_input)?;
        let v = attribute_flags(&f, spec)?;
        comparisons.push(compare(spec, &base, v));
    }
    let title = describe(&args);
    if let Some(path) = &args.html {
        let page = super::attribute_html::page(&title, &base, &comparisons);
        std::fs::write(path, page)
            .map_err(|e| CommandError::bad_input(format!("cannot write {}: {e}", path.display())))?;
    }
    if args.json {
        let mut v = to_json(&base);
        v["call"] = json!(title);
        v["comparisons"] = comparisons.iter().map(comparison_json).collect();
        println!("{v}");
    } else {
        println!("{title}");
        print!("{}", to_text(&base));
        for c in &comparisons {
            print!("{}", comparison_text(c));
        }
    }
    Ok(Exit::Success)
}

/// One line saying what was attributed.
fn describe(a: &AttributeArgs) -> String {
    if let Some(f) = &a.file {
        return format!("recording {} row {}", f.display(), a.row.as_deref().unwrap_or(""));
    }
    let (c, inputs) = (&a.call.call, &a.call.inputs);
    format!(
        "scaled_mm {}x{}x{} {} x {} -> {}, profile {}, {}, split {}, data {} seed {}",
        c.m.unwrap_or(0),
        c.n.unwrap_or(0),
        c.k.unwrap_or(0),
        c.a,
        c.b,
        c.out.as_deref().unwrap_or(&c.a),
        c.profile.as_deref().unwrap_or("(default)"),
        if c.fast { "fast" } else { "slow" },
        c.splitk,
        inputs.data,
        inputs.seed
    )
}

/// The histogram's bin names.
pub fn bins() -> Vec<String> {
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
        "exact_fallbacks": r.exact_fallbacks, "out_dtype": r.out.name(), "m": r.m, "n": r.n,
        "histogram_bins_ulps": bins(),
        "sources": r.sources.iter().map(|s| json!({
            "source": s.name, "affected": s.affected,
            "share_affected": s.affected as f64 / r.attributed.max(1) as f64,
            "mean_ulps": s.mean_ulps, "max_ulps": s.max_ulps, "histogram": s.histogram,
        })).collect::<Vec<_>>(),
    })
}

fn comparison_json(c: &Comparison) -> serde_json::Value {
    let mut v = to_json(&c.attribution);
    v["variant"] = json!(c.name);
    v["outputs_differing"] = json!(c.differ);
    v["first_differing"] = json!(c.first.iter().map(|(i, j)| [i, j]).collect::<Vec<_>>());
    v["difference_by_source"] = c
        .by_source
        .iter()
        .zip(&SOURCES[1..])
        .map(|(s, name)| json!({"source": name, "outputs": s.0, "mean_ulps": s.1, "max_ulps": s.2, "largest_in": s.3}))
        .collect();
    v
}

/// The attribution as a table.
pub fn to_text(r: &GemmAttribution) -> String {
    let mut s = format!(
        "{} outputs, {} attributed (parts checked to add up exactly on each), {} differ from the exact result; ulps of {}\n",
        r.outputs, r.attributed, r.inexact, r.out
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

fn comparison_text(c: &Comparison) -> String {
    let mut s = format!("\ncompared with {}: {} of {} outputs differ", c.name, c.differ, c.attribution.outputs);
    if !c.first.is_empty() {
        let first: Vec<String> = c.first.iter().map(|(i, j)| format!("({i}, {j})")).collect();
        s += &format!(" (first: {})", first.join(" "));
    }
    s += "\n";
    s += &format!(
        "{:<27} {:>9} {:>11} {:>11} {:>9}\n",
        "source of the difference", "outputs", "mean ulps", "max ulps", "largest"
    );
    for (src, name) in c.by_source.iter().zip(&SOURCES[1..]) {
        s += &format!("{name:<27} {:>9} {:>11.4} {:>11.4} {:>9}\n", src.0, src.1, src.2, src.3);
    }
    s += &format!("the variant's own attribution:\n{}", to_text(&c.attribution));
    s
}
