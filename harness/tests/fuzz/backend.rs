//! `fuzz/backend/<engine>`: every chain engine of `mmaemu_harness::engines::all()` against the model, bit for bit, on
//! whole GEMMs through `execute` and on the engine's raw `chains`.

// `execute` with the engine runs against `accumulate` (the model's reference engine) on random GEMMs of every built-in
// preset, fast and slow, unsplit and split; the engine's raw `chains` (chains from +0 of any length, ragged against the
// block size) run against `Chain::run`.

use crate::plan::plan_choice;
use crate::{check, Family};
use mmaemu_harness::engines;
use mmaemu_harness::engines::gpu_fallbacks;
use mmaemu_model::{accumulate, execute, Chain, Plan, Preset};
use mmaemu_testkit::generators::{gemm, Gemm, GemmShape, HexBits};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn canon(x: f32) -> u32 {
    if x.is_nan() {
        0x7FFF_FFFF
    } else {
        x.to_bits()
    }
}

fn preset_and_case() -> impl Strategy<Value = (usize, Gemm)> {
    let shape = GemmShape { m: (1, 6), n: (1, 6), max_huge_k: 1 << 13, ..GemmShape::default() };
    (0usize..3, gemm(shape))
}

fn presets() -> [Preset; 3] {
    [Preset::ada(), Preset::hopper(), Preset::b200_mma_sync()]
}

pub fn families() -> Vec<Family> {
    engines::all()
        .into_iter()
        .enumerate()
        .map(|(index, engine)| {
            let name = format!("fuzz/backend/{}", engine.name());
            Family::new(name, 6, move |name, seed, cases| {
                // The engine is rebuilt inside the trial from the same list, so nothing needs to be Send.
                let engines = engines::all();
                let engine = engines.get(index).ok_or("the backend list changed while running")?;
                let strategy = preset_and_case().prop_flat_map(|(p, g)| {
                    let preset = presets()[p].clone();
                    (Just(p), Just(g), plan_choice(&preset))
                });
                check(name, seed, cases, strategy, |(p, g, (fast, split))| {
                    let preset = &presets()[p];
                    if !engine.serves(preset, g.fa, g.fb) {
                        return Ok(());
                    }
                    let want = accumulate(preset, &g.operands(), fast, split)
                        .map_err(|e| TestCaseError::fail(format!("accumulate raised {e}")))?;
                    let plan = Plan::new(preset, g.k, fast, split)
                        .map_err(|e| TestCaseError::fail(format!("Plan::new raised {e}")))?;
                    let got = execute(preset, &plan, &g.operands(), engine.as_ref())
                        .map_err(|e| TestCaseError::fail(format!("execute with {} raised {e}", engine.name())))?;
                    let (w, h) = (
                        HexBits(want.iter().map(|&x| canon(x)).collect()),
                        HexBits(got.iter().map(|&x| canon(x)).collect()),
                    );
                    prop_assert_eq!(
                        h,
                        w,
                        "{} against the model ({}, fast {}, split {})",
                        engine.name(),
                        preset,
                        fast,
                        split
                    );

                    // Raw chains from +0 over the whole K, where the engine only sees finite codes.
                    if !g.has_nonfinite() {
                        let raw = engine.chains(preset, &g.operands());
                        let chain = Chain::new(preset, g.fa, g.fb);
                        for i in 0..g.m {
                            for j in 0..g.n {
                                let r = chain.run(&g.a[i * g.k..(i + 1) * g.k], &g.b[j * g.k..(j + 1) * g.k], 0.0);
                                prop_assert_eq!(
                                    canon(raw[i * g.n + j]),
                                    canon(r),
                                    "{}.chains output ({}, {}) against Chain::run",
                                    engine.name(),
                                    i,
                                    j
                                );
                            }
                        }
                    }
                    Ok(())
                })?;
                let fell_back = gpu_fallbacks();
                match fell_back.first() {
                    Some(first) if engine.name().starts_with("cuda") => Err(format!(
                        "{name}: the GPU engine computed {} call(s) on the CPU instead; first: {first}",
                        fell_back.len()
                    )),
                    _ => Ok(()),
                }
            })
        })
        .collect()
}
