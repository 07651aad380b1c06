//! End-to-end tests on the simulated device (no GPU): every example spec goes sweep -> Parquet ->
//! `mmaemu replay` (the facade's `replay_file`) and passes; an interrupted sweep resumes without
//! duplicates; damaged or foreign parts are recomputed or refused; nondeterminism is recorded and reported;
//! rows stored by reference regenerate; heuristic grids become readable split-K tables.

use mmaemu_datasets::inputs::{RowInputs, Samples};
use mmaemu_datasets::{read_recording, read_recording_with, read_splitk_table, Expectation, ReadOptions, Truth};
use mmaemu_harness::files::replay_file;
use mmaemu_model::splitk::table_lookup;
use mmaemu_recorder::heuristics::{run_heuristics, sidecar_path, HeuristicsOptions};
use mmaemu_recorder::parts::parts_dir;
use mmaemu_recorder::sim::SimDevice;
use mmaemu_recorder::spec::{SpecKind, Sweep};
use mmaemu_recorder::sweep::{manifest_path, run_sweep, SweepOptions, SweepReport};
use mmaemu_recorder::{load_spec, RecordError};
use std::path::{Path, PathBuf};

mod common;
use common::SMALL_SWEEP;

fn h100() -> mmaemu_model::Table {
    mmaemu_model::Table::builtin("h100pcie-cublaslt-12.8.3.14").unwrap()
}

fn sweeps_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps")
}

fn opts(out: &Path) -> SweepOptions {
    SweepOptions { out: out.to_path_buf(), quiet: true, ..SweepOptions::default() }
}

/// Runs `spec` on the simulated device of its profile (default hopper).
fn simulate(sweep: &Sweep, text: &str, o: &SweepOptions, flaky: Option<u64>) -> Result<SweepReport, RecordError> {
    let profile = o.profile.clone().or(sweep.spec.profile.clone()).unwrap_or("hopper".into());
    let mut b = SimDevice::new(&profile)?;
    if let Some(n) = flaky {
        b = b.with_flaky_every(n);
    }
    run_sweep(sweep, text, &mut b, Some(&profile), o)
}

fn assert_replays(path: &Path) {
    assert_replays_but_unknown_splits(path, false);
}

/// Every row replays; with `unknown_splits`, a split row whose layout the spec recorded as unknown (the input of
/// `fit splitk`) is skipped for that reason instead, and nothing else is.
fn assert_replays_but_unknown_splits(path: &Path, unknown_splits: bool) {
    let report = replay_file(path, &|| {}).unwrap();
    assert!(report.rows > 0, "{}", path.display());
    assert!(report.failures.is_empty(), "{}: {:?}", path.display(), report.failures.first());
    let unexpected = report
        .skips
        .iter()
        .filter(|s| !(unknown_splits && s.reason.contains("scheme 'unknown': no reduction rule is established")))
        .collect::<Vec<_>>();
    assert!(unexpected.is_empty(), "{}: {:?}", path.display(), unexpected.first());
    assert_eq!(report.passed + report.skips.len(), report.rows);
}

fn spec_text(body: &str) -> (Sweep, String) {
    let text = body.to_string();
    (Sweep::parse(&text, mmaemu_recorder::util::sha256_hex(text.as_bytes())).unwrap(), text)
}

#[test]
fn every_example_spec_records_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir(sweeps_dir()).unwrap() {
        let spec = entry.unwrap().path();
        if spec.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let (sweep, text) = load_spec(&spec).unwrap();
        if sweep.kind() == SpecKind::Grid {
            // A heuristic grid: the split-K table it becomes (its first keys).
            let out = dir.path().join(format!("{}.parquet", sweep.spec.name));
            let o =
                HeuristicsOptions { out: out.clone(), quiet: true, limit: Some(64), ..HeuristicsOptions::default() };
            let mut device = SimDevice::new(sweep.spec.profile.as_deref().unwrap_or("hopper")).unwrap();
            let r = run_heuristics(&sweep, &mut device, &o).unwrap_or_else(|e| panic!("{}: {e}", spec.display()));
            assert_eq!(read_splitk_table(&out).unwrap().rows.len() as u64, r.rows, "{}", spec.display());
            seen += 1;
            continue;
        }
        let out = dir.path().join(format!("{}.parquet", sweep.spec.name));
        let mut o = opts(&out);
        // The device-sized specs (h200-*, split shapes with K in the thousands) are cut to their first
        // cases: the model computes them on the CPU. Everything else runs whole.
        let heavy = sweep.shapes.iter().map(|&(m, n, k)| m * n * k).max().unwrap_or(0) > 1 << 21;
        if heavy {
            o.limit = Some(8);
        }
        let r = simulate(&sweep, &text, &o, None).unwrap_or_else(|e| panic!("{}: {e}", spec.display()));
        assert!(r.rows > 0 || r.skipped == r.cases, "{}", spec.display());
        if r.rows > 0 {
            assert_replays_but_unknown_splits(&out, sweep.spec.split_scheme == "unknown");
            let rec = read_recording(&out).unwrap();
            assert!(rec.rows.iter().all(|r| r.truth == Truth::Model));
            assert_eq!(rec.meta.platform.as_ref().unwrap()["simulated"], true);
        }
        assert!(manifest_path(&out).exists());
        assert!(!parts_dir(&out).exists(), "parts are removed after the merge");
        seen += 1;
    }
    assert!(seen >= 6, "{seen} example specs");
}

#[test]
fn interrupted_sweep_resumes_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let (sweep, text) = spec_text(SMALL_SWEEP);
    // The reference: one uninterrupted run.
    let whole = dir.path().join("whole.parquet");
    let full = simulate(&sweep, &text, &opts(&whole), None).unwrap();
    assert_eq!(full.cases, 64);
    assert_eq!(full.skipped, 32, "K = 24 is rejected by torch's checks");
    assert_eq!(full.rejected, 8, "e4m3 x e4m3 -> e5m2 is rejected by the hopper profile's cuBLASLt");

    // Interrupted after two chunks: no output file, no temporary file, the parts are there.
    let out = dir.path().join("resumed.parquet");
    let mut o = opts(&out);
    o.stop_after_chunks = Some(2);
    let e = simulate(&sweep, &text, &o, None).unwrap_err();
    assert_eq!(e.exit_code(), 5, "{e}");
    assert!(!out.exists());
    let parts = parts_dir(&out);
    assert!(parts.join("chunk-000000.parquet").exists() && parts.join("chunk-000001.parquet").exists());
    let stray: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");

    // A chunk written just before the interruption but not in the manifest, and a damaged chunk: both are
    // recomputed.
    std::fs::copy(parts.join("chunk-000000.parquet"), parts.join("chunk-000005.parquet")).unwrap();
    std::fs::write(parts.join("chunk-000001.parquet"), b"damaged").unwrap();

    // Resuming (another stop in the middle, then to the end).
    o.stop_after_chunks = Some(3);
    assert_eq!(simulate(&sweep, &text, &o, None).unwrap_err().exit_code(), 5);
    o.stop_after_chunks = None;
    let r = simulate(&sweep, &text, &o, None).unwrap();
    assert_eq!(r.resumed_chunks, 4, "chunk 0 (first run) and chunks 1, 2, 3 (second run)");
    assert_eq!(r.rows, full.rows);
    let a = read_recording(&whole).unwrap();
    let b = read_recording(&out).unwrap();
    assert_eq!(a.rows, b.rows, "a resumed run writes exactly the rows of an uninterrupted one");
    let mut ids: Vec<&str> = b.rows.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), b.rows.len());
    assert!(!parts.exists());
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(manifest_path(&out)).unwrap()).unwrap();
    assert_eq!(manifest["sha256"], mmaemu_recorder::util::sha256_file(&out).unwrap().0);
    assert_eq!(manifest["rows"], r.rows);
    assert_eq!(manifest["counts"]["resumed_chunks"], 4);
}

#[test]
fn resuming_another_run_is_refused_and_restart_clears() {
    let dir = tempfile::tempdir().unwrap();
    let (sweep, text) = spec_text(SMALL_SWEEP);
    let out = dir.path().join("o.parquet");
    let mut o = opts(&out);
    o.stop_after_chunks = Some(1);
    assert_eq!(simulate(&sweep, &text, &o, None).unwrap_err().exit_code(), 5);
    // Another spec (another seed) against the same parts.
    let (other, other_text) = spec_text(&SMALL_SWEEP.replace("seed = 9", "seed = 10"));
    o.stop_after_chunks = None;
    let e = simulate(&other, &other_text, &o, None).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("another run"), "{e}");
    // Another device (profile) too.
    let mut ada = o.clone();
    ada.profile = Some("ada".into());
    assert_eq!(simulate(&sweep, &text, &ada, None).unwrap_err().exit_code(), 2);
    o.restart = true;
    let r = simulate(&other, &other_text, &o, None).unwrap();
    assert_eq!(r.resumed_chunks, 0);
    assert_replays(&out);
}

#[test]
fn nondeterminism_is_recorded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (sweep, text) = spec_text(SMALL_SWEEP);
    let out = dir.path().join("flaky.parquet");
    let r = simulate(&sweep, &text, &opts(&out), Some(5)).unwrap();
    assert_eq!(r.nondeterministic.len() as u64, (r.rows - r.rejected) / 5, "every fifth call that ran");
    let rec = read_recording(&out).unwrap();
    for id in &r.nondeterministic {
        let row = rec.rows.iter().find(|x| &x.id == id).unwrap();
        assert!(row.ext.note.as_deref().unwrap().contains("nondeterministic: run 2 differs"), "{:?}", row.ext.note);
    }
    // The rows keep the first run's bits, so they still replay.
    assert_replays(&out);
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(manifest_path(&out)).unwrap()).unwrap();
    assert_eq!(manifest["nondeterministic"].as_array().unwrap().len(), r.nondeterministic.len());
}

#[test]
fn rejections_are_expected_errors_with_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let (sweep, text) = spec_text(
        r#"
kind = "sweep"
name = "rej"
op = "gemm"
formats = [["e4m3", "e4m3"]]
out_dtypes = ["float8_e5m2", "float8_e4m3fn"]
[[shapes]]
mnk = [[16, 16, 32]]
"#,
    );
    let out = dir.path().join("rej.parquet");
    let r = simulate(&sweep, &text, &opts(&out), None).unwrap();
    assert_eq!((r.rows, r.rejected), (2, 1));
    let rec = read_recording(&out).unwrap();
    let rej = &rec.rows[0];
    assert_eq!(rej.expected, Expectation::Error("ReferenceRejectsError".into()));
    assert_eq!(rej.op, mmaemu_datasets::Op::ScaledMm, "rejections replay as scaled_mm rows");
    assert!(rej.ext.note.as_deref().unwrap().contains("CUBLAS_STATUS_NOT_SUPPORTED"));
    assert_eq!(rec.rows[1].op, mmaemu_datasets::Op::Gemm);
    assert_replays(&out);
}

#[test]
fn rows_by_reference_regenerate_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let (sweep, text) = load_spec(&sweeps_dir().join("large-by-reference.toml")).unwrap();
    let out = dir.path().join("lbr.parquet");
    let r = simulate(&sweep, &text, &opts(&out), None).unwrap();
    assert_eq!(r.by_reference, r.rows);
    let raw = read_recording_with(&out, &ReadOptions { materialise_inputs: false }).unwrap();
    let full = read_recording(&out).unwrap();
    for (raw, full) in raw.rows.iter().zip(&full.rows) {
        assert!(raw.a.is_empty() && raw.b.is_empty());
        assert_eq!(full.a.len() as i64, full.m * full.k);
        let inputs = RowInputs::parse(full.ext.inputs.as_deref().unwrap()).unwrap();
        assert_eq!(mmaemu_recorder::util::sha256_hex(&full.a), inputs.a_sha256);
        let samples = Samples::parse(full.ext.expected_samples.as_deref().unwrap()).unwrap();
        assert_eq!(samples.index.len(), 8);
        assert!(matches!(full.expected, Expectation::Sha256(_)));
    }
    assert_replays(&out);
    // The samples are the replayed result's elements.
    let row = &full.rows[0];
    let samples = Samples::parse(row.ext.expected_samples.as_deref().unwrap()).unwrap();
    let (bits, _) = mmaemu_harness::replay::compute(row).unwrap().unwrap();
    for (i, b) in samples.index.iter().zip(&samples.bits) {
        assert_eq!(bits[*i as usize], *b);
    }
}

#[test]
fn heuristic_grid_becomes_a_readable_table_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let (sweep, _) = spec_text(
        r#"
kind = "grid"
name = "grid"
grid_chunk_rows = 50
formats = [["e4m3", "e4m3"], ["e4m3", "e5m2"]]
out_dtypes = ["float32", "bfloat16", "float8_e5m2"]
fast_accum = [false, true]
workspace = ["caller", 0, 1048576, 33554432]
[[shapes]]
m = [16, 64]
n = [64, 1024]
k = [4096, 8192]
"#,
    );
    let out = dir.path().join("h100sim.parquet");
    let mut o = HeuristicsOptions { out: out.clone(), quiet: true, ..HeuristicsOptions::default() };
    let mut device = SimDevice::new("hopper").unwrap();
    o.stop_after_chunks = Some(2);
    assert_eq!(run_heuristics(&sweep, &mut device, &o).unwrap_err().exit_code(), 5);
    assert!(!out.exists());
    o.stop_after_chunks = None;
    let r = run_heuristics(&sweep, &mut device, &o).unwrap();
    assert_eq!(r.resumed_chunks, 2);
    assert_eq!(r.keys, 8 * 2 * 3 * 2 * 4);
    // "caller" is 1 MiB for torch: the same keys twice; every key is accounted for.
    assert!(r.duplicates > 0);
    assert_eq!(r.rows + r.duplicates + r.skipped + r.dropped_status_nonzero + r.dropped_out_of_range, r.keys);
    assert_eq!(r.dropped_status_nonzero, 8 * 2 * 4, "e4m3 x e4m3 -> e5m2 at every workspace");
    let table = read_splitk_table(&out).unwrap();
    assert_eq!(table.rows.len() as u64, r.rows);
    assert_eq!(table.sidecar["format"], "mmaemu-splitk-table/1");
    assert_eq!(table.sidecar["rows"], r.rows);
    assert!(sidecar_path(&out).exists());
    // Every row is the hopper profile's table row (the simulated heuristic answers with it).
    assert!(table.rows.iter().any(|t| t.decision.split_s > 1));
    for t in &table.rows {
        let key = t.split_key().expect("a table row's key");
        let want = table_lookup(h100(), &key, t.workspace_bytes as u64).unwrap();
        assert_eq!(t.decision, want);
    }
    // The table the recorder wrote becomes a platform bundle as it is (docs/bring-up.md step 3), and the
    // bundle's profile decides each recorded key as the recorded row says.
    let spec = mmaemu_datasets::platform::BuildSpec {
        name: "h100sim".into(),
        table: Some(out.clone()),
        preset: "hopper".into(),
        rules: None,
        envelope: None,
        probe: None,
        profile: "h100sim".into(),
        caller: "torch._scaled_mm".into(),
        workspace: 1 << 20,
        recordings: vec![],
    };
    let bundle =
        mmaemu_datasets::platform::build_platform(&spec, &dir.path().join("bundle")).unwrap_or_else(|e| panic!("{e}"));
    let profile = &bundle.profiles[0];
    let table = profile.splitk_table.expect("the bundle's table");
    for t in table_rows_at(&read_splitk_table(&out).unwrap(), 1 << 20) {
        let key = t.split_key().expect("a table row's key");
        assert_eq!(table_lookup(table, &key, 1 << 20), Some(t.decision));
    }
}

fn table_rows_at(t: &mmaemu_datasets::SplitKTable, ws: u64) -> Vec<mmaemu_datasets::SplitKTableRow> {
    t.rows.iter().filter(|r| r.workspace_bytes as u64 == ws).cloned().collect()
}
