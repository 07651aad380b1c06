//! From groups to schemes: the rules that reproduce every group of one label (one customOption, or one recorded
//! scheme) at every S, fast and slow — what a platform's table maps that label to (`mmaemu platform build --rules`,
//! docs/platform-format.md).

use super::*;

pub use mmaemu_datasets::platform::SchemeFit;

/// The rules of every labelled (GPU, label); unlabelled groups have no scheme to name.
pub fn schemes(report: &FitReport) -> Vec<SchemeFit> {
    let mut keys: Vec<(String, String)> =
        report.groups.iter().filter_map(|g| g.label.clone().map(|l| (g.gpu.clone(), l))).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|(gpu, label)| {
            let groups: Vec<&FitGroup> =
                report.groups.iter().filter(|g| g.gpu == gpu && g.label.as_deref() == Some(&label)).collect();
            let slow: Vec<&FitGroup> = groups.iter().copied().filter(|g| !g.fast).collect();
            let fast: Vec<&FitGroup> = groups.iter().copied().filter(|g| g.fast).collect();
            // Candidates: the slow survivors where there are slow groups (they name the restart), else the fast ones;
            // a rule fits the label when its slow form reproduces every slow row and its fast form every fast row.
            let pool_groups = if slow.is_empty() { &fast } else { &slow };
            let mut pool: Vec<SplitRule> =
                pool_groups.iter().flat_map(|g| g.survivors.iter().filter_map(|n| SplitRule::parse(n))).collect();
            pool.sort();
            pool.dedup();
            let rules: Vec<String> = pool
                .into_iter()
                .filter(|rule| groups.iter().all(|g| report.group_accepts(g, rule)))
                .map(|rule| rule.name())
                .collect();
            let named = Order::from_name(&label);
            let rule = rules
                .iter()
                .find(|r| named.is_some() && SplitRule::parse(r).map(|x| Some(x.order) == named).unwrap_or(false))
                .or(rules.first())
                .cloned();
            SchemeFit { gpu, label, rules, rule }
        })
        .collect()
}
