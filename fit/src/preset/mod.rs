//! `mmaemu fit preset`: decide, from recorded instruction rows (op `mma`) and unsplit accumulators (op `accumulator`,
//! or `gemm` with fp32 out and unit scales; S = 1) alone, every parameter of a preset document (docs/preset-format.md).
//!
//! Each output of a row is one chain: an `mma` output runs over k from its recorded c, a fast accumulator over all of
//! K from +0 (an unsplit fast plan is the instruction repeated, §3.1), a slow one over consecutive slow chunks. The
//! preset column is ignored (it may be `unknown`). The search is staged ([`search`]): the core candidates of
//! [`space`] (nfma, frac, block result, c entry; 17,280) meet the fast chains, each dropped at its first miss; each
//! core survivor's floors (min_exp) are derived from the lowest block exponent its chains meet, and its slow-chunk
//! lengths from the slow rows, every length below a row's K tried and those at or above it taken as one; MXFP8 rows
//! (block-scaled chains, §2.8) then keep the survivors that compute them with 32-element scale blocks. [`decide`]
//! says per parameter whether it is decided, harmless (provably the same bits on every GEMM) or open; [`experiments`]
//! designs the calls that tell open survivors apart. Verdict: `unique` (nothing open), `ambiguous` (something open:
//! a failed fit until experiments resolve it) or `none` (the rows that no core candidate reproduces).

mod chosen;
mod decide;
mod design;
pub mod pairs;
mod render;
mod sample;
mod scaled_design;
pub mod search;
pub mod space;

pub use decide::{Decision, Param};
pub use design::{experiments, CALL_MN};
use mmaemu_datasets::{DatasetError, Row};
use mmaemu_model::{Preset, PresetSpec};
use rayon::prelude::*;
pub use render::{json, text};
use sample::{row_samples, Sample};
pub use search::{ChunkSet, MinExpSet, Survivor};
use std::collections::HashMap;
use std::path::PathBuf;

/// A row the fit used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FitRow {
    /// Row id.
    pub id: String,
    /// The recording it comes from.
    pub file: PathBuf,
    /// Its op.
    pub op: String,
    /// The chains it holds.
    pub chains: usize,
    /// Whether its chains are slow (cut into slow chunks).
    pub slow: bool,
}

pub use super::SkippedRow;

pub use super::Verdict;

/// The fit of a set of recordings.
#[derive(Clone, Debug)]
pub struct PresetFit {
    /// The rows used.
    pub rows: Vec<FitRow>,
    /// The rows skipped.
    pub skipped: Vec<SkippedRow>,
    /// Core candidates searched.
    pub candidates: usize,
    /// The core survivors with their floors and slow chunks, in the order of [`space::candidates`].
    pub survivors: Vec<Survivor>,
    /// Per parameter of the preset document: decided, harmless or open.
    pub params: Vec<Param>,
    /// The verdict: unique when no parameter is open.
    pub verdict: Verdict,
    /// None: the rows that no core candidate reproduces alone (ids).
    pub unexplained: Vec<String>,
}

impl PresetFit {
    /// The preset to write, named `name`: the survivor that is a built-in preset's arithmetic, else the first
    /// survivor; its floor a built-in preset's where consistent, else −126 or the set's one value; its slow chunk
    /// the decided one, else the least consistent (none without a slow row). None without survivors.
    pub fn winner(&self, name: &str) -> Option<Preset> {
        let pick =
            self.survivors.iter().find(|s| !space::builtin_matches(&s.spec).is_empty()).or(self.survivors.first())?;
        let builtin = space::builtin_matches(&pick.spec).first().map(|p| p.min_exp());
        let slow_chunk = if pick.slow == ChunkSet::all() { None } else { pick.slow.least() };
        let min_exp = decide::floor_of(&pick.min_exp, builtin)?;
        Preset::from_spec(PresetSpec { name: name.to_string(), min_exp, slow_chunk, ..pick.spec.clone() }).ok()
    }

    /// The built-in presets among the survivors (by arithmetic).
    pub fn builtin_survivors(&self) -> Vec<String> {
        self.survivors.iter().flat_map(|s| space::builtin_matches(&s.spec)).map(|p| p.name().to_string()).collect()
    }

    /// The parameters still open (more experiments are needed), by name.
    pub fn open(&self) -> Vec<&'static str> {
        self.params.iter().filter(|p| p.is_open()).map(|p| p.name).collect()
    }

    /// Whether the fit holds: survivors, and no parameter open.
    pub fn holds(&self) -> bool {
        self.verdict == Verdict::Unique
    }
}

/// Fit the rows of `recs` (file, rows).
pub fn fit(recs: &[(PathBuf, Vec<Row>)]) -> PresetFit {
    let (mut rows, mut skipped, mut samples) = (Vec::new(), Vec::new(), Vec::new());
    for (file, recorded) in recs {
        for row in recorded {
            match row_samples(row, rows.len()) {
                Ok(s) => {
                    rows.push(FitRow {
                        id: row.id.clone(),
                        file: file.clone(),
                        op: row.op.as_str().into(),
                        chains: s.len(),
                        slow: s.first().is_some_and(|x| x.slow),
                    });
                    samples.extend(s);
                }
                Err(reason) => skipped.push(SkippedRow { id: row.id.clone(), file: file.clone(), reason }),
            }
        }
    }
    let all = space::candidates();
    let mut fit = PresetFit {
        rows,
        skipped,
        candidates: all.len(),
        survivors: Vec::new(),
        params: Vec::new(),
        verdict: Verdict::None,
        unexplained: Vec::new(),
    };
    if samples.iter().all(|s| s.a.is_empty()) {
        // No row gives a chain to test: nothing can be decided. Answer at once.
        return fit;
    }
    let mx: Vec<&Sample> = samples.iter().filter(|s| s.scales.is_some()).collect();
    let fast: Vec<&Sample> =
        interleave(samples.iter().filter(|s| !s.slow && s.scales.is_none()).collect(), fit.rows.len());
    if fast.iter().all(|s| s.a.is_empty()) {
        // Slow rows alone decide no instruction (their chunks restart it): nothing can be decided.
        return fit;
    }
    let mut slow_rows: Vec<Vec<&Sample>> = vec![Vec::new(); fit.rows.len()];
    for s in samples.iter().filter(|s| s.slow) {
        slow_rows[s.row].push(s);
    }
    slow_rows.retain(|r| !r.is_empty());
    let cores = search::cores(&all, &fast);
    // The slow chunks of one arithmetic ([`space::canonical`]) are found once: every core of it cuts them alike.
    let mut chunks = HashMap::new();
    let floors = search::FloorCache::new(&fast);
    for core in &cores {
        let slow = chunks
            .entry(space::core(&space::canonical(core)))
            .or_insert_with(|| search::slow_chunks(core, &slow_rows))
            .clone();
        if !slow.is_empty() {
            fit.survivors.push(Survivor { spec: core.clone(), min_exp: search::floors(core, &fast, &floors), slow });
        }
    }
    // MXFP8 rows keep the survivors that compute them as block-scaled presets (scale_block = nfma = 32); when none
    // does, the unscaled survivors stay and the scale block is open (decide.rs says why).
    let unscaled = fit.survivors.len();
    if !mx.is_empty() {
        let scaled: Vec<Survivor> = fit.survivors.par_iter().filter_map(|s| search::scaled(s, &mx)).collect();
        if !scaled.is_empty() {
            fit.survivors = scaled;
        }
    }
    fit.params = decide::params(&fit.survivors, decide::Scales { rows: mx.len(), unscaled });
    fit.verdict = match (fit.survivors.len(), fit.params.iter().any(Param::is_open)) {
        (0, _) => Verdict::None,
        (_, false) => Verdict::Unique,
        (_, true) => Verdict::Ambiguous,
    };
    if fit.verdict == Verdict::None {
        fit.unexplained = (0..fit.rows.len())
            .into_par_iter()
            .filter(|&r| {
                let mine: Vec<&Sample> = samples.iter().filter(|s| s.row == r).collect();
                let slow = mine.iter().any(|s| s.slow);
                let fast: Vec<&Sample> = mine.iter().filter(|s| !s.slow && s.scales.is_none()).copied().collect();
                let cores = search::cores(&all, &fast);
                let rows = vec![mine.clone()];
                !cores.iter().any(|c| !slow || !search::slow_chunks(c, &rows).is_empty())
            })
            .map(|r| fit.rows[r].id.clone())
            .collect();
    }
    fit
}

/// Round-robin over the rows, shortest chains first: the first chain of every row, then the second, ...
fn interleave(mut samples: Vec<&Sample>, rows: usize) -> Vec<&Sample> {
    samples.sort_by_key(|s| (s.a.len(), s.row));
    let mut per_row: Vec<Vec<&Sample>> = vec![Vec::new(); rows];
    let mut order: Vec<usize> = Vec::new();
    for s in samples {
        if per_row[s.row].is_empty() {
            order.push(s.row);
        }
        per_row[s.row].push(s);
    }
    let mut iters: Vec<_> = order.into_iter().map(|r| std::mem::take(&mut per_row[r]).into_iter()).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        out.extend(iters.iter_mut().filter_map(|it| it.next()));
        if out.len() == before {
            return out;
        }
    }
}

/// Read every recording under `paths` and fit its rows (`evidence`: which rows count).
pub fn fit_paths(paths: &[PathBuf], evidence: super::Evidence) -> Result<PresetFit, DatasetError> {
    Ok(fit(&super::read_paths(paths, evidence)?))
}
