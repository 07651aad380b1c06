//! mmaemu-bringup: `mmaemu-record bring-up`, a GPU nobody has modelled turned into a checked platform bundle in one
//! command — probe, heuristic grid, instruction and split sweeps, the fits, the experiments they design, the bundle
//! and its check — and the `mmaemu-record` command line that runs it. The device is a [`Device`] and nothing else:
//! with the simulated device the fitting side sees the rows and the table the recorder writes, never the truth.
//!
//! - [`specs`]: what is recorded; [`stages`]: progress and per-stage records; [`fits`]: the one link to the fits;
//! - [`check`]: the bundle and its replay; [`report`]: bring-up.json and bring-up.html; [`truth`]: random truths.

pub mod check;
pub mod command;
pub mod fits;
pub mod report;
pub mod specs;
pub mod stages;
pub mod truth;

use mmaemu_fit::Evidence;
use mmaemu_recorder::device::Device;
use mmaemu_recorder::heuristics::run_heuristics;
use mmaemu_recorder::options::RunOptions;
use mmaemu_recorder::spec::Sweep;
use mmaemu_recorder::sweep::run_sweep;
use mmaemu_recorder::RecordError;
use specs::Size;
use stages::Stages;
use std::path::{Path, PathBuf};

/// What `bring-up` is told.
#[derive(Debug, Clone)]
pub struct Options {
    /// The bundle's (and its profile's) name.
    pub name: String,
    /// The output directory: DIR/NAME is the bundle, DIR/bring-up.json and .html the report, DIR/work the
    /// recordings as they are made (kept: an interrupted run resumes from them).
    pub out: PathBuf,
    /// How much to record.
    pub size: Size,
    /// Minutes the run may take; the experiments stop when they are spent.
    pub budget_minutes: Option<f64>,
    /// Device calls the experiments may make in all.
    pub max_experiment_calls: usize,
    /// No progress lines.
    pub quiet: bool,
}

/// What a bring-up ended with.
#[derive(Debug)]
pub struct Outcome {
    /// bring-up.json.
    pub report: serde_json::Value,
    /// The check of the bundle.
    pub check: check::Check,
    /// The bundle's directory.
    pub bundle: PathBuf,
}

impl Outcome {
    /// Exit 0 only when the bundle replays every recorded row bit for bit.
    pub fn passed(&self) -> bool {
        self.check.all_pass()
    }
    /// What stays open: the preset parameters (their names) and the customOptions with several rules a routed call
    /// could tell apart (their labels). The check passes them, but the bundle computes with one value, one rule.
    pub fn open(&self) -> Vec<String> {
        let params = open_params(&self.report).filter_map(|d| d["parameter"].as_str());
        params.chain(open_customs(&self.report).filter_map(|c| c["label"].as_str())).map(String::from).collect()
    }
}

/// The preset parameters bring-up.json (`report`) lists as open.
fn open_params(report: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    report["preset"]["undecided"].as_array().into_iter().flatten().filter(|d| d["status"] == "open")
}

/// The customOptions bring-up.json (`report`) lists as ambiguous.
fn open_customs(report: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    report["custom_options"].as_array().into_iter().flatten().filter(|c| c["verdict"] == "ambiguous")
}

/// Why a bring-up stopped before its report: the recorder's error (its exit code), or a stage that could not go on
/// (exit code 1).
#[derive(Debug)]
pub enum Error {
    /// The recorder failed (usage, no GPU, CUDA, I/O ...).
    Record(RecordError),
    /// A stage failed: what and why.
    Stage(String),
}

impl Error {
    /// The process exit code: the recorder's (recorder/src/error.rs), 1 for a failed stage.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Record(e) => e.exit_code(),
            Error::Stage(_) => 1,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Record(e) => write!(f, "{e}"),
            Error::Stage(m) => write!(f, "bring-up: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<RecordError> for Error {
    fn from(e: RecordError) -> Self {
        Error::Record(e)
    }
}

fn data(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Stage(format!("{what}: {e}"))
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Stage(format!("{}: {e}", path.display()))
}

/// Runs a sweep spec into `work/<spec name>.parquet`, resuming an interrupted run (its finished output is kept).
fn sweep(
    device: &mut dyn Device,
    work: &Path,
    name: &str,
    text: &str,
    quiet: bool,
) -> Result<(PathBuf, u64, bool), Error> {
    let out = work.join(format!("{name}.parquet"));
    if out.is_file() {
        return Ok((out, 0, true));
    }
    let spec = Sweep::parse(text, mmaemu_datasets::digest::sha256_hex(text.as_bytes())).map_err(|e| data(name, e))?;
    std::fs::write(work.join(format!("{name}.toml")), text).map_err(|e| io(work, e))?;
    let opts = RunOptions { out: out.clone(), quiet, ..RunOptions::default() };
    let r = run_sweep(&spec, text, device, None, &opts)?;
    Ok((out, r.rows, false))
}

/// The built-in preset a GPU of this capability starts from (the rows' preset until the fit replaces it).
fn first_preset(capability: (u32, u32)) -> &'static str {
    if capability == (8, 9) {
        "ada"
    } else {
        "hopper"
    }
}

/// The first bundle: the probe and a built-in preset renamed NAME-mma, so that the sweeps can record under the
/// profile NAME (the rows' preset name is then the fitted preset's). Registered in the process's catalogue.
fn first_bundle(name: &str, work: &Path, probe: &Path, capability: (u32, u32)) -> Result<(), Error> {
    let dir = work.join("first").join(name);
    if !dir.is_dir() {
        let base =
            mmaemu_model::Preset::builtin(first_preset(capability)).ok_or_else(|| data("first preset", "missing"))?;
        let mut spec = base.spec().clone();
        spec.name = format!("{name}-mma");
        let doc = mmaemu_model::Preset::custom(spec).map_err(|e| data("first preset", e))?.to_document();
        let preset = work.join("first-preset.toml");
        std::fs::write(&preset, doc).map_err(|e| io(&preset, e))?;
        let spec = mmaemu_datasets::platform::BuildSpec {
            name: name.to_string(),
            table: None,
            preset: preset.display().to_string(),
            rules: None,
            envelope: None,
            probe: Some(probe.to_path_buf()),
            profile: name.to_string(),
            caller: "torch._scaled_mm".into(),
            workspace: specs::WORKSPACE,
            recordings: Vec::new(),
        };
        mmaemu_datasets::platform::build_platform(&spec, &dir).map_err(|e| data("first bundle", e))?;
    }
    mmaemu_api::register_platform(&dir).map_err(|e| data("first bundle", e))?;
    Ok(())
}

/// Runs the whole bring-up on `device` (see the crate documentation).
pub fn bring_up(device: &mut dyn Device, opts: &Options) -> Result<Outcome, Error> {
    let name = opts.name.as_str();
    let work = opts.out.join("work");
    std::fs::create_dir_all(&work).map_err(|e| io(&work, e))?;
    let mut st = Stages::open(&work, opts.quiet);
    let evidence = if device.platform().simulated { Evidence::Simulated } else { Evidence::Hardware };

    // 1. Probe.
    st.begin("probe");
    let probe = work.join("probe.json");
    let platform = device.platform().clone();
    let probe_text = serde_json::to_string_pretty(&platform.json).unwrap_or_default();
    std::fs::write(&probe, probe_text).map_err(|e| io(&probe, e))?;
    st.end(0, platform.json["gpu"].as_str().unwrap_or("?").to_string(), false);
    first_bundle(name, &work, &probe, platform.capability)?;

    // 2. The heuristic grid.
    st.begin("grid");
    let table = work.join(format!("{name}-table.parquet"));
    let resumed = table.is_file();
    let mut calls = 0;
    if !resumed {
        let text = specs::grid(name, opts.size);
        std::fs::write(work.join(format!("{name}-grid.toml")), &text).map_err(|e| io(&work, e))?;
        let spec =
            Sweep::parse(&text, mmaemu_datasets::digest::sha256_hex(text.as_bytes())).map_err(|e| data("grid", e))?;
        let o = RunOptions { out: table.clone(), quiet: opts.quiet, ..RunOptions::default() };
        let r = run_heuristics(&spec, device, &o)?;
        calls = r.keys - r.skipped - r.duplicates;
    }
    let recorded = mmaemu_datasets::splitk_table::read_splitk_table(&table).map_err(|e| data("the table", e))?;
    let split_keys = recorded.rows.iter().filter(|r| r.decision.split_s > 1).count();
    st.end(calls, format!("{} rows, {split_keys} split", recorded.rows.len()), resumed);

    // 3. Instruction sweeps (and the held-out calls, recorded now, fitted never).
    st.begin("instruction");
    let (mut inst, mut calls, mut all_resumed) = (Vec::new(), 0, true);
    for (spec_name, text) in specs::instruction(name, opts.size) {
        let (f, n, r) = sweep(device, &work, &spec_name, &text, opts.quiet)?;
        inst.push(f);
        calls += n;
        all_resumed &= r;
    }
    st.end(calls, format!("{} recordings", inst.len()), all_resumed);
    st.begin("heldout");
    let (spec_name, text) = specs::heldout(name, opts.size);
    let (heldout, n, r) = sweep(device, &work, &spec_name, &text, opts.quiet)?;
    st.end(n, "recorded for the check only", r);

    // 4. Split sweeps from the table's split keys.
    st.begin("split");
    let mut split = Vec::new();
    let (mut calls, mut all_resumed) = (0, true);
    for (spec_name, text) in specs::split(name, &recorded, opts.size) {
        let (f, n, r) = sweep(device, &work, &spec_name, &text, opts.quiet)?;
        split.push(f);
        calls += n;
        all_resumed &= r;
    }
    let note = if split.is_empty() { "the table splits nothing" } else { "the table's split keys, layout unknown" };
    st.end(calls, note, all_resumed && !split.is_empty());

    // 5. The fits, and the experiments they design until one survivor is left or the budget is spent.
    let mut round = 0;
    let mut experiment_calls = 0usize;
    let mut designed = Vec::new();
    let (fitted, stop) = loop {
        st.begin(if round == 0 { "fit".to_string() } else { format!("refit {round}") }.as_str());
        let both: Vec<PathBuf> = inst.iter().chain(&split).cloned().collect();
        let fitted = fits::fit(&both, &split, evidence, &work).map_err(|e| data("fit", e))?;
        st.end(0, format!("preset {}", fitted.preset.verdict.name()), false);
        if fitted.preset_unique() && fitted.splitk_decided(&recorded) {
            break (fitted, "every fitted parameter has one survivor".to_string());
        }
        if opts.budget_minutes.is_some_and(|m| st.elapsed() > m * 60.0) {
            break (fitted, "the budget is spent".to_string());
        }
        let left = opts.max_experiment_calls.saturating_sub(experiment_calls);
        let exps = fits::experiments(&fitted, &recorded, left);
        if exps.is_empty() {
            break (fitted, "no experiment designed: the survivors stay".to_string());
        }
        round += 1;
        st.begin(&format!("experiments {round}"));
        let mut calls = 0;
        for (designer, e) in exps.iter().take(left) {
            let (spec_name, text) =
                specs::experiment(name, designed.len(), *designer, e, &recorded).map_err(|e| data("experiment", e))?;
            let (f, n, _) = sweep(device, &work, &spec_name, &text, opts.quiet)?;
            inst.push(f.clone());
            split.push(f);
            calls += n;
            experiment_calls += 1;
            designed.push(serde_json::json!({"round": round, "designer": designer.name(), "decides": e.decides,
                                              "spec": spec_name, "calls": n}));
        }
        st.end(calls, format!("{} designed call(s)", exps.len().min(left)), false);
    };

    // 6. The envelope, the bundle, the check.
    st.begin("bundle");
    let envelope_doc = work.join(format!("{name}-fitted-envelope.json"));
    let envelope = match recorded.rows.is_empty() {
        true => serde_json::json!({"error": "the heuristic answered no key: no table to fit"}),
        false => fits::envelope(&table, &envelope_doc).unwrap_or_else(|e| serde_json::json!({"error": e})),
    };
    std::fs::write(work.join(format!("{name}-envelope.json")), envelope.to_string()).map_err(|e| io(&work, e))?;
    let preset = work.join(format!("{name}-mma.toml"));
    let doc = fitted.preset_document(&format!("{name}-mma"));
    let rules = work.join(format!("{name}-rules.json"));
    std::fs::write(&rules, fitted.rules_json().to_string()).map_err(|e| io(&rules, e))?;
    let bundle = opts.out.join(name);
    let mut recordings: Vec<PathBuf> = inst.iter().chain(&split).cloned().collect();
    recordings.push(heldout.clone());
    recordings.sort();
    recordings.dedup();
    let built = match &doc {
        None => Err("the preset fit kept no survivor: no preset to build with".to_string()),
        Some(doc) => std::fs::write(&preset, doc).map_err(|e| e.to_string()).and_then(|_| {
            let with = (!recorded.rows.is_empty()).then(|| check::TableFiles {
                table: &table,
                rules: &rules,
                envelope: (envelope.get("error").is_none() && envelope_doc.is_file()).then_some(envelope_doc.as_path()),
            });
            check::build(name, with, &preset, &probe, &recordings, &bundle)
        }),
    };
    st.end(0, built.as_ref().err().cloned().unwrap_or_else(|| bundle.display().to_string()), false);
    st.begin("check");
    let checked = match &built {
        Ok(()) => check::check(&bundle).map_err(|e| data("check", e))?,
        Err(_) => check::Check::default(),
    };
    st.end(0, format!("{} passed, {} failed, {} skipped", checked.passed, checked.failed, checked.skipped), false);

    let report = report::json(&report::Inputs {
        name,
        platform: &platform.json,
        fits: &fitted,
        table: &recorded,
        stages: st.records(),
        total_calls: st.total_calls(),
        envelope: &envelope,
        experiments: &designed,
        stop: &stop,
        built: &built,
        check: &checked,
        bundle: &bundle,
        elapsed: st.elapsed(),
    });
    report::write(&opts.out, &report).map_err(|e| data("report", e))?;
    if !opts.quiet {
        eprintln!(
            "bring-up: {} device calls ({}), {:.1}s; check: {} passed, {} failed, {} skipped; wrote {}",
            st.total_calls(),
            st.records()
                .iter()
                .filter(|s| s.calls > 0)
                .map(|s| format!("{} {}", s.name, s.calls))
                .collect::<Vec<_>>()
                .join(", "),
            st.elapsed(),
            checked.passed,
            checked.failed,
            checked.skipped,
            opts.out.join("bring-up.json").display()
        );
        for (id, file, m) in checked.problems.iter().take(5) {
            eprintln!("bring-up: {id}: {m}; rerun: mmaemu replay {file} --profile {}", bundle.display());
        }
    }
    // A preset parameter still open passes the check (no recorded row tells its values apart) but the bundle computes
    // with one of them: said even when quiet.
    for d in open_params(&report) {
        let values: Vec<&str> = d["values"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
        eprintln!(
            "bring-up: warning: the preset's {} stays open ({}): the bundle computes with one of them, which no \
             recorded row tells from the others (bring-up.json gives why)",
            d["parameter"].as_str().unwrap_or("?"),
            values.join(", ")
        );
    }
    for c in open_customs(&report) {
        let rules: Vec<&str> = c["rules"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
        eprintln!(
            "bring-up: warning: {} keeps {} split rules ({}): the bundle computes with the first, and a call the \
             table routes there could tell them apart, which no recorded row does",
            c["label"].as_str().unwrap_or("?"),
            rules.len(),
            rules.join(", ")
        );
    }
    Ok(Outcome { report, check: checked, bundle })
}
