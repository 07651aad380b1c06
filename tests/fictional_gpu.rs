//! The bring-up loop end to end without a GPU (docs/bring-up.md): a GPU that exists nowhere — 64-product blocks
//! with 20 term bits, and a table that splits with a rule no built-in uses — is recorded on the simulated device,
//! its preset and split rule are fitted back from those rows alone, a bundle is built from the fits, and that bundle
//! gives every recorded bit from the command line, its status experimental (model rows only).

use mmaemu_recorder::heuristics::{run_heuristics, HeuristicsOptions};
use mmaemu_recorder::sim::SimDevice;
use mmaemu_recorder::spec::Sweep;
use mmaemu_recorder::sweep::{run_sweep, SweepOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The shipped table whose rows the fictional GPU's table reuses under its own name and scheme map.
const RTX: &str = "rtx4060-cublaslt-12.8.3.14";
/// The fictional GPU's split rule for customOption 1.
const RULE: &str = "interleaved32/tree/restart4";

fn mmaemu(platforms: Option<&Path>) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mmaemu"));
    c.env_remove("MMAEMU_PLATFORMS");
    if let Some(p) = platforms {
        c.env("MMAEMU_PLATFORMS", p);
    }
    c
}

fn run(c: &mut Command) -> String {
    let out: Output = c.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{c:?}: {text}");
    text
}

fn sha(path: &Path) -> String {
    mmaemu_datasets::digest::sha256_file(path).unwrap().0
}

/// The truth: the GPU as the simulated device runs it (nothing in the code names it).
fn truth(dir: &Path) -> PathBuf {
    let t = dir.join("truth");
    std::fs::create_dir(&t).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/platforms").join(RTX);
    std::fs::copy(src.join(format!("{RTX}.parquet")), t.join("fx1-table.parquet")).unwrap();
    let mut sidecar: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join(format!("{RTX}.json"))).unwrap()).unwrap();
    sidecar["platform"]["gpu"] = "Fictional FX1".into();
    sidecar["profile_device"]["gpu"] = "Fictional FX1".into();
    sidecar["name"] = "fx1-table".into();
    // The RTX 4060's verified combinations are not a fictional GPU's, and a bundle states no verification.
    sidecar.as_object_mut().unwrap().remove("verified_combos");
    sidecar["codes"]["custom -> scheme"] = serde_json::json!({
        "0": "interleaved64/serial/restart2", "1": RULE, "2": "interleaved64/serial/restart2"
    });
    std::fs::write(t.join("fx1-table.json"), sidecar.to_string()).unwrap();
    let manifest = format!(
        "format = \"mmaemu-platform/1\"\nname = \"fx1-truth\"\ndescription = \"a GPU that does not exist\"\n\n\
         [gpu]\nname = \"Fictional FX1\"\ncapability = [12, 7]\nsm_count = 7\n\n[library]\ncublaslt = \"12.8.3.14\"\n\n\
         [preset]\nformat = \"mmaemu-preset/1\"\nname = \"fx1-mma\"\nnfma = 64\nfrac = 20\nfrac_out = 20\n\
         min_exp = -130\nc_entry = \"late\"\nslow_chunk = 128\n\n[splitk]\ntable = \"fx1-table.parquet\"\n\n\
         [[profile]]\nname = \"fx1\"\ncaller = \"torch._scaled_mm\"\nworkspace = 1048576\ndescription = \"fx1\"\n\n\
         [files]\n\"fx1-table.parquet\" = \"{}\"\n\"fx1-table.json\" = \"{}\"\n",
        sha(&t.join("fx1-table.parquet")),
        sha(&t.join("fx1-table.json"))
    );
    std::fs::write(t.join("platform.toml"), manifest).unwrap();
    t
}

const INSTRUCTIONS: &str = r#"kind = "sweep"
name = "fx1-inst"
description = "fx1 accumulators: fp32 out, unit scales, fast and slow, unsplit"
seed = 7
workspace = [0]
op = "gemm"
profile = "fx1"
formats = [["e4m3", "e4m3"], ["e4m3", "e5m2"], ["e5m2", "e4m3"]]
out_dtypes = ["float32"]
fast_accum = [true, false]
scales = [[1.0, 1.0]]

[[shapes]]
mnk = [[16, 16, 64], [16, 16, 128], [16, 32, 512]]

[[inputs]]
class = "gaussian"

[[inputs]]
class = "bits"

[[inputs]]
class = "subnormal"

[[inputs]]
class = "split"
"#;

const SPLITS: &str = r#"kind = "sweep"
name = "fx1-split"
description = "fx1 split shapes, split-discriminating data, the layout not known"
seed = 12
op = "scaled_mm"
profile = "fx1"
formats = [["e4m3", "e4m3"]]
out_dtypes = ["float32"]
fast_accum = [false, true]
split_scheme = "unknown"

[[shapes]]
mnk = [[1, 16, 8192], [2, 16, 8192], [4, 16, 8192]]

[[inputs]]
class = "split"
"#;

const GRID: &str = r#"kind = "grid"
name = "fx1-grid"
description = "fx1 heuristic grid"
profile = "fx1"
formats = [["e4m3", "e4m3"], ["e4m3", "e5m2"]]
out_dtypes = ["float32", "bfloat16", "float8_e5m2"]
fast_accum = [false, true]
workspace = [1048576]

[[shapes]]
m = [1, 2, 4, 64]
n = [16, 64]
k = [1024, 8192]
"#;

fn spec(text: &str) -> Sweep {
    Sweep::parse(text, mmaemu_datasets::digest::sha256_hex(text.as_bytes())).unwrap()
}

#[test]
fn a_fictional_gpu_is_fitted_back_from_its_simulated_recordings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let truth = truth(dir);
    // 1. Record on the simulated device of the truth: sweeps and the heuristic grid (docs/bring-up.md steps 2, 4).
    mmaemu_api::register_platform(&truth).unwrap_or_else(|e| panic!("{e}"));
    for (text, name) in [(INSTRUCTIONS, "inst.parquet"), (SPLITS, "split.parquet")] {
        let sweep = spec(text);
        let mut device = SimDevice::new("fx1").unwrap();
        let o = SweepOptions { out: dir.join(name), quiet: true, ..SweepOptions::default() };
        run_sweep(&sweep, text, &mut device, Some("fx1"), &o).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let mut device = SimDevice::new("fx1").unwrap();
    let o = HeuristicsOptions { out: dir.join("fx1-table.parquet"), quiet: true, ..HeuristicsOptions::default() };
    run_heuristics(&spec(GRID), &mut device, &o).unwrap_or_else(|e| panic!("grid: {e}"));

    // 2. Fit the preset and the split rule from those rows alone (the truth is registered only so that the rows,
    //    which name its profile, can be read).
    let preset = dir.join("fx1-mma.toml");
    run(mmaemu(Some(&truth))
        .args(["fit", "preset", "--simulated", "--name", "fx1-mma", "--out"])
        .arg(&preset)
        .arg(dir.join("inst.parquet")));
    let doc = std::fs::read_to_string(&preset).unwrap();
    for line in ["nfma = 64", "frac = 20", "frac_out = 20", "c_entry = \"late\""] {
        assert!(doc.lines().any(|l| l == line), "{line} in {doc}");
    }
    let fit = run(mmaemu(Some(&truth)).args(["fit", "splitk", "--simulated", "--json"]).arg(dir.join("split.parquet")));
    let fit_json: serde_json::Value = serde_json::from_str(fit.lines().next().unwrap()).unwrap();
    let scheme = fit_json["schemes"].as_array().unwrap().iter().find(|s| s["label"] == "customOption 1").unwrap();
    assert_eq!(scheme["rule"], RULE, "{scheme}");
    assert_eq!(scheme["rules"].as_array().unwrap().len(), 1, "{scheme}");
    // No built-in platform splits this way.
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/platforms")).unwrap() {
        for f in std::fs::read_dir(entry.unwrap().path()).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap_or_default();
            assert!(!text.contains(RULE));
        }
    }
    let rules = dir.join("fit.json");
    std::fs::write(&rules, &fit).unwrap();

    // 3. Build the bundle from the recorder's table and the fits (step 6): the rows name its profile and preset.
    let bundle = dir.join("fx1");
    run(mmaemu(Some(&truth))
        .args(["platform", "build", "--name", "fx1", "--preset"])
        .arg(&preset)
        .arg("--rules")
        .arg(&rules)
        .arg("--table")
        .arg(dir.join("fx1-table.parquet"))
        .arg("--recordings")
        .arg(dir.join("inst.parquet"))
        .arg(dir.join("split.parquet"))
        .arg("--out")
        .arg(&bundle));

    // 4. Without the truth: the bundle alone gives every recorded bit, and its status is computed.
    let recs = [dir.join("inst.parquet"), dir.join("split.parquet")];
    let replay = run(mmaemu(None).arg("replay").args(&recs).arg("--profile").arg(&bundle));
    assert!(replay.contains("\n78 passed, 0 failed"), "{replay}");
    let explain = run(mmaemu(None).args(["explain", "1", "16", "8192", "--out", "float32", "--profile"]).arg(&bundle));
    assert!(explain.contains(&format!("scheme={RULE} source=table")), "{explain}");
    let check = run(mmaemu(None).args(["platform", "check"]).arg(&bundle));
    assert!(check.contains("profile fx1: experimental (model rows only): 0 hardware rows"), "{check}");
    assert!(!check.contains("validated:"), "{check}");
}
