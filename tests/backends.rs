//! Backend selection end to end (docs/reference.md §9.5, §9.3, §8.1): `explain` reports the backend `auto`
//! picks (the CPU kernels, with the CUDA slot's fallback reason), MMAEMU_BACKEND, explicit names and their
//! errors; `replay --backend cpu` gives the model's verdicts; `bench gemm --json` has its fields.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn mmaemu() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mmaemu"));
    c.env_remove("MMAEMU_BACKEND").env_remove("MMAEMU_PROFILE").env_remove("MMAEMU_SIMD");
    c
}

/// `explain 16 5760 1920 --fast --json` with extra arguments and MMAEMU_BACKEND: (exit code, plan).
fn explain(args: &[&str], env_backend: Option<&str>) -> (i32, Value) {
    let mut c = mmaemu();
    c.args(["explain", "16", "5760", "1920", "--fast", "--json"]).args(args);
    if let Some(b) = env_backend {
        c.env("MMAEMU_BACKEND", b);
    }
    let out = c.output().unwrap();
    let plan = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), plan)
}

#[test]
fn auto_picks_the_cpu_kernels() {
    let (code, plan) = explain(&[], None);
    assert_eq!(code, 0, "{plan}");
    let backend = plan["backend"].as_str().unwrap();
    assert!(["cpu:avx512", "cpu:avx2", "cpu:portable"].contains(&backend), "{backend}");
    assert_eq!(plan["fallbacks"], serde_json::json!(["cuda: tensors on cpu"]));
    assert_eq!(plan["warnings"], serde_json::json!([]));
}

#[test]
fn environment_and_explicit_names() {
    let (code, plan) = explain(&[], Some("reference"));
    assert_eq!((code, plan["backend"].as_str()), (0, Some("reference")));
    assert_eq!(plan["fallbacks"], serde_json::json!([]));
    // Empty means auto.
    let (_, plan) = explain(&[], Some(""));
    assert!(plan["backend"].as_str().unwrap().starts_with("cpu:"));
    let (_, plan) = explain(&["--backend", "cpu:portable"], None);
    assert_eq!(plan["backend"], "cpu:portable");
    // An explicit name wins over the environment (which only answers `auto`).
    let (_, plan) = explain(&["--backend", "reference"], Some("cpu"));
    assert_eq!(plan["backend"], "reference");
    // Unavailable and unknown backends: the call would raise.
    let (code, plan) = explain(&["--backend", "cuda"], None);
    assert_eq!(code, 1);
    assert_eq!(plan["validation"]["error"], "BackendUnavailableError");
    // A bad MMAEMU_BACKEND is a usage error naming the variable (exit 2), before the call is looked at.
    let (code, _) = explain(&[], Some(" cpu"));
    assert_eq!(code, 2);
}

/// MMAEMU_SIMD caps the CPU backend's levels: `auto` and `cpu` take the best level at or below it, and a level
/// above it is unavailable with the variable named.
#[test]
fn the_simd_variable_caps_the_levels() {
    let run = |simd: &str, args: &[&str]| {
        let out = mmaemu()
            .args(["explain", "16", "5760", "1920", "--fast", "--json"])
            .args(args)
            .env("MMAEMU_SIMD", simd)
            .output()
            .unwrap();
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null))
    };
    let (code, plan) = run("portable", &[]);
    assert_eq!((code, plan["backend"].as_str()), (Some(0), Some("cpu:portable")), "{plan}");
    let (_, plan) = run("portable", &["--backend", "cpu"]);
    assert_eq!(plan["backend"], "cpu:portable", "{plan}");
    let (code, plan) = run("portable", &["--backend", "cpu:avx2"]);
    assert_eq!(code, Some(1), "{plan}");
    assert_eq!(plan["validation"]["error"], "BackendUnavailableError", "{plan}");
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        assert!(plan["validation"]["message"].as_str().is_some_and(|m| m.contains("MMAEMU_SIMD")), "{plan}");
        let (_, plan) = run("avx2", &[]);
        assert_eq!(plan["backend"], "cpu:avx2", "{plan}");
    }
    // A cap above the CPU's best is no cap.
    let (_, unset) = explain(&[], None);
    let (_, plan) = run("avx512", &[]);
    assert_eq!(plan["backend"], unset["backend"], "{plan}");
}

#[test]
fn replay_through_the_cpu_backend_matches_the_model() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/recordings");
    let run = |backend: &str, file: &str| {
        let out = mmaemu()
            .args(["replay", "--json", "--allow-skips", "--backend", backend])
            .arg(dir.join(file))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), v["passed"].clone(), v["failed"].clone(), v["skipped"].clone())
    };
    // scaled_mm rows: the CPU backend computes every chain and passes exactly what the model passes.
    let reference = run("reference", "rtx4060-api.parquet");
    assert_eq!(reference.0, Some(0));
    assert!(reference.1.as_u64().unwrap() > 0, "{reference:?}");
    assert_eq!(run("cpu", "rtx4060-api.parquet"), reference);
    // mma rows start from a recorded accumulator: the model replays them, the CPU backend skips them.
    let (code, passed, failed, skipped) = run("reference", "toolbox-h100.parquet");
    assert_eq!((code, failed.as_u64(), skipped.as_u64()), (Some(0), Some(0), Some(0)));
    assert_eq!(run("cpu", "toolbox-h100.parquet"), (Some(0), 0.into(), 0.into(), passed));
    let file = dir.join("toolbox-h100.parquet");
    let out = mmaemu().args(["replay", "--backend", "gpu"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bench_gemm_json() {
    let out = mmaemu()
        .args(["bench", "gemm", "--m", "32", "--n", "48", "--k", "320", "--slow", "--splitk", "2,serial"])
        .args(["--profile", "ada", "--fmt-b", "e5m2", "--threads", "1", "--reps", "1", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "shape",
        "preset",
        "fast",
        "split",
        "backend",
        "simd",
        "threads",
        "emulated_gmacs",
        "native_f32_gmacs",
        "ratio",
    ] {
        assert!(v.get(key).is_some(), "{key} missing from {v}");
    }
    assert_eq!(
        (v["shape"].as_str(), v["preset"].as_str(), v["split"].as_str()),
        (Some("32x48x320"), Some("ada"), Some("2,serial"))
    );
    assert_eq!((v["fast"].as_bool(), v["threads"].as_u64()), (Some(false), Some(1)));
    let bad = mmaemu().args(["bench", "gemm", "--m", "8", "--n", "8", "--k", "8", "--splitk", "x"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn bench_gemm_plants_nonfinite_codes() {
    let bench = |fmt_b: &str, extra: &[&str]| {
        mmaemu()
            .args(["bench", "gemm", "--m", "16", "--n", "40", "--k", "256", "--fmt-b", fmt_b, "--threads", "1"])
            .args(["--reps", "1", "--no-native", "--verify", "--json"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = bench("e5m2", &["--nan", "0.01", "--inf", "0.01"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 1 % of A's and B's codes as NaN (41 + 102), 1 % of B's as Inf (A is e4m3): 245 codes.
    assert_eq!(v["planted"]["codes"].as_u64(), Some(41 + 102 + 102), "{v}");
    assert!(v["planted"]["planted_over_finite"].as_f64().is_some_and(|x| x > 0.0), "{v}");
    assert!(v["verified_against"].is_string(), "{v}");
    assert!(bench("e4m3", &["--nan", "0.01"]).status.success());
    let nan = bench("e5m2", &["--nan", "1.5"]);
    assert_eq!(nan.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&nan.stderr).contains("--nan 1.5"));
    let inf = bench("e4m3", &["--inf", "0.1"]);
    assert_eq!(inf.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&inf.stderr).contains("no infinities"));
}

/// Is there a usable GPU here? (CI has none; on a GPU machine the "unavailable" branches are skipped and
/// the GPU branches run instead.)
fn gpu_here() -> bool {
    mmaemu_api::kernels::cuda::Gpu::open(0).is_ok()
}

#[test]
fn explain_devices() {
    // Host tensors: the GPU is skipped with the specification's reason, whatever this machine has.
    let (code, plan) = explain(&["--device", "cpu"], None);
    assert_eq!(code, 0);
    assert_eq!(plan["fallbacks"], serde_json::json!(["cuda: tensors on cpu"]));
    let (code, plan) = explain(&["--device", "cpu", "--backend", "cuda"], None);
    assert_eq!(code, 1);
    assert_eq!(plan["validation"]["message"], "backend 'cuda' unavailable: tensors on cpu");
    // An unknown kernel is an unavailable backend; an unknown backend an invalid value (docs/reference.md §9.5).
    let (code, plan) = explain(&["--backend", "cuda:wmma"], None);
    assert_eq!(code, 1);
    assert_eq!(plan["validation"]["error"], "BackendUnavailableError", "{plan}");
    assert!(plan["validation"]["message"].as_str().unwrap().contains("unknown kernel 'wmma'"), "{plan}");
    // A malformed --device is a usage error.
    let out = mmaemu().args(["explain", "16", "16", "32", "--device", "gpu"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = mmaemu().args(["explain", "16", "16", "32", "--device", "cuda"]).output().unwrap();
    if gpu_here() {
        assert_eq!(out.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&out.stdout).contains("device=cuda:0"));
    } else {
        // No device: exit 4 with the reason on stderr.
        assert_eq!(out.status.code(), Some(4));
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("explain unavailable: device 'cuda': "));
    }
    // MMAEMU_DISABLE_CUDA keeps auto on the host.
    let out = mmaemu()
        .args(["explain", "16", "5760", "1920", "--fast", "--json"])
        .env("MMAEMU_DISABLE_CUDA", "Yes")
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(plan["backend"].as_str().unwrap_or("").starts_with("cpu:"), "{plan}");
}

#[test]
fn selftest_verdicts() {
    let run = |args: &[&str], disable: bool| {
        let mut c = mmaemu();
        c.arg("selftest").args(args);
        if disable {
            c.env("MMAEMU_DISABLE_CUDA", "1");
        }
        c.output().unwrap()
    };
    // A malformed kernel list is a usage error.
    assert_eq!(run(&["--kernels", "tiled, wmma"], false).status.code(), Some(2));
    // Disabled: UNAVAILABLE, exit 4, JSON only with `--json -`.
    let out = run(&["--json", "-"], true);
    assert_eq!(out.status.code(), Some(4));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["format"].as_str(), v["verdict"].as_str()), (Some("mmaemu-selftest/1"), Some("UNAVAILABLE")));
    let out = run(&[], false);
    let text = String::from_utf8_lossy(&out.stdout);
    if gpu_here() {
        // Every kernel passes its gate on a working GPU.
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(text.contains("  tiled: PASS (required: ") && text.contains("  generic: PASS (required: "), "{text}");
        assert!(text.contains("verdict: PASS - "), "{text}");
    } else {
        assert_eq!(out.status.code(), Some(4), "{text}");
        assert!(text.contains("verdict: UNAVAILABLE - "), "{text}");
    }
}

#[test]
fn info_reports_the_cuda_backend() {
    let out = mmaemu().args(["info", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cuda = v["backends"].as_array().unwrap().iter().find(|b| b["name"] == "cuda").cloned().unwrap();
    let status = cuda["status"].as_str().unwrap();
    if gpu_here() {
        assert!(status.starts_with("available: "), "{status}");
    } else {
        assert!(status.starts_with("unavailable - "), "{status}");
        assert!(v["device"].as_str().unwrap().starts_with("none: "));
    }
    let out = mmaemu().args(["info", "--json"]).env("MMAEMU_DISABLE_CUDA", "on").output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["device"], "none: disabled by MMAEMU_DISABLE_CUDA");
}
