//! The trace as text a person reads in a terminal: plan, chains, blocks, additions and epilogue, values as hex floats
//! with decimals; long chains and blocks folded unless asked to unfold.

use super::block::{Block, ExpSource};
use super::exact::Exact;
use super::{Addition, ChainTrace, Trace, TraceOp};
use mmaemu_model::format::Format;
use mmaemu_model::preset::BlockRounding;
use std::fmt::Write as _;

/// Blocks shown at the start and at the end of a folded chain.
pub const FOLD_BLOCKS: (usize, usize) = (2, 1);
/// Terms shown of a folded block.
pub const FOLD_TERMS: usize = 6;

/// An fp32 value: `0x1.8p+1 (3e0)`, `+0`, `-0`, `inf`, `NaN`, with its bits.
pub fn f32_text(x: f32) -> String {
    let bits = x.to_bits();
    match Exact::of_f32(x) {
        Some(e) if e.is_zero() => format!("{}0 [0x{bits:08X}]", if x.is_sign_negative() { "-" } else { "+" }),
        Some(e) => format!("{e} [0x{bits:08X}]"),
        None => format!("{x} [0x{bits:08X}]"),
    }
}

/// An optional exact value.
fn ex(x: &Option<Exact>) -> String {
    x.as_ref().map_or("-".into(), |e| e.to_string())
}

/// An FP8 code with its value.
fn code(f: Format, c: u8) -> String {
    format!("0x{c:02X} ({})", f.to_f64(c))
}

/// k ranges as `0..64, 128..192`.
pub fn ranges_text(r: &[std::ops::Range<usize>]) -> String {
    if r.is_empty() {
        return "padding only".into();
    }
    r.iter().map(|r| format!("{}..{}", r.start, r.end)).collect::<Vec<_>>().join(", ")
}

/// One fp32 addition.
pub fn addition_text(a: &Addition) -> String {
    format!(
        "{}: {} + {} = exact {} -> {} (rounding error {})",
        a.label,
        f32_text(a.x),
        f32_text(a.y),
        ex(&a.exact),
        f32_text(a.result),
        ex(&a.error)
    )
}

fn block_text(s: &mut String, t: &Trace, b: &Block, unfold: bool) {
    let first = b.terms.first().map(|x| x.pos).unwrap_or(0);
    let _ = writeln!(
        s,
        "    block {} ({} products, {} padding; first position {first}): c = {}",
        b.index,
        b.terms.len(),
        b.padding,
        f32_text(b.c_in)
    );
    if let Some(why) = &b.nonfinite {
        let _ = writeln!(s, "      non-finite: {why} -> {}", f32_text(b.result));
        return;
    }
    let src = match b.source {
        ExpSource::Product(p) => {
            let k = b.terms.iter().find(|x| x.pos == p).and_then(|x| x.k);
            format!("the product at k = {} (ep = {})", k.map_or("-".into(), |k| k.to_string()), b.ep_max.unwrap_or(0))
        }
        ExpSource::Accumulator => format!("c (floor(log2|c|) = {})", b.ec.unwrap_or(0)),
        ExpSource::MinExp => format!("the floor min_exp = {}", t.min_exp),
    };
    let _ = writeln!(s, "      E = {} set by {src}; grid 2^{} (E - {})", b.e, b.g, t.frac);
    // Folded, zero products (an operand ±0: no part in E, nothing added) are counted, not listed.
    let listed: Vec<&super::block::Term> = b.terms.iter().filter(|x| unfold || x.ep.is_some()).collect();
    let zeros = b.terms.len() - listed.len();
    let shown = if unfold || listed.len() <= FOLD_TERMS { listed.len() } else { FOLD_TERMS };
    for term in &listed[..shown] {
        let ep = term.ep.map_or("zero product".into(), |e| format!("ep {e}"));
        let _ = writeln!(
            s,
            "      k {:>5}: a {} x b {} ({ep}) = {} -> kept {}, dropped {}",
            term.k.unwrap_or(0),
            code(t.fa, term.a),
            code(t.fb, term.b),
            term.exact,
            term.kept.hex(),
            term.dropped.hex()
        );
    }
    if shown < listed.len() {
        let rest = &listed[shown..];
        let dropped = rest.iter().fold(Exact::zero(), |acc, x| acc.add(&x.dropped));
        let _ = writeln!(s, "      ... {} more products folded (their drops sum to {})", rest.len(), dropped.hex());
    }
    if zeros > 0 {
        let _ = writeln!(s, "      ({zeros} zero products not listed)");
    }
    if let Some((c, kept, dropped)) = &b.c_term {
        let _ = writeln!(s, "      c: {c} -> kept {}, dropped {}", kept.hex(), dropped.hex());
    }
    let _ = writeln!(s, "      exact sum {}; aligned sum {}", b.exact_sum, b.aligned_sum);
    let grid = b.grid_out.map_or("-".into(), |g| format!("2^{g}"));
    let _ = writeln!(
        s,
        "      normalised to {} fraction bits{} (grid {grid}): d = {}, dropped {}",
        t.frac_out,
        if t.rounding == BlockRounding::NearestEven { ", rounded to nearest even" } else { "" },
        f32_text(b.d),
        b.norm_dropped.hex()
    );
    if let Some(a) = &b.late_add {
        let _ = writeln!(s, "      late c: {}", addition_text(a));
    }
    let _ = writeln!(s, "      block result {}", f32_text(b.result));
}

fn chain_text(s: &mut String, t: &Trace, c: &ChainTrace, unfold: bool) {
    let n = c.blocks.len();
    let (head, tail) = FOLD_BLOCKS;
    for (i, b) in c.blocks.iter().enumerate() {
        if !unfold && n > head + tail + 1 && i >= head && i + tail < n {
            if i == head {
                let _ = writeln!(
                    s,
                    "    ... blocks {head}..{} folded ({} blocks; --unfold shows them); accumulator after them {}",
                    n - tail - 1,
                    n - head - tail,
                    f32_text(c.blocks[n - tail - 1].result)
                );
            }
            continue;
        }
        block_text(s, t, b, unfold);
    }
    let _ = writeln!(s, "    chain result {}", f32_text(c.result));
}

/// The whole trace as text; `unfold` shows every block and every product.
pub fn render(t: &Trace, unfold: bool) -> String {
    let mut s = String::new();
    let what = match t.element {
        Some((i, j)) => format!("{} element [{i}, {j}]", t.op.name()),
        None => t.op.name().to_string(),
    };
    let _ = writeln!(
        s,
        "trace of {what}: preset {} (blocks of {}, terms {} / result {} fraction bits, E >= {}, c {})",
        t.preset,
        t.nfma,
        t.frac,
        t.frac_out,
        t.min_exp,
        if t.c_early { "in the alignment" } else { "added in fp32 after the block" }
    );
    let mut plan = format!("formats {} x {}, K = {}", t.fa.name(), t.fb.name(), t.k);
    if let Some(fast) = t.fast {
        plan += if fast { ", fast" } else { ", slow" };
    }
    if let Some(sp) = t.split {
        plan += &format!(", split S = {} ({})", sp.s(), sp.scheme());
    }
    if let Some(src) = &t.split_source {
        plan += &format!(" from {src}");
    }
    let _ = writeln!(s, "  {plan}");
    for note in &t.notes {
        let _ = writeln!(s, "  note: {note}");
    }
    if t.op != TraceOp::Dot {
        let _ = writeln!(s, "plan:");
        for sp in &t.splits {
            let chains: Vec<String> =
                sp.chains.iter().map(|c| format!("[{}] ({} positions)", ranges_text(&c.ranges), c.len)).collect();
            let body = if chains.is_empty() { "no chain: partial +0".into() } else { chains.join(", ") };
            let _ = writeln!(s, "  split {}: {} chain(s): {body}", sp.index, sp.chains.len());
        }
    }
    for sp in &t.splits {
        for (ci, c) in sp.chains.iter().enumerate() {
            let _ = writeln!(
                s,
                "split {} chain {ci} (k {}), from {}:",
                sp.index,
                ranges_text(&c.ranges),
                f32_text(c.start)
            );
            chain_text(&mut s, t, c, unfold);
        }
        if t.op != TraceOp::Dot {
            for a in &sp.additions {
                let _ = writeln!(s, "  split {} {}", sp.index, addition_text(a));
            }
            let _ = writeln!(s, "  partial p{} = {}", sp.index, f32_text(sp.partial));
        }
    }
    if !t.combination.is_empty() {
        let _ = writeln!(s, "combination of the partials:");
        for a in &t.combination {
            let _ = writeln!(s, "  {}", addition_text(a));
        }
    }
    if let Some(p) = &t.patch {
        let _ = writeln!(s, "non-finite inputs: {p}");
    }
    let _ = writeln!(s, "accumulator {}", f32_text(t.accumulator));
    if let Some(e) = &t.epilogue {
        let _ = writeln!(s, "epilogue:");
        let _ = writeln!(
            s,
            "  alpha = RN32(scale_a {} x scale_b {}) = RN32({}) = {} (rounding error {})",
            f32_text(e.scale_a),
            f32_text(e.scale_b),
            ex(&e.alpha_exact),
            f32_text(e.alpha),
            ex(&e.alpha_error)
        );
        let _ = writeln!(
            s,
            "  y = RN32(acc x alpha + (+0)) = RN32({}) = {} (rounding error {})",
            ex(&e.product),
            f32_text(e.y),
            ex(&e.y_error)
        );
        if let Some(r) = &e.y_rule {
            let _ = writeln!(s, "    {r}");
        }
        if let Some((sr, exact, y2)) = &e.scaled {
            let _ = writeln!(s, "  y x scale_result {} = RN32({}) = {}", f32_text(*sr), ex(exact), f32_text(*y2));
        }
        if let Some(sat) = &e.saturation {
            let _ = writeln!(s, "  saturation: {sat}");
        }
        if let Some(nan) = &e.nan {
            let _ = writeln!(s, "  NaN rule: {nan}");
        }
        let _ = writeln!(s, "  to {}: {} (rounding error {})", e.out, e.value, ex(&e.out_error));
    }
    if let Some(a) = super::attribute::attribute(t) {
        let _ = writeln!(s, "error against the exact result {}: {}", a.exact.hex(), a.total);
        for (name, part) in [
            ("term truncation", &a.term_truncation),
            ("block truncation", &a.block_truncation),
            ("chunk and split additions", &a.combination),
            ("epilogue rounding", &a.epilogue),
        ] {
            let _ = writeln!(s, "  {name:<26} {part}");
        }
    }
    let w = t.dtype.width() * 2;
    let _ = writeln!(s, "result 0x{:0w$X} [{}] = {}", t.bits, t.dtype, t.dtype.to_f64(t.bits));
    s
}

/// The first step of the trace that loses something (a product or c truncated by the alignment, a block sum cut
/// by the normalisation, an fp32 addition or an epilogue rounding that is not exact): where a hand check starts.
pub fn first_lossy_step(t: &Trace) -> String {
    for sp in &t.splits {
        for (ci, c) in sp.chains.iter().enumerate() {
            for b in &c.blocks {
                let at = format!("split {} chain {ci} block {} (c = {})", sp.index, b.index, f32_text(b.c_in));
                if let Some(why) = &b.nonfinite {
                    return format!("{at}: non-finite, {why}");
                }
                if let Some(term) = b.terms.iter().find(|x| !x.dropped.is_zero()) {
                    return format!(
                        "{at}: E = {}, grid 2^{}; the product at k = {} loses {} to the alignment",
                        b.e,
                        b.g,
                        term.k.unwrap_or(0),
                        term.dropped.hex()
                    );
                }
                if let Some((_, _, d)) = b.c_term.as_ref().filter(|x| !x.2.is_zero()) {
                    return format!("{at}: E = {}, grid 2^{}; c loses {} to the alignment", b.e, b.g, d.hex());
                }
                if !b.norm_dropped.is_zero() {
                    return format!("{at}: the normalisation drops {} of the block sum", b.norm_dropped.hex());
                }
                if let Some(a) = b.late_add.as_ref().filter(|a| a.error.as_ref().is_some_and(|e| !e.is_zero())) {
                    return format!("{at}: {}", addition_text(a));
                }
            }
        }
        if let Some(a) = sp.additions.iter().find(|a| a.error.as_ref().is_some_and(|e| !e.is_zero())) {
            return format!("split {} {}", sp.index, addition_text(a));
        }
    }
    if let Some(a) = t.combination.iter().find(|a| a.error.as_ref().is_some_and(|e| !e.is_zero())) {
        return format!("combination {}", addition_text(a));
    }
    if let Some(e) = &t.epilogue {
        let nz = |x: &Option<Exact>| x.as_ref().is_some_and(|e| !e.is_zero());
        if nz(&e.alpha_error) {
            return format!("epilogue: alpha = RN32(scale_a x scale_b) rounds by {}", ex(&e.alpha_error));
        }
        if nz(&e.y_error) {
            return format!("epilogue: y = RN32(acc x alpha + (+0)) rounds by {}", ex(&e.y_error));
        }
        if e.saturation.is_some() || nz(&e.out_error) {
            return format!("epilogue: the conversion to {} changes the value by {}", e.out, ex(&e.out_error));
        }
    }
    "every step is exact: start with the block exponents and the final conversion".into()
}
