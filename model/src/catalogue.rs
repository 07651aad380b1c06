//! The catalogue (docs/reference.md §2.1, §6.1): the presets, platforms and profiles a call can name — the library's
//! own documents (datasets/presets, datasets/platforms, embedded) plus the bundles a caller loaded — as one value
//! that callers pass in. The model keeps no registry: whoever loads a bundle holds the catalogue that knows it.

use crate::error::{Category, Error, Result};
use crate::plan::Scheme;
use crate::platform::Platform;
use crate::preset::{Preset, BRING_UP};
use crate::preset_document::BuiltinPreset;
use crate::profile::Profile;
use crate::splitk::Table;
use std::sync::OnceLock;

/// The library's own preset documents.
const PRESETS: [&str; 5] = [
    include_str!("../../datasets/presets/ada.toml"),
    include_str!("../../datasets/presets/b200_mma_sync.toml"),
    include_str!("../../datasets/presets/b200_tcgen05.toml"),
    include_str!("../../datasets/presets/hopper.toml"),
    include_str!("../../datasets/presets/rtx50_mma_sync.toml"),
];

/// The library's own platforms, in the order of docs/reference.md §6.1: (bundle directory name, manifest text, and
/// for a platform with a split-K table, its sidecar and its rows encoded by `mmaemu-embed-tables`, splitk/README.md).
type BuiltinPlatform = (&'static str, &'static str, Option<(&'static str, &'static [u8])>);
const PLATFORMS: [BuiltinPlatform; 6] = [
    (
        "rtx4060-cublaslt-12.8.3.14",
        include_str!("../../datasets/platforms/rtx4060-cublaslt-12.8.3.14/platform.toml"),
        Some((
            include_str!("../../datasets/platforms/rtx4060-cublaslt-12.8.3.14/rtx4060-cublaslt-12.8.3.14.json"),
            include_bytes!("splitk/data/rtx4060-cublaslt-12.8.3.14.bin"),
        )),
    ),
    (
        "h100pcie-cublaslt-12.8.3.14",
        include_str!("../../datasets/platforms/h100pcie-cublaslt-12.8.3.14/platform.toml"),
        Some((
            include_str!("../../datasets/platforms/h100pcie-cublaslt-12.8.3.14/h100pcie-cublaslt-12.8.3.14.json"),
            include_bytes!("splitk/data/h100pcie-cublaslt-12.8.3.14.bin"),
        )),
    ),
    ("hopper-experimental", include_str!("../../datasets/platforms/hopper-experimental/platform.toml"), None),
    (
        "b200-mma-sync-experimental",
        include_str!("../../datasets/platforms/b200-mma-sync-experimental/platform.toml"),
        None,
    ),
    (
        "b200-tcgen05-experimental",
        include_str!("../../datasets/platforms/b200-tcgen05-experimental/platform.toml"),
        None,
    ),
    (
        "rtx50-mma-sync-experimental",
        include_str!("../../datasets/platforms/rtx50-mma-sync-experimental/platform.toml"),
        None,
    ),
];

/// The library's own platforms' manifests as shipped: (bundle directory name, manifest text).
pub fn builtin_manifests() -> impl Iterator<Item = (&'static str, &'static str)> {
    PLATFORMS.iter().map(|(dir, text, _)| (*dir, *text))
}

/// The built-in preset documents, read once (they are part of the source: `model/tests/presets.rs` reads each).
pub fn builtin_presets() -> &'static [BuiltinPreset] {
    static ALL: OnceLock<Vec<BuiltinPreset>> = OnceLock::new();
    ALL.get_or_init(|| {
        PRESETS
            .iter()
            .map(|text| BuiltinPreset::from_document(text).unwrap_or_else(|e| panic!("datasets/presets: {e}")))
            .collect()
    })
}

/// Whether `name` is a name a document or bundle may give a preset, platform or profile: plain ASCII,
/// `[a-z0-9][a-z0-9._-]*`, so that no name differs from another (a built-in's) only by case, spacing or look-alike
/// characters.
pub fn is_plain_label(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// The presets, platforms and profiles a caller can name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catalogue {
    /// The built-in platforms, then the loaded ones in their order of loading.
    platforms: Vec<Platform>,
}

impl Catalogue {
    /// The library's own platforms and presets (read once; the embedded documents are checked by the tests).
    pub fn builtin() -> &'static Catalogue {
        static BUILTIN: OnceLock<Catalogue> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            let platforms = PLATFORMS
                .iter()
                .map(|(dir, text, table)| {
                    Platform::from_manifest(text, dir, true, |file| match table {
                        Some((sidecar, rows)) if file == format!("{dir}.parquet") => {
                            Table::of_embedded(sidecar, rows, dir)
                        }
                        _ => Err(Error::new(Category::Data, format!("no embedded split-K table '{file}'"))),
                    })
                    .unwrap_or_else(|e| panic!("datasets/platforms/{dir}: {e}"))
                })
                .collect();
            Catalogue { platforms }
        })
    }

    /// This catalogue and `platform`. A profile name that is already known, or a preset name known with other
    /// parameters, is a data error; adding the very same platform twice is harmless.
    pub fn with(&self, platform: Platform) -> Result<Catalogue> {
        let data_err = |msg: String| Error::new(Category::Data, format!("platform {}: {msg}", platform.name));
        for p in &platform.profiles {
            if let Some(q) = self.platforms.iter().find(|q| q.profiles.iter().any(|x| x.name == p.name)) {
                if q == &platform {
                    return Ok(self.clone());
                }
                return Err(data_err(format!("profile '{}' clashes with a profile of platform {}", p.name, q.name)));
            }
        }
        // A preset is known by its name too (rows name it): one name, one arithmetic.
        let same_name = self.platforms.iter().find(|q| q.preset.name() == platform.preset.name());
        if let Some(q) = same_name {
            if q.preset.spec() != platform.preset.spec() {
                return Err(data_err(format!(
                    "preset '{}' clashes with the preset of platform {} (same name, other parameters)",
                    platform.preset.name(),
                    q.name
                )));
            }
        }
        let mut platforms = self.platforms.clone();
        platforms.push(platform);
        Ok(Catalogue { platforms })
    }

    /// Every platform: the built-ins, then the loaded ones.
    pub fn platforms(&self) -> &[Platform] {
        &self.platforms
    }

    /// The platforms loaded into this catalogue (not the built-ins).
    pub fn loaded(&self) -> impl Iterator<Item = &Platform> {
        self.platforms.iter().filter(|p| !p.builtin)
    }

    /// Every profile: the built-in ones in the order of §6.1, then those of loaded platforms.
    pub fn profiles(&self) -> impl Iterator<Item = &Profile> {
        self.platforms.iter().flat_map(|p| p.profiles.iter())
    }

    /// The names of the built-in profiles, in the order of §6.1.
    pub fn builtin_profile_names(&self) -> Vec<String> {
        self.platforms.iter().filter(|p| p.builtin).flat_map(|p| p.profiles.iter().map(|q| q.name.clone())).collect()
    }

    /// A profile by name. Unknown names are invalid-argument (unknown name) errors naming the known profiles and
    /// the way to add a GPU.
    pub fn profile(&self, name: &str) -> Result<Profile> {
        if let Some(p) = self.profiles().find(|p| p.name == name) {
            return Ok(p.clone());
        }
        let known: Vec<&str> = self.profiles().map(|p| p.name.as_str()).collect();
        Err(Error::unknown_name(format!(
            "unknown profile '{name}'; known: {}. A GPU without a profile is brought up as a platform bundle: see {BRING_UP}",
            known.join(", ")
        )))
    }

    /// A preset by name (docs/reference.md §2.1): a built-in name or alias, then the presets of the loaded
    /// platforms. The names a built-in document refuses point to the bring-up guide.
    pub fn preset(&self, name: &str) -> Result<Preset> {
        if let Some(p) = Preset::builtin(name) {
            return Ok(p);
        }
        if let Some(p) = self.platforms.iter().find(|p| p.preset.name() == name) {
            return Ok(p.preset.clone());
        }
        for b in builtin_presets() {
            if b.refused.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                let why = b.refused_because.as_deref().unwrap_or("no preset models this GPU");
                return Err(Error::unknown_name(format!("unknown preset '{name}': {why}; see {BRING_UP}")));
            }
        }
        let aliases: Vec<String> =
            builtin_presets().iter().flat_map(|b| b.aliases.iter().map(|a| format!("'{a}'"))).collect();
        let known: Vec<String> = Preset::list().iter().map(|n| format!("'{n}'")).collect();
        Err(Error::unknown_name(format!(
            "unknown preset '{name}'; known: [{}] (alias: {})",
            known.join(", "),
            aliases.join(", ")
        )))
    }

    /// A preset named by `arg`: a name [`Catalogue::preset`] knows, or else, when `arg` ends in `.toml` or holds
    /// a path separator, the `mmaemu-preset/1` document at that path, read with `read` (the model does no I/O).
    /// Errors: [`Catalogue::preset`]'s for other names; an invalid value for a file that cannot be read or parsed.
    pub fn preset_or_path(&self, arg: &str, read: impl FnOnce(&str) -> std::io::Result<String>) -> Result<Preset> {
        let is_path = arg.ends_with(".toml") || arg.contains('/') || arg.contains(std::path::MAIN_SEPARATOR);
        match self.preset(arg) {
            Err(_) if is_path => {
                let text = read(arg).map_err(|e| {
                    Error::invalid_value(format!("preset document: cannot read preset file '{arg}': {e}"))
                })?;
                Preset::from_document(&text)
                    .map_err(|e| Error::new(e.category(), e.message().replacen("preset document", arg, 1)))
            }
            other => other,
        }
    }

    /// The split schemes `preset`'s kernels use: those of the profiles of the platforms whose preset it is (their
    /// tables' customOptions' schemes or their manifests' `[splitk] schemes`, sorted). A preset no platform holds may be split by any documented scheme;
    /// one whose platforms have no table has no split-K layout.
    pub fn schemes(&self, preset: &Preset) -> Vec<Scheme> {
        let holders: Vec<&Platform> = self.platforms.iter().filter(|p| p.preset.spec() == preset.spec()).collect();
        if holders.is_empty() {
            return vec![Scheme::Serial, Scheme::Pairwise, Scheme::Contiguous];
        }
        let mut schemes: Vec<Scheme> =
            holders.iter().flat_map(|p| p.profiles.iter().flat_map(|q| q.schemes.iter().copied())).collect();
        schemes.sort();
        schemes.dedup();
        schemes
    }
}
