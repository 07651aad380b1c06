//! GEMM accumulation plans (docs/reference.md §3): how cuBLAS cuts K into chains and in which fp32 order it adds their
//! results — unsplit fast and slow, the RTX 4060's interleaved split-K ("serial", "pairwise") and the H100's contiguous
//! split-K — plus plan validation (§3.4) and the combination of partials.

// Chunks are lists of k ranges; a list holding one range (`vec![0..k]`) is meant, not the indices.
#![allow(clippy::single_range_in_vec_init)]

use crate::error::{Error, Result};
use crate::layout::cut;
pub use crate::layout::{Chunk, Split};
use crate::preset::Preset;
use crate::rule::SplitRule;
use std::borrow::Cow;
use std::fmt;

/// Width of the RTX 4060's split-K k-tiles (serial / pairwise).
pub const ADA_TILE: usize = 64;
/// Width of the H100's split-K k-tiles (contiguous): the k-stage of the sm_90 kernels.
pub const HOPPER_TILE: usize = 128;
/// Slow chunk of a serial / pairwise split: 2 of the split's own 64-wide tiles.
pub const INTERLEAVED_SLOW_CHUNK: usize = 2 * ADA_TILE;

/// How the partial sums of a split-K GEMM are laid out and combined: a [`SplitRule`], under one of the names the
/// reference gives its recorded layouts (§3.2, §3.3) or under the rule's own name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    /// S = 1.
    None,
    /// `interleaved64/serial/restart2`: the RTX 4060's customOption 0, 2, ...
    Serial,
    /// `interleaved64/pairwise/restart2`: the RTX 4060's customOption 1.
    Pairwise,
    /// `contiguous128/serial/restart1`: every customOption of the H100.
    Contiguous,
    /// Any other rule, named by itself (a platform's fitted rule).
    Rule(SplitRule),
}

impl Scheme {
    /// The documented names and their rules.
    const NAMED: [(Scheme, &'static str); 3] = [
        (Scheme::Serial, "interleaved64/serial/restart2"),
        (Scheme::Pairwise, "interleaved64/pairwise/restart2"),
        (Scheme::Contiguous, "contiguous128/serial/restart1"),
    ];

    /// `none`, `serial`, `pairwise`, `contiguous`, or the rule's name.
    pub fn name(self) -> Cow<'static, str> {
        match self {
            Scheme::None => Cow::Borrowed("none"),
            Scheme::Serial => Cow::Borrowed("serial"),
            Scheme::Pairwise => Cow::Borrowed("pairwise"),
            Scheme::Contiguous => Cow::Borrowed("contiguous"),
            Scheme::Rule(r) => Cow::Owned(r.name()),
        }
    }
    /// Parse a scheme name: a documented name, or a rule name (a rule equal to a documented one is that name).
    pub fn from_name(s: &str) -> Option<Scheme> {
        match s {
            "none" => Some(Scheme::None),
            "serial" => Some(Scheme::Serial),
            "pairwise" => Some(Scheme::Pairwise),
            "contiguous" => Some(Scheme::Contiguous),
            _ => SplitRule::parse(s).map(Scheme::of_rule),
        }
    }
    /// The scheme of a rule: its documented name where it has one.
    pub fn of_rule(rule: SplitRule) -> Scheme {
        Scheme::NAMED.iter().find(|(_, n)| SplitRule::parse(n) == Some(rule)).map_or(Scheme::Rule(rule), |&(s, _)| s)
    }
    /// The rule the scheme stands for (None for `none`).
    pub fn rule(self) -> Option<SplitRule> {
        match self {
            Scheme::None => None,
            Scheme::Rule(r) => Some(r),
            named => Scheme::NAMED.iter().find(|(s, _)| *s == named).and_then(|(_, n)| SplitRule::parse(n)),
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A split-K configuration: S and the reduction scheme. Valid values: S = 1 with scheme none, or S > 1
/// with serial, pairwise or contiguous.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SplitK {
    s: usize,
    scheme: Scheme,
}

impl SplitK {
    /// No split: one chain per output over the whole of K.
    pub const NONE: SplitK = SplitK { s: 1, scheme: Scheme::None };

    /// A validated split (docs/reference.md §6.3): S >= 1; S = 1 requires scheme none; S > 1 requires serial,
    /// pairwise or contiguous.
    pub fn new(s: usize, scheme: Scheme) -> Result<SplitK> {
        if s == 0 {
            return Err(Error::invalid_value("split-K S must be a positive integer, got 0"));
        }
        if s == 1 && scheme != Scheme::None {
            return Err(Error::invalid_value(format!("split-K S = 1 requires scheme 'none', got '{scheme}'")));
        }
        if s > 1 && scheme == Scheme::None {
            return Err(Error::invalid_value(format!(
                "split-K S = {s} needs a reduction scheme: 'serial', 'pairwise' or 'contiguous'"
            )));
        }
        Ok(SplitK { s, scheme })
    }
    /// The split count.
    pub fn s(self) -> usize {
        self.s
    }
    /// The scheme.
    pub fn scheme(self) -> Scheme {
        self.scheme
    }
}

impl fmt::Display for SplitK {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.s == 1 {
            f.write_str("1")
        } else {
            write!(f, "{},{}", self.s, self.scheme)
        }
    }
}

/// A validated accumulation plan for one K. A plan is a list of splits; a split is a list of chunks; a chunk is one
/// chain from +0 over an ordered list of k indices followed by zero padding. The real indices of every chunk come
/// before its padding (only the last k-tile of K is ragged, and it is always the last tile of its chain), so a chunk
/// is stored as contiguous k ranges plus its padded length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    k: usize,
    fast: bool,
    split: SplitK,
    splits: Vec<Split>,
}

impl Plan {
    /// Build and validate the plan of `preset` for K, fast or slow accumulation, and a split
    /// (docs/reference.md §3.4, in its order).
    pub fn new(preset: &Preset, k: usize, fast: bool, split: SplitK) -> Result<Plan> {
        let s = split.s();
        // The splits are sized from the caller's S and the rule's width and restart: refused above the memory
        // ceiling before any is built.
        let bytes = match split.scheme().rule() {
            Some(rule) if s > 1 => rule.plan_bytes(k, s, fast),
            _ => {
                let chunks = if fast { 1 } else { k.div_ceil(preset.slow_chunk().unwrap_or(k).max(1)).max(1) };
                crate::layout::plan_bytes(1, chunks as u64, k as u64)
            }
        };
        crate::limits::check_fixed(&format!("a plan of S = {s} splits"), bytes).map_err(Error::invalid_value)?;
        // (1, 2: S and the scheme are validated by SplitK.) The plan follows the preset's parameters and the rule
        // alone: which layouts a GPU's kernels use is its profile's to check (`Profile::check_split`).
        // Unsplit slow accumulation needs the preset's slow chunk; a split is cut by its rule's slow restart.
        if !fast && s == 1 && preset.slow_chunk().is_none() {
            return Err(Error::unsupported(format!(
                "slow accumulation (use_fast_accum=False) is not characterised for preset '{}'",
                preset.name()
            )));
        }
        if s > 1 && !fast && split.scheme().rule().is_some_and(|r| r.layout.restart.is_none()) {
            return Err(Error::invalid_value(format!(
                "split rule '{}' has no slow restart (`/restart<n>`): it cannot plan slow accumulation",
                split.scheme()
            )));
        }
        let splits = if k == 0 {
            vec![Split { chunks: Vec::new() }; s]
        } else {
            match split.scheme().rule() {
                None => Plan::unsplit(preset, k, fast),
                Some(rule) => rule.plan_splits(k, s, fast),
            }
        };
        Ok(Plan { k, fast, split, splits })
    }

    /// §3.1: fast, one chain over K rounded up to 16; slow, consecutive slow_chunk-element chains.
    fn unsplit(preset: &Preset, k: usize, fast: bool) -> Vec<Split> {
        let all = [0..k];
        let chunks = if fast {
            vec![Chunk { ranges: vec![0..k], len: k.div_ceil(16) * 16 }]
        } else {
            let c = preset.slow_chunk().unwrap_or(k); // present: checked by Plan::new
            cut(&all, k.div_ceil(c) * c, c)
        };
        vec![Split { chunks }]
    }

    /// K of the plan.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Fast accumulation?
    pub fn fast(&self) -> bool {
        self.fast
    }
    /// The split configuration.
    pub fn split(&self) -> SplitK {
        self.split
    }
    /// The splits, in partial order p_0 .. p_(S-1).
    pub fn splits(&self) -> &[Split] {
        &self.splits
    }

    /// Combine the partials p_0 .. p_(S-1) in fp32 round-to-nearest-even by the plan's scheme (§3.2, §3.3).
    /// Every `+` below is one IEEE fp32 addition (Rust's f32 `+` rounds to nearest even, no flush to zero).
    pub fn combine(&self, p: &[f32]) -> f32 {
        combine(self.split.scheme(), p)
    }
}

/// The fp32 combination of split partials by the scheme's rule (§3.2, §3.3): serial and contiguous
/// ((p0 + p1) + p2) + ...; pairwise with h = ceil(S/2), slot_i = p_i + p_(i+h) if i + h <= S - 2 else p_i, result
/// (((p_(S-1) + slot_0) + slot_1) + ...) + slot_(h-1). S = 1: p_0 as is; none: +0.
pub fn combine(scheme: Scheme, p: &[f32]) -> f32 {
    match (p.len(), scheme.rule()) {
        (1, _) => p[0],
        (_, Some(rule)) => rule.combine(p),
        (_, None) => crate::rule::combine(crate::rule::Order::Serial, p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::Range;

    fn ranges(p: &Plan) -> Vec<Vec<(Vec<Range<usize>>, usize)>> {
        p.splits().iter().map(|s| s.chunks.iter().map(|c| (c.ranges.clone(), c.len)).collect()).collect()
    }

    #[test]
    fn interleaved_examples() {
        // docs/reference.md §3.2 examples (exact).
        let ada = Preset::ada();
        let p = Plan::new(&ada, 80, true, SplitK::new(3, Scheme::Serial).unwrap()).unwrap();
        assert_eq!(ranges(&p), vec![vec![(vec![0..64], 64)], vec![(vec![64..80], 64)], vec![]]);
        let p = Plan::new(&ada, 200, true, SplitK::new(3, Scheme::Serial).unwrap()).unwrap();
        assert_eq!(
            ranges(&p),
            vec![vec![(vec![0..64, 192..200], 128)], vec![(vec![64..128], 128)], vec![(vec![128..192], 128)]]
        );
        let p = Plan::new(&ada, 65, true, SplitK::new(2, Scheme::Pairwise).unwrap()).unwrap();
        assert_eq!(ranges(&p), vec![vec![(vec![0..64], 64)], vec![(vec![64..65], 64)]]);
        // Slow, S = 2, K = 512: split0 chunks (tiles 0,2), (4,6); split1 (1,3), (5,7).
        let p = Plan::new(&ada, 512, false, SplitK::new(2, Scheme::Serial).unwrap()).unwrap();
        assert_eq!(
            ranges(&p),
            vec![
                vec![(vec![0..64, 128..192], 128), (vec![256..320, 384..448], 128)],
                vec![(vec![64..128, 192..256], 128), (vec![320..384, 448..512], 128)],
            ]
        );
    }

    #[test]
    fn contiguous_examples() {
        // docs/reference.md §3.3 examples (exact).
        let h = Preset::hopper();
        let lens = |k: usize, s: usize| -> Vec<usize> {
            let p = Plan::new(&h, k, true, SplitK::new(s, Scheme::Contiguous).unwrap()).unwrap();
            p.splits().iter().map(|sp| sp.chunks.iter().map(|c| c.real_len()).sum()).collect()
        };
        assert_eq!(lens(512, 2), vec![256, 256]);
        assert_eq!(lens(640, 3), vec![256, 256, 128]);
        assert_eq!(lens(768, 4), vec![256, 256, 256, 0]);
        assert_eq!(lens(1152, 2), vec![640, 512]);
        let p = Plan::new(&h, 200, true, SplitK::new(2, Scheme::Contiguous).unwrap()).unwrap();
        assert_eq!(ranges(&p), vec![vec![(vec![0..128], 128)], vec![(vec![128..200], 128)]]);
        // Slow: every 128-wide tile is its own chain.
        let p = Plan::new(&h, 640, false, SplitK::new(2, Scheme::Contiguous).unwrap()).unwrap();
        assert_eq!(p.splits()[0].chunks.len(), 3);
        assert_eq!(p.splits()[1].chunks.len(), 2);
    }

    #[test]
    fn unsplit_slow_chunks() {
        let p = Plan::new(&Preset::ada(), 300, false, SplitK::NONE).unwrap();
        assert_eq!(ranges(&p), vec![vec![(vec![0..128], 128), (vec![128..256], 128), (vec![256..300], 128)]]);
    }

    #[test]
    fn pairwise_expansions() {
        // docs/reference.md §3.2: the pairwise expansions, written out by the same index rule as `combine`.
        fn order(s: usize) -> String {
            let h = s.div_ceil(2);
            let mut acc = format!("p{}", s - 1);
            for i in 0..h {
                let slot = if i + h <= s - 2 { format!("(p{}+p{})", i, i + h) } else { format!("p{i}") };
                acc = format!("({acc}+{slot})");
            }
            acc
        }
        assert_eq!(order(2), "(p1+p0)");
        assert_eq!(order(3), "((p2+p0)+p1)");
        assert_eq!(order(4), "((p3+(p0+p2))+p1)");
        assert_eq!(order(5), "(((p4+(p0+p3))+p1)+p2)");
        assert_eq!(order(6), "(((p5+(p0+p3))+(p1+p4))+p2)");
        assert_eq!(order(8), "((((p7+(p0+p4))+(p1+p5))+(p2+p6))+p3)");
        // The numeric combinator adds in that order. p = [2^-24, 1, 2^-24]: pairwise (p2 + p0) + p1 =
        // 2^-23 + 1 (exact); serial (p0 + p1) + p2 = 1 + 2^-24 (a tie, to even: 1) + 2^-24 = 1.
        let e = 2f32.powi(-24);
        assert_eq!(combine(Scheme::Pairwise, &[e, 1.0, e]), 1.0 + 2f32.powi(-23));
        assert_eq!(combine(Scheme::Serial, &[e, 1.0, e]), 1.0);
        // p = [2^-24, 2^-24, 1]: pairwise (p2 + p0) + p1 = 1; serial (p0 + p1) + p2 = 2^-23 + 1.
        assert_eq!(combine(Scheme::Pairwise, &[e, e, 1.0]), 1.0);
        assert_eq!(combine(Scheme::Serial, &[e, e, 1.0]), 1.0 + 2f32.powi(-23));
    }

    #[test]
    fn validation_order() {
        use crate::error::Category;
        let b200 = Preset::b200_mma_sync();
        let e = Plan::new(&b200, 64, false, SplitK::NONE).unwrap_err();
        assert!(e.message().contains("slow accumulation"));
        assert_eq!(e.category(), Category::UnsupportedFeature);
        // A split is cut by its rule's slow restart, whatever the preset.
        assert!(Plan::new(&b200, 64, false, SplitK::new(2, Scheme::Serial).unwrap()).is_ok());
        let rule = SplitRule::parse("interleaved32/serial").unwrap();
        let e = Plan::new(&Preset::ada(), 64, false, SplitK::new(2, Scheme::Rule(rule)).unwrap()).unwrap_err();
        assert!(e.message().contains("no slow restart"), "{e}");
        assert!(SplitK::new(0, Scheme::None).is_err());
        assert!(SplitK::new(1, Scheme::Serial).is_err());
        assert!(SplitK::new(3, Scheme::None).is_err());
    }
}
