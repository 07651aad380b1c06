//! Tests of the harness itself: a copy of a recording with one expected bit flipped fails exactly that
//! row's trial with a readable diff and a reproduction command; no recordings is an error; trial names are
//! unique, stable and carry the file stem; the status counts come from the rows.

use mmaemu_datasets::{read_recording, write_recording, Expectation};
use mmaemu_harness::recordings::{load, load_exact, shipped_dir, verdict, RowTrial};
use mmaemu_harness::status::{self, Status};
use mmaemu_harness::Verdict;
use std::collections::HashSet;

fn shipped(name: &str) -> std::path::PathBuf {
    shipped_dir().join(name)
}

#[test]
fn one_flipped_bit_fails_exactly_that_trial() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rec = read_recording(&shipped("rtx4060-mma.parquet")).expect("shipped recording reads");
    // Flip the lowest bit of element 5 of the first row that ships result bits.
    let target = rec.rows.iter().position(|r| matches!(r.expected, Expectation::Bits(_))).expect("a row with bits");
    let id = rec.rows[target].id.clone();
    let Expectation::Bits(bits) = &mut rec.rows[target].expected else { unreachable!() };
    let original = u32::from_le_bytes([bits[20], bits[21], bits[22], bits[23]]);
    bits[20] ^= 1;
    let flipped = original ^ 1;
    let copy = dir.path().join("flipped.parquet");
    write_recording(&copy, &rec).expect("write the copy");

    let trials = load(&[dir.path().to_path_buf()], None).expect("load the copy");
    assert_eq!(trials.len(), rec.rows.len());
    let mut failing: Vec<(RowTrial, String)> = Vec::new();
    for t in trials {
        match verdict(&t) {
            (Verdict::Pass, _) => {}
            (Verdict::Skip(reason), _) => panic!("{}: unexpectedly skipped: {reason}", t.name),
            (Verdict::Fail(_), report) => failing.push((t, report.expect("a failure comes with its report"))),
        }
    }
    assert_eq!(
        failing.len(),
        1,
        "exactly one trial fails: {:?}",
        failing.iter().map(|f| &f.0.name).collect::<Vec<_>>()
    );
    let (t, report) = &failing[0];
    assert_eq!(t.row.id, id);
    assert!(t.name.starts_with("flipped/mma/"), "{}", t.name);
    // The Failure's line: count, first index, expected and actual in hex.
    assert!(report.contains("1 of "), "{report}");
    assert!(report.contains("first at index 5"), "{report}");
    assert!(report.contains(&format!("expected 0x{flipped:08X}")), "{report}");
    assert!(report.contains(&format!("actual 0x{original:08X}")), "{report}");
    // The listing of differing elements with position and values.
    assert!(report.contains("first differing elements (float32):"), "{report}");
    assert!(report.contains(&format!(": expected 0x{flipped:08X} (")) && report.contains("  index 5 ["), "{report}");
    // The reproduction command names the trial exactly, and the file it came from.
    // (After it comes the trace of the first differing element.)
    let last = report.lines().find(|l| l.starts_with("reproduce: ")).unwrap_or_default();
    assert!(last.starts_with("reproduce: "), "{report}");
    assert!(last.contains("cargo test -p mmaemu-harness --test recordings -- --exact"), "{last}");
    assert!(last.contains(&format!("MMAEMU_RECORDINGS='{}'", copy.display())), "{last}");
    assert!(last.contains(&format!("'{}'", t.name)), "{last}");
    assert!(report.contains(&format!("row {id:?} of ")), "{report}");
    println!("{report}");
}

#[test]
fn no_recordings_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let e = load(&[dir.path().to_path_buf()], None).expect_err("an empty directory must not pass");
    assert!(e.contains("no recordings"), "{e}");
    let e = load(&[dir.path().join("missing")], None).expect_err("a missing directory must not pass");
    assert!(e.contains("cannot find the recordings"), "{e}");
}

#[test]
fn shipped_trial_names_are_unique_and_filterable() {
    let trials = load(&[shipped_dir()], None).expect("shipped recordings load");
    assert_eq!(trials.len(), 11_283, "one trial per shipped row");
    let names: HashSet<&str> = trials.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), trials.len(), "trial names are unique");
    for t in &trials {
        let stem = t.path.file_stem().unwrap_or_default().to_string_lossy();
        assert!(t.name.starts_with(&format!("{stem}/{}/", t.row.op)), "{}", t.name);
        assert!(!t.name.contains(['\n', '\'', '"']), "{}", t.name);
    }
    assert_eq!(trials.iter().filter(|t| t.name.contains("toolbox-h200")).count(), 2);
    // Loading one file by its prefix (what `--exact NAME` does) gives the same names.
    let one = load(&[shipped_dir()], Some("rtx4060-mma")).expect("one file");
    let all: Vec<&str> =
        trials.iter().filter(|t| t.name.starts_with("rtx4060-mma/")).map(|t| t.name.as_str()).collect();
    assert_eq!(one.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), all);
}

#[test]
fn status_counts_come_from_the_rows() {
    let rec = read_recording(&shipped("toolbox-h200.parquet")).expect("reads");
    let facts: Vec<_> = rec.rows.iter().map(|r| status::facts(r, &mmaemu_harness::replay::replay_row(r))).collect();
    let report = status::compute(&facts);
    let hopper =
        report.scopes.iter().find(|s| s.name == "hopper" && s.kind == status::ScopeKind::Preset).expect("hopper");
    assert_eq!(hopper.counts.hardware, 2);
    assert_eq!(hopper.counts.passed, 2);
    assert_eq!(hopper.status, Status::Validated);
    let mma = hopper.features.iter().find(|f| f.feature.label() == "op mma").expect("op mma");
    assert_eq!((mma.counts.hardware, mma.status), (2, Status::Validated));
    // Nothing recorded for hopper's split-K: listed as experimental with no row.
    let split = hopper.features.iter().find(|f| f.feature.label() == "split contiguous").expect("split contiguous");
    assert_eq!((split.counts.hardware, split.status), (0, Status::Experimental));
    let text = status::text(&report);
    assert!(text.contains("preset hopper: validated: 2 hardware rows (2 passed, 0 failed, 0 not replayed)"), "{text}");
    assert!(text.contains("features: 3 validated, 0 failing, "), "{text}");
    assert!(text.contains("experimental, no hardware row:"), "{text}");
    assert!(text.contains("profile hopper: experimental: no rows"), "{text}");
}

#[test]
fn exact_loading_reads_the_same_row() {
    // `--exact NAME` decodes one row through a row selection; it must be the row a full read gives.
    let trials = load(&[shipped_dir()], None).expect("shipped recordings load");
    for t in trials.iter().step_by(997).chain(trials.last()) {
        let one = load_exact(&[shipped_dir()], &t.name).expect("exact load");
        assert_eq!(one.len(), 1, "{}", t.name);
        assert_eq!(one[0].name, t.name);
        assert_eq!(one[0].path, t.path);
        assert_eq!(*one[0].row, *t.row, "{}", t.name);
    }
    assert!(load_exact(&[shipped_dir()], "toolbox-h200/mma/no such row").expect("no error").is_empty());
    assert!(load_exact(&[shipped_dir()], "no-such-file/mma/x").expect("no error").is_empty());
}

#[test]
fn a_row_that_cannot_be_replayed_is_an_ignored_trial_with_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rec = read_recording(&shipped("rtx4060-gemm.parquet")).expect("shipped recording reads");
    rec.rows.retain(|r| r.op == mmaemu_datasets::Op::Gemm && matches!(r.expected, Expectation::Bits(_)));
    rec.rows.truncate(2);
    // A split whose reduction order is not established cannot be replayed (docs/recording-format.md: `unknown`).
    rec.rows[0].split_s = Some(3);
    rec.rows[0].split_scheme = Some("unknown".into());
    let copy = dir.path().join("unknown-split.parquet");
    write_recording(&copy, &rec).expect("write the copy");
    let trials = load(&[copy], None).expect("load the copy");
    let reason = match verdict(&trials[0]).0 {
        Verdict::Skip(reason) => reason,
        other => panic!("expected a skip, got {other:?}"),
    };
    assert!(reason.contains("unknown"), "{reason}");
    match mmaemu_harness::recordings::run(&trials[0]) {
        Ok(libtest_mimic::Completion::Ignored { reason: Some(r) }) => assert_eq!(r, reason),
        _ => panic!("a skipped row must be an ignored trial with its reason"),
    }
    assert_eq!(verdict(&trials[1]).0, Verdict::Pass);
}

#[test]
fn a_row_whose_preset_is_unknown_is_a_skip_with_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    // mma rows (toolbox-ada) and unsplit gemm rows (rtx4060-gemm), their preset withheld as the format allows.
    let mut rows = Vec::new();
    for (file, op) in
        [("toolbox-ada.parquet", mmaemu_datasets::Op::Mma), ("rtx4060-gemm.parquet", mmaemu_datasets::Op::Gemm)]
    {
        let mut rec = read_recording(&shipped(file)).expect("shipped recording reads");
        rec.rows.retain(|r| r.op == op && matches!(r.expected, Expectation::Bits(_)));
        rec.rows.truncate(3);
        assert!(!rec.rows.is_empty(), "{file} ships {op:?} rows with bits");
        for r in &mut rec.rows {
            assert_eq!(mmaemu_harness::replay::replay_row(r), Verdict::Pass, "{file} {}", r.id);
            r.preset = mmaemu_datasets::UNKNOWN_PRESET.into();
            r.profile = None; // the format: no profile runs an unknown preset
        }
        let copy = dir.path().join(file);
        write_recording(&copy, &rec).expect("write the copy");
        let report = mmaemu_harness::files::replay_file(&copy, &|| {}).expect("the copy replays");
        assert_eq!((report.rows, report.passed, report.failures.len()), (rec.rows.len(), 0, 0), "{file}");
        assert_eq!(report.skips.len(), rec.rows.len(), "{file}");
        rows.extend(rec.rows);
    }
    for r in &rows {
        match mmaemu_harness::replay::replay_row(r) {
            Verdict::Skip(reason) => assert!(reason.contains("preset 'unknown'"), "{reason}"),
            other => panic!("{}: expected a skip, got {other:?}", r.id),
        }
    }
    // A preset this build does not have (a row made in memory: the reader refuses such a file): a skip too.
    let mut other = rows[0].clone();
    other.preset = "volta".into();
    match mmaemu_harness::replay::replay_row(&other) {
        Verdict::Skip(reason) => assert!(reason.contains("preset 'volta'"), "{reason}"),
        v => panic!("expected a skip, got {v:?}"),
    }
}
