//! Error attribution of one traced element: the exact result of the same FP8 inputs and scales, the emulated result,
//! and their difference split into its sources, whose parts add up exactly to the total.

// With S = Σ a_k·b_k exact and A the fp32 accumulator, every block gives d = c + Σ exact − (term and c drops) −
// (normalisation drop), and every fp32 addition r = x + y + error, so A − S = −drops − normalisation + additions
// (late-c additions count with the block truncation: they are part of the block step). The epilogue gives
// y = A·alpha + e_y, alpha = sa·sb + e_alpha, so y − S·sa·sb = alpha·(A − S) + S·e_alpha + e_y; an FP8 output with
// scale_result multiplies everything by it and adds its own rounding, and the out dtype's rounding comes last.

use super::exact::Exact;
use super::{EpilogueTrace, Trace};

/// The difference between an element's emulated and exact values, split into its sources.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribution {
    /// The exact result: Σ a·b (times scale_a·scale_b and scale_result, with an epilogue).
    pub exact: Exact,
    /// The emulated result (the element's value).
    pub emulated: Exact,
    /// emulated − exact.
    pub total: Exact,
    /// Products (and c) truncated by the block alignment.
    pub term_truncation: Exact,
    /// Block sums cut by the normalisation, and late-c fp32 additions.
    pub block_truncation: Exact,
    /// fp32 additions of chunks and of split partials.
    pub combination: Exact,
    /// alpha's rounding, y's rounding, scale_result's rounding and the out dtype's rounding.
    pub epilogue: Exact,
}

impl Attribution {
    /// The sum of the parts (equal to `total`, exactly).
    pub fn parts_sum(&self) -> Exact {
        self.term_truncation.add(&self.block_truncation).add(&self.combination).add(&self.epilogue)
    }
}

/// Attribute a trace's error. None when a value on the way is not finite (NaN, Inf, a §3.7 patch, saturation to
/// Inf), where no exact difference exists.
pub fn attribute(t: &Trace) -> Option<Attribution> {
    if t.patch.is_some() {
        return None;
    }
    let (mut exact, mut terms, mut block, mut comb) = (Exact::zero(), Exact::zero(), Exact::zero(), Exact::zero());
    for sp in &t.splits {
        for c in &sp.chains {
            exact = exact.add(&Exact::of_f32(c.start)?);
            for b in &c.blocks {
                if b.nonfinite.is_some() {
                    return None;
                }
                for term in &b.terms {
                    exact = exact.add(&term.exact);
                    terms = terms.sub(&term.dropped);
                }
                if let Some((_, _, d)) = &b.c_term {
                    terms = terms.sub(d);
                }
                block = block.sub(&b.norm_dropped);
                if let Some(a) = &b.late_add {
                    block = block.add(a.error.as_ref()?);
                }
            }
        }
        for a in &sp.additions {
            comb = comb.add(a.error.as_ref()?);
        }
    }
    for a in &t.combination {
        comb = comb.add(a.error.as_ref()?);
    }
    finish(exact, terms, block, comb, t.accumulator, t.epilogue.as_ref())
}

/// The attribution from the accumulator's parts (Σ a·b exact, −term drops, −normalisation drops and late-c errors,
/// combination errors) and the epilogue's trace: the epilogue's roundings, and every part scaled by what multiplies
/// it later. None when a value of the epilogue is not finite.
pub(crate) fn finish(
    exact: Exact,
    terms: Exact,
    block: Exact,
    comb: Exact,
    accumulator: f32,
    epilogue: Option<&EpilogueTrace>,
) -> Option<Attribution> {
    let acc = Exact::of_f32(accumulator)?;
    let Some(e) = epilogue else {
        let total = acc.sub(&exact);
        return Some(Attribution {
            exact,
            emulated: acc,
            total,
            term_truncation: terms,
            block_truncation: block,
            combination: comb,
            epilogue: Exact::zero(),
        });
    };
    // y - S·sa·sb = alpha·(A − S) + S·e_alpha + e_y.
    let alpha = Exact::of_f32(e.alpha)?;
    let sab = e.alpha_exact.clone()?;
    let mut scale = alpha.clone();
    let mut epi = exact.mul(e.alpha_error.as_ref()?).add(e.y_error.as_ref()?);
    let mut exact_out = exact.mul(&sab);
    if let Some((sr, x, _)) = &e.scaled {
        // y2 = y·sr + e2: everything so far is multiplied by sr.
        let sr = Exact::of_f32(*sr)?;
        let y2 = Exact::of_f32(e.scaled.as_ref()?.2)?;
        let e2 = y2.sub(x.as_ref()?);
        scale = scale.mul(&sr);
        epi = epi.mul(&sr).add(&e2);
        exact_out = exact_out.mul(&sr);
    }
    epi = epi.add(e.out_error.as_ref()?);
    let emulated = Exact::of_f64(e.value)?;
    let total = emulated.sub(&exact_out);
    Some(Attribution {
        exact: exact_out,
        emulated,
        total,
        term_truncation: terms.mul(&scale),
        block_truncation: block.mul(&scale),
        combination: comb.mul(&scale),
        epilogue: epi,
    })
}
