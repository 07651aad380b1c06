//! Merging the shards of one run ([`crate::shard`]) into the file an unsharded run writes: every shard must
//! come from the same spec and platform and the same split of the run, together they must hold every chunk
//! exactly once, and the rows are written in chunk order, so the merged rows are the unsharded run's. Works
//! on recordings and on split-K tables (with their sidecars); the output is published atomically and an
//! existing one is replaced only when asked.

use crate::shard::ShardInfo;
use crate::splitk_table::{read_splitk_table, splitk_sidecar_path, SplitKTableRow, SPLITK_TABLE_FORMAT};
use crate::splitk_write::{settings_summary, write_splitk_table};
use crate::{read_recording_with, write_file_atomic, DatasetError, FileMeta, ReadOptions, RecordingWriter, Row};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// What a merge wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeReport {
    /// `recording` or `split-K table`.
    pub kind: &'static str,
    /// The shards merged.
    pub shards: usize,
    /// The chunks of the run.
    pub chunks: u64,
    /// Rows written.
    pub rows: u64,
    /// The output (and, for a table, its sidecar next to it).
    pub out: PathBuf,
}

impl MergeReport {
    fn new<R>(kind: &'static str, pieces: &[Piece<R>], rows: usize, out: &Path) -> MergeReport {
        MergeReport {
            kind,
            shards: pieces.len(),
            chunks: pieces[0].info.run_chunks(),
            rows: rows as u64,
            out: out.to_path_buf(),
        }
    }
}

/// One shard's file, read: its identity and its rows by chunk.
struct Piece<R> {
    path: PathBuf,
    info: ShardInfo,
    /// What must be equal across the shards of one run: (what, value).
    identity: Vec<(&'static str, Value)>,
    rows: Vec<R>,
}

fn refuse(path: &Path, what: impl Into<String>) -> DatasetError {
    DatasetError::Invalid { path: path.to_path_buf(), row_id: None, what: what.into() }
}

/// Is `path` a split-K table (its sidecar says so)?
fn is_table(path: &Path) -> bool {
    std::fs::read(splitk_sidecar_path(path))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|v| v.get("format").and_then(Value::as_str) == Some(SPLITK_TABLE_FORMAT))
}

/// The `shard` object of a file, or why the file is not a shard.
fn shard_of(path: &Path, holder: Option<&Value>) -> Result<ShardInfo, DatasetError> {
    let v = holder.and_then(|p| p.get("shard")).ok_or_else(|| {
        refuse(path, "not a shard: it has no `shard` object (a run recorded with --shard I/N writes one)")
    })?;
    ShardInfo::from_json(v).map_err(|e| refuse(path, e))
}

/// Checks that the pieces are the shards of one run, each once, holding every chunk exactly once; returns
/// the pieces' indices by chunk, in chunk order.
fn coverage<R>(pieces: &[Piece<R>], out: &Path) -> Result<Vec<usize>, DatasetError> {
    let first = &pieces[0];
    let run = |p: &Piece<R>| (p.info.shard.count, p.info.units, p.info.chunk_units);
    for p in &pieces[1..] {
        for ((what, a), (_, b)) in first.identity.iter().zip(&p.identity) {
            if a != b {
                return Err(refuse(
                    &p.path,
                    format!("comes from another run than {}: its {what} is {b}, not {a}", first.path.display()),
                ));
            }
        }
        if run(p) != run(first) {
            let (c, u, k) = run(p);
            let (c0, u0, k0) = run(first);
            return Err(refuse(
                &p.path,
                format!(
                    "comes from another split of the run than {}: {c} shards of {u} units in chunks of {k}, not \
                     {c0} of {u0} in chunks of {k0}",
                    first.path.display()
                ),
            ));
        }
    }
    let mut by_index: BTreeMap<u64, &Path> = BTreeMap::new();
    for p in pieces {
        if let Some(other) = by_index.insert(p.info.shard.index, &p.path) {
            return Err(refuse(
                &p.path,
                format!("overlapping shards: shard {} is also {}", p.info.shard, other.display()),
            ));
        }
    }
    let chunks = first.info.run_chunks();
    let mut owner: Vec<Option<usize>> = vec![None; chunks as usize];
    for (i, p) in pieces.iter().enumerate() {
        let mut last = None;
        for &(c, _) in &p.info.chunks {
            if c >= chunks || !p.info.shard.owns(c) {
                return Err(refuse(&p.path, format!("chunk {c} is not one of shard {}'s", p.info.shard)));
            }
            if last.is_some_and(|l| l >= c) {
                return Err(refuse(&p.path, "its `shard.chunks` are not in increasing order"));
            }
            last = Some(c);
            if let Some(j) = owner[c as usize].replace(i) {
                return Err(refuse(
                    &p.path,
                    format!("overlapping shards: chunk {c} is also in {}", pieces[j].path.display()),
                ));
            }
        }
        let rows: u64 = p.info.chunks.iter().map(|(_, r)| r).sum();
        if rows != p.rows.len() as u64 {
            return Err(refuse(&p.path, format!("holds {} rows, its `shard.chunks` count {rows}", p.rows.len())));
        }
    }
    let missing: Vec<u64> = (0..chunks).filter(|&c| owner[c as usize].is_none()).collect();
    if !missing.is_empty() {
        let count = first.info.shard.count;
        let absent: BTreeSet<u64> = (1..=count).filter(|i| !by_index.contains_key(i)).collect();
        let list: Vec<String> = missing.iter().take(8).map(u64::to_string).collect();
        return Err(refuse(
            out,
            format!(
                "incomplete shards: {} of {chunks} chunks are missing ({}{}); shards given: {:?} of {count}, \
                 missing: {:?}, or a shard that stopped before its end",
                missing.len(),
                list.join(", "),
                if missing.len() > 8 { ", ..." } else { "" },
                by_index.keys().collect::<Vec<_>>(),
                absent
            ),
        ));
    }
    Ok(owner.into_iter().flatten().collect())
}

/// The rows of every chunk in chunk order, each piece's rows taken in its own (chunk) order.
fn in_chunk_order<R: Clone>(pieces: &[Piece<R>], owners: &[usize]) -> Vec<R> {
    let mut cursor = vec![(0usize, 0usize); pieces.len()]; // (next chunk entry, next row)
    let mut rows = Vec::new();
    for &i in owners {
        let (entry, row) = cursor[i];
        let n = pieces[i].info.chunks[entry].1 as usize;
        rows.extend_from_slice(&pieces[i].rows[row..row + n]);
        cursor[i] = (entry + 1, row + n);
    }
    rows
}

/// Where the merged file came from, for its provenance.
fn merged_from<R>(pieces: &[Piece<R>]) -> Result<Value, DatasetError> {
    let mut list = Vec::new();
    for p in pieces {
        let (sha, _) = crate::digest::sha256_file(&p.path).map_err(|e| DatasetError::io(&p.path, e))?;
        list.push(json!({"file": p.path.file_name().map(|n| n.to_string_lossy()), "sha256": sha,
                         "shard": p.info.shard.to_string()}));
    }
    Ok(Value::Array(list))
}

/// Merges shard files into `out` (see the module documentation). An existing `out` is refused unless
/// `force`; an input cannot be the output.
pub fn merge(inputs: &[PathBuf], out: &Path, force: bool) -> Result<MergeReport, DatasetError> {
    if inputs.is_empty() {
        return Err(refuse(out, "no shards to merge"));
    }
    if out.exists() && !force {
        return Err(refuse(out, "exists; pass --force to replace it"));
    }
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if let Some(p) = inputs.iter().find(|p| out.exists() && canon(p) == canon(out)) {
        return Err(refuse(p, "is the output too"));
    }
    let tables: Vec<bool> = inputs.iter().map(|p| is_table(p)).collect();
    if tables.iter().any(|t| *t != tables[0]) {
        return Err(refuse(out, "the shards mix recordings and split-K tables"));
    }
    if tables[0] {
        merge_tables(inputs, out)
    } else {
        merge_recordings(inputs, out)
    }
}

fn merge_recordings(inputs: &[PathBuf], out: &Path) -> Result<MergeReport, DatasetError> {
    let mut pieces = Vec::new();
    let mut metas: Vec<FileMeta> = Vec::new();
    for path in inputs {
        let rec = read_recording_with(path, &ReadOptions { materialise_inputs: false })?;
        let info = shard_of(path, rec.meta.provenance.as_ref())?;
        let prov = rec.meta.provenance.clone().unwrap_or(Value::Null);
        let identity = vec![
            ("spec sha256", prov.get("spec_sha256").cloned().unwrap_or(Value::Null)),
            ("platform", rec.meta.platform.clone().unwrap_or(Value::Null)),
        ];
        pieces.push(Piece { path: path.clone(), info, identity, rows: rec.rows });
        metas.push(rec.meta);
    }
    let owners = coverage(&pieces, out)?;
    let rows: Vec<Row> = in_chunk_order(&pieces, &owners);
    let mut meta = metas.swap_remove(0);
    if let Some(Value::Object(p)) = &mut meta.provenance {
        p.remove("shard");
        p.insert("merged_from".into(), merged_from(&pieces)?);
    }
    let ext = rows.iter().any(|r| !r.ext.is_empty());
    let mut w = RecordingWriter::create(out, &meta, ext)?;
    w.write_rows(&rows)?;
    w.finish()?;
    Ok(MergeReport::new("recording", &pieces, rows.len(), out))
}

fn merge_tables(inputs: &[PathBuf], out: &Path) -> Result<MergeReport, DatasetError> {
    if out.extension().and_then(|e| e.to_str()) != Some("parquet") {
        return Err(refuse(out, "a split-K table must end in .parquet (its sidecar gets .json)"));
    }
    let mut pieces = Vec::new();
    let mut sidecars = Vec::new();
    for path in inputs {
        let t = read_splitk_table(path)?;
        let info = shard_of(path, Some(&t.sidecar))?;
        let identity = vec![
            ("spec sha256", t.sidecar.pointer("/source/spec_sha256").cloned().unwrap_or(Value::Null)),
            ("platform", t.sidecar.get("platform").cloned().unwrap_or(Value::Null)),
        ];
        pieces.push(Piece { path: path.clone(), info, identity, rows: t.rows });
        sidecars.push((t.sidecar, t.platform, t.provenance));
    }
    let owners = coverage(&pieces, out)?;
    // A key asked twice (two workspace entries of the same bytes) keeps its first answer, as in one run.
    let mut seen = HashSet::new();
    let rows: Vec<SplitKTableRow> =
        in_chunk_order(&pieces, &owners).into_iter().filter(|r: &SplitKTableRow| seen.insert(r.key())).collect();
    const COUNTERS: [&str; 3] = ["dropped_status_nonzero", "dropped_out_of_range", "skipped_by_torch_checks"];
    let sums: Vec<u64> = COUNTERS
        .iter()
        .map(|k| sidecars.iter().map(|(s, _, _)| s.get(*k).and_then(Value::as_u64).unwrap_or(0)).sum())
        .collect();
    let (mut sidecar, platform, provenance) = sidecars.swap_remove(0);
    let mut provenance = provenance.unwrap_or_else(|| json!({}));
    let from = merged_from(&pieces)?;
    if let Value::Object(p) = &mut provenance {
        p.remove("shard");
        p.insert("merged_from".into(), from.clone());
    }
    let created_by = sidecar.get("tool").and_then(Value::as_str).unwrap_or("mmaemu-datasets merge").to_string();
    write_splitk_table(out, &rows, &platform.unwrap_or(Value::Null), &provenance, &created_by)?;
    let (sha, _) = crate::digest::sha256_file(out).map_err(|e| DatasetError::io(out, e))?;
    let ws: BTreeSet<i64> = rows.iter().map(|r| r.workspace_bytes).collect();
    if let Value::Object(s) = &mut sidecar {
        s.remove("shard");
        s.insert("merged_from".into(), from);
        s.insert("name".into(), json!(out.file_stem().map(|n| n.to_string_lossy())));
        s.insert("parquet".into(), json!(out.file_name().map(|n| n.to_string_lossy())));
        s.insert("parquet_sha256".into(), json!(sha));
        s.insert("rows".into(), json!(rows.len()));
        s.insert("split_rows".into(), json!(rows.iter().filter(|r| r.decision.split_s > 1).count()));
        s.insert("settings".into(), Value::Array(settings_summary(&rows)));
        for (key, n) in COUNTERS.iter().zip(&sums) {
            s.insert((*key).into(), json!(n));
        }
        if let Some(Value::Object(codes)) = s.get_mut("codes") {
            codes.insert("ws".into(), json!(ws));
        }
    }
    let mut bytes = serde_json::to_vec_pretty(&sidecar).map_err(|e| refuse(out, e.to_string()))?;
    bytes.push(b'\n');
    write_file_atomic(&splitk_sidecar_path(out), &bytes)?;
    Ok(MergeReport::new("split-K table", &pieces, rows.len(), out))
}
