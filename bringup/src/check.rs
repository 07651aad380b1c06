//! The bundle a bring-up writes and its check: `platform build` (mmaemu_datasets) from the fitted preset, the table
//! with the fitted rules and every recording, then every recorded row replayed under the bundle's own profiles, as
//! `mmaemu platform check` replays them (the reference engine), without joining the process's catalogue.

use mmaemu_datasets::platform::{build_platform, load_platform, BuildSpec};
use mmaemu_harness::replay::{replay_row_under, Verdict};
use mmaemu_harness::Under;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// What replaying a bundle's recordings gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Check {
    /// Rows reproduced bit for bit (or their expected error).
    pub passed: u64,
    /// Rows that differ.
    pub failed: u64,
    /// Rows that could not be replayed.
    pub skipped: u64,
    /// The first failures and skips: (row id, file, message).
    pub problems: Vec<(String, String, String)>,
}

impl Check {
    /// Whether every recorded row replayed bit for bit.
    pub fn all_pass(&self) -> bool {
        self.failed == 0 && self.skipped == 0 && self.passed > 0
    }

    /// As bring-up.json lists it.
    pub fn to_json(&self, bundle: &Path) -> Value {
        json!({"passed": self.passed, "failed": self.failed, "skipped": self.skipped,
               "problems": self.problems.iter().map(|(id, file, m)| json!({"id": id, "file": file, "message": m,
                   "rerun": format!("mmaemu replay {file} --profile {}", bundle.display())})).collect::<Vec<_>>()})
    }
}

/// Problems kept for the report.
const PROBLEMS_KEPT: usize = 20;

/// The split-K side of a bundle: the recorded table, the fitted rules and the fitted envelope (if its fit succeeded).
pub struct TableFiles<'a> {
    /// The recorded table (its sidecar beside it).
    pub table: &'a Path,
    /// `mmaemu fit splitk --json` of the split rows.
    pub rules: &'a Path,
    /// `mmaemu fit envelope --out` of the table.
    pub envelope: Option<&'a Path>,
}

/// Builds the bundle `name` at `out` (replacing an earlier run's); `table` with the fitted rules and envelope, when
/// the heuristic answered any key.
pub fn build(
    name: &str,
    table: Option<TableFiles<'_>>,
    preset: &Path,
    probe: &Path,
    recordings: &[PathBuf],
    out: &Path,
) -> Result<(), String> {
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let spec = BuildSpec {
        name: name.to_string(),
        table: table.as_ref().map(|t| t.table.to_path_buf()),
        preset: preset.display().to_string(),
        rules: table.as_ref().map(|t| t.rules.to_path_buf()),
        envelope: table.as_ref().and_then(|t| t.envelope.map(Path::to_path_buf)),
        probe: Some(probe.to_path_buf()),
        profile: name.to_string(),
        caller: "torch._scaled_mm".into(),
        workspace: crate::specs::WORKSPACE,
        recordings: recordings.to_vec(),
    };
    build_platform(&spec, out).map(|_| ()).map_err(|e| e.to_string())
}

/// Replays every recording of the bundle at `dir` under its profiles.
pub fn check(dir: &Path) -> Result<Check, String> {
    let platform = load_platform(dir).map_err(|e| e.to_string())?;
    let under = Under::profiles(platform.profiles.clone());
    let engine = mmaemu_api::registry().resolve("reference").map_err(|e| e.to_string())?.engine;
    let mut c = Check::default();
    let mut files: Vec<&String> = platform.files.keys().filter(|f| platform.is_recording(f)).collect();
    files.sort();
    for f in files {
        let path = dir.join(f);
        let rec = mmaemu_datasets::read_recording(&path).map_err(|e| e.to_string())?;
        for row in &rec.rows {
            let v = replay_row_under(row, engine, &under);
            match &v {
                Verdict::Pass => c.passed += 1,
                Verdict::Fail(_) => c.failed += 1,
                Verdict::Skip(_) => c.skipped += 1,
            }
            if let (Some(m), true) = (v.message(), c.problems.len() < PROBLEMS_KEPT) {
                c.problems.push((row.id.clone(), path.display().to_string(), format!("{}: {m}", v.name())));
            }
        }
    }
    Ok(c)
}
