//! Replaying whole recording files: discovery, parallel replay of every row (rayon), per-file counts, and
//! the report that `mmaemu replay` prints (text or JSON).

use crate::call::{auto_split_under, AutoSplit};
use crate::replay::{replay_row_under, Failure, Verdict};
use crate::under::Under;
use mmaemu_datasets::{discover, read_recording, DatasetError, Row};
use mmaemu_model::{ChainEngine, ReferenceEngine};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// One failed row.
#[derive(Clone, Debug)]
pub struct RowFailure {
    /// Row id.
    pub id: String,
    /// What differs.
    pub failure: Failure,
}

/// One skipped row with the reason.
#[derive(Clone, Debug)]
pub struct RowSkip {
    /// Row id.
    pub id: String,
    /// Why it cannot be replayed.
    pub reason: String,
}

/// The replay of one file.
#[derive(Clone, Debug)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// Rows in the file.
    pub rows: usize,
    /// Rows that passed.
    pub passed: usize,
    /// Failed rows.
    pub failures: Vec<RowFailure>,
    /// Skipped rows.
    pub skips: Vec<RowSkip>,
    /// For the `scaled_mm` rows that decide a split: how `splitk = auto` compares with the recorded one
    /// (agrees, differs, unresolved).
    pub auto_split: (usize, usize, usize),
}

/// Replay every row of one file (rows in parallel); `progress` is called once per row.
pub fn replay_file(path: &Path, progress: &(dyn Fn() + Sync)) -> Result<FileReport, DatasetError> {
    Ok(replay_file_with(path, progress, |_, _| ())?.0)
}

/// [`replay_file`], also returning `per_row(row, outcome)` for every row, in file order.
pub fn replay_file_with<T: Send>(
    path: &Path,
    progress: &(dyn Fn() + Sync),
    per_row: impl Fn(&Row, &Verdict) -> T + Sync,
) -> Result<(FileReport, Vec<T>), DatasetError> {
    replay_file_on(path, progress, per_row, &ReferenceEngine)
}

/// [`replay_file_with`] with a chain engine computing the GEMMs (see [`crate::replay::replay_row_on`]).
pub fn replay_file_on<T: Send>(
    path: &Path,
    progress: &(dyn Fn() + Sync),
    per_row: impl Fn(&Row, &Verdict) -> T + Sync,
    engine: &dyn ChainEngine,
) -> Result<(FileReport, Vec<T>), DatasetError> {
    replay_file_under(path, progress, per_row, engine, &Under::own())
}

/// [`replay_file_on`] with every row under `under`'s platform (see [`Under`]).
pub fn replay_file_under<T: Send>(
    path: &Path,
    progress: &(dyn Fn() + Sync),
    per_row: impl Fn(&Row, &Verdict) -> T + Sync,
    engine: &dyn ChainEngine,
    under: &Under,
) -> Result<(FileReport, Vec<T>), DatasetError> {
    let rec = read_recording(path)?;
    let outcomes: Vec<(Verdict, AutoSplit, T)> = rec
        .rows
        .par_iter()
        .map(|row| {
            let o = replay_row_under(row, engine, under);
            let extra = per_row(row, &o);
            progress();
            (o, auto_split_under(row, under), extra)
        })
        .collect();
    let mut report = FileReport {
        path: path.to_path_buf(),
        rows: rec.rows.len(),
        passed: 0,
        failures: vec![],
        skips: vec![],
        auto_split: (0, 0, 0),
    };
    let mut extras = Vec::with_capacity(rec.rows.len());
    for (row, (o, auto, extra)) in rec.rows.iter().zip(outcomes) {
        extras.push(extra);
        match auto {
            AutoSplit::Agrees => report.auto_split.0 += 1,
            AutoSplit::Differs => report.auto_split.1 += 1,
            AutoSplit::Unresolved => report.auto_split.2 += 1,
            AutoSplit::NotApplicable => {}
        }
        match o {
            Verdict::Pass => report.passed += 1,
            Verdict::Fail(failure) => report.failures.push(RowFailure { id: row.id.clone(), failure }),
            Verdict::Skip(reason) => report.skips.push(RowSkip { id: row.id.clone(), reason }),
        }
    }
    Ok((report, extras))
}

/// The files named by `paths` (directories searched for `*.parquet`).
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, DatasetError> {
    discover(paths)
}

/// Totals over files: (passed, failed, skipped).
pub fn totals(reports: &[FileReport]) -> (usize, usize, usize) {
    reports.iter().fold((0, 0, 0), |(p, f, s), r| (p + r.passed, f + r.failures.len(), s + r.skips.len()))
}

/// The closing line: `N passed, M failed` with `, K skipped` when K > 0.
pub fn summary_line(passed: usize, failed: usize, skipped: usize) -> String {
    let mut s = format!("{passed} passed, {failed} failed");
    if skipped > 0 {
        s.push_str(&format!(", {skipped} skipped"));
    }
    s
}

/// The JSON report of `replay --json`.
pub fn json_report(reports: &[FileReport]) -> serde_json::Value {
    let (p, f, s) = totals(reports);
    serde_json::json!({
        "files": reports.iter().map(|r| serde_json::json!({
            "path": r.path.display().to_string(),
            "rows": r.rows,
            "passed": r.passed,
            "failed": r.failures.len(),
            "skipped": r.skips.len(),
            "failures": r.failures.iter().map(|x| x.id.clone()).collect::<Vec<_>>(),
            "auto_split": {"agrees": r.auto_split.0, "differs": r.auto_split.1, "unresolved": r.auto_split.2},
        })).collect::<Vec<_>>(),
        "passed": p,
        "failed": f,
        "skipped": s,
    })
}
