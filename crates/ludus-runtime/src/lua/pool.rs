//! The pool of Lua VMs. Each VM thread runs several VMs, each serving one
//! call at a time, from one shared queue in order. A call that waits on the
//! server (`nk.wallet_update`, `nk.storage_write`…) yields its VM's
//! coroutine, and the thread goes on with another VM's call meanwhile, so
//! one thread keeps many server calls in flight (and the store's group
//! commit gathers them) without a thread per waiting call. A VM never runs
//! two calls at once: module state is never shared between concurrent calls.
//! VMs beyond a thread's first are made when a call is queued while all of
//! the thread's VMs wait on the server, up to `vms_per_thread`.
//!
//! A caller queues its call and awaits the answer; a thread that finishes or
//! parks a call takes the next one at once, with no hand-back to the async
//! runtime in between. The answers of a thread's round go back together
//! (see [`Outbox`]).
//!
//! When every VM is busy, at most `queue_size` calls wait; more are answered
//! `ResourceExhausted` at once. A call still waiting after the pool timeout
//! is answered `ResourceExhausted` and never runs; one that has started runs
//! to its end (its own budgets bound it). The pool's sweeper thread finds
//! such calls, looking every quarter of the timeout, so a caller hears
//! within 1.25 timeouts; a caller holds no timer of its own (one per call
//! was a registration and a removal in the async runtime's timer wheel).
//! The pool never hangs a caller: a VM that panics is rebuilt, and if none
//! can be, the queue is failed rather than left waiting.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

use super::vm::Vm;
use crate::error::{LoadError, RuntimeError};

type Rebuild = Box<dyn Fn() -> Result<Vm, LoadError> + Send + Sync>;

/// A call as its VM thread runs it; it ends with the delivery of its
/// answer, which the thread sends with the rest of its round's (see
/// [`Outbox`]).
type Call = Pin<Box<dyn Future<Output = Reply>>>;
/// Sends a finished call's answer to its caller.
type Reply = Box<dyn FnOnce() + Send>;
type Work = Box<dyn FnOnce(Rc<Vm>) -> Call + Send>;

struct Job {
    /// Set by the sweeper when it takes the call out of the queue, so its
    /// caller answers busy. A call leaves the queue under the queue's lock,
    /// either to the sweeper or to a VM thread, never to both.
    timed_out: Arc<AtomicBool>,
    queued_at: Instant,
    work: Work,
}

pub(crate) struct VmPool {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Mutex<Queue>,
    /// One per VM thread: signalled when one of its calls is woken, when a
    /// job is queued while it sleeps with a free VM, or when the pool closes.
    wake: Vec<Condvar>,
    queue_size: usize,
    timeout: Duration,
    /// Most VMs one thread runs.
    vms_per_thread: usize,
    /// Makes a VM: a thread's extra VMs, and a fresh one when a call
    /// panicked and its VM cannot be trusted.
    rebuild: Rebuild,
    /// VMs alive on the pool's threads (Nakama's `lua_runtimes` gauge).
    live: std::sync::atomic::AtomicUsize,
}

struct Queue {
    jobs: VecDeque<Job>,
    /// VM threads alive; none left fails every call.
    threads: usize,
    closed: bool,
    /// Per thread: its VMs whose call was woken, to be polled.
    woken: Vec<Vec<usize>>,
    /// Per thread: it sleeps with a free VM, so a queued job should wake it.
    waiting: Vec<bool>,
}

impl VmPool {
    /// Starts one thread per VM given; each makes more VMs as its calls
    /// wait on the server, up to `vms_per_thread`.
    pub(crate) fn new(
        vms: Vec<Vm>,
        vms_per_thread: usize,
        queue_size: usize,
        timeout: Duration,
        rebuild: Rebuild,
    ) -> Self {
        let vms_per_thread = vms_per_thread.max(1);
        let threads = vms.len();
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                threads,
                closed: false,
                woken: vec![Vec::new(); threads],
                waiting: vec![false; threads],
            }),
            wake: (0..threads).map(|_| Condvar::new()).collect(),
            queue_size,
            timeout,
            vms_per_thread,
            rebuild,
            live: Default::default(),
        });
        for (i, vm) in vms.into_iter().enumerate() {
            let shared = inner.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("ludus-lua-{i}"))
                .spawn(move || Thread::new(shared, i, vm).serve());
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start a lua vm thread, pool shrinks by one");
                inner.queue.lock().threads -= 1;
            }
        }
        let weak = Arc::downgrade(&inner);
        let spawned = std::thread::Builder::new()
            .name("ludus-vm-sweep".into())
            .spawn(move || sweep(&weak));
        if let Err(e) = spawned {
            // Calls still run; one that waits for a VM waits until it gets one.
            tracing::error!(error = %e, "cannot start the lua pool's sweeper, queued calls will not time out");
        }
        VmPool { inner }
    }

    /// Runs `f` on the next free VM. Cancelling the returned future never
    /// loses a VM: the call still runs (a running one finishes) and its
    /// answer is dropped.
    pub(crate) async fn run<R, F, Fut>(&self, f: F) -> Result<R, RuntimeError>
    where
        F: FnOnce(Rc<Vm>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, RuntimeError>> + 'static,
        R: Send + 'static,
    {
        let inner = &self.inner;
        let (tx, rx) = oneshot::channel();
        let timed_out = Arc::new(AtomicBool::new(false));
        {
            let mut q = inner.queue.lock();
            if q.closed || q.threads == 0 {
                return Err(closed());
            }
            // Calls a sleeping thread with a free VM takes at once do not
            // count as waiting.
            let idle = q.waiting.iter().filter(|w| **w).count();
            if q.jobs.len() >= idle + inner.queue_size {
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
                timed_out: timed_out.clone(),
                queued_at: Instant::now(),
                work: Box::new(move |vm: Rc<Vm>| -> Call {
                    Box::pin(async move {
                        let answer = f(vm).await;
                        Box::new(move || {
                            let _ = tx.send(answer);
                        }) as Reply
                    })
                }),
            });
            // (The thread clears its mark when it wakes, so until then it
            // counts as taking this job at once.)
            if let Some(t) = q.waiting.iter().position(|w| *w) {
                inner.wake[t].notify_one();
            }
        }
        // A dropped sender: the sweeper took the call out of the queue, the
        // pool closed before the call ran, or the call panicked (its VM was
        // replaced).
        rx.await.unwrap_or_else(|_| {
            if timed_out.load(Ordering::Acquire) {
                Err(RuntimeError::busy(
                    "server is busy: no lua vm became free in time, retry later or raise runtime.lua_pool_size",
                ))
            } else if inner.queue.lock().closed {
                Err(closed())
            } else {
                Err(RuntimeError::internal("lua call failed"))
            }
        })
    }

    /// VMs alive on the pool's threads now.
    pub(crate) fn vm_count(&self) -> usize {
        self.inner.live.load(Ordering::Relaxed)
    }

    /// Refuses new calls; calls still queued are answered at once (their
    /// channels close), running ones finish.
    pub(crate) fn close(&self) {
        let mut q = self.inner.queue.lock();
        q.closed = true;
        q.jobs.clear();
        drop(q);
        for wake in &self.inner.wake {
            wake.notify_all();
        }
    }
}

impl Drop for VmPool {
    fn drop(&mut self) {
        self.close();
    }
}

/// Wakes one VM's call: its thread polls it again.
struct CallWaker {
    inner: Arc<Inner>,
    thread: usize,
    vm: usize,
}

impl Wake for CallWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut q = self.inner.queue.lock();
        let woken = &mut q.woken[self.thread];
        if !woken.contains(&self.vm) {
            woken.push(self.vm);
        }
        drop(q);
        self.inner.wake[self.thread].notify_one();
    }
}

/// One VM of a thread and the call it runs, if any.
struct Slot {
    /// `None` once it panicked and no fresh VM could be made.
    vm: Option<Rc<Vm>>,
    call: Option<Call>,
    waker: Waker,
}

/// The answers of a VM thread's round of work (the calls it polls and
/// starts between two looks at its queue), handed to the async runtime
/// together at the round's end.
///
/// Each answer wakes the task that awaits it. Woken from this thread while
/// the runtime's I/O thread sleeps, that thread (of the normal policy, on
/// the same core) preempts this one at once, sends one response and sleeps
/// again; the client, asleep too, is woken by each response, which on a
/// virtual machine costs the sending core an interprocessor interrupt
/// (22 % of the I/O thread's samples in the SQLite `wallet` row,
/// BENCHMARKS.md "Answers handed over by the round"). Handed over
/// together, a round's answers cost one wake: a task on the runtime (the
/// pump) sends them back to back, and the I/O thread writes their
/// responses in one burst. A round of many long calls hands its answers
/// over as it goes: none is held past [`HOLD_AT_MOST`] once the call
/// running when it passes ends.
struct Outbox {
    /// `None` without a runtime (answers are then sent at once).
    pump: Option<Arc<Pump>>,
    /// This round's answers.
    held: Vec<Reply>,
    /// When the oldest of them was held.
    since: Option<Instant>,
}

/// Longest an answer waits for its round's end, unless a call that runs
/// longer is under way: a few wallet rounds of 16 calls on a slow core.
const HOLD_AT_MOST: Duration = Duration::from_millis(1);

#[derive(Default)]
struct Pump {
    replies: Mutex<Vec<Reply>>,
    notify: tokio::sync::Notify,
    /// The VM thread is gone: the task ends once it has sent what is left.
    closed: std::sync::atomic::AtomicBool,
}

impl Outbox {
    /// Starts the pump task on `handle`, if there is one.
    fn new(handle: Option<&tokio::runtime::Handle>) -> Outbox {
        let pump = handle.map(|handle| {
            let pump = Arc::new(Pump::default());
            let task = pump.clone();
            handle.spawn(async move {
                let mut round = Vec::new();
                loop {
                    task.notify.notified().await;
                    std::mem::swap(&mut round, &mut *task.replies.lock());
                    for reply in round.drain(..) {
                        reply();
                    }
                    if task.closed.load(Ordering::Acquire) && task.replies.lock().is_empty() {
                        return;
                    }
                }
            });
            pump
        });
        Outbox {
            pump,
            held: Vec::new(),
            since: None,
        }
    }

    fn hold(&mut self, reply: Reply) {
        if self.held.is_empty() {
            self.since = Some(Instant::now());
        }
        self.held.push(reply);
    }

    /// Hands the answers over if the oldest has waited long enough.
    fn flush_if_due(&mut self) {
        if self
            .since
            .is_some_and(|since| since.elapsed() >= HOLD_AT_MOST)
        {
            self.flush();
        }
    }

    /// Hands this round's answers over: one wake of the pump, or a lone
    /// answer (a round of one call that did not wait: an echo RPC's) sent
    /// at once, which is one wake too, without the pump's task in between.
    fn flush(&mut self) {
        self.since = None;
        match (&self.pump, self.held.len()) {
            (_, 0) => {}
            (Some(pump), 2..) => {
                pump.replies.lock().append(&mut self.held);
                pump.notify.notify_one();
            }
            _ => self.held.drain(..).for_each(|reply| reply()),
        }
    }

    /// Hands over what is left and lets the pump task end.
    fn close(&mut self) {
        self.flush();
        if let Some(pump) = &self.pump {
            pump.closed.store(true, Ordering::Release);
            pump.notify.notify_one();
        }
    }
}

/// One VM thread: its VMs, and the calls they run.
struct Thread {
    inner: Arc<Inner>,
    index: usize,
    /// Answers of calls that ended this round.
    outbox: Outbox,
    slots: Vec<Slot>,
    /// VMs this thread may still run (fewer once a VM cannot be rebuilt).
    capacity: usize,
    /// Slots running a call.
    busy: usize,
    /// Slots with a VM and no call, the one freed last on top: a new call
    /// goes to the VM whose memory is most likely still in the caches.
    idle: Vec<usize>,
}

impl Thread {
    fn new(inner: Arc<Inner>, index: usize, vm: Vm) -> Self {
        let capacity = inner.vms_per_thread;
        let mut thread = Thread {
            inner,
            index,
            outbox: Outbox::new(None),
            slots: Vec::new(),
            capacity,
            busy: 0,
            idle: Vec::new(),
        };
        let first = thread.add_slot(vm);
        thread.idle.push(first);
        thread
    }

    fn add_slot(&mut self, vm: Vm) -> usize {
        self.inner.live.fetch_add(1, Ordering::Relaxed);
        let i = self.slots.len();
        self.slots.push(Slot {
            vm: Some(Rc::new(vm)),
            call: None,
            waker: Waker::from(Arc::new(CallWaker {
                inner: self.inner.clone(),
                thread: self.index,
                vm: i,
            })),
        });
        i
    }

    /// Polls woken calls and starts queued ones until the pool closes and
    /// the last call of this thread is over.
    fn serve(mut self) {
        // A call queued to this sleeping thread does not preempt the I/O
        // thread that queued it (+22 % Lua RPCs over HTTP; BENCHMARKS.md).
        ludus_core::sched::batch_scheduling("lua vm");
        // Server calls from Lua make tokio timers and tasks on this thread.
        let handle = self.slots[0].vm.as_ref().map(|vm| vm.runtime_handle());
        let _entered = handle.as_ref().map(|h| h.enter());
        self.outbox = Outbox::new(handle.as_ref());
        self.serve_calls();
        self.outbox.close();
    }

    fn serve_calls(&mut self) {
        let mut woken = Vec::new();
        loop {
            let job = {
                let inner = &self.inner;
                let mut q = inner.queue.lock();
                loop {
                    std::mem::swap(&mut woken, &mut q.woken[self.index]);
                    let job = if self.busy < self.capacity {
                        q.jobs.pop_front()
                    } else {
                        None
                    };
                    if !woken.is_empty() || job.is_some() {
                        break job;
                    }
                    if (q.closed && self.busy == 0) || self.capacity == 0 {
                        q.threads -= 1;
                        if q.threads == 0 {
                            // Nobody is left to serve them: fail them now.
                            q.jobs.clear();
                        }
                        return;
                    }
                    q.waiting[self.index] = self.busy < self.capacity;
                    inner.wake[self.index].wait(&mut q);
                    q.waiting[self.index] = false;
                }
            };
            for i in woken.drain(..) {
                // A VM whose call ended here takes the next queued call at
                // once, while its memory is still in the caches: each VM is
                // then touched once per round of commits, not twice.
                if self.poll(i) {
                    self.take_next();
                }
            }
            if let Some(job) = job {
                self.start(job);
            }
            self.outbox.flush();
        }
    }

    /// Starts the next queued call, if this thread has room for one.
    fn take_next(&mut self) {
        let job = {
            let mut q = self.inner.queue.lock();
            if self.busy >= self.capacity {
                return;
            }
            match q.jobs.pop_front() {
                Some(job) => job,
                None => return,
            }
        };
        self.start(job);
    }

    /// Starts a call taken out of the queue on the VM freed last, or on one
    /// made now if none is free.
    fn start(&mut self, job: Job) {
        let i = match self.idle.pop() {
            Some(i) => i,
            None => match (self.inner.rebuild)() {
                Ok(vm) => self.add_slot(vm),
                Err(e) => {
                    // Runs on the VMs it has; the call waits for one of them.
                    tracing::error!(error = %e, "cannot make another lua vm, this thread keeps the ones it has");
                    self.capacity = self.live_vms();
                    self.inner.queue.lock().jobs.push_front(job);
                    return;
                }
            },
        };
        let Some(vm) = self.slots[i].vm.clone() else {
            return;
        };
        self.busy += 1;
        self.slots[i].call = Some((job.work)(vm));
        self.poll(i);
    }

    /// Polls the call of slot `i`, if it still runs one; true when that
    /// call ended and its VM is free for another.
    fn poll(&mut self, i: usize) -> bool {
        self.outbox.flush_if_due();
        let slot = &mut self.slots[i];
        let (Some(call), Some(vm)) = (slot.call.as_mut(), slot.vm.as_ref()) else {
            return false;
        };
        vm.resume_deadline();
        let mut cx = Context::from_waker(&slot.waker);
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut cx)));
        match polled {
            Ok(Poll::Pending) => return false,
            Ok(Poll::Ready(reply)) => {
                slot.call = None;
                self.outbox.hold(reply);
            }
            Err(_) => {
                tracing::error!("lua call panicked, replacing its vm");
                // Its answer channel closes with it: the caller hears of a failed call.
                let call = slot.call.take();
                let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(call)));
                slot.vm = None;
                match (self.inner.rebuild)() {
                    Ok(fresh) => self.slots[i].vm = Some(Rc::new(fresh)),
                    Err(e) => {
                        self.inner.live.fetch_sub(1, Ordering::Relaxed);
                        tracing::error!(error = %e, "cannot rebuild lua vm, pool shrinks by one");
                        self.busy -= 1;
                        self.capacity -= 1;
                        return false;
                    }
                }
            }
        }
        self.busy -= 1;
        self.idle.push(i);
        true
    }

    fn live_vms(&self) -> usize {
        self.slots.iter().filter(|s| s.vm.is_some()).count()
    }
}

/// The sweeper: every quarter of the pool timeout, takes the calls queued
/// longer than the timeout out of the queue (their callers hear "busy").
/// Ends when the pool closes or is gone.
fn sweep(pool: &std::sync::Weak<Inner>) {
    let Some(timeout) = pool.upgrade().map(|inner| inner.timeout) else {
        return;
    };
    let period = (timeout / 4).max(Duration::from_millis(1));
    loop {
        std::thread::sleep(period);
        let Some(inner) = pool.upgrade() else {
            return;
        };
        let mut expired = Vec::new();
        {
            let mut q = inner.queue.lock();
            if q.closed {
                return;
            }
            // Queued in order, so the expired ones lead the queue.
            let now = Instant::now();
            while let Some(job) = q.jobs.front() {
                if now.saturating_duration_since(job.queued_at) < timeout {
                    break;
                }
                let job = q.jobs.pop_front().expect("a front job");
                job.timed_out.store(true, Ordering::Release);
                expired.push(job);
            }
        }
        if !expired.is_empty() {
            tracing::warn!(
                calls = expired.len(),
                timeout_ms = timeout.as_millis() as u64,
                "timed out waiting for a lua vm"
            );
        }
        // Their answer channels close here, outside the lock.
        drop(expired);
    }
}

fn closed() -> RuntimeError {
    RuntimeError::new(
        ludus_core::Code::Unavailable,
        "server is shutting down, retry on another node",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply_to(tx: oneshot::Sender<usize>, n: usize) -> Reply {
        Box::new(move || {
            let _ = tx.send(n);
        })
    }

    /// A round's answers are held until its end, then all delivered (by the
    /// pump task when there are several).
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_rounds_answers_go_out_together_at_its_end() {
        let handle = tokio::runtime::Handle::current();
        let mut outbox = Outbox::new(Some(&handle));
        let mut rxs = Vec::new();
        for n in 0..3 {
            let (tx, rx) = oneshot::channel();
            outbox.hold(reply_to(tx, n));
            rxs.push(rx);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        for rx in &mut rxs {
            assert!(
                rx.try_recv().is_err(),
                "an answer went out before the round ended"
            );
        }
        outbox.flush();
        assert!(outbox.held.is_empty());
        for (n, rx) in rxs.into_iter().enumerate() {
            let got = tokio::time::timeout(Duration::from_secs(5), rx).await;
            assert_eq!(got.expect("answer delivered").expect("sent"), n);
        }
        // A lone answer goes at once, without the pump.
        let (tx, mut rx) = oneshot::channel();
        outbox.hold(reply_to(tx, 7));
        outbox.flush();
        assert_eq!(rx.try_recv().expect("sent at the flush"), 7);
    }

    /// Answers held past `HOLD_AT_MOST` go out before the next call runs,
    /// whether or not the round has ended.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn answers_held_too_long_go_out_before_the_next_call() {
        let handle = tokio::runtime::Handle::current();
        let mut outbox = Outbox::new(Some(&handle));
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        outbox.hold(reply_to(tx1, 1));
        outbox.hold(reply_to(tx2, 2));
        std::thread::sleep(HOLD_AT_MOST * 2);
        outbox.flush_if_due();
        assert!(
            outbox.held.is_empty(),
            "answers older than the bound were kept"
        );
        let wait = Duration::from_secs(5);
        assert_eq!(tokio::time::timeout(wait, rx1).await.unwrap().unwrap(), 1);
        assert_eq!(tokio::time::timeout(wait, rx2).await.unwrap().unwrap(), 2);
        // Nothing held: nothing to do, and the next hold starts a new wait.
        outbox.flush_if_due();
        assert!(outbox.since.is_none());
    }

    /// Without a runtime the answers are sent at the flush itself.
    #[test]
    fn without_a_runtime_answers_go_at_the_flush() {
        let mut outbox = Outbox::new(None);
        let (tx1, mut rx1) = oneshot::channel();
        let (tx2, mut rx2) = oneshot::channel();
        outbox.hold(reply_to(tx1, 1));
        outbox.hold(reply_to(tx2, 2));
        assert!(rx1.try_recv().is_err());
        outbox.flush();
        assert_eq!((rx1.try_recv().unwrap(), rx2.try_recv().unwrap()), (1, 2));
    }

    /// Closing delivers what is left and ends the pump task, so a closed
    /// pool leaves no task behind on the runtime.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn closing_sends_the_rest_and_ends_the_pump() {
        let handle = tokio::runtime::Handle::current();
        let before = handle.metrics().num_alive_tasks();
        let mut outbox = Outbox::new(Some(&handle));
        assert_eq!(handle.metrics().num_alive_tasks(), before + 1);
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        outbox.hold(reply_to(tx1, 1));
        outbox.hold(reply_to(tx2, 2));
        outbox.close();
        let wait = Duration::from_secs(5);
        assert_eq!(tokio::time::timeout(wait, rx1).await.unwrap().unwrap(), 1);
        assert_eq!(tokio::time::timeout(wait, rx2).await.unwrap().unwrap(), 2);
        let deadline = std::time::Instant::now() + wait;
        while handle.metrics().num_alive_tasks() > before {
            assert!(
                std::time::Instant::now() < deadline,
                "the pump task did not end"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
