//! Candidate split-K reduction rules (the hypotheses `mmaemu fit splitk` tests) and the expressions of their orders.
//!
//! A rule says how a split-K GEMM of S splits cuts K into chains and in which fp32 order it adds the
//! partial sums (docs/reference.md §3):
//!
//! - **tile width** w, every power of two from 16 to 1024 ([`WIDTHS`]): K is cut into T = ceil(K / w) k-tiles, the
//!   last one ragged;
//! - **ownership**: `interleaved` (tile t belongs to split t mod S, in increasing t; the RTX 4060, §3.2) or
//!   `contiguous` (split s owns the run of tiles [s q, (s + 1) q), q = ceil(T / S); the H100, §3.3);
//! - **slow restart** (slow accumulation only): the chain of a split restarts from +0 every n of the split's *own*
//!   tiles (any n >= 1), every e elements of the split's index list (a restart inside a tile: e a power of two from
//!   16 below w), or never (`norestart`: one chain per split); the chain results are added serially from +0 in fp32.
//!   On one row of K and S only finitely many restarts differ: n at or past the q own tiles of the longest split
//!   (e at or past q w elements) cuts nothing and is `norestart` there, e = n w is n tiles
//!   ([`SplitRule::canonical`]). The fit tries, per row, exactly those ([`layouts`]), so a restart of 3, 6 or 100
//!   tiles is found wherever a row's K can show it;
//! - **order** of the fp32 combination of the partials p_0 .. p_(S-1): `serial` ((p0 + p1) + p2) + ...;
//!   `pairwise` as cuBLASLt customOption 1 on the RTX 4060 (§3.2); `reversed`, from the last partial
//!   down to p0; `tree` a balanced binary tree over adjacent pairs, level by level ((p0 + p1) + (p2 +
//!   p3)), an odd last element carried to the next level unchanged.
//!
//! Names: `<ownership><width>/<order>` for fast accumulation (`interleaved64/pairwise`, `contiguous128/serial`) and
//! `<ownership><width>/<order>/restart<n>` (n own tiles), `.../restart<e>e` (e elements) or `.../norestart` for slow
//! accumulation, e.g. `interleaved64/pairwise/restart2` is docs/reference.md's RTX 4060 slow pairwise plan and
//! `contiguous128/serial/restart1` its H100 slow plan.
//!
//! A rule's chains are those of its plan (the model's `Plan`, built by `SplitRule::plan_splits`): the fit
//! replays them (`splitk/replay.rs`). Chains over the same k indices are the same chain whatever rule they
//! come from, which is what lets the fit cache them.

use mmaemu_model::rule::combine_with;
pub use mmaemu_model::rule::{combine, Layout, Order, Ownership, Restart, SplitRule};
use mmaemu_model::Scheme;

/// The tile widths the fit tries: every power of two from 16 to 1024.
pub const WIDTHS: [usize; 7] = [16, 32, 64, 128, 256, 512, 1024];

/// The shortest element restart the fit tries (and the step of the instruction's k): restarts inside a tile are
/// powers of two from here below the tile width.
pub const MIN_ELEMENTS: usize = 16;

/// The layouts that differ on a row of K and S (fast or slow): every ownership x width, and for slow accumulation
/// every restart that cuts that row differently (n own tiles below the longest split's, the element restarts inside
/// a tile shorter than that split's index list, and `norestart`), each in its canonical form, in rule order.
pub fn layouts(k: usize, s: usize, fast: bool) -> Vec<Layout> {
    let mut out = Vec::new();
    for ownership in [Ownership::Interleaved, Ownership::Contiguous] {
        for width in WIDTHS {
            let layout = |restart| Layout { ownership, width, restart };
            if fast {
                out.push(layout(None));
                continue;
            }
            let own = layout(None).own_tiles(k, s);
            out.extend((1..own).map(|n| layout(Some(Restart::Tiles(n)))));
            let elements = std::iter::successors(Some(MIN_ELEMENTS), |e| Some(e * 2)).take_while(|&e| e < width);
            out.extend(elements.filter(|&e| e < own * width).map(|e| layout(Some(Restart::Elements(e)))));
            out.push(layout(Some(Restart::Never)));
        }
    }
    out.sort();
    out
}

/// Every candidate rule on a row of K and S, fast or slow: the [`layouts`] x [`Order::ALL`], in rule order.
pub fn candidates(k: usize, s: usize, fast: bool) -> Vec<SplitRule> {
    let mut out: Vec<SplitRule> = layouts(k, s, fast)
        .into_iter()
        .flat_map(|layout| Order::ALL.into_iter().map(move |order| SplitRule { layout, order }))
        .collect();
    out.sort();
    out
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
    order_expression_of(order, &vec![true; s])
}

/// [`order_expression`] where only the partials p_i with `live[i]` may be nonzero: the others are +0, and adding +0
/// to a partial (never -0) changes nothing, so they are left out of the additions, e.g. `((p0+p1)+p2)` is `(p0+p1)`
/// when p2 is +0. "0" when none is live.
pub fn order_expression_of(order: Order, live: &[bool]) -> String {
    let p: Vec<Option<String>> = live.iter().enumerate().map(|(i, &l)| l.then(|| format!("p{i}"))).collect();
    let add = |a: &Option<String>, b: &Option<String>| match (a, b) {
        (Some(a), Some(b)) => Some(if a <= b { format!("({a}+{b})") } else { format!("({b}+{a})") }),
        (x, None) | (None, x) => x.clone(),
    };
    combine_with(order, &p, &add).flatten().unwrap_or_else(|| "0".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_a_row_tries_every_restart_it_can_show() {
        for fast in [true, false] {
            for r in candidates(4096, 3, fast) {
                assert_eq!(SplitRule::parse(&r.name()), Some(r), "{}", r.name());
                assert_eq!(r.canonical(4096, 3, fast), r, "{}", r.name());
            }
        }
        assert_eq!(candidates(4096, 3, true).len(), 2 * 7 * 4);
        // K = 1024, S = 2, 256-wide tiles: 2 own tiles, so restart1, 16e..128e, norestart.
        let wide: Vec<String> = layouts(1024, 2, false)
            .iter()
            .filter(|l| l.width == 256 && l.ownership == Ownership::Contiguous)
            .map(|l| SplitRule { layout: *l, order: Order::Serial }.name())
            .collect();
        let names = ["restart1", "restart16e", "restart32e", "restart64e", "restart128e", "norestart"];
        assert_eq!(wide, names.map(|n| format!("contiguous256/serial/{n}")));
        // 16-wide tiles, K = 8192, S = 2: every restart from 1 to 255 own tiles.
        let n16 = layouts(8192, 2, false).iter().filter(|l| l.width == 16).count();
        assert_eq!(n16, 2 * 256);
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
