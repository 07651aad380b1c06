//! Discrimination by experiment for block-scaled survivors: the MXFP8 calls (16 × 16, fp32 out, constant e8m0 block
//! scales, generator inputs) whose results differ between them, found by running candidate calls through the model's
//! block-scaled chain (docs/reference.md §2.8) for each survivor at each of its floors.

use super::design::{fast_call, greedy};
use super::sample::Sample;
use super::search::{Chains, Survivor, MX_BLOCK};
use crate::Experiment;
use mmaemu_datasets::inputs::{DataClass, InputSpec};
use mmaemu_model::{Format, PresetSpec, SplitKey};
use rayon::prelude::*;

/// Alternatives a design tells apart at most.
const MAX_ALTERNATIVES: usize = 256;

/// The alternatives: each block-scaled survivor at the top of its run of floors and at each single one.
fn alternatives(survivors: &[Survivor]) -> Vec<PresetSpec> {
    let mut out = Vec::new();
    for s in survivors.iter().filter(|s| s.spec.scale_block.is_some()) {
        for f in s.min_exp.up_to.into_iter().chain(s.min_exp.also.iter().copied()) {
            out.push(PresetSpec { min_exp: f, ..s.spec.clone() });
        }
    }
    out.truncate(MAX_ALTERNATIVES);
    out
}

/// The candidate calls: the chosen spreads of widely apart products, and one to three scale blocks of each operand pair
/// and data class, under constant scales whose product 2^(a + b) puts unit products from 2^-170 to 2^-110 (the floors
/// of §2.8 lie there) or at 2^0.
fn candidates() -> Vec<(SplitKey, InputSpec, (i32, i32))> {
    let pairs = [(Format::E4m3, Format::E4m3), (Format::E4m3, Format::E5m2), (Format::E5m2, Format::E4m3)];
    let mut classes = vec![
        DataClass::Gaussian { scale: 1.0 },
        DataClass::Split { scale: 1.0 },
        DataClass::Bits { finite: true },
        DataClass::Subnormal { scale: 1.0 },
        DataClass::AllCodes { finite: true },
        DataClass::Gaussian { scale: 64.0 },
    ];
    classes.extend((8..=11).map(|e| DataClass::Split { scale: (-e as f64).exp2() }));
    let sums = std::iter::once(0).chain((-170..=-110).step_by(3));
    let scales: Vec<(i32, i32)> = sums.map(|t: i32| (t.div_euclid(2), t - t.div_euclid(2))).collect();
    let mut out = Vec::new();
    for (mut key, inputs) in super::chosen::spreads() {
        key.fast = false;
        out.extend(scales.iter().map(|&x| (key, inputs.clone(), x)));
    }
    for k in [32usize, 64, 96] {
        for (fa, fb) in pairs {
            for data in &classes {
                for &x in &scales {
                    let (mut key, inputs) = fast_call(k, fa, fb, 0, data.clone());
                    key.fast = false;
                    out.push((key, inputs, x));
                }
            }
        }
    }
    out
}

/// The chains of every output of a candidate MXFP8 call at constant scales 2^x.0 (mat1) and 2^x.1 (mat2).
fn probe(key: &SplitKey, inputs: &InputSpec, x: (i32, i32)) -> Option<Vec<Sample>> {
    let kb = key.k.div_ceil(MX_BLOCK as usize);
    let code = |e: i32| u8::try_from(e + 127).ok().filter(|&c| c != 0xFF);
    super::design::probe(key, inputs, true, Some(&(vec![code(x.0)?; kb], vec![code(x.1)?; kb])))
}

/// The MXFP8 calls that tell the block-scaled survivors apart ([`greedy`], as the unscaled design), at most
/// `max_calls`.
pub(super) fn mx_calls(survivors: &[Survivor], open: &[&str], max_calls: usize) -> Vec<Experiment> {
    let alts = alternatives(survivors);
    let chains: Vec<Chains> = alts.iter().filter_map(Chains::new).collect();
    if chains.len() < 2 {
        return Vec::new();
    }
    let outcomes: Vec<_> = candidates()
        .into_par_iter()
        .filter_map(|(key, inputs, x)| {
            let ps = probe(&key, &inputs, x)?;
            let res: Vec<Vec<u32>> =
                chains.iter().map(|c| ps.iter().map(|s| s.eval(c.of(s), None)).collect()).collect();
            Some((key, inputs, x, res))
        })
        .collect();
    let named = open.iter().filter(|p| **p != "slow_chunk").copied().collect::<Vec<_>>().join(", ");
    greedy(&outcomes.iter().map(|o| &o.3).collect::<Vec<_>>(), chains.len(), max_calls)
        .into_iter()
        .map(|(best, classes)| {
            let (key, inputs, x, _) = &outcomes[best];
            Experiment {
                problem: *key,
                workspace: Some(0),
                inputs: inputs.clone(),
                mx_scales: Some(*x),
                decides: format!(
                    "{named} (an MXFP8 call, block scales 2^{} x 2^{}: {classes} of {} block-scaled survivors apart \
                     after it)",
                    x.0,
                    x.1,
                    chains.len()
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// The calls' MXFP8 K are multiples of 32 and their scale pairs are e8m0 codes.
    #[test]
    fn candidates_are_recordable() {
        for (key, _, (a, b)) in super::candidates() {
            assert_eq!(key.k % 32, 0);
            assert!(!key.fast && (key.m, key.n) == (crate::preset::CALL_MN, crate::preset::CALL_MN));
            assert!((-127..=127).contains(&a) && (-127..=127).contains(&b), "{a} {b}");
        }
    }
}
