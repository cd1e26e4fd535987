//! The bounded outbound queue of one socket.
//!
//! Senders never wait: [`Outbound::push`] either queues the frame or, when the
//! queue already holds `socket.outgoing_queue_size` frames, closes the session
//! (a client that does not read must not slow anyone else, nor make the server
//! buffer without limit). The socket's task drains the queue with
//! [`Outbound::next_batch`], which hands over everything queued at once so the
//! writer can coalesce frames into one flush.
//!
//! An idle queue owns no buffer: the `VecDeque` allocates on first use and is
//! shrunk again after a burst, which keeps an idle socket small.
//!
//! The queue has one reader, the socket's task, so it is woken through one
//! [`AtomicWaker`]: registering is two compare-and-swaps, and a reader that
//! stops waiting leaves nothing to remove (a `Notify` waiter joins and leaves
//! a locked list every time the socket's loop turns, and a push while nobody
//! waits leaves a permit that wakes the reader once for nothing). The reader
//! looks at an atomic count of queued frames before it takes the lock, so a
//! turn of the socket's loop that finds the queue empty (most turns: it is
//! polled first, before the socket is read) costs two loads instead of a lock
//! taken and released twice.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::task::AtomicWaker;

/// Why a session was closed by the server side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client did not read fast enough and its queue filled up.
    QueueFull,
    /// `session.single_socket`: the same user opened a newer socket.
    Replaced,
    /// Closed on request (admin, account deletion).
    Disconnect,
    /// The server is shutting down.
    Shutdown,
    /// Closed by a module (`nk.session_disconnect(id, reason)`), with
    /// Nakama's presence reason number: 1 join, 2 update, 3 leave,
    /// 4 disconnect (also what 0, no reason, means).
    Module(u8),
}

/// Offset of `Module` reasons in the queue's one-byte state.
const MODULE_BASE: u8 = 16;

impl CloseReason {
    /// A module's reason number as Nakama takes it (0-4; 0 means 4).
    pub fn module(reason: u8) -> Option<CloseReason> {
        match reason {
            0 => Some(CloseReason::Module(4)),
            1..=4 => Some(CloseReason::Module(reason)),
            _ => None,
        }
    }

    pub(crate) fn to_u8(self) -> u8 {
        match self {
            CloseReason::QueueFull => 1,
            CloseReason::Replaced => 2,
            CloseReason::Disconnect => 3,
            CloseReason::Shutdown => 4,
            CloseReason::Module(r) => MODULE_BASE + r.min(4),
        }
    }

    pub(crate) fn from_u8(n: u8) -> Option<CloseReason> {
        match n {
            1 => Some(CloseReason::QueueFull),
            2 => Some(CloseReason::Replaced),
            3 => Some(CloseReason::Disconnect),
            4 => Some(CloseReason::Shutdown),
            n if (MODULE_BASE..=MODULE_BASE + 4).contains(&n) => {
                Some(CloseReason::Module(n - MODULE_BASE))
            }
            _ => None,
        }
    }

    /// A short lowercase text for the WebSocket close frame and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::QueueFull => "outgoing queue full, read messages faster",
            CloseReason::Replaced => "replaced by a newer socket of the same user",
            CloseReason::Disconnect => "disconnected by the server",
            CloseReason::Shutdown => "server shutting down, reconnect later",
            // Nakama's close text, with the module's reason when it gave one.
            CloseReason::Module(1) => "server-side session disconnect: join",
            CloseReason::Module(2) => "server-side session disconnect: update",
            CloseReason::Module(3) => "server-side session disconnect: leave",
            CloseReason::Module(_) => "server-side session disconnect",
        }
    }
}

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    #[error("outgoing queue full, the session is being closed")]
    Full,
    #[error("session closed")]
    Closed,
}

/// What the socket's writer gets from the queue.
#[derive(Debug)]
pub enum Next {
    /// Every frame that was queued, oldest first.
    Frames(Vec<Bytes>),
    /// The session must close; frames still queued are dropped.
    Close(CloseReason),
}

/// A queue that a shrinking idle buffer above this many slots gives back.
const SHRINK_ABOVE: usize = 8;

pub struct Outbound {
    frames: Mutex<VecDeque<Bytes>>,
    /// `frames.len()`, written under the lock, read without it: 0 means
    /// nothing to take. A push stores it before it wakes the reader, so a
    /// reader that registers and then reads 0 is woken by the next push.
    queued: AtomicUsize,
    capacity: usize,
    /// 0 while open, else a `CloseReason`.
    closed: AtomicU8,
    /// The reader waiting for frames or a close, if any.
    wake: AtomicWaker,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("capacity", &self.capacity)
            .field("closed", &self.close_reason())
            .finish()
    }
}

impl Outbound {
    /// A queue holding at most `capacity` frames (at least one).
    pub fn new(capacity: usize) -> Outbound {
        Outbound {
            frames: Mutex::new(VecDeque::new()),
            queued: AtomicUsize::new(0),
            capacity: capacity.max(1),
            closed: AtomicU8::new(0),
            wake: AtomicWaker::new(),
        }
    }

    /// Queues one frame without waiting. A full queue closes the session.
    pub fn push(&self, frame: Bytes) -> Result<(), PushError> {
        if self.is_closed() {
            return Err(PushError::Closed);
        }
        {
            let mut frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
            if frames.len() >= self.capacity {
                frames.clear();
                self.queued.store(0, Ordering::Release);
                drop(frames);
                self.close(CloseReason::QueueFull);
                return Err(PushError::Full);
            }
            frames.push_back(frame);
            self.queued.store(frames.len(), Ordering::Release);
        }
        self.wake.wake();
        Ok(())
    }

    /// Asks the socket to close; the first reason given wins.
    pub fn close(&self, reason: CloseReason) {
        if self
            .closed
            .compare_exchange(0, reason.to_u8(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.wake.wake();
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire) != 0
    }

    pub fn close_reason(&self) -> Option<CloseReason> {
        CloseReason::from_u8(self.closed.load(Ordering::Acquire))
    }

    /// Frames queued now.
    pub fn len(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes every queued frame without waiting.
    pub fn take_all(&self) -> Vec<Bytes> {
        if self.queued.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let mut frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        let batch: Vec<Bytes> = frames.drain(..).collect();
        self.queued.store(0, Ordering::Release);
        if frames.capacity() > SHRINK_ABOVE {
            frames.shrink_to(0);
        }
        batch
    }

    /// Waits for frames or a close. Cancel-safe: nothing is taken from the
    /// queue unless this returns. One reader at a time: a second one
    /// waiting at once would take the first one's wake-ups.
    pub async fn next_batch(&self) -> Next {
        std::future::poll_fn(|cx| self.poll_batch(cx)).await
    }

    /// [`Outbound::next_batch`] as a poll: ready with frames or a close,
    /// else `cx`'s waker is woken by the next push or close.
    pub fn poll_batch(&self, cx: &mut Context<'_>) -> Poll<Next> {
        if let Some(next) = self.ready() {
            return Poll::Ready(next);
        }
        self.wake.register(cx.waker());
        // A push between the look above and the registration woke the
        // waker stored before it: look again.
        match self.ready() {
            Some(next) => Poll::Ready(next),
            None => Poll::Pending,
        }
    }

    fn ready(&self) -> Option<Next> {
        if let Some(reason) = self.close_reason() {
            return Some(Next::Close(reason));
        }
        let batch = self.take_all();
        (!batch.is_empty()).then_some(Next::Frames(batch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_come_out_in_order_as_one_batch() {
        let q = Outbound::new(4);
        q.push(Bytes::from_static(b"a")).unwrap();
        q.push(Bytes::from_static(b"b")).unwrap();
        match q.next_batch().await {
            Next::Frames(f) => {
                assert_eq!(f, vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")])
            }
            Next::Close(r) => panic!("closed: {r:?}"),
        }
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn overflow_closes_the_session_and_drops_queued_frames() {
        let q = Outbound::new(2);
        q.push(Bytes::from_static(b"1")).unwrap();
        q.push(Bytes::from_static(b"2")).unwrap();
        assert_eq!(q.push(Bytes::from_static(b"3")), Err(PushError::Full));
        assert_eq!(q.close_reason(), Some(CloseReason::QueueFull));
        assert_eq!(q.push(Bytes::from_static(b"4")), Err(PushError::Closed));
        assert!(matches!(
            q.next_batch().await,
            Next::Close(CloseReason::QueueFull)
        ));
    }

    #[tokio::test]
    async fn first_close_reason_wins() {
        let q = Outbound::new(2);
        q.close(CloseReason::Replaced);
        q.close(CloseReason::Shutdown);
        assert_eq!(q.close_reason(), Some(CloseReason::Replaced));
    }

    #[test]
    fn module_reasons_survive_the_queue_state() {
        assert_eq!(CloseReason::module(0), Some(CloseReason::Module(4)));
        assert_eq!(CloseReason::module(5), None);
        for r in 1..=4 {
            let q = Outbound::new(2);
            q.close(CloseReason::module(r).unwrap());
            assert_eq!(q.close_reason(), Some(CloseReason::Module(r)));
        }
        assert_eq!(
            CloseReason::Module(3).as_str(),
            "server-side session disconnect: leave"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_writer_wakes_on_push() {
        let q = std::sync::Arc::new(Outbound::new(4));
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.next_batch().await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        q.push(Bytes::from_static(b"x")).unwrap();
        assert!(matches!(waiter.await.unwrap(), Next::Frames(f) if f.len() == 1));
    }

    /// The socket's loop stops waiting whenever another branch wins: a push
    /// after that is still found, and the waker left behind does no harm.
    #[tokio::test(start_paused = true)]
    async fn a_wait_given_up_loses_nothing_and_a_close_wakes_the_writer() {
        let q = std::sync::Arc::new(Outbound::new(4));
        let gave_up =
            tokio::time::timeout(std::time::Duration::from_millis(5), q.next_batch()).await;
        assert!(gave_up.is_err(), "an empty queue answered");
        q.push(Bytes::from_static(b"y")).unwrap();
        assert!(matches!(q.next_batch().await, Next::Frames(f) if f == [Bytes::from_static(b"y")]));
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.next_batch().await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        q.close(CloseReason::Shutdown);
        assert!(matches!(
            waiter.await.unwrap(),
            Next::Close(CloseReason::Shutdown)
        ));
    }

    /// Pushes from other threads racing the reader's look at the count
    /// and its registration: every frame arrives, in each pusher's order,
    /// and the reader is never left asleep with frames queued.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn racing_pushes_are_all_taken_and_never_missed() {
        const PUSHERS: u64 = 3;
        const EACH: u64 = 20_000;
        let q = std::sync::Arc::new(Outbound::new((PUSHERS * EACH) as usize));
        let pushers: Vec<_> = (0..PUSHERS)
            .map(|p| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        let n = p * EACH + i;
                        q.push(Bytes::copy_from_slice(&n.to_be_bytes())).unwrap();
                        if i % 64 == 0 {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let read = async {
            let mut next = [0u64; PUSHERS as usize];
            let mut taken = 0;
            while taken < PUSHERS * EACH {
                let Next::Frames(frames) = q.next_batch().await else {
                    panic!("closed");
                };
                for f in frames {
                    let n = u64::from_be_bytes(f[..].try_into().unwrap());
                    let p = (n / EACH) as usize;
                    assert_eq!(n % EACH, next[p], "pusher {p}'s frames out of order");
                    next[p] += 1;
                    taken += 1;
                }
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), read)
            .await
            .expect("the reader slept with frames queued");
        for p in pushers {
            p.join().unwrap();
        }
        assert_eq!(q.len(), 0);
        assert!(q.take_all().is_empty());
    }

    /// One frame at a time from another thread, each pushed as soon as
    /// the reader took the one before, so pushes keep landing while the
    /// reader is between its look at the count and its sleep: a wake-up
    /// lost there leaves it asleep for good.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_push_racing_the_readers_sleep_wakes_it() {
        use std::sync::atomic::AtomicU64;
        const ROUNDS: u64 = 20_000;
        let q = std::sync::Arc::new(Outbound::new(4));
        let taken = std::sync::Arc::new(AtomicU64::new(0));
        let pusher = std::thread::spawn({
            let (q, taken) = (q.clone(), taken.clone());
            move || {
                for i in 0..ROUNDS {
                    while taken.load(Ordering::Acquire) < i {
                        std::hint::spin_loop();
                    }
                    q.push(Bytes::copy_from_slice(&i.to_be_bytes())).unwrap();
                }
            }
        });
        let read = async {
            for i in 0..ROUNDS {
                let Next::Frames(frames) = q.next_batch().await else {
                    panic!("closed");
                };
                assert_eq!(frames, [Bytes::copy_from_slice(&i.to_be_bytes())]);
                taken.store(i + 1, Ordering::Release);
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), read)
            .await
            .expect("the reader slept with a frame queued");
        pusher.join().unwrap();
    }

    #[test]
    fn the_count_follows_pushes_takes_and_overflow() {
        let q = Outbound::new(3);
        assert_eq!(q.len(), 0);
        q.push(Bytes::from_static(b"a")).unwrap();
        q.push(Bytes::from_static(b"b")).unwrap();
        assert_eq!(q.len(), 2);
        assert_eq!(q.take_all().len(), 2);
        assert_eq!(q.len(), 0);
        for f in [b"c", b"d", b"e"] {
            q.push(Bytes::from_static(f)).unwrap();
        }
        assert_eq!(q.push(Bytes::from_static(b"f")), Err(PushError::Full));
        assert_eq!(q.len(), 0, "an overflow drops what was queued");
        assert!(q.take_all().is_empty());
    }

    #[test]
    fn an_idle_queue_owns_no_buffer() {
        let q = Outbound::new(64);
        assert_eq!(q.frames.lock().unwrap().capacity(), 0);
    }
}
