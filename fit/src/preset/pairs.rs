//! Designed calls of two-product blocks for `fit preset`: every block of two FP8 products a GEMM can make (up to a
//! common power of two) run through each alternative, and the blocks that tell alternatives apart laid on the diagonal
//! of chosen-product calls: where a term fraction shows only in one product's lowest bit against a rounding midpoint.

use super::chosen::call;
use super::design::{refine, CALL_MN};
use mmaemu_datasets::inputs::InputSpec;
use mmaemu_model::format::Class;
use mmaemu_model::{Chain, Format, Preset, PresetSpec, SplitKey};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Alternatives a pair search runs at most (each meets every block of each format pair once).
const MAX_ALTERNATIVES: usize = 32;

/// The operand pairs of the search, e4m3 × e5m2 first: its exponent gaps reach furthest, where the highest term
/// fractions part, so the search ends soonest there.
const PAIRS: [(Format, Format); 3] =
    [(Format::E4m3, Format::E5m2), (Format::E5m2, Format::E4m3), (Format::E4m3, Format::E4m3)];

/// The codes of a two-product block: A's two, B's two.
pub type Pair = ([u8; 2], [u8; 2]);

/// One pair of codes per two-product block of `fa` × `fb` up to a common power of two: per pair of products by
/// significands and exponent gap, the larger exponent first, the second product of either sign (a sign common to both
/// changes the result's alone).
pub fn blocks(fa: Format, fb: Format) -> Vec<Pair> {
    let (ta, tb) = (fa.table(), fb.table());
    let mut products: BTreeMap<(u32, i32), (u8, u8)> = BTreeMap::new();
    for ca in 0..128u8 {
        for cb in 0..128u8 {
            let (da, db) = (ta[ca as usize], tb[cb as usize]);
            if da.class == Class::Finite && db.class == Class::Finite && da.sig != 0 && db.sig != 0 {
                let key = (u32::from(da.sig) * u32::from(db.sig), i32::from(da.exp) + i32::from(db.exp));
                products.entry(key).or_insert((ca, cb));
            }
        }
    }
    let mut out: BTreeMap<(u32, u32, i32), Pair> = BTreeMap::new();
    for (&(p1, e1), &(a1, b1)) in &products {
        for (&(p2, e2), &(a2, b2)) in products.iter().filter(|((_, e2), _)| *e2 <= e1) {
            out.entry((p1, p2, e1 - e2)).or_insert(([a1, a2], [b1, b2]));
        }
    }
    // Bit 7 is the sign of both formats.
    out.into_values().flat_map(|(a, b)| [(a, b), ([a[0], a[1] | 0x80], b)]).collect()
}

/// [`blocks`] of each of [`PAIRS`], enumerated once per process (about 700,000 blocks; each design round reads them).
fn every_block() -> &'static [(Format, Format, Vec<Pair>)] {
    static BLOCKS: OnceLock<Vec<(Format, Format, Vec<Pair>)>> = OnceLock::new();
    BLOCKS.get_or_init(|| PAIRS.into_iter().map(|(fa, fb)| (fa, fb, blocks(fa, fb))).collect())
}

/// The chosen-product calls (K the least multiple of 16 holding the widest block, so that the pair lies in one block of
/// every alternative with two products or more, after all-zero blocks that leave +0) whose diagonal outputs end in
/// two-product blocks that split the alternatives' classes, greedily over the blocks of [`blocks`], 16 per call.
/// Empty for fewer than two alternatives or more than [`MAX_ALTERNATIVES`].
pub(super) fn calls(alts: &[PresetSpec]) -> Vec<(SplitKey, InputSpec)> {
    let presets: Vec<Preset> = alts.iter().filter_map(|s| Preset::custom(s.clone()).ok()).collect();
    if presets.len() < 2 || presets.len() > MAX_ALTERNATIVES {
        return Vec::new();
    }
    let widest = presets.iter().map(Preset::nfma).max().unwrap_or(1);
    let k = widest.next_multiple_of(16);
    let (mut class, mut count) = (vec![0usize; presets.len()], 1);
    let mut out = Vec::new();
    for (fa, fb, all) in every_block() {
        let (fa, fb) = (*fa, *fb);
        let chains: Vec<Chain> = presets.iter().map(|p| Chain::new(p, fa, fb)).collect();
        let mut kept: Vec<Pair> = Vec::new();
        // Blocks in batches (results in parallel), kept in order while one splits a class.
        for batch in all.chunks(4096) {
            if count == class.len() {
                break;
            }
            let results: Vec<Vec<u32>> =
                batch.par_iter().map(|(a, b)| chains.iter().map(|c| c.run(a, b, 0.0).to_bits()).collect()).collect();
            for (block, res) in batch.iter().zip(results) {
                let n = refine(&mut class, &res);
                if n > count {
                    count = n;
                    kept.push(*block);
                }
            }
        }
        for group in kept.chunks(CALL_MN) {
            let (mut a, mut b) = (vec![0u8; CALL_MN * k], vec![0u8; CALL_MN * k]);
            for (i, (pa, pb)) in group.iter().enumerate() {
                a[i * k + k - 2..(i + 1) * k].copy_from_slice(pa);
                b[i * k + k - 2..(i + 1) * k].copy_from_slice(pb);
            }
            // Stream 0: the codes are the call's inputs, and a recorder reaches stream n after n calls.
            out.push(call(k, fa, fb, 0, &a, &b));
        }
    }
    out
}
