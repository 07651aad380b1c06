//! `mmaemu fit preset`: find, from recorded instruction rows (op `mma`) and unsplit fast GEMM accumulators (op
//! `accumulator`, S = 1) alone, every preset of the parameter space of [`space`] that reproduces every recorded bit.
//!
//! Each output of a row is one chain: an `mma` output runs over k from its recorded c, an accumulator output over all
//! of K from +0 (an unsplit fast plan is the instruction repeated, §3.1). The preset column is ignored (it may be
//! `unknown`). A candidate survives when every chain gives the recorded fp32 bits; candidates are dropped at their
//! first miss, so the search costs little more than the survivors' runs over every chain. Verdict: `unique` (one
//! survivor), `ambiguous` (several: the parameters on which they differ, and a chain on which they give different
//! results, if a seeded search of random chains finds one) or `none` (the rows that no candidate reproduces).

mod render;
pub mod space;

use mmaemu_datasets::{DatasetError, Op, Row, Truth};
use mmaemu_model::{Chain, Format, Preset, PresetSpec};
use rayon::prelude::*;
pub use render::{json, text};
use std::path::PathBuf;

/// One recorded chain.
#[derive(Clone, Debug)]
struct Sample {
    fa: Format,
    fb: Format,
    a: Vec<u8>,
    b: Vec<u8>,
    c: f32,
    want: u32,
    /// Index into [`PresetFit::rows`].
    row: usize,
}

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
}

pub use super::SkippedRow;

pub use super::Verdict;

/// A chain on which the survivors give different results.
#[derive(Clone, Debug, PartialEq)]
pub struct Discriminator {
    /// Format of A.
    pub fa: Format,
    /// Format of B.
    pub fb: Format,
    /// A's codes.
    pub a: Vec<u8>,
    /// B's codes.
    pub b: Vec<u8>,
    /// c.
    pub c: f32,
    /// The distinct results (fp32 bits) with the number of survivors giving each.
    pub outcomes: Vec<(u32, usize)>,
}

/// The fit of a set of recordings.
#[derive(Clone, Debug)]
pub struct PresetFit {
    /// The rows used.
    pub rows: Vec<FitRow>,
    /// The rows skipped.
    pub skipped: Vec<SkippedRow>,
    /// Candidates searched.
    pub candidates: usize,
    /// The survivors, in the order of [`space::candidates`].
    pub survivors: Vec<PresetSpec>,
    /// The verdict.
    pub verdict: Verdict,
    /// Ambiguous: the parameters on which the survivors differ, with their values.
    pub undecided: Vec<(&'static str, Vec<String>)>,
    /// Ambiguous: a chain that tells survivors apart, if the search found one.
    pub discriminator: Option<Discriminator>,
    /// None: the rows that no candidate reproduces alone (ids).
    pub unexplained: Vec<String>,
}

impl PresetFit {
    /// The preset to write: the survivor that is a built-in preset's arithmetic, else the first survivor; named
    /// `name`. None without survivors.
    pub fn winner(&self, name: &str) -> Option<Preset> {
        let pick = self.survivors.iter().find(|s| !space::builtin_matches(s).is_empty()).or(self.survivors.first())?;
        Preset::from_spec(PresetSpec { name: name.to_string(), ..pick.clone() }).ok()
    }

    /// The built-in presets among the survivors (by arithmetic).
    pub fn builtin_survivors(&self) -> Vec<String> {
        self.survivors.iter().flat_map(space::builtin_matches).map(|p| p.name().to_string()).collect()
    }
}

fn format_of(name: &str) -> Option<Format> {
    match name {
        "e4m3" | "float8_e4m3fn" => Some(Format::E4m3),
        "e5m2" | "float8_e5m2" => Some(Format::E5m2),
        _ => None,
    }
}

/// The chains of one row, or why it is not fitting input.
fn row_samples(row: &Row, index: usize) -> Result<Vec<Sample>, String> {
    if row.truth != Truth::Hardware {
        return Err("truth is not hardware".into());
    }
    let (fa, fb) = match (format_of(&row.fmt_a), format_of(&row.fmt_b)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(format!("formats {} x {} are not FP8", row.fmt_a, row.fmt_b)),
    };
    let bits = row.expected_bits().ok_or("no expected bits")?;
    let dim = |x: i64| usize::try_from(x).map_err(|_| format!("negative dimension {x}"));
    let (batch, m, n, k) = (dim(row.batch)?, dim(row.m)?, dim(row.n)?, dim(row.k)?);
    let outputs = batch.checked_mul(m).and_then(|x| x.checked_mul(n)).ok_or("too many outputs")?;
    if row.expected_elems() != Some(outputs) || bits.len() != 4 * outputs {
        return Err("only whole fp32 results are fitting input".into());
    }
    if row.a.len() != batch * m * k || row.b.len() != batch * n * k {
        return Err("operand sizes do not match the shape".into());
    }
    let c: Option<&[u8]> = match row.op {
        Op::Mma => Some(row.c.as_deref().ok_or("op mma without c")?),
        Op::Accumulator | Op::Gemm => {
            // A gemm row is its accumulator when its epilogue is the identity: fp32 out, unit scales.
            let one = Some(1.0f32.to_bits());
            let identity = row.out_dtype.as_deref() == Some("float32")
                && row.scale_a == one
                && row.scale_b == one
                && row.scale_result.is_none();
            if row.op == Op::Gemm && !identity {
                return Err("a gemm row with an epilogue (fp32 out and unit scales make it an accumulator)".into());
            }
            if row.split_s.unwrap_or(1) != 1 {
                return Err("a split GEMM (fit splitk fits those)".into());
            }
            if row.fast_accum != Some(true) {
                return Err("slow accumulation (its fp32 promotion is not in the instruction)".into());
            }
            if fa.any_nonfinite(&row.a) || fb.any_nonfinite(&row.b) {
                return Err("non-finite operand codes (§3.7 replaces them)".into());
            }
            None
        }
        _ => return Err(format!("op {} (the fit reads mma, accumulator and gemm rows)", row.op.as_str())),
    };
    if c.is_some_and(|c| c.len() != 4 * outputs) {
        return Err("c does not match the shape".into());
    }
    let word = |v: &[u8], o: usize| u32::from_le_bytes([v[4 * o], v[4 * o + 1], v[4 * o + 2], v[4 * o + 3]]);
    let mut out = Vec::with_capacity(outputs);
    for t in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let o = (t * m + i) * n + j;
                out.push(Sample {
                    fa,
                    fb,
                    a: row.a[(t * m + i) * k..(t * m + i + 1) * k].to_vec(),
                    b: row.b[(t * n + j) * k..(t * n + j + 1) * k].to_vec(),
                    c: c.map_or(0.0, |c| f32::from_bits(word(c, o))),
                    want: word(bits, o),
                    row: index,
                });
            }
        }
    }
    Ok(out)
}

/// Whether `spec` reproduces every sample (stopping at the first miss).
fn reproduces(spec: &PresetSpec, samples: &[Sample]) -> bool {
    let Ok(preset) = Preset::custom(spec.clone()) else { return false };
    let mut chains: [Option<Chain>; 4] = [None, None, None, None];
    samples.iter().all(|s| {
        let slot = &mut chains[(s.fa == Format::E5m2) as usize * 2 + (s.fb == Format::E5m2) as usize];
        let chain = slot.get_or_insert_with(|| Chain::new(&preset, s.fa, s.fb));
        chain.run(&s.a, &s.b, s.c).to_bits() == s.want
    })
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
                    });
                    samples.extend(s);
                }
                Err(reason) => skipped.push(SkippedRow { id: row.id.clone(), file: file.clone(), reason }),
            }
        }
    }
    let all = space::candidates();
    if samples.is_empty() {
        // No row gives a chain to test: every candidate would survive, and nothing can be decided. Answer at once.
        return PresetFit {
            rows,
            skipped,
            candidates: all.len(),
            survivors: Vec::new(),
            verdict: Verdict::None,
            undecided: Vec::new(),
            discriminator: None,
            unexplained: Vec::new(),
        };
    }
    // Interleave the rows' chains so that a wrong candidate meets every kind of row early.
    samples.sort_by_key(|s| (rows[s.row].chains.max(1), s.row));
    let samples = interleave(samples, rows.len());
    let survivors: Vec<PresetSpec> = all.par_iter().filter(|s| reproduces(s, &samples)).cloned().collect();
    let verdict = Verdict::of(survivors.len(), false);
    let mut fit = PresetFit {
        rows,
        skipped,
        candidates: all.len(),
        survivors,
        verdict,
        undecided: Vec::new(),
        discriminator: None,
        unexplained: Vec::new(),
    };
    match verdict {
        Verdict::Ambiguous => {
            fit.undecided = undecided(&fit.survivors);
            fit.discriminator = discriminate(&fit.survivors);
        }
        Verdict::None => {
            fit.unexplained = (0..fit.rows.len())
                .into_par_iter()
                .filter(|&r| {
                    let mine: Vec<Sample> = samples.iter().filter(|s| s.row == r).cloned().collect();
                    !all.iter().any(|s| reproduces(s, &mine))
                })
                .map(|r| fit.rows[r].id.clone())
                .collect();
        }
        Verdict::Unique | Verdict::Mixture => {}
    }
    fit
}

/// Round-robin over the rows: the first chain of every row, then the second, ...
fn interleave(samples: Vec<Sample>, rows: usize) -> Vec<Sample> {
    let mut per_row: Vec<Vec<Sample>> = vec![Vec::new(); rows];
    for s in samples {
        per_row[s.row].push(s);
    }
    let mut iters: Vec<_> = per_row.into_iter().map(|v| v.into_iter()).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        out.extend(iters.iter_mut().filter_map(|it| it.next()));
        if out.len() == before {
            return out;
        }
    }
}

/// The parameters on which the survivors differ, with their values.
fn undecided(survivors: &[PresetSpec]) -> Vec<(&'static str, Vec<String>)> {
    let mut out: Vec<(&'static str, Vec<String>)> = Vec::new();
    for (i, (name, _)) in space::params(&survivors[0]).iter().enumerate() {
        let mut values: Vec<String> = Vec::new();
        for s in survivors {
            let v = space::params(s)[i].1.clone();
            if !values.contains(&v) {
                values.push(v);
            }
        }
        if values.len() > 1 {
            out.push((name, values));
        }
    }
    out
}

/// Chains searched for a discriminator.
pub const DISCRIMINATOR_TRIES: usize = 4000;

/// A seeded search of random chains (K = 96, both formats, varied c) for one on which the survivors differ most.
fn discriminate(survivors: &[PresetSpec]) -> Option<Discriminator> {
    let presets: Vec<Preset> = survivors.iter().filter_map(|s| Preset::custom(s.clone()).ok()).collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state = mmaemu_datasets::inputs::mix(state.wrapping_add(0x9E37_79B9_7F4A_7C15));
        state
    };
    let mut best: Option<Discriminator> = None;
    for t in 0..DISCRIMINATOR_TRIES {
        let (fa, fb) = (Format::ALL[t % 2], Format::ALL[(t / 2) % 2]);
        let finite = |f: Format, x: u64| {
            let code = x as u8;
            if f.any_nonfinite(&[code]) {
                code & 0x3F
            } else {
                code
            }
        };
        let a: Vec<u8> = (0..96).map(|_| finite(fa, next())).collect();
        let b: Vec<u8> = (0..96).map(|_| finite(fb, next())).collect();
        let r = next();
        let c = match t % 4 {
            0 => 0.0,
            1 => f32::from_bits((r as u32 & 0x807F_FFFF) | (((r >> 40) as u32 % 200 + 20) << 23)),
            2 => f32::from_bits(r as u32 & 0x807F_FFFF),
            _ => f32::from_bits((r as u32 & 0x807F_FFFF) | (((r >> 40) as u32 % 40 + 110) << 23)),
        };
        let mut outcomes: Vec<(u32, usize)> = Vec::new();
        for p in &presets {
            let bits = Chain::new(p, fa, fb).run(&a, &b, c).to_bits();
            match outcomes.iter_mut().find(|(o, _)| *o == bits) {
                Some(x) => x.1 += 1,
                None => outcomes.push((bits, 1)),
            }
        }
        if outcomes.len() > best.as_ref().map_or(1, |d| d.outcomes.len()) {
            best = Some(Discriminator { fa, fb, a, b, c, outcomes });
        }
    }
    best
}

/// Read every recording under `paths` and fit its rows (`evidence`: which rows count).
pub fn fit_paths(paths: &[PathBuf], evidence: super::Evidence) -> Result<PresetFit, DatasetError> {
    Ok(fit(&super::read_paths(paths, evidence)?))
}
