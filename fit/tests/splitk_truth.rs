//! Seeded random truths for `fit splitk`: split rules drawn across their whole space (ownership, width 16..512, order,
//! restart none / 1..=8 tiles / inside a tile) for the customOptions of a shipped heuristic table, rows synthesized
//! with the model's plans, then fit → experiments → refit until each customOption has one rule or rules that compute
//! the same bits on every call the table routes to it — which must then include the truth.
//!
//! `cargo test -p mmaemu-fit --test splitk_truth` runs seeds 0..10 (about 35 s); `MMAEMU_SPLITK_TRUTH_SEEDS=N` runs
//! seeds 0..N (40 pass: docs/bring-up.md), and the seed of a failure is printed: `MMAEMU_SPLITK_TRUTH_SEED=S` reruns
//! that one alone.

use mmaemu_datasets::inputs::{generate_rows, InputSpec, Operand};
use mmaemu_datasets::splitk_table::{read_splitk_table, SplitKTable};
use mmaemu_datasets::{Expectation, Op, OutSelect, Row, RowExt, Truth};
use mmaemu_fit::rules::{Layout, Order, Ownership, Restart, SplitRule};
use mmaemu_fit::splitk::{equivalent_on, experiments, fit, schemes};
use mmaemu_model::{accumulate, Operands, Preset, Scheme, SplitK, SplitKey};
use rand::rngs::ChaCha8Rng as StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const TABLE: &str = "../datasets/platforms/rtx4060-cublaslt-12.8.3.14/rtx4060-cublaslt-12.8.3.14.parquet";
/// Outputs per synthesized row: (0, j) for j below this.
const OUTPUTS: usize = 8;

fn table() -> SplitKTable {
    read_splitk_table(&Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE)).expect("the shipped table")
}

/// A rule drawn across the space the issue names.
fn draw(rng: &mut StdRng) -> SplitRule {
    let ownership = if rng.random_bool(0.5) { Ownership::Interleaved } else { Ownership::Contiguous };
    let width: usize = [16, 32, 64, 128, 256, 512][rng.random_range(0..6)];
    let order = Order::ALL[rng.random_range(0..4)];
    let restart = match rng.random_range(0..10) {
        0 => Restart::Never,
        9 if width > 16 => Restart::Elements(16 << rng.random_range(0..(width / 16).ilog2())),
        n => Restart::Tiles(n.min(8)),
    };
    SplitRule { layout: Layout { ownership, width, restart: Some(restart) }, order }
}

/// One split call: the table routes `key` at `workspace` to a customOption with S splits.
#[derive(Clone, Copy)]
struct Call {
    key: SplitKey,
    workspace: u64,
    s: usize,
    custom: u8,
}

fn routed(t: &SplitKTable) -> Vec<Call> {
    t.rows
        .iter()
        .filter(|r| r.decision.split_s > 1)
        .filter_map(|r| {
            Some(Call {
                key: r.split_key()?,
                workspace: r.workspace_bytes as u64,
                s: r.decision.split_s as usize,
                custom: r.decision.custom_option,
            })
        })
        .collect()
}

/// The row the truth gives for a call with the operands of `spec` (outputs (0, j < OUTPUTS), fp32 accumulators).
fn row(id: String, c: &Call, truth: &SplitRule, spec: &InputSpec) -> Row {
    let (n, k) = (c.key.n.min(OUTPUTS), c.key.k);
    let a = generate_rows(spec, Operand::A, &c.key.fa.to_string(), 0..1, k).unwrap();
    let b = generate_rows(spec, Operand::B, &c.key.fb.to_string(), 0..n, k).unwrap();
    let ops = Operands { fa: c.key.fa, fb: c.key.fb, a: &a, b: &b, m: 1, n, k };
    let acc = accumulate(&Preset::ada(), &ops, c.key.fast, SplitK::new(c.s, Scheme::Rule(*truth)).unwrap()).unwrap();
    Row {
        id,
        op: Op::Accumulator,
        preset: "ada".into(),
        profile: None,
        gpu: "Sim".into(),
        truth: Truth::Hardware,
        fmt_a: c.key.fa.to_string(),
        fmt_b: c.key.fb.to_string(),
        batch: 1,
        m: 1,
        n: n as i64,
        k: k as i64,
        a,
        b,
        c: None,
        scale_a: None,
        scale_b: None,
        scale_result: None,
        out_dtype: Some("float32".into()),
        fast_accum: Some(c.key.fast),
        split_s: Some(c.s as i32),
        split_scheme: Some("unknown".into()),
        algo: Some(format!("{{\"custom_option\": {}}}", c.custom)),
        call: None,
        out_select: OutSelect::Full,
        expected: Expectation::Bits(acc.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect()),
        scope: None,
        origin: "synthesized".into(),
        ext: RowExt::default(),
    }
}

fn spec(seed: u64) -> InputSpec {
    InputSpec {
        generator: mmaemu_datasets::inputs::GENERATOR_V1.into(),
        seed,
        stream: 0,
        data: mmaemu_datasets::inputs::DataClass::Split { scale: 1.0 },
    }
}

/// Run one seed: Ok(calls recorded) or why it failed.
fn run(seed: u64, t: &SplitKTable, calls: &[Call]) -> Result<usize, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let customs: Vec<u8> =
        calls.iter().map(|c| c.custom).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let truth: BTreeMap<u8, SplitRule> = customs.iter().map(|&c| (c, draw(&mut rng))).collect();
    // The first sweep: per customOption two fast and two slow routed calls of small M·N, drawn at random.
    let mut rows = Vec::new();
    for &c in &customs {
        for fast in [true, false] {
            let mine: Vec<&Call> = calls.iter().filter(|x| x.custom == c && x.key.fast == fast).collect();
            for _ in 0..mine.len().min(2) {
                let call = mine[rng.random_range(0..mine.len())];
                rows.push(row(format!("r{}", rows.len()), call, &truth[&c], &spec(rng.random())));
            }
        }
    }
    let file = PathBuf::from("synthesized.parquet");
    for _round in 0..12 {
        let report = fit(&[(file.clone(), rows.clone())]);
        let exps = experiments(&report, t, 6);
        if exps.is_empty() {
            for f in schemes(&report) {
                let c: u8 = f.label.trim_start_matches("customOption ").parse().unwrap();
                let want = truth[&c];
                if !f.rules.contains(&want.canonical(1 << 20, 2, false).name()) && f.rules.is_empty() {
                    return Err(format!("{}: no rule fits; truth {want}", f.label));
                }
                for r in &f.rules {
                    let r = SplitRule::parse(r).unwrap();
                    if !equivalent_on(&[want, r], t, c, &Preset::ada()) {
                        return Err(format!("{}: {r} survives beside the truth {want}: {:?}", f.label, f.rules));
                    }
                }
            }
            return Ok(rows.len());
        }
        for e in exps {
            let call = calls
                .iter()
                .find(|c| c.key == e.problem && Some(c.workspace) == e.workspace)
                .ok_or_else(|| format!("experiment {e:?} is not a routed call"))?;
            rows.push(row(format!("r{}", rows.len()), call, &truth[&call.custom], &e.inputs));
        }
    }
    Err(format!("no decision after 12 rounds; truths {truth:?}"))
}

#[test]
fn random_truths_are_found_by_fit_and_experiment() {
    let t = table();
    let calls = routed(&t);
    assert!(!calls.is_empty());
    let seeds: Vec<u64> = match (std::env::var("MMAEMU_SPLITK_TRUTH_SEED"), std::env::var("MMAEMU_SPLITK_TRUTH_SEEDS"))
    {
        (Ok(s), _) => vec![s.parse().expect("a seed")],
        (_, Ok(n)) => (0..n.parse::<u64>().expect("a count")).collect(),
        _ => (0..10).collect(),
    };
    for seed in seeds {
        match run(seed, &t, &calls) {
            Ok(n) => eprintln!("seed {seed}: decided with {n} calls"),
            Err(e) => panic!("seed {seed} (rerun: MMAEMU_SPLITK_TRUTH_SEED={seed}): {e}"),
        }
    }
}
