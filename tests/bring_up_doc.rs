//! docs/bring-up.md's steps by hand run as written: every `sh` block of the section "The steps by hand" runs in bash,
//! in order, on the simulated device of a GPU that exists nowhere (the document's own rehearsal settings), and each
//! exits 0; the rebuilt bundle replays every recorded row bit for bit, and its profile resolves a shape outside its
//! table with the fitted envelope. The first block (the settings) is replaced by the rehearsal's values, and must set
//! exactly the variables the rehearsal sets.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The shipped table the truth's table reuses under its own GPU name and scheme map.
const RTX: &str = "rtx4060-cublaslt-12.8.3.14";
/// The truth's split rule of customOption 1 (the one the split shapes of `split.toml` select on that table).
const RULE: &str = "interleaved32/tree/restart4";
/// The rehearsal's settings (docs/bring-up.md, "Rehearsing without a GPU"), in place of the document's first block.
const SETTINGS: [(&str, &str); 4] = [
    ("NAME", "lab1"),
    ("DEVICE", "--simulate --profile truth1"),
    ("GRID", "recorder/sweeps/heuristics-smoke.toml"),
    ("SIMULATED", "--simulated"),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn sha(path: &Path) -> String {
    mmaemu_datasets::digest::sha256_file(path).unwrap().0
}

/// The truth: the GPU as the simulated device plays it, a bundle in `platforms/` (nothing in the steps names it
/// but the settings' DEVICE).
fn truth(platforms: &Path) {
    let t = platforms.join("truth1");
    std::fs::create_dir_all(&t).unwrap();
    let src = root().join("datasets/platforms").join(RTX);
    std::fs::copy(src.join(format!("{RTX}.parquet")), t.join("t1-table.parquet")).unwrap();
    let mut sidecar: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join(format!("{RTX}.json"))).unwrap()).unwrap();
    sidecar["platform"]["gpu"] = "Rehearsal T1".into();
    sidecar["profile_device"]["gpu"] = "Rehearsal T1".into();
    sidecar["name"] = "t1-table".into();
    sidecar.as_object_mut().unwrap().remove("verified_combos");
    sidecar["codes"]["custom -> scheme"] = serde_json::json!({
        "0": "interleaved64/serial/restart2", "1": RULE, "2": "interleaved64/serial/restart2"
    });
    std::fs::write(t.join("t1-table.json"), sidecar.to_string()).unwrap();
    let manifest = format!(
        "format = \"mmaemu-platform/1\"\nname = \"t1-truth\"\ndescription = \"a GPU that does not exist\"\n\n\
         [gpu]\nname = \"Rehearsal T1\"\ncapability = [11, 3]\nsm_count = 5\n\n[library]\ncublaslt = \"12.8.3.14\"\n\n\
         [preset]\nformat = \"mmaemu-preset/1\"\nname = \"t1-mma\"\nnfma = 32\nfrac = 18\nfrac_out = 18\n\
         min_exp = -128\nc_entry = \"late\"\nslow_chunk = 128\n\n[splitk]\ntable = \"t1-table.parquet\"\n\n\
         [[profile]]\nname = \"truth1\"\ncaller = \"torch._scaled_mm\"\nworkspace = 1048576\ndescription = \"t1\"\n\n\
         [files]\n\"t1-table.parquet\" = \"{}\"\n\"t1-table.json\" = \"{}\"\n",
        sha(&t.join("t1-table.parquet")),
        sha(&t.join("t1-table.json"))
    );
    std::fs::write(t.join("platform.toml"), manifest).unwrap();
}

/// The `sh` blocks of the section "The steps by hand", in order.
fn blocks() -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("docs/bring-up.md")).unwrap();
    let start = doc.find("\n## The steps by hand\n").expect("docs/bring-up.md has the section \"The steps by hand\"");
    let section = &doc[start + 1..];
    let section = section[3..].find("\n## ").map_or(section, |end| &section[..end + 3]);
    let (mut out, mut current): (Vec<String>, Option<String>) = (Vec::new(), None);
    for line in section.lines() {
        let trimmed = line.trim_start();
        match (&mut current, trimmed) {
            (None, "```sh") => current = Some(String::new()),
            (Some(_), "```") => out.extend(current.take()),
            (Some(block), _) => {
                // A block inside a list item is indented by the item's width.
                block.push_str(line.strip_prefix("   ").unwrap_or(line));
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an unclosed sh block in docs/bring-up.md");
    out
}

/// The directory of the command-line binaries; `mmaemu-record` (the bring-up package) is built there if a test of
/// the root package alone did not build it.
fn bin_dir() -> PathBuf {
    let mmaemu = PathBuf::from(env!("CARGO_BIN_EXE_mmaemu"));
    let dir = mmaemu.parent().unwrap().to_path_buf();
    let record = dir.join(format!("mmaemu-record{}", std::env::consts::EXE_SUFFIX));
    if !record.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--profile", "test", "-p", "mmaemu-bringup", "--bin", "mmaemu-record"])
            .current_dir(root())
            .status()
            .unwrap();
        assert!(status.success(), "building mmaemu-record failed");
    }
    assert!(record.is_file(), "no mmaemu-record beside {}", mmaemu.display());
    dir
}

/// Run a block after the settings in bash (`-euo pipefail`, each command echoed): its exit code and its output.
fn sh(dir: &Path, path: &std::ffi::OsStr, settings: &str, block: &str) -> (Option<i32>, String) {
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c"])
        .arg(format!("{settings}\nset -x\n{block}"))
        .current_dir(dir)
        .env("PATH", path)
        .env("MMAEMU_PLATFORMS", "platforms")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

#[test]
fn the_steps_by_hand_run_as_written_on_the_simulated_device() {
    let blocks = blocks();
    assert!(blocks.len() >= 8, "the settings and the blocks of steps 2 to 8: {blocks:?}");
    // The settings block sets exactly what the rehearsal sets.
    let names: Vec<&str> = blocks[0]
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
        .filter(|k| !k.is_empty() && !k.starts_with('#'))
        .collect();
    assert_eq!(names, SETTINGS.map(|(k, _)| k), "{}", blocks[0]);
    let settings: String = SETTINGS.iter().map(|(k, v)| format!("{k}=\"{v}\"\n")).collect();

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    truth(&dir.join("platforms"));
    std::os::unix::fs::symlink(root().join("recorder"), dir.join("recorder")).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin_dir()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();

    let mut outputs = Vec::new();
    for block in &blocks[1..] {
        let t = Instant::now();
        let (code, text) = sh(dir, &path, &settings, block);
        eprintln!("{:>6.1} s  {}", t.elapsed().as_secs_f64(), block.lines().next().unwrap_or(""));
        assert_eq!(code, Some(0), "docs/bring-up.md: this block failed:\n{block}\n--- output:\n{text}");
        outputs.push((block.clone(), text));
    }
    let output = |needle: &str| {
        outputs.iter().find(|(b, _)| b.contains(needle)).map(|(_, t)| t.as_str()).unwrap_or_else(|| panic!("{needle}"))
    };

    // Step 3: the recorder's table knows no layout for this GPU family; the first bundle says which it refuses.
    assert!(output("--preset hopper").contains("customOption 1: its split layout is unknown"), "{outputs:?}");
    // Step 6: the rebuilt bundle, in the first one's place, carries the fitted rule and the fitted envelope.
    let sidecar: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("platforms/lab1/lab1-table.json")).unwrap()).unwrap();
    assert_eq!(sidecar["codes"]["custom -> scheme"]["1"], RULE, "{sidecar}");
    assert_eq!(sidecar["envelope"]["inference"], true, "{}", sidecar["envelope"]);
    let hidden: Vec<_> = std::fs::read_dir(dir.join("platforms"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "the build left {hidden:?} behind");
    // Step 7: every recorded row replays bit for bit under the rebuilt bundle.
    let check = output("platform check");
    let last = check.lines().rev().find(|l| l.contains(" passed, ")).unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed") && !last.starts_with("0 "), "{check}");
    assert!(check.contains("profile lab1: experimental (model rows only)"), "{check}");
    // Step 8: a shape outside the table is decided by the fitted envelope; `info` knows the rebuilt bundle once.
    assert!(output("mmaemu explain").contains("source=envelope"), "{}", output("mmaemu explain"));
    assert!(output("mmaemu info").contains("lab1"), "{}", output("mmaemu info"));

    // A fit with no fittable row (the split rows are scaled_mm calls) fails at once and writes nothing.
    let t = Instant::now();
    let (code, text) =
        sh(dir, &path, &settings, "mmaemu fit preset $SIMULATED recordings/split.parquet --out none.toml --name x");
    assert!(code == Some(1) && text.contains("no fittable row"), "{text}");
    assert!(t.elapsed().as_secs() < 30, "{:?}", t.elapsed());
    assert!(!dir.join("none.toml").exists());
}
