//! The trace of one element against the model: its final bits equal `gemm`'s, `accumulate`'s and `dot`'s on fuzzed
//! calls of every preset, and its intermediate values equal the worked examples of docs/reference.md.

// The fuzz count per preset is FUZZ_CALLS (10,000 for each of the five built-in presets: about 20 s in the test
// profile on 2 cores).

use mmaemu_model::{accumulate, dot, gemm, Epilogue, Format, Operands, OutDtype, Plan, Preset, Scheme, SplitK};
use mmaemu_trace::{attribute, trace_dot, trace_element, Exact, ExpSource, Trace};

const FUZZ_CALLS: usize = 10_000;

/// SplitMix64: a fixed, seeded stream for the fuzzed calls.
#[path = "../../model/tests/common/mod.rs"]
mod common;
mod draw;
use common::SplitMix64 as Rng;
use draw::{code, scale};

fn preset_of(i: u64) -> Preset {
    match i {
        0 => Preset::ada(),
        1 => Preset::hopper(),
        2 => Preset::b200_mma_sync(),
        3 => Preset::b200_tcgen05(),
        _ => Preset::rtx50_mma_sync(),
    }
}

/// One fuzzed GEMM element and one fuzzed dot: the trace's bits against the model's.
fn fuzz_one(r: &mut Rng, preset: &Preset) {
    let fmts = [Format::E4m3, Format::E5m2];
    let (fa, fb) = (fmts[r.below(2) as usize], fmts[r.below(2) as usize]);
    let k = match r.below(10) {
        0 => r.below(1100) as usize,
        1 => 0,
        _ => 1 + r.below(300) as usize,
    };
    let (m, n) = (1 + r.below(2) as usize, 1 + r.below(3) as usize);
    let band = r.below(0x60) as u8;
    let a: Vec<u8> = (0..m * k).map(|_| code(r, fa, band, true)).collect();
    let b: Vec<u8> = (0..n * k).map(|_| code(r, fb, band, true)).collect();
    let characterised = preset.slow_chunk().is_some();
    let fast = !characterised || r.below(2) == 0;
    let split = if !characterised || r.below(3) == 0 {
        SplitK::NONE
    } else {
        let s = 2 + r.below(7) as usize;
        // The preset's documented schemes and split rules of other orders and layouts (a bundle's fitted rules).
        let mut schemes = mmaemu_model::Catalogue::builtin().schemes(preset);
        for rule in ["interleaved32/tree/restart4", "contiguous64/reversed/restart2", "interleaved16/pairwise/restart3"]
        {
            schemes.push(mmaemu_model::Scheme::from_name(rule).unwrap());
        }
        SplitK::new(s, schemes[r.below(schemes.len() as u64) as usize]).unwrap()
    };
    let ops = Operands { fa, fb, a: &a, b: &b, m, n, k };
    let outs = OutDtype::ALL;
    let epi = Epilogue {
        scale_a: scale(r),
        scale_b: scale(r),
        scale_result: (r.below(2) == 0).then(|| scale(r)),
        out: outs[r.below(5) as usize],
    };
    let (i, j) = (r.below(m as u64) as usize, r.below(n as u64) as usize);
    let plan = Plan::new(preset, k, fast, split).unwrap();
    let what = format!("{} {fa:?}x{fb:?} K={k} fast={fast} split={split} {epi:?} element ({i}, {j})", preset.name());

    let want = gemm(preset, &ops, fast, split, &epi).unwrap().bits[i * n + j];
    let t = trace_element(preset, &plan, &ops, i, j, Some(&epi)).unwrap();
    assert_eq!(t.bits, want, "gemm: {what}");
    parts_add_up(&t, &what);

    let acc = accumulate(preset, &ops, fast, split).unwrap()[i * n + j];
    let t = trace_element(preset, &plan, &ops, i, j, None).unwrap();
    assert_eq!(t.bits, acc.to_bits(), "accumulate: {what}");

    let c = match r.below(4) {
        0 => None,
        1 => Some(f32::from_bits(r.next() as u32)),
        _ => Some(f32::from_bits((r.next() as u32 & 0x807F_FFFF) | ((110 + r.below(30) as u32) << 23))),
    };
    let (ra, rb) = (&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
    let want = dot(preset, fa, fb, ra, rb, c).unwrap();
    let t = trace_dot(preset, fa, fb, ra, rb, c).unwrap();
    assert_eq!(t.bits, want.to_bits(), "dot with c {c:?}: {what}");
    parts_add_up(&t, &what);
}

/// The attribution's parts sum exactly to emulated − exact, and the emulated value is the element's.
fn parts_add_up(t: &Trace, what: &str) {
    if let Some(a) = attribute(t) {
        assert_eq!(a.parts_sum(), a.total, "parts: {what}");
        assert_eq!(a.emulated.add(&a.exact.neg()), a.total, "total: {what}");
        assert_eq!(a.emulated.to_f64(), t.dtype.to_f64(t.bits), "emulated: {what}");
    } else {
        // Only non-finite values on the way leave no exact difference.
        let finite = t.dtype.to_f64(t.bits).is_finite() && t.accumulator.is_finite();
        let epi_finite = t.epilogue.as_ref().is_none_or(|e| {
            e.alpha.is_finite()
                && e.y.is_finite()
                && e.scaled.as_ref().is_none_or(|s| s.1.is_some() && s.2.is_finite())
                && e.scale_a.is_finite()
                && e.scale_b.is_finite()
        });
        assert!(
            !(finite
                && epi_finite
                && t.patch.is_none()
                && t.splits.iter().all(|s| s.chains.iter().all(|c| c.start.is_finite()))),
            "no attribution: {what}"
        );
    }
}

fn fuzz(calls: usize) {
    for p in 0..5 {
        let preset = preset_of(p);
        let mut r = Rng(0x7472_6163_6500 + p);
        for _ in 0..calls {
            fuzz_one(&mut r, &preset);
        }
    }
}

#[test]
fn fuzzed_calls_end_in_the_models_bits() {
    fuzz(FUZZ_CALLS);
}

fn e4(x: f32) -> u8 {
    Format::E4m3.from_f32_saturating(x)
}

fn exact(x: f64) -> Exact {
    Exact::of_f64(x).unwrap()
}

#[test]
fn s2_6_small_term_below_the_grid() {
    // docs/reference.md §2.6: ada, 256·1 + 2^-6·1 in one block -> 0x1.0000p+8; the small term falls below the grid
    // 2^(8-13); the exact sum is 0x1.0004p+8.
    let t = trace_dot(&Preset::ada(), Format::E4m3, Format::E4m3, &[e4(256.0), e4(2f32.powi(-6))], &[e4(1.0); 2], None)
        .unwrap();
    let b = &t.splits[0].chains[0].blocks[0];
    assert_eq!((b.e, b.g, b.source), (8, -5, ExpSource::Product(0)));
    assert_eq!(b.terms[1].exact, exact(2f64.powi(-6)));
    assert_eq!(b.terms[1].kept, Exact::zero());
    assert_eq!(b.terms[1].dropped, exact(2f64.powi(-6)));
    assert_eq!(b.exact_sum.hex(), "0x1.0004p+8");
    assert_eq!(b.aligned_sum, exact(256.0));
    assert_eq!(t.bits, 0x4380_0000);
    // 256·1 - 2^-6·1: toward zero, not down: the -2^-6 is dropped whole, the result stays 0x1p+8.
    let t =
        trace_dot(&Preset::ada(), Format::E4m3, Format::E4m3, &[e4(256.0), e4(-(2f32.powi(-6)))], &[e4(1.0); 2], None)
            .unwrap();
    let b = &t.splits[0].chains[0].blocks[0];
    assert_eq!(b.exact_sum.hex(), "0x1.fff8p+7");
    assert_eq!(b.terms[1].dropped, exact(-(2f64.powi(-6))));
    assert_eq!(t.bits, 0x4380_0000);
}

#[test]
fn s2_6_c_sets_the_exponent() {
    // §2.6: ada, c = 2^20, product 1·1 -> 0x1.0000p+20 (exact sum 0x1.00001p+20): c sets E = 20.
    let t = trace_dot(&Preset::ada(), Format::E4m3, Format::E4m3, &[e4(1.0)], &[e4(1.0)], Some(2f32.powi(20))).unwrap();
    let b = &t.splits[0].chains[0].blocks[0];
    assert_eq!((b.e, b.source), (20, ExpSource::Accumulator));
    assert_eq!(b.exact_sum.hex(), "0x1.00001p+20");
    assert_eq!(t.bits, 2f32.powi(20).to_bits());
    // b200_mma_sync: c = 2^20, product 2^-4 -> RN32 tie to even of 2^20 + 2^-4: the late addition's error is -2^-4.
    let t =
        trace_dot(&Preset::b200_mma_sync(), Format::E4m3, Format::E4m3, &[e4(0.25)], &[e4(0.25)], Some(2f32.powi(20)))
            .unwrap();
    let add = t.splits[0].chains[0].blocks[0].late_add.clone().unwrap();
    assert_eq!(add.error, Some(exact(-(2f64.powi(-4)))));
    assert_eq!(t.bits, 2f32.powi(20).to_bits());
}

#[test]
fn s3_2_serial_split_keeps_the_small_terms() {
    // §3.2: K = 128, a = b, a[0] = 1, a[64..79] = 2^-9, fast, ada: unsplit -> 1.0; S = 2 serial -> 0x1.0004p+0,
    // split 1 sums 2^-14 exactly and the fp32 addition keeps it.
    let mut a = vec![0u8; 128];
    a[0] = e4(1.0);
    for x in &mut a[64..80] {
        *x = e4(2f32.powi(-9));
    }
    let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a: &a, b: &a, m: 1, n: 1, k: 128 };
    let ada = Preset::ada();
    let unsplit = Plan::new(&ada, 128, true, SplitK::NONE).unwrap();
    let t = trace_element(&ada, &unsplit, &ops, 0, 0, None).unwrap();
    assert_eq!(t.bits, 1f32.to_bits());
    // The 16 products 2^-18 meet c = 1.0 in block 4 (k 64..79): E = 0, grid 2^-13, each is dropped whole.
    let b = &t.splits[0].chains[0].blocks[4];
    assert_eq!((b.e, b.source), (0, ExpSource::Accumulator));
    assert!(b.terms.iter().all(|x| x.kept.is_zero() && x.dropped == exact(2f64.powi(-18))));
    let split = Plan::new(&ada, 128, true, SplitK::new(2, Scheme::Serial).unwrap()).unwrap();
    let t = trace_element(&ada, &split, &ops, 0, 0, None).unwrap();
    assert_eq!(t.splits[1].partial, 2f32.powi(-14));
    assert_eq!(t.combination.len(), 1);
    assert_eq!(t.combination[0].error, Some(Exact::zero()));
    assert_eq!(t.bits, (1.0f32 + 2f32.powi(-14)).to_bits());
}

#[test]
fn s4_single_rounding_and_zero_rule() {
    // §4 step 2: an exactly zero product gives +0 (acc = 0, alpha = -1); -2^-151 underflows to -0.
    let ada = Preset::ada();
    let zero = [0u8; 16];
    let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a: &zero, b: &zero, m: 1, n: 1, k: 16 };
    let plan = Plan::new(&ada, 16, true, SplitK::NONE).unwrap();
    let epi = Epilogue { scale_a: -1.0, scale_b: 1.0, scale_result: None, out: OutDtype::Float32 };
    let t = trace_element(&ada, &plan, &ops, 0, 0, Some(&epi)).unwrap();
    assert_eq!(t.bits, 0);
    assert!(t.epilogue.unwrap().y_rule.unwrap().contains("exactly zero"));
    let mut a = zero;
    a[0] = e4(2f32.powi(-5));
    let mut bb = zero;
    bb[0] = e4(1.0);
    let ops = Operands { a: &a, b: &bb, ..ops };
    let epi = Epilogue { scale_a: -(2f32.powi(-126)), scale_b: 2f32.powi(-20), ..epi };
    let t = trace_element(&ada, &plan, &ops, 0, 0, Some(&epi)).unwrap();
    assert_eq!(t.bits, 0x8000_0000);
    let e = t.epilogue.unwrap();
    assert_eq!(e.product, Some(exact(-(2f64.powi(-151)))));
    assert_eq!(e.y_error, Some(exact(2f64.powi(-151))));
}

#[test]
fn docs_trace_md_shows_the_current_trace() {
    // docs/trace.md traces the §2.6 example "16 × (2^-6·1) at k = 0..15, then 256·1 at k = 16 (K = 32)" on ada and
    // hopper; its text blocks must be what the printer prints now (on a mismatch the current text is written to
    // target/trace-md-current.txt).
    let mut a = vec![0u8; 32];
    let mut b = vec![0u8; 32];
    for k in 0..16 {
        a[k] = e4(2f32.powi(-6));
        b[k] = e4(1.0);
    }
    a[16] = e4(256.0);
    b[16] = e4(1.0);
    let mut current = Vec::new();
    for (preset, want) in [(Preset::ada(), 0x4380_2000u32), (Preset::hopper(), 0x4380_0000)] {
        let t = trace_dot(&preset, Format::E4m3, Format::E4m3, &a, &b, None).unwrap();
        assert_eq!(t.bits, want, "§2.6: ada 0x1.004p+8, hopper 0x1.000p+8");
        current.push(mmaemu_trace::text::render(&t, true));
    }
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/trace.md")).unwrap();
    let blocks: Vec<&str> = doc.split("```text\n").skip(1).filter_map(|x| x.split("```").next()).collect();
    if blocks != current {
        let text = current.join("\n=====\n");
        let _ = std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/trace-md-current.txt"), &text);
        panic!("docs/trace.md is not the current trace:\n{text}");
    }
}

#[test]
fn gemm_attribution_adds_up_on_every_output() {
    // Every output of a few GEMMs per preset: attribute_gemm checks in exact arithmetic that each output's parts sum
    // to its total (an error otherwise); the summary counts every output once per source.
    use mmaemu_trace::summary::attribute_gemm;
    let mut r = Rng(0x6174_7472);
    for p in 0..5 {
        let preset = preset_of(p);
        for _ in 0..4 {
            let (m, n, k) = (3, 4, 16 + r.below(300) as usize);
            let band = 0x20 + r.below(0x30) as u8;
            let a: Vec<u8> = (0..m * k).map(|_| code(&mut r, Format::E4m3, band, true) & 0xF7).collect();
            let b: Vec<u8> = (0..n * k).map(|_| code(&mut r, Format::E4m3, band, true) & 0xF7).collect();
            let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a: &a, b: &b, m, n, k };
            let fast = preset.slow_chunk().is_none() || r.below(2) == 0;
            let plan = Plan::new(&preset, k, fast, SplitK::NONE).unwrap();
            let epi = Epilogue { scale_a: 0.75, scale_b: 1.5, scale_result: None, out: OutDtype::BFloat16 };
            let g = attribute_gemm(&preset, &plan, &ops, Some(&epi)).unwrap();
            assert_eq!((g.outputs, g.attributed, g.exact_checks), (m * n, m * n, m * n));
            for s in &g.sources {
                assert_eq!(s.histogram.iter().sum::<usize>(), m * n, "{}", s.name);
            }
            // bf16 output: the epilogue's second rounding changes almost every output.
            assert!(g.sources[4].affected > 0);
        }
    }
}

#[test]
fn trace_text_is_the_json_and_stops_when_interrupted() {
    use mmaemu_model::error::Category;
    use mmaemu_model::interrupt::with_flag;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    // K = 2^15: megabytes of text, written in checked pieces, and a trace freed on a thread of its own.
    let k = 1 << 15;
    let mut r = Rng(7);
    let (a, b): (Vec<u8>, Vec<u8>) =
        (0..k).map(|_| (code(&mut r, Format::E4m3, 40, false), code(&mut r, Format::E4m3, 40, false))).unzip();
    let ops = Operands { fa: Format::E4m3, fb: Format::E4m3, a: &a, b: &b, m: 1, n: 1, k };
    let hopper = Preset::hopper();
    let plan = Plan::new(&hopper, k, false, SplitK::NONE).unwrap();
    let t = trace_element(&hopper, &plan, &ops, 0, 0, None).unwrap();
    let want = mmaemu_trace::json::trace_json(&t).to_string();
    assert!(want.len() > 4 << 20, "{} bytes", want.len());
    let text = mmaemu_trace::json::trace_text(t.clone()).unwrap();
    assert_eq!(text, want);
    // The accumulator's bits are the model's.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let acc = accumulate(&hopper, &ops, false, SplitK::NONE).unwrap()[0];
    assert_eq!(v["accumulator"]["bits"], format!("0x{:08X}", acc.to_bits()));
    let e = with_flag(Arc::new(AtomicBool::new(true)), || mmaemu_trace::json::trace_text(t)).unwrap_err();
    assert_eq!(e.category(), Category::Interrupted);
}
