//! `mmaemu fit envelope` on the shipped split-K tables: fitted on all rows it reproduces the largest split
//! M·N of every setting in the sidecar exactly (and every other statistic); fitted on a seeded training
//! part it is tested once on the held-out part, and the held-out violations are reported.

use mmaemu_datasets::splitk_table::read_splitk_table;
use mmaemu_fit::envelope::{fit_path, fit_table, held_out, Options, RuleKind};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn table(name: &str) -> PathBuf {
    let stem = name.strip_suffix(".parquet").unwrap_or(name);
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/platforms").join(stem).join(name)
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
    // Without the margin, every violation is a held-out split row above its bound.
    let tight = fit_path(&table(RTX), &Options { margin: Some(1), ..Options::default() }).unwrap();
    for v in &tight.heldout.violations {
        assert!(v.row.decision.split_s > 1 && (v.row.m as u64) * (v.row.n as u64) > v.bound);
    }
}

#[test]
fn without_the_margin_a_held_out_largest_split_is_a_violation() {
    // The held-out test can fail, whatever the partition's generator: take a setting whose largest split
    // M*N comes from one shape alone, find the first seed that holds that shape out, and fit without the
    // margin: the training part's bound is then below that row's M*N, so the row is a violation.
    let t = read_splitk_table(&table(RTX)).unwrap();
    let mut tops = BTreeMap::new();
    for r in t.rows.iter().filter(|r| r.decision.split_s > 1) {
        let mn = r.m as u64 * r.n as u64;
        let e = tops
            .entry((r.workspace_bytes, r.out_dtype, r.fast_accum, r.fmt_a, r.fmt_b))
            .or_insert((0, BTreeSet::new()));
        if mn > e.0 {
            *e = (mn, BTreeSet::new());
        }
        if mn == e.0 {
            e.1.insert((r.m, r.n, r.k));
        }
    }
    let (setting, shape) =
        tops.iter().find_map(|(s, (_, shapes))| (shapes.len() == 1).then(|| (*s, *shapes.first().unwrap()))).unwrap();
    let (m, n, k) = shape;
    let seed = (0..1000).find(|&seed| held_out(seed, 0.2, m, n, k)).unwrap();
    let r = fit_table(&t, &Options { seed, margin: Some(1), ..Options::default() });
    assert!(
        r.heldout.violations.iter().any(|v| {
            let row = &v.row;
            (row.workspace_bytes, row.out_dtype, row.fast_accum, row.fmt_a, row.fmt_b) == setting
                && (row.m, row.n, row.k) == shape
        }),
        "seed {seed}: the largest split {shape:?} of {setting:?}, held out, is no violation"
    );
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
fn partition_follows_its_definition() {
    // `held_out`'s documented definition (SHA-256 of the seed and m, n, k, little-endian; the first f64 of
    // ChaCha8 from that seed below the fraction), evaluated by a separate implementation: the shapes
    // (m, 64, 1024), m in 1..200, held out with seed 1 and fraction 0.2. A change of the generator, of its
    // seeding or of rand's f64 conversion moves the partition and fails here.
    let want = [
        8, 15, 21, 24, 30, 32, 34, 45, 46, 51, 54, 62, 69, 83, 92, 93, 99, 103, 106, 109, 112, 113, 118, 119, 121, 126,
        127, 128, 129, 136, 158, 160, 167, 172, 178, 180, 181, 185, 192,
    ];
    assert_eq!((1..200).filter(|&m| held_out(1, 0.2, m, 64, 1024)).collect::<Vec<i32>>(), want);
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
