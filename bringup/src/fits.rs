//! The one place bring-up meets the fits (`mmaemu_fit`): the preset, split-rule and envelope fits over the recorded
//! files, what each decided and left undecided (as bring-up.json reports it), and the calls they design to tell their
//! survivors apart. Everything else in bring-up sees only [`Fits`].

use mmaemu_fit::{envelope, preset, splitk, Evidence, Experiment};
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
    /// `unique`, `ambiguous` or `none`.
    pub verdict: &'static str,
}

/// Fits the preset on `instruction` (unsplit rows; the fit skips what it cannot use) and the split rules on `split`.
pub fn fit(instruction: &[PathBuf], split: &[PathBuf], evidence: Evidence) -> Result<Fits, String> {
    let preset = preset::fit_paths(instruction, evidence).map_err(|e| e.to_string())?;
    // No split recording (the table splits nothing): nothing for the split fit, which is no error.
    let splitk = match split {
        [] => splitk::fit(&[]),
        _ => splitk::fit_paths(split, evidence).map_err(|e| e.to_string())?,
    };
    Ok(Fits { preset, splitk })
}

impl Fits {
    /// Whether the preset fit kept exactly one survivor.
    pub fn preset_unique(&self) -> bool {
        self.preset.verdict == preset::Verdict::Unique
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
                       "min_exp": s.min_exp, "c_entry": s.c_entry.name(), "slow_chunk": s.slow_chunk})
            }
        }
    }

    /// The parameters no recorded row decides, with their candidate values and why.
    pub fn preset_undecided(&self, name: &str) -> Vec<Value> {
        let mut out: Vec<Value> = self
            .preset
            .undecided
            .iter()
            .map(|(param, values)| {
                json!({"parameter": param, "values": values,
                       "why": "no recorded row tells these values apart; the bundle takes the first survivor"})
            })
            .collect();
        if self.preset.winner(name).is_some_and(|p| p.spec().slow_chunk.is_none()) {
            out.push(json!({"parameter": "slow_chunk", "values": [],
                            "why": "the preset fit does not decide the slow chunk: slow calls are not reproduced"}));
        }
        out
    }

    /// The preset fit's verdict and counts.
    pub fn preset_summary(&self) -> Value {
        json!({"verdict": self.preset.verdict.name(), "rows": self.preset.rows.len(),
               "skipped": self.preset.skipped.len(), "candidates": self.preset.candidates,
               "survivors": self.preset.survivors.len(), "unexplained": self.preset.unexplained})
    }

    /// The split fit as `mmaemu fit splitk --json` writes it (the `--rules` of `platform build`).
    pub fn rules_json(&self) -> Value {
        splitk::json(&self.splitk)
    }

    /// Each customOption's rule and verdict.
    pub fn custom_rules(&self) -> Vec<CustomRule> {
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
                let verdict = match (rule.is_some(), rules.len()) {
                    (true, 1) => "unique",
                    (true, _) => "ambiguous",
                    (false, _) => "none",
                };
                CustomRule { label: s["label"].as_str().unwrap_or("?").to_string(), rule, rules, verdict }
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

    /// Whether every split group has one rule left (or there is none to fit).
    pub fn splitk_decided(&self) -> bool {
        self.splitk.groups.iter().all(|g| g.survivors.len() == 1 || g.verdict == splitk::Verdict::Unique)
    }
}

/// The calls the fits design to tell their survivors apart, at most `max_calls`. The preset fit's discriminator is a
/// chain of explicit codes, which no torch call of the recorder's generator reproduces, and the split fit designs
/// none yet: no experiment today.
pub fn experiments(_fits: &Fits, _max_calls: usize) -> Vec<Experiment> {
    Vec::new()
}

/// The envelope fit of the recorded table, as `mmaemu fit envelope --json` prints it.
pub fn envelope(table: &Path) -> Result<Value, String> {
    let r = envelope::fit_path(table, &envelope::Options::default()).map_err(|e| e.to_string())?;
    Ok(envelope::json(&r))
}
