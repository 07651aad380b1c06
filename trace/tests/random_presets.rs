//! The trace and the attribution against the model on random presets: a seeded generator of valid presets over the
//! whole parameter space of `Preset::custom` (both roundings, both c entries, any nfma, frac, frac_out and min_exp,
//! block scales, slow chunks) and of calls over them; every traced element ends in the model's bits.

// FUZZ_CALLS calls (10,000: about 15 s in the test profile on 2 cores); one call in ATTRIBUTE_EVERY also attributes
// the whole GEMM. `MMAEMU_FUZZ_SEED` changes the base seed (`mmaemu_testkit::seed`); call i draws from its own stream
// (base + i), so a failure names the seed and the call, and reruns with that seed.

use mmaemu_model::{
    accumulate, dot, gemm, BlockRounding, CEntry, Epilogue, Format, Operands, OutDtype, Plan, Preset, PresetSpec,
    Scheme, SplitK,
};
use mmaemu_trace::fast::FastGemm;
use mmaemu_trace::summary::{attribute_exact, attribute_gemm};
use mmaemu_trace::{attribute, trace_dot, trace_element, Trace};

const FUZZ_CALLS: u64 = 10_000;
const ATTRIBUTE_EVERY: u64 = 8;

#[path = "../../model/tests/common/mod.rs"]
mod common;
mod draw;
use common::SplitMix64 as Rng;
use draw::{code, scale};

/// A valid preset drawn from the whole space `Preset::custom` accepts, biased towards the edges: nfma 1 and sizes
/// that are not powers of two, frac and frac_out at their bounds, min_exp near the fp32 range and at ±1000.
fn random_preset(r: &mut Rng) -> Preset {
    let nfma = match r.below(3) {
        0 => r.choice(&[1, 2, 7, 16, 32, 33, 64]),
        _ => 1 + r.below(64) as u32,
    };
    let frac = match r.below(4) {
        0 => r.choice(&[1, 2, 13, 25, 39, 40]),
        _ => 1 + r.below(40) as u32,
    };
    let rounding = if r.below(2) == 0 { BlockRounding::Truncate } else { BlockRounding::NearestEven };
    let frac_out = match (rounding, r.below(3)) {
        (BlockRounding::NearestEven, _) | (_, 0) => 23,
        (_, 1) => r.choice(&[1, 2, 13, 22]),
        _ => 1 + r.below(23) as u32,
    };
    let min_exp = match r.below(8) {
        0 => r.choice(&[-1000, 1000, 0, -126, -149, 30]),
        1 => r.below(2001) as i32 - 1000,
        _ => -170 + r.below(60) as i32,
    };
    let c_entry = if r.below(2) == 0 { CEntry::Early } else { CEntry::Late };
    let slow_chunk = match r.below(3) {
        0 => None,
        1 => Some(r.choice(&[16, 32, 128])),
        _ => Some(1 + r.below(200) as u32),
    };
    let scale_block = (r.below(4) == 0).then_some(nfma);
    let spec = PresetSpec::custom("random", nfma, frac, frac_out, min_exp, c_entry, slow_chunk)
        .with_rounding(rounding)
        .with_scale_block(scale_block);
    Preset::custom(spec.clone()).unwrap_or_else(|e| panic!("the generator drew an invalid preset {spec:?}: {e}"))
}

/// A split the plan accepts: none, or S = 2..8 with a documented scheme or a fitted rule of another order and
/// layout (slow accumulation needs a rule with a slow restart; all of these have one).
fn split(r: &mut Rng) -> SplitK {
    if r.below(3) == 0 {
        return SplitK::NONE;
    }
    let rules = ["interleaved32/tree/restart4", "contiguous64/reversed/restart2", "interleaved16/pairwise/restart3"];
    let scheme = match r.below(6) {
        0 => Scheme::Serial,
        1 => Scheme::Pairwise,
        2 => Scheme::Contiguous,
        i => Scheme::from_name(rules[i as usize - 3]).unwrap(),
    };
    SplitK::new(2 + r.below(7) as usize, scheme).unwrap()
}

/// One random call over a random preset: a traced element's bits against `gemm`, `accumulate` and `dot`; every
/// ATTRIBUTE_EVERY-th call also the whole GEMM's attribution. Returns the preset's rounding and c entry, and the
/// attributed outputs and how many of them the fixed point took.
fn fuzz_one(r: &mut Rng, call: u64, seed: u64) -> (BlockRounding, CEntry, [usize; 2]) {
    let preset = random_preset(r);
    let fmts = [Format::E4m3, Format::E5m2];
    let (fa, fb) = (fmts[r.below(2) as usize], fmts[r.below(2) as usize]);
    let k = match r.below(10) {
        0 => 0,
        1 => 1 + r.below(3 * preset.nfma() as u64) as usize,
        2..=5 => 1 + r.below(400) as usize,
        _ => 1 + r.below(120) as usize,
    };
    let (m, n) = (1 + r.below(2) as usize, 1 + r.below(3) as usize);
    let band = r.below(0x60) as u8;
    let a: Vec<u8> = (0..m * k).map(|_| code(r, fa, band, true)).collect();
    let b: Vec<u8> = (0..n * k).map(|_| code(r, fb, band, true)).collect();
    let split = split(r);
    // Unsplit slow accumulation needs the preset's slow chunk; a split is cut by its rule's slow restart.
    let fast = (split.s() == 1 && preset.slow_chunk().is_none()) || r.below(2) == 0;
    let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
    let epi = Epilogue {
        scale_a: scale(r),
        scale_b: scale(r),
        scale_result: (r.below(2) == 0).then(|| scale(r)),
        out: OutDtype::ALL[r.below(5) as usize],
    };
    let (i, j) = (r.below(m as u64) as usize, r.below(n as u64) as usize);
    let plan = Plan::new(&preset, k, fast, split).unwrap();
    let what = format!(
        "call {call} of seed 0x{seed:016X} (rerun: MMAEMU_FUZZ_SEED=0x{seed:016X} cargo test -p mmaemu-trace --test \
         random_presets): {:?} {fa:?}x{fb:?} K={k} M={m} N={n} fast={fast} split={split} {epi:?} element ({i}, {j})",
        preset.spec()
    );

    let out = gemm(&preset, &ops, fast, split, &epi).unwrap().bits;
    let t = trace_element(&preset, &plan, &ops, i, j, Some(&epi)).unwrap();
    assert_eq!(t.bits, out[i * n + j], "gemm: {what}");
    parts_add_up(&t, &what);

    let acc = accumulate(&preset, &ops, fast, split).unwrap();
    let t = trace_element(&preset, &plan, &ops, i, j, None).unwrap();
    assert_eq!(t.bits, acc[i * n + j].to_bits(), "accumulate: {what}");
    parts_add_up(&t, &what);

    let c = match r.below(4) {
        0 => None,
        1 => Some(f32::from_bits(r.next() as u32)),
        _ => Some(f32::from_bits((r.next() as u32 & 0x807F_FFFF) | ((110 + r.below(30) as u32) << 23))),
    };
    let (ra, rb) = (&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
    let want = dot(&preset, fa, fb, ra, rb, c).unwrap();
    let t = trace_dot(&preset, fa, fb, ra, rb, c).unwrap();
    assert_eq!(t.bits, want.to_bits(), "dot with c {c:?}: {what}");
    parts_add_up(&t, &what);

    let outputs = if call.is_multiple_of(ATTRIBUTE_EVERY) {
        attribution_matches(&preset, &plan, &ops, &epi, &out, &acc, &what)
    } else {
        [0, 0]
    };
    (preset.rounding(), preset.c_entry(), outputs)
}

/// The whole GEMM's attribution, with the epilogue and without: every output's bits are the model's, and every
/// output the fixed point attributes equals the exact trace's attribution. Returns [outputs, fixed-point outputs].
fn attribution_matches(
    preset: &Preset,
    plan: &Plan,
    ops: &Operands<'_>,
    epi: &Epilogue,
    out: &[u32],
    acc: &[f32],
    what: &str,
) -> [usize; 2] {
    let mut counts = [0, 0];
    for e in [Some(epi), None] {
        let g = attribute_gemm(preset, plan, ops, e).unwrap_or_else(|err| panic!("attribute_gemm: {err}: {what}"));
        let fast = FastGemm::new(preset, plan, *ops, e).unwrap();
        for (idx, f) in g.figures.iter().enumerate() {
            let want = if e.is_some() { out[idx] } else { acc[idx].to_bits() };
            assert_eq!(f.bits, want, "attribute_gemm output {idx} (epilogue {}): {what}", e.is_some());
            let (i, j) = (idx / ops.n, idx % ops.n);
            let exact = attribute_exact(preset, plan, ops, i, j, e).unwrap();
            assert_eq!(exact.0, want, "attribute_exact ({i}, {j}): {what}");
            counts[0] += 1;
            if let Some(got) = fast.element(i, j) {
                assert_eq!(got, exact, "fixed point ({i}, {j}) (epilogue {}): {what}", e.is_some());
                counts[1] += 1;
            }
        }
    }
    counts
}

/// Where the trace has an attribution, its parts sum exactly to emulated − exact and the emulated value is the
/// element's.
fn parts_add_up(t: &Trace, what: &str) {
    if let Some(a) = attribute(t) {
        assert_eq!(a.parts_sum(), a.total, "parts: {what}");
        assert_eq!(a.emulated.sub(&a.exact), a.total, "total: {what}");
        assert_eq!(a.emulated.to_f64(), t.dtype.to_f64(t.bits), "emulated: {what}");
    }
}

#[test]
fn random_presets_trace_to_the_models_bits() {
    let seed = mmaemu_testkit::seed::base_seed().unwrap();
    eprintln!("random presets: {FUZZ_CALLS} calls from seed 0x{seed:016X} (MMAEMU_FUZZ_SEED)");
    let (mut drawn, mut outputs) = ([0u64; 4], [0usize; 2]);
    for call in 0..FUZZ_CALLS {
        let mut r = Rng(seed.wrapping_add(call.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let (rounding, c_entry, o) = fuzz_one(&mut r, call, seed);
        drawn[2 * usize::from(rounding == BlockRounding::NearestEven) + usize::from(c_entry == CEntry::Late)] += 1;
        outputs = [outputs[0] + o[0], outputs[1] + o[1]];
    }
    eprintln!("truncate/nearest-even x early/late: {drawn:?}; attributed outputs, fixed point: {outputs:?}");
    // Every pair of rounding and c entry was drawn often, and the fixed point (not only its exact fallback) took
    // most attributed outputs: the comparison is not the exact trace against itself.
    assert!(drawn.iter().all(|&d| d > FUZZ_CALLS / 8), "truncate/nearest-even x early/late: {drawn:?}");
    assert!(outputs[1] * 4 > outputs[0] * 3, "attributed outputs, fixed point: {outputs:?}");
}

#[test]
fn a_nearest_even_trace_says_so_and_rounds_up() {
    // One block 256·256 + 2^-7·1 + 2^-8·1 = 2^16 + 1.5 ulp (ulp 2^-7), exact on the grid of frac = 40: a truncating
    // preset cuts it to 2^16 + 1 ulp and a nearest-even one rounds it to 2^16 + 2 ulp. The expected bits are `dot`'s.
    let spec = |rounding| PresetSpec::custom("ne", 4, 40, 23, -133, CEntry::Early, None).with_rounding(rounding);
    let e4 = |x: f32| Format::E4m3.from_f32_saturating(x);
    let (a, b) = ([e4(256.0), e4(2f32.powi(-7)), e4(2f32.powi(-8))], [e4(256.0), e4(1.0), e4(1.0)]);
    let mut bits = Vec::new();
    for rounding in [BlockRounding::Truncate, BlockRounding::NearestEven] {
        let preset = Preset::custom(spec(rounding)).unwrap();
        let want = dot(&preset, Format::E4m3, Format::E4m3, &a, &b, None).unwrap();
        let t = trace_dot(&preset, Format::E4m3, Format::E4m3, &a, &b, None).unwrap();
        assert_eq!(t.bits, want.to_bits(), "{rounding:?}");
        let text = mmaemu_trace::text::render(&t, true);
        let json = mmaemu_trace::json::trace_json(&t);
        assert_eq!(text.contains("rounded to nearest even"), rounding == BlockRounding::NearestEven, "{text}");
        assert_eq!(json["rounding"], rounding.name());
        bits.push(t.bits);
    }
    // The two roundings differ on this block (the model says so; the trace follows).
    assert_ne!(bits[0], bits[1]);
}
