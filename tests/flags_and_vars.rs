//! The README's exit-status table for values: a bad value of a flag or of an `MMAEMU_*` variable is exit 2 naming
//! it (every command, `info` included), sizes far beyond the memory ceiling end in a typed answer (never an
//! abort), `report --out` is checked before the replay, and `replay` ends with its verdict.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn mmaemu(vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mmaemu"));
    for k in [
        "MMAEMU_BACKEND",
        "MMAEMU_PROFILE",
        "MMAEMU_SPLITK_STRICT",
        "MMAEMU_MAX_BYTES",
        "MMAEMU_DISABLE_CUDA",
        "MMAEMU_SIMD",
        "MMAEMU_NATIVE",
    ] {
        c.env_remove(k);
    }
    c.envs(vars.iter().copied()).args(args).stdin(Stdio::null()).output().expect("mmaemu runs")
}

/// The exit status and stderr of `mmaemu ARGS` under `vars`, asserting the status.
#[track_caller]
fn expect(code: i32, vars: &[(&str, &str)], args: &[&str]) -> (String, String) {
    let out = mmaemu(vars, args);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(code), "{vars:?} mmaemu {}\nstdout: {stdout}\nstderr: {stderr}", args.join(" "));
    assert!(!stderr.contains("panicked") && !stderr.contains("memory allocation"), "{stderr}");
    (stdout, stderr.into_owned())
}

#[test]
fn a_bad_flag_value_is_exit_2_naming_the_flag() {
    let (_, e) = expect(2, &[], &["explain", "64", "64", "1024", "--profile", "garbage"]);
    assert!(e.contains("--profile") && e.contains("garbage"), "{e}");
    let (_, e) = expect(2, &[], &["explain", "64", "64", "1024", "--backend", "garbage"]);
    assert!(e.contains("--backend") && e.contains("garbage"), "{e}");
    // 2^70 does not parse as a split count: a usage error that says what a --splitk is.
    let (_, e) = expect(2, &[], &["explain", "64", "64", "1024", "--splitk", "1180591620717411303424,contiguous"]);
    assert!(e.contains("--splitk"), "{e}");
}

#[test]
fn a_bad_variable_value_is_exit_2_naming_the_variable() {
    for (var, value) in [
        ("MMAEMU_BACKEND", "garbage"),
        ("MMAEMU_PROFILE", "garbage"),
        ("MMAEMU_SPLITK_STRICT", "true"),
        ("MMAEMU_MAX_BYTES", "lots"),
        ("MMAEMU_DISABLE_CUDA", "perhaps"),
        ("MMAEMU_SIMD", "sse2"),
        ("MMAEMU_NATIVE", "openblas"),
        ("MMAEMU_MAX_BYTES", " 1024"),
    ] {
        let named = format!("{var}={value:?}");
        for args in [
            &["info"][..],
            &["explain", "16", "5760", "1920", "--out", "bfloat16", "--fast"],
            &["trace", "--m", "2", "--n", "2", "--k", "32", "--element", "0,0"],
            &["attribute", "--m", "2", "--n", "2", "--k", "32"],
            &["bench", "gemm", "--m", "2", "--n", "2", "--k", "32", "--reps", "0", "--no-native"],
        ] {
            let (_, e) = expect(2, &[(var, value)], args);
            assert!(e.contains(var), "{var}={value} {args:?}: {e}");
            if var != "MMAEMU_BACKEND" && var != "MMAEMU_PROFILE" {
                assert!(e.contains(&named), "{args:?}: {e}");
            }
        }
        // With --max-bytes the variable is still read, and still an error.
        expect(2, &[(var, value)], &["--max-bytes", "1024", "info"]);
        // Empty is the default, like unset.
        expect(0, &[(var, "")], &["info"]);
    }
    // The accepted values still work.
    expect(0, &[("MMAEMU_SPLITK_STRICT", "1"), ("MMAEMU_BACKEND", "reference")], &["info"]);
    expect(0, &[("MMAEMU_SPLITK_STRICT", "0"), ("MMAEMU_PROFILE", "ada")], &["info"]);
}

#[test]
fn a_huge_split_is_a_value_error_not_an_abort() {
    let (stdout, _) =
        expect(1, &[], &["explain", "64", "64", "1024", "--splitk", "1099511627776,contiguous", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("explain --json prints JSON");
    assert_eq!(v["validation"]["error"], "ValueError", "{v}");
    // Refused before any size is taken: most of its splits would own no k-tile (docs/reference.md §6.6).
    assert!(v["validation"]["message"].as_str().is_some_and(|m| m.contains("without k-tiles")), "{v}");
    // An interleaved one of that S is refused by the plan's fixed bound (the model reads no setting).
    let (stdout, _) = expect(
        1,
        &[],
        &["explain", "64", "64", "1024", "--profile", "ada", "--splitk", "1099511627776,serial", "--json"],
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("explain --json prints JSON");
    assert!(v["validation"]["message"].as_str().is_some_and(|m| m.contains("bytes it may take")), "{v}");
}

#[test]
fn report_checks_its_out_and_baseline_before_the_replay() {
    let dir = std::env::temp_dir().join(format!("mmaemu-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let out = blocker.join("report");
    let start = Instant::now();
    let (_, e) = expect(2, &[], &["report", "--no-bench", "--out", out.to_str().unwrap()]);
    assert!(e.contains("--out"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(20), "checked before the replay: {:?}", start.elapsed());
    let baseline = dir.join("baseline.json");
    std::fs::write(&baseline, br#"{"schema": "garbage"}"#).unwrap();
    let (_, e) = expect(
        2,
        &[],
        &["report", "--no-bench", "--out", dir.join("r").to_str().unwrap(), "--baseline", baseline.to_str().unwrap()],
    );
    assert!(e.contains("\"garbage\"") && !e.contains("Some("), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn replay_ends_with_its_verdict_and_shows_the_table_on_request() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/recordings/toolbox-h200.parquet");
    let (stdout, _) = expect(0, &[], &["replay", file.to_str().unwrap()]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.last(), Some(&"2 passed, 0 failed"), "{stdout}");
    assert!(lines[lines.len() - 2].starts_with("verdict: OK, all 2 verified rows"), "{stdout}");
    assert!(!stdout.contains("== status table =="), "{stdout}");
    let (stdout, _) = expect(0, &[], &["replay", "--status", file.to_str().unwrap()]);
    assert!(stdout.contains("== status table ==") && stdout.contains("validated"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("2 passed, 0 failed"));
}

#[test]
fn explain_takes_the_shape_positionally_or_by_the_flags_of_trace() {
    let call = ["--out", "bfloat16", "--fast", "--json"];
    let (positional, _) = expect(0, &[], &[&["explain", "16", "5760", "1920"][..], &call].concat());
    let (flags, _) = expect(0, &[], &[&["explain", "--m", "16", "--n", "5760", "--k", "1920"][..], &call].concat());
    assert_eq!(positional, flags);
    let (_, e) = expect(2, &[], &["explain", "16", "5760", "1920", "--m", "16"]);
    assert!(e.contains("--m"), "{e}");
}
