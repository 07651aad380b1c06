//! Row-wise `scaled_mm` (docs/reference.md §4.2): on seeded random calls, every output equals the validated
//! accumulator (the tensor-wise path with unit scales and fp32 out) scaled as the CUTLASS epilogue is written in
//! the contract, and lies within PyTorch's own row-wise test tolerance of an exact emulation; torch 2.7.1's
//! rejections and the ada profiles' SplitKUnknownError.

use half::bf16;
use mmaemu_model::dtype::Dtype;
use mmaemu_model::scaled_mm::{BiasSpec, ProfileArg, ScaleTensor, ScaledMm, Validation};
use mmaemu_model::splitk::SplitRequest;
use mmaemu_model::tensor::View;
use mmaemu_model::{Category, Format, WarningKind};

/// SplitMix64: a seeded generator (the seed is printed on failure).
struct TestRng(u64);

impl TestRng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }
}

fn rng(seed: u64) -> TestRng {
    TestRng(seed)
}

/// A finite FP8 code of `f`, magnitudes spread over the format.
fn code(r: &mut TestRng, f: Format) -> u8 {
    loop {
        let c = (r.next_u32() & 0xFF) as u8;
        if !f.is_nonfinite(c) {
            return c;
        }
    }
}

/// A positive fp32 scale in [2^-8, 2^8) with a random significand.
fn scale(r: &mut TestRng) -> f32 {
    let e = (r.next_u32() % 16) as i32 - 8;
    (1.0 + (r.next_u32() % (1 << 23)) as f32 / (1u32 << 23) as f32) * 2f32.powi(e)
}

struct Case {
    m: usize,
    n: usize,
    k: usize,
    fa: Dtype,
    a: Vec<u8>,
    b: Vec<u8>,
    sa: Vec<f32>,
    sb: Vec<f32>,
    bias: Option<Vec<f32>>,
    fast: bool,
}

/// A standard normal sample (Box-Muller).
fn gaussian(r: &mut TestRng) -> f64 {
    let u1 = (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64 + 1e-300;
    let u2 = (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// `rows` rows of K gaussian values quantized as PyTorch's row-wise tests do: each row scaled by amax / max of the
/// format into codes, its scale the fp32 amax / max.
fn quantized(r: &mut TestRng, rows: usize, k: usize, f: Format) -> (Vec<u8>, Vec<f32>) {
    let max = f.to_f64(if f == Format::E4m3 { 0x7E } else { 0x7B });
    let (mut codes, mut scales) = (Vec::with_capacity(rows * k), Vec::with_capacity(rows));
    for _ in 0..rows {
        let x: Vec<f64> = (0..k).map(|_| gaussian(r)).collect();
        let amax = x.iter().fold(0f64, |m, v| m.max(v.abs())).max(1e-12);
        let s = (amax / max) as f32;
        codes.extend(x.iter().map(|&v| f.from_f32_saturating((v / s as f64) as f32)));
        scales.push(s);
    }
    (codes, scales)
}

impl Case {
    /// Data as PyTorch's row-wise tests make it: gaussian rows quantized with their own scales, a gaussian bf16
    /// bias.
    fn pytorch_like(r: &mut TestRng) -> Case {
        let mut c = Case::random(r);
        let fmt = if c.fa == Dtype::Float8E4m3fn { Format::E4m3 } else { Format::E5m2 };
        (c.a, c.sa) = quantized(r, c.m, c.k, fmt);
        (c.b, c.sb) = quantized(r, c.n, c.k, Format::E4m3);
        if let Some(b) = c.bias.as_mut() {
            b.iter_mut().for_each(|x| *x = bf16::from_f64(gaussian(r)).to_f32());
        }
        c
    }

    fn random(r: &mut TestRng) -> Case {
        let m = 1 + (r.next_u32() % 70) as usize;
        let n = 16 * (1 + (r.next_u32() % 6) as usize);
        let k = 16 * (1 + (r.next_u32() % 24) as usize);
        let (fa, fmt) = if r.coin() { (Dtype::Float8E4m3fn, Format::E4m3) } else { (Dtype::Float8E5m2, Format::E5m2) };
        let a = (0..m * k).map(|_| code(r, fmt)).collect();
        // B as [n, k] (the weight); mat2 is its transpose.
        let b = (0..n * k).map(|_| code(r, Format::E4m3)).collect();
        let sa = (0..m).map(|_| scale(r)).collect();
        let sb = (0..n).map(|_| scale(r)).collect();
        let bias = (r.coin())
            .then(|| (0..n).map(|_| bf16::from_f32((r.next_u32() % 2001) as f32 / 100.0 - 10.0).to_f32()).collect());
        Case { m, n, k, fa, a, b, sa, sb, bias, fast: r.coin() }
    }

    fn views(&self) -> (View<'_>, View<'_>) {
        let input = View {
            dtype: self.fa.clone(),
            shape: vec![self.m, self.k],
            strides: vec![self.k, 1],
            offset: 0,
            storage: &self.a,
        };
        let mat2 = View {
            dtype: Dtype::Float8E4m3fn,
            shape: vec![self.k, self.n],
            strides: vec![1, self.k],
            offset: 0,
            storage: &self.b,
        };
        (input, mat2)
    }

    /// The row-wise call on `profile`.
    fn rowwise(&self, profile: &str, splitk: SplitRequest) -> ScaledMm<'_> {
        let (input, mat2) = self.views();
        let mut c = ScaledMm::new(input, mat2, 1.0, 1.0);
        c.scale_a = ScaleTensor {
            dtype: Dtype::Float32,
            shape: vec![self.m, 1],
            values: self.sa.iter().map(|&v| v as f64).collect(),
            contiguous: true,
        };
        c.scale_b = ScaleTensor {
            dtype: Dtype::Float32,
            shape: vec![1, self.n],
            values: self.sb.iter().map(|&v| v as f64).collect(),
            contiguous: true,
        };
        c.bias = self.bias.as_ref().map(|v| BiasSpec { dtype: Dtype::BFloat16, numel: self.n, values: v.clone() });
        c.out_dtype = Some(Dtype::BFloat16);
        c.use_fast_accum = self.fast;
        c.profile = ProfileArg::Name(profile.into());
        c.splitk = splitk;
        c.experimental = true;
        c
    }

    /// The validated accumulator: the tensor-wise path, unit scales, fp32 out, unsplit (fast: one chain; slow: the
    /// preset's 128-wide chunks).
    fn accumulator(&self, profile: &str, fast: bool) -> Vec<f32> {
        let (input, mat2) = self.views();
        let mut c = ScaledMm::new(input, mat2, 1.0, 1.0);
        c.out_dtype = Some(Dtype::Float32);
        c.use_fast_accum = fast;
        c.profile = ProfileArg::Name(profile.into());
        c.splitk = SplitRequest::Count(1);
        let out = c.run().expect("the tensor-wise accumulator");
        out.out.logical_bytes().chunks_exact(4).map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
    }
}

/// Does torch 2.7.1's sm_90 dispatch run the kernel on the swapped problem (mat2^T x mat1^T)? Written from the
/// contract's list (§4.2, `dispatch_fp8_rowwise_kernel_on_cluster_size_and_transpose`), M and N rounded up to 64.
fn swapped(m: usize, n: usize) -> bool {
    let (m, n) = (m.div_ceil(64) * 64, n.div_ceil(64) * 64);
    let rules: [(bool, bool); 9] = [
        (m == 64 && n >= 3072, false),
        (n == 64 && m >= 3072, true),
        (m == 192 && n >= 4096, true),
        (n == 192 && m >= 4096, false),
        (m * n <= 1 << 24 && m % 256 > 0 && n % 256 == 0, true),
        (m * n <= 1 << 24 && n % 256 > 0 && m % 256 == 0, false),
        (m % 256 > 0 && n % 256 > 0, (m <= n) ^ (m * n <= 1 << 20)),
        (m >= 4096 && n >= 4096, m < n),
        (true, true),
    ];
    rules.iter().find(|(applies, _)| *applies).map(|&(_, s)| s).unwrap_or(true)
}

/// The contract's epilogue (§4.2): two fp32 products in the kernel's order, the fp32 bias add (+0 without a
/// bias), one bf16 rounding to nearest even.
fn epilogue(acc: f32, xs: f32, ws: f32, bias: f32, swap: bool) -> u16 {
    let p = if swap { xs * (ws * acc) } else { ws * (xs * acc) };
    bf16::from_f32(bias + p).to_bits()
}

fn exact(case: &Case, i: usize, j: usize) -> f64 {
    let fa = if case.fa == Dtype::Float8E4m3fn { Format::E4m3 } else { Format::E5m2 };
    let dot: f64 =
        (0..case.k).map(|kk| fa.to_f64(case.a[i * case.k + kk]) * Format::E4m3.to_f64(case.b[j * case.k + kk])).sum();
    let bias = case.bias.as_ref().map_or(0.0, |b| b[j] as f64);
    dot * case.sa[i] as f64 * case.sb[j] as f64 + bias
}

#[test]
fn rowwise_is_the_accumulator_through_the_cutlass_epilogue() {
    let seed = 0x5EED_0045u64;
    let mut r = rng(seed);
    let (mut swaps, mut outputs, mut orders_differ) = ([0usize; 2], 0usize, 0usize);
    for t in 0..120 {
        // Even cases: codes over the formats' whole range (the composition); odd: PyTorch-like data (the tolerance).
        let pytorch_like = t % 2 == 1;
        let case = if pytorch_like { Case::pytorch_like(&mut r) } else { Case::random(&mut r) };
        let res =
            case.rowwise("hopper", SplitRequest::Auto).run().unwrap_or_else(|e| panic!("seed {seed} case {t}: {e}"));
        assert!(
            res.warnings.iter().any(|w| w.kind == WarningKind::ExperimentalPreset && w.message.contains("row-wise")),
            "seed {seed} case {t}: no experimental warning"
        );
        let acc = case.accumulator("hopper", case.fast);
        let swap = swapped(case.m, case.n);
        swaps[swap as usize] += 1;
        let got = res.out.logical_bytes();
        for i in 0..case.m {
            for j in 0..case.n {
                let o = i * case.n + j;
                let bias = case.bias.as_ref().map_or(0.0, |b| b[j]);
                let want = epilogue(acc[o], case.sa[i], case.sb[j], bias, swap);
                let bits = u16::from_le_bytes([got[2 * o], got[2 * o + 1]]);
                // The other operand order differs on some outputs: the order is tested, not assumed away.
                orders_differ += usize::from(epilogue(acc[o], case.sa[i], case.sb[j], bias, !swap) != want);
                assert_eq!(
                    bits, want,
                    "seed {seed} case {t} ({}x{}x{}, fast {}) output ({i}, {j})",
                    case.m, case.n, case.k, case.fast
                );
                // PyTorch's row-wise test tolerance (atol = rtol = 7e-2 for bf16) against an exact emulation.
                if pytorch_like {
                    let (y, e) = (bf16::from_bits(bits).to_f64(), exact(&case, i, j));
                    assert!((y - e).abs() <= 7e-2 + 7e-2 * e.abs(), "seed {seed} case {t} ({i}, {j}): {y} vs {e}");
                }
                outputs += 1;
            }
        }
    }
    // The cases exercised both operand orders.
    assert!(swaps[0] > 0 && swaps[1] > 0, "seed {seed}: operand orders {swaps:?}");
    assert!(outputs > 10_000, "{outputs}");
    assert!(orders_differ > 0, "seed {seed}: the two scale orders never differ");
}

#[test]
fn slow_promotes_every_128_of_k() {
    // Slow and fast differ on some output of a long K (promotion), and slow equals the slow accumulator.
    let mut r = rng(7);
    let mut case = Case::random(&mut r);
    case.k = 1024;
    case.a = (0..case.m * case.k).map(|_| code(&mut r, Format::E4m3)).collect();
    case.fa = Dtype::Float8E4m3fn;
    case.b = (0..case.n * case.k).map(|_| code(&mut r, Format::E4m3)).collect();
    let (slow, fast) = (case.accumulator("hopper", false), case.accumulator("hopper", true));
    assert_ne!(slow, fast, "K = 1024 should tell promotion from one chain");
}

#[test]
fn ada_needs_an_explicit_split() {
    let mut r = rng(11);
    let case = Case::random(&mut r);
    let e = case.rowwise("ada", SplitRequest::Auto).run().unwrap_err();
    assert_eq!(e.category(), Category::SplitKUnknown);
    assert!(e.message().contains("stream-K") && e.message().contains("Ways out"), "{e}");
    // splitk=1: one chain over K (sm_89 issues the same mma.sync fast or slow), ((acc * xs) * ws) + bias.
    let res = case.rowwise("ada", SplitRequest::Count(1)).run().expect("explicit split");
    let acc = case.accumulator("ada", true);
    let got = res.out.logical_bytes();
    for i in 0..case.m {
        for j in 0..case.n {
            let o = i * case.n + j;
            let bias = case.bias.as_ref().map_or(0.0, |b| b[j]);
            let want = bf16::from_f32((acc[o] * case.sa[i]) * case.sb[j] + bias).to_bits();
            assert_eq!(u16::from_le_bytes([got[2 * o], got[2 * o + 1]]), want, "({i}, {j})");
        }
    }
}

#[test]
fn torch_2_7_1_rejections() {
    let mut r = rng(3);
    let mut case = Case::random(&mut r);
    case.fa = Dtype::Float8E4m3fn;
    // torch's rejections come first (§5.2 steps 2-5), with or without the experimental opt-in.
    let reject = |c: ScaledMm<'_>, needle: &str| {
        for experimental in [true, false] {
            let c = ScaledMm { experimental, ..c.clone() };
            let e = c.clone().run().unwrap_err();
            assert_eq!(e.category(), Category::ReferenceRejects, "{e}");
            assert!(e.message().contains(needle), "{e}");
            assert!(matches!(c.explain().validation, Validation::Error { .. }));
        }
    };
    let mut c = case.rowwise("hopper", SplitRequest::Auto);
    c.out_dtype = Some(Dtype::Float32);
    c.bias = None;
    reject(c, "Only bf16 high precision output types are supported for row-wise scaling");
    let mut c = case.rowwise("hopper", SplitRequest::Auto);
    c.mat2.dtype = Dtype::Float8E5m2;
    reject(c, "Expected b.dtype() == at::kFloat8_e4m3fn to be true");
    let mut c = case.rowwise("hopper", SplitRequest::Auto);
    c.bias = Some(BiasSpec { dtype: Dtype::Float16, numel: case.n, values: vec![0.0; case.n] });
    reject(c, "Bias must be BFloat16 to compute BFloat16 matmul output");
    let mut c = case.rowwise("hopper", SplitRequest::Auto);
    c.scale_b.shape = vec![case.n, 1];
    reject(c, "Invalid scaling configuration");
    // explain names the kernel and its source.
    let p = case.rowwise("hopper", SplitRequest::Auto).explain();
    assert_eq!(p.validation, Validation::Ok);
    let k = p.kernel.expect("a kernel");
    assert!(k.contains("f8f8bf16_rowwise") && k.contains("RowwiseScaledMM.cu"), "{k}");
}

/// Without the opt-in a row-wise call, with or without a bias, on either profile, is outside the 0.1 scope:
/// UnsupportedFeatureError naming the ways to opt in (the recordings' `out:row-wise` rows), from run and explain.
#[test]
fn rowwise_without_the_opt_in_is_out_of_scope() {
    let mut r = rng(29);
    for _ in 0..8 {
        let mut case = Case::random(&mut r);
        case.fa = Dtype::Float8E4m3fn;
        for profile in ["hopper", "ada", "hopper-experimental"] {
            let mut c = case.rowwise(profile, SplitRequest::Auto);
            c.experimental = false;
            let e = c.clone().run().unwrap_err();
            assert_eq!(e.category(), Category::UnsupportedFeature, "{profile}: {e}");
            assert!(e.message().starts_with("row-wise scales are not supported in mmaemu 0.1"), "{e}");
            assert!(e.message().contains("MMAEMU_EXPERIMENTAL=1"), "{e}");
            match c.explain().validation {
                Validation::Error { name, .. } => assert_eq!(name, "UnsupportedFeatureError"),
                v => panic!("{profile}: explain says {v:?}"),
            }
        }
    }
}
