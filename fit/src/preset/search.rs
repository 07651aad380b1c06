//! The search of `mmaemu fit preset`: the core candidates against the fast chains, then, per core survivor, the
//! floors (min_exp) and the slow-chunk lengths consistent with the rows, derived rather than enumerated.

use super::sample::{floor_slack, Sample};
use super::space;
use mmaemu_model::{Chain, Format, Preset, PresetSpec};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The floors (min_exp) consistent with the rows: every value at or below `up_to`, and the values of `also`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinExpSet {
    /// Every floor at or below this one (None: none).
    pub up_to: Option<i32>,
    /// Further single floors, ascending, above `up_to`.
    pub also: Vec<i32>,
}

impl MinExpSet {
    /// The highest floor in the set.
    pub fn max(&self) -> Option<i32> {
        self.also.last().copied().or(self.up_to)
    }
    /// Whether `v` is in the set.
    pub fn contains(&self, v: i32) -> bool {
        self.up_to.is_some_and(|u| v <= u) || self.also.contains(&v)
    }
    /// The union of two sets.
    pub fn union(&self, o: &MinExpSet) -> MinExpSet {
        let up_to = match (self.up_to, o.up_to) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let mut also: Vec<i32> =
            self.also.iter().chain(&o.also).copied().filter(|&v| up_to.is_none_or(|u| v > u)).collect();
        also.sort_unstable();
        also.dedup();
        MinExpSet { up_to, also }
    }
    /// The floors in both sets.
    pub fn intersect(&self, o: &MinExpSet) -> MinExpSet {
        let up_to = self.up_to.zip(o.up_to).map(|(a, b)| a.min(b));
        let mut also: Vec<i32> = self
            .also
            .iter()
            .chain(&o.also)
            .copied()
            .filter(|&v| up_to.is_none_or(|u| v > u) && self.contains(v) && o.contains(v))
            .collect();
        // A floor of one set's run above the other's is in both where the other holds it singly.
        also.sort_unstable();
        also.dedup();
        MinExpSet { up_to, also }
    }
    /// Whether the set holds no floor.
    pub fn is_empty(&self) -> bool {
        self.up_to.is_none() && self.also.is_empty()
    }
    /// In words: `<= -20`, `-5`, `<= -20, -3`.
    pub fn describe(&self) -> Vec<String> {
        self.up_to.map(|u| format!("<= {u}")).into_iter().chain(self.also.iter().map(|v| v.to_string())).collect()
    }
}

/// The slow-chunk lengths consistent with the rows: the values of `values`, and every length from `from` on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkSet {
    /// Single lengths, ascending, below `from`.
    pub values: Vec<u32>,
    /// Every length at or above this one (None: none).
    pub from: Option<u32>,
}

impl ChunkSet {
    /// Every length (no unsplit slow row).
    pub fn all() -> ChunkSet {
        ChunkSet { values: Vec::new(), from: Some(1) }
    }
    /// No length.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty() && self.from.is_none()
    }
    /// The one length, if there is exactly one.
    pub fn single(&self) -> Option<u32> {
        match (self.values.as_slice(), self.from) {
            ([v], None) => Some(*v),
            _ => None,
        }
    }
    /// The least length.
    pub fn least(&self) -> Option<u32> {
        self.values.first().copied().or(self.from)
    }
    /// Whether `l` is in the set.
    pub fn contains(&self, l: u32) -> bool {
        self.values.contains(&l) || self.from.is_some_and(|f| l >= f)
    }
    /// The union of two sets.
    pub fn union(&self, o: &ChunkSet) -> ChunkSet {
        let from = match (self.from, o.from) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut values: Vec<u32> =
            self.values.iter().chain(&o.values).copied().filter(|&v| from.is_none_or(|f| v < f)).collect();
        values.sort_unstable();
        values.dedup();
        ChunkSet { values, from }
    }
    /// In words, runs of consecutive lengths as intervals: `128`, `96..=100`, `>= 513`.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.values.len() {
            let mut j = i;
            while j + 1 < self.values.len() && self.values[j + 1] == self.values[j] + 1 {
                j += 1;
            }
            out.push(if i == j {
                self.values[i].to_string()
            } else {
                format!("{}..={}", self.values[i], self.values[j])
            });
            i = j + 1;
        }
        out.extend(self.from.map(|f| format!(">= {f}")));
        out
    }
}

/// A core candidate that reproduces every fast chain, with the floors and slow chunks that keep it so.
#[derive(Clone, Debug, PartialEq)]
pub struct Survivor {
    /// The core (min_exp at the set's representative, slow_chunk None).
    pub spec: PresetSpec,
    /// The consistent floors.
    pub min_exp: MinExpSet,
    /// The consistent slow-chunk lengths.
    pub slow: ChunkSet,
}

/// The chains of one preset, one per format pair.
pub(crate) struct Chains([Option<Chain>; 4]);

impl Chains {
    pub fn new(spec: &PresetSpec) -> Option<Chains> {
        let p = Preset::custom(spec.clone()).ok()?;
        let mut c: [Option<Chain>; 4] = [None, None, None, None];
        for fa in Format::ALL {
            for fb in Format::ALL {
                c[slot(fa, fb)] = Some(Chain::new(&p, fa, fb));
            }
        }
        Some(Chains(c))
    }
    pub fn of(&self, s: &Sample) -> &Chain {
        self.0[slot(s.fa, s.fb)].as_ref().expect("every pair is built")
    }
}

fn slot(fa: Format, fb: Format) -> usize {
    (fa == Format::E5m2) as usize * 2 + (fb == Format::E5m2) as usize
}

/// Whether `spec` reproduces every sample (stopping at the first miss); slow samples under chunks of `chunk`.
pub(crate) fn reproduces(spec: &PresetSpec, samples: &[&Sample], chunk: Option<usize>) -> bool {
    let Some(chains) = Chains::new(spec) else { return false };
    samples.iter().all(|s| s.eval(chains.of(s), chunk) == s.want)
}

/// The core survivors over the fast chains, in the order of [`space::candidates`]. Where every chain is on the grid
/// of [`Sample::on_grid`], one candidate per arithmetic ([`space::canonical`]) is run and its verdict holds for all.
pub(crate) fn cores(all: &[PresetSpec], fast: &[&Sample]) -> Vec<PresetSpec> {
    if !fast.iter().all(|s| s.on_grid()) {
        return all.par_iter().filter(|s| reproduces(s, fast, None)).cloned().collect();
    }
    let mut first: HashMap<_, usize> = HashMap::new();
    let mut runs: Vec<usize> = Vec::new();
    let class: Vec<usize> = all
        .iter()
        .enumerate()
        .map(|(i, s)| {
            *first.entry(space::core(&space::canonical(s))).or_insert_with(|| {
                runs.push(i);
                runs.len() - 1
            })
        })
        .collect();
    let pass: Vec<bool> = runs.par_iter().map(|&i| reproduces(&all[i], fast, None)).collect();
    all.iter().zip(class).filter(|&(_, c)| pass[c]).map(|(s, _)| s.clone()).collect()
}

/// What the floor searches of one fit share: the verdict of each arithmetic ([`space::canonical`] of a core at a
/// floor) where every chain is a GEMM's (two cores of one arithmetic give its chains the same bits), and the slack of
/// each chain per block size for a late c (it reads the products' exponents alone).
#[derive(Default)]
pub(crate) struct FloorCache {
    gemm: bool,
    verdicts: Mutex<HashMap<(space::Core, i32), bool>>,
    late_slack: Mutex<HashMap<u32, Arc<Vec<Option<i32>>>>>,
}

impl FloorCache {
    pub fn new(fast: &[&Sample]) -> FloorCache {
        FloorCache { gemm: fast.iter().all(|s| s.gemm()), ..FloorCache::default() }
    }
}

/// The floors consistent with the fast chains for a core that reproduces them at [`space::MIN_EXP_BASE`]: every floor
/// at or below the lowest block exponent the chains meet (it takes part in no maximum), or on a GEMM's chains at or
/// below [`space::harmless_floor`], then each higher one tried on the chains it may change.
pub(crate) fn floors(core: &PresetSpec, fast: &[&Sample], cache: &FloorCache) -> MinExpSet {
    let Some(chains) = Chains::new(core) else { return MinExpSet { up_to: None, also: Vec::new() } };
    let early = core.c_entry == mmaemu_model::CEntry::Early;
    let compute = || -> Vec<Option<i32>> {
        fast.iter().map(|s| floor_slack(chains.of(s), s, core.nfma as usize, early, None)).collect()
    };
    let slack = if early {
        Arc::new(compute())
    } else {
        let mut map = cache.late_slack.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(core.nfma).or_insert_with(|| Arc::new(compute())).clone()
    };
    let mut low = slack.iter().flatten().min().copied().unwrap_or(space::MIN_EXP_TOP);
    if cache.gemm {
        // Every floor up to the harmless one gives a GEMM's chains the bits the base floor gives them.
        low = low.max(space::harmless_floor(core));
    }
    // The chains that a floor above `low` may change, lowest first: a wrong floor fails on them at once. A floor at
    // or below a chain's slack leaves it as the base floor does, which the core reproduces: it is not run.
    let mut order: Vec<usize> = (0..fast.len()).collect();
    order.sort_by_key(|&i| slack[i].unwrap_or(i32::MAX));
    let sorted: Vec<&Sample> = order.iter().map(|&i| fast[i]).collect();
    let slacks: Vec<i32> = order.iter().map(|&i| slack[i].unwrap_or(i32::MAX)).collect();
    let verdict = |v: i32| {
        let spec = PresetSpec { min_exp: v, ..core.clone() };
        let run = || reproduces(&spec, &sorted[..slacks.partition_point(|&l| l < v)], None);
        if !cache.gemm {
            return run();
        }
        let key = (space::core(&space::canonical(&spec)), v);
        if let Some(&known) = cache.verdicts.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return known;
        }
        let pass = run();
        cache.verdicts.lock().unwrap_or_else(|e| e.into_inner()).insert(key, pass);
        pass
    };
    let also: Vec<i32> = (low + 1..=space::MIN_EXP_TOP).into_par_iter().filter(|&v| verdict(v)).collect();
    MinExpSet { up_to: Some(low), also }
}

/// Whether the survivors are block-scaled presets: MXFP8 rows keep either block-scaled survivors alone or none
/// (`fit`), so one tells for all.
pub(crate) fn block_scaled(survivors: &[Survivor]) -> bool {
    survivors.first().is_some_and(|s| s.spec.scale_block.is_some())
}

/// The products per block of an MXFP8 instruction: its blocks are the 32-element scale blocks (docs/reference.md
/// §2.8; a preset's `scale_block` equals its nfma).
pub const MX_BLOCK: u32 = 32;

/// A core survivor that also reproduces the MXFP8 chains `mx` as a block-scaled preset (scale_block = nfma = 32),
/// with the floors both its fast chains and `mx` allow; None when it cannot take the scales or no floor reproduces
/// them. The MXFP8 chains' blocks are scaled (their exponents reach 2^-280), so every floor above their lowest block
/// exponent is tried one by one on the chains it may change, as [`floors`] does.
pub(crate) fn scaled(s: &Survivor, mx: &[&Sample]) -> Option<Survivor> {
    if s.spec.nfma != MX_BLOCK {
        return None;
    }
    let spec = PresetSpec { scale_block: Some(MX_BLOCK), ..s.spec.clone() };
    // The slack is read along the chain no floor touches: a floor below every scaled product's exponent.
    let chains = Chains::new(&PresetSpec { min_exp: space::SCALED_PRODUCT_FLOOR, ..spec.clone() })?;
    let early = spec.c_entry == mmaemu_model::CEntry::Early;
    let slack: Vec<i32> =
        mx.iter().map(|x| floor_slack(chains.of(x), x, MX_BLOCK as usize, early, None).unwrap_or(i32::MAX)).collect();
    let low = slack.iter().copied().min().unwrap_or(space::MIN_EXP_TOP).min(space::MIN_EXP_TOP);
    let mut order: Vec<usize> = (0..mx.len()).collect();
    order.sort_by_key(|&i| slack[i]);
    let sorted: Vec<&Sample> = order.iter().map(|&i| mx[i]).collect();
    let slacks: Vec<i32> = order.iter().map(|&i| slack[i]).collect();
    // Every floor at or below `low` takes part in no maximum: one run at `low` stands for them all. A chain the base
    // floor misses is missed by every floor at or below its slack (it computes there as at the base).
    let base = Chains::new(&PresetSpec { min_exp: low, ..spec.clone() })?;
    let missed = sorted.par_iter().zip(&slacks).filter(|(x, _)| x.eval(base.of(x), None) != x.want).map(|(_, &l)| l);
    let above = missed.max();
    let up_to = above.is_none().then_some(low);
    let pass = |v: i32| {
        above.is_none_or(|l| v > l)
            && reproduces(
                &PresetSpec { min_exp: v, ..spec.clone() },
                &sorted[..slacks.partition_point(|&l| l < v)],
                None,
            )
    };
    let also: Vec<i32> = (low + 1..=space::MIN_EXP_TOP).into_par_iter().filter(|&v| pass(v)).collect();
    let min_exp = s.min_exp.intersect(&MinExpSet { up_to, also });
    (!min_exp.is_empty()).then(|| Survivor { spec, min_exp, slow: s.slow.clone() })
}

/// The slow-chunk lengths consistent with the slow chains (one list per row) for a core: row by row, K ascending,
/// every length below K that is still in the set is tried one by one. A length at or above K runs one chunk, zero-padded
/// to its length (docs/reference.md §3.1): those that add no block past K's last (up to K rounded up to nfma) compute
/// as K does, the longer ones as K followed by one all-zero block (a second changes nothing: the first leaves the
/// accumulator on its own grid), so each of the two is tried once.
pub(crate) fn slow_chunks(core: &PresetSpec, rows: &[Vec<&Sample>]) -> ChunkSet {
    let Some(chains) = Chains::new(core) else { return ChunkSet { values: Vec::new(), from: None } };
    let mut rows: Vec<&Vec<&Sample>> = rows.iter().filter(|r| r.first().is_some_and(|s| !s.a.is_empty())).collect();
    rows.sort_by_key(|r| r[0].a.len());
    let nfma = core.nfma.max(1);
    let mut set = ChunkSet::all();
    for row in rows {
        let k = row[0].a.len() as u32;
        let kb = k.div_ceil(nfma).saturating_mul(nfma);
        let pass = |l: u32| row.iter().all(|s| s.eval(chains.of(s), Some(l as usize)) == s.want);
        let mut tries: Vec<u32> = set.values.iter().copied().filter(|&v| v < k).collect();
        if let Some(f) = set.from.filter(|&f| f < k) {
            tries.extend(f..k);
        }
        let mut values: Vec<u32> = tries.into_par_iter().filter(|&l| pass(l)).collect();
        // Lengths K..=kb: one chunk, no block past K's last.
        let near: Vec<u32> = (k..=kb).filter(|&l| set.contains(l)).collect();
        if !near.is_empty() && pass(k) {
            values.extend(near);
        }
        // Lengths above kb: one chunk and at least one all-zero block.
        let far = (set.from.is_some() || set.values.iter().any(|&v| v > kb)) && pass(kb.saturating_add(1));
        let mut from = None;
        if far {
            values.extend(set.values.iter().copied().filter(|&v| v > kb));
            from = set.from.map(|f| f.max(kb.saturating_add(1)));
        }
        values.sort_unstable();
        values.dedup();
        // A run of single lengths that reaches `from` is part of it.
        while let (Some(f), Some(&last)) = (from, values.last()) {
            if last + 1 != f {
                break;
            }
            values.pop();
            from = Some(last);
        }
        set = ChunkSet { values, from };
        if set.is_empty() {
            break;
        }
    }
    set
}
