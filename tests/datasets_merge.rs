//! `mmaemu datasets merge` end to end: shards that together hold every chunk once merge (exit 0) into the
//! rows in chunk order; incomplete or overlapping shards and an existing output without --force are
//! refused (exit 2) with the reason on stderr.

use mmaemu_datasets::shard::{Shard, ShardInfo};
use mmaemu_datasets::{read_recording, write_recording, Recording};
use std::path::{Path, PathBuf};
use std::process::Command;

fn merge(args: &[&Path], out: &Path, force: bool) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mmaemu"));
    cmd.args(["datasets", "merge"]).args(args).arg("--out").arg(out);
    if force {
        cmd.arg("--force");
    }
    let o = cmd.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// Twelve shipped rows as a run of 4 chunks of 3, split into `count` shards (chunk c in shard c mod count + 1).
fn shards(dir: &Path, count: u64) -> (Recording, Vec<PathBuf>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/recordings/rtx4060-api.parquet");
    let mut rec = read_recording(&src).unwrap();
    rec.rows.truncate(12);
    let files = (1..=count)
        .map(|index| {
            let shard = Shard { index, count };
            let chunks: Vec<u64> = shard.chunks(4).collect();
            let mut part = rec.clone();
            part.rows = chunks.iter().flat_map(|&c| rec.rows[c as usize * 3..c as usize * 3 + 3].to_vec()).collect();
            let info = ShardInfo { shard, units: 12, chunk_units: 3, chunks: chunks.iter().map(|&c| (c, 3)).collect() };
            let mut prov = part.meta.provenance.clone().unwrap_or_else(|| serde_json::json!({}));
            prov["shard"] = info.to_json();
            part.meta.provenance = Some(prov);
            let path = dir.join(format!("shard-{index}.parquet"));
            write_recording(&path, &part).unwrap();
            path
        })
        .collect();
    (rec, files)
}

#[test]
fn merge_writes_the_whole_run_and_refuses_bad_shards() {
    let dir = tempfile::tempdir().unwrap();
    let (rec, files) = shards(dir.path(), 2);
    let out = dir.path().join("merged.parquet");
    let (code, stdout, stderr) = merge(&[&files[1], &files[0]], &out, false);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("merged 2 shards of a 4-chunk run"), "{stdout}");
    assert_eq!(read_recording(&out).unwrap().rows, rec.rows);

    // The output exists: refused without --force, replaced with it.
    let (code, _, stderr) = merge(&[&files[0], &files[1]], &out, false);
    assert_eq!(code, 2);
    assert!(stderr.contains("exists; pass --force"), "{stderr}");
    assert_eq!(merge(&[&files[0], &files[1]], &out, true).0, 0);

    let other = dir.path().join("other.parquet");
    let (code, _, stderr) = merge(&[&files[0]], &other, false);
    assert_eq!(code, 2);
    assert!(stderr.contains("incomplete shards"), "{stderr}");
    let (code, _, stderr) = merge(&[&files[0], &files[0], &files[1]], &other, false);
    assert_eq!(code, 2);
    assert!(stderr.contains("overlapping shards"), "{stderr}");
    assert!(!other.exists());
}
