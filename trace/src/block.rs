//! The block step re-executed one operation at a time (docs/reference.md §2.2, §2.3): what set the block exponent,
//! each term's exact and aligned value, the exact and aligned sums, the normalisation and the late fp32 addition.

// This re-execution shares no code with `chain.rs` beyond the decode tables: it works on exact values (`Exact`), so
// that a disagreement between the two shows up in the tests that compare a trace's final bits with the call's.

use super::exact::Exact;
use super::Addition;
use mmaemu_model::format::{Class, Format};
use mmaemu_model::nonfinite::{Cause, NonfiniteSum};
use mmaemu_model::preset::{BlockRounding, CEntry, Preset};

/// One product of a block.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    /// Position in the chain (0-based).
    pub pos: usize,
    /// The k index of A and B, or None for zero padding.
    pub k: Option<usize>,
    /// A's code.
    pub a: u8,
    /// B's code.
    pub b: u8,
    /// ep = e(a) + e(b) of a nonzero finite product (None: a zero product, no part in the maximum).
    pub ep: Option<i32>,
    /// The exact product a * b.
    pub exact: Exact,
    /// The product truncated toward zero to the block grid.
    pub kept: Exact,
    /// exact - kept: what the alignment dropped.
    pub dropped: Exact,
}

/// What set the block exponent E (§2.2 step 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpSource {
    /// The product at this chain position (the first one reaching the maximum).
    Product(usize),
    /// The incoming accumulator c (early-c presets only).
    Accumulator,
    /// The preset's floor min_exp.
    MinExp,
}

/// One block step.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Block number within the chain.
    pub index: usize,
    /// The incoming accumulator.
    pub c_in: f32,
    /// The largest product exponent of the block (None: no nonzero product).
    pub ep_max: Option<i32>,
    /// floor(log2|c|) when c takes part (early c, c nonzero).
    pub ec: Option<i32>,
    /// The block exponent E.
    pub e: i32,
    /// What set E.
    pub source: ExpSource,
    /// The grid exponent g = E - frac: terms are truncated to multiples of 2^g.
    pub g: i32,
    /// The products (padding positions are left out; `padding` counts them).
    pub terms: Vec<Term>,
    /// Zero-padding positions of the block.
    pub padding: usize,
    /// Early c: c exact, kept and dropped (None for late c or c = 0).
    pub c_term: Option<(Exact, Exact, Exact)>,
    /// The exact sum of the products (and of c, early c) before any truncation.
    pub exact_sum: Exact,
    /// The sum of the aligned terms (exact, a multiple of 2^g).
    pub aligned_sum: Exact,
    /// The normalisation grid exponent: the sum is truncated (or, nearest-even presets, rounded) to multiples of
    /// 2^grid_out.
    pub grid_out: Option<i32>,
    /// The normalised block value d (fp32).
    pub d: f32,
    /// aligned_sum - d: what the normalisation dropped (negative where a nearest-even preset rounded up).
    pub norm_dropped: Exact,
    /// Late c: the fp32 addition d + c.
    pub late_add: Option<Addition>,
    /// A non-finite operand or c: the IEEE class rule decided the result.
    pub nonfinite: Option<String>,
    /// The block result: the new accumulator.
    pub result: f32,
}

/// The exact value of a finite FP8 code.
pub fn code_value(f: Format, code: u8) -> Exact {
    let d = f.decoded(code);
    if d.class != Class::Finite {
        return Exact::zero();
    }
    Exact::signed(d.neg, d.sig as u128, d.exp as i32 - f.mbits() as i32)
}

/// Re-execute one block step over `pairs` (chain position, k index or None, code a, code b) from `c`.
pub fn block(
    preset: &Preset,
    fa: Format,
    fb: Format,
    index: usize,
    pairs: &[(usize, Option<usize>, u8, u8)],
    c: f32,
) -> Block {
    let (frac, frac_out, min_exp) = (preset.frac() as i32, preset.frac_out() as i32, preset.min_exp());
    let early = preset.c_entry() == CEntry::Early;
    let padding = pairs.iter().filter(|p| p.1.is_none()).count();
    let mut blk = Block {
        index,
        c_in: c,
        ep_max: None,
        ec: None,
        e: min_exp,
        source: ExpSource::MinExp,
        g: min_exp - frac,
        terms: Vec::new(),
        padding,
        c_term: None,
        exact_sum: Exact::zero(),
        aligned_sum: Exact::zero(),
        grid_out: None,
        d: 0.0,
        norm_dropped: Exact::zero(),
        late_add: None,
        nonfinite: None,
        result: 0.0,
    };
    // Non-finite operands or c: the IEEE class of the sum (§2.5).
    let mut sum = NonfiniteSum::with_c(c);
    for &(_, _, a, b) in pairs {
        sum.add(fa.decoded(a), fb.decoded(b));
    }
    if let Some(cause) = sum.cause() {
        let why = match cause {
            Cause::Nan | Cause::InfTimesZero => "a NaN, Inf x 0 or a NaN c: canonical NaN",
            Cause::BothSigns => "infinities of both signs: canonical NaN",
            Cause::PositiveInf => "infinite terms of one sign: +Inf",
            Cause::NegativeInf => "infinite terms of one sign: -Inf",
        };
        let r = cause.value();
        blk.nonfinite = Some(why.into());
        blk.result = r;
        blk.d = r;
        return blk;
    }
    // Steps 1–4: the product exponents, c's exponent, E.
    let mut first_max: Option<(i32, usize)> = None;
    for &(pos, _, a, b) in pairs {
        let (da, db) = (fa.decoded(a), fb.decoded(b));
        if da.class == Class::Finite && db.class == Class::Finite {
            let ep = da.exp as i32 + db.exp as i32;
            if first_max.is_none_or(|(m, _)| ep > m) {
                first_max = Some((ep, pos));
            }
        }
    }
    blk.ep_max = first_max.map(|(m, _)| m);
    let c_exact = Exact::of_f32(c).unwrap_or_else(Exact::zero);
    if early && !c_exact.is_zero() {
        // §2.2 step 3: at least −126, as fp32 holds a subnormal c.
        blk.ec = c_exact.ilog2().map(|e| e.max(-126));
    }
    let mut e = i32::MIN;
    if let Some((m, pos)) = first_max {
        e = m;
        blk.source = ExpSource::Product(pos);
    }
    if let Some(ec) = blk.ec {
        if ec > e {
            e = ec;
            blk.source = ExpSource::Accumulator;
        }
    }
    if e < min_exp {
        e = min_exp;
        blk.source = ExpSource::MinExp;
    }
    blk.e = e;
    let g = e - frac;
    blk.g = g;
    let grid = Exact::new(1, g);
    // Step 5–6: align every term to the grid and sum exactly.
    for &(pos, k, a, b) in pairs {
        if k.is_none() {
            continue;
        }
        let (da, db) = (fa.decoded(a), fb.decoded(b));
        let ep = (da.class == Class::Finite && db.class == Class::Finite).then(|| da.exp as i32 + db.exp as i32);
        let exact = code_value(fa, a).mul(&code_value(fb, b));
        let kept = Exact::new(exact.trunc_units(g), 0).mul(&grid);
        let dropped = exact.sub(&kept);
        blk.exact_sum = blk.exact_sum.add(&exact);
        blk.aligned_sum = blk.aligned_sum.add(&kept);
        blk.terms.push(Term { pos, k, a, b, ep, exact, kept, dropped });
    }
    if early && !c_exact.is_zero() {
        let kept = Exact::new(c_exact.trunc_units(g), 0).mul(&grid);
        let dropped = c_exact.sub(&kept);
        blk.exact_sum = blk.exact_sum.add(&c_exact);
        blk.aligned_sum = blk.aligned_sum.add(&kept);
        blk.c_term = Some((c_exact.clone(), kept, dropped));
    }
    // Step 7–8: to frac_out bits below the sum's own leading bit (never finer than 2^(-126 - frac_out)), truncated
    // or, by a nearest-even preset (frac_out = 23), rounded to nearest with ties to even; a zero result is +0.
    let d = match blk.aligned_sum.ilog2() {
        None => Exact::zero(),
        Some(lead) => {
            let ed = lead.max(-126);
            let go = (ed - frac_out).max(g);
            blk.grid_out = Some(go);
            let units = match preset.rounding() {
                BlockRounding::Truncate => blk.aligned_sum.trunc_units(go),
                BlockRounding::NearestEven => blk.aligned_sum.round_units(go),
            };
            Exact::new(units, go)
        }
    };
    blk.norm_dropped = blk.aligned_sum.sub(&d);
    // d is exactly representable below the fp32 range: at most frac_out + 1 <= 24 significant bits at or above
    // 2^-149 (a carry of the rounding to 2^(ed + 1) is one bit); beyond it, ±Inf as the model's.
    blk.d = d.to_f32();
    if early {
        blk.result = blk.d;
    } else {
        let add = Addition::of("d + c", blk.d, c);
        blk.result = add.result;
        blk.late_add = Some(add);
    }
    blk
}
