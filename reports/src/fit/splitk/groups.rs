//! Grouping the fitted rows (GPU, fast/slow, S, label) and each group's verdict from the rules that
//! survive every row of it.

use super::*;

/// Group fitted rows and decide each group's verdict.
pub(super) fn group(rows: &[FitRow]) -> Vec<FitGroup> {
    let mut by: BTreeMap<GroupOrder, Vec<&FitRow>> = BTreeMap::new();
    for r in rows {
        by.entry((r.gpu.clone(), std::cmp::Reverse(r.fast), r.s, r.label.clone())).or_default().push(r);
    }
    by.into_iter().map(|((gpu, fast, s, label), members)| decide((gpu, fast.0, s, label), &members)).collect()
}

fn decide(key: GroupKey, members: &[&FitRow]) -> FitGroup {
    let (gpu, fast, s, label) = key;
    let all: Vec<String> = candidates(fast).iter().map(Rule::name).collect();
    let sets: Vec<BTreeSet<&str>> = members.iter().map(|r| r.survivors.iter().map(String::as_str).collect()).collect();
    let survivors: Vec<String> =
        all.iter().filter(|c| sets.iter().all(|set| set.contains(c.as_str()))).cloned().collect();
    let verdict = match survivors.len() {
        0 => Verdict::None,
        1 => Verdict::Unique,
        _ => Verdict::Ambiguous,
    };
    let discriminating =
        members.iter().zip(&sets).filter(|(_, set)| set.len() < all.len()).map(|(r, _)| r.id.clone()).collect();
    // Survivors with the same layout and the same order expression at this S.
    let mut classes: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for name in &survivors {
        if let Some(rule) = Rule::parse(name) {
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
        closest,
    }
}
