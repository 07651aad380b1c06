//! Progress reporting: an indicatif bar on a terminal; on anything else (logs of a device script, a Slurm
//! job), one plain line per chunk with the same counts. `--quiet` silences both. The ETA comes from the
//! measured chunk times: each chunk's seconds are fitted as `a · calls + b · work` (calls made, and their
//! m·n·k), so cheap and expensive chunks each count for what they cost, and the fit prices the chunks left.

use crate::util::hms;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

/// What one chunk costs before it runs: the calls it makes and their work (m·n·k summed).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ChunkCost {
    /// Calls made (skipped cases excluded).
    pub calls: f64,
    /// Their m·n·k, summed.
    pub work: f64,
}

/// The seconds-per-call and seconds-per-work rates that fit the measured chunks best (least squares,
/// both rates at least 0). One measured chunk splits its time evenly between the two terms.
pub fn fit_rates(measured: &[(ChunkCost, f64)]) -> (f64, f64) {
    let (mut scc, mut scw, mut sww, mut sct, mut swt) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (c, t) in measured {
        scc += c.calls * c.calls;
        scw += c.calls * c.work;
        sww += c.work * c.work;
        sct += c.calls * t;
        swt += c.work * t;
    }
    let only_calls = || if scc > 0.0 { (sct / scc, 0.0) } else { (0.0, 0.0) };
    let only_work = || if sww > 0.0 { (0.0, swt / sww) } else { only_calls() };
    if measured.len() == 1 {
        let (c, t) = measured[0];
        return match (c.calls > 0.0, c.work > 0.0) {
            (true, true) => (t / (2.0 * c.calls), t / (2.0 * c.work)),
            (true, false) => (t / c.calls, 0.0),
            _ => only_work(),
        };
    }
    let det = scc * sww - scw * scw;
    if det.abs() <= 1e-12 * (scc * sww).max(1e-300) {
        return if sww > 0.0 { only_work() } else { only_calls() };
    }
    let a = (sct * sww - swt * scw) / det;
    let b = (swt * scc - sct * scw) / det;
    match (a >= 0.0, b >= 0.0) {
        (true, true) => (a, b),
        (false, _) => only_work(),
        (true, false) => only_calls(),
    }
}

/// A progress reporter over `total` units.
pub struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
    total: u64,
    done: u64,
    /// Units done before this process started (resumed chunks or other shards' chunks).
    resumed: u64,
    start: Instant,
    chunk_start: Instant,
    what: &'static str,
    /// Every chunk's cost, by chunk index (empty: the ETA is proportional to the units).
    costs: Vec<ChunkCost>,
    /// Chunks left to compute in this process.
    pending: Vec<bool>,
    measured: Vec<(ChunkCost, f64)>,
}

impl Progress {
    /// A reporter; `quiet` silences it.
    pub fn new(total: u64, what: &'static str, quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = (!quiet && tty).then(|| {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style =
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40.cyan/blue} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
            b.set_style(style);
            b.set_message(what);
            b
        });
        let now = Instant::now();
        Progress {
            bar,
            lines: !quiet && !tty,
            total,
            done: 0,
            resumed: 0,
            start: now,
            chunk_start: now,
            what,
            costs: Vec::new(),
            pending: Vec::new(),
            measured: Vec::new(),
        }
    }

    /// The cost of every chunk of the run; the ETA prices the chunks left with the measured rates.
    pub fn with_costs(mut self, costs: Vec<ChunkCost>) -> Progress {
        self.pending = vec![true; costs.len()];
        self.costs = costs;
        self
    }

    /// `n` units were already done (resumed), or are another shard's; chunk `chunk` is not computed here.
    pub fn skip(&mut self, chunk: u64, n: u64) {
        self.done += n;
        self.resumed += n;
        if let Some(p) = self.pending.get_mut(chunk as usize) {
            *p = false;
        }
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    /// `n` more units are done.
    pub fn inc(&mut self, n: u64) {
        self.done += n;
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    /// Chunk `chunk` starts.
    pub fn chunk_start(&mut self) {
        self.chunk_start = Instant::now();
    }

    /// The seconds the chunks left will take, from the measured ones; None before any was measured.
    pub fn eta_seconds(&self) -> Option<f64> {
        if self.costs.is_empty() {
            let fresh = self.done.saturating_sub(self.resumed);
            let elapsed = self.start.elapsed().as_secs_f64();
            return (fresh > 0).then(|| elapsed / fresh as f64 * self.total.saturating_sub(self.done) as f64);
        }
        if self.measured.is_empty() {
            return None;
        }
        let (a, b) = fit_rates(&self.measured);
        Some(self.costs.iter().zip(&self.pending).filter(|(_, p)| **p).map(|(c, _)| a * c.calls + b * c.work).sum())
    }

    /// A chunk finished: its time is measured, and a line is logged where there is no bar.
    pub fn chunk_done(&mut self, chunk: u64, chunks: u64) {
        let secs = self.chunk_start.elapsed().as_secs_f64();
        if let Some(p) = self.pending.get_mut(chunk as usize) {
            *p = false;
        }
        if let Some(c) = self.costs.get(chunk as usize) {
            self.measured.push((*c, secs));
        }
        let eta = self.eta_seconds().map_or("?".into(), hms);
        if let Some(b) = &self.bar {
            b.set_message(format!("{} (ETA {eta})", self.what));
        }
        if !self.lines {
            return;
        }
        eprintln!(
            "mmaemu-record: chunk {}/{chunks}: {}/{} {} ({} resumed or elsewhere), elapsed {}, ETA {eta}",
            chunk + 1,
            self.done,
            self.total,
            self.what,
            self.resumed,
            hms(self.start.elapsed().as_secs_f64())
        );
    }

    /// A message above the bar (or a plain line).
    pub fn println(&self, msg: &str) {
        match &self.bar {
            Some(b) => b.println(msg),
            None => {
                if self.lines {
                    eprintln!("{msg}");
                }
            }
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(calls: f64, work: f64) -> ChunkCost {
        ChunkCost { calls, work }
    }

    #[test]
    fn rates_fit_the_measured_chunks() {
        // 2 ms per call and 1 ns per unit of work, measured on two unlike chunks: both rates come back.
        let t = |x: ChunkCost| 2e-3 * x.calls + 1e-9 * x.work;
        let m = [(c(100.0, 1e6), t(c(100.0, 1e6))), (c(10.0, 1e9), t(c(10.0, 1e9)))];
        let (a, b) = fit_rates(&m);
        assert!((a - 2e-3).abs() < 1e-9 && (b - 1e-9).abs() < 1e-15, "{a} {b}");
        // A heuristic grid has no work: time per call only.
        assert_eq!(fit_rates(&[(c(10.0, 0.0), 1.0), (c(20.0, 0.0), 2.0)]), (0.1, 0.0));
        // A negative rate is not a rate: the other term alone.
        let (a, b) = fit_rates(&[(c(10.0, 10.0), 1.0), (c(20.0, 10.0), 1.0)]);
        assert!(a >= 0.0 && b >= 0.0);
        assert_eq!(fit_rates(&[(c(4.0, 8.0), 2.0)]), (0.25, 0.125));
    }

    #[test]
    fn eta_prices_the_chunks_left() {
        // Chunks: cheap, cheap, expensive. After the two cheap ones the ETA is the expensive one's price,
        // not "two thirds done".
        let mut p = Progress::new(30, "cases", true).with_costs(vec![c(10.0, 1e3), c(10.0, 2e3), c(10.0, 1e9)]);
        p.measured = vec![(c(10.0, 1e3), 0.010 + 1e-6), (c(10.0, 2e3), 0.010 + 2e-6)];
        p.pending = vec![false, false, true];
        let eta = p.eta_seconds().unwrap();
        assert!((eta - (0.010 + 1.0)).abs() < 1e-3, "{eta}");
    }
}
