//! Grouping the fitted rows (GPU, fast/slow, S, label) and each group's verdict from the rules that
//! survive every row of it, or the smallest set of rules that reproduces every row when none does.

// Without a survivor, the fit looks for the fewest rules that together reproduce every row (rules reproducing
// exactly the same rows of the group count as one; a rule whose rows another's contain is never needed): the
// exact search tries two rules, then three, ..., and the verdict is `mixture`, each part naming the rows it
// reproduces and the rows assigned to it (every row to the first part, by rows explained, that reproduces it).
// Unlabelled rows of two schemes (recordings without an algorithm read-back) fall into one group this way and
// come out as two rules. A group with a row no candidate reproduces stays `none`, with `closest`.

use super::*;

/// One rule of a mixture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MixturePart {
    /// The rule (the first in candidate order of those reproducing exactly these rows).
    pub rule: String,
    /// The other rules reproducing exactly the same rows of the group.
    pub equivalent: Vec<String>,
    /// Every row of the group the rule reproduces.
    pub explains: Vec<String>,
    /// The rows assigned to this part: those no earlier part reproduces.
    pub assigned: Vec<String>,
}

/// Group fitted rows and decide each group's verdict.
pub(super) fn group(rows: &[FitRow]) -> Vec<FitGroup> {
    let mut by: BTreeMap<GroupOrder, Vec<&FitRow>> = BTreeMap::new();
    for r in rows {
        by.entry((r.gpu.clone(), std::cmp::Reverse(r.fast), r.s, r.label.clone())).or_default().push(r);
    }
    by.into_iter().map(|((gpu, fast, s, label), members)| decide((gpu, fast.0, s, label), &members)).collect()
}

/// The rows (by index into the group) a rule reproduces.
type RowSet = Vec<bool>;

/// Covers of more than this many candidate combinations are not searched exhaustively.
const SEARCH_LIMIT: u64 = 2_000_000;

fn choose(n: u64, k: u64) -> u64 {
    (0..k).fold(1u64, |acc, i| acc.saturating_mul(n - i) / (i + 1))
}

/// The smallest set of the `classes` (row sets) covering every row, the first in lexicographic order of
/// class indices, and how many sets of that size cover (counted up to 1000). None when the search would
/// exceed [`SEARCH_LIMIT`] combinations before finding one.
fn smallest_cover(classes: &[RowSet], rows: usize) -> Option<(Vec<usize>, usize)> {
    let n = classes.len();
    for k in 1..=n {
        if choose(n as u64, k as u64) > SEARCH_LIMIT {
            return None;
        }
        let mut first = None;
        let mut count = 0usize;
        let mut idx: Vec<usize> = (0..k).collect();
        loop {
            if (0..rows).all(|r| idx.iter().any(|&c| classes[c][r])) {
                first.get_or_insert_with(|| idx.clone());
                count += 1;
                if count >= 1000 {
                    break;
                }
            }
            // The next combination in lexicographic order.
            let Some(i) = (0..k).rev().find(|&i| idx[i] < n - k + i) else { break };
            idx[i] += 1;
            for j in i + 1..k {
                idx[j] = idx[j - 1] + 1;
            }
        }
        if let Some(f) = first {
            return Some((f, count));
        }
    }
    None
}

/// The mixture of a group without survivors, or None when some row has no rule (or the search is too
/// large to be exact).
fn mixture(all: &[String], members: &[&FitRow], sets: &[BTreeSet<&str>]) -> Option<(Vec<MixturePart>, usize)> {
    if sets.iter().any(BTreeSet::is_empty) {
        return None;
    }
    // Rules reproducing the same rows are one class, named by its first rule.
    let mut classes: Vec<(RowSet, Vec<String>)> = Vec::new();
    for rule in all {
        let rows: RowSet = sets.iter().map(|s| s.contains(rule.as_str())).collect();
        if !rows.iter().any(|&x| x) {
            continue;
        }
        match classes.iter_mut().find(|(r, _)| *r == rows) {
            Some((_, names)) => names.push(rule.clone()),
            None => classes.push((rows, vec![rule.clone()])),
        }
    }
    // A class whose rows another class contains is never needed in a smallest cover.
    let contains = |a: &RowSet, b: &RowSet| a.iter().zip(b).all(|(x, y)| *x || !*y);
    let maximal: Vec<&(RowSet, Vec<String>)> =
        classes.iter().filter(|(r, _)| !classes.iter().any(|(o, _)| o != r && contains(o, r))).collect();
    let row_sets: Vec<RowSet> = maximal.iter().map(|(r, _)| r.clone()).collect();
    let (cover, count) = smallest_cover(&row_sets, members.len())?;
    let mut parts: Vec<(&RowSet, &Vec<String>)> = cover.iter().map(|&c| (&maximal[c].0, &maximal[c].1)).collect();
    // The most rows first (ties: candidate order, which the cover's class order already is).
    parts.sort_by_key(|(rows, _)| std::cmp::Reverse(rows.iter().filter(|&&x| x).count()));
    let ids = |keep: &dyn Fn(usize) -> bool| -> Vec<String> {
        members.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(_, r)| r.id.clone()).collect()
    };
    let parts = parts
        .iter()
        .enumerate()
        .map(|(p, (rows, names))| MixturePart {
            rule: names[0].clone(),
            equivalent: names[1..].to_vec(),
            explains: ids(&|i| rows[i]),
            assigned: ids(&|i| rows[i] && !parts[..p].iter().any(|(earlier, _)| earlier[i])),
        })
        .collect();
    Some((parts, count))
}

fn decide(key: GroupKey, members: &[&FitRow]) -> FitGroup {
    let (gpu, fast, s, label) = key;
    // The rules any row names (each row names its survivors in their canonical form for its K and S), and per row
    // the rules of these it accepts.
    let mut pool: Vec<SplitRule> =
        members.iter().flat_map(|r| r.survivors.iter().filter_map(|n| SplitRule::parse(n))).collect();
    pool.sort();
    pool.dedup();
    let all: Vec<String> = pool.iter().map(SplitRule::name).collect();
    let sets: Vec<BTreeSet<&str>> = members
        .iter()
        .map(|r| pool.iter().zip(&all).filter(|(rule, _)| r.accepts(rule)).map(|(_, n)| n.as_str()).collect())
        .collect();
    let survivors: Vec<String> =
        all.iter().filter(|c| sets.iter().all(|set| set.contains(c.as_str()))).cloned().collect();
    let (mixture, mixtures) = match survivors.len() {
        0 => mixture(&all, members, &sets).unwrap_or_default(),
        _ => (Vec::new(), 0),
    };
    let verdict = Verdict::of(survivors.len(), !mixture.is_empty());
    let discriminating = members.iter().filter(|r| r.survivors.len() < r.replayed).map(|r| r.id.clone()).collect();
    // Survivors with the same layout and the same order expression at this S.
    let mut classes: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for name in &survivors {
        if let Some(rule) = SplitRule::parse(name) {
            let layout = format!("{:?}", rule.layout);
            classes.entry((layout, order_expression(rule.order, s))).or_default().push(name.clone());
        }
    }
    let identical = classes.into_values().filter(|c| c.len() > 1).collect();
    let closest = if verdict == Verdict::None {
        let mut ranked: Vec<Closest> = all
            .iter()
            .map(|c| Closest {
                rule: c.clone(),
                failing: members
                    .iter()
                    .zip(&sets)
                    .filter(|(_, set)| !set.contains(c.as_str()))
                    .map(|(r, _)| r.id.clone())
                    .collect(),
            })
            .collect();
        ranked.sort_by_key(|c| c.failing.len());
        ranked.truncate(4);
        ranked
    } else {
        vec![]
    };
    FitGroup {
        gpu,
        fast,
        s,
        label,
        rows: members.iter().map(|r| r.id.clone()).collect(),
        survivors,
        verdict,
        discriminating,
        identical,
        mixture,
        mixtures,
        closest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn row(id: &str, survivors: &[&str]) -> FitRow {
        FitRow {
            id: id.into(),
            file: PathBuf::new(),
            gpu: "G".into(),
            fast: true,
            s: 4,
            label: None,
            recorded: "unknown".into(),
            k: 1024,
            preset: mmaemu_model::Preset::ada(),
            tried: 32,
            replayed: 32,
            survivors: survivors.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn two_schemes_in_one_group_are_a_mixture_of_two_rules() {
        let (ser, pair, tree) = ("interleaved64/serial", "interleaved64/pairwise", "interleaved64/tree");
        let rows = [
            row("a", &[ser]),
            row("b", &[ser, tree]),
            row("c", &[pair]),
            row("d", &[ser, pair, tree]),
            row("e", &[ser]),
        ];
        let g = &group(&rows)[0];
        assert_eq!(g.verdict, Verdict::Mixture);
        assert!(g.survivors.is_empty() && g.closest.is_empty());
        assert_eq!(g.mixture.len(), 2);
        // serial reproduces four rows (tree's two are inside them), pairwise the other.
        assert_eq!((g.mixture[0].rule.as_str(), g.mixture[0].explains.len()), (ser, 4));
        assert_eq!(g.mixture[0].assigned, ["a", "b", "d", "e"]);
        assert_eq!((g.mixture[1].rule.as_str(), g.mixture[1].assigned.clone()), (pair, vec!["c".to_string()]));
        assert_eq!(g.mixture[1].explains, ["c", "d"]);
        assert_eq!(g.mixtures, 1);
    }

    #[test]
    fn a_row_without_a_rule_leaves_the_group_without_a_verdict() {
        let g = &group(&[row("a", &["interleaved64/serial"]), row("b", &[])])[0];
        assert_eq!(g.verdict, Verdict::None);
        assert!(g.mixture.is_empty());
        assert_eq!(g.closest[0].failing, ["b"]);
    }

    #[test]
    fn covers_are_the_smallest() {
        let t = |v: &[u8]| v.iter().map(|&x| x == 1).collect::<RowSet>();
        // {0,1}, {2}, {1,2}, {0}: two classes suffice, first {0,1} + {2}; also {0,1}+{1,2}, {1,2}+{0}.
        let classes = [t(&[1, 1, 0]), t(&[0, 0, 1]), t(&[0, 1, 1]), t(&[1, 0, 0])];
        assert_eq!(smallest_cover(&classes, 3), Some((vec![0, 1], 3)));
        assert_eq!(smallest_cover(&[t(&[1, 1])], 2), Some((vec![0], 1)));
        assert_eq!(smallest_cover(&[t(&[1, 0])], 2), None);
        assert_eq!(choose(5, 2), 10);
    }
}
