//! The block-scaled GEMMs on the CPU backend are the model's, bit for bit, on seeded random shapes, codes and scales:
//! MXFP8 (`mx_gemm_on`: the e8m0 block-scaled chains, b200_tcgen05 and drawn presets with block scales, scales from
//! near 1 to the extremes and the NaN scale, now and then a non-finite code) and block-wise 1x128 / 128x128
//! (`blockwise_gemm_on`: the preset's chain per 128 of K, scaled and added in fp32, built-in and drawn presets, scales
//! from near 1 to NaN, infinities and the ends of fp32, K of any length) and NVFP4 (`nvfp4_gemm_on`: the group-scaled
//! chains), at every SIMD level and tiling.

// `MMAEMU_KERNEL_SEED` sets the seed, which every failure prints with its case so that it reruns alone.

use mmaemu_kernels::{CpuEngine, SimdLevel};
use mmaemu_model::block_gemm::{
    blockwise_chains_by_blocks, blockwise_gemm, blockwise_gemm_on, mx_gemm, mx_gemm_on, nvfp4_gemm, nvfp4_gemm_on,
    BlockShape, Dims,
};
use mmaemu_model::blocked_layout::to_blocked;
use mmaemu_model::preset::{BlockRounding, CEntry, PresetSpec, ScaleFormat};
use mmaemu_model::{Format, Preset};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn seed() -> u64 {
    std::env::var("MMAEMU_KERNEL_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5CA1_ED00)
}

fn engines() -> Vec<CpuEngine> {
    SimdLevel::available(None).into_iter().map(CpuEngine::with_level).collect()
}

/// Codes of a format, finite, or with a non-finite code now and then when `nonfinite`.
fn codes(rng: &mut ChaCha8Rng, n: usize, f: Format, nonfinite: bool) -> Vec<u8> {
    (0..n)
        .map(|_| loop {
            let c: u8 = rng.random();
            if nonfinite && rng.random_ratio(1, 500) || !f.is_nonfinite(c) {
                return c;
            }
        })
        .collect()
}

/// `mx_gemm_on` on every engine is the model's `mx_gemm`, bit for bit; `what` names the case in a failure.
fn mx_is_the_model(
    engines: &[CpuEngine],
    preset: &Preset,
    (fa, fb): (Format, Format),
    (a, b): (&[u8], &[u8]),
    d: Dims,
    (sa, sb): (&[u8], &[u8]),
    what: &str,
) {
    let want = mx_gemm(preset, fa, fb, a, b, d, sa, sb).unwrap();
    for e in engines {
        let got = mx_gemm_on(e, preset, fa, fb, a, b, d, sa, sb).unwrap();
        let diff = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
        assert_eq!(diff.map(|o| (o / d.n, o % d.n)), None, "{what} on {}", mmaemu_model::ChainEngine::name(e));
    }
}

/// A preset with e8m0 block scales: b200_tcgen05, or one drawn (any block, frac, frac_out, min_exp, rounding,
/// early or late c).
fn mx_preset(rng: &mut ChaCha8Rng) -> Preset {
    if rng.random_ratio(1, 2) {
        return Preset::b200_tcgen05();
    }
    let nfma = [8, 16, 32, 64][rng.random_range(0..4)];
    let frac = rng.random_range(5..=40);
    let nearest = rng.random_ratio(1, 3);
    let frac_out = if nearest { 23 } else { rng.random_range(1..=23) };
    let min_exp = [-1000, -200, -133, -60, 0][rng.random_range(0..5)];
    let c = if rng.random_ratio(1, 4) { CEntry::Late } else { CEntry::Early };
    let rounding = if nearest { BlockRounding::NearestEven } else { BlockRounding::Truncate };
    let spec = PresetSpec::custom("drawn-mx", nfma, frac, frac_out, min_exp, c, None)
        .with_rounding(rounding)
        .with_scale_block(Some(nfma));
    Preset::custom(spec).expect("a valid preset")
}

/// One code of `codes` (of format `f`) replaced by a non-finite one; returns where.
fn plant_nonfinite(rng: &mut ChaCha8Rng, codes: &mut [u8], f: Format) -> usize {
    let at = rng.random_range(0..codes.len());
    codes[at] = loop {
        let c: u8 = rng.random();
        if f.is_nonfinite(c) {
            break c;
        }
    };
    at
}

/// e8m0 scale codes: near 1, anywhere, or at the ends (with the NaN code now and then).
fn e8m0(rng: &mut ChaCha8Rng, n: usize, spread: u32) -> Vec<u8> {
    (0..n)
        .map(|_| match spread {
            0 => rng.random_range(118..=136),
            1 => rng.random_range(0..=254),
            _ => [0, 1, 2, 60, 127, 190, 253, 254, 255][rng.random_range(0..9)],
        })
        .collect()
}

#[test]
fn mx_gemm_on_the_cpu_backend_is_the_model() {
    let seed = seed();
    let engines = engines();
    for case in 0..60u64 {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ case);
        let preset = mx_preset(rng);
        let block = preset.scale_block().unwrap_or(32);
        let d = Dims { m: rng.random_range(1..=20), n: rng.random_range(1..=30), k: rng.random_range(1..=300) };
        let formats = [Format::E4m3, Format::E5m2];
        let (fa, fb) = (formats[rng.random_range(0..2)], formats[rng.random_range(0..2)]);
        let nonfinite = rng.random_ratio(1, 6);
        let (a, b) = (codes(rng, d.m * d.k, fa, nonfinite), codes(rng, d.n * d.k, fb, nonfinite));
        let (spread, nb) = (rng.random_range(0..=2), d.k.div_ceil(block));
        let sa = to_blocked(&e8m0(rng, d.m * nb, spread), d.m, nb, 127).unwrap();
        let sb = to_blocked(&e8m0(rng, d.n * nb, spread), d.n, nb, 127).unwrap();
        let what = format!("seed {seed} case {case}: on {preset:?} {fa} x {fb} {d:?} spread {spread}");
        mx_is_the_model(&engines, &preset, (fa, fb), (&a, &b), d, (&sa, &sb), &what);
    }
}

/// A preset with e8m0 block scales whose min_exp may lie above every nonzero accumulator's exponent (-126), where the
/// zero-product rule decides the block exponent with c nonzero too (early c), or wherever a product is zero (late c).
fn high_floor_mx_preset(rng: &mut ChaCha8Rng) -> Preset {
    let nfma = [16, 32][rng.random_range(0..2)];
    let (frac, min_exp) = (rng.random_range(20..=40), [-133, -100, -60, -20, 0, 20][rng.random_range(0..6)]);
    let c = if rng.random_ratio(1, 2) { CEntry::Late } else { CEntry::Early };
    let spec = PresetSpec::custom("drawn-high-floor-mx", nfma, frac, 23, min_exp, c, None).with_scale_block(Some(nfma));
    Preset::custom(spec).expect("a valid preset")
}

/// The MXFP8 panels on shapes that fill them: full and ragged panels of 32 and 64 outputs, several pieces of K with
/// a short last block, N narrower than a panel under many rows (A and B exchanged), now and then one non-finite code
/// in A or B, scales near 1 with some at the
/// ends of e8m0 (0, 1, 254 and the NaN code 255) in a few blocks, or drawn from every code; b200_tcgen05 and drawn
/// presets with block scales (early or late c), some with a high min_exp.
#[test]
fn mx_panels_on_the_cpu_backend_are_the_model() {
    let seed = seed();
    let engines = engines();
    for case in 0..24u64 {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ (case << 16) ^ 0x4D58);
        let preset = match case % 3 {
            0 => high_floor_mx_preset(rng),
            1 => mx_preset(rng),
            _ => Preset::b200_tcgen05(),
        };
        let block = preset.scale_block().unwrap_or(32);
        let d = match case % 4 {
            // N narrower than a panel, more rows: the operands exchange roles.
            0 => Dims { m: rng.random_range(40..=90), n: rng.random_range(1..=20), k: rng.random_range(1..=600) },
            _ => Dims { m: rng.random_range(1..=40), n: rng.random_range(60..=140), k: rng.random_range(1..=600) },
        };
        let formats = [Format::E4m3, Format::E5m2];
        let (fa, fb) = (formats[rng.random_range(0..2)], formats[rng.random_range(0..2)]);
        let (mut a, mut b) = (codes(rng, d.m * d.k, fa, false), codes(rng, d.n * d.k, fb, false));
        // Now and then one non-finite code, anywhere in B or in A: the panels that watch B rather than scan it must
        // see it wherever it lies.
        let planted = match (case / 3) % 4 {
            1 => Some(plant_nonfinite(rng, &mut b, fb)),
            2 => Some(plant_nonfinite(rng, &mut a, fa)),
            _ => None,
        };
        let nb = d.k.div_ceil(block);
        // Near 1, one block in 50 at an end of e8m0 (NaN included), or anywhere.
        let anywhere = case % 5 == 4;
        let mut scales = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| match (anywhere, rng.random_ratio(1, 50)) {
                    (true, _) => rng.random_range(0..=255),
                    (false, true) => [0, 1, 254, 255][rng.random_range(0..4)],
                    (false, false) => rng.random_range(110..=144),
                })
                .collect()
        };
        let sa = to_blocked(&scales(d.m * nb), d.m, nb, 127).unwrap();
        let sb = to_blocked(&scales(d.n * nb), d.n, nb, 127).unwrap();
        let what =
            format!("seed {seed} case {case}: on {preset:?} {fa} x {fb} {d:?} anywhere {anywhere} planted {planted:?}");
        mx_is_the_model(&engines, &preset, (fa, fb), (&a, &b), d, (&sa, &sb), &what);
    }
}

/// The zero-product rule of the scaled block step (docs/reference.md §2.8): with min_exp above the accumulator's and
/// the products' exponents, a block that holds a zero product counts at min_exp even where c is nonzero. Presets with
/// min_exp 20, early c or late (c out of the block: the rule is the products' alone), operands with one zero code in
/// eight, scales near 1. Then the rule at the foot of fp32's normal range: min_exp from -129 to -126, frac 6 to 20,
/// large positive operands and scales that put a block's largest product near 2^-127 and its sum in the normal range;
/// a late c takes the floor there too, an early nonzero c lies above it.
#[test]
fn mx_zero_products_with_a_high_min_exp() {
    let seed = seed();
    let engines = engines();
    for case in 0..24u64 {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ (case << 32) ^ 0x5A45);
        let nfma = [16, 32, 64][rng.random_range(0..3)];
        let c = if case % 2 == 1 { CEntry::Late } else { CEntry::Early };
        let low = case >= 8;
        let (min_exp, frac) = if low {
            (rng.random_range(-129..=-126), rng.random_range(6..=20))
        } else {
            (20, rng.random_range(20..=40))
        };
        let spec = PresetSpec::custom("zero-rule", nfma, frac, 23, min_exp, c, None).with_scale_block(Some(nfma));
        let preset = Preset::custom(spec).expect("a valid preset");
        let d = Dims { m: rng.random_range(1..=20), n: rng.random_range(60..=80), k: rng.random_range(100..=300) };
        // Low: positive codes from 2^5 to 448, whose products lie within a few binades of each other.
        let (least, sign) = if low { (0x68, 0) } else { (0x01, 0x80) };
        let mut zeros = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    if rng.random_ratio(1, 8) {
                        0
                    } else {
                        rng.random_range(least..0x7E) | (rng.random::<u8>() & sign)
                    }
                })
                .collect()
        };
        let (a, b) = (zeros(d.m * d.k), zeros(d.n * d.k));
        let nb = d.k.div_ceil(nfma as usize);
        // Scale exponents summing to about 0, or to about -144 (a block's largest product is then near 2^17, its
        // sum near 2^20: scaled, the largest product lies near 2^-127 and the block sum near 2^-124).
        let (centre, spread) = if low { (55, 1) } else { (127, 9) };
        let mut scales =
            |n: usize| -> Vec<u8> { (0..n).map(|_| rng.random_range(centre - spread..=centre + spread)).collect() };
        let (sa, sb) = (scales(d.m * nb), scales(d.n * nb));
        let (sa, sb) = (to_blocked(&sa, d.m, nb, 127).unwrap(), to_blocked(&sb, d.n, nb, 127).unwrap());
        let what = format!("seed {seed} case {case}: on {preset:?} {d:?}");
        mx_is_the_model(&engines, &preset, (Format::E4m3, Format::E4m3), (&a, &b), d, (&sa, &sb), &what);
    }
}

/// One non-finite code in B, under panels that watch B as they decode it rather than scan it first: b200_tcgen05 (the
/// i32 step) and drawn presets of frac above 28 (the wide step), full panels of 64 and a ragged one, the code anywhere
/// (in a piece decoded in place, in the last piece past K's whole pieces, in the ragged panel). The model computes
/// such a call whole (docs/reference.md §3.7).
#[test]
fn mx_nonfinite_code_in_a_watched_b() {
    let seed = seed();
    let engines = engines();
    for case in 0..16u64 {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ (case << 48) ^ 0x5741_5443);
        let preset = if case % 2 == 0 {
            Preset::b200_tcgen05()
        } else {
            let nfma = [16, 32, 64][rng.random_range(0..3)];
            let spec = PresetSpec::custom("watched", nfma, rng.random_range(29..=40), 23, -200, CEntry::Early, None)
                .with_rounding(BlockRounding::NearestEven)
                .with_scale_block(Some(nfma));
            Preset::custom(spec).expect("a valid preset")
        };
        let block = preset.scale_block().unwrap_or(32);
        let d = Dims { m: rng.random_range(1..=6), n: rng.random_range(64..=200), k: rng.random_range(16..=700) };
        let formats = [Format::E4m3, Format::E5m2];
        let (fa, fb) = (formats[rng.random_range(0..2)], formats[rng.random_range(0..2)]);
        let (a, mut b) = (codes(rng, d.m * d.k, fa, false), codes(rng, d.n * d.k, fb, false));
        let at = plant_nonfinite(rng, &mut b, fb);
        let nb = d.k.div_ceil(block);
        let sa = to_blocked(&e8m0(rng, d.m * nb, 0), d.m, nb, 127).unwrap();
        let sb = to_blocked(&e8m0(rng, d.n * nb, 0), d.n, nb, 127).unwrap();
        let what =
            format!("seed {seed} case {case}: on {preset:?} {fa} x {fb} {d:?}, B's code ({}, {})", at / d.k, at % d.k);
        mx_is_the_model(&engines, &preset, (fa, fb), (&a, &b), d, (&sa, &sb), &what);
    }
}

/// Block results at the ends of fp32's normal range, where the panels hand an output to the model: scales that put
/// the products' block sums near 2^-133 (subnormal fp32 or just above it) or near 2^128 (overflowing
/// or just inside), drawn block-scaled presets (every frac, both roundings, early or late c: there the accumulator's
/// fp32 additions overflow too), full panels.
#[test]
fn mx_block_results_at_the_ends_of_fp32() {
    let seed = seed();
    let engines = engines();
    for case in 0..16u64 {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ (case << 40) ^ 0x454E_4453);
        let nfma = [16, 32, 64][rng.random_range(0..3)];
        // Both block steps: frac above 28 and up to 28 (the i32 step), each with every pairing of end and rounding.
        let frac = if case % 8 < 4 { rng.random_range(29..=40) } else { rng.random_range(5..=28) };
        // The low and high ends by turns, each with both roundings.
        let nearest = case % 4 < 2;
        let frac_out = if nearest { 23 } else { rng.random_range(1..=23) };
        let rounding = if nearest { BlockRounding::NearestEven } else { BlockRounding::Truncate };
        let min_exp = [-1000, -200, -60][rng.random_range(0..3)];
        // Early c in the first eight cases, late in the others.
        let c = if case < 8 { CEntry::Early } else { CEntry::Late };
        let spec = PresetSpec::custom("range-ends", nfma, frac, frac_out, min_exp, c, None)
            .with_rounding(rounding)
            .with_scale_block(Some(nfma));
        let preset = Preset::custom(spec).expect("a valid preset");
        let d = Dims { m: rng.random_range(1..=12), n: rng.random_range(64..=130), k: rng.random_range(64..=400) };
        let formats = [Format::E4m3, Format::E5m2];
        let (fa, fb) = (formats[rng.random_range(0..2)], formats[rng.random_range(0..2)]);
        let (a, b) = (codes(rng, d.m * d.k, fa, false), codes(rng, d.n * d.k, fb, false));
        let nb = d.k.div_ceil(nfma as usize);
        // A block's largest product is near 2^17 (e4m3 by e4m3; 2^24 with one e5m2 operand, 2^31 with two): scale
        // exponents summing to about -150 or +110 put the block results near 2^-133 or 2^128.
        let wide = 4 * [fa, fb].iter().filter(|&&f| f == Format::E5m2).count() as u8;
        let centre: u8 = if case % 2 == 0 { 51 - wide } else { 182 - wide };
        let mut scales = |n: usize| -> Vec<u8> { (0..n).map(|_| rng.random_range(centre - 8..=centre + 8)).collect() };
        let sa = to_blocked(&scales(d.m * nb), d.m, nb, 127).unwrap();
        let sb = to_blocked(&scales(d.n * nb), d.n, nb, 127).unwrap();
        let what = format!("seed {seed} case {case}: on {preset:?} {fa} x {fb} {d:?}");
        mx_is_the_model(&engines, &preset, (fa, fb), (&a, &b), d, (&sa, &sb), &what);
    }
}

/// A group-scaled e2m1 preset: b200_tcgen05_mxf4nvf4 (NVFP4), or one drawn with ue4m3 or ue8m0 scales (MXFP4-like),
/// groups of 16 or 32, any frac up to 35 and min_exp.
fn group_preset(rng: &mut ChaCha8Rng) -> Preset {
    if rng.random_ratio(1, 2) {
        return mmaemu_model::b200_tcgen05_mxf4nvf4();
    }
    let group = [16u32, 32][rng.random_range(0..2)];
    let nfma = group * [1, 2, 4][rng.random_range(0..3)];
    let format = [ScaleFormat::Ue4m3, ScaleFormat::Ue8m0][rng.random_range(0..2)];
    let (frac, min_exp) = (rng.random_range(10..=35), [-139, -60, 0, 20][rng.random_range(0..4)]);
    let spec = PresetSpec::custom("drawn-group", nfma, frac, 23, min_exp, CEntry::Early, None)
        .with_scale_block(Some(group))
        .with_group_scale(Some(group), format);
    Preset::custom(spec).expect("a valid preset")
}

/// The group-scaled (NVFP4) GEMM on the CPU backend is the model's (`nvfp4_gemm_on` against `nvfp4_gemm`), on
/// seeded shapes that fill panels and exchange operands, e2m1 codes with both nibbles set (the high one is not read),
/// and scale codes near 1, anywhere, or at the ends (zero, the smallest, the largest, NaN), at every SIMD level.
#[test]
fn nvfp4_gemm_on_the_cpu_backend_is_the_model() {
    let seed = seed();
    let engines = engines();
    for case in 0..36u64 {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ (case << 24) ^ 0x4E56);
        let preset = group_preset(rng);
        let block = preset.scale_block().unwrap_or(16);
        let d = match case % 3 {
            0 => Dims { m: rng.random_range(40..=90), n: rng.random_range(1..=20), k: rng.random_range(1..=500) },
            1 => Dims { m: rng.random_range(1..=30), n: rng.random_range(60..=140), k: rng.random_range(1..=500) },
            _ => Dims { m: rng.random_range(1..=8), n: rng.random_range(1..=8), k: rng.random_range(1..=200) },
        };
        let (a, b): (Vec<u8>, Vec<u8>) =
            ((0..d.m * d.k).map(|_| rng.random()).collect(), (0..d.n * d.k).map(|_| rng.random()).collect());
        let nb = d.k.div_ceil(block);
        let spread = case % 4;
        let mut scales = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| match (spread, rng.random_ratio(1, 40)) {
                    (3, _) => rng.random(),
                    (_, true) => [0x00, 0x01, 0x7E, 0x7F, 0x80, 0xFE, 0xFF][rng.random_range(0..7)],
                    _ => rng.random_range(0x30..=0x48),
                })
                .collect()
        };
        let sa = to_blocked(&scales(d.m * nb), d.m, nb, 0).unwrap();
        let sb = to_blocked(&scales(d.n * nb), d.n, nb, 0).unwrap();
        let want = nvfp4_gemm(&preset, &a, &b, d, &sa, &sb).unwrap();
        for e in &engines {
            let got = nvfp4_gemm_on(e, &preset, &a, &b, d, &sa, &sb).unwrap();
            let diff = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
            assert_eq!(
                diff.map(|o| (o / d.n, o % d.n, got[o], want[o])),
                None,
                "seed {seed} case {case}: {} on {preset:?} {d:?} spread {spread}",
                mmaemu_model::ChainEngine::name(e)
            );
        }
    }
}

#[test]
fn blockwise_gemm_on_the_cpu_backend_is_the_model() {
    let seed = seed();
    let engines = engines();
    let shapes = [BlockShape::Vec1x128, BlockShape::Blk128x128];
    for case in 0..30u64 {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ (case << 8));
        let preset = [Preset::hopper(), Preset::ada(), Preset::b200_mma_sync()][rng.random_range(0..3)].clone();
        let d = Dims { m: rng.random_range(1..=140), n: rng.random_range(1..=40), k: rng.random_range(1..=600) };
        let (sha, shb) = (shapes[rng.random_range(0..2)], shapes[rng.random_range(0..2)]);
        let nonfinite = rng.random_ratio(1, 5);
        let (a, b) = (codes(rng, d.m * d.k, Format::E4m3, nonfinite), codes(rng, d.n * d.k, Format::E4m3, nonfinite));
        let kb = d.k.div_ceil(128);
        let mut scale = |n: usize| -> Vec<f32> {
            (0..n).map(|_| f32::from_bits(rng.random_range(0x3000_0000..0x4C00_0000u32))).collect()
        };
        let (sa, sb) = (scale(sha.scale_rows(d.m) * kb), scale(shb.scale_rows(d.n) * kb));
        let want = blockwise_gemm(&preset, Format::E4m3, Format::E4m3, &a, &b, d, (&sa, sha), (&sb, shb)).unwrap();
        for e in &engines {
            let got =
                blockwise_gemm_on(e, &preset, Format::E4m3, Format::E4m3, &a, &b, d, (&sa, sha), (&sb, shb)).unwrap();
            let diff = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
            assert_eq!(
                diff,
                None,
                "seed {seed} case {case}: {} on {} {d:?}",
                mmaemu_model::ChainEngine::name(e),
                preset.name()
            );
        }
    }
}

/// A preset for block-wise scaling: a built-in one, or one drawn (blocks of 8 to 128 and 4096, frac up to 40, so
/// that the narrow, wide and scalar paths all come up, frac_out, min_exp, rounding, early or late c).
fn blockwise_preset(rng: &mut ChaCha8Rng) -> Preset {
    if rng.random_ratio(1, 2) {
        return [Preset::hopper(), Preset::ada(), Preset::b200_mma_sync()][rng.random_range(0..3)].clone();
    }
    let nfma = [8, 16, 32, 64, 128, 4096][rng.random_range(0..6)];
    let frac = rng.random_range(5..=40);
    let nearest = rng.random_ratio(1, 3);
    let frac_out = if nearest { 23 } else { rng.random_range(1..=23) };
    let min_exp = [-1000, -200, -133, -60, 0][rng.random_range(0..5)];
    let c = if rng.random_ratio(1, 4) { CEntry::Late } else { CEntry::Early };
    let rounding = if nearest { BlockRounding::NearestEven } else { BlockRounding::Truncate };
    let spec = PresetSpec::custom("drawn-blockwise", nfma, frac, frac_out, min_exp, c, None).with_rounding(rounding);
    Preset::custom(spec).expect("a valid preset")
}

/// fp32 scales: near 1, anywhere among the positive normals, or the extremes (0, -0, subnormal, the largest finite,
/// infinities, NaN, negative) mixed with ordinary ones.
fn fp32_scales(rng: &mut ChaCha8Rng, n: usize, spread: u32) -> Vec<f32> {
    let ends = [0.0, -0.0, f32::from_bits(1), f32::MIN_POSITIVE, f32::MAX, -f32::MAX, f32::INFINITY, -f32::INFINITY];
    (0..n)
        .map(|_| match spread {
            0 => f32::from_bits(rng.random_range(0x3F70_0000..0x3F90_0000u32)),
            1 => f32::from_bits(rng.random_range(0x0080_0000..0x7F80_0000u32)),
            _ if rng.random_ratio(1, 2) => f32::from_bits(rng.random_range(0x3A00_0000..0x4200_0000u32)),
            _ if rng.random_ratio(1, 9) => f32::NAN,
            _ => ends[rng.random_range(0..ends.len())] * if rng.random_ratio(1, 2) { 1.0 } else { 1.5 },
        })
        .collect()
}

/// The block-wise GEMM on every level and every tiling of the CPU backend equals the model's, bit for bit: drawn
/// presets, 1x128 and 128x128 scales on either side, scales near 1, anywhere or at the extremes, K of any length
/// (a ragged last block), shapes from one output to several parallel tiles, with and without the exchange of A and
/// B, now and then a non-finite code.
#[test]
fn blockwise_chains_of_every_level_and_tiling_are_the_model() {
    let seed = seed();
    let engines: Vec<CpuEngine> = engines().into_iter().flat_map(CpuEngine::with_every_tiling).collect();
    let shapes = [BlockShape::Vec1x128, BlockShape::Blk128x128];
    let formats = [Format::E4m3, Format::E5m2];
    for case in 0..40u64 {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ (case << 16));
        let preset = blockwise_preset(rng);
        let big = rng.random_ratio(1, 4);
        let (m, n) = if big {
            (rng.random_range(60..=300), rng.random_range(60..=200))
        } else {
            (rng.random_range(1..=20), rng.random_range(1..=70))
        };
        let d = Dims { m, n, k: rng.random_range(1..=if big { 700 } else { 1100 }) };
        let (fa, fb) = (formats[rng.random_range(0..2)], formats[rng.random_range(0..2)]);
        let (sha, shb) = (shapes[rng.random_range(0..2)], shapes[rng.random_range(0..2)]);
        let nonfinite = rng.random_ratio(1, 6);
        let (a, b) = (codes(rng, d.m * d.k, fa, nonfinite), codes(rng, d.n * d.k, fb, nonfinite));
        let (spread, kb) = (rng.random_range(0..=2), d.k.div_ceil(128));
        let (sa, sb) =
            (fp32_scales(rng, sha.scale_rows(d.m) * kb, spread), fp32_scales(rng, shb.scale_rows(d.n) * kb, spread));
        let want = blockwise_gemm(&preset, fa, fb, &a, &b, d, (&sa, sha), (&sb, shb)).unwrap();
        for e in &engines {
            let got = blockwise_gemm_on(e, &preset, fa, fb, &a, &b, d, (&sa, sha), (&sb, shb)).unwrap();
            let diff = got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits());
            assert_eq!(
                diff.map(|o| (o / d.n, o % d.n, got[o], want[o])),
                None,
                "seed {seed} case {case}: {} on {preset:?} {fa} x {fb} {d:?} {sha:?} x {shb:?} spread {spread}",
                mmaemu_model::ChainEngine::name(e),
            );
        }
    }
}

/// The engine's block-wise chains equal the model's blocks one by one, for blocks other than 128 too (the trait takes
/// any block): the fp32 bits of `ChainEngine::blockwise_chains`, every NaN as one (the compiler may exchange the
/// operands of a product, and with them which NaN's payload it keeps; the GEMM returns the canonical NaN).
#[test]
fn raw_blockwise_chains_equal_the_blocks_one_by_one() {
    let seed = seed();
    for case in 0..20u64 {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ (case << 24) ^ 0xB10C);
        let preset = blockwise_preset(rng);
        let block = [16, 32, 64, 96, 128, 256, 1000][rng.random_range(0..7)];
        let (m, n, k): (usize, usize, usize) =
            (rng.random_range(1..=40), rng.random_range(1..=90), rng.random_range(1..=900));
        let nb = k.div_ceil(block);
        let (a, b) = (codes(rng, m * k, Format::E4m3, false), codes(rng, n * k, Format::E4m3, false));
        let spread = rng.random_range(0..=2);
        let (sa, sb) = (fp32_scales(rng, m * nb, spread), fp32_scales(rng, n * nb, spread));
        let ops = mmaemu_model::Operands { fa: Format::E4m3, fb: Format::E4m3, a: &a, b: &b, m, n, k };
        let want = blockwise_chains_by_blocks(&mmaemu_model::ReferenceEngine, &preset, &ops, block, &sa, &sb);
        for e in engines().into_iter().flat_map(CpuEngine::with_every_tiling) {
            let got = mmaemu_model::ChainEngine::blockwise_chains(&e, &preset, &ops, block, &sa, &sb);
            let bits =
                |v: &[f32]| v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect::<Vec<_>>();
            assert!(
                bits(&got) == bits(&want),
                "seed {seed} case {case}: {} on {preset:?} m {m} n {n} k {k} block {block} spread {spread}",
                mmaemu_model::ChainEngine::name(&e)
            );
        }
    }
}
