//! The manifest `platform.toml` of a platform bundle (docs/platform-format.md) as serde types: one shape that
//! `Platform::from_manifest` reads and `mmaemu platform build` writes, so the writer cannot drift from the reader.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The manifest's format.
pub const FORMAT: &str = "mmaemu-platform/1";

/// The file name of a bundle's manifest.
pub const MANIFEST: &str = "platform.toml";

/// A whole manifest.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Exactly [`FORMAT`].
    pub format: String,
    /// The bundle's name.
    pub name: String,
    /// Human description.
    pub description: String,
    /// The GPU (a platform without a reference GPU has only its capability).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<ManifestGpu>,
    /// Its cuBLASLt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<ManifestLibrary>,
    /// `builtin = "NAME"`, or a preset document (`mmaemu-preset/1`, docs/preset-format.md) inline.
    pub preset: toml::Table,
    /// The split-K table, or the split layouts alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub splitk: Option<ManifestSplitk>,
    /// The calls its cuBLAS rejects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reject: Vec<ManifestReject>,
    /// Its profiles (one or more).
    pub profile: Vec<ManifestProfile>,
    /// Every other file of the bundle and its sha256.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

/// `[gpu]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestGpu {
    /// The name the driver reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Compute capability [major, minor].
    pub capability: [u32; 2],
    /// SM count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_count: Option<u32>,
    /// Driver version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
}

/// `[library]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestLibrary {
    /// cuBLASLt's version.
    pub cublaslt: String,
}

/// `[splitk]`: a table, or (without one) the schemes the GPU's split kernels use.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestSplitk {
    /// The table's Parquet file; its sidecar is the same stem with `.json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Without a table: the schemes of the GPU's split kernels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schemes: Option<Vec<String>>,
}

/// `[[reject]]`: None fields match anything.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestReject {
    /// Format of A.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fmt_a: Option<String>,
    /// Format of B.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fmt_b: Option<String>,
    /// Out dtype.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
    /// The message.
    pub message: String,
}

/// `[[profile]]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestProfile {
    /// Unique among all known profiles.
    pub name: String,
    /// `torch._scaled_mm` or `transformer_engine`.
    pub caller: String,
    /// torch's version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torch_version: Option<String>,
    /// cuBLASLt workspace in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<u64>,
    /// MIN_ALIGNMENT (Transformer Engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub align: Option<u32>,
    /// Human description.
    pub description: String,
    /// Built-in bundles only: the maturity docs/reference.md §6.1 gives them (a loaded bundle's is computed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maturity: Option<String>,
    /// Built-in bundles only, likewise for the split-K decisions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub splitk_maturity: Option<String>,
}
