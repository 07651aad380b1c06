//! `mmaemu report`: one run of everything that says how well mmaemu does, written as `report.json` (a stable schema,
//! docs/report-schema.md), `report.md` and a self-contained `report.html` with inline SVG plots — and, given the
//! previous run's `report.json`, every change since then.

// A report:
// 1. replays every recording (default `datasets/recordings`) through every available backend (`backends::available`):
//    per row pass / fail / skip, per file and backend the counts;
// 2. computes the validated / experimental / failing status per preset, profile and feature (`mmaemu_harness::status`)
//    from the reference replay;
// 3. runs the fixed-seed differential fuzz (`fuzz`);
// 4. runs the benchmarks (`throughput`);
// 5. with `--baseline PREV.json`, lists every change (`diff`): a row newly failing or passing (or skipped, new,
//    removed), a status change, a fuzz check failing more, a throughput change beyond 10 %; and carries the baseline's
//    history forward (the HTML plots it).
//
// Exit codes: 0 written, nothing regressed; 1 written, and something regressed against the baseline (without a
// baseline: a row fails or a fuzz check fails); 2 unreadable input, baseline or unwritable output directory. A
// regression is a row newly failing, a row that passed and is now skipped, a status that was `validated` and is no
// longer, or a fuzz check with more failures; a throughput drop beyond 10 % is listed, and counts as a regression only
// with `--fail-on-slowdown` (timings on shared machines are noisy).

pub mod backends;
pub mod diff;
pub mod fuzz;
pub mod render;
pub mod throughput;

use backends::Backend;
use mmaemu_datasets::{discover, read_recording, DatasetError, Row};
use mmaemu_harness::replay::Verdict;
use mmaemu_harness::status::{self, RowFacts, StatusReport};
use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The `schema` value of report.json.
pub const SCHEMA: &str = "mmaemu-report/1";

/// How many history points a report keeps.
pub const MAX_HISTORY: usize = 90;

/// The relative throughput change a report lists.
pub const THROUGHPUT_THRESHOLD: f64 = 0.10;

/// What a report covers and where it goes.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Directory to write report.json, report.md and report.html into (created if needed).
    pub out: PathBuf,
    /// A previous report.json: list every change since, exit 1 on a regression.
    pub baseline: Option<PathBuf>,
    /// Seed of the differential fuzz.
    pub fuzz_seed: u64,
    /// Cases per fuzz check (0: skip the fuzz).
    pub fuzz_cases: usize,
    /// Skip the benchmarks.
    pub no_bench: bool,
    /// Timed repetitions per benchmark (after one warm-up; the best counts).
    pub bench_reps: usize,
    /// Count a throughput drop beyond 10 % as a regression.
    pub fail_on_slowdown: bool,
    /// Recording files or directories (default: datasets/recordings).
    pub paths: Vec<PathBuf>,
}

impl ReportOptions {
    /// The options with defaults for everything but the output directory.
    pub fn new(out: PathBuf) -> ReportOptions {
        ReportOptions {
            out,
            baseline: None,
            fuzz_seed: fuzz::DEFAULT_SEED,
            fuzz_cases: fuzz::DEFAULT_CASES,
            no_bench: false,
            bench_reps: 3,
            fail_on_slowdown: false,
            paths: vec![],
        }
    }
}

/// Why a report could not be made (exit code 2).
#[derive(Debug)]
pub enum ReportError {
    /// A recording could not be found or read.
    Dataset(DatasetError),
    /// The baseline could not be read or is not a report.
    Baseline { path: PathBuf, detail: String },
    /// The output could not be written.
    Write { path: PathBuf, detail: String },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Dataset(e) => e.fmt(f),
            ReportError::Baseline { path, detail } => write!(f, "baseline {}: {detail}", path.display()),
            ReportError::Write { path, detail } => write!(f, "cannot write {}: {detail}", path.display()),
        }
    }
}

impl std::error::Error for ReportError {}

/// One row's outcome on one backend.
/// One recorded row and its outcome on every backend.
#[derive(Clone, Debug, PartialEq)]
pub struct RowResult {
    /// The recording's file name.
    pub file: String,
    /// Row id.
    pub id: String,
    /// The row's op (`mma`, `accumulator`, `gemm`, `scaled_mm`).
    pub op: String,
    /// The row's preset.
    pub preset: String,
    /// The row's profile, for rows of a profile.
    pub profile: Option<String>,
    /// `hardware` or `model`.
    pub truth: String,
    /// backend -> verdict.
    pub outcomes: BTreeMap<String, Verdict>,
}

/// One backend's replay totals.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendSummary {
    /// The backend's name (`reference`, `cpu:avx2`, ...).
    pub name: String,
    /// What it is.
    pub description: String,
    /// Rows replayed.
    pub rows: usize,
    /// Rows that passed.
    pub passed: usize,
    /// Rows that failed.
    pub failed: usize,
    /// Rows that could not be replayed.
    pub skipped: usize,
    /// Wall seconds of the replay.
    pub seconds: f64,
    /// Per file: (file, rows, passed, failed, skipped).
    pub files: Vec<(String, usize, usize, usize, usize)>,
}

/// One point of the history: a past (or this) report's headline numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryPoint {
    /// When the report was made (RFC 3339 UTC).
    pub generated: String,
    /// Reference rows passed / failed / skipped.
    pub passed: usize,
    /// Rows that failed on some backend.
    pub failed: usize,
    /// Rows that were skipped.
    pub skipped: usize,
    /// Fuzz failures.
    pub fuzz_failures: usize,
    /// `shape | backend` -> MAC/s.
    pub throughput: BTreeMap<String, f64>,
}

impl HistoryPoint {
    fn json(&self) -> Value {
        json!({
            "generated": self.generated, "passed": self.passed, "failed": self.failed, "skipped": self.skipped,
            "fuzz_failures": self.fuzz_failures, "throughput": self.throughput,
        })
    }
    fn from_json(v: &Value) -> Option<HistoryPoint> {
        Some(HistoryPoint {
            generated: v.get("generated")?.as_str()?.to_string(),
            passed: v.get("passed")?.as_u64()? as usize,
            failed: v.get("failed")?.as_u64()? as usize,
            skipped: v.get("skipped")?.as_u64()? as usize,
            fuzz_failures: v.get("fuzz_failures").and_then(Value::as_u64).unwrap_or(0) as usize,
            throughput: v
                .get("throughput")
                .and_then(Value::as_object)
                .map(|o| o.iter().filter_map(|(k, x)| Some((k.clone(), x.as_f64()?))).collect())
                .unwrap_or_default(),
        })
    }
}

/// A whole report.
#[derive(Clone, Debug)]
pub struct Report {
    /// UTC time, RFC 3339.
    pub generated: String,
    /// The recording inputs.
    pub inputs: Vec<String>,
    /// Per backend totals.
    pub backends: Vec<BackendSummary>,
    /// Every row.
    pub rows: Vec<RowResult>,
    /// The status (reference replay).
    pub status: StatusReport,
    /// The fuzz (None: not run).
    pub fuzz: Option<fuzz::FuzzReport>,
    /// The benchmarks (empty: not run).
    pub bench: Vec<throughput::Measurement>,
    /// Past points then this one (oldest first).
    pub history: Vec<HistoryPoint>,
    /// The comparison with the baseline.
    pub diff: Option<diff::Diff>,
}

impl Report {
    /// The reference backend's totals.
    pub fn reference(&self) -> Option<&BackendSummary> {
        self.backends.iter().find(|b| b.name == "reference").or(self.backends.first())
    }

    /// This report's history point.
    pub fn point(&self) -> HistoryPoint {
        let r = self.reference();
        HistoryPoint {
            generated: self.generated.clone(),
            passed: r.map_or(0, |b| b.passed),
            failed: r.map_or(0, |b| b.failed),
            skipped: r.map_or(0, |b| b.skipped),
            fuzz_failures: self.fuzz.as_ref().map_or(0, |f| f.failures()),
            throughput: self.bench.iter().map(|m| (format!("{} | {}", m.shape, m.backend), m.macs_per_s)).collect(),
        }
    }

    /// Did anything regress (against the baseline; without one, does anything fail)?
    pub fn regressed(&self) -> bool {
        match &self.diff {
            Some(d) => d.regressions() > 0,
            None => self.backends.iter().any(|b| b.failed > 0) || self.fuzz.as_ref().is_some_and(|f| f.failures() > 0),
        }
    }

    /// Per recording: its row ids in file order and, per backend, one letter per row (`p` pass, `f`
    /// fail, `s` skip).
    fn recordings_json(&self) -> Value {
        let mut files: Vec<(&str, Vec<&RowResult>)> = Vec::new();
        for r in &self.rows {
            match files.last_mut() {
                Some((f, rows)) if *f == r.file => rows.push(r),
                _ => files.push((&r.file, vec![r])),
            }
        }
        Value::Array(
            files
                .into_iter()
                .map(|(file, rows)| {
                    let outcomes: serde_json::Map<String, Value> = self
                        .backends
                        .iter()
                        .map(|b| {
                            let letters: String = rows
                                .iter()
                                .map(|r| match r.outcomes.get(&b.name).map(Verdict::name) {
                                    Some("pass") => 'p',
                                    Some("fail") => 'f',
                                    _ => 's',
                                })
                                .collect();
                            (b.name.clone(), Value::String(letters))
                        })
                        .collect();
                    json!({
                        "file": file,
                        "rows": rows.len(),
                        "ids": rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
                        "outcomes": outcomes,
                    })
                })
                .collect(),
        )
    }

    /// report.json (docs/report-schema.md).
    pub fn json(&self) -> Value {
        json!({
            "schema": SCHEMA,
            "generated": self.generated,
            "mmaemu_version": env!("CARGO_PKG_VERSION"),
            "commit": std::env::var("MMAEMU_GIT_COMMIT").or_else(|_| std::env::var("GITHUB_SHA")).ok(),
            "host": {
                "os": std::env::consts::OS,
                "arch": std::env::consts::ARCH,
                "threads": rayon::current_num_threads(),
            },
            "inputs": self.inputs,
            "backends": self.backends.iter().map(|b| json!({
                "name": b.name,
                "description": b.description,
                "rows": b.rows,
                "passed": b.passed,
                "failed": b.failed,
                "skipped": b.skipped,
                "seconds": b.seconds,
                "files": b.files.iter().map(|(f, r, p, x, s)| json!({
                    "file": f, "rows": r, "passed": p, "failed": x, "skipped": s,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "recordings": self.recordings_json(),
            "problems": self.rows.iter().flat_map(|r| r.outcomes.iter().filter(|(_, o)| !matches!(o, Verdict::Pass)).map(
                move |(b, o)| json!({
                    "backend": b, "file": r.file, "id": r.id, "op": r.op, "preset": r.preset, "profile": r.profile,
                    "truth": r.truth, "outcome": o.name(), "message": o.message(),
                }),
            )).collect::<Vec<_>>(),
            "status": status::json(&self.status),
            "fuzz": self.fuzz.as_ref().map(fuzz::FuzzReport::json),
            "bench": {
                "threshold": THROUGHPUT_THRESHOLD,
                "measurements": self.bench.iter().map(throughput::Measurement::json).collect::<Vec<_>>(),
            },
            "history": self.history.iter().map(HistoryPoint::json).collect::<Vec<_>>(),
            "baseline": self.diff.as_ref().map(diff::Diff::json),
            "regressed": self.regressed(),
        })
    }
}

/// The file names of the recordings, for row keys: the base name, or the whole path where two files
/// share a base name.
fn file_names(files: &[PathBuf]) -> Vec<String> {
    let base = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for f in files {
        *count.entry(base(f)).or_default() += 1;
    }
    files.iter().map(|f| if count[&base(f)] > 1 { f.display().to_string() } else { base(f) }).collect()
}

/// What replaying gives: per backend totals, every row's outcomes, the reference replay's status facts.
type Replayed = (Vec<BackendSummary>, Vec<RowResult>, Vec<RowFacts>);

/// Replay every file through every backend.
fn replay_all(files: &[PathBuf], backends: &[Box<dyn Backend>]) -> Result<Replayed, ReportError> {
    let names = file_names(files);
    let mut recordings: Vec<(String, Vec<Row>)> = Vec::new();
    for (f, name) in files.iter().zip(&names) {
        let rec = read_recording(f).map_err(ReportError::Dataset)?;
        recordings.push((name.clone(), rec.rows));
    }
    let mut rows: Vec<RowResult> = recordings
        .iter()
        .flat_map(|(file, rows)| {
            rows.iter().map(move |r| RowResult {
                file: file.clone(),
                id: r.id.clone(),
                op: r.op.as_str().to_string(),
                preset: r.preset.clone(),
                profile: r.profile.clone(),
                truth: r.truth.as_str().to_string(),
                outcomes: BTreeMap::new(),
            })
        })
        .collect();
    let mut summaries = Vec::new();
    let mut facts = Vec::new();
    for be in backends {
        let start = Instant::now();
        let outcomes: Vec<Verdict> =
            recordings.iter().flat_map(|(_, rows)| rows.par_iter().map(|r| be.replay(r)).collect::<Vec<_>>()).collect();
        let seconds = start.elapsed().as_secs_f64();
        let mut s = BackendSummary {
            name: be.name(),
            description: be.describe(),
            rows: outcomes.len(),
            passed: 0,
            failed: 0,
            skipped: 0,
            seconds,
            files: vec![],
        };
        let mut i = 0;
        for (file, recs) in &recordings {
            let (mut p, mut x, mut k) = (0, 0, 0);
            for r in recs {
                let o = &outcomes[i];
                match o {
                    Verdict::Pass => p += 1,
                    Verdict::Fail(_) => x += 1,
                    Verdict::Skip(_) => k += 1,
                }
                if be.is_reference() {
                    facts.push(status::facts(r, o));
                }
                rows[i].outcomes.insert(s.name.clone(), o.clone());
                i += 1;
            }
            s.files.push((file.clone(), recs.len(), p, x, k));
            s.passed += p;
            s.failed += x;
            s.skipped += k;
        }
        summaries.push(s);
    }
    Ok((summaries, rows, facts))
}

/// The history point of a report.json without a history: its reference totals, fuzz failures and
/// benchmarks.
fn point_of(v: &Value) -> Option<HistoryPoint> {
    let backends = v.get("backends")?.as_array()?;
    let r = backends.iter().find(|b| b.get("name").and_then(Value::as_str) == Some("reference"))?;
    let n = |x: &Value, k: &str| x.get(k).and_then(Value::as_u64).unwrap_or(0) as usize;
    Some(HistoryPoint {
        generated: v.get("generated").and_then(Value::as_str).unwrap_or("").to_string(),
        passed: n(r, "passed"),
        failed: n(r, "failed"),
        skipped: n(r, "skipped"),
        fuzz_failures: v.get("fuzz").map_or(0, |f| n(f, "failures")),
        throughput: diff::throughput_of(v),
    })
}

/// The largest baseline read (a report of the shipped data is well under 10 MiB).
pub const MAX_BASELINE_BYTES: u64 = 256 << 20;

/// Read a baseline report.json: a regular file of at most [`MAX_BASELINE_BYTES`], checked against the
/// schema ([`validate_baseline`]) so that a damaged baseline cannot switch the regression gate off.
pub fn read_baseline(path: &Path) -> Result<Value, ReportError> {
    use std::io::Read;
    let bad = |detail: String| ReportError::Baseline { path: path.to_path_buf(), detail };
    let file = mmaemu_datasets::open_regular(path).map_err(|e| bad(e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_BASELINE_BYTES + 1).read_to_string(&mut text).map_err(|e| bad(e.to_string()))?;
    if text.len() as u64 > MAX_BASELINE_BYTES {
        return Err(bad(format!("larger than {MAX_BASELINE_BYTES} bytes")));
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    validate_baseline(&v).map_err(bad)?;
    Ok(v)
}

/// Check what the baseline comparison reads against docs/report-schema.md: the schema string, every
/// top-level key, and the recordings, status, fuzz, bench and history entries with their types (row
/// outcomes one letter `p`, `f` or `s` per id). Keys the schema does not name are allowed.
pub fn validate_baseline(v: &Value) -> Result<(), String> {
    fn field<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a Value, String> {
        v.get(key).ok_or_else(|| format!("{at}: `{key}` is missing"))
    }
    fn array<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a Vec<Value>, String> {
        field(v, key, at)?.as_array().ok_or_else(|| format!("{at}: `{key}` is not an array"))
    }
    fn string<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a str, String> {
        field(v, key, at)?.as_str().ok_or_else(|| format!("{at}: `{key}` is not a string"))
    }
    fn number(v: &Value, key: &str, at: &str) -> Result<f64, String> {
        field(v, key, at)?.as_f64().ok_or_else(|| format!("{at}: `{key}` is not a number"))
    }
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    match v.get("schema").and_then(Value::as_str) {
        Some(SCHEMA) => {}
        Some(other) => return Err(format!("schema is \"{other}\", expected \"{SCHEMA}\"")),
        None => return Err(format!("no \"schema\" string, expected \"{SCHEMA}\"")),
    }
    for key in ["generated", "mmaemu_version", "host", "inputs", "backends", "problems", "fuzz", "bench", "regressed"] {
        field(v, key, "report")?;
    }
    for (i, b) in array(v, "backends", "report")?.iter().enumerate() {
        let at = format!("backends[{i}]");
        string(b, "name", &at)?;
        for key in ["rows", "passed", "failed", "skipped"] {
            number(b, key, &at)?;
        }
    }
    for (i, r) in array(v, "recordings", "report")?.iter().enumerate() {
        let at = format!("recordings[{i}]");
        string(r, "file", &at)?;
        let ids = array(r, "ids", &at)?;
        if ids.iter().any(|id| !id.is_string()) {
            return Err(format!("{at}: `ids` holds a non-string"));
        }
        let outcomes =
            field(r, "outcomes", &at)?.as_object().ok_or_else(|| format!("{at}: `outcomes` is not an object"))?;
        for (backend, letters) in outcomes {
            let letters = letters.as_str().ok_or_else(|| format!("{at}: outcomes of {backend} are not a string"))?;
            if letters.chars().count() != ids.len() || letters.chars().any(|c| !matches!(c, 'p' | 'f' | 's')) {
                return Err(format!("{at}: outcomes of {backend} are not one of p, f, s per id ({} ids)", ids.len()));
            }
        }
    }
    let status = field(v, "status", "report")?;
    for (i, scope) in array(status, "scopes", "status")?.iter().enumerate() {
        let at = format!("status.scopes[{i}]");
        for key in ["kind", "name", "status"] {
            string(scope, key, &at)?;
        }
        for (j, f) in array(scope, "features", &at)?.iter().enumerate() {
            let at = format!("{at}.features[{j}]");
            string(f, "label", &at)?;
            string(f, "status", &at)?;
        }
    }
    if let Some(fuzz) = v.get("fuzz").filter(|f| !f.is_null()) {
        for (i, c) in array(fuzz, "checks", "fuzz")?.iter().enumerate() {
            let at = format!("fuzz.checks[{i}]");
            string(c, "name", &at)?;
            number(c, "failures", &at)?;
        }
    }
    for (i, m) in array(field(v, "bench", "report")?, "measurements", "bench")?.iter().enumerate() {
        let at = format!("bench.measurements[{i}]");
        string(m, "shape", &at)?;
        string(m, "backend", &at)?;
        number(m, "macs_per_s", &at)?;
    }
    for (i, h) in array(v, "history", "report")?.iter().enumerate() {
        string(h, "generated", &format!("history[{i}]"))?;
    }
    Ok(())
}

/// Make a report (nothing is written).
pub fn make(args: &ReportOptions, progress: &dyn Fn(&str)) -> Result<Report, ReportError> {
    let baseline = args.baseline.as_deref().map(read_baseline).transpose()?;
    let paths = if args.paths.is_empty() { vec![PathBuf::from("datasets/recordings")] } else { args.paths.clone() };
    let files = discover(&paths).map_err(ReportError::Dataset)?;
    let backends = backends::available();
    progress(&format!(
        "replaying {} recordings through {} backend(s): {}",
        files.len(),
        backends.len(),
        backends.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ")
    ));
    let (summaries, rows, facts) = replay_all(&files, &backends)?;
    let status = status::compute(&facts);
    let fuzz = (args.fuzz_cases > 0).then(|| {
        progress(&format!("fuzz: {} cases per check, seed {:#x}", args.fuzz_cases, args.fuzz_seed));
        fuzz::run(args.fuzz_seed, args.fuzz_cases, &backends)
    });
    let bench = if args.no_bench {
        vec![]
    } else {
        progress(&format!("benchmarks: {} shapes", throughput::shapes().len()));
        throughput::run(&backends, args.bench_reps)
    };
    let mut report = Report {
        generated: mmaemu_datasets::digest::now_rfc3339(),
        inputs: paths.iter().map(|p| p.display().to_string()).collect(),
        backends: summaries,
        rows,
        status,
        fuzz,
        bench,
        history: vec![],
        diff: None,
    };
    if let Some(base) = &baseline {
        let mut history: Vec<HistoryPoint> = base
            .get("history")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(HistoryPoint::from_json).collect())
            .unwrap_or_default();
        // The baseline's own point is the last of its history; a baseline without one gets its point from
        // its totals.
        if history.is_empty() {
            history.extend(point_of(base));
        }
        report.history = history;
        report.diff = Some(diff::compare(base, &report, args.fail_on_slowdown, args.baseline.as_deref()));
    }
    report.history.push(report.point());
    if report.history.len() > MAX_HISTORY {
        let drop = report.history.len() - MAX_HISTORY;
        report.history.drain(..drop);
    }
    Ok(report)
}

/// Write report.json, report.md and report.html into `dir`.
pub fn write(report: &Report, dir: &Path) -> Result<(), ReportError> {
    let err = |path: &Path, e: std::io::Error| ReportError::Write { path: path.to_path_buf(), detail: e.to_string() };
    std::fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
    let json = serde_json::to_string_pretty(&report.json()).unwrap_or_default();
    for (name, text) in
        [("report.json", json + "\n"), ("report.md", render::markdown(report)), ("report.html", render::html(report))]
    {
        let path = dir.join(name);
        mmaemu_datasets::write_file_atomic(&path, text.as_bytes())
            .map_err(|e| ReportError::Write { path: path.clone(), detail: e.to_string() })?;
    }
    Ok(())
}
