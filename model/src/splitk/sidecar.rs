//! The sidecar data of the embedded split-K tables (docs/reference.md §6.4–6.6): the per-setting summaries, the
//! envelope, the verified split combinations, the customOption → scheme rule and the notes. The values are
//! generated Rust source (`data/*.rs`, written by `mmaemu-embed-tables`); these are their types.

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

/// Where one embedded table comes from and what its embedded rows are ([`super::table_info`] shows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSource {
    /// `heur_rtx4060_lt12.8.3.14`, `heur_h100pcie_lt12.8.3.14`.
    pub table_id: &'static str,
    /// The table's file stem under `datasets/tables` (`.parquet` and `.json`).
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
    /// File name of the embedded rows (under `model/src/splitk/data`).
    pub embedded_name: &'static str,
    /// Size of the embedded rows in bytes.
    pub embedded_bytes: u64,
    /// sha256 of the embedded rows.
    pub embedded_sha256: &'static str,
    /// The workspaces the table has rows for.
    pub workspaces: &'static [u64],
}

/// Everything the model knows about one table besides its rows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sidecar {
    /// Its sources and embedded rows.
    pub source: TableSource,
    /// customOption → scheme, for the listed customOptions.
    pub custom_schemes: &'static [(u8, Scheme)],
    /// The scheme of an unlisted customOption.
    pub unlisted_scheme: Scheme,
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

/// Short names used by the generated data files.
pub(crate) mod codes {
    use super::*;
    pub(crate) const F32: OutDtype = OutDtype::Float32;
    pub(crate) const BF16: OutDtype = OutDtype::BFloat16;
    pub(crate) const F16: OutDtype = OutDtype::Float16;
    pub(crate) const OE4: OutDtype = OutDtype::E4m3;
    pub(crate) const OE5: OutDtype = OutDtype::E5m2;
    pub(crate) const E4: Format = Format::E4m3;
    pub(crate) const E5: Format = Format::E5m2;
    pub(crate) const SER: Scheme = Scheme::Serial;
    pub(crate) const PW: Scheme = Scheme::Pairwise;
    pub(crate) const CT: Scheme = Scheme::Contiguous;

    /// A setting summary.
    #[allow(clippy::too_many_arguments)]
    pub(crate) const fn st(
        ws: u64,
        out: OutDtype,
        fast: bool,
        fa: Format,
        fb: Format,
        rows: u64,
        split_rows: u64,
        max_split_mn: Option<u64>,
        min_split_k: Option<u64>,
        s_values: &'static [u8],
    ) -> SettingSummary {
        SettingSummary { ws, out, fast, fa, fb, rows, split_rows, max_split_mn, min_split_k, s_values }
    }

    /// A k_grid bound list ([`NULL_BOUND`] marks a null entry).
    pub(crate) const fn kb(ws: u64, out: OutDtype, fast: bool, fa: Format, fb: Format, b: &'static [u64]) -> KBound {
        KBound { ws, out, fast, fa, fb, b }
    }

    /// A verified combination.
    pub(crate) const fn vc(fast: bool, s: u32, scheme: Scheme, out: OutDtype, fa: Format, fb: Format) -> Combo {
        Combo { fast, s, scheme, out, fa, fb }
    }
}
