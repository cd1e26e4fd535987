//! The pool of Lua VMs: one OS thread owns each VM and serves calls from one
//! shared queue, in order. A caller queues its call and awaits the answer;
//! a VM that finishes a call takes the next one at once, with no hand-back
//! to the async runtime in between (a call used to hop to tokio's blocking
//! pool and back, leaving the VM idle during both hops).
//!
//! When every VM is busy, at most `queue_size` calls wait; more are answered
//! `ResourceExhausted` at once. A call still waiting after the pool timeout
//! is answered `ResourceExhausted` and never runs; one that has started runs
//! to its end (its own budgets bound it). The pool never hangs a caller: a
//! VM that panics is rebuilt on its thread, and if none can be, the queue is
//! failed rather than left waiting.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

use super::vm::Vm;
use crate::error::{LoadError, RuntimeError};

type Rebuild = Box<dyn Fn() -> Result<Vm, LoadError> + Send + Sync>;

/// A call as its VM thread runs it; it answers through its own channel.
type Work = Box<dyn FnOnce(&Vm) + Send>;

/// Where a queued call stands; whoever moves it out of `QUEUED` owns it.
const QUEUED: u8 = 0;
const STARTED: u8 = 1;
const ABANDONED: u8 = 2;

struct Job {
    state: Arc<AtomicU8>,
    work: Work,
}

pub(crate) struct VmPool {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Mutex<Queue>,
    /// Signalled when a job is queued or the pool closes.
    ready: Condvar,
    queue_size: usize,
    timeout: Duration,
    /// Makes a fresh VM when a call panicked and its VM cannot be trusted.
    rebuild: Rebuild,
}

struct Queue {
    jobs: VecDeque<Job>,
    /// VM threads waiting for a job.
    idle: usize,
    /// VM threads alive; none left fails every call.
    threads: usize,
    closed: bool,
}

impl VmPool {
    /// Starts one thread per VM.
    pub(crate) fn new(
        vms: Vec<Vm>,
        queue_size: usize,
        timeout: Duration,
        rebuild: Rebuild,
    ) -> Self {
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                idle: 0,
                threads: vms.len(),
                closed: false,
            }),
            ready: Condvar::new(),
            queue_size,
            timeout,
            rebuild,
        });
        for (i, vm) in vms.into_iter().enumerate() {
            let shared = inner.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("ludus-lua-{i}"))
                .spawn(move || serve(&shared, vm));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start a lua vm thread, pool shrinks by one");
                inner.queue.lock().threads -= 1;
            }
        }
        VmPool { inner }
    }

    /// Runs `f` on the next free VM. Cancelling the returned future never
    /// loses a VM: a queued call is then skipped, a running one finishes.
    pub(crate) async fn run<R, F>(&self, f: F) -> Result<R, RuntimeError>
    where
        F: FnOnce(&Vm) -> Result<R, RuntimeError> + Send + 'static,
        R: Send + 'static,
    {
        let inner = &self.inner;
        let (tx, rx) = oneshot::channel();
        let state = Arc::new(AtomicU8::new(QUEUED));
        {
            let mut q = inner.queue.lock();
            if q.closed || q.threads == 0 {
                return Err(closed());
            }
            // Calls a free VM takes at once do not count as waiting.
            if q.jobs.len() >= q.idle + inner.queue_size {
                drop(q);
                tracing::warn!(
                    queue = inner.queue_size,
                    "lua vm pool queue full, refusing call"
                );
                return Err(RuntimeError::busy(
                    "server is busy: every lua vm is in use and the wait queue is full, retry later or raise runtime.lua_pool_size",
                ));
            }
            q.jobs.push_back(Job {
                state: state.clone(),
                work: Box::new(move |vm: &Vm| {
                    let _ = tx.send(f(vm));
                }),
            });
        }
        inner.ready.notify_one();
        let mut rx = rx;
        let answer = tokio::select! {
            answer = &mut rx => answer,
            () = tokio::time::sleep(inner.timeout) => {
                if state
                    .compare_exchange(QUEUED, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    // Out of the queue now, so it no longer counts as waiting.
                    inner
                        .queue
                        .lock()
                        .jobs
                        .retain(|j| !Arc::ptr_eq(&j.state, &state));
                    tracing::warn!(
                        timeout_ms = inner.timeout.as_millis() as u64,
                        "timed out waiting for a lua vm"
                    );
                    return Err(RuntimeError::busy(
                        "server is busy: no lua vm became free in time, retry later or raise runtime.lua_pool_size",
                    ));
                }
                // Started already: its budgets bound it.
                rx.await
            }
        };
        // A dropped sender: the pool closed before the call ran, or the call
        // panicked (its VM was replaced).
        answer.unwrap_or_else(|_| {
            if inner.queue.lock().closed {
                Err(closed())
            } else {
                Err(RuntimeError::internal("lua call failed"))
            }
        })
    }

    /// Refuses new calls; calls still queued are answered at once (their
    /// channels close), running ones finish.
    pub(crate) fn close(&self) {
        let mut q = self.inner.queue.lock();
        q.closed = true;
        q.jobs.clear();
        drop(q);
        self.inner.ready.notify_all();
    }
}

impl Drop for VmPool {
    fn drop(&mut self) {
        self.close();
    }
}

/// One VM thread: takes jobs in order until the pool closes.
fn serve(inner: &Inner, mut vm: Vm) {
    batch_scheduling();
    loop {
        let job = {
            let mut q = inner.queue.lock();
            loop {
                if q.closed {
                    q.threads -= 1;
                    return;
                }
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                q.idle += 1;
                inner.ready.wait(&mut q);
                q.idle -= 1;
            }
        };
        if job
            .state
            .compare_exchange(QUEUED, STARTED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            continue; // its caller stopped waiting
        }
        let work = job.work;
        if std::panic::catch_unwind(AssertUnwindSafe(|| work(&vm))).is_err() {
            tracing::error!("lua call panicked, replacing its vm");
            match (inner.rebuild)() {
                Ok(fresh) => vm = fresh,
                Err(e) => {
                    tracing::error!(error = %e, "cannot rebuild lua vm, pool shrinks by one");
                    let mut q = inner.queue.lock();
                    q.threads -= 1;
                    if q.threads == 0 {
                        // Nobody is left to serve them: fail them now.
                        q.jobs.clear();
                    }
                    return;
                }
            }
        }
    }
}

/// Marks the calling thread `SCHED_BATCH` (Linux) when it runs at niceness
/// 0 (the policy is set together with a niceness, and a niced server keeps
/// its own).
///
/// A VM thread sleeps whenever the queue is empty. Under the default policy
/// the kernel lets a thread that wakes preempt the running one, so every
/// call queued to an idle VM switched the core from the I/O thread to the
/// VM thread and back: one call per switch pair. A batch thread does not
/// preempt on waking; the I/O thread goes on queueing the calls it has and
/// the VM then runs them back to back, with the same share of the CPU as
/// before. (+22 % Lua RPCs over HTTP, +15 % over the socket; BENCHMARKS.md.)
/// Where the policy cannot be set the VM runs as before.
fn batch_scheduling() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::{
            NormalThreadSchedulePolicy, ThreadPriority, ThreadPriorityOsValue,
            ThreadSchedulePolicy, set_thread_priority_and_policy, thread_native_id,
        };
        // Field 19 of /proc/thread-self/stat, after the parenthesised name.
        let nice = std::fs::read_to_string("/proc/thread-self/stat")
            .ok()
            .and_then(|stat| {
                let rest = &stat[stat.rfind(')')? + 2..];
                rest.split(' ').nth(16)?.parse::<i32>().ok()
            });
        if nice != Some(0) {
            return;
        }
        let set = set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Os(ThreadPriorityOsValue::default()),
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
        );
        if let Err(e) = set {
            tracing::debug!(error = ?e, "lua vm thread: scheduling policy or niceness not set");
        }
    }
}

fn closed() -> RuntimeError {
    RuntimeError::new(
        ludus_core::Code::Unavailable,
        "server is shutting down, retry on another node",
    )
}
