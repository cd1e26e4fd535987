//! The single SQLite writer: a dedicated thread owns the read-write
//! connection and commits every write queued while the previous transaction
//! ran in one transaction (group commit).
//!
//! Each write runs inside its own SAVEPOINT, so a write that fails (a taken
//! username, say) rolls back only itself while the rest of the batch commits.
//! Callers hear back only after COMMIT, so a reply of success means the write
//! is visible to every reader.

use std::sync::Mutex;
use std::thread::JoinHandle;

use ludus_core::store::{StoreError, StoreResult};
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::checkpointer::Committed;
use super::queries::exec;

/// Most writes committed in one transaction; bounds how long one batch holds
/// the write lock and how late its first caller hears back.
const MAX_BATCH: usize = 512;

/// Writes waiting for the writer; senders wait (asynchronously) when it is full.
const QUEUE_CAPACITY: usize = 4096;

/// A write waiting for its transaction, type-erased so one queue carries them all.
trait WriteJob: Send {
    /// Runs the write inside the open transaction; false means it failed and
    /// its savepoint must be rolled back.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Reports the outcome once the transaction has committed, or why it did not.
    fn finish(self: Box<Self>, commit: Result<(), StoreError>);
}

struct Job<F, T> {
    work: Option<F>,
    outcome: Option<StoreResult<T>>,
    reply: oneshot::Sender<StoreResult<T>>,
}

impl<F, T> WriteJob for Job<F, T>
where
    F: FnOnce(&Connection) -> StoreResult<T> + Send,
    T: Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(work) = self.work.take() else {
            return true;
        };
        let outcome = work(conn);
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, commit: Result<(), StoreError>) {
        let result = match (self.outcome, commit) {
            // A failed write reports its own error, whatever became of the batch.
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (_, Err(e)) => Err(e),
            (None, Ok(())) => Err(StoreError::Backend("write was not run".into())),
        };
        // The caller may have gone away; the write stands either way.
        let _ = self.reply.send(result);
    }
}

enum Msg {
    Write(Box<dyn WriteJob>),
    /// Commit everything queued before this, close the connection, then acknowledge.
    Shutdown(oneshot::Sender<()>),
}

/// Handle to the writer thread.
pub(super) struct Writer {
    tx: mpsc::Sender<Msg>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    /// Starts the writer on `conn`; each commit wakes `committed` (the
    /// checkpointer: the connection's own automatic checkpoints are off).
    pub(super) fn start(conn: Connection, committed: Committed) -> std::io::Result<Writer> {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let thread = std::thread::Builder::new()
            .name("ludus-sqlite-writer".into())
            .spawn(move || {
                // A write queued to this sleeping thread does not preempt
                // the I/O thread: it queues more, and the batch grows
                // (+38 % storage writes on one core; BENCHMARKS.md).
                ludus_core::sched::batch_scheduling("sqlite writer");
                run(conn, rx, &committed)
            })?;
        Ok(Writer {
            tx,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues a write and waits until its transaction has committed.
    pub(super) async fn write<T, F>(&self, work: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let job = Box::new(Job {
            work: Some(work),
            outcome: None,
            reply,
        });
        self.tx.send(Msg::Write(job)).await.map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// Commits what is queued, closes the connection and ends the thread.
    pub(super) async fn close(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Shutdown(ack)).await.is_ok() {
            let _ = done.await;
        }
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            // The thread has acknowledged, so joining takes microseconds; still off the async threads.
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("store is closed".into())
}

fn run(conn: Connection, mut rx: mpsc::Receiver<Msg>, committed: &Committed) {
    let mut batch: Vec<Box<dyn WriteJob>> = Vec::with_capacity(MAX_BATCH);
    let mut shutdown = None;
    while shutdown.is_none() {
        match rx.blocking_recv() {
            Some(Msg::Write(job)) => batch.push(job),
            Some(Msg::Shutdown(ack)) => shutdown = Some(ack),
            // Every handle is gone without a close(): nothing more can arrive.
            None => break,
        }
        while batch.len() < MAX_BATCH && shutdown.is_none() {
            match rx.try_recv() {
                Ok(Msg::Write(job)) => batch.push(job),
                Ok(Msg::Shutdown(ack)) => shutdown = Some(ack),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            commit_batch(&conn, &mut batch);
            committed.notify();
        }
    }
    // Refuse what raced with the shutdown instead of leaving callers waiting.
    rx.close();
    while let Ok(msg) = rx.try_recv() {
        match msg {
            Msg::Write(job) => job.finish(Err(closed())),
            Msg::Shutdown(ack) => {
                let _ = ack.send(());
            }
        }
    }
    if let Err((_, e)) = conn.close() {
        tracing::warn!(error = %e, "closing the sqlite write connection failed");
    }
    tracing::debug!("sqlite writer stopped");
    if let Some(ack) = shutdown {
        let _ = ack.send(());
    }
}

/// Runs the batch in one transaction, one savepoint per write, and replies to each.
fn commit_batch(conn: &Connection, batch: &mut Vec<Box<dyn WriteJob>>) {
    let size = batch.len();
    let result = run_in_transaction(conn, batch);
    if let Err(e) = &result {
        tracing::warn!(error = %e, writes = size, "sqlite group commit failed");
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
    } else {
        tracing::trace!(writes = size, "sqlite group commit");
    }
    for job in batch.drain(..) {
        job.finish(result.clone());
    }
}

fn run_in_transaction(
    conn: &Connection,
    batch: &mut [Box<dyn WriteJob>],
) -> Result<(), StoreError> {
    exec(conn, "BEGIN IMMEDIATE")?;
    for job in batch.iter_mut() {
        exec(conn, "SAVEPOINT write")?;
        if job.run(conn) {
            exec(conn, "RELEASE write")?;
        } else {
            exec(conn, "ROLLBACK TO write")?;
            exec(conn, "RELEASE write")?;
        }
    }
    exec(conn, "COMMIT")
}
