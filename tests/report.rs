//! `mmaemu report`: the three files are written (the HTML self-contained, with SVG plots); a report
//! against a baseline made from the unmodified data, after one expected bit of one row is flipped, lists
//! exactly that row as newly failing and exits non-zero; bad inputs exit 2.

use mmaemu_datasets::{read_recording, write_recording, Expectation, Recording};
use mmaemu_reports::report::{make, write, ReportOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmaemu-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A copy of a shipped recording in `dir/data`.
fn copy_recording(dir: &Path, name: &str) -> PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/recordings").join(name);
    let dst = data.join(name);
    std::fs::copy(&src, &dst).unwrap();
    data
}

fn quick(out: PathBuf, data: &Path) -> ReportOptions {
    let mut args = ReportOptions::new(out);
    args.paths = vec![data.to_path_buf()];
    args.fuzz_cases = 40;
    args.no_bench = true;
    args
}

fn mmaemu(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mmaemu")).arg("report").args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn flipped_bit_is_exactly_one_newly_failing_row_and_exits_1() {
    let dir = scratch("flip");
    let data = copy_recording(&dir, "rtx4060-mma.parquet");
    // The baseline, from the unmodified data.
    let base_dir = dir.join("base");
    let base = make(&quick(base_dir.clone(), &data), &|_| ()).unwrap();
    assert!(!base.regressed());
    write(&base, &base_dir).unwrap();
    for f in ["report.json", "report.md", "report.html"] {
        assert!(base_dir.join(f).is_file(), "{f}");
    }
    // Flip one expected bit of one row.
    let file = data.join("rtx4060-mma.parquet");
    let mut rec: Recording = read_recording(&file).unwrap();
    let victim = rec
        .rows
        .iter()
        .position(|r| matches!(&r.expected, Expectation::Bits(b) if !b.is_empty()))
        .expect("a row with expected bits");
    if let Expectation::Bits(b) = &mut rec.rows[victim].expected {
        b[0] ^= 0x01;
    }
    let victim_id = rec.rows[victim].id.clone();
    write_recording(&file, &rec).unwrap();
    // Through the library: exactly that row changed, as a regression.
    let mut args = quick(dir.join("now"), &data);
    args.baseline = Some(base_dir.join("report.json"));
    let now = make(&args, &|_| ()).unwrap();
    let diff = now.diff.as_ref().unwrap();
    let rows: Vec<_> = diff.changes.iter().filter(|c| c.kind == "row").collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].subject, format!("reference rtx4060-mma.parquet {victim_id}"));
    assert_eq!((rows[0].before.as_str(), rows[0].after.as_str()), ("pass", "fail"));
    assert_eq!(rows[0].change, "newly failing");
    assert!(rows[0].regression);
    assert!(now.regressed());
    // Through the command line: exit 1, the row named in the summary and in every file.
    let out = dir.join("cli");
    let (code, stdout, stderr) = mmaemu(&[
        "--out".as_ref(),
        out.as_os_str(),
        "--baseline".as_ref(),
        base_dir.join("report.json").as_os_str(),
        "--fuzz-cases".as_ref(),
        "20".as_ref(),
        "--no-bench".as_ref(),
        data.as_os_str(),
    ]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("REGRESSION row reference rtx4060-mma.parquet {victim_id}")), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "mmaemu-report/1");
    assert_eq!(json["regressed"], true);
    let changes = json["baseline"]["changes"].as_array().unwrap();
    let row_changes: Vec<_> = changes.iter().filter(|c| c["kind"] == "row").collect();
    assert_eq!(row_changes.len(), 1);
    let fails: Vec<_> = json["problems"].as_array().unwrap().iter().filter(|p| p["outcome"] == "fail").collect();
    assert_eq!(fails.len(), 1);
    assert_eq!(fails[0]["id"], victim_id.as_str());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains(&victim_id));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains(&victim_id));
    // Self-contained: no script, no external resource.
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
    // The history carries the baseline's point.
    assert_eq!(json["history"].as_array().unwrap().len(), 2);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn clean_run_exits_0_and_bad_inputs_exit_2() {
    let dir = scratch("clean");
    let data = copy_recording(&dir, "toolbox-h200.parquet");
    let out = dir.join("out");
    let (code, stdout, stderr) = mmaemu(&[
        "--out".as_ref(),
        out.as_os_str(),
        "--fuzz-cases".as_ref(),
        "20".as_ref(),
        "--no-bench".as_ref(),
        data.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("no baseline"));
    // The same data against its own report: no change, exit 0.
    let again = dir.join("again");
    let (code, stdout, _) = mmaemu(&[
        "--out".as_ref(),
        again.as_os_str(),
        "--baseline".as_ref(),
        out.join("report.json").as_os_str(),
        "--fuzz-cases".as_ref(),
        "20".as_ref(),
        "--no-bench".as_ref(),
        data.as_os_str(),
    ]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains(": 0 changes, 0 regressions"), "{stdout}");
    // Unreadable baseline, missing recordings: exit 2.
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "{\"schema\": \"something-else\"}").unwrap();
    let (code, _, stderr) =
        mmaemu(&["--out".as_ref(), again.as_os_str(), "--baseline".as_ref(), junk.as_os_str(), data.as_os_str()]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("baseline"));
    let (code, _, _) = mmaemu(&["--out".as_ref(), again.as_os_str(), dir.join("missing").as_os_str()]);
    assert_eq!(code, Some(2));
    let _ = std::fs::remove_dir_all(dir);
}
