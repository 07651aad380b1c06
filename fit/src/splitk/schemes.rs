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
            // Candidates: the slow survivors where there are slow groups (they name the restart), else the fast ones.
            let pool: Vec<String> = match slow.first() {
                Some(g) => g.survivors.clone(),
                None => fast.first().map(|g| g.survivors.clone()).unwrap_or_default(),
            };
            let rules: Vec<String> = pool
                .into_iter()
                .filter(|name| {
                    let Some(rule) = SplitRule::parse(name) else { return false };
                    let fast_name = rule.fast().name();
                    slow.iter().all(|g| g.survivors.contains(name))
                        && fast.iter().all(|g| g.survivors.contains(&fast_name))
                })
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
