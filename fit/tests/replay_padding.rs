//! The split-K fit's replay of a plan against the model's plan executor on seeded random instructions whose padding
//! shows: early c and frac below frac_out (an all-zero block re-aligns c to frac bits, docs/reference.md §2.4), any
//! block size and slow chunk, every ownership, tile width, order and restart, ragged K. Each case's seed is printed
//! on a failure.

use mmaemu_fit::splitk::replay_plan;
use mmaemu_model::{
    execute, BlockRounding, CEntry, Format, Operands, Plan, Preset, PresetSpec, ReferenceEngine, Scheme, SplitK,
    SplitRule,
};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

const CASES: u64 = 300;

fn case(seed: u64) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let nfma = 1u32 << rng.random_range(2..=7);
    let frac = rng.random_range(6..=22);
    let rounding = if rng.random_bool(0.5) { BlockRounding::Truncate } else { BlockRounding::NearestEven };
    let slow = 16 * rng.random_range(4..=64);
    let spec = PresetSpec::custom("early", nfma, frac, 23, -133, CEntry::Early, Some(slow)).with_rounding(rounding);
    let preset = Preset::custom(spec).map_err(|e| e.to_string())?;
    let own = if rng.random_bool(0.5) { "interleaved" } else { "contiguous" };
    let width = 16usize << rng.random_range(0..=5);
    let order = ["serial", "pairwise", "reversed", "tree"][rng.random_range(0..4)];
    let fast = rng.random_bool(0.3);
    let restart = match (fast, rng.random_range(0..4)) {
        (true, _) => String::new(),
        (false, 0) => "/norestart".into(),
        (false, _) => format!("/restart{}", rng.random_range(1..=8)),
    };
    let name = format!("{own}{width}/{order}{restart}");
    let rule = SplitRule::parse(&name).ok_or(format!("{name} is not a rule"))?;
    let (s, k) = (rng.random_range(2..=8), 16 * rng.random_range(1..=160));
    let plan = Plan::new(&preset, k, fast, SplitK::new(s, Scheme::Rule(rule)).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    // Codes near one binade with zeros among them: sums carry up to the block's top and keep bits at its grid.
    let (m, n) = (2, 3);
    let mut code =
        |_| if rng.random_bool(0.1) { 0 } else { rng.random_range(0x30..=0x3F) | rng.random_range(0..2) << 7 };
    let a: Vec<u8> = (0..m * k).map(&mut code).collect();
    let b: Vec<u8> = (0..n * k).map(&mut code).collect();
    let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a: &a, b: &b, m, n, k };
    let want = execute(&preset, &plan, &ops, &ReferenceEngine).map_err(|e| e.to_string())?;
    let got = replay_plan(&preset, &plan, &ops).map_err(|e| e.to_string())?;
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    if bits(&want) != bits(&got) {
        return Err(format!("nfma {nfma} frac {frac} {rounding:?} slow {slow}, {name}, S {s} K {k}, fast {fast}"));
    }
    Ok(())
}

#[test]
fn the_fits_replay_is_the_models_plan_padding_included() {
    let failed: Vec<String> =
        (0..CASES).filter_map(|seed| case(seed).err().map(|e| format!("seed {seed}: {e}"))).collect();
    assert!(failed.is_empty(), "{} of {CASES} cases differ:\n{}", failed.len(), failed.join("\n"));
}
