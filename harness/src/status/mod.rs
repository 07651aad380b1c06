//! The status of the model, computed from the recordings and their replay outcomes, never written by hand: per preset,
//! profile and feature, its row counts and whether it is validated, experimental or failing.

// For every preset and every profile, and for every feature a row exercises (op, fast or slow accumulation, split
// scheme and S, out dtype, format pair, epilogue paths, rejection rules, zero sizes, out= handling, operand layouts),
// how many hardware rows (truth = hardware) exercise it, how many of them pass, fail or cannot be replayed, how many
// model rows (self-consistency vectors, never evidence) do, and its status:
//
// - `validated`: hardware rows exist and every one of them passes;
// - `failing`: a hardware row fails;
// - `experimental`: no hardware row (nothing recorded, or model rows only), or hardware rows that could not all be
//   replayed.
//
// For the built-in presets and profiles the features they should be validated on are listed even without any row, as
// experimental with zero counts (e.g. hopper split-K, b200_mma_sync slow accumulation). The text table prints those as
// one line per scope; the JSON lists them with the others (`render`).

mod features;
mod render;

pub use features::features;
pub use render::{json, text};

use crate::files::FileReport;
use crate::replay::Verdict;
use mmaemu_datasets::{DatasetError, Row, Truth};
use mmaemu_model::block_call::BlockMode;
use mmaemu_model::{Format, OutDtype, Preset, Profile};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The kinds of feature, in the order the table lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// The row's op.
    Op,
    /// Fast or slow accumulation.
    Accumulation,
    /// The split scheme (any S).
    Split,
    /// The split scheme with its S.
    SplitS,
    /// The out dtype.
    Out,
    /// The operand format pair.
    Formats,
    /// An epilogue path.
    Epilogue,
    /// An expected error category.
    Rejection,
    /// A scope outside what mmaemu models (`out:<reason>`).
    Scope,
    /// A shape property.
    Shape,
    /// out= handling.
    OutArg,
    /// Operand layouts of the call.
    Layout,
}

impl Group {
    /// The group's name in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Group::Op => "op",
            Group::Accumulation => "accumulation",
            Group::Split => "split",
            Group::SplitS => "split_s",
            Group::Out => "out_dtype",
            Group::Formats => "formats",
            Group::Epilogue => "epilogue",
            Group::Rejection => "rejection",
            Group::Scope => "scope",
            Group::Shape => "shape",
            Group::OutArg => "out=",
            Group::Layout => "layout",
        }
    }
    /// The prefix of the feature's label in the table.
    fn prefix(self) -> &'static str {
        match self {
            Group::Op => "op",
            Group::Accumulation => "accumulation",
            Group::Split | Group::SplitS => "split",
            Group::Out => "out",
            Group::Formats => "formats",
            Group::Epilogue => "epilogue",
            Group::Rejection => "rejects",
            Group::Scope => "scope",
            Group::Shape => "shape",
            Group::OutArg => "out=",
            Group::Layout => "layout",
        }
    }
}

/// One feature a row exercises.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Feature {
    /// Its kind.
    pub group: Group,
    /// Its name within the kind.
    pub name: String,
}

impl Feature {
    fn new(group: Group, name: impl Into<String>) -> Feature {
        Feature { group, name: name.into() }
    }
    /// `group name`, as the table prints it.
    pub fn label(&self) -> String {
        format!("{} {}", self.group.prefix(), self.name)
    }
}

/// What one row contributes to the status.
#[derive(Clone, Debug, PartialEq)]
pub struct RowFacts {
    /// The row's preset.
    pub preset: String,
    /// The row's profile.
    pub profile: Option<String>,
    /// Hardware or model.
    pub truth: Truth,
    /// The replay's verdict.
    pub verdict: Verdict,
    /// The features the row exercises.
    pub features: Vec<Feature>,
}

/// A row's facts.
pub fn facts(row: &Row, verdict: &Verdict) -> RowFacts {
    facts_under(row, verdict, &crate::under::Under::own())
}

/// [`facts`] of a row replayed under `under`'s platform: it counts for the preset and profile it replayed under.
pub fn facts_under(row: &Row, verdict: &Verdict, under: &crate::under::Under) -> RowFacts {
    let (preset, profile) = under.names(row);
    RowFacts { preset, profile, truth: row.truth, verdict: verdict.clone(), features: features(row) }
}

/// The status of a feature or a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Hardware rows exist and all pass.
    Validated,
    /// No hardware row, model rows only, or hardware rows that were not all replayed.
    Experimental,
    /// A hardware row fails.
    Failing,
}

impl Status {
    /// `validated`, `experimental`, `failing`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Validated => "validated",
            Status::Experimental => "experimental",
            Status::Failing => "failing",
        }
    }
}

/// Row counts of a feature or a scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Hardware rows.
    pub hardware: usize,
    /// Hardware rows that pass.
    pub passed: usize,
    /// Hardware rows that fail.
    pub failed: usize,
    /// Hardware rows that could not be replayed.
    pub skipped: usize,
    /// Model rows.
    pub model: usize,
    /// Model rows that fail.
    pub model_failed: usize,
}

impl Counts {
    fn add(&mut self, r: &RowFacts) {
        match r.truth {
            Truth::Hardware => {
                self.hardware += 1;
                match r.verdict {
                    Verdict::Pass => self.passed += 1,
                    Verdict::Fail(_) => self.failed += 1,
                    Verdict::Skip(_) => self.skipped += 1,
                }
            }
            Truth::Model => {
                self.model += 1;
                if matches!(r.verdict, Verdict::Fail(_)) {
                    self.model_failed += 1;
                }
            }
        }
    }

    /// The status these counts give.
    pub fn status(&self) -> Status {
        if self.failed > 0 {
            Status::Failing
        } else if self.hardware > 0 && self.passed == self.hardware {
            Status::Validated
        } else {
            Status::Experimental
        }
    }

    /// Why a status is what it is, when that is not obvious from the counts.
    pub fn note(&self) -> String {
        let mut notes = Vec::new();
        if self.hardware == 0 {
            notes.push(if self.model > 0 { "model rows only".to_string() } else { "no hardware row".to_string() });
        }
        if self.skipped > 0 {
            notes.push(format!("{} hardware rows not replayed", self.skipped));
        }
        if self.model_failed > 0 {
            notes.push(format!("{} model rows fail", self.model_failed));
        }
        notes.join("; ")
    }
}

/// One feature's counts and status within a scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureStatus {
    /// The feature.
    pub feature: Feature,
    /// Its counts.
    pub counts: Counts,
    /// Its status.
    pub status: Status,
}

impl FeatureStatus {
    /// The cells of its row in a status table: label, hardware, passed, failed, skipped and model rows,
    /// and the status with its note; `cell` escapes text for the table's format.
    pub fn cells(&self, cell: impl Fn(&str) -> String) -> [String; 7] {
        let c = &self.counts;
        let note = c.note();
        let status = if note.is_empty() {
            self.status.name().to_string()
        } else {
            format!("{} ({})", self.status.name(), cell(&note))
        };
        [
            cell(&self.feature.label()),
            c.hardware.to_string(),
            c.passed.to_string(),
            c.failed.to_string(),
            c.skipped.to_string(),
            c.model.to_string(),
            status,
        ]
    }
}

/// Is a scope a preset or a profile?
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeKind {
    /// Every row of a preset, whatever its profile.
    Preset,
    /// Every row of a profile.
    Profile,
}

impl ScopeKind {
    /// `preset` or `profile`.
    pub fn name(self) -> &'static str {
        match self {
            ScopeKind::Preset => "preset",
            ScopeKind::Profile => "profile",
        }
    }
}

/// The status of one preset or profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeStatus {
    /// Preset or profile.
    pub kind: ScopeKind,
    /// Its name.
    pub name: String,
    /// One of the library's built-in presets or profiles?
    pub builtin: bool,
    /// Counts over all its rows.
    pub counts: Counts,
    /// Its status.
    pub status: Status,
    /// The maturity the model declares for it (`validated`, `experimental`, `custom`), for a scope the
    /// model knows; what the recordings show is `instruction` and `gemm`.
    pub declared: Option<&'static str>,
    /// Instruction-level evidence: its `mma` rows (single tensor-core instructions from a recorded c).
    pub instruction: Counts,
    /// GEMM-level evidence: its `accumulator`, `gemm` and `scaled_mm` rows (whole cuBLASLt GEMMs).
    pub gemm: Counts,
    /// Every feature, those with rows first (in table order), then those a built-in scope has no row for.
    pub features: Vec<FeatureStatus>,
}

impl ScopeStatus {
    /// The features without any hardware row (experimental by definition).
    pub fn without_hardware(&self) -> impl Iterator<Item = &FeatureStatus> {
        self.features.iter().filter(|f| f.counts.hardware == 0)
    }
}

/// The whole status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusReport {
    /// Rows counted.
    pub rows: usize,
    /// Hardware rows counted.
    pub hardware_rows: usize,
    /// Presets, then profiles.
    pub scopes: Vec<ScopeStatus>,
}

/// The feature of row-wise scales, modelled from the CUTLASS kernel torch 2.7.1 runs (experimental until rows of a
/// GPU validate it).
pub const ROWWISE: &str = "row-wise scales (CUTLASS f8f8bf16_rowwise)";
/// The feature of a bias with row-wise scales.
pub const ROWWISE_BIAS: &str = "bias with row-wise scales";

/// The feature of a block-scaled mode (experimental until rows of a GPU validate it), e.g. "MXFP8 scales (cuBLASLt
/// VEC32_UE8M0)".
pub fn block_feature(mode: BlockMode) -> String {
    let (a, b) = mode.scale_modes();
    let modes = if a == b { a.to_string() } else { format!("{a} x {b}") };
    format!("{} (cuBLASLt {modes})", mode.label())
}

/// Does a feature belong to a kernel of its own (row-wise, block-scaled), whose rows are evidence of it alone?
fn own_kernel(f: &Feature) -> bool {
    f.group == Group::Epilogue
        && (f.name == ROWWISE || f.name == ROWWISE_BIAS || BlockMode::ALL.iter().any(|&m| f.name == block_feature(m)))
}

/// The features a built-in preset (`profile` None) or profile is expected to be validated on: a profile's include
/// the row-wise kernel and every block-scaled mode its GPU runs ([`BlockMode::runs_on`]).
fn universe(preset: &Preset, profile: Option<&Profile>) -> Vec<Feature> {
    let mut u = Vec::new();
    let (on, profile) = (profile, profile.is_some());
    let ops: &[&str] = if profile { &["scaled_mm"] } else { &["mma", "accumulator", "gemm", "scaled_mm"] };
    u.extend(ops.iter().map(|o| Feature::new(Group::Op, *o)));
    u.push(Feature::new(Group::Accumulation, "fast"));
    u.push(Feature::new(Group::Accumulation, "slow"));
    u.push(Feature::new(Group::Split, "none"));
    for s in mmaemu_api::catalogue().schemes(preset) {
        u.push(Feature::new(Group::Split, s.name()));
    }
    for od in OutDtype::ALL {
        u.push(Feature::new(Group::Out, od.name()));
    }
    for fa in [Format::E4m3, Format::E5m2] {
        for fb in [Format::E4m3, Format::E5m2] {
            if profile && fa == Format::E5m2 && fb == Format::E5m2 {
                continue; // torch rejects it: a rejection, not a computation
            }
            u.push(Feature::new(Group::Formats, format!("{} x {}", fa.name(), fb.name())));
        }
    }
    for e in [
        "scale_result",
        "FP8 saturation (an output at +-max)",
        "double rounding to bfloat16",
        "double rounding to float16",
    ] {
        u.push(Feature::new(Group::Epilogue, e));
    }
    for e in ["ReferenceRejectsError", "UnsupportedFeatureError"] {
        u.push(Feature::new(Group::Rejection, e));
    }
    u.push(Feature::new(Group::Shape, "zero-size"));
    u.push(Feature::new(Group::Shape, "ragged K (K % 16 != 0)"));
    u.push(Feature::new(Group::OutArg, "row-major"));
    if let Some(p) = on {
        u.push(Feature::new(Group::Epilogue, ROWWISE));
        u.push(Feature::new(Group::Epilogue, ROWWISE_BIAS));
        for mode in BlockMode::ALL.into_iter().filter(|m| m.runs_on(p)) {
            u.push(Feature::new(Group::Epilogue, block_feature(mode)));
        }
    }
    u
}

/// Compute the status from every row's facts.
pub fn compute(facts: &[RowFacts]) -> StatusReport {
    // (kind, name) -> (counts, feature -> counts)
    type Acc = (Counts, BTreeMap<Feature, Counts>, Counts, Counts);
    let mut scopes: BTreeMap<(ScopeKind, String), Acc> = BTreeMap::new();
    for r in facts {
        let mut keys = vec![(ScopeKind::Preset, r.preset.clone())];
        if let Some(p) = &r.profile {
            keys.push((ScopeKind::Profile, p.clone()));
        }
        // A row-wise call runs another kernel (CUTLASS, docs/reference.md §4.2), a block-scaled call cuBLASLt's
        // block-scaled kernels (§12): its row is evidence of that kernel's features alone, never of the scope's
        // tensor-wise pipeline or of its other features; so is a row recorded as out of scope that can no longer be
        // replayed (it holds no result bits), which counts for its scope alone.
        let out_of_scope = matches!(r.verdict, Verdict::Skip(_)) && r.features.iter().any(|f| f.group == Group::Scope);
        let apart = out_of_scope || r.features.iter().any(|f| own_kernel(f) && f.name != ROWWISE_BIAS);
        for key in keys {
            let (total, per, instruction, gemm) = scopes.entry(key).or_default();
            if apart {
                let own = |f: &&Feature| own_kernel(f) || f.group == Group::Scope;
                for f in r.features.iter().filter(own) {
                    per.entry(f.clone()).or_default().add(r);
                }
                continue;
            }
            total.add(r);
            if r.features.iter().any(|f| f.group == Group::Op && f.name == "mma") {
                instruction.add(r);
            } else {
                gemm.add(r);
            }
            let unique: BTreeSet<&Feature> = r.features.iter().collect();
            for f in unique {
                per.entry(f.clone()).or_default().add(r);
            }
        }
    }
    // Scope order: built-in presets, other presets, built-in profiles, other profiles.
    // The built-in presets in the order of the built-in platforms that run them (docs/reference.md §6.1).
    let mut preset_order: Vec<String> = Vec::new();
    for p in mmaemu_model::Catalogue::builtin().platforms() {
        if !preset_order.iter().any(|n| n == p.preset.name()) {
            preset_order.push(p.preset.name().to_string());
        }
    }
    let mut order: Vec<(ScopeKind, String, bool)> = Vec::new();
    for p in &preset_order {
        order.push((ScopeKind::Preset, p.clone(), true));
    }
    for (kind, name) in scopes.keys() {
        if *kind == ScopeKind::Preset && !preset_order.contains(name) {
            order.push((ScopeKind::Preset, name.clone(), false));
        }
    }
    let profile_names = mmaemu_model::Catalogue::builtin().builtin_profile_names();
    for p in &profile_names {
        order.push((ScopeKind::Profile, p.clone(), true));
    }
    for (kind, name) in scopes.keys() {
        if *kind == ScopeKind::Profile && !profile_names.contains(name) {
            order.push((ScopeKind::Profile, name.clone(), false));
        }
    }
    let out = order
        .into_iter()
        .map(|(kind, name, builtin)| {
            let (counts, per, instruction, gemm) = scopes.remove(&(kind, name.clone())).unwrap_or_default();
            let declared = match kind {
                ScopeKind::Preset => mmaemu_api::catalogue().preset(&name).ok().map(|p| p.maturity().name()),
                ScopeKind::Profile => mmaemu_api::catalogue().profile(&name).ok().map(|p| p.maturity.name()),
            };
            let mut features: Vec<FeatureStatus> =
                per.into_iter().map(|(feature, c)| FeatureStatus { feature, counts: c, status: c.status() }).collect();
            let expected = match kind {
                ScopeKind::Preset => {
                    mmaemu_api::catalogue().preset(&name).ok().filter(|_| builtin).map(|p| universe(&p, None))
                }
                ScopeKind::Profile => mmaemu_api::catalogue()
                    .profile(&name)
                    .ok()
                    .filter(|_| builtin)
                    .map(|p| universe(&p.preset, Some(&p))),
            };
            for f in expected.unwrap_or_default() {
                if !features.iter().any(|x| x.feature == f) {
                    let c = Counts::default();
                    features.push(FeatureStatus { feature: f, counts: c, status: c.status() });
                }
            }
            // Rows first in table order, then the features without rows in table order.
            features.sort_by(|a, b| {
                let has = |x: &FeatureStatus| x.counts.hardware + x.counts.model == 0;
                (has(a), a.feature.group, split_sort_key(&a.feature), &a.feature.name).cmp(&(
                    has(b),
                    b.feature.group,
                    split_sort_key(&b.feature),
                    &b.feature.name,
                ))
            });
            ScopeStatus { kind, name, builtin, counts, status: counts.status(), declared, instruction, gemm, features }
        })
        .collect();
    StatusReport {
        rows: facts.len(),
        hardware_rows: facts.iter().filter(|r| r.truth == Truth::Hardware).count(),
        scopes: out,
    }
}

/// `split_s` features sort by scheme, then S numerically.
fn split_sort_key(f: &Feature) -> (String, u64) {
    if f.group != Group::SplitS {
        return (String::new(), 0);
    }
    match f.name.split_once(" S=") {
        Some((scheme, s)) => (scheme.to_string(), s.parse().unwrap_or(u64::MAX)),
        None => (f.name.clone(), 0),
    }
}

/// Replay every row of one file (rows in parallel, `progress` once per row) like
/// [`crate::files::replay_file`], and also return every row's facts for the status.
pub fn replay_file_with_facts(
    path: &Path,
    progress: &(dyn Fn() + Sync),
) -> Result<(FileReport, Vec<RowFacts>), DatasetError> {
    crate::files::replay_file_with(path, progress, facts)
}
