//! The README's exit-status table, command by command: one representative case per row (0 done and nothing failed,
//! 1 something failed, 2 a usage error or unreadable input, 4 the device cannot be used), hostile inputs among
//! them, and a closed pipe ending a command quietly.

// Expected codes come from the README table, docs/reference.md §8.2 (explain, selftest), docs/report-schema.md
// (report) and docs/recording-format.md (what a replay counts as skipped); the crafted files are made here from the
// shipped recordings.

use mmaemu_datasets::{read_recording, write_recording, Expectation, Recording, Row};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn mmaemu() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mmaemu"))
}

fn recordings() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/recordings")
}

fn shipped(name: &str) -> PathBuf {
    recordings().join(name)
}

/// Run `mmaemu ARGS` and return its output.
fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    mmaemu().args(args).stdin(Stdio::null()).output().expect("mmaemu runs")
}

/// Assert the exit status of `mmaemu ARGS`, with the output in the message; returns the output.
#[track_caller]
fn expect<S: AsRef<std::ffi::OsStr>>(code: i32, args: &[S]) -> Output {
    let out = run(args);
    let shown: Vec<String> = args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "mmaemu {}\nstdout: {}\nstderr: {stderr}",
        shown.join(" "),
        String::from_utf8_lossy(&out.stdout).chars().take(4000).collect::<String>()
    );
    assert!(!stderr.contains("panicked"), "mmaemu {}: {stderr}", shown.join(" "));
    out
}

fn read(name: &str) -> Recording {
    read_recording(&shipped(name)).expect("a shipped recording reads")
}

fn write(path: &Path, like: &Recording, rows: Vec<Row>) -> PathBuf {
    let rec = Recording { path: path.to_path_buf(), meta: like.meta.clone(), rows };
    write_recording(path, &rec).expect("the crafted recording writes");
    path.to_path_buf()
}

/// toolbox-h200 with one bit of row 0's expected result flipped: a row that fails.
fn flipped(dir: &Path) -> PathBuf {
    let rec = read("toolbox-h200.parquet");
    let mut rows = rec.rows.clone();
    match &mut rows[0].expected {
        Expectation::Bits(b) => b[0] ^= 1,
        other => panic!("toolbox-h200 row 0 ships {other:?}"),
    }
    write(&dir.join("flipped.parquet"), &rec, rows)
}

/// Gate rows whose split scheme is `unknown`: replayed as skipped, never passed (docs/recording-format.md).
fn all_skipped(dir: &Path) -> PathBuf {
    let p = dir.join("unknown-split.parquet");
    mmaemu_testkit::recordings::unknown_split(&shipped("model-gate-ada.parquet"), &p).expect("the crafted recording");
    p
}

fn garbage(dir: &Path) -> PathBuf {
    let p = dir.join("garbage.parquet");
    std::fs::write(&p, "this is not a recording\n").unwrap();
    p
}

fn empty_dir(dir: &Path) -> PathBuf {
    let p = dir.join("empty");
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// toolbox-h100 with row 0's profile set to `ada` (which runs another preset), written with the raw Parquet crates
/// because the writer refuses it.
fn mislabelled(dir: &Path) -> PathBuf {
    use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
    use std::sync::Arc;
    let (batch, kv) = mmaemu_testkit::raw_parquet::read(&shipped("toolbox-h100.parquet")).unwrap();
    let profile: ArrayRef =
        Arc::new(StringArray::from((0..batch.num_rows()).map(|i| (i == 0).then_some("ada")).collect::<Vec<_>>()));
    let schema = batch.schema();
    let cols: Vec<(String, ArrayRef, bool)> = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, c)| {
            let c = if f.name() == "profile" { profile.clone() } else { c.clone() };
            (f.name().clone(), c, true)
        })
        .collect();
    let batch = RecordBatch::try_from_iter_with_nullable(cols).unwrap();
    assert_eq!(batch.column_by_name("profile").unwrap().null_count(), batch.num_rows() - 1);
    let p = dir.join("mislabelled.parquet");
    mmaemu_testkit::raw_parquet::write(&p, &batch, kv).unwrap();
    p
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

fn gpu_here() -> bool {
    mmaemu_api::kernels::cuda::Gpu::open(0).is_ok()
}

#[test]
fn replay_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = shipped("toolbox-h200.parquet");
    expect(0, &["replay".as_ref(), good.as_os_str()]);
    expect(1, &["replay".as_ref(), flipped(d).as_os_str()]);
    // Unreadable or no input: a missing path, an empty directory, a garbage file, a directory named x.parquet.
    expect(2, &["replay".as_ref(), d.join("missing.parquet").as_os_str()]);
    expect(2, &["replay".as_ref(), empty_dir(d).as_os_str()]);
    expect(2, &["replay".as_ref(), garbage(d).as_os_str()]);
    let named = d.join("named");
    std::fs::create_dir_all(named.join("x.parquet")).unwrap();
    expect(2, &["replay".as_ref(), named.as_os_str()]);
    // A row whose profile runs another preset is not evidence: the recording is bad input.
    expect(2, &["replay".as_ref(), mislabelled(d).as_os_str()]);
    // Every row skipped: nothing verified, 1; accepted with --allow-skips.
    let skipped = all_skipped(d);
    expect(1, &["replay".as_ref(), skipped.as_os_str()]);
    expect(0, &["replay".as_ref(), "--allow-skips".as_ref(), skipped.as_os_str()]);
    // The ceiling: with --max-bytes 1 not even the rows can be read: the file is refused, naming the flag.
    let out = expect(2, &["--max-bytes".as_ref(), "1".as_ref(), "replay".as_ref(), good.as_os_str()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-bytes"), "{}", String::from_utf8_lossy(&out.stderr));
    // A bad file among good ones is reported, the others still replay, and --json still prints its object.
    let mixed = d.join("mixed");
    std::fs::create_dir_all(&mixed).unwrap();
    std::fs::copy(&good, mixed.join("a-good.parquet")).unwrap();
    std::fs::write(mixed.join("b-bad.parquet"), "garbage").unwrap();
    let out = expect(2, &["replay".as_ref(), "--json".as_ref(), mixed.as_os_str()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json prints its object");
    let rows: u64 = read("toolbox-h200.parquet").rows.len() as u64;
    assert_eq!(v["passed"].as_u64(), Some(rows), "{v}");
    let errors = v["errors"].as_array().expect("an errors array");
    assert_eq!(errors.len(), 1, "{v}");
    assert!(errors[0]["path"].as_str().unwrap_or("").ends_with("b-bad.parquet"), "{v}");
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_or_skipped_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(shipped("toolbox-h200.parquet"), dir.path().join("good.parquet")).unwrap();
    let fifo = dir.path().join("x.parquet");
    mkfifo(&fifo);
    let start = Instant::now();
    expect(2, &["replay".as_ref(), fifo.as_os_str()]);
    expect(0, &["replay".as_ref(), dir.path().as_os_str()]);
    expect(2, &["datasets".as_ref(), "verify".as_ref(), fifo.as_os_str()]);
    expect(2, &["explain".as_ref(), "--cases".as_ref(), fifo.as_os_str()]);
    assert!(start.elapsed() < Duration::from_secs(60), "took {:?}", start.elapsed());
}

#[test]
fn status_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    expect(0, &["status".as_ref(), shipped("toolbox-h200.parquet").as_os_str()]);
    expect(0, &["status".as_ref(), "--json".as_ref(), shipped("toolbox-h200.parquet").as_os_str()]);
    expect(1, &["status".as_ref(), flipped(d).as_os_str()]);
    expect(2, &["status".as_ref(), d.join("missing.parquet").as_os_str()]);
    expect(2, &["status".as_ref(), empty_dir(d).as_os_str()]);
    expect(2, &["status".as_ref(), garbage(d).as_os_str()]);
    let skipped = all_skipped(d);
    expect(1, &["status".as_ref(), skipped.as_os_str()]);
    expect(0, &["status".as_ref(), "--allow-skips".as_ref(), skipped.as_os_str()]);
}

#[test]
fn datasets_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = shipped("toolbox-h200.parquet");
    expect(0, &["datasets".as_ref(), "verify".as_ref(), good.as_os_str()]);
    expect(0, &["datasets".as_ref(), "verify".as_ref(), "--sha256".as_ref(), good.as_os_str()]);
    // Two rows with identical inputs on one GPU expecting different results: a hash violation (--sha256 only).
    let rec = read("toolbox-h200.parquet");
    let mut twin = rec.rows[0].clone();
    twin.id = format!("{} twin", twin.id);
    match &mut twin.expected {
        Expectation::Bits(b) => b[0] ^= 1,
        other => panic!("{other:?}"),
    }
    let mut rows = rec.rows.clone();
    rows.push(twin);
    let twins = write(&d.join("twins.parquet"), &rec, rows);
    expect(0, &["datasets".as_ref(), "verify".as_ref(), twins.as_os_str()]);
    expect(1, &["datasets".as_ref(), "verify".as_ref(), "--sha256".as_ref(), twins.as_os_str()]);
    for bad in [d.join("missing.parquet"), empty_dir(d), garbage(d), mislabelled(d)] {
        expect(2, &["datasets".as_ref(), "verify".as_ref(), bad.as_os_str()]);
        expect(2, &["datasets".as_ref(), "stats".as_ref(), bad.as_os_str()]);
    }
    expect(0, &["datasets".as_ref(), "stats".as_ref(), good.as_os_str()]);
    expect(0, &["datasets".as_ref(), "stats".as_ref(), "--json".as_ref(), good.as_os_str()]);
    let id = rec.rows[0].id.as_str();
    expect(0, &["datasets".as_ref(), "show".as_ref(), good.as_os_str(), "--id".as_ref(), id.as_ref()]);
    expect(
        2,
        &["datasets".as_ref(), "show".as_ref(), d.join("missing.parquet").as_os_str(), "--id".as_ref(), id.as_ref()],
    );
    // --ids lists every row, one a line, with what it is; a missing id names rows with a result and --ids.
    let o = mmaemu().args(["datasets", "show", "--ids"]).arg(&good).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert_eq!(listed.lines().count(), rec.rows.len());
    assert!(rec.rows.iter().all(|r| listed.lines().any(|l| l.starts_with(&format!("{}\t", r.id)))), "{listed}");
    let o = mmaemu().args(["datasets", "show", "--id", "no such row"]).arg(&good).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--ids"), "{}", String::from_utf8_lossy(&o.stderr));
    expect(2, &["datasets".as_ref(), "show".as_ref(), good.as_os_str()]);
    expect(2, &["datasets", "frobnicate"]);
}

#[test]
fn explain_exit_codes() {
    // docs/reference.md §8.1's example runs; --splitk 2 parses and is reported invalid (§8.2).
    expect(0, &["explain", "16", "5760", "1920", "--out", "bfloat16", "--fast"]);
    expect(1, &["explain", "16", "256", "128", "--splitk", "2"]);
    // Usage errors (§8.2): a non-integer size, a malformed --splitk, an unknown --device, a missing size.
    expect(2, &["explain", "16", "16", "1.5"]);
    expect(2, &["explain", "16", "256", "128", "--splitk", "two"]);
    expect(2, &["explain", "16", "16", "32", "--device", "gpu"]);
    expect(2, &["explain", "16", "16"]);
    // The device asked for cannot be used: 4 (with a GPU here it runs).
    expect(if gpu_here() { 0 } else { 4 }, &["explain", "16", "16", "32", "--device", "cuda"]);
}

#[test]
fn explain_cases_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let good = r#"{"id": "a", "m": 16, "n": 5760, "k": 1920, "out": "bfloat16", "fast": true}"#;
    expect(0, &["explain".as_ref(), "--cases".as_ref(), file("good.jsonl", good).as_os_str()]);
    let raising = format!("{good}\n{}\n", r#"{"id": 7, "m": 16, "n": 5760, "k": 1920, "out": "e5m2"}"#);
    expect(1, &["explain".as_ref(), "--cases".as_ref(), file("raising.jsonl", &raising).as_os_str()]);
    // Upper-case keys are unknown keys, not a 0 x 0 x 0 call; a misspelt key; a layout the command line
    // rejects; a case without k.
    for (name, line) in [
        ("upper", r#"{"M": 16, "N": 16, "K": 16}"#),
        ("fats", r#"{"m": 16, "n": 5760, "k": 1920, "fats": true}"#),
        ("layout", r#"{"m": 16, "n": 5760, "k": 1920, "layout": "diagonal"}"#),
        ("no-k", r#"{"m": 16, "n": 5760}"#),
        ("not-json", "m=16 n=16 k=16"),
    ] {
        let p = file(&format!("{name}.jsonl"), &format!("{line}\n"));
        expect(2, &["explain".as_ref(), "--cases".as_ref(), p.as_os_str()]);
    }
    // Not a regular file: refused at once instead of read without end.
    let start = Instant::now();
    expect(2, &["explain", "--cases", "/dev/zero"]);
    assert!(start.elapsed() < Duration::from_secs(10), "explain --cases /dev/zero took {:?}", start.elapsed());
    expect(2, &["explain".as_ref(), "--cases".as_ref(), dir.path().as_os_str()]);
    // `-` reads the cases from stdin.
    let mut child = mmaemu()
        .args(["explain", "--cases", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{good}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((line["id"].as_str(), line["validation"].as_str()), (Some("a"), Some("ok")));
}

#[test]
fn bench_exit_codes() {
    let tiny = ["bench", "gemm", "--m", "16", "--n", "16", "--k", "16", "--reps", "0", "--threads", "1"];
    expect(0, &tiny);
    // An empty GEMM, no threads, far more threads than cores, sizes over the ceiling or overflowing.
    let start = Instant::now();
    expect(2, &["bench", "gemm", "--m", "0", "--n", "0", "--k", "0"]);
    expect(2, &["bench", "gemm", "--m", "16", "--n", "16", "--k", "16", "--threads", "0"]);
    expect(2, &["bench", "gemm", "--m", "16", "--n", "16", "--k", "16", "--threads", "100000"]);
    expect(2, &["bench", "gemm", "--m", "1048576", "--n", "1048576", "--k", "1048576"]);
    let max = u64::MAX.to_string();
    expect(2, &["bench", "gemm", "--m", &max, "--n", &max, "--k", "16"]);
    assert!(start.elapsed() < Duration::from_secs(30), "refusals took {:?}", start.elapsed());
    expect(2, &["bench", "gemm", "--m", "16", "--n", "16", "--k", "16", "--fmt-a", "e3m4"]);
    expect(2, &["bench", "gemm", "--m", "-1", "--n", "16", "--k", "16"]);
    expect(2, &["bench", "gemm", "--m", "16", "--n", "16", "--k", "16", "--tiling", "diagonal"]);
    // The suite: no shape within the limit, an unknown preset (refused before anything is allocated).
    expect(2, &["bench", "suite", "--max-macs", "1"]);
    expect(2, &["bench", "suite", "--presets", "volta", "--max-macs", "20000000"]);
}

#[test]
fn fit_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A few recorded split rows of the RTX 4060: the README says the fit recovers their rules.
    let rec = read("rtx4060-gemm.parquet");
    let rows: Vec<Row> = rec
        .rows
        .iter()
        .filter(|r| r.split_s.unwrap_or(1) > 1 && matches!(r.expected, Expectation::Bits(_)) && r.m * r.n <= 64 * 64)
        .take(4)
        .cloned()
        .collect();
    assert!(!rows.is_empty(), "rtx4060-gemm has split rows");
    let split = write(&d.join("split.parquet"), &rec, rows.clone());
    expect(0, &["fit".as_ref(), "splitk".as_ref(), split.as_os_str()]);
    let first = rows[0].clone();
    // The same rows with their results broken: no rule reproduces them (verdict none, a failed check).
    let broken: Vec<Row> = rows
        .into_iter()
        .map(|mut r| {
            if let Expectation::Bits(b) = &mut r.expected {
                for x in b.iter_mut() {
                    *x ^= 0x55;
                }
            }
            r
        })
        .collect();
    let broken = write(&d.join("broken.parquet"), &rec, broken);
    expect(1, &["fit".as_ref(), "splitk".as_ref(), broken.as_os_str()]);
    // A row claiming S = 2^31 - 1 splits: skipped by the plan's bound at once, not an abort (issue: it aborted).
    let mut huge = first;
    huge.split_s = Some(i32::MAX);
    let huge = write(&d.join("huge-split.parquet"), &rec, vec![huge]);
    let t = std::time::Instant::now();
    let out = mmaemu().args(["fit", "splitk"]).arg(&huge).output().unwrap();
    assert!(matches!(out.status.code(), Some(1) | Some(2)), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
    // No split row at all: nothing to fit, a failed fit at once (the preset fit likewise on no fittable row).
    let unsplit: Vec<Row> = rec.rows.iter().filter(|r| r.split_s.unwrap_or(1) == 1).take(2).cloned().collect();
    let unsplit = write(&d.join("unsplit.parquet"), &rec, unsplit);
    expect(1, &["fit".as_ref(), "splitk".as_ref(), unsplit.as_os_str()]);
    expect(2, &["fit".as_ref(), "splitk".as_ref(), d.join("missing.parquet").as_os_str()]);
    expect(2, &["fit".as_ref(), "splitk".as_ref(), garbage(d).as_os_str()]);
    expect(2, &["fit".as_ref(), "envelope".as_ref(), d.join("missing.parquet").as_os_str()]);
}

#[test]
fn report_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = shipped("toolbox-h200.parquet");
    let report = |out: &str, extra: &[&std::ffi::OsStr], code: i32| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["report".as_ref()];
        let out = d.join(out);
        args.extend(["--out".as_ref(), out.as_os_str(), "--no-bench".as_ref(), "--fuzz-cases".as_ref(), "0".as_ref()]);
        args.extend_from_slice(extra);
        expect(code, &args);
        out
    };
    // docs/report-schema.md: 0 written and nothing regressed.
    let first = report("first", &[good.as_os_str()], 0);
    assert!(first.join("report.json").is_file());
    // 2: an unreadable baseline, one whose schema is another, one reduced to its schema string, no rows.
    let baseline = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    for (name, text) in [
        ("not-json.json", "not json"),
        ("other-schema.json", r#"{"schema": "mmaemu-report/0"}"#),
        ("schema-only.json", r#"{"schema": "mmaemu-report/1"}"#),
    ] {
        let b = baseline(name, text);
        report("bad", &["--baseline".as_ref(), b.as_os_str(), good.as_os_str()], 2);
    }
    report("missing", &["--baseline".as_ref(), d.join("nothing.json").as_os_str(), good.as_os_str()], 2);
    report("empty", &[empty_dir(d).as_os_str()], 2);
}

#[test]
fn selftest_and_info_exit_codes() {
    // docs/reference.md §8.2: UNAVAILABLE (no CUDA backend in this build, no driver, no device) is 4.
    if gpu_here() {
        let out = run(&["selftest"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    } else {
        expect(4, &["selftest"]);
    }
    expect(2, &["selftest", "--kernels", "tiled, wmma"]);
    expect(0, &["info"]);
    let out = expect(0, &["info", "--json"]);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("info --json prints JSON");
}

#[test]
fn usage_errors_exit_2() {
    expect(2, &[] as &[&str]);
    expect(2, &["frobnicate"]);
    expect(2, &["replay"]);
    expect(2, &["status"]);
    expect(2, &["--max-bytes", "lots", "replay", "datasets/recordings"]);
    expect(2, &["replay", "--backend", "abacus", "datasets/recordings/toolbox-h200.parquet"]);
}

/// How a command ended whose stdout was closed: killed by SIGPIPE (141 in a shell) or done (0); never a panic.
#[cfg(unix)]
fn quiet_end(status: std::process::ExitStatus, stderr: &[u8], what: &str) {
    use std::os::unix::process::ExitStatusExt;
    let stderr = String::from_utf8_lossy(stderr);
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{what}: {stderr}");
    assert!(
        status.signal() == Some(libc::SIGPIPE) || status.code() == Some(0),
        "{what}: ended with {status:?}; stderr {stderr}"
    );
}

#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::os::unix::io::FromRawFd;
    // `mmaemu replay datasets/recordings | head -1`.
    let mut child = mmaemu()
        .args(["replay", "datasets/recordings"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(!first.is_empty());
    let out = child.wait_with_output().unwrap();
    quiet_end(out.status, &out.stderr, "replay | head -1");

    // The same with the reader gone before anything is written: the command must be ended by SIGPIPE.
    let small = shipped("toolbox-h200.parquet");
    let small = small.to_str().unwrap();
    let commands: [&[&str]; 4] = [
        &["replay", small],
        &["status", "--json", small],
        &["datasets", "stats", small],
        &["explain", "16", "5760", "1920", "--out", "bfloat16"],
    ];
    for args in commands {
        let mut fds = [0; 2];
        // SAFETY: a two-element array for the pipe's ends.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: fds[0] is the read end just created and owned here; dropping the File closes it.
        drop(unsafe { std::fs::File::from_raw_fd(fds[0]) });
        // SAFETY: fds[1] is the write end just created; Stdio takes ownership.
        let write_end = unsafe { Stdio::from_raw_fd(fds[1]) };
        let out = mmaemu().args(args).stdout(write_end).stderr(Stdio::piped()).output().unwrap();
        use std::os::unix::process::ExitStatusExt;
        let what = args.join(" ");
        quiet_end(out.status, &out.stderr, &what);
        assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{what}: {:?}", out.status);
    }
}
