//! `scaled_mm` and `explain` (docs/reference.md §5, §8.1): the spec's explain example, the check order on
//! hand-made calls, zero sizes and out=, and property tests that arbitrary shapes, strides, offsets, dtypes
//! and scales always give a result or a typed error, never a panic.

use mmaemu_model::dtype::Dtype;
use mmaemu_model::scaled_mm::{BiasSpec, ProfileArg, ScaleTensor, ScaledMm, Validation};
use mmaemu_model::splitk::{SplitRequest, SplitSource};
use mmaemu_model::tensor::{Tensor, View};
use mmaemu_model::{Category, Format, Scheme, WarningKind};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};

fn std_views<'a>(m: usize, n: usize, k: usize, a: &'a [u8], b: &'a [u8], fa: Dtype, fb: Dtype) -> (View<'a>, View<'a>) {
    let input = View { dtype: fa, shape: vec![m, k], strides: vec![k, 1], offset: 0, storage: a };
    // mat2 = the transpose of a row-major [n, k] weight.
    let mat2 = View { dtype: fb, shape: vec![k, n], strides: vec![1, k], offset: 0, storage: b };
    (input, mat2)
}

fn call<'a>(input: View<'a>, mat2: View<'a>) -> ScaledMm<'a> {
    let mut c = ScaledMm::new(input, mat2, 1.0, 1.0);
    c.backend = "auto".into();
    c
}

#[test]
fn explain_example_of_section_8_1() {
    // hopper, M=16, N=5760, K=1920, bf16 out, fast (docs/reference.md §8.1).
    let (input, mat2) = std_views(16, 5760, 1920, &[], &[], Dtype::Float8E4m3fn, Dtype::Float8E4m3fn);
    let mut c = call(input, mat2);
    c.out_dtype = Some(Dtype::BFloat16);
    c.use_fast_accum = true;
    let p = c.explain();
    assert_eq!(p.validation, Validation::Ok);
    assert_eq!((p.profile.as_str(), p.preset.as_str(), p.preset_maturity.as_str()), ("hopper", "hopper", "validated"));
    let d = p.split.expect("a split decision");
    assert_eq!((d.s, d.scheme, d.source, d.verified), (1, Scheme::None, SplitSource::Table, true));
    assert_eq!(d.table_id.as_deref(), Some("heur_h100pcie_lt12.8.3.14"));
    assert_eq!(d.note, "table row: algo 66, tile 312, numSplitsK 1, customOption 1");
    assert_eq!(p.backend, "reference");
    assert_eq!(p.fallbacks, vec!["cuda: tensors on cpu".to_string()]);
    assert!(p.warnings.is_empty());
}

#[test]
fn check_order_examples() {
    let a = vec![0u8; 16 * 64];
    let b = vec![0u8; 32 * 64];
    let (input, mat2) = std_views(16, 32, 64, &a, &b, Dtype::Float8E5m2, Dtype::Float8E5m2);
    // e5m2 x e5m2 is rejected even for a zero-size... and here for a real call.
    let e = call(input.clone(), mat2.clone()).run().unwrap_err();
    assert_eq!(e.category(), Category::ReferenceRejects);
    assert!(e.message().contains("two Float8_e5m2"));
    // An unknown profile raises after the torch checks, even for a zero-size call (§5.2 step 3).
    let (zi, zm) = std_views(0, 32, 64, &[], &b, Dtype::Float8E4m3fn, Dtype::Float8E4m3fn);
    let mut c = call(zi, zm);
    c.profile = ProfileArg::Name("hopper-h100pcie-torch".into());
    assert_eq!(
        c.explain().validation,
        Validation::Error { name: "KeyError".into(), message: c.run().unwrap_err().message().into() }
    );
    // Profile rejects: e4m3 x e4m3 -> e5m2 on ada; mixed inputs may produce e5m2.
    let (input, mat2) = std_views(16, 32, 64, &a, &b, Dtype::Float8E4m3fn, Dtype::Float8E4m3fn);
    let mut c = call(input, mat2);
    c.profile = ProfileArg::Name("ada".into());
    c.out_dtype = Some(Dtype::Float8E5m2);
    c.splitk = SplitRequest::Count(1);
    let e = c.clone().run().unwrap_err();
    assert_eq!(e.category(), Category::ReferenceRejects);
    assert!(e.message().ends_with("[profile ada]"));
    // The bias scope check comes after the profile rejection, and bias with an FP8 od is unsupported.
    c.bias = Some(BiasSpec { dtype: Dtype::BFloat16, numel: 32, values: vec![] });
    assert_eq!(c.clone().run().unwrap_err().category(), Category::ReferenceRejects);
    c.out_dtype = Some(Dtype::Float8E4m3fn);
    assert_eq!(c.run().unwrap_err().category(), Category::UnsupportedFeature);
}

#[test]
fn zero_size_and_k_zero() {
    // K = 0 gives +0 for every scale, even NaN, in any out dtype (§5.3).
    let (input, mat2) = std_views(2, 16, 0, &[], &[], Dtype::Float8E4m3fn, Dtype::Float8E4m3fn);
    let mut c = call(input, mat2);
    c.scale_a = ScaleTensor::scalar(f32::NAN);
    c.out_dtype = Some(Dtype::Float64);
    let r = c.run().unwrap();
    assert_eq!(r.out.dtype, Dtype::Float64);
    assert!(r.out.storage.iter().all(|&x| x == 0) && r.out.storage.len() == 2 * 16 * 8);
    assert!(r.split.is_none());
}

#[test]
fn out_unchanged_and_resized() {
    let a = vec![0x38u8; 16 * 32]; // 1.0 in e4m3
    let b = vec![0x38u8; 16 * 32];
    let (input, mat2) = std_views(16, 16, 32, &a, &b, Dtype::Float8E4m3fn, Dtype::Float8E4m3fn);
    // strides (32, 2): neither row- nor column-major -> returned unchanged, with a warning, no split.
    let out = Tensor {
        dtype: Dtype::Float32,
        shape: vec![16, 16],
        strides: vec![32, 2],
        offset: 0,
        storage: vec![0x7F; 4 * 512],
    };
    let mut c = call(input.clone(), mat2.clone());
    c.out = Some(out.clone());
    c.out_dtype = Some(Dtype::Float32);
    c.splitk = SplitRequest::Count(1);
    let r = c.run().unwrap();
    assert_eq!(r.out, out);
    assert!(r.warnings.iter().any(|w| w.kind == WarningKind::OutUnchanged));
    // A wrong-shape out is resized with a warning; the result is 32.0 everywhere.
    let mut c = call(input, mat2);
    c.out = Some(Tensor::zeros(Dtype::Float32, &[3, 3]));
    c.splitk = SplitRequest::Count(1);
    let r = c.run().unwrap();
    assert_eq!(r.out.shape, vec![16, 16]);
    assert!(r.warnings.iter().any(|w| w.kind == WarningKind::OutResized));
    assert_eq!(r.out.get(3, 5), 32f32.to_bits());
}

#[test]
fn explain_of_ten_thousand_shapes_resolves() {
    // Not a timing test (see the README's measurement): every shape resolves to a plan or a typed error.
    let mut ok = 0;
    for i in 0..2000usize {
        let (m, n, k) = (1 + (i * 37) % 4096, 16 * (1 + (i * 13) % 512), 16 * (1 + (i * 7) % 1024));
        let (input, mat2) = std_views(m, n, k, &[], &[], Dtype::Float8E4m3fn, Dtype::Float8E4m3fn);
        let mut c = call(input, mat2);
        c.out_dtype = Some(Dtype::BFloat16);
        if c.explain().validation == Validation::Ok {
            ok += 1;
        }
    }
    assert!(ok > 0);
}

fn dtype_strategy() -> impl Strategy<Value = Dtype> {
    prop_oneof![
        6 => Just(Dtype::Float8E4m3fn),
        4 => Just(Dtype::Float8E5m2),
        1 => Just(Dtype::Float8E4m3fnuz),
        1 => Just(Dtype::Float8E8m0fnu),
        1 => Just(Dtype::BFloat16),
        1 => Just(Dtype::Float32),
    ]
}

fn out_dtype_strategy() -> impl Strategy<Value = Option<Dtype>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(Dtype::Float32)),
        1 => Just(Some(Dtype::BFloat16)),
        1 => Just(Some(Dtype::Float16)),
        1 => Just(Some(Dtype::Float8E4m3fn)),
        1 => Just(Some(Dtype::Float8E5m2)),
        1 => Just(Some(Dtype::Float64)),
    ]
}

fn scale_strategy() -> impl Strategy<Value = ScaleTensor> {
    (
        prop_oneof![4 => Just(Dtype::Float32), 1 => Just(Dtype::BFloat16)],
        prop_oneof![
            Just(vec![]),
            Just(vec![1]),
            Just(vec![1, 1]),
            Just(vec![2]),
            (1usize..4, 1usize..4).prop_map(|(a, b)| vec![a, b])
        ],
        prop_oneof![Just(1.0f64), Just(0.5), Just(-3.0), Just(f64::NAN), Just(f64::INFINITY), Just(1e-40)],
    )
        .prop_map(|(dtype, shape, v)| {
            let n: usize = shape.iter().product();
            ScaleTensor { dtype, shape, values: vec![v; n], contiguous: true }
        })
}

/// A random call: sizes, layouts, padding, offsets, dtypes, scales, out=, profile and split.
#[derive(Debug, Clone)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    da: Dtype,
    db: Dtype,
    a_layout: u8,
    b_layout: u8,
    pad: usize,
    off_a: usize,
    off_b: usize,
    scale_a: ScaleTensor,
    scale_b: ScaleTensor,
    scale_result: Option<ScaleTensor>,
    out_dtype: Option<Dtype>,
    out: u8,
    fast: bool,
    profile: usize,
    split: u8,
    s: i64,
    seed: u64,
    short_storage: bool,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    let dims = (
        0usize..40,
        prop_oneof![Just(0usize), Just(16), Just(32), 1usize..50],
        prop_oneof![Just(0usize), Just(16), Just(32), Just(64), 1usize..200],
    );
    (
        dims,
        (dtype_strategy(), dtype_strategy(), 0u8..4, 0u8..4, prop_oneof![Just(0usize), Just(16), 1usize..20]),
        (prop_oneof![Just(0usize), Just(16), 1usize..20], prop_oneof![Just(0usize), Just(16), 1usize..20]),
        (scale_strategy(), scale_strategy(), proptest::option::of(scale_strategy())),
        (
            out_dtype_strategy(),
            0u8..5,
            any::<bool>(),
            0usize..9,
            0u8..3,
            -1i64..8,
            any::<u64>(),
            proptest::bool::weighted(0.05),
        ),
    )
        .prop_map(
            |(
                (m, n, k),
                (da, db, a_layout, b_layout, pad),
                (off_a, off_b),
                (scale_a, scale_b, scale_result),
                (out_dtype, out, fast, profile, split, s, seed, short_storage),
            )| Case {
                m,
                n,
                k,
                da,
                db,
                a_layout,
                b_layout,
                pad,
                off_a,
                off_b,
                scale_a,
                scale_b,
                scale_result,
                out_dtype,
                out,
                fast,
                profile,
                split,
                s,
                seed,
                short_storage,
            },
        )
}

/// Element (i, j) of a [r, c] view at offset + i s0 + j s1, for a layout code: 0 row-major, 1 padded
/// row-major, 2 column-major, 3 strided (neither).
fn layout(code: u8, r: usize, c: usize, pad: usize) -> (usize, usize) {
    match code {
        0 => (c.max(1), 1),
        1 => (c + pad, 1),
        2 => (1, r.max(1) + pad),
        _ => (2 * c.max(1), 2),
    }
}

static COMPUTED: AtomicUsize = AtomicUsize::new(0);
static RAISED: AtomicUsize = AtomicUsize::new(0);

/// Half the cases are steered towards calls the reference accepts (aligned sizes, FP8 operands, standard
/// layouts, tensor-wise fp32 scales, an explicit split), so real GEMMs are computed, not only rejections.
fn steer(case: &Case) -> Case {
    let mut c = case.clone();
    if case.seed.is_multiple_of(2) {
        return c;
    }
    c.n = 16 * (1 + c.n % 3);
    c.k = 16 * (1 + c.k % 12);
    c.m = 1 + c.m % 24;
    c.da = if case.seed % 4 == 1 { Dtype::Float8E4m3fn } else { Dtype::Float8E5m2 };
    c.db = Dtype::Float8E4m3fn;
    c.a_layout %= 2;
    c.b_layout %= 2;
    c.pad = 16;
    c.off_a = 16 * (c.off_a % 2);
    c.off_b = 16 * (c.off_b % 2);
    c.scale_a = ScaleTensor::scalar(0.5);
    if c.scale_b.dtype != Dtype::Float32 || c.scale_b.numel() != 1 {
        c.scale_b = ScaleTensor::scalar(2.0);
    }
    c.scale_result = None;
    c.profile = [0, 2, 3, 5, 6][c.profile % 5];
    c.split = 1;
    c.s = 1;
    c.short_storage = false;
    c
}

fn run_case(case: &Case) {
    let case = &steer(case);
    let (m, n, k) = (case.m, case.n, case.k);
    let (sa0, sa1) = layout(case.a_layout, m, k, case.pad);
    // mat2 [k, n]: code 0 = the standard transpose of a row-major [n, k].
    let (sb0, sb1) = match case.b_layout {
        0 => (1, k.max(1)),
        1 => (1, k + case.pad),
        2 => (n.max(1), 1),
        _ => (2, 2 * k.max(1)),
    };
    let extent = |r: usize, c: usize, s0: usize, s1: usize, off: usize| {
        if r == 0 || c == 0 {
            off
        } else {
            off + (r - 1) * s0 + (c - 1) * s1 + 1
        }
    };
    let mut na = extent(m, k, sa0, sa1, case.off_a) * case.da.size();
    let nb = extent(k, n, sb0, sb1, case.off_b) * case.db.size();
    if case.short_storage {
        na /= 2;
    }
    let mut x = case.seed;
    let mut bytes = |len: usize| -> Vec<u8> {
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect()
    };
    let a = bytes(na);
    let b = bytes(nb);
    let input =
        View { dtype: case.da.clone(), shape: vec![m, k], strides: vec![sa0, sa1], offset: case.off_a, storage: &a };
    let mat2 =
        View { dtype: case.db.clone(), shape: vec![k, n], strides: vec![sb0, sb1], offset: case.off_b, storage: &b };
    let od = case.out_dtype.clone().unwrap_or(Dtype::Float32);
    let out = match case.out {
        0 => None,
        1 => Some(Tensor::zeros(od, &[m, n])),
        2 => Some(Tensor::filled(od.clone(), [m, n], true, &vec![0x7F; od.size()])),
        3 => Some(Tensor::zeros(od, &[m + 1, n])),
        _ => Some(Tensor {
            dtype: od.clone(),
            shape: vec![m, n],
            strides: vec![2 * n.max(1), 2],
            offset: 0,
            storage: vec![0; 4 * (m + 1) * (n + 1) * od.size()],
        }),
    };
    // Every shipped profile, and one that does not exist.
    let names = mmaemu_model::Catalogue::builtin().builtin_profile_names();
    let profiles: Vec<&str> = names.iter().map(String::as_str).chain(["nope"]).collect();
    let splitk = match case.split {
        0 => SplitRequest::Auto,
        1 => SplitRequest::Count(case.s),
        _ => SplitRequest::Pair(
            case.s,
            ["serial", "pairwise", "contiguous", "none", "tree"][case.seed as usize % 5].into(),
        ),
    };
    let c = ScaledMm {
        input,
        mat2,
        scale_a: case.scale_a.clone(),
        scale_b: case.scale_b.clone(),
        bias: None,
        scale_result: case.scale_result.clone(),
        out_dtype: case.out_dtype.clone(),
        use_fast_accum: case.fast,
        out,
        profile: ProfileArg::Name(profiles[case.profile].into()),
        catalogue: mmaemu_model::Catalogue::builtin(),
        splitk,
        backend: if case.seed.is_multiple_of(7) { "cuda".into() } else { "reference".into() },
        strict: case.seed.is_multiple_of(3),
        experimental: case.seed.is_multiple_of(2),
    };
    let plan = c.explain();
    match c.run() {
        Ok(r) => {
            assert_eq!(plan.validation, Validation::Ok, "explain disagrees with run for {case:?}");
            if m > 0 && n > 0 && k > 0 && r.split.is_some() {
                assert!(r.out.check_extent("out").is_ok());
                COMPUTED.fetch_add(1, Ordering::Relaxed);
            }
        }
        Err(e) => {
            RAISED.fetch_add(1, Ordering::Relaxed);
            if e.message().contains("beyond its storage") {
                // Storage sizes are data: explain reads none, so only run can see them.
                return;
            }
            // explain reports the same first error as run (the FTZ check aside).
            assert_eq!(
                plan.validation,
                Validation::Error { name: e.category().name().into(), message: e.message().into() }
            );
        }
    }
}

#[test]
fn arbitrary_calls_never_panic() {
    let cases: u32 = std::env::var("MMAEMU_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(|n: u32| (n / 40).max(64))
        .unwrap_or(3000);
    let mut runner = TestRunner::new_with_rng(
        Config { cases, failure_persistence: None, ..Config::default() },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[0x5C; 32]),
    );
    runner
        .run(&case_strategy(), |c| {
            run_case(&c);
            Ok(())
        })
        .unwrap();
    // The generator reaches both outcomes in earnest: real GEMMs computed, and rejections.
    let (computed, raised) = (COMPUTED.load(Ordering::Relaxed), RAISED.load(Ordering::Relaxed));
    assert!(computed >= cases as usize / 50 && raised >= cases as usize / 10, "computed {computed}, raised {raised}");
}

#[test]
fn formats_of_dtypes() {
    assert_eq!(Dtype::from_name("torch.float8_e4m3fn").format(), Some(Format::E4m3));
    assert_eq!(Dtype::from_name("float8_e5m2fnuz").format(), None);
}
