//! Recordings crafted from the shipped ones, for the tests of more than one crate (the harness's hostile
//! suite and the command's exit statuses).

use mmaemu_datasets::{read_recording, write_recording, Recording, Row};
use std::path::Path;

/// The rows of the gate recording at `gate` with M = 17, each given `split_s = 2` and `split_scheme =
/// unknown`, written to `out` with the gate's metadata: a file a replay counts as all skipped, none passed
/// (docs/recording-format.md). Returns the number of rows written.
pub fn unknown_split(gate: &Path, out: &Path) -> Result<usize, String> {
    let gate = read_recording(gate).map_err(|e| format!("{}: {e}", gate.display()))?;
    let rows: Vec<Row> = gate
        .rows
        .iter()
        .filter(|r| r.m == 17)
        .cloned()
        .map(|mut r| {
            r.split_s = Some(2);
            r.split_scheme = Some("unknown".into());
            r
        })
        .collect();
    if rows.is_empty() {
        return Err(format!("{}: no rows with M = 17", gate.path.display()));
    }
    let n = rows.len();
    let rec = Recording { path: out.to_path_buf(), meta: gate.meta, rows };
    write_recording(out, &rec).map_err(|e| format!("writing {}: {e}", out.display()))?;
    Ok(n)
}
