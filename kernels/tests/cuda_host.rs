//! The CUDA backend's host side without a GPU: the Rust emulation of the kernels' per-block integer algorithm (same
//! structure as chain.cu) against the model and the CPU backend.

// On random chains of random presets, every format pair, and whole plans (fast, slow, every split scheme) driven by the
// model's `execute`, against the model and the CPU backend (the engine a GPU engine falls back to).

use mmaemu_kernels::cuda::{emulate, ChainParams, DecodeTables, KERNELS};
use mmaemu_kernels::CpuEngine;
use mmaemu_model::accumulate::{execute, ChainEngine, Operands, ReferenceEngine};
use mmaemu_model::{CEntry, Format, Plan, Preset, PresetSpec, SplitK};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn codes(rng: &mut ChaCha8Rng, f: Format, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| loop {
            let c = match rng.random_range(0..4) {
                0 => rng.random::<u8>(),
                1 => rng.random_range(0..2u8) << 7 | rng.random_range(0..8u8),
                2 => 0,
                _ => rng.random_range(0..2u8) << 7 | (0x30 + rng.random_range(0..16u8)),
            };
            if !f.is_nonfinite(c) {
                break c;
            }
        })
        .collect()
}

/// The emulated kernels as an engine, so the model's `execute` can drive whole plans through them.
struct Emulated(DecodeTables);
impl ChainEngine for Emulated {
    fn name(&self) -> String {
        "cuda-emulated".into()
    }
    fn chains(&self, preset: &Preset, ops: &Operands<'_>) -> Vec<f32> {
        let p = ChainParams::new(preset, ops.fa, ops.fb).expect("kernel parameters");
        // The device's choice: the fastest kernel that serves the parameters.
        if KERNELS[0].serves(&p).is_ok() {
            emulate::chains_narrow(&p, &self.0, ops)
        } else {
            emulate::chains(&p, &self.0, ops)
        }
    }
}

fn random_preset(rng: &mut ChaCha8Rng) -> Preset {
    match rng.random_range(0..5) {
        0 => Preset::ada(),
        1 => Preset::hopper(),
        2 => Preset::b200_mma_sync(),
        _ => random_custom(rng, "random", (1, 40), (1, 40), (-150, 40), |rng| {
            let c_entry = if rng.random_range(0..2) == 0 { CEntry::Early } else { CEntry::Late };
            (c_entry, Some(16 * (1 + rng.random_range(0..8u32))))
        }),
    }
}

/// A custom preset drawn from `rng`: nfma, frac and min_exp each `lo + random(0..span)` for the given
/// `(lo, span)`, frac_out in 1..=23, then `tail` draws the c entry and the slow chunk.
fn random_custom(
    rng: &mut ChaCha8Rng,
    name: &str,
    nfma: (u32, u32),
    frac: (u32, u32),
    min_exp: (i32, i32),
    tail: impl FnOnce(&mut ChaCha8Rng) -> (CEntry, Option<u32>),
) -> Preset {
    let mut draw = |(lo, span): (u32, u32)| lo + rng.random_range(0..span);
    let (nfma, frac, frac_out) = (draw(nfma), draw(frac), draw((1, 23)));
    let min_exp = min_exp.0 + rng.random_range(0..min_exp.1);
    let (c_entry, slow_chunk) = tail(rng);
    Preset::custom(PresetSpec::custom(name, nfma, frac, frac_out, min_exp, c_entry, slow_chunk)).expect("valid preset")
}

#[test]
fn emulated_kernels_equal_the_model_on_random_chains() {
    let t = DecodeTables::from_model();
    let mut rng = ChaCha8Rng::seed_from_u64(12345);
    for _ in 0..400 {
        let preset = random_preset(&mut rng);
        let (fa, fb) = (Format::ALL[rng.random_range(0..2usize)], Format::ALL[rng.random_range(0..2usize)]);
        let (m, n, l) =
            (1 + rng.random_range(0..5usize), 1 + rng.random_range(0..5usize), rng.random_range(0..300usize));
        let (a, b) = (codes(&mut rng, fa, m * l), codes(&mut rng, fb, n * l));
        let p = ChainParams::new(&preset, fa, fb).expect("params");
        let ops = Operands { fa, fb, a: &a, b: &b, m, n, k: l };
        let got: Vec<u32> = emulate::chains(&p, &t, &ops).iter().map(|x| x.to_bits()).collect();
        let want: Vec<u32> = ReferenceEngine.chains(&preset, &ops).iter().map(|x| x.to_bits()).collect();
        assert_eq!(got, want, "{preset:?} {fa:?}x{fb:?} m={m} n={n} l={l}");
    }
}

/// `mmaemu_chain_narrow`'s algorithm (32-bit terms, staged exponents) against the model, on random early-c
/// presets it serves (the built-ins and random ones near its bounds) and long chains.
#[test]
fn emulated_narrow_kernel_equals_the_model() {
    let t = DecodeTables::from_model();
    let mut rng = ChaCha8Rng::seed_from_u64(4242);
    let mut served = 0;
    for i in 0..3000 {
        let preset = match i % 3 {
            0 => Preset::ada(),
            1 => Preset::hopper(),
            _ => random_custom(&mut rng, "narrow", (1, 32), (6, 21), (-400, 300), |_| (CEntry::Early, None)),
        };
        let (fa, fb) = (Format::ALL[rng.random_range(0..2usize)], Format::ALL[rng.random_range(0..2usize)]);
        let p = ChainParams::new(&preset, fa, fb).expect("params");
        if KERNELS[0].serves(&p).is_err() {
            continue;
        }
        served += 1;
        let l = if i % 50 == 0 { 2048 + rng.random_range(0..2048usize) } else { rng.random_range(0..200usize) };
        let (m, n) = (1 + rng.random_range(0..3usize), 1 + rng.random_range(0..3usize));
        let (a, b) = (codes(&mut rng, fa, m * l), codes(&mut rng, fb, n * l));
        let ops = Operands { fa, fb, a: &a, b: &b, m, n, k: l };
        let got: Vec<u32> = emulate::chains_narrow(&p, &t, &ops).iter().map(|x| x.to_bits()).collect();
        let want: Vec<u32> = ReferenceEngine.chains(&preset, &ops).iter().map(|x| x.to_bits()).collect();
        assert_eq!(got, want, "{preset:?} {fa:?}x{fb:?} m={m} n={n} l={l}");
    }
    assert!(served > 2000, "only {served} cases were in the narrow kernel's domain");
}

#[test]
fn emulated_kernels_run_every_plan_like_the_model() {
    let engine = Emulated(DecodeTables::from_model());
    let mut rng = ChaCha8Rng::seed_from_u64(777);
    for preset in [Preset::ada(), Preset::hopper(), Preset::b200_mma_sync()] {
        for scheme in mmaemu_model::Catalogue::builtin().schemes(&preset) {
            for s in [1usize, 2, 3] {
                for fast in [true, false] {
                    let Ok(split) = SplitK::new(s, scheme) else { continue };
                    let k = 16 * (1 + rng.random_range(0..40usize));
                    let Ok(plan) = Plan::new(&preset, k, fast, split) else { continue };
                    for (fa, fb) in [(Format::E4m3, Format::E4m3), (Format::E5m2, Format::E4m3)] {
                        let (m, n) = (3, 4);
                        let (a, b) = (codes(&mut rng, fa, m * k), codes(&mut rng, fb, n * k));
                        let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
                        let got = execute(&preset, &plan, &ops, &engine).expect("execute");
                        let want = execute(&preset, &plan, &ops, &ReferenceEngine).expect("execute");
                        // The CPU backend, which the GPU engine falls back to, on the same plan.
                        let cpu = execute(&preset, &plan, &ops, &CpuEngine::new()).expect("execute");
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&got), bits(&want), "{} s={s} {scheme:?} fast={fast}", preset.name());
                        assert_eq!(bits(&got), bits(&cpu), "{} s={s} {scheme:?} fast={fast} (cpu)", preset.name());
                    }
                }
            }
        }
    }
}

#[test]
fn unsupported_presets_are_refused_not_miscomputed() {
    let wide =
        Preset::custom(PresetSpec::custom("huge", 1 << 22, 40, 23, -132, CEntry::Early, None)).expect("valid preset");
    assert!(ChainParams::new(&wide, Format::E4m3, Format::E4m3).is_err());
}
