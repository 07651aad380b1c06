//! Replaying a candidate rule over a row's codes: the rule's [`Plan`] (the model's, so plans, fit and trace share one
//! split layout) executed chunk by chunk, the chains over the same k indices computed once for every rule sharing them.

use super::{Layout, Order, SplitRule};
use mmaemu_kernels::CpuEngine;
use mmaemu_model::{Chain, ChainEngine, Format, Operands, Plan, Preset, Scheme, SplitK};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

/// The codes a fit replays: a GEMM's operands (non-finite codes already zeroed) and the outputs compared.
pub(super) struct Codes {
    pub preset: Preset,
    pub fa: Format,
    pub fb: Format,
    pub k: usize,
    /// [m, k].
    pub a: Vec<u8>,
    /// [n, k].
    pub b: Vec<u8>,
    /// The (i, j) outputs compared, in the order of the expected bits.
    pub pairs: Vec<(usize, usize)>,
}

/// The plan of a candidate layout for K, S (> 1) and fast or slow accumulation. The rule is planned as given
/// (`Scheme::Rule`), whatever the preset's documented schemes: the fit tries every layout on every GPU. The order
/// does not change the plan, only the combination of its partials.
pub(super) fn plan(preset: &Preset, layout: Layout, k: usize, s: usize, fast: bool) -> mmaemu_model::Result<Plan> {
    let rule = SplitRule { layout, order: Order::Serial };
    let rule = if fast { rule.fast() } else { rule };
    Plan::new(preset, k, fast, SplitK::new(s, Scheme::Rule(rule))?)
}

/// The chain results of one set of k indices for every compared output.
type ChainResults = Arc<Vec<f32>>;

/// Per-row cache of chain results, keyed by the chain's k indices as merged ranges.
pub(super) struct ChainCache<'p> {
    p: &'p Codes,
    /// The outputs computed: all of `p.pairs`, or a few of them to rule candidates out cheaply.
    pairs: Vec<(usize, usize)>,
    chain: Chain,
    /// The CPU backend: bit-identical to the model, and much faster on a custom preset's long chains (bring-up seed 78's
    /// refit: over 10 minutes on the model's chain, 94 s through it).
    engine: CpuEngine,
    map: HashMap<(Vec<(usize, usize)>, usize), ChainResults>,
}

impl<'p> ChainCache<'p> {
    pub fn new(p: &'p Codes) -> Self {
        Self::with_pairs(p, p.pairs.clone())
    }

    /// A cache computing only the outputs `pairs` (of `p.pairs`).
    pub fn with_pairs(p: &'p Codes, pairs: Vec<(usize, usize)>) -> Self {
        ChainCache { p, pairs, chain: Chain::new(&p.preset, p.fa, p.fb), engine: CpuEngine::new(), map: HashMap::new() }
    }

    /// Row `row`'s codes at `ranges`, zero-padded to `len` (at least their count).
    fn gather(x: &[u8], row: usize, k: usize, ranges: &[Range<usize>], len: usize, buf: &mut Vec<u8>) {
        buf.clear();
        for r in ranges {
            buf.extend_from_slice(&x[row * k + r.start..row * k + r.end]);
        }
        buf.resize(len, 0);
    }

    /// The results of the chain over `ranges` (its real k indices, in order) padded with zero pairs to `len`: the
    /// padding is part of the chain (an all-zero block re-aligns an early c to frac bits, docs/reference.md §2.4).
    /// The padding within the last block changes nothing: chains over the same indices whose padding ends in the
    /// same block share one entry.
    fn results(&mut self, ranges: &[Range<usize>], len: usize) -> ChainResults {
        let mut key: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match key.last_mut() {
                Some(last) if last.1 == r.start => last.1 = r.end,
                _ => key.push((r.start, r.end)),
            }
        }
        let real: usize = ranges.iter().map(|r| r.len()).sum();
        let len = len.max(real).next_multiple_of(self.p.preset.nfma());
        let key = (key, len);
        if let Some(r) = self.map.get(&key) {
            return r.clone();
        }
        let p = self.p;
        // Gather each needed row of A and B once.
        let mut rows_a: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        let mut rows_b: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        let mut buf = Vec::new();
        for &(i, j) in &self.pairs {
            rows_a.entry(i).or_insert_with(|| {
                Self::gather(&p.a, i, p.k, ranges, len, &mut buf);
                buf.clone()
            });
            rows_b.entry(j).or_insert_with(|| {
                Self::gather(&p.b, j, p.k, ranges, len, &mut buf);
                buf.clone()
            });
        }
        // The grid of the rows the outputs read, through the CPU backend, where the outputs fill most of it (every
        // output, or a few rows of them); else each output's chain alone.
        let (m, n) = (rows_a.len(), rows_b.len());
        let out: Vec<f32> = if m * n <= 4 * self.pairs.len() {
            let a: Vec<u8> = rows_a.values().flatten().copied().collect();
            let b: Vec<u8> = rows_b.values().flatten().copied().collect();
            let ops = Operands { fa: p.fa, fb: p.fb, a: &a, b: &b, m, n, k: len };
            let grid = self.engine.chains(&p.preset, &ops);
            let place = |rows: &BTreeMap<usize, Vec<u8>>| -> HashMap<usize, usize> {
                rows.keys().enumerate().map(|(at, &x)| (x, at)).collect()
            };
            let (ia, jb) = (place(&rows_a), place(&rows_b));
            self.pairs.iter().map(|(i, j)| grid[ia[i] * n + jb[j]]).collect()
        } else {
            self.pairs
                .iter()
                .map(|(i, j)| match (rows_a.get(i), rows_b.get(j)) {
                    (Some(a), Some(b)) => self.chain.run(a, b, 0.0),
                    _ => 0.0,
                })
                .collect()
        };
        let out = Arc::new(out);
        self.map.insert(key, out.clone());
        out
    }

    /// The partials p_s (per compared output) of a plan, as the model's executor adds them: a split's chunk results
    /// ((+0 + c_0) + c_1) + ... in fp32, +0 for a split without chunks. A chunk of padding alone is skipped: its
    /// result is +0, and adding +0 to a partial that is never -0 changes nothing.
    pub fn partials(&mut self, plan: &Plan) -> Vec<Vec<f32>> {
        let n_out = self.pairs.len();
        plan.splits()
            .iter()
            .map(|split| {
                let mut acc = vec![0.0f32; n_out];
                for chunk in split.chunks.iter().filter(|c| !c.ranges.is_empty()) {
                    let r = self.results(&chunk.ranges, chunk.len);
                    for (a, x) in acc.iter_mut().zip(r.iter()) {
                        *a += *x;
                    }
                }
                acc
            })
            .collect()
    }
}

/// The fp32 accumulator [m, n] of A x B^T under a plan, through the fit's replay (chain cache, partials, the plan's
/// combination): what the report's fuzz checks against the model's plan executor. Operands must be finite (the §3.7
/// patch of non-finite inputs is not applied); operand sizes that do not match the shape are an invalid-value error.
pub fn replay_plan(preset: &Preset, plan: &Plan, ops: &Operands<'_>) -> mmaemu_model::Result<Vec<f32>> {
    ops.check()?;
    let (m, n) = (ops.m, ops.n);
    let codes = Codes {
        preset: preset.clone(),
        fa: ops.fa,
        fb: ops.fb,
        k: ops.k,
        a: ops.a.to_vec(),
        b: ops.b.to_vec(),
        pairs: (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect(),
    };
    let partials = ChainCache::new(&codes).partials(plan);
    let mut column = vec![0.0f32; partials.len()];
    Ok((0..m * n)
        .map(|o| {
            for (c, part) in column.iter_mut().zip(&partials) {
                *c = part[o];
            }
            plan.combine(&column)
        })
        .collect())
}
