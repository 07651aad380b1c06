//! What a split rule computes on a call under a preset (its *form*): the groups of blocks its chains add, and the
//! order of its partials. Equal forms give equal bits on every operand; the split designer and `equivalent_on` read them.

// A split's partial is ((+0 + r_0) + r_1) + ... over its chunks (§3.5), each r_i a chain from +0 over the chunk's
// blocks: nfma consecutive places of the chunk's index list (its real k indices packed at the front, then zero
// padding). A block's result depends on the set of its real indices alone (its terms are summed exactly), and zero
// products take no part in it (§2.4). So a chunk is its blocks' index sets, and:
// - a chunk without a real index adds +0, which changes nothing (a partial is never −0): it is left out;
// - a block of zero products (the trailing ones) changes nothing where the preset's zero block is an identity; else a
//   first one re-aligns c and a second one changes nothing more (§2.4): one is kept;
// - with a late c a chain is the fp32 sum c + d_0 + d_1 + ... of its block results, which do not depend on c: the
//   first chunk's result, added to +0, is its blocks added one by one, and a later chunk of one block adds that
//   block's result. Both are written as groups of one block, so that, e.g., a restart every block equals none.

use super::{order_expression_of, Layout, SplitRule};
use mmaemu_model::{CEntry, Preset};
use std::collections::HashMap;

/// What a rule computes on a call: a digest of its groups of blocks (per split), and the order expression of the
/// partials with the splits that own no real index left out (their partial is +0). None where the rule cannot plan the
/// call (a rule without a restart, on slow accumulation).
pub(super) type Form = Option<(u64, String)>;

/// A call's (K, S, fast): what a rule's form on it depends on.
pub(super) type Shape = (usize, usize, bool);

/// One block: its real k indices as sorted merged ranges (empty: a block of zero products).
type Block = Vec<(usize, usize)>;

/// Forms computed so far under one preset, and simulated results.
pub(super) struct Forms {
    nfma: usize,
    late: bool,
    zero_identity: bool,
    chains: HashMap<(Layout, Shape), (u64, Vec<bool>)>,
    expressions: HashMap<(super::Order, Vec<bool>), String>,
    /// Simulated results, by form, (K, S, fast) of the call and input seed.
    pub(super) results: HashMap<(Form, Shape, u64, String), Option<Vec<u32>>>,
}

impl Forms {
    /// No form yet, under `preset`.
    pub(super) fn new(preset: &Preset) -> Forms {
        Forms {
            nfma: preset.nfma().max(1),
            // Group-scaled instructions step over groups of blocks: their chains are not regrouped.
            late: preset.c_entry() == CEntry::Late && preset.spec().group.is_none(),
            zero_identity: preset.zero_block_is_identity(),
            chains: HashMap::new(),
            expressions: HashMap::new(),
            results: HashMap::new(),
        }
    }

    /// The form of `rule` on a call of K = `k`, S = `s` (module comment).
    pub(super) fn form(&mut self, rule: &SplitRule, k: usize, s: usize, fast: bool) -> Form {
        if !fast && rule.layout.restart.is_none() {
            return None;
        }
        let canon = rule.canonical(k, s, fast);
        let (nfma, late, zero_identity) = (self.nfma, self.late, self.zero_identity);
        let (digest, live) = self.chains.entry((canon.layout, (k, s, fast))).or_insert_with(|| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            let mut live = Vec::with_capacity(s);
            for split in canon.plan_splits(k, s, fast) {
                let groups = groups(&split, nfma, late, zero_identity);
                live.push(!groups.is_empty());
                groups.hash(&mut h);
            }
            (h.finish(), live)
        });
        let expression = self
            .expressions
            .entry((canon.order, live.clone()))
            .or_insert_with(|| order_expression_of(canon.order, live))
            .clone();
        Some((*digest, expression))
    }
}

/// A split's groups of blocks, in the order they are added (module comment).
fn groups(split: &mmaemu_model::layout::Split, nfma: usize, late: bool, zero_identity: bool) -> Vec<Vec<Block>> {
    let mut out: Vec<Vec<Block>> = Vec::new();
    for chunk in split.chunks.iter().filter(|c| c.real_len() > 0) {
        let mut blocks = blocks(&chunk.ranges, nfma);
        if !zero_identity && chunk.len.div_ceil(nfma) > blocks.len() {
            blocks.push(Vec::new());
        }
        if late && (out.is_empty() || blocks.len() == 1) {
            out.extend(blocks.into_iter().map(|b| vec![b]));
        } else {
            out.push(blocks);
        }
    }
    out
}

/// The blocks of a chunk's real indices (`ranges`, in chain order): nfma consecutive places each.
fn blocks(ranges: &[std::ops::Range<usize>], nfma: usize) -> Vec<Block> {
    let mut out: Vec<Vec<std::ops::Range<usize>>> = Vec::new();
    let mut place = 0;
    for r in ranges {
        let mut start = r.start;
        while start < r.end {
            if place % nfma == 0 {
                out.push(Vec::new());
            }
            let end = r.end.min(start + nfma - place % nfma);
            if let Some(b) = out.last_mut() {
                b.push(start..end);
            }
            place += end - start;
            start = end;
        }
    }
    out.into_iter().map(merged).collect()
}

/// Ranges as sorted merged ranges.
fn merged(mut ranges: Vec<std::ops::Range<usize>>) -> Block {
    ranges.sort_by_key(|r| r.start);
    let mut key: Block = Vec::with_capacity(ranges.len());
    for r in ranges.into_iter().filter(|r| !r.is_empty()) {
        match key.last_mut() {
            Some(last) if last.1 == r.start => last.1 = r.end,
            _ => key.push((r.start, r.end)),
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmaemu_model::accumulate::{accumulate, Operands};
    use mmaemu_model::{BlockRounding, Format, PresetSpec, Scheme, SplitK};
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    /// Rules of equal forms give equal bits through the model's plans, for random presets (late and early c, zero
    /// blocks an identity or not), rules, K, S and operands; and the late-c groups make some rules of different
    /// layouts one form (a restart every block, and none).
    #[test]
    fn equal_forms_compute_equal_bits() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (mut equal, mut regrouped) = (0, 0);
        for _ in 0..300 {
            let nfma = 1u32 << rng.random_range(0..=6);
            let (frac_out, rounding) = match rng.random_bool(0.5) {
                true => (23, BlockRounding::NearestEven),
                false => (rng.random_range(8..=23), BlockRounding::Truncate),
            };
            let c_entry = if rng.random_bool(0.5) { CEntry::Late } else { CEntry::Early };
            let frac = rng.random_range(8..=40);
            let min_exp = if rng.random_bool(0.5) { -133 } else { -126 };
            let spec = PresetSpec::custom("x", nfma, frac, frac_out, min_exp, c_entry, None).with_rounding(rounding);
            let preset = Preset::custom(spec).unwrap();
            let (k, s, fast) = (rng.random_range(1..=40) * 8, rng.random_range(2..=4), rng.random_bool(0.25));
            let rules: Vec<SplitRule> = (0..8)
                .map(|_| {
                    let own = if rng.random_bool(0.5) { "interleaved" } else { "contiguous" };
                    let width = 16 << rng.random_range(0..=2);
                    let order = ["serial", "pairwise", "reversed", "tree"][rng.random_range(0..4)];
                    let restart = match rng.random_range(0..4) {
                        0 => "/norestart".to_string(),
                        1 => format!("/restart{}e", 16 << rng.random_range(0..=1)),
                        _ => format!("/restart{}", rng.random_range(1..=8)),
                    };
                    SplitRule::parse(&format!("{own}{width}/{order}{restart}")).unwrap()
                })
                .collect();
            let code = |rng: &mut ChaCha8Rng, f: Format| {
                let x = (1.0 + rng.random_range(0..8) as f32 / 8.0) * (rng.random_range(-9..=8) as f32).exp2();
                f.from_f32_saturating(if rng.random_bool(0.5) { x } else { -x })
            };
            let f = Format::E4m3;
            let (a, b): (Vec<u8>, Vec<u8>) = (0..2 * k).map(|_| (code(&mut rng, f), code(&mut rng, f))).unzip();
            let ops = Operands { fa: f, fb: f, a: &a, b: &b, m: 2, n: 2, k };
            let mut forms = Forms::new(&preset);
            for (i, x) in rules.iter().enumerate() {
                for y in &rules[i + 1..] {
                    if forms.form(x, k, s, fast) != forms.form(y, k, s, fast) || forms.form(x, k, s, fast).is_none() {
                        continue;
                    }
                    let run =
                        |r: &SplitRule| accumulate(&preset, &ops, fast, SplitK::new(s, Scheme::Rule(*r)).unwrap());
                    let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
                    let why = format!("{preset:?}: {x} and {y}, K {k} S {s} fast {fast}");
                    assert_eq!(bits(run(x).unwrap()), bits(run(y).unwrap()), "{why}");
                    equal += 1;
                    regrouped += (x.canonical(k, s, fast).layout != y.canonical(k, s, fast).layout) as usize;
                }
            }
        }
        assert!(equal > 100 && regrouped > 10, "{equal} equal forms, {regrouped} of unlike layouts");
    }
}
