//! `mmaemu fit preset` on MXFP8 rows: a block-scaled truth's unscaled accumulators and its MXFP8 calls (constant e8m0
//! block scales, expected bits from the model's block-scaled dot, docs/reference.md §2.8) decide scale_block 32 and
//! keep only 32-product survivors; one flipped bit in an MXFP8 row leaves scale_block open (no survivor computes it);
//! without MXFP8 rows scale_block is none.

use mmaemu_datasets::inputs::{generate, DataClass, InputSpec, Operand, GENERATOR_V1};
use mmaemu_datasets::{Call, Expectation, Op, OutSelect, Row, ScaleLayout, ScaleSpec, ScaleValue, Scaling, Truth};
use mmaemu_fit::preset::{fit, Decision};
use mmaemu_model::accumulate::{accumulate, Operands};
use mmaemu_model::{dot_scaled, CEntry, Format, Preset, PresetSpec, SplitK};
use std::path::PathBuf;

const MN: usize = 16;

fn inputs(stream: u64, data: DataClass) -> InputSpec {
    InputSpec { generator: GENERATOR_V1.into(), seed: 41, stream, data }
}

/// A 16 x 16 x k row of `op` over A = (format, codes) and B, fp32 out, unsplit, expecting `bits`.
fn base(id: String, op: Op, k: usize, (fa, a): (Format, Vec<u8>), (fb, b): (Format, Vec<u8>), bits: Vec<u8>) -> Row {
    Row {
        id,
        op,
        preset: mmaemu_datasets::UNKNOWN_PRESET.into(),
        profile: None,
        gpu: "random".into(),
        truth: Truth::Hardware,
        fmt_a: fa.name().into(),
        fmt_b: fb.name().into(),
        batch: 1,
        m: MN as i64,
        n: MN as i64,
        k: k as i64,
        a,
        b,
        c: None,
        scale_a: None,
        scale_b: None,
        scale_result: None,
        out_dtype: Some("float32".into()),
        fast_accum: Some(false),
        split_s: Some(1),
        split_scheme: Some("none".into()),
        algo: None,
        call: None,
        out_select: OutSelect::Full,
        expected: Expectation::Bits(bits),
        scope: None,
        origin: "fit_mx".into(),
        ext: Default::default(),
    }
}

/// The fast unsplit accumulator of a 16 x 16 x k call on `truth`.
fn accumulator(truth: &Preset, id: String, k: usize, fa: Format, fb: Format, spec: &InputSpec) -> Row {
    let a = generate(spec, Operand::A, fa.name(), MN, k).unwrap();
    let b = generate(spec, Operand::B, fb.name(), MN, k).unwrap();
    let out = accumulate(truth, &Operands { fa, fb, a: &a, b: &b, m: MN, n: MN, k }, true, SplitK::NONE).unwrap();
    let one = Some(1.0f32.to_bits());
    Row {
        op: Op::Gemm,
        fast_accum: Some(true),
        scale_a: one,
        scale_b: one,
        ..base(id, Op::Gemm, k, (fa, a), (fb, b), out.iter().flat_map(|x| x.to_le_bytes()).collect())
    }
}

/// An MXFP8 16 x 16 x k call on `truth` at constant block scales 2^ea (mat1) and 2^eb (mat2).
fn mx(truth: &Preset, id: String, k: usize, fa: Format, fb: Format, spec: &InputSpec, (ea, eb): (i32, i32)) -> Row {
    let a = generate(spec, Operand::A, fa.name(), MN, k).unwrap();
    let b = generate(spec, Operand::B, fb.name(), MN, k).unwrap();
    let kb = k.div_ceil(32);
    let (sa, sb) = (vec![(127 + ea) as u8; kb], vec![(127 + eb) as u8; kb]);
    let mut bits = Vec::new();
    for i in 0..MN {
        for j in 0..MN {
            let (ra, rb) = (&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
            bits.extend(dot_scaled(truth, fa, fb, ra, rb, &sa, &sb, None).unwrap().to_le_bytes());
        }
    }
    let scale = |e: i32| ScaleSpec {
        scaling: Some(Scaling::BlockWise1x32),
        layout: ScaleLayout::Blocked,
        ..ScaleSpec::plain("float8_e8m0fnu", vec![MN as i64, kb as i64], ScaleValue::Number(2f64.powi(e)))
    };
    let call = Call { scale_a: Some(scale(ea)), scale_b: Some(scale(eb)), ..Call::default() };
    Row { call: Some(call), ..base(id, Op::ScaledMm, k, (fa, a), (fb, b), bits) }
}

fn rows(truth: &Preset, with_mx: bool) -> Vec<Row> {
    let mut out = Vec::new();
    let classes =
        [DataClass::Gaussian { scale: 1.0 }, DataClass::Split { scale: 1.0 }, DataClass::Bits { finite: true }];
    for (i, k) in [64usize, 128, 512].into_iter().enumerate() {
        for (j, data) in classes.iter().enumerate() {
            let (fa, fb) = if j == 2 { (Format::E4m3, Format::E5m2) } else { (Format::E4m3, Format::E4m3) };
            out.push(accumulator(truth, format!("u{i}-{j}"), k, fa, fb, &inputs((3 * i + j) as u64, data.clone())));
        }
    }
    if with_mx {
        for (i, x) in [(0, 0), (-62, -62), (-66, -66), (-70, -68), (30, 20)].into_iter().enumerate() {
            for (j, data) in classes.iter().enumerate() {
                let s = inputs(100 + (3 * i + j) as u64, data.clone());
                out.push(mx(truth, format!("mx{i}-{j}"), 64, Format::E4m3, Format::E4m3, &s, x));
            }
        }
    }
    out
}

fn scale_block(truth: &Preset, rows: Vec<Row>) -> (Decision, mmaemu_fit::preset::PresetFit) {
    let f = fit(&[(PathBuf::from("mx"), rows)]);
    assert!(!f.survivors.is_empty(), "truth {:?}: {}", truth.spec(), mmaemu_fit::preset::text(&f));
    let d = f.params.iter().find(|p| p.name == "scale_block").unwrap().decision.clone();
    (d, f)
}

fn truth(frac: u32, c_entry: CEntry, min_exp: i32) -> Preset {
    let spec = PresetSpec::custom("mx-truth", 32, frac, 23, min_exp, c_entry, None).with_scale_block(Some(32));
    Preset::custom(spec).unwrap()
}

#[test]
fn mxfp8_rows_decide_the_scale_block() {
    for t in [truth(25, CEntry::Early, -133), truth(30, CEntry::Late, -128), truth(14, CEntry::Early, -140)] {
        let (d, f) = scale_block(&t, rows(&t, true));
        assert_eq!(d, Decision::Decided("32".into()), "{:?}", t.spec());
        assert!(f.survivors.iter().all(|s| s.spec.nfma == 32 && s.spec.scale_block == Some(32)));
        // The truth is among the survivors, at its floor.
        assert!(
            f.survivors.iter().any(|s| s.spec.frac == t.frac()
                && s.spec.c_entry == t.spec().c_entry
                && s.min_exp.contains(t.min_exp())),
            "{:?}: {}",
            t.spec(),
            mmaemu_fit::preset::text(&f)
        );
        let winner = f.winner("w").unwrap();
        assert_eq!(winner.scale_block(), Some(32));
    }
}

#[test]
fn an_mxfp8_row_no_survivor_computes_leaves_the_scale_block_open() {
    let t = truth(25, CEntry::Early, -133);
    let mut rows = rows(&t, true);
    let last = rows.last_mut().unwrap();
    if let Expectation::Bits(b) = &mut last.expected {
        b[0] ^= 1;
    }
    let (d, f) = scale_block(&t, rows);
    match d {
        Decision::Open { why, .. } => assert!(why.contains("outside the fit's space"), "{why}"),
        other => panic!("{other:?}"),
    }
    // The unscaled survivors stay, and the fitted preset takes no scales.
    assert!(f.survivors.iter().all(|s| s.spec.scale_block.is_none()));
    assert_eq!(f.winner("w").unwrap().scale_block(), None);
}

#[test]
fn without_mxfp8_rows_the_scale_block_is_none() {
    let t = truth(25, CEntry::Early, -133);
    let (d, f) = scale_block(&t, rows(&t, false));
    assert!(matches!(&d, Decision::Harmless { values, .. } if values == &["none"]), "{d:?}");
    assert_eq!(f.winner("w").unwrap().scale_block(), None);
}

/// docs/reference.md §2.9's one equivalence of block-scaled survivors: with an early c, a frac_out that holds the
/// widest block sum and a floor whose value less frac is at least -126 - frac_out, no block result is rounded, so
/// truncation and nearest even, at any such frac_out, give the same bits on block-scaled chains of any scales: random
/// chains, scales from 2^-127 to 2^127 (half of them near the foot of fp32's range), with zero products and tiny ones.
#[test]
fn an_exact_block_scaled_result_rounds_alike() {
    use mmaemu_fit::preset::space::exact_frac_out;
    use mmaemu_model::BlockRounding;
    use rand::{RngExt, SeedableRng};
    let mut r = rand::rngs::ChaCha8Rng::seed_from_u64(20261208);
    let mut checked = 0;
    while checked < 4000 {
        let frac = r.random_range(1..=22u32);
        let least = exact_frac_out(32, frac, CEntry::Early);
        if least > 23 {
            continue;
        }
        let min_exp = r.random_range((-126 - least as i32 + frac as i32).max(-200)..=-100);
        if min_exp.min(-126) - (frac as i32) < -126 - least as i32 {
            continue;
        }
        let results = |frac_out: u32, rounding: BlockRounding| {
            let spec = PresetSpec::custom("x", 32, frac, frac_out, min_exp, CEntry::Early, None)
                .with_rounding(rounding)
                .with_scale_block(Some(32));
            Preset::custom(spec).unwrap()
        };
        let (fa, fb) = (Format::E4m3, if r.random_bool(0.5) { Format::E5m2 } else { Format::E4m3 });
        let k = 32 * r.random_range(1..=4usize);
        let code = |r: &mut rand::rngs::ChaCha8Rng, f: Format| loop {
            let c: u8 = if r.random_bool(0.3) { 0 } else { r.random() };
            if !f.any_nonfinite(&[c]) {
                break c;
            }
        };
        let a: Vec<u8> = (0..k).map(|_| code(&mut r, fa)).collect();
        let b: Vec<u8> = (0..k).map(|_| code(&mut r, fb)).collect();
        // Half the chains near the foot of fp32's range (products of the two scales at 2^-160 to 2^-110).
        let centre = if r.random_bool(0.5) { r.random_range(-80..=-55i32) } else { r.random_range(-127..=127i32) };
        let scale = |r: &mut rand::rngs::ChaCha8Rng| (127 + (centre + r.random_range(-8..=8)).clamp(-127, 127)) as u8;
        let sa: Vec<u8> = (0..k / 32).map(|_| scale(&mut r)).collect();
        let sb: Vec<u8> = (0..k / 32).map(|_| scale(&mut r)).collect();
        let want = dot_scaled(&results(23, BlockRounding::Truncate), fa, fb, &a, &b, &sa, &sb, None).unwrap();
        for (fo, rounding) in [(least, BlockRounding::Truncate), (23, BlockRounding::NearestEven)] {
            let got = dot_scaled(&results(fo, rounding), fa, fb, &a, &b, &sa, &sb, None).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "frac {frac} floor {min_exp} frac_out {fo} {rounding:?}");
        }
        checked += 1;
    }
}

/// MXFP8 rows that are not fitting input are skipped with their reason, never a panic or an allocation their shapes
/// ask for: scales of the wrong shape (too few blocks, a huge or negative dimension), a scale that is no e8m0 value (3,
/// NaN), a split call, an fp16 output, a bias; in well under a second.
#[test]
fn hostile_mxfp8_rows_are_skipped_with_a_reason() {
    let t = truth(25, CEntry::Early, -133);
    let good =
        mx(&t, "good".into(), 64, Format::E4m3, Format::E4m3, &inputs(7, DataClass::Gaussian { scale: 1.0 }), (0, 0));
    let with_scale = |id: &str, f: &dyn Fn(&mut ScaleSpec)| {
        let mut r = good.clone();
        r.id = id.into();
        f(r.call.as_mut().unwrap().scale_a.as_mut().unwrap());
        r
    };
    let mut rows = vec![
        with_scale("short", &|s| s.shape = vec![MN as i64, 1]),
        with_scale("huge", &|s| s.shape = vec![MN as i64, i64::MAX / 2]),
        with_scale("negative", &|s| s.shape = vec![-1, 2]),
        with_scale("not-e8m0", &|s| s.value = ScaleValue::Number(3.0)),
        with_scale("nan", &|s| s.value = ScaleValue::Nan),
    ];
    let mut split = good.clone();
    (split.id, split.split_s) = ("split".into(), Some(2));
    let mut half = good.clone();
    (half.id, half.out_dtype) = ("half".into(), Some("float16".into()));
    let mut bias = good.clone();
    bias.id = "bias".into();
    bias.call.as_mut().unwrap().bias = Some(mmaemu_datasets::BiasSpec { dtype: "float32".into(), len: MN as i64 });
    rows.extend([split, half, bias]);
    let start = std::time::Instant::now();
    let f = fit(&[(PathBuf::from("hostile"), rows.clone())]);
    assert!(start.elapsed().as_secs() < 10);
    let reason = |id: &str| f.skipped.iter().find(|s| s.id == id).map(|s| s.reason.clone()).unwrap_or_default();
    for id in ["short", "huge", "negative"] {
        assert!(reason(id).starts_with("MXFP8 scales of shapes"), "{id}: {}", reason(id));
    }
    for id in ["not-e8m0", "nan"] {
        assert!(reason(id).contains("is not a power of two e8m0 holds"), "{id}: {}", reason(id));
    }
    assert!(reason("split").contains("split MXFP8 call"), "{}", reason("split"));
    assert!(reason("half").contains("epilogue"), "{}", reason("half"));
    assert!(reason("bias").contains("a bias"), "{}", reason("bias"));
    assert_eq!(f.skipped.len(), rows.len());
}
