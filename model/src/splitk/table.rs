//! A split-K table as a value: its sidecar and its encoded rows, decoded and checked at first use. The built-in
//! platforms' tables (embedded by `crate::catalogue`) and the tables of platforms loaded at run time are one type.

use super::embedded::{self, Embedded};
use super::sidecar::Sidecar;
use super::sidecar_json;
use crate::error::{Category, Error, Result};
use crate::plan::Scheme;
use std::fmt;
use std::sync::OnceLock;

/// One table's data; leaked, so that a [`Table`] is a `Copy` handle valid for the whole process.
struct TableData {
    sidecar: Sidecar,
    blob: &'static [u8],
    embedded: OnceLock<Result<Embedded>>,
}

/// A split-K table (docs/reference.md §6.4): the heuristic's recorded decisions for one GPU and cuBLASLt.
#[derive(Clone, Copy)]
pub struct Table(&'static TableData);

impl Table {
    /// A table from its sidecar's JSON text and its encoded rows (`MMSKEMB1`); `what` names it in errors.
    /// The sidecar is read now; the rows are checked against it at first use (or by [`Table::check`]).
    pub fn new(sidecar_json: &str, rows: Vec<u8>, what: &str) -> Result<Table> {
        let sidecar = sidecar_json::parse(sidecar_json, what)?;
        let blob: &'static [u8] = Box::leak(rows.into_boxed_slice());
        Ok(Table(Box::leak(Box::new(TableData { sidecar, blob, embedded: OnceLock::new() }))))
    }

    /// An embedded table (a built-in platform's, `crate::catalogue`): its sidecar is read now, its rows at first
    /// use.
    pub(crate) fn of_embedded(sidecar_json: &str, rows: &'static [u8], what: &str) -> Result<Table> {
        let sidecar = sidecar_json::parse(sidecar_json, what)?;
        Ok(Table(Box::leak(Box::new(TableData { sidecar, blob: rows, embedded: OnceLock::new() }))))
    }

    /// The table of a built-in platform by name (`rtx4060-cublaslt-12.8.3.14`, `h100pcie-cublaslt-12.8.3.14`).
    pub fn builtin(name: &str) -> Result<Table> {
        crate::Catalogue::builtin()
            .platforms()
            .iter()
            .filter_map(|p| p.table)
            .find(|t| t.name() == name)
            .ok_or_else(|| Error::new(Category::Data, format!("no built-in split-K table '{name}'")))
    }

    /// The names of the built-in platforms' tables.
    pub fn builtin_names() -> impl Iterator<Item = &'static str> {
        crate::Catalogue::builtin().platforms().iter().filter_map(|p| p.table).map(Table::name)
    }

    /// The table_id reported in split decisions (`heur_rtx4060_lt12.8.3.14`, ...).
    pub fn id(self) -> &'static str {
        self.0.sidecar.table_id
    }
    /// The table's name (its files' stem).
    pub fn name(self) -> &'static str {
        self.0.sidecar.name
    }
    /// The GPU the table was recorded on.
    pub fn gpu(self) -> &'static str {
        self.0.sidecar.gpu
    }
    /// The cuBLASLt version it was recorded with.
    pub fn cublaslt(self) -> &'static str {
        self.0.sidecar.cublaslt
    }
    /// sha256 of the Parquet file the table comes from.
    pub fn parquet_sha256(self) -> &'static str {
        self.0.sidecar.parquet_sha256
    }
    /// The scheme of the split kernels a customOption selects (the sidecar's `custom -> scheme`, else its scheme of
    /// an unlisted customOption; docs/platform-format.md); None where the sidecar knows none.
    pub fn custom_scheme(self, custom: i64) -> Option<Scheme> {
        let sc = &self.0.sidecar;
        sc.custom_schemes.iter().find(|(c, _)| i64::from(*c) == custom).map(|(_, s)| *s).or(sc.unlisted_scheme)
    }
    /// The schemes of the split kernels its customOptions select (listed and unlisted), sorted.
    pub fn schemes(self) -> Vec<Scheme> {
        let sc = &self.0.sidecar;
        let mut s: Vec<Scheme> = sc.custom_schemes.iter().map(|(_, s)| *s).chain(sc.unlisted_scheme).collect();
        s.sort();
        s.dedup();
        s
    }
    /// sha256 of its sidecar's JSON text.
    pub fn sidecar_sha256(self) -> &'static str {
        self.0.sidecar.sidecar_sha256
    }
    /// Whether its sidecar declares verified split combinations or a verified layout caveat.
    pub fn declares_verification(self) -> bool {
        let sc = &self.0.sidecar;
        !sc.verified.is_empty() || sc.ragged_k_verified
    }
    /// Size of the encoded rows in bytes.
    pub fn rows_bytes(self) -> u64 {
        self.0.blob.len() as u64
    }
    /// Decodes and checks the rows against the sidecar (once; the result is kept).
    pub fn check(self) -> Result<()> {
        self.embedded().map(|_| ())
    }

    pub(crate) fn sidecar(self) -> &'static Sidecar {
        &self.0.sidecar
    }
    pub(crate) fn embedded(self) -> Result<&'static Embedded> {
        let d = self.0;
        d.embedded.get_or_init(|| embedded::decode(d.blob, &d.sidecar)).as_ref().map_err(Clone::clone)
    }
}

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        std::ptr::eq(self.0, other.0) || (self.id() == other.id() && self.parquet_sha256() == other.parquet_sha256())
    }
}
impl Eq for Table {}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Table({})", self.id())
    }
}
