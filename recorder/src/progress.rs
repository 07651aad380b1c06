//! Progress reporting: an indicatif bar with ETA on a terminal; on anything else (logs of a device
//! script), one plain line per chunk with the same counts and ETA. `--quiet` silences both.

use crate::util::hms;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

/// A progress reporter over `total` units.
pub struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
    total: u64,
    done: u64,
    /// Units done before this process started (resumed chunks): not counted in the rate.
    resumed: u64,
    start: Instant,
    what: &'static str,
}

impl Progress {
    /// A reporter; `quiet` silences it.
    pub fn new(total: u64, what: &'static str, quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = (!quiet && tty).then(|| {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40.cyan/blue} {pos}/{len} {msg} (ETA {eta_precise})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            b.set_style(style);
            b.set_message(what);
            b
        });
        Progress { bar, lines: !quiet && !tty, total, done: 0, resumed: 0, start: Instant::now(), what }
    }

    /// `n` units were already done (resumed).
    pub fn skip(&mut self, n: u64) {
        self.done += n;
        self.resumed += n;
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

    /// A chunk finished: a log line where there is no bar.
    pub fn chunk_done(&self, chunk: u64, chunks: u64) {
        if !self.lines {
            return;
        }
        let elapsed = self.start.elapsed().as_secs_f64();
        let fresh = self.done.saturating_sub(self.resumed);
        let eta = if fresh > 0 {
            hms(elapsed / fresh as f64 * self.total.saturating_sub(self.done) as f64)
        } else {
            "?".into()
        };
        eprintln!(
            "mmaemu-record: chunk {}/{chunks}: {}/{} {} ({} resumed), elapsed {}, ETA {eta}",
            chunk + 1,
            self.done,
            self.total,
            self.what,
            self.resumed,
            hms(elapsed)
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
