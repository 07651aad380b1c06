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
