//! The `mmaemu` command line end to end: `replay` on bad input (one clear error line, exit 2), on a small
//! recording (exit 0, the closing line), `--json`; `explain` (exit codes, JSON fields, `--cases`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn mmaemu() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mmaemu"))
}

fn recordings() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/recordings")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmaemu-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `mmaemu replay FILE` and return (exit code, stdout, stderr).
fn replay(file: &Path) -> (i32, String, String) {
    let out = mmaemu().arg("replay").arg(file).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn replay_bad_inputs_exit_2_with_one_error_line() {
    let dir = scratch("bad");
    let good = std::fs::read(recordings().join("toolbox-h200.parquet")).unwrap();
    let truncated = dir.join("truncated.parquet");
    std::fs::write(&truncated, &good[..good.len() / 2]).unwrap();
    let text = dir.join("text.parquet");
    std::fs::write(&text, "id,op\n1,mma\n").unwrap();
    // A Parquet file without the `origin` column.
    let missing = dir.join("missing-column.parquet");
    {
        use arrow_array::{ArrayRef, RecordBatch, StringArray};
        use std::sync::Arc;
        let id: ArrayRef = Arc::new(StringArray::from(vec!["r0"]));
        let batch = RecordBatch::try_from_iter(vec![("id", id)]).unwrap();
        let mut props = std::collections::HashMap::new();
        props.insert("mmaemu:format".to_string(), "mmaemu-recording/1".to_string());
        let schema = Arc::new(batch.schema().as_ref().clone().with_metadata(props));
        let batch = batch.with_schema(schema.clone()).unwrap();
        let f = std::fs::File::create(&missing).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(f, schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
    for (file, what) in [(&truncated, "truncated"), (&text, "not Parquet"), (&missing, "missing column")] {
        let (code, stdout, stderr) = replay(file);
        assert_eq!(code, 2, "{what}: exit code; stdout {stdout} stderr {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{what}: one error line, got {stderr:?}");
        assert!(lines[0].contains(file.file_name().unwrap().to_str().unwrap()), "{what}: names the file: {}", lines[0]);
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    }
    let (code, _, stderr) = replay(&missing);
    assert_eq!(code, 2);
    assert!(stderr.contains("column"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn replay_passes_and_closes_with_the_summary_line() {
    let (code, stdout, _) = replay(&recordings().join("toolbox-h200.parquet"));
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(stdout.lines().last(), Some("2 passed, 0 failed"));
    let out = mmaemu().args(["replay", "--json"]).arg(recordings().join("toolbox-b200.parquet")).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64(), v["skipped"].as_u64()), (Some(2), Some(0), Some(0)));
    assert_eq!(v["files"][0]["rows"].as_u64(), Some(2));
}

fn explain_json(args: &[&str]) -> (i32, serde_json::Value) {
    let out = mmaemu().arg("explain").args(args).arg("--json").output().unwrap();
    (out.status.code().unwrap_or(-1), serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null))
}

#[test]
fn explain_exit_codes_and_fields() {
    // docs/reference.md §8.1's example.
    let (code, v) = explain_json(&["16", "5760", "1920", "--out", "bfloat16", "--fast"]);
    assert_eq!(code, 0);
    assert_eq!(v["validation"], "ok");
    assert_eq!(v["profile"], "hopper");
    assert_eq!(v["split"]["s"], 1);
    assert_eq!(v["split"]["source"], "table");
    assert_eq!(v["split"]["note"], "table row: algo 66, tile 312, numSplitsK 1, customOption 1");
    // e4m3 x e4m3 -> e5m2 is rejected on the reference platforms.
    let (code, v) = explain_json(&["16", "5760", "1920", "--out", "e5m2"]);
    assert_eq!(code, 1);
    assert_eq!(v["validation"]["error"], "ReferenceRejectsError");
    // A K < 1024 off the H100 table cannot be resolved (§6.5 consequence).
    let (code, v) = explain_json(&["16", "256", "128"]);
    assert_eq!(code, 1);
    assert_eq!(v["validation"]["error"], "SplitKUnknownError");
    // --splitk 2 parses but needs a scheme (invalid value, exit 1); a malformed --splitk is a usage error.
    let (code, v) = explain_json(&["16", "256", "128", "--splitk", "2"]);
    assert_eq!((code, v["validation"]["error"].as_str()), (1, Some("ValueError")));
    let out = mmaemu().args(["explain", "16", "256", "128", "--splitk", "2.5,serial"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // Column-major out= re-keys the split (§5.5): ada, bf16, M=16, K=8192, N=48, slow.
    let (_, row) = explain_json(&["16", "48", "8192", "--out", "bf16", "--profile", "ada"]);
    let (_, col) = explain_json(&["16", "48", "8192", "--out", "bf16", "--profile", "ada", "--layout", "out-col"]);
    assert_eq!((row["split"]["s"].as_u64(), row["split"]["scheme"].as_str()), (Some(8), Some("pairwise")));
    assert_eq!((col["split"]["s"].as_u64(), col["split"]["scheme"].as_str()), (Some(12), Some("pairwise")));
}

/// Row-wise scales are opt-in (§5.2 step 7): without `--experimental` or MMAEMU_EXPERIMENTAL=1, explain and trace
/// say UnsupportedFeatureError; with either, explain names the CUTLASS kernel and trace computes the element.
#[test]
fn rowwise_needs_the_experimental_opt_in() {
    let call = ["16", "32", "128", "--out", "bfloat16", "--scales", "rowwise", "--bias", "bf16"];
    let (code, v) = explain_json(&call);
    assert_eq!((code, v["validation"]["error"].as_str()), (1, Some("UnsupportedFeatureError")), "{v}");
    assert!(v["validation"]["message"].as_str().unwrap().contains("--experimental"), "{v}");
    let (code, v) = explain_json(&[&call[..], &["--experimental"]].concat());
    assert_eq!((code, v["validation"].as_str()), (0, Some("ok")), "{v}");
    assert!(v["kernel"].as_str().unwrap().contains("f8f8bf16_rowwise"), "{v}");
    let out = mmaemu().arg("explain").args(call).arg("--json").env("MMAEMU_EXPERIMENTAL", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let out = mmaemu().arg("explain").args(call).env("MMAEMU_EXPERIMENTAL", "yes").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a bad MMAEMU_EXPERIMENTAL is a usage error");
    let trace = ["trace", "--m", "16", "--n", "32", "--k", "128", "--out", "bfloat16", "--scales", "rowwise"];
    let out = mmaemu().args(trace).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("UnsupportedFeatureError") || text.contains("not supported"), "{text}");
    let out = mmaemu().args(trace).arg("--experimental").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn explain_cases_one_line_each() {
    let dir = scratch("cases");
    let cases = dir.join("cases.jsonl");
    std::fs::write(
        &cases,
        "{\"id\": \"a\", \"m\": 16, \"n\": 5760, \"k\": 1920, \"out\": \"bfloat16\", \"fast\": true}\n\
         {\"id\": 7, \"m\": 16, \"n\": 5760, \"k\": 1920, \"out\": \"e5m2\"}\n",
    )
    .unwrap();
    let out = mmaemu().args(["explain", "--cases"]).arg(&cases).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "one call would raise");
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!((lines[0]["id"].as_str(), lines[0]["validation"].as_str()), (Some("a"), Some("ok")));
    assert_eq!(lines[1]["id"], 7);
    assert_eq!(lines[1]["validation"]["error"], "ReferenceRejectsError");
    std::fs::remove_dir_all(&dir).ok();
}

/// The block-scaled modes (docs/reference.md §12.7): explain names each mode's cuBLASLt scale modes, preset, plan and
/// sources with the opt-in, says UnsupportedFeatureError without it, and applies torch's checks first, in the
/// Python layer's order (bias, out dtype, K multiple of 16, use_fast_accum, the profile's GPU). The plan's counts
/// are checked on seeded shapes against the contract's arithmetic: M·N chains, ceil(K / block) scale blocks.
#[test]
fn block_scaled_modes_explained() {
    // (word, the profile that runs it, another that cannot, cuBLASLt scale mode, preset, block)
    let b200 = "b200-tcgen05-experimental";
    let modes = [
        ("block128", "hopper", b200, "VEC128_32F x VEC128_32F", "hopper", 128),
        ("block128x128", "hopper", b200, "VEC128_32F x BLK128x128_32F", "hopper", 128),
        ("mx", b200, "hopper", "VEC32_UE8M0", "b200_tcgen05", 32),
        ("nvfp4", b200, "hopper", "VEC16_UE4M3", "b200_tcgen05_mxf4nvf4", 16),
    ];
    let seed: u64 = 0x45_2026_1206;
    let mut state = seed;
    let mut draw = |lo: u64, hi: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        lo + (state >> 33) % (hi - lo + 1)
    };
    for (word, good, bad, scale_mode, preset, block) in modes {
        let (m, n, k) = (draw(1, 300), 16 * draw(1, 20), 16 * draw(1, 40));
        let shape = [m.to_string(), n.to_string(), k.to_string()];
        let args = |extra: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = shape.to_vec();
            v.extend(["--scales", word, "--profile", good].iter().map(|s| s.to_string()));
            v.extend(extra.iter().map(|s| s.to_string()));
            v
        };
        let ctx = format!("seed {seed:#x}: {word} M={m} N={n} K={k}");
        let refs = |v: &[String]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (code, v) = explain_json(&refs(&args(&[])).iter().map(|s| s.as_str()).collect::<Vec<_>>());
        assert_eq!((code, v["validation"]["error"].as_str()), (1, Some("UnsupportedFeatureError")), "{ctx}: {v}");
        let on = args(&["--experimental"]);
        let (code, v) = explain_json(&on.iter().map(|s| s.as_str()).collect::<Vec<_>>());
        assert_eq!((code, v["validation"].as_str()), (0, Some("ok")), "{ctx}: {v}");
        assert_eq!((v["profile"].as_str(), v["preset"].as_str()), (Some(good), Some(preset)), "{ctx}: {v}");
        let kernel = v["kernel"].as_str().unwrap_or_default();
        let chains = format!("{} outputs, one chain each over K = {k}", m * n);
        let blocks = format!("{} ", k.div_ceil(block));
        for want in [scale_mode, preset, &chains, &blocks, "modelled from", "epilogue bfloat16"] {
            assert!(kernel.contains(want), "{ctx}: kernel lacks '{want}': {kernel}");
        }
        assert!(v["warnings"][0].as_str().unwrap().starts_with("ExperimentalPresetWarning"), "{ctx}: {v}");
        // torch's checks come first, in order; each the first error of a call with the later faults too.
        let fails = [
            (vec!["--bias", "bf16", "--out", "e4m3", "--fast"], "UnsupportedFeatureError", "bias"),
            (vec!["--out", "e4m3", "--fast"], "ValueError", "out_dtype"),
            (vec!["--fast"], "ValueError", "use_fast_accum"),
        ];
        for (extra, error, text) in fails {
            let (code, v) = explain_json(&args(&extra).iter().map(|s| s.as_str()).collect::<Vec<_>>());
            assert_eq!((code, v["validation"]["error"].as_str()), (1, Some(error)), "{ctx} {extra:?}: {v}");
            assert!(v["validation"]["message"].as_str().unwrap().contains(text), "{ctx} {extra:?}: {v}");
        }
        let ragged = [m.to_string(), n.to_string(), (k + 8).to_string(), "--scales".into(), word.into()];
        let (_, v) = explain_json(&[&ragged.iter().map(|s| s.as_str()).collect::<Vec<_>>()[..], &["--fast"]].concat());
        assert!(v["validation"]["message"].as_str().unwrap().contains("divisible by 16"), "{ctx}: {v}");
        let wrong =
            [&shape.iter().map(|s| s.as_str()).collect::<Vec<_>>()[..], &["--scales", word, "--profile", bad]].concat();
        let (code, v) = explain_json(&[&wrong[..], &["--experimental"]].concat());
        assert_eq!((code, v["validation"]["error"].as_str()), (1, Some("ReferenceRejectsError")), "{ctx}: {v}");
        // A split, an out= layout or a scale_result does not apply: a usage error.
        for extra in [&["--splitk", "2"][..], &["--layout", "out-col"], &["--scale-result", "2"]] {
            let (code, _) =
                explain_json(&on.iter().map(|s| s.as_str()).chain(extra.iter().copied()).collect::<Vec<_>>());
            assert_eq!(code, 2, "{ctx} {extra:?}");
        }
        // trace and attribute do not take block-scaled calls: a usage error.
        let out = mmaemu()
            .args(["trace", "--m", "16", "--n", "16", "--k", "32", "--scales", word, "--experimental"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{ctx}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
