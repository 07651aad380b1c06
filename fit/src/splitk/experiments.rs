//! Discrimination by experiment for `fit splitk`: the calls that tell a customOption's surviving rules apart — a
//! problem the heuristic table sends to that customOption with S splits, and generator inputs on which the survivors'
//! results (simulated through the model's plans) differ.

// A label's hypotheses are its rules (`schemes`), widened where the rows cannot see a parameter: a `norestart` survivor
// stands for every restart past the recorded slow rows, so the restarts a routed slow call can show are hypotheses of
// their own; a label with fast rows only has every restart a routed slow call can show. Two hypotheses with the same
// form on a call (canonical layout for its K and S, order expression for its S) give the same bits on every operand of
// it; the design picks the routed call that splits the open class into the most forms (the smallest problem among
// equals), then the first generator spec (`specs`: seeds × data classes, `binades` among them) whose simulated results
// separate them, and refines every class by it. A class no routed call separates is equivalent on the table: nothing
// the bundle computes can tell its rules apart.

use super::forms::{Form, Forms};
use super::*;
use crate::Experiment;
use mmaemu_datasets::inputs::{generate_rows, DataClass, InputSpec, Operand, GENERATOR_V1};
use mmaemu_datasets::splitk_table::SplitKTable;
use mmaemu_model::{Scheme, SplitKey};

/// Input seeds tried on one call before it is given up on.
const SEEDS: u64 = 6;
// Outputs simulated per call: (0, j) for j below this (outputs are independent, so results differing there differ
// in the whole call), the outputs a refit replays a designed row on first (`narrow.rs`).
use super::DESIGNED_OUTPUTS as OUTPUTS;

/// The customOption of a label `customOption C`.
pub fn custom_of(label: &str) -> Option<u8> {
    label.strip_prefix("customOption ")?.parse().ok()
}

/// One split call the table routes to a customOption: its problem, workspace and S.
#[derive(Clone, Copy, Debug)]
struct Routed {
    key: SplitKey,
    workspace: u64,
    s: usize,
}

/// The split calls (S > 1) the table routes to customOption `custom`, one per (K, S, accumulation) — the forms of
/// a rule depend on nothing else — an fp32 result first (an order's last bits survive in it), then e5m2 operands
/// (their range gives partials of unlike magnitudes, whose sum rounds), then the fewest outputs (the recorded
/// row's cost, on the device and in the refit), then the first in table order.
fn routed(table: &SplitKTable, custom: u8) -> Vec<Routed> {
    let mut by_shape: BTreeMap<(usize, usize, bool), Routed> = BTreeMap::new();
    let narrow = |f: Format| u8::from(f != Format::E5m2);
    let size = |c: &Routed| (c.key.out != OutDtype::Float32, narrow(c.key.fa) + narrow(c.key.fb), c.key.m * c.key.n);
    for r in table.rows.iter().filter(|r| r.decision.custom_option == custom && r.decision.split_s > 1) {
        let (Some(key), Ok(workspace)) = (r.split_key(), u64::try_from(r.workspace_bytes)) else { continue };
        let c = Routed { key, workspace, s: r.decision.split_s as usize };
        let e = by_shape.entry((key.k, c.s, key.fast)).or_insert(c);
        if size(&c) < size(e) {
            *e = c;
        }
    }
    by_shape.into_values().collect()
}

/// The (K, S, fast) of the split calls the table routes to customOption `custom`: all a rule's form on them depends on.
pub fn routed_shapes(table: &SplitKTable, custom: u8) -> Vec<(usize, usize, bool)> {
    routed(table, custom).iter().map(|c| (c.key.k, c.s, c.key.fast)).collect()
}

/// Are `rules` the same computation under `preset` on every split call the table routes to customOption `custom` (so
/// that no result the bundle computes depends on which of them it holds)?
pub fn equivalent_on(rules: &[SplitRule], table: &SplitKTable, custom: u8, preset: &Preset) -> bool {
    let mut memo = Forms::new(preset);
    routed(table, custom).iter().all(|c| {
        let forms: BTreeSet<Form> = rules.iter().map(|r| memo.form(r, c.key.k, c.s, c.key.fast)).collect();
        forms.len() <= 1
    })
}

/// A label's hypotheses: its rules, with the restarts its rows could not see added (module comment).
fn hypotheses(report: &FitReport, gpu: &str, label: &str, rules: &[SplitRule], calls: &[Routed]) -> Vec<SplitRule> {
    let slow_calls: Vec<&Routed> = calls.iter().filter(|c| !c.key.fast).collect();
    let slow_rows: Vec<&FitRow> =
        report.rows.iter().filter(|r| r.gpu == gpu && r.label.as_deref() == Some(label) && !r.fast).collect();
    let mut out: BTreeSet<SplitRule> = BTreeSet::new();
    for rule in rules {
        let widen = matches!(rule.layout.restart, None | Some(Restart::Never)) && !slow_calls.is_empty();
        if !widen {
            out.insert(*rule);
            continue;
        }
        // Every restart a routed slow call can show, for the rule's tiles and order (a rule of fast rows alone has no
        // restart: it stands for all of them).
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
    // Only the rows of A and B these outputs read (the generator makes a row without the rows before it).
    let a = generate_rows(spec, Operand::A, &c.key.fa.to_string(), 0..m, k).ok()?;
    let b = generate_rows(spec, Operand::B, &c.key.fb.to_string(), 0..n, k).ok()?;
    let ops = Operands { fa: c.key.fa, fb: c.key.fb, a: &a, b: &b, m, n, k };
    let split = mmaemu_model::SplitK::new(c.s, Scheme::Rule(*rule)).ok()?;
    let acc = accumulate(preset, &ops, c.key.fast, split).ok()?;
    let e = Epilogue { scale_a: 1.0, scale_b: 1.0, scale_result: None, out: c.key.out };
    Some(acc.iter().map(|&x| e.apply_one(x, e.alpha())).collect())
}

/// The generator specs tried on a class whose narrowest tile is `width` wide, in turn: per seed, split-discriminating
/// data (large terms that absorb small ones where K is cut), which tells chain cuts apart; Gaussian data, whose
/// partials carry many bits; and `binades` data in blocks of one tile, every block live or one in 2^3 or 2^6, whose
/// partials lie binades apart, so that the order they are added in shows where like partials would add exactly in
/// any order (a sparser block pattern leaves fewer live tiles per split on a long K); mirrored, the exact result is
/// zero and the call returns its rounding alone, which a bfloat16 or FP8 result still shows.
fn specs(width: usize) -> Vec<InputSpec> {
    let spec = |seed, data| InputSpec { generator: GENERATOR_V1.into(), seed, stream: 0, data };
    (1..=SEEDS)
        .flat_map(|seed| {
            let binades = |silent, mirror| DataClass::Binades { scale: 1.0, width: width as u64, silent, mirror };
            [
                DataClass::Split { scale: 1.0 },
                DataClass::Gaussian { scale: 1.0 },
                binades(0, false),
                binades(3, false),
                binades(6, false),
                binades(0, true),
                binades(3, true),
            ]
            .into_iter()
            .map(move |d| spec(seed, d))
        })
        .collect()
}

/// Chosen products (class `codes`) for the order in which a call's split partials are added, under the splits `rule`
/// owns: one product per split, at the first k index of its first chunk, a power of two, so that every chain keeps it
/// exactly. 2^12 in one split (each in turn) and 2^−12, 2^−13 or 2^−14 (a half, a quarter or an eighth of an fp32 unit
/// of 2^12) in the others; and 2^12 and −2^12 in two splits (each pair in turn), halves in the others, whose result is
/// only the small partials that survived, which a narrow out dtype still shows. A small partial that meets 2^12 alone
/// is a tie, lost to the even 2^12; two that meet each other first make a whole unit, kept: which ones do is the
/// order. Every row of A and of B is the same pattern. The splits are the layout's: every order of it has these calls.
fn order_specs(c: &Routed, layout: Layout) -> Vec<InputSpec> {
    let (k, fast) = (c.key.k, c.key.fast);
    let rule = SplitRule { layout, order: Order::Serial };
    let rule = if fast { rule.fast() } else { rule };
    let firsts: Vec<usize> = rule
        .plan_splits(k, c.s, fast)
        .iter()
        .filter_map(|sp| sp.chunks.first().and_then(|ch| ch.ranges.first()).map(|r| r.start))
        .collect();
    let n = firsts.len();
    if n < 3 {
        return Vec::new();
    }
    let big = (64f32, 64f32);
    let mut partials: Vec<Vec<(f32, f32)>> = Vec::new();
    // Small partials of a half, a quarter and an eighth of a unit: 2^j of them make a unit, kept where they meet
    // each other before 2^12; 2^12 in split `at`, each in turn.
    for small in [(-6f32, -6f32), (-6., -7.), (-7., -7.)].map(|(x, y)| (x.exp2(), y.exp2())) {
        partials.extend((0..n).map(|at| (0..n).map(|i| if i == at { big } else { small }).collect()));
    }
    // 2^12 in split `at` and −2^12 in split `neg`, halves in the others: the result is the halves that survived.
    let half = ((-6f32).exp2(), (-6f32).exp2());
    let signed = |at: usize, neg: usize, i: usize| match i {
        i if i == at => big,
        i if i == neg => (-big.0, big.1),
        _ => half,
    };
    for at in 0..n {
        partials.extend((0..n).filter(|&neg| neg != at).map(|neg| (0..n).map(|i| signed(at, neg, i)).collect()));
    }
    partials
        .into_iter()
        .map(|values| {
            let (mut a, mut b) = (vec![0u8; k], vec![0u8; k]);
            for (&at, (x, y)) in firsts.iter().zip(values) {
                (a[at], b[at]) = (c.key.fa.from_f32_saturating(x), c.key.fb.from_f32_saturating(y));
            }
            let data = DataClass::Codes { a: mmaemu_datasets::inputs::hex(&a), b: mmaemu_datasets::inputs::hex(&b) };
            InputSpec { generator: GENERATOR_V1.into(), seed: 0, stream: 0, data }
        })
        .collect()
}

/// Split `class` by its members' results on a call and seed (one form is simulated once on a call and seed).
fn refine(memo: &mut Forms, preset: &Preset, class: &[SplitRule], c: &Routed, spec: &InputSpec) -> Vec<Vec<SplitRule>> {
    let mut by_form: BTreeMap<Form, Vec<SplitRule>> = BTreeMap::new();
    for r in class {
        by_form.entry(memo.form(r, c.key.k, c.s, c.key.fast)).or_default().push(*r);
    }
    let mut by_bits: BTreeMap<Option<Vec<u32>>, Vec<SplitRule>> = BTreeMap::new();
    for (f, members) in by_form {
        let key = (f.clone(), (c.key.k, c.s, c.key.fast), spec.seed, format!("{:?}", spec.data));
        let bits = match memo.results.get(&key) {
            Some(b) => b.clone(),
            None => {
                let b = f.and_then(|_| simulate(preset, c, &members[0], spec));
                memo.results.insert(key, b.clone());
                b
            }
        };
        by_bits.entry(bits).or_default().extend(members);
    }
    by_bits.into_values().collect()
}

/// Routed calls tried on one open class, the most forms first, before it is given up on.
const CALLS: usize = 2;

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
        let mut memo = Forms::new(preset);
        let rules: Vec<SplitRule> = fit.rules.iter().filter_map(|n| SplitRule::parse(n)).collect();
        let calls = routed(table, custom);
        let mut open = vec![hypotheses(report, &fit.gpu, &fit.label, &rules, &calls)];
        while out.len() < max_calls {
            let Some(pos) = open.iter().position(|c| c.len() > 1) else { break };
            let class = open.swap_remove(pos);
            // The calls splitting the class into the most forms, the fewest outputs (M·N) and shortest K first among
            // equals.
            let mut ranked: Vec<(usize, &Routed)> = calls
                .iter()
                .map(|c| {
                    (class.iter().map(|r| memo.form(r, c.key.k, c.s, c.key.fast)).collect::<BTreeSet<_>>().len(), c)
                })
                .filter(|(f, _)| *f > 1)
                .collect();
            ranked.sort_by_key(|(f, c)| (std::cmp::Reverse(*f), c.key.m * c.key.n, c.key.k));
            let width = class.iter().map(|r| r.layout.width).min().unwrap_or(16);
            let tries = specs(width);
            let found = ranked.iter().take(CALLS).find_map(|(_, call)| {
                // The generator's data first, then chosen products for the order under each layout's splits.
                let layouts: BTreeSet<Layout> = class.iter().map(|r| r.layout).collect();
                let chosen = layouts.into_iter().flat_map(|l| order_specs(call, l));
                tries.iter().cloned().chain(chosen).find_map(|sp| {
                    let parts = refine(&mut memo, preset, &class, call, &sp);
                    (parts.len() > 1).then_some((parts, sp, *call))
                })
            });
            // None: equivalent on every routed call, or no input found that separates them.
            let Some((parts, sp, call)) = found else { continue };
            // What the class's rules differ in, not the rules themselves: a designed call's description is recorded
            // with its row, and names no rule the fit has not decided.
            let varies = |f: &dyn Fn(&SplitRule) -> String| class.iter().map(f).collect::<BTreeSet<_>>().len() > 1;
            let differ: Vec<&str> = [
                ("ownership", varies(&|r| r.layout.ownership.name().to_string())),
                ("width", varies(&|r| r.layout.width.to_string())),
                ("restart", varies(&|r| format!("{:?}", r.layout.restart))),
                ("order", varies(&|r| r.order.name().to_string())),
            ]
            .into_iter()
            .filter_map(|(n, v)| v.then_some(n))
            .collect();
            out.push(Experiment {
                problem: call.key,
                workspace: Some(call.workspace),
                inputs: sp.clone(),
                mx_scales: None,
                decides: format!(
                    "{}: {} rules differing in {} into {} classes at S={}, {} data",
                    fit.label,
                    class.len(),
                    differ.join(", "),
                    parts.len(),
                    call.s,
                    sp.data.name()
                ),
            });
            // The call's row refines every open class of the label.
            let others: Vec<Vec<SplitRule>> = std::mem::take(&mut open);
            open = parts;
            for o in others {
                open.extend(if o.len() > 1 { refine(&mut memo, preset, &o, call, &sp) } else { vec![o] });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmaemu_model::{BlockRounding, CEntry, PresetSpec};
    use rand::{RngExt, SeedableRng};

    /// Two rules of one layout whose partials are added in orders of another form give other results on one of
    /// [`order_specs`]'s calls, for random presets, layouts, K, S (3 to 24 splits with a partial) and out dtypes,
    /// through the model's plans: the generator's data can miss them (partials of few bits add exactly in any order).
    #[test]
    fn chosen_partials_tell_the_orders_apart() {
        let mut r = rand::rngs::ChaCha8Rng::seed_from_u64(11);
        let mut tried = 0;
        while tried < 150 {
            let nfma = 1u32 << r.random_range(2..=7);
            let frac = r.random_range(8..=40);
            let (frac_out, rounding) = if r.random_bool(0.5) {
                (23, BlockRounding::NearestEven)
            } else {
                (r.random_range(8..=23), BlockRounding::Truncate)
            };
            let c_entry = if r.random_bool(0.5) { CEntry::Early } else { CEntry::Late };
            let spec =
                PresetSpec::custom("x", nfma, frac, frac_out, -126, c_entry, Some(16 * r.random_range(4..=64u32)))
                    .with_rounding(rounding);
            let preset = Preset::custom(spec).unwrap();
            let ownership = if r.random_bool(0.5) { "interleaved" } else { "contiguous" };
            let width = 16usize << r.random_range(0..=5);
            let restart = match r.random_range(0..=8) {
                0 => "norestart".to_string(),
                n => format!("restart{n}"),
            };
            let (k, s, fast) = (16 * r.random_range(8..=1024usize), r.random_range(3..=24usize), r.random_bool(0.5));
            let out = [OutDtype::Float32, OutDtype::BFloat16][r.random_range(0..2)];
            let key = SplitKey { m: 16, n: 16, k, fa: Format::E4m3, fb: Format::E4m3, out, fast };
            let call = Routed { key, workspace: 1 << 20, s };
            let rules: Vec<SplitRule> = ["serial", "pairwise", "reversed", "tree"]
                .iter()
                .filter_map(|o| SplitRule::parse(&format!("{ownership}{width}/{o}/{restart}")))
                .collect();
            let mut memo = Forms::new(&preset);
            for (i, x) in rules.iter().enumerate() {
                for y in &rules[i + 1..] {
                    let (fx, fy) = (memo.form(x, k, s, fast), memo.form(y, k, s, fast));
                    let specs = order_specs(&call, x.layout);
                    if fx.is_none() || fy.is_none() || fx == fy || specs.is_empty() {
                        continue;
                    }
                    tried += 1;
                    let apart =
                        specs.iter().any(|sp| simulate(&preset, &call, x, sp) != simulate(&preset, &call, y, sp));
                    assert!(
                        apart,
                        "{x} against {y}: K {k}, S {s}, fast {fast}, {out:?}, preset {nfma} {frac} {c_entry:?}"
                    );
                }
            }
        }
    }
}
