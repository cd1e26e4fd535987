//! Group commit of small writes that come one at a time (sign-ups,
//! `register.rs`; single-wallet updates, `wallets.rs`; single-object
//! storage writes, `object_writes.rs`), and the same gathering for storage
//! reads by id (`object_reads.rs`): concurrent jobs queue here and a
//! batch of them is applied by one statement. While batches run (at most
//! `in_flight` at once) the next one gathers, so the batch size follows the
//! load; a batch of one is what a single write was before.
//!
//! A batch holds each key (the row a job changes) at most once, since one
//! statement cannot change a row twice; a further job of a key already in
//! the gathering batch runs alone, as a statement of its own, beside it.
//! Many writers of one hot row thus stay concurrent statements, which
//! PostgreSQL serializes on the row lock far more cheaply than batches of
//! one queued behind each other. A kind whose jobs of one key combine into
//! one change of its row ([`Job::GROUPED`], the wallets) takes every job
//! gathered into the batch instead, and applies those of one key together.
//!
//! A job answers its caller through a channel it carries; a job dropped
//! unanswered (queued when the store closed) tells its caller the store is
//! closed.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use ludus_core::store::{StoreError, StoreResult};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::errors;
use super::pool::Pool;
use super::statements::Stmt;

/// Jobs waiting for a batch; senders wait (asynchronously) when it is full.
const QUEUE_CAPACITY: usize = 4096;

/// One kind of batched write.
pub(super) trait Job: Send + Sized + 'static {
    /// What a batch holds at most once: the row the job changes.
    type Key: Hash + Eq;

    /// Most jobs gathered for one batch.
    const MAX_BATCH: usize = 128;

    /// Whether a batch takes several jobs of one key (which `apply` then
    /// combines), rather than running the further ones alone.
    const GROUPED: bool = false;

    fn key(&self) -> Self::Key;

    /// Applies a batch of jobs (of distinct keys, unless `GROUPED`) and
    /// answers each.
    fn apply(pool: Pool, batch: Vec<Self>) -> impl Future<Output = ()> + Send;

    /// Applies one job as a statement of its own and answers it: by
    /// default, as a batch of one (the batcher runs no job of a `GROUPED`
    /// kind alone).
    fn alone(pool: Pool, job: Self) -> impl Future<Output = ()> + Send {
        Self::apply(pool, vec![job])
    }
}

/// A job that answers with an output when applied, or "not applied".
pub(super) trait Answer: Job {
    type Output;

    /// Answers the caller: `Ok(None)` when the job was not applied (the
    /// caller then runs the general path, which says why).
    fn answer(self, result: StoreResult<Option<Self::Output>>);
}

enum Msg<J> {
    Job(J),
    /// Apply everything queued before this, then acknowledge.
    Shutdown(oneshot::Sender<()>),
}

pub(super) struct Batcher<J: Job> {
    tx: mpsc::Sender<Msg<J>>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl<J: Job> Batcher<J> {
    /// Starts the batching task; at most `in_flight` batches run at once.
    pub(super) fn start(pool: Pool, in_flight: usize) -> Batcher<J> {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let task = tokio::spawn(run(pool, rx, in_flight.max(1)));
        Batcher {
            tx,
            task: Mutex::new(Some(task)),
        }
    }

    /// Queues `job` and waits for the answer it sends through its own
    /// channel, whose receiving end is `rx`.
    pub(super) async fn call<T>(
        &self,
        job: J,
        rx: oneshot::Receiver<StoreResult<T>>,
    ) -> StoreResult<T> {
        self.tx.send(Msg::Job(job)).await.map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// Applies what is queued and stops the task.
    pub(super) async fn close(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Shutdown(ack)).await.is_ok() {
            let _ = done.await;
        }
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// What a caller hears from a job dropped unanswered.
fn closed() -> StoreError {
    StoreError::Unavailable("store is closed".into())
}

async fn run<J: Job>(pool: Pool, mut rx: mpsc::Receiver<Msg<J>>, in_flight: usize) {
    let slots = Arc::new(Semaphore::new(in_flight));
    // Jobs running alone, waited for at shutdown.
    let mut alone = JoinSet::new();
    let mut shutdown = None;
    while shutdown.is_none() {
        let mut queue = match rx.recv().await {
            Some(Msg::Job(job)) => vec![job],
            Some(Msg::Shutdown(ack)) => {
                shutdown = Some(ack);
                break;
            }
            None => break,
        };
        // Waiting for a free slot is what lets the next batch grow.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            break;
        };
        while queue.len() < J::MAX_BATCH {
            match rx.try_recv() {
                Ok(Msg::Job(job)) => queue.push(job),
                Ok(Msg::Shutdown(ack)) => {
                    shutdown = Some(ack);
                    break;
                }
                Err(_) => break,
            }
        }
        while alone.try_join_next().is_some() {}
        let (batch, again) = if J::GROUPED {
            (queue, Vec::new())
        } else {
            split(queue)
        };
        pool.count_batch(batch.len());
        for job in again {
            alone.spawn(J::alone(pool.clone(), job));
        }
        let pool = pool.clone();
        tokio::spawn(async move {
            J::apply(pool, batch).await;
            drop(slot);
        });
    }
    // Wait for every batch and job still running.
    let _ = slots.acquire_many(in_flight as u32).await;
    while alone.join_next().await.is_some() {}
    rx.close();
    while let Ok(msg) = rx.try_recv() {
        if let Msg::Shutdown(ack) = msg {
            let _ = ack.send(());
        }
    }
    if let Some(ack) = shutdown {
        let _ = ack.send(());
    }
}

/// Splits gathered jobs into a batch, the first job of each key in the
/// order they came, and the rest, which run alone.
fn split<J: Job>(queue: Vec<J>) -> (Vec<J>, Vec<J>) {
    let mut keys = HashSet::with_capacity(queue.len());
    queue.into_iter().partition(|job| keys.insert(job.key()))
}

/// Why a batch's statement applied nothing.
pub(super) enum BatchFailure {
    /// The database refused it (nothing was written): each job takes the
    /// general path.
    Refused,
    /// No answer (the connection, or none to be had): it may have committed,
    /// so no job of it may run again.
    Lost(StoreError),
}

/// Runs a batch's statement: its rows, or why it applied nothing.
pub(super) async fn query(
    pool: &Pool,
    stmt: Stmt,
    params: &[&(dyn ToSql + Sync)],
    jobs: usize,
) -> Result<Vec<Row>, BatchFailure> {
    let conn = pool.get().await.map_err(BatchFailure::Lost)?;
    match conn.client.query(conn.stmt(stmt), params).await {
        Ok(rows) => Ok(rows),
        Err(e) if e.as_db_error().is_some() => {
            tracing::debug!(error = %e, ?stmt, jobs, "batch refused, each of its writes takes the general path");
            Err(BatchFailure::Refused)
        }
        Err(e) => Err(BatchFailure::Lost(errors::classify(&e).or_unavailable())),
    }
}

/// What a batch's statement applied, by key: each job's output, or why it
/// could not be read back (it was applied all the same).
pub(super) type Applied<J> = HashMap<<J as Job>::Key, StoreResult<<J as Answer>::Output>>;

/// Answers every job of a batch: applied ones with their output, the rest
/// "not applied"; all with the error when the batch was lost.
pub(super) fn answer_all<J: Answer>(batch: Vec<J>, outcome: Result<Applied<J>, BatchFailure>) {
    match outcome {
        Ok(mut applied) => {
            for job in batch {
                let result = applied.remove(&job.key()).transpose();
                job.answer(result);
            }
        }
        Err(failure) => answer_failed(batch, failure),
    }
}

/// Answers every job of a batch whose statement applied nothing: "not
/// applied" when the database refused it, the error when it was lost.
pub(super) fn answer_failed<J: Answer>(batch: Vec<J>, failure: BatchFailure) {
    match failure {
        BatchFailure::Refused => {
            for job in batch {
                job.answer(Ok(None));
            }
        }
        BatchFailure::Lost(error) => {
            for job in batch {
                job.answer(Err(error.clone()));
            }
        }
    }
}

/// Runs the statement of a job alone: its row when applied, `None` when
/// not applied or refused by the database (the general path then runs),
/// the error when the connection was lost.
pub(super) async fn query_alone(
    pool: &Pool,
    stmt: Stmt,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<Option<Row>> {
    let conn = pool.get().await?;
    match conn.client.query_opt(conn.stmt(stmt), params).await {
        Ok(row) => Ok(row),
        Err(e) if e.as_db_error().is_some() => Ok(None),
        Err(e) => Err(errors::classify(&e).or_unavailable()),
    }
}

/// Column `i` of an answer's row, as text.
pub(super) fn text(row: &Row, i: usize) -> StoreResult<String> {
    row.try_get(i)
        .map_err(|e| StoreError::Backend(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job that only has a key and a tag.
    struct Tagged(u8, &'static str);

    impl Job for Tagged {
        type Key = u8;

        fn key(&self) -> u8 {
            self.0
        }

        async fn apply(_: Pool, _: Vec<Tagged>) {}
    }

    #[test]
    fn a_batch_takes_each_key_once_in_order_and_the_rest_run_alone() {
        let queue = vec![
            Tagged(1, "a"),
            Tagged(1, "b"),
            Tagged(2, "c"),
            Tagged(1, "d"),
            Tagged(2, "e"),
        ];
        let (batch, alone) = split(queue);
        let tags = |jobs: &[Tagged]| jobs.iter().map(|j| j.1).collect::<Vec<_>>();
        assert_eq!(tags(&batch), ["a", "c"]);
        assert_eq!(tags(&alone), ["b", "d", "e"]);
    }
}
