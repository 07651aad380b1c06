//! Discrimination by experiment for `mmaemu fit preset`: the calls (16 × 16 GEMMs, fp32 out, generator inputs) whose
//! results differ between the survivors on every open parameter, found by running candidate calls through the model
//! for each survivor: every output of a short call (one or a few blocks, where a rare input — large products that
//! cancel exactly, leaving small ones whose low bits the term fraction keeps or drops — shows on some of its 256
//! outputs) or of one of chosen products (`chosen.rs`), a corner of a long one.

use super::chosen;
use super::decide::floor_of;
use super::pairs;
use super::sample::Sample;
use super::search::{Chains, Survivor};
use super::{space, PresetFit};
use crate::Experiment;
use mmaemu_datasets::inputs::{generate_rows, DataClass, InputSpec, Operand, GENERATOR_V1};
use mmaemu_model::{Format, OutDtype, PresetSpec, SplitKey};
use rayon::prelude::*;

/// M and N of a designed call.
pub const CALL_MN: usize = 16;
/// The outputs of a long candidate call run for each survivor (rows × columns of the call's corner).
const PROBE: (usize, usize) = (2, 4);
/// A candidate call this short (K) is run on every output.
const WHOLE_K: usize = 64;
/// Survivors (alternatives) a design tells apart at most.
const MAX_ALTERNATIVES: usize = 256;
/// Seed of the designed calls' inputs.
pub(super) const SEED: u64 = 0x4649_5450;

/// The calls that tell the survivors of `fit` apart on its open parameters, at most `max_calls`: fast calls for the
/// instruction's parameters and the floor, then slow calls for the slow chunk. Empty when nothing is open.
pub fn experiments(fit: &PresetFit, max_calls: usize) -> Vec<Experiment> {
    let open: Vec<&str> = fit.params.iter().filter(|p| p.is_open()).map(|p| p.name).collect();
    let mut out = Vec::new();
    // Block-scaled survivors are told apart by MXFP8 calls (their equivalences are not an unscaled GEMM's).
    if open.iter().any(|p| *p != "slow_chunk") {
        out.extend(match super::search::block_scaled(&fit.survivors) {
            true => super::scaled_design::mx_calls(&fit.survivors, &open, max_calls),
            false => fast_calls(&fit.survivors, &open, max_calls),
        });
    }
    if open.contains(&"slow_chunk") && out.len() < max_calls {
        // The chunk is cut against the first survivor's instruction; its calls come after the instruction's.
        if let Some(call) = fit.survivors.first().and_then(slow_call) {
            out.push(call);
        }
    }
    out.truncate(max_calls);
    out
}

/// The alternatives the fast calls tell apart: each survivor at its written floor, and at its open floors, one per
/// arithmetic ([`space::canonical`]: survivors that give the same bits on every GEMM need no call between them).
fn alternatives(survivors: &[Survivor], floor_open: bool) -> Vec<PresetSpec> {
    let mut out: Vec<PresetSpec> = Vec::new();
    for s in survivors {
        let mut floors: Vec<i32> = floor_of(&s.min_exp, None).into_iter().collect();
        if floor_open {
            floors.extend(s.min_exp.up_to.filter(|&u| u > space::harmless_floor(&s.spec)));
            floors.extend(s.min_exp.also.iter().copied());
        }
        for f in floors {
            let spec = PresetSpec { min_exp: f, ..s.spec.clone() };
            let arithmetic = space::canonical(&spec);
            if !out.iter().any(|o| space::canonical(o).same_arithmetic(&arithmetic)) {
                out.push(spec);
            }
        }
    }
    out.truncate(MAX_ALTERNATIVES);
    out
}

/// The candidate calls: K across every block size, each operand pair a recorder can call, data classes from wide to
/// tiny, a few seeds. The split class at small scales puts exact powers of two (±2^(emax − 1)) among tiny values: in
/// e4m3 × e5m2 their products cancel exactly in some blocks and leave products 30 binades below the block's exponent,
/// which is what tells the term fractions above 24 apart.
fn fast_candidates() -> Vec<(SplitKey, InputSpec)> {
    let pairs = [(Format::E4m3, Format::E4m3), (Format::E4m3, Format::E5m2), (Format::E5m2, Format::E4m3)];
    let mut classes = vec![
        DataClass::Gaussian { scale: 1.0 },
        DataClass::Split { scale: 1.0 },
        DataClass::Bits { finite: true },
        DataClass::Subnormal { scale: 1.0 },
        DataClass::Subnormal { scale: 1.0e-9 },
        DataClass::AllCodes { finite: true },
        DataClass::Gaussian { scale: 64.0 },
        DataClass::Gaussian { scale: 256.0 },
        DataClass::Gaussian { scale: 512.0 },
        DataClass::Subnormal { scale: 256.0 },
    ];
    classes.extend((8..=11).map(|e| DataClass::Split { scale: (-e as f64).exp2() }));
    let mut out = Vec::new();
    for stream in 0..2u64 {
        // Multiples of 16 (torch refuses other K for FP8): one block of every size from 16 on, and odd numbers of
        // 16-element halves of wider blocks.
        for k in [16usize, 32, 48, 144, 272, 528, 1040] {
            for (fa, fb) in pairs {
                for data in &classes {
                    out.push(fast_call(k, fa, fb, stream, data.clone()));
                }
            }
        }
    }
    out
}

/// The unsplit fast fp32 16 x 16 x k call of the designs, its operands made by `data` (stream `stream` of [`SEED`]).
pub(super) fn fast_call(k: usize, fa: Format, fb: Format, stream: u64, data: DataClass) -> (SplitKey, InputSpec) {
    let key = SplitKey { m: CALL_MN, n: CALL_MN, k, fa, fb, out: OutDtype::Float32, fast: true };
    (key, InputSpec { generator: GENERATOR_V1.into(), seed: SEED, stream, data })
}

/// The probe chains of a call (every output of a short call, of a chosen one or where `whole`, the corner of a long
/// one), with no recorded result; an MXFP8 call's with `scales` (each output's e8m0 codes: constant over the call),
/// slow ones (use_fast_accum=False) cut into slow chunks otherwise.
pub(super) fn probe(
    key: &SplitKey,
    inputs: &InputSpec,
    whole: bool,
    scales: Option<&(Vec<u8>, Vec<u8>)>,
) -> Option<Vec<Sample>> {
    let chosen = matches!(inputs.data, DataClass::Codes { .. });
    let (rows, cols) = if key.k <= WHOLE_K || chosen || whole { (key.m, key.n) } else { PROBE };
    let a = generate_rows(inputs, Operand::A, key.fa.name(), 0..rows, key.k).ok()?;
    let b = generate_rows(inputs, Operand::B, key.fb.name(), 0..cols, key.k).ok()?;
    if key.fa.any_nonfinite(&a) || key.fb.any_nonfinite(&b) {
        return None;
    }
    let mut out = Vec::new();
    // Outputs of equal rows of A and B give equal results under every alternative: each pair is run once.
    let mut seen = std::collections::HashSet::new();
    for i in 0..rows {
        for j in 0..cols {
            let (ra, rb) = (&a[i * key.k..(i + 1) * key.k], &b[j * key.k..(j + 1) * key.k]);
            if !seen.insert((ra, rb)) {
                continue;
            }
            out.push(Sample {
                fa: key.fa,
                fb: key.fb,
                a: ra.to_vec(),
                b: rb.to_vec(),
                c: 0.0,
                want: 0,
                slow: !key.fast && scales.is_none(),
                accumulator: true,
                row: 0,
                scales: scales.cloned(),
            });
        }
    }
    Some(out)
}

/// Greedy: the call that splits the most pairs of alternatives still together, until all are apart, no call
/// splits another pair, or `max_calls`.
fn fast_calls(survivors: &[Survivor], open: &[&str], max_calls: usize) -> Vec<Experiment> {
    let alts = alternatives(survivors, open.contains(&"min_exp"));
    let chains: Vec<Chains> = alts.iter().filter_map(Chains::new).collect();
    if chains.len() < 2 {
        return Vec::new();
    }
    let mut candidates = fast_candidates();
    let mut sizes: Vec<usize> = alts.iter().map(|a| a.nfma as usize).collect();
    sizes.sort_unstable();
    sizes.dedup();
    candidates.extend(
        sizes
            .into_iter()
            .flat_map(|n| [chosen::stacks(n), chosen::staircases(n), chosen::ties(n), chosen::tops(n)].concat()),
    );
    candidates.extend(pairs::calls(&alts));
    // Each candidate's results per alternative.
    let outcomes: Vec<(SplitKey, InputSpec, Vec<Vec<u32>>)> = candidates
        .into_par_iter()
        .filter_map(|(key, inputs)| {
            let chains_of = probe(&key, &inputs, false, None)?;
            let res = chains.iter().map(|c| chains_of.iter().map(|s| s.eval(c.of(s), None)).collect()).collect();
            Some((key, inputs, res))
        })
        .collect();
    let named = open.iter().filter(|p| **p != "slow_chunk").copied().collect::<Vec<_>>().join(", ");
    greedy(&outcomes.iter().map(|o| &o.2).collect::<Vec<_>>(), chains.len(), max_calls)
        .into_iter()
        .map(|(best, classes)| {
            let (key, inputs, _) = &outcomes[best];
            Experiment {
                problem: *key,
                workspace: None,
                inputs: inputs.clone(),
                mx_scales: None,
                decides: format!(
                    "{named} (an unsplit fast fp32 accumulator: {classes} of {} survivors apart after it)",
                    chains.len()
                ),
            }
        })
        .collect()
}

/// Greedy over candidate calls whose results per alternative are `results` (one list per call, one entry per
/// alternative, `alternatives` of them): the call that splits the most pairs of alternatives still together, until
/// all are apart, no call splits another pair, or `max_calls`. Each chosen call's index and the classes after it.
pub(super) fn greedy<T: PartialEq>(results: &[&Vec<T>], alternatives: usize, max_calls: usize) -> Vec<(usize, usize)> {
    let mut class: Vec<usize> = vec![0; alternatives];
    let mut calls = Vec::new();
    while calls.len() < max_calls {
        let split = |res: &Vec<T>| {
            let mut n = 0usize;
            for i in 0..class.len() {
                for j in i + 1..class.len() {
                    n += (class[i] == class[j] && res[i] != res[j]) as usize;
                }
            }
            n
        };
        let Some((best, gain)) = results.iter().map(|r| split(r)).enumerate().max_by_key(|&(i, g)| (g, usize::MAX - i))
        else {
            break;
        };
        if gain == 0 {
            break;
        }
        let classes = refine(&mut class, results[best]);
        calls.push((best, classes));
        if classes == class.len() {
            break;
        }
    }
    calls
}

/// Splits the classes of the alternatives (`class`, numbered from 0 in order of first member) by their results `res`
/// (one per alternative); the number of classes after.
pub(super) fn refine<T: PartialEq>(class: &mut [usize], res: &[T]) -> usize {
    let mut seen: Vec<(usize, &T)> = Vec::new();
    for (c, r) in class.iter_mut().zip(res) {
        let sig = (*c, r);
        *c = seen.iter().position(|s| *s == sig).unwrap_or_else(|| {
            seen.push(sig);
            seen.len() - 1
        });
    }
    seen.len()
}

/// One slow call whose K every consistent chunk length below it cuts differently: lengths from the set, or for an
/// unbounded set every length up to twice its least one (capped at [`space::SLOW_CHUNK_REACH`]).
fn slow_call(s: &Survivor) -> Option<Experiment> {
    let least = s.slow.least()?;
    let top = match s.slow.from {
        Some(f) => (2 * f.max(128)).min(space::SLOW_CHUNK_REACH),
        None => *s.slow.values.last()?,
    };
    // A multiple of 16 (torch refuses other K for FP8) two blocks past the longest length: a cut followed by one block
    // computes, with a late c, as no cut.
    let k = ((top + s.spec.nfma + 40) as usize).next_multiple_of(16);
    let mut lengths: Vec<u32> = s.slow.values.iter().copied().filter(|&v| v <= top).collect();
    if let Some(f) = s.slow.from {
        lengths.extend(f..=top);
    }
    let chains = Chains::new(&PresetSpec { min_exp: floor_of(&s.min_exp, None)?, ..s.spec.clone() })?;
    let mut best: Option<(usize, Experiment)> = None;
    // The corner of each candidate first; where no corner tells two lengths apart (sums whose fp32 additions are
    // exact in either order are common), every output of the call, for a set of a few lengths.
    for whole in [false, true] {
        if whole && (best.as_ref().is_some_and(|(n, _)| *n > 1) || lengths.len() > WHOLE_SLOW_LENGTHS) {
            break;
        }
        slow_candidates(s, &chains, &lengths, k, least, whole, &mut best);
    }
    // A call on which every length gives the same results decides nothing: none is designed.
    best.filter(|(n, _)| *n > 1).map(|(_, e)| e)
}

/// The [`chosen::boundaries`] calls over `lengths`: windows up to the longest, each as long as one call places (from
/// w to 2w less a margin m of a few blocks), from 2m on so that each spans half its start or more (shorter lengths cut
/// these calls' K more than once, which shows too), at two offsets.
fn boundary_calls(nfma: usize, lengths: &[u32]) -> Vec<(SplitKey, InputSpec)> {
    let d = chosen::boundary_phase(nfma);
    let (Some(&least), Some(&most)) = (lengths.iter().min(), lengths.iter().max()) else { return Vec::new() };
    let mut out = Vec::new();
    for offset in [0, d / 2].into_iter().take(if d > 1 { 2 } else { 1 }) {
        let margin = chosen::boundary_margin(nfma, offset);
        let mut lo = (least as usize).max(2 * margin);
        while lo <= most as usize {
            let hi = 2 * lo - margin;
            out.extend(chosen::boundaries(nfma, lo, hi.min(most as usize), offset));
            lo = hi + 1;
        }
    }
    out
}

/// Most chunk lengths a slow design runs on every output of its candidate calls.
const WHOLE_SLOW_LENGTHS: usize = 64;

/// The slow candidate calls of K = `k`, each run over `lengths`, the one with the most distinct results kept in `best`.
fn slow_candidates(
    s: &Survivor,
    chains: &Chains,
    lengths: &[u32],
    k: usize,
    least: u32,
    whole: bool,
    best: &mut Option<(usize, Experiment)>,
) {
    let key =
        SplitKey { m: CALL_MN, n: CALL_MN, k, fa: Format::E4m3, fb: Format::E4m3, out: OutDtype::Float32, fast: false };
    let binades = |mirror| DataClass::Binades { scale: 1.0, width: 16, silent: 0, mirror };
    let mut calls: Vec<(SplitKey, InputSpec)> = (0..2u64)
        .flat_map(|stream| {
            [DataClass::Split { scale: 1.0 }, DataClass::Gaussian { scale: 1.0 }, binades(false), binades(true)]
                .map(|data| (key, InputSpec { generator: GENERATOR_V1.into(), seed: SEED, stream, data }))
        })
        .collect();
    // Chosen calls, run on every output in either pass (so in the first only): cuts for a few lengths; boundaries,
    // which place the first cut to a quarter of a block, for any number of them.
    if !whole {
        let nfma = s.spec.nfma as usize;
        if lengths.len() <= WHOLE_SLOW_LENGTHS {
            calls.extend(chosen::cuts(nfma, lengths, k));
        }
        calls.extend(boundary_calls(nfma, lengths));
    }
    for (key, inputs) in calls {
        let Some(ps) = probe(&key, &inputs, whole, None) else { continue };
        let mut res: Vec<Vec<u32>> =
            lengths.par_iter().map(|&l| ps.iter().map(|p| p.eval(chains.of(p), Some(l as usize))).collect()).collect();
        res.sort_unstable();
        res.dedup();
        if best.as_ref().is_none_or(|(n, _)| res.len() > *n) {
            let decides = format!(
                "slow_chunk among {} (from {least}; an unsplit slow fp32 accumulator of K = {}: {} distinct \
                     results over {} lengths on the outputs run)",
                s.slow.describe().join(", "),
                key.k,
                res.len(),
                lengths.len()
            );
            *best = Some((res.len(), Experiment { problem: key, workspace: None, inputs, mx_scales: None, decides }));
        }
    }
}
