//! Shards on the simulated device: a sweep split into 3 shards and merged is the unsharded sweep row for
//! row; a shard resumes on its own; merges of overlapping, incomplete or foreign shards are refused with
//! the reason; a heuristic grid's shards merge into the unsharded table; a second process on the same
//! output is refused while the first holds its lock; an existing output needs --force.

use mmaemu_datasets::shard::Shard;
use mmaemu_datasets::{merge, read_recording, read_recording_with, read_splitk_table, ReadOptions};
use mmaemu_recorder::heuristics::{run_heuristics, HeuristicsOptions};
use mmaemu_recorder::parts::{parts_dir, Parts, RunKey};
use mmaemu_recorder::sim::SimDevice;
use mmaemu_recorder::spec::Sweep;
use mmaemu_recorder::sweep::{run_sweep, SweepOptions};
use std::path::{Path, PathBuf};

mod common;
use common::SMALL_SWEEP;

const GRID: &str = include_str!("specs/sharded-grid.toml");

fn parse(text: &str) -> Sweep {
    Sweep::parse(text, mmaemu_recorder::util::sha256_hex(text.as_bytes())).unwrap()
}

fn opts(out: &Path, shard: Option<&str>) -> SweepOptions {
    SweepOptions {
        out: out.to_path_buf(),
        quiet: true,
        shard: shard.map(|s| Shard::parse(s).unwrap()),
        ..SweepOptions::default()
    }
}

fn sweep(text: &str, o: &SweepOptions) -> Result<mmaemu_recorder::sweep::SweepReport, mmaemu_recorder::RecordError> {
    let mut d = SimDevice::new("hopper").unwrap();
    run_sweep(&parse(text), text, &mut d, Some("hopper"), o)
}

fn shards(dir: &Path, n: u64) -> Vec<PathBuf> {
    (1..=n)
        .map(|i| {
            let out = dir.join(format!("shard-{i}.parquet"));
            sweep(SMALL_SWEEP, &opts(&out, Some(&format!("{i}/{n}")))).unwrap();
            out
        })
        .collect()
}

#[test]
fn three_shards_merge_into_the_unsharded_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.parquet");
    sweep(SMALL_SWEEP, &opts(&whole, None)).unwrap();
    let parts = shards(dir.path(), 3);
    // Shard 2 of 3 holds chunks 1, 4, 7, 10 (of 13), and says so.
    let raw = read_recording_with(&parts[1], &ReadOptions { materialise_inputs: false }).unwrap();
    let info = &raw.meta.provenance.as_ref().unwrap()["shard"];
    assert_eq!((info["index"].as_u64(), info["count"].as_u64()), (Some(2), Some(3)));
    let chunks: Vec<u64> = info["chunks"].as_array().unwrap().iter().map(|c| c[0].as_u64().unwrap()).collect();
    assert_eq!(chunks, [1, 4, 7, 10]);

    // Merged in any order: the unsharded rows, row for row.
    let merged = dir.path().join("merged.parquet");
    let order = vec![parts[2].clone(), parts[0].clone(), parts[1].clone()];
    let r = merge(&order, &merged, false).unwrap();
    assert_eq!((r.shards, r.chunks, r.kind), (3, 13, "recording"));
    let (a, b) = (read_recording(&whole).unwrap(), read_recording(&merged).unwrap());
    assert_eq!(a.rows, b.rows);
    assert_eq!(a.meta.platform, b.meta.platform);
    assert!(b.meta.provenance.as_ref().unwrap().get("shard").is_none());
    assert_eq!(b.meta.provenance.as_ref().unwrap()["merged_from"].as_array().unwrap().len(), 3);
    let report = mmaemu_harness::files::replay_file(&merged, &|| {}).unwrap();
    assert!(report.failures.is_empty() && report.passed == report.rows);

    // The output exists now: a second merge needs --force.
    let e = merge(&order, &merged, false).unwrap_err();
    assert!(e.to_string().contains("--force"), "{e}");
    merge(&order, &merged, true).unwrap();
}

#[test]
fn bad_merges_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let parts = shards(dir.path(), 3);
    let out = dir.path().join("out.parquet");
    let refused = |inputs: Vec<PathBuf>, needle: &str| {
        let e = merge(&inputs, &out, false).unwrap_err();
        assert!(e.to_string().contains(needle), "{needle}: {e}");
        assert!(!out.exists());
    };
    // Incomplete: shard 3 is missing.
    refused(parts[..2].to_vec(), "incomplete shards: 4 of 13 chunks are missing (2, 5, 8, 11)");
    // Overlapping: shard 1 twice (once under another name).
    let copy = dir.path().join("copy.parquet");
    std::fs::copy(&parts[0], &copy).unwrap();
    refused(vec![parts[0].clone(), parts[1].clone(), parts[2].clone(), copy], "overlapping shards: shard 1/3");
    // Another split of the run: shard 1 of 2 with shards 2 and 3 of 3.
    let half = dir.path().join("half.parquet");
    sweep(SMALL_SWEEP, &opts(&half, Some("1/2"))).unwrap();
    refused(vec![half, parts[1].clone(), parts[2].clone()], "another split of the run");
    // Another spec.
    let other = dir.path().join("other.parquet");
    let text = SMALL_SWEEP.replace("seed = 9", "seed = 10");
    sweep(&text, &opts(&other, Some("1/3"))).unwrap();
    refused(vec![other, parts[1].clone(), parts[2].clone()], "another run");
    // Not a shard at all.
    let whole = dir.path().join("whole.parquet");
    sweep(SMALL_SWEEP, &opts(&whole, None)).unwrap();
    refused(vec![whole], "not a shard");
}

#[test]
fn a_shard_resumes_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let once = dir.path().join("once.parquet");
    sweep(SMALL_SWEEP, &opts(&once, Some("2/3"))).unwrap();
    let out = dir.path().join("resumed.parquet");
    let mut o = opts(&out, Some("2/3"));
    o.stop_after_chunks = Some(1);
    assert_eq!(sweep(SMALL_SWEEP, &o).unwrap_err().exit_code(), 5);
    // Another shard on the same parts is another run.
    let mut other = opts(&out, Some("3/3"));
    assert_eq!(sweep(SMALL_SWEEP, &other).unwrap_err().exit_code(), 2);
    o.stop_after_chunks = None;
    let r = sweep(SMALL_SWEEP, &o).unwrap();
    assert_eq!(r.resumed_chunks, 1);
    assert_eq!(read_recording(&once).unwrap().rows, read_recording(&out).unwrap().rows);
    assert!(!parts_dir(&out).exists());
    // Its output exists now: recording it again needs --force.
    let e = sweep(SMALL_SWEEP, &o).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("--force"), "{e}");
    other.out = out.clone();
    other.force = true;
    other.shard = Some(Shard::parse("2/3").unwrap());
    sweep(SMALL_SWEEP, &other).unwrap();
}

#[test]
fn grid_shards_merge_into_the_unsharded_table() {
    let dir = tempfile::tempdir().unwrap();
    let grid = parse(GRID);
    let run = |out: &Path, shard: Option<&str>| {
        let o = HeuristicsOptions {
            out: out.to_path_buf(),
            quiet: true,
            shard: shard.map(|s| Shard::parse(s).unwrap()),
            ..HeuristicsOptions::default()
        };
        run_heuristics(&grid, &mut SimDevice::new("hopper").unwrap(), &o).unwrap()
    };
    let whole = dir.path().join("whole.parquet");
    let full = run(&whole, None);
    assert!(full.duplicates > 0, "\"caller\" is 1 MiB for torch: keys repeat across chunks");
    let parts: Vec<PathBuf> = (1..=3)
        .map(|i| {
            let p = dir.path().join(format!("g{i}.parquet"));
            run(&p, Some(&format!("{i}/3")));
            p
        })
        .collect();
    let merged = dir.path().join("merged.parquet");
    let r = merge(&parts, &merged, false).unwrap();
    assert_eq!(r.kind, "split-K table");
    let (a, b) = (read_splitk_table(&whole).unwrap(), read_splitk_table(&merged).unwrap());
    assert_eq!(a.rows, b.rows);
    for key in ["rows", "split_rows", "settings", "dropped_status_nonzero", "skipped_by_torch_checks", "platform"] {
        assert_eq!(a.sidecar[key], b.sidecar[key], "{key}");
    }
    assert!(b.sidecar.get("shard").is_none());
    // A table shard with a recording shard is refused.
    let rec = dir.path().join("rec.parquet");
    sweep(SMALL_SWEEP, &opts(&rec, Some("1/3"))).unwrap();
    let e = merge(&[parts[0].clone(), rec], &dir.path().join("x.parquet"), false).unwrap_err();
    assert!(e.to_string().contains("mix"), "{e}");
}

#[test]
fn a_second_process_on_the_same_output_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.parquet");
    let key = || RunKey {
        kind: "sweep".into(),
        spec_name: "t".into(),
        spec_sha256: "ab".repeat(32),
        units: 4,
        chunk_units: 2,
        device: "simulated".into(),
        cublaslt: None,
        settings: String::new(),
        shard: None,
    };
    let first = Parts::open(&out, key(), false).unwrap();
    // Even --restart does not take the parts away from a running process.
    let e = Parts::open(&out, key(), true).err().unwrap();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("another mmaemu-record process"), "{e}");
    assert!(parts_dir(&out).exists());
    first.remove().unwrap();
    let again = Parts::open(&out, key(), false).unwrap();
    again.remove().unwrap();
    assert!(!dir.path().join("o.parquet.lock").exists());
}
