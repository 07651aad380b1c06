//! A trace as JSON: every block, product, fp32 addition and epilogue step (never folded), values as exact hex
//! floats and decimals, fp32 values with their bits, and the attribution.

use super::{attribute, text, Addition, Block, ChainTrace, Exact, ExpSource, Trace};
use serde_json::{json, Value};

fn exact_json(x: &Exact) -> Value {
    json!({"hex": x.hex(), "decimal": x.decimal()})
}

fn opt_json(x: &Option<Exact>) -> Value {
    x.as_ref().map_or(Value::Null, exact_json)
}

fn f32_json(x: f32) -> Value {
    let bits = format!("0x{:08X}", x.to_bits());
    match Exact::of_f32(x) {
        Some(e) => {
            json!({"bits": bits, "hex": if e.is_zero() { text::f32_text(x) } else { e.hex() }, "decimal": e.decimal()})
        }
        None => json!({"bits": bits, "hex": x.to_string(), "decimal": x.to_string()}),
    }
}

fn addition_json(a: &Addition) -> Value {
    json!({"label": a.label, "x": f32_json(a.x), "y": f32_json(a.y), "exact": opt_json(&a.exact),
           "result": f32_json(a.result), "error": opt_json(&a.error)})
}

fn block_json(b: &Block) -> Value {
    let source = match b.source {
        ExpSource::Product(p) => json!({"product_at_position": p}),
        ExpSource::Accumulator => json!("accumulator"),
        ExpSource::MinExp => json!("min_exp"),
    };
    let terms: Vec<Value> = b
        .terms
        .iter()
        .map(|t| {
            json!({"position": t.pos, "k": t.k, "a": t.a, "b": t.b, "ep": t.ep, "exact": exact_json(&t.exact),
                   "kept": exact_json(&t.kept), "dropped": exact_json(&t.dropped)})
        })
        .collect();
    json!({
        "index": b.index, "c_in": f32_json(b.c_in), "ep_max": b.ep_max, "ec": b.ec, "e": b.e, "e_source": source,
        "grid_exp": b.g, "terms": terms, "padding": b.padding,
        "c_term": b.c_term.as_ref().map(|(c, k, d)| json!({"exact": exact_json(c), "kept": exact_json(k), "dropped": exact_json(d)})),
        "exact_sum": exact_json(&b.exact_sum), "aligned_sum": exact_json(&b.aligned_sum), "grid_out_exp": b.grid_out,
        "d": f32_json(b.d), "normalisation_dropped": exact_json(&b.norm_dropped),
        "late_add": b.late_add.as_ref().map(addition_json), "nonfinite": b.nonfinite, "result": f32_json(b.result),
    })
}

fn chain_json(c: &ChainTrace) -> Value {
    // Writing a long chain takes seconds (its exact values as text): once the call is interrupted (Ctrl-C in
    // Python, whose caller discards the result) the remaining blocks are written as null.
    let interrupt = mmaemu_model::interrupt::Interrupt::current();
    let blocks: Vec<Value> =
        c.blocks.iter().map(|b| if interrupt.requested() { Value::Null } else { block_json(b) }).collect();
    json!({"ranges": c.ranges.iter().map(|r| [r.start, r.end]).collect::<Vec<_>>(), "len": c.len,
           "start": f32_json(c.start), "blocks": blocks, "result": f32_json(c.result)})
}

/// The trace as JSON: every block and product (never folded).
pub fn trace_json(t: &Trace) -> Value {
    let epilogue = t.epilogue.as_ref().map(|e| {
        json!({
            "acc": f32_json(e.acc), "scale_a": f32_json(e.scale_a), "scale_b": f32_json(e.scale_b),
            "alpha_exact": opt_json(&e.alpha_exact), "alpha": f32_json(e.alpha), "alpha_error": opt_json(&e.alpha_error),
            "product": opt_json(&e.product), "y": f32_json(e.y), "y_error": opt_json(&e.y_error), "y_rule": e.y_rule,
            "out": e.out.name(),
            "scaled": e.scaled.as_ref().map(|(sr, x, y2)| json!({"scale_result": f32_json(*sr), "exact": opt_json(x), "result": f32_json(*y2)})),
            "saturation": e.saturation, "value": e.value.to_string(), "out_error": opt_json(&e.out_error), "nan": e.nan,
            "bits": e.bits,
        })
    });
    let attribution = attribute(t).map(|a| {
        json!({"exact": exact_json(&a.exact), "emulated": exact_json(&a.emulated), "total": exact_json(&a.total),
               "term_truncation": exact_json(&a.term_truncation), "block_truncation": exact_json(&a.block_truncation),
               "combination": exact_json(&a.combination), "epilogue": exact_json(&a.epilogue)})
    });
    json!({
        "op": t.op.name(), "attribution": attribution, "preset": t.preset, "nfma": t.nfma, "frac": t.frac, "frac_out": t.frac_out,
        "min_exp": t.min_exp, "c_early": t.c_early, "rounding": t.rounding.name(), "fmt_a": t.fa.name(), "fmt_b": t.fb.name(), "k": t.k,
        "element": t.element.map(|(i, j)| [i, j]), "fast": t.fast,
        "split": t.split.map(|s| json!({"s": s.s(), "scheme": s.scheme().name()})), "split_source": t.split_source,
        "splits": t.splits.iter().map(|s| json!({"index": s.index, "chains": s.chains.iter().map(chain_json).collect::<Vec<_>>(),
            "additions": s.additions.iter().map(addition_json).collect::<Vec<_>>(), "partial": f32_json(s.partial)})).collect::<Vec<_>>(),
        "combination": t.combination.iter().map(addition_json).collect::<Vec<_>>(),
        "patch": t.patch, "accumulator": f32_json(t.accumulator), "epilogue": epilogue, "notes": t.notes,
        "dtype": t.dtype.name(), "bits": t.bits,
    })
}
