//! Error attribution over a whole GEMM: every output attributed (in fixed point, [`super::fast`], or by the exact
//! trace where that does not fit), each output's parts checked to sum exactly to its total, and a summary per source.

use super::attribute::{attribute, Attribution};
use super::exact::Exact;
use super::fast::FastGemm;
use super::trace_element;
use mmaemu_model::accumulate::Operands;
use mmaemu_model::epilogue::{Epilogue, OutDtype};
use mmaemu_model::error::{Error, Result};
use mmaemu_model::plan::Plan;
use mmaemu_model::preset::Preset;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The largest M·N an attribution takes: it keeps one [`OutputFigures`] per output (72 bytes; 1.2 GB at the limit),
/// checked against the memory ceiling (`limits`) as well.
pub const MAX_OUTPUTS: u64 = 1 << 24;

/// The names of the total and the four sources, in the order of [`OutputFigures::ulps`].
pub const SOURCES: [&str; 5] =
    ["total", "term truncation", "block truncation", "chunk and split additions", "epilogue rounding"];

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

/// One output's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutputFigures {
    /// The output's bits (in the out dtype).
    pub bits: u32,
    /// Whether it has an attribution (every value on the way finite).
    pub attributed: bool,
    /// The exact result (nearest f64; 0 when not attributed).
    pub exact: f64,
    /// The emulated value (exactly; NaN or ±Inf when not attributed and not finite).
    pub emulated: f64,
    /// The total and the four parts in ulps of the out dtype at the exact result, signed (nearest f64).
    pub ulps: [f64; 5],
    /// The exponent of that ulp (a part's value is ulps · 2^ulp_exp).
    pub ulp_exp: i32,
}

/// The attribution of a whole GEMM.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmAttribution {
    /// The out dtype (the unit of the ulps).
    pub out: OutDtype,
    /// M.
    pub m: usize,
    /// N.
    pub n: usize,
    /// M·N.
    pub outputs: usize,
    /// Outputs with an exact difference (finite on the way).
    pub attributed: usize,
    /// Outputs whose parts were checked to sum exactly to the total (all attributed ones).
    pub exact_checks: usize,
    /// Outputs attributed by the exact trace because a value did not fit the fixed point.
    pub exact_fallbacks: usize,
    /// Outputs whose emulated value differs from the exact result.
    pub inexact: usize,
    /// The total error and the four sources, in that order.
    pub sources: Vec<SourceSummary>,
    /// Every output's figures, row-major [M, N].
    pub figures: Vec<OutputFigures>,
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

/// The summary of one column of signed ulps.
pub fn summary(name: &'static str, ulps: impl Iterator<Item = f64> + Clone) -> SourceSummary {
    let mut histogram = [0usize; 6];
    let (mut n, mut sum, mut max, mut affected) = (0usize, 0.0, 0.0f64, 0);
    for u in ulps.map(f64::abs) {
        histogram[BIN_EDGES.iter().position(|&e| u <= e).unwrap_or(5)] += 1;
        n += 1;
        sum += u;
        max = max.max(u);
        affected += usize::from(u != 0.0);
    }
    SourceSummary { name, affected, mean_ulps: sum / n.max(1) as f64, max_ulps: max, histogram }
}

/// Output (i, j) attributed by the exact trace (the oracle of the fixed point): its bits and attribution.
pub fn attribute_exact(
    preset: &Preset,
    plan: &Plan,
    ops: &Operands<'_>,
    i: usize,
    j: usize,
    epi: Option<&Epilogue>,
) -> Result<(u32, Option<Attribution>)> {
    let t = trace_element(preset, plan, ops, i, j, epi)?;
    Ok((t.bits, attribute(&t)))
}

/// One output's figures from its attribution; checks that the parts sum exactly to the total.
fn figures(out: OutDtype, i: usize, j: usize, bits: u32, a: Option<Attribution>) -> Result<OutputFigures> {
    let Some(a) = a else {
        return Ok(OutputFigures {
            bits,
            attributed: false,
            exact: 0.0,
            emulated: out.to_f64(bits),
            ulps: [0.0; 5],
            ulp_exp: 0,
        });
    };
    if a.parts_sum() != a.total {
        return Err(Error::invalid_value(format!("the attribution of ({i}, {j}) does not add up")));
    }
    let ue = ulp_exp(out, &a.exact);
    let unit = Exact::new(1, -ue);
    let parts = [&a.total, &a.term_truncation, &a.block_truncation, &a.combination, &a.epilogue];
    let ulps = parts.map(|p| p.mul(&unit).to_f64());
    Ok(OutputFigures {
        bits,
        attributed: true,
        exact: a.exact.to_f64(),
        emulated: a.emulated.to_f64(),
        ulps,
        ulp_exp: ue,
    })
}

/// Attribute every output of the plan over `ops` with the epilogue `epi` (None: the fp32 accumulator).
pub fn attribute_gemm(
    preset: &Preset,
    plan: &Plan,
    ops: &Operands<'_>,
    epi: Option<&Epilogue>,
) -> Result<GemmAttribution> {
    attribute_gemm_with(preset, plan, ops, epi, &|_| {})
}

/// [`attribute_gemm`], calling `progress(outputs done)` after each row of outputs (from any thread). Each output's
/// parts are checked to sum exactly to its total; a mismatch is an error (it would be a defect of the attribution).
pub fn attribute_gemm_with(
    preset: &Preset,
    plan: &Plan,
    ops: &Operands<'_>,
    epi: Option<&Epilogue>,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<GemmAttribution> {
    ops.check()?;
    let outputs = (ops.m as u64).saturating_mul(ops.n as u64);
    if outputs > MAX_OUTPUTS {
        return Err(Error::invalid_value(format!(
            "M·N = {outputs} outputs is above the attribution's limit of {MAX_OUTPUTS} outputs"
        )));
    }
    let bytes = mmaemu_model::limits::product(&[outputs, std::mem::size_of::<OutputFigures>() as u64]);
    mmaemu_model::limits::check_fixed("the attribution's per-output figures", bytes).map_err(Error::invalid_value)?;
    let out = epi.map_or(OutDtype::Float32, |e| e.out);
    let fast = FastGemm::new(preset, plan, *ops, epi)?;
    let (done, fallbacks) = (AtomicUsize::new(0), AtomicUsize::new(0));
    // The caller's interrupt flag (Ctrl-C in Python), captured here and read before every row of outputs.
    let interrupt = mmaemu_model::interrupt::Interrupt::current();
    let rows: Vec<Vec<OutputFigures>> = (0..ops.m)
        .into_par_iter()
        .map(|i| {
            interrupt.check()?;
            let row = (0..ops.n)
                .map(|j| {
                    let (bits, a) = match fast.element(i, j) {
                        Some(r) => r,
                        None => {
                            fallbacks.fetch_add(1, Ordering::Relaxed);
                            attribute_exact(preset, plan, ops, i, j, epi)?
                        }
                    };
                    figures(out, i, j, bits, a)
                })
                .collect::<Result<Vec<_>>>()?;
            progress(done.fetch_add(ops.n, Ordering::Relaxed) + ops.n);
            Ok(row)
        })
        .collect::<Result<_>>()?;
    let figs: Vec<OutputFigures> = rows.into_iter().flatten().collect();
    let attributed = figs.iter().filter(|f| f.attributed).count();
    let col = |s: usize| figs.iter().filter(|f| f.attributed).map(move |f| f.ulps[s]);
    Ok(GemmAttribution {
        out,
        m: ops.m,
        n: ops.n,
        outputs: ops.m * ops.n,
        attributed,
        exact_checks: attributed,
        exact_fallbacks: fallbacks.into_inner(),
        inexact: figs.iter().filter(|f| f.attributed && f.ulps[0] != 0.0).count(),
        sources: SOURCES.iter().enumerate().map(|(s, n)| summary(n, col(s))).collect(),
        figures: figs,
    })
}
