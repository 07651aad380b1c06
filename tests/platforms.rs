//! The command line over platform bundles (docs/platform-format.md, docs/bring-up.md): `platform build` from the
//! RTX 4060's recorded table and recordings, `platform check`, `--profile PATH`, `MMAEMU_PLATFORMS` and `info`.

// Expected decisions are those of the built-in `ada` profile for the same recorded table (docs/reference.md §8.1's
// column-major example: S = 8 pairwise row-major), and the expected statuses are the README's exit-status table.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mmaemu() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mmaemu"))
}

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Build a bundle of the RTX 4060 table and its instruction-level recording under `dir/NAME`.
fn build(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let table = data("datasets/platforms/rtx4060-cublaslt-12.8.3.14/rtx4060-cublaslt-12.8.3.14.parquet");
    let rec = data("datasets/recordings/rtx4060-mma.parquet");
    let o = mmaemu()
        .args(["platform", "build", "--name", name, "--preset", "ada", "--table"])
        .arg(&table)
        .arg("--recordings")
        .arg(&rec)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    out
}

#[test]
fn build_check_and_use_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = build(tmp.path(), "lab4060");

    // Building again over it is refused, and what is there is kept.
    let again =
        mmaemu().args(["platform", "build", "--name", "x", "--preset", "ada", "--out"]).arg(&bundle).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(bundle.join("platform.toml").is_file());

    // The check replays the bundle's recording.
    let check = mmaemu().args(["platform", "check"]).arg(&bundle).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    assert!(text(&check).contains("platform lab4060"), "{}", text(&check));

    // --profile PATH decides like the built-in ada profile (same table), under the bundle's profile name.
    let explain = |profile: &str| {
        let o = mmaemu()
            .args(["explain", "16", "48", "8192", "--out", "bf16", "--json", "--profile", profile])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        (o.status.code(), v)
    };
    let (code, lab) = explain(bundle.to_str().unwrap());
    let (_, ada) = explain("ada");
    assert_eq!(code, Some(0), "{lab}");
    assert_eq!(lab["profile"], "lab4060");
    assert_eq!((lab["split"]["s"].as_u64(), lab["split"]["scheme"].as_str()), (Some(8), Some("pairwise")));
    assert_eq!(lab["split"], ada["split"]);

    // MMAEMU_PLATFORMS lists the directory of bundles: info shows the platform and its profile by name.
    let info = mmaemu().args(["info", "--json"]).env("MMAEMU_PLATFORMS", tmp.path()).output().unwrap();
    assert_eq!(info.status.code(), Some(0), "{}", text(&info));
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let names: Vec<&str> = v["profiles"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(names.contains(&"lab4060") && names.contains(&"ada"), "{names:?}");
    let lab_info = v["profiles"].as_array().unwrap().iter().find(|p| p["name"] == "lab4060").unwrap();
    assert_eq!(lab_info["maturity"], "experimental");
}

#[test]
fn bad_bundles_exit_2_naming_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    // A directory without a manifest, through every entry point.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = mmaemu().args(["platform", "check"]).arg(&empty).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("platform.toml"), "{}", text(&o));
    let o = mmaemu().args(["info"]).env("MMAEMU_PLATFORMS", &empty).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("MMAEMU_PLATFORMS"), "{}", text(&o));
    // A bad entry is the commands' error: --help and --version still answer; empty entries name nothing.
    for flag in ["--help", "--version"] {
        let o = mmaemu().arg(flag).env("MMAEMU_PLATFORMS", &empty).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", text(&o));
    }
    let o = mmaemu().args(["explain", "16", "64", "4096"]).env("MMAEMU_PLATFORMS", ":::").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = mmaemu().args(["explain", "16", "48", "8192", "--profile", empty.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--profile"), "{}", text(&o));
    // A built-in bundle states its maturity, which a loaded one may not.
    let o = mmaemu().args(["info", "--platform"]).arg(data("datasets/platforms/hopper-experimental")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("never declared"), "{}", text(&o));
    // `platform check` of a shipped bundle checks its stated maturity against the shipped recordings instead; a copy
    // whose manifest differs by a byte is a loaded bundle again, and refused.
    let o = mmaemu()
        .args(["platform", "check"])
        .arg(data("datasets/platforms/rtx4060-cublaslt-12.8.3.14"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("one of the library's own bundles") && text(&o).contains("== status table =="));
    let copy = tmp.path().join("hopper-experimental");
    std::fs::create_dir(&copy).unwrap();
    let manifest = std::fs::read_to_string(data("datasets/platforms/hopper-experimental/platform.toml")).unwrap();
    std::fs::write(copy.join("platform.toml"), manifest + "\n").unwrap();
    let o = mmaemu().args(["platform", "check"]).arg(&copy).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("never declared"), "{}", text(&o));
}

/// The shipped RTX 4060 files rebuilt into a bundle, with the split rules fitted from its recordings and every
/// shipped recording of it: the rows replay under the bundle exactly as under the built-in `ada` (the same verdict
/// for every row), and the bundle's own check calls it validated.
#[test]
fn the_rebuilt_rtx4060_bundle_replays_every_shipped_row_like_ada() {
    let tmp = tempfile::tempdir().unwrap();
    let recs: Vec<PathBuf> =
        ["api", "gemm", "mma"].iter().map(|f| data(&format!("datasets/recordings/rtx4060-{f}.parquet"))).collect();
    let fit = mmaemu().args(["fit", "splitk", "--json"]).arg(&recs[1]).output().unwrap();
    assert_eq!(fit.status.code(), Some(0), "{}", text(&fit));
    let rules = tmp.path().join("fit.json");
    std::fs::write(&rules, &fit.stdout).unwrap();
    let bundle = tmp.path().join("lab4060-all");
    let o = mmaemu()
        .args(["platform", "build", "--name", "lab4060all", "--preset", "ada", "--rules"])
        .arg(&rules)
        .arg("--table")
        .arg(data("datasets/platforms/rtx4060-cublaslt-12.8.3.14/rtx4060-cublaslt-12.8.3.14.parquet"))
        .arg("--recordings")
        .args(&recs)
        .arg("--out")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let manifest = std::fs::read_to_string(bundle.join("platform.toml")).unwrap();
    // The RTX 4060's rejection of e4m3 x e4m3 -> e5m2 is learnt from the recordings.
    assert!(manifest.contains("fmt_a = \"e4m3\"\nfmt_b = \"e4m3\"\nout = \"float8_e5m2\""), "{manifest}");
    let sidecar = std::fs::read_to_string(bundle.join("rtx4060-cublaslt-12.8.3.14.json")).unwrap();
    assert!(sidecar.contains("\"1\": \"interleaved64/pairwise/restart2\""), "{sidecar}");

    let replay = |profile: &Path| {
        let o = mmaemu().arg("replay").args(&recs).arg("--json").arg("--profile").arg(profile).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let files: Vec<(u64, u64, u64, String)> = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let n = |k: &str| f[k].as_u64().unwrap();
                (n("passed"), n("failed"), n("skipped"), f["failures"].to_string())
            })
            .collect();
        files
    };
    let ours = replay(&bundle);
    assert_eq!(ours, replay(Path::new("ada")));
    // 11,265 shipped rows, the 4 that recorded a row-wise call as out of scope among them: replayed without the
    // experimental opt-in, they raise UnsupportedFeatureError as recorded.
    assert_eq!(ours.iter().map(|f| f.0).sum::<u64>(), 11265, "{ours:?}");
    assert_eq!(ours.iter().map(|f| f.2).sum::<u64>(), 0, "{ours:?}");

    let check = mmaemu().args(["platform", "check"]).arg(&bundle).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    assert!(text(&check).contains("profile lab4060all: validated: 11265 hardware rows"), "{}", text(&check));
}
