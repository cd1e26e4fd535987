//! A JS call's limits as QuickJS's interrupt handler checks them: the
//! call's deadline, and the runtime-wide stop raised at shutdown. QuickJS
//! calls the handler every few thousand operations, so a runaway loop ends
//! within microseconds of its deadline; its exception cannot be caught by
//! module code.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why a call was stopped, so its error says which limit it hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    Deadline(Duration),
    Shutdown,
}

/// The limits of the call a context runs now; none between calls.
pub(super) struct Budget {
    deadline: Cell<Option<(Instant, Duration)>>,
    stopped: Cell<Option<Stop>>,
    shutdown: Arc<AtomicBool>,
}

impl Budget {
    pub(super) fn new(shutdown: Arc<AtomicBool>) -> Budget {
        Budget {
            deadline: Cell::new(None),
            stopped: Cell::new(None),
            shutdown,
        }
    }

    /// Starts a call that may run for `limit`.
    pub(super) fn start(&self, limit: Duration) {
        self.deadline.set(Some((Instant::now() + limit, limit)));
        self.stopped.set(None);
    }

    /// Ends the call; answers which limit stopped it, if one did.
    pub(super) fn finish(&self) -> Option<Stop> {
        self.deadline.set(None);
        self.stopped.take()
    }

    /// The interrupt handler's question: must the running code stop now?
    pub(super) fn should_stop(&self) -> bool {
        if self.stopped.get().is_some() {
            return true;
        }
        if self.shutdown.load(Ordering::Relaxed) {
            self.stopped.set(Some(Stop::Shutdown));
            return true;
        }
        match self.deadline.get() {
            Some((at, limit)) if Instant::now() >= at => {
                self.stopped.set(Some(Stop::Deadline(limit)));
                true
            }
            _ => false,
        }
    }
}

impl Stop {
    pub(super) fn message(self) -> String {
        match self {
            Stop::Deadline(limit) => format!(
                "js call stopped: it ran longer than {} ms (runtime.js_call_timeout_ms); make the work smaller or raise the limit",
                limit.as_millis()
            ),
            Stop::Shutdown => "js call stopped: the server is shutting down".to_owned(),
        }
    }
}
