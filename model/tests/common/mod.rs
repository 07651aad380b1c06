//! What several test files of the model share: the SplitMix64 generator of their random inputs (the oracle files'
//! recipe, datasets/oracle/README.md) and a little-endian reader of the oracle files.
#![allow(dead_code)]

/// SplitMix64; `below(n)` is next() mod n, as in the oracle generator scripts.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// An integer in [lo, hi).
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo)
    }
    pub fn per_mille(&mut self, p: u64) -> bool {
        self.below(1000) < p
    }
    pub fn choice<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// A little-endian reader over an oracle file (`what` names it in the message of a truncated file).
pub struct Reader<'a> {
    pub bytes: &'a [u8],
    pub what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        assert!(self.bytes.len() >= n, "{} is truncated", self.what);
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        head
    }
    pub fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take(2).try_into().unwrap())
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
}

/// One chain of an oracle file: c + a · b (with e8m0 block scales for the `+mx` models).
pub struct OracleChain {
    pub fa: mmaemu_model::Format,
    pub fb: mmaemu_model::Format,
    pub c: u32,
    pub a: Vec<u8>,
    pub b: Vec<u8>,
    pub scale_a: Vec<u8>,
    pub scale_b: Vec<u8>,
}

/// Every chain through every model (a preset name, `+mx` for its block-scaled dot) against MMA-Sim's bits,
/// `expected[chain][model]`: the first differences are listed, and every result is compared.
pub fn assert_equals_mmasim(models: &[String], chains: &[OracleChain], expected: &[Vec<u32>]) {
    use mmaemu_model::{dot, dot_scaled};
    assert_eq!(chains.len(), expected.len());
    let mut failures = Vec::new();
    let (mut compared, mut differ) = (0usize, 0usize);
    for (m, model) in models.iter().enumerate() {
        let (name, scaled) = model.strip_suffix("+mx").map_or((model.as_str(), false), |n| (n, true));
        let preset = mmaemu_model::Catalogue::builtin().preset(name).unwrap();
        for (i, (ch, expected)) in chains.iter().zip(expected).enumerate() {
            let c = Some(f32::from_bits(ch.c));
            let got = if scaled {
                dot_scaled(&preset, ch.fa, ch.fb, &ch.a, &ch.b, &ch.scale_a, &ch.scale_b, c)
            } else {
                dot(&preset, ch.fa, ch.fb, &ch.a, &ch.b, c)
            }
            .unwrap()
            .to_bits();
            compared += 1;
            if got != expected[m] {
                differ += 1;
                if failures.len() < 10 {
                    failures.push(format!(
                        "{model} chain {i}: {:?}x{:?} K={} c={:#010x} a={:02x?} b={:02x?} sa={:02x?} sb={:02x?}: \
                         mmaemu {got:#010x}, MMA-Sim {:#010x}",
                        ch.fa,
                        ch.fb,
                        ch.a.len(),
                        ch.c,
                        ch.a,
                        ch.b,
                        ch.scale_a,
                        ch.scale_b,
                        expected[m]
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{differ} of {compared} results differ; the first:\n{}", failures.join("\n"));
    assert_eq!(compared, models.len() * chains.len());
}
