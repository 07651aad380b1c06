//! `fuzz/oracle/<preset>`: the model against the independent exact block-step oracle (`mmaemu_testkit::oracle`)
//! on chains from any accumulator, and on 1 x 1 GEMM accumulators (fast: one chain over K padded to 16;
//! slow: the fp32 sum of the 128-element chunk chains), non-finite codes included.

use crate::{check, Family};
use mmaemu_model::{accumulate, Chain, Format, Preset, SplitK};
use mmaemu_testkit::generators::chain_case;
use mmaemu_testkit::oracle::{self, Fp8, Params};
use proptest::prop_assert_eq;
use proptest::test_runner::TestCaseError;

fn fp8(f: Format) -> Fp8 {
    match f {
        Format::E4m3 => Fp8::E4m3,
        Format::E5m2 => Fp8::E5m2,
    }
}

/// NaN bits made canonical, so NaN results compare by class.
fn canon(bits: u32) -> u32 {
    if f32::from_bits(bits).is_nan() {
        0x7FFF_FFFF
    } else {
        bits
    }
}

fn oracle_params(preset: &Preset) -> Params {
    match preset.name() {
        "ada" => Params::ADA,
        "hopper" => Params::HOPPER,
        _ => Params::B200,
    }
}

/// The oracle's chain from +0 over `a`, `b` zero-padded to a multiple of `w`.
fn padded_chain(p: &Params, fa: Format, fb: Format, a: &[u8], b: &[u8], w: usize) -> u32 {
    let len = a.len().div_ceil(w) * w;
    let (mut pa, mut pb) = (a.to_vec(), b.to_vec());
    pa.resize(len, 0);
    pb.resize(len, 0);
    oracle::chain(p, fp8(fa), fp8(fb), &pa, &pb, 0)
}

pub fn families() -> Vec<Family> {
    [Preset::ada(), Preset::hopper(), Preset::b200_mma_sync()]
        .into_iter()
        .map(|preset| {
            Family::new(format!("fuzz/oracle/{}", preset.name()), 10, move |name, seed, cases| {
                let params = oracle_params(&preset);
                check(name, seed, cases, chain_case(1 << 16), |case| {
                    let want = oracle::chain(&params, fp8(case.fa), fp8(case.fb), &case.a, &case.b, case.c);
                    let got = Chain::new(&preset, case.fa, case.fb).run(&case.a, &case.b, f32::from_bits(case.c));
                    prop_assert_eq!(got.to_bits(), want, "Chain::run against the oracle");

                    let k = case.a.len();
                    let ops =
                        mmaemu_model::Operands { fa: case.fa, fb: case.fb, a: &case.a, b: &case.b, m: 1, n: 1, k };
                    let fast = accumulate(&preset, &ops, true, SplitK::NONE)
                        .map_err(|e| TestCaseError::fail(format!("accumulate (fast) raised {e}")))?;
                    let want = padded_chain(&params, case.fa, case.fb, &case.a, &case.b, 16);
                    prop_assert_eq!(canon(fast[0].to_bits()), want, "1 x 1 fast accumulator against the oracle");

                    if let Some(chunk) = preset.slow_chunk() {
                        let slow = accumulate(&preset, &ops, false, SplitK::NONE)
                            .map_err(|e| TestCaseError::fail(format!("accumulate (slow) raised {e}")))?;
                        let mut sum = 0.0f32;
                        for (ca, cb) in case.a.chunks(chunk).zip(case.b.chunks(chunk)) {
                            sum += f32::from_bits(padded_chain(&params, case.fa, case.fb, ca, cb, chunk));
                        }
                        prop_assert_eq!(
                            canon(slow[0].to_bits()),
                            canon(sum.to_bits()),
                            "1 x 1 slow accumulator against the fp32 sum of the oracle's {}-element chunk chains",
                            chunk
                        );
                    }
                    Ok(())
                })
            })
        })
        .collect()
}
