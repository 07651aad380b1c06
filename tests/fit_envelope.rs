//! `mmaemu fit envelope` on the shipped split-K tables: fitted on all rows it reproduces the largest split
//! M·N of every setting in the sidecar exactly (and every other statistic); fitted on a seeded training
//! part it is tested once on the held-out part, and the held-out violations are reported.

use mmaemu_reports::fit::envelope::{fit_path, held_out, Options, RuleKind};
use std::path::{Path, PathBuf};
use std::process::Command;

fn table(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/tables").join(name)
}

const RTX: &str = "rtx4060-cublaslt-12.8.3.14.parquet";
const H100: &str = "h100pcie-cublaslt-12.8.3.14.parquet";

#[test]
fn rtx4060_reproduces_the_sidecar_and_holds_out() {
    let r = fit_path(&table(RTX), &Options::default()).unwrap();
    assert_eq!(r.envelope.rule, RuleKind::MaxSplitMn);
    assert_eq!(r.envelope.margin, 2);
    let (matches, listed) = r.max_matches();
    assert_eq!(listed, r.full.len());
    assert_eq!(matches, listed, "every setting's largest split M*N equals the sidecar's");
    assert!(r.sidecar_agrees());
    // Appendix A.1: 1 MiB, float32, fast, e4m3 x e5m2: 98,304.
    let c = r.full.iter().find(|c| c.setting == (1_048_576, "float32", true, "e4m3", "e5m2")).unwrap();
    assert_eq!(c.fitted.max_split_mn, Some(98_304));
    // The held-out part is about a fifth of the rows, tested once, and the envelope holds there.
    let frac = r.heldout.rows as f64 / (r.heldout.rows + r.train_rows) as f64;
    assert!((0.15..0.25).contains(&frac), "{frac}");
    assert!(r.heldout.tested > 50_000);
    assert_eq!(r.heldout.violations.len(), 0);
    // Without the margin the held-out test does find violations: the test can fail.
    let tight = fit_path(&table(RTX), &Options { margin: Some(1), ..Options::default() }).unwrap();
    assert!(!tight.heldout.violations.is_empty());
    for v in &tight.heldout.violations {
        assert!(v.row.split_s > 1 && (v.row.m as u64) * (v.row.n as u64) > v.bound);
    }
}

#[test]
fn h100_k_grid() {
    let r = fit_path(&table(H100), &Options::default()).unwrap();
    assert_eq!(r.envelope.rule, RuleKind::KGrid);
    assert_eq!(r.envelope.grid.len(), 33);
    assert!(r.sidecar_agrees());
    let s = (1_048_576, "float32", true, "e4m3", "e4m3");
    // Bounds never decrease with K and say nothing beyond the table's K range.
    let b: Vec<Option<u64>> = r.envelope.grid.iter().map(|&k| r.envelope.bound(&s, k)).collect();
    let known: Vec<u64> = b.iter().flatten().copied().collect();
    assert!(known.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(r.envelope.bound(&s, 4_194_304), None);
    assert!(r.heldout.tested > 0);
}

#[test]
fn partition_is_seeded() {
    let a: Vec<bool> = (1..200).map(|m| held_out(1, 0.2, m, 64, 1024)).collect();
    assert_eq!(a, (1..200).map(|m| held_out(1, 0.2, m, 64, 1024)).collect::<Vec<_>>());
    assert_ne!(a, (1..200).map(|m| held_out(2, 0.2, m, 64, 1024)).collect::<Vec<_>>());
    assert!((1..200).all(|m| !held_out(1, 0.0, m, 64, 1024)));
}

#[test]
fn cli_text_json_and_exit_codes() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_mmaemu")).args(["fit", "envelope"]).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let path = table(RTX).display().to_string();
    let (code, text, _) = run(&[&path]);
    assert_eq!(code, Some(0));
    assert!(text.contains("largest split M*N equals the sidecar's in 112 of the 112 settings"), "{text}");
    assert!(text.contains("0 violations"));
    let (code, json, _) = run(&["--json", &path]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["full"]["max_split_MN_matches"], 112);
    assert_eq!(v["heldout"]["violations"], serde_json::json!([]));
    // Violations exit 1; bad input exits 2.
    assert_eq!(run(&["--margin", "1", &path]).0, Some(1));
    assert_eq!(run(&["/nonexistent/table.parquet"]).0, Some(2));
    assert_eq!(run(&["--holdout", "1.5", &path]).0, Some(2));
    assert_eq!(run(&["--rule", "nope", &path]).0, Some(2));
}
