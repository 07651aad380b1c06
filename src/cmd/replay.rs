//! `mmaemu replay` and `mmaemu status`: recordings through `mmaemu_harness` (one replay path), printed
//! as per-file lines, failures, the status table and the closing `N passed, M failed` line, or as JSON.

use super::{CommandError, CommandResult, Exit};
use indicatif::{ProgressBar, ProgressStyle};
use mmaemu_api::registry::registry;
use mmaemu_harness::files::{files, json_report, replay_file_under, summary_line, totals, FileReport};
use mmaemu_harness::status;
use mmaemu_harness::Under;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

/// What to print: the per-file lines and the verdict (`replay`), those and the status table
/// (`replay --status`), or the status table and the closing line (`status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Per-file lines, failures, the verdict, closing line.
    Files,
    /// Per-file lines, failures, status table, the verdict, closing line.
    Everything,
    /// Status table and closing line.
    StatusOnly,
    /// `platform check DIR`: the status table, every failing row with the command that reruns it under the bundle
    /// (`mmaemu replay FILE --profile DIR#PROFILE`), and the closing line.
    Check,
}

/// Replay `paths` with the backend `backend`. A file that cannot be read is reported and the others still
/// replay (exit 2 at the end); a failing row exits 1, and so does a file whose rows were all skipped
/// (nothing in it was verified) unless `allow_skips`; no rows at all is bad input (exit 2).
pub fn run(
    json: bool,
    paths: &[PathBuf],
    scope: Scope,
    backend: &str,
    allow_skips: bool,
    under: &Under,
) -> CommandResult {
    let engine = registry().resolve(backend).map_err(|e| CommandError::bad_input(format!("--backend: {e}")))?.engine;
    if backend != "reference" {
        eprintln!("mmaemu replay: backend {}", engine.name());
    }
    let list = files(paths).map_err(CommandError::bad_input)?;
    let bar = (std::io::stderr().is_terminal() && !json).then(|| {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} rows ({eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    });
    let mut reports: Vec<FileReport> = Vec::new();
    let mut facts = Vec::new();
    // (file, row id) -> the profile a failing row replayed under, for its rerun command.
    let mut failed_under: BTreeMap<(PathBuf, String), String> = BTreeMap::new();
    let mut errors = Vec::new();
    for path in &list {
        if let Some(b) = &bar {
            b.set_message(path.display().to_string());
        }
        let tick = || {
            if let Some(b) = &bar {
                b.inc(1);
            }
        };
        let per_row = |row: &mmaemu_datasets::Row, v: &mmaemu_harness::replay::Verdict| {
            let profile = matches!(v, mmaemu_harness::replay::Verdict::Fail(_))
                .then(|| under.names(row).1)
                .flatten()
                .map(|p| (row.id.clone(), p));
            (status::facts_under(row, v, under), profile)
        };
        match replay_file_under(path, &tick, per_row, engine, under) {
            Ok((r, f)) => {
                reports.push(r);
                for (fact, profile) in f {
                    facts.push(fact);
                    if let Some((id, p)) = profile {
                        failed_under.insert((path.clone(), id), p);
                    }
                }
            }
            Err(e) => errors.push(e),
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    // A GPU engine computes a call on the CPU (same bits) when a launch fails: say so, with the first reason.
    if engine.name().starts_with("cuda") {
        let fell_back = registry().gpu(0).warnings();
        if let Some(first) = fell_back.first() {
            eprintln!(
                "mmaemu replay: BackendFallbackWarning: {} call(s) ran on the CPU; first: {first}",
                fell_back.len()
            );
        }
    }
    // One unreadable file alone is the command's error; among several, each is named and the others count.
    let lone = errors.len() == 1 && list.len() == 1;
    for e in errors.iter().filter(|_| !lone) {
        eprintln!("mmaemu replay: {e}");
    }
    let (passed, failed, skipped) = totals(&reports);
    let unverified: Vec<&FileReport> = reports.iter().filter(|r| r.rows > 0 && r.skips.len() == r.rows).collect();
    let mut status = status::compute(&facts);
    if !under.is_own() {
        // Under one platform, the table is that platform's: the scopes its rows counted for.
        status.scopes.retain(|s| s.counts.hardware + s.counts.model > 0);
    }
    if json {
        let mut report = match scope {
            Scope::Everything | Scope::Files => json_report(&reports),
            Scope::StatusOnly => serde_json::json!({"passed": passed, "failed": failed, "skipped": skipped}),
            Scope::Check => serde_json::json!({"passed": passed, "failed": failed, "skipped": skipped,
                "failures": failures_to_rerun(&reports, &failed_under, under).iter().map(|(f, id, failure, rerun)| {
                    serde_json::json!({"file": f.display().to_string(), "id": id, "failure": failure, "rerun": rerun})
                }).collect::<Vec<_>>()}),
        };
        report["status"] = status::json(&status);
        report["errors"] = errors
            .iter()
            .map(|e| serde_json::json!({"path": e.path().display().to_string(), "error": e.to_string()}))
            .collect();
        println!("{report}");
    } else {
        match scope {
            Scope::Files | Scope::Everything => print!("{}", file_lines(&reports)),
            Scope::Check => {
                for (file, id, failure, rerun) in failures_to_rerun(&reports, &failed_under, under) {
                    println!("FAIL {}: {id}: {failure}\n  rerun: {rerun}", file.display());
                }
            }
            Scope::StatusOnly => {}
        }
        // The status table (under its heading) and the verdict come before the closing line, which stays
        // the last line.
        if scope != Scope::Files {
            println!("\n== status table ==");
            print!("{}", status::text(&status));
            println!();
        }
        if matches!(scope, Scope::Files | Scope::Everything) {
            println!("{}", verdict(passed, failed, skipped, errors.len(), scope == Scope::Files));
        }
        println!("{}", summary_line(passed, failed, skipped));
    }
    if lone {
        return Err(CommandError::bad_input(&errors[0]));
    }
    if !errors.is_empty() {
        return Err(CommandError::bad_input(format!("{} of {} files could not be replayed", errors.len(), list.len())));
    }
    if passed + failed + skipped == 0 {
        return Err(CommandError::bad_input("the recordings hold no rows: nothing was verified"));
    }
    if !unverified.is_empty() && !allow_skips && failed == 0 {
        for r in &unverified {
            eprintln!("mmaemu replay: {}: every row was skipped, nothing in it was verified", r.path.display());
        }
        eprintln!("mmaemu replay: --allow-skips accepts files whose rows were all skipped");
        return Ok(Exit::Failed);
    }
    Ok(Exit::failed_if(failed > 0))
}

/// What rows replay under: their own profiles, or the one `--profile` names (a bundle's `PATH[#NAME]` was turned
/// into its name when the bundle was registered).
pub fn under(profile: Option<String>) -> Result<Under, CommandError> {
    match profile {
        None => Ok(Under::own()),
        Some(name) => mmaemu_api::catalogue()
            .profile(&name)
            .map(|p| Under::profiles(vec![p]))
            .map_err(|e| CommandError::bad_input(format!("--profile: {e}"))),
    }
}

/// Every failing row of a bundle's check: (file, row id, what differs, the command that reruns it under the bundle's
/// profile it replayed under).
fn failures_to_rerun(
    reports: &[FileReport],
    failed_under: &BTreeMap<(PathBuf, String), String>,
    under: &Under,
) -> Vec<(PathBuf, String, String, String)> {
    let mut out = Vec::new();
    for r in reports {
        for f in &r.failures {
            let profile = failed_under.get(&(r.path.clone(), f.id.clone()));
            let bundle = under.bundle().map(|d| d.display().to_string());
            let flag = match (bundle, profile) {
                (Some(dir), Some(p)) => format!(" --profile {dir}#{p}"),
                (Some(dir), None) => format!(" --profile {dir}"),
                (None, _) => String::new(),
            };
            let rerun = format!("mmaemu replay {}{flag}", r.path.display());
            out.push((r.path.clone(), f.id.clone(), f.failure.to_string(), rerun));
        }
    }
    out
}

/// The verdict a person reads first: did every verified row give the hardware's bits.
fn verdict(passed: usize, failed: usize, skipped: usize, unreadable: usize, table_hidden: bool) -> String {
    let mut v = if failed == 0 && unreadable == 0 && passed > 0 {
        format!("verdict: OK, all {passed} verified rows give the recorded bits")
    } else if failed > 0 {
        format!(
            "verdict: FAILED, {failed} of {} verified rows differ from the recorded bits (FAIL lines above)",
            passed + failed
        )
    } else {
        "verdict: NOT VERIFIED, no row could be compared".to_string()
    };
    if skipped > 0 {
        v += &format!("; {skipped} rows skipped (reasons above)");
    }
    if unreadable > 0 {
        v += &format!("; {unreadable} files unreadable");
    }
    if table_hidden {
        v += "; the status table per preset and profile: --status";
    }
    v
}

/// One line per file with its skip reasons and the split-K information, then every failing row.
fn file_lines(reports: &[FileReport]) -> String {
    let mut s = String::new();
    for r in reports {
        s += &format!(
            "{}: {} rows, {} passed, {} failed, {} skipped\n",
            r.path.display(),
            r.rows,
            r.passed,
            r.failures.len(),
            r.skips.len()
        );
        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        for skip in &r.skips {
            *reasons.entry(skip.reason.as_str()).or_default() += 1;
        }
        for (reason, n) in reasons {
            s += &format!("  skipped {n}: {reason}\n");
        }
        let (agree, differ, unresolved) = r.auto_split;
        if agree + differ + unresolved > 0 {
            s += &format!(
                "  splitk=auto vs the recorded split (information): {agree} agree, {differ} differ, {unresolved} \
                 unresolved\n"
            );
        }
    }
    for r in reports {
        for f in &r.failures {
            s += &format!("FAIL {}: {}: {}\n", r.path.display(), f.id, f.failure);
        }
    }
    s
}
