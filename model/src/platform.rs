//! Platforms (docs/platform-format.md): one GPU under one cuBLASLt — its preset, split-K table, rejections and
//! the profiles of its callers — read from a `platform.toml` manifest. The built-in platforms are embedded
//! manifests read by the same reader; the platforms a caller loads join them in its `Catalogue`.

use crate::epilogue::OutDtype;
use crate::error::{Category, Error, Result};
use crate::format::Format;
use crate::manifest::Manifest;
use crate::plan::Scheme;
use crate::preset::{Maturity, Preset};
use crate::profile::{Caller, Profile, RejectRule};
use crate::splitk::Table;
use std::collections::BTreeMap;

pub use crate::manifest::{FORMAT, MANIFEST};

/// One platform: the GPU, its library, and the profiles of its callers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Platform {
    /// The bundle's name.
    pub name: String,
    /// Human description.
    pub description: String,
    /// The preset of its tensor cores.
    pub preset: Preset,
    /// The split-K table, if the platform has one.
    pub table: Option<Table>,
    /// The file name of the table (`[splitk] table`).
    pub table_file: Option<String>,
    /// The file names of the bundle and their sha256 (`[files]`).
    pub files: BTreeMap<String, String>,
    /// The GPU's driver version.
    pub driver: Option<String>,
    /// Its profiles.
    pub profiles: Vec<Profile>,
    /// Whether it is one of the library's own (embedded) platforms.
    pub builtin: bool,
}

fn data_err(what: &str, msg: impl std::fmt::Display) -> Error {
    Error::new(Category::Data, format!("platform {what}: {msg}"))
}

fn maturity_of(what: &str, s: Option<&str>) -> Result<Option<Maturity>> {
    match s {
        None => Ok(None),
        Some("validated") => Ok(Some(Maturity::Validated)),
        Some("experimental") => Ok(Some(Maturity::Experimental)),
        Some(other) => Err(data_err(what, format!("unknown maturity {other:?} (validated, experimental)"))),
    }
}

/// The `[preset]` table: a built-in preset by name, or a preset document inline.
fn preset_of(t: &toml::Table, what: &str) -> Result<Preset> {
    let err = |e: Error| data_err(what, format!("[preset]: {}", e.message()));
    match (t.get("builtin"), t.len()) {
        (Some(toml::Value::String(name)), 1) => Preset::builtin(name).ok_or_else(|| {
            data_err(what, format!("[preset]: no built-in preset '{name}'; known: {}", Preset::list().join(", ")))
        }),
        (Some(_), _) => {
            let extra: Vec<&str> = t.keys().map(String::as_str).filter(|k| *k != "builtin").collect();
            Err(data_err(
                what,
                format!("[preset]: `builtin` names a preset alone; unknown keys beside it: {}", extra.join(", ")),
            ))
        }
        (None, _) => Preset::from_table(t).map_err(err),
    }
}

impl Platform {
    /// Read a manifest's text. `table` turns the `[splitk] table` file name into the table (the built-ins embed
    /// theirs; a loaded bundle reads its files). `builtin` marks the library's own platforms: only they may state
    /// a maturity (docs/reference.md §6.1); every other platform's profiles are experimental until
    /// `mmaemu platform check` computes their status from the bundle's recordings.
    pub fn from_manifest(
        text: &str,
        what: &str,
        builtin: bool,
        table: impl FnOnce(&str) -> Result<Table>,
    ) -> Result<Platform> {
        let m: Manifest =
            toml::from_str(text).map_err(|e| data_err(what, format!("{MANIFEST}: {}", e.to_string().trim())))?;
        if m.format != FORMAT {
            return Err(data_err(what, format!("{MANIFEST}: format {:?}, expected {FORMAT:?}", m.format)));
        }
        let preset = preset_of(&m.preset, what)?;
        let table_file = m.splitk.as_ref().and_then(|s| s.table.clone());
        let table = table_file.as_deref().map(table).transpose()?;
        let schemes = match (table, m.splitk.as_ref().and_then(|s| s.schemes.as_ref())) {
            (Some(_), Some(_)) => {
                return Err(data_err(
                    what,
                    "[splitk]: `schemes` is for a platform without a table: its table's are used",
                ))
            }
            (Some(t), None) => t.schemes(),
            (None, Some(names)) => {
                let mut v = Vec::new();
                for n in names {
                    match Scheme::from_name(n) {
                        Some(s) if s != Scheme::None => v.push(s),
                        _ => return Err(data_err(what, format!("[splitk]: {n:?} is not a split scheme or rule"))),
                    }
                }
                v.sort();
                v.dedup();
                v
            }
            (None, None) => Vec::new(),
        };
        if let Some(t) = table {
            let gpu = m.gpu.as_ref().and_then(|g| g.name.as_deref());
            if gpu != Some(t.gpu()) {
                return Err(data_err(what, format!("the split-K table was recorded on {}, not {gpu:?}", t.gpu())));
            }
        }
        if let (Some(t), Some(lib)) = (table, &m.library) {
            if t.cublaslt() != lib.cublaslt {
                return Err(data_err(
                    what,
                    format!("the split-K table is of cuBLASLt {}, not {}", t.cublaslt(), lib.cublaslt),
                ));
            }
        }
        let parse_fmt = |s: &Option<String>| -> Result<Option<Format>> {
            s.as_deref()
                .map(|f| {
                    Format::from_name(f).ok_or_else(|| data_err(what, format!("[[reject]]: unknown format {f:?}")))
                })
                .transpose()
        };
        let mut rejects = Vec::new();
        for r in &m.reject {
            let out = r
                .out
                .as_deref()
                .map(|o| {
                    OutDtype::from_name(o).ok_or_else(|| data_err(what, format!("[[reject]]: unknown out dtype {o:?}")))
                })
                .transpose()?;
            rejects.push(RejectRule {
                fmt_a: parse_fmt(&r.fmt_a)?,
                fmt_b: parse_fmt(&r.fmt_b)?,
                out,
                message: r.message.clone(),
            });
        }
        if m.profile.is_empty() {
            return Err(data_err(what, "no [[profile]]"));
        }
        let mut profiles = Vec::new();
        for p in &m.profile {
            let caller = Caller::from_name(&p.caller)
                .ok_or_else(|| data_err(what, format!("profile {}: unknown caller {:?}", p.name, p.caller)))?;
            let declared =
                (maturity_of(what, p.maturity.as_deref())?, maturity_of(what, p.splitk_maturity.as_deref())?);
            if !builtin && (declared.0.is_some() || declared.1.is_some()) {
                return Err(data_err(
                    what,
                    format!("profile {}: maturity is computed from recordings, never declared (run `mmaemu platform check`)", p.name),
                ));
            }
            if profiles.iter().any(|q: &Profile| q.name == p.name) {
                return Err(data_err(what, format!("profile {} is listed twice", p.name)));
            }
            let maturity = declared.0.unwrap_or(Maturity::Experimental);
            let splitk_maturity = table.map(|_| declared.1.unwrap_or(Maturity::Experimental));
            profiles.push(Profile {
                name: p.name.clone(),
                preset: preset.clone(),
                gpu_name: m.gpu.as_ref().and_then(|g| g.name.clone()),
                capability: m.gpu.as_ref().map_or((0, 0), |g| (g.capability[0], g.capability[1])),
                sm_count: m.gpu.as_ref().and_then(|g| g.sm_count),
                cublaslt_version: m.library.as_ref().map(|l| l.cublaslt.clone()),
                caller,
                torch_version: p.torch_version.clone(),
                workspace_bytes: p.workspace,
                align: p.align,
                splitk_table: table,
                schemes: schemes.clone(),
                rejects: rejects.clone(),
                maturity,
                splitk_maturity,
                description: p.description.clone(),
            });
        }
        Ok(Platform {
            name: m.name,
            description: m.description,
            preset,
            table,
            table_file,
            files: m.files,
            driver: m.gpu.and_then(|g| g.driver),
            profiles,
            builtin,
        })
    }

    /// Whether a file of the bundle is a recording: a Parquet file other than the split-K table.
    pub fn is_recording(&self, file: &str) -> bool {
        file.ends_with(".parquet") && self.table_file.as_deref() != Some(file)
    }
}
