//! A trace as JSON: every block, product, fp32 addition and epilogue step (never folded), values as exact hex
//! floats and decimals, fp32 values with their bits, and the attribution.

use super::{attribute, text, Addition, Block, ChainTrace, Exact, ExpSource, Trace};
use mmaemu_model::error::{Category, Error, Result};
use serde_json::{json, Value};

/// A JSON object whose values are moved in (`json!` would copy every nested value through `to_value`: for a long
/// trace, seconds of copying and freeing).
macro_rules! obj {
    ($($key:literal: $value:expr),* $(,)?) => {
        Value::Object(serde_json::Map::from_iter([$(($key.to_string(), Value::from($value))),*]))
    };
}

fn exact_json(x: &Exact) -> Value {
    obj!("hex": x.hex(), "decimal": x.decimal())
}

fn opt_json(x: &Option<Exact>) -> Value {
    x.as_ref().map_or(Value::Null, exact_json)
}

fn f32_json(x: f32) -> Value {
    let bits = format!("0x{:08X}", x.to_bits());
    match Exact::of_f32(x) {
        Some(e) => {
            obj!("bits": bits, "hex": if e.is_zero() { text::f32_text(x) } else { e.hex() }, "decimal": e.decimal())
        }
        None => obj!("bits": bits, "hex": x.to_string(), "decimal": x.to_string()),
    }
}

fn addition_json(a: &Addition) -> Value {
    obj!("label": a.label.as_str(), "x": f32_json(a.x), "y": f32_json(a.y), "exact": opt_json(&a.exact),
           "result": f32_json(a.result), "error": opt_json(&a.error))
}

fn block_json(b: &Block) -> Value {
    let source = match b.source {
        ExpSource::Product(p) => obj!("product_at_position": p),
        ExpSource::Accumulator => json!("accumulator"),
        ExpSource::MinExp => json!("min_exp"),
    };
    let terms: Vec<Value> = b
        .terms
        .iter()
        .map(|t| {
            obj!("position": t.pos, "k": t.k, "a": t.a, "b": t.b, "ep": t.ep, "exact": exact_json(&t.exact),
                   "kept": exact_json(&t.kept), "dropped": exact_json(&t.dropped))
        })
        .collect();
    obj!(
        "index": b.index, "c_in": f32_json(b.c_in), "ep_max": b.ep_max, "ec": b.ec, "e": b.e, "e_source": source,
        "grid_exp": b.g, "terms": terms, "padding": b.padding,
        "c_term": b.c_term.as_ref().map(|(c, k, d)| obj!("exact": exact_json(c), "kept": exact_json(k), "dropped": exact_json(d))),
        "exact_sum": exact_json(&b.exact_sum), "aligned_sum": exact_json(&b.aligned_sum), "grid_out_exp": b.grid_out,
        "d": f32_json(b.d), "normalisation_dropped": exact_json(&b.norm_dropped),
        "late_add": b.late_add.as_ref().map(addition_json), "nonfinite": b.nonfinite.as_deref(), "result": f32_json(b.result),
    )
}

fn chain_json(c: &ChainTrace) -> Value {
    // Writing a long chain takes seconds (its exact values as text): once the call is interrupted (Ctrl-C in
    // Python, whose caller discards the result) the remaining blocks are written as null.
    let interrupt = mmaemu_model::interrupt::Interrupt::current();
    let blocks: Vec<Value> =
        c.blocks.iter().map(|b| if interrupt.requested() { Value::Null } else { block_json(b) }).collect();
    obj!("ranges": c.ranges.iter().map(|r| json!([r.start, r.end])).collect::<Vec<_>>(), "len": c.len,
           "start": f32_json(c.start), "blocks": blocks, "result": f32_json(c.result))
}

/// The trace as JSON: every block and product (never folded).
pub fn trace_json(t: &Trace) -> Value {
    let epilogue = t.epilogue.as_ref().map(|e| {
        obj!(
            "acc": f32_json(e.acc), "scale_a": f32_json(e.scale_a), "scale_b": f32_json(e.scale_b),
            "alpha_exact": opt_json(&e.alpha_exact), "alpha": f32_json(e.alpha), "alpha_error": opt_json(&e.alpha_error),
            "product": opt_json(&e.product), "y": f32_json(e.y), "y_error": opt_json(&e.y_error), "y_rule": e.y_rule.as_deref(),
            "out": e.out.name(),
            "scaled": e.scaled.as_ref().map(|(sr, x, y2)| obj!("scale_result": f32_json(*sr), "exact": opt_json(x), "result": f32_json(*y2))),
            "saturation": e.saturation.as_deref(), "value": e.value.to_string(), "out_error": opt_json(&e.out_error), "nan": e.nan.as_deref(),
            "bits": e.bits,
        )
    });
    let attribution = attribute(t).map(|a| {
        obj!("exact": exact_json(&a.exact), "emulated": exact_json(&a.emulated), "total": exact_json(&a.total),
               "term_truncation": exact_json(&a.term_truncation), "block_truncation": exact_json(&a.block_truncation),
               "combination": exact_json(&a.combination), "epilogue": exact_json(&a.epilogue))
    });
    obj!(
        "op": t.op.name(), "attribution": attribution, "preset": t.preset.as_str(), "nfma": t.nfma, "frac": t.frac, "frac_out": t.frac_out,
        "min_exp": t.min_exp, "c_early": t.c_early, "rounding": t.rounding.name(), "fmt_a": t.fa.name(), "fmt_b": t.fb.name(), "k": t.k,
        "element": t.element.map(|(i, j)| json!([i, j])), "fast": t.fast,
        "split": t.split.map(|s| obj!("s": s.s(), "scheme": s.scheme().name())), "split_source": t.split_source.as_deref(),
        "splits": t.splits.iter().map(|s| obj!("index": s.index, "chains": s.chains.iter().map(chain_json).collect::<Vec<_>>(),
            "additions": s.additions.iter().map(addition_json).collect::<Vec<_>>(), "partial": f32_json(s.partial))).collect::<Vec<_>>(),
        "combination": t.combination.iter().map(addition_json).collect::<Vec<_>>(),
        "patch": t.patch.as_deref(), "accumulator": f32_json(t.accumulator), "epilogue": epilogue, "notes": t.notes.clone(),
        "dtype": t.dtype.name(), "bits": t.bits,
    )
}

/// The trace as JSON text, for a caller that may be interrupted (Ctrl-C in Python): the text is written in pieces
/// between which the interrupt is read, and once it is seen the call ends in
/// [`Category::Interrupted`](mmaemu_model::error::Category) without writing the rest.
pub fn trace_text(t: Trace) -> Result<String> {
    let interrupt = mmaemu_model::interrupt::Interrupt::current();
    let v = trace_json(&t);
    let mut out = Checked { text: Vec::new(), interrupt: interrupt.clone(), checked: 0 };
    // Writing a Value into memory fails only where `Checked` saw the interrupt.
    let written = interrupt.check().and_then(|()| {
        serde_json::to_writer(&mut out, &v).map_err(|_| Error::new(Category::Interrupted, "the call was interrupted"))
    });
    // A long trace's values take as long to free as to build (a second for K = 262,144): they are freed on a thread
    // of their own, and the caller has its text, or its interruption, at once.
    if t.k >= BACKGROUND_FREE_K {
        std::thread::spawn(move || drop((t, v)));
    }
    written?;
    // serde_json writes UTF-8.
    Ok(String::from_utf8(out.text).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// The K from which a trace is freed on a thread of its own.
const BACKGROUND_FREE_K: usize = 1 << 14;

/// The text being written; the interrupt is read every [`CHECK_BYTES`].
struct Checked {
    text: Vec<u8>,
    interrupt: mmaemu_model::interrupt::Interrupt,
    checked: usize,
}

const CHECK_BYTES: usize = 1 << 20;

impl std::io::Write for Checked {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.text.len() >= self.checked + CHECK_BYTES {
            self.checked = self.text.len();
            if self.interrupt.requested() {
                return Err(std::io::Error::other("the call was interrupted"));
            }
        }
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
