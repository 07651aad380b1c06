//! Inspecting recording files (`mmaemu datasets ...`): verify, stats and show, each returning its report text and exit
//! code. Every command reports bad input with a message and an exit code, never a panic.

use crate::replay::{compute, hexf, judge, sha256_hex, Verdict};
use mmaemu_datasets::{discover, read_recording, Expectation, Op, OutSelect, Recording, Row};
use mmaemu_model::epilogue::{from_le_bytes, to_le_bytes};
use mmaemu_model::{Format, OutDtype};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The prefix of the lines that report why a command could not do its work at all.
pub const FATAL: &str = "mmaemu datasets ";

/// The problems `verify` finds in a file that read successfully.
pub fn check_recording(rec: &Recording, sha256: bool) -> Vec<String> {
    // Presets and profiles are checked by the reader (a row whose profile runs another preset is invalid).
    let mut v = Vec::new();
    if sha256 {
        v.extend(check_hashes(&rec.rows));
    }
    v
}

/// The sha256 of a row's inputs: everything that determines its result, and the GPU it ran on.
fn input_key(row: &Row) -> String {
    let mut s = format!(
        "{}|{}|{:?}|{}|{}|{}|{}|{}|{}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|",
        row.op,
        row.preset,
        row.profile,
        row.gpu,
        row.fmt_a,
        row.fmt_b,
        row.batch,
        row.m,
        row.n,
        row.k,
        row.scale_a,
        row.scale_b,
        row.scale_result,
        row.out_dtype,
        row.fast_accum,
        row.split_s,
        row.split_scheme,
        row.out_select,
    );
    s.push_str(&row.call.as_ref().map(|c| c.to_json()).unwrap_or_default());
    let mut bytes = s.into_bytes();
    for part in [&row.a, &row.b, row.c.as_ref().unwrap_or(&Vec::new())] {
        bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
        bytes.extend_from_slice(part);
    }
    sha256_hex(&bytes)
}

/// `--sha256`: rows with identical inputs on one GPU must expect the same result; `expected_sha256` rows
/// must match the model's replay (rows the model cannot replay are reported as unchecked, not violations).
fn check_hashes(rows: &[Row]) -> Vec<String> {
    let mut v = Vec::new();
    let mut seen: HashMap<String, (&str, String)> = HashMap::new();
    let mut unchecked = 0usize;
    for row in rows {
        let hash = match &row.expected {
            Expectation::Bits(b) => format!("sha256 {}", sha256_hex(b)),
            Expectation::Sha256(h) => {
                match compute(row) {
                    Ok(Ok((bits, dtype))) => {
                        let got = sha256_hex(&to_le_bytes(&bits, dtype));
                        if !got.eq_ignore_ascii_case(h) {
                            v.push(format!(
                                "row {:?}: expected_sha256 {h} does not match the replayed result's {got}",
                                row.id
                            ));
                        }
                    }
                    _ => unchecked += 1,
                }
                format!("sha256 {}", h.to_ascii_lowercase())
            }
            Expectation::Error(e) => format!("error {e}"),
        };
        let key = input_key(row);
        match seen.get(&key) {
            Some((first, h)) if *h != hash => v.push(format!(
                "rows {first:?} and {:?} have identical inputs on the same GPU but expect different results ({h} vs \
                 {hash})",
                row.id
            )),
            Some(_) => {}
            None => {
                seen.insert(key, (&row.id, hash));
            }
        }
    }
    if unchecked > 0 {
        v.push(format!("note: {unchecked} expected_sha256 rows could not be replayed, so their hash is unchecked"));
    }
    v
}

/// `datasets verify PATH...`: (report, exit code). Every file reads as `mmaemu-recording/1` (schema, sizes, exactly one
/// expectation per row, unique ids: the reader's checks), every scaled_mm row's profile runs the row's preset, and
/// with `--sha256` the result hashes are consistent: rows with identical inputs on the same GPU expect the same
/// result (bits hashed with sha256, or the `expected_sha256` column), and every `expected_sha256` matches the
/// model's replay. Exit 0 all good, 1 a violation, 2 a file that cannot be read at all.
pub fn verify(paths: &[PathBuf], sha256: bool) -> (String, u8) {
    let mut out = String::new();
    let files = match discover(paths) {
        Ok(f) => f,
        Err(e) => return (format!("mmaemu datasets verify: {e}\n"), 2),
    };
    // A file that does not read as a recording is bad input (exit 2), whether it cannot be read at all
    // or breaks the format; a file that reads but whose rows break a rule checked here fails (exit 1).
    let (mut ok, mut bad, mut unreadable) = (0usize, 0usize, 0usize);
    for path in &files {
        match read_recording(path) {
            Err(e) if e.is_unreadable() => {
                unreadable += 1;
                let _ = writeln!(out, "UNREADABLE {e}");
            }
            Err(e) => {
                unreadable += 1;
                let _ = writeln!(out, "INVALID {e}");
            }
            Ok(rec) => {
                let problems = check_recording(&rec, sha256);
                let violations: Vec<&String> = problems.iter().filter(|p| !p.starts_with("note:")).collect();
                if violations.is_empty() {
                    ok += 1;
                    let _ = writeln!(out, "OK {}: {} rows", path.display(), rec.rows.len());
                } else {
                    bad += 1;
                    let _ = writeln!(out, "INVALID {}: {} problems", path.display(), violations.len());
                }
                for p in &problems {
                    let _ = writeln!(out, "  {p}");
                }
            }
        }
    }
    let _ =
        writeln!(out, "{} files: {ok} valid, {bad} with violations, {unreadable} unreadable or invalid", files.len());
    let code = if unreadable > 0 {
        2
    } else if bad > 0 {
        1
    } else {
        0
    };
    (out, code)
}

/// A row's split as one word: `none`, or `<scheme> S=<s>`; `-` for mma rows.
fn split_name(row: &Row) -> String {
    if row.op == Op::Mma {
        return "-".into();
    }
    let s = row.split_s.unwrap_or(1);
    let scheme = row.split_scheme.as_deref().unwrap_or("none");
    if s <= 1 && scheme == "none" {
        "none".into()
    } else {
        format!("{scheme} S={s}")
    }
}

/// The counts `stats` reports, by category name.
pub fn count_rows<'a>(rows: impl Iterator<Item = &'a Row>) -> BTreeMap<&'static str, BTreeMap<String, usize>> {
    let mut c: BTreeMap<&'static str, BTreeMap<String, usize>> = BTreeMap::new();
    let mut add = |cat: &'static str, v: String| *c.entry(cat).or_default().entry(v).or_default() += 1;
    for row in rows {
        add("op", row.op.to_string());
        add("preset", row.preset.clone());
        add("profile", row.profile.clone().unwrap_or_else(|| "-".into()));
        add("gpu", row.gpu.clone());
        add("truth", row.truth.to_string());
        add("formats", format!("{} x {}", row.fmt_a, row.fmt_b));
        add("out dtype", mmaemu_datasets::torch_dtype_name(row.effective_out_dtype()).to_string());
        add("split", split_name(row));
        add("fast_accum", row.fast_accum.map_or("-".into(), |f| f.to_string()));
        add(
            "expectation",
            match &row.expected {
                Expectation::Bits(_) => "bits".into(),
                Expectation::Sha256(_) => "sha256".into(),
                Expectation::Error(e) => format!("error {e}"),
            },
        );
    }
    c
}

/// A sort key that orders a trailing number numerically (`pairwise S=2` before `pairwise S=10`).
fn natural_key(s: &str) -> (String, u64) {
    let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = s.split_at(s.len() - digits);
    (head.to_string(), tail.parse().unwrap_or(0))
}

/// `datasets stats PATH...`: (report, exit code). Row counts by op, preset, profile, gpu, truth, formats, out dtype,
/// split and expectation (text or `--json`).
pub fn stats(paths: &[PathBuf], as_json: bool) -> (String, u8) {
    let files = match discover(paths) {
        Ok(f) => f,
        Err(e) => return (format!("mmaemu datasets stats: {e}\n"), 2),
    };
    let mut recs = Vec::new();
    for path in &files {
        match read_recording(path) {
            Ok(r) => recs.push(r),
            Err(e) => return (format!("mmaemu datasets stats: {e}\n"), 2),
        }
    }
    let total: usize = recs.iter().map(|r| r.rows.len()).sum();
    let all = count_rows(recs.iter().flat_map(|r| r.rows.iter()));
    if as_json {
        let per_file: Vec<_> = recs
            .iter()
            .map(|r| json!({"path": r.path.display().to_string(), "rows": r.rows.len(), "counts": count_rows(r.rows.iter())}))
            .collect();
        let v = json!({"files": per_file, "rows": total, "counts": all});
        return (format!("{v}\n"), 0);
    }
    let mut out = String::new();
    for r in &recs {
        let _ = writeln!(out, "{}: {} rows", r.path.display(), r.rows.len());
    }
    let _ = writeln!(out, "{} files, {total} rows", recs.len());
    for (cat, values) in &all {
        let _ = writeln!(out, "by {cat}:");
        let width = values.keys().map(|k| k.chars().count()).max().unwrap_or(0);
        let mut values: Vec<(&String, &usize)> = values.iter().collect();
        values.sort_by_key(|(v, _)| natural_key(v));
        for (v, n) in values {
            let _ = writeln!(out, "  {v:<width$}  {n:>8}");
        }
    }
    (out, 0)
}

/// The value of one operand element of dtype `name` (FP8 codes, or 16-bit little-endian elements) for
/// display; None for a dtype this cannot decode.
fn element_value(name: &str, bytes: &[u8]) -> Option<f64> {
    if let Some(f) = Format::from_name(name) {
        return bytes.first().map(|&c| f.to_f64(c));
    }
    if name == "float32" {
        return Some(f32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as f64);
    }
    let h = u16::from_le_bytes([*bytes.first()?, *bytes.get(1)?]) as u32;
    match name {
        "bfloat16" => Some(OutDtype::BFloat16.to_f64(h)),
        "float16" => Some(OutDtype::Float16.to_f64(h)),
        _ => None,
    }
}

/// Print a [batch, rows, cols] matrix of elements of `dtype` as values (hex for dtypes it cannot decode),
/// at most `max` rows and columns of each batch entry.
fn matrix(out: &mut String, title: &str, data: &[u8], dtype: &str, dims: (usize, usize, usize), max: usize) {
    let (batch, rows, cols) = dims;
    let w = mmaemu_datasets::dtype_width(dtype).unwrap_or(1);
    let _ = writeln!(out, "{title} ({dtype}, [{batch}, {rows}, {cols}]):");
    if data.len() < batch * rows * cols * w {
        let _ = writeln!(out, "  ({} bytes, fewer than the shape needs)", data.len());
        return;
    }
    for t in 0..batch.min(max) {
        if batch > 1 {
            let _ = writeln!(out, "  [{t}]");
        }
        for i in 0..rows.min(max) {
            let mut line = String::from("   ");
            for j in 0..cols.min(max) {
                let at = ((t * rows + i) * cols + j) * w;
                let e = &data[at..at + w];
                let cell = match element_value(dtype, e) {
                    Some(v) => format!("{v}"),
                    None => e.iter().rev().map(|b| format!("{b:02X}")).collect(),
                };
                let _ = write!(line, " {cell:>9}");
            }
            if cols > max {
                line.push_str(" ...");
            }
            let _ = writeln!(out, "{line}");
        }
        if rows > max {
            let _ = writeln!(out, "    ... ({} more rows)", rows - max);
        }
    }
    if batch > max {
        let _ = writeln!(out, "  ... ({} more batch entries)", batch - max);
    }
}

/// One result element for display.
fn show_bits(bits: u32, dtype: OutDtype) -> String {
    let v = dtype.to_f64(bits);
    let w = dtype.width() * 2;
    if v.is_finite() && v != 0.0 {
        format!("0x{bits:0w$X} ({v:e} = {})", hexf(v))
    } else {
        format!("0x{bits:0w$X} ({v})")
    }
}

/// `datasets show FILE --id ID`: (report, exit code). One row decoded — its columns, A and B (and c) as values, and
/// the expected result against the replayed one with the differences marked. Exit 0 it replays, 1 it differs or
/// cannot be replayed, 2 the file or the id cannot be found.
/// `datasets show FILE --ids`: one line per row — its id and what it is (op, preset, profile, shape, formats, out
/// dtype, split, and its expectation: a result or the error it expects).
pub fn ids(file: &Path) -> (String, u8) {
    let rec = match read_recording(file) {
        Ok(r) => r,
        Err(e) => return (format!("mmaemu datasets show: {e}\n"), 2),
    };
    let mut out = String::new();
    for row in &rec.rows {
        let expects = match &row.expected {
            Expectation::Error(name) => format!("raises {name}"),
            _ if row.batch == 0 || row.m == 0 || row.n == 0 => "empty result".to_string(),
            _ => "result".to_string(),
        };
        let _ = writeln!(
            out,
            "{}\t{} {} {}\t{}x{}x{} {} x {} -> {}\tsplit {}\t{expects}",
            row.id,
            row.op,
            row.preset,
            row.profile.as_deref().unwrap_or("-"),
            row.m,
            row.n,
            row.k,
            row.fmt_a,
            row.fmt_b,
            row.effective_out_dtype(),
            split_name(row)
        );
    }
    (out, 0)
}

/// `datasets show FILE --id ID`: one row decoded.
pub fn show(file: &Path, id: &str, max: usize) -> (String, u8) {
    let rec = match read_recording(file) {
        Ok(r) => r,
        Err(e) => return (format!("mmaemu datasets show: {e}\n"), 2),
    };
    let Some(row) = rec.rows.iter().find(|r| r.id == id) else {
        // Suggest rows worth a look: ones that compute a result (not an expected error, not zero-size).
        let computing: Vec<&str> = rec
            .rows
            .iter()
            .filter(|r| !matches!(r.expected, Expectation::Error(_)) && r.m > 0 && r.n > 0 && r.k > 0)
            .take(3)
            .map(|r| r.id.as_str())
            .collect();
        return (
            format!(
                "mmaemu datasets show: {}: no row with id {id:?} ({} rows; rows with a result: {}; \
                 `mmaemu datasets show {} --ids` lists them all)\n",
                file.display(),
                rec.rows.len(),
                computing.join(", "),
                file.display()
            ),
            2,
        );
    };
    let mut out = String::new();
    let _ = writeln!(out, "{} row {:?}", file.display(), row.id);
    let _ = writeln!(
        out,
        "  op {}, preset {}, profile {}, gpu {}, truth {}",
        row.op,
        row.preset,
        row.profile.as_deref().unwrap_or("-"),
        row.gpu,
        row.truth
    );
    let _ = writeln!(out, "  origin: {}", row.origin);
    let _ = writeln!(
        out,
        "  batch {}, m {}, n {}, k {}; formats {} x {}",
        row.batch, row.m, row.n, row.k, row.fmt_a, row.fmt_b
    );
    let f32s = |b: Option<u32>| b.map_or("-".to_string(), |b| format!("0x{b:08X} ({})", f32::from_bits(b)));
    let _ = writeln!(
        out,
        "  out {}; fast_accum {}; split {}; scale_a {}; scale_b {}; scale_result {}",
        row.effective_out_dtype(),
        row.fast_accum.map_or("-".into(), |f| f.to_string()),
        split_name(row),
        f32s(row.scale_a),
        f32s(row.scale_b),
        f32s(row.scale_result)
    );
    if let Some(call) = &row.call {
        let _ = writeln!(out, "  call: {}", call.to_json());
    }
    if let Some(algo) = &row.algo {
        let _ = writeln!(out, "  algo: {algo}");
    }
    if let Some(scope) = &row.scope {
        let _ = writeln!(out, "  scope: {scope}");
    }
    if row.out_select == OutSelect::Diagonal {
        let _ = writeln!(out, "  out_select: diagonal (expected holds the m diagonal elements)");
    }
    let dim = |x: i64| x.max(0) as usize;
    let (b, m, n, k) = (dim(row.batch), dim(row.m), dim(row.n), dim(row.k));
    matrix(&mut out, "A", &row.a, &row.fmt_a, (b, m, k), max);
    matrix(&mut out, "B", &row.b, &row.fmt_b, (b, n, k), max);
    if let Some(c) = &row.c {
        matrix(&mut out, "c", c, "float32", (b, m, n), max);
    }

    let computed = match compute(row) {
        Ok(c) => c,
        Err(reason) => {
            let _ = writeln!(out, "replay: cannot replay this row: {reason}");
            return (out, 1);
        }
    };
    let result = computed.as_ref().ok().cloned();
    let outcome = judge(row, computed);
    match (&row.expected, &result) {
        (Expectation::Bits(bytes), Some((bits, dtype))) => {
            let expected = from_le_bytes(bytes, *dtype);
            let total = expected.len().max(bits.len());
            let differ: Vec<usize> = (0..total).filter(|&i| expected.get(i) != bits.get(i)).collect();
            let _ = writeln!(out, "expected against replayed ({dtype}, {total} elements, {} differ):", differ.len());
            let mut shown = 0usize;
            for i in 0..total {
                let diff = expected.get(i) != bits.get(i);
                // Every element of a small result; else the first `max` and the differing ones up to `max`.
                if !(total <= max.saturating_mul(4) || i < max || (diff && shown < max.saturating_mul(2))) {
                    continue;
                }
                shown += 1;
                let e = expected.get(i).map_or("(missing)".into(), |&x| show_bits(x, *dtype));
                let a = bits.get(i).map_or("(missing)".into(), |&x| show_bits(x, *dtype));
                let (t, r, c) = match row.out_select {
                    OutSelect::Diagonal if m > 0 => (i / m, i % m, i % m),
                    _ if n > 0 && m > 0 => (i / (m * n), (i / n) % m, i % n),
                    _ => (0, 0, i),
                };
                let pos = if b > 1 { format!("[{t}, {r}, {c}]") } else { format!("[{r}, {c}]") };
                let _ = writeln!(
                    out,
                    "  {i:>6} {pos:<12} expected {e}  replayed {a}{}",
                    if diff { "  <-- differs" } else { "" }
                );
            }
            if shown < total {
                let _ = writeln!(out, "  ... ({} elements not shown)", total - shown);
            }
        }
        (Expectation::Sha256(h), Some((bits, dtype))) => {
            let _ = writeln!(out, "expected sha256 {h}; replayed sha256 {}", sha256_hex(&to_le_bytes(bits, *dtype)));
        }
        (Expectation::Error(e), _) => {
            let _ = writeln!(out, "expected error {e}");
        }
        (_, None) => {}
    }
    let code = match &outcome {
        Verdict::Pass => {
            let _ = writeln!(out, "replay: pass");
            0
        }
        Verdict::Fail(f) => {
            let _ = writeln!(out, "replay: FAIL: {f}");
            1
        }
        Verdict::Skip(r) => {
            let _ = writeln!(out, "replay: cannot replay this row: {r}");
            1
        }
    };
    (out, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(name: &str) -> Recording {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/recordings").join(name);
        read_recording(&path).expect("a shipped recording reads")
    }

    #[test]
    fn equal_inputs_must_expect_equal_results() {
        let mut rec = shipped("toolbox-h100.parquet");
        let mut twin = rec.rows[0].clone();
        twin.id = "twin".into();
        rec.rows.push(twin.clone());
        assert!(check_recording(&rec, true).is_empty(), "{:?}", check_recording(&rec, true));
        if let Expectation::Bits(b) = &mut rec.rows.last_mut().expect("twin").expected {
            b[0] ^= 1;
        }
        let v = check_recording(&rec, true);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("identical inputs on the same GPU but expect different results"), "{v:?}");
        // Without --sha256 the hashes are not looked at.
        assert!(check_recording(&rec, false).is_empty());
    }

    #[test]
    fn split_names_sort_numerically() {
        let mut v = vec!["pairwise S=10", "none", "pairwise S=2", "-"];
        v.sort_by_key(|s| natural_key(s));
        assert_eq!(v, vec!["-", "none", "pairwise S=2", "pairwise S=10"]);
    }

    #[test]
    fn show_marks_nothing_on_a_passing_row_and_reports_missing_ids() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/recordings/toolbox-h200.parquet");
        let (text, code) = show(&path, "toolbox/H200-e5m2", 4);
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("0 differ"), "{text}");
        assert!(text.ends_with("replay: pass\n"), "{text}");
        let (text, code) = show(&path, "nope", 4);
        assert_eq!(code, 2);
        assert!(text.starts_with(FATAL), "{text}");
    }
}
