//! `mmaemu fit splitk`: find, from recorded split-K GEMMs alone, in what order a GPU's kernels add their
//! split partial sums.
//!
//! Every hardware row with S > 1 (ops `gemm`, `accumulator`, `scaled_mm`; the recorded scheme is ignored,
//! and may be `unknown`) is replayed under every candidate rule of [`super::rules`] — tile width,
//! ownership, slow restart period, combination order — and a rule *survives* a row when it reproduces
//! every recorded bit. The accumulator of a candidate is its rule's plan (the model's [`mmaemu_model::Plan`]) replayed
//! (`replay.rs`): the chains of its chunks are [`mmaemu_model::Chain::run`] over the gathered codes of their k
//! indices (non-finite codes replaced by 0x00, §3.5), a slow split adds its chain results serially from +0 in
//! fp32, and the partials are combined in the rule's fp32 order; outputs whose row or column holds a non-finite code take the §3.7 value (taken from
//! the model's unsplit accumulator, where exactly those outputs are non-finite); then the row's epilogue
//! ([`Epilogue`]; for `scaled_mm` rows the call is rebuilt with [`CallParts`] to find its scales and out
//! dtype). Chains over the same k indices are computed once per row whichever rules share them. A group's rows are
//! replayed one after another, the shortest K first, each only under the candidates the rows before it still accept
//! (`narrow.rs`): what a row rules out is never replayed on the longer rows.
//!
//! Rows are grouped by (GPU, fast/slow, S, label), the label being the algorithm's customOption when the
//! `algo` column records one (`customOption 1`), else the recorded scheme unless it is `unknown` (no
//! label). A group's survivors are the rules that reproduce every row of the group; its verdict is
//! `unique` (one survivor), `ambiguous` (several: the rows cannot tell them apart), `mixture` (no survivor,
//! but a smallest set of rules reproduces every row: `groups.rs`) or `none`. Survivors
//! whose combination orders are the same expression for the group's S (e.g. every order for S = 2, since
//! fp32 addition is commutative) are listed as `identical`: no recording could ever separate them. The
//! *discriminating* rows of a group are those that reject at least one candidate — the evidence the
//! verdict rests on. For a verdict of `none`, the rules reproducing the most rows are listed as
//! `closest`, with the rows they fail.

mod decide;
mod experiments;
mod forms;
mod groups;
mod narrow;
mod render;
mod replay;
mod schemes;

use super::rules::{layouts, order_expression, order_expression_of, Layout, Order, Restart, SplitRule};
pub use decide::{decisions, Decision, Parameter};
pub use experiments::{custom_of, equivalent_on, experiments, routed_shapes};
use groups::group;
pub use groups::MixturePart;
use mmaemu_datasets::{DatasetError, Expectation, Op, OutSelect, Row, Truth};
use mmaemu_harness::call::CallParts;
use mmaemu_model::scaled_mm::{resolve_profile, Validation};
use mmaemu_model::splitk::SplitRequest;
use mmaemu_model::{accumulate, epilogue, Epilogue, Format, Operands, OutDtype, Preset, SplitK};
use rayon::prelude::*;
pub use render::{json, text};
pub use replay::replay_plan;
use replay::Codes;
pub use schemes::{schemes, SchemeFit};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The outputs (0, j < this) the split designer separates survivors on (`experiments.rs`), which a row's refit
/// replays its candidates on before every output (`narrow.rs`).
const DESIGNED_OUTPUTS: usize = 8;

/// How a candidate's accumulator becomes the row's result.
#[derive(Clone, Copy, Debug)]
enum Finish {
    /// op `accumulator`: the fp32 bits.
    Accumulator,
    /// ops `gemm`, `scaled_mm`: the epilogue.
    Epilogue(Epilogue),
}

/// What the recording says the result is.
#[derive(Clone, Debug)]
enum Want {
    Bits(Vec<u32>),
    Sha256(String),
}

/// A row ready for the fit: operands with non-finite codes zeroed, the outputs compared, their §3.7
/// overrides, and the finish.
struct Prepared {
    /// The operands, non-finite codes replaced by 0x00, and the outputs compared.
    codes: Codes,
    /// S.
    s: usize,
    /// Fast accumulation?
    fast: bool,
    /// Per compared output: the non-finite accumulator that overrides every rule's (§3.7), if any.
    patch: Vec<Option<f32>>,
    finish: Finish,
    want: Want,
    out: OutDtype,
}

/// One fitted row.
#[derive(Clone, Debug, PartialEq)]
pub struct FitRow {
    /// Row id.
    pub id: String,
    /// The recording it comes from.
    pub file: PathBuf,
    /// The GPU it was recorded on.
    pub gpu: String,
    /// Fast accumulation?
    pub fast: bool,
    /// S.
    pub s: usize,
    /// The group label (customOption, else the recorded scheme; None when neither is known).
    pub label: Option<String>,
    /// The recorded scheme (information; the fit ignores it).
    pub recorded: String,
    /// K.
    pub k: usize,
    /// The arithmetic its chains were replayed with (what [`experiments`] simulates the survivors with).
    pub preset: Preset,
    /// How many candidate rules the row's K, S and accumulation have ([`super::rules::candidates`]).
    pub tried: usize,
    /// How many of them the row was replayed under: those every row of its group replayed before it (the shorter K
    /// first) still accepted (`narrow.rs`).
    pub replayed: usize,
    /// The rules that reproduce every recorded bit of the row among those it was replayed under, by name, in
    /// candidate order, each in its canonical form for the row's K and S ([`SplitRule::canonical`]): a rule not
    /// listed reproduces the row when its canonical form is listed ([`FitRow::accepts`]). A rule reproduces every
    /// row of a group exactly when every row lists it; a group without a survivor lists each row's own survivors.
    pub survivors: Vec<String>,
}

impl FitRow {
    /// Does `rule` reproduce the row: is its canonical form for the row's K, S and accumulation a survivor?
    pub fn accepts(&self, rule: &SplitRule) -> bool {
        let name = rule.canonical(self.k, self.s, self.fast).name();
        self.survivors.contains(&name)
    }
}

pub use super::SkippedRow;

pub use super::Verdict;

/// A rule that reproduces most, but not all, rows of a group without survivors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Closest {
    /// The rule.
    pub rule: String,
    /// The group's rows it fails.
    pub failing: Vec<String>,
}

/// The fit of one (GPU, fast/slow, S, label) group.
#[derive(Clone, Debug, PartialEq)]
pub struct FitGroup {
    /// GPU.
    pub gpu: String,
    /// Fast accumulation?
    pub fast: bool,
    /// S.
    pub s: usize,
    /// Label (None: no customOption and scheme `unknown`).
    pub label: Option<String>,
    /// Row ids.
    pub rows: Vec<String>,
    /// The rules reproducing every row, in candidate order.
    pub survivors: Vec<String>,
    /// unique / ambiguous / mixture / none.
    pub verdict: Verdict,
    /// Rows rejecting at least one candidate they were replayed under.
    pub discriminating: Vec<String>,
    /// Classes of survivors (two or more) that compute the same bits for every input at this S.
    pub identical: Vec<Vec<String>>,
    /// For verdict mixture: its rules, the most rows first (`groups.rs`).
    pub mixture: Vec<MixturePart>,
    /// For verdict mixture: how many sets of that many rules explain the group (1: the rows decide which).
    pub mixtures: usize,
    /// For verdict none: the rules failing the fewest rows (at most 4).
    pub closest: Vec<Closest>,
}

/// The whole fit.
#[derive(Clone, Debug, PartialEq)]
pub struct FitReport {
    /// Every fitted row, in file and row order.
    pub rows: Vec<FitRow>,
    /// Every group, by GPU, accumulation (fast first), S and label.
    pub groups: Vec<FitGroup>,
    /// Rows with S > 1 that could not be fitted.
    pub skipped: Vec<SkippedRow>,
    /// The most candidate rules a fast row has.
    pub fast_candidates: usize,
    /// The most candidate rules a slow row has (the restarts a row can show grow with its K).
    pub slow_candidates: usize,
}

impl FitReport {
    /// Does `rule` reproduce every row of group `g`?
    pub fn group_accepts(&self, g: &FitGroup, rule: &SplitRule) -> bool {
        let ids: BTreeSet<&str> = g.rows.iter().map(String::as_str).collect();
        self.rows
            .iter()
            .filter(|r| {
                r.gpu == g.gpu && r.fast == g.fast && r.s == g.s && r.label == g.label && ids.contains(r.id.as_str())
            })
            .all(|r| r.accepts(rule))
    }
}

/// The label of a row's group: `customOption C` from the `algo` JSON, else the recorded scheme unless it
/// is `unknown` or absent.
pub fn label_of(row: &Row) -> Option<String> {
    if let Some(c) = row.custom_option() {
        return Some(format!("customOption {c}"));
    }
    match row.split_scheme.as_deref() {
        None | Some("unknown") | Some("none") => None,
        Some(s) => Some(s.to_string()),
    }
}

/// Is the row one the fit looks at: a split (S > 1) GEMM-level op?
pub fn is_split_row(row: &Row) -> bool {
    matches!(row.op, Op::Gemm | Op::Accumulator | Op::ScaledMm) && row.split_s.unwrap_or(1) > 1
}

fn dim(x: i64, what: &str) -> Result<usize, String> {
    usize::try_from(x).map_err(|_| format!("negative {what} {x}"))
}

/// The preset, formats, epilogue and out dtype of a row, or why it cannot be fitted.
fn numerics(row: &Row) -> Result<(Preset, Format, Format, Finish, OutDtype), String> {
    let fmt = |n: &str| Format::from_name(n).ok_or_else(|| format!("operand format '{n}' is not an FP8 format"));
    match row.op {
        Op::Accumulator | Op::Gemm => {
            let preset =
                mmaemu_datasets::platform::catalogue().preset(&row.preset).map_err(|e| format!("preset: {e}"))?;
            let (fa, fb) = (fmt(&row.fmt_a)?, fmt(&row.fmt_b)?);
            if row.op == Op::Accumulator {
                return Ok((preset, fa, fb, Finish::Accumulator, OutDtype::Float32));
            }
            let epi = mmaemu_harness::replay::gemm_epilogue(row, fa)?;
            let out = epi.out;
            Ok((preset, fa, fb, Finish::Epilogue(epi), out))
        }
        Op::ScaledMm => {
            let parts = CallParts::of_row(row)?;
            let call = parts.call(SplitRequest::Count(1));
            let plan = call.explain();
            if let Validation::Error { name, message } = &plan.validation {
                return Err(format!("the call raises {name}: {message}"));
            }
            if plan.split.is_none() {
                return Err(format!("the call computes nothing ({})", plan.backend));
            }
            let profile = resolve_profile(&call.profile, call.catalogue).map_err(|e| format!("profile: {e}"))?;
            let fa = call.input.dtype.format().ok_or("mat1 is not an FP8 operand")?;
            let fb = call.mat2.dtype.format().ok_or("mat2 is not an FP8 operand")?;
            let od = call
                .out_dtype
                .clone()
                .or_else(|| call.out.as_ref().map(|o| o.dtype.clone()))
                .unwrap_or_else(|| call.input.dtype.clone());
            let out = od.out_dtype().ok_or_else(|| format!("out dtype {od} is not a cuBLASLt output"))?;
            let value = |s: &mmaemu_model::scaled_mm::ScaleTensor| s.values.first().copied().unwrap_or(0.0) as f32;
            let epi = Epilogue {
                scale_a: value(&call.scale_a),
                scale_b: value(&call.scale_b),
                scale_result: call.scale_result.as_ref().map(value),
                out,
            };
            Ok((profile.preset.clone(), fa, fb, Finish::Epilogue(epi), out))
        }
        Op::Mma => Err("op mma has no split".into()),
    }
}

/// Prepare a row of S splits, or say why it cannot be fitted.
fn prepare(row: &Row, s: usize) -> Result<Prepared, String> {
    if row.truth != Truth::Hardware {
        return Err("truth = model: model rows are never evidence".into());
    }
    let fast = row.fast_accum.ok_or("fast_accum is null")?;
    let want = match &row.expected {
        Expectation::Bits(_) => None,
        Expectation::Sha256(s) => Some(Want::Sha256(s.clone())),
        Expectation::Error(e) => return Err(format!("the row expects {e}")),
    };
    let (batch, m, n, k) = (dim(row.batch, "batch")?, dim(row.m, "m")?, dim(row.n, "n")?, dim(row.k, "k")?);
    if batch != 1 {
        return Err(format!("batch {batch}"));
    }
    if m == 0 || n == 0 || k == 0 {
        return Err("zero-size: nothing is accumulated".into());
    }
    if m.checked_mul(k) != Some(row.a.len()) || n.checked_mul(k) != Some(row.b.len()) {
        return Err("operand sizes do not match the shape".into());
    }
    let (preset, fa, fb, finish, out) = numerics(row)?;
    if preset.slow_chunk().is_none() {
        return Err(format!("preset '{}' has no split-K plans", preset.name()));
    }
    let pairs: Vec<(usize, usize)> = match row.out_select {
        OutSelect::Full => (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect(),
        OutSelect::Diagonal => (0..m.min(n)).map(|i| (i, i)).collect(),
    };
    let want = match want {
        Some(w) => w,
        None => {
            let bytes = row.expected_bits().unwrap_or_default();
            let bits = epilogue::from_le_bytes(bytes, out);
            if bits.len() != pairs.len() || bytes.len() != pairs.len() * out.width() {
                return Err(format!("{} expected elements for {} outputs", bits.len(), pairs.len()));
            }
            Want::Bits(bits)
        }
    };
    let zeroed =
        |x: &[u8], f: Format| -> Vec<u8> { x.iter().map(|&c| if f.is_nonfinite(c) { 0 } else { c }).collect() };
    let nonfinite = row.a.iter().any(|&c| fa.is_nonfinite(c)) || row.b.iter().any(|&c| fb.is_nonfinite(c));
    let patch = if nonfinite {
        let ops = Operands { fa, fb, a: &row.a, b: &row.b, m, n, k };
        let unsplit = accumulate(&preset, &ops, fast, SplitK::NONE).map_err(|e| format!("unsplit accumulator: {e}"))?;
        pairs.iter().map(|&(i, j)| Some(unsplit[i * n + j]).filter(|v| !v.is_finite())).collect()
    } else {
        vec![None; pairs.len()]
    };
    // The largest candidate plan of the row is refused here, not while replaying: every smaller one then plans.
    let plan_bytes = |l: &Layout| SplitRule { layout: *l, order: Order::Serial }.plan_bytes(k, s, fast);
    if let Some(largest) = layouts(k, s, fast).into_iter().max_by_key(|l| plan_bytes(l).unwrap_or(u64::MAX)) {
        replay::plan(&preset, largest, k, s, fast).map_err(|e| format!("a candidate's plan: {e}"))?;
    }
    let codes = Codes { preset, fa, fb, k, a: zeroed(&row.a, fa), b: zeroed(&row.b, fb), pairs };
    Ok(Prepared { codes, s, fast, patch, finish, want, out })
}

/// The bits of output `o` when the partials `column` are combined in `order`.
fn output_bits(p: &Prepared, o: usize, column: &[f32], order: Order) -> u32 {
    let acc = p.patch[o].unwrap_or_else(|| super::rules::combine(order, column));
    match p.finish {
        Finish::Accumulator => mmaemu_model::chain::canonical_f32(acc).to_bits(),
        Finish::Epilogue(e) => e.apply_one(acc, e.alpha()),
    }
}

/// Does the combination of these partials in `order` reproduce the recording?
fn reproduces(p: &Prepared, partials: &[Vec<f32>], order: Order) -> bool {
    let mut column = vec![0.0f32; partials.len()];
    let mut bits = Vec::with_capacity(p.codes.pairs.len());
    for o in 0..p.codes.pairs.len() {
        for (c, part) in column.iter_mut().zip(partials) {
            *c = part[o];
        }
        let b = output_bits(p, o, &column, order);
        if let Want::Bits(want) = &p.want {
            if want[o] != b {
                return false;
            }
        }
        bits.push(b);
    }
    match &p.want {
        Want::Bits(_) => true,
        Want::Sha256(s) => {
            mmaemu_datasets::digest::sha256_hex(&epilogue::to_le_bytes(&bits, p.out)).eq_ignore_ascii_case(s)
        }
    }
}

/// Could the partials of the first compared outputs alone (`partials`, per split one value per output of a prefix of
/// the compared outputs) reproduce the recording in `order`? (Always, for a row that records only a digest.)
fn prefix_agrees(p: &Prepared, partials: &[Vec<f32>], order: Order) -> bool {
    let Want::Bits(want) = &p.want else { return true };
    let outputs = partials.first().map_or(0, Vec::len);
    let mut column = vec![0.0f32; partials.len()];
    (0..outputs).all(|o| {
        for (c, part) in column.iter_mut().zip(partials) {
            *c = part[o];
        }
        want[o] == output_bits(p, o, &column, order)
    })
}

/// Rows whose operands, formats, preset, compared outputs, S and accumulation agree have the same
/// partials under every rule (they differ only in the epilogue): the key they are shared under.
fn operand_key(p: &Codes, s: usize, fast: bool) -> Vec<u8> {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(p.preset.name().as_bytes());
    h.update([0, p.fa as u8, p.fb as u8, u8::from(fast)]);
    for x in [p.k, s, p.pairs.len(), p.a.len(), p.b.len()] {
        h.update((x as u64).to_le_bytes());
    }
    for &(i, j) in &p.pairs {
        h.update((i as u64).to_le_bytes());
        h.update((j as u64).to_le_bytes());
    }
    h.update(&p.a);
    h.update(&p.b);
    h.finalize().to_vec()
}

/// A row's identity in the report.
struct Meta {
    id: String,
    file: PathBuf,
    gpu: String,
    fast: bool,
    s: usize,
    label: Option<String>,
    recorded: String,
}

impl Meta {
    fn into_row(self, p: &Prepared, found: narrow::Survivors) -> FitRow {
        let Meta { id, file, gpu, fast, s, label, recorded } = self;
        let (k, tried) = (p.codes.k, layouts(p.codes.k, s, fast).len() * Order::ALL.len());
        let survivors = found.rules.iter().map(SplitRule::name).collect();
        let preset = p.codes.preset.clone();
        FitRow { id, file, gpu, fast, s, label, recorded, k, preset, tried, replayed: found.replayed, survivors }
    }
}

fn meta(row: &Row, file: &Path) -> Meta {
    Meta {
        id: row.id.clone(),
        file: file.to_path_buf(),
        gpu: row.gpu.clone(),
        fast: row.fast_accum.unwrap_or(true),
        s: row.split_s.unwrap_or(1).max(1) as usize,
        label: label_of(row),
        recorded: row.split_scheme.clone().unwrap_or_else(|| "none".into()),
    }
}

/// Fit one row alone: its survivors, or why it cannot be fitted.
pub fn fit_row(row: &Row, file: &Path) -> Result<FitRow, SkippedRow> {
    let skip = |reason: String| SkippedRow { id: row.id.clone(), file: file.to_path_buf(), reason };
    let m = meta(row, file);
    let p = prepare(row, m.s).map_err(skip)?;
    let found = narrow::group_survivors(&[&p]).pop().unwrap_or(narrow::Survivors { rules: Vec::new(), replayed: 0 });
    Ok(m.into_row(&p, found))
}

/// Fit the split rows of the given (file, rows) recordings: rows are prepared in parallel, rows sharing
/// operands are replayed together (their partials computed once), then the groups are decided.
pub fn fit(recordings: &[(PathBuf, Vec<Row>)]) -> FitReport {
    let work: Vec<(&Path, &Row)> = recordings
        .iter()
        .flat_map(|(f, rows)| rows.iter().filter(|r| is_split_row(r)).map(move |r| (f.as_path(), r)))
        .collect();
    let prepared: Vec<Result<(Meta, Prepared), SkippedRow>> = work
        .par_iter()
        .map(|(f, r)| {
            let m = meta(r, f);
            match prepare(r, m.s) {
                Ok(p) => Ok((m, p)),
                Err(reason) => Err(SkippedRow { id: r.id.clone(), file: f.to_path_buf(), reason }),
            }
        })
        .collect();
    let mut skipped = Vec::new();
    let mut ready: Vec<(Meta, Prepared)> = Vec::new();
    for x in prepared {
        match x {
            Ok(r) => ready.push(r),
            Err(s) => skipped.push(s),
        }
    }
    // Rows are replayed group by group, each group's rows one after another (`narrow.rs`), the groups in parallel.
    let mut by_group: BTreeMap<GroupOrder, Vec<usize>> = BTreeMap::new();
    for (i, (m, _)) in ready.iter().enumerate() {
        by_group.entry((m.gpu.clone(), std::cmp::Reverse(m.fast), m.s, m.label.clone())).or_default().push(i);
    }
    let members: Vec<Vec<usize>> = by_group.into_values().collect();
    let results: Vec<Vec<(usize, narrow::Survivors)>> = members
        .par_iter()
        .map(|members| {
            let prepared: Vec<&Prepared> = members.iter().map(|&i| &ready[i].1).collect();
            members.iter().copied().zip(narrow::group_survivors(&prepared)).collect()
        })
        .collect();
    let mut found: Vec<Option<narrow::Survivors>> = (0..ready.len()).map(|_| None).collect();
    for (i, s) in results.into_iter().flatten() {
        found[i] = Some(s);
    }
    let rows: Vec<FitRow> = ready
        .into_iter()
        .zip(found)
        .map(|((m, p), f)| m.into_row(&p, f.unwrap_or(narrow::Survivors { rules: Vec::new(), replayed: 0 })))
        .collect();
    let groups = group(&rows);
    let most = |fast: bool| rows.iter().filter(|r| r.fast == fast).map(|r| r.tried).max().unwrap_or(0);
    FitReport { fast_candidates: most(true), slow_candidates: most(false), rows, groups, skipped }
}

/// Read every recording under `paths` and fit its rows (`evidence`: which rows count).
pub fn fit_paths(paths: &[PathBuf], evidence: super::Evidence) -> Result<FitReport, DatasetError> {
    Ok(fit(&super::read_paths(paths, evidence)?))
}

type GroupKey = (String, bool, usize, Option<String>);

/// The sort key of a group: GPU, fast before slow, S, label.
type GroupOrder = (String, std::cmp::Reverse<bool>, usize, Option<String>);
