//! The report of `mmaemu fit preset`: text for people, one JSON object for programs — per parameter the decided
//! value, or the values still consistent with why they are harmless or why experiments are needed.

use super::decide::Decision;
use super::search::Survivor;
use super::{space, PresetFit, Verdict};
use serde_json::{json, Value};
use std::fmt::Write as _;

fn survivor_line(s: &Survivor) -> String {
    let mut line: Vec<String> = space::params(&s.spec).iter().map(|(k, v)| format!("{k}={v}")).collect();
    line.push(format!("min_exp {}", s.min_exp.describe().join(", ")));
    line.push(format!("slow_chunk {}", s.slow.describe().join(", ")));
    let builtins: Vec<String> = space::builtin_matches(&s.spec).iter().map(|p| p.name().to_string()).collect();
    if !builtins.is_empty() {
        line.push(format!("(= {})", builtins.join(", ")));
    }
    line.join(" ")
}

/// The report as text.
pub fn text(f: &PresetFit) -> String {
    let mut o = String::new();
    let chains: usize = f.rows.iter().map(|r| r.chains).sum();
    let slow = f.rows.iter().filter(|r| r.slow).count();
    let _ = writeln!(
        o,
        "fit preset: {} rows ({chains} chains; {slow} slow rows), {} skipped; {} core candidates",
        f.rows.len(),
        f.skipped.len(),
        f.candidates
    );
    let _ = writeln!(o, "verdict: {} ({} core survivors)", f.verdict.name(), f.survivors.len());
    for s in f.survivors.iter().take(20) {
        let _ = writeln!(o, "  {}", survivor_line(s));
    }
    if f.survivors.len() > 20 {
        let _ = writeln!(o, "  ... and {} more", f.survivors.len() - 20);
    }
    for p in &f.params {
        let _ = match &p.decision {
            Decision::Decided(v) => writeln!(o, "{}: {v}", p.name),
            Decision::Harmless { values, why } => {
                writeln!(o, "{}: undecided, harmless ({}): {why}", p.name, values.join(", "))
            }
            Decision::Open { values, why } => {
                writeln!(o, "{}: OPEN, more experiments needed ({}): {why}", p.name, values.join(", "))
            }
        };
    }
    if f.verdict == Verdict::None
        && f.survivors.is_empty()
        && f.unexplained.is_empty()
        && f.rows.iter().all(|r| r.slow || r.chains == 0)
    {
        let _ = writeln!(
            o,
            "no fittable row: {} rows read, none gives a fast or instruction chain to test (the skipped rows say why \
             below; slow rows only decide slow_chunk); nothing is decided",
            f.rows.len() + f.skipped.len()
        );
    } else if f.verdict == Verdict::None {
        let _ = writeln!(
            o,
            "rows no candidate reproduces: {}",
            if f.unexplained.is_empty() {
                "none alone (the rows conflict)".to_string()
            } else {
                f.unexplained.join(", ")
            }
        );
    }
    let builtins = f.builtin_survivors();
    if !builtins.is_empty() {
        let _ = writeln!(o, "built-in presets among the survivors: {}", builtins.join(", "));
    }
    for s in &f.skipped {
        let _ = writeln!(o, "skipped {} ({}): {}", s.id, s.file.display(), s.reason);
    }
    o
}

/// The report as one JSON object.
pub fn json(f: &PresetFit) -> Value {
    let survivor = |s: &Survivor| {
        let mut v: serde_json::Map<String, Value> =
            space::params(&s.spec).iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        v.insert("min_exp".into(), json!(s.min_exp.describe()));
        v.insert("slow_chunk".into(), json!(s.slow.describe()));
        let names: Vec<String> = space::builtin_matches(&s.spec).iter().map(|p| p.name().to_string()).collect();
        v.insert("builtins".into(), json!(names));
        Value::Object(v)
    };
    let param = |p: &super::Param| match &p.decision {
        Decision::Decided(v) => json!({"parameter": p.name, "state": "decided", "value": v}),
        Decision::Harmless { values, why } => {
            json!({"parameter": p.name, "state": "harmless", "values": values, "why": why})
        }
        Decision::Open { values, why } => json!({"parameter": p.name, "state": "open", "values": values, "why": why}),
    };
    json!({
        "verdict": f.verdict.name(),
        "candidates": f.candidates,
        "rows": f.rows.iter().map(|r| json!({"id": r.id, "file": r.file.display().to_string(), "op": r.op, "chains": r.chains, "slow": r.slow})).collect::<Vec<_>>(),
        "skipped": f.skipped.iter().map(|s| json!({"id": s.id, "file": s.file.display().to_string(), "reason": s.reason})).collect::<Vec<_>>(),
        "parameters": f.params.iter().map(param).collect::<Vec<_>>(),
        "open": f.open(),
        "survivors": f.survivors.iter().map(survivor).collect::<Vec<_>>(),
        "builtin_survivors": f.builtin_survivors(),
        "unexplained": f.unexplained,
    })
}
