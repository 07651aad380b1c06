//! `mmaemu-record sweep`: the recording pipeline. Cases of a [`Sweep`] go through a [`Device`] (the GPU or
//! the simulated device) in chunks; each chunk becomes one recording file in the parts directory, written
//! atomically and listed with its sha256 in the parts manifest ([`crate::parts`]); when every chunk is done,
//! the chunks are merged into the output file (atomically), a manifest with checksums is written next to
//! it (`<out>.manifest.json`) and the parts directory is removed.
//!
//! Each row records: the operands (or, above the size limit, their generator spec and sha256, extension
//! column `inputs`), the result bits (or their sha256 plus sampled elements, `expected_samples`), the
//! algorithm cuBLASLt chose (`algo`), the split it implies (`split_s`, `split_scheme`), and in `note` the
//! cuBLAS status of a rejection (recorded as `expected_error = "ReferenceRejectsError"`) or a determinism
//! finding: every call runs `runs` (>= 2) times, and when a run differs from the first the row keeps the
//! first run's bits, says so in `note`, and the run reports it.

use crate::caller::Caller;
use crate::descriptor::CallConfig;
use crate::device::{Call, Device, Inputs, Platform, RunOutcome};
use crate::error::RecordError;
pub use crate::operands::{Generated, OperandCache};
pub use crate::options::RunOptions;
use crate::parts::{write_json, ChunkDone, Parts, RunKey};
use crate::progress::{ChunkCost, Progress};
use crate::scaling::RecipeScales;
use crate::spec::{Case, OpKind, Sweep};
use crate::util::{now_rfc3339, sha256_file, sha256_hex};
use mmaemu_datasets::inputs::{Operand, RowInputs, Samples};
use mmaemu_datasets::shard::ShardInfo;
use mmaemu_datasets::{
    read_recording_with, write_recording, Expectation, FileMeta, Op, OutSelect, ReadOptions, Recording,
    RecordingWriter, Row, RowExt, Truth, FORMAT_V1,
};
use mmaemu_model::Profile;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Options of a sweep run.
pub type SweepOptions = RunOptions;

/// What a sweep did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SweepReport {
    /// Cases in the run (after `--limit`).
    pub cases: u64,
    /// Rows in the output.
    pub rows: u64,
    /// Cases torch would not send to cuBLASLt (not recorded).
    pub skipped: u64,
    /// Calls cuBLASLt rejected (recorded as expected errors).
    pub rejected: u64,
    /// Cases whose scale recipe the device cannot take (the loaded cuBLASLt or GPU, or the simulated
    /// device's model): not recorded, each reason printed.
    pub unsupported: u64,
    /// Rows whose operands and result are shipped by reference / by hash.
    pub by_reference: u64,
    /// Ids of calls whose runs differed.
    pub nondeterministic: Vec<String>,
    /// Chunks taken from an interrupted run.
    pub resumed_chunks: u64,
    /// The output's sha256.
    pub sha256: String,
}

/// The profile rows replay under: the option, the spec's, or the GPU's (sm_89: ada, sm_90: hopper).
pub fn resolve_profile(
    sweep: &Sweep,
    opt: Option<&str>,
    platform: &Platform,
    simulated_profile: Option<&str>,
) -> Result<Option<Profile>, RecordError> {
    let name =
        opt.or(sweep.spec.profile.as_deref()).or(simulated_profile).map(str::to_string).or_else(|| {
            match platform.capability {
                (8, 9) => Some("ada".into()),
                (9, 0) => Some("hopper".into()),
                _ => None,
            }
        });
    name.map(|n| mmaemu_api::catalogue().profile(&n).map_err(|e| RecordError::Usage(format!("profile: {e}"))))
        .transpose()
}

/// Everything a row needs besides its case.
struct RowContext<'a> {
    sweep: &'a Sweep,
    platform: &'a Platform,
    profile: Option<&'a Profile>,
    preset: String,
    caller: Caller,
}

/// One recorded case: the row, and whether it was rejected / by reference / nondeterministic.
struct Recorded {
    row: Row,
    rejected: bool,
    by_reference: bool,
    nondeterministic: bool,
}

/// The D scale a case's call passes: the case's `scale_result`; for Transformer Engine with an FP8 output
/// the output tensor's scale, which is always there (1.0 unless the case gives one).
fn d_scale(case: &Case, caller: Caller) -> Option<f32> {
    match (caller, case.problem.out.fp8()) {
        (Caller::TransformerEngine, Some(_)) => Some(case.scale_result.unwrap_or(1.0)),
        _ => case.scale_result,
    }
}

fn config(case: &Case, ctx: &RowContext<'_>) -> CallConfig {
    CallConfig {
        problem: case.problem,
        scale_result: d_scale(case, ctx.caller).is_some(),
        workspace_bytes: case.workspace.bytes(ctx.caller, ctx.platform.capability),
        caller: ctx.caller,
        geometry: case.geometry,
    }
}

/// Evenly spread sample indices over `total` elements (first and last included).
pub fn sample_indices(total: usize, count: usize) -> Vec<usize> {
    if total == 0 || count == 0 {
        return Vec::new();
    }
    let count = count.min(total);
    if count == 1 {
        return vec![0];
    }
    let mut v: Vec<usize> = (0..count).map(|j| j * (total - 1) / (count - 1)).collect();
    v.dedup();
    v
}

/// A case ready to run: its call and its generated operands.
struct Prepared {
    case: Case,
    cfg: CallConfig,
    a: Generated,
    b: Generated,
    scale_result: Option<f32>,
    scales: Option<RecipeScales>,
}

impl Prepared {
    fn new(case: Case, ctx: &RowContext<'_>, cache: &mut OperandCache) -> Result<Prepared, RecordError> {
        let cfg = config(&case, ctx);
        let p = &case.problem;
        let a = cache.get(&case.inputs, Operand::A, p.fa, p.m, p.k)?;
        let b = cache.get(&case.inputs, Operand::B, p.fb, p.n, p.k)?;
        let scale_result = d_scale(&case, ctx.caller);
        let scales = RecipeScales::new(case.scaling, p.m, p.n, p.k, [case.scale_a.into(), case.scale_b.into()])
            .map_err(|e| RecordError::Model(format!("scaling {:?}: {e}", case.scaling.word())))?;
        Ok(Prepared { case, cfg, a, b, scale_result, scales })
    }

    fn call(&self) -> Call<'_> {
        let c = &self.case;
        Call {
            cfg: self.cfg,
            inputs: Inputs {
                a: &self.a.0,
                b: &self.b.0,
                scale_a: c.scale_a,
                scale_b: c.scale_b,
                scale_result: self.scale_result,
                scales: self.scales.as_ref(),
            },
        }
    }
}

/// The row of a case that ran (or was rejected) on the device.
fn record_case(p: &Prepared, outcome: RunOutcome, ctx: &RowContext<'_>) -> Recorded {
    let spec = &ctx.sweep.spec;
    let (case, cfg, ga, gb, scale_result) = (&p.case, &p.cfg, &p.a, &p.b, p.scale_result);
    let problem = &case.problem;
    let (a, b) = (&ga.0, &gb.0);
    let inputs_json = RowInputs { spec: case.inputs.clone(), a_sha256: ga.1.clone(), b_sha256: gb.1.clone() }.to_json();
    let id = format!("{}-{:06}", spec.name, case.index);
    let origin = format!(
        "mmaemu-record sweep {} case {} ({} data, seed {}, stream {})",
        spec.name,
        case.index,
        case.inputs.data.name(),
        case.inputs.seed,
        case.inputs.stream
    );
    let result_bytes = (problem.m * problem.n * problem.out.width()) as u64;
    let inline = (a.len() + b.len()) as u64 + result_bytes <= spec.storage.inline_max_bytes;
    let mut row = Row {
        id,
        op: match spec.op {
            OpKind::ScaledMm => Op::ScaledMm,
            OpKind::Gemm => Op::Gemm,
        },
        preset: ctx.preset.clone(),
        profile: ctx.profile.map(|p| p.name.clone()),
        gpu: ctx.platform.gpu_short.clone(),
        truth: if ctx.platform.simulated { Truth::Model } else { Truth::Hardware },
        fmt_a: problem.fa.name().into(),
        fmt_b: problem.fb.name().into(),
        batch: 1,
        m: problem.m as i64,
        n: problem.n as i64,
        k: problem.k as i64,
        a: Vec::new(),
        b: Vec::new(),
        c: None,
        scale_a: p.scales.is_none().then(|| case.scale_a.to_bits()),
        scale_b: p.scales.is_none().then(|| case.scale_b.to_bits()),
        scale_result: scale_result.map(f32::to_bits),
        out_dtype: Some(problem.out.name().into()),
        fast_accum: Some(problem.fast),
        split_s: None,
        split_scheme: None,
        algo: None,
        call: call_object(case, p.scales.as_ref()),
        out_select: OutSelect::Full,
        expected: Expectation::Error("ReferenceRejectsError".into()),
        scope: None,
        origin,
        ext: RowExt { inputs: Some(inputs_json), ..RowExt::default() },
    };
    let (mut rejected, mut by_reference, mut nondeterministic) = (false, false, false);
    match outcome {
        // Counted by the chunk loop before a row is made.
        RunOutcome::Skipped(_) => {}
        RunOutcome::Rejected { stage, status } => {
            // Only scaled_mm rows can replay a rejection (gemm has none); it needs a profile.
            if ctx.profile.is_some() {
                row.op = Op::ScaledMm;
            }
            row.ext.note = Some(format!("cuBLASLt rejected the call at {stage}: {status}"));
            if (a.len() + b.len()) as u64 <= spec.storage.inline_max_bytes {
                row.a = a.clone();
                row.b = b.clone();
            } else {
                by_reference = true;
            }
            rejected = true;
        }
        RunOutcome::Ran { algo, results, amax } => {
            let first = results.first().cloned().unwrap_or_default();
            let width = problem.out.width();
            let mut notes = Vec::new();
            for (r, other) in results.iter().enumerate().skip(1) {
                if *other != first {
                    let elems = first.len() / width;
                    let mut count = 0usize;
                    let mut at = None;
                    for e in 0..elems.max(other.len() / width) {
                        let x = first.get(e * width..(e + 1) * width);
                        let y = other.get(e * width..(e + 1) * width);
                        if x != y {
                            count += 1;
                            at.get_or_insert(e);
                        }
                    }
                    notes.push(format!(
                        "nondeterministic: run {} differs from run 1 in {count} of {elems} elements (first at index \
                         {}); expected holds run 1",
                        r + 1,
                        at.unwrap_or(0)
                    ));
                }
            }
            row.ext.amax_d = amax.first().copied();
            if let Some((r, x)) = amax.iter().enumerate().skip(1).find(|(_, x)| Some(*x) != amax.first()) {
                notes.push(format!(
                    "nondeterministic: run {} wrote amax_d {x:#010x}, run 1 {:#010x}; amax_d holds run 1",
                    r + 1,
                    amax[0]
                ));
            }
            nondeterministic = !notes.is_empty();
            row.split_s = Some(i32::try_from(algo.split_s).unwrap_or(i32::MAX));
            row.split_scheme = Some(
                ctx.sweep
                    .scheme
                    .name(ctx.profile.and_then(|p| p.splitk_table), algo.split_s, algo.custom_option)
                    .to_string(),
            );
            row.algo = Some(algo.to_json(cfg.workspace_bytes).to_string());
            if inline {
                row.a = a.clone();
                row.b = b.clone();
                row.expected = Expectation::Bits(first);
            } else {
                row.expected = Expectation::Sha256(sha256_hex(&first));
                let idx = sample_indices(first.len() / width, spec.storage.samples);
                let bits = idx
                    .iter()
                    .map(|&i| {
                        let mut w = [0u8; 4];
                        w[..width].copy_from_slice(&first[i * width..(i + 1) * width]);
                        u32::from_le_bytes(w)
                    })
                    .collect();
                row.ext.expected_samples =
                    Some(Samples { index: idx.iter().map(|&i| i as u64).collect(), bits }.to_json());
                by_reference = true;
            }
            if !notes.is_empty() {
                row.ext.note = Some(notes.join("; "));
            }
        }
    }
    Recorded { row, rejected, by_reference, nondeterministic }
}

/// The call object of a case: its operand layouts and a recipe's scale tensors (None: the standard call
/// with tensor-wise scales).
fn call_object(case: &Case, scales: Option<&RecipeScales>) -> Option<mmaemu_datasets::Call> {
    let mut call = case.geometry.call();
    if let Some(s) = scales {
        let c = call.get_or_insert_with(mmaemu_datasets::Call::default);
        c.scale_a = Some(s.a.clone());
        c.scale_b = Some(s.b.clone());
    }
    call
}

/// The file metadata of a sweep's output.
fn file_meta(sweep: &Sweep, ctx: &RowContext<'_>, spec_text: &str, extra: Option<&serde_json::Value>) -> FileMeta {
    let workspaces: Vec<u64> = {
        let mut w: Vec<u64> =
            sweep.spec.workspace.iter().map(|w| w.bytes(ctx.caller, ctx.platform.capability)).collect();
        w.sort_unstable();
        w.dedup();
        w
    };
    let mut platform = ctx.platform.with_run(ctx.caller, (workspaces.len() == 1).then(|| workspaces[0]));
    if let (serde_json::Value::Object(map), Some(serde_json::Value::Object(extra))) = (&mut platform, extra) {
        for (k, v) in extra {
            map.insert(k.clone(), v.clone());
        }
    }
    let source = if ctx.platform.simulated { "simulated device (mmaemu model)" } else { "cuBLASLt via mmaemu-record" };
    FileMeta {
        format: FORMAT_V1.into(),
        platform: Some(platform),
        provenance: Some(json!({
            "source": format!("{source}: sweep {}", sweep.spec.name),
            "licence": null,
            "created": now_rfc3339(),
            "tool": format!("mmaemu-record {}", env!("CARGO_PKG_VERSION")),
            "notes": sweep.spec.description,
            "spec_sha256": sweep.sha256,
            "spec": spec_text,
            "workspaces": workspaces,
        })),
    }
}

/// Runs a sweep (see the module documentation).
pub fn run_sweep(
    sweep: &Sweep,
    spec_text: &str,
    device: &mut dyn Device,
    simulated_profile: Option<&str>,
    opts: &SweepOptions,
) -> Result<SweepReport, RecordError> {
    let platform = device.platform().clone();
    let profile = resolve_profile(sweep, opts.profile.as_deref(), &platform, simulated_profile)?;
    let preset = match (&sweep.spec.preset, &profile) {
        (Some(p), _) => {
            mmaemu_api::catalogue().preset(p).map_err(|e| RecordError::Usage(e.to_string()))?.name().to_string()
        }
        (None, Some(p)) => p.preset.name().to_string(),
        (None, None) => {
            return Err(RecordError::Usage(format!(
                "no profile for a GPU of compute capability {}.{}: set `profile` or `preset` in the spec",
                platform.capability.0, platform.capability.1
            )))
        }
    };
    if sweep.spec.op == OpKind::ScaledMm && profile.is_none() {
        return Err(RecordError::Usage("op = \"scaled_mm\" needs a profile: set `profile` in the spec".into()));
    }
    let mut owned = sweep.clone();
    if let Some(c) = opts.caller {
        owned.set_caller(c).map_err(RecordError::Usage)?;
    }
    let sweep = &owned;
    let caller = sweep.caller;
    let ctx = RowContext { sweep, platform: &platform, profile: profile.as_ref(), preset, caller };

    let cases = opts.limit.map_or(sweep.case_count(), |l| l.min(sweep.case_count()));
    let chunk = sweep.spec.chunk_rows as u64;
    let chunks = cases.div_ceil(chunk);
    let key = RunKey {
        kind: "sweep".into(),
        spec_name: sweep.spec.name.clone(),
        spec_sha256: sweep.sha256.clone(),
        units: cases,
        chunk_units: chunk,
        device: platform.json.get("gpu").and_then(|g| g.as_str()).unwrap_or("?").to_string(),
        cublaslt: platform.cublaslt.clone(),
        settings: format!(
            "caller {}, profile {}, preset {}",
            caller.name(),
            ctx.profile.map_or("none", |p| p.name.as_str()),
            ctx.preset
        ),
        shard: opts.shard.map(|s| s.to_string()),
    };
    check_output(opts)?;
    let mut parts = Parts::open(&opts.out, key, opts.restart)?;
    let mut meta = file_meta(sweep, &ctx, spec_text, opts.platform_extra.as_ref());
    let mut progress = Progress::new(cases, "cases", opts.quiet).with_costs(chunk_costs(sweep, cases, chunk));
    let mut report = SweepReport { cases, ..SweepReport::default() };
    let mut cache = OperandCache::default();
    report.resumed_chunks = parts.run_chunks(
        cases,
        chunk,
        "parquet",
        opts.shard,
        &mut progress,
        opts.stop_after_chunks,
        |range, path, progress| {
            let mut rows = Vec::new();
            let mut stats: BTreeMap<String, u64> = BTreeMap::new();
            let mut flagged = Vec::new();
            let mut prepared = Vec::new();
            for i in range.clone() {
                let case = sweep.case(i);
                if case.skip.is_some() {
                    *stats.entry("skipped".into()).or_default() += 1;
                    progress.inc(1);
                    continue;
                }
                // The recipe's gate is the loaded cuBLASLt and the GPU; the simulated device's is its model.
                let gate = (!platform.simulated).then(|| case.scaling.unsupported(&platform)).flatten();
                if let Some(why) = gate {
                    unsupported(&mut stats, progress, &format!("{}-{:06}", sweep.spec.name, case.index), &why);
                    progress.inc(1);
                    continue;
                }
                prepared.push(Prepared::new(case, &ctx, &mut cache)?);
            }
            let calls: Vec<Call<'_>> = prepared.iter().map(Prepared::call).collect();
            let outcomes = device.run_batch(&calls, sweep.spec.runs)?;
            for (p, outcome) in prepared.iter().zip(outcomes) {
                if let RunOutcome::Skipped(why) = &outcome {
                    unsupported(&mut stats, progress, &format!("{}-{:06}", sweep.spec.name, p.case.index), why);
                    progress.inc(1);
                    continue;
                }
                let r = record_case(p, outcome, &ctx);
                if r.rejected {
                    *stats.entry("rejected".into()).or_default() += 1;
                }
                if r.by_reference {
                    *stats.entry("by_reference".into()).or_default() += 1;
                }
                if r.nondeterministic {
                    progress.println(&format!(
                        "mmaemu-record: {}: {}",
                        r.row.id,
                        r.row.ext.note.as_deref().unwrap_or("nondeterministic")
                    ));
                    flagged.push(r.row.id.clone());
                }
                rows.push(r.row);
                progress.inc(1);
            }
            let n = rows.len() as u64;
            write_recording(path, &Recording { path: path.to_path_buf(), meta: meta.clone(), rows })?;
            Ok(ChunkDone { rows: n, stats, flagged })
        },
    )?;

    // A shard's file says which chunks of the run it holds, for `mmaemu datasets merge`.
    if let (Some(shard), Some(serde_json::Value::Object(p))) = (opts.shard, &mut meta.provenance) {
        let held = parts.chunks().iter().filter(|(c, _)| **c < chunks).map(|(c, e)| (*c, e.rows)).collect();
        let info = ShardInfo { shard, units: cases, chunk_units: chunk, chunks: held };
        p.insert("shard".into(), info.to_json());
    }
    // Merge the chunks into the output, in chunk order, without regenerating by-reference operands.
    let mut writer = RecordingWriter::create(&opts.out, &meta, true)?;
    let mut chunk_list = Vec::new();
    for (index, entry) in parts.chunks() {
        if *index >= chunks {
            continue;
        }
        let p = parts.dir().join(&entry.file);
        let rec = read_recording_with(&p, &ReadOptions { materialise_inputs: false })?;
        writer.write_rows(&rec.rows)?;
        report.rows += rec.rows.len() as u64;
        for (k, v) in &entry.stats {
            match k.as_str() {
                "skipped" => report.skipped += v,
                "rejected" => report.rejected += v,
                "unsupported" => report.unsupported += v,
                "by_reference" => report.by_reference += v,
                _ => {}
            }
        }
        report.nondeterministic.extend(entry.flagged.iter().cloned());
        chunk_list.push(json!({"index": index, "rows": entry.rows, "sha256": entry.sha256}));
    }
    writer.finish()?;
    let (sha256, bytes) = sha256_file(&opts.out)?;
    report.sha256 = sha256.clone();
    let manifest = json!({
        "format": "mmaemu-record-manifest/1",
        "kind": "sweep",
        "file": opts.out.file_name().map(|n| n.to_string_lossy().into_owned()),
        "sha256": sha256,
        "bytes": bytes,
        "rows": report.rows,
        "spec": {"name": sweep.spec.name, "sha256": sweep.sha256},
        "platform": meta.platform,
        "counts": {
            "cases": report.cases,
            "skipped_by_torch_checks": report.skipped,
            "rejected": report.rejected,
            "unsupported_scaling": report.unsupported,
            "by_reference": report.by_reference,
            "nondeterministic": report.nondeterministic.len(),
            "resumed_chunks": report.resumed_chunks,
        },
        "nondeterministic": report.nondeterministic,
        "chunks": chunk_list,
        "created": now_rfc3339(),
        "tool": format!("mmaemu-record {}", env!("CARGO_PKG_VERSION")),
    });
    write_json(&manifest_path(&opts.out), &manifest)?;
    if opts.keep_parts {
        parts.release()?;
    } else {
        parts.remove()?;
    }
    Ok(report)
}

/// Counts a case the device cannot take and prints why.
fn unsupported(stats: &mut BTreeMap<String, u64>, progress: &Progress, id: &str, why: &str) {
    *stats.entry("unsupported".into()).or_default() += 1;
    progress.println(&format!("mmaemu-record: {id} not recorded: {why}"));
}

/// Refuses an output that exists unless `--force` (nothing already written is replaced by accident).
pub fn check_output(opts: &RunOptions) -> Result<(), RecordError> {
    if opts.out.exists() && !opts.force {
        return Err(RecordError::Usage(format!(
            "{} exists; pass --force to replace it (or resume into another --out)",
            opts.out.display()
        )));
    }
    Ok(())
}

/// What each chunk of a sweep costs: its calls (cases that are not skipped) and their m·n·k.
fn chunk_costs(sweep: &Sweep, cases: u64, chunk: u64) -> Vec<ChunkCost> {
    let mut costs = vec![ChunkCost::default(); cases.div_ceil(chunk) as usize];
    for i in 0..cases {
        let c = sweep.case(i);
        if c.skip.is_none() {
            let cost = &mut costs[(i / chunk) as usize];
            cost.calls += 1.0;
            cost.work += (c.problem.m * c.problem.n * c.problem.k) as f64;
        }
    }
    costs
}

/// The manifest written next to an output: `<out>.manifest.json`.
pub fn manifest_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".manifest.json");
    out.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_spread() {
        assert_eq!(sample_indices(10, 3), vec![0, 4, 9]);
        assert_eq!(sample_indices(2, 16), vec![0, 1]);
        assert_eq!(sample_indices(0, 4), Vec::<usize>::new());
        assert_eq!(sample_indices(5, 1), vec![0]);
    }
}
