//! The x86 steps against the portable steps over the same codes, bit for bit, with non-finite codes planted.

use super::*;
use crate::kernel::product_blocks;
use crate::tables::Lut;
use mmaemu_model::{Format, Preset};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

/// The format pairs of the steps' tests: all four (e5m2 by e5m2 has the largest product exponents).
const PAIRS: [(Format, Format); 4] = [
    (Format::E4m3, Format::E4m3),
    (Format::E5m2, Format::E4m3),
    (Format::E4m3, Format::E5m2),
    (Format::E5m2, Format::E5m2),
];

/// Whether this CPU runs the AVX-512 steps (said on stderr where it does not).
fn avx512() -> bool {
    let there = crate::SimdLevel::by_name("avx512").is_some();
    if !there {
        eprintln!("this CPU has no AVX-512: the step is not run");
    }
    there
}

/// One round's operands of the steps over codes: A's `len` codes random and finite (a tenth zeros, magnitudes up to
/// 0x3F every other round), and `rows` rows of B holding every finite code of its format 4 times each, shuffled,
/// padded with random finite codes; one round in four, B of only zeros and subnormals instead.
fn code_operands(rng: &mut ChaCha8Rng, fa: Format, fb: Format, round: usize, rows: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let len = 1024;
    let subnormal = round % 4 == 2;
    let top = if round.is_multiple_of(2) { 0x7F } else { 0x3F };
    let below_normal = if fb == Format::E4m3 { 8 } else { 4 };
    let finite: Vec<u8> = (0..=255u8).filter(|&c| !fb.is_nonfinite(c)).collect();
    let a: Vec<u8> = (0..len)
        .map(|_| match rng.random_range(0..10) {
            0 => 0,
            _ => loop {
                let c = rng.random_range(0..=top) | (rng.random::<u8>() & 0x80);
                if !fa.is_nonfinite(c) {
                    break c;
                }
            },
        })
        .collect();
    let b: Vec<Vec<u8>> = (0..rows)
        .map(|_| {
            if subnormal {
                return (0..len).map(|_| rng.random_range(0..below_normal) | (rng.random::<u8>() & 0x80)).collect();
            }
            let mut r: Vec<u8> = finite.iter().cycle().take(4 * finite.len()).copied().collect();
            r.extend((r.len()..len).map(|_| finite[rng.random_range(0..finite.len())]));
            for i in (1..len).rev() {
                r.swap(i, rng.random_range(0..=i));
            }
            r
        })
        .collect();
    (a, b)
}

/// A piece of B decoded in place: the rows of B, the piece's `(k, k0, len)` and its codes in position-major order.
type PieceInPlace = (Vec<u8>, (usize, usize, usize), Vec<u8>);

/// The pieces of the tests of the decodings in place, one per round: for format `f`, [`PANEL`] rows of B of `k`
/// codes each and the piece's position-major codes (positions `k0 .. k0 + len` of every row), with every code
/// somewhere in the first round's piece, random codes after it and finite ones only in the last; pieces of 16, 32
/// and 48 positions at an offset into rows of odd length.
fn pieces_in_place(rng: &mut ChaCha8Rng, f: Format) -> Vec<PieceInPlace> {
    let mut v = Vec::new();
    for (round, len) in [16, 32, 48, 32].into_iter().enumerate() {
        let (k, k0) = (len + 2 * round + 7, 2 * round + 3);
        let b: Vec<u8> = (0..PANEL * k)
            .map(|i| match (round, rng.random::<u8>()) {
                (0, _) => (i * 37 % 256) as u8,
                (3, c) if f.is_nonfinite(c) => c & 0xBF,
                (_, c) => c,
            })
            .collect();
        let pc: Vec<u8> = (0..len * PANEL).map(|i| b[(i % PANEL) * k + k0 + i / PANEL]).collect();
        if round == 0 {
            assert!((0..=255u8).all(|c| pc.contains(&c)), "the first piece holds every code");
        }
        v.push((b, (k, k0, len), pc));
    }
    v
}

mod codes;
mod codes_avx2;
mod decode;
mod panel;
mod wide_panel;
mod wide_panel_avx2;

/// Load `csr` into this thread's MXCSR.
fn set_mxcsr(csr: u32) {
    // SAFETY: LDMXCSR of a value read from MXCSR with only its rounding-control bits changed.
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags)) };
}
