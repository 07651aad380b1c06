//! The HTML page of `mmaemu attribute --html`: one self-contained file (inline CSS and SVG, no script, no external
//! resource) with the per-source table, the histograms, a map of the error over the outputs and the comparisons.

use super::attribute::{bins, Comparison};
use mmaemu_api::trace::summary::{GemmAttribution, SOURCES};
use mmaemu_reports::report::render::esc;
use std::fmt::Write;

const PALETTE: [&str; 6] = ["#e0e0e0", "#bbdefb", "#64b5f6", "#1e88e5", "#ef6c00", "#c62828"];
const SOURCE_COLOURS: [&str; 4] = ["#1565c0", "#6a1b9a", "#00838f", "#ef6c00"];

fn svg_open(width: f64, height: f64, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} \
         {height}\" role=\"img\"><title>{t}</title><text x=\"4\" y=\"16\" class=\"t\">{t}</text>",
        t = esc(title)
    )
}

/// One bar: its label, its segments (value, colour, name) and a note after it.
type Bar<'a> = (String, Vec<(f64, &'a str, String)>, String);

/// Horizontal stacked bars, scaled to the largest total.
fn hbar(title: &str, bars: &[Bar<'_>], legend: &[(&str, String)]) -> String {
    let (label_w, chart_w, row_h, top) = (230.0, 560.0, 20.0, 48.0);
    let max = bars.iter().map(|b| b.1.iter().map(|s| s.0).sum::<f64>()).fold(0.0, f64::max).max(1e-300);
    let mut s = svg_open(label_w + chart_w + 190.0, top + row_h * bars.len() as f64 + 10.0, title);
    let mut lx = 4.0;
    for (colour, name) in legend {
        let _ = write!(
            s,
            "<rect x=\"{lx}\" y=\"26\" width=\"10\" height=\"10\" fill=\"{colour}\" stroke=\"#999\" stroke-width=\"0.5\"/>\
             <text x=\"{}\" y=\"35\" class=\"l\">{}</text>",
            lx + 14.0,
            esc(name)
        );
        lx += 26.0 + 6.5 * name.len() as f64;
    }
    for (i, (label, segs, note)) in bars.iter().enumerate() {
        let y = top + row_h * i as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" class=\"l\" text-anchor=\"end\">{}</text>",
            label_w - 6.0,
            y + 13.0,
            esc(label)
        );
        let mut x = label_w;
        for (v, colour, name) in segs {
            let w = chart_w * v / max;
            if w > 0.0 {
                let _ = write!(
                    s,
                    "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{colour}\"><title>{}: {v}</title></rect>",
                    row_h - 5.0,
                    esc(name)
                );
            }
            x += w;
        }
        let _ = write!(s, "<text x=\"{:.1}\" y=\"{}\" class=\"l\">{}</text>", x + 4.0, y + 13.0, esc(note));
    }
    s.push_str("</svg>");
    s
}

/// Share of outputs per |part| bin, one bar per source.
fn histograms(r: &GemmAttribution) -> String {
    let names = bins();
    let bars: Vec<_> = r
        .sources
        .iter()
        .map(|src| {
            let segs = src
                .histogram
                .iter()
                .enumerate()
                .map(|(b, &c)| {
                    (c as f64 / r.attributed.max(1) as f64, PALETTE[b], format!("{} ulps: {c} outputs", names[b]))
                })
                .collect();
            (
                src.name.to_string(),
                segs,
                format!("{:.1}% nonzero", 100.0 * src.affected as f64 / r.attributed.max(1) as f64),
            )
        })
        .collect();
    let legend: Vec<_> = names.iter().enumerate().map(|(b, n)| (PALETTE[b], format!("{n} ulps"))).collect();
    hbar("Share of outputs by |part| in ulps of the out dtype", &bars, &legend)
}

/// Mean |part| in ulps per source.
fn means(r: &GemmAttribution) -> String {
    let bars: Vec<_> = r
        .sources
        .iter()
        .enumerate()
        .map(|(i, src)| {
            let colour = if i == 0 { "#424242" } else { SOURCE_COLOURS[i - 1] };
            (
                src.name.to_string(),
                vec![(src.mean_ulps, colour, src.name.to_string())],
                format!("{:.4} (max {:.4})", src.mean_ulps, src.max_ulps),
            )
        })
        .collect();
    hbar("Mean |part| in ulps (largest in brackets)", &bars, &[])
}

/// A map of |total| in ulps over the [M, N] outputs (cells of several outputs show their largest).
fn error_map(r: &GemmAttribution) -> String {
    let (cm, cn) = (r.m.clamp(1, 96), r.n.clamp(1, 96));
    let mut cells = vec![0.0f64; cm * cn];
    for (idx, f) in r.figures.iter().enumerate() {
        let (i, j) = (idx / r.n.max(1), idx % r.n.max(1));
        let c = &mut cells[(i * cm / r.m.max(1)) * cn + j * cn / r.n.max(1)];
        *c = c.max(if f.attributed { f.ulps[0].abs() } else { f64::NAN });
    }
    // The colour scale ends at the 99th percentile of the cells (a few cancelling outputs near zero have errors of
    // many ulps and would wash out the rest); cells above it take the darkest colour.
    let mut finite: Vec<f64> = cells.iter().copied().filter(|v| v.is_finite()).collect();
    finite.sort_by(f64::total_cmp);
    let max = finite.get(finite.len().saturating_sub(1) * 99 / 100).copied().unwrap_or(0.0).max(1e-300);
    let (px, top, left) = ((600.0 / cm.max(cn) as f64).floor().max(2.0), 30.0, 40.0);
    let (w, h) = (left + px * cn as f64 + 200.0, top + px * cm as f64 + 30.0);
    let mut s = svg_open(w, h, "|total error| in ulps over the outputs (rows i down, columns j across)");
    for (c, v) in cells.iter().enumerate() {
        let (ci, cj) = (c / cn, c % cn);
        let colour = if v.is_nan() {
            "#9e9e9e".to_string()
        } else {
            // White to dark red on a square-root scale.
            let t = (v / max).min(1.0).sqrt();
            let g = (255.0 * (1.0 - t)) as u8;
            format!("rgb(255,{g},{})", (g as f64 * 0.9) as u8)
        };
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{px}\" height=\"{px}\" fill=\"{colour}\"><title>{v:.4} ulps</title></rect>",
            left + px * cj as f64,
            top + px * ci as f64
        );
    }
    let lx = left + px * cn as f64 + 16.0;
    for (k, t) in [0.0, 0.25, 0.5, 0.75, 1.0].iter().enumerate() {
        let g = (255.0 * (1.0 - t)) as u8;
        let _ = write!(
            s,
            "<rect x=\"{lx}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"rgb(255,{g},{})\" stroke=\"#999\" stroke-width=\"0.5\"/>\
             <text x=\"{}\" y=\"{}\" class=\"l\">{:.3} ulps</text>",
            top + 18.0 * k as f64,
            (g as f64 * 0.9) as u8,
            lx + 20.0,
            top + 18.0 * k as f64 + 11.0,
            max * t * t
        );
        if k == 4 {
            let _ = write!(s, "<text x=\"{}\" y=\"{}\" class=\"l\">and above</text>", lx + 100.0, top + 83.0);
        }
    }
    let _ = write!(
        s,
        "<rect x=\"{lx}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"#9e9e9e\"/><text x=\"{}\" y=\"{}\" class=\"l\">not finite</text>",
        top + 90.0,
        lx + 20.0,
        top + 101.0
    );
    s.push_str("</svg>");
    s
}

fn table(r: &GemmAttribution) -> String {
    let mut s = String::from(
        "<table><tr><th>source</th><th>outputs affected</th><th>mean |part| (ulps)</th><th>max |part| (ulps)</th>",
    );
    for b in bins() {
        let _ = write!(s, "<th>{}</th>", esc(&b));
    }
    s.push_str("</tr>");
    for src in &r.sources {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{:.2}%</td><td>{:.4}</td><td>{:.4}</td>",
            esc(src.name),
            100.0 * src.affected as f64 / r.attributed.max(1) as f64,
            src.mean_ulps,
            src.max_ulps
        );
        for c in src.histogram {
            let _ = write!(s, "<td>{c}</td>");
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    s
}

fn comparisons(base: &GemmAttribution, cs: &[Comparison]) -> String {
    let mut s = String::from(
        "<h2>Compared variants</h2><table><tr><th>variant</th><th>outputs differing</th><th>first differing</th>",
    );
    for name in &SOURCES[1..] {
        let _ = write!(s, "<th>{} (outputs / mean ulps / largest in)</th>", esc(name));
    }
    s.push_str("</tr>");
    for c in cs {
        let first: Vec<String> = c.first.iter().take(4).map(|(i, j)| format!("({i}, {j})")).collect();
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{} of {}</td><td>{}</td>",
            esc(&c.name),
            c.differ,
            base.outputs,
            first.join(" ")
        );
        for src in &c.by_source {
            let _ = write!(s, "<td>{} / {:.4} / {}</td>", src.0, src.1, src.3);
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    let bars: Vec<_> = cs
        .iter()
        .map(|c| {
            let segs = c
                .by_source
                .iter()
                .zip(&SOURCES[1..])
                .enumerate()
                .map(|(k, (src, name))| (src.3 as f64, SOURCE_COLOURS[k], format!("{name}: {}", src.3)))
                .collect();
            (c.name.clone(), segs, format!("{} differ", c.differ))
        })
        .collect();
    let legend: Vec<_> = SOURCES[1..].iter().enumerate().map(|(k, n)| (SOURCE_COLOURS[k], n.to_string())).collect();
    s += &hbar("Differing outputs by the source that differs most", &bars, &legend);
    s
}

/// The page.
pub fn page(title: &str, base: &GemmAttribution, cs: &[Comparison]) -> String {
    let mut s = String::from(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>mmaemu attribute</title><style>\
         body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}h1{margin-bottom:4px}\
         table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px;\
         font-size:13px;text-align:left}th{background:#f3f3f3}.t{font:bold 14px sans-serif}.l{font:11px sans-serif}\
         svg{display:block;margin:8px 0 20px}.muted{color:#666}</style></head><body>",
    );
    let _ = write!(
        s,
        "<h1>mmaemu attribute</h1><p class=\"muted\">{} — mmaemu {}</p><p>{} outputs, {} attributed; on each, the \
         parts were checked in exact arithmetic to add up to the total (emulated − exact). {} differ from the exact \
         result. Ulps are those of {} at the exact result.</p>",
        esc(title),
        env!("CARGO_PKG_VERSION"),
        base.outputs,
        base.attributed,
        base.inexact,
        base.out
    );
    s += "<h2>Sources</h2>";
    s += &table(base);
    s += &histograms(base);
    s += &means(base);
    s += "<h2>Where</h2>";
    s += &error_map(base);
    if !cs.is_empty() {
        s += &comparisons(base, cs);
    }
    s.push_str("</body></html>\n");
    s
}
