//! The report of `mmaemu fit preset`: text for people, one JSON object for programs.

use super::{space, PresetFit, Verdict};
use serde_json::{json, Value};
use std::fmt::Write as _;

fn spec_line(s: &mmaemu_model::PresetSpec) -> String {
    let mut line: Vec<String> = space::params(s).iter().map(|(k, v)| format!("{k}={v}")).collect();
    let builtins: Vec<String> = space::builtin_matches(s).iter().map(|p| p.name().to_string()).collect();
    if !builtins.is_empty() {
        line.push(format!("(= {})", builtins.join(", ")));
    }
    line.join(" ")
}

fn hex(codes: &[u8]) -> String {
    codes.iter().map(|c| format!("{c:02x}")).collect()
}

/// The report as text.
pub fn text(f: &PresetFit) -> String {
    let mut o = String::new();
    let chains: usize = f.rows.iter().map(|r| r.chains).sum();
    let _ = writeln!(
        o,
        "fit preset: {} rows ({chains} chains), {} skipped; {} candidates",
        f.rows.len(),
        f.skipped.len(),
        f.candidates
    );
    let _ = writeln!(o, "verdict: {} ({} survivors)", f.verdict.name(), f.survivors.len());
    for s in f.survivors.iter().take(20) {
        let _ = writeln!(o, "  {}", spec_line(s));
    }
    if f.survivors.len() > 20 {
        let _ = writeln!(o, "  ... and {} more", f.survivors.len() - 20);
    }
    if f.verdict == Verdict::Ambiguous {
        for (name, values) in &f.undecided {
            let _ = writeln!(o, "the rows cannot tell apart {name}: {}", values.join(", "));
        }
        match &f.discriminator {
            Some(d) => {
                let _ = writeln!(
                    o,
                    "a chain that tells them apart ({} distinct results): {:?} x {:?}, c = {:#010x}, a = {}, b = {}",
                    d.outcomes.len(),
                    d.fa,
                    d.fb,
                    d.c.to_bits(),
                    hex(&d.a),
                    hex(&d.b)
                );
            }
            None => {
                let _ = writeln!(o, "no chain of {} random ones tells them apart", super::DISCRIMINATOR_TRIES);
            }
        }
    }
    if f.verdict == Verdict::None && f.rows.iter().all(|r| r.chains == 0) {
        let _ = writeln!(
            o,
            "no fittable row: {} rows read, none gives a chain to test (the skipped rows say why below); nothing \
             is decided",
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
    let spec = |s: &mmaemu_model::PresetSpec| {
        let mut v: serde_json::Map<String, Value> =
            space::params(s).iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        let names: Vec<String> = space::builtin_matches(s).iter().map(|p| p.name().to_string()).collect();
        v.insert("builtins".into(), json!(names));
        Value::Object(v)
    };
    json!({
        "verdict": f.verdict.name(),
        "candidates": f.candidates,
        "rows": f.rows.iter().map(|r| json!({"id": r.id, "file": r.file.display().to_string(), "op": r.op, "chains": r.chains})).collect::<Vec<_>>(),
        "skipped": f.skipped.iter().map(|s| json!({"id": s.id, "file": s.file.display().to_string(), "reason": s.reason})).collect::<Vec<_>>(),
        "survivors": f.survivors.iter().map(spec).collect::<Vec<_>>(),
        "builtin_survivors": f.builtin_survivors(),
        "undecided": f.undecided.iter().map(|(k, v)| json!({"parameter": k, "values": v})).collect::<Vec<_>>(),
        "discriminator": f.discriminator.as_ref().map(|d| json!({
            "fmt_a": format!("{:?}", d.fa).to_lowercase(),
            "fmt_b": format!("{:?}", d.fb).to_lowercase(),
            "a": hex(&d.a),
            "b": hex(&d.b),
            "c": format!("{:#010x}", d.c.to_bits()),
            "outcomes": d.outcomes.iter().map(|(bits, n)| json!({"bits": format!("{bits:#010x}"), "survivors": n})).collect::<Vec<_>>(),
        })),
        "unexplained": f.unexplained,
    })
}
