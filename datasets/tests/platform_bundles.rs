//! Platform bundles (docs/platform-format.md): a bundle built from the RTX 4060's recorded table decides every split
//! exactly as the built-in `ada` profile does, and every kind of bad bundle is a data error naming the file.

use mmaemu_datasets::platform::{build_platform, load_platform, load_profile, BuildSpec};
use mmaemu_model::{resolve_splitk, Format, OutDtype, Profile, SplitKey, SplitRequest};
use std::path::{Path, PathBuf};

const RTX: &str = "rtx4060-cublaslt-12.8.3.14";

fn shipped(stem: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("platforms").join(stem).join(format!("{stem}.parquet"))
}

fn spec(name: &str) -> BuildSpec {
    BuildSpec {
        name: name.into(),
        table: Some(shipped(RTX)),
        preset: "ada".into(),
        rules: None,
        envelope: None,
        probe: None,
        profile: name.into(),
        caller: "torch._scaled_mm".into(),
        workspace: 1 << 20,
        recordings: vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/rtx4060-mma.parquet")],
    }
}

/// One bundle per test binary run: building encodes 1.2 million rows.
fn built() -> &'static (tempfile::TempDir, PathBuf) {
    static B: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("lab-rtx4060");
        build_platform(&spec("lab-rtx4060"), &out).unwrap_or_else(|e| panic!("{e}"));
        (tmp, out)
    })
}

/// A copy of the built bundle to damage.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    std::fs::create_dir(&dir).unwrap();
    for e in std::fs::read_dir(&built().1).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    (tmp, dir)
}

fn load_err(dir: &Path) -> String {
    load_platform(dir).map(|p| p.name).expect_err("a bad bundle loaded").to_string()
}

#[test]
fn a_rebuilt_rtx4060_bundle_decides_like_ada() {
    let lab = load_profile(built().1.to_str().unwrap()).unwrap();
    let ada = mmaemu_model::Catalogue::builtin().profile("ada").unwrap();
    assert_eq!(lab.gpu_name, ada.gpu_name);
    assert_eq!(lab.capability, ada.capability);
    assert_eq!(lab.splitk_table.map(|t| t.id()), ada.splitk_table.map(|t| t.id()));
    assert_eq!(lab.maturity, mmaemu_model::Maturity::Experimental, "a loaded profile is never declared validated");
    let mut decided = 0;
    for (m, n, k) in [(16, 4096, 4096), (1, 5760, 1920), (64, 64, 8192), (128, 1024, 16384), (2, 96, 65536)] {
        for (fa, fb) in [(Format::E4m3, Format::E4m3), (Format::E4m3, Format::E5m2)] {
            for out in [OutDtype::Float32, OutDtype::BFloat16] {
                for fast in [false, true] {
                    let key = SplitKey { m, n, k, fa, fb, out, fast };
                    let a = resolve_splitk(&ada, &key, &SplitRequest::Auto, true, false)
                        .map(|(d, _)| (d.s, d.scheme, d.source));
                    let b = resolve_splitk(&lab, &key, &SplitRequest::Auto, true, false)
                        .map(|(d, _)| (d.s, d.scheme, d.source));
                    assert_eq!(a.is_ok(), b.is_ok(), "{key:?}");
                    if let (Ok(a), Ok(b)) = (a, b) {
                        assert_eq!(a, b, "{key:?}");
                        decided += 1;
                    }
                }
            }
        }
    }
    assert!(decided > 20, "only {decided} keys resolved");
}

#[test]
fn a_rebuilt_rtx4060_bundle_decides_like_ada_on_every_table_key_and_100000_random_keys() {
    let lab = load_profile(built().1.to_str().unwrap()).unwrap();
    let ada = mmaemu_model::Catalogue::builtin().profile("ada").unwrap();
    let same = |key: &SplitKey| {
        let decide = |p: &Profile| {
            resolve_splitk(p, key, &SplitRequest::Auto, true, false)
                .map(|(d, _)| (d.s, d.scheme, d.source, d.verified, d.table_id, d.note))
                .map_err(|e| e.category())
        };
        let (a, b) = (decide(&ada), decide(&lab));
        assert_eq!(a, b, "{key:?}");
        a.is_ok()
    };
    // Every key of the table at the profile's workspace.
    let table = mmaemu_datasets::read_splitk_table(&shipped(RTX)).unwrap();
    let mut keys = 0;
    for r in table.rows.iter().filter(|r| r.workspace_bytes == 1 << 20) {
        let key = SplitKey {
            m: r.m as usize,
            n: r.n as usize,
            k: r.k as usize,
            fa: Format::from_name(r.fmt_a).unwrap(),
            fb: Format::from_name(r.fmt_b).unwrap(),
            out: OutDtype::from_name(r.out_dtype).unwrap(),
            fast: r.fast_accum,
        };
        assert!(same(&key), "a table key must resolve: {key:?}");
        keys += 1;
    }
    assert!(keys > 100_000, "{keys} table keys");
    // 100,000 random keys (SplitMix64), most of them off the table.
    let mut state = 0x006c_6162_3430_3630_u64;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let fmts = [Format::E4m3, Format::E5m2];
    let mut resolved = 0;
    for _ in 0..100_000 {
        let dim = |x: u64| 1 + (x % 20_000) as usize;
        let key = SplitKey {
            m: dim(next()),
            n: dim(next()),
            k: dim(next()),
            fa: fmts[(next() % 2) as usize],
            fb: fmts[(next() % 2) as usize],
            out: OutDtype::ALL[(next() % OutDtype::ALL.len() as u64) as usize],
            fast: next() % 2 == 0,
        };
        resolved += usize::from(same(&key));
    }
    assert!(resolved > 1_000, "only {resolved} random keys resolved");
}

#[test]
fn build_never_overwrites() {
    let e = build_platform(&spec("again"), &built().1).unwrap_err().to_string();
    assert!(e.contains("already exists"), "{e}");
}

#[test]
fn an_extra_file_is_refused() {
    let (_t, dir) = copy("extra");
    std::fs::write(dir.join("notes.txt"), "hello").unwrap();
    let e = load_err(&dir);
    assert!(e.contains("notes.txt") && e.contains("does not list"), "{e}");
}

#[test]
fn a_missing_file_is_refused() {
    let (_t, dir) = copy("missing");
    std::fs::remove_file(dir.join("rtx4060-mma.parquet")).unwrap();
    let e = load_err(&dir);
    assert!(e.contains("rtx4060-mma.parquet") && e.contains("missing"), "{e}");
}

#[test]
fn an_altered_file_is_refused() {
    let (_t, dir) = copy("altered");
    let path = dir.join(format!("{RTX}.json"));
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let e = load_err(&dir);
    assert!(e.contains(&format!("{RTX}.json")) && e.contains("sha256"), "{e}");
}

#[test]
fn an_unknown_key_is_refused() {
    let (_t, dir) = copy("unknown-key");
    let path = dir.join("platform.toml");
    let text = std::fs::read_to_string(&path).unwrap().replace("[preset]\n", "[preset]\nfrac_bits = 13\n");
    std::fs::write(&path, text).unwrap();
    let e = load_err(&dir);
    assert!(e.contains("platform.toml") && e.contains("frac_bits"), "{e}");
}

#[test]
fn a_declared_maturity_is_refused() {
    let (_t, dir) = copy("declared");
    let path = dir.join("platform.toml");
    let text =
        std::fs::read_to_string(&path).unwrap().replace("workspace = ", "maturity = \"validated\"\nworkspace = ");
    std::fs::write(&path, text).unwrap();
    let e = load_err(&dir);
    assert!(e.contains("never declared"), "{e}");
}

#[test]
fn a_table_of_another_gpu_is_refused() {
    let (_t, dir) = copy("other-gpu");
    let path = dir.join("platform.toml");
    let text =
        std::fs::read_to_string(&path).unwrap().replace("name = \"NVIDIA GeForce RTX 4060\"", "name = \"NVIDIA H200\"");
    std::fs::write(&path, text).unwrap();
    let e = load_err(&dir);
    assert!(e.contains("recorded on NVIDIA GeForce RTX 4060"), "{e}");
}

#[test]
fn a_built_in_profile_name_is_refused() {
    let (_t, dir) = copy("clash");
    let path = dir.join("platform.toml");
    let text =
        std::fs::read_to_string(&path).unwrap().replace("name = \"lab-rtx4060\"\ncaller", "name = \"ada\"\ncaller");
    std::fs::write(&path, text).unwrap();
    let e = load_err(&dir);
    assert!(e.contains("'ada' clashes"), "{e}");
}

#[test]
fn the_built_in_bundles_are_not_loadable_as_user_bundles() {
    // They state their maturity, which only the embedded copies may.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("platforms").join(RTX);
    assert!(load_err(&dir).contains("never declared"));
}

#[test]
fn the_built_in_bundles_list_exactly_their_files() {
    for p in mmaemu_model::Catalogue::builtin().platforms() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("platforms").join(&p.name);
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "platform.toml")
            .collect();
        on_disk.sort();
        assert_eq!(on_disk, p.files.keys().cloned().collect::<Vec<_>>(), "{}", p.name);
        for (name, sha) in &p.files {
            let (got, _) = mmaemu_datasets::digest::sha256_file(&dir.join(name)).unwrap();
            assert_eq!(&got, sha, "{}/{name}", p.name);
        }
    }
}

#[test]
fn a_fictional_gpu_comes_up_from_data_alone() {
    // A GPU the library has never heard of: its own name in the table's sidecar and the manifest, its own
    // arithmetic as a preset document inline. Nothing in the code names it.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fictional");
    std::fs::create_dir(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("platforms").join(RTX);
    std::fs::copy(src.join(format!("{RTX}.parquet")), dir.join("fx1-table.parquet")).unwrap();
    let sidecar = std::fs::read_to_string(src.join(format!("{RTX}.json")))
        .unwrap()
        .replace("\"gpu\": \"NVIDIA GeForce RTX 4060\"", "\"gpu\": \"Fictional FX1\"")
        .replace("\"name\": \"rtx4060-cublaslt-12.8.3.14\"", "\"name\": \"fx1-table\"");
    assert!(sidecar.contains("Fictional FX1"));
    // The RTX 4060's verified combinations are not a fictional GPU's, and a bundle states no verification.
    let mut sidecar: serde_json::Value = serde_json::from_str(&sidecar).unwrap();
    sidecar.as_object_mut().unwrap().remove("verified_combos");
    std::fs::write(dir.join("fx1-table.json"), serde_json::to_string_pretty(&sidecar).unwrap()).unwrap();
    let sha = |f: &str| mmaemu_datasets::digest::sha256_file(&dir.join(f)).unwrap().0;
    let manifest = format!(
        "format = \"mmaemu-platform/1\"\nname = \"fx1\"\ndescription = \"a GPU that does not exist\"\n\n\
         [gpu]\nname = \"Fictional FX1\"\ncapability = [12, 7]\nsm_count = 7\n\n[library]\ncublaslt = \"12.8.3.14\"\n\n\
         [preset]\nformat = \"mmaemu-preset/1\"\nname = \"fx1-mma\"\nnfma = 8\nfrac = 20\nfrac_out = 20\n\
         min_exp = -130\nc_entry = \"late\"\nslow_chunk = 128\n\n[splitk]\ntable = \"fx1-table.parquet\"\n\n\
         [[profile]]\nname = \"fx1\"\ncaller = \"torch._scaled_mm\"\nworkspace = 1048576\ndescription = \"fx1\"\n\n\
         [files]\n\"fx1-table.parquet\" = \"{}\"\n\"fx1-table.json\" = \"{}\"\n",
        sha("fx1-table.parquet"),
        sha("fx1-table.json")
    );
    std::fs::write(dir.join("platform.toml"), manifest).unwrap();
    let p = load_platform(&dir).unwrap_or_else(|e| panic!("{e}"));
    let fx1 = &p.profiles[0];
    assert_eq!((fx1.name.as_str(), fx1.gpu_name.as_deref(), fx1.capability), ("fx1", Some("Fictional FX1"), (12, 7)));
    assert_eq!((fx1.preset.name(), fx1.preset.nfma(), fx1.preset.frac()), ("fx1-mma", 8, 20));
    assert_eq!(fx1.preset.maturity(), mmaemu_model::Maturity::Custom);
    // Its table decides as the recorded one does (the same rows under another GPU's name).
    let key =
        SplitKey { m: 16, n: 48, k: 8192, fa: Format::E4m3, fb: Format::E4m3, out: OutDtype::BFloat16, fast: false };
    let (d, _) = resolve_splitk(fx1, &key, &SplitRequest::Auto, true, false).unwrap();
    assert_eq!((d.s, d.scheme.name().as_ref()), (8, "pairwise"));
}

#[test]
fn a_probe_names_the_gpu_of_a_bundle_without_a_table_and_must_agree_with_a_table() {
    let tmp = tempfile::tempdir().unwrap();
    // A probe as `mmaemu-record probe` prints it.
    let probe = tmp.path().join("probe.json");
    let facts = |gpu: &str| {
        format!(
            r#"{{"gpu": "{gpu}", "capability": [9, 0], "sm_count": 132, "driver": "580.1", "cuda_runtime": "13.0",
               "cublaslt": "12.8.3.14", "torch": null, "caller": null, "workspace_bytes": null}}"#
        )
    };
    std::fs::write(&probe, facts("NVIDIA H200")).unwrap();
    let mut s = spec("probed");
    s.table = None;
    s.recordings = vec![];
    s.probe = Some(probe.clone());
    let p = build_platform(&s, &tmp.path().join("probed")).unwrap_or_else(|e| panic!("{e}"));
    let profile = &p.profiles[0];
    assert_eq!(
        (profile.gpu_name.as_deref(), profile.capability, profile.sm_count),
        (Some("NVIDIA H200"), (9, 0), Some(132))
    );
    assert!(p.table.is_none());
    // With the RTX 4060's table, a probe of another GPU is refused, naming the probe.
    let mut s = spec("mismatch");
    s.probe = Some(probe.clone());
    let e = build_platform(&s, &tmp.path().join("mismatch")).unwrap_err().to_string();
    assert!(e.contains("probe.json") && e.contains("gpu"), "{e}");
    assert!(!tmp.path().join("mismatch").exists());
    // --rules without a table has nothing to rename.
    let mut s = spec("rules");
    s.table = None;
    s.rules = Some(probe);
    let e = build_platform(&s, &tmp.path().join("rules")).unwrap_err().to_string();
    assert!(e.contains("need --table"), "{e}");
}

/// `--out` into a directory that does not exist yet makes it (it failed with a Parquet write error).
#[test]
fn build_makes_the_parent_of_its_output() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("not/yet/there/lab");
    let spec = BuildSpec { table: None, recordings: vec![], ..spec("lab-parent") };
    let p = build_platform(&spec, &out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((p.name.as_str(), p.profiles[0].name.as_str()), ("lab-parent", "lab-parent"));
    assert!(out.join("platform.toml").is_file());
}
