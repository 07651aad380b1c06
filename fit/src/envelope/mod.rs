//! `mmaemu fit envelope`: fit, from a split-K decision table (`mmaemu-splitk-table/1`), the bound above
//! which cuBLASLt never splits, per setting (workspace, out dtype, fast/slow, fmt_a, fmt_b), and test it
//! once on shapes it has not seen.
//!
//! Two rules (docs/reference.md §6.5):
//!
//! - `max_split_MN` (the RTX 4060 table): per setting, the largest M·N of a split row; the envelope infers
//!   S = 1 for M·N > margin × that (K plays no part). A setting without split rows never splits.
//! - `k_grid` (the H100 table): per setting and per grid K (a row's K is rounded up to the smallest grid K
//!   at or above it; the grid is the sidecar's `K_grid`, else the table's distinct K values), the largest
//!   split M·N over the rows at that grid K *or below* (a split at a smaller K is evidence for the larger
//!   ones: the bound never decreases with K), times the margin; S = 1 for M·N > B. Grid values below the
//!   first or above the last grid K with training rows have no bound (the envelope says nothing there:
//!   larger K splits more, so a bound is never extrapolated).
//!
//! The rule defaults to the sidecar's `envelope.kind`, the margin to its `envelope.margin` (else 2).
//!
//! Procedure: the table's distinct shapes (M, N, K) are split by a seeded draw ([`held_out`]) into a
//! training part and a held-out part (`--holdout`, default 20 % of the shapes; a shape goes to the same
//! part in every setting). The envelope is fitted on the training rows only; the held-out rows are sealed
//! ([`Sealed`]) and can be evaluated exactly once, against the finished fit: every held-out row whose M·N
//! is above its bound is *tested* (the envelope would infer S = 1 there), and a tested row that split is a
//! *violation*.
//!
//! Independently, the same statistics are computed on **all** rows and compared with the sidecar's
//! `settings` (rows, split_rows, max_split_MN, min_split_K, S_values): a table and its sidecar must agree
//! exactly.

mod bundle;
mod render;

pub use bundle::fitted;
use mmaemu_datasets::splitk_table::{read_splitk_table, SplitKTable, SplitKTableRow};
use mmaemu_datasets::DatasetError;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
pub use render::{json, text};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The default fraction of shapes held out.
pub const DEFAULT_HOLDOUT: f64 = 0.2;

/// The default seed of the train/held-out partition.
pub const DEFAULT_SEED: u64 = 20_261_016;

/// Which envelope rule to fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// S = 1 for M·N > margin × max split M·N of the setting.
    MaxSplitMn,
    /// S = 1 for M·N > B(setting, grid K).
    KGrid,
}

impl RuleKind {
    /// `max_split_MN` or `k_grid` (the sidecars' `envelope.kind`).
    pub fn name(self) -> &'static str {
        match self {
            RuleKind::MaxSplitMn => "max_split_MN",
            RuleKind::KGrid => "k_grid",
        }
    }
    /// Parse a kind (also `mn`, `k-grid`).
    pub fn parse(s: &str) -> Option<RuleKind> {
        match s {
            "max_split_MN" | "mn" | "max-split-mn" => Some(RuleKind::MaxSplitMn),
            "k_grid" | "k-grid" | "kgrid" => Some(RuleKind::KGrid),
            _ => None,
        }
    }
}

/// Options of the fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Seed of the partition.
    pub seed: u64,
    /// Fraction of the shapes held out, in [0, 1).
    pub holdout: f64,
    /// The margin (None: the sidecar's, else 2).
    pub margin: Option<u64>,
    /// The rule (None: the sidecar's kind, else max_split_MN).
    pub rule: Option<RuleKind>,
}

impl Default for Options {
    fn default() -> Self {
        Options { seed: DEFAULT_SEED, holdout: DEFAULT_HOLDOUT, margin: None, rule: None }
    }
}

/// A setting: (workspace bytes, out dtype, fast, fmt_a, fmt_b).
pub type Setting = (i64, &'static str, bool, &'static str, &'static str);

fn setting_of(r: &SplitKTableRow) -> Setting {
    (r.workspace_bytes, r.out_dtype, r.fast_accum, r.fmt_a, r.fmt_b)
}

fn setting_json(s: &Setting) -> Value {
    json!({"ws": s.0, "out": s.1, "fast": s.2, "fmt_a": s.3, "fmt_b": s.4})
}

fn setting_text(s: &Setting) -> String {
    format!("ws {} {} {} {}x{}", s.0, s.1, if s.2 { "fast" } else { "slow" }, s.3, s.4)
}

/// Width of the setting column of the text form.
const SETTING_WIDTH: usize = 42;

fn mn(r: &SplitKTableRow) -> u64 {
    r.m.max(0) as u64 * r.n.max(0) as u64
}

/// The statistics of one setting, as the sidecars' `settings` entries hold them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SettingStats {
    /// Rows of the setting.
    pub rows: u64,
    /// Rows with S > 1.
    pub split_rows: u64,
    /// The largest M·N of a split row.
    pub max_split_mn: Option<u64>,
    /// The smallest K of a split row.
    pub min_split_k: Option<u64>,
    /// The S values of split rows, ascending.
    pub s_values: BTreeSet<u64>,
}

impl SettingStats {
    fn add(&mut self, r: &SplitKTableRow) {
        self.rows += 1;
        if r.decision.split_s > 1 {
            self.split_rows += 1;
            self.max_split_mn = Some(self.max_split_mn.unwrap_or(0).max(mn(r)));
            self.min_split_k = Some(self.min_split_k.map_or(r.k as u64, |k| k.min(r.k as u64)));
            self.s_values.insert(r.decision.split_s as u64);
        }
    }

    fn json(&self) -> Value {
        json!({
            "rows": self.rows,
            "split_rows": self.split_rows,
            "max_split_MN": self.max_split_mn,
            "min_split_K": self.min_split_k,
            "S_values": self.s_values.iter().collect::<Vec<_>>(),
        })
    }

    /// Parse a sidecar `settings` entry's statistics.
    fn from_sidecar(v: &Value) -> SettingStats {
        SettingStats {
            rows: v.get("rows").and_then(Value::as_u64).unwrap_or(0),
            split_rows: v.get("split_rows").and_then(Value::as_u64).unwrap_or(0),
            max_split_mn: v.get("max_split_MN").and_then(Value::as_u64),
            min_split_k: v.get("min_split_K").and_then(Value::as_u64),
            s_values: v
                .get("S_values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default(),
        }
    }
}

/// The statistics of every setting of some rows.
fn stats<'a>(rows: impl Iterator<Item = &'a SplitKTableRow>) -> BTreeMap<Setting, SettingStats> {
    let mut out: BTreeMap<Setting, SettingStats> = BTreeMap::new();
    for r in rows {
        out.entry(setting_of(r)).or_default().add(r);
    }
    out
}

/// One setting of the full-data comparison with the sidecar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// The setting.
    pub setting: Setting,
    /// From all rows of the table.
    pub fitted: SettingStats,
    /// The sidecar's entry (None: the sidecar does not list the setting).
    pub sidecar: Option<SettingStats>,
}

impl Comparison {
    /// Does the largest split M·N equal the sidecar's?
    pub fn max_matches(&self) -> bool {
        self.sidecar.as_ref().is_some_and(|s| s.max_split_mn == self.fitted.max_split_mn)
    }
    /// Do all statistics equal the sidecar's?
    pub fn all_match(&self) -> bool {
        self.sidecar.as_ref() == Some(&self.fitted)
    }
}

/// A fitted envelope: per setting, the bound (max_split_MN) or the bounds per grid K (k_grid).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The rule.
    pub rule: RuleKind,
    /// The margin applied.
    pub margin: u64,
    /// The grid (k_grid only; ascending).
    pub grid: Vec<u64>,
    /// max_split_MN: setting -> (largest split M·N in training, or None; bound = margin x that, 0 if none).
    pub per_setting: BTreeMap<Setting, Option<u64>>,
    /// k_grid: setting -> per grid index, the bound (None: no training row at or below that grid K).
    pub per_grid: BTreeMap<Setting, Vec<Option<u64>>>,
}

impl Envelope {
    /// The bound B of a setting at K: S = 1 is inferred iff M·N > B. None: the envelope says nothing
    /// (setting unseen in training, K above the grid, or no training row at or below K's grid value).
    pub fn bound(&self, setting: &Setting, k: u64) -> Option<u64> {
        match self.rule {
            RuleKind::MaxSplitMn => {
                self.per_setting.get(setting).map(|mx| mx.map_or(0, |x| x.saturating_mul(self.margin)))
            }
            RuleKind::KGrid => {
                let gi = self.grid.iter().position(|&g| g >= k)?;
                *self.per_grid.get(setting)?.get(gi)?
            }
        }
    }

    /// Fit on training rows.
    fn fit(rule: RuleKind, margin: u64, grid: &[u64], train: &[&SplitKTableRow]) -> Envelope {
        let mut per_setting: BTreeMap<Setting, Option<u64>> = BTreeMap::new();
        // Raw per (setting, grid index): largest split M*N, and whether any row lands there.
        let mut raw: BTreeMap<Setting, Vec<(bool, Option<u64>)>> = BTreeMap::new();
        for r in train {
            let s = setting_of(r);
            let split = r.decision.split_s > 1;
            let e = per_setting.entry(s).or_insert(None);
            if split {
                *e = Some(e.unwrap_or(0).max(mn(r)));
            }
            if rule == RuleKind::KGrid {
                if let Some(gi) = grid.iter().position(|&g| g >= r.k as u64) {
                    let v = raw.entry(s).or_insert_with(|| vec![(false, None); grid.len()]);
                    v[gi].0 = true;
                    if split {
                        v[gi].1 = Some(v[gi].1.unwrap_or(0).max(mn(r)));
                    }
                }
            }
        }
        let per_grid = raw
            .into_iter()
            .map(|(s, v)| {
                // Running maximum over grid K <= this one, from the first to the last grid K with rows;
                // None outside (no extrapolation: larger K splits more).
                let first = v.iter().position(|x| x.0).unwrap_or(v.len());
                let last = v.iter().rposition(|x| x.0).unwrap_or(0);
                let mut run = 0u64;
                let bounds = v
                    .into_iter()
                    .enumerate()
                    .map(|(i, (_, mx))| {
                        run = run.max(mx.unwrap_or(0));
                        (first..=last).contains(&i).then(|| run.saturating_mul(margin))
                    })
                    .collect();
                (s, bounds)
            })
            .collect();
        Envelope { rule, margin, grid: grid.to_vec(), per_setting, per_grid }
    }
}

/// A held-out row the envelope got wrong: it split although M·N is above the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The table row.
    pub row: SplitKTableRow,
    /// Its bound.
    pub bound: u64,
}

/// The one-time test on the held-out part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldOut {
    /// Held-out rows.
    pub rows: u64,
    /// Distinct held-out shapes.
    pub shapes: u64,
    /// Rows above their bound (where the envelope infers S = 1).
    pub tested: u64,
    /// Rows the envelope says nothing about.
    pub uncovered: u64,
    /// Tested rows that split.
    pub violations: Vec<Violation>,
    /// Per workspace: the rows above their bound and how many of them split.
    pub by_workspace: BTreeMap<i64, (u64, u64)>,
}

/// The held-out rows, sealed: they can only be evaluated, once, against a finished fit.
pub struct Sealed<'t> {
    rows: Vec<&'t SplitKTableRow>,
}

impl Sealed<'_> {
    /// Test the envelope on the held-out rows (consumes them: one test per fit).
    pub fn evaluate(self, env: &Envelope) -> HeldOut {
        let shapes: BTreeSet<(i32, i32, i32)> = self.rows.iter().map(|r| (r.m, r.n, r.k)).collect();
        let mut out = HeldOut {
            rows: self.rows.len() as u64,
            shapes: shapes.len() as u64,
            tested: 0,
            uncovered: 0,
            violations: vec![],
            by_workspace: BTreeMap::new(),
        };
        for r in self.rows {
            match env.bound(&setting_of(r), r.k as u64) {
                None => out.uncovered += 1,
                Some(b) if mn(r) > b => {
                    out.tested += 1;
                    let ws = out.by_workspace.entry(r.workspace_bytes).or_default();
                    ws.0 += 1;
                    if r.decision.split_s > 1 {
                        ws.1 += 1;
                        out.violations.push(Violation { row: *r, bound: b });
                    }
                }
                Some(_) => {}
            }
        }
        out
    }
}

/// Is the shape (m, n, k) in the held-out part for this seed and fraction? One uniform draw in [0, 1) of
/// `rand`'s ChaCha8 seeded with SHA-256 of the seed (8 bytes) and m, n, k (4 bytes each), little-endian:
/// a shape's part depends on nothing else in the table, and is the same on every platform (SHA-256 and
/// ChaCha8 are fixed algorithms, applied to bytes in the order written out here).
pub fn held_out(seed: u64, holdout: f64, m: i32, n: i32, k: i32) -> bool {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    for v in [m, n, k] {
        h.update(v.to_le_bytes());
    }
    ChaCha8Rng::from_seed(h.finalize().into()).random::<f64>() < holdout
}

/// The whole result.
#[derive(Clone, Debug)]
pub struct EnvelopeReport {
    /// The table file.
    pub table: String,
    /// sha256 of the table file (the sidecar's `parquet_sha256`).
    pub table_sha256: String,
    /// The options used (margin and rule resolved).
    pub seed: u64,
    /// Held-out fraction.
    pub holdout: f64,
    /// Full-data statistics per setting, compared with the sidecar.
    pub full: Vec<Comparison>,
    /// Settings the sidecar lists that the table has no row for.
    pub sidecar_only: Vec<Setting>,
    /// Training rows.
    pub train_rows: u64,
    /// The envelope fitted on the training rows.
    pub envelope: Envelope,
    /// The held-out test.
    pub heldout: HeldOut,
}

impl EnvelopeReport {
    /// Settings whose full-data max split M·N equals the sidecar's, and those the sidecar lists.
    pub fn max_matches(&self) -> (usize, usize) {
        (self.full.iter().filter(|c| c.max_matches()).count(), self.full.iter().filter(|c| c.sidecar.is_some()).count())
    }
    /// Does every setting agree with the sidecar in every statistic (and the sidecar list no other)?
    pub fn sidecar_agrees(&self) -> bool {
        self.sidecar_only.is_empty() && self.full.iter().all(|c| c.sidecar.is_none() || c.all_match())
    }
}

fn parse_setting(v: &Value) -> Option<(i64, String, bool, String, String)> {
    Some((
        v.get("ws")?.as_i64()?,
        v.get("out")?.as_str()?.to_string(),
        v.get("fast")?.as_bool()?,
        v.get("fmt_a")?.as_str()?.to_string(),
        v.get("fmt_b")?.as_str()?.to_string(),
    ))
}

/// Fit a table already read.
pub fn fit_table(table: &SplitKTable, opts: &Options) -> EnvelopeReport {
    let side_env = table.sidecar.get("envelope");
    let rule = opts
        .rule
        .or_else(|| side_env.and_then(|e| e.get("kind")).and_then(Value::as_str).and_then(RuleKind::parse))
        .unwrap_or(RuleKind::MaxSplitMn);
    let margin = opts.margin.or_else(|| side_env.and_then(|e| e.get("margin")).and_then(Value::as_u64)).unwrap_or(2);
    // Full data vs the sidecar.
    let all = stats(table.rows.iter());
    let mut side: BTreeMap<(i64, String, bool, String, String), SettingStats> = BTreeMap::new();
    if let Some(list) = table.sidecar.get("settings").and_then(Value::as_array) {
        for v in list {
            if let Some(key) = parse_setting(v) {
                side.insert(key, SettingStats::from_sidecar(v));
            }
        }
    }
    let full: Vec<Comparison> = all
        .iter()
        .map(|(s, st)| {
            let key = (s.0, s.1.to_string(), s.2, s.3.to_string(), s.4.to_string());
            Comparison { setting: *s, fitted: st.clone(), sidecar: side.remove(&key) }
        })
        .collect();
    let sidecar_only: Vec<Setting> =
        side.keys().map(|(ws, out, fast, a, b)| (*ws, leak_known(out), *fast, leak_known(a), leak_known(b))).collect();
    // The grid.
    let grid: Vec<u64> = side_env
        .and_then(|e| e.get("K_grid"))
        .or_else(|| table.sidecar.get("K_grid"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).collect::<Vec<_>>())
        .filter(|g| !g.is_empty())
        .unwrap_or_else(|| table.rows.iter().map(|r| r.k as u64).collect::<BTreeSet<_>>().into_iter().collect());
    let mut grid = grid;
    grid.sort_unstable();
    grid.dedup();
    // Partition, fit on the training part, then test once on the sealed held-out part.
    let shapes: BTreeSet<(i32, i32, i32)> = table.rows.iter().map(|r| (r.m, r.n, r.k)).collect();
    let test_shapes: BTreeSet<(i32, i32, i32)> =
        shapes.into_iter().filter(|&(m, n, k)| held_out(opts.seed, opts.holdout, m, n, k)).collect();
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for r in &table.rows {
        if test_shapes.contains(&(r.m, r.n, r.k)) {
            test.push(r);
        } else {
            train.push(r);
        }
    }
    let envelope = Envelope::fit(rule, margin, &grid, &train);
    let heldout = Sealed { rows: test }.evaluate(&envelope);
    EnvelopeReport {
        table: table.path.display().to_string(),
        table_sha256: table.sha256.clone(),
        seed: opts.seed,
        holdout: opts.holdout,
        full,
        sidecar_only,
        train_rows: train.len() as u64,
        envelope,
        heldout,
    }
}

/// The static name among the known out dtypes / formats (the sidecar may name others: kept as `?`).
fn leak_known(s: &str) -> &'static str {
    use mmaemu_datasets::splitk_table::{SPLITK_FMTS, SPLITK_OUT_DTYPES};
    SPLITK_OUT_DTYPES.iter().chain(SPLITK_FMTS.iter()).find(|x| **x == s).copied().unwrap_or("?")
}

/// Read a table (checked against its sidecar) and fit it.
pub fn fit_path(path: &Path, opts: &Options) -> Result<EnvelopeReport, DatasetError> {
    Ok(fit_table(&read_splitk_table(path)?, opts))
}
