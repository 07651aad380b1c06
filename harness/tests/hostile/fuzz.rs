//! The seeded mutation fuzzer: bytes, metadata, JSON columns and dimensions of the small shipped recordings
//! corrupted, each case read, replayed, verified and shown under a time bound, never a panic.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------------------------------------------
// The mutation fuzzer

/// A recording the fuzzer starts from: a shipped file, whole or a subset of its rows.
pub(crate) struct SeedFile {
    pub(crate) file: &'static str,
    /// Share of the case budget.
    pub(crate) weight: u64,
    /// Which rows to keep (None: the file as shipped, bytes included).
    pub(crate) keep: Option<fn(usize, &Row) -> bool>,
    /// Only edit call objects (they reach the model's argument checks and layouts rather than the reader's).
    pub(crate) calls_only: bool,
}

pub(crate) const SEEDS: &[SeedFile] = &[
    SeedFile { file: "toolbox-ada.parquet", weight: 1, keep: None, calls_only: false },
    SeedFile { file: "toolbox-b200.parquet", weight: 1, keep: None, calls_only: false },
    SeedFile { file: "toolbox-h100.parquet", weight: 1, keep: None, calls_only: false },
    SeedFile { file: "toolbox-h200.parquet", weight: 1, keep: None, calls_only: false },
    SeedFile { file: "toolbox-l40s.parquet", weight: 1, keep: None, calls_only: false },
    // The 17 x 9 x 80 gate GEMMs (the larger ones would dominate the time).
    SeedFile {
        file: "model-gate-ada.parquet",
        weight: 1,
        keep: Some(|_, r| r.m * r.n * r.k <= 17 * 9 * 80),
        calls_only: false,
    },
    // Every 200th API row: call objects, rejections, every out dtype.
    SeedFile { file: "rtx4060-api.parquet", weight: 3, keep: Some(|i, _| i % 200 == 0), calls_only: false },
    // The call objects alone, on the scaled_mm rows with a call object of the same subset.
    SeedFile { file: "rtx4060-api.parquet", weight: 2, keep: Some(|i, _| i % 200 == 0), calls_only: true },
];

pub(crate) fn fuzz_trials() -> Vec<Trial> {
    let total = std::env::var("MMAEMU_HOSTILE_CASES").ok().and_then(|s| parse_u64(&s)).unwrap_or(DEFAULT_CASES);
    let base = std::env::var("MMAEMU_HOSTILE_SEED").ok().and_then(|s| parse_u64(&s)).unwrap_or(DEFAULT_SEED);
    let weights: u64 = SEEDS.iter().map(|s| s.weight).sum();
    SEEDS
        .iter()
        .map(|seed| {
            let suffix = if seed.calls_only { "/calls" } else { "" };
            let name = format!("fuzz/{}{suffix}", seed.file.trim_end_matches(".parquet"));
            let cases = (total * seed.weight).div_ceil(weights).max(1);
            let trial = name.clone();
            Trial::test(name, move || fuzz(&trial, seed, base, cases, total).map_err(Failed::from))
        })
        .collect()
}

/// One structured edit of a row's cells or the file's columns and metadata.
pub(crate) fn structured_edit(rng: &mut Rng, raw: &mut Raw, log: &mut Vec<String>) -> bool {
    let rows = raw.batch.num_rows();
    let row = rng.below(rows);
    let set = |raw: &mut Raw, log: &mut Vec<String>, column: &str, v: CellValue| {
        log.push(format!("{column}[{row}] = {v}"));
        raw.batch = set_cell(&raw.batch, column, row, &v);
    };
    // Whether the Arrow schema in the metadata must be left out (it would contradict a retyped column).
    let mut skip_schema = false;
    match rng.below(16) {
        0 | 1 => {
            let old = cell_str(&raw.batch, "call", row);
            let v = if rng.one_in(8) { None } else { Some(call_json(rng, old.as_deref(), true)) };
            set(raw, log, "call", CellValue::Str(v));
        }
        2 => {
            // Operands by reference: empty a and b with an inputs spec, and a shape from small to absurd.
            let dims = [0i64, 1, 2, 16, 17, 64, 1 << 20, (1 << 31) - 1, 1 << 36, 1 << 62, -1];
            set(raw, log, "a", CellValue::Bin(Some(Vec::new())));
            if rng.one_in(4) {
                log.push("b kept".into());
            } else {
                set(raw, log, "b", CellValue::Bin(Some(Vec::new())));
            }
            set(raw, log, "inputs", CellValue::Str(Some(inputs_value(rng))));
            for d in ["m", "n", "k"] {
                if rng.one_in(3) {
                    continue;
                }
                let v = *rng.pick(&dims);
                set(raw, log, d, CellValue::I64(Some(v)));
            }
            if rng.one_in(4) {
                set(raw, log, "batch", CellValue::I64(Some(*rng.pick(&[0, 1, 2, 5000]))));
            }
        }
        3 => set(raw, log, "inputs", CellValue::Str(Some(inputs_value(rng)))),
        4 => set(raw, log, "expected_samples", CellValue::Str(Some(samples_value(rng)))),
        5 => {
            let v = match rng.below(3) {
                0 => garbage_text(rng),
                _ => wild_json(rng, 0).to_string(),
            };
            set(raw, log, "algo", CellValue::Str(Some(v)));
        }
        6 => {
            let col = *rng.pick(DIMS);
            let v = if rng.one_in(10) { None } else { Some(*rng.pick(EXTREME)) };
            set(raw, log, col, CellValue::I64(v));
        }
        7 => {
            let (col, values) = *rng.pick(LABELS);
            let v = match rng.below(6) {
                0 => None,
                1 => Some(garbage_text(rng)),
                _ => Some((*rng.pick(values)).to_string()),
            };
            set(raw, log, col, CellValue::Str(v));
        }
        8 => match rng.below(3) {
            0 => {
                let v = if rng.one_in(5) { None } else { Some(*rng.pick(&[0, -1, 1, 2, 3, 64, i32::MAX, i32::MIN])) };
                set(raw, log, "split_s", CellValue::I32(v));
            }
            1 => {
                let col = *rng.pick(SCALARS_U32);
                let any = rng.next() as u32;
                let v = if rng.one_in(4) {
                    None
                } else {
                    Some(*rng.pick(&[0, 0x8000_0000, 0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 1, 0x7F7F_FFFF, any]))
                };
                set(raw, log, col, CellValue::U32(v));
            }
            _ => {
                let v = if rng.one_in(3) { None } else { Some(rng.one_in(2)) };
                set(raw, log, "fast_accum", CellValue::Bool(v));
            }
        },
        9 => {
            let col = *rng.pick(BINARIES);
            let old = raw.batch.column_by_name(col).and_then(binaries).and_then(|v| v.get(row).cloned().flatten());
            let v = match (rng.below(5), old) {
                (0, _) => None,
                (1, _) => Some(Vec::new()),
                (2, Some(mut b)) => {
                    if rng.one_in(2) {
                        b.pop();
                    } else {
                        b.push(0x7F);
                    }
                    Some(b)
                }
                (_, Some(mut b)) if !b.is_empty() => {
                    // Same length, other bytes: a verdict (the replay differs), not an error.
                    let i = rng.below(b.len());
                    b[i] ^= 1 << rng.below(8);
                    Some(b)
                }
                (_, _) => Some(rng.bytes(16)),
            };
            set(raw, log, col, CellValue::Bin(v));
        }
        10 => {
            // Duplicate ids.
            if rows > 1 {
                let first = cell_str(&raw.batch, "id", 0);
                let r = 1 + rng.below(rows - 1);
                log.push(format!("id[{r}] = id[0]"));
                raw.batch = set_cell(&raw.batch, "id", r, &CellValue::Str(first));
            } else {
                set(raw, log, "id", CellValue::Str(None));
            }
        }
        11 => {
            let col = *rng.pick(ALL_COLUMNS);
            log.push(format!("drop column {col}"));
            raw.batch = drop_column(&raw.batch, col);
        }
        12 => {
            // Another Arrow type for a column.
            let col = *rng.pick(ALL_COLUMNS);
            let n = raw.batch.num_rows();
            let array: ArrayRef = match raw.batch.column_by_name(col).map(|c| c.data_type().is_numeric()) {
                Some(true) => Arc::new(StringArray::from(vec![Some("1"); n])),
                Some(false) => Arc::new(Int64Array::from(vec![Some(1); n])),
                None => Arc::new(BinaryArray::from_iter(vec![Some(vec![1u8]); n])),
            };
            log.push(format!("column {col} retyped to {}", array.data_type()));
            raw.batch = put_column(&raw.batch, col, array);
            skip_schema = true;
        }
        13 => {
            // An unknown column is skipped by readers: the rows must replay as before.
            let n = raw.batch.num_rows();
            log.push("extra column zzz".into());
            raw.batch = put_column(&raw.batch, "zzz", Arc::new(StringArray::from(vec![Some("zzz"); n])));
        }
        _ => {
            let key = *rng.pick(&["mmaemu:format", "mmaemu:platform", "mmaemu:provenance", "ARROW:schema", "other"]);
            let value = match rng.below(6) {
                0 => None,
                1 => Some(garbage_text(rng)),
                2 => Some((*rng.pick(&["mmaemu-recording/2", "mmaemu-recording/1 ", "[]", "\"x\"", "{}"])).to_string()),
                3 => Some(wild_json(rng, 0).to_string()),
                4 => Some(format!("{}{}", "{\"a\":".repeat(200), "}".repeat(200))),
                _ => Some("mmaemu-recording/1".to_string()),
            };
            log.push(format!("metadata {key} = {}", CellValue::Str(value.clone())));
            raw.kv.retain(|e| e.key != key);
            if let Some(v) = value {
                raw.kv.push(KeyValue::new(key.to_string(), v));
            }
            if key == "ARROW:schema" {
                skip_schema = true;
            }
        }
    }
    skip_schema
}

/// One byte-level mutation of a file.
pub(crate) fn byte_edit(rng: &mut Rng, bytes: &mut Vec<u8>, log: &mut Vec<String>) {
    let len = bytes.len();
    if len == 0 {
        bytes.extend(rng.bytes(8));
        log.push("empty file: 8 random bytes".into());
        return;
    }
    match rng.below(9) {
        0..=2 => {
            let n = 1 + rng.below(16);
            for _ in 0..n {
                let (i, x) = (rng.below(len), 1 + rng.below(255) as u8);
                bytes[i] ^= x;
                log.push(format!("byte {i} ^= 0x{x:02x}"));
            }
        }
        3 | 4 => {
            // The footer: the Thrift metadata, its length and the magic.
            let tail = len.min(if rng.one_in(3) { 8 } else { 4096 });
            for _ in 0..1 + rng.below(4) {
                let i = len - 1 - rng.below(tail);
                let x = 1 + rng.below(255) as u8;
                bytes[i] ^= x;
                log.push(format!("footer byte {i} (of {len}) ^= 0x{x:02x}"));
            }
        }
        5 => {
            let at = if rng.one_in(2) { len.saturating_sub(1 + rng.below(4096)) } else { rng.below(len) };
            bytes.truncate(at);
            log.push(format!("truncated to {at} of {len} bytes"));
        }
        6 => {
            let at = rng.below(len);
            let n = (1 + rng.below(4096)).min(len - at);
            let fill = rng.below(3);
            for j in 0..n {
                bytes[at + j] = match fill {
                    0 => 0,
                    1 => 0xFF,
                    _ => rng.next() as u8,
                };
            }
            log.push(format!("bytes {at}..{} overwritten ({})", at + n, ["zeros", "0xff", "random"][fill]));
        }
        7 => {
            let at = rng.below(len);
            let n = 1 + rng.below(64);
            let ins = rng.bytes(n);
            bytes.splice(at..at, ins);
            log.push(format!("{n} random bytes inserted at {at}"));
        }
        _ => {
            let n = 1 + rng.below(64);
            bytes.extend(rng.bytes(n));
            log.push(format!("{n} random bytes appended"));
        }
    }
}

/// The mutated file of one case, and what was done to it.
pub(crate) fn mutate(rng: &mut Rng, seed_bytes: &[u8], seed_raw: &Raw, calls_only: bool) -> (Vec<u8>, String) {
    let mut log = Vec::new();
    if calls_only {
        // One well-formed call object with extreme values on one of the rows that may carry one.
        let mut raw = seed_raw.clone();
        let rows: Vec<usize> = (0..raw.batch.num_rows())
            .filter(|&r| cell_str(&raw.batch, "op", r).as_deref() == Some("scaled_mm"))
            .collect();
        let row = *rng.pick(&rows);
        // Prefer objects the format accepts (no negative numbers, parsing), so that most reach the replay.
        let existing = cell_str(&raw.batch, "call", row);
        let mut value = call_json(rng, existing.as_deref(), false);
        for _ in 0..8 {
            let negative = [":-", "[-", ",-"].iter().any(|p| value.contains(p));
            if !negative && Call::parse(&value).is_ok() {
                break;
            }
            value = call_json(rng, existing.as_deref(), false);
        }
        log.push(format!("call[{row}] = {}", CellValue::Str(Some(value.clone()))));
        raw.batch = set_cell(&raw.batch, "call", row, &CellValue::Str(Some(value)));
        return match encode(&raw, false) {
            Ok(b) => (b, log.join("; ")),
            Err(e) => (seed_bytes.to_vec(), format!("(the call edit could not be encoded: {e}; the seed)")),
        };
    }
    let mut bytes = if rng.below(10) < 3 {
        seed_bytes.to_vec()
    } else {
        let mut raw = seed_raw.clone();
        let mut skip_schema = false;
        for _ in 0..1 + rng.below(3) {
            skip_schema |= structured_edit(rng, &mut raw, &mut log);
        }
        match encode(&raw, skip_schema) {
            Ok(b) => b,
            Err(e) => {
                log.push(format!("(the edit could not be encoded: {e}; bytes of the seed)"));
                seed_bytes.to_vec()
            }
        }
    };
    if log.is_empty() || rng.one_in(10) {
        byte_edit(rng, &mut bytes, &mut log);
    }
    (bytes, log.join("; "))
}

/// What one case found: an error variant or the replay's counts.
pub(crate) enum CaseEnd {
    Error(&'static str),
    Replayed { passed: usize, failed: usize, skipped: usize },
}

pub(crate) type Baseline = HashMap<String, (Row, Verdict)>;

/// Read and replay one mutated file (as `mmaemu replay` does, status included), and on some cases verify,
/// count and show it; Err names the broken promise.
pub(crate) fn examine(path: &Path, baseline: &Baseline, deep: Option<u64>) -> Result<CaseEnd, String> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let result = replay_file_with(path, &|| {}, |row, v| (row.clone(), v.clone(), status::facts(row, v)));
    let outcome = match result {
        Err(e) => {
            let text = e.to_string();
            ensure!(text.contains(&name), "the error does not name the file: {text}");
            CaseEnd::Error(variant(&e))
        }
        Ok((report, rows)) => {
            let (p, f, s) = (report.passed, report.failures.len(), report.skips.len());
            ensure!(report.rows == rows.len() && p + f + s == rows.len(), "counts {p}+{f}+{s} of {} rows", report.rows);
            let mut facts = Vec::with_capacity(rows.len());
            for (row, verdict, fact) in rows {
                if let Some((seed_row, seed_verdict)) = baseline.get(&row.id) {
                    if *seed_row == row {
                        ensure!(verdict == *seed_verdict, "row {:?} is unchanged but replays {verdict:?}", row.id);
                    }
                }
                if let Some(m) = verdict.message() {
                    ensure!(!m.trim().is_empty(), "row {:?}: {} without a message", row.id, verdict.name());
                }
                facts.push(fact);
            }
            let st = status::compute(&facts);
            let _ = (status::text(&st), status::json(&st), json_report(std::slice::from_ref(&report)));
            CaseEnd::Replayed { passed: p, failed: f, skipped: s }
        }
    };
    if let Some(pick) = deep {
        let (text, code) = inspect::verify(&[path.to_path_buf()], true);
        let want: &[u8] = if matches!(outcome, CaseEnd::Error(_)) { &[2] } else { &[0, 1] };
        ensure!(want.contains(&code), "datasets verify exits {code}, the read says {want:?}: {text}");
        let (text, code) = inspect::stats(&[path.to_path_buf()], pick % 2 == 0);
        let want = if matches!(outcome, CaseEnd::Error(_)) { 2 } else { 0 };
        ensure!(code == want, "datasets stats exits {code}, expected {want}: {text}");
        if let Ok(rec) = read_recording(path) {
            if !rec.rows.is_empty() {
                let id = rec.rows[pick as usize % rec.rows.len()].id.clone();
                // 0 the replay matches, 1 it does not (the exit table: something failed).
                let (text, code) = inspect::show(path, &id, 16);
                ensure!(code <= 1, "datasets show --id {id:?} exits {code}: {text}");
            }
        }
    }
    Ok(outcome)
}

pub(crate) fn fuzz(trial: &str, seed: &SeedFile, base: u64, cases: u64, total: u64) -> Result<(), String> {
    let dir = tempdir()?;
    let seed_path = match seed.keep {
        None => shipped(seed.file),
        Some(keep) => {
            let rec = read_shipped(seed.file)?;
            let rows: Vec<Row> =
                rec.rows.iter().enumerate().filter(|(i, r)| keep(*i, r)).map(|(_, r)| r.clone()).collect();
            write(&dir.path().join(seed.file), &rec, rows)?
        }
    };
    let seed_bytes = std::fs::read(&seed_path).map_err(|e| e.to_string())?;
    let seed_raw = load_raw(&seed_path)?;
    let seed_rows = read_recording(&seed_path).map_err(|e| e.to_string())?.rows;
    let seed_verdicts = verdicts(&seed_path)?;
    let baseline: Arc<Baseline> =
        Arc::new(seed_rows.into_iter().zip(seed_verdicts).map(|(row, (_, v))| (row.id.clone(), (row, v))).collect());
    ensure!(baseline.values().all(|(_, v)| *v == Verdict::Pass), "{}: a seed row does not pass", seed.file);

    let again = format!(
        "MMAEMU_HOSTILE_SEED=0x{base:016X} MMAEMU_HOSTILE_CASES={total} cargo test -p mmaemu-harness --test hostile \
         -- --exact {trial}"
    );
    let start = Instant::now();
    let panics_before = CASE_PANICS.load(Ordering::Relaxed);
    let (mut slowest, mut slowest_case) = (Duration::ZERO, 0);
    let mut errors: BTreeMap<&'static str, usize> = BTreeMap::new();
    let (mut replayed, mut rows_pass, mut rows_fail, mut rows_skip) = (0usize, 0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    let only = std::env::var("MMAEMU_HOSTILE_CASE").ok().and_then(|s| parse_u64(&s));
    let mut run = 0u64;
    for case in (0..cases).filter(|c| only.is_none_or(|o| o == *c)) {
        run += 1;
        let mut rng = Rng::of_case(base, trial, case);
        let (bytes, mutation) = mutate(&mut rng, &seed_bytes, &seed_raw, seed.calls_only);
        let deep = rng.one_in(4).then(|| rng.next());
        if only.is_some() {
            println!("{trial} case {case}: {mutation}");
        }
        let path = dir.path().join("case.parquet");
        std::fs::write(&path, &bytes).map_err(|e| e.to_string())?;
        let (p, b) = (path.clone(), baseline.clone());
        let t = Instant::now();
        let result = within(&format!("{trial} case {case}"), CASE_LIMIT, true, move || examine(&p, &b, deep));
        let took = t.elapsed();
        if took > slowest {
            (slowest, slowest_case) = (took, case);
        }
        let hung = matches!(&result, Err(e) if e.contains("did not return"));
        match result.and_then(|r| r) {
            Ok(CaseEnd::Error(v)) => *errors.entry(v).or_default() += 1,
            Ok(CaseEnd::Replayed { passed, failed, skipped }) => {
                replayed += 1;
                (rows_pass, rows_fail, rows_skip) = (rows_pass + passed, rows_fail + failed, rows_skip + skipped);
            }
            Err(e) => {
                let keep =
                    std::env::temp_dir().join(format!("mmaemu-hostile-{}-case{case}.parquet", trial.replace('/', "-")));
                let kept = std::fs::write(&keep, &bytes).map(|_| keep.display().to_string()).unwrap_or_default();
                failures.push(format!(
                    "case {case} (seed 0x{base:016X}): {e}\n  mutation: {mutation}\n  file kept: {kept}\n  this case \
                     alone: MMAEMU_HOSTILE_CASE={case} {again}"
                ));
                if hung || failures.len() >= 10 {
                    break;
                }
            }
        }
    }
    let contained = CASE_PANICS.load(Ordering::Relaxed) - panics_before;
    let peak = peak_rss_kib();
    println!(
        "{trial}: {run} cases in {:.1?} (slowest {slowest:.1?}, case {slowest_case}); typed errors {errors:?}; \
         {replayed} replayed ({rows_pass} rows passed, {rows_fail} failed, {rows_skip} skipped); panics contained \
         by the reader (any trial): {contained}; peak resident set {} MiB",
        start.elapsed(),
        peak.map_or("?".into(), |k| (k / 1024).to_string())
    );
    if !failures.is_empty() {
        return Err(format!(
            "{trial}: {} failing case(s):\n{}\nreproduce: {again}",
            failures.len(),
            failures.join("\n")
        ));
    }
    if let Some(peak) = peak {
        ensure!(peak < PEAK_LIMIT_KIB, "{trial}: peak resident set {peak} KiB (limit {PEAK_LIMIT_KIB} KiB); {again}");
    }
    Ok(())
}
