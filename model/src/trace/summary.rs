//! Error attribution over a whole GEMM: every output traced and attributed ([`super::attribute`]), each output's parts
//! checked to sum exactly to its total, and a summary per source in ulps of the out dtype.

use super::attribute::{attribute, Attribution};
use super::exact::Exact;
use super::trace_element;
use crate::accumulate::Operands;
use crate::epilogue::{Epilogue, OutDtype};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::preset::Preset;

/// The largest M·N·K the exact attribution takes (every product is traced with big-integer values).
pub const MAX_PRODUCTS: u64 = 1 << 24;

/// Upper edges of the histogram bins of |part| in ulps: 0, (0, 1/8], (1/8, 1/2], (1/2, 1], (1, 4], above 4.
pub const BIN_EDGES: [f64; 5] = [0.0, 0.125, 0.5, 1.0, 4.0];

/// One source's figures over all attributed outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceSummary {
    /// The source.
    pub name: &'static str,
    /// Outputs where the part is not zero.
    pub affected: usize,
    /// Mean |part| in ulps of the out dtype at the exact result.
    pub mean_ulps: f64,
    /// Largest |part| in ulps.
    pub max_ulps: f64,
    /// Counts per bin of [`BIN_EDGES`] (6 bins).
    pub histogram: [usize; 6],
}

/// The attribution of a whole GEMM.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmAttribution {
    /// M·N.
    pub outputs: usize,
    /// Outputs with an exact difference (finite on the way).
    pub attributed: usize,
    /// Outputs whose parts were checked to sum exactly to the total (all attributed ones).
    pub exact_checks: usize,
    /// Outputs whose emulated value differs from the exact result.
    pub inexact: usize,
    /// The total error and the four sources, in that order.
    pub sources: Vec<SourceSummary>,
}

/// The ulp exponent of the out dtype at `x`.
pub fn ulp_exp(out: OutDtype, x: &Exact) -> i32 {
    let (emin, mbits) = match out {
        OutDtype::Float32 => (-126, 23),
        OutDtype::BFloat16 => (-126, 7),
        OutDtype::Float16 => (-14, 10),
        OutDtype::E4m3 => (-6, 3),
        OutDtype::E5m2 => (-14, 2),
    };
    x.ilog2().unwrap_or(emin).max(emin) - mbits
}

fn summary(name: &'static str, ulps: &[f64]) -> SourceSummary {
    let mut histogram = [0usize; 6];
    for &u in ulps {
        histogram[BIN_EDGES.iter().position(|&e| u <= e).unwrap_or(5)] += 1;
    }
    let n = ulps.len().max(1) as f64;
    SourceSummary {
        name,
        affected: ulps.iter().filter(|&&u| u != 0.0).count(),
        mean_ulps: ulps.iter().sum::<f64>() / n,
        max_ulps: ulps.iter().copied().fold(0.0, f64::max),
        histogram,
    }
}

/// Attribute every output of the plan over `ops` with the epilogue `epi` (None: the fp32 accumulator). Each output's
/// parts are checked to sum exactly to its total; a mismatch is an error (it would be a defect of the trace).
pub fn attribute_gemm(
    preset: &Preset,
    plan: &Plan,
    ops: &Operands<'_>,
    epi: Option<&Epilogue>,
) -> Result<GemmAttribution> {
    ops.check()?;
    let products = (ops.m as u64).saturating_mul(ops.n as u64).saturating_mul(ops.k.max(1) as u64);
    if products > MAX_PRODUCTS {
        return Err(Error::invalid_value(format!(
            "M·N·K = {products} is above the exact attribution's limit of {MAX_PRODUCTS} products"
        )));
    }
    let out = epi.map_or(OutDtype::Float32, |e| e.out);
    let mut cols: [Vec<f64>; 5] = Default::default();
    let (mut attributed, mut inexact) = (0, 0);
    for i in 0..ops.m {
        for j in 0..ops.n {
            let t = trace_element(preset, plan, ops, i, j, epi)?;
            let Some(a): Option<Attribution> = attribute(&t) else { continue };
            if a.parts_sum() != a.total {
                return Err(Error::invalid_value(format!("the attribution of ({i}, {j}) does not add up")));
            }
            attributed += 1;
            inexact += usize::from(!a.total.is_zero());
            let unit = Exact::new(1, -ulp_exp(out, &a.exact));
            let parts = [&a.total, &a.term_truncation, &a.block_truncation, &a.combination, &a.epilogue];
            for (col, p) in cols.iter_mut().zip(parts) {
                col.push(p.mul(&unit).to_f64().abs());
            }
        }
    }
    let names = ["total", "term truncation", "block truncation", "chunk and split additions", "epilogue rounding"];
    Ok(GemmAttribution {
        outputs: ops.m * ops.n,
        attributed,
        exact_checks: attributed,
        inexact,
        sources: names.iter().zip(&cols).map(|(n, c)| summary(n, c)).collect(),
    })
}
