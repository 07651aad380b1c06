//! Every preset a fit can return runs on the CPU backend's kernels, bit-identical to the model: random presets drawn
//! across the whole space of docs/preset-format.md (any nfma, frac 1..=40, frac_out 1..=23, truncation or nearest
//! even, early or late c, any min_exp, any slow chunk, e8m0 block scales per nfma), random shapes, fast and slow,
//! unsplit and split by random rules (any tile width, ownership, order and restart).

// `MMAEMU_KERNEL_CASES` scales the number of cases (default 10,000 here means 1,500, and 500 of few rows of wide
// presets); `MMAEMU_KERNEL_SEED` sets the seed, which every failure prints with its case so that it reruns alone.

use mmaemu_kernels::kernel::Params;
use mmaemu_kernels::tiling::Tiling;
use mmaemu_kernels::{CpuEngine, SimdLevel};
use mmaemu_model::plan::{Scheme, SplitK};
use mmaemu_model::preset::{BlockRounding, CEntry, PresetSpec};
use mmaemu_model::rule::{Layout, Order, Ownership, Restart, SplitRule};
use mmaemu_model::{execute, ChainEngine, Format, Operands, Plan, Preset, ReferenceEngine};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Whether a block sum of the preset fits the f64 lanes: nfma terms below 2^(frac + 2) and c below 2^(frac + 1)
/// (kernels/tests/paths.rs works the bound out).
fn within_f64(nfma: u32, frac: u32) -> bool {
    (nfma as u128) * ((1u128 << (frac + 2)) - 1) + (1u128 << (frac + 1)) <= 1 << 53
}

/// A random preset of the fit's space.
fn preset(rng: &mut ChaCha8Rng) -> Preset {
    let nfma = match rng.random_range(0..=9) {
        0 => rng.random_range(1..=4),
        1 => [16, 32, 64, 128, 256][rng.random_range(0..5)],
        2 => rng.random_range(129..=2047),
        _ => rng.random_range(1..=128),
    };
    let frac = if rng.random_ratio(1, 4) { 40 } else { rng.random_range(1..=40) };
    let nearest = rng.random_ratio(1, 3);
    let frac_out = if nearest { 23 } else { rng.random_range(1..=23) };
    let min_exp = match rng.random_range(0..=5) {
        0 => -1000,
        1 => 1000,
        2 => rng.random_range(-1000..=1000),
        _ => rng.random_range(-60..=30),
    };
    let c_entry = if rng.random_ratio(1, 2) { CEntry::Late } else { CEntry::Early };
    let slow = rng.random_ratio(3, 4).then(|| match rng.random_range(0..=3) {
        0 => [128, 192, 256, 512][rng.random_range(0..4)],
        _ => rng.random_range(1..=600),
    });
    let rounding = if nearest { BlockRounding::NearestEven } else { BlockRounding::Truncate };
    let scale_block = rng.random_ratio(1, 4).then_some(nfma);
    let spec = PresetSpec::custom("drawn", nfma, frac, frac_out, min_exp, c_entry, slow)
        .with_rounding(rounding)
        .with_scale_block(scale_block);
    Preset::custom(spec).expect("a valid preset")
}

/// A random split: none, a documented scheme, or a rule of any width, ownership, order and restart.
fn split(rng: &mut ChaCha8Rng) -> Option<SplitK> {
    let s = rng.random_range(2..=8);
    let scheme = match rng.random_range(0..=3) {
        0 => return Some(SplitK::NONE),
        1 => [Scheme::Serial, Scheme::Pairwise, Scheme::Contiguous][rng.random_range(0..3)],
        _ => {
            let ownership = if rng.random_ratio(1, 2) { Ownership::Interleaved } else { Ownership::Contiguous };
            let width = [16, 32, 64, 128, 512][rng.random_range(0..5)];
            let restart = match rng.random_range(0..=3) {
                0 => None,
                1 => Some(Restart::Elements(rng.random_range(1..=4) * 64)),
                _ => Some(Restart::Tiles(rng.random_range(1..=8))),
            };
            let order = Order::ALL[rng.random_range(0..Order::ALL.len())];
            Scheme::Rule(SplitRule { layout: Layout { ownership, width, restart }, order })
        }
    };
    SplitK::new(s, scheme).ok()
}

fn bits(x: f32) -> u32 {
    if x.is_nan() {
        0x7FFF_FFFF
    } else {
        x.to_bits()
    }
}

/// The shapes a case draws: across the space, or few rows (M in 1..=16, any N and K) of a wide-path preset, the
/// wide product-lane tiling's domain, or panels of a wide-path preset of small blocks (the i32 and single-product
/// panel steps' domain, `mmaemu_kernels::small`).
#[derive(Clone, Copy, PartialEq)]
enum Shapes {
    Any,
    FewRowsWide,
    SmallBlocks,
}

/// A random preset of small blocks on the wide path: 1 product (a quarter of them), 2 to 16 or 17 to 256, frac up to
/// 29, early or late c, either rounding, any min_exp.
fn small_preset(rng: &mut ChaCha8Rng) -> Preset {
    loop {
        // One product, up to 16, or up to 256 (the i32 step in groups of products: `Params::int32_group`).
        let nfma = match rng.random_range(0..4) {
            0 => 1,
            1 => rng.random_range(17..=256),
            _ => rng.random_range(1..=16),
        };
        let frac = rng.random_range(1..=29);
        let nearest = rng.random_ratio(1, 2);
        let frac_out = if nearest { 23 } else { rng.random_range(1..=23) };
        let min_exp = if rng.random_ratio(1, 6) { rng.random_range(-1000..=1000) } else { rng.random_range(-60..=30) };
        let c_entry = if rng.random_ratio(2, 3) { CEntry::Late } else { CEntry::Early };
        let slow = rng.random_ratio(1, 2).then(|| rng.random_range(1..=300));
        let rounding = if nearest { BlockRounding::NearestEven } else { BlockRounding::Truncate };
        let spec = PresetSpec::custom("small", nfma, frac, frac_out, min_exp, c_entry, slow).with_rounding(rounding);
        let p = Preset::custom(spec).expect("a valid preset");
        if CpuEngine::path_name(&p) == "wide" {
            return p;
        }
    }
}

/// One random GEMM through every engine and the model; Err describes the first difference with its seed.
fn case(index: u64, seed: u64, engines: &[CpuEngine], shapes: Shapes) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let preset = loop {
        let p = if shapes == Shapes::SmallBlocks { small_preset(&mut rng) } else { preset(&mut rng) };
        if shapes == Shapes::Any || CpuEngine::path_name(&p) == "wide" {
            break p;
        }
    };
    let spec = preset.spec();
    // The kernels serve every preset whose block sum fits the f64 lanes; beyond (nfma * 2^(frac + 2) > 2^53) the
    // model's chain runs.
    let path = CpuEngine::path_name(&preset);
    if within_f64(spec.nfma, spec.frac) == (path == "scalar") {
        return Err(format!("seed {seed} case {index}: preset {spec:?} runs on the {path} path"));
    }
    let (fa, fb) = (Format::ALL[rng.random_range(0..=1)], Format::ALL[rng.random_range(0..=1)]);
    let (m, n, k) = match index % 10 {
        _ if shapes == Shapes::FewRowsWide => {
            (rng.random_range(1..=16), rng.random_range(1..=160), rng.random_range(1..=2500))
        }
        _ if shapes == Shapes::SmallBlocks => {
            (rng.random_range(17..=80), rng.random_range(1..=140), rng.random_range(1..=400))
        }
        0 => (rng.random_range(1..=4), rng.random_range(1..=130), rng.random_range(1..=3000)),
        1 => (rng.random_range(30..=70), rng.random_range(30..=70), rng.random_range(1..=700)),
        _ => (rng.random_range(1..=12), rng.random_range(1..=40), rng.random_range(1..=600)),
    };
    let fast = preset.slow_chunk().is_none() || rng.random_ratio(1, 2);
    let Some(split) = split(&mut rng) else { return Ok(()) };
    let Ok(plan) = Plan::new(&preset, k, fast, split) else { return Ok(()) };
    let code = |rng: &mut ChaCha8Rng, f: Format| loop {
        // Mostly one band (carries, ties, cancellation), else any finite code.
        let c = if rng.random_ratio(1, 2) { 0x30 + rng.random_range(0..=31u8) } else { rng.random::<u8>() };
        let c = c | if rng.random_ratio(1, 2) { 0x80 } else { 0 };
        if !f.is_nonfinite(c) {
            return c;
        }
    };
    let a: Vec<u8> = (0..m * k).map(|_| code(&mut rng, fa)).collect();
    let b: Vec<u8> = (0..n * k).map(|_| code(&mut rng, fb)).collect();
    let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
    let tiling = CpuEngine::new().choice(&preset, &ops).tiling;
    // On the AVX-512 level few rows of f64 blocks run on product lanes: where its wide panel step serves (room for
    // the bias), one row for blocks of 64 products and two for longer ones; elsewhere, for blocks of 16 or more, one
    // row per 32 products of a block, at least one and at most 4. On the other levels they stay on panels, as the i32
    // step does everywhere (`tiling::WIDE_PRODUCT_BLOCK`).
    let step = CpuEngine::step_name(&preset);
    let (nfma, avx512) = (spec.nfma as usize, SimdLevel::detect().name() == "avx512");
    let rows = match Params::new(&preset).biased64 {
        true => (nfma / 64).min(2),
        false if nfma >= 16 => (nfma / 32).clamp(1, 4),
        false => 0,
    };
    let want_tiling = match step {
        "f64" if !avx512 => Some(Tiling::Panels),
        "f64" if m <= rows => Some(Tiling::Products),
        "f64" if m <= n => Some(Tiling::Panels),
        "i32" => Some(Tiling::Panels),
        _ => None,
    };
    if shapes == Shapes::FewRowsWide && want_tiling.is_some_and(|t| t != tiling) {
        return Err(format!(
            "seed {seed} case {index}: [{m}, {n}, {k}] of {spec:?} ({step}) runs on {}",
            tiling.name()
        ));
    }
    let want = execute(&preset, &plan, &ops, &ReferenceEngine).map_err(|e| e.to_string())?;
    for engine in engines {
        let got = execute(&preset, &plan, &ops, engine).map_err(|e| e.to_string())?;
        if let Some(i) = (0..want.len()).find(|&i| bits(want[i]) != bits(got[i])) {
            return Err(format!(
                "seed {seed} case {index}: {} preset {spec:?} ({path}) {fa} x {fb} fast {fast} split {} [{m}, {n}, {k}]: \
                 output ({}, {}) = {:#010x}, model {:#010x}",
                engine.name(),
                plan.split(),
                i / n,
                i % n,
                bits(got[i]),
                bits(want[i])
            ));
        }
    }
    Ok(())
}

/// Runs `cases` random GEMMs of a family through every engine and tiling against the model, printing the seed;
/// panics with the first differences. Returns the seed.
fn run_family(cases: u64, shapes: Shapes, what: &str) -> u64 {
    let seed = env_u64("MMAEMU_KERNEL_SEED", 0x5EED_0042);
    let engines: Vec<CpuEngine> =
        SimdLevel::available(None).into_iter().flat_map(|l| CpuEngine::with_level(l).with_every_tiling()).collect();
    let names: Vec<String> = engines.iter().map(|e| e.name()).collect();
    eprintln!("{cases} {what} (seed {seed}) through {}", names.join(", "));
    let failures: Vec<String> =
        (0..cases).into_par_iter().filter_map(|i| case(i, seed, &engines, shapes).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ (rerun with MMAEMU_KERNEL_SEED={seed}); first:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
    seed
}

#[test]
fn every_preset_of_the_fit_space_runs_on_the_kernels_as_the_model() {
    run_family(env_u64("MMAEMU_KERNEL_CASES", 10_000) * 3 / 20, Shapes::Any, "random presets");
}

/// Few rows of a wide-path preset (late c, or block sums past 2^24: nearest even, frac up to 40, any nfma) run on the
/// wide product-lane tiling where the tiling rule says (`tiling::WIDE_PRODUCT_BLOCK`; the engines of a fixed
/// product-lane tiling run it for any block) and on panels elsewhere, and every engine and tiling gives the model's
/// bits: M in 1..=16, any N and K, fast and slow, split by random rules.
#[test]
fn few_rows_of_wide_presets_run_on_product_lanes_as_the_model() {
    run_family(
        env_u64("MMAEMU_KERNEL_CASES", 10_000) / 20,
        Shapes::FewRowsWide,
        "few-row GEMMs of random wide presets",
    );
}

/// Panels of wide-path presets of small blocks run on the i32 and single-product panel steps (frac up to 29, a block's
/// sum below 2^31 or its groups' sums), and every engine and tiling gives the model's bits: random presets of 1 to 16
/// products per block and of 17 to 256, M in 17..=80, any N and K up to 400, fast and slow, split by random rules.
#[test]
fn small_blocks_of_wide_presets_run_on_the_i32_and_single_product_steps_as_the_model() {
    let seed = run_family(
        env_u64("MMAEMU_KERNEL_CASES", 10_000) / 25,
        Shapes::SmallBlocks,
        "GEMMs of random wide presets of small blocks",
    );
    // The draw reaches both steps, and the i32 step in one group and in several.
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let drawn: Vec<Params> = (0..200).map(|_| Params::new(&small_preset(&mut rng))).collect();
    assert!(drawn.iter().any(|p| p.single));
    assert!(drawn.iter().any(|p| p.int32 && p.int32_group >= p.nfma));
    assert!(drawn.iter().any(|p| p.int32 && p.int32_group < p.nfma));
}

/// Nearest-even presets run on the kernels: f32 lanes where the block sum stays below 2^24 (it is then exact, and
/// both roundings keep it), f64 lanes beyond and for late c.
#[test]
fn nearest_even_presets_take_the_lanes() {
    let path = |nfma, frac, c_entry| {
        let spec = PresetSpec::custom("nearest", nfma, frac, 23, -60, c_entry, Some(256))
            .with_rounding(BlockRounding::NearestEven);
        CpuEngine::path_name(&Preset::custom(spec).expect("a valid preset"))
    };
    assert_eq!(path(32, 13, CEntry::Early), "narrow");
    assert_eq!(path(16, 24, CEntry::Late), "wide");
    assert_eq!(path(128, 40, CEntry::Early), "wide");
    assert_eq!(path(2047, 40, CEntry::Late), "wide");
}

/// Blocks with no nonzero product, under a floor far below or far above every product (min_exp -1000, frac - 128 and
/// 1000), give the model's bits on every engine and tiling: there the block exponent leaves the scales' normal range
/// (the clamps of `kernel.rs`, and `x86::SCALE_EXPONENTS` of the AVX-512 i64 step's f32 scale, whose exponent
/// frac - E is then 128 and past), and every term must still be 0. Rows of A and of B that are zeros, wholly or in
/// their first blocks, against rows of mixed codes; early and late c, both roundings, frac 1 to 40, blocks of 1 to
/// 64 products; fast and slow.
#[test]
fn zero_blocks_under_far_floors_run_as_the_model() {
    let engines: Vec<CpuEngine> =
        SimdLevel::available(None).into_iter().flat_map(|l| CpuEngine::with_level(l).with_every_tiling()).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(48);
    let mut ran = 0;
    for (nfma, frac) in [(16, 40), (16, 1), (17, 25), (32, 40), (64, 33), (1, 40), (7, 40)] {
        for min_exp in [-1000, frac as i32 - 128, 1000] {
            for c_entry in [CEntry::Early, CEntry::Late] {
                for rounding in [BlockRounding::Truncate, BlockRounding::NearestEven] {
                    let frac_out = if rounding == BlockRounding::NearestEven { 23 } else { 9 };
                    let spec = PresetSpec::custom("zeros", nfma, frac, frac_out, min_exp, c_entry, Some(64))
                        .with_rounding(rounding);
                    let preset = Preset::custom(spec.clone()).expect("a valid preset");
                    let (m, n, k) = (4, 19, 3 * nfma as usize + 5);
                    // Row r of each operand: zeros in its first r blocks, then mixed codes; the last row all zeros.
                    let row = |rng: &mut ChaCha8Rng, r: usize, rows: usize| -> Vec<u8> {
                        (0..k)
                            .map(|q| {
                                let zero = r + 1 == rows || q < r * nfma as usize;
                                if zero {
                                    [0x00, 0x80][rng.random_range(0..2)]
                                } else {
                                    (0x20 + rng.random_range(0..=40u8)) | [0, 0x80][rng.random_range(0..2)]
                                }
                            })
                            .collect()
                    };
                    let a: Vec<u8> = (0..m).flat_map(|r| row(&mut rng, r, m)).collect();
                    let b: Vec<u8> = (0..n).flat_map(|r| row(&mut rng, r % 5, 5)).collect();
                    let ops = Operands { fa: Format::E4m3, fb: Format::E5m2, a: &a, b: &b, m, n, k };
                    unsplit_as_the_model(&preset, &ops, &engines, &format!("{spec:?}"));
                    ran += 1;
                }
            }
        }
    }
    assert_eq!(ran, 7 * 3 * 2 * 2);
}

/// Few rows of wide presets with blocks of 16 products (the f64 step: frac 29 to 40) give the model's bits on every
/// engine and tiling, where the AVX-512 eight-chain step takes the block maxima four blocks to a vector: K from one
/// block to past two pieces of the product-lane tiling, whole groups of four blocks and not; zeros, one band and any
/// finite code; early and late c, both roundings, every format pair, fast and slow.
#[test]
fn blocks_of_16_run_as_the_model() {
    let engines: Vec<CpuEngine> =
        SimdLevel::available(None).into_iter().flat_map(|l| CpuEngine::with_level(l).with_every_tiling()).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(1616);
    for case in 0..48 {
        let frac = rng.random_range(29..=40);
        let c_entry = if case % 2 == 0 { CEntry::Early } else { CEntry::Late };
        let rounding = if case % 4 < 2 { BlockRounding::Truncate } else { BlockRounding::NearestEven };
        let frac_out = if rounding == BlockRounding::NearestEven { 23 } else { rng.random_range(1..=23) };
        let min_exp = rng.random_range(-60..=20);
        let spec =
            PresetSpec::custom("sixteen", 16, frac, frac_out, min_exp, c_entry, Some(256)).with_rounding(rounding);
        let preset = Preset::custom(spec.clone()).expect("a valid preset");
        let k = [16, 48, 64, 80, 512, 528, 1100, 1600][case % 8];
        let (m, n) = (rng.random_range(1..=4), rng.random_range(1..=40));
        let (fa, fb) = (Format::ALL[rng.random_range(0..=1)], Format::ALL[rng.random_range(0..=1)]);
        let code = |rng: &mut ChaCha8Rng, f: Format| loop {
            let c = match rng.random_range(0..4) {
                0 => 0,
                1 => 0x30 + rng.random_range(0..=31u8),
                _ => rng.random::<u8>(),
            } | if rng.random_ratio(1, 2) { 0x80 } else { 0 };
            if !f.is_nonfinite(c) {
                return c;
            }
        };
        let a: Vec<u8> = (0..m * k).map(|_| code(&mut rng, fa)).collect();
        let b: Vec<u8> = (0..n * k).map(|_| code(&mut rng, fb)).collect();
        let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
        unsplit_as_the_model(&preset, &ops, &engines, &format!("case {case}: {spec:?} {fa} x {fb} [{m}, {n}, {k}]"));
    }
}

/// Panics unless every engine gives the model's bits for the preset and operands, fast and slow, unsplit (`what`
/// names the case).
fn unsplit_as_the_model(preset: &Preset, ops: &Operands, engines: &[CpuEngine], what: &str) {
    for fast in [true, false] {
        let plan = Plan::new(preset, ops.k, fast, SplitK::NONE).expect("an unsplit plan");
        let want = execute(preset, &plan, ops, &ReferenceEngine).expect("the model");
        for engine in engines {
            let got = execute(preset, &plan, ops, engine).expect("the kernels");
            let differ = (0..want.len()).find(|&i| bits(want[i]) != bits(got[i]));
            assert!(differ.is_none(), "{} {what} fast {fast}: output {differ:?} differs from the model", engine.name());
        }
    }
}
