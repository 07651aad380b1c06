//! Split-K resolution (docs/reference.md §6.2–6.7): how many partial sums S cuBLASLt splits K into, and how it combines
//! them, for one GEMM on one profile.

// The decisions come from the split-K tables recorded on the reference GPUs (§6.4), embedded in this crate in a compact
// form (no file is read at run time), from the tables' envelopes (§6.5), or from the caller. `resolve_splitk` follows
// the resolution order of §6.3:
//
// 1. an explicit split from the caller (`SplitRequest::Count`, `SplitRequest::Pair`);
// 2. a profile without a cuBLASLt workspace never splits;
// 3. a profile without a table cannot resolve `splitk = auto` (SplitKUnknownError);
// 4. a zero-size GEMM is unsplit;
// 5. the table row of the exact key (only for torch's standard layout);
// 6. (the live cuBLASLt heuristic query on the profile's own GPU: not part of the model, which has no cuBLASLt; a
//    caller that has one runs it between steps 5 and 7);
// 7. the table's envelope (S = 1 far enough above every recorded split; not in strict mode);
// 8. otherwise SplitKUnknownError, naming the shape, the profile, the reason and the ways out (§6.7).
//
// Verification and warnings follow §6.6: every call returns its warnings (no once-per-process state).
//
// A table is a [`Table`]: the built-in ones are embedded from the platform bundles under `datasets/platforms` (the
// sidecar JSON as it is, the Parquet rows encoded by `mmaemu-embed-tables`, see `README.md` in this directory);
// loaded platforms bring their own. Both are read by the same reader and checked when first used (a mismatch is a
// `Category::Data` error).

mod embedded;
pub(crate) mod resolve;
mod sha256;
mod sidecar;
mod sidecar_json;
mod table;

use crate::epilogue::OutDtype;
use crate::error::{Category, Error, Result};
use crate::format::Format;
use crate::plan::{Scheme, SplitK};
use crate::preset::{Maturity, BRING_UP};
use crate::profile::Profile;
use crate::warning::{Warning, WarningKind};
pub use sidecar::TableSource;
use sidecar::{Envelope, Sidecar, NULL_BOUND};
use std::fmt;
pub use table::Table;

pub use resolve::resolve_splitk;

/// Where a split decision came from (`SplitDecision.source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SplitSource {
    /// Given by the caller.
    Explicit,
    /// The profile has no cuBLASLt workspace: cuBLASLt never splits.
    Workspace0,
    /// The recorded table row of the exact key.
    Table,
    /// A live cuBLASLt heuristic query on the profile's own GPU (never produced by the model).
    LiveQuery,
    /// Inferred from the table's envelope (or a zero-size GEMM).
    Envelope,
    /// The modelled kernel's own plan (CUTLASS f8f8bf16_rowwise on sm_90 never splits K).
    Kernel,
}

impl SplitSource {
    /// `explicit`, `workspace0`, `table`, `live-query`, `envelope`.
    pub fn name(self) -> &'static str {
        match self {
            SplitSource::Explicit => "explicit",
            SplitSource::Workspace0 => "workspace0",
            SplitSource::Table => "table",
            SplitSource::LiveQuery => "live-query",
            SplitSource::Envelope => "envelope",
            SplitSource::Kernel => "kernel",
        }
    }
}

impl fmt::Display for SplitSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A resolved split-K decision (docs/reference.md §8.1, "SplitDecision fields").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitDecision {
    /// The split count S (>= 1).
    pub s: usize,
    /// The reduction scheme (none for S = 1).
    pub scheme: Scheme,
    /// Where the decision came from.
    pub source: SplitSource,
    /// The (fast, S, scheme, out, pair) combination and layout were replayed on hardware, or S = 1 from a
    /// validated source.
    pub verified: bool,
    /// The table the decision came from (None for explicit and live-query decisions).
    pub table_id: Option<String>,
    /// How the decision was reached.
    pub note: String,
}

impl SplitDecision {
    /// The decision as a [`SplitK`].
    ///
    /// # Panics
    /// Only for a hand-built decision whose (s, scheme) is not a valid [`SplitK`]; the decisions of
    /// [`resolve_splitk`] are always valid. See [`SplitDecision::try_splitk`].
    pub fn splitk(&self) -> SplitK {
        match self.try_splitk() {
            Ok(s) => s,
            Err(e) => panic!("invalid split decision: {e}"),
        }
    }
    /// The decision as a [`SplitK`], or the invalid-value error of an invalid (s, scheme).
    pub fn try_splitk(&self) -> Result<SplitK> {
        SplitK::new(self.s, self.scheme)
    }
}

impl fmt::Display for SplitDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "S={}, scheme {}, source {}, verified {}, table_id {}, note {:?}",
            self.s,
            self.scheme,
            self.source,
            self.verified,
            self.table_id.as_deref().unwrap_or("None"),
            self.note
        )
    }
}

/// The caller's split-K request: `splitk = "auto"`, an integer, or (S, scheme).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SplitRequest {
    /// Resolve from the profile (table, envelope).
    Auto,
    /// An integer: 1 is unsplit; S > 1 needs a scheme (invalid value); S <= 0 is an invalid value.
    Count(i64),
    /// (S, scheme name): a [`SplitK`], validated here.
    Pair(i64, String),
}

impl From<SplitK> for SplitRequest {
    fn from(s: SplitK) -> SplitRequest {
        SplitRequest::Pair(s.s() as i64, s.scheme().name().to_string())
    }
}

/// The split-K key cuBLASLt's heuristic sees (docs/reference.md §6.2): torch's problem (M, N, K), the formats of
/// mat1 and mat2, the out dtype and use_fast_accum. For a column-major out, use [`SplitKey::column_major`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SplitKey {
    /// M (rows of mat1).
    pub m: usize,
    /// N (columns of mat2).
    pub n: usize,
    /// K, the reduction length.
    pub k: usize,
    /// Format of mat1.
    pub fa: Format,
    /// Format of mat2.
    pub fb: Format,
    /// Out dtype.
    pub out: OutDtype,
    /// use_fast_accum: fast (true) or slow accumulation.
    pub fast: bool,
}

impl SplitKey {
    /// The format pair `"{fa}x{fb}"`, e.g. `e4m3xe5m2`.
    pub fn pair(&self) -> String {
        format!("{}x{}", self.fa, self.fb)
    }
    /// The key of the same call with a column-major [M, N] out (docs/reference.md §5.5): cuBLASLt sees the
    /// problem (N, M, K) with the formats swapped.
    pub fn column_major(&self) -> SplitKey {
        SplitKey { m: self.n, n: self.m, fa: self.fb, fb: self.fa, ..*self }
    }
}

/// The values of one table row: the first algorithm cuBLASLt's heuristic returned for the key. (With the
/// `serde` feature, the datasets' tables read and write it.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TableRow {
    /// numSplitsK: how many partial sums K is split into (1: unsplit).
    pub split_s: u8,
    /// CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION: on the RTX 4060 it names the split scheme (§6.4).
    pub custom_option: u8,
    /// Algorithm id.
    pub algo_id: i16,
    /// CUBLASLT_ALGO_CONFIG_TILE_ID: the CTA tile of the algorithm (cublasLt.h enum).
    pub tile_id: i16,
    /// CUBLASLT_ALGO_CONFIG_STAGES_ID: its pipeline stages (cublasLt.h enum).
    pub stages_id: i16,
    /// CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME: how its split partials are reduced (cublasLt.h enum).
    pub reduction_scheme: u8,
    /// CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING: whether its CTAs are swizzled.
    pub cta_swizzling: u8,
}

/// What the model knows of one split-K table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    /// Where the table comes from and what its embedded rows are.
    pub source: TableSource,
    /// The envelope kind: `max_split_MN`, `k_grid` or `none`.
    pub envelope: &'static str,
    /// Number of verified (fast, S, scheme, out, pair) combinations.
    pub verified_combos: usize,
}

/// What the model knows of a table: its sources and its rows (decoded and checked first: a table whose rows fail
/// their check is a `Category::Data` error).
pub fn table_info(table: Table) -> Result<TableInfo> {
    let sc = table.sidecar();
    let e = table.embedded()?;
    Ok(TableInfo {
        source: TableSource {
            table_id: sc.table_id,
            file_stem: sc.name,
            gpu: sc.gpu,
            cublaslt: sc.cublaslt,
            rows: e.rows,
            split_rows: sc.split_rows,
            distinct_shapes: e.distinct_shapes,
            parquet_sha256: sc.parquet_sha256,
            sidecar_sha256: sc.sidecar_sha256,
            embedded_bytes: table.rows_bytes(),
            embedded_sha256: &e.sha256,
            workspaces: &e.workspaces,
        },
        envelope: match sc.envelope {
            Some(Envelope::MaxSplitMn { .. }) => "max_split_MN",
            Some(Envelope::KGrid { .. }) => "k_grid",
            None => "none",
        },
        verified_combos: sc.verified.len(),
    })
}

/// Decodes and checks a table's embedded rows (sha256, table_id, structure) and returns the number of rows
/// the decoded data hold. A failed check is a `Category::Data` error.
pub fn embedded_rows(table: Table) -> Result<u64> {
    table.embedded().map(|e| e.rows)
}

/// The table row of `key` at `workspace_bytes` (docs/reference.md §6.4), or None: a workspace the table has no
/// rows for, any of M, N, K >= 2^21, or a key without a row. A table whose embedded data fail their integrity
/// check is a `Category::Data` error.
pub fn try_table_lookup(table: Table, key: &SplitKey, workspace_bytes: u64) -> Result<Option<TableRow>> {
    const LIMIT: usize = 1 << 21;
    let e = table.embedded()?;
    if key.m >= LIMIT || key.n >= LIMIT || key.k >= LIMIT {
        return Ok(None);
    }
    Ok(e.lookup(key, workspace_bytes))
}

/// The table row of `key` at `workspace_bytes` (docs/reference.md §6.4): an exact lookup (two binary searches).
/// None for a workspace the table has no rows for, any of M, N, K >= 2^21, a key without a row — and for a
/// table whose embedded data fail their integrity check ([`try_table_lookup`] and [`resolve_splitk`] report
/// that as a `Category::Data` error).
pub fn table_lookup(table: Table, key: &SplitKey, workspace_bytes: u64) -> Option<TableRow> {
    try_table_lookup(table, key, workspace_bytes).ok().flatten()
}
