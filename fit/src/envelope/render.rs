//! `mmaemu fit envelope` in print: the JSON object of `--json` and the text report.

use super::*;

/// The JSON form (documented in docs/report-schema.md, section "fit envelope").
pub fn json(r: &EnvelopeReport) -> Value {
    let (matches, listed) = r.max_matches();
    let env = &r.envelope;
    json!({
        "table": r.table,
        "rule": env.rule.name(),
        "margin": env.margin,
        "seed": r.seed,
        "holdout": r.holdout,
        "full": {
            "settings": r.full.iter().map(|c| {
                let mut v = setting_json(&c.setting);
                v["fitted"] = c.fitted.json();
                v["sidecar"] = c.sidecar.as_ref().map_or(Value::Null, SettingStats::json);
                v["max_split_MN_matches"] = json!(c.max_matches());
                v["all_match"] = json!(c.all_match());
                v
            }).collect::<Vec<_>>(),
            "sidecar_only": r.sidecar_only.iter().map(setting_json).collect::<Vec<_>>(),
            "max_split_MN_matches": matches,
            "sidecar_settings": listed,
            "sidecar_agrees": r.sidecar_agrees(),
        },
        "fit": {
            "train_rows": r.train_rows,
            "grid": env.grid,
            "settings": env.per_setting.iter().map(|(s, mx)| {
                let mut v = setting_json(s);
                v["max_split_MN"] = json!(mx);
                match env.rule {
                    RuleKind::MaxSplitMn => v["bound"] = json!(mx.map_or(0, |x| x.saturating_mul(env.margin))),
                    RuleKind::KGrid => v["bounds"] = json!(env.per_grid.get(s).cloned().unwrap_or_default()),
                }
                v
            }).collect::<Vec<_>>(),
        },
        "heldout": {
            "rows": r.heldout.rows,
            "shapes": r.heldout.shapes,
            "tested": r.heldout.tested,
            "uncovered": r.heldout.uncovered,
            "violations": r.heldout.violations.iter().map(|v| {
                let mut x = setting_json(&setting_of(&v.row));
                x["m"] = json!(v.row.m);
                x["n"] = json!(v.row.n);
                x["k"] = json!(v.row.k);
                x["s"] = json!(v.row.decision.split_s);
                x["MN"] = json!(mn(&v.row));
                x["bound"] = json!(v.bound);
                x
            }).collect::<Vec<_>>(),
        },
    })
}

fn opt(x: Option<u64>) -> String {
    x.map_or("-".into(), |v| v.to_string())
}

/// The text form.
pub fn text(r: &EnvelopeReport) -> String {
    let mut s = String::new();
    let env = &r.envelope;
    let (matches, listed) = r.max_matches();
    let _ = writeln!(s, "fit envelope {}: rule {}, margin {}", r.table, env.rule.name(), env.margin);
    let _ = writeln!(
        s,
        "all rows: {} settings; largest split M*N equals the sidecar's in {} of the {} settings it lists{}",
        r.full.len(),
        matches,
        listed,
        if r.sidecar_agrees() { " (every statistic agrees)" } else { "" }
    );
    let _ = writeln!(
        s,
        "  {:<SETTING_WIDTH$} {:>7} {:>6} {:>10} {:>10} {:>8}  S values",
        "setting", "rows", "split", "max MN", "sidecar", "min K"
    );
    for c in &r.full {
        let side = c.sidecar.as_ref();
        let _ = writeln!(
            s,
            "  {:<SETTING_WIDTH$} {:>7} {:>6} {:>10} {:>10} {:>8}  {:?}{}",
            setting_text(&c.setting),
            c.fitted.rows,
            c.fitted.split_rows,
            opt(c.fitted.max_split_mn),
            side.map_or("absent".into(), |x| opt(x.max_split_mn)),
            opt(c.fitted.min_split_k),
            c.fitted.s_values,
            if side.is_some() && !c.all_match() { "  DIFFERS from the sidecar" } else { "" }
        );
    }
    for x in &r.sidecar_only {
        let _ = writeln!(s, "  {:<SETTING_WIDTH$} listed by the sidecar, no table row", setting_text(x));
    }
    let h = &r.heldout;
    let _ = writeln!(
        s,
        "train/held-out (seed {}, {:.0} % of shapes held out): fitted on {} rows; held out {} rows ({} shapes)",
        r.seed,
        r.holdout * 100.0,
        r.train_rows,
        h.rows,
        h.shapes
    );
    if env.rule == RuleKind::MaxSplitMn {
        for (st, mx) in &env.per_setting {
            let _ = writeln!(
                s,
                "  {:<SETTING_WIDTH$} train max split M*N {:>10}  bound {:>10}",
                setting_text(st),
                opt(*mx),
                mx.map_or(0, |x| x.saturating_mul(env.margin))
            );
        }
    } else {
        for (st, bounds) in &env.per_grid {
            let mut runs: Vec<String> = Vec::new();
            let mut i = 0;
            while i < bounds.len() {
                let mut j = i;
                while j + 1 < bounds.len() && bounds[j + 1] == bounds[i] {
                    j += 1;
                }
                runs.push(format!("{} [K {}..{}]", opt(bounds[i]), env.grid[i], env.grid[j]));
                i = j + 1;
            }
            let _ = writeln!(s, "  {:<SETTING_WIDTH$} {}", setting_text(st), runs.join("; "));
        }
    }
    let _ = writeln!(
        s,
        "held-out test: {} rows above their bound (S = 1 inferred), {} violations (split above the bound), {} \
         rows the envelope says nothing about",
        h.tested,
        h.violations.len(),
        h.uncovered
    );
    for v in h.violations.iter().take(20) {
        let _ = writeln!(
            s,
            "  violation: M={} N={} K={} {} split S={}: M*N {} > bound {}",
            v.row.m,
            v.row.n,
            v.row.k,
            setting_text(&setting_of(&v.row)),
            v.row.decision.split_s,
            mn(&v.row),
            v.bound
        );
    }
    if h.violations.len() > 20 {
        let _ = writeln!(s, "  ... {} more", h.violations.len() - 20);
    }
    s
}
