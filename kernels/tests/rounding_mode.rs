//! The calling thread's MXCSR (rounding control, flush flags, exception masks) is the same after every call of the
//! CPU backend as before it, whatever path the call took: every SIMD level with its tiling chosen per call and
//! with each tiling fixed, decode steps over B's codes, panels, fast and slow plans, splits, and B with non-finite
//! codes (found by the step that reads B, then the model's patch), from round to nearest; from rounding down, every
//! call is refused (docs/reference.md §5.2 step 12) and leaves it as it was too.

#![cfg(target_arch = "x86_64")]

use mmaemu_kernels::fpstate::mxcsr;
use mmaemu_kernels::{CpuEngine, SimdLevel};
use mmaemu_model::plan::{Scheme, SplitK};
use mmaemu_model::{execute, ChainEngine, Format, Operands, Plan, Preset, ReferenceEngine};

/// Load `csr` into this thread's MXCSR.
fn set_mxcsr(csr: u32) {
    // SAFETY: LDMXCSR of a value read from MXCSR with only its rounding-control bits changed.
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags)) };
}

#[test]
fn every_call_leaves_the_callers_mxcsr_as_it_was() {
    let engines: Vec<CpuEngine> =
        SimdLevel::available(None).into_iter().flat_map(|l| CpuEngine::with_level(l).with_every_tiling()).collect();
    // The sticky exception flags (bits 0-5) are the arithmetic's to set; the rest is the caller's state.
    let state = mxcsr() & !0x3F;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for preset in [Preset::hopper(), Preset::ada(), Preset::b200_mma_sync()] {
        for (m, n, k) in [(1, 40, 700), (2, 17, 300), (16, 24, 256), (70, 70, 200)] {
            for (fa, fb) in [(Format::E4m3, Format::E4m3), (Format::E5m2, Format::E5m2)] {
                let code = |f: Format, r: u64| if f.is_nonfinite(r as u8) { 0x21 } else { r as u8 };
                let a: Vec<u8> = (0..m * k).map(|_| code(fa, next())).collect();
                let finite: Vec<u8> = (0..n * k).map(|_| code(fb, next())).collect();
                let mut nan = finite.clone();
                nan[n * k / 2] = fb.nonfinite_mask() | 0x80;
                for b in [&finite, &nan] {
                    let ops = Operands { fa, fb, a: &a, b, m, n, k };
                    for (fast, split) in [
                        (true, SplitK::NONE),
                        (false, SplitK::NONE),
                        (false, SplitK::new(2, Scheme::Contiguous).unwrap()),
                    ] {
                        let Ok(plan) = Plan::new(&preset, k, fast, split) else { continue };
                        let want = execute(&preset, &plan, &ops, &ReferenceEngine).unwrap();
                        for engine in &engines {
                            for rc in [0u32, 0x2000] {
                                set_mxcsr(state | rc);
                                let got = execute(&preset, &plan, &ops, engine);
                                let after = mxcsr() & !0x3F;
                                set_mxcsr(state);
                                let what = format!(
                                    "{} {} [{m}, {n}, {k}] {fa} x {fb} fast {fast} split {split}, non-finite B {}",
                                    engine.name(),
                                    preset.name(),
                                    b == &nan
                                );
                                assert_eq!(after, state | rc, "{what}: the caller's MXCSR changed");
                                if rc != 0 {
                                    // docs/reference.md §5.2 step 12: rounding off nearest is refused.
                                    let e = got.expect_err(&what);
                                    assert_eq!(e.message(), mmaemu_model::fpenv::ROUNDING_MESSAGE, "{what}");
                                    continue;
                                }
                                let bits = |v: &[f32]| {
                                    v.iter()
                                        .map(|x| if x.is_nan() { 0x7FFF_FFFF } else { x.to_bits() })
                                        .collect::<Vec<_>>()
                                };
                                assert_eq!(bits(&got.unwrap()), bits(&want), "{what}");
                            }
                        }
                    }
                }
            }
        }
    }
}
