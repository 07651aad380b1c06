//! The `mmaemu-record` binary: simulated sweeps work from the command line, GPU commands fail cleanly
//! (exit code 3, a message, no panic) on a machine without a driver or cuBLASLt, and the device-free
//! commands (`check`, `descriptor`, `dump`) work.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mmaemu-record"))
}

fn sweeps() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../recorder/sweeps")
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output { status, stdout, stderr } = cmd.output().unwrap();
    (status.code().unwrap_or(-1), String::from_utf8_lossy(&stdout).into(), String::from_utf8_lossy(&stderr).into())
}

#[test]
fn simulated_sweep_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("smoke.parquet");
    let (code, stdout, stderr) =
        run(bin().args(["sweep"]).arg(sweeps().join("smoke.toml")).args(["--simulate", "--quiet", "--out"]).arg(&out));
    assert_eq!(code, 0, "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["rows"], 120);
    assert_eq!(summary["rejected"], 8);
    let report = mmaemu_harness::files::replay_file(&out, &|| {}).unwrap();
    assert_eq!((report.passed, report.failures.len()), (120, 0));

    let dump = dir.path().join("dump");
    let (code, _, stderr) = run(bin().arg("dump").arg(&out).arg("--out").arg(&dump));
    assert_eq!(code, 0, "{stderr}");
    let index = std::fs::read_to_string(dump.join("index.jsonl")).unwrap();
    assert_eq!(index.lines().count(), 120);
    let first: serde_json::Value = serde_json::from_str(index.lines().next().unwrap()).unwrap();
    assert_eq!(first["fmt_a"], "float8_e4m3fn");
    assert!(dump.join("data.bin").metadata().unwrap().len() > 0);
}

#[test]
fn every_example_spec_runs_from_the_command_line() {
    // `mmaemu-record sweep SPEC --simulate --out FILE` with each example (their first cases: the whole
    // specs run through the library in tests/simulated.rs).
    let dir = tempfile::tempdir().unwrap();
    let mut specs: Vec<PathBuf> = std::fs::read_dir(sweeps())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("toml"))
        .collect();
    specs.sort();
    assert!(specs.len() >= 10);
    for spec in specs {
        let out = dir.path().join(format!("{}.parquet", spec.file_stem().unwrap().to_string_lossy()));
        let grid = std::fs::read_to_string(&spec).unwrap().contains("kind = \"grid\"");
        // The wrong command refuses the spec (exit 2) and names the right one.
        let wrong: &[&str] = if grid { &["sweep"] } else { &["heuristics", "--grid"] };
        let (code, _, stderr) = run(bin().args(wrong).arg(&spec).args(["--simulate", "--quiet", "--out"]).arg(&out));
        assert_eq!(code, 2, "{}: {stderr}", spec.display());
        assert!(stderr.contains(if grid { "heuristics --grid" } else { "mmaemu-record sweep" }), "{stderr}");
        assert!(!out.exists());
        if grid {
            let (code, _, stderr) = run(bin()
                .args(["heuristics", "--grid"])
                .arg(&spec)
                .args(["--simulate", "--quiet", "--limit", "12", "--out"])
                .arg(&out));
            assert_eq!(code, 0, "{}: {stderr}", spec.display());
            continue;
        }
        let (code, stdout, stderr) =
            run(bin().arg("sweep").arg(&spec).args(["--simulate", "--quiet", "--limit", "12", "--out"]).arg(&out));
        assert_eq!(code, 0, "{}: {stderr}", spec.display());
        let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert!(summary["cases"].as_u64().unwrap() <= 12, "{}", spec.display());
        let report = mmaemu_harness::files::replay_file(&out, &|| {}).unwrap();
        assert!(report.failures.is_empty(), "{}", spec.display());
        // A spec that records split layouts as unknown (`fit splitk`'s input) skips exactly those rows at replay.
        let unknown = std::fs::read_to_string(&spec).unwrap().contains("split_scheme = \"unknown\"");
        let unexpected = report.skips.iter().filter(|s| !(unknown && s.reason.contains("scheme 'unknown'")));
        assert_eq!(unexpected.count(), 0, "{}: {:?}", spec.display(), report.skips.first());
    }
}

#[test]
fn gpu_commands_fail_cleanly_without_a_gpu() {
    if mmaemu_recorder::gpu::probe_libraries().is_ok() {
        eprintln!("a CUDA driver and cuBLASLt are present: the no-GPU behaviour is not testable here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.parquet");
    let spec = sweeps().join("smoke.toml");
    let grid = sweeps().join("heuristics-smoke.toml");
    for args in [
        vec!["sweep".into(), spec.display().to_string(), "--out".into(), out.display().to_string()],
        vec![
            "heuristics".into(),
            "--grid".into(),
            grid.display().to_string(),
            "--out".into(),
            out.display().to_string(),
        ],
        vec!["probe".into()],
    ] {
        let (code, stdout, stderr) = run(bin().args(&args));
        assert_eq!(code, 3, "{args:?}: {stderr}");
        assert!(stderr.contains("no GPU available"), "{stderr}");
        assert!(stderr.contains("--simulate"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stdout.is_empty());
    }
    assert!(!out.exists());
}

#[test]
fn device_free_commands_and_usage_errors() {
    let (code, stdout, _) = run(bin().arg("check").arg(sweeps().join("data-classes.toml")));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["cases"], 1728);

    let (code, stdout, _) = run(bin().args([
        "descriptor",
        "--m",
        "16",
        "--n",
        "32",
        "--k",
        "64",
        "--fmt-b",
        "e5m2",
        "--out-dtype",
        "float8_e4m3fn",
        "--scale-result",
        "--caller",
        "transformer-engine",
    ]));
    assert_eq!(code, 0);
    let d: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(d["A"]["type"], "CUDA_R_8F_E5M2");
    assert_eq!(d["A"]["rows"], 64);
    assert_eq!(d["A"]["cols"], 32);
    // Transformer Engine 2.3 with an FP8 output: C type bf16, a D scale and an amax pointer.
    assert_eq!(d["C"]["type"], "CUDA_R_16BF");
    assert_eq!(d["C_pointer"], "null");
    let attrs: Vec<(String, String)> = d["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a[0].as_str().unwrap().to_string(), a[1].to_string()))
        .collect();
    assert!(attrs.contains(&("CUBLASLT_MATMUL_DESC_D_SCALE_POINTER".into(), "\"device fp32 scale_result\"".into())));
    assert!(attrs.contains(&("CUBLASLT_MATMUL_DESC_AMAX_D_POINTER".into(), "\"device fp32 amax_d\"".into())));
    assert_eq!(d["preferences"][0][1], 32 << 20);
    assert_eq!(d["preferences"].as_array().unwrap().len(), 5);

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "kind = \"sweep\"\nname = \"x\"\nruns = 1\n[[shapes]]\nm = 1\nn = 16\nk = 16\n").unwrap();
    let (code, _, stderr) = run(bin().arg("check").arg(&bad));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("runs must be at least 2"), "{stderr}");
    let (code, _, _) = run(bin().arg("check").arg(dir.path().join("missing.toml")));
    assert_eq!(code, 1);
    let (code, _, _) = run(bin().args(["sweep", "--bogus"]));
    assert_eq!(code, 2);
    let (code, _, stderr) = run(bin()
        .args(["heuristics", "--simulate", "--grid"])
        .arg(sweeps().join("heuristics-smoke.toml"))
        .arg("--out")
        .arg(dir.path().join("t.csv")));
    assert_eq!(code, 2, "{stderr}");
}

/// `truth --table`: a table or sidecar that is a FIFO or a link to /dev/zero is a usage error within seconds, not a
/// hang or an unbounded read.
#[test]
fn truth_refuses_a_table_that_is_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets/platforms/rtx4060-cublaslt-12.8.3.14/rtx4060-cublaslt-12.8.3.14.parquet");
    let fifo = |p: &Path| assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
    // The sidecar a link to /dev/zero, then a FIFO.
    let (zero, fifo_json) = (dir.path().join("zero"), dir.path().join("fifo"));
    std::fs::create_dir_all(&zero).unwrap();
    std::fs::create_dir_all(&fifo_json).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero.join("t.json")).unwrap();
    fifo(&fifo_json.join("t.json"));
    // The table a FIFO beside a good sidecar.
    let fifo_table = dir.path().join("fifo-table");
    std::fs::create_dir_all(&fifo_table).unwrap();
    std::fs::copy(source.with_extension("json"), fifo_table.join("t.json")).unwrap();
    fifo(&fifo_table.join("t.parquet"));
    for d in [&zero, &fifo_json, &fifo_table] {
        let start = std::time::Instant::now();
        let out = dir.path().join("out").join(d.file_name().unwrap());
        let (code, _, stderr) =
            run(bin().args(["truth", "--seed", "1", "--table"]).arg(d.join("t.parquet")).arg("--out").arg(&out));
        assert_ne!(code, 0, "{}", d.display());
        assert!(stderr.contains("not a regular file"), "{}: {stderr}", d.display());
        assert!(start.elapsed().as_secs() < 10, "{}", d.display());
    }
}
