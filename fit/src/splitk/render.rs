//! `mmaemu fit splitk` in print: the JSON object of `--json` and the text report, a group and its
//! verdict per line.

use super::*;

/// The `--json` form: `{"rows": [{"id", "s", "fast", "survivors"}], "groups": [{"gpu", "fast", "s",
/// "label", "rows", "survivors", "verdict"}]}`, plus the file, GPU, label and recorded scheme of each row,
/// each group's discriminating rows, identical classes, (verdict mixture) its parts `{"rule", "equivalent",
/// "explains", "assigned"}` and the number of covers of that size, (verdict none) closest rules, the skipped
/// rows, the candidate counts, per labelled scheme the rules fitting all its groups (`"schemes": [{"gpu",
/// "label", "rules", "rule"}]`, [`schemes`]: what `mmaemu platform build --rules` reads), and per label each
/// parameter's surviving values and why (`"decisions": [{"gpu", "label", "rules", "parameters": [{"name", "values",
/// "why"}]}]`, [`decisions`]).
pub fn json(report: &FitReport) -> Value {
    json!({
        "rows": report.rows.iter().map(|r| json!({
            "id": r.id,
            "s": r.s,
            "fast": r.fast,
            "survivors": r.survivors,
            "file": r.file.display().to_string(),
            "gpu": r.gpu,
            "label": r.label,
            "recorded_scheme": r.recorded,
        })).collect::<Vec<_>>(),
        "groups": report.groups.iter().map(|g| json!({
            "gpu": g.gpu,
            "fast": g.fast,
            "s": g.s,
            "label": g.label,
            "rows": g.rows,
            "survivors": g.survivors,
            "verdict": g.verdict.name(),
            "discriminating": g.discriminating,
            "identical": g.identical,
            "mixture": g.mixture.iter().map(|p| json!({"rule": p.rule, "equivalent": p.equivalent,
                "explains": p.explains, "assigned": p.assigned})).collect::<Vec<_>>(),
            "mixtures": g.mixtures,
            "closest": g.closest.iter().map(|c| json!({"rule": c.rule, "failing": c.failing})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "skipped": report.skipped.iter().map(|s| json!({
            "id": s.id, "file": s.file.display().to_string(), "reason": s.reason,
        })).collect::<Vec<_>>(),
        "candidates": {"fast": report.fast_candidates, "slow": report.slow_candidates},
        // The type `mmaemu platform build --rules` reads back (`FittedSchemes`).
        "schemes": schemes(report),
        "decisions": decisions(report).iter().map(|d| json!({
            "gpu": d.gpu,
            "label": d.label,
            "rules": d.rules,
            "parameters": d.parameters.iter().map(|p| json!({"name": p.name, "values": p.values, "why": p.why}))
                .collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// At most `n` items, then `(+k more)`.
fn listing(items: &[String], n: usize) -> String {
    let mut s = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n {
        let _ = write!(s, " (+{} more)", items.len() - n);
    }
    s
}

/// The text report: one paragraph per group, then the skipped rows by reason.
pub fn text(report: &FitReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fit splitk: {} rows with S > 1 fitted, {} skipped; {} candidate rules for fast accumulation, {} for slow",
        report.rows.len(),
        report.skipped.len(),
        report.fast_candidates,
        report.slow_candidates
    );
    for g in &report.groups {
        let _ = writeln!(
            s,
            "{}, {}, S={}, label {}: {} rows: {}{}",
            g.gpu,
            if g.fast { "fast" } else { "slow" },
            g.s,
            g.label.as_deref().unwrap_or("(none)"),
            g.rows.len(),
            g.verdict.name(),
            match g.verdict {
                Verdict::None => String::new(),
                Verdict::Mixture => format!(
                    " of {} rules: {}",
                    g.mixture.len(),
                    g.mixture
                        .iter()
                        .map(|p| format!("{}: {} rows", p.rule, p.assigned.len()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => format!(": {}", listing(&g.survivors, 12)),
            }
        );
        for p in &g.mixture {
            let _ = writeln!(
                s,
                "  {} reproduces {} rows, assigned {}: {}{}",
                p.rule,
                p.explains.len(),
                p.assigned.len(),
                listing(&p.assigned, 3),
                if p.equivalent.is_empty() {
                    String::new()
                } else {
                    format!(" (the same rows: {})", listing(&p.equivalent, 4))
                }
            );
        }
        if g.mixtures > 1 {
            let _ = writeln!(
                s,
                "  {} sets of {} rules explain these rows: the rows cannot tell them apart",
                g.mixtures,
                g.mixture.len()
            );
        }
        for class in &g.identical {
            let _ = writeln!(s, "  identical for S = {} (no recording can separate them): {}", g.s, class.join(" = "));
        }
        let _ = writeln!(s, "  discriminating rows: {} of {}: {}", g.discriminating.len(), g.rows.len(), {
            if g.discriminating.is_empty() {
                "none (every row is reproduced by every candidate)".to_string()
            } else {
                listing(&g.discriminating, 3)
            }
        });
        for c in &g.closest {
            let _ = writeln!(s, "  closest: {} fails {} rows: {}", c.rule, c.failing.len(), listing(&c.failing, 3));
        }
    }
    for f in schemes(report) {
        let _ = writeln!(
            s,
            "scheme {} on {}: {}",
            f.label,
            f.gpu,
            match &f.rule {
                Some(r) if f.rules.len() == 1 => format!("{r} (the one rule that fits every group)"),
                Some(r) => format!("{r} (of {} rules that fit every group: {})", f.rules.len(), listing(&f.rules, 6)),
                None => "no single rule fits every group".to_string(),
            }
        );
    }
    for d in decisions(report) {
        for p in d.parameters.iter().filter(|p| p.values.len() != 1) {
            let _ = writeln!(s, "  {} {}: {} open ({}): {}", d.label, d.gpu, p.name, p.values.join(", "), p.why);
        }
    }
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for k in &report.skipped {
        *reasons.entry(k.reason.as_str()).or_default() += 1;
    }
    for (reason, n) in reasons {
        let _ = writeln!(s, "skipped {n}: {reason}");
    }
    s
}
