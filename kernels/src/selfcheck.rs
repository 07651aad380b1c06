//! The CPU backend's self-check: a small fixed battery of adversarial GEMMs run through the engine and
//! through the model, compared bit for bit. A backend registry runs it before it first uses an engine and
//! falls back to the model if it fails.
//!
//! The battery covers every kernel path (narrow: ada, hopper, an odd custom preset and a 64-product block-scaled one;
//! wide: b200_mma_sync, a 40-bit custom preset, nearest-even ones with late and early c, blocks of 16 and 128, a
//! truncating late-c one of 36 bits (the wide panel step's four forms), slow chunks of 192 and 256, the i32 and
//! single-product steps' blocks of 1 and 2, and the i32 step's groups in blocks of 32 and 64), all four format pairs,
//! fast and slow, unsplit and every split scheme, ragged K and panels wider than one SIMD panel, and operands built to
//! stress the block step: the largest and smallest magnitudes in one block (truncation), exact cancellation (the +0
//! rule), subnormals, -0 codes, blocks where the accumulator dominates, exponent ties with carries, and a row with NaN
//! and Inf codes. A second battery runs the block-scaled chains (MXFP8's e8m0 scales on the i32 and the wide step,
//! NVFP4's groups) with scales at the ends of their formats.

use crate::fpstate::FpState;
use crate::CpuEngine;
use mmaemu_model::plan::{Scheme, SplitK};
use mmaemu_model::preset::{BlockRounding, CEntry, PresetSpec};
use mmaemu_model::{b200_tcgen05_mxf4nvf4, execute, ChainEngine, Format, Operands, Plan, Preset, ReferenceEngine};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// The presets of the battery: the built-ins and custom ones across the space a fit can return (odd block, other
/// frac_out; 40-bit wide; nearest even with late c, blocks of 16 and a slow chunk of 256; nearest even with early c
/// and blocks of 128; late c at frac 30, the wide step whose grid [`grid_rows`] sees; one product per block, late c;
/// two, early c, frac 25 and frac_out 20; nearest even with early c, blocks of 64 at frac 24, summed in i32 groups of
/// 31; blocks of 64 with e8m0 block scales).
pub fn presets() -> Vec<Preset> {
    let mut v = vec![Preset::ada(), Preset::hopper(), Preset::b200_mma_sync()];
    let nearest = |s: PresetSpec| s.with_rounding(BlockRounding::NearestEven);
    for spec in [
        PresetSpec::custom("selfcheck-odd", 5, 13, 9, -20, CEntry::Early, Some(48)),
        PresetSpec::custom("selfcheck-wide", 7, 40, 23, -1000, CEntry::Early, Some(96)),
        nearest(PresetSpec::custom("selfcheck-nearest-late", 16, 24, 23, -133, CEntry::Late, Some(256))),
        nearest(PresetSpec::custom("selfcheck-nearest-128", 128, 40, 23, -60, CEntry::Early, Some(256))),
        PresetSpec::custom("selfcheck-late-wide", 32, 30, 18, -90, CEntry::Late, Some(192)),
        PresetSpec::custom("selfcheck-single", 1, 24, 23, -133, CEntry::Late, Some(256)),
        PresetSpec::custom("selfcheck-pair-early", 2, 25, 20, -60, CEntry::Early, Some(64)),
        nearest(PresetSpec::custom("selfcheck-groups-early", 64, 24, 23, -60, CEntry::Early, Some(128))),
        PresetSpec::custom("selfcheck-scaled-64", 64, 13, 13, -1000, CEntry::Early, Some(128))
            .with_scale_block(Some(64)),
    ] {
        v.extend(Preset::custom(spec));
    }
    v
}

/// One adversarial row of `k` codes of format `f`, pattern `which` (0..8).
fn row(rng: &mut ChaCha8Rng, f: Format, k: usize, which: usize) -> Vec<u8> {
    let max = f.max_code();
    let finite = |rng: &mut ChaCha8Rng| loop {
        let c: u8 = rng.random();
        if !f.is_nonfinite(c) {
            return c;
        }
    };
    (0..k)
        .map(|i| match which {
            // Largest and smallest magnitudes mixed in one block.
            0 => [max, 0x01, max | 0x80, 0x81, 0x02][i % 5],
            // Exact cancellation: x, -x pairs.
            1 => {
                let c = if i % 4 < 2 { 0x38 } else { 0x3C };
                c | if i % 2 == 1 { 0x80 } else { 0 }
            }
            // Subnormals and signed zeros.
            2 => [0x01, 0x07, 0x80, 0x00, 0x83, 0x02][i % 6],
            // A dominant block followed by tiny ones (the accumulator dominates).
            3 => {
                if i < 16 {
                    max - (i as u8 % 3)
                } else {
                    0x01 + (i as u8 % 3)
                }
            }
            // Exponent ties with carries: one exponent, all significands.
            4 => 0x40 | (i as u8 & 0x07) | if i % 7 == 3 { 0x80 } else { 0 },
            // A row with NaN and Inf codes (patched after the combination).
            5 => {
                if i == k / 2 {
                    0x7F
                } else if i == k / 3 && f == Format::E5m2 {
                    0xFC
                } else {
                    finite(rng)
                }
            }
            // Random finite codes.
            _ => finite(rng),
        })
        .collect()
}

/// The plans of the battery for a preset: fast and slow unsplit, and S = 2 and 3 with every documented scheme (a
/// plan follows the preset's parameters and the rule alone, whichever GPU splits that way).
fn plans(preset: &Preset, k: usize) -> Vec<Plan> {
    let mut v = Vec::new();
    for fast in [true, false] {
        let mut splits = vec![SplitK::NONE];
        for s in [2, 3] {
            for scheme in [Scheme::Serial, Scheme::Pairwise, Scheme::Contiguous] {
                splits.extend(SplitK::new(s, scheme).ok());
            }
        }
        for split in splits {
            v.extend(Plan::new(preset, k, fast, split).ok());
        }
    }
    v
}

/// The block-scaled presets of the scaled battery: b200_tcgen05 (e8m0 scales per 32, the i32 step), a 40-bit
/// nearest-even one (the wide step), two with late c (a 16-product nearest-even one on the i32 step, a 30-bit one on
/// the wide step, whose grid [`grid_rows`] sees) and the battery's 64-product one, for MXFP8; the B200 tcgen05
/// profile's e2m1 instruction (ue4m3 scales per 16) for NVFP4.
fn scaled_presets() -> Vec<Preset> {
    let nearest = BlockRounding::NearestEven;
    let wide =
        PresetSpec::custom("selfcheck-scaled-wide", 32, 40, 23, -100, CEntry::Early, None).with_rounding(nearest);
    let late = PresetSpec::custom("selfcheck-scaled-late", 16, 24, 23, -133, CEntry::Late, None).with_rounding(nearest);
    let late_wide = PresetSpec::custom("selfcheck-scaled-late-wide", 64, 30, 20, -128, CEntry::Late, None);
    let mut v = vec![Preset::b200_tcgen05()];
    for spec in [wide, late, late_wide] {
        let block = spec.nfma;
        v.extend(Preset::custom(spec.with_scale_block(Some(block))));
    }
    v.extend(presets().into_iter().filter(|p| p.scale_block().is_some()));
    v.push(b200_tcgen05_mxf4nvf4());
    v
}

/// The block-scaled chains through one engine (`ChainEngine::scaled_chains`, `ChainEngine::group_chains`): a full
/// panel and a partial one, K in several pieces with a short last block, the battery's adversarial rows (the one with
/// NaN and Inf codes in its own call, which the model computes whole), scales near 1 with a block at each end of the
/// scale format and a NaN scale in four rows of B.
fn scaled_battery(engine: &CpuEngine) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5CA1_ED5E_1FC4_EC4B);
    let (m, n, k) = (3usize, engine.level().width() + 5, 203usize);
    for preset in scaled_presets() {
        let group = preset.group().is_some();
        let block = preset.scale_block().unwrap_or(32);
        let nb = k.div_ceil(block);
        for nonfinite in [false, true] {
            let (fa, fb) = (Format::E4m3, if nonfinite { Format::E5m2 } else { Format::E4m3 });
            let patterns = |i: usize| if nonfinite { 5 } else { [0, 1, 2, 3, 4, 6, 7][i % 7] };
            let (mut a, mut b): (Vec<u8>, Vec<u8>) = if group {
                (
                    (0..m * k).map(|_| rng.random_range(0..16)).collect(),
                    (0..n * k).map(|_| rng.random_range(0..16)).collect(),
                )
            } else {
                (
                    (0..m).flat_map(|i| row(&mut rng, fa, k, patterns(i))).collect(),
                    (0..n).flat_map(|j| row(&mut rng, fb, k, patterns(j * 3 + 1))).collect(),
                )
            };
            if !group && !nonfinite {
                grid_rows(&mut a[..k], &mut b[..k]);
            }
            // e8m0: 127 is 1, 255 NaN; ue4m3: 0x38 is 1, 0x7F NaN.
            let (one, ends) = if group { (0x38u8, [0x00, 0x01, 0x7E, 0x7F]) } else { (127, [0, 1, 254, 255]) };
            // Near 1; in B's rows 1 to 4 one block at an end each (the outputs of those columns go to the model).
            let mut near =
                |rows: usize| -> Vec<u8> { (0..rows * nb).map(|_| one - 8 + rng.random_range(0..16)).collect() };
            let (sa, mut sb) = (near(m), near(n));
            for (j, &e) in ends.iter().enumerate() {
                sb[(j + 1) * nb + j % nb] = e;
            }
            let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
            let (want, got) = if group {
                (ReferenceEngine.group_chains(&preset, &ops, &sa, &sb), engine.group_chains(&preset, &ops, &sa, &sb))
            } else {
                (ReferenceEngine.scaled_chains(&preset, &ops, &sa, &sb), engine.scaled_chains(&preset, &ops, &sa, &sb))
            };
            let bits = |x: &f32| if x.is_nan() { 0x7FFF_FFFF } else { x.to_bits() };
            if let Some(i) = (0..want.len()).find(|&i| bits(&want[i]) != bits(&got[i])) {
                return Err(format!(
                    "{} differs from the model: block-scaled preset {}, {fa} x {fb}, [{m}, {n}, {k}] output ({}, {}): \
                     {:#010x} instead of {:#010x}",
                    engine.name(),
                    preset.name(),
                    i / n,
                    i % n,
                    bits(&got[i]),
                    bits(&want[i])
                ));
            }
        }
    }
    Ok(())
}

/// A row of A and one of B (e4m3) made a pair whose products sit on a block's grid: in each four positions 448 · 448,
/// -448 · 448 (cancelling exactly), 2^-6 · 1.875 · 2^-6 (bits from 2^-12 down to 2^-15) and a zero. With the block
/// exponent 16 and frac 30 the grid is 2^-14, so the grid, the one below it and the one above give three different
/// sums: a block step off by a power of two in its grid fails.
fn grid_rows(a: &mut [u8], b: &mut [u8]) {
    for (i, (a, b)) in a.iter_mut().zip(b.iter_mut()).enumerate() {
        (*a, *b) = [(0x7E, 0x7E), (0xFE, 0x7E), (0x08, 0x0F), (0x00, 0x00)][i % 4];
    }
}

/// Run the battery on `engine`: Ok, or the first difference from the model. It runs in the IEEE default
/// floating-point state (subnormals kept, round to nearest), set for its span and the caller's restored after it
/// ([`FpState::ieee`]): the verdict is the engine's, whatever state the calling thread is in.
pub fn run(engine: &CpuEngine) -> Result<(), String> {
    let _ieee = FpState::ieee();
    engine.with_every_tiling().iter().try_for_each(battery)?;
    scaled_battery(engine)
}

/// The battery through one engine.
fn battery(engine: &CpuEngine) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x9E37_79B9_7F4A_7C15);
    let width = engine.level().width();
    let pairs = [
        (Format::E4m3, Format::E4m3),
        (Format::E4m3, Format::E5m2),
        (Format::E5m2, Format::E4m3),
        (Format::E5m2, Format::E5m2),
    ];
    for preset in presets() {
        for (pi, &(fa, fb)) in pairs.iter().enumerate() {
            // Ragged K; one shape with several panels and a partial one, whose last row of A and first of B are
            // `grid_rows` (that row's pattern, 2, is in the next two shapes).
            let (m, n, k) = if pi == 0 { (3, width + 5, 200) } else { (2, 5, 150 + 17 * pi) };
            let mut a: Vec<u8> = (0..m).flat_map(|i| row(&mut rng, fa, k, (i + pi) % 7)).collect();
            let mut b: Vec<u8> = (0..n).flat_map(|j| row(&mut rng, fb, k, (j * 3 + pi) % 8)).collect();
            if pi == 0 {
                grid_rows(&mut a[(m - 1) * k..], &mut b[..k]);
            }
            let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
            for plan in plans(&preset, k) {
                let want = execute(&preset, &plan, &ops, &ReferenceEngine).map_err(|e| e.to_string())?;
                let got = execute(&preset, &plan, &ops, engine).map_err(|e| e.to_string())?;
                let bits = |x: &f32| if x.is_nan() { 0x7FFF_FFFF } else { x.to_bits() };
                if let Some(i) = (0..want.len()).find(|&i| bits(&want[i]) != bits(&got[i])) {
                    return Err(format!(
                        "{} differs from the model: preset {}, {fa} x {fb}, fast {}, split {}, [{m}, {n}, {k}] \
                         output ({}, {}): {:#010x} instead of {:#010x}",
                        engine.name(),
                        preset.name(),
                        plan.fast(),
                        plan.split(),
                        i / n,
                        i % n,
                        bits(&got[i]),
                        bits(&want[i])
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{CpuEngine, SimdLevel};

    #[test]
    fn every_available_level_passes() {
        for level in SimdLevel::available(None) {
            super::run(&CpuEngine::with_level(level)).unwrap();
        }
    }
}
