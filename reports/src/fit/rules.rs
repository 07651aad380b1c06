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

use mmaemu_model::{Chain, Operands, Preset};
use std::fmt;
use std::ops::Range;

/// The tile widths the fit tries.
pub const WIDTHS: [usize; 4] = [32, 64, 128, 256];

/// The restart periods (in own tiles) the fit tries for slow accumulation.
pub const RESTART_TILES: [usize; 3] = [1, 2, 4];

/// The restart period in elements the fit tries for slow accumulation.
pub const RESTART_ELEMENTS: usize = 128;

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

    fn from_name(s: &str) -> Option<Order> {
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

/// One split's chains: each chain is its real k indices, as merged ranges, in chain order.
pub type SplitChains = Vec<Vec<Range<usize>>>;

impl Layout {
    /// The chain period in elements of the split's index list (None: one chain per split).
    pub fn period(&self) -> Option<usize> {
        match self.restart {
            None => None,
            Some(Restart::Tiles(n)) => Some(n * self.width),
            Some(Restart::Elements(e)) => Some(e),
        }
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

    /// The chains of every split for K and S (S >= 1): `out[s]` lists split s's chains in the order their
    /// results are added (a split without real indices has none: its partial is +0).
    pub fn splits(&self, k: usize, s: usize) -> Vec<SplitChains> {
        let s = s.max(1);
        let w = self.width.max(1);
        let t = k.div_ceil(w);
        (0..s)
            .map(|sp| {
                let mut chains: SplitChains = Vec::new();
                for (j, tile) in self.owned(sp, s, t).into_iter().enumerate() {
                    let (lo, hi) = (tile * w, ((tile + 1) * w).min(k));
                    // Cut the tile at the chain boundaries: position j w + x of the split's list.
                    let mut x = lo;
                    while x < hi {
                        let pos = j * w + (x - lo);
                        let (chain, end) = match self.period() {
                            None => (0, hi),
                            Some(p) => (pos / p, (x + (p - pos % p)).min(hi)),
                        };
                        while chains.len() <= chain {
                            chains.push(Vec::new());
                        }
                        push_merged(&mut chains[chain], x..end);
                        x = end;
                    }
                }
                chains.retain(|c| !c.is_empty());
                chains
            })
            .collect()
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
        }
    }
}

/// Append a range to a chain, merging it with the previous one when they touch.
fn push_merged(chain: &mut Vec<Range<usize>>, r: Range<usize>) {
    if let Some(last) = chain.last_mut() {
        if last.end == r.start {
            last.end = r.end;
            return;
        }
    }
    chain.push(r);
}

/// A candidate reduction rule: a layout and a combination order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rule {
    /// How K is cut into chains.
    pub layout: Layout,
    /// How the partials are added.
    pub order: Order,
}

impl Rule {
    /// `<ownership><width>/<order>[/restart<n>]`.
    pub fn name(&self) -> String {
        format!("{}/{}{}", self.layout.head(), self.order.name(), self.layout.restart_suffix())
    }

    /// Parse a rule name (the inverse of [`Rule::name`]); None if it is not one.
    pub fn parse(name: &str) -> Option<Rule> {
        let mut parts = name.split('/');
        let head = parts.next()?;
        let order = Order::from_name(parts.next()?)?;
        let restart = match parts.next() {
            None => None,
            Some(r) => {
                let n = r.strip_prefix("restart")?;
                Some(match n.strip_suffix('e') {
                    Some(e) => Restart::Elements(e.parse().ok()?),
                    None => Restart::Tiles(n.parse().ok()?),
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
        Some(Rule { layout: Layout { ownership, width, restart }, order })
    }

    /// The rule docs/reference.md §3 gives a recorded scheme, fast or slow: serial / pairwise → interleaved64
    /// (slow: restart every 2 own tiles); contiguous → contiguous128 serial (slow: every tile).
    pub fn of_scheme(scheme: &str, fast: bool) -> Option<Rule> {
        let (ownership, width, order, restart) = match scheme {
            "serial" => (Ownership::Interleaved, 64, Order::Serial, 2),
            "pairwise" => (Ownership::Interleaved, 64, Order::Pairwise, 2),
            "contiguous" => (Ownership::Contiguous, 128, Order::Serial, 1),
            _ => return None,
        };
        let restart = if fast { None } else { Some(Restart::Tiles(restart)) };
        Some(Rule { layout: Layout { ownership, width, restart }, order })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

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
pub fn candidates(fast: bool) -> Vec<Rule> {
    layouts(fast)
        .into_iter()
        .flat_map(|layout| Order::ALL.into_iter().map(move |order| Rule { layout, order }))
        .collect()
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
pub fn accumulate_rule(rule: &Rule, preset: &Preset, ops: &Operands<'_>, s: usize) -> mmaemu_model::Result<Vec<f32>> {
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
    use mmaemu_model::plan::{combine as model_combine, Scheme};

    #[test]
    fn names_round_trip() {
        for fast in [true, false] {
            for r in candidates(fast) {
                assert_eq!(Rule::parse(&r.name()), Some(r), "{}", r.name());
            }
        }
        assert_eq!(candidates(true).len(), 32);
        assert_eq!(candidates(false).len(), 2 * 13 * 4);
        assert_eq!(
            Rule::of_scheme("pairwise", false).map(|r| r.name()).as_deref(),
            Some("interleaved64/pairwise/restart2")
        );
        assert!(Rule::parse("diagonal64/serial").is_none());
        assert!(Rule::parse("interleaved64/serial/restart2/x").is_none());
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
        let vals = [1.0f32, 2f32.powi(-24), -1.0, 2f32.powi(-23), 3.0, 2f32.powi(-24), 1e-3, 7.5];
        for s in 1..=vals.len() {
            let p = &vals[..s];
            assert_eq!(combine(Order::Serial, p).to_bits(), model_combine(Scheme::Serial, p).to_bits());
            assert_eq!(combine(Order::Pairwise, p).to_bits(), model_combine(Scheme::Pairwise, p).to_bits());
        }
    }
}
