//! `fuzz/scaled_mm/<profile>`: `ScaledMm` calls with an explicit split (`SplitRequest::Count(1)` or
//! `SplitRequest::Pair(S, scheme)`) against the model's `accumulate` followed by `Epilogue::apply`.

// The whole call must add nothing to the numerics but torch's checks, the profile's rejections and the placement of the
// result. Random shapes (M any, N and K multiples of 16, sometimes M = 0), formats, out dtypes, scales (zeros,
// negatives, subnormals, huge, Inf, NaN) and scale_result.

use crate::{check, Family};
use mmaemu_model::dtype::Dtype;
use mmaemu_model::epilogue::from_le_bytes;
use mmaemu_model::scaled_mm::{ProfileArg, ScaleTensor, ScaledMm};
use mmaemu_model::splitk::SplitRequest;
use mmaemu_model::tensor::View;
use mmaemu_model::{accumulate, Category, Epilogue, Format, OutDtype, Profile, Scheme, SplitK};
use mmaemu_testkit::generators::{gemm, Gemm, GemmShape};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn scale() -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => Just(1.0f32),
        6 => (-20i32..=20, any::<bool>()).prop_map(|(e, neg)| if neg { -(2f32.powi(e)) } else { 2f32.powi(e) }),
        4 => 0.001f32..1000.0,
        1 => proptest::sample::select(vec![0.0f32, -0.0, 1e-40, 3e38, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]),
    ]
}

/// A split the profile's preset accepts: Count(1), or Pair(S, scheme) for its split schemes.
fn split(profile: &Profile) -> BoxedStrategy<(SplitK, SplitRequest)> {
    let schemes = mmaemu_model::Catalogue::builtin().schemes(&profile.preset).to_vec();
    let one = Just((SplitK::NONE, SplitRequest::Count(1)));
    if schemes.is_empty() {
        return one.boxed();
    }
    prop_oneof![
        1 => one,
        2 => (2usize..=8, 0..schemes.len()).prop_map(move |(s, i)| {
            let scheme = schemes[i];
            (SplitK::new(s, scheme).unwrap_or(SplitK::NONE), SplitRequest::Pair(s as i64, scheme.name().to_string()))
        }),
    ]
    .boxed()
}

#[derive(Debug)]
struct Call {
    g: Gemm,
    out: Option<OutDtype>,
    scale_a: f32,
    scale_b: f32,
    scale_result: Option<f32>,
    fast: bool,
    split: (SplitK, SplitRequest),
}

fn call(profile: &Profile) -> impl Strategy<Value = Call> {
    let shape = GemmShape { m: (0, 33), n: (1, 2), k_range: Some((1, 24)), step: 16, ..GemmShape::default() };
    let fast = if profile.preset.slow_chunk().is_some() { any::<bool>().boxed() } else { Just(true).boxed() };
    (
        gemm(shape),
        proptest::option::weighted(0.8, proptest::sample::select(OutDtype::ALL.to_vec())),
        (scale(), scale(), proptest::option::of(scale())),
        fast,
        split(profile),
    )
        .prop_map(|(g, out, (scale_a, scale_b, scale_result), fast, split)| Call {
            g,
            out,
            scale_a,
            scale_b,
            scale_result,
            fast,
            split,
        })
}

fn run_call(profile: &Profile, c: &Call) -> Result<(), TestCaseError> {
    let g = &c.g;
    let od = c.out.unwrap_or(OutDtype::of_format(g.fa));
    let mut args = ScaledMm::new(
        View::packed(Dtype::of_format(g.fa), &[g.m, g.k], &g.a),
        View::packed(Dtype::of_format(g.fb), &[g.n, g.k], &g.b).t(),
        c.scale_a,
        c.scale_b,
    );
    args.out_dtype = c.out.map(Dtype::of_out);
    args.scale_result = c.scale_result.map(ScaleTensor::scalar);
    args.use_fast_accum = c.fast;
    args.profile = ProfileArg::Name(profile.name.clone());
    args.splitk = c.split.1.clone();
    args.backend = "reference".into();
    let result = args.run();

    // Rejections: torch refuses e5m2 x e5m2 (before the zero-size return); the profile's cuBLAS rules
    // apply to calls that reach cuBLAS (nonzero sizes).
    let zero = g.m == 0 || g.n == 0 || g.k == 0;
    let rejected =
        (g.fa == Format::E5m2 && g.fb == Format::E5m2) || (!zero && profile.rejection(g.fa, g.fb, od).is_some());
    if rejected {
        return match result {
            Err(e) if e.category() == Category::ReferenceRejects => Ok(()),
            Err(e) => Err(TestCaseError::fail(format!("expected ReferenceRejectsError, got {e}"))),
            Ok(_) => Err(TestCaseError::fail("expected ReferenceRejectsError, the call returned a result")),
        };
    }
    // An explicit contiguous split that leaves a split without k-tiles is refused (docs/reference.md §6.6).
    let (split, _) = c.split;
    let tiles = g.k.div_ceil(128);
    if !zero && split.scheme() == Scheme::Contiguous && (split.s() - 1) * tiles.div_ceil(split.s()) >= tiles {
        return match result {
            Err(e) if e.message().contains("without k-tiles") => Ok(()),
            other => Err(TestCaseError::fail(format!("expected the empty split's refusal, got {:?}", other.err()))),
        };
    }
    let res = result.map_err(|e| TestCaseError::fail(format!("scaled_mm raised {e}")))?;
    prop_assert_eq!(&res.out.shape, &vec![g.m, g.n], "result shape");
    prop_assert_eq!(res.out.dtype.out_dtype(), Some(od), "result dtype");
    let got = from_le_bytes(&res.out.logical_bytes(), od);
    let want = if zero {
        vec![0u32; g.m * g.n]
    } else {
        let acc = accumulate(&profile.preset, &g.operands(), c.fast, c.split.0)
            .map_err(|e| TestCaseError::fail(format!("accumulate raised {e}")))?;
        Epilogue { scale_a: c.scale_a, scale_b: c.scale_b, scale_result: c.scale_result, out: od }.apply(&acc)
    };
    let hex = |v: Vec<u32>| v.iter().map(|b| format!("0x{b:0w$X}", w = od.width() * 2)).collect::<Vec<_>>();
    prop_assert_eq!(hex(got), hex(want), "scaled_mm against accumulate + epilogue (out {})", od);
    Ok(())
}

pub fn families() -> Vec<Family> {
    ["ada", "hopper", "hopper-experimental", "b200-mma-sync-experimental"]
        .into_iter()
        .map(|p| {
            Family::new(format!("fuzz/scaled_mm/{p}"), 4, move |name, seed, cases| {
                let profile = mmaemu_model::Catalogue::builtin().profile(p).map_err(|e| format!("profile {p}: {e}"))?;
                check(name, seed, cases, call(&profile), |c| run_call(&profile, &c))
            })
        })
        .collect()
}
