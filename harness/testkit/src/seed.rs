//! Seeds and case budgets of the fuzz trials: proptest runners and `rand` generators seeded from one base seed and
//! the trial's name (SHA-256), so a run is deterministic and one trial reproduces alone.

// Environment:
// - `MMAEMU_FUZZ_SEED`: the base seed, a u64 (decimal or `0x` hex); default `DEFAULT_SEED`;
// - `MMAEMU_FUZZ_CASES`: the total number of random cases shared out among the fuzz trials by weight; default
//   `DEFAULT_TOTAL_CASES` (about 16 s of CPU, 8 s on 2 cores, test profile).

use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use sha2::{Digest, Sha256};

/// The tests' seeded generator outside proptest: ChaCha8, a named algorithm with a fixed output stream.
pub type Rng = rand::rngs::ChaCha8Rng;

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

/// The 32-byte seed of a trial: SHA-256 of the base seed (8 bytes, little-endian) followed by the trial's
/// name (its UTF-8 bytes). Stable across platforms and releases: SHA-256 is a fixed standard applied to
/// bytes whose order is written out here, so neither the host's endianness or word size nor any crate's
/// version can change it.
pub fn trial_seed(base: u64, name: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(base.to_le_bytes());
    h.update(name.as_bytes());
    h.finalize().into()
}

/// proptest's ChaCha RNG for the trial `name`, seeded with [`trial_seed`].
pub fn test_rng(base: u64, name: &str) -> TestRng {
    TestRng::from_seed(RngAlgorithm::ChaCha, &trial_seed(base, name))
}

/// A permutation of `0..len` from a seed: Fisher-Yates (`rand`'s `shuffle`) on [`Rng`] from `seed_from_u64`.
pub fn permutation(len: usize, seed: u64) -> Vec<usize> {
    let mut p: Vec<usize> = (0..len).collect();
    p.shuffle(&mut Rng::seed_from_u64(seed));
    p
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
    TestRunner::new_with_rng(config, test_rng(base, name))
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

    #[test]
    fn trial_seed_is_sha256_of_the_base_and_the_name() {
        // Digests of the byte strings the definition names, computed apart from this code: the base 0 as
        // eight zero bytes and no name; the base 1 as 01 00 00 00 00 00 00 00 followed by "a".
        let hex = |s: [u8; 32]| s.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(trial_seed(0, "")), "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc");
        assert_eq!(hex(trial_seed(1, "a")), "ae6121c88ba555f64c3d812123eb799d128015541f850c5e9bf1d54c08ad8481");
    }

    #[test]
    fn permutations_are_seeded_permutations() {
        for len in [0, 1, 2, 7, 100] {
            let mut p = permutation(len, 3);
            assert_eq!(p, permutation(len, 3));
            p.sort_unstable();
            assert_eq!(p, (0..len).collect::<Vec<_>>());
        }
        assert_ne!(permutation(100, 3), permutation(100, 4));
    }
}
