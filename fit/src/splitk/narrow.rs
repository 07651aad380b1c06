//! The survivors of a group's rows, found row by row: each row is replayed only under the candidates every earlier row
//! of its group still accepts, the shortest K first, and each candidate on the first compared output, then on the
//! first few, before the rest.

// Rows of one group share S and accumulation, so a row of longer K sees every distinction a shorter one sees (its
// canonical classes refine the shorter row's: `SplitRule::canonical`), and a candidate of the longer row is alive when
// its canonical form for each earlier row is among that row's survivors. A rule reproduces every row of the group
// exactly when every row lists its canonical form, as if each row had been replayed under its whole space. A row's list
// holds its survivors among the candidates still alive when it was replayed; where that leaves the group without a
// survivor, the rows are replayed again each under its whole space, so that the mixture and the closest rules
// (`groups.rs`) see every row's own survivors. Rows with the same operands share their chains.

use super::replay::{plan, ChainCache};
use super::*;
use std::collections::HashSet;

/// One row's result: its survivors (canonical for its K and S) and how many candidates it was replayed under.
pub(super) struct Survivors {
    pub rules: Vec<SplitRule>,
    pub replayed: usize,
}

// Compared outputs of the middle stage: the outputs (0, j < 8) a designed call separates its survivors on
// (`experiments.rs`), so that on a large call only the rules it was designed to keep are replayed on every output.
use super::DESIGNED_OUTPUTS as FEW;

/// The chain caches of rows sharing operands: the first compared output alone, the first [`FEW`], and every compared
/// output.
struct Caches<'p> {
    one: ChainCache<'p>,
    few: ChainCache<'p>,
    all: ChainCache<'p>,
}

impl<'p> Caches<'p> {
    fn new(p: &'p Prepared) -> Self {
        let prefix = |n: usize| ChainCache::with_pairs(&p.codes, p.codes.pairs[..n.min(p.codes.pairs.len())].to_vec());
        Caches { one: prefix(1), few: prefix(FEW), all: ChainCache::new(&p.codes) }
    }
}

/// Replay one row under the candidates `alive` admits: every layout of its space with an admitted order is replayed on
/// the first compared output, the layouts left on the first [`FEW`] (where the row has more), and those left on every
/// output.
fn replay_row(p: &Prepared, caches: &mut Caches<'_>, alive: &dyn Fn(&SplitRule) -> bool) -> Survivors {
    let (k, s, fast) = (p.codes.k, p.s, p.fast);
    let mut rules = Vec::new();
    let mut replayed = 0;
    for layout in layouts(k, s, fast) {
        let orders: Vec<Order> = Order::ALL.into_iter().filter(|&order| alive(&SplitRule { layout, order })).collect();
        if orders.is_empty() {
            continue;
        }
        replayed += orders.len();
        // `prepare` planned the largest layout of the row: every smaller one plans.
        let Ok(plan) = plan(&p.codes.preset, layout, k, s, fast) else { continue };
        let first = caches.one.partials(&plan);
        let mut orders: Vec<Order> = orders.into_iter().filter(|&o| prefix_agrees(p, &first, o)).collect();
        if !orders.is_empty() && p.codes.pairs.len() > FEW {
            let few = caches.few.partials(&plan);
            orders.retain(|&o| prefix_agrees(p, &few, o));
        }
        if orders.is_empty() {
            continue;
        }
        let partials = caches.all.partials(&plan);
        rules.extend(
            orders.into_iter().filter(|&o| reproduces(p, &partials, o)).map(|order| SplitRule { layout, order }),
        );
    }
    Survivors { rules, replayed }
}

/// The survivors of the rows of one group (same S and accumulation), in the rows' order.
pub(super) fn group_survivors(rows: &[&Prepared]) -> Vec<Survivors> {
    let keys: Vec<Vec<u8>> = rows.iter().map(|p| operand_key(&p.codes, p.s, p.fast)).collect();
    // The first row of each operand key owns the chain caches of every row sharing them.
    let mut owner: BTreeMap<&[u8], usize> = BTreeMap::new();
    for (i, key) in keys.iter().enumerate() {
        owner.entry(key.as_slice()).or_insert(i);
    }
    let mut caches: BTreeMap<usize, Caches<'_>> = BTreeMap::new();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| (rows[i].codes.k, rows[i].codes.pairs.len(), i));
    let mut out: Vec<Option<Survivors>> = (0..rows.len()).map(|_| None).collect();
    let mut done: Vec<(usize, HashSet<SplitRule>)> = Vec::new();
    for &i in &order {
        let p = rows[i];
        let c = caches.entry(owner[keys[i].as_slice()]).or_insert_with(|| Caches::new(rows[owner[keys[i].as_slice()]]));
        let alive =
            |rule: &SplitRule| done.iter().all(|(j, set)| set.contains(&rule.canonical(rows[*j].codes.k, p.s, p.fast)));
        let found = replay_row(p, c, &alive);
        done.push((i, found.rules.iter().copied().collect()));
        let empty = found.rules.is_empty();
        out[i] = Some(found);
        if empty {
            // No rule reproduces the rows so far: every row on its own whole space (module comment); the first row
            // replayed already was.
            let first = order[0];
            return (0..rows.len())
                .map(|j| match out[j].take().filter(|_| j == first) {
                    Some(found) => found,
                    None => {
                        let owner = owner[keys[j].as_slice()];
                        let c = caches.entry(owner).or_insert_with(|| Caches::new(rows[owner]));
                        replay_row(rows[j], c, &|_| true)
                    }
                })
                .collect();
        }
    }
    out.into_iter().map(|s| s.unwrap_or(Survivors { rules: Vec::new(), replayed: 0 })).collect()
}
