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

mod codes;
mod codes_avx2;
mod panel;
