//! `mmaemu fit preset` on evidence the code under test did not make: the shipped hardware recordings (with the preset
//! column withheld: set to `unknown`) and chains that MMA-Sim computed (datasets/oracle/mmasim-chains.bin).

use mmaemu_datasets::{read_recording, Expectation, Op, OutSelect, Row, Truth, UNKNOWN_PRESET};
use mmaemu_fit::preset::{experiments, fit, Verdict};
use std::path::PathBuf;
use std::time::Instant;

fn recording(name: &str) -> (PathBuf, Vec<Row>) {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/recordings")).join(name);
    let mut rows = read_recording(&path).unwrap().rows;
    for r in &mut rows {
        r.preset = UNKNOWN_PRESET.to_string();
    }
    (path, rows)
}

/// Fit one shipped file with its preset withheld; the right built-in preset must survive.
fn recovers(file: &str, preset: &str) {
    let t = Instant::now();
    let f = fit(&[recording(file)]);
    let secs = t.elapsed().as_secs_f64();
    println!("{file}: {} in {secs:.1} s; open {:?}", f.verdict.name(), f.open());
    assert!(secs < 60.0, "{file}: {secs:.1} s");
    assert_ne!(f.verdict, Verdict::None, "{file}: unexplained {:?}", f.unexplained);
    assert!(f.builtin_survivors().contains(&preset.to_string()), "{file}: {:?}", f.builtin_survivors());
    assert!(f.rows.iter().map(|r| r.chains).sum::<usize>() > 0);
    if f.verdict == Verdict::Ambiguous {
        assert!(!f.open().is_empty());
    }
}

#[test]
fn recovers_ada_from_the_ada_recordings() {
    recovers("toolbox-ada.parquet", "ada");
    recovers("toolbox-l40s.parquet", "ada");
    recovers("rtx4060-mma.parquet", "ada");
}

#[test]
fn recovers_hopper_from_the_hopper_recordings() {
    // c = 0 and K = 32 everywhere: one block, so neither the entry of c nor a block of 64 can be told apart.
    for file in ["toolbox-h100.parquet", "toolbox-h200.parquet"] {
        recovers(file, "hopper");
        let f = fit(&[recording(file)]);
        let open = f.open();
        assert!(open.contains(&"c_entry") && open.contains(&"nfma"), "{file}: {open:?}");
        // Calls that tell the survivors apart, designed in seconds (the chain search it replaces took minutes).
        let t = Instant::now();
        let calls = experiments(&f, 8);
        assert!(t.elapsed().as_secs() < 30, "{:?}", t.elapsed());
        assert!(!calls.is_empty() && calls.iter().all(|c| c.problem.m == 16 && c.problem.n == 16), "{calls:?}");
    }
}

#[test]
fn recovers_b200_mma_sync_from_the_b200_recordings() {
    recovers("toolbox-b200.parquet", "b200_mma_sync");
}

#[test]
fn a_row_no_candidate_explains_gives_none() {
    let (path, mut rows) = recording("toolbox-ada.parquet");
    rows.truncate(1);
    if let Expectation::Bits(bits) = &mut rows[0].expected {
        bits[1] ^= 0x40; // one output's fraction off by far more than any rounding
    }
    let f = fit(&[(path, rows.clone())]);
    assert_eq!(f.verdict, Verdict::None);
    assert_eq!(f.unexplained, vec![rows[0].id.clone()]);
}

/// No fittable chain (no rows, or only rows of K = 0): nothing survives a test, so the fit answers at once with no
/// survivor instead of searching the whole space for a discriminator among every candidate.
#[test]
fn no_fittable_row_answers_at_once() {
    let (path, mut rows) = recording("toolbox-ada.parquet");
    rows.truncate(1);
    let mut empty = rows[0].clone();
    empty.k = 0;
    empty.a.clear();
    empty.b.clear();
    for input in [vec![], vec![empty]] {
        let t = Instant::now();
        let f = fit(&[(path.clone(), input)]);
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        assert_eq!((f.verdict, f.survivors.len()), (Verdict::None, 0));
        assert!(f.winner("x").is_none());
    }
}

/// MMA-Sim's chains (datasets/oracle/mmasim-chains.bin) of one of its models as `mma` rows of one chain each.
fn mmasim_rows(model: &str) -> Vec<Row> {
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/oracle/mmasim-chains.bin")).unwrap();
    let mut at = 8usize;
    let mut take = |n: usize| {
        at += n;
        &bytes[at - n..at]
    };
    let count = take(1)[0];
    let mut names = Vec::new();
    for _ in 0..count {
        let len = take(1)[0] as usize;
        names.push(String::from_utf8(take(len).to_vec()).unwrap());
    }
    let m = names.iter().position(|n| n == model).unwrap();
    let n = u32::from_le_bytes(take(4).try_into().unwrap()) as usize;
    let mut rows = Vec::new();
    for i in 0..n {
        let h = take(8).to_vec();
        let k = u16::from_le_bytes([h[2], h[3]]) as usize;
        let (a, b) = (take(k).to_vec(), take(k).to_vec());
        take(2 * k.div_ceil(32));
        let res = take(4 * names.len()).to_vec();
        let fmt = |f: u8| if f == 0 { "e4m3" } else { "e5m2" }.to_string();
        let (fa, fb) = (fmt(h[0]), fmt(h[1]));
        rows.push(Row {
            id: format!("mmasim-{i}"),
            op: Op::Mma,
            preset: UNKNOWN_PRESET.into(),
            profile: None,
            gpu: model.into(),
            truth: Truth::Hardware,
            fmt_a: fa,
            fmt_b: fb,
            batch: 1,
            m: 1,
            n: 1,
            k: k as i64,
            a,
            b,
            c: Some(h[4..8].to_vec()),
            scale_a: None,
            scale_b: None,
            scale_result: None,
            out_dtype: None,
            fast_accum: None,
            split_s: None,
            split_scheme: None,
            algo: None,
            call: None,
            out_select: OutSelect::Full,
            expected: Expectation::Bits(res[4 * m..4 * m + 4].to_vec()),
            scope: None,
            origin: "MMA-Sim".into(),
            ext: Default::default(),
        });
    }
    rows
}

#[test]
fn recovers_the_mmasim_models_from_their_chains() {
    for (model, preset) in
        [("ada", "ada"), ("hopper", "hopper"), ("b200_tcgen05", "b200_tcgen05"), ("rtx50_mma_sync", "rtx50_mma_sync")]
    {
        let f = fit(&[(PathBuf::from("mmasim"), mmasim_rows(model))]);
        println!("{model}: {} {:?}", f.verdict.name(), f.open());
        assert!(f.builtin_survivors().iter().any(|p| p == preset), "{model}: {:?}", f.builtin_survivors());
        // Long chains with every kind of c leave only parameters no FP8 chain can show.
        let open = f.open();
        assert!(!open.contains(&"nfma") && !open.contains(&"c_entry"), "{model}: {open:?}");
        assert!(!open.contains(&"frac"), "{model}: {open:?}");
    }
}

/// `space::exact_frac_out` from the block step (docs/reference.md §2.2, §2.3): at that frac_out and above, every
/// truncation and nearest even give the same block result, on the widest block sums FP8 can make (every product
/// 1.875 · 2^7 squared, an early c just below 2^(E + 1); all products but one that, the last one random) and on random
/// blocks of random finite codes (seed printed).
#[test]
fn exact_block_results_are_exact_on_the_widest_block_sums() {
    use mmaemu_fit::preset::space::{exact_frac_out, NFMA};
    use mmaemu_model::{BlockRounding, CEntry, Chain, Format, Preset, PresetSpec};
    use rand::{RngExt, SeedableRng};
    let seed = 42u64;
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
    let finite: Vec<u8> = (0..=255u8).filter(|&c| !Format::E4m3.any_nonfinite(&[c])).collect();
    for nfma in NFMA {
        for c_entry in [CEntry::Early, CEntry::Late] {
            for frac in 1..=40u32 {
                let exact = exact_frac_out(nfma, frac, c_entry);
                if exact > 23 {
                    continue;
                }
                let chain = |frac_out: u32, rounding: BlockRounding| {
                    let spec =
                        PresetSpec::custom("x", nfma, frac, frac_out, -133, c_entry, None).with_rounding(rounding);
                    Chain::new(&Preset::custom(spec).unwrap(), Format::E4m3, Format::E4m3)
                };
                let chains = [chain(exact, BlockRounding::Truncate), chain(23, BlockRounding::NearestEven)];
                let n = nfma as usize;
                let mut blocks = vec![(vec![0x77u8; n], vec![0x77u8; n], f32::from_bits(32768f32.to_bits() - 1))];
                for _ in 0..20 {
                    // The widest late sums: every product but one the largest, the last one anywhere below.
                    let mut a = vec![0x77u8; n];
                    let mut b = vec![0x77u8; n];
                    a[n - 1] = finite[rng.random_range(0..finite.len())];
                    b[n - 1] = finite[rng.random_range(0..finite.len())];
                    blocks.push((a, b, 0.0));
                    let a = (0..n).map(|_| finite[rng.random_range(0..finite.len())]).collect();
                    let b = (0..n).map(|_| finite[rng.random_range(0..finite.len())]).collect();
                    blocks.push((a, b, rng.random_range(-4.0e4f32..4.0e4)));
                }
                for (a, b, c) in &blocks {
                    let [t, ne] = chains.each_ref().map(|ch| ch.block(a, b, *c).to_bits());
                    assert_eq!(
                        t, ne,
                        "seed {seed}: nfma {nfma} frac {frac} {c_entry:?}: truncate/{exact} vs nearest_even"
                    );
                }
            }
        }
    }
}
