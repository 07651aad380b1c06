//! The stages of a bring-up as they run: one progress line as each starts and ends (elapsed time, device calls), and
//! their records (calls, seconds, resumed or not) kept in the work directory, so a resumed run reports the calls and
//! time of the stages an interrupted one finished.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One stage's record.
#[derive(Debug, Clone, PartialEq)]
pub struct StageRecord {
    /// The stage (`probe`, `grid`, `instruction`, ...).
    pub name: String,
    /// Device calls it made (heuristic queries for the grid, GEMM calls for sweeps).
    pub calls: u64,
    /// Seconds it took (the earlier run's, when resumed).
    pub seconds: f64,
    /// Whether an earlier run had finished it.
    pub resumed: bool,
    /// What it did, in words.
    pub note: String,
}

impl StageRecord {
    /// As bring-up.json lists it.
    pub fn to_json(&self) -> Value {
        json!({"stage": self.name, "calls": self.calls, "seconds": (self.seconds * 10.0).round() / 10.0,
               "resumed": self.resumed, "note": self.note})
    }
}

/// The stages of one run.
pub struct Stages {
    start: Instant,
    file: PathBuf,
    done: Vec<StageRecord>,
    earlier: Vec<StageRecord>,
    quiet: bool,
    current: Option<(String, Instant)>,
}

impl Stages {
    /// The stages of a run whose records live in `work/stages.json` (an earlier run's are read back).
    pub fn open(work: &Path, quiet: bool) -> Stages {
        let file = work.join("stages.json");
        let earlier = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|s| StageRecord {
                name: s["stage"].as_str().unwrap_or_default().to_string(),
                calls: s["calls"].as_u64().unwrap_or(0),
                seconds: s["seconds"].as_f64().unwrap_or(0.0),
                resumed: true,
                note: s["note"].as_str().unwrap_or_default().to_string(),
            })
            .collect();
        Stages { start: Instant::now(), file, done: Vec::new(), earlier, quiet, current: None }
    }

    /// Seconds since the run started.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Starts stage `name`: prints the progress line.
    pub fn begin(&mut self, name: &str) {
        if !self.quiet {
            eprintln!("bring-up [{:>7.1}s] {name} ...", self.elapsed());
        }
        self.current = Some((name.to_string(), Instant::now()));
    }

    /// The earlier run's record of `name`, if it finished that stage.
    pub fn earlier(&self, name: &str) -> Option<&StageRecord> {
        self.earlier.iter().find(|s| s.name == name)
    }

    /// Ends the current stage with its calls and note (or takes the earlier run's record when `resumed`).
    pub fn end(&mut self, calls: u64, note: impl Into<String>, resumed: bool) {
        let Some((name, began)) = self.current.take() else { return };
        let record = match (resumed, self.earlier(&name)) {
            (true, Some(e)) => e.clone(),
            _ => StageRecord { name, calls, seconds: began.elapsed().as_secs_f64(), resumed, note: note.into() },
        };
        if !self.quiet {
            eprintln!(
                "bring-up [{:>7.1}s] {}: {} device call(s), {:.1}s{}{}",
                self.elapsed(),
                record.name,
                record.calls,
                record.seconds,
                if record.resumed { " (finished by an earlier run)" } else { "" },
                if record.note.is_empty() { String::new() } else { format!(" - {}", record.note) }
            );
        }
        self.done.retain(|s| s.name != record.name);
        self.done.push(record);
        let list: Vec<Value> = self.done.iter().map(StageRecord::to_json).collect();
        // The records only serve a resumed run's report: a failed write loses nothing else.
        let _ = std::fs::write(&self.file, Value::Array(list).to_string());
    }

    /// Every stage's record, in order.
    pub fn records(&self) -> &[StageRecord] {
        &self.done
    }

    /// Device calls of all stages.
    pub fn total_calls(&self) -> u64 {
        self.done.iter().map(|s| s.calls).sum()
    }
}
