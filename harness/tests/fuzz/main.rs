//! The `fuzz` test target: seeded property trials over shapes no GPU recorded, one libtest-mimic trial per family
//! (filter with `cargo test -p mmaemu-harness --test fuzz -- fuzz/plan`).

// - `fuzz/oracle/<preset>`: the model's chain and 1 x 1 accumulators against the independent exact block-step oracle of
//   `mmaemu_testkit::oracle` (a lighter run than `model/tests/differential.rs`);
// - `fuzz/plan/...`: plan invariants — zero padding changes nothing, S = 1 equals the unsplit chains, a split into
//   single tiles equals the chain-by-chain sum in the scheme's order, K = 0 gives +0, permuting the rows of A or B
//   permutes the result;
// - `fuzz/scaled_mm/<profile>`: `ScaledMm` with an explicit split against `accumulate` + `Epilogue`;
// - `fuzz/backend/<engine>`: every engine of `mmaemu_harness::engines::all()` against the model.
//
// Deterministic by default; `MMAEMU_FUZZ_SEED` and `MMAEMU_FUZZ_CASES` change the seed and the total case budget (see
// `mmaemu_testkit::seed`). A failure prints the minimal failing input (proptest shrinks it), the seed, and the command
// that reruns the family alone.

mod backend;
mod chains;
mod plan;
mod scaled;

use libtest_mimic::{Arguments, Trial};
use mmaemu_testkit::seed::{base_seed, runner, share, total_cases};
use proptest::strategy::Strategy;
use proptest::test_runner::{TestCaseError, TestError};
use std::fmt::Debug;
use std::process::ExitCode;
use std::time::Instant;

/// The body of a fuzz family: (trial name, base seed, cases) -> the property's verdict.
pub type FamilyRun = Box<dyn FnOnce(&str, u64, u32) -> Result<(), String> + Send>;

/// One fuzz family: a trial name, its weight in the case budget, and its body (name, base seed, cases).
pub struct Family {
    /// The trial name.
    pub name: String,
    /// Share of `MMAEMU_FUZZ_CASES`.
    pub weight: u64,
    /// The property run.
    pub run: FamilyRun,
}

impl Family {
    /// A family.
    pub fn new(
        name: impl Into<String>,
        weight: u64,
        run: impl FnOnce(&str, u64, u32) -> Result<(), String> + Send + 'static,
    ) -> Family {
        Family { name: name.into(), weight, run: Box::new(run) }
    }
}

/// Run a property over `cases` cases of `strategy` from the trial's seed; a failure is reported with the
/// minimal input, the seed and the command that reruns the trial alone.
pub fn check<S>(
    name: &str,
    base: u64,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> Result<(), String>
where
    S: Strategy,
    S::Value: Debug,
{
    let mut r = runner(base, name, cases);
    let start = Instant::now();
    let result = r.run(&strategy, test);
    let again = format!(
        "MMAEMU_FUZZ_SEED=0x{base:016X} MMAEMU_FUZZ_CASES={} cargo test -p mmaemu-harness --test fuzz -- --exact '{name}'",
        total_cases().unwrap_or(0)
    );
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, value)) => Err(format!(
            "{name}: property failed after {:.1?} ({cases} cases, seed 0x{base:016X}): {reason}\nminimal failing input: \
             {value:?}\nreproduce: {again}",
            start.elapsed()
        )),
        Err(TestError::Abort(reason)) => Err(format!("{name}: aborted ({reason}); reproduce: {again}")),
    }
}

/// Every family, in a fixed order.
fn families() -> Vec<Family> {
    let mut f = Vec::new();
    f.extend(chains::families());
    f.extend(plan::families());
    f.extend(scaled::families());
    f.extend(backend::families());
    f
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let families = families();
    let weight_sum: u64 = families.iter().map(|f| f.weight).sum();
    let trials = families
        .into_iter()
        .map(|fam| {
            let Family { name, weight, run } = fam;
            Trial::test(name.clone(), move || {
                let base = base_seed()?;
                let cases = share(total_cases()?, weight, weight_sum);
                run(&name, base, cases).map_err(Into::into)
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}
