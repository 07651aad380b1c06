//! Discrimination by experiment for `fit splitk`: the calls that tell a customOption's surviving rules apart — a
//! problem the heuristic table sends to that customOption with S splits, and generator inputs on which the survivors'
//! results (simulated through the model's plans) differ.

// A label's hypotheses are its rules (`schemes`), widened where the rows cannot see a parameter: a `norestart` survivor
// stands for every restart past the recorded slow rows, so the restarts a routed slow call can show are hypotheses of
// their own; a label with fast rows only has every restart a routed slow call can show. Two hypotheses with the same
// form on a call (canonical layout for its K and S, order expression for its S) give the same bits on every operand of
// it; the design picks the routed call that splits the open class into the most forms (the smallest problem among
// equals), then the first generator seed whose simulated results separate them, and refines every class by it. A class
// no routed call separates is equivalent on the table: nothing the bundle computes can tell its rules apart.

use super::*;
use crate::Experiment;
use mmaemu_datasets::inputs::{generate, DataClass, InputSpec, Operand, GENERATOR_V1};
use mmaemu_datasets::splitk_table::SplitKTable;
use mmaemu_model::{Scheme, SplitKey};

/// Input seeds tried on one call before it is given up on.
const SEEDS: u64 = 12;
/// Outputs simulated per call: (0, j) for j below this (outputs are independent, so results differing there differ
/// in the whole call).
const OUTPUTS: usize = 8;

/// The customOption of a label `customOption C`.
fn custom_of(label: &str) -> Option<u8> {
    label.strip_prefix("customOption ")?.parse().ok()
}

/// One split call the table routes to a customOption: its problem, workspace and S.
#[derive(Clone, Copy, Debug)]
struct Routed {
    key: SplitKey,
    workspace: u64,
    s: usize,
}

/// The split calls (S > 1) the table routes to customOption `custom`.
fn routed(table: &SplitKTable, custom: u8) -> Vec<Routed> {
    table
        .rows
        .iter()
        .filter(|r| r.decision.custom_option == custom && r.decision.split_s > 1)
        .filter_map(|r| {
            let key = r.split_key()?;
            Some(Routed { key, workspace: u64::try_from(r.workspace_bytes).ok()?, s: r.decision.split_s as usize })
        })
        .collect()
}

/// The form of a rule on a call: equal forms compute equal bits for every operand. None where the rule cannot plan
/// the call (a rule without a restart, on slow accumulation).
fn form(rule: &SplitRule, c: &Routed) -> Option<(Layout, String)> {
    if !c.key.fast && rule.layout.restart.is_none() {
        return None;
    }
    let canon = rule.canonical(c.key.k, c.s, c.key.fast);
    Some((canon.layout, order_expression(rule.order, c.s)))
}

/// Are `rules` the same computation on every split call the table routes to customOption `custom` (so that no result
/// the bundle computes depends on which of them it holds)?
pub fn equivalent_on(rules: &[SplitRule], table: &SplitKTable, custom: u8) -> bool {
    routed(table, custom).iter().all(|c| {
        let forms: BTreeSet<Option<(Layout, String)>> = rules.iter().map(|r| form(r, c)).collect();
        forms.len() <= 1
    })
}

/// A label's hypotheses: its rules, with the restarts its rows could not see added (module comment).
fn hypotheses(report: &FitReport, gpu: &str, label: &str, rules: &[SplitRule], calls: &[Routed]) -> Vec<SplitRule> {
    let slow_calls: Vec<&Routed> = calls.iter().filter(|c| !c.key.fast).collect();
    let mut out: BTreeSet<SplitRule> = rules.iter().copied().collect();
    let slow_rows: Vec<&FitRow> =
        report.rows.iter().filter(|r| r.gpu == gpu && r.label.as_deref() == Some(label) && !r.fast).collect();
    for rule in rules {
        let widen = match rule.layout.restart {
            None => true,
            Some(Restart::Never) => true,
            _ => false,
        };
        if !widen {
            continue;
        }
        for c in &slow_calls {
            for layout in super::super::rules::layouts(c.key.k, c.s, false) {
                if layout.ownership != rule.layout.ownership || layout.width != rule.layout.width {
                    continue;
                }
                let h = SplitRule { layout, order: rule.order };
                // Kept only if every recorded slow row of the label accepts it (a `norestart` survivor's tail).
                if slow_rows.iter().all(|r| r.accepts(&h)) {
                    out.insert(h);
                }
            }
        }
    }
    out.into_iter().collect()
}

/// The results of `rule` on outputs (0, j < OUTPUTS) of a call with the operands of `spec`, as the out dtype's bits
/// (unit scales); None where the model refuses it.
fn simulate(preset: &Preset, c: &Routed, rule: &SplitRule, spec: &InputSpec) -> Option<Vec<u32>> {
    let (m, n, k) = (1, c.key.n.min(OUTPUTS), c.key.k);
    let a = generate(spec, Operand::A, &c.key.fa.to_string(), c.key.m, k).ok()?;
    let b = generate(spec, Operand::B, &c.key.fb.to_string(), c.key.n, k).ok()?;
    let ops = Operands { fa: c.key.fa, fb: c.key.fb, a: &a[..m * k], b: &b[..n * k], m, n, k };
    let split = mmaemu_model::SplitK::new(c.s, Scheme::Rule(*rule)).ok()?;
    let acc = accumulate(preset, &ops, c.key.fast, split).ok()?;
    let e = Epilogue { scale_a: 1.0, scale_b: 1.0, scale_result: None, out: c.key.out };
    Some(acc.iter().map(|&x| e.apply_one(x, e.alpha())).collect())
}

/// The generator spec of seed `seed`: split-discriminating data (large terms that absorb small ones where K is cut).
fn spec(seed: u64) -> InputSpec {
    InputSpec { generator: GENERATOR_V1.into(), seed, stream: 0, data: DataClass::Split { scale: 1.0 } }
}

/// Split `class` by its members' results on a call and seed (members of one form are simulated once).
fn refine(preset: &Preset, class: &[SplitRule], c: &Routed, spec: &InputSpec) -> Vec<Vec<SplitRule>> {
    let mut by_form: BTreeMap<Option<(Layout, String)>, Vec<SplitRule>> = BTreeMap::new();
    for r in class {
        by_form.entry(form(r, c)).or_default().push(*r);
    }
    let mut by_bits: BTreeMap<Option<Vec<u32>>, Vec<SplitRule>> = BTreeMap::new();
    for (f, members) in by_form {
        let bits = f.and_then(|_| simulate(preset, c, &members[0], spec));
        by_bits.entry(bits).or_default().extend(members);
    }
    by_bits.into_values().collect()
}

/// The calls that tell the surviving rules of every customOption apart, at most `max_calls` of them: each a problem
/// `table` routes to that customOption with S > 1 and operands on which the survivors' results differ (module
/// comment). Empty when every customOption has one rule, or its survivors are equivalent on every routed call.
pub fn experiments(report: &FitReport, table: &SplitKTable, max_calls: usize) -> Vec<Experiment> {
    let mut out = Vec::new();
    for fit in schemes(report) {
        let Some(custom) = custom_of(&fit.label) else { continue };
        let Some(preset) =
            report.rows.iter().find(|r| r.gpu == fit.gpu && r.label.as_deref() == Some(&fit.label)).map(|r| &r.preset)
        else {
            continue;
        };
        let rules: Vec<SplitRule> = fit.rules.iter().filter_map(|n| SplitRule::parse(n)).collect();
        let mut calls = routed(table, custom);
        calls.sort_by_key(|c| (c.key.m * c.key.n.min(OUTPUTS), c.key.k));
        let mut open = vec![hypotheses(report, &fit.gpu, &fit.label, &rules, &calls)];
        while out.len() < max_calls {
            let Some(pos) = open.iter().position(|c| c.len() > 1) else { break };
            let class = open.swap_remove(pos);
            // The call splitting the class into the most forms, the smallest first among equals.
            let forms = |c: &Routed| class.iter().map(|r| form(r, c)).collect::<BTreeSet<_>>().len();
            let best = calls.iter().fold(None, |best: Option<(usize, &Routed)>, c| match (forms(c), best) {
                (f, Some((b, _))) if f <= b => best,
                (f, _) if f > 1 => Some((f, c)),
                _ => best,
            });
            let Some((_, call)) = best else {
                continue; // equivalent on every routed call
            };
            let found =
                (1..=SEEDS).map(spec).map(|sp| (refine(preset, &class, call, &sp), sp)).find(|(p, _)| p.len() > 1);
            let Some((parts, sp)) = found else { continue };
            let names = |c: &[SplitRule]| c.iter().take(4).map(SplitRule::name).collect::<Vec<_>>().join(", ");
            out.push(Experiment {
                problem: call.key,
                workspace: Some(call.workspace),
                inputs: sp.clone(),
                decides: format!(
                    "{}: {} rules ({}{}) into {} classes at S={}",
                    fit.label,
                    class.len(),
                    names(&class),
                    if class.len() > 4 { ", ..." } else { "" },
                    parts.len(),
                    call.s
                ),
            });
            // The call's row refines every open class of the label.
            let others: Vec<Vec<SplitRule>> = std::mem::take(&mut open);
            open = parts;
            for o in others {
                open.extend(if o.len() > 1 { refine(preset, &o, call, &sp) } else { vec![o] });
            }
        }
    }
    out
}
