//! Writing a platform bundle (`mmaemu platform build`): the recorder's split-K table and sidecar, the preset, the
//! recordings, and a manifest with every file's sha256 — written beside the target and renamed into place only
//! once it loads, so that a failed build leaves nothing behind and never touches an existing directory.

use super::load_platform;
use crate::digest::sha256_file;
use crate::splitk_table::{read_splitk_table, splitk_sidecar_path};
use crate::{read_recording, DatasetError};
use mmaemu_model::platform::{FORMAT, MANIFEST};
use mmaemu_model::Platform;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What a bundle is built from.
#[derive(Clone, Debug)]
pub struct BuildSpec {
    /// The bundle's name.
    pub name: String,
    /// The split-K table (its sidecar beside it), if the GPU's heuristics were recorded.
    pub table: Option<PathBuf>,
    /// A built-in preset's name.
    pub preset: String,
    /// The profile's name.
    pub profile: String,
    /// The caller (`torch._scaled_mm`, `transformer_engine`).
    pub caller: String,
    /// The profile's cuBLASLt workspace in bytes.
    pub workspace: u64,
    /// Recordings to ship in the bundle.
    pub recordings: Vec<PathBuf>,
}

fn invalid(path: &Path, what: impl Into<String>) -> DatasetError {
    DatasetError::invalid(path, None, what)
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn file_name(path: &Path) -> Result<String, DatasetError> {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).ok_or_else(|| invalid(path, "not a file name"))
}

/// Build the bundle `spec` describes at `out`, which must not exist. Returns the platform as loaded back from it.
pub fn build_platform(spec: &BuildSpec, out: &Path) -> Result<Platform, DatasetError> {
    if out.exists() {
        return Err(invalid(out, "already exists: a bundle is never written over"));
    }
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let staging = tempfile::Builder::new()
        .prefix(".mmaemu-platform-")
        .tempdir_in(parent)
        .map_err(|e| DatasetError::Write { path: parent.to_path_buf(), detail: e.to_string() })?;
    let dir = staging.path();
    let copy = |src: &Path| -> Result<String, DatasetError> {
        let name = file_name(src)?;
        if name == MANIFEST || dir.join(&name).exists() {
            return Err(invalid(src, format!("a second file named {name} in the bundle")));
        }
        std::fs::copy(src, dir.join(&name)).map_err(|e| DatasetError::io(src, e))?;
        Ok(name)
    };

    let mut m = String::new();
    let _ = writeln!(m, "# Written by `mmaemu platform build` (docs/platform-format.md).");
    let _ = writeln!(m, "format = {}\nname = {}", quote(FORMAT), quote(&spec.name));
    let mut names = Vec::new();
    let mut torch = None;
    let mut table_file = None;
    if let Some(table_path) = &spec.table {
        let table = read_splitk_table(table_path)?;
        let p: &Value = &table.sidecar["platform"];
        let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        let gpu = text("gpu").ok_or_else(|| invalid(&table.sidecar_path, "the sidecar's platform has no `gpu`"))?;
        let cublaslt =
            text("cublaslt").ok_or_else(|| invalid(&table.sidecar_path, "the sidecar's platform has no `cublaslt`"))?;
        let cap: Vec<u64> =
            p.get("capability").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_u64).collect();
        if cap.len() != 2 {
            return Err(invalid(&table.sidecar_path, "the sidecar's platform has no `capability` [major, minor]"));
        }
        torch = text("torch");
        let _ =
            writeln!(m, "description = {}", quote(&format!("{gpu} (sm_{}{}), cuBLASLt {cublaslt}", cap[0], cap[1])));
        let _ = writeln!(m, "\n[gpu]\nname = {}\ncapability = [{}, {}]", quote(&gpu), cap[0], cap[1]);
        if let Some(sm) = p.get("sm_count").and_then(Value::as_u64) {
            let _ = writeln!(m, "sm_count = {sm}");
        }
        if let Some(d) = text("driver") {
            let _ = writeln!(m, "driver = {}", quote(&d));
        }
        let _ = writeln!(m, "\n[library]\ncublaslt = {}", quote(&cublaslt));
        let t = copy(table_path)?;
        names.push(copy(&splitk_sidecar_path(table_path))?);
        table_file = Some(t.clone());
        names.push(t);
    } else {
        let _ = writeln!(m, "description = {}", quote(&format!("{} without a recorded split-K table", spec.name)));
    }
    let _ = writeln!(m, "\n[preset]\nbuiltin = {}", quote(&spec.preset));
    if let Some(t) = &table_file {
        let _ = writeln!(m, "\n[splitk]\ntable = {}", quote(t));
    }
    let _ = writeln!(m, "\n[[profile]]\nname = {}\ncaller = {}", quote(&spec.profile), quote(&spec.caller));
    if let Some(t) = &torch {
        let _ = writeln!(m, "torch_version = {}", quote(t));
    }
    let _ = writeln!(m, "workspace = {}", spec.workspace);
    let _ = writeln!(
        m,
        "description = {}",
        quote(&format!("{}: {}, {} B workspace", spec.name, spec.caller, spec.workspace))
    );
    for r in &spec.recordings {
        read_recording(r)?;
        names.push(copy(r)?);
    }
    let _ = writeln!(m, "\n[files]");
    names.sort();
    for n in &names {
        let (sha, _) = sha256_file(&dir.join(n)).map_err(|e| DatasetError::io(&dir.join(n), e))?;
        let _ = writeln!(m, "{} = {}", quote(n), quote(&sha));
    }
    std::fs::write(dir.join(MANIFEST), m)
        .map_err(|e| DatasetError::Write { path: dir.join(MANIFEST), detail: e.to_string() })?;
    load_platform(dir)?;
    let staged = staging.keep();
    std::fs::rename(&staged, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        DatasetError::Write { path: out.to_path_buf(), detail: e.to_string() }
    })?;
    load_platform(out)
}
