//! The platform rows replay under: each row's own preset and profile (the default), or the profiles of a platform
//! bundle for every row (`mmaemu replay --profile`, `mmaemu platform check`, docs/platform-format.md).

use mmaemu_datasets::{Row, UNKNOWN_PRESET};
use mmaemu_model::{Preset, Profile, Table};
use std::borrow::Cow;

/// What one row replays with, resolved once ([`Under::resolve`]): the profile of a `scaled_mm` row, the preset of
/// the other ops, and the split scheme. A field that cannot be resolved holds the reason the row is skipped.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The profile a `scaled_mm` row runs under: None for the one it names.
    pub profile: std::result::Result<Option<Profile>, String>,
    /// The preset of an `mma`, `accumulator` or `gemm` row.
    pub preset: std::result::Result<Preset, String>,
    /// The split scheme it replays with: its recorded one, except that a split recorded as `unknown` takes the scheme
    /// the platform's split-K table gives the row's customOption (its `algo` column), where both are known.
    pub scheme: String,
}

/// Where a row's preset and profile come from.
#[derive(Clone, Debug, Default)]
pub struct Under {
    /// Empty: each row's own.
    profiles: Vec<Profile>,
    /// The bundle directory the profiles were loaded from (`mmaemu platform check DIR`), for rerun commands.
    bundle: Option<std::path::PathBuf>,
}

impl Under {
    /// Each row under the preset and profile it names.
    pub fn own() -> Under {
        Under::default()
    }

    /// Every row under one of `profiles` (one platform's: they share its preset). A `scaled_mm` row takes the one
    /// profile there is; among several, the one of the row's profile name, else the one with the caller, workspace
    /// and alignment of the profile the row names. Ops `mma`, `accumulator` and `gemm` take the platform's preset.
    pub fn profiles(profiles: Vec<Profile>) -> Under {
        Under { profiles, bundle: None }
    }

    /// [`Under::profiles`] of the bundle at `dir`: a failing row's rerun command names it (`--profile DIR#NAME`).
    pub fn bundle_profiles(dir: &std::path::Path, profiles: Vec<Profile>) -> Under {
        Under { profiles, bundle: Some(dir.to_path_buf()) }
    }

    /// The bundle directory the profiles come from, where known.
    pub fn bundle(&self) -> Option<&std::path::Path> {
        self.bundle.as_deref()
    }

    /// Whether rows replay under their own names.
    pub fn is_own(&self) -> bool {
        self.profiles.is_empty()
    }

    /// Everything the row replays with, looked up once.
    pub fn resolve(&self, row: &Row) -> Resolved {
        let profile = self.profile(row).map(|p| p.cloned());
        let preset = match self.profiles.first() {
            Some(p) => Ok(p.preset.clone()),
            None if row.preset == UNKNOWN_PRESET => Err(format!(
                "preset '{UNKNOWN_PRESET}': the GPU's preset is still to be found (mmaemu fit preset), so there is \
                 nothing to replay the row with"
            )),
            None => mmaemu_api::catalogue()
                .preset(&row.preset)
                .map_err(|e| format!("preset '{}' is not one of this build's presets: {e}", row.preset)),
        };
        let table = match &profile {
            Ok(Some(p)) => p.splitk_table,
            _ => self.profiles.first().and_then(|p| p.splitk_table),
        };
        Resolved { scheme: scheme_with(row, table).into_owned(), profile, preset }
    }

    /// The profile a `scaled_mm` row replays under: `Ok(None)` for its own; `Err(reason)` (a skip) where none of the
    /// platform's profiles stands for the row's.
    pub fn profile(&self, row: &Row) -> std::result::Result<Option<&Profile>, String> {
        match self.profiles.as_slice() {
            [] => return Ok(None),
            [only] => return Ok(Some(only)),
            _ => {}
        }
        let name = row.profile.as_deref().ok_or("the row names no profile")?;
        if let Some(p) = self.profiles.iter().find(|p| p.name == name) {
            return Ok(Some(p));
        }
        let theirs = mmaemu_api::catalogue().profile(name).map_err(|e| e.to_string())?;
        let same = |p: &&Profile| {
            (p.caller, p.workspace_bytes, p.align) == (theirs.caller, theirs.workspace_bytes, theirs.align)
        };
        self.profiles.iter().find(same).map(Some).ok_or_else(|| {
            format!("no profile of the platform has the caller, workspace and alignment of the row's profile '{name}'")
        })
    }

    /// The (preset, profile) names a row counts under in the status table.
    pub fn names(&self, row: &Row) -> (String, Option<String>) {
        match (self.profiles.first(), self.profile(row)) {
            (Some(first), Ok(p)) => {
                (first.preset.name().to_string(), row.profile.as_ref().map(|_| p.unwrap_or(first).name.clone()))
            }
            _ => (row.preset.clone(), row.profile.clone()),
        }
    }
}

/// A row's recorded scheme, or for `unknown` the scheme `table` gives its customOption.
fn scheme_with(row: &Row, table: Option<Table>) -> Cow<'_, str> {
    let recorded = row.split_scheme.as_deref().unwrap_or("none");
    match (recorded, table, row.custom_option()) {
        ("unknown", Some(t), Some(c)) => t.custom_scheme(c).map_or("unknown".into(), |s| s.name().into_owned().into()),
        _ => recorded.into(),
    }
}
