//! Split-K rules (docs/reference.md §3.2–§3.3, §3.8): how a split GEMM of S splits cuts K into chains and in which
//! fp32 order it adds the partials — the one type the platforms declare, the plans execute and `fit splitk` searches.

// A rule is a tile width w, an ownership (interleaved: tile t to split t mod S; contiguous: runs of ceil(T / S)
// tiles), a slow-accumulation restart period and a combination order. Names: `<ownership><width>/<order>` and, with
// a restart, `/restart<n>` (n own tiles), `/restart<n>e` (n elements of the split's index list) or `/norestart` (slow
// accumulation runs one chain per split), e.g. `interleaved64/pairwise/restart2`, the RTX 4060's customOption 1. A
// rule without a restart suffix plans fast accumulation only.

use crate::layout::{cut, Chunk, Split};
use std::fmt;
use std::ops::Range;

/// How the k-tiles are shared out among the splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ownership {
    /// Tile t belongs to split t mod S.
    Interleaved,
    /// Split s owns tiles [s q, (s + 1) q), q = ceil(T / S).
    Contiguous,
}

impl Ownership {
    /// `interleaved` or `contiguous`.
    pub fn name(self) -> &'static str {
        match self {
            Ownership::Interleaved => "interleaved",
            Ownership::Contiguous => "contiguous",
        }
    }
}

/// The order of the fp32 additions of the partials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Order {
    /// ((p0 + p1) + p2) + ...
    Serial,
    /// docs/reference.md §3.2 (customOption 1 on the RTX 4060).
    Pairwise,
    /// ((p_(S-1) + p_(S-2)) + ...) + p0.
    Reversed,
    /// Adjacent pairs, level by level.
    Tree,
}

impl Order {
    /// All orders, in name order of the report.
    pub const ALL: [Order; 4] = [Order::Serial, Order::Pairwise, Order::Reversed, Order::Tree];

    /// `serial`, `pairwise`, `reversed`, `tree`.
    pub fn name(self) -> &'static str {
        match self {
            Order::Serial => "serial",
            Order::Pairwise => "pairwise",
            Order::Reversed => "reversed",
            Order::Tree => "tree",
        }
    }

    pub fn from_name(s: &str) -> Option<Order> {
        Order::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// When a slow split's chain restarts from +0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Restart {
    /// Every n of the split's own tiles.
    Tiles(usize),
    /// Every n elements of the split's index list.
    Elements(usize),
    /// Never: slow accumulation runs one chain over the split's whole index list, as fast accumulation does.
    Never,
}

/// How a rule cuts K into chains: tile width, ownership and (slow accumulation) the restart period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Layout {
    /// Tile ownership.
    pub ownership: Ownership,
    /// Tile width in elements.
    pub width: usize,
    /// None: fast accumulation (one chain per split).
    pub restart: Option<Restart>,
}

impl Layout {
    /// The chain period in elements of the split's index list (None: one chain per split).
    pub fn period(&self) -> Option<usize> {
        match self.restart {
            None => None,
            Some(Restart::Tiles(n)) => Some(n.saturating_mul(self.width)),
            Some(Restart::Elements(e)) => Some(e),
            Some(Restart::Never) => None,
        }
    }

    /// The most tiles one split owns for K and S (a split's index list is at most this many tiles long, padding
    /// included): a restart of this many own tiles or more cuts nothing.
    pub fn own_tiles(&self, k: usize, s: usize) -> usize {
        k.div_ceil(self.width.max(1)).div_ceil(s.max(1))
    }

    /// The tiles split `sp` of `s` owns for `t` tiles, in chain order.
    fn owned(&self, sp: usize, s: usize, t: usize) -> Vec<usize> {
        match self.ownership {
            Ownership::Interleaved => (sp..t).step_by(s).collect(),
            Ownership::Contiguous => {
                let q = t.div_ceil(s);
                let (lo, hi) = ((sp * q).min(t), ((sp + 1) * q).min(t));
                (lo..hi).collect()
            }
        }
    }

    /// `interleaved64` and, for slow accumulation, `/restart2`-style suffix parts.
    fn head(&self) -> String {
        format!("{}{}", self.ownership.name(), self.width)
    }

    fn restart_suffix(&self) -> String {
        match self.restart {
            None => String::new(),
            Some(Restart::Tiles(n)) => format!("/restart{n}"),
            Some(Restart::Elements(e)) => format!("/restart{e}e"),
            Some(Restart::Never) => "/norestart".to_string(),
        }
    }
}

/// A candidate reduction rule: a layout and a combination order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SplitRule {
    /// How K is cut into chains.
    pub layout: Layout,
    /// How the partials are added.
    pub order: Order,
}

impl SplitRule {
    /// `<ownership><width>/<order>[/restart<n>]`.
    pub fn name(&self) -> String {
        format!("{}/{}{}", self.layout.head(), self.order.name(), self.layout.restart_suffix())
    }

    /// Parse a rule name (the inverse of [`SplitRule::name`]); None if it is not one.
    pub fn parse(name: &str) -> Option<SplitRule> {
        let mut parts = name.split('/');
        let head = parts.next()?;
        let order = Order::from_name(parts.next()?)?;
        let restart = match parts.next() {
            None => None,
            Some("norestart") => Some(Restart::Never),
            Some(r) => {
                let n = r.strip_prefix("restart")?;
                // A restart every 0 tiles or elements cuts nothing: not a rule.
                let positive = |x: &str| x.parse::<usize>().ok().filter(|&v| v > 0);
                Some(match n.strip_suffix('e') {
                    Some(e) => Restart::Elements(positive(e)?),
                    None => Restart::Tiles(positive(n)?),
                })
            }
        };
        if parts.next().is_some() {
            return None;
        }
        let (ownership, width) = if let Some(w) = head.strip_prefix("interleaved") {
            (Ownership::Interleaved, w)
        } else if let Some(w) = head.strip_prefix("contiguous") {
            (Ownership::Contiguous, w)
        } else {
            return None;
        };
        let width: usize = width.parse().ok()?;
        if width == 0 {
            return None;
        }
        Some(SplitRule { layout: Layout { ownership, width, restart }, order })
    }
}

impl SplitRule {
    /// An upper bound of the bytes [`SplitRule::plan_splits`] and the execution of its chains take for K and S
    /// (the splits, their chunks, and one row of A and of B gathered over the longest padded chain), computed
    /// before anything is built; None when it overflows 64 bits. A tile width or restart a file or flag can make
    /// huge is refused by this size, not by an allocation.
    pub fn plan_bytes(&self, k: usize, s: usize, fast: bool) -> Option<u64> {
        let (k, s, w) = (k as u64, s.max(1) as u64, self.layout.width.max(1) as u64);
        let tiles = k.div_ceil(w).div_ceil(s);
        let len = tiles.checked_mul(w)?;
        let chunks = match (fast, self.layout.period()) {
            (false, Some(p)) => len.div_ceil(p.max(1) as u64).max(1),
            _ => 1,
        };
        crate::layout::plan_bytes(s, chunks, len)
    }

    /// The rule for fast accumulation: the same layout without a slow restart.
    pub fn fast(self) -> SplitRule {
        SplitRule { layout: Layout { restart: None, ..self.layout }, order: self.order }
    }
}

impl fmt::Display for SplitRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl SplitRule {
    /// The splits of a plan for K (> 0) and S (>= 1) splits (docs/reference.md §3.2, §3.3): each split's chains
    /// with their zero padding — the one layout of a split, which plans, `fit splitk` and traces all use. Interleaved rules pad the tiles to a multiple of S (a split owning padding alone
    /// has no chains); contiguous rules pad only the ragged last tile. Fast: one chain per split; slow: the
    /// split's index list cut every restart period (`period`, from the rule's restart; the caller checked that
    /// a slow plan has one).
    pub fn plan_splits(&self, k: usize, s: usize, fast: bool) -> Vec<Split> {
        let w = self.layout.width.max(1);
        let s = s.max(1);
        let t = k.div_ceil(w);
        let period = if fast { None } else { self.layout.period() };
        let tile = |ti: usize| (ti * w).min(k)..((ti + 1) * w).min(k);
        (0..s)
            .map(|sp| {
                let tiles: Vec<usize> = match self.layout.ownership {
                    Ownership::Interleaved => (sp..t.div_ceil(s) * s).step_by(s).collect(),
                    Ownership::Contiguous => self.layout.owned(sp, s, t),
                };
                let owned: Vec<Range<usize>> = tiles.iter().map(|&ti| tile(ti)).filter(|r| !r.is_empty()).collect();
                if owned.is_empty() {
                    return Split { chunks: Vec::new() };
                }
                let len = tiles.len() * w;
                let chunks = match period {
                    None => vec![Chunk { ranges: owned, len }],
                    Some(p) => cut(&owned, len, p),
                };
                Split { chunks }
            })
            .collect()
    }

    /// The rule as it acts on K and S (fast or slow): the first of the rules that cut every such GEMM into the same
    /// chains. A restart of n·w elements is n tiles; for slow accumulation a restart at or past the longest split's
    /// index list cuts nothing (`norestart`); fast accumulation has no restart. Two rules with the same canonical
    /// form compute the same bits for every operand of that K and S.
    pub fn canonical(self, k: usize, s: usize, fast: bool) -> SplitRule {
        let l = self.layout;
        if fast {
            return self.fast();
        }
        let own = l.own_tiles(k, s);
        let restart = match l.restart {
            Some(Restart::Elements(e)) if e % l.width.max(1) == 0 => Some(Restart::Tiles(e / l.width.max(1))),
            r => r,
        };
        let restart = match restart {
            Some(Restart::Tiles(n)) if n >= own => Some(Restart::Never),
            Some(Restart::Elements(e)) if e >= own.saturating_mul(l.width) => Some(Restart::Never),
            r => r,
        };
        SplitRule { layout: Layout { restart, ..l }, order: self.order }
    }

    /// The fp32 combination of the partials in the rule's order (+0 for none).
    pub fn combine(&self, p: &[f32]) -> f32 {
        combine(self.order, p)
    }
}

/// Combine the partials `p` (non-empty) in the order given, with `add` as the addition. Generic so that
/// the same code computes fp32 sums and the symbolic expressions of [`order_expression`].
pub fn combine_with<T: Clone>(order: Order, p: &[T], add: &impl Fn(&T, &T) -> T) -> Option<T> {
    let s = p.len();
    let first = p.first()?.clone();
    if s == 1 {
        return Some(first);
    }
    Some(match order {
        Order::Serial => p[1..].iter().fold(first, |acc, x| add(&acc, x)),
        Order::Reversed => p[..s - 1].iter().rev().fold(p[s - 1].clone(), |acc, x| add(&acc, x)),
        Order::Pairwise => {
            let h = s.div_ceil(2);
            let mut acc = p[s - 1].clone();
            for i in 0..h {
                let slot = if i + h + 2 <= s { add(&p[i], &p[i + h]) } else { p[i].clone() };
                acc = add(&acc, &slot);
            }
            acc
        }
        Order::Tree => {
            let mut level: Vec<T> = p.to_vec();
            while level.len() > 1 {
                level = level.chunks(2).map(|c| if c.len() == 2 { add(&c[0], &c[1]) } else { c[0].clone() }).collect();
            }
            level.pop()?
        }
    })
}

/// The fp32 combination (every `+` one IEEE round-to-nearest-even addition); +0 for no partials.
pub fn combine(order: Order, p: &[f32]) -> f32 {
    combine_with(order, p, &|a: &f32, b: &f32| a + b).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // a chunk's list of ranges, holding one
    fn half_tile_restart_cuts_inside_a_tile() {
        // `restart128e` of 256-wide contiguous tiles, K = 300, S = 2: split 0 owns tile 0 (0..256), cut into two
        // 128-element chains; split 1 the ragged tile 1 (256..300, padded to 256): its real indices, then a chain
        // of padding alone.
        let rule = SplitRule::parse("contiguous256/serial/restart128e").unwrap();
        let chunks = |sp: &Split| sp.chunks.iter().map(|c| (c.ranges.clone(), c.len)).collect::<Vec<_>>();
        let splits = rule.plan_splits(300, 2, false);
        assert_eq!(chunks(&splits[0]), vec![(vec![0..128], 128), (vec![128..256], 128)]);
        assert_eq!(chunks(&splits[1]), vec![(vec![256..300], 128), (vec![], 128)]);
        // Fast accumulation ignores the restart: one chain per split.
        let fast = rule.plan_splits(300, 2, true);
        assert_eq!(chunks(&fast[0]), vec![(vec![0..256], 256)]);
    }

    #[test]
    fn a_rule_without_restart_runs_one_slow_chain_per_split_and_canonical_forms_fold_equivalent_restarts() {
        let never = SplitRule::parse("contiguous32/tree/norestart").unwrap();
        assert_eq!(never.layout.restart, Some(Restart::Never));
        assert_eq!(never.name(), "contiguous32/tree/norestart");
        // K = 200, S = 2: 7 tiles of 32, 4 per split; each split one chain (padding included) when slow.
        let splits = never.plan_splits(200, 2, false);
        assert_eq!(splits.iter().map(|s| s.chunks.len()).collect::<Vec<_>>(), vec![1, 1]);
        // One range per owned tile.
        assert_eq!(splits[1].chunks[0].ranges, vec![128..160, 160..192, 192..200]);
        // A restart of 4 or more own tiles (128 or more elements) cuts nothing at this K and S; 64 elements are 2
        // tiles; fast accumulation drops the restart.
        let at = |n: &str| SplitRule::parse(n).unwrap().canonical(200, 2, false).name();
        assert_eq!(at("contiguous32/tree/restart4"), "contiguous32/tree/norestart");
        assert_eq!(at("contiguous32/tree/restart9"), "contiguous32/tree/norestart");
        assert_eq!(at("contiguous32/tree/restart128e"), "contiguous32/tree/norestart");
        assert_eq!(at("contiguous32/tree/restart64e"), "contiguous32/tree/restart2");
        assert_eq!(at("contiguous32/tree/restart48e"), "contiguous32/tree/restart48e");
        assert_eq!(at("contiguous32/tree/restart3"), "contiguous32/tree/restart3");
        assert_eq!(never.canonical(200, 2, true).name(), "contiguous32/tree");
    }
}
