//! `mmaemu-record heuristics --grid SPEC`: cuBLASLt heuristic queries only (no GEMM runs), written as a
//! split-K decision table `mmaemu-splitk-table/1` (`docs/recording-format.md`, "Companion format")
//! with its JSON sidecar, so a new GPU or cuBLAS version gets the table its profile needs.
//!
//! One query per grid key (m, n, k, fmt_a, fmt_b, out dtype, fast_accum, workspace) with torch 2.7.1's
//! descriptor ([`crate::descriptor`]); the table row is the first algorithm's configuration. Keys torch
//! rejects before cuBLASLt are skipped; queries cuBLASLt answers with a nonzero status or no algorithm
//! are dropped and counted (`dropped_status_nonzero`), like the shipped tables. The run is chunked and
//! resumable like a sweep ([`crate::parts`]): each chunk is a JSON-lines file written atomically.

use crate::caller::Caller;
use crate::descriptor::CallConfig;
use crate::device::{AlgoInfo, Device, Heuristic, Platform};
use crate::error::RecordError;
use crate::geometry::Geometry;
pub use crate::options::RunOptions;
use crate::parts::{write_json, ChunkDone, Parts, RunKey};
use crate::progress::{ChunkCost, Progress};
use crate::spec::Sweep;
use crate::util::{now_rfc3339, sha256_file};
use mmaemu_datasets::shard::ShardInfo;
use mmaemu_datasets::splitk_write::{column_docs, settings_summary, write_splitk_table};
use mmaemu_datasets::write_file_atomic;
use mmaemu_datasets::SplitKTableRow;
use mmaemu_model::splitk::TableRow;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// Options of a heuristics run (`profile` is not used: the table records what cuBLASLt answers).
pub type HeuristicsOptions = RunOptions;

/// What a heuristics run did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeuristicsReport {
    /// Keys in the run.
    pub keys: u64,
    /// Table rows written.
    pub rows: u64,
    /// Rows with numSplitsK > 1.
    pub split_rows: u64,
    /// Keys torch would not send to cuBLASLt.
    pub skipped: u64,
    /// Queries with a nonzero status or no algorithm.
    pub dropped_status_nonzero: u64,
    /// Answers whose values do not fit the table's column types.
    pub dropped_out_of_range: u64,
    /// Keys that repeat an earlier key (two workspace entries with the same bytes).
    pub duplicates: u64,
    /// Chunks taken from an interrupted run.
    pub resumed_chunks: u64,
    /// sha256 of the table.
    pub sha256: String,
}

/// The sidecar path of a table.
pub fn sidecar_path(out: &Path) -> PathBuf {
    out.with_extension("json")
}

fn slug(gpu_short: &str) -> String {
    gpu_short.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase()
}

/// Runs the grid (see the module documentation).
pub fn run_heuristics(
    sweep: &Sweep,
    device: &mut dyn Device,
    opts: &HeuristicsOptions,
) -> Result<HeuristicsReport, RecordError> {
    if opts.out.extension().and_then(|e| e.to_str()) != Some("parquet") {
        return Err(RecordError::Usage(format!(
            "--out {}: a split-K table must end in .parquet (its sidecar gets .json)",
            opts.out.display()
        )));
    }
    let platform = device.platform().clone();
    let caller = opts.caller.unwrap_or(sweep.caller);
    let keys = opts.limit.map_or(sweep.grid_count(), |l| l.min(sweep.grid_count()));
    let chunk = sweep.spec.grid_chunk_rows as u64;
    let chunks = keys.div_ceil(chunk);
    let run = RunKey {
        kind: "heuristics".into(),
        spec_name: sweep.spec.name.clone(),
        spec_sha256: sweep.sha256.clone(),
        units: keys,
        chunk_units: chunk,
        device: platform.json.get("gpu").and_then(|g| g.as_str()).unwrap_or("?").to_string(),
        cublaslt: platform.cublaslt.clone(),
        settings: format!("caller {}", caller.name()),
        shard: opts.shard.map(|s| s.to_string()),
    };
    crate::sweep::check_output(opts)?;
    let mut parts = Parts::open(&opts.out, run, opts.restart)?;
    // Every key is one query: the ETA prices the chunks by their keys.
    let costs = (0..chunks).map(|c| ChunkCost { calls: (keys - c * chunk).min(chunk) as f64, work: 0.0 }).collect();
    let mut progress = Progress::new(keys, "heuristic queries", opts.quiet).with_costs(costs);
    let mut report = HeuristicsReport { keys, ..HeuristicsReport::default() };
    report.resumed_chunks = parts.run_chunks(
        keys,
        chunk,
        "jsonl",
        opts.shard,
        &mut progress,
        opts.stop_after_chunks,
        |range, path, progress| {
            let mut lines = Vec::new();
            let mut stats: BTreeMap<String, u64> = BTreeMap::new();
            for i in range {
                progress.inc(1);
                let (key, skip) = sweep.grid_key(i);
                if skip.is_some() {
                    *stats.entry("skipped".into()).or_default() += 1;
                    continue;
                }
                let ws = key.workspace.bytes(caller, platform.capability);
                let cfg = CallConfig {
                    problem: key.problem,
                    scale_result: false,
                    workspace_bytes: ws,
                    caller,
                    geometry: Geometry::STANDARD,
                };
                match device.heuristic(&cfg)? {
                    Heuristic::Rejected(_) => *stats.entry("dropped_status_nonzero".into()).or_default() += 1,
                    Heuristic::Algo(a) => match table_record(&cfg, &a) {
                        Some(r) => {
                            lines.push(serde_json::to_string(&r).map_err(|e| RecordError::Model(e.to_string()))?)
                        }
                        None => *stats.entry("dropped_out_of_range".into()).or_default() += 1,
                    },
                }
            }
            let mut body = lines.join("\n");
            body.push('\n');
            write_file_atomic(path, body.as_bytes())?;
            Ok(ChunkDone { rows: lines.len() as u64, stats, flagged: Vec::new() })
        },
    )?;

    // Collect the chunks, in order, dropping repeated keys.
    let mut rows: Vec<SplitKTableRow> = Vec::new();
    let mut seen = HashSet::new();
    let mut held = Vec::new();
    for (index, entry) in parts.chunks() {
        if *index >= chunks {
            continue;
        }
        let p = parts.dir().join(&entry.file);
        let text = std::fs::read_to_string(&p).map_err(|e| RecordError::io(&p, e))?;
        let before = rows.len();
        for line in text.lines().filter(|l| !l.is_empty()) {
            let r: SplitKTableRow = serde_json::from_str(line)
                .map_err(|e| RecordError::ResumeMismatch(format!("{}: bad chunk line: {e}", p.display())))?;
            if seen.insert(r.key()) {
                rows.push(r);
            } else {
                report.duplicates += 1;
            }
        }
        held.push((*index, (rows.len() - before) as u64));
        for (k, v) in &entry.stats {
            match k.as_str() {
                "skipped" => report.skipped += v,
                "dropped_status_nonzero" => report.dropped_status_nonzero += v,
                "dropped_out_of_range" => report.dropped_out_of_range += v,
                _ => {}
            }
        }
    }
    report.rows = rows.len() as u64;
    report.split_rows = rows.iter().filter(|r| r.decision.split_s > 1).count() as u64;

    let workspaces: BTreeSet<i64> = rows.iter().map(|r| r.workspace_bytes).collect();
    let mut platform_json = platform.with_run(caller, None);
    if let (Value::Object(map), Some(Value::Object(extra))) = (&mut platform_json, &opts.platform_extra) {
        for (k, v) in extra {
            map.insert(k.clone(), v.clone());
        }
    }
    let created = now_rfc3339();
    let tool = format!("mmaemu-record {}", env!("CARGO_PKG_VERSION"));
    let provenance = json!({
        "source": format!("{}: heuristic grid {}", if platform.simulated { "simulated device (mmaemu model)" } else { "cuBLASLt via mmaemu-record" }, sweep.spec.name),
        "licence": null,
        "created": created,
        "tool": tool,
        "spec_sha256": sweep.sha256,
    });
    let created_by = format!("mmaemu-record {}", env!("CARGO_PKG_VERSION"));
    write_splitk_table(&opts.out, &rows, &platform_json, &provenance, &created_by)?;
    let (sha256, bytes) = sha256_file(&opts.out)?;
    report.sha256 = sha256.clone();
    let sidecar = sidecar(
        &opts.out,
        sweep,
        &platform,
        &platform_json,
        &rows,
        &report,
        &sha256,
        &workspaces,
        caller,
        &created,
        &tool,
    );
    let side = sidecar_path(&opts.out);
    let mut sidecar = sidecar;
    if let (Some(shard), Value::Object(s)) = (opts.shard, &mut sidecar) {
        let info = ShardInfo { shard, units: keys, chunk_units: chunk, chunks: held };
        s.insert("shard".into(), info.to_json());
    }
    write_json(&side, &sidecar)?;
    let (side_sha, _) = sha256_file(&side)?;
    let manifest = json!({
        "format": "mmaemu-record-manifest/1",
        "kind": "heuristics",
        "file": opts.out.file_name().map(|n| n.to_string_lossy().into_owned()),
        "sha256": sha256,
        "bytes": bytes,
        "rows": report.rows,
        "sidecar": {"file": side.file_name().map(|n| n.to_string_lossy().into_owned()), "sha256": side_sha},
        "spec": {"name": sweep.spec.name, "sha256": sweep.sha256},
        "counts": {
            "keys": report.keys,
            "skipped_by_torch_checks": report.skipped,
            "dropped_status_nonzero": report.dropped_status_nonzero,
            "dropped_out_of_range": report.dropped_out_of_range,
            "duplicates": report.duplicates,
            "resumed_chunks": report.resumed_chunks,
        },
        "created": created,
        "tool": tool,
    });
    write_json(&crate::sweep::manifest_path(&opts.out), &manifest)?;
    if opts.keep_parts {
        parts.release()?;
    } else {
        parts.remove()?;
    }
    Ok(report)
}

/// The sidecar JSON of a recorded table.
#[allow(clippy::too_many_arguments)]
fn sidecar(
    out: &Path,
    sweep: &Sweep,
    platform: &Platform,
    platform_json: &Value,
    rows: &[SplitKTableRow],
    report: &HeuristicsReport,
    sha256: &str,
    workspaces: &BTreeSet<i64>,
    caller: Caller,
    created: &str,
    tool: &str,
) -> Value {
    let cublaslt = platform.cublaslt.clone().unwrap_or_else(|| "unknown".into());
    let table_id = format!("heur_{}_lt{}", slug(&platform.gpu_short), cublaslt);
    let settings = settings_summary(rows);
    let preset = match platform.capability {
        (8, 9) => "ada",
        (9, 0) => "hopper",
        _ => "",
    };
    // A first guess from the GPU's family (docs/reference.md §6.4: the RTX 4060's and the H100's tables); `mmaemu
    // fit splitk` over split recordings replaces it with the fitted rules (`mmaemu platform build --rules`).
    let rule: Value = match preset {
        "ada" => json!({"0": "serial", "1": "pairwise", "2": "serial"}),
        "hopper" => json!({"0": "contiguous", "1": "contiguous", "2": "contiguous", "3": "contiguous"}),
        _ => json!({}),
    };
    json!({
        "format": mmaemu_datasets::SPLITK_TABLE_FORMAT,
        "name": out.file_stem().map(|n| n.to_string_lossy().into_owned()),
        "parquet": out.file_name().map(|n| n.to_string_lossy().into_owned()),
        "parquet_sha256": sha256,
        "rows": report.rows,
        "split_rows": report.split_rows,
        "table_id": table_id,
        "platform": platform_json,
        "key": ["m", "n", "k", "fmt_a", "fmt_b", "out_dtype", "fast_accum", "workspace_bytes"],
        "columns": column_docs(),
        "descriptor": crate::descriptor::summary(caller),
        "caller": caller.name(),
        "dropped_status_nonzero": report.dropped_status_nonzero,
        "dropped_out_of_range": report.dropped_out_of_range,
        "skipped_by_torch_checks": report.skipped,
        "settings": settings,
        "codes": {
            "custom -> scheme": rule,
            "custom -> scheme, note": "assumed from the preset's recorded table (docs/reference.md §6.4); not verified on this GPU until split calls are replayed",
            "ws": workspaces,
            "tile/stages/reduction": format!("cublasLt.h enum values (cuBLASLt {cublaslt})"),
        },
        "envelope": {"kind": "none", "inference": false, "note": "no envelope is derived by the recorder"},
        "source": {"recorder": tool, "spec": sweep.spec.name, "spec_sha256": sweep.sha256, "simulated": platform.simulated},
        "created": created,
        "tool": tool,
    })
}

/// The table row of a heuristic answer; None when a value does not fit the table's column types.
fn table_record(cfg: &CallConfig, a: &AlgoInfo) -> Option<SplitKTableRow> {
    let p = &cfg.problem;
    Some(SplitKTableRow {
        m: i32::try_from(p.m).ok()?,
        n: i32::try_from(p.n).ok()?,
        k: i32::try_from(p.k).ok()?,
        fmt_a: p.fa.name(),
        fmt_b: p.fb.name(),
        out_dtype: p.out.name(),
        fast_accum: p.fast,
        workspace_bytes: i64::try_from(cfg.workspace_bytes).ok()?,
        decision: TableRow {
            split_s: u8::try_from(a.split_s).ok()?,
            custom_option: u8::try_from(a.custom_option).ok()?,
            algo_id: i16::try_from(a.algo_id).ok()?,
            tile_id: i16::try_from(a.tile_id).ok()?,
            stages_id: i16::try_from(a.stages_id).ok()?,
            reduction_scheme: u8::try_from(a.reduction_scheme).ok()?,
            cta_swizzling: u8::try_from(a.cta_swizzling).ok()?,
        },
    })
}
