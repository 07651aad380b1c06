//! Input generators for the fuzz trials, after TestFloat (curated exponents x significand patterns, random bit-streams,
//! special operands) and MMA-Sim (operand windows that stress a block's alignment, truncation and cancellation; very
//! long and ragged reductions).

// Everything is a proptest `Strategy`, so failures shrink: to fewer elements, smaller K and simpler codes. Codes are
// drawn from raw random words through a `CodeMode`, which keeps shrinking meaningful (a smaller word is a simpler code
// of the same mode).

use mmaemu_model::Format;
use proptest::prelude::*;
use std::fmt;

/// How one operand's codes are drawn from raw random words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeMode {
    /// TestFloat-style: a curated exponent field (0, 1, 2, around the bias, the two largest) times a
    /// curated significand pattern (0, 1, the largest, the largest - 1, the top bit, alternating bits).
    Curated,
    /// A random bit-stream: any byte, non-finite codes included.
    RandomBits,
    /// Any finite code.
    Finite,
    /// Every exponent field with a boundary significand (0, 1, the largest - 1, the largest).
    Boundary,
    /// Exponent field 0 or 1: subnormals, zeros and the smallest normals.
    Subnormal,
    /// Exponent fields within +-width of a centre: equal or close exponents, carries, heavy truncation.
    Window {
        /// Centre exponent field.
        centre: u8,
        /// Half width.
        width: u8,
    },
    /// Mostly +-0 with a few finite codes.
    Sparse,
    /// The three largest finite exponent fields.
    Large,
}

/// Mantissa bits of a format.
pub fn mbits(f: Format) -> u32 {
    match f {
        Format::E4m3 => 3,
        Format::E5m2 => 2,
    }
}

/// The largest exponent field holding finite codes.
pub fn max_field(f: Format) -> u32 {
    match f {
        Format::E4m3 => 15,
        Format::E5m2 => 30,
    }
}

/// Is the code NaN or Inf in format `f`?
pub fn is_nonfinite(f: Format, c: u8) -> bool {
    match f {
        Format::E4m3 => c & 0x7F == 0x7F,
        Format::E5m2 => c & 0x7C == 0x7C,
    }
}

/// A finite code: a non-finite code with its lowest exponent bit cleared.
pub fn finite(f: Format, c: u8) -> u8 {
    if is_nonfinite(f, c) {
        c & !(1u8 << mbits(f))
    } else {
        c
    }
}

/// The code of (sign, exponent field, mantissa), made finite.
pub fn compose(f: Format, sign: u32, field: u32, mant: u32) -> u8 {
    let m = mbits(f);
    finite(f, (((sign & 1) << 7) | ((field & 0x1F) << m) | (mant & ((1 << m) - 1))) as u8)
}

/// The non-finite codes of a format: e4m3 NaNs; e5m2 infinities and NaNs.
pub fn nonfinite_codes(f: Format) -> &'static [u8] {
    match f {
        Format::E4m3 => &[0x7F, 0xFF],
        Format::E5m2 => &[0x7C, 0xFC, 0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF],
    }
}

/// One code of mode `mode` in format `f` from the random word `r`.
pub fn code(mode: CodeMode, f: Format, r: u32) -> u8 {
    let mmax = (1u32 << mbits(f)) - 1;
    let mf = max_field(f);
    match mode {
        CodeMode::Curated => {
            let bias = if f == Format::E4m3 { 7 } else { 15 };
            let fields = [0, 1, 2, bias - 1, bias, bias + 1, mf - 1, mf];
            let top = 1 << (mbits(f) - 1);
            let alt = 0b0101_0101 & mmax;
            let mants = [0, 1, mmax, mmax - 1, top, alt];
            compose(f, r >> 16, fields[(r % 8) as usize], mants[((r >> 3) % 6) as usize])
        }
        CodeMode::RandomBits => r as u8,
        CodeMode::Finite => finite(f, r as u8),
        CodeMode::Boundary => {
            let mant = [0, 1, mmax - 1, mmax][((r >> 3) & 3) as usize];
            compose(f, r, (r >> 8) % (mf + 1), mant)
        }
        CodeMode::Subnormal => compose(f, r >> 8, (r >> 9) & 1, r),
        CodeMode::Window { centre, width } => {
            let w = width as i64;
            let field = (centre as i64 + ((r >> 8) as i64 % (2 * w + 1)) - w).clamp(0, mf as i64);
            compose(f, r >> 20, field as u32, r)
        }
        CodeMode::Sparse => {
            if r & 3 != 0 {
                (((r >> 16) & 1) << 7) as u8
            } else {
                finite(f, (r >> 8) as u8)
            }
        }
        CodeMode::Large => compose(f, r >> 16, mf - (r >> 8) % 3, r),
    }
}

/// The code modes, curated and windowed ones most often.
pub fn mode() -> impl Strategy<Value = CodeMode> {
    prop_oneof![
        5 => Just(CodeMode::Curated),
        2 => Just(CodeMode::RandomBits),
        5 => Just(CodeMode::Finite),
        3 => Just(CodeMode::Boundary),
        3 => Just(CodeMode::Subnormal),
        5 => (0u8..31, 0u8..4).prop_map(|(centre, width)| CodeMode::Window { centre, width }),
        2 => Just(CodeMode::Sparse),
        2 => Just(CodeMode::Large),
    ]
}

/// An FP8 format.
pub fn format() -> impl Strategy<Value = Format> {
    prop_oneof![Just(Format::E4m3), Just(Format::E5m2)]
}

/// Reduction lengths: ragged (any K up to 300), multiples of 16, the edges of 16-, 64- and 128-wide tiles,
/// rarely 0, and rarely huge (4096 up to `max_huge`, powers of two and ragged).
pub fn k(max_huge: usize) -> impl Strategy<Value = usize> {
    let max_huge = max_huge.max(4096);
    prop_oneof![
        1 => Just(0usize),
        8 => 1usize..=300,
        4 => (1usize..=40).prop_map(|t| 16 * t),
        4 => (1usize..=12, 0usize..3).prop_map(|(t, d)| (64 * t + d).saturating_sub(1).max(1)),
        4 => (1usize..=8, 0usize..3).prop_map(|(t, d)| (128 * t + d).saturating_sub(1).max(1)),
        1 => prop_oneof![
            (12u32..=max_huge.ilog2()).prop_map(|e| 1usize << e),
            (4096usize..=max_huge),
        ],
    ]
}

/// fp32 accumulator bits: zeros, subnormals (powers of two among them), tiny and huge values, the largest
/// finite values, infinities, NaNs (several payloads), values in the products' range with more or fewer
/// than 14 significant bits, and any bit pattern.
pub fn f32_bits() -> impl Strategy<Value = u32> {
    let sign = || any::<bool>().prop_map(|s| if s { 0x8000_0000u32 } else { 0 });
    prop_oneof![
        12 => Just(0u32),
        3 => Just(0x8000_0000u32),
        4 => (sign(), 1u32..0x80_0000).prop_map(|(s, f)| s | f),
        2 => (sign(), 0u32..24).prop_map(|(s, e)| s | (1u32 << e)),
        3 => (sign(), 1u32..=24, 0u32..0x80_0000).prop_map(|(s, e, f)| s | (e << 23) | f),
        3 => (sign(), 248u32..=254, 0u32..0x80_0000).prop_map(|(s, e, f)| s | (e << 23) | f),
        1 => prop_oneof![Just(0x7F7F_FFFFu32), Just(0xFF7F_FFFFu32)],
        1 => prop_oneof![Just(0x7F80_0000u32), Just(0xFF80_0000u32)],
        1 => prop_oneof![
            Just(0x7FC0_0000u32),
            Just(0xFFC0_0000u32),
            Just(0x7F80_0001u32),
            (1u32..0x80_0000).prop_map(|f| 0xFF80_0000 | f)
        ],
        8 => (sign(), 100u32..=175, 0u32..0x80_0000).prop_map(|(s, e, f)| s | (e << 23) | f),
        6 => (sign(), 100u32..=175, 0u32..0x4000).prop_map(|(s, e, f)| s | (e << 23) | (f << 10)),
        4 => any::<u32>(),
    ]
}

/// Cross-element patterns applied to a drawn pair of vectors (cancellation inside and across blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// As drawn.
    None,
    /// `a[2j+1] = -a[2j]`, `b[2j+1] = b[2j]`: exact cancellation inside blocks.
    PairCancel,
    /// The second half repeats the first with A negated: cancellation across blocks.
    HalfMirror,
}

/// A pattern, mostly none.
pub fn pattern() -> impl Strategy<Value = Pattern> {
    prop_oneof![6 => Just(Pattern::None), 1 => Just(Pattern::PairCancel), 1 => Just(Pattern::HalfMirror)]
}

/// One GEMM's operands: A is [m, k] and B is [n, k], row-major FP8 codes.
#[derive(Clone, PartialEq, Eq)]
pub struct Gemm {
    /// Format of A.
    pub fa: Format,
    /// Format of B.
    pub fb: Format,
    /// Rows of A.
    pub m: usize,
    /// Rows of B.
    pub n: usize,
    /// The reduction length.
    pub k: usize,
    /// A's codes.
    pub a: Vec<u8>,
    /// B's codes.
    pub b: Vec<u8>,
}

impl Gemm {
    /// The model's view of the operands.
    pub fn operands(&self) -> mmaemu_model::Operands<'_> {
        mmaemu_model::Operands { fa: self.fa, fb: self.fb, a: &self.a, b: &self.b, m: self.m, n: self.n, k: self.k }
    }
    /// Does any code of A or B hold NaN or Inf?
    pub fn has_nonfinite(&self) -> bool {
        self.a.iter().any(|&c| is_nonfinite(self.fa, c)) || self.b.iter().any(|&c| is_nonfinite(self.fb, c))
    }
}

/// Result bits compared as a whole and printed in hex (with the fp32 value), so a failing comparison
/// reads like the recordings' diffs.
#[derive(Clone, PartialEq, Eq)]
pub struct HexBits(pub Vec<u32>);

impl fmt::Debug for HexBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<String> =
            self.0.iter().take(64).map(|&b| format!("0x{b:08X} ({:e})", f32::from_bits(b))).collect();
        let more = if self.0.len() > 64 { format!(", ... ({} more)", self.0.len() - 64) } else { String::new() };
        write!(f, "[{}{more}]", shown.join(", "))
    }
}

/// Codes as hex, at most 512 of them (the seed reproduces the rest).
pub fn hex(v: &[u8]) -> String {
    const MAX: usize = 512;
    let mut s: String = v.iter().take(MAX).map(|x| format!("{x:02X}")).collect::<Vec<_>>().join(" ");
    if v.len() > MAX {
        s.push_str(&format!(" ... ({} more)", v.len() - MAX));
    }
    s
}

impl fmt::Debug for Gemm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Gemm {{ {} x {}, m {}, n {}, k {}, a (row-major [m, k]): [{}], b ([n, k]): [{}] }}",
            self.fa.name(),
            self.fb.name(),
            self.m,
            self.n,
            self.k,
            hex(&self.a),
            hex(&self.b)
        )
    }
}

/// Options of [`gemm`].
#[derive(Clone, Debug)]
pub struct GemmShape {
    /// Smallest and largest m.
    pub m: (usize, usize),
    /// Smallest and largest n.
    pub n: (usize, usize),
    /// Largest huge K (see [`k`]).
    pub max_huge_k: usize,
    /// K drawn uniformly from this range instead of from [`k`].
    pub k_range: Option<(usize, usize)>,
    /// n and K are multiples of this (the drawn values are multiplied by it): 16 for torch's checks.
    pub step: usize,
    /// Only finite codes (no NaN or Inf anywhere).
    pub finite_only: bool,
}

impl Default for GemmShape {
    fn default() -> Self {
        GemmShape { m: (1, 3), n: (1, 3), max_huge_k: 1 << 14, k_range: None, step: 1, finite_only: false }
    }
}

/// Codes of mode `mode` from raw words (made finite when `finite_only`).
fn fill(f: Format, mode: CodeMode, words: &[u32], finite_only: bool) -> Vec<u8> {
    words.iter().map(|&r| if finite_only { finite(f, code(mode, f, r)) } else { code(mode, f, r) }).collect()
}

/// Put one to three non-finite codes of format `f` at places chosen by `e`.
fn inject(f: Format, v: &mut [u8], count: u8, mut e: u64) {
    if v.is_empty() {
        return;
    }
    let list = nonfinite_codes(f);
    for _ in 0..=(count % 3) {
        let pos = (e % v.len() as u64) as usize;
        v[pos] = list[((e >> 24) % list.len() as u64) as usize];
        e = e.rotate_right(29).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Random GEMM operands of a shape within `shape`, K from [`k`], each operand with its own mode, a
/// cancellation pattern across A and B, and (unless finite only) rare NaN/Inf codes.
pub fn gemm(shape: GemmShape) -> impl Strategy<Value = Gemm> {
    let GemmShape { m, n, max_huge_k, k_range, step, finite_only } = shape;
    let step = step.max(1);
    let ks = match k_range {
        Some((lo, hi)) => (lo..=hi).boxed(),
        None => k(max_huge_k).boxed(),
    };
    (
        format(),
        format(),
        m.0..=m.1,
        (n.0..=n.1).prop_map(move |n| n * step),
        ks.prop_map(move |k| k * step),
        (mode(), mode()),
        pattern(),
        (0u8..100, any::<u64>()),
    )
        .prop_flat_map(move |(fa, fb, m, n, k, modes, pat, specials)| {
            (
                Just((fa, fb, m, n, k, modes, pat, specials)),
                proptest::collection::vec(any::<u32>(), m * k),
                proptest::collection::vec(any::<u32>(), n * k),
            )
        })
        .prop_map(move |((fa, fb, m, n, k, (ma, mb), pat, specials), ra, rb)| {
            let mut a = fill(fa, ma, &ra, finite_only);
            let mut b = fill(fb, mb, &rb, finite_only);
            apply_pattern(pat, &mut a, m, &mut b, n, k);
            // Rare NaN/Inf codes (8 cases in 100), after the pattern so they stay where they were put.
            if !finite_only && specials.0 < 8 {
                if specials.1 & 1 == 0 {
                    inject(fa, &mut a, specials.0, specials.1 >> 1);
                } else {
                    inject(fb, &mut b, specials.0, specials.1 >> 1);
                }
            }
            Gemm { fa, fb, m, n, k, a, b }
        })
}

/// Apply a cancellation pattern to every row pair of A ([m, k]) and B ([n, k]): patterns act along k, on
/// A's rows (negations) and B's rows (copies), so they hold for every output.
fn apply_pattern(p: Pattern, a: &mut [u8], m: usize, b: &mut [u8], n: usize, k: usize) {
    match p {
        Pattern::None => {}
        Pattern::PairCancel => {
            for j in (0..k.saturating_sub(1)).step_by(2) {
                for i in 0..m {
                    a[i * k + j + 1] = a[i * k + j] ^ 0x80;
                }
                for i in 0..n {
                    b[i * k + j + 1] = b[i * k + j];
                }
            }
        }
        Pattern::HalfMirror => {
            let h = k / 2;
            for j in 0..h {
                for i in 0..m {
                    a[i * k + h + j] = a[i * k + j] ^ 0x80;
                }
                for i in 0..n {
                    b[i * k + h + j] = b[i * k + j];
                }
            }
        }
    }
}

/// One chain's inputs: formats, a and b of equal length K, and the accumulator c (fp32 bits).
#[derive(Clone, PartialEq, Eq)]
pub struct ChainCase {
    /// Format of a.
    pub fa: Format,
    /// Format of b.
    pub fb: Format,
    /// a's codes.
    pub a: Vec<u8>,
    /// b's codes.
    pub b: Vec<u8>,
    /// The accumulator's fp32 bits.
    pub c: u32,
}

impl fmt::Debug for ChainCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ChainCase {{ {} x {}, K {}, c 0x{:08X} ({:e}), a: [{}], b: [{}] }}",
            self.fa.name(),
            self.fb.name(),
            self.a.len(),
            self.c,
            f32::from_bits(self.c),
            hex(&self.a),
            hex(&self.b)
        )
    }
}

/// Chain inputs: a 1 x 1 GEMM's operands from [`gemm`] plus an accumulator from [`f32_bits`].
pub fn chain_case(max_huge_k: usize) -> impl Strategy<Value = ChainCase> {
    (gemm(GemmShape { m: (1, 1), n: (1, 1), max_huge_k, k_range: None, step: 1, finite_only: false }), f32_bits())
        .prop_map(|(g, c)| ChainCase { fa: g.fa, fb: g.fb, a: g.a, b: g.b, c })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_respect_their_modes() {
        for f in [Format::E4m3, Format::E5m2] {
            for r in 0..4096u32 {
                let r = r.wrapping_mul(0x9E37_79B9);
                for m in [
                    CodeMode::Curated,
                    CodeMode::Finite,
                    CodeMode::Boundary,
                    CodeMode::Subnormal,
                    CodeMode::Large,
                    CodeMode::Sparse,
                ] {
                    assert!(!is_nonfinite(f, code(m, f, r)), "{m:?} {f:?} {r:#x}");
                }
                let c = code(CodeMode::Subnormal, f, r);
                assert!((c & 0x7F) >> mbits(f) <= 1);
            }
            assert!(nonfinite_codes(f).iter().all(|&c| is_nonfinite(f, c)));
        }
    }
}
