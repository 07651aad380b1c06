//! Per label, parameter by parameter: what the rows decided of a split rule (ownership, width, order, slow restart),
//! and for each parameter left open, the values that remain and why no row could decide it.

use super::*;

/// One parameter of a label's rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameter {
    /// `ownership`, `width`, `order` or `restart`.
    pub name: &'static str,
    /// The values among the label's surviving rules (one: decided).
    pub values: Vec<String>,
    /// Why it is decided, or why it remains open.
    pub why: String,
}

/// What the rows decided of one label's rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// GPU.
    pub gpu: String,
    /// Label.
    pub label: String,
    /// The rules fitting every row of the label ([`schemes`]).
    pub rules: Vec<String>,
    /// The four parameters.
    pub parameters: Vec<Parameter>,
}

fn distinct(rules: &[SplitRule], f: impl Fn(&SplitRule) -> String) -> Vec<String> {
    let mut v: Vec<String> = rules.iter().map(f).collect();
    v.dedup();
    v.sort();
    v.dedup();
    v
}

fn restart_name(r: &SplitRule) -> String {
    match r.layout.restart {
        None => "undecided".into(),
        Some(Restart::Tiles(n)) => format!("{n} tiles"),
        Some(Restart::Elements(e)) => format!("{e} elements"),
        Some(Restart::Never) => "none".into(),
    }
}

/// Each labelled scheme's parameters, decided or open with the reason.
pub fn decisions(report: &FitReport) -> Vec<Decision> {
    schemes(report)
        .into_iter()
        .map(|f| {
            let rows: Vec<&FitRow> =
                report.rows.iter().filter(|r| r.gpu == f.gpu && r.label.as_deref() == Some(&f.label)).collect();
            let slow = rows.iter().filter(|r| !r.fast).count();
            let s_values: BTreeSet<usize> = rows.iter().map(|r| r.s).collect();
            let rules: Vec<SplitRule> = f.rules.iter().filter_map(|n| SplitRule::parse(n)).collect();
            let open = |name: &str| -> String {
                format!("the {} recorded rows give the same bits under each {name}: an experiment decides", rows.len())
            };
            let why = |values: &[String], reason: String| -> String {
                match values.len() {
                    0 => "no rule reproduces every row of the label".into(),
                    1 => format!("decided by {} rows", rows.len()),
                    _ => reason,
                }
            };
            let ownership = distinct(&rules, |r| r.layout.ownership.name().to_string());
            let width = distinct(&rules, |r| r.layout.width.to_string());
            let order = distinct(&rules, |r| r.order.name().to_string());
            let restart = distinct(&rules, restart_name);
            let exprs: BTreeSet<Vec<String>> = rules
                .iter()
                .map(|r| s_values.iter().map(|&s| order_expression(r.order, s)).collect())
                .collect();
            let order_why = if exprs.len() <= 1 {
                format!(
                    "at the recorded S ({}) these orders add the partials in the same way: only a larger S can tell them \
                     apart",
                    s_values.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
                )
            } else {
                open("order")
            };
            let restart_why = if slow == 0 {
                "no slow row: the restart acts on slow accumulation only, so it changes no result unless a slow split \
                 call is routed to this label"
                    .to_string()
            } else if restart.iter().any(|r| r == "none") {
                "`none` stands for every restart at or past the longest recorded split's own tiles: no recorded slow \
                 row is long enough to show a restart there"
                    .to_string()
            } else {
                open("restart")
            };
            let parameters = vec![
                Parameter { name: "ownership", why: why(&ownership, open("ownership")), values: ownership },
                Parameter {
                    name: "width",
                    why: why(&width, open("tile width") + " (the recorded K are cut into the same chains)"),
                    values: width,
                },
                Parameter { name: "order", why: why(&order, order_why), values: order },
                Parameter { name: "restart", why: why(&restart, restart_why), values: restart },
            ];
            Decision { gpu: f.gpu, label: f.label, rules: f.rules, parameters }
        })
        .collect()
}
