//! Candidate split-K reduction rules (the hypotheses `mmaemu fit splitk` tests) and the expressions of their orders.
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
//! A rule's chains are those of its plan (the model's `Plan`, built by `SplitRule::plan_splits`): the fit
//! replays them (`splitk/replay.rs`). Chains over the same k indices are the same chain whatever rule they
//! come from, which is what lets the fit cache them.

use mmaemu_model::rule::combine_with;
pub use mmaemu_model::rule::{combine, Layout, Order, Ownership, Restart, SplitRule};
use mmaemu_model::Scheme;

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
    fn orders_match_the_model_and_the_spec() {
        // §3.2, S = 4: (p3 + (p0 + p2)) + p1, operands of each addition sorted.
        assert_eq!(order_expression(Order::Pairwise, 4), "(((p0+p2)+p3)+p1)");
        assert_eq!(order_expression(Order::Tree, 3), order_expression(Order::Serial, 3));
        for o in Order::ALL {
            assert_eq!(order_expression(o, 2), "(p0+p1)");
        }
    }
}
