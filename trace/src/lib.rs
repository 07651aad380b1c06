//! The trace of one output element (docs/reference.md §2–§4 step by step): the plan, every block of every chain, the
//! fp32 additions that combine chains and splits, and the epilogue, as exact values, re-executed apart from the model.

// A trace is a second, slow evaluation of one element that keeps every intermediate value. It uses the same `Preset`
// and `Plan` as the model, but not its arithmetic: blocks are re-executed on exact values (`block.rs`), fp32 additions
// and the epilogue's roundings are done by an exact rounding to fp32 (`exact.rs`). Tests compare its final bits with
// the model's and the hardware's.

// Chains hold lists of k ranges; a list holding one range (`vec![0..k]`) is meant, not the indices.
#![allow(clippy::single_range_in_vec_init)]

pub mod attribute;
pub mod block;
pub mod call;
pub mod epilogue;
pub mod exact;
pub mod fast;
pub mod json;
pub mod summary;
pub mod text;

pub use attribute::{attribute, Attribution};
pub use block::{Block, ExpSource, Term};
pub use call::{attribute_scaled_mm, attribute_scaled_mm_with, trace_scaled_mm};
pub use epilogue::EpilogueTrace;
pub use exact::Exact;

use mmaemu_model::accumulate::Operands;
use mmaemu_model::epilogue::{Epilogue, OutDtype};
use mmaemu_model::error::{Error, Result};
use mmaemu_model::format::Format;
use mmaemu_model::nonfinite::{Cause, NonfiniteSum};
use mmaemu_model::plan::{Chunk, Plan, Scheme, SplitK};
use mmaemu_model::preset::{BlockRounding, Preset};
use std::ops::Range;

/// One IEEE fp32 addition with its exact sum and rounding error.
#[derive(Clone, Debug, PartialEq)]
pub struct Addition {
    /// What is added (`p0 + p1`, `r2`, `d + c`).
    pub label: String,
    /// Left operand.
    pub x: f32,
    /// Right operand.
    pub y: f32,
    /// The exact sum (None when an operand is not finite).
    pub exact: Option<Exact>,
    /// RN32 of the sum.
    pub result: f32,
    /// result - exact: the rounding error (None when not finite).
    pub error: Option<Exact>,
}

impl Addition {
    /// Re-execute `x + y` in fp32: the exact sum rounded once to nearest even; an exact zero sum is +0 unless both
    /// operands are -0 (IEEE round to nearest).
    pub fn of(label: impl Into<String>, x: f32, y: f32) -> Addition {
        let label = label.into();
        match (Exact::of_f32(x), Exact::of_f32(y)) {
            (Some(ex), Some(ey)) => {
                let s = ex.add(&ey);
                let result = if s.is_zero() {
                    if x.is_sign_negative() && y.is_sign_negative() {
                        -0.0
                    } else {
                        0.0
                    }
                } else {
                    s.to_f32()
                };
                let error = Exact::of_f32(result).map(|r| r.sub(&s));
                Addition { label, x, y, exact: Some(s), result, error }
            }
            _ => Addition { label, x, y, exact: None, result: mmaemu_model::chain::canonical_f32(x + y), error: None },
        }
    }
}

/// One chain from its start value over an ordered list of k indices and zero padding.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainTrace {
    /// The real k indices, in chain order.
    pub ranges: Vec<Range<usize>>,
    /// The chain's length with its padding.
    pub len: usize,
    /// The start value (+0 in a GEMM; c in `dot`).
    pub start: f32,
    /// The block steps.
    pub blocks: Vec<Block>,
    /// The chain's result.
    pub result: f32,
}

/// One split: its chains and the fp32 additions that make its partial.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitTrace {
    /// Split number (partial p_index).
    pub index: usize,
    /// The chains (slow chunks), in the order their results are added.
    pub chains: Vec<ChainTrace>,
    /// ((+0 + r0) + r1) + ...: one addition per chain.
    pub additions: Vec<Addition>,
    /// The partial.
    pub partial: f32,
}

/// What a trace is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceOp {
    /// One chain from c (`dot`, recording op `mma`).
    Dot,
    /// The fp32 accumulator of a plan (`accumulate`, recording op `accumulator`).
    Accumulate,
    /// A plan and the epilogue (`gemm`).
    Gemm,
    /// A `scaled_mm` call: its profile's plan and the epilogue.
    ScaledMm,
}

impl TraceOp {
    /// `dot`, `accumulate`, `gemm`, `scaled_mm`.
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Dot => "dot",
            TraceOp::Accumulate => "accumulate",
            TraceOp::Gemm => "gemm",
            TraceOp::ScaledMm => "scaled_mm",
        }
    }
}

/// The trace of one output element.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// What was traced.
    pub op: TraceOp,
    /// The preset.
    pub preset: String,
    /// Block size, term and result fraction bits, floor of E: the preset's block step.
    pub nfma: usize,
    /// Fraction bits of the terms.
    pub frac: u32,
    /// Fraction bits of a block result.
    pub frac_out: u32,
    /// The floor of the block exponent.
    pub min_exp: i32,
    /// Whether c enters early (in the alignment) or late (an fp32 addition).
    pub c_early: bool,
    /// How a block result is rounded to frac_out bits (truncated, or to nearest even).
    pub rounding: BlockRounding,
    /// Operand formats.
    pub fa: Format,
    /// B's format.
    pub fb: Format,
    /// K.
    pub k: usize,
    /// The element (row of A, row of B), when the trace is of a GEMM element.
    pub element: Option<(usize, usize)>,
    /// Fast accumulation (None for `dot`).
    pub fast: Option<bool>,
    /// The split (None for `dot`).
    pub split: Option<SplitK>,
    /// Where the split came from (`scaled_mm`: the decision's source), if known.
    pub split_source: Option<String>,
    /// The splits, each with its chains.
    pub splits: Vec<SplitTrace>,
    /// The fp32 additions of the split combination, in order.
    pub combination: Vec<Addition>,
    /// The non-finite rule (§3.7) when it replaced the accumulator.
    pub patch: Option<String>,
    /// The fp32 accumulator.
    pub accumulator: f32,
    /// The epilogue (gemm, scaled_mm with K > 0).
    pub epilogue: Option<EpilogueTrace>,
    /// The result's bits.
    pub bits: u32,
    /// The result's dtype.
    pub dtype: OutDtype,
    /// Remarks (K = 0, replaced codes).
    pub notes: Vec<String>,
}

/// Re-execute one chain over (position, k, a, b) pairs from `start`.
fn chain(
    preset: &Preset,
    fa: Format,
    fb: Format,
    pairs: &[(usize, Option<usize>, u8, u8)],
    start: f32,
) -> Result<(Vec<Block>, f32)> {
    // The caller's interrupt flag (Ctrl-C in Python), read every 256 blocks.
    let interrupt = mmaemu_model::interrupt::Interrupt::current();
    let mut acc = start;
    let mut blocks = Vec::new();
    for (i, blk) in pairs.chunks(preset.nfma()).enumerate() {
        if i % 256 == 0 {
            interrupt.check()?;
        }
        let b = block::block(preset, fa, fb, i, blk, acc);
        acc = b.result;
        blocks.push(b);
    }
    Ok((blocks, mmaemu_model::chain::canonical_f32(acc)))
}

/// The (position, k, a, b) pairs of a chunk over rows `a` and `b` of length K.
fn chunk_pairs(chunk: &Chunk, a: &[u8], b: &[u8]) -> Vec<(usize, Option<usize>, u8, u8)> {
    let mut out: Vec<(usize, Option<usize>, u8, u8)> = Vec::with_capacity(chunk.len);
    for r in &chunk.ranges {
        for k in r.clone() {
            out.push((out.len(), Some(k), a[k], b[k]));
        }
    }
    while out.len() < chunk.len {
        out.push((out.len(), None, 0, 0));
    }
    out
}

fn base(preset: &Preset, op: TraceOp, fa: Format, fb: Format, k: usize) -> Trace {
    Trace {
        op,
        preset: preset.name().to_string(),
        nfma: preset.nfma(),
        frac: preset.frac(),
        frac_out: preset.frac_out(),
        min_exp: preset.min_exp(),
        c_early: preset.c_entry() == mmaemu_model::preset::CEntry::Early,
        rounding: preset.rounding(),
        fa,
        fb,
        k,
        element: None,
        fast: None,
        split: None,
        split_source: None,
        splits: Vec::new(),
        combination: Vec::new(),
        patch: None,
        accumulator: 0.0,
        epilogue: None,
        bits: 0,
        dtype: OutDtype::Float32,
        notes: Vec::new(),
    }
}

/// The bytes one traced product takes, its padding's too (exact values, the aligned term and its text: measured at
/// about 5.8 KiB on a 2^20-product trace, rounded up).
const TERM_BYTES: u64 = 8 << 10;

/// The bytes one traced split takes besides its products (its chains, partial and additions: measured at about 12 KiB
/// a split on a trace of S = 10^6, rounded up).
const SPLIT_BYTES: u64 = 16 << 10;

/// A trace holds every product of the element's chains and every split: refused above a fixed bound before any is
/// built.
fn check_terms(terms: u64, splits: u64) -> Result<()> {
    let bytes = mmaemu_model::limits::sum(&[
        mmaemu_model::limits::product(&[terms, TERM_BYTES]),
        mmaemu_model::limits::product(&[splits, SPLIT_BYTES]),
    ]);
    mmaemu_model::limits::check_fixed(
        &format!("the trace of one element ({terms} products with padding, {splits} splits)"),
        bytes,
    )
    .map_err(|e| Error::invalid_value(format!("{e}; trace a shorter K or fewer splits")))
}

/// The trace of `dot(preset, fa, fb, a, b, c)` (docs/reference.md §2.7): one chain from c (None: +0).
pub fn trace_dot(preset: &Preset, fa: Format, fb: Format, a: &[u8], b: &[u8], c: Option<f32>) -> Result<Trace> {
    if a.len() != b.len() {
        return Err(Error::invalid_value(format!(
            "a and b must have the same shape [..., K] (no broadcasting): got K = {} and K = {}",
            a.len(),
            b.len()
        )));
    }
    let k = a.len();
    check_terms(k as u64, 1)?;
    let start = c.unwrap_or(0.0);
    let mut t = base(preset, TraceOp::Dot, fa, fb, k);
    let pairs: Vec<_> = (0..k).map(|i| (i, Some(i), a[i], b[i])).collect();
    let (blocks, result) = chain(preset, fa, fb, &pairs, start)?;
    if k == 0 {
        t.notes.push("K = 0: no block step; c is returned unchanged".into());
    }
    let result = if k == 0 { mmaemu_model::chain::canonical_f32(start) } else { result };
    t.splits.push(SplitTrace {
        index: 0,
        chains: vec![ChainTrace { ranges: vec![0..k], len: k, start, blocks, result }],
        additions: Vec::new(),
        partial: result,
    });
    t.accumulator = result;
    t.bits = result.to_bits();
    Ok(t)
}

/// The trace of output (i, j) of a plan over `ops` (docs/reference.md §3.5), then, with `epi`, of the epilogue
/// (§4). Without `epi` the result is the fp32 accumulator (`accumulate`).
pub fn trace_element(
    preset: &Preset,
    plan: &Plan,
    ops: &Operands<'_>,
    i: usize,
    j: usize,
    epi: Option<&Epilogue>,
) -> Result<Trace> {
    ops.check()?;
    if ops.k != plan.k() {
        return Err(Error::invalid_value(format!("the plan is for K = {}, the operands have K = {}", plan.k(), ops.k)));
    }
    let padded = plan.splits().iter().flat_map(|s| &s.chunks).map(|c| c.len as u64).sum();
    check_terms(padded, plan.splits().len() as u64)?;
    if i >= ops.m || j >= ops.n {
        return Err(Error::invalid_value(format!("element ({i}, {j}) is outside the [{}, {}] result", ops.m, ops.n)));
    }
    let k = ops.k;
    let op = if epi.is_some() { TraceOp::Gemm } else { TraceOp::Accumulate };
    let mut t = base(preset, op, ops.fa, ops.fb, k);
    t.element = Some((i, j));
    t.fast = Some(plan.fast());
    t.split = Some(plan.split());
    let ra = &ops.a[i * k..(i + 1) * k];
    let rb = &ops.b[j * k..(j + 1) * k];
    if k == 0 {
        t.notes.push("K = 0: the result is +0 whatever the scales (no epilogue)".into());
        t.dtype = epi.map_or(OutDtype::Float32, |e| e.out);
        return Ok(t);
    }
    // §3.5 step 3: non-finite codes are replaced by 0x00 before the chains run; §3.7 patches the result after.
    let nonfinite = ops.fa.any_nonfinite(ra) || ops.fb.any_nonfinite(rb);
    let clean =
        |f: Format, row: &[u8]| -> Vec<u8> { row.iter().map(|&c| if f.is_nonfinite(c) { 0 } else { c }).collect() };
    let (ca, cb) = (clean(ops.fa, ra), clean(ops.fb, rb));
    if nonfinite {
        t.notes.push("non-finite codes in the row of A or B are replaced by 0x00 for the chains (§3.5 step 3)".into());
    }
    for (si, split) in plan.splits().iter().enumerate() {
        let mut st = SplitTrace { index: si, chains: Vec::new(), additions: Vec::new(), partial: 0.0 };
        for (ci, chunk) in split.chunks.iter().enumerate() {
            let pairs = chunk_pairs(chunk, &ca, &cb);
            let (blocks, result) = chain(preset, ops.fa, ops.fb, &pairs, 0.0)?;
            st.chains.push(ChainTrace { ranges: chunk.ranges.clone(), len: chunk.len, start: 0.0, blocks, result });
            let add =
                Addition::of(if ci == 0 { "+0 + r0".to_string() } else { format!("acc + r{ci}") }, st.partial, result);
            st.partial = add.result;
            st.additions.push(add);
        }
        t.splits.push(st);
    }
    let p: Vec<f32> = t.splits.iter().map(|s| s.partial).collect();
    let (acc, adds) = combine(plan.split().scheme(), &p);
    t.combination = adds;
    t.accumulator = acc;
    if nonfinite {
        let (v, why) = nonfinite_rule(ops.fa, ops.fb, ra, rb);
        t.patch = Some(why);
        t.accumulator = v;
    }
    match epi {
        None => {
            t.bits = mmaemu_model::chain::canonical_f32(t.accumulator).to_bits();
            t.dtype = OutDtype::Float32;
        }
        Some(e) => {
            let et = epilogue::trace(e, t.accumulator);
            t.bits = et.bits;
            t.dtype = e.out;
            t.epilogue = Some(et);
        }
    }
    Ok(t)
}

/// The split combination (§3.2, §3.3) in the order of the split's rule (serial where it has none), with every fp32
/// addition kept: each is labelled by the partials or earlier sums (`s<n>`) it adds.
pub fn combine(scheme: Scheme, p: &[f32]) -> (f32, Vec<Addition>) {
    let order = scheme.rule().map_or(mmaemu_model::rule::Order::Serial, |r| r.order);
    let adds = std::cell::RefCell::new(Vec::new());
    let named: Vec<(f32, String)> = p.iter().enumerate().map(|(i, &x)| (x, format!("p{i}"))).collect();
    let sum = mmaemu_model::rule::combine_with(order, &named, &|x: &(f32, String), y: &(f32, String)| {
        let mut adds = adds.borrow_mut();
        let name = format!("s{}", adds.len());
        let a = Addition::of(format!("{name} = {} + {}", x.1, y.1), x.0, y.0);
        let r = a.result;
        adds.push(a);
        (r, name)
    });
    (sum.map_or(0.0, |(r, _)| r), adds.into_inner())
}

/// §3.7: the accumulator of an output whose row of A or B holds a non-finite code, and why.
pub(crate) fn nonfinite_rule(fa: Format, fb: Format, ra: &[u8], rb: &[u8]) -> (f32, String) {
    let mut sum = NonfiniteSum::default();
    for (&x, &y) in ra.iter().zip(rb) {
        sum.add(fa.decoded(x), fb.decoded(y));
    }
    let cause = sum.cause().unwrap_or(Cause::NegativeInf);
    let why = match cause {
        Cause::Nan => "§3.7: the row of A or B holds a NaN code: the accumulator is NaN",
        Cause::InfTimesZero => "§3.7: some k has Inf x 0: the accumulator is NaN",
        Cause::BothSigns => "§3.7: infinite products of both signs: the accumulator is NaN",
        Cause::PositiveInf => "§3.7: infinite products, all positive: the accumulator is +Inf",
        Cause::NegativeInf => "§3.7: infinite products, all negative: the accumulator is -Inf",
    };
    (cause.value(), why.into())
}
