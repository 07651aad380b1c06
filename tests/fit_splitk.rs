//! `mmaemu fit splitk` on the shipped recordings: from the RTX 4060 rows alone (their recorded scheme ignored) it finds
//! the recorded reduction rules, and says "ambiguous" where the rows cannot tell the rules apart.

// The rules it finds: interleaved 64-wide tiles with pairwise combination where the recording says pairwise and serial
// where it says serial, slow chains restarting every 2 own tiles. Also: the `--json` shape, rows whose scheme is
// `unknown` (with both schemes in one group: a mixture of the two rules), bad input.

use mmaemu_datasets::{read_recording, write_recording, Recording};
use mmaemu_fit::rules::of_scheme;
use mmaemu_fit::splitk::{fit_paths, FitReport, Verdict};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn recordings() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/recordings")
}

/// The fit of every shipped recording, computed once for all tests.
fn fitted() -> &'static FitReport {
    static FIT: OnceLock<FitReport> = OnceLock::new();
    FIT.get_or_init(|| fit_paths(&[recordings()], Default::default()).expect("the shipped recordings are readable"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmaemu-fit-splitk-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The rule docs/reference.md gives a recorded scheme.
fn expected(label: &str, fast: bool) -> String {
    of_scheme(label, fast).unwrap().name()
}

#[test]
fn rtx4060_groups_find_interleaved64_with_the_recorded_order() {
    let fit = fitted();
    let groups: Vec<_> = fit.groups.iter().filter(|g| g.gpu == "RTX 4060").collect();
    assert!(groups.len() >= 40, "{} RTX 4060 groups", groups.len());
    let mut unique = 0;
    for g in &groups {
        let label = g.label.as_deref().expect("every shipped split row records serial or pairwise");
        let want = expected(label, g.fast);
        assert_ne!(g.verdict, Verdict::None, "{g:?}");
        assert!(g.survivors.contains(&want), "{} S={} {label}: {want} not among {:?}", g.fast, g.s, g.survivors);
        match g.verdict {
            Verdict::Unique => {
                unique += 1;
                assert_eq!(g.survivors, vec![want.clone()]);
                assert!(!g.discriminating.is_empty());
            }
            Verdict::Ambiguous => assert!(g.survivors.len() > 1),
            Verdict::None | Verdict::Mixture => unreachable!("labelled groups have survivors"),
        }
    }
    // The groups with enough evidence name the rule outright, both orders, fast and slow.
    let verdict = |fast: bool, s: usize, label: &str| {
        groups.iter().find(|g| g.fast == fast && g.s == s && g.label.as_deref() == Some(label)).map(|g| g.verdict)
    };
    for (fast, s, label) in [
        (true, 4, "pairwise"),
        (true, 5, "pairwise"),
        (true, 5, "serial"),
        (true, 8, "pairwise"),
        (true, 8, "serial"),
        (true, 10, "serial"),
        (false, 3, "pairwise"),
        (false, 4, "serial"),
        (false, 6, "pairwise"),
        (false, 8, "serial"),
    ] {
        assert_eq!(verdict(fast, s, label), Some(Verdict::Unique), "fast={fast} S={s} {label}");
    }
    assert!(unique >= 25, "{unique} unique groups");
}

#[test]
fn s2_is_ambiguous_because_every_order_is_the_same_addition() {
    for g in fitted().groups.iter().filter(|g| g.s == 2) {
        assert_eq!(g.verdict, Verdict::Ambiguous, "{g:?}");
        // p0 + p1 = p1 + p0: the four orders are one computation for S = 2.
        assert_eq!(g.identical.len(), 1);
        assert_eq!(g.identical[0].len(), 4);
        assert!(g.survivors.iter().all(|r| r.starts_with("interleaved64/")));
    }
}

#[test]
fn every_row_keeps_its_recorded_rule() {
    // Row by row: the rule of the recorded scheme reproduces every fitted row (what `mmaemu replay` checks
    // through the model's executor, here through the fit's replay of the same plans).
    let fit = fitted();
    assert!(fit.rows.len() >= 900, "{} rows", fit.rows.len());
    for r in &fit.rows {
        // Survivors are listed in their canonical form for the row's K and S: the rule reproduces the row when its
        // canonical form is listed.
        let want = expected(&r.recorded, r.fast);
        let rule = mmaemu_fit::rules::SplitRule::parse(&want).unwrap();
        assert!(r.accepts(&rule), "{}: {want} not among {:?}", r.id, r.survivors);
    }
    // Rows that cannot be fitted are listed with their reason, never silently dropped.
    for s in &fit.skipped {
        assert!(!s.reason.is_empty());
    }
}

#[test]
fn unknown_scheme_rows_fit_without_a_label_and_json_has_the_documented_shape() {
    // The fast S = 4 pairwise rows of the gemm recording, their scheme replaced by `unknown`.
    let rec = read_recording(&recordings().join("rtx4060-gemm.parquet")).unwrap();
    let rows: Vec<_> = rec
        .rows
        .iter()
        .filter(|r| r.split_s == Some(4) && r.fast_accum == Some(true) && r.split_scheme.as_deref() == Some("pairwise"))
        .cloned()
        .map(|mut r| {
            r.split_scheme = Some("unknown".into());
            r
        })
        .collect();
    assert!(rows.len() >= 5);
    let dir = scratch("unknown");
    let file = dir.join("unknown.parquet");
    write_recording(&file, &Recording { path: file.clone(), meta: rec.meta.clone(), rows: rows.clone() }).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mmaemu")).args(["fit", "splitk", "--json"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let jrows = v["rows"].as_array().unwrap();
    assert_eq!(jrows.len(), rows.len());
    for r in jrows {
        for key in ["id", "s", "fast", "survivors"] {
            assert!(r.get(key).is_some(), "row without {key}: {r}");
        }
        assert_eq!(r["s"], 4);
        assert_eq!(r["fast"], true);
    }
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    let g = &groups[0];
    for key in ["gpu", "fast", "s", "label", "rows", "survivors", "verdict"] {
        assert!(g.get(key).is_some(), "group without {key}: {g}");
    }
    assert_eq!(g["label"], serde_json::Value::Null);
    assert_eq!(g["verdict"], "unique");
    assert_eq!(g["survivors"], serde_json::json!(["interleaved64/pairwise"]));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unlabelled_rows_of_both_schemes_are_a_mixture_of_two_rules() {
    // The RTX 4060 gemm rows as a recording made without an algorithm read-back would hold them: scheme
    // `unknown`, no `algo`. Serial and pairwise rows of one S then share a group, which no single rule
    // explains; the fit names the two rules and assigns every row to one that reproduces it.
    let rec = read_recording(&recordings().join("rtx4060-gemm.parquet")).unwrap();
    let recorded: std::collections::HashMap<String, String> =
        rec.rows.iter().map(|r| (r.id.clone(), r.split_scheme.clone().unwrap_or_default())).collect();
    let rows: Vec<_> = rec
        .rows
        .iter()
        .cloned()
        .map(|mut r| {
            r.split_scheme = r.split_scheme.map(|s| if s == "none" { s } else { "unknown".into() });
            r.algo = None;
            r
        })
        .collect();
    let fit = mmaemu_fit::splitk::fit(&[(recordings().join("rtx4060-gemm.parquet"), rows)]);
    let by_id: std::collections::HashMap<&str, &mmaemu_fit::splitk::FitRow> =
        fit.rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let (mut mixed, mut named) = (0, 0);
    let summary = |g: &mmaemu_fit::splitk::FitGroup| {
        let parts: Vec<String> = g.mixture.iter().map(|p| format!("{} {}", p.rule, p.assigned.len())).collect();
        format!("fast={} S={} rows={} mixture: {}", g.fast, g.s, g.rows.len(), parts.join(", "))
    };
    for g in &fit.groups {
        assert_eq!(g.label, None);
        let schemes: std::collections::BTreeSet<&str> = g.rows.iter().map(|id| recorded[id].as_str()).collect();
        if schemes.len() < 2 || !matches!(g.verdict, Verdict::Mixture) {
            assert_ne!(g.verdict, Verdict::None, "{}: {:?}", summary(g), g.closest);
            continue;
        }
        mixed += 1;
        assert!(g.survivors.is_empty());
        // Every row is assigned to exactly one part, whose rule reproduces it.
        let mut assigned: Vec<&String> = g.mixture.iter().flat_map(|p| &p.assigned).collect();
        assigned.sort();
        let mut ids: Vec<&String> = g.rows.iter().collect();
        ids.sort();
        assert_eq!(assigned, ids, "fast={} S={}", g.fast, g.s);
        for p in &g.mixture {
            for id in &p.assigned {
                let rule = mmaemu_fit::rules::SplitRule::parse(&p.rule).unwrap();
                assert!(by_id[id.as_str()].accepts(&rule), "{id}: {} does not reproduce it", p.rule);
            }
        }
        // Each scheme's rows go to a rule that reproduces them all; with the recorded schemes' rules
        // (docs/reference.md §3.2) among the covers when the rows tell them apart.
        assert!(g.mixture.len() >= 2, "{}", summary(g));
        let names: std::collections::BTreeSet<&str> = g.mixture.iter().map(|p| p.rule.as_str()).collect();
        if names == [expected("serial", g.fast), expected("pairwise", g.fast)].iter().map(String::as_str).collect() {
            named += 1;
        }
    }
    assert!(mixed >= 5, "{mixed} groups mix both schemes");
    assert!(named >= 3, "{named} mixtures are the two recorded schemes' rules");
    let text = mmaemu_fit::splitk::text(&fit);
    assert!(text.contains("mixture of 2 rules: interleaved64/"), "{text}");
}

#[test]
fn unreadable_input_exits_2() {
    let dir = scratch("bad");
    let bad = dir.join("bad.parquet");
    std::fs::write(&bad, b"not parquet").unwrap();
    for path in [bad.clone(), dir.join("missing.parquet")] {
        let out = Command::new(env!("CARGO_BIN_EXE_mmaemu")).args(["fit", "splitk"]).arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("mmaemu fit splitk:"));
    }
    let _ = std::fs::remove_dir_all(dir);
}
