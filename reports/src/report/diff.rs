//! Comparing a report with a baseline report.json: every row whose outcome changed on a backend, every status (scope or
//! feature) that changed, every fuzz check whose failure count changed and every throughput that moved by more than
//! [`super::THROUGHPUT_THRESHOLD`].

use super::Report;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One change since the baseline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// `row`, `status`, `fuzz`, `throughput` or `backend`.
    pub kind: &'static str,
    /// What changed: `<backend> <file> <row id>`, `<scope kind> <scope>[: <feature>]`, the fuzz check,
    /// `<shape> | <backend>`, the backend.
    pub subject: String,
    /// Before (the baseline's value, `absent` when it had none).
    pub before: String,
    /// The value now (`-` when absent).
    pub after: String,
    /// In words: `newly failing`, `newly passing`, `status change`, `slower by 23 %`, ...
    pub change: String,
    /// Does it count as a regression? (What does is written at the top of `report/mod.rs`.)
    pub regression: bool,
}

/// The comparison with a baseline.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Diff {
    /// The baseline file.
    pub path: String,
    /// The baseline's `generated`.
    pub generated: String,
    /// Every change, rows first, then status, fuzz, throughput, backends.
    pub changes: Vec<Change>,
}

impl Diff {
    /// Changes that are regressions.
    pub fn regressions(&self) -> usize {
        self.changes.iter().filter(|c| c.regression).count()
    }

    /// The JSON form (`baseline` in report.json).
    pub fn json(&self) -> Value {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for c in &self.changes {
            *counts.entry(c.kind).or_default() += 1;
        }
        json!({
            "path": self.path,
            "generated": self.generated,
            "regressions": self.regressions(),
            "counts": counts,
            "changes": self.changes.iter().map(|c| json!({
                "kind": c.kind, "subject": c.subject, "before": c.before, "after": c.after, "change": c.change,
                "regression": c.regression,
            })).collect::<Vec<_>>(),
        })
    }
}

const ABSENT: &str = "absent";

fn s(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_string()
}

/// (backend, file, id) -> outcome (`pass`, `fail`, `skip`) of a report.json.
fn row_outcomes(v: &Value) -> BTreeMap<(String, String, String), String> {
    let mut out = BTreeMap::new();
    for f in v.get("recordings").and_then(Value::as_array).into_iter().flatten() {
        let file = s(f, "file");
        let ids: Vec<&str> =
            f.get("ids").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        for (backend, letters) in f.get("outcomes").and_then(Value::as_object).into_iter().flatten() {
            let letters = letters.as_str().unwrap_or("");
            for (id, c) in ids.iter().zip(letters.chars()) {
                let o = match c {
                    'p' => "pass",
                    'f' => "fail",
                    _ => "skip",
                };
                out.insert((backend.clone(), file.clone(), id.to_string()), o.to_string());
            }
        }
    }
    out
}

/// `<kind> <scope>[: <feature>]` -> status of a report.json.
fn statuses(v: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for sc in v.get("status").and_then(|x| x.get("scopes")).and_then(Value::as_array).into_iter().flatten() {
        let scope = format!("{} {}", s(sc, "kind"), s(sc, "name"));
        out.insert(scope.clone(), s(sc, "status"));
        for f in sc.get("features").and_then(Value::as_array).into_iter().flatten() {
            out.insert(format!("{scope}: {}", s(f, "label")), s(f, "status"));
        }
    }
    out
}

/// `<shape> | <backend>` -> MAC/s of a report.json.
pub fn throughput_of(v: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for m in v.get("bench").and_then(|b| b.get("measurements")).and_then(Value::as_array).into_iter().flatten() {
        if let Some(x) = m.get("macs_per_s").and_then(Value::as_f64) {
            out.insert(format!("{} | {}", s(m, "shape"), s(m, "backend")), x);
        }
    }
    out
}

/// check -> failures of a report.json.
fn fuzz_of(v: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for c in v.get("fuzz").and_then(|f| f.get("checks")).and_then(Value::as_array).into_iter().flatten() {
        out.insert(s(c, "name"), c.get("failures").and_then(Value::as_u64).unwrap_or(0));
    }
    out
}

fn backends_of(v: &Value) -> BTreeSet<String> {
    v.get("backends").and_then(Value::as_array).into_iter().flatten().map(|b| s(b, "name")).collect()
}

/// What a row's outcome change is called, and whether it regresses.
fn row_change(before: &str, after: &str) -> (&'static str, bool) {
    match (before, after) {
        (_, "fail") if before != "fail" => {
            if before == ABSENT {
                ("new row, failing", true)
            } else {
                ("newly failing", true)
            }
        }
        ("fail", "pass") | ("skip", "pass") => ("newly passing", false),
        ("pass", "skip") => ("newly skipped", true),
        ("fail", "skip") => ("no longer failing (skipped)", false),
        (ABSENT, _) => ("new row", false),
        (_, ABSENT) => ("removed row", false),
        _ => ("outcome change", false),
    }
}

/// Compare the baseline (a report.json) with a new report.
pub fn compare(base: &Value, now: &Report, fail_on_slowdown: bool, path: Option<&Path>) -> Diff {
    let now_json = now.json();
    let mut changes = Vec::new();
    // Rows (on backends present in both; a backend appearing or vanishing is one change).
    let (b_backends, n_backends) = (backends_of(base), backends_of(&now_json));
    let (before, after) = (row_outcomes(base), row_outcomes(&now_json));
    let keys: BTreeSet<&(String, String, String)> = before.keys().chain(after.keys()).collect();
    for key in keys {
        if !(b_backends.contains(&key.0) && n_backends.contains(&key.0)) {
            continue;
        }
        let b = before.get(key).map_or(ABSENT, String::as_str);
        let a = after.get(key).map_or(ABSENT, String::as_str);
        if a != b {
            let (change, regression) = row_change(b, a);
            changes.push(Change {
                kind: "row",
                subject: format!("{} {} {}", key.0, key.1, key.2),
                before: b.into(),
                after: a.into(),
                change: change.into(),
                regression,
            });
        }
    }
    // Statuses.
    let (before, after) = (statuses(base), statuses(&now_json));
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for key in keys {
        let b = before.get(key).map_or(ABSENT, String::as_str);
        let a = after.get(key).map_or(ABSENT, String::as_str);
        if a != b {
            changes.push(Change {
                kind: "status",
                subject: key.clone(),
                before: b.into(),
                after: a.into(),
                change: "status change".into(),
                regression: b == "validated",
            });
        }
    }
    // Fuzz.
    let (before, after) = (fuzz_of(base), fuzz_of(&now_json));
    for (check, a) in &after {
        let b = before.get(check).copied();
        if b != Some(*a) && (b.is_some() || *a > 0) {
            changes.push(Change {
                kind: "fuzz",
                subject: check.clone(),
                before: b.map_or(ABSENT.into(), |x| format!("{x} failures")),
                after: format!("{a} failures"),
                change: if *a > b.unwrap_or(0) { "more failures".into() } else { "fewer failures".into() },
                regression: *a > b.unwrap_or(0),
            });
        }
    }
    // Throughput.
    let (before, after) = (throughput_of(base), throughput_of(&now_json));
    for (key, a) in &after {
        if let Some(b) = before.get(key).filter(|b| **b > 0.0) {
            let ratio = a / b - 1.0;
            if ratio.abs() > super::THROUGHPUT_THRESHOLD {
                let slower = ratio < 0.0;
                changes.push(Change {
                    kind: "throughput",
                    subject: key.clone(),
                    before: format!("{b:.4e} MAC/s"),
                    after: format!("{a:.4e} MAC/s"),
                    change: format!("{} by {:.0} %", if slower { "slower" } else { "faster" }, ratio.abs() * 100.0),
                    regression: slower && fail_on_slowdown,
                });
            }
        }
    }
    // Backends.
    for b in b_backends.symmetric_difference(&n_backends) {
        let gone = b_backends.contains(b);
        changes.push(Change {
            kind: "backend",
            subject: b.clone(),
            before: if gone { "present".into() } else { ABSENT.into() },
            after: if gone { ABSENT.into() } else { "present".into() },
            change: if gone { "backend no longer available".into() } else { "new backend".into() },
            regression: false,
        });
    }
    Diff { path: path.map(|p| p.display().to_string()).unwrap_or_default(), generated: s(base, "generated"), changes }
}
