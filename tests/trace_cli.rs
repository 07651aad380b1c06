//! `mmaemu trace`: the JSON of a recorded row's element ends in the recorded bits (exit 0); a call by flags traces the
//! element `mmaemu` computes; bad arguments exit 2.

use mmaemu_datasets::{read_recording, Expectation};
use std::path::Path;
use std::process::Command;

fn mmaemu(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_mmaemu")).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn recorded_rows_end_in_their_recorded_bits() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/recordings/rtx4060-gemm.parquet");
    let rec = read_recording(&file).unwrap();
    // A few rows of different splits and out dtypes, one element each beyond the first.
    let rows: Vec<_> = rec
        .rows
        .iter()
        .filter(|r| matches!(r.expected, Expectation::Bits(_)) && r.m >= 2 && r.n >= 2)
        .step_by(97)
        .take(6)
        .collect();
    assert!(rows.len() >= 3);
    for row in rows {
        let f = file.to_str().unwrap();
        // The last element as well as (1, 1): JSON ends in the recorded bits.
        let last = format!("{},{}", row.m - 1, row.n - 1);
        for el in [last.as_str(), "0,1"] {
            let (code, out, err) = mmaemu(&["trace", f, "--row", &row.id, "--element", el, "--json"]);
            assert_eq!(code, 0, "row {} element {el}: {err}", row.id);
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["matches_recording"], true, "row {} element {el}", row.id);
            assert_eq!(v["bits"], v["recorded_bits"]);
        }
        let (code, out, err) = mmaemu(&["trace", f, "--row", &row.id, "--element", "1,1", "--json"]);
        assert_eq!(code, 0, "row {}: {err}", row.id);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["matches_recording"], true, "row {}", row.id);
        assert_eq!(v["bits"], v["recorded_bits"]);
        let (code, text, _) = mmaemu(&["trace", f, "--row", &row.id, "--element", "1,1"]);
        assert_eq!(code, 0);
        assert!(
            text.trim_end().ends_with(&format!(
                "matches the recorded bits 0x{:0w$X}",
                v["bits"].as_u64().unwrap(),
                w = 2 * width(row.effective_out_dtype())
            )),
            "{text}"
        );
    }
}

fn width(dtype: &str) -> usize {
    mmaemu_api::model::OutDtype::from_name(dtype).map_or(1, |d| d.width())
}

#[test]
fn a_call_by_flags_and_bad_arguments() {
    let (code, out, err) = mmaemu(&[
        "trace",
        "--m",
        "2",
        "--n",
        "16",
        "--k",
        "320",
        "--profile",
        "ada",
        "--out",
        "bf16",
        "--element",
        "1,5",
        "--splitk",
        "3,pairwise",
        "--data",
        "split",
        "--seed",
        "7",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["splits"].as_array().unwrap().len(), 3);
    assert_eq!(v["combination"].as_array().unwrap().len(), 2);
    assert_eq!(v["dtype"], "bfloat16");
    assert_eq!(mmaemu(&["trace", "--m", "2", "--n", "16", "--k", "32", "--element", "x"]).0, 2);
    assert_eq!(mmaemu(&["trace", "--m", "2", "--n", "16", "--k", "32", "--element", "5,0"]).0, 2);
    // A call the reference refuses (K not a multiple of 16) exits 1 with its error.
    assert_eq!(mmaemu(&["trace", "--m", "2", "--n", "16", "--k", "33"]).0, 1);
    assert_eq!(mmaemu(&["trace", "no-such-file.parquet", "--row", "1"]).0, 2);
    // The recorder's binades class (K-blocks binades apart) traces too; an unknown class names every one.
    let binades = ["trace", "--m", "2", "--n", "16", "--k", "320", "--profile", "ada", "--splitk", "3,pairwise"];
    let (code, _, err) = mmaemu(&[&binades[..], &["--data", "binades", "--json"]].concat());
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = mmaemu(&[&binades[..], &["--data", "nonesuch"]].concat());
    assert_eq!(code, 2);
    assert!(err.contains("special or binades"), "{err}");
}

#[test]
fn attribute_a_generated_call() {
    let (code, out, err) = mmaemu(&[
        "attribute",
        "--m",
        "8",
        "--n",
        "16",
        "--k",
        "256",
        "--profile",
        "hopper",
        "--fast",
        "--out",
        "e4m3",
        "--splitk",
        "2,contiguous",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outputs"], 128);
    assert_eq!(v["exact_checks"], v["attributed"]);
    let sources = v["sources"].as_array().unwrap();
    let names: Vec<&str> = sources.iter().map(|s| s["source"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["total", "term truncation", "block truncation", "chunk and split additions", "epilogue rounding"]
    );
    for s in sources {
        assert_eq!(s["histogram"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).sum::<u64>(), 128);
    }
    // More outputs than the attribution keeps figures for: a clear error before any work, exit 1.
    let (code, _, err) = mmaemu(&[
        "attribute",
        "--m",
        "8192",
        "--n",
        "4096",
        "--k",
        "16",
        "--profile",
        "hopper",
        "--fast",
        "--splitk",
        "1",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("limit"), "{err}");
}

#[test]
fn attribute_compares_variants_and_writes_html() {
    let html = std::env::temp_dir().join(format!("mmaemu-attribute-{}.html", std::process::id()));
    let (code, out, err) = mmaemu(&[
        "attribute",
        "--m",
        "16",
        "--n",
        "16",
        "--k",
        "512",
        "--splitk",
        "1",
        "--profile",
        "hopper",
        "--fast",
        "--out",
        "bf16",
        "--compare",
        "ada,slow,fp32,ada:slow",
        "--json",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cs = v["comparisons"].as_array().unwrap();
    assert_eq!(cs.len(), 4);
    for c in cs {
        assert_eq!(c["exact_checks"], c["attributed"]);
        let differ = c["outputs_differing"].as_u64().unwrap();
        // Every differing attributed output has exactly one source where it differs most.
        let largest: u64 =
            c["difference_by_source"].as_array().unwrap().iter().map(|s| s["largest_in"].as_u64().unwrap()).sum();
        assert!(largest <= differ, "{c}");
    }
    // fp32 out against bf16 out: the epilogue's second rounding is what differs, and it differs on most outputs.
    let fp32 = &cs[2];
    assert!(fp32["outputs_differing"].as_u64().unwrap() > 128, "{fp32}");
    assert_eq!(fp32["difference_by_source"][0]["outputs"], 0);
    // Hopper and ada truncate in blocks of 32 and 16: the term truncation differs.
    assert!(cs[0]["difference_by_source"][0]["outputs"].as_u64().unwrap() > 0, "{}", cs[0]);
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(&html);
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg") && page.contains("Compared variants"));
    assert!(
        !page.contains("<script") && !page.contains("src=\"http") && !page.contains("href=\"http"),
        "self-contained"
    );
}

#[test]
fn attribute_a_recorded_row() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/recordings/rtx4060-gemm.parquet");
    let rec = read_recording(&file).unwrap();
    let row = rec
        .rows
        .iter()
        .find(|r| {
            matches!(r.expected, Expectation::Bits(_))
                && r.m * r.n <= 4096
                && r.batch <= 1
                && r.out_select == mmaemu_datasets::OutSelect::Full
        })
        .unwrap();
    let (code, out, err) = mmaemu(&["attribute", file.to_str().unwrap(), "--row", &row.id, "--json"]);
    assert_eq!(code, 0, "row {}: {err}", row.id);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outputs"].as_i64().unwrap(), row.m * row.n);
    assert_eq!(v["exact_checks"], v["attributed"]);
    let (code, _, err) = mmaemu(&["attribute", file.to_str().unwrap(), "--row", "no-such-row"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_generated_call_traces_to_the_calls_own_bits() {
    // mmaemu trace generates only the rows it reads; its bits must be those of the whole call run by the model on the
    // whole generated operands, for every data class (special: per-row NaN/Inf, all_codes: offsets by index).
    use mmaemu_api::model::scaled_mm::ScaledMm;
    use mmaemu_api::model::splitk::SplitRequest;
    use mmaemu_api::model::tensor::View;
    use mmaemu_datasets::inputs::{generate, DataClass, InputSpec, Operand, GENERATOR_V1};
    let (m, n, k) = (5usize, 16usize, 96usize);
    for (class, data) in [
        ("special", DataClass::Special { scale: 1.0 }),
        ("all_codes", DataClass::AllCodes { finite: true }),
        ("split", DataClass::Split { scale: 1.0 }),
    ] {
        let spec = InputSpec { generator: GENERATOR_V1.into(), seed: 11, stream: 3, data };
        let a = generate(&spec, Operand::A, "e4m3", m, k).unwrap();
        let b = generate(&spec, Operand::B, "e5m2", n, k).unwrap();
        let mut call = ScaledMm::new(
            View {
                dtype: mmaemu_api::model::dtype::Dtype::Float8E4m3fn,
                shape: vec![m, k],
                strides: vec![k, 1],
                offset: 0,
                storage: &a,
            },
            View {
                dtype: mmaemu_api::model::dtype::Dtype::Float8E5m2,
                shape: vec![k, n],
                strides: vec![1, k],
                offset: 0,
                storage: &b,
            },
            0.5,
            3.0,
        );
        call.out_dtype = Some(mmaemu_api::model::dtype::Dtype::Float16);
        call.profile = mmaemu_api::model::scaled_mm::ProfileArg::Name("ada".into());
        call.splitk = SplitRequest::Pair(2, "serial".into());
        let out = call.run().unwrap().out;
        for (i, j) in [(0, 0), (3, 7), (4, 15)] {
            let (code, json, err) = mmaemu(&[
                "trace",
                "--m",
                "5",
                "--n",
                "16",
                "--k",
                "96",
                "--a",
                "e4m3",
                "--b",
                "e5m2",
                "--scale-a",
                "0.5",
                "--scale-b",
                "3",
                "--out",
                "fp16",
                "--profile",
                "ada",
                "--splitk",
                "2,serial",
                "--data",
                class,
                "--seed",
                "11",
                "--stream",
                "3",
                "--element",
                &format!("{i},{j}"),
                "--json",
            ]);
            assert_eq!(code, 0, "{err}");
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(v["bits"].as_u64().unwrap() as u32, out.get(i, j), "{class} ({i}, {j})");
        }
    }
}

/// A trace holds every product of the element's chains: one of K = 2^20 (about 8 GiB and 230 MB of JSON, 90 s) is
/// refused at once, naming the size; a rule that restarts every 0 tiles is not a split.
#[test]
fn sizes_a_trace_cannot_take_are_refused_at_once() {
    let t = std::time::Instant::now();
    let (code, out, err) = mmaemu(&["trace", "--m", "16", "--n", "16", "--k", "1048576", "--splitk", "1", "--json"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty() && err.contains("the trace of one element") && err.contains("trace a shorter K"), "{err}");
    assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
    // The largest ceiling gives a refusal, not an abort, where the machine cannot hold what it allows.
    let (code, _, err) = mmaemu(&[
        "--max-bytes",
        "18446744073709551615",
        "trace",
        "--m",
        "16777216",
        "--n",
        "16",
        "--k",
        "1048576",
        "--element",
        "16777215,0",
        "--splitk",
        "1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot allocate"), "{err}");
    // S = 10^6 splits of K = 4096 (12 GB before): a contiguous one leaves splits without k-tiles and is refused as
    // such; an interleaved one is refused by the trace's bound.
    let (code, _, err) = mmaemu(&["trace", "--m", "16", "--n", "16", "--k", "4096", "--splitk", "1000000,contiguous"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("leaves a split without k-tiles"), "{err}");
    let (code, _, err) =
        mmaemu(&["trace", "--m", "16", "--n", "16", "--k", "4096", "--profile", "ada", "--splitk", "1000000,serial"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("1000000 splits") && err.contains("fewer splits"), "{err}");
    let (code, _, err) =
        mmaemu(&["trace", "--m", "16", "--n", "64", "--k", "8192", "--splitk", "3,interleaved32/serial/restart0"]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("interleaved32/serial/restart0"), "{err}");
}
