//! Ctrl-C during a long call: the work runs on its own thread with the GIL released while the calling thread polls
//! Python's signal handlers; a KeyboardInterrupt sets the call's interrupt flag, the work stops between tiles, and
//! the exception is raised.

use crate::errors::internal;
use mmaemu_api::model::interrupt::with_flag;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// Calls of fewer multiply-adds than this run on the calling thread (GIL released), uninterruptible: they end
/// within milliseconds, less than a thread's start would add to them.
const INLINE_MACS: u128 = 1 << 24;

/// How often the calling thread runs Python's signal handlers while the work runs.
const POLL: Duration = Duration::from_millis(20);

/// Run `f` (`macs` multiply-adds of work) without the GIL; for a large call, on a thread of its own while this
/// thread runs Python's signal handlers every [`POLL`]: when one raises (KeyboardInterrupt from Ctrl-C on the main
/// thread), the work is asked to stop ([`with_flag`]), is waited for, and the exception is returned.
pub fn interruptible<T: Send>(py: Python<'_>, macs: u128, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    // A calling thread that flushes subnormals or rounds off nearest computes nothing (docs/reference.md §5.2 step
    // 12): the call runs on it, so that the check sees its floating-point state (a new thread starts in the default).
    if macs < INLINE_MACS || mmaemu_api::model::fpenv::refuses() {
        return Ok(py.detach(f));
    }
    let flag = Arc::new(AtomicBool::new(false));
    let (tx, rx) = channel();
    std::thread::scope(|s| {
        let worker_flag = flag.clone();
        s.spawn(move || {
            let _ = tx.send(with_flag(worker_flag, f));
        });
        let mut rx = rx;
        loop {
            // The receiver goes to the GIL-free closure and back (it is Send, not Sync).
            let (back, got) = py.detach(move || {
                let got = rx.recv_timeout(POLL);
                (rx, got)
            });
            rx = back;
            match got {
                Ok(v) => return Ok(v),
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        flag.store(true, Ordering::Relaxed);
                        // The work stops at its next tile; its result is dropped.
                        let _ = py.detach(move || rx.recv());
                        return Err(e);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return Err(internal("the call's thread ended early".into())),
            }
        }
    })
}

/// The multiply-adds of a call: the product of A's dimensions ([M, K]) and N (saturating).
pub fn macs(a: &[usize], n: usize) -> u128 {
    a.iter().chain([&n]).fold(1u128, |p, &d| p.saturating_mul(d as u128))
}
