//! bring-up.json and bring-up.html: every fitted parameter, what stays undecided and why, each customOption's rule
//! and verdict, the device calls and seconds of every stage, the experiments, and the check.

use crate::check::Check;
use crate::fits::Fits;
use crate::stages::StageRecord;
use mmaemu_datasets::splitk_table::SplitKTable;
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::Path;

/// What the report is made of.
pub struct Inputs<'a> {
    /// The bundle's name.
    pub name: &'a str,
    /// The probe.
    pub platform: &'a Value,
    /// The fits.
    pub fits: &'a Fits,
    /// The recorded heuristic table (the calls each customOption is routed).
    pub table: &'a SplitKTable,
    /// The stages.
    pub stages: &'a [StageRecord],
    /// Device calls in all.
    pub total_calls: u64,
    /// The envelope fit.
    pub envelope: &'a Value,
    /// The designed calls recorded.
    pub experiments: &'a [Value],
    /// Why the experiments stopped.
    pub stop: &'a str,
    /// The bundle build's outcome.
    pub built: &'a Result<(), String>,
    /// The check.
    pub check: &'a Check,
    /// The bundle.
    pub bundle: &'a Path,
    /// Seconds in all (this run).
    pub elapsed: f64,
}

/// bring-up.json.
pub fn json(i: &Inputs<'_>) -> Value {
    let preset_name = format!("{}-mma", i.name);
    json!({
        "format": "mmaemu-bring-up/1",
        "name": i.name,
        "device": i.platform,
        "verdict": if i.check.all_pass() { "pass" } else { "fail" },
        "bundle": i.bundle.display().to_string(),
        "build_error": i.built.as_ref().err(),
        "calls": {"total": i.total_calls,
                  "per_stage": i.stages.iter().map(|s| (s.name.clone(), Value::from(s.calls))).collect::<serde_json::Map<_, _>>()},
        "seconds": (i.elapsed * 10.0).round() / 10.0,
        "stages": i.stages.iter().map(StageRecord::to_json).collect::<Vec<_>>(),
        "preset": {"name": preset_name, "fit": i.fits.preset_summary(),
                   "parameters": i.fits.preset_parameters(&preset_name),
                   "decisions": i.fits.preset_decisions(),
                   "undecided": i.fits.preset_undecided()},
        "custom_options": i.fits.custom_rules(i.table).iter().map(|c| {
            let mut o = json!({"label": c.label, "rule": c.rule, "rules": c.rules, "verdict": c.verdict});
            if let Some(why) = &c.why {
                o["why"] = why.clone().into();
            }
            o
        }).collect::<Vec<_>>(),
        "split_unexplained": i.fits.split_unexplained(),
        "envelope": i.envelope,
        "experiments": {"recorded": i.experiments, "stopped": i.stop},
        "check": i.check.to_json(i.bundle),
    })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => esc(s),
        Value::Null => "-".into(),
        other => esc(&other.to_string()),
    }
}

/// A table of `rows` (JSON objects) with `columns`.
fn table(s: &mut String, columns: &[&str], rows: &[Value]) {
    s.push_str("<table><tr>");
    for c in columns {
        let _ = write!(s, "<th>{}</th>", esc(c));
    }
    s.push_str("</tr>");
    for r in rows {
        s.push_str("<tr>");
        for c in columns {
            let _ = write!(s, "<td>{}</td>", cell(&r[*c]));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
}

/// bring-up.html: the same as bring-up.json, as a self-contained page in the report's style.
pub fn html(r: &Value) -> String {
    let mut s = String::new();
    let ok = r["verdict"] == "pass";
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>bring-up {}</title><style>\
         body{{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}}h1{{margin-bottom:4px}}\
         table{{border-collapse:collapse;margin:8px 0 16px}}td,th{{border:1px solid #ccc;padding:3px 8px;\
         font-size:13px;text-align:left}}th{{background:#f3f3f3}}.ok{{color:#1a7f37}}.bad{{color:#cf222e;\
         font-weight:bold}}.muted{{color:#666}}</style></head><body><h1>bring-up {}</h1>\
         <p class=\"muted\">{} - {} device calls, {} s.</p><p class=\"{}\">check: {} passed, {} failed, {} skipped</p>",
        cell(&r["name"]),
        cell(&r["name"]),
        cell(&r["device"]["gpu"]),
        cell(&r["calls"]["total"]),
        cell(&r["seconds"]),
        if ok { "ok" } else { "bad" },
        cell(&r["check"]["passed"]),
        cell(&r["check"]["failed"]),
        cell(&r["check"]["skipped"]),
    );
    s.push_str("<h2>Stages</h2>");
    table(&mut s, &["stage", "calls", "seconds", "resumed", "note"], r["stages"].as_array().map_or(&[], |v| v));
    s.push_str("<h2>Preset</h2>");
    let params: Vec<Value> = r["preset"]["parameters"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| json!({"parameter": k, "value": v})).collect())
        .unwrap_or_default();
    table(&mut s, &["parameter", "value"], &params);
    let _ = write!(s, "<p>fit: {}</p>", cell(&r["preset"]["fit"]));
    table(&mut s, &["parameter", "values", "why"], r["preset"]["undecided"].as_array().map_or(&[], |v| v));
    s.push_str("<h2>Split-K rules</h2>");
    table(&mut s, &["label", "rule", "verdict", "rules", "why"], r["custom_options"].as_array().map_or(&[], |v| v));
    let _ = write!(s, "<h2>Experiments</h2><p>{}</p>", cell(&r["experiments"]["stopped"]));
    table(&mut s, &["round", "decides", "spec"], r["experiments"]["recorded"].as_array().map_or(&[], |v| v));
    s.push_str("<h2>Check</h2>");
    table(&mut s, &["id", "message", "rerun"], r["check"]["problems"].as_array().map_or(&[], |v| v));
    s.push_str("</body></html>\n");
    s
}

/// Writes DIR/bring-up.json and DIR/bring-up.html.
pub fn write(dir: &Path, report: &Value) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(report).unwrap_or_default();
    std::fs::write(dir.join("bring-up.json"), text + "\n")?;
    std::fs::write(dir.join("bring-up.html"), html(report))
}
