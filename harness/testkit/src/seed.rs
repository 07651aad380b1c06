//! Seeds and case budgets of the fuzz trials: every trial runs proptest's ChaCha RNG from a seed derived
//! from one base seed and the trial's name, so a run is deterministic and one trial reproduces alone.
//!
//! Environment:
//! - `MMAEMU_FUZZ_SEED`: the base seed, a u64 (decimal or `0x` hex); default [`DEFAULT_SEED`];
//! - `MMAEMU_FUZZ_CASES`: the total number of random cases shared out among the fuzz trials by weight;
//!   default [`DEFAULT_TOTAL_CASES`] (about 16 s of CPU, 8 s on 2 cores, test profile).

use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The base seed when `MMAEMU_FUZZ_SEED` is not set.
pub const DEFAULT_SEED: u64 = 0x6D6D_6165_6D75_4834;

/// The total case budget when `MMAEMU_FUZZ_CASES` is not set.
pub const DEFAULT_TOTAL_CASES: u64 = 40_000;

/// Parse a u64 in decimal or `0x` hex.
pub fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim().replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The base seed: `MMAEMU_FUZZ_SEED` or [`DEFAULT_SEED`]. A malformed value is an error naming it.
pub fn base_seed() -> Result<u64, String> {
    match std::env::var("MMAEMU_FUZZ_SEED") {
        Ok(s) => parse_u64(&s).ok_or_else(|| format!("MMAEMU_FUZZ_SEED must be a u64 (decimal or 0x hex), got {s:?}")),
        Err(_) => Ok(DEFAULT_SEED),
    }
}

/// The total case budget: `MMAEMU_FUZZ_CASES` or [`DEFAULT_TOTAL_CASES`].
pub fn total_cases() -> Result<u64, String> {
    match std::env::var("MMAEMU_FUZZ_CASES") {
        Ok(s) => parse_u64(&s).ok_or_else(|| format!("MMAEMU_FUZZ_CASES must be a non-negative integer, got {s:?}")),
        Err(_) => Ok(DEFAULT_TOTAL_CASES),
    }
}

/// The share of `total` for a trial of weight `weight` out of `weight_sum` (at least 1 case).
pub fn share(total: u64, weight: u64, weight_sum: u64) -> u32 {
    (total.saturating_mul(weight).div_ceil(weight_sum.max(1))).clamp(1, u32::MAX as u64) as u32
}

/// SplitMix64 step.
pub fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The 32-byte ChaCha seed of a trial: the base seed mixed with the trial's name.
pub fn trial_seed(base: u64, name: &str) -> [u8; 32] {
    let mut state = base;
    for b in name.bytes() {
        state = state.rotate_left(8) ^ b as u64;
        splitmix(&mut state);
    }
    let mut seed = [0u8; 32];
    for chunk in seed.chunks_mut(8) {
        chunk.copy_from_slice(&splitmix(&mut state).to_le_bytes());
    }
    seed
}

/// A deterministic runner for the trial `name`: `cases` cases, ChaCha from [`trial_seed`], no failure
/// persistence files, shrinking bounded so a failure reports quickly.
pub fn runner(base: u64, name: &str, cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        max_shrink_iters: 2048,
        max_shrink_time: 60_000,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &trial_seed(base, name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seeds() {
        assert_eq!(parse_u64("0x10"), Some(16));
        assert_eq!(parse_u64(" 1_000 "), Some(1000));
        assert_eq!(parse_u64("x"), None);
    }

    #[test]
    fn seeds_differ_by_name_and_are_stable() {
        assert_ne!(trial_seed(1, "a"), trial_seed(1, "b"));
        assert_eq!(trial_seed(7, "fuzz/oracle/ada"), trial_seed(7, "fuzz/oracle/ada"));
        assert_eq!(share(100, 1, 3), 34);
        assert_eq!(share(0, 1, 3), 1);
    }
}
