//! The sidecar data of a split-K table (docs/reference.md §6.4–6.6): the per-setting summaries, the envelope, the
//! verified split combinations, the customOption → scheme rule and the notes — the types `sidecar_json` reads the
//! sidecar's JSON into (leaked: a table lives as long as the process).

use crate::epilogue::OutDtype;
use crate::format::Format;
use crate::plan::Scheme;

/// One table setting (ws, out, fast, fa, fb) and its summary (sidecar `settings`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SettingSummary {
    pub ws: u64,
    pub out: OutDtype,
    pub fast: bool,
    pub fa: Format,
    pub fb: Format,
    pub rows: u64,
    pub split_rows: u64,
    /// Largest M*N of a split row (None: no split row).
    pub max_split_mn: Option<u64>,
    /// Smallest K of a split row (None: no split row).
    #[allow(dead_code)]
    pub min_split_k: Option<u64>,
    /// The split counts that occur.
    #[allow(dead_code)]
    pub s_values: &'static [u8],
}

/// One bound list of a k_grid envelope.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KBound {
    pub ws: u64,
    pub out: OutDtype,
    pub fast: bool,
    pub fa: Format,
    pub fb: Format,
    /// B per grid K; [`NULL_BOUND`] for a null entry.
    pub b: &'static [u64],
}

/// The held-out validation of a k_grid envelope at one workspace.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WsValidation {
    pub ws: u64,
    /// `validated` or `unvalidated`.
    pub status: &'static str,
    /// Held-out shapes above the bound.
    pub tested: u64,
    /// Of which split.
    pub split_above_bound: u64,
}

/// The envelope of a table (sidecar `envelope`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Envelope {
    /// RTX 4060: S = 1 iff M*N > margin * max_split_MN of the setting (union over out dtypes if absent).
    MaxSplitMn { inference: bool, margin: u64 },
    /// H100: S = 1 iff M*N > B(setting, smallest grid K >= K), K_min <= K <= K_max.
    KGrid {
        inference: bool,
        k_min: u64,
        k_max: u64,
        k_grid: &'static [u64],
        bounds: &'static [KBound],
        validation: &'static [WsValidation],
        /// Where the held-out evaluation is recorded.
        eval: &'static str,
    },
}

/// A verified split combination (fast, S, scheme, out, fmt pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Combo {
    pub fast: bool,
    pub s: u32,
    pub scheme: Scheme,
    pub out: OutDtype,
    pub fa: Format,
    pub fb: Format,
}

/// Where a table comes from and what its rows are ([`super::table_info`] shows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSource {
    /// `heur_rtx4060_lt12.8.3.14`, `heur_h100pcie_lt12.8.3.14`.
    pub table_id: &'static str,
    /// The table's name (its sidecar's `name`: the file stem of its `.parquet` and `.json`).
    pub file_stem: &'static str,
    /// The GPU it was recorded on.
    pub gpu: &'static str,
    /// The cuBLASLt version.
    pub cublaslt: &'static str,
    /// Rows (cuBLASLt heuristic queries).
    pub rows: u64,
    /// Rows with numSplitsK > 1.
    pub split_rows: u64,
    /// Distinct (M, N, K).
    pub distinct_shapes: u64,
    /// sha256 of the Parquet file the data were generated from.
    pub parquet_sha256: &'static str,
    /// sha256 of its JSON sidecar.
    pub sidecar_sha256: &'static str,
    /// Size of the encoded rows (`MMSKEMB1`) in bytes.
    pub embedded_bytes: u64,
    /// sha256 of the encoded rows.
    pub embedded_sha256: &'static str,
    /// The workspaces the table has rows for.
    pub workspaces: &'static [u64],
}

/// Everything the model knows about one table besides its rows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sidecar {
    /// `heur_rtx4060_lt12.8.3.14`, ...
    pub table_id: &'static str,
    /// The table's name (file stem).
    pub name: &'static str,
    /// The GPU it was recorded on.
    pub gpu: &'static str,
    /// The cuBLASLt version.
    pub cublaslt: &'static str,
    /// Rows and split rows the sidecar states.
    pub rows: u64,
    pub split_rows: u64,
    /// sha256 of the Parquet file the sidecar describes.
    pub parquet_sha256: &'static str,
    /// sha256 of the sidecar's JSON text.
    pub sidecar_sha256: &'static str,
    /// customOption → scheme, for the listed customOptions.
    pub custom_schemes: &'static [(u8, Scheme)],
    /// The scheme of an unlisted customOption; None where the sidecar knows no scheme at all (a table the recorder
    /// wrote for a GPU family it has no guess for, before `mmaemu platform build --rules`): its splits are refused.
    pub unlisted_scheme: Option<Scheme>,
    /// Whether an unlisted customOption carries the caveat "customOption C was never recorded on a split call".
    pub unlisted_caveat: bool,
    /// Sidecar `split_layouts.ragged_K.verified`.
    pub ragged_k_verified: bool,
    /// Sidecar `workspace0_note`.
    pub workspace0_note: Option<&'static str>,
    pub settings: &'static [SettingSummary],
    pub envelope: Option<Envelope>,
    /// The table_id the verified combinations were made for (must equal `table_id`).
    pub verified_table_id: &'static str,
    /// The verified combinations (verified = true entries only).
    pub verified: &'static [Combo],
}

/// The bound value that stands for a null entry of a k_grid bound list ("infers nothing from here on").
pub(crate) const NULL_BOUND: u64 = u64::MAX;
