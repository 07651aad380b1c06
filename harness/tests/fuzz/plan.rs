//! `fuzz/plan/...`: invariants of the accumulation plans (docs/reference.md §3) on random GEMMs.
//!
//! - `zero-padding/<preset>`: appending zero columns to A and B never changes the accumulator (any K for
//!   unsplit plans; within the last k-tile for split plans, where the tile count must not change);
//! - `s1-unsplit/<preset>`: S = 1 equals the unsplit chains built by hand from `Chain::run` (fast: one
//!   chain over K padded to 16; slow: the fp32 sum of the slow-chunk chains);
//! - `single-tiles/<preset>-<scheme>`: a split with S >= T (one k-tile or none per split) equals the
//!   partials built by hand from `Chain::run` per tile, combined by `plan::combine` in the scheme's order;
//! - `k0`: K = 0 gives +0 everywhere, through `accumulate` and through `gemm` whatever the epilogue;
//! - `permute/<preset>`: permuting the rows of A (M) or of B (N) permutes the rows or columns of the result.

use crate::{check, Family};
use mmaemu_model::plan::{combine, ADA_TILE, HOPPER_TILE};
use mmaemu_model::{accumulate, gemm as model_gemm, Chain, Epilogue, OutDtype, Preset, Scheme, SplitK};
use mmaemu_testkit::generators::{gemm, Gemm, GemmShape, HexBits};
use mmaemu_testkit::seed::permutation;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn presets() -> Vec<Preset> {
    vec![Preset::ada(), Preset::hopper(), Preset::b200_mma_sync()]
}

/// NaN bits made canonical.
fn canon(x: f32) -> u32 {
    if x.is_nan() {
        0x7FFF_FFFF
    } else {
        x.to_bits()
    }
}

fn bits(v: &[f32]) -> HexBits {
    HexBits(v.iter().map(|&x| canon(x)).collect())
}

/// fast/slow and a split the preset's plans accept (slow only where characterised; split schemes of
/// the preset's kernels, S up to 12).
pub fn plan_choice(preset: &Preset) -> BoxedStrategy<(bool, SplitK)> {
    let fast = if preset.slow_chunk().is_some() { any::<bool>().boxed() } else { Just(true).boxed() };
    let schemes: Vec<Scheme> = mmaemu_model::Catalogue::builtin().schemes(preset).to_vec();
    if schemes.is_empty() {
        return fast.prop_map(|f| (f, SplitK::NONE)).boxed();
    }
    let split = prop_oneof![
        1 => Just(SplitK::NONE),
        3 => (2usize..=12, 0..schemes.len())
            .prop_map(move |(s, i)| SplitK::new(s, schemes[i]).unwrap_or(SplitK::NONE)),
    ];
    (fast, split).boxed()
}

fn acc(preset: &Preset, g: &Gemm, fast: bool, split: SplitK) -> Result<Vec<f32>, TestCaseError> {
    accumulate(preset, &g.operands(), fast, split).map_err(|e| {
        TestCaseError::fail(format!("accumulate({}, fast {fast}, split {split}) raised {e}", preset.name()))
    })
}

/// The k-tile width of a split scheme.
fn tile_width(scheme: Scheme) -> usize {
    match scheme {
        Scheme::Contiguous => HOPPER_TILE,
        _ => ADA_TILE,
    }
}

/// `g` with `extra` zero columns appended to A and B.
fn pad(g: &Gemm, extra: usize) -> Gemm {
    let k2 = g.k + extra;
    let widen = |x: &[u8], rows: usize| -> Vec<u8> {
        let mut out = vec![0u8; rows * k2];
        for r in 0..rows {
            out[r * k2..r * k2 + g.k].copy_from_slice(&x[r * g.k..(r + 1) * g.k]);
        }
        out
    };
    Gemm { a: widen(&g.a, g.m), b: widen(&g.b, g.n), k: k2, ..g.clone() }
}

fn zero_padding(preset: Preset) -> Family {
    Family::new(format!("fuzz/plan/zero-padding/{}", preset.name()), 8, move |name, seed, cases| {
        let strategy = (gemm(GemmShape::default()), plan_choice(&preset), 1usize..=300);
        check(name, seed, cases, strategy, |(g, (fast, split), want_extra)| {
            let extra = if split.s() == 1 {
                want_extra
            } else {
                // Within the last tile: the tile count, hence the plan's structure, stays the same.
                let w = tile_width(split.scheme());
                let room = g.k.div_ceil(w) * w - g.k;
                if room == 0 {
                    return Ok(());
                }
                1 + (want_extra - 1) % room
            };
            let padded = pad(&g, extra);
            let (x, y) = (acc(&preset, &g, fast, split)?, acc(&preset, &padded, fast, split)?);
            prop_assert_eq!(bits(&x), bits(&y), "K {} -> {} (fast {}, split {})", g.k, padded.k, fast, split);
            Ok(())
        })
    })
}

/// Row `r` of a [rows, k] matrix zero-padded to `len`.
fn padded_row(x: &[u8], r: usize, k: usize, range: std::ops::Range<usize>, len: usize) -> Vec<u8> {
    let mut v = x[r * k + range.start..r * k + range.end].to_vec();
    v.resize(len, 0);
    v
}

fn s1_unsplit(preset: Preset) -> Family {
    Family::new(format!("fuzz/plan/s1-unsplit/{}", preset.name()), 6, move |name, seed, cases| {
        let fast = if preset.slow_chunk().is_some() { any::<bool>().boxed() } else { Just(true).boxed() };
        check(name, seed, cases, (gemm(GemmShape::default()), fast), |(g, fast)| {
            let got = acc(&preset, &g, fast, SplitK::new(1, Scheme::None).unwrap_or(SplitK::NONE))?;
            let chain = Chain::new(&preset, g.fa, g.fb);
            let mut want = Vec::with_capacity(g.m * g.n);
            for i in 0..g.m {
                for j in 0..g.n {
                    let v = if fast {
                        let len = g.k.div_ceil(16) * 16;
                        chain.run(&padded_row(&g.a, i, g.k, 0..g.k, len), &padded_row(&g.b, j, g.k, 0..g.k, len), 0.0)
                    } else {
                        let c = preset.slow_chunk().unwrap_or(128);
                        let mut sum = 0.0f32;
                        for start in (0..g.k).step_by(c) {
                            let r = start..(start + c).min(g.k);
                            sum += chain.run(
                                &padded_row(&g.a, i, g.k, r.clone(), c),
                                &padded_row(&g.b, j, g.k, r, c),
                                0.0,
                            );
                        }
                        sum
                    };
                    want.push(v);
                }
            }
            prop_assert_eq!(bits(&got), bits(&want), "S = 1 (fast {}) against the hand-built unsplit chains", fast);
            Ok(())
        })
    })
}

fn single_tiles(preset: Preset, scheme: Scheme) -> Family {
    let name = format!("fuzz/plan/single-tiles/{}-{}", preset.name(), scheme.name());
    Family::new(name, 8, move |name, seed, cases| {
        let w = tile_width(scheme);
        let shape = GemmShape { k_range: Some((1, 10 * w)), ..GemmShape::default() };
        let strategy = (gemm(shape), 0usize..=3, any::<bool>()).prop_map(move |(g, extra, fast)| {
            // S >= T: every split owns one k-tile or none.
            let s = (g.k.div_ceil(w) + extra).max(2);
            (g, s, fast)
        });
        check(name, seed, cases, strategy, |(g, s, fast)| {
            let split = SplitK::new(s, scheme).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let got = acc(&preset, &g, fast, split)?;
            let t = g.k.div_ceil(w);
            let chain = Chain::new(&preset, g.fa, g.fb);
            let mut want = Vec::with_capacity(g.m * g.n);
            for i in 0..g.m {
                for j in 0..g.n {
                    let partials: Vec<f32> = (0..s)
                        .map(|sp| {
                            if sp >= t {
                                return 0.0; // a split without real columns: +0
                            }
                            let r = sp * w..((sp + 1) * w).min(g.k);
                            let c = chain.run(
                                &padded_row(&g.a, i, g.k, r.clone(), w),
                                &padded_row(&g.b, j, g.k, r, w),
                                0.0,
                            );
                            if fast {
                                c
                            } else {
                                0.0 + c // slow: the sum of the split's one chunk, from +0
                            }
                        })
                        .collect();
                    want.push(combine(scheme, &partials));
                }
            }
            prop_assert_eq!(
                bits(&got),
                bits(&want),
                "K {} (T = {}), S = {} {} (fast {}) against the per-tile chains combined in the scheme's order",
                g.k,
                t,
                s,
                scheme,
                fast
            );
            Ok(())
        })
    })
}

fn out_dtype() -> impl Strategy<Value = OutDtype> {
    proptest::sample::select(OutDtype::ALL.to_vec())
}

fn scale() -> impl Strategy<Value = f32> {
    proptest::sample::select(vec![
        1.0f32,
        0.5,
        -2.0,
        0.0,
        -0.0,
        1e-40,
        3e38,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ])
}

fn k0() -> Family {
    Family::new("fuzz/plan/k0", 2, |name, seed, cases| {
        let strategy =
            (0usize..3, 0usize..=4, 0usize..=4, any::<bool>(), 1usize..=9).prop_flat_map(|(p, m, n, fast, s)| {
                (Just((p, m, n, fast, s)), out_dtype(), scale(), scale(), proptest::option::of(scale()))
            });
        check(name, seed, cases, strategy, |((p, m, n, fast, s), out, sa, sb, sr)| {
            let preset = presets()[p].clone();
            let fast = fast || preset.slow_chunk().is_none();
            let split = match mmaemu_model::Catalogue::builtin().schemes(&preset).first() {
                Some(&scheme) if s > 1 => SplitK::new(s, scheme).unwrap_or(SplitK::NONE),
                _ => SplitK::NONE,
            };
            let g = Gemm {
                fa: mmaemu_model::Format::E4m3,
                fb: mmaemu_model::Format::E5m2,
                m,
                n,
                k: 0,
                a: vec![],
                b: vec![],
            };
            let x = acc(&preset, &g, fast, split)?;
            prop_assert_eq!(
                bits(&x),
                HexBits(vec![0u32; m * n]),
                "K = 0 accumulator ({}, split {})",
                preset.name(),
                split
            );
            let epi = Epilogue { scale_a: sa, scale_b: sb, scale_result: sr, out };
            let o = model_gemm(&preset, &g.operands(), fast, split, &epi)
                .map_err(|e| TestCaseError::fail(format!("gemm raised {e}")))?;
            prop_assert_eq!(
                HexBits(o.bits),
                HexBits(vec![0u32; m * n]),
                "K = 0 gemm ({:?}) gives +0 without an epilogue",
                epi
            );
            Ok(())
        })
    })
}

fn permute_rows(x: &[u8], k: usize, perm: &[usize]) -> Vec<u8> {
    perm.iter().flat_map(|&r| x[r * k..(r + 1) * k].iter().copied()).collect()
}

fn permute(preset: Preset) -> Family {
    Family::new(format!("fuzz/plan/permute/{}", preset.name()), 6, move |name, seed, cases| {
        let shape = GemmShape { m: (2, 5), n: (2, 5), max_huge_k: 4096, ..GemmShape::default() };
        let strategy = (gemm(shape), plan_choice(&preset), any::<u64>(), any::<u64>());
        check(name, seed, cases, strategy, |(g, (fast, split), sa, sb)| {
            let base = bits(&acc(&preset, &g, fast, split)?).0;
            let (pa, pb) = (permutation(g.m, sa), permutation(g.n, sb));
            let ga = Gemm { a: permute_rows(&g.a, g.k, &pa), ..g.clone() };
            let got = bits(&acc(&preset, &ga, fast, split)?);
            let want: Vec<u32> =
                (0..g.m).flat_map(|i| (0..g.n).map(move |j| (i, j))).map(|(i, j)| base[pa[i] * g.n + j]).collect();
            prop_assert_eq!(got, HexBits(want), "rows of A permuted by {:?} (fast {}, split {})", pa, fast, split);
            let gb = Gemm { b: permute_rows(&g.b, g.k, &pb), ..g.clone() };
            let got = bits(&acc(&preset, &gb, fast, split)?);
            let want: Vec<u32> =
                (0..g.m).flat_map(|i| (0..g.n).map(move |j| (i, j))).map(|(i, j)| base[i * g.n + pb[j]]).collect();
            prop_assert_eq!(got, HexBits(want), "rows of B permuted by {:?} (fast {}, split {})", pb, fast, split);
            Ok(())
        })
    })
}

pub fn families() -> Vec<Family> {
    let mut f = Vec::new();
    for p in presets() {
        f.push(zero_padding(p.clone()));
    }
    for p in presets() {
        f.push(s1_unsplit(p.clone()));
    }
    f.push(single_tiles(Preset::ada(), Scheme::Serial));
    f.push(single_tiles(Preset::ada(), Scheme::Pairwise));
    f.push(single_tiles(Preset::hopper(), Scheme::Contiguous));
    f.push(k0());
    for p in presets() {
        f.push(permute(p));
    }
    f
}
