//! Per parameter of a preset document, what the survivors of `mmaemu fit preset` leave of it: one value (decided), or
//! the values still consistent and why — harmless where they provably give the same bits on every GEMM the bundle
//! computes, otherwise open (more experiments are needed).

use super::search::{self, ChunkSet, MinExpSet, Survivor, MX_BLOCK};
use super::space;
use mmaemu_model::PresetSpec;

/// What the rows leave of one parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// One value.
    Decided(String),
    /// Several values, which give the same bits on every GEMM the bundle computes.
    Harmless {
        /// The values still consistent.
        values: Vec<String>,
        /// Why they cannot differ.
        why: String,
    },
    /// Several values that some call would tell apart: more experiments are needed.
    Open {
        /// The values still consistent.
        values: Vec<String>,
        /// Why the rows cannot tell them apart.
        why: String,
    },
}

/// One parameter of docs/preset-format.md and what the fit leaves of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its key in the preset document.
    pub name: &'static str,
    /// Decided, harmless or open.
    pub decision: Decision,
}

impl Param {
    /// Whether more experiments are needed for it.
    pub fn is_open(&self) -> bool {
        matches!(self.decision, Decision::Open { .. })
    }
}

fn distinct<T: PartialEq + ToString>(it: impl Iterator<Item = T>) -> Vec<String> {
    let mut out: Vec<T> = Vec::new();
    for v in it {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out.iter().map(ToString::to_string).collect()
}

const SAME_BITS: &str = "every value gives the recorded bits on every row";

/// What the fit saw of MXFP8 block scales: its chains, and the core survivors before they met them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scales {
    /// MXFP8 chains fitted.
    pub rows: usize,
    /// Core survivors of the unscaled rows.
    pub unscaled: usize,
}

/// Why several values of a block-scaled preset stay open: the equivalences of [`space::canonical`] are an unscaled
/// GEMM's (every product a multiple of 2^-25, c on the products' grid), which block scales break.
const SCALED: &str = "the MXFP8 rows cannot tell them apart, and a block-scaled call moves each block's products \
                      against the accumulator by its scales, where the unscaled GEMM's equivalences do not hold";

/// One core parameter: decided (one value), harmless (several, which every survivor's representative of
/// [`space::canonical`] holds as one, on unscaled GEMMs only: `why` says the equivalence) or open.
fn core_param<T: PartialEq + ToString>(
    name: &'static str,
    survivors: &[Survivor],
    of: impl Fn(&PresetSpec) -> T,
    why: impl FnOnce() -> String,
) -> Param {
    let values = distinct(survivors.iter().map(|s| of(&s.spec)));
    let scaled = search::block_scaled(survivors);
    let decision = if values.len() == 1 {
        Decision::Decided(values[0].clone())
    } else if scaled {
        Decision::Open { values, why: SCALED.into() }
    } else if distinct(survivors.iter().map(|s| of(&space::canonical(&s.spec)))).len() == 1 {
        Decision::Harmless { values, why: why() }
    } else {
        let results = distinct(survivors.iter().map(|s| space::block_result(&s.spec)));
        let why = match name {
            "frac_out" | "rounding" => format!("{SAME_BITS} (block results {})", results.join(", ")),
            _ => SAME_BITS.into(),
        };
        Decision::Open { values, why }
    };
    Param { name, decision }
}

/// The parameters (nfma, frac, frac_out, rounding, min_exp, c_entry, slow_chunk, scale_block) over the survivors
/// (block-scaled ones when MXFP8 rows kept some: `scales`).
pub fn params(survivors: &[Survivor], scales: Scales) -> Vec<Param> {
    if survivors.is_empty() {
        return Vec::new();
    }
    let nfma = core_param("nfma", survivors, |s| s.nfma, String::new);
    let frac = core_param(
        "frac",
        survivors,
        |s| s.frac,
        || {
            let reasons = distinct(survivors.iter().filter_map(|s| space::frac_floor(&s.spec).map(|(_, why)| why)));
            format!("{}: every such frac gives the same bits on every GEMM", reasons.join("; "))
        },
    );
    let c_entry = core_param("c_entry", survivors, |s| s.c_entry.name(), String::new);
    // The block result: frac_out and rounding together, harmless where no survivor's block result ever rounds.
    let exact = || {
        let results = distinct(survivors.iter().map(|s| space::block_result(&s.spec)));
        let widest = survivors
            .iter()
            .map(|s| space::exact_frac_out(s.spec.nfma, s.spec.frac, s.spec.c_entry))
            .max()
            .unwrap_or(0);
        format!(
            "no survivor's block result is ever rounded on a GEMM: each keeps at least the bits of the widest block \
             sum its nfma, frac and c entry can make (at most {widest} fraction bits), so every truncation and \
             nearest even give the same bits (block results {})",
            results.join(", ")
        )
    };
    let mut frac_out = core_param("frac_out", survivors, |s| s.frac_out, exact);
    let mut rounding = core_param("rounding", survivors, |s| s.rounding.name(), exact);
    for p in [&mut frac_out, &mut rounding] {
        if let (Decision::Open { values, .. }, true) = (&p.decision, scaled_exact(survivors)) {
            p.decision = Decision::Harmless { values: values.clone(), why: SCALED_EXACT.into() };
        }
    }
    let min_exp = floor_param(survivors);
    let slow = slow_param(survivors);
    let scale = scale_param(survivors, scales);
    vec![nfma, frac, frac_out, rounding, min_exp, c_entry, slow, scale]
}

/// Why a block-scaled survivor's block result is never rounded ([`scaled_exact`]).
const SCALED_EXACT: &str = "no survivor's block result is ever rounded, block-scaled calls included: each keeps the \
                            bits of the widest block sum its nfma, frac and early c can make, and its grid 2^(E - frac) \
                            never lies below 2^(-126 - frac_out), where a result under 2^-126 is cut (an early c counts \
                            at -126 or more, a zero one at the floor, and every floor less frac is at least -126 - \
                            frac_out), so every truncation and nearest even give the same bits";

/// Whether no block-scaled survivor's block result is ever rounded on any call: its own frac_out holds the widest block
/// sum ([`space::exact_frac_out`], a bound on the terms relative to E that scales do not change), and its grid never
/// lies below 2^(-126 - frac_out), the grid of a result under 2^-126 (§2.2 step 7): with an early c, E is at least
/// -126 (a nonzero c) or the floor (c = +0 is a zero term, §2.8 step 4), so every consistent floor less frac must be
/// -126 - frac_out or more. A late c's E is the products' alone, as low as scales make it.
fn scaled_exact(survivors: &[Survivor]) -> bool {
    survivors.iter().all(|s| {
        let p = &s.spec;
        let lowest = match (s.min_exp.up_to, s.min_exp.also.first()) {
            (None, Some(&v)) => Some(v),
            _ => None,
        };
        p.c_entry == mmaemu_model::CEntry::Early
            && space::exact_frac_out(p.nfma, p.frac, p.c_entry) <= p.frac_out
            && lowest.is_some_and(|v| v.min(-126) - p.frac as i32 >= -126 - p.frac_out as i32)
    })
}

fn scale_param(survivors: &[Survivor], scales: Scales) -> Param {
    let decision = match (scales.rows, search::block_scaled(survivors)) {
        (0, _) => Decision::Harmless {
            values: vec!["none".into()],
            why: "no fitting row carries MXFP8 block scales (bring-up records them where the device takes them); the \
                  fitted preset takes none, so the bundle refuses a block-scaled call instead of computing it"
                .into(),
        },
        (_, true) => Decision::Decided(MX_BLOCK.to_string()),
        (rows, false) => Decision::Open {
            values: vec!["none".into()],
            why: format!(
                "none of the {} core survivors computes the {rows} MXFP8 chains as a block-scaled preset (§2.8: \
                 blocks of {MX_BLOCK} products, each scaled by its two e8m0 codes, at any floor): the block-scaled \
                 instruction lies outside the fit's space",
                scales.unscaled
            ),
        },
    };
    Param { name: "scale_block", decision }
}

fn floor_param(survivors: &[Survivor]) -> Param {
    let set = survivors.iter().skip(1).fold(survivors[0].min_exp.clone(), |a, s| a.union(&s.min_exp));
    // Each survivor's own bound: its frac sets the grid a floor imposes.
    let harmless = survivors.iter().map(|s| space::harmless_floor(&s.spec)).min().unwrap_or(i32::MIN);
    let each_harmless = survivors.iter().all(|s| {
        let bound = match s.spec.scale_block {
            Some(_) => space::SCALED_PRODUCT_FLOOR,
            None => space::harmless_floor(&s.spec),
        };
        s.min_exp.max().is_some_and(|m| m <= bound)
    });
    let scaled = search::block_scaled(survivors);
    let values = set.describe();
    let decision = match (set.up_to, set.also.as_slice()) {
        (None, [v]) => Decision::Decided(v.to_string()),
        _ if each_harmless => Decision::Harmless {
            values,
            why: format!(
                "every floor at or below frac {} (and at or below {harmless} for every frac) gives the same bits on \
                 every GEMM a recorder can call (it leaves every term, a multiple of 2^{}, exact, or lies below every \
                 block's exponent), and each survivor's floors lie there",
                space::GEMM_GRAIN,
                space::GEMM_GRAIN
            ),
        },
        _ if scaled => Decision::Open {
            values,
            why: format!(
                "a block-scaled call's floor takes part down to 2^{} (its products' least \
                 exponent under e8m0 scales); {SCALED}",
                space::SCALED_PRODUCT_FLOOR
            ),
        },
        _ => Decision::Open {
            values,
            why: format!(
                "no recorded block's exponent is as low as {harmless}, below which the floor cannot change a GEMM: \
                 a call with tiny products (subnormal e4m3 x e5m2) would show it"
            ),
        },
    };
    Param { name: "min_exp", decision }
}

fn slow_param(survivors: &[Survivor]) -> Param {
    let set: ChunkSet = survivors.iter().skip(1).fold(survivors[0].slow.clone(), |a, s| a.union(&s.slow));
    let decision = match set.single() {
        Some(l) => Decision::Decided(l.to_string()),
        None if set == ChunkSet::all() => Decision::Open {
            values: set.describe(),
            why: "no unsplit slow-accumulation row (use_fast_accum=False, S = 1) was fitted; the bundle runs such \
                  calls, so the chunk must be recorded"
                .into(),
        },
        None if survivors.iter().all(|s| space::one_chunk(&s.spec, &s.slow)) => Decision::Harmless {
            values: set.describe(),
            why: format!(
                "each computes as one chunk over all of K: a chunk of one block with a late c (its result, added in \
                 fp32, is the block's own), a length past {} (the longest the fit tells apart, §2.9) taken as one",
                space::SLOW_CHUNK_REACH
            ),
        },
        None => Decision::Open {
            values: set.describe(),
            why: "these lengths cut every recorded slow K the same way; a slow call whose K takes two blocks past the \
                  shorter length's cut tells two of them apart (unless both are one chunk)"
                .into(),
        },
    };
    Param { name: "slow_chunk", decision }
}

/// The one floor to write for a survivor: a built-in preset's when it is consistent, else the set's representative.
pub fn floor_of(set: &MinExpSet, builtin: Option<i32>) -> Option<i32> {
    match builtin {
        Some(b) if set.contains(b) => Some(b),
        _ => set.up_to.map(|u| u.min(space::MIN_EXP_BASE)).or(set.also.first().copied()),
    }
}
