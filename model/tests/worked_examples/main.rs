//! The worked examples of docs/reference.md as unit tests: `chain` for §1 and §2 (formats, block steps, chains, `dot`),
//! `gemm` for §3 and §4 (plans, split-K, non-finite inputs, the epilogue).

// Expected bits are literal constants taken from the spec text (hex floats and byte values written there, converted to
// fp32 bits by hand); where a test states a value the spec gives only as a rule, the comment shows the hand derivation.
// Inputs are built with `Format::from_f32_saturating`, and every input code that is meant to be an exact value is
// checked against the independent decoder of `mmaemu_testkit::oracle`. The chain-level examples are also checked
// against the oracle, so they validate it too.

mod chain;
mod gemm;

use mmaemu_model::{dot, Chain, Epilogue, Format, OutDtype, Preset};
use mmaemu_testkit::oracle::{self, Fp8, Params};

pub const E4: Format = Format::E4m3;
pub const E5: Format = Format::E5m2;

pub fn ofmt(f: Format) -> Fp8 {
    match f {
        Format::E4m3 => Fp8::E4m3,
        Format::E5m2 => Fp8::E5m2,
    }
}

/// The code of the exact value x in format f (checked with the oracle's own decoder).
pub fn code(f: Format, x: f64) -> u8 {
    let c = f.from_f32_saturating(x as f32);
    assert_eq!(oracle::fp8_f64(ofmt(f), c), x, "{x} is not an exact {} value (code 0x{c:02X})", f.name());
    c
}

pub fn p2(e: i32) -> f64 {
    2f64.powi(e)
}

pub fn params(preset: &Preset) -> Params {
    match preset.name() {
        "ada" => Params::ADA,
        "hopper" => Params::HOPPER,
        "b200_mma_sync" => Params::B200,
        n => panic!("no oracle parameters for {n}"),
    }
}

/// Run a chain given as (a value, b value) pairs with c, through `Chain::run`, `dot` and the oracle, and
/// check all three against the spec's bits.
pub fn chain_case(preset: &Preset, fa: Format, fb: Format, pairs: &[(f64, f64)], c: u32, want: u32, what: &str) {
    let a: Vec<u8> = pairs.iter().map(|p| code(fa, p.0)).collect();
    let b: Vec<u8> = pairs.iter().map(|p| code(fb, p.1)).collect();
    chain_codes(preset, fa, fb, &a, &b, c, want, what);
}

#[allow(clippy::too_many_arguments)]
pub fn chain_codes(preset: &Preset, fa: Format, fb: Format, a: &[u8], b: &[u8], c: u32, want: u32, what: &str) {
    let got = Chain::new(preset, fa, fb).run(a, b, f32::from_bits(c)).to_bits();
    assert_eq!(got, want, "{what} [{}]: Chain::run gave 0x{got:08X}, spec 0x{want:08X}", preset.name());
    let got = dot(preset, fa, fb, a, b, Some(f32::from_bits(c))).unwrap().to_bits();
    assert_eq!(got, want, "{what} [{}]: dot gave 0x{got:08X}, spec 0x{want:08X}", preset.name());
    let o = oracle::chain(&params(preset), ofmt(fa), ofmt(fb), a, b, c);
    assert_eq!(o, want, "{what} [{}]: the ORACLE gave 0x{o:08X}, spec 0x{want:08X}", preset.name());
}

/// Scales 1, no scale_result, out dtype `out`.
pub fn epi(out: OutDtype) -> Epilogue {
    Epilogue { scale_a: 1.0, scale_b: 1.0, scale_result: None, out }
}
