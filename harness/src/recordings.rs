//! One trial per recorded row: discovery of the recordings, stable trial names, the replay of one row and the report of
//! a failing row.

// A trial is named `<file stem>/<op>/<origin>`, where `<origin>` is the head of the row's `origin` column
// (`short_origin`). Names are unique: rows of one file whose names would coincide all get ` #<row id>` appended (ids
// are unique within a file), and files whose stems coincide get `~2`, `~3`, ... in discovery order. Names depend only
// on the files, so they are stable from run to run.
//
// The trial list is built once from every file (reading all shipped recordings takes about 2 s); each trial holds its
// row behind an `Arc` and replays it only when it runs, with exactly the semantics of `mmaemu replay`
// (`replay::compute` then `replay::judge`). A row the replay cannot handle (`Verdict::Skip`) becomes an ignored trial
// with the reason. A trial run alone (`--exact NAME`, which is how nextest runs every trial, in its own process)
// decodes only its row (`load_exact`).

use crate::replay::{compute, hexf, judge, Failure, Verdict};
use libtest_mimic::{Completion, Failed, Trial};
use mmaemu_datasets::select::{read_row, row_keys};
use mmaemu_datasets::{discover, read_recording, Expectation, OutSelect, Row};
use mmaemu_model::epilogue::from_le_bytes;
use mmaemu_model::OutDtype;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Longest origin part of a trial name, in characters.
pub const MAX_ORIGIN_CHARS: usize = 160;

/// How many differing elements a failure lists.
pub const MAX_LISTED_DIFFERENCES: usize = 8;

/// The environment variable that replaces the shipped recordings: paths (files or directories) separated
/// like `PATH` (`:` on Unix).
pub const RECORDINGS_ENV: &str = "MMAEMU_RECORDINGS";

/// The test target's name, for reproduction commands.
pub const TEST_TARGET: &str = "recordings";

/// One recorded row as a trial.
#[derive(Clone, Debug)]
pub struct RowTrial {
    /// The unique trial name.
    pub name: String,
    /// The file the row comes from.
    pub path: PathBuf,
    /// The row, shared.
    pub row: Arc<Row>,
}

/// The shipped recordings directory, `datasets/recordings` of this workspace.
pub fn shipped_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("datasets").join("recordings")
}

/// The recordings the harness replays: the paths of `MMAEMU_RECORDINGS` when it is set and not empty,
/// else [`shipped_dir`].
pub fn recording_paths() -> Vec<PathBuf> {
    match std::env::var_os(RECORDINGS_ENV) {
        Some(v) if !v.is_empty() => std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect(),
        _ => vec![shipped_dir()],
    }
}

/// The head of an origin for a trial name: up to its first ` (`, `: ` or `; `, whitespace collapsed, quotes
/// replaced, at most [`MAX_ORIGIN_CHARS`] characters. One pass over at most the characters that can end up in the
/// name.
pub fn short_origin(origin: &str) -> String {
    let mut out = String::with_capacity(origin.len().min(MAX_ORIGIN_CHARS + 8));
    let (mut chars, mut pending_space, mut prev) = (0usize, false, '\0');
    for ch in origin.chars() {
        // The cut: the first " (", ": " or "; ".
        if (prev == ' ' && ch == '(') || ((prev == ':' || prev == ';') && ch == ' ') {
            if prev != ' ' {
                out.pop(); // the ':' or ';' just pushed
                if out.ends_with(' ') {
                    out.pop();
                }
            }
            break;
        }
        prev = ch;
        if ch.is_whitespace() || ch.is_control() {
            pending_space = true;
            continue;
        }
        if chars >= MAX_ORIGIN_CHARS {
            break;
        }
        if pending_space && chars > 0 {
            out.push(' ');
            chars += 1;
        }
        pending_space = false;
        out.push(match ch {
            '\'' | '"' | '`' | '\\' => '_',
            c => c,
        });
        chars += 1;
    }
    if out.is_empty() {
        "row".to_string()
    } else {
        out
    }
}

/// Unique trial names of the rows of one file whose name prefix is `prefix` (normally the file stem).
pub fn trial_names(prefix: &str, rows: &[Row]) -> Vec<String> {
    names_of(prefix, rows.iter().map(|r| (r.op.as_str(), r.origin.as_str(), r.id.as_str())))
}

/// [`trial_names`] from each row's (op, origin, id), as [`mmaemu_datasets::select::row_keys`] reads them.
pub fn names_of<'a>(prefix: &str, rows: impl Iterator<Item = (&'a str, &'a str, &'a str)>) -> Vec<String> {
    let rows: Vec<(&str, &str, &str)> = rows.collect();
    let base: Vec<String> =
        rows.iter().map(|(op, origin, _)| format!("{prefix}/{op}/{}", short_origin(origin))).collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for b in &base {
        *count.entry(b.as_str()).or_default() += 1;
    }
    let mut names: Vec<String> = base
        .iter()
        .zip(&rows)
        .map(|(b, (_, _, id))| if count[b.as_str()] > 1 { format!("{b} #{id}") } else { b.clone() })
        .collect();
    // A name with an id appended could still meet another row's plain name: number what remains.
    let distinct: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
    if distinct.len() < names.len() {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for name in &mut names {
            let n = seen.entry(name.clone()).or_default();
            *n += 1;
            if *n > 1 {
                name.push_str(&format!(" #{n}"));
            }
        }
    }
    names
}

/// The name prefix of every file: its stem, with `~2`, `~3`, ... for stems seen before.
pub fn file_prefixes(files: &[PathBuf]) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    files
        .iter()
        .map(|f| {
            let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "recording".into());
            let n = seen.entry(stem.clone()).or_default();
            *n += 1;
            if *n == 1 {
                stem
            } else {
                format!("{stem}~{n}")
            }
        })
        .collect()
}

/// Every row of the recordings under `paths` as a trial, in file order then row order. With `only`, only
/// the files whose name prefix is `only` are read (how one trial runs alone fast, e.g. under nextest).
/// No recording file at all, or files without a single row, is an error: the harness must never pass by
/// finding nothing.
pub fn load(paths: &[PathBuf], only: Option<&str>) -> Result<Vec<RowTrial>, String> {
    let shown = || paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let files = discover(paths).map_err(|e| format!("cannot find the recordings ({}): {e}", shown()))?;
    if files.is_empty() {
        return Err(format!("no recordings: no *.parquet file under {}", shown()));
    }
    let prefixes = file_prefixes(&files);
    let wanted: Vec<(PathBuf, String)> =
        files.into_iter().zip(prefixes).filter(|(_, p)| only.is_none_or(|o| o == p)).collect();
    let read: Vec<Result<Vec<RowTrial>, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = wanted
            .iter()
            .map(|(path, prefix)| {
                s.spawn(move || {
                    let rec = read_recording(path).map_err(|e| format!("cannot read recording: {e}"))?;
                    let names = trial_names(prefix, &rec.rows);
                    Ok(rec
                        .rows
                        .into_iter()
                        .zip(names)
                        .map(|(row, name)| RowTrial { name, path: path.clone(), row: Arc::new(row) })
                        .collect())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("reading a recording panicked".into()))).collect()
    });
    let mut trials = Vec::new();
    for r in read {
        trials.extend(r?);
    }
    if trials.is_empty() && only.is_none() {
        return Err(format!("no recordings: the recording files under {} hold no rows", shown()));
    }
    Ok(trials)
}

/// The file prefix a `--exact NAME` filter selects (the part of NAME before its first `/`).
pub fn exact_prefix(name: &str) -> &str {
    name.split('/').next().unwrap_or(name)
}

/// The one trial named `name` (none if no row has that name), reading only the `id`, `op` and `origin`
/// columns of its file and then its one row ([`mmaemu_datasets::select`]): how `--exact NAME` runs one trial fast.
pub fn load_exact(paths: &[PathBuf], name: &str) -> Result<Vec<RowTrial>, String> {
    let shown = || paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let files = discover(paths).map_err(|e| format!("cannot find the recordings ({}): {e}", shown()))?;
    if files.is_empty() {
        return Err(format!("no recordings: no *.parquet file under {}", shown()));
    }
    let prefix = exact_prefix(name);
    let Some(path) = files.iter().zip(file_prefixes(&files)).find(|(_, p)| p == prefix).map(|(f, _)| f.clone()) else {
        return Ok(Vec::new());
    };
    let keys = row_keys(&path).map_err(|e| format!("cannot read recording: {e}"))?;
    let names = names_of(prefix, keys.iter().map(|k| (k.op.as_str(), k.origin.as_str(), k.id.as_str())));
    let Some(index) = names.iter().position(|n| n == name) else {
        return Ok(Vec::new());
    };
    let row = read_row(&path, index).map_err(|e| format!("cannot read recording: {e}"))?;
    Ok(vec![RowTrial { name: name.to_string(), path, row: Arc::new(row) }])
}

/// Quote a string for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The one-line command that runs one trial alone: with `MMAEMU_RECORDINGS` set as it is now, or set to
/// the trial's file when that file is not one of the shipped recordings.
pub fn reproduce_command(t: &RowTrial) -> String {
    let shipped = shipped_dir().canonicalize().ok();
    let inside = shipped.is_some_and(|d| t.path.canonicalize().is_ok_and(|p| p.starts_with(d)));
    let env = match std::env::var_os(RECORDINGS_ENV) {
        Some(v) if !v.is_empty() => format!("{RECORDINGS_ENV}={} ", shell_quote(&v.to_string_lossy())),
        _ if !inside => format!("{RECORDINGS_ENV}={} ", shell_quote(&t.path.to_string_lossy())),
        _ => String::new(),
    };
    format!("{env}cargo test -p mmaemu-harness --test {TEST_TARGET} -- --exact {}", shell_quote(&t.name))
}

/// Replay one row (exactly as `mmaemu replay` does) and judge it: the verdict and, for a failure, its
/// full report (see [`failure_report`]).
pub fn verdict(t: &RowTrial) -> (Verdict, Option<String>) {
    let computed = match compute(&t.row) {
        Ok(c) => c,
        Err(reason) => return (Verdict::Skip(reason), None),
    };
    let result = computed.as_ref().ok().cloned();
    let verdict = judge(&t.row, computed);
    let report = match &verdict {
        Verdict::Fail(f) => Some(failure_report(t, f, result.as_ref())),
        _ => None,
    };
    (verdict, report)
}

/// The trial function of a row: pass, ignored with the reason, or failed with the report.
pub fn run(t: &RowTrial) -> Result<Completion, Failed> {
    match verdict(t) {
        (Verdict::Pass, _) => Ok(Completion::Completed),
        (Verdict::Skip(reason), _) => Ok(Completion::ignored_with(reason)),
        (Verdict::Fail(f), report) => Err(report.unwrap_or_else(|| f.to_string()).into()),
    }
}

/// The libtest-mimic trial of a row (it replays the row when it runs).
pub fn trial(t: RowTrial) -> Trial {
    let name = t.name.clone();
    Trial::ignorable_test(name, move || run(&t))
}

/// A value for humans: bits in hex, then the exact value (and its hex-float form when finite and nonzero).
pub fn show_bits(bits: u32, dtype: OutDtype) -> String {
    let w = dtype.width() * 2;
    let v = dtype.to_f64(bits);
    let value = if v.is_finite() && v != 0.0 {
        format!("{v:e} = {}", hexf(v))
    } else if v == 0.0 && v.is_sign_negative() {
        "-0".to_string()
    } else {
        format!("{v}")
    };
    format!("0x{bits:0w$X} ({value})")
}

/// Where flat element `index` of a row's result sits: `[t, i, j]` (batch, row, column).
pub fn position(row: &Row, index: usize) -> String {
    let (m, n) = (row.m.max(0) as usize, row.n.max(0) as usize);
    let (t, i, j) = match row.out_select {
        OutSelect::Full if m * n > 0 => (index / (m * n), (index / n) % m, index % n),
        OutSelect::Diagonal if m > 0 => (index / m, index % m, index % m),
        _ => (0, 0, index),
    };
    if row.batch > 1 {
        format!("[{t}, {i}, {j}]")
    } else {
        format!("[{i}, {j}]")
    }
}

/// The report of a failing row: what the row is, the failure, the first differing elements (index,
/// position, expected and actual as hex and value) and the command that reproduces the trial alone.
pub fn failure_report(t: &RowTrial, failure: &Failure, computed: Option<&(Vec<u32>, OutDtype)>) -> String {
    let row = &t.row;
    let mut s = String::new();
    let _ = writeln!(s, "row {:?} of {} does not replay", row.id, t.path.display());
    let mut what = format!(
        "  op {}, preset {}, profile {}, gpu {}, truth {}; {} x {} x {} (batch {}); formats {} x {}",
        row.op,
        row.preset,
        row.profile.as_deref().unwrap_or("-"),
        row.gpu,
        row.truth,
        row.m,
        row.n,
        row.k,
        row.batch,
        row.fmt_a,
        row.fmt_b
    );
    if let Some(fast) = row.fast_accum {
        what.push_str(if fast { "; fast" } else { "; slow" });
    }
    if let Some(s_) = row.split_s {
        what.push_str(&format!("; split {} {}", s_, row.split_scheme.as_deref().unwrap_or("none")));
    }
    if matches!(row.op, mmaemu_datasets::Op::Gemm | mmaemu_datasets::Op::ScaledMm) {
        what.push_str(&format!("; out {}", row.effective_out_dtype()));
    }
    let _ = writeln!(s, "{what}");
    let _ = writeln!(s, "  origin: {}", row.origin);
    let _ = writeln!(s, "{failure}");
    if let (Expectation::Bits(bytes), Some((actual, dtype))) = (&row.expected, computed) {
        let expected = from_le_bytes(bytes, *dtype);
        let total = expected.len().max(actual.len());
        let diffs: Vec<usize> =
            (0..total).filter(|&i| expected.get(i) != actual.get(i)).take(MAX_LISTED_DIFFERENCES).collect();
        if !diffs.is_empty() {
            let _ = writeln!(s, "first differing elements ({dtype}):");
            for i in diffs {
                let e = expected.get(i).map_or("(missing)".into(), |&b| show_bits(b, *dtype));
                let a = actual.get(i).map_or("(missing)".into(), |&b| show_bits(b, *dtype));
                let _ = writeln!(s, "  index {i} {}: expected {e}, actual {a}", position(row, i));
            }
        }
    }
    let _ = write!(s, "reproduce: {}", reproduce_command(t));
    if let (Expectation::Bits(bytes), Some((actual, dtype))) = (&row.expected, computed) {
        let expected = from_le_bytes(bytes, *dtype);
        if let Some(i) = (0..expected.len().max(actual.len())).find(|&i| expected.get(i) != actual.get(i)) {
            let _ =
                write!(s, "\n{}", explain_element(row, i, expected.get(i).copied(), actual.get(i).copied(), *dtype));
        }
    }
    s
}

/// The trace of a differing element: expected against computed bits, the first step that loses something (where a
/// hand check starts), then the folded trace.
pub fn explain_element(row: &Row, index: usize, expected: Option<u32>, actual: Option<u32>, dtype: OutDtype) -> String {
    let show = |b: Option<u32>| b.map_or("(missing)".into(), |b| show_bits(b, dtype));
    let mut s = format!(
        "trace of the first differing element, index {index} {}: expected {}, computed {}\n",
        position(row, index),
        show(expected),
        show(actual)
    );
    match crate::trace::trace_row(row, index) {
        Ok(t) => {
            let _ = writeln!(s, "a hand check starts at: {}", mmaemu_trace::text::first_lossy_step(&t));
            s.push_str(&mmaemu_trace::text::render(&t, false));
        }
        Err(e) => {
            let _ = writeln!(s, "(no trace: {e})");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_origins() {
        assert_eq!(
            short_origin("hw_mini c3.gemm_fp8out case e4m3xe4m3 output s0: the hardware rejected (x)"),
            "hw_mini c3.gemm_fp8out case e4m3xe4m3 output s0"
        );
        assert_eq!(short_origin("a  b\n'c' (d)"), "a b _c_");
        assert_eq!(short_origin(" (x)"), "row");
        assert_eq!(short_origin(&"x".repeat(500)).len(), MAX_ORIGIN_CHARS);
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
        assert_eq!(exact_prefix("toolbox-h200/mma/x/y"), "toolbox-h200");
        let files = vec![PathBuf::from("a/x.parquet"), PathBuf::from("b/x.parquet"), PathBuf::from("y.parquet")];
        assert_eq!(file_prefixes(&files), vec!["x", "x~2", "y"]);
    }
}
