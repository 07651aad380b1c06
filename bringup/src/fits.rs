//! The one place bring-up meets the fits (`mmaemu_fit`): the preset, split-rule and envelope fits over the recorded
//! files, what each decided and left undecided (as bring-up.json reports it), and the calls they design to tell their
//! survivors apart. Everything else in bring-up sees only [`Fits`].

use mmaemu_datasets::splitk_table::SplitKTable;
use mmaemu_fit::{envelope, preset, splitk, Evidence, Experiment};
use mmaemu_model::SplitRule;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// What the fits decided.
pub struct Fits {
    /// The preset fit.
    pub preset: preset::PresetFit,
    /// The split-rule fit.
    pub splitk: splitk::FitReport,
}

/// One customOption's fitted rule and verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomRule {
    /// The table's label (`customOption 1`).
    pub label: String,
    /// The rule that reproduces every row of it, if one does.
    pub rule: Option<String>,
    /// Every rule that does.
    pub rules: Vec<String>,
    /// `unique`; `equivalent` (several rules, one computation on every split call the table routes to the
    /// customOption: whichever the bundle holds, no result changes); `ambiguous` (several that a routed call could
    /// tell apart, which no recorded row does); or `none`.
    pub verdict: &'static str,
    /// Why an `equivalent` verdict cannot matter.
    pub why: Option<String>,
}

/// Fits the preset on `instruction` (unsplit rows; the fit skips what it cannot use), then the split rules on
/// `split` under the fitted preset: the rows were recorded under the bring-up's first profile, whose preset is a
/// built-in one's arithmetic until the fit replaces it, so the split fit reads copies of them whose profile and preset
/// are a bundle of the fitted preset ([`under_fitted`], in `work`). Without a fitted preset, no split fit.
pub fn fit(instruction: &[PathBuf], split: &[PathBuf], evidence: Evidence, work: &Path) -> Result<Fits, String> {
    let preset = preset::fit_paths(instruction, evidence).map_err(|e| e.to_string())?;
    // No split recording (the table splits nothing), or no preset to replay them under: nothing for the split fit.
    let splitk = match (split, preset.winner("fitted")) {
        ([], _) | (_, None) => splitk::fit(&[]),
        (_, Some(p)) => {
            let copies = under_fitted(&p, split, work)?;
            splitk::fit_paths(&copies, evidence).map_err(|e| e.to_string())?
        }
    };
    Ok(Fits { preset, splitk })
}

/// Copies of the `split` recordings under a bundle of the preset `p` (registered in the process's catalogue), in
/// `work/fitted/<id>/`: each row's bits as recorded, its profile and preset the bundle's, named after the preset's
/// arithmetic and `work` (one name, one arithmetic, as the catalogue requires).
fn under_fitted(p: &mmaemu_model::Preset, split: &[PathBuf], work: &Path) -> Result<Vec<PathBuf>, String> {
    let mut spec = p.spec().clone();
    spec.name = String::new();
    // Named after the arithmetic and the bring-up's directory: two bring-ups in one process (each registers its
    // bundle) never name two bundles alike.
    let id = &mmaemu_datasets::digest::sha256_hex(format!("{spec:?} {}", work.display()).as_bytes())[..12];
    let name = format!("fitted-{id}");
    spec.name = format!("{name}-mma");
    let dir = work.join("fitted").join(id);
    let bundle = dir.join(&name);
    if !bundle.is_dir() {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let doc = dir.join("preset.toml");
        let text = mmaemu_model::Preset::custom(spec).map_err(|e| e.to_string())?.to_document();
        std::fs::write(&doc, text).map_err(|e| format!("{}: {e}", doc.display()))?;
        let build = mmaemu_datasets::platform::BuildSpec {
            name: name.clone(),
            table: None,
            preset: doc.display().to_string(),
            rules: None,
            envelope: None,
            probe: Some(work.join("probe.json")),
            profile: name.clone(),
            caller: "torch._scaled_mm".into(),
            workspace: crate::specs::WORKSPACE,
            recordings: Vec::new(),
        };
        mmaemu_datasets::platform::build_platform(&build, &bundle).map_err(|e| e.to_string())?;
    }
    mmaemu_datasets::platform::register_platform(&bundle).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for f in split {
        let copy = dir.join(f.file_name().ok_or_else(|| format!("{}: not a file", f.display()))?);
        if !copy.is_file() {
            let mut rec = mmaemu_datasets::read_recording(f).map_err(|e| e.to_string())?;
            for row in &mut rec.rows {
                row.profile = row.profile.as_ref().map(|_| name.clone());
                row.preset = format!("{name}-mma");
            }
            mmaemu_datasets::write_recording(&copy, &rec).map_err(|e| e.to_string())?;
        }
        out.push(copy);
    }
    Ok(out)
}

impl Fits {
    /// Whether the preset fit holds: survivors, and no parameter open.
    pub fn preset_unique(&self) -> bool {
        self.preset.holds()
    }

    /// The fitted preset as a document named `name` (docs/preset-format.md), if any survivor.
    pub fn preset_document(&self, name: &str) -> Option<String> {
        self.preset.winner(name).map(|p| p.to_document())
    }

    /// Every parameter of the written preset, by name (docs/preset-format.md's keys).
    pub fn preset_parameters(&self, name: &str) -> Value {
        match self.preset.winner(name) {
            None => Value::Null,
            Some(p) => {
                let s = p.spec();
                json!({"nfma": s.nfma, "frac": s.frac, "frac_out": s.frac_out, "rounding": s.rounding.name(),
                       "min_exp": s.min_exp, "c_entry": s.c_entry.name(), "slow_chunk": s.slow_chunk,
                       "scale_block": s.scale_block})
            }
        }
    }

    /// What the fit left of each parameter: `decided` (one value), `harmless` (several, which provably give the same
    /// bits on every GEMM the bundle computes, with why) or `open` (several, which some call would tell apart).
    pub fn preset_decisions(&self) -> Vec<Value> {
        self.preset
            .params
            .iter()
            .map(|p| match &p.decision {
                preset::Decision::Decided(v) => json!({"parameter": p.name, "status": "decided", "value": v}),
                preset::Decision::Harmless { values, why } => {
                    json!({"parameter": p.name, "status": "harmless", "values": values, "why": why})
                }
                preset::Decision::Open { values, why } => {
                    json!({"parameter": p.name, "status": "open", "values": values, "why": why})
                }
            })
            .collect()
    }

    /// The parameters no recorded row decides (harmless or open), with their candidate values and why.
    pub fn preset_undecided(&self) -> Vec<Value> {
        self.preset_decisions().into_iter().filter(|d| d["status"] != "decided").collect()
    }

    /// The preset fit's verdict and counts.
    pub fn preset_summary(&self) -> Value {
        let mut why: std::collections::BTreeMap<&str, usize> = Default::default();
        for s in &self.preset.skipped {
            *why.entry(s.reason.as_str()).or_default() += 1;
        }
        json!({"verdict": self.preset.verdict.name(), "rows": self.preset.rows.len(),
               "skipped": self.preset.skipped.len(), "skipped_why": why, "candidates": self.preset.candidates,
               "survivors": self.preset.survivors.len(), "unexplained": self.preset.unexplained})
    }

    /// The split fit as `mmaemu fit splitk --json` writes it (the `--rules` of `platform build`).
    pub fn rules_json(&self) -> Value {
        splitk::json(&self.splitk)
    }

    /// Each customOption's rule and verdict, its survivors' equivalence checked on the calls `table` routes to it.
    pub fn custom_rules(&self, table: &SplitKTable) -> Vec<CustomRule> {
        let preset = self.preset.winner("fitted");
        let schemes = self.rules_json();
        schemes["schemes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let rules: Vec<String> = s["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.as_str().map(str::to_string))
                    .collect();
                let rule = s["rule"].as_str().map(str::to_string);
                let label = s["label"].as_str().unwrap_or("?").to_string();
                let custom = splitk::custom_of(&label);
                let parsed: Option<Vec<SplitRule>> = rules.iter().map(|r| SplitRule::parse(r)).collect();
                let equivalent = match (custom, parsed, &preset) {
                    (Some(c), Some(parsed), Some(p)) => splitk::equivalent_on(&parsed, table, c, p),
                    _ => false,
                };
                let (verdict, why) = match (rule.is_some(), rules.len()) {
                    (true, 1) => ("unique", None),
                    (true, _) if equivalent => (
                        "equivalent",
                        Some(format!(
                            "under the fitted preset the rules add the same blocks, in the same groups and order, on \
                             every call the table routes to {label}: the same bits on every operand"
                        )),
                    ),
                    (true, _) => ("ambiguous", None),
                    (false, _) => ("none", None),
                };
                CustomRule { label, rule, rules, verdict, why }
            })
            .collect()
    }

    /// The split fit's groups that no rule reproduces, by (label, fast, S).
    pub fn split_unexplained(&self) -> Vec<String> {
        self.splitk
            .groups
            .iter()
            .filter(|g| g.verdict == splitk::Verdict::None)
            .map(|g| format!("{} fast={} S={}", g.label.as_deref().unwrap_or("?"), g.fast, g.s))
            .collect()
    }

    /// Whether every split group has one rule left (or there is none to fit) and that rule stands for nothing a routed
    /// call of `table` could still tell apart: a `norestart` survivor of short slow rows also stands for the restarts
    /// past them, which the split designer asks about.
    pub fn splitk_decided(&self, table: &SplitKTable) -> bool {
        self.splitk.groups.iter().all(|g| g.survivors.len() == 1 || g.verdict == splitk::Verdict::Unique)
            && splitk::experiments(&self.splitk, table, 1).is_empty()
    }
}

/// Where a designed call comes from: the preset fit's calls must be recorded unsplit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Designer {
    /// `mmaemu_fit::preset::experiments`: unsplit calls (S = 1).
    Preset,
    /// `mmaemu_fit::splitk::experiments`: calls the table routes to a split, at their workspace.
    Split,
}

impl Designer {
    /// `preset` or `split`.
    pub fn name(self) -> &'static str {
        match self {
            Designer::Preset => "preset",
            Designer::Split => "split",
        }
    }
}

/// The calls the fits design to tell their survivors apart, at most `max_calls`: the preset fit's first (the split
/// fit replays its rows under the preset), then the split fit's over the recorded `table` (once the preset holds or
/// the preset fit has no call left to design).
pub fn experiments(fits: &Fits, table: &SplitKTable, max_calls: usize) -> Vec<(Designer, Experiment)> {
    let mut out: Vec<(Designer, Experiment)> =
        preset::experiments(&fits.preset, max_calls).into_iter().map(|e| (Designer::Preset, e)).collect();
    // The split fit's designs assume the preset its rows were replayed under (the preset fit's winner): once that
    // preset holds, or once the preset fit designs nothing more (its survivors stay, and the check judges the winner).
    if out.len() < max_calls && (fits.preset.holds() || out.is_empty()) {
        let left = max_calls - out.len();
        out.extend(splitk::experiments(&fits.splitk, table, left).into_iter().map(|e| (Designer::Split, e)));
    }
    out
}

/// The envelope fit of the recorded table, as `mmaemu fit envelope --json` prints it, with its document written to
/// `out` as `mmaemu fit envelope --out` writes it (the `--envelope` of `platform build`).
pub fn envelope(table: &Path, out: &Path) -> Result<Value, String> {
    let r = envelope::fit_path(table, &envelope::Options::default()).map_err(|e| e.to_string())?;
    envelope::fitted(&r).write(out).map_err(|e| e.to_string())?;
    Ok(envelope::json(&r))
}
