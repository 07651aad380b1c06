//! Per parameter of a preset document, what the survivors of `mmaemu fit preset` leave of it: one value (decided), or
//! the values still consistent and why — harmless where they provably give the same bits on every GEMM the bundle
//! computes, otherwise open (more experiments are needed).

use super::search::{ChunkSet, MinExpSet, Survivor};
use super::space;

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

fn plain(name: &'static str, values: Vec<String>) -> Param {
    let decision = match values.len() {
        1 => Decision::Decided(values[0].clone()),
        _ => Decision::Open { values, why: SAME_BITS.into() },
    };
    Param { name, decision }
}

/// The parameters (nfma, frac, frac_out, rounding, min_exp, c_entry, slow_chunk, scale_block) over the survivors.
pub fn params(survivors: &[Survivor]) -> Vec<Param> {
    if survivors.is_empty() {
        return Vec::new();
    }
    let specs = || survivors.iter().map(|s| &s.spec);
    let nfma = plain("nfma", distinct(specs().map(|s| s.nfma)));
    let frac = plain("frac", distinct(specs().map(|s| s.frac)));
    let c_entry = plain("c_entry", distinct(specs().map(|s| s.c_entry.name())));
    // The block result: frac_out and rounding together.
    let results = distinct(specs().map(space::block_result));
    let exact = specs().all(space::exact_block_result);
    let core_decided = !nfma.is_open() && !frac.is_open();
    let block = |name: &'static str, values: Vec<String>| {
        let decision = if values.len() == 1 {
            Decision::Decided(values[0].clone())
        } else if exact && core_decided {
            let s = &survivors[0].spec;
            Decision::Harmless {
                values,
                why: format!(
                    "with nfma {}, frac {} and {} c no GEMM block sum has more than {} bits above its grid, so no block \
                     result is ever rounded (frac_out >= {}: every truncation and nearest even give the same bits; \
                     block results {})",
                    s.nfma,
                    s.frac,
                    s.c_entry.name(),
                    space::exact_frac_out(s.nfma, s.frac, s.c_entry) + 1,
                    space::exact_frac_out(s.nfma, s.frac, s.c_entry),
                    results.join(", ")
                ),
            }
        } else {
            Decision::Open { values, why: format!("{SAME_BITS} (block results {})", results.join(", ")) }
        };
        Param { name, decision }
    };
    let frac_out = block("frac_out", distinct(specs().map(|s| s.frac_out)));
    let rounding = block("rounding", distinct(specs().map(|s| s.rounding.name())));
    let min_exp = floor_param(survivors);
    let slow = slow_param(survivors);
    let scale = Param {
        name: "scale_block",
        decision: Decision::Harmless {
            values: vec!["none".into()],
            why: "no fitting row carries block scales; the fitted preset takes none, so the bundle refuses a \
                  block-scaled call instead of computing it"
                .into(),
        },
    };
    vec![nfma, frac, frac_out, rounding, min_exp, c_entry, slow, scale]
}

fn floor_param(survivors: &[Survivor]) -> Param {
    let set = survivors.iter().skip(1).fold(survivors[0].min_exp.clone(), |a, s| a.union(&s.min_exp));
    let harmless = survivors.iter().map(|s| space::harmless_floor(&s.spec)).min().unwrap_or(i32::MIN);
    let values = set.describe();
    let decision = match (set.up_to, set.also.as_slice()) {
        (None, [v]) => Decision::Decided(v.to_string()),
        _ if set.max().is_some_and(|m| m <= harmless) => Decision::Harmless {
            values,
            why: format!(
                "every floor at or below {harmless} gives the same bits on every GEMM a recorder can call (it \
                 leaves every term, a multiple of 2^{}, exact, or lies below every block's exponent)",
                space::GEMM_GRAIN
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
        None => Decision::Open {
            values: set.describe(),
            why: "these lengths cut every recorded slow K the same way; two lengths L1 < L2 cut any K > L1 \
                  differently, so some slow call tells them apart"
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
