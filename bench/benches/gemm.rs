//! Criterion benchmarks of the CPU backend: `cargo bench -p mmaemu-bench`.

// Group `fast_unsplit`: ada and hopper, e4m3 x e4m3, fast, unsplit, against the native fp32 GEMM (matrixmultiply) of
// the same shape; group `plans`: slow, split-K and mixed formats of hopper and ada; group `b200`: the wide (late-c)
// path. Throughput is reported in elements = multiply-accumulates, so criterion's "elem/s" is MAC/s. The shape is 512^3
// (MMAEMU_BENCH_SIZE overrides it) to keep a run short; `mmaemu bench gemm` measures any shape.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mmaemu_bench::native;
use mmaemu_kernels::CpuEngine;
use mmaemu_model::plan::{Scheme, SplitK};
use mmaemu_model::{execute, Format, Operands, Plan, Preset};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::hint::black_box;

fn size() -> usize {
    std::env::var("MMAEMU_BENCH_SIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
}

/// Random finite codes from a seed (`rand`'s ChaCha8).
fn codes(n: usize, f: Format, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let c: u8 = rng.random();
        if !f.is_nonfinite(c) {
            v.push(c);
        }
    }
    v
}

fn emulated(c: &mut Criterion, group: &str, cases: &[(&str, Preset, bool, SplitK, Format, Format)]) {
    let s = size();
    let engine = CpuEngine::new();
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    g.throughput(Throughput::Elements((s * s * s) as u64));
    for (label, preset, fast, split, fa, fb) in cases {
        let a = codes(s * s, *fa, 1);
        let b = codes(s * s, *fb, 2);
        let ops = Operands { fa: *fa, fb: *fb, a: &a, b: &b, m: s, n: s, k: s };
        let plan = Plan::new(preset, s, *fast, *split).expect("a valid plan");
        g.bench_function(BenchmarkId::new(*label, format!("{s}^3 {}", engine.level())), |bench| {
            bench.iter(|| black_box(execute(preset, &plan, &ops, &engine).expect("runs")))
        });
    }
    g.finish();
}

fn fast_unsplit(c: &mut Criterion) {
    let e4 = Format::E4m3;
    emulated(
        c,
        "fast_unsplit",
        &[("hopper", Preset::hopper(), true, SplitK::NONE, e4, e4), ("ada", Preset::ada(), true, SplitK::NONE, e4, e4)],
    );
    let s = size();
    let a: Vec<f32> = (0..s * s).map(|i| (i % 13) as f32 * 0.25 - 1.5).collect();
    let b: Vec<f32> = (0..s * s).map(|i| (i % 11) as f32 * 0.25 - 1.25).collect();
    let mut out = vec![0f32; s * s];
    let mut g = c.benchmark_group("fast_unsplit");
    g.sample_size(10);
    g.throughput(Throughput::Elements((s * s * s) as u64));
    g.bench_function(BenchmarkId::new("native_f32", format!("{s}^3")), |bench| {
        bench.iter(|| native::sgemm(s, s, s, black_box(&a), black_box(&b), &mut out, rayon::current_num_threads()))
    });
    g.finish();
}

fn plans(c: &mut Criterion) {
    let (e4, e5) = (Format::E4m3, Format::E5m2);
    let split = |s, scheme| SplitK::new(s, scheme).expect("a valid split");
    emulated(
        c,
        "plans",
        &[
            ("hopper_slow", Preset::hopper(), false, SplitK::NONE, e4, e4),
            ("hopper_split4_contiguous", Preset::hopper(), true, split(4, Scheme::Contiguous), e4, e4),
            ("ada_slow_split3_pairwise", Preset::ada(), false, split(3, Scheme::Pairwise), e4, e4),
            ("hopper_e4m3_x_e5m2", Preset::hopper(), true, SplitK::NONE, e4, e5),
        ],
    );
}

fn b200(c: &mut Criterion) {
    let e4 = Format::E4m3;
    emulated(c, "b200", &[("b200_mma_sync", Preset::b200_mma_sync(), true, SplitK::NONE, e4, e4)]);
}

criterion_group!(benches, fast_unsplit, plans, b200);
criterion_main!(benches);
