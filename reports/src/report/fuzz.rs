//! The report's fixed-seed differential fuzz: random GEMMs (random shapes, ragged K, presets ada and
//! hopper, fast and slow, S = 1..8 with every scheme of the preset, codes drawn from several modes) checked
//! bit for bit between independent implementations:
//!
//! - `plans`: the model's plan executor ([`mmaemu_model::accumulate`](mod@mmaemu_model::accumulate): `Plan`
//!   chunks, `execute`) against the split-K fit's replay of the same plan ([`mmaemu_fit::splitk::replay_plan`]:
//!   chains with their padding, cached by k indices and padded length) — finite codes;
//! - `backend <name>`: every non-reference backend's chain engine against the model's reference engine
//!   through the whole GEMM (plan, non-finite inputs, epilogue) — any codes, non-finite included.
//!
//! The seed and the case count are fixed by the report's options, and the cases are drawn from `rand`'s
//! ChaCha8 seeded with them, so two runs of one build give the same cases; the harness's proptest fuzz
//! suite (`cargo test -p mmaemu-harness --test fuzz`) is the wider one.

use super::backends::Backend;
use mmaemu_fit::splitk::replay_plan;
use mmaemu_model::{
    execute, gemm, gemm_with, Epilogue, Format, Operands, OutDtype, Plan, Preset, ReferenceEngine, Scheme, SplitK,
};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

/// The default seed.
pub const DEFAULT_SEED: u64 = 0x6D6D_6165_6D75_5250;

/// The default number of cases per check.
pub const DEFAULT_CASES: usize = 1500;

/// One random code of a format: any byte, finite only, or from a narrow exponent window (cancellation,
/// carries, heavy truncation), or zero.
fn code(rng: &mut ChaCha8Rng, f: Format, finite: bool, mode: usize, centre: u8) -> u8 {
    loop {
        let c = match mode {
            0 => rng.random::<u8>(),
            1 => {
                // Exponent field within +-2 of the centre, any sign and significand.
                let (eb, mb) = match f {
                    Format::E4m3 => (4u32, 3u32),
                    Format::E5m2 => (5, 2),
                };
                let e = (centre as i64 + rng.random_range(0..5i64) - 2).clamp(0, (1 << eb) - 1) as u8;
                let sign = rng.random_range(0..2u8);
                (sign << 7) | (e << mb) | (rng.random::<u8>() & ((1 << mb) - 1))
            }
            _ => {
                if rng.random_range(0..3) == 0 {
                    0
                } else {
                    rng.random::<u8>()
                }
            }
        };
        if !finite || !f.is_nonfinite(c) {
            return c;
        }
    }
}

/// A random GEMM case.
struct Case {
    preset: Preset,
    fa: Format,
    fb: Format,
    a: Vec<u8>,
    b: Vec<u8>,
    m: usize,
    n: usize,
    k: usize,
    fast: bool,
    split: SplitK,
}

impl Case {
    fn operands(&self) -> Operands<'_> {
        Operands { fa: self.fa, fb: self.fb, a: &self.a, b: &self.b, m: self.m, n: self.n, k: self.k }
    }
}

fn case(rng: &mut ChaCha8Rng, finite: bool) -> Case {
    let preset = if rng.random_range(0..2) == 0 { Preset::ada() } else { Preset::hopper() };
    let fmt = |r: &mut ChaCha8Rng| if r.random_range(0..2) == 0 { Format::E4m3 } else { Format::E5m2 };
    let (fa, fb) = (fmt(rng), fmt(rng));
    let (m, n) = (1 + rng.random_range(0..3), 1 + rng.random_range(0..3));
    let k = match rng.random_range(0..8) {
        0 => 1 + rng.random_range(0..16),
        1 => 64 * (1 + rng.random_range(0..8)),
        2 => 1000 + rng.random_range(0..1500),
        _ => 1 + rng.random_range(0..700),
    };
    let fast = rng.random_range(0..2) == 0;
    let s = [1, 1, 2, 3, 4, 5, 6, 8][rng.random_range(0..8)];
    let schemes = mmaemu_model::Catalogue::builtin().schemes(&preset);
    let scheme = match (s, schemes.as_slice()) {
        (1, _) => Scheme::None,
        (_, allowed) if !allowed.is_empty() => allowed[rng.random_range(0..allowed.len())],
        _ => Scheme::None,
    };
    let split = SplitK::new(s, scheme).unwrap_or(SplitK::NONE);
    let mode = rng.random_range(0..3);
    let (ca, cb) = (rng.random_range(2..14u8), rng.random_range(2..14u8));
    let a = (0..m * k).map(|_| code(rng, fa, finite, mode, ca)).collect();
    let b = (0..n * k).map(|_| code(rng, fb, finite, mode, cb)).collect();
    Case { preset, fa, fb, a, b, m, n, k, fast, split }
}

/// The outcome of one check.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// `plans` or `backend <name>`.
    pub name: String,
    /// What it compares.
    pub what: String,
    /// Cases run.
    pub cases: usize,
    /// Cases that differ.
    pub failures: usize,
    /// The first few failing cases, described.
    pub first: Vec<String>,
}

impl Check {
    fn new(name: String, what: String, cases: usize) -> Check {
        Check { name, what, cases, failures: 0, first: Vec::new() }
    }
}

/// The whole fuzz run.
#[derive(Clone, Debug, PartialEq)]
pub struct FuzzReport {
    /// The seed.
    pub seed: u64,
    /// Cases per check.
    pub cases: usize,
    /// Every check.
    pub checks: Vec<Check>,
}

impl FuzzReport {
    /// Failing cases over all checks.
    pub fn failures(&self) -> usize {
        self.checks.iter().map(|c| c.failures).sum()
    }
    /// The JSON form.
    pub fn json(&self) -> Value {
        json!({
            "seed": format!("{:#x}", self.seed),
            "cases": self.cases,
            "failures": self.failures(),
            "checks": self.checks.iter().map(|c| json!({
                "name": c.name, "what": c.what, "cases": c.cases, "failures": c.failures, "first_failures": c.first,
            })).collect::<Vec<_>>(),
        })
    }
}

fn describe(i: usize, c: &Case) -> String {
    format!(
        "case {i}: {} {}x{} M={} N={} K={} {} split {}",
        c.preset.name(),
        c.fa.name(),
        c.fb.name(),
        c.m,
        c.n,
        c.k,
        if c.fast { "fast" } else { "slow" },
        c.split
    )
}

/// Run every check with `cases` cases each from `seed`.
pub fn run(seed: u64, cases: usize, backends: &[Box<dyn Backend>]) -> FuzzReport {
    let mut checks = Vec::new();
    // Plans: model executor vs the fit's layouts, finite codes.
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut plans = Check::new(
        "plans".into(),
        "model plan executor (execute) vs the split-K fit's replay of the plan, fp32 accumulator, finite codes".into(),
        cases,
    );
    for i in 0..cases {
        let c = case(&mut rng, true);
        let ops = c.operands();
        let plan = Plan::new(&c.preset, c.k, c.fast, c.split);
        let ok = match plan.as_ref().map(|p| (p, execute(&c.preset, p, &ops, &ReferenceEngine))) {
            Ok((plan, Ok(model))) => {
                let fit = replay_plan(&c.preset, plan, &ops).unwrap_or_default();
                model.iter().map(|x| x.to_bits()).eq(fit.iter().map(|x| x.to_bits()))
            }
            _ => false,
        };
        if !ok {
            plans.failures += 1;
            if plans.first.len() < 5 {
                plans.first.push(describe(i, &c));
            }
        }
    }
    checks.push(plans);
    // Backends: each engine vs the reference engine, whole GEMM, any codes.
    for be in backends.iter().filter(|b| !b.is_reference()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xBAC4_E2D5);
        let mut check = Check::new(
            format!("backend {}", be.name()),
            format!("GEMM through '{}' vs the model's reference engine, any codes", be.name()),
            cases,
        );
        for i in 0..cases {
            let c = case(&mut rng, false);
            let ops = c.operands();
            let out = [OutDtype::Float32, OutDtype::BFloat16, OutDtype::E4m3][rng.random_range(0..3)];
            let epi = Epilogue { scale_a: 0.5, scale_b: 3.0, scale_result: Some(0.25), out };
            let want = gemm(&c.preset, &ops, c.fast, c.split, &epi).map(|o| o.bits);
            let got = gemm_with(&c.preset, &ops, c.fast, c.split, &epi, be.engine()).map(|o| o.bits);
            let ok = match (&want, &got) {
                (Ok(w), Ok(g)) => w == g,
                (Err(w), Err(g)) => w.category() == g.category(),
                _ => false,
            };
            if !ok {
                check.failures += 1;
                if check.first.len() < 5 {
                    check.first.push(describe(i, &c));
                }
            }
        }
        checks.push(check);
    }
    FuzzReport { seed, cases, checks }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_seed_plans_agree() {
        let r = run(DEFAULT_SEED, 300, &super::super::backends::available());
        assert_eq!(r.failures(), 0, "{:?}", r.checks);
        assert_eq!(r, run(DEFAULT_SEED, 300, &super::super::backends::available()));
    }
}
