//! `report.html`: one self-contained page (inline CSS and SVG charts, no script, no external resource)
//! with the same sections as `report.md`.

use super::*;

/// One bar of a stacked bar chart: a label and (value, colour, legend name) segments.
struct Bar {
    label: String,
    segments: Vec<(f64, &'static str, String)>,
    note: String,
}

/// A horizontal stacked bar chart (linear scale).
fn hbar(title: &str, bars: &[Bar], legend: &[(&'static str, &str)]) -> String {
    hbar_scaled(title, bars, legend, false)
}

/// A horizontal stacked bar chart; with `log`, a bar's length is log10(1 + its total), shared out among its
/// segments in proportion (counts spanning several decades stay readable).
fn hbar_scaled(title: &str, bars: &[Bar], legend: &[(&'static str, &str)], log: bool) -> String {
    let (label_w, chart_w, row_h, top) = (330.0, 520.0, 18.0, 46.0);
    let scale = |t: f64| if log { (1.0 + t).log10() } else { t };
    let max = bars.iter().map(|b| scale(b.segments.iter().map(|s| s.0).sum::<f64>())).fold(0.0, f64::max).max(1e-9);
    let height = top + row_h * bars.len() as f64 + 12.0;
    let width = label_w + chart_w + 150.0;
    let mut s = svg_open(width, height, title);
    let mut lx = 4.0;
    for (colour, name) in legend {
        let _ = write!(
            s,
            "<rect x=\"{lx}\" y=\"26\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"35\" \
             class=\"l\">{}</text>",
            lx + 14.0,
            esc(name)
        );
        lx += 24.0 + 7.0 * name.len() as f64;
    }
    for (i, b) in bars.iter().enumerate() {
        let y = top + row_h * i as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" class=\"l\" text-anchor=\"end\">{}</text>",
            label_w - 6.0,
            y + 12.0,
            esc(&b.label)
        );
        let mut x = label_w;
        let total: f64 = b.segments.iter().map(|s| s.0).sum();
        let length = chart_w * scale(total) / max;
        for (v, colour, name) in &b.segments {
            let w = if total > 0.0 { length * v / total } else { 0.0 };
            if w > 0.0 {
                let _ = write!(
                    s,
                    "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{colour}\"><title>{}: {}</title></rect>",
                    row_h - 4.0,
                    esc(name),
                    v
                );
            }
            x += w;
        }
        let _ = write!(s, "<text x=\"{:.1}\" y=\"{}\" class=\"l\">{}</text>", x + 4.0, y + 12.0, esc(&b.note));
    }
    s.push_str("</svg>");
    s
}

/// A line chart over history points.
fn lines(title: &str, x: &[String], series: &[(String, Vec<Option<f64>>)], log: bool) -> String {
    let (left, w, h, top) = (80.0, 700.0, 200.0, 30.0);
    let max = series.iter().flat_map(|s| s.1.iter().flatten()).fold(0.0f64, |a, &b| a.max(b)).max(1e-30);
    // Linear from 0, or log10 between a decade-rounded minimum and maximum of the positive values.
    let min_pos = series.iter().flat_map(|s| s.1.iter().flatten()).filter(|v| **v > 0.0).fold(max, |a, &b| a.min(b));
    let (lo, hi) = if log {
        (10f64.powf(min_pos.log10().floor()), 10f64.powf(max.log10().ceil().max(min_pos.log10().floor() + 1.0)))
    } else {
        (0.0, max)
    };
    let frac = |y: f64| {
        if log {
            ((y.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10())).clamp(0.0, 1.0)
        } else {
            y / hi
        }
    };
    let n = x.len().max(2);
    let legend_h = 16.0 * series.len() as f64;
    let height = top + h + 40.0 + legend_h;
    let width = left + w + 20.0;
    let mut s = svg_open(width, height, title);
    let _ = write!(
        s,
        "<line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#555\"/><line x1=\"{left}\" y1=\"{top}\" \
         x2=\"{left}\" y2=\"{}\" stroke=\"#555\"/><text x=\"{}\" y=\"{}\" class=\"l\" text-anchor=\"end\">{}</text>\
         <text x=\"{}\" y=\"{}\" class=\"l\" text-anchor=\"end\">{}</text>",
        top + h,
        left + w,
        top + h,
        top + h,
        left - 4.0,
        top + 8.0,
        sci(hi),
        left - 4.0,
        top + h,
        if log { format!("{} (log)", sci(lo)) } else { "0".into() }
    );
    let px = |i: usize| left + w * i as f64 / (n - 1) as f64;
    for (i, label) in x.iter().enumerate() {
        if i == 0 || i + 1 == x.len() {
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{}\" class=\"l\" text-anchor=\"{}\">{}</text>",
                px(i),
                top + h + 14.0,
                if i == 0 { "start" } else { "end" },
                esc(label)
            );
        }
    }
    for (k, (name, ys)) in series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        let pts: Vec<String> = ys
            .iter()
            .enumerate()
            .filter_map(|(i, y)| y.map(|y| format!("{:.1},{:.1}", px(i), top + h - h * frac(y))))
            .collect();
        let _ =
            write!(s, "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>", pts.join(" "));
        for p in &pts {
            let (cx, cy) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = write!(s, "<circle cx=\"{cx}\" cy=\"{cy}\" r=\"3\" fill=\"{colour}\"/>");
        }
        let ly = top + h + 30.0 + 16.0 * k as f64;
        let _ = write!(
            s,
            "<rect x=\"{left}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"{}\" \
             class=\"l\">{}</text>",
            ly - 9.0,
            left + 14.0,
            ly,
            esc(name)
        );
    }
    s.push_str("</svg>");
    s
}

fn status_colour(s: Status) -> &'static str {
    match s {
        Status::Validated => GREEN,
        Status::Experimental => AMBER,
        Status::Failing => RED,
    }
}

/// report.html: self-contained (inline CSS and SVG).
pub fn html(r: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>mmaemu report {}</title><style>\
         body{{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}}h1{{margin-bottom:4px}}\
         table{{border-collapse:collapse;margin:8px 0 16px}}td,th{{border:1px solid #ccc;padding:3px 8px;\
         font-size:13px;text-align:left}}th{{background:#f3f3f3}}.ok{{color:{GREEN}}}.bad{{color:{RED};\
         font-weight:bold}}.t{{font:bold 14px sans-serif}}.l{{font:11px sans-serif}}svg{{display:block;\
         margin:8px 0 20px}}.muted{{color:#666}}</style></head><body>",
        esc(&r.generated)
    );
    let _ = write!(
        s,
        "<h1>mmaemu report</h1><p class=\"muted\">Generated {} by mmaemu {} from {}.</p>",
        esc(&r.generated),
        env!("CARGO_PKG_VERSION"),
        esc(&r.inputs.join(", "))
    );
    // Headline.
    let regress = r.regressed();
    let _ = write!(
        s,
        "<p class=\"{}\">{}</p>",
        if regress { "bad" } else { "ok" },
        esc(&match &r.diff {
            Some(d) => format!(
                "{} since the baseline of {}, {}",
                plural(d.changes.len(), "change"),
                d.generated,
                plural(d.regressions(), "regression")
            ),
            None => format!(
                "no baseline; {} failing rows, {} fuzz failures",
                r.backends.iter().map(|b| b.failed).sum::<usize>(),
                r.fuzz.as_ref().map_or(0, |f| f.failures())
            ),
        })
    );
    // Replay table.
    s.push_str("<h2>Replay</h2><table><tr><th>backend</th><th>rows</th><th>passed</th><th>failed</th><th>skipped</th><th>seconds</th><th>what</th></tr>");
    for b in &r.backends {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{:.1}</td><td>{}</td></tr>",
            esc(&b.name),
            b.rows,
            b.passed,
            if b.failed > 0 { "bad" } else { "ok" },
            b.failed,
            b.skipped,
            b.seconds,
            esc(&b.description)
        );
    }
    s.push_str("</table>");
    // Rows per file (failures chart).
    if let Some(b) = r.reference() {
        let bars: Vec<Bar> = b
            .files
            .iter()
            .map(|(f, n, p, x, k)| Bar {
                label: f.clone(),
                segments: vec![
                    (*p as f64, GREEN, "passed".into()),
                    (*x as f64, RED, "failed".into()),
                    (*k as f64, GREY, "skipped".into()),
                ],
                note: format!("{n} rows, {x} failed"),
            })
            .collect();
        s.push_str(&hbar(
            "Rows per recording (reference): passed, failed, skipped",
            &bars,
            &[(GREEN, "passed"), (RED, "failed"), (GREY, "skipped")],
        ));
    }
    // Failures.
    let fails = failures(r);
    s.push_str("<h2>Failures</h2>");
    if fails.is_empty() {
        s.push_str("<p class=\"ok\">No row fails on any backend.</p>");
    } else {
        let per_backend: Vec<Bar> = r
            .backends
            .iter()
            .map(|b| Bar {
                label: b.name.clone(),
                segments: vec![(b.failed as f64, RED, "failed".into())],
                note: b.failed.to_string(),
            })
            .collect();
        s.push_str(&hbar("Failing rows per backend", &per_backend, &[(RED, "failed")]));
        s.push_str("<table><tr><th>backend</th><th>file</th><th>row</th><th>failure</th></tr>");
        for (row, backend, msg) in fails.iter().take(MAX_LISTED) {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(backend),
                esc(&row.file),
                esc(&row.id),
                esc(msg)
            );
        }
        s.push_str("</table>");
        if fails.len() > MAX_LISTED {
            let _ = write!(s, "<p>... and {} more (report.json lists all).</p>", fails.len() - MAX_LISTED);
        }
    }
    // Changes.
    if let Some(d) = &r.diff {
        let _ = write!(s, "<h2>Changes since {} ({})</h2>", esc(&d.path), esc(&d.generated));
        if d.changes.is_empty() {
            s.push_str("<p class=\"ok\">No change.</p>");
        } else {
            s.push_str("<table><tr><th>kind</th><th>subject</th><th>before</th><th>after</th><th>change</th><th>regression</th></tr>");
            for c in d.changes.iter().take(MAX_LISTED) {
                let _ = write!(
                    s,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
                    c.kind,
                    esc(&c.subject),
                    esc(&c.before),
                    esc(&c.after),
                    esc(&c.change),
                    if c.regression { "bad" } else { "ok" },
                    if c.regression { "yes" } else { "no" }
                );
            }
            s.push_str("</table>");
        }
    }
    // Status.
    let _ = write!(
        s,
        "<h2>Status</h2><p>Computed from {} rows ({} hardware): validated = hardware rows exist and all pass; \
         failing = a hardware row fails; experimental = otherwise.</p>",
        r.status.rows, r.status.hardware_rows
    );
    let scope_bars: Vec<Bar> = r
        .status
        .scopes
        .iter()
        .filter(|sc| sc.builtin || sc.counts.hardware + sc.counts.model > 0)
        .map(|sc| {
            let n = |st: Status| sc.features.iter().filter(|f| f.status == st).count() as f64;
            Bar {
                label: format!("{} {}", sc.kind.name(), sc.name),
                segments: vec![
                    (n(Status::Validated), GREEN, "validated".into()),
                    (n(Status::Experimental), AMBER, "experimental".into()),
                    (n(Status::Failing), RED, "failing".into()),
                ],
                note: sc.status.name().into(),
            }
        })
        .collect();
    s.push_str(&hbar(
        "Features per preset and profile, by status",
        &scope_bars,
        &[(GREEN, "validated"), (AMBER, "experimental"), (RED, "failing")],
    ));
    let row_bars: Vec<Bar> = scopes_with_rows(r)
        .map(|sc| Bar {
            label: format!("{} {}", sc.kind.name(), sc.name),
            segments: vec![
                (sc.counts.passed as f64, GREEN, "passed".into()),
                (sc.counts.failed as f64, RED, "failed".into()),
                (sc.counts.skipped as f64, GREY, "not replayed".into()),
            ],
            note: format!("{} hardware rows", sc.counts.hardware),
        })
        .collect();
    s.push_str(&hbar(
        "Hardware rows per preset and profile",
        &row_bars,
        &[(GREEN, "passed"), (RED, "failed"), (GREY, "not replayed")],
    ));
    for sc in scopes_with_rows(r) {
        let bars: Vec<Bar> = sc
            .features
            .iter()
            .filter(|f| f.counts.hardware + f.counts.model > 0)
            .map(|f| Bar {
                label: f.feature.label(),
                segments: vec![
                    (f.counts.passed as f64, status_colour(f.status), "hardware rows passed".into()),
                    (f.counts.failed as f64, RED, "hardware rows failed".into()),
                    (f.counts.skipped as f64, GREY, "hardware rows not replayed".into()),
                ],
                note: format!("{} ({} hw, {} model)", f.status.name(), f.counts.hardware, f.counts.model),
            })
            .collect();
        s.push_str(&hbar_scaled(
            &format!("Hardware rows per feature (log scale): {} {} ({})", sc.kind.name(), sc.name, sc.status.name()),
            &bars,
            &[(GREEN, "validated"), (AMBER, "experimental"), (RED, "failed"), (GREY, "not replayed")],
            true,
        ));
    }
    // Fuzz.
    if let Some(f) = &r.fuzz {
        let _ = write!(s, "<h2>Fuzz</h2><p>Seed {:#x}, {} cases per check.</p><table><tr><th>check</th><th>cases</th><th>failures</th><th>compares</th></tr>", f.seed, f.cases);
        for c in &f.checks {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
                esc(&c.name),
                c.cases,
                if c.failures > 0 { "bad" } else { "ok" },
                c.failures,
                esc(&c.what)
            );
        }
        s.push_str("</table>");
    }
    // Throughput.
    if !r.bench.is_empty() {
        s.push_str("<h2>Throughput</h2>");
        let mut backends: Vec<String> = Vec::new();
        for m in &r.bench {
            if !backends.contains(&m.backend) {
                backends.push(m.backend.clone());
            }
        }
        let bars: Vec<Bar> = r
            .bench
            .iter()
            .map(|m| {
                let k = backends.iter().position(|b| *b == m.backend).unwrap_or(0);
                Bar {
                    label: format!("{} [{}]", m.shape, m.backend),
                    segments: vec![(m.macs_per_s, PALETTE[k % PALETTE.len()], "MAC/s".into())],
                    note: format!("{} MAC/s", sci(m.macs_per_s)),
                }
            })
            .collect();
        let legend: Vec<(&'static str, &str)> =
            backends.iter().enumerate().map(|(k, b)| (PALETTE[k % PALETTE.len()], b.as_str())).collect();
        s.push_str(&hbar("Throughput by shape and backend (multiply-accumulates per second)", &bars, &legend));
    }
    // History.
    if r.history.len() > 1 {
        s.push_str("<h2>History</h2>");
        let x: Vec<String> = r.history.iter().map(|h| h.generated.clone()).collect();
        let rows = vec![
            ("passed".to_string(), r.history.iter().map(|h| Some(h.passed as f64)).collect()),
            ("failed".to_string(), r.history.iter().map(|h| Some(h.failed as f64)).collect()),
            ("skipped".to_string(), r.history.iter().map(|h| Some(h.skipped as f64)).collect()),
        ];
        s.push_str(&lines("Reference replay: rows passed, failed, skipped", &x, &rows, false));
        // Per backend, the geometric mean of its shapes' MAC/s at each point (keys `<shape> | <backend>`).
        let mut backends: Vec<String> = Vec::new();
        for h in &r.history {
            for k in h.throughput.keys() {
                let b = k.rsplit(" | ").next().unwrap_or(k).to_string();
                if !backends.contains(&b) {
                    backends.push(b);
                }
            }
        }
        let series: Vec<(String, Vec<Option<f64>>)> = backends
            .iter()
            .map(|b| {
                let ys = r
                    .history
                    .iter()
                    .map(|h| {
                        let v: Vec<f64> = h
                            .throughput
                            .iter()
                            .filter(|(k, x)| k.rsplit(" | ").next() == Some(b.as_str()) && **x > 0.0)
                            .map(|(_, x)| x.ln())
                            .collect();
                        (!v.is_empty()).then(|| (v.iter().sum::<f64>() / v.len() as f64).exp())
                    })
                    .collect();
                (b.clone(), ys)
            })
            .collect();
        if !series.is_empty() {
            s.push_str(&lines(
                "Throughput per backend (MAC/s, geometric mean over the benchmark shapes)",
                &x,
                &series,
                true,
            ));
        }
    }
    s.push_str("</body></html>\n");
    s
}

/// The opening of a chart: the `<svg>` element of that size, its accessible title and the title drawn on top.
fn svg_open(width: f64, height: f64, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} \
         {height}\" role=\"img\"><title>{}</title><text x=\"4\" y=\"16\" class=\"t\">{}</text>",
        esc(title),
        esc(title)
    )
}
