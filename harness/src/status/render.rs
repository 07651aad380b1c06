//! The status in print: the text table `replay` and `status` show before their closing line, and the
//! JSON object of `--json` and the report.

use super::{Counts, ScopeStatus, Status, StatusReport};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// One kind of evidence in words: `validated (12 hardware rows)`, `failing (...)`, or that there is none.
fn evidence(c: &Counts, what: &str) -> String {
    if c.hardware == 0 {
        return format!("no {what} hardware rows in these recordings");
    }
    format!("{} ({} hardware rows, {} passed)", c.status().name(), c.hardware, c.passed)
}

/// The scope's declared maturity and its two kinds of evidence, kept apart: instruction vectors that
/// match say nothing about cuBLASLt's GEMMs, and a declared maturity is not a recording.
fn evidence_line(sc: &ScopeStatus) -> String {
    format!(
        "declared {}; instruction-level evidence: {}; GEMM-level evidence: {}",
        sc.declared.unwrap_or("(not a model scope)"),
        evidence(&sc.instruction, "mma"),
        evidence(&sc.gemm, "GEMM")
    )
}

/// The text table.
pub fn text(report: &StatusReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "status, computed from {} rows ({} hardware): validated = hardware rows exist and all pass; failing = a \
         hardware row fails; experimental = otherwise (model rows are never evidence)",
        report.rows, report.hardware_rows
    );
    let width = report
        .scopes
        .iter()
        .flat_map(|sc| sc.features.iter())
        .filter(|f| f.counts.hardware + f.counts.model > 0)
        .map(|f| f.feature.label().chars().count())
        .max()
        .unwrap_or(10)
        .max(10);
    for sc in &report.scopes {
        let c = &sc.counts;
        if c.hardware + c.model == 0 {
            if sc.builtin {
                let _ = writeln!(
                    s,
                    "{} {}: experimental: no rows; nothing about it is validated by a recording{}",
                    sc.kind.name(),
                    sc.name,
                    sc.declared.map(|d| format!(" (declared {d})")).unwrap_or_default()
                );
            }
            continue;
        }
        let by = |st: Status| sc.features.iter().filter(|f| f.status == st).count();
        let _ = writeln!(
            s,
            "{} {}: {}: {} hardware rows ({} passed, {} failed, {} not replayed), {} model rows; features: {} \
             validated, {} failing, {} experimental",
            sc.kind.name(),
            sc.name,
            match (sc.status, c.hardware) {
                (Status::Experimental, 0) => "experimental (model rows only)",
                (st, _) => st.name(),
            },
            c.hardware,
            c.passed,
            c.failed,
            c.skipped,
            c.model,
            by(Status::Validated),
            by(Status::Failing),
            by(Status::Experimental),
        );
        let _ = writeln!(s, "  {}", evidence_line(sc));
        let _ = writeln!(
            s,
            "  {:<width$} {:>8} {:>7} {:>6} {:>7} {:>6}  status",
            "feature", "hardware", "passed", "failed", "skipped", "model"
        );
        for f in sc.features.iter().filter(|f| f.counts.hardware + f.counts.model > 0) {
            let [label, hardware, passed, failed, skipped, model, status] = f.cells(str::to_string);
            let _ = writeln!(
                s,
                "  {label:<width$} {hardware:>8} {passed:>7} {failed:>6} {skipped:>7} {model:>6}  {status}"
            );
        }
        let missing: Vec<String> = sc.without_hardware().map(|f| f.feature.label()).collect();
        if !missing.is_empty() {
            s.push_str(&wrap("  experimental, no hardware row: ", &missing, "    ", 118));
        }
    }
    s
}

/// `head` then the items joined by ", ", wrapped at `width` characters with `indent` on later lines.
fn wrap(head: &str, items: &[String], indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = head.to_string();
    for (i, item) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() { format!("{item},") } else { item.clone() };
        if line.len() > head.len().max(indent.len()) && line.len() + 1 + piece.len() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.to_string();
        } else if !line.ends_with(' ') {
            line.push(' ');
        }
        line.push_str(&piece);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

fn counts_json(c: &Counts) -> Value {
    json!({
        "hardware": c.hardware,
        "passed": c.passed,
        "failed": c.failed,
        "skipped": c.skipped,
        "model": c.model,
        "model_failed": c.model_failed,
    })
}

/// The JSON form: every scope with its counts, status and every feature (those without rows included).
pub fn json(report: &StatusReport) -> Value {
    json!({
        "rows": report.rows,
        "hardware_rows": report.hardware_rows,
        "scopes": report.scopes.iter().map(|sc| json!({
            "kind": sc.kind.name(),
            "name": sc.name,
            "builtin": sc.builtin,
            "status": sc.status.name(),
            "counts": counts_json(&sc.counts),
            "declared": sc.declared,
            "evidence": {
                "instruction": {"status": sc.instruction.status().name(), "counts": counts_json(&sc.instruction)},
                "gemm": {"status": sc.gemm.status().name(), "counts": counts_json(&sc.gemm)},
            },
            "features_by_status": {
                "validated": sc.features.iter().filter(|f| f.status == Status::Validated).count(),
                "failing": sc.features.iter().filter(|f| f.status == Status::Failing).count(),
                "experimental": sc.features.iter().filter(|f| f.status == Status::Experimental).count(),
            },
            "features": sc.features.iter().map(|f| json!({
                "group": f.feature.group.name(),
                "feature": f.feature.name,
                "label": f.feature.label(),
                "status": f.status.name(),
                "note": f.counts.note(),
                "counts": counts_json(&f.counts),
            })).collect::<Vec<_>>(),
            "no_hardware_rows": sc.without_hardware().map(|f| f.feature.label()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
