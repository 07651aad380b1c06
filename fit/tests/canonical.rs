//! `space::canonical`, the equivalences `fit preset` reports as harmless, against the block step of the model
//! (docs/reference.md §2.2, §2.3): a candidate and its representative give the same block result on random blocks a
//! GEMM can make (finite FP8 codes of the pairs a recorder calls, subnormals included; c zero or a multiple of 2^−25,
//! as every value such a GEMM accumulates is), for random candidates of the whole space (seed printed); and the
//! frac classes of two-product blocks with a late c on every such block.

use mmaemu_fit::preset::pairs::{blocks as pair_blocks, Pair};
use mmaemu_fit::preset::space::{canonical, exact_terms, harmless_floor, FRAC, FRAC_OUT, NFMA};
use mmaemu_model::{BlockRounding, CEntry, Chain, Format, Preset, PresetSpec};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;

fn finite(f: Format) -> Vec<u8> {
    (0..=255u8).filter(|&c| !f.any_nonfinite(&[c])).collect()
}

/// A candidate of the space, its floor drawn at or below its harmless floor or anywhere up to 20.
fn candidate(r: &mut ChaCha8Rng) -> PresetSpec {
    let nfma = NFMA[r.random_range(0..NFMA.len())];
    let frac = r.random_range(FRAC);
    let (frac_out, rounding) = match r.random_range(0..4) {
        0 => (23, BlockRounding::NearestEven),
        _ => (r.random_range(FRAC_OUT), BlockRounding::Truncate),
    };
    let c_entry = if r.random_range(0..2) == 0 { CEntry::Early } else { CEntry::Late };
    let spec = PresetSpec::custom("x", nfma, frac, frac_out, 0, c_entry, None).with_rounding(rounding);
    let min_exp = match r.random_range(0..3) {
        0 => harmless_floor(&spec) - r.random_range(0..=2),
        1 => harmless_floor(&spec) - r.random_range(0..=120),
        _ => r.random_range(-40..=20),
    };
    PresetSpec { min_exp, ..spec }
}

/// An accumulator a GEMM can hold: zero, or up to 24 significant bits on a grid of 2^−25 or coarser (`tiny`: at most
/// 2^−10).
fn accumulator(r: &mut ChaCha8Rng, tiny: bool) -> f32 {
    if r.random_range(0..8) == 0 {
        return 0.0;
    }
    let bits = r.random_range(1..=if tiny { 15 } else { 24 });
    let m = r.random_range(1u32 << (bits - 1)..1u32 << bits) as f32;
    let sign = if r.random_range(0..2) == 0 { 1.0 } else { -1.0 };
    let grid = if tiny { -25 } else { r.random_range(-25..=30) };
    sign * m * (grid as f32).exp2()
}

/// A code among its 16 least magnitudes (subnormals first), of either sign.
fn tiny_code(r: &mut ChaCha8Rng) -> u8 {
    // Codes 1 to 16 are the least positive values of both formats; bit 7 is the sign.
    r.random_range(1..=16u8) | (r.random_range(0..2u8) << 7)
}

#[test]
fn a_candidate_and_its_representative_give_the_same_blocks() {
    let seed = 7u64;
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    let pairs = [(Format::E4m3, Format::E4m3), (Format::E4m3, Format::E5m2), (Format::E5m2, Format::E4m3)];
    let (mut moved, mut terms) = (0, 0);
    for _ in 0..3000 {
        let spec = candidate(&mut r);
        let rep = canonical(&spec);
        if rep.same_arithmetic(&spec) {
            continue;
        }
        moved += 1;
        terms += (exact_terms(&spec) && rep.frac != spec.frac) as usize;
        let (preset, rep_preset) = (Preset::custom(spec.clone()).unwrap(), Preset::custom(rep.clone()).unwrap());
        for (fa, fb) in pairs {
            let (ca, cb) = (finite(fa), finite(fb));
            let (x, y) = (Chain::new(&preset, fa, fb), Chain::new(&rep_preset, fa, fb));
            let n = (spec.nfma as usize).min(64);
            for _ in 0..40 {
                // Random codes, one large product among them (the widest block sums), or the least codes (the
                // lowest block exponents, where a floor shows).
                let tiny = r.random_range(0..3) == 0;
                let mut a: Vec<u8> = (0..n).map(|_| ca[r.random_range(0..ca.len())]).collect();
                let mut b: Vec<u8> = (0..n).map(|_| cb[r.random_range(0..cb.len())]).collect();
                if tiny {
                    a = (0..n).map(|_| tiny_code(&mut r)).collect();
                    b = (0..n).map(|_| tiny_code(&mut r)).collect();
                } else if r.random_range(0..2) == 0 {
                    a[r.random_range(0..n)] = fa.from_f32_saturating(448.0);
                }
                let c = accumulator(&mut r, tiny);
                assert_eq!(
                    x.block(&a, &b, c).to_bits(),
                    y.block(&a, &b, c).to_bits(),
                    "seed {seed}: {spec:?} against its representative {rep:?}, {fa:?} x {fb:?}, c {c}"
                );
            }
        }
    }
    // The draw reaches every equivalence: floors, block results and the term fraction of one-product blocks.
    assert!(moved > 1000 && terms > 20, "seed {seed}: {moved} moved, {terms} by their term fraction");
}

/// Blocks of each pair of formats a recorder calls: `pairs::blocks`, one per two-product block up to a common power
/// of two (the test below also draws blocks of any codes, apart from that enumeration).
type Blocks = Vec<(Format, Format, Vec<Pair>)>;

/// The fracs 1..=40 as classes of equal block results on every two-product block (late c: a block's result does not
/// depend on c, which is added to it afterwards), for one block result.
fn pair_classes(blocks: &Blocks, frac_out: u32, rounding: BlockRounding) -> Vec<Vec<u32>> {
    let mut classes: Vec<Vec<u32>> = vec![FRAC.collect()];
    for (fa, fb, blocks) in blocks {
        let (fa, fb) = (*fa, *fb);
        let chains: Vec<Chain> = FRAC
            .map(|frac| {
                let spec = PresetSpec::custom("x", 2, frac, frac_out, -126, CEntry::Late, None).with_rounding(rounding);
                Chain::new(&Preset::custom(spec).unwrap(), fa, fb)
            })
            .collect();
        for (a, b) in blocks {
            if classes.iter().all(|c| c.len() == 1) {
                return classes;
            }
            let bits: Vec<u32> = chains.iter().map(|ch| ch.block(a, b, 0.0).to_bits()).collect();
            let of = |frac: &u32| bits[*frac as usize - 1];
            // Split each class this block gives more than one result in.
            if classes.iter().any(|c| c.iter().any(|f| of(f) != of(&c[0]))) {
                classes = classes
                    .into_iter()
                    .flat_map(|class| {
                        let mut parts: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
                        for frac in class {
                            parts.entry(of(&frac)).or_default().push(frac);
                        }
                        parts.into_values()
                    })
                    .collect();
            }
        }
    }
    classes.sort();
    classes
}

#[test]
fn two_product_fracs_are_one_arithmetic_from_pair_nearest_frac_with_a_nearest_even_result_only() {
    use mmaemu_fit::preset::space::{frac_floor, PAIR_NEAREST_FRAC};
    let least = PAIR_NEAREST_FRAC;
    // e4m3 × e5m2 first: its exponent gaps reach furthest, where the highest fracs part (a shortcut only).
    let pairs = [(Format::E4m3, Format::E5m2), (Format::E5m2, Format::E4m3), (Format::E4m3, Format::E4m3)];
    let blocks: Blocks = pairs.into_iter().map(|(fa, fb)| (fa, fb, pair_blocks(fa, fb))).collect();
    let mut want: Vec<Vec<u32>> = (1..least).map(|f| vec![f]).collect();
    want.push((least..=*FRAC.end()).collect());
    assert_eq!(pair_classes(&blocks, 23, BlockRounding::NearestEven), want);
    for frac_out in FRAC_OUT {
        let classes = pair_classes(&blocks, frac_out, BlockRounding::Truncate);
        assert!(classes.iter().all(|c| c.len() == 1), "truncate/{frac_out}: {classes:?}");
    }
    // Apart from the enumeration: blocks of any two finite products of each pair, their exponents where they are.
    let mut r = ChaCha8Rng::seed_from_u64(34);
    for (fa, fb) in pairs {
        let (ca, cb) = (finite(fa), finite(fb));
        let chain = |frac| {
            let spec = PresetSpec::custom("x", 2, frac, 23, -126, CEntry::Late, None)
                .with_rounding(BlockRounding::NearestEven);
            Chain::new(&Preset::custom(spec).unwrap(), fa, fb)
        };
        let chains: Vec<Chain> = (least..=*FRAC.end()).map(chain).collect();
        for _ in 0..100_000 {
            let a = [ca[r.random_range(0..ca.len())], ca[r.random_range(0..ca.len())]];
            let b = [cb[r.random_range(0..cb.len())], cb[r.random_range(0..cb.len())]];
            let first = chains[0].block(&a, &b, 0.0).to_bits();
            assert!(chains.iter().all(|c| c.block(&a, &b, 0.0).to_bits() == first), "{fa:?} x {fb:?}: {a:?} {b:?}");
        }
    }
    // The representative follows the classes.
    for frac in FRAC {
        let spec =
            PresetSpec::custom("x", 2, frac, 23, -126, CEntry::Late, None).with_rounding(BlockRounding::NearestEven);
        assert_eq!(canonical(&spec).frac, frac.min(least), "frac {frac}");
        assert_eq!(frac_floor(&spec).is_some(), frac >= least);
    }
}

/// `space::one_chunk`: with a late c a slow chunk of one block computes as one chunk over all of K (the model's slow
/// accumulation, docs/reference.md §3.1, on random calls of random late-c presets), and how the rule reads sets.
#[test]
fn a_one_block_chunk_with_a_late_c_computes_as_one_chunk() {
    use mmaemu_datasets::inputs::{generate, DataClass, InputSpec, Operand, GENERATOR_V1};
    use mmaemu_fit::preset::space::{one_chunk, SLOW_CHUNK_REACH};
    use mmaemu_fit::preset::ChunkSet;
    use mmaemu_model::accumulate::{accumulate, Operands};
    use mmaemu_model::SplitK;
    let mut r = ChaCha8Rng::seed_from_u64(128);
    for i in 0..24u64 {
        let nfma = NFMA[r.random_range(0..NFMA.len())];
        let (frac_out, rounding) = match r.random_range(0..2) {
            0 => (23, BlockRounding::NearestEven),
            _ => (r.random_range(FRAC_OUT), BlockRounding::Truncate),
        };
        let frac = r.random_range(FRAC);
        let one_block =
            PresetSpec::custom("x", nfma, frac, frac_out, -126, CEntry::Late, Some(nfma)).with_rounding(rounding);
        let k = 16 * r.random_range(1..=40usize);
        let whole = PresetSpec { slow_chunk: Some(k as u32), ..one_block.clone() };
        let inputs =
            InputSpec { generator: GENERATOR_V1.into(), seed: 5, stream: i, data: DataClass::Split { scale: 1.0 } };
        let a = generate(&inputs, Operand::A, "e4m3", 8, k).unwrap();
        let b = generate(&inputs, Operand::B, "e4m3", 8, k).unwrap();
        let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a: &a, b: &b, m: 8, n: 8, k };
        let run = |s: &PresetSpec| accumulate(&Preset::custom(s.clone()).unwrap(), &ops, false, SplitK::NONE).unwrap();
        let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(run(&one_block)), bits(run(&whole)), "{one_block:?}, K = {k}");
    }
    let late = PresetSpec::custom("x", 256, 31, 9, -126, CEntry::Late, None);
    let early = PresetSpec { c_entry: CEntry::Early, ..late.clone() };
    let set = |values: Vec<u32>, from: Option<u32>| ChunkSet { values, from };
    assert!(one_chunk(&late, &set(vec![256], None)));
    assert!(one_chunk(&late, &set(vec![256], Some(SLOW_CHUNK_REACH + 1))));
    assert!(!one_chunk(&late, &set(vec![256], Some(SLOW_CHUNK_REACH))), "a reachable run of lengths");
    assert!(!one_chunk(&late, &set(vec![], Some(256))), "every length from one block on");
    assert!(!one_chunk(&late, &set(vec![512], None)), "two blocks");
    assert!(!one_chunk(&early, &set(vec![256], None)), "an early c re-aligns at each chunk");
    assert!(!one_chunk(&late, &set(vec![], None)), "no length");
}
