//! Writing a platform bundle (`mmaemu platform build`): the recorder's split-K table and sidecar, the fitted rules and
//! envelope, the preset, the recordings, and a manifest with every file's sha256 — written beside the target and
//! renamed into place only once it loads, so that a failed build leaves nothing behind; only `--replace` supersedes
//! an existing bundle, and only once the new one loads.

use super::{load_platform, FittedEnvelope, FittedSchemes};
use crate::digest::sha256_file;
use crate::splitk_table::{read_splitk_table, splitk_sidecar_path};
use crate::{read_recording, DatasetError};
use mmaemu_model::manifest::{
    Manifest, ManifestGpu, ManifestLibrary, ManifestProfile, ManifestReject, ManifestSplitk, FORMAT, MANIFEST,
};
use mmaemu_model::{Platform, Preset};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What a bundle is built from.
#[derive(Clone, Debug, Default)]
pub struct BuildSpec {
    /// The bundle's name.
    pub name: String,
    /// The split-K table (its sidecar beside it), if the GPU's heuristics were recorded.
    pub table: Option<PathBuf>,
    /// A built-in preset's name, or the path of a preset document (`mmaemu-preset/1`, `mmaemu fit preset --out`),
    /// embedded inline.
    pub preset: String,
    /// The output of `mmaemu fit splitk --json`: its `schemes` rename the table's schemes to the fitted rules.
    pub rules: Option<PathBuf>,
    /// The envelope document of `mmaemu fit envelope --out` over the same table: the sidecar's `envelope`, with which
    /// the profile resolves shapes outside the table.
    pub envelope: Option<PathBuf>,
    /// The output of `mmaemu-record probe` (the GPU's name, capability, SM count, driver, cuBLASLt), for a bundle
    /// without a table or to check the table's platform against.
    pub probe: Option<PathBuf>,
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

fn file_name(path: &Path) -> Result<String, DatasetError> {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).ok_or_else(|| invalid(path, "not a file name"))
}

/// Build the bundle `spec` describes at `out`, which must not exist. Returns the platform as loaded back from it.
pub fn build_platform(spec: &BuildSpec, out: &Path) -> Result<Platform, DatasetError> {
    if out.exists() {
        return Err(invalid(out, "already exists: a bundle is never written over (`--replace` supersedes a bundle)"));
    }
    let staging = stage(spec, out)?;
    let staged = staging.keep();
    std::fs::rename(&staged, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        DatasetError::Write { path: out.to_path_buf(), detail: e.to_string() }
    })?;
    load_platform(out)
}

/// Build the bundle `spec` describes at `out` and let it supersede the bundle there, if any (a directory that is not a
/// bundle is refused): the new one is staged and loaded first, then swapped in, so that `out` always holds one whole
/// bundle and a loaded profile name moves to the rebuilt bundle instead of clashing with it.
pub fn replace_platform(spec: &BuildSpec, out: &Path) -> Result<Platform, DatasetError> {
    if !out.exists() {
        return build_platform(spec, out);
    }
    if !out.join(MANIFEST).is_file() {
        return Err(invalid(out, format!("has no {MANIFEST}: `--replace` supersedes a platform bundle only")));
    }
    let staging = stage(spec, out)?;
    let parent = staging.path().parent().unwrap_or(Path::new(".")).to_path_buf();
    let write =
        |path: &Path, e: std::io::Error| DatasetError::Write { path: path.to_path_buf(), detail: e.to_string() };
    let old =
        tempfile::Builder::new().prefix(".mmaemu-platform-old-").tempdir_in(&parent).map_err(|e| write(&parent, e))?;
    let aside = old.path().join("bundle");
    std::fs::rename(out, &aside).map_err(|e| write(out, e))?;
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, out) {
        // Put the earlier bundle back: `out` never stays without one.
        let _ = std::fs::rename(&aside, out);
        let _ = std::fs::remove_dir_all(&staged);
        return Err(write(out, e));
    }
    drop(old);
    load_platform(out)
}

/// The customOptions the bundle's table splits with whose split layout its sidecar does not know, each with its number
/// of split rows: the profile refuses those splits until a fit's `--rules` names their layout.
pub fn unknown_layouts(dir: &Path, platform: &Platform) -> Result<Vec<(u8, u64)>, DatasetError> {
    let (Some(table), Some(file)) = (platform.table, &platform.table_file) else { return Ok(Vec::new()) };
    let mut split: std::collections::BTreeMap<u8, u64> = Default::default();
    for row in read_splitk_table(&dir.join(file))?.rows {
        let d = row.decision;
        if d.split_s > 1 && table.custom_scheme(i64::from(d.custom_option)).is_none() {
            *split.entry(d.custom_option).or_default() += 1;
        }
    }
    Ok(split.into_iter().collect())
}

/// Write the bundle into a staging directory beside `out` and load it from there: the staged bundle, or the reason it
/// would not load (naming the files as they would be at `out`: the staging directory is gone by then).
fn stage(spec: &BuildSpec, out: &Path) -> Result<tempfile::TempDir, DatasetError> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // `--out a/b/bundle` makes a/b, as any tool that writes a file would.
    std::fs::create_dir_all(parent)
        .map_err(|e| DatasetError::Write { path: parent.to_path_buf(), detail: e.to_string() })?;
    let staging = tempfile::Builder::new()
        .prefix(".mmaemu-platform-")
        .tempdir_in(parent)
        .map_err(|e| DatasetError::Write { path: parent.to_path_buf(), detail: e.to_string() })?;
    write_bundle(spec, staging.path(), out)?;
    load_platform(staging.path()).map_err(|e| {
        let text = e.to_string().replace(&staging.path().display().to_string(), &out.display().to_string());
        invalid(out, format!("the bundle would not load, so nothing was written: {text}"))
    })?;
    Ok(staging)
}

/// Write every file of the bundle into `dir` (`out` names the bundle in errors).
fn write_bundle(spec: &BuildSpec, dir: &Path, out: &Path) -> Result<(), DatasetError> {
    let copy = |src: &Path| -> Result<String, DatasetError> {
        let name = file_name(src)?;
        if name == MANIFEST || dir.join(&name).exists() {
            return Err(invalid(src, format!("a second file named {name} in the bundle")));
        }
        std::fs::copy(src, dir.join(&name)).map_err(|e| DatasetError::io(src, e))?;
        Ok(name)
    };

    let mut m = Manifest { format: FORMAT.to_string(), name: spec.name.clone(), ..Manifest::default() };
    let mut names = Vec::new();
    let table = spec.table.as_ref().map(|t| read_splitk_table(t)).transpose()?;
    // The GPU's facts: the probe's (`mmaemu-record probe`), else the table's sidecar's; both must name one platform.
    let probe = match &spec.probe {
        None => None,
        Some(path) => {
            let text = super::read_data(path, "the probe")?;
            let v: Value = serde_json::from_str(&text).map_err(|e| invalid(path, format!("not JSON: {e}")))?;
            Some((path.clone(), v))
        }
    };
    if let (Some((path, v)), Some(t)) = (&probe, &table) {
        for key in ["gpu", "cublaslt"] {
            let (a, b) = (&v[key], &t.sidecar["platform"][key]);
            if a != b {
                return Err(invalid(path, format!("the probe's `{key}` is {a}, the table's sidecar says {b}")));
            }
        }
    }
    let mut torch = None;
    let facts = match (&probe, &table) {
        (Some((path, v)), _) => Some((path.clone(), v.clone())),
        (None, Some(t)) => Some((t.sidecar_path.clone(), t.sidecar["platform"].clone())),
        (None, None) => None,
    };
    match facts {
        Some((source, p)) => {
            let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
            let gpu = text("gpu").ok_or_else(|| invalid(&source, "the platform has no `gpu`"))?;
            let cublaslt = text("cublaslt").ok_or_else(|| invalid(&source, "the platform has no `cublaslt`"))?;
            let cap: Vec<u32> = p
                .get("capability")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_u64().and_then(|c| u32::try_from(c).ok()))
                .collect();
            let [major, minor] = cap[..] else {
                return Err(invalid(&source, "the platform has no `capability` [major, minor]"));
            };
            torch = text("torch");
            m.description = format!("{gpu} (sm_{major}{minor}), cuBLASLt {cublaslt}");
            m.gpu = Some(ManifestGpu {
                name: Some(gpu),
                capability: [major, minor],
                sm_count: p.get("sm_count").and_then(Value::as_u64).and_then(|s| u32::try_from(s).ok()),
                driver: text("driver"),
            });
            m.library = Some(ManifestLibrary { cublaslt });
        }
        None => m.description = format!("{} without a recorded platform", spec.name),
    }
    if let (Some(table_path), Some(table)) = (&spec.table, &table) {
        let t = copy(table_path)?;
        let sidecar_path = splitk_sidecar_path(table_path);
        match (&spec.rules, &spec.envelope) {
            (None, None) => names.push(copy(&sidecar_path)?),
            (rules, envelope) => {
                let mut sidecar = table.sidecar.clone();
                if let Some(fit) = rules {
                    fitted_schemes(&mut sidecar, fit)?;
                }
                if let Some(path) = envelope {
                    let fitted = FittedEnvelope::read(path)?;
                    if fitted.table_sha256 != table.sha256 {
                        return Err(invalid(
                            path,
                            format!(
                                "fitted on the table with sha256 {}, not on {} (sha256 {}): fit this table's envelope",
                                fitted.table_sha256,
                                table_path.display(),
                                table.sha256
                            ),
                        ));
                    }
                    sidecar["envelope"] = fitted.envelope;
                }
                // The rewritten sidecar is the lab's, and a lab's bundle states no verification of its own (its
                // recordings establish it): the shipped claims are not carried over.
                strip_verification(&mut sidecar);
                let name = file_name(&sidecar_path)?;
                let text = serde_json::to_string_pretty(&sidecar).map_err(|e| invalid(&sidecar_path, e.to_string()))?;
                std::fs::write(dir.join(&name), text + "\n")
                    .map_err(|e| DatasetError::Write { path: dir.join(&name), detail: e.to_string() })?;
                names.push(name);
            }
        }
        m.splitk = Some(ManifestSplitk { table: Some(t.clone()), schemes: None });
        names.push(t);
    } else if spec.rules.is_some() || spec.envelope.is_some() {
        return Err(invalid(out, "--rules and --envelope go into a table's sidecar: they need --table"));
    }
    let preset = Path::new(&spec.preset);
    m.preset = if preset.is_file() {
        // A preset document, inline: checked as the manifest reader will read it.
        let text = super::read_document(preset, "the preset document")?;
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| invalid(preset, e.message().to_string()))?;
        Preset::from_table(&doc).map_err(|e| invalid(preset, e.message()))?;
        doc
    } else {
        toml::Table::from_iter([("builtin".to_string(), toml::Value::String(spec.preset.clone()))])
    };
    m.profile.push(ManifestProfile {
        name: spec.profile.clone(),
        caller: spec.caller.clone(),
        torch_version: torch,
        workspace: Some(spec.workspace),
        description: format!("{}: {}, {} B workspace", spec.name, spec.caller, spec.workspace),
        ..ManifestProfile::default()
    });
    let mut rows = Vec::new();
    for r in &spec.recordings {
        rows.extend(read_recording(r)?.rows);
        names.push(copy(r)?);
    }
    for (fa, fb, out, n) in rejections(&rows) {
        let message = format!("every recorded call of {fa} x {fb} -> {out} on this GPU was rejected ({n} rows)");
        m.reject.push(ManifestReject { fmt_a: Some(fa), fmt_b: Some(fb), out: Some(out), message });
    }
    for n in &names {
        let (sha, _) = sha256_file(&dir.join(n)).map_err(|e| DatasetError::io(&dir.join(n), e))?;
        m.files.insert(n.clone(), sha);
    }
    let text = toml::to_string(&m).map_err(|e| invalid(&dir.join(MANIFEST), e.to_string()))?;
    let text = format!("# Written by `mmaemu platform build` (docs/platform-format.md).\n{text}");
    std::fs::write(dir.join(MANIFEST), text)
        .map_err(|e| DatasetError::Write { path: dir.join(MANIFEST), detail: e.to_string() })
}

/// The (fmt_a, fmt_b, out dtype) combinations of FP8 operands whose every recorded non-empty call was rejected (each
/// row of them expects `ReferenceRejectsError`), with their row counts: the platform's rejections, learnt from its
/// recordings.
fn rejections(rows: &[crate::Row]) -> Vec<(String, String, String, usize)> {
    let mut by: std::collections::BTreeMap<(String, String, String), (usize, usize)> = Default::default();
    for r in rows.iter().filter(|r| matches!(r.op, crate::Op::Gemm | crate::Op::ScaledMm)) {
        // FP8 operands only (rows of other inputs test the caller's own argument checks).
        let fp8 = |f: &str| mmaemu_model::Format::from_name(f).is_some();
        let Some(out) = r.out_dtype.clone().filter(|o| mmaemu_model::OutDtype::from_name(o).is_some()) else {
            continue;
        };
        // A call with an empty M, N or K never reaches cuBLASLt.
        if !fp8(&r.fmt_a) || !fp8(&r.fmt_b) || r.m <= 0 || r.n <= 0 || r.k <= 0 {
            continue;
        }
        let e = by.entry((r.fmt_a.clone(), r.fmt_b.clone(), out)).or_default();
        e.0 += 1;
        if matches!(&r.expected, crate::Expectation::Error(c) if c == "ReferenceRejectsError") {
            e.1 += 1;
        }
    }
    by.into_iter().filter(|(_, (n, rejected))| n == rejected).map(|((a, b, o), (n, _))| (a, b, o, n)).collect()
}

/// Remove a sidecar's verification claims: `verified_combos` and every `split_layouts.*.verified`.
fn strip_verification(sidecar: &mut Value) {
    if let Some(o) = sidecar.as_object_mut() {
        o.remove("verified_combos");
    }
    if let Some(layouts) = sidecar.get_mut("split_layouts").and_then(Value::as_object_mut) {
        for layout in layouts.values_mut() {
            if let Some(l) = layout.as_object_mut().filter(|l| l.contains_key("verified")) {
                l.insert("verified".into(), Value::Bool(false));
            }
        }
    }
}

/// Rename the sidecar's schemes (`codes."custom -> scheme"` and its `unlisted` twin) to the rules `mmaemu fit splitk
/// --json` fitted (`schemes`: a customOption's own label first, else the label of the scheme it maps to).
fn fitted_schemes(sidecar: &mut Value, fit: &Path) -> Result<(), DatasetError> {
    let fitted = FittedSchemes::read(fit)?;
    let schemes = &fitted.schemes;
    let gpus: std::collections::BTreeSet<&str> = schemes.iter().map(|s| s.gpu.as_str()).collect();
    if gpus.len() > 1 {
        return Err(invalid(fit, format!("the fit covers several GPUs ({gpus:?}): fit one GPU's recordings")));
    }
    let rule = |label: &str| -> Result<Option<String>, DatasetError> {
        fitted.rule(label).map(|r| r.map(str::to_string)).map_err(|e| invalid(fit, e))
    };
    // A customOption the fit saw split gets its rule, listed or not.
    let codes = sidecar
        .get_mut("codes")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| invalid(fit, "the sidecar has no `codes`"))?;
    // A customOption the fit did not see split has no layout: null refuses its splits instead of the stand-in the
    // reader gives a recorder's sidecar (the first listed scheme).
    codes.entry("custom -> scheme, unlisted").or_insert(Value::Null);
    let listed = codes.entry("custom -> scheme").or_insert_with(|| Value::Object(Default::default()));
    if let Some(map) = listed.as_object_mut() {
        for s in schemes {
            if let (Some(c), Some(r)) = (s.label.strip_prefix("customOption "), &s.rule) {
                map.insert(c.to_string(), Value::String(r.clone()));
            }
        }
    }
    for key in ["custom -> scheme", "custom -> scheme, unlisted"] {
        let Some(map) = sidecar.get_mut("codes").and_then(|c| c.get_mut(key)).and_then(Value::as_object_mut) else {
            continue;
        };
        for (custom, scheme) in map.iter_mut() {
            let own = rule(&format!("customOption {custom}"))?;
            let by_scheme = match scheme.as_str() {
                Some(name) => rule(name)?,
                None => None,
            };
            if let Some(r) = own.or(by_scheme) {
                *scheme = Value::String(r);
            }
        }
    }
    Ok(())
}
