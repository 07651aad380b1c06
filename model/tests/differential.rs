//! Differential tests: the model's chain (`Chain::run`, `dot`, and the fast unsplit `accumulate` of one
//! output) against the independent exact oracle of `mmaemu_testkit::oracle`, on seeded random and curated inputs.
//!
//! Reproducible: every property runs on proptest's ChaCha RNG from a fixed seed. Environment:
//! - `MMAEMU_FUZZ_CASES`: total number of random chains over the random properties of this file
//!   (default 120,000), shared out among them by weight;
//! - `MMAEMU_FUZZ_SEED`: a u64 that replaces the default seed (each property derives its own stream,
//!   as `mmaemu_testkit::seed` derives it from the base seed and the property's name).
//!
//! On a failure the minimal failing case is printed with every input in hex (formats, A and B codes,
//! c's fp32 bits) and the model's and the oracle's bits.

use mmaemu_model::{accumulate, dot, CEntry, Chain, Format, Operands, Preset, PresetSpec, SplitK};
use mmaemu_testkit::generators::{self, ChainCase as Case, CodeMode};
use mmaemu_testkit::oracle;
use mmaemu_testkit::seed;
use oracle::{Fp8, Params};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRunner};
use std::time::Instant;

// ---------------------------------------------------------------------------------------------------------
// Budget and seeds

const DEFAULT_TOTAL_CASES: u64 = 120_000;

/// Weights of the random properties (their shares of `MMAEMU_FUZZ_CASES`).
const WEIGHTS: &[(&str, u64)] = &[
    ("ada", 30),
    ("hopper", 22),
    ("b200_mma_sync", 22),
    ("custom_early", 8),
    ("custom_late", 6),
    ("custom_wide", 6),
    ("custom_coarse", 6),
];

fn total_cases() -> u64 {
    match std::env::var("MMAEMU_FUZZ_CASES") {
        Ok(s) => seed::parse_u64(&s).unwrap_or_else(|| panic!("MMAEMU_FUZZ_CASES must be an integer, got {s:?}")),
        Err(_) => DEFAULT_TOTAL_CASES,
    }
}

fn cases_for(name: &str) -> u32 {
    let sum: u64 = WEIGHTS.iter().map(|w| w.1).sum();
    let w = WEIGHTS.iter().find(|w| w.0 == name).map(|w| w.1).unwrap_or_else(|| panic!("no weight for {name}"));
    seed::share(total_cases(), w, sum)
}

/// The base seed: `MMAEMU_FUZZ_SEED` or the testkit's default.
fn base_seed() -> u64 {
    seed::base_seed().unwrap_or_else(|e| panic!("{e}"))
}

/// A runner for the property `name`: proptest's ChaCha RNG seeded by the testkit from (base seed, name).
fn runner(name: &str, cases: u32, shrink: bool) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        max_shrink_iters: if shrink { 4096 } else { 0 },
        ..Config::default()
    };
    TestRunner::new_with_rng(config, seed::test_rng(base_seed(), name))
}

// ---------------------------------------------------------------------------------------------------------
// Targets: a model preset and the oracle's reading of the same parameters

struct Target {
    name: &'static str,
    preset: Preset,
    params: Params,
}

fn custom(name: &str, p: Params) -> Preset {
    let c_entry = if p.late_c { CEntry::Late } else { CEntry::Early };
    let spec =
        PresetSpec::custom(name, p.nfma as u32, p.frac as u32, p.frac_out as u32, p.min_exp as i32, c_entry, Some(128));
    Preset::custom(spec).expect("valid custom preset")
}

fn target(name: &'static str) -> Target {
    let (preset, params) = match name {
        "ada" => (Preset::ada(), Params::ADA),
        "hopper" => (Preset::hopper(), Params::HOPPER),
        "b200_mma_sync" => (Preset::b200_mma_sync(), Params::B200),
        _ => {
            let p = match name {
                // A finer early-c unit with an odd block size.
                "custom_early" => Params { nfma: 8, frac: 20, frac_out: 17, min_exp: -140, late_c: false },
                // A late-c unit with a coarse grid and a block size that does not divide 16.
                "custom_late" => Params { nfma: 5, frac: 11, frac_out: 9, min_exp: -125, late_c: true },
                // The widest allowed fractions, one product per block, a very low exponent floor.
                "custom_wide" => Params { nfma: 1, frac: 40, frac_out: 23, min_exp: -1000, late_c: false },
                // Very coarse: 2 term bits, 1 result bit, a floor at 2^0 (most small values vanish).
                "custom_coarse" => Params { nfma: 3, frac: 2, frac_out: 1, min_exp: 0, late_c: false },
                _ => panic!("unknown target {name}"),
            };
            (custom(name, p), p)
        }
    };
    Target { name, preset, params }
}

// ---------------------------------------------------------------------------------------------------------
// Cases (`generators::ChainCase`: formats, a and b of length K, c's fp32 bits; its Debug prints them in hex)

fn ofmt(f: Format) -> Fp8 {
    match f {
        Format::E4m3 => Fp8::E4m3,
        Format::E5m2 => Fp8::E5m2,
    }
}

/// Compare the model with the oracle on one case: `Chain::run`, `dot` (with c, and with None when c is +0),
/// and the fast unsplit accumulator of a 1x1 GEMM (one chain from +0 over K zero-padded to a multiple of 16,
/// §3.1, with the §3.7 non-finite rule, which is the IEEE class of the chain from +0).
fn check(t: &Target, case: &Case, with_accumulate: bool) -> Result<(), TestCaseError> {
    let (fa, fb) = (ofmt(case.fa), ofmt(case.fb));
    let want = oracle::chain(&t.params, fa, fb, &case.a, &case.b, case.c);
    let chain = Chain::new(&t.preset, case.fa, case.fb);
    let got = chain.run(&case.a, &case.b, f32::from_bits(case.c)).to_bits();
    prop_assert_eq!(
        got,
        want,
        "{}: Chain::run = 0x{:08X}, oracle = 0x{:08X} ({:e} vs {:e})",
        t.name,
        got,
        want,
        f32::from_bits(got),
        f32::from_bits(want)
    );
    let got_dot = dot(&t.preset, case.fa, case.fb, &case.a, &case.b, Some(f32::from_bits(case.c)))
        .map_err(|e| TestCaseError::fail(format!("dot failed: {e:?}")))?
        .to_bits();
    prop_assert_eq!(got_dot, want, "{}: dot = 0x{:08X}, oracle = 0x{:08X}", t.name, got_dot, want);
    if case.c == 0 {
        let got_none = dot(&t.preset, case.fa, case.fb, &case.a, &case.b, None)
            .map_err(|e| TestCaseError::fail(format!("dot failed: {e:?}")))?
            .to_bits();
        prop_assert_eq!(got_none, want, "{}: dot(c = None) = 0x{:08X}, oracle = 0x{:08X}", t.name, got_none, want);
    }
    if with_accumulate {
        let k = case.a.len();
        let mut pa = case.a.clone();
        let mut pb = case.b.clone();
        pa.resize(k.div_ceil(16) * 16, 0);
        pb.resize(k.div_ceil(16) * 16, 0);
        let want_acc = oracle::chain(&t.params, fa, fb, &pa, &pb, 0);
        let ops = Operands { fa: case.fa, fb: case.fb, a: &case.a, b: &case.b, m: 1, n: 1, k };
        let acc = accumulate(&t.preset, &ops, true, SplitK::NONE)
            .map_err(|e| TestCaseError::fail(format!("accumulate failed: {e:?}")))?;
        prop_assert_eq!(
            acc[0].to_bits(),
            want_acc,
            "{}: accumulate(fast, S=1) = 0x{:08X}, oracle chain from +0 = 0x{:08X}",
            t.name,
            acc[0].to_bits(),
            want_acc
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Generators

/// Cross-element patterns applied after drawing.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    None,
    /// a[2j+1] = -a[2j], b[2j+1] = b[2j]: exact cancellation inside blocks.
    PairCancel,
    /// The second half repeats the first half with A negated: cancellation across blocks, via c.
    HalfMirror,
    /// One large product first, the rest as drawn.
    BigFirst,
    /// c = -(the f64 sum of the products), rounded to fp32: cancellation against c.
    CCancel,
}

fn pattern_strategy() -> impl Strategy<Value = Pattern> {
    prop_oneof![
        10 => Just(Pattern::None),
        2 => Just(Pattern::PairCancel),
        2 => Just(Pattern::HalfMirror),
        2 => Just(Pattern::BigFirst),
        2 => Just(Pattern::CCancel),
    ]
}

/// K: 0, 1, around the block size, multiples of nfma +- 1, anything up to 200.
fn k_strategy(nfma: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        1 => Just(0usize),
        2 => Just(1usize),
        5 => 2..=nfma + 1,
        6 => (1usize..=6, 0usize..3).prop_map(move |(m, d)| (m * nfma + d).saturating_sub(1)),
        6 => 0usize..=200,
    ]
}

#[allow(clippy::too_many_arguments)]
fn build(
    pair: u8,
    (ma, mb): (CodeMode, CodeMode),
    pattern: Pattern,
    c: u32,
    inject: u8,
    ra: Vec<u32>,
    rb: Vec<u32>,
    extra: u64,
) -> Case {
    let fa = if pair & 1 == 0 { Format::E4m3 } else { Format::E5m2 };
    let fb = if pair & 2 == 0 { Format::E4m3 } else { Format::E5m2 };
    let mut a: Vec<u8> = ra.iter().map(|&r| generators::code(ma, fa, r)).collect();
    let mut b: Vec<u8> = rb.iter().map(|&r| generators::code(mb, fb, r)).collect();
    let k = a.len();
    let mut c = c;
    match pattern {
        Pattern::None => {}
        Pattern::PairCancel => {
            for j in (0..k.saturating_sub(1)).step_by(2) {
                a[j + 1] = a[j] ^ 0x80;
                b[j + 1] = b[j];
            }
        }
        Pattern::HalfMirror => {
            let h = k / 2;
            for i in 0..h {
                a[h + i] = a[i] ^ 0x80;
                b[h + i] = b[i];
            }
        }
        Pattern::BigFirst => {
            if k > 0 {
                a[0] = generators::code(CodeMode::Large, fa, extra as u32);
                b[0] = generators::code(CodeMode::Large, fb, (extra >> 32) as u32);
            }
        }
        Pattern::CCancel => {
            let s: f64 =
                a.iter().zip(&b).map(|(&x, &y)| oracle::fp8_f64(ofmt(fa), x) * oracle::fp8_f64(ofmt(fb), y)).sum();
            let v = -(s as f32);
            if v.is_finite() {
                c = v.to_bits();
            }
        }
    }
    // Rare non-finite codes at random places (inject < 6 of 100: one; < 2: two).
    if k > 0 && inject < 6 {
        let mut e = extra;
        for _ in 0..if inject < 2 { 2 } else { 1 } {
            let pos = (e % k as u64) as usize;
            let on_a = (e >> 20) & 1 == 0;
            let (f, v) = if on_a { (fa, &mut a) } else { (fb, &mut b) };
            let list = generators::nonfinite_codes(f);
            v[pos] = list[((e >> 24) % list.len() as u64) as usize];
            e = e.rotate_right(29).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    Case { fa, fb, a, b, c }
}

fn case_strategy(nfma: usize) -> impl Strategy<Value = Case> {
    (
        0u8..4,
        (generators::mode(), generators::mode()),
        pattern_strategy(),
        generators::f32_bits(),
        0u8..100,
        k_strategy(nfma),
    )
        .prop_flat_map(|(pair, modes, pattern, c, inject, k)| {
            (
                Just((pair, modes, pattern, c, inject)),
                proptest::collection::vec(any::<u32>(), k),
                proptest::collection::vec(any::<u32>(), k),
                any::<u64>(),
            )
        })
        .prop_map(|((pair, modes, pattern, c, inject), ra, rb, extra)| {
            build(pair, modes, pattern, c, inject, ra, rb, extra)
        })
}

// ---------------------------------------------------------------------------------------------------------
// Statistics (printed with --nocapture), to see that every class of input and output is present

#[derive(Default)]
struct Stats {
    cases: u64,
    nan: u64,
    inf: u64,
    zero: u64,
    subnormal: u64,
    nonfinite_c: u64,
    k0: u64,
}

impl Stats {
    fn note(&mut self, case: &Case, out: u32) {
        self.cases += 1;
        let f = f32::from_bits(out);
        if f.is_nan() {
            self.nan += 1
        } else if f.is_infinite() {
            self.inf += 1
        } else if f == 0.0 {
            self.zero += 1
        } else if f.is_subnormal() {
            self.subnormal += 1
        }
        if !f32::from_bits(case.c).is_finite() {
            self.nonfinite_c += 1
        }
        if case.a.is_empty() {
            self.k0 += 1
        }
    }
}

fn differential(name: &'static str) {
    let t = target(name);
    let cases = cases_for(name);
    let mut r = runner(name, cases, true);
    let stats = std::cell::RefCell::new(Stats::default());
    let start = Instant::now();
    let result = r.run(&case_strategy(t.params.nfma), |case| {
        let out = oracle::chain(&t.params, ofmt(case.fa), ofmt(case.fb), &case.a, &case.b, case.c);
        stats.borrow_mut().note(&case, out);
        check(&t, &case, true)
    });
    let s = stats.borrow();
    eprintln!(
        "{name}: {cases} cases (seed 0x{:016X}) in {:.2?}; outputs NaN {} Inf {} zero {} subnormal {}; \
         non-finite c {}; K = 0 {}",
        base_seed(),
        start.elapsed(),
        s.nan,
        s.inf,
        s.zero,
        s.subnormal,
        s.nonfinite_c,
        s.k0
    );
    if let Err(e) = result {
        panic!(
            "{name}: the model disagrees with the oracle (seed 0x{:016X}, MMAEMU_FUZZ_CASES = {}): {e}",
            base_seed(),
            total_cases()
        );
    }
}

#[test]
fn differential_ada() {
    differential("ada");
}

#[test]
fn differential_hopper() {
    differential("hopper");
}

#[test]
fn differential_b200_mma_sync() {
    differential("b200_mma_sync");
}

#[test]
fn differential_custom_early() {
    differential("custom_early");
}

#[test]
fn differential_custom_late() {
    differential("custom_late");
}

#[test]
fn differential_custom_wide() {
    differential("custom_wide");
}

#[test]
fn differential_custom_coarse() {
    differential("custom_coarse");
}

// ---------------------------------------------------------------------------------------------------------
// Curated exhaustive sweep: every pair of codes as a single product (K = 1), every format pair, against a
// rotating set of accumulators (zeros, subnormals, >14-bit values, huge values, infinities, NaN).

const SWEEP_C: [u32; 16] = [
    0x0000_0000, // +0
    0x8000_0000, // -0
    0x3F80_0000, // 1
    0xBF80_0000, // -1
    0x0000_2000, // 2^-136 (subnormal)
    0x0001_16C2, // 1e-40
    0x8000_0001, // -2^-149
    0x3F80_0001, // 1 + 2^-23 (> 14 bits)
    0x4B7F_FFFF, // 2^24 - 1 (> 14 bits)
    0x4780_0000, // 65536
    0x7F7F_FFFF, // FLT_MAX
    0x7F80_0000, // +Inf
    0xFF80_0000, // -Inf
    0x7FC0_0000, // NaN
    0x3A80_0000, // 2^-10
    0xC6FF_FE00, // -32767
];

#[test]
fn sweep_single_products() {
    let start = Instant::now();
    let mut n = 0u64;
    for name in ["ada", "hopper", "b200_mma_sync", "custom_early", "custom_coarse"] {
        let t = target(name);
        for pair in 0..4u8 {
            let fa = if pair & 1 == 0 { Format::E4m3 } else { Format::E5m2 };
            let fb = if pair & 2 == 0 { Format::E4m3 } else { Format::E5m2 };
            let chain = Chain::new(&t.preset, fa, fb);
            for ca in 0..=255u8 {
                for cb in 0..=255u8 {
                    let c = SWEEP_C[(ca as usize * 7 + cb as usize * 3 + pair as usize) % SWEEP_C.len()];
                    let want = oracle::chain(&t.params, ofmt(fa), ofmt(fb), &[ca], &[cb], c);
                    let got = chain.run(&[ca], &[cb], f32::from_bits(c)).to_bits();
                    assert_eq!(
                        got,
                        want,
                        "{name}: {}x{} a = 0x{ca:02X}, b = 0x{cb:02X}, c = 0x{c:08X}: model 0x{got:08X}, \
                         oracle 0x{want:08X}",
                        fa.name(),
                        fb.name()
                    );
                    n += 1;
                }
            }
        }
    }
    eprintln!("sweep_single_products: {n} chains in {:.2?}", start.elapsed());
}

// ---------------------------------------------------------------------------------------------------------
// Fault injection: the differential check must be able to fail. A model preset that differs from ada in
// one parameter, compared with the oracle configured with the true ada parameters, must give a mismatch
// within the standard ada budget.

fn detects(fault: &str, faulty: Params) {
    let t = Target { name: "ada (oracle) vs faulty model", preset: custom(fault, faulty), params: Params::ADA };
    let mut r = runner("ada", cases_for("ada"), false);
    let start = Instant::now();
    let tried = std::cell::Cell::new(0u64);
    let result = r.run(&case_strategy(Params::ADA.nfma), |case| {
        tried.set(tried.get() + 1);
        check(&t, &case, false)
    });
    match result {
        Err(TestError::Fail(reason, case)) => {
            eprintln!("{fault}: detected after {} cases in {:.2?}: {case:?}: {reason}", tried.get(), start.elapsed())
        }
        Err(e) => panic!("{fault}: unexpected runner error {e}"),
        Ok(()) => panic!("{fault}: the differential check did not detect the fault in {} cases", tried.get()),
    }
}

#[test]
fn fault_frac_12_is_detected() {
    detects("ada_frac12", Params { frac: 12, ..Params::ADA });
}

#[test]
fn fault_frac_out_12_is_detected() {
    detects("ada_frac_out12", Params { frac_out: 12, ..Params::ADA });
}

#[test]
fn fault_block_size_32_is_detected() {
    detects("ada_nfma32", Params { nfma: 32, ..Params::ADA });
}

#[test]
fn fault_late_c_is_detected() {
    detects("ada_late_c", Params { late_c: true, ..Params::ADA });
}
