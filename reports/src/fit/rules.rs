//! Candidate split-K reduction rules (the hypotheses `mmaemu fit splitk` tests) and their evaluation.
//!
//! A rule says how a split-K GEMM of S splits cuts K into chains and in which fp32 order it adds the
//! partial sums (docs/reference.md §3):
//!
//! - **tile width** w ∈ {32, 64, 128, 256}: K is cut into T = ceil(K / w) k-tiles, the last one ragged;
//! - **ownership**: `interleaved` (tile t belongs to split t mod S, in increasing t; the RTX 4060, §3.2) or
//!   `contiguous` (split s owns the run of tiles [s q, (s + 1) q), q = ceil(T / S); the H100, §3.3);
//! - **slow restart** (slow accumulation only): the chain of a split restarts from +0 every n of the
//!   split's *own* tiles (n ∈ {1, 2, 4}), or every 128 elements of the split's index list; the chain
//!   results are added serially from +0 in fp32. Where "every 128 elements" is a whole number of tiles
//!   (w ≤ 128) it *is* that tile rule and is listed once, under the tile name; only for w = 256 is it a
//!   rule of its own (a restart in the middle of a tile), named `restart128e`;
//! - **order** of the fp32 combination of the partials p_0 .. p_(S-1): `serial` ((p0 + p1) + p2) + ...;
//!   `pairwise` as cuBLASLt customOption 1 on the RTX 4060 (§3.2); `reversed`, from the last partial
//!   down to p0; `tree` a balanced binary tree over adjacent pairs, level by level ((p0 + p1) + (p2 +
//!   p3)), an odd last element carried to the next level unchanged.
//!
//! Names: `<ownership><width>/<order>` for fast accumulation (`interleaved64/pairwise`,
//! `contiguous128/serial`) and `<ownership><width>/<order>/restart<n>` for slow accumulation (n = the
//! restart period in own tiles, or `128e` for the half-tile rule of w = 256), e.g.
//! `interleaved64/pairwise/restart2` is docs/reference.md's RTX 4060 slow pairwise plan and
//! `contiguous128/serial/restart1` its H100 slow plan.
//!
//! Every chain of a rule holds the real k indices of its tiles in order; zero padding (of the ragged last
//! tile, or of the padding tiles behind it) only ever follows them, so it changes nothing (§2.4) and is
//! left out. Chains over the same k indices are the same chain whatever rule they come from, which is
//! what lets the fit cache them.

use mmaemu_model::rule::combine_with;
pub use mmaemu_model::rule::{combine, Layout, Order, Ownership, Restart, SplitRule};
use mmaemu_model::{Chain, Operands, Preset, Scheme};
use std::ops::Range;

/// The tile widths the fit tries.
pub const WIDTHS: [usize; 4] = [32, 64, 128, 256];

/// The restart periods (in own tiles) the fit tries for slow accumulation.
pub const RESTART_TILES: [usize; 3] = [1, 2, 4];

/// The restart period in elements the fit tries for slow accumulation.
pub const RESTART_ELEMENTS: usize = 128;

/// The layouts the fit tries: fast, every ownership x width; slow, also every distinct restart period.
pub fn layouts(fast: bool) -> Vec<Layout> {
    let mut out = Vec::new();
    for ownership in [Ownership::Interleaved, Ownership::Contiguous] {
        for width in WIDTHS {
            if fast {
                out.push(Layout { ownership, width, restart: None });
                continue;
            }
            for n in RESTART_TILES {
                out.push(Layout { ownership, width, restart: Some(Restart::Tiles(n)) });
            }
            // "Every 128 elements" is a tile rule when the tile divides 128; otherwise a rule of its own.
            if !RESTART_ELEMENTS.is_multiple_of(width) {
                out.push(Layout { ownership, width, restart: Some(Restart::Elements(RESTART_ELEMENTS)) });
            } else if !RESTART_TILES.contains(&(RESTART_ELEMENTS / width)) {
                out.push(Layout { ownership, width, restart: Some(Restart::Tiles(RESTART_ELEMENTS / width)) });
            }
        }
    }
    out
}

/// Every candidate rule for fast or slow accumulation, layouts in [`layouts`] order, orders in
/// [`Order::ALL`] order.
pub fn candidates(fast: bool) -> Vec<SplitRule> {
    layouts(fast)
        .into_iter()
        .flat_map(|layout| Order::ALL.into_iter().map(move |order| SplitRule { layout, order }))
        .collect()
}

/// The rule of a recorded scheme name (docs/reference.md §3), fast (no restart) or slow.
pub fn of_scheme(scheme: &str, fast: bool) -> Option<SplitRule> {
    let rule = Scheme::from_name(scheme)?.rule()?;
    Some(if fast { rule.fast() } else { rule })
}

/// The expression an order evaluates for S partials, with each addition's operands sorted (fp32
/// addition is commutative), e.g. `((p0+p1)+p2)`. Two orders with the same expression for an S compute
/// the same bits for every input: no recording can tell them apart.
pub fn order_expression(order: Order, s: usize) -> String {
    let p: Vec<String> = (0..s).map(|i| format!("p{i}")).collect();
    let add = |a: &String, b: &String| if a <= b { format!("({a}+{b})") } else { format!("({b}+{a})") };
    combine_with(order, &p, &add).unwrap_or_default()
}

/// The fp32 accumulator [m, n] of A x B^T under a rule with S splits, computed directly: each chain is
/// [`Chain::run`] from +0 over the codes of its k indices, a slow split adds its chain results serially
/// from +0, the partials are combined in the rule's order. Operands must be finite (the §3.7 patch of
/// non-finite inputs is not applied here). S = 1 with a fast rule is the unsplit fast chain; S = 1 with
/// `contiguous128/.../restart1` is the unsplit slow plan (§3.1). Operand sizes that do not match the shape
/// are an invalid-value error.
pub fn accumulate_rule(
    rule: &SplitRule,
    preset: &Preset,
    ops: &Operands<'_>,
    s: usize,
) -> mmaemu_model::Result<Vec<f32>> {
    ops.check()?;
    let chain = Chain::new(preset, ops.fa, ops.fb);
    let (a, b, m, n, k) = (ops.a, ops.b, ops.m, ops.n, ops.k);
    let splits = rule.layout.splits(k, s);
    let gather = |x: &[u8], row: usize, ranges: &[Range<usize>]| -> Vec<u8> {
        ranges.iter().flat_map(|r| x[row * k + r.start..row * k + r.end].iter().copied()).collect()
    };
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let partials: Vec<f32> = splits
                .iter()
                .map(|chains| {
                    chains.iter().fold(0.0f32, |acc, c| acc + chain.run(&gather(a, i, c), &gather(b, j, c), 0.0))
                })
                .collect();
            out.push(combine(rule.order, &partials));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for fast in [true, false] {
            for r in candidates(fast) {
                assert_eq!(SplitRule::parse(&r.name()), Some(r), "{}", r.name());
            }
        }
        assert_eq!(candidates(true).len(), 32);
        assert_eq!(candidates(false).len(), 2 * 13 * 4);
        assert_eq!(of_scheme("pairwise", false).map(|r| r.name()).as_deref(), Some("interleaved64/pairwise/restart2"));
        assert!(SplitRule::parse("diagonal64/serial").is_none());
        assert!(SplitRule::parse("interleaved64/serial/restart2/x").is_none());
    }

    #[test]
    fn behaviour_examples() {
        let il = Layout { ownership: Ownership::Interleaved, width: 64, restart: None };
        // §3.2: K = 200, S = 3: split0 = tiles 0 and 3, split1 = tile 1, split2 = tile 2.
        assert_eq!(il.splits(200, 3), vec![vec![vec![0..64, 192..200]], vec![vec![64..128]], vec![vec![128..192]]]);
        // K = 80, S = 3: split2 owns only padding.
        assert_eq!(il.splits(80, 3), vec![vec![vec![0..64]], vec![vec![64..80]], vec![]]);
        // Slow, S = 2, K = 512: split0 chunks (tiles 0,2), (4,6).
        let slow = Layout { restart: Some(Restart::Tiles(2)), ..il };
        assert_eq!(slow.splits(512, 2)[0], vec![vec![0..64, 128..192], vec![256..320, 384..448]]);
        // §3.3: K = 640, S = 3, contiguous 128: 256, 256, 128 elements; K = 768, S = 4: an empty split.
        let c = Layout { ownership: Ownership::Contiguous, width: 128, restart: None };
        assert_eq!(c.splits(640, 3), vec![vec![vec![0..256]], vec![vec![256..512]], vec![vec![512..640]]]);
        assert_eq!(c.splits(768, 4)[3], Vec::<Vec<Range<usize>>>::new());
        let cs = Layout { restart: Some(Restart::Tiles(1)), ..c };
        assert_eq!(cs.splits(640, 2)[0].len(), 3);
        // The half-tile restart of w = 256.
        let h = Layout { ownership: Ownership::Contiguous, width: 256, restart: Some(Restart::Elements(128)) };
        assert_eq!(h.splits(300, 1), vec![vec![vec![0..128], vec![128..256], vec![256..300]]]);
    }

    #[test]
    fn orders_match_the_model_and_the_spec() {
        // §3.2, S = 4: (p3 + (p0 + p2)) + p1, operands of each addition sorted.
        assert_eq!(order_expression(Order::Pairwise, 4), "(((p0+p2)+p3)+p1)");
        assert_eq!(order_expression(Order::Tree, 3), order_expression(Order::Serial, 3));
        for o in Order::ALL {
            assert_eq!(order_expression(o, 2), "(p0+p1)");
        }
    }
}
