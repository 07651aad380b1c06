//! Interruption of long calls: a flag the caller sets (on Ctrl-C) while a call runs, seen by the work the call's
//! thread starts, which then stops between tiles, chunks or rows and ends in a [`Category::Interrupted`] error.

use crate::error::{Category, Error};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// The interrupt flag of the calling thread's call, if its caller installed one ([`with_flag`]): captured where the
/// work is planned (on the calling thread) and read by every thread that runs a part of it.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Option<Arc<AtomicBool>>);

impl Interrupt {
    /// The calling thread's flag (none outside [`with_flag`]).
    pub fn current() -> Interrupt {
        Interrupt(FLAG.with(|f| f.borrow().clone()))
    }

    /// Whether the call was asked to stop: one relaxed load.
    #[inline]
    pub fn requested(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Err([`Category::Interrupted`]) when the call was asked to stop.
    pub fn check(&self) -> Result<(), Error> {
        if self.requested() {
            return Err(Error::new(Category::Interrupted, "the call was interrupted"));
        }
        Ok(())
    }
}

/// Run `f` with `flag` as the calling thread's interrupt flag (the previous one is restored after, also when `f`
/// panics): setting it asks every call `f` makes on this thread to stop.
pub fn with_flag<T>(flag: Arc<AtomicBool>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<AtomicBool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            FLAG.with(|f| *f.borrow_mut() = prev);
        }
    }
    let _restore = Restore(FLAG.with(|f| f.borrow_mut().replace(flag)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_is_scoped_to_the_thread_and_the_call() {
        assert!(!Interrupt::current().requested());
        let flag = Arc::new(AtomicBool::new(false));
        with_flag(flag.clone(), || {
            let i = Interrupt::current();
            assert!(!i.requested() && i.check().is_ok());
            flag.store(true, Ordering::Relaxed);
            assert_eq!(i.check().unwrap_err().category(), Category::Interrupted);
            // Another thread has no flag of its own.
            assert!(!std::thread::scope(|s| s.spawn(|| Interrupt::current().requested()).join().unwrap()));
        });
        assert!(!Interrupt::current().requested());
    }
}
