//! The human forms of a report: `report.md`, the self-contained `report.html` (inline CSS and SVG, no
//! script, no external resource) and the summary `mmaemu report` prints.

mod html;

pub use html::html;

use super::{Report, RowResult};
use mmaemu_harness::status::{ScopeStatus, Status};
use mmaemu_harness::Verdict;
use std::fmt::Write as _;
use std::path::Path;

/// At most this many changes or failures are listed in report.md and report.html (report.json has all).
pub const MAX_LISTED: usize = 300;

const GREEN: &str = "#2e7d32";
const AMBER: &str = "#f9a825";
const RED: &str = "#c62828";
const GREY: &str = "#9e9e9e";
const PALETTE: [&str; 6] = ["#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#558b2f", "#ad1457"];

/// Escape text for XML / HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Escape a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn failures(r: &Report) -> Vec<(&RowResult, &str, String)> {
    let mut out = Vec::new();
    for row in &r.rows {
        for (backend, o) in &row.outcomes {
            if let Verdict::Fail(f) = o {
                out.push((row, backend.as_str(), f.to_string()));
            }
        }
    }
    out
}

fn scopes_with_rows(r: &Report) -> impl Iterator<Item = &ScopeStatus> {
    r.status.scopes.iter().filter(|s| s.counts.hardware + s.counts.model > 0)
}

/// `1 change`, `2 changes`.
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn sci(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x:.3e}")
    }
}

/// The summary printed on stdout.
pub fn summary(r: &Report, dir: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "report written to {}", dir.join("report.{json,md,html}").display());
    for b in &r.backends {
        let _ = writeln!(
            s,
            "{}: {} rows, {} passed, {} failed, {} skipped ({:.1} s)",
            b.name, b.rows, b.passed, b.failed, b.skipped, b.seconds
        );
    }
    // Every preset and profile scope is counted, those without a recorded row too (they are experimental:
    // nothing validates them), so the line never reads as if everything were validated.
    let count = |st: Status| r.status.scopes.iter().filter(|x| x.status == st).count();
    let without_rows = r.status.scopes.iter().filter(|x| x.counts.hardware + x.counts.model == 0).count();
    let _ = writeln!(
        s,
        "status: {} scopes validated, {} experimental ({without_rows} of them without any recorded row), {} failing",
        count(Status::Validated),
        count(Status::Experimental),
        count(Status::Failing)
    );
    if let Some(f) = &r.fuzz {
        let _ = writeln!(s, "fuzz: {} checks x {} cases, {} failures", f.checks.len(), f.cases, f.failures());
    }
    for m in &r.bench {
        let _ = writeln!(s, "bench: {} [{}]: {} MAC/s", m.shape, m.backend, sci(m.macs_per_s));
    }
    match &r.diff {
        Some(d) => {
            let _ = writeln!(
                s,
                "since {} ({}): {} changes, {} regressions",
                d.path,
                d.generated,
                d.changes.len(),
                d.regressions()
            );
            for c in d.changes.iter().filter(|c| c.regression).take(20) {
                let _ =
                    writeln!(s, "  REGRESSION {} {}: {} -> {} ({})", c.kind, c.subject, c.before, c.after, c.change);
            }
        }
        None => {
            let _ = writeln!(s, "no baseline");
        }
    }
    s
}

/// report.md.
pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# mmaemu report\n");
    let _ = writeln!(
        s,
        "Generated {} by mmaemu {} from {}.\n",
        r.generated,
        env!("CARGO_PKG_VERSION"),
        r.inputs.join(", ")
    );
    let _ = writeln!(s, "## Replay\n");
    let _ = writeln!(s, "| backend | rows | passed | failed | skipped | seconds |\n|---|---:|---:|---:|---:|---:|");
    for b in &r.backends {
        let _ =
            writeln!(s, "| {} | {} | {} | {} | {} | {:.1} |", b.name, b.rows, b.passed, b.failed, b.skipped, b.seconds);
    }
    let _ = writeln!(s);
    for b in &r.backends {
        let _ = writeln!(s, "- `{}`: {}", b.name, b.description);
    }
    let _ = writeln!(s);
    if let Some(b) = r.reference() {
        let _ = writeln!(s, "| file | rows | passed | failed | skipped |\n|---|---:|---:|---:|---:|");
        for (f, n, p, x, k) in &b.files {
            let _ = writeln!(s, "| {} | {n} | {p} | {x} | {k} |", cell(f));
        }
        let _ = writeln!(s);
    }
    match &r.diff {
        None => {
            let _ = writeln!(s, "## Changes\n\nNo baseline was given.\n");
        }
        Some(d) => {
            let _ = writeln!(
                s,
                "## Changes since {} ({})\n\n{} changes, **{} regressions**.\n",
                cell(&d.path),
                d.generated,
                d.changes.len(),
                d.regressions()
            );
            if !d.changes.is_empty() {
                let _ =
                    writeln!(s, "| kind | subject | before | after | change | regression |\n|---|---|---|---|---|---|");
                for c in d.changes.iter().take(MAX_LISTED) {
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} | {} | {} | {} |",
                        c.kind,
                        cell(&c.subject),
                        cell(&c.before),
                        cell(&c.after),
                        cell(&c.change),
                        if c.regression { "**yes**" } else { "no" }
                    );
                }
                if d.changes.len() > MAX_LISTED {
                    let _ = writeln!(s, "\n... and {} more (report.json lists all).", d.changes.len() - MAX_LISTED);
                }
                let _ = writeln!(s);
            }
        }
    }
    let fails = failures(r);
    let _ = writeln!(s, "## Failures\n");
    if fails.is_empty() {
        let _ = writeln!(s, "No row fails on any backend.\n");
    } else {
        for (row, backend, msg) in fails.iter().take(MAX_LISTED) {
            let _ = writeln!(s, "- `{backend}` {} `{}`: {}", cell(&row.file), cell(&row.id), cell(msg));
        }
        if fails.len() > MAX_LISTED {
            let _ = writeln!(s, "- ... and {} more", fails.len() - MAX_LISTED);
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "## Status\n\nComputed from {} rows ({} hardware): validated = hardware rows exist and all pass; failing = a \
         hardware row fails; experimental = otherwise (model rows are never evidence).\n",
        r.status.rows, r.status.hardware_rows
    );
    for sc in &r.status.scopes {
        let c = &sc.counts;
        if c.hardware + c.model == 0 {
            if sc.builtin {
                let _ = writeln!(s, "- {} `{}`: experimental (no rows)", sc.kind.name(), sc.name);
            }
            continue;
        }
        let _ = writeln!(
            s,
            "\n### {} `{}`: {}\n\n{} hardware rows ({} passed, {} failed, {} not replayed), {} model rows.\n",
            sc.kind.name(),
            sc.name,
            sc.status.name(),
            c.hardware,
            c.passed,
            c.failed,
            c.skipped,
            c.model
        );
        let _ = writeln!(
            s,
            "| feature | hardware | passed | failed | skipped | model | status |\n|---|---:|---:|---:|---:|---:|---|"
        );
        for f in sc.features.iter().filter(|f| f.counts.hardware + f.counts.model > 0) {
            let _ = writeln!(s, "| {} |", f.cells(cell).join(" | "));
        }
        let missing: Vec<String> = sc.without_hardware().map(|f| f.feature.label()).collect();
        if !missing.is_empty() {
            let _ = writeln!(s, "\nExperimental, no hardware row: {}.", cell(&missing.join(", ")));
        }
    }
    let _ = writeln!(s);
    if let Some(f) = &r.fuzz {
        let _ = writeln!(s, "## Fuzz\n\nSeed {:#x}, {} cases per check.\n", f.seed, f.cases);
        let _ = writeln!(s, "| check | cases | failures | compares |\n|---|---:|---:|---|");
        for c in &f.checks {
            let _ = writeln!(s, "| {} | {} | {} | {} |", cell(&c.name), c.cases, c.failures, cell(&c.what));
        }
        for c in &f.checks {
            for x in &c.first {
                let _ = writeln!(s, "- {}: {}", cell(&c.name), cell(x));
            }
        }
        let _ = writeln!(s);
    }
    if !r.bench.is_empty() {
        let _ = writeln!(s, "## Throughput\n\n| shape | backend | MAC/s | best of | ms |\n|---|---|---:|---:|---:|");
        for m in &r.bench {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.2} |",
                m.shape,
                m.backend,
                sci(m.macs_per_s),
                m.reps,
                m.seconds * 1e3
            );
        }
        let _ = writeln!(s);
    }
    if r.history.len() > 1 {
        let _ = writeln!(
            s,
            "## History\n\n| generated | passed | failed | skipped | fuzz failures |\n|---|---:|---:|---:|---:|"
        );
        for h in &r.history {
            let _ =
                writeln!(s, "| {} | {} | {} | {} | {} |", h.generated, h.passed, h.failed, h.skipped, h.fuzz_failures);
        }
        let _ = writeln!(s);
    }
    s
}
