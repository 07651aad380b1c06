//! The deterministic generator of the kernels' batteries, tests and benchmarks: xorshift64* (Vigna), so a
//! self-check battery, a gate battery or a benchmark's operands are the same on every machine and run.

/// xorshift64*: a 64-bit state, `Rng(state)` with a nonzero state (zero stays zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rng(pub u64);

impl Rng {
    /// A generator from any seed: the seed is spread over the state and made odd (so never zero).
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next word.
    pub fn word(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A word below `n` (n > 0; the modulo bias is irrelevant for test inputs).
    pub fn below(&mut self, n: u64) -> u64 {
        self.word() % n.max(1)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.word() % 100 < percent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift64_star_sequence() {
        // The first outputs from state 1, by the recurrence written out: x ^= x >> 12; x ^= x << 25;
        // x ^= x >> 27; output x * 0x2545F4914F6CDD1D (mod 2^64).
        let mut x: u64 = 1;
        let mut want = Vec::new();
        for _ in 0..3 {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            want.push(x.wrapping_mul(0x2545_F491_4F6C_DD1D));
        }
        let mut r = Rng(1);
        assert_eq!((0..3).map(|_| r.word()).collect::<Vec<_>>(), want);
        assert_eq!(Rng(0).word(), 0);
        assert_ne!(Rng::seeded(0).0, 0);
    }
}
