//! Platform bundles on disk (`mmaemu-platform/1`, docs/platform-format.md): loading a bundle directory — its file
//! set and sha256s checked, its table read and encoded — into the model's [`Platform`], `MMAEMU_PLATFORMS`, and
//! `--profile PATH`. Every defect is a [`DatasetError`] naming the file and the problem; nothing is half-loaded.

mod build;
mod encode;
mod files;
mod fitted;

pub use build::{build_platform, replace_platform, unknown_layouts, BuildSpec};
pub use encode::{encode_table, Stats};
pub use files::{
    is_plain_label, is_plain_name, read_data, read_document, read_preset_document, read_regular, MAX_DOCUMENT_BYTES,
};
pub use fitted::{FittedEnvelope, FittedSchemes, SchemeFit, ENVELOPE_FORMAT};

use crate::DatasetError;
use mmaemu_model::platform::MANIFEST;
use mmaemu_model::{Catalogue, Platform, Profile, Table};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

/// The environment variable listing directories of platform bundles (or bundles themselves), separated like `PATH`.
pub const PLATFORMS_ENV: &str = "MMAEMU_PLATFORMS";

fn invalid(path: &Path, what: impl Into<String>) -> DatasetError {
    DatasetError::invalid(path, None, what)
}

/// The bundle directory of `path`: the directory itself, or the directory of a `platform.toml`.
fn bundle_dir(path: &Path) -> PathBuf {
    if path.file_name().is_some_and(|n| n == MANIFEST) {
        path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    } else {
        path.to_path_buf()
    }
}

/// The `[files]` table of a manifest (file name → sha256), read before anything else is.
fn listed_files(manifest: &Path, text: &str) -> Result<BTreeMap<String, String>, DatasetError> {
    let doc: toml::Table =
        toml::from_str(text).map_err(|e| invalid(manifest, format!("not TOML: {}", e.to_string().trim())))?;
    let mut out = BTreeMap::new();
    if let Some(files) = doc.get("files") {
        let files = files.as_table().ok_or_else(|| invalid(manifest, "`files` is not a table"))?;
        for (name, sha) in files {
            let sha = sha
                .as_str()
                .ok_or_else(|| invalid(manifest, format!("[files] {name:?}: the sha256 is not a string")))?;
            if !is_plain_name(name) || name == MANIFEST {
                return Err(invalid(manifest, format!("[files] {name:?}: not a plain file name of the bundle")));
            }
            out.insert(name.clone(), sha.to_ascii_lowercase());
        }
    }
    Ok(out)
}

/// The bundle's files: exactly the listed ones besides the manifest (no missing, no extra file), each a regular file
/// within the memory ceiling whose sha256 is the listed one, read once: the bytes returned are the bytes hashed.
fn read_files(
    dir: &Path,
    manifest: &Path,
    listed: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, Vec<u8>>, DatasetError> {
    let entries = std::fs::read_dir(dir).map_err(|e| DatasetError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| DatasetError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != MANIFEST && !listed.contains_key(&name) {
            return Err(invalid(&entry.path(), format!("a file the bundle's {MANIFEST} does not list in [files]")));
        }
    }
    let mut out = BTreeMap::new();
    for (name, want) in listed {
        let path = dir.join(name);
        if std::fs::symlink_metadata(&path).is_err() {
            return Err(invalid(manifest, format!("[files] lists {name}, which is missing")));
        }
        let bytes = read_regular(&path, crate::limits::ceiling(), &format!("bundle file {name}"))?;
        let got = crate::digest::sha256_hex(&bytes);
        if &got != want {
            return Err(invalid(&path, format!("sha256 {got} differs from the {MANIFEST}'s {want}")));
        }
        out.insert(name.clone(), bytes);
    }
    Ok(out)
}

/// The split-K table `[splitk] table` names: a plain name listed in `[files]`, with its sidecar beside it, both
/// parsed from the bytes that were hashed. A sidecar that declares verified split combinations is refused unless it
/// is a built-in table's own sidecar, byte for byte: verification comes from recordings, never from a declaration.
fn bundle_table(
    dir: &Path,
    manifest: &Path,
    file: &str,
    bytes: &mut BTreeMap<String, Vec<u8>>,
) -> Result<Table, DatasetError> {
    let sidecar_name = Path::new(file).with_extension("json").to_string_lossy().into_owned();
    for name in [file, sidecar_name.as_str()] {
        if !is_plain_name(name) {
            return Err(invalid(
                manifest,
                format!("[splitk] names {name:?}, which is not a plain file name of the bundle"),
            ));
        }
        if !bytes.contains_key(name) {
            return Err(invalid(manifest, format!("[splitk] names {name}, which [files] does not list")));
        }
    }
    let (table_path, sidecar_path) = (dir.join(file), dir.join(&sidecar_name));
    let sidecar_bytes = bytes.get(&sidecar_name).cloned().unwrap_or_default();
    let parquet = bytes.remove(file).unwrap_or_default();
    let table = crate::splitk_table::splitk_table_from_bytes(&table_path, parquet, &sidecar_path, &sidecar_bytes)?;
    let (blob, _) = encode_table(&table).map_err(|e| invalid(&table_path, e))?;
    let sidecar =
        std::str::from_utf8(&sidecar_bytes).map_err(|_| invalid(&sidecar_path, "the sidecar is not UTF-8"))?;
    let t = Table::new(sidecar, blob, &sidecar_path.display().to_string())
        .map_err(|e| invalid(&sidecar_path, e.message().to_string()))?;
    let shipped = Catalogue::builtin()
        .platforms()
        .iter()
        .filter_map(|p| p.table)
        .any(|b| b.sidecar_sha256() == t.sidecar_sha256());
    if t.declares_verification() && !shipped {
        return Err(invalid(
            &sidecar_path,
            "the sidecar declares verified split combinations (`verified_combos`, `split_layouts.*.verified`): a \
             bundle's verification is computed from its recordings by `mmaemu platform check`, never declared",
        ));
    }
    t.check().map_err(|e| invalid(&table_path, e.message().to_string()))?;
    Ok(t)
}

/// The bundle directory of `path` and its manifest's path and text (a missing manifest is not-found; the manifest is
/// read as every bundle file is, regular and capped).
fn read_manifest(path: &Path) -> Result<(PathBuf, PathBuf, String), DatasetError> {
    let dir = bundle_dir(path);
    let manifest = dir.join(MANIFEST);
    if std::fs::symlink_metadata(&manifest).is_err() {
        return Err(DatasetError::NotFound { path: manifest });
    }
    let text = read_document(&manifest, "the manifest")?;
    Ok((dir, manifest, text))
}

/// The library's own platform when `path` is one of its shipped bundles (its manifest byte for byte, every listed
/// file with its sha256), else None. Such a bundle states its maturity, which a loaded bundle may not: `platform
/// check` checks it against the shipped recordings instead of loading it.
pub fn builtin_bundle(path: &Path) -> Result<Option<Platform>, DatasetError> {
    let (dir, manifest, text) = read_manifest(path)?;
    let Some((name, _)) = mmaemu_model::catalogue::builtin_manifests().find(|(_, t)| *t == text) else {
        return Ok(None);
    };
    read_files(&dir, &manifest, &listed_files(&manifest, &text)?)?;
    Ok(Catalogue::builtin().platforms().iter().find(|p| p.name == name).cloned())
}

/// Load the platform bundle at `path` (its directory or its `platform.toml`): the manifest, the file set and every
/// sha256, the split-K table (read, encoded and checked against its sidecar now). Every file is regular and read
/// once; every name is plain; a profile whose name is a built-in one is refused.
pub fn load_platform(path: &Path) -> Result<Platform, DatasetError> {
    let (dir, manifest, text) = read_manifest(path)?;
    let listed = listed_files(&manifest, &text)?;
    let mut bytes = read_files(&dir, &manifest, &listed)?;
    let mut table_err = None;
    let what = manifest.display().to_string();
    let platform = Platform::from_manifest(&text, &what, false, |file| {
        bundle_table(&dir, &manifest, file, &mut bytes).map_err(|e| {
            let m = mmaemu_model::Error::new(mmaemu_model::Category::Data, e.to_string());
            table_err = Some(e);
            m
        })
    });
    let platform = match platform {
        Ok(p) => p,
        Err(e) => return Err(table_err.unwrap_or_else(|| invalid(&manifest, e.message().to_string()))),
    };
    let names = std::iter::once(("platform", platform.name.as_str()))
        .chain(std::iter::once(("preset", platform.preset.name())))
        .chain(platform.profiles.iter().map(|p| ("profile", p.name.as_str())));
    for (kind, name) in names {
        if !is_plain_label(name) {
            return Err(invalid(
                &manifest,
                format!("{kind} name {name:?} is not plain: names are ASCII [a-z0-9][a-z0-9._-]*"),
            ));
        }
    }
    let builtin = Catalogue::builtin().builtin_profile_names();
    if let Some(p) = platform.profiles.iter().find(|p| builtin.contains(&p.name)) {
        return Err(invalid(&manifest, format!("profile '{}' clashes with a built-in profile", p.name)));
    }
    Ok(platform)
}

/// The process's catalogue: the built-ins and every bundle [`register_platform`] loaded. The model keeps no
/// registry; the command line and the Python package load bundles once and look names up here.
pub fn catalogue() -> Arc<Catalogue> {
    process_catalogue().read().unwrap_or_else(|e| e.into_inner()).clone()
}

fn process_catalogue() -> &'static RwLock<Arc<Catalogue>> {
    static CATALOGUE: OnceLock<RwLock<Arc<Catalogue>>> = OnceLock::new();
    CATALOGUE.get_or_init(|| RwLock::new(Arc::new(Catalogue::builtin().clone())))
}

/// Load a bundle and add it to the process's catalogue ([`catalogue`]), so that its profiles are found by name.
pub fn register_platform(path: &Path) -> Result<Platform, DatasetError> {
    let platform = load_platform(path)?;
    let mut current = process_catalogue().write().unwrap_or_else(|e| e.into_inner());
    let next = current
        .with(platform.clone())
        .map_err(|e| invalid(&bundle_dir(path).join(MANIFEST), e.message().to_string()))?;
    *current = Arc::new(next);
    Ok(platform)
}

/// Load and register every bundle `MMAEMU_PLATFORMS` names (a bundle, or a directory whose subdirectories are
/// bundles). Unset or empty: nothing. Errors name the variable.
pub fn register_env_platforms() -> Result<Vec<Platform>, DatasetError> {
    let Some(value) = std::env::var_os(PLATFORMS_ENV).filter(|v| !v.is_empty()) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    // Empty entries (a stray or doubled separator) name nothing and are skipped.
    for dir in std::env::split_paths(&value).filter(|d| !d.as_os_str().is_empty()) {
        let named = |e: DatasetError| invalid(&dir, format!("{PLATFORMS_ENV}: {e}"));
        if dir.join(MANIFEST).is_file() {
            out.push(register_platform(&dir).map_err(named)?);
            continue;
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| named(DatasetError::io(&dir, e)))?;
        // A hidden directory is no bundle of the list: `mmaemu platform build` stages and sets aside bundles there.
        let visible = |p: &PathBuf| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
        let mut bundles: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| visible(p) && p.join(MANIFEST).is_file())
            .collect();
        bundles.sort();
        if bundles.is_empty() {
            return Err(named(invalid(&dir, format!("neither a bundle nor a directory of bundles (no {MANIFEST})"))));
        }
        for b in bundles {
            out.push(register_platform(&b).map_err(named)?);
        }
    }
    Ok(out)
}

/// Whether a `--profile` argument names a bundle on disk rather than a profile by name: it holds a path separator
/// or ends in `platform.toml` (an optional `#PROFILE` picks one of the bundle's profiles).
pub fn is_bundle_arg(arg: &str) -> bool {
    let path = arg.split('#').next().unwrap_or(arg);
    path.contains('/') || path.contains(std::path::MAIN_SEPARATOR) || path.ends_with(MANIFEST)
}

/// The profile of a `--profile PATH[#NAME]` argument: the bundle's only profile, or the one named.
pub fn load_profile(arg: &str) -> Result<Profile, DatasetError> {
    let (path, name) = match arg.split_once('#') {
        Some((p, n)) => (p, Some(n)),
        None => (arg, None),
    };
    let path = Path::new(path);
    let platform = load_platform(path)?;
    let names: Vec<&str> = platform.profiles.iter().map(|p| p.name.as_str()).collect();
    let manifest = bundle_dir(path).join(MANIFEST);
    match name {
        Some(n) => {
            platform.profiles.iter().find(|p| p.name == n).cloned().ok_or_else(|| {
                invalid(&manifest, format!("no profile '{n}' in the bundle (it has {})", names.join(", ")))
            })
        }
        None if platform.profiles.len() == 1 => Ok(platform.profiles[0].clone()),
        None => Err(invalid(
            &manifest,
            format!("the bundle has {} profiles ({}): name one as PATH#PROFILE", names.len(), names.join(", ")),
        )),
    }
}
