//! The pool of JS contexts: each context lives on a thread of its own and
//! serves one call at a time from one bounded queue, in order.
//!
//! QuickJS cannot suspend a native function halfway, and Nakama's JS API is
//! synchronous (`nk.walletUpdate` answers the wallet, not a promise), so a
//! call waiting on a server function keeps its context and its thread, and
//! only those, until the answer comes. Other calls are served by the other
//! contexts, which pull from the same queue; the pool makes a new context
//! (up to `runtime.js_max_count`) whenever a call is queued while none is
//! idle, so a waiting call never holds a thread another call needs.
//!
//! When every context is busy, at most `queue_size` calls wait; more are
//! answered `ResourceExhausted` at once. A call still waiting after the
//! pool timeout is answered `ResourceExhausted` and never runs (its caller
//! marks it abandoned and the context that takes it skips it); one that has
//! started runs to its end under its own deadline and memory limit.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;

use super::shared::JsShared;
use super::vm::{JsVm, STACK_LIMIT};
use crate::context::CallContext;
use crate::error::{LoadError, RuntimeError};

const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const ABANDONED: u8 = 2;

type Answer = Result<Option<Value>, RuntimeError>;

/// What the first context's `InitModule` registered: callback keys and
/// match handlers.
pub(super) type Loaded = (super::vm::Keys, super::initializer::Matches);

struct Job {
    state: Arc<AtomicU8>,
    key: String,
    ctx: CallContext,
    args: Vec<Value>,
    reply: oneshot::Sender<Answer>,
}

/// What the pool's threads share.
struct Threads {
    jobs: Mutex<Receiver<Job>>,
    /// Contexts waiting for a call.
    idle: AtomicUsize,
    /// Calls queued and not yet taken by a context.
    queued: AtomicUsize,
    /// Contexts being made, which will take queued calls soon.
    starting: AtomicUsize,
    /// Contexts made (or being made).
    count: AtomicUsize,
    max: usize,
    shared: Arc<JsShared>,
}

pub(super) struct JsPool {
    sender: SyncSender<Job>,
    threads: Arc<Threads>,
    timeout: Duration,
    closed: AtomicBool,
}

impl JsPool {
    /// Contexts alive now (Nakama's `javascript_runtimes` gauge).
    pub(super) fn context_count(&self) -> usize {
        self.threads.count.load(Ordering::Relaxed)
    }

    /// Makes the first context on its thread and answers the keys its
    /// `InitModule` registered; a module that fails to load stops here.
    pub(super) fn start(shared: Arc<JsShared>) -> Result<(JsPool, Loaded), LoadError> {
        let (sender, receiver) = sync_channel(shared.settings.pool_queue_size.max(1));
        let threads = Arc::new(Threads {
            jobs: Mutex::new(receiver),
            idle: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            starting: AtomicUsize::new(1),
            count: AtomicUsize::new(1),
            max: shared.settings.js_max_count.max(1),
            shared: shared.clone(),
        });
        let (loaded_tx, loaded_rx) = std::sync::mpsc::channel();
        spawn(threads.clone(), Some(loaded_tx))?;
        let loaded = loaded_rx.recv().map_err(|_| {
            LoadError::Setup("the first js context's thread ended while loading".into())
        })??;
        let pool = JsPool {
            sender,
            threads,
            timeout: shared.settings.pool_timeout,
            closed: AtomicBool::new(false),
        };
        Ok((pool, loaded))
    }

    /// Runs the callback `key` on a free context.
    pub(super) async fn run(&self, key: String, ctx: CallContext, args: Vec<Value>) -> Answer {
        if self.closed.load(Ordering::Relaxed) {
            return Err(RuntimeError::new(
                ludus_core::Code::Unavailable,
                "the js runtime is shutting down; retry on another node",
            ));
        }
        let (reply, mut answer) = oneshot::channel();
        let state = Arc::new(AtomicU8::new(QUEUED));
        let job = Job {
            state: state.clone(),
            key,
            ctx,
            args,
            reply,
        };
        self.threads.queued.fetch_add(1, Ordering::AcqRel);
        match self.sender.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.threads.queued.fetch_sub(1, Ordering::AcqRel);
                return Err(RuntimeError::busy(
                    "every js context is busy and the queue is full (runtime.lua_pool_queue_size); retry later",
                ));
            }
            Err(TrySendError::Disconnected(_)) => {
                self.threads.queued.fetch_sub(1, Ordering::AcqRel);
                return Err(RuntimeError::internal("the js runtime has no context left"));
            }
        }
        self.threads.grow();
        match tokio::time::timeout(self.timeout, &mut answer).await {
            Ok(a) => a.unwrap_or_else(|_| Err(lost())),
            Err(_) => {
                if state
                    .compare_exchange(QUEUED, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Err(RuntimeError::busy(format!(
                        "every js context stayed busy for {} ms (runtime.lua_pool_timeout_ms); retry later",
                        self.timeout.as_millis()
                    )));
                }
                answer.await.unwrap_or_else(|_| Err(lost()))
            }
        }
    }

    /// Refuses new calls; running ones stop at their next interrupt check
    /// (the shutdown flag in `JsShared`).
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }
}

impl Threads {
    /// Makes one more context when more calls are queued than contexts are
    /// idle and the pool may grow. Callers ask after queueing, and contexts
    /// after taking a call, so a call queued while the counts moved is seen
    /// by the next look.
    fn grow(self: &Arc<Self>) {
        let t = self;
        let ready = t.idle.load(Ordering::Acquire) + t.starting.load(Ordering::Acquire);
        if t.queued.load(Ordering::Acquire) <= ready {
            return;
        }
        let grown = t
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < t.max).then_some(n + 1)
            });
        if grown.is_err() {
            return;
        }
        t.starting.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = spawn(t.clone(), None) {
            t.starting.fetch_sub(1, Ordering::AcqRel);
            t.count.fetch_sub(1, Ordering::AcqRel);
            tracing::error!(error = %e, "cannot start another js context thread");
        }
    }
}

fn lost() -> RuntimeError {
    RuntimeError::internal("the js context running this call stopped; see the server log")
}

/// Starts a context's thread; `loaded` hears the first context's keys.
fn spawn(
    threads: Arc<Threads>,
    loaded: Option<std::sync::mpsc::Sender<Result<Loaded, LoadError>>>,
) -> Result<(), LoadError> {
    let n = threads.count.load(Ordering::Relaxed);
    std::thread::Builder::new()
        .name(format!("ludus-js-{n}"))
        .stack_size(STACK_LIMIT * 8)
        .spawn(move || serve(threads, loaded))
        .map(|_| ())
        .map_err(|e| LoadError::Setup(format!("cannot start a js context thread: {e}")))
}

fn serve(
    threads: Arc<Threads>,
    loaded: Option<std::sync::mpsc::Sender<Result<Loaded, LoadError>>>,
) {
    let made = JsVm::new(threads.shared.clone());
    threads.starting.fetch_sub(1, Ordering::AcqRel);
    let mut vm = match made {
        Ok(vm) => vm,
        Err(e) => {
            threads.count.fetch_sub(1, Ordering::AcqRel);
            match loaded {
                Some(tx) => {
                    let _ = tx.send(Err(e));
                }
                None => tracing::error!(error = %e, "cannot make a js context"),
            }
            return;
        }
    };
    if let Some(tx) = loaded {
        let _ = tx.send(Ok((vm.keys(), vm.matches().clone())));
    }
    loop {
        threads.idle.fetch_add(1, Ordering::AcqRel);
        let job = threads.jobs.lock().recv();
        threads.idle.fetch_sub(1, Ordering::AcqRel);
        let Ok(job) = job else {
            return;
        };
        threads.queued.fetch_sub(1, Ordering::AcqRel);
        threads.grow();
        if job
            .state
            .compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            continue;
        }
        let (key, ctx, args) = (job.key, job.ctx, job.args);
        let answer = std::panic::catch_unwind(AssertUnwindSafe(|| vm.call(&key, &ctx, args)));
        let panicked = answer.is_err();
        let _ = job.reply.send(answer.unwrap_or_else(|_| {
            Err(RuntimeError::internal(
                "the js call failed inside the server; see the server log",
            ))
        }));
        if panicked || vm.spoiled() {
            match JsVm::new(threads.shared.clone()) {
                Ok(fresh) => vm = fresh,
                Err(e) => {
                    threads.count.fetch_sub(1, Ordering::AcqRel);
                    tracing::error!(error = %e, "cannot remake a js context after a failed call");
                    return;
                }
            }
        }
    }
}
