//! The fixed-point attribution of whole GEMMs (`trace::fast`) against the exact trace (`trace::attribute`), output by
//! output and bit for bit, on fuzzed small calls of every preset: edge codes, non-finite rows, split-K, both formats.

use mmaemu_model::{Epilogue, Format, Operands, OutDtype, Plan, Preset, SplitK};
use mmaemu_trace::fast::FastGemm;
use mmaemu_trace::summary::{attribute_exact, attribute_gemm};

/// SplitMix64: a fixed, seeded stream.
#[path = "../../model/tests/common/mod.rs"]
mod common;
use common::SplitMix64 as Rng;

/// Mostly finite codes in an exponent band; zeros, subnormals, the largest finite codes and (rarely) any byte,
/// non-finite ones included.
fn code(r: &mut Rng, f: Format, band: u8, specials: bool) -> u8 {
    let sign = (r.below(2) as u8) << 7;
    let max = f.max_code();
    match r.below(40) {
        0 => 0x80 * r.below(2) as u8,
        1 | 2 => sign | (r.below(8) as u8),
        3 => sign | max,
        4 if specials && r.below(8) == 0 => r.next() as u8,
        _ => {
            let c = (band as u64 + r.below(24)) as u8 & 0x7F;
            if f.is_nonfinite(c) {
                sign | max
            } else {
                sign | c
            }
        }
    }
}

fn scale(r: &mut Rng) -> f32 {
    match r.below(6) {
        0 => 1.0,
        1 => 0.375,
        2 => f32::from_bits(r.next() as u32 & 0x807F_FFFF), // subnormal
        _ => f32::from_bits((r.next() as u32 & 0x807F_FFFF) | ((110 + r.below(30) as u32) << 23)),
    }
}

fn presets() -> Vec<Preset> {
    Preset::list().iter().map(|n| mmaemu_model::Catalogue::builtin().preset(n).unwrap()).collect()
}

/// One fuzzed call: every output's fixed-point attribution equals the exact trace's. Returns (outputs, fixed-point
/// outputs, attributed outputs).
fn check_call(r: &mut Rng, preset: &Preset) -> (usize, usize, usize) {
    let fmts = [Format::E4m3, Format::E5m2];
    let (fa, fb) = (fmts[r.below(2) as usize], fmts[r.below(2) as usize]);
    let k = match r.below(8) {
        0 => 1 + r.below(700) as usize,
        1 => 0,
        _ => 1 + r.below(200) as usize,
    };
    let (m, n) = (1 + r.below(3) as usize, 1 + r.below(3) as usize);
    let band = r.below(0x70) as u8;
    let specials = r.below(4) == 0;
    let a: Vec<u8> = (0..m * k).map(|_| code(r, fa, band, specials)).collect();
    let b: Vec<u8> = (0..n * k).map(|_| code(r, fb, band, specials)).collect();
    let characterised = preset.slow_chunk().is_some();
    let fast = !characterised || r.below(2) == 0;
    let split = if !characterised || r.below(2) == 0 {
        SplitK::NONE
    } else {
        let schemes = mmaemu_model::Catalogue::builtin().schemes(preset);
        SplitK::new(2 + r.below(7) as usize, schemes[r.below(schemes.len() as u64) as usize]).unwrap()
    };
    let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
    let epi = (r.below(5) != 0).then(|| Epilogue {
        scale_a: scale(r),
        scale_b: scale(r),
        scale_result: (r.below(2) == 0).then(|| scale(r)),
        out: OutDtype::ALL[r.below(5) as usize],
    });
    let plan = Plan::new(preset, k, fast, split).unwrap();
    let what = format!("{} {fa:?}x{fb:?} K={k} fast={fast} split={split} {epi:?}", preset.name());
    let g = FastGemm::new(preset, &plan, ops, epi.as_ref()).unwrap();
    let (mut fixed, mut attributed) = (0, 0);
    for i in 0..m {
        for j in 0..n {
            let want = attribute_exact(preset, &plan, &ops, i, j, epi.as_ref()).unwrap();
            if let Some(got) = g.element(i, j) {
                assert_eq!(got, want, "({i}, {j}) of {what}");
                fixed += 1;
            }
            attributed += usize::from(want.1.is_some());
        }
    }
    (m * n, fixed, attributed)
}

#[test]
fn fixed_point_equals_the_exact_trace_on_every_output() {
    for (p, preset) in presets().iter().enumerate() {
        let mut r = Rng(0x6661_7374 + p as u64);
        let (mut outputs, mut fixed, mut attributed) = (0, 0, 0);
        for _ in 0..300 {
            let (o, f, a) = check_call(&mut r, preset);
            outputs += o;
            fixed += f;
            attributed += a;
        }
        // Every output of these calls fits the fixed point (FP8 products, K below 1024): the comparison is never
        // the exact trace against itself. Most outputs have an attribution (non-finite rows are rare).
        assert_eq!(fixed, outputs, "{}", preset.name());
        assert!(attributed * 4 > outputs * 3, "{}: {attributed} of {outputs}", preset.name());
    }
}

#[test]
fn gemm_figures_come_from_the_fixed_point() {
    // attribute_gemm on a 24 x 20 call: no output needs the exact fallback, and its figures are the exact trace's.
    let preset = Preset::hopper();
    let mut r = Rng(7);
    let (m, n, k) = (24, 20, 300);
    let a: Vec<u8> = (0..m * k).map(|_| code(&mut r, Format::E4m3, 0x30, false)).collect();
    let b: Vec<u8> = (0..n * k).map(|_| code(&mut r, Format::E4m3, 0x30, false)).collect();
    let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a: &a, b: &b, m, n, k };
    let plan = Plan::new(&preset, k, true, SplitK::NONE).unwrap();
    let epi = Epilogue { scale_a: 0.75, scale_b: 1.5, scale_result: Some(0.5), out: OutDtype::E4m3 };
    let g = attribute_gemm(&preset, &plan, &ops, Some(&epi)).unwrap();
    assert_eq!((g.outputs, g.attributed, g.exact_fallbacks), (m * n, m * n, 0));
    for (idx, f) in g.figures.iter().enumerate() {
        let (bits, a) = attribute_exact(&preset, &plan, &ops, idx / n, idx % n, Some(&epi)).unwrap();
        let a = a.unwrap();
        assert_eq!((f.bits, f.exact, f.emulated), (bits, a.exact.to_f64(), a.emulated.to_f64()), "{idx}");
    }
}
