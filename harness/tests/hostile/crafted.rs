//! The crafted cases: files made from the shipped recordings with absurd sizes, mislabelled rows, wrong
//! samples, all-skipped rows, empty directories and FIFOs, each with the typed error or verdict it must give.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------------------------------------------
// Crafted files

/// A row shipping its operands by reference with m = 2^36 (or m = k = 2^17) is refused before anything is
/// generated: a typed error naming the limit, not an allocation failure. With a small shape the regenerated
/// operands are checked against the recorded sha256 (docs/recording-format.md, `inputs`).
pub(crate) fn by_reference_operands_over_the_ceiling() -> Result<(), String> {
    let gate = read_shipped("model-gate-ada.parquet")?;
    let base = gate_row(&gate, 17)?;
    let dir = tempdir()?;
    let zeros = "0".repeat(64);
    for (m, n, k, limit) in [(1i64 << 36, 16, 16, true), (131_072, 16, 131_072, true), (16, 16, 16, false)] {
        let mut row = base.clone();
        row.id = format!("by-reference {m}x{n}x{k}");
        (row.m, row.n, row.k) = (m, n, k);
        row.a.clear();
        row.b.clear();
        row.ext.inputs = Some(inputs_json(&zeros, &zeros));
        row.expected = Expectation::Sha256(zeros.clone());
        let path = write(&dir.path().join(format!("by-ref-{m}.parquet")), &gate, vec![row.clone()])?;
        let p = path.clone();
        let read = within(&row.id, CRAFTED_LIMIT, false, move || read_recording(&p))?;
        let what = match read {
            Err(DatasetError::Invalid { row_id, what, .. }) => {
                ensure!(row_id.as_deref() == Some(row.id.as_str()), "{}: the error names row {row_id:?}", row.id);
                what
            }
            Err(e) => return Err(format!("{}: expected an invalid row, got {} ({e})", row.id, variant(&e))),
            Ok(_) => return Err(format!("{}: read without an error", row.id)),
        };
        if limit {
            ensure!(what.contains(MAX_BYTES_ENV) && what.contains("--max-bytes"), "{}: {what}", row.id);
        } else {
            ensure!(what.contains("regenerated operand") && what.contains("sha256"), "{}: {what}", row.id);
        }
        let p = path.clone();
        let replayed = within(&row.id, CRAFTED_LIMIT, false, move || replay_file(&p, &|| {}))?;
        ensure!(matches!(replayed, Err(DatasetError::Invalid { .. })), "{}: replay: {replayed:?}", row.id);
        let (text, code) = within(&row.id, CRAFTED_LIMIT, false, move || inspect::verify(&[path], false))?;
        ensure!(code == 2, "{}: datasets verify exits {code}: {text}", row.id);
    }
    if let Some(peak) = peak_rss_kib() {
        ensure!(peak < PEAK_LIMIT_KIB, "peak resident set {peak} KiB");
    }
    Ok(())
}

/// Call objects that the format accepts but that would lay out absurd tensors (mat1.offset = 2^62, an out= of
/// [2^20, 2^20], a scale_a of [2^40]) are skipped with a reason naming the limit; the unchanged row still passes.
/// A zero-size call with N = 2^36 replays at once.
pub(crate) fn call_tensors_over_the_ceiling() -> Result<(), String> {
    let api = read_shipped("rtx4060-api.parquet")?;
    let base = api
        .rows
        .iter()
        .find(|r| r.call.is_some() && matches!(r.expected, Expectation::Bits(_)))
        .cloned()
        .ok_or("rtx4060-api has no scaled_mm row with a call object and bits")?;
    let call = serde_json::from_str::<Value>(&base.call.as_ref().map(Call::to_json).unwrap_or_default())
        .map_err(|e| e.to_string())?;
    let out_dtype = mmaemu_datasets::torch_dtype_name(base.effective_out_dtype()).to_string();
    let variants: Vec<(&str, Value)> = vec![
        ("mat1.offset = 2^62", {
            let mut c = call.clone();
            c["mat1"]["offset"] = json!(1u64 << 62);
            c
        }),
        ("out.shape = [2^20, 2^20]", {
            let mut c = call.clone();
            c["out"] = json!({"dtype": out_dtype, "shape": [1 << 20, 1 << 20], "contiguous": true});
            c
        }),
        ("scale_a.shape = [2^40]", {
            let mut c = call.clone();
            c["scale_a"] = json!({"dtype": "float32", "shape": [1u64 << 40], "value": 1.0});
            c
        }),
    ];
    let mut rows = vec![base.clone()];
    for (what, c) in &variants {
        let mut row = base.clone();
        row.id = format!("{} with {what}", base.id);
        row.call = Some(Call::parse(&c.to_string()).map_err(|e| format!("{what}: {e}"))?);
        rows.push(row);
    }
    // A zero-size call (M = K = 0) with N = 2^36: nothing to lay out, so it must not take 2^36 steps either.
    let mut wide = api
        .rows
        .iter()
        .find(|r| r.m == 0 && r.k == 0 && r.n > 0 && r.call.is_some())
        .cloned()
        .ok_or("rtx4060-api has no M = K = 0 row")?;
    wide.id = format!("{} with n = 2^36", wide.id);
    wide.n = 1 << 36;
    let dir = tempdir()?;
    let p = write(&dir.path().join("wide.parquet"), &api, vec![wide])?;
    let got = within("M = K = 0, N = 2^36", CRAFTED_LIMIT, false, move || verdicts(&p))??;
    ensure!(got.len() == 1, "{got:?}");
    let path = write(&dir.path().join("calls.parquet"), &api, rows)?;
    let got = within("call objects", CRAFTED_LIMIT, false, move || verdicts(&path))??;
    ensure!(got.len() == 1 + variants.len(), "{} verdicts", got.len());
    ensure!(got[0] == (base.id.clone(), Verdict::Pass), "the shipped row: {:?}", got[0]);
    for (id, v) in &got[1..] {
        match v {
            Verdict::Skip(reason) => {
                ensure!(reason.contains(MAX_BYTES_ENV) && reason.contains("--max-bytes"), "{id}: {reason}")
            }
            other => return Err(format!("{id}: expected a skip naming the limit, got {other:?}")),
        }
    }
    Ok(())
}

/// Zero-size rows with one huge dimension (M, N or K = 2^62 or 2^31 - 1, the others 0) for every op: nothing to
/// compute and nothing to allocate, so each replays at once (a loop over the huge dimension would not end).
pub(crate) fn zero_size_rows_with_a_huge_dimension() -> Result<(), String> {
    let api = read_shipped("rtx4060-api.parquet")?;
    let gate = read_shipped("model-gate-ada.parquet")?;
    let mma = read_shipped("toolbox-ada.parquet")?;
    let scaled =
        api.rows.iter().find(|r| r.m * r.n * r.k == 0 && r.call.is_some()).cloned().ok_or("no zero-size api row")?;
    let mut gemm = gate_row(&gate, 17)?;
    gemm.op = mmaemu_datasets::Op::Gemm;
    gemm.scale_a = Some(1.0f32.to_bits());
    gemm.scale_b = Some(1.0f32.to_bits());
    gemm.fast_accum = Some(true);
    let bases =
        [("scaled_mm", scaled), ("accumulator", gate_row(&gate, 17)?), ("gemm", gemm), ("mma", mma.rows[0].clone())];
    let dir = tempdir()?;
    for (op, base) in bases {
        for (huge, size) in ["m", "n", "k"].into_iter().flat_map(|d| [(d, 1i64 << 62), (d, (1 << 31) - 1)]) {
            let mut row = base.clone();
            row.id = format!("{op} with {huge} = {size}");
            row.batch = 1;
            row.m = if huge == "m" { size } else { 0 };
            row.n = if huge == "n" { size } else { 0 };
            row.k = if huge == "k" { size } else { 0 };
            row.a.clear();
            row.b.clear();
            if row.c.is_some() {
                row.c = Some(Vec::new());
            }
            if !matches!(row.expected, Expectation::Error(_)) {
                row.expected = Expectation::Bits(Vec::new());
            }
            let path = write(&dir.path().join(format!("{op}-{huge}-{size}.parquet")), &api, vec![row.clone()])?;
            // Milliseconds when nothing loops over the huge dimension; 2^31 steps take seconds.
            let got = within(&row.id, Duration::from_secs(3), false, move || verdicts(&path))??;
            ensure!(got.len() == 1, "{}: {got:?}", row.id);
        }
    }
    Ok(())
}

/// A row labelled with a preset the model does not have, or with a profile that runs another preset, is not
/// evidence: the file is invalid for every reader (reader, replay, verify), naming the row.
pub(crate) fn labels_must_name_what_is_replayed() -> Result<(), String> {
    let dir = tempdir()?;
    let cases = [
        ("toolbox-ada.parquet", "preset", "volta", "volta"),
        ("toolbox-h100.parquet", "profile", "ada", "hopper"),
        ("rtx4060-api.parquet", "preset", "hopper", "hopper"),
    ];
    for (file, column, value, named) in cases {
        let src = shipped(file);
        let first = read_shipped(file)?.rows[0].id.clone();
        let dst = dir.path().join(format!("{column}-{value}-{file}"));
        rewrite_str(&src, &dst, column, 0, value)?;
        let what = format!("{file} with {column} = {value}");
        let p = dst.clone();
        match within(&what, CRAFTED_LIMIT, false, move || read_recording(&p))? {
            Err(DatasetError::Invalid { row_id, what: text, .. }) => {
                ensure!(row_id.as_deref() == Some(first.as_str()), "{what}: the error names row {row_id:?}");
                ensure!(text.contains(named), "{what}: {text}");
            }
            Err(e) => return Err(format!("{what}: expected an invalid row, got {} ({e})", variant(&e))),
            Ok(_) => return Err(format!("{what}: read as valid")),
        }
        let p = dst.clone();
        let replayed = within(&what, CRAFTED_LIMIT, false, move || replay_file(&p, &|| {}))?;
        ensure!(matches!(replayed, Err(DatasetError::Invalid { .. })), "{what}: replay: {replayed:?}");
        let (text, code) = within(&what, CRAFTED_LIMIT, false, move || inspect::verify(&[dst], false))?;
        ensure!(code == 2, "{what}: datasets verify exits {code}: {text}");
    }
    Ok(())
}

/// `expected_samples` are evidence: an index outside the result makes the row invalid; a sample whose bits
/// differ from the replay fails the row even when the hash would match; right samples and hash pass.
pub(crate) fn expected_samples_are_checked() -> Result<(), String> {
    let gate = read_shipped("model-gate-ada.parquet")?;
    let base = gate_row(&gate, 17)?;
    let Expectation::Bits(bytes) = &base.expected else { return Err("the gate row ships no bits".into()) };
    let word = |i: usize| u32::from_le_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]]);
    let elems = bytes.len() / 4;
    ensure!(elems == (base.m * base.n) as usize, "{} elements for {}x{}", elems, base.m, base.n);
    let sha = sha256_hex(bytes);
    let samples = |index: Vec<u64>, bits: Vec<u32>| Samples { index, bits }.to_json();
    let last = elems - 1;
    let mut right = base.clone();
    right.id = "samples right".into();
    right.expected = Expectation::Sha256(sha.clone());
    right.ext.expected_samples = Some(samples(vec![0, last as u64], vec![word(0), word(last)]));
    let mut wrong = right.clone();
    wrong.id = "samples wrong".into();
    wrong.ext.expected_samples = Some(samples(vec![0, last as u64], vec![word(0), word(last) ^ 1]));
    let mut hash = right.clone();
    hash.id = "hash wrong".into();
    hash.ext.expected_samples = None;
    let flipped = if sha.starts_with('0') { "1" } else { "0" };
    hash.expected = Expectation::Sha256(format!("{flipped}{}", &sha[1..]));
    let dir = tempdir()?;
    let path = write(&dir.path().join("samples.parquet"), &gate, vec![right.clone(), wrong, hash])?;
    let p = path.clone();
    let got = within("samples", CRAFTED_LIMIT, false, move || verdicts(&p))??;
    ensure!(got[0].1 == Verdict::Pass, "right samples and hash: {:?}", got[0]);
    match &got[1].1 {
        Verdict::Fail(Failure::Bits(d)) => ensure!(d.expected == word(last) ^ 1, "{d}"),
        other => return Err(format!("a wrong sample: expected a bits failure, got {other:?}")),
    }
    ensure!(matches!(got[2].1, Verdict::Fail(Failure::Sha256 { .. })), "a wrong hash: {:?}", got[2]);

    // An index outside the result: the writer refuses it, and so does the reader of a file holding it.
    let mut outside = right.clone();
    outside.ext.expected_samples = Some(samples(vec![elems as u64], vec![0]));
    let refused = write(&dir.path().join("refused.parquet"), &gate, vec![outside]);
    ensure!(refused.is_err(), "the writer wrote a sample index outside the result");
    let dst = dir.path().join("outside.parquet");
    rewrite_str(&path, &dst, "expected_samples", 0, &samples(vec![elems as u64], vec![0]))?;
    match within("index outside", CRAFTED_LIMIT, false, move || read_recording(&dst))? {
        Err(DatasetError::Invalid { row_id, what, .. }) => {
            ensure!(row_id.as_deref() == Some("samples right"), "names row {row_id:?}");
            ensure!(what.contains("expected_samples") && what.contains(&elems.to_string()), "{what}");
        }
        other => return Err(format!("a sample index outside the result: {other:?}")),
    }
    Ok(())
}

/// A file whose rows all have `split_scheme = unknown` replays as all skipped, none passed
/// (docs/recording-format.md: "the replay counts it as skipped, never as passed").
pub(crate) fn all_rows_skipped() -> Result<(), String> {
    let dir = tempdir()?;
    let path = dir.path().join("unknown-split.parquet");
    let n = mmaemu_testkit::recordings::unknown_split(&shipped("model-gate-ada.parquet"), &path)?;
    let report =
        within("all skipped", CRAFTED_LIMIT, false, move || replay_file(&path, &|| {}))?.map_err(|e| e.to_string())?;
    ensure!(report.rows == n && report.skips.len() == n, "{report:?}");
    ensure!(report.passed == 0 && report.failures.is_empty(), "{report:?}");
    ensure!(report.skips.iter().all(|s| s.reason.contains("unknown")), "{:?}", report.skips);
    Ok(())
}

/// Discovery: no recording under the paths is an error (an empty directory, one holding a directory named
/// `x.parquet`, one holding other files); upper-case extensions are found; a directory cycle ends.
pub(crate) fn discovery_finds_recordings_or_says_none() -> Result<(), String> {
    let root = tempdir()?;
    let empty = root.path().join("empty");
    let dir_named = root.path().join("dir-named");
    let other = root.path().join("other");
    for d in [&empty, &dir_named.join("x.parquet"), &other] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    std::fs::write(other.join("notes.txt"), "no recording here").map_err(|e| e.to_string())?;
    for d in [&empty, &dir_named, &other] {
        let p = d.clone();
        match within("discover", CRAFTED_LIMIT, false, move || files(&[p]))? {
            Err(DatasetError::NoRecordings { paths }) => ensure!(paths == vec![d.clone()], "{paths:?}"),
            other => return Err(format!("{}: expected NoRecordings, got {other:?}", d.display())),
        }
    }
    let missing = root.path().join("missing.parquet");
    ensure!(matches!(files(&[missing]), Err(DatasetError::NotFound { .. })), "a missing path");

    // Upper-case extension, and a symbolic link back up the tree.
    let found = root.path().join("found");
    std::fs::create_dir_all(found.join("sub")).map_err(|e| e.to_string())?;
    let upper = found.join("H200.PARQUET");
    std::fs::copy(shipped("toolbox-h200.parquet"), &upper).map_err(|e| e.to_string())?;
    #[cfg(unix)]
    std::os::unix::fs::symlink(&found, found.join("sub").join("loop")).map_err(|e| e.to_string())?;
    let p = found.clone();
    let list = within("discover a cycle", CRAFTED_LIMIT, false, move || files(&[p]))?.map_err(|e| e.to_string())?;
    ensure!(list == vec![upper.clone()], "found {list:?}");
    let got = within("replay H200.PARQUET", CRAFTED_LIMIT, false, move || verdicts(&upper))??;
    ensure!(got.len() == 2 && got.iter().all(|(_, v)| *v == Verdict::Pass), "{got:?}");
    Ok(())
}

/// A FIFO named `*.parquet` is skipped inside a directory and refused when named, at once (opening it for
/// reading would block until a writer comes).
pub(crate) fn fifos_are_never_read() -> Result<(), String> {
    let root = tempdir()?;
    let good = root.path().join("good.parquet");
    std::fs::copy(shipped("toolbox-h200.parquet"), &good).map_err(|e| e.to_string())?;
    let fifo = root.path().join("x.parquet");
    mkfifo(&fifo)?;
    let dir = root.path().to_path_buf();
    let list =
        within("discover beside a FIFO", CRAFTED_LIMIT, false, move || files(&[dir]))?.map_err(|e| e.to_string())?;
    ensure!(list == vec![good.clone()], "found {list:?}");
    let f = fifo.clone();
    match within("discover a FIFO", CRAFTED_LIMIT, false, move || files(&[f]))? {
        Err(DatasetError::NotRegular { path }) => ensure!(path == fifo, "{}", path.display()),
        other => return Err(format!("discover a FIFO: {other:?}")),
    }
    let f = fifo.clone();
    let read = within("read a FIFO", CRAFTED_LIMIT, false, move || read_recording(&f))?;
    ensure!(matches!(read, Err(DatasetError::NotRegular { .. })), "read a FIFO: {read:?}");
    let f = fifo.clone();
    let replayed = within("replay a FIFO", CRAFTED_LIMIT, false, move || replay_file(&f, &|| {}))?;
    ensure!(matches!(replayed, Err(DatasetError::NotRegular { .. })), "replay a FIFO: {replayed:?}");
    let (text, code) = within("verify a FIFO", CRAFTED_LIMIT, false, move || inspect::verify(&[fifo], false))?;
    ensure!(code == 2, "datasets verify of a FIFO exits {code}: {text}");
    Ok(())
}

/// The recordings the fuzzer starts from replay correctly under this process's 64 MiB ceiling (the README: every
/// shipped row passes).
pub(crate) fn small_shipped_recordings_pass() -> Result<(), String> {
    for name in SEEDS.iter().map(|s| s.file) {
        let path = shipped(name);
        let got = within(name, Duration::from_secs(120), false, move || verdicts(&path))??;
        // Rows recorded when mmaemu refused row-wise scales hold no result bits: they are skipped, never failed.
        let out_of_scope = |v: &Verdict| matches!(v, Verdict::Skip(why) if why.contains("outside mmaemu's scope"));
        let bad: Vec<_> = got.iter().filter(|(_, v)| *v != Verdict::Pass && !out_of_scope(v)).take(3).collect();
        ensure!(!got.is_empty() && bad.is_empty(), "{name}: {} rows, not passing: {bad:?}", got.len());
    }
    Ok(())
}

/// A footer whose key-value metadata is not UTF-8 (a value's bytes replaced by 0xFF, lengths unchanged) is named
/// as such, not as "not Parquet" (docs/recording-format.md, "File key-value metadata").
pub(crate) fn non_utf8_metadata_is_named() -> Result<(), String> {
    let mut raw = load_raw(&shipped("toolbox-h200.parquet"))?;
    let marker = "mmaemu-non-utf8-marker";
    raw.kv.push(KeyValue::new("mmaemu:x-test".into(), marker.to_string()));
    let mut bytes = encode(&raw, false)?;
    let at =
        bytes.windows(marker.len()).rposition(|w| w == marker.as_bytes()).ok_or("the marker is not in the footer")?;
    bytes[at..at + marker.len()].fill(0xFF);
    let root = tempdir()?;
    let path = root.path().join("non-utf8.parquet");
    std::fs::write(&path, &bytes).map_err(|e| e.to_string())?;
    match read_recording(&path) {
        Err(e @ DatasetError::Invalid { .. }) => {
            let text = e.to_string();
            ensure!(text.contains("not valid UTF-8") && !text.contains("not Parquet"), "{text}");
        }
        other => return Err(format!("expected an invalid-file error, got {other:?}")),
    }
    let (text, code) = inspect::verify(&[path], false);
    ensure!(code == 2 && text.contains("UTF-8"), "datasets verify exits {code}: {text}");
    Ok(())
}
