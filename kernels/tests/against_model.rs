//! The CPU backend against the model, bit for bit, on random GEMMs: 10,000 per preset family (ada, hopper,
//! b200_mma_sync, b200_tcgen05, random user-defined presets, some rounding to nearest even) by default, on every SIMD level the machine has, each with its
//! tiling chosen per call and with each tiling fixed.

// Shapes up to 64 x 64 x 4096 (mostly small ones, so the model keeps up), M or N in 1..8 against K up to 2^17,
// every plan the preset allows (fast and slow,
// unsplit and S = 2..8 with every scheme), all four format pairs, and operands from several generators (uniform codes,
// one exponent band, subnormal-heavy, sparse, cancelling pairs, extremes), some with NaN and Inf codes (handled by
// `execute`'s patch around the engine).
//
// With `--features cuda` on a machine with a GPU, the CUDA engine (every kernel, after its gate) runs every case it
// serves as well, and the test fails if it ever fell back to the CPU.
//
// `MMAEMU_KERNEL_CASES` sets the number of cases per family; `MMAEMU_KERNEL_SEED` the seed.

use mmaemu_kernels::cuda::{Gpu, GpuEngine, KERNELS};
use mmaemu_kernels::{CpuEngine, SimdLevel};
use mmaemu_model::plan::{Scheme, SplitK};
use mmaemu_model::preset::{BlockRounding, CEntry, PresetSpec};
use mmaemu_model::{execute, Chain, ChainEngine, Format, Operands, Plan, Preset, ReferenceEngine};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use std::sync::Arc;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A random user-defined preset: any block size, frac 1..=40, frac_out 1..=23, min_exp anywhere in its
/// range (mostly near the products), early or late c, a slow chunk or none.
fn custom_preset(rng: &mut ChaCha8Rng) -> Preset {
    let nfma = match rng.random_range(0..=9) {
        0 => rng.random_range(1..=4),
        1 => rng.random_range(33..=5000),
        2 => 16,
        3 => 32,
        _ => rng.random_range(1..=64),
    } as u32;
    let min_exp = match rng.random_range(0..=5) {
        0 => -1000,
        1 => 1000,
        2 => rng.random_range(0..=2000) - 1000,
        _ => rng.random_range(0..=80) - 50,
    };
    let late = rng.random_ratio(30, 100);
    let slow = (!late || rng.random_ratio(50, 100)).then(|| rng.random_range(1..=300));
    let (frac, frac_out) = (rng.random_range(1..=40), rng.random_range(1..=23));
    let c_entry = if late { CEntry::Late } else { CEntry::Early };
    // A quarter of the fp32-result presets round to nearest even (on the lanes, `kernel::Params::half64`).
    let rounding =
        if frac_out == 23 && rng.random_ratio(1, 4) { BlockRounding::NearestEven } else { BlockRounding::Truncate };
    Preset::custom(PresetSpec::custom("fuzz", nfma, frac, frac_out, min_exp, c_entry, slow).with_rounding(rounding))
        .expect("a valid custom preset")
}

/// One code of format `f` by generator `g`.
fn code(rng: &mut ChaCha8Rng, f: Format, g: usize, nonfinite: bool) -> u8 {
    let sign = if rng.random_ratio(50, 100) { 0x80 } else { 0 };
    let c = match g {
        // Uniform over all codes.
        0 => rng.random::<u8>(),
        // One exponent band (ties, carries, cancellation).
        1 => (0x38 + rng.random_range(0..=15u8)) | sign,
        // Subnormals and zeros.
        2 => rng.random_range(0..=7u8) | sign,
        // Sparse: mostly zeros.
        3 => {
            if rng.random_ratio(80, 100) {
                sign
            } else {
                rng.random::<u8>()
            }
        }
        // Extremes: the largest and smallest magnitudes.
        4 => [f.max_code(), 0x01, f.max_code() - 1, 0x02][rng.random_range(0..=3)] | sign,
        // Two bands far apart (truncation against a large block maximum).
        _ => {
            if rng.random_ratio(10, 100) {
                (f.max_code() - rng.random_range(0..=7u8)) | sign
            } else {
                rng.random_range(1..=24u8) | sign
            }
        }
    };
    if !nonfinite && f.is_nonfinite(c) {
        c & 0x83 // a finite neighbour
    } else {
        c
    }
}

/// A random plan the preset allows, or None if its plan construction refuses the choice.
fn plan(rng: &mut ChaCha8Rng, preset: &Preset, k: usize) -> Option<Plan> {
    let fast = preset.slow_chunk().is_none() || rng.random_ratio(50, 100);
    let split = if preset.slow_chunk().is_some() && rng.random_ratio(50, 100) {
        let schemes: Vec<Scheme> = mmaemu_model::Catalogue::builtin().schemes(preset).to_vec();
        if schemes.is_empty() {
            SplitK::NONE
        } else {
            let scheme = schemes[rng.random_range(0..schemes.len())];
            SplitK::new(rng.random_range(2..=8), scheme).ok()?
        }
    } else {
        SplitK::NONE
    };
    Plan::new(preset, k, fast, split).ok()
}

fn bits(x: f32) -> u32 {
    if x.is_nan() {
        0x7FFF_FFFF
    } else {
        x.to_bits()
    }
}

/// One random GEMM through every engine and the model; Err describes the first difference.
fn case(family: usize, index: u64, seed: u64, engines: &[&dyn ChainEngine]) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((family as u64) << 56) ^ index);
    let preset = match family {
        0 => Preset::ada(),
        1 => Preset::hopper(),
        2 => Preset::b200_mma_sync(),
        3 => Preset::b200_tcgen05(),
        _ => custom_preset(&mut rng),
    };
    let fa = Format::ALL[rng.random_range(0..=1)];
    let fb = Format::ALL[rng.random_range(0..=1)];
    // Mostly small shapes; 1 in 40 medium; 1 in 250 up to 64 x 64 x 4096 (the largest every 2,000); 1 in 100
    // few rows (or few outputs) against many, the product-lane tiling's domain; 1 in 500 long K, up to 2^17.
    let few = |rng: &mut ChaCha8Rng| rng.random_range(1..=8);
    let (m, n, k) = match index % 2000 {
        0 => (64, 64, 4096),
        i if i % 500 == 11 => {
            let (x, y, k) = (few(&mut rng), rng.random_range(1..=16), rng.random_range(4096..=1 << 17));
            if i % 1000 == 11 {
                (x, y, k)
            } else {
                (y, x, k)
            }
        }
        i if i % 100 == 5 => {
            let (x, y, k) = (rng.random_range(1..=32), rng.random_range(1..=70), rng.random_range(1..=2000));
            if i % 200 == 5 {
                (x, y, k)
            } else {
                (y, x, k)
            }
        }
        i if i % 250 == 7 => (rng.random_range(1..=64), rng.random_range(1..=64), rng.random_range(1..=4096)),
        i if i % 40 == 3 => (rng.random_range(1..=40), rng.random_range(1..=40), rng.random_range(1..=1500)),
        _ => (rng.random_range(1..=8), rng.random_range(1..=8), rng.random_range(1..=320)),
    };
    let Some(plan) = plan(&mut rng, &preset, k) else { return Ok(()) };
    let nonfinite = m * n * k < 1 << 16 && rng.random_ratio(10, 100);
    let (ga, gb) = (rng.random_range(0..=5), rng.random_range(0..=5));
    let mut draw = |f: Format, g: usize| {
        let special = nonfinite && rng.random_ratio(2, 100);
        code(&mut rng, f, g, special)
    };
    let a: Vec<u8> = (0..m * k).map(|_| draw(fa, ga)).collect();
    let b: Vec<u8> = (0..n * k).map(|_| draw(fb, gb)).collect();
    let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
    let want = execute(&preset, &plan, &ops, &ReferenceEngine).map_err(|e| e.to_string())?;
    // Only the engines that compute this preset themselves (a GPU engine hands the others to its fallback).
    let engines: Vec<&dyn ChainEngine> = engines.iter().copied().filter(|e| e.serves(&preset, fa, fb)).collect();
    for engine in &engines {
        let got = execute(&preset, &plan, &ops, *engine).map_err(|e| e.to_string())?;
        if let Some(i) = (0..want.len()).find(|&i| bits(want[i]) != bits(got[i])) {
            return Err(format!(
                "case {index} (family {family}, seed {seed}): {} preset {:?} {fa} x {fb} fast {} split {} \
                 [{m}, {n}, {k}] generators ({ga}, {gb}): output ({}, {}) = {:#010x}, model {:#010x}",
                engine.name(),
                preset.spec(),
                plan.fast(),
                plan.split(),
                i / n,
                i % n,
                bits(got[i]),
                bits(want[i])
            ));
        }
    }
    // The raw hook as well, on small finite cases: chains from +0 against Chain::run.
    if !nonfinite && m * n * k < 1 << 14 {
        let chain = Chain::new(&preset, fa, fb);
        for engine in &engines {
            let got = engine.chains(&preset, &ops);
            for i in 0..m {
                for j in 0..n {
                    let w = chain.run(&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k], 0.0);
                    if bits(w) != bits(got[i * n + j]) {
                        return Err(format!(
                            "case {index}: {}.chains ({i}, {j}) preset {:?} {fa} x {fb} k {k}: {:#010x}, model {:#010x}",
                            engine.name(),
                            preset.spec(),
                            bits(got[i * n + j]),
                            bits(w)
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn family(family: usize) {
    let cases = env_u64("MMAEMU_KERNEL_CASES", 10_000);
    let seed = env_u64("MMAEMU_KERNEL_SEED", 0x5EED_0005);
    let cpu: Vec<CpuEngine> =
        SimdLevel::available(None).into_iter().flat_map(|l| CpuEngine::with_level(l).with_every_tiling()).collect();
    let gpu = gpu_engine();
    let mut engines: Vec<&dyn ChainEngine> = cpu.iter().map(|e| e as &dyn ChainEngine).collect();
    engines.extend(gpu.as_ref().map(|g| g.engine.as_ref() as &dyn ChainEngine));
    let names: Vec<String> = engines.iter().map(|e| e.name()).collect();
    eprintln!("family {family}: {cases} cases through {}", names.join(", "));
    let failures: Vec<String> =
        (0..cases).into_par_iter().filter_map(|i| case(family, i, seed, &engines).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ; first:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
    // A GPU engine computes on the CPU (with a warning) when a launch fails: those cases did not test it.
    if let Some(g) = gpu {
        let w = g.warnings();
        assert!(w.is_empty(), "the GPU engine fell back {} times; first: {}", w.len(), w[0]);
    }
}

/// The CUDA engine on GPU 0 with the kernels that passed the gate, when this build has the backend and the
/// machine a GPU (`None` otherwise: the CPU levels are tested alone). A gate failure fails the test.
fn gpu_engine() -> Option<GpuEngine> {
    let gpu = match Gpu::open(0) {
        Ok(g) => g,
        Err(why) => {
            eprintln!("no GPU engine: {why}");
            return None;
        }
    };
    let reports = gpu.self_test(&(0..KERNELS.len()).collect::<Vec<_>>());
    for r in &reports {
        assert!(r.result.is_ok(), "kernel {} failed its gate on {}: {:?}", r.kernel, gpu.description(), r.result);
    }
    Some(gpu.engine("cuda", (0..KERNELS.len()).collect(), Arc::new(ReferenceEngine)))
}

#[test]
fn ada_against_model() {
    family(0);
}

#[test]
fn hopper_against_model() {
    family(1);
}

#[test]
fn b200_mma_sync_against_model() {
    family(2);
}

#[test]
fn b200_tcgen05_against_model() {
    family(3);
}

#[test]
fn custom_presets_against_model() {
    family(4);
}

/// A tile that reads every code of B (a decode step of one or two rows of A on a level whose block step reads B's
/// codes, a fused panel tile or an AVX-512 wide panel tile, which decode B's codes themselves, or a wide product-lane
/// tile whose decoding of B's rows tells non-finite codes) finds B's non-finite codes as it computes, instead of a
/// scan before it: wherever one non-finite code sits in B (any row, any position of any chunk or split, any class of
/// either format; whole panels of 64 rows of B and partial ones), `run_plan_checked` answers None, and `execute` gives
/// the model's bits; without one it gives the model's bits directly.
#[test]
fn watched_tiles_find_every_nonfinite_code_of_b() {
    let cases = env_u64("MMAEMU_KERNEL_CASES", 10_000) / 25;
    let seed = env_u64("MMAEMU_KERNEL_SEED", 0x5EED_0005) ^ 0xDEC0DE;
    let cpu: Vec<CpuEngine> =
        SimdLevel::available(None).into_iter().flat_map(|l| CpuEngine::with_level(l).with_every_tiling()).collect();
    let failures: Vec<String> = (0..cases)
        .into_par_iter()
        .filter_map(|index| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ index);
            // Custom presets a third of the time: the wide ones' product-lane tiles read B's codes as they decode
            // its rows on the AVX-512 level with VBMI.
            let preset = match rng.random_range(0..3) {
                0 => Preset::ada(),
                1 => Preset::hopper(),
                _ => custom_preset(&mut rng),
            };
            let (fa, fb) = (Format::ALL[rng.random_range(0..=1)], Format::ALL[rng.random_range(0..=1)]);
            let m = if index % 3 == 1 { rng.random_range(3..=12) } else { rng.random_range(1..=2) };
            let n = rng.random_range(1..=140);
            let k = if index % 10 == 0 { rng.random_range(3000..=20_000) } else { rng.random_range(1..=3000) };
            let plan = plan(&mut rng, &preset, k)?;
            let g = rng.random_range(0..=5);
            let a: Vec<u8> = (0..m * k).map(|_| code(&mut rng, fa, g, false)).collect();
            let mut b: Vec<u8> = (0..n * k).map(|_| code(&mut rng, fb, g, false)).collect();
            let planted = (index % 4 != 0).then(|| {
                let at = rng.random_range(0..n * k);
                let sign = if rng.random_ratio(50, 100) { 0x80 } else { 0 };
                b[at] = fb.nonfinite_mask() | (rng.random::<u8>() & !fb.nonfinite_mask() & 0x7F) | sign;
                at
            });
            let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
            let want = match execute(&preset, &plan, &ops, &ReferenceEngine) {
                Ok(w) => w,
                Err(e) => return Some(format!("case {index}: the model failed: {e}")),
            };
            for engine in &cpu {
                let what = || {
                    format!(
                        "case {index}: {} {} {fa} x {fb} [{m}, {n}, {k}] fast {} split {}",
                        engine.name(),
                        preset.name(),
                        plan.fast(),
                        plan.split()
                    )
                };
                if engine.run_plan_checked(&preset, &plan, &ops).is_some() == planted.is_some() {
                    return Some(format!("{}: the non-finite code at {planted:?} of B was not told", what()));
                }
                let got = match execute(&preset, &plan, &ops, engine) {
                    Ok(g) => g,
                    Err(e) => return Some(format!("{}: {e}", what())),
                };
                if let Some(i) = (0..want.len()).find(|&i| bits(want[i]) != bits(got[i])) {
                    return Some(format!(
                        "{}: output {i} = {:#010x}, model {:#010x}",
                        what(),
                        bits(got[i]),
                        bits(want[i])
                    ));
                }
            }
            None
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed; first:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}
