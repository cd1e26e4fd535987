//! Group commit of single-wallet updates (`nk.wallet_update`, the hot path):
//! concurrent updates queue here and are applied together, by one
//! statement (`WalletUpdateBatch`) outside any explicit transaction. While a
//! batch runs the next one gathers, so the batch size follows the load; a
//! batch of one is what a single update was before.
//!
//! A batch holds each user at most once (one statement cannot update a row
//! twice); a further update of a user already in the batch runs alone, as
//! one statement of its own (`WalletUpdateOne`), beside the batch. The
//! batch statement locks its users in id order, so two batches in flight
//! never deadlock each other.
//!
//! An update the statement did not apply (unknown user, a balance that
//! would go negative) is answered "not applied", and so is every update of
//! a batch the database refused whole (an overflow, a deadlock with a
//! multi-wallet transaction): the caller then runs the general path, which
//! applies the domain's rules, retries conflicts and reports precisely.
//! Only a connection lost under the statement fails the update, as
//! unavailable: whether it committed is unknown, so it is not run again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use ludus_core::store::{StoreError, StoreResult};
use ludus_core::wallet::{self, WalletUpdate, WalletUpdateResult};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};
use tokio_postgres::Row;
use uuid::Uuid;

use super::errors;
use super::pool::Pool;
use super::statements::Stmt;

/// Most updates applied by one statement.
const MAX_BATCH: usize = 128;

/// Updates waiting for a batch; senders wait (asynchronously) when it is full.
const QUEUE_CAPACITY: usize = 4096;

/// One update on its way to a batch.
struct Pending {
    user_id: Uuid,
    changeset: String,
    metadata: String,
    ledger: bool,
    now_us: i64,
    reply: oneshot::Sender<StoreResult<Option<WalletUpdateResult>>>,
}

enum Msg {
    Update(Pending),
    /// Apply everything queued before this, then acknowledge.
    Shutdown(oneshot::Sender<()>),
}

pub(super) struct Wallets {
    tx: mpsc::Sender<Msg>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Wallets {
    /// Starts the batching task; at most `in_flight` batches run at once.
    pub(super) fn start(pool: Pool, in_flight: usize) -> Wallets {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let task = tokio::spawn(run(pool, rx, in_flight.max(1)));
        Wallets {
            tx,
            task: Mutex::new(Some(task)),
        }
    }

    /// Applies `update` with others queued beside it. `Ok(None)` when it
    /// was not applied: the caller runs the general path.
    pub(super) async fn update(
        &self,
        update: &WalletUpdate,
        ledger: bool,
        now_us: i64,
    ) -> StoreResult<Option<WalletUpdateResult>> {
        let (reply, rx) = oneshot::channel();
        let pending = Pending {
            user_id: update.user_id,
            changeset: wallet::encode(&update.changeset),
            metadata: update.metadata.clone(),
            ledger,
            now_us,
            reply,
        };
        self.tx
            .send(Msg::Update(pending))
            .await
            .map_err(|_| closed())?;
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

fn closed() -> StoreError {
    StoreError::Unavailable("store is closed".into())
}

async fn run(pool: Pool, mut rx: mpsc::Receiver<Msg>, in_flight: usize) {
    let slots = Arc::new(Semaphore::new(in_flight));
    // Updates running alone (`single`), waited for at shutdown.
    let mut alone = JoinSet::new();
    let mut shutdown = None;
    while shutdown.is_none() {
        let mut queue = match rx.recv().await {
            Some(Msg::Update(pending)) => vec![pending],
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
        while queue.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(Msg::Update(pending)) => queue.push(pending),
                Ok(Msg::Shutdown(ack)) => {
                    shutdown = Some(ack);
                    break;
                }
                Err(_) => break,
            }
        }
        while alone.try_join_next().is_some() {}
        let (batch, again) = split(queue);
        for pending in again {
            alone.spawn(single(pool.clone(), pending));
        }
        let pool = pool.clone();
        tokio::spawn(async move {
            apply(&pool, batch).await;
            drop(slot);
        });
    }
    // Wait for every batch and update still running.
    let _ = slots.acquire_many(in_flight as u32).await;
    while alone.join_next().await.is_some() {}
    rx.close();
    while let Ok(msg) = rx.try_recv() {
        match msg {
            Msg::Update(pending) => {
                let _ = pending.reply.send(Err(closed()));
            }
            Msg::Shutdown(ack) => {
                let _ = ack.send(());
            }
        }
    }
    if let Some(ack) = shutdown {
        let _ = ack.send(());
    }
}

/// Splits gathered updates into a batch, the first update of each user in
/// the order they came, and the rest: further updates of a user already in
/// the batch (one statement cannot change a row twice), which run alone.
/// Many writers of one hot wallet thus run as concurrent statements, as
/// they did before batching, which PostgreSQL serializes on the row lock
/// far more cheaply than batches of one queued behind each other.
fn split(queue: Vec<Pending>) -> (Vec<Pending>, Vec<Pending>) {
    let mut users = HashSet::with_capacity(queue.len());
    queue.into_iter().partition(|p| users.insert(p.user_id))
}

/// One update as one statement of its own (`WalletUpdateOne`), answered as
/// a batch's are.
async fn single(pool: Pool, pending: Pending) {
    let conn = match pool.get().await {
        Ok(conn) => conn,
        Err(e) => {
            let _ = pending.reply.send(Err(e));
            return;
        }
    };
    let result = conn
        .client
        .query_opt(
            conn.stmt(Stmt::WalletUpdateOne),
            &[
                &pending.user_id,
                &pending.changeset,
                &(pending.now_us / 1_000_000),
                &ludus_core::new_row_id(),
                &pending.metadata,
                &pending.now_us,
                &pending.ledger,
            ],
        )
        .await;
    let answer = match result {
        Ok(Some(row)) => results(pending.user_id, &row, 0).map(Some),
        Ok(None) => Ok(None),
        Err(e) if e.as_db_error().is_some() => Ok(None),
        Err(e) => Err(errors::classify(&e).or_unavailable()),
    };
    let _ = pending.reply.send(answer);
}

async fn apply(pool: &Pool, batch: Vec<Pending>) {
    match statement(pool, &batch).await {
        Ok(mut applied) => {
            for pending in batch {
                let result = applied.remove(&pending.user_id).transpose();
                let _ = pending.reply.send(result);
            }
        }
        Err(Refused) => {
            for pending in batch {
                let _ = pending.reply.send(Ok(None));
            }
        }
        Err(Lost(error)) => {
            for pending in batch {
                let _ = pending.reply.send(Err(error.clone()));
            }
        }
    }
}

/// Why a batch's statement applied nothing.
enum BatchFailure {
    /// The database refused it (nothing was written): each update takes the
    /// general path.
    Refused,
    /// No answer (the connection, or none to be had): it may have committed.
    Lost(StoreError),
}
use BatchFailure::{Lost, Refused};

/// The updates a batch applied, by user: each one's wallets, or why they
/// could not be read back (it was applied all the same).
type Applied = HashMap<Uuid, StoreResult<WalletUpdateResult>>;

/// Runs one batch.
async fn statement(pool: &Pool, batch: &[Pending]) -> Result<Applied, BatchFailure> {
    let users: Vec<Uuid> = batch.iter().map(|p| p.user_id).collect();
    let changesets: Vec<&str> = batch.iter().map(|p| p.changeset.as_str()).collect();
    let ids: Vec<Uuid> = batch.iter().map(|_| ludus_core::new_row_id()).collect();
    let metadata: Vec<&str> = batch.iter().map(|p| p.metadata.as_str()).collect();
    let ledger: Vec<bool> = batch.iter().map(|p| p.ledger).collect();
    // One time for the batch: its updates commit together.
    let now_us = batch.iter().map(|p| p.now_us).max().unwrap_or_default();
    let conn = pool.get().await.map_err(Lost)?;
    let rows = match conn
        .client
        .query(
            conn.stmt(Stmt::WalletUpdateBatch),
            &[
                &users,
                &changesets,
                &ids,
                &metadata,
                &ledger,
                &(now_us / 1_000_000),
                &now_us,
            ],
        )
        .await
    {
        Ok(rows) => rows,
        Err(e) if e.as_db_error().is_some() => {
            tracing::debug!(error = %e, updates = batch.len(), "wallet batch refused, each update takes the general path");
            return Err(Refused);
        }
        Err(e) => return Err(Lost(errors::classify(&e).or_unavailable())),
    };
    let mut applied = Applied::with_capacity(rows.len());
    for row in &rows {
        // Without its user an applied row answers no one, and an update
        // answered "not applied" would be applied again: fail them all.
        let user_id: Uuid = row
            .try_get(0)
            .map_err(|e| Lost(StoreError::Backend(e.to_string())))?;
        applied.insert(user_id, results(user_id, row, 1));
    }
    Ok(applied)
}

/// An applied update's wallets from its row of an answer: the previous
/// wallet's text in column `at`, the updated one's in the next.
fn results(user_id: Uuid, row: &Row, at: usize) -> StoreResult<WalletUpdateResult> {
    let text = |i: usize| -> StoreResult<String> {
        row.try_get(i)
            .map_err(|e| StoreError::Backend(e.to_string()))
    };
    Ok(WalletUpdateResult {
        user_id,
        previous: wallet::decode(user_id, &text(at)?).map_err(StoreError::Rejected)?,
        updated: wallet::decode(user_id, &text(at + 1)?).map_err(StoreError::Rejected)?,
    })
}

#[cfg(test)]
mod tests {
    use ludus_core::Store;
    use ludus_core::wallet::Wallet;

    use super::*;
    use crate::postgres::testing::{store, user};

    fn pending(
        user_id: Uuid,
        changes: &[(&str, i64)],
    ) -> (
        Pending,
        oneshot::Receiver<StoreResult<Option<WalletUpdateResult>>>,
    ) {
        let (reply, rx) = oneshot::channel();
        let changeset: Wallet = changes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let pending = Pending {
            user_id,
            changeset: wallet::encode(&changeset),
            metadata: "{}".into(),
            ledger: true,
            now_us: 1_700_000_000_000_000,
            reply,
        };
        (pending, rx)
    }

    /// Applies one batch of (user, changeset) and returns each update's
    /// answer, in order.
    async fn apply_batch(
        pool: &Pool,
        updates: &[(Uuid, &[(&str, i64)])],
    ) -> Vec<StoreResult<Option<WalletUpdateResult>>> {
        let (batch, replies): (Vec<_>, Vec<_>) =
            updates.iter().map(|(u, c)| pending(*u, c)).unzip();
        apply(pool, batch).await;
        let mut out = Vec::new();
        for rx in replies {
            out.push(rx.await.unwrap());
        }
        out
    }

    async fn coins(pool: &Pool, user: Uuid) -> (String, i64) {
        let conn = pool.get().await.unwrap();
        let row = conn
            .client
            .query_one(
                "SELECT wallet::text, (SELECT count(*) FROM wallet_ledger WHERE user_id = $1)
                   FROM users WHERE id = $1",
                &[&user],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    }

    #[test]
    fn a_batch_takes_each_user_once_in_order_and_the_rest_run_alone() {
        let (ann, bob) = (Uuid::new_v4(), Uuid::new_v4());
        let queue: Vec<Pending> = [(ann, 1), (ann, 2), (bob, 3), (ann, 4), (bob, 5)]
            .into_iter()
            .map(|(u, n)| pending(u, &[("coins", n)]).0)
            .collect();
        let amounts = |ps: &[Pending]| -> Vec<String> {
            ps.iter().map(|p| p.changeset.clone()).collect::<Vec<_>>()
        };
        let (batch, alone) = split(queue);
        assert_eq!(amounts(&batch), [r#"{"coins":1}"#, r#"{"coins":3}"#]);
        assert_eq!(
            amounts(&alone),
            [r#"{"coins":2}"#, r#"{"coins":4}"#, r#"{"coins":5}"#]
        );
    }

    /// In one batch: applied updates answer their wallets; an unknown user
    /// and a balance that would go negative answer "not applied" and write
    /// nothing; a batch the database refuses whole (an overflow) answers
    /// every update "not applied" and writes nothing.
    #[tokio::test]
    async fn each_update_of_a_batch_is_answered_for_itself() {
        let (store, _dir) = store().await;
        let pool = &store.pool;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let cat = user(&store, "cat").await;
        let out = apply_batch(pool, &[(ann, &[("coins", 5)]), (bob, &[("coins", 7)])]).await;
        let ann_result = out[0].as_ref().unwrap().as_ref().unwrap();
        assert!(ann_result.previous.is_empty());
        assert_eq!(ann_result.updated["coins"], 5);
        assert_eq!(
            out[1].as_ref().unwrap().as_ref().unwrap().updated["coins"],
            7
        );

        let out = apply_batch(
            pool,
            &[
                (ann, &[("coins", -6)]),
                (Uuid::new_v4(), &[("coins", 1)]),
                (bob, &[("coins", -7), ("gems", 2)]),
                (cat, &[]),
            ],
        )
        .await;
        assert!(matches!(out[0], Ok(None)), "{:?}", out[0]);
        assert!(matches!(out[1], Ok(None)), "{:?}", out[1]);
        let bob_result = out[2].as_ref().unwrap().as_ref().unwrap();
        assert_eq!(bob_result.previous["coins"], 7);
        assert_eq!(bob_result.updated["coins"], 0);
        assert_eq!(bob_result.updated["gems"], 2);
        // An empty changeset applies (and writes its ledger entry), as the
        // general path does.
        assert!(
            out[3]
                .as_ref()
                .unwrap()
                .as_ref()
                .unwrap()
                .updated
                .is_empty()
        );
        assert_eq!(coins(pool, ann).await, (r#"{"coins": 5}"#.into(), 1));
        assert_eq!(
            coins(pool, bob).await,
            (r#"{"gems": 2, "coins": 0}"#.into(), 2)
        );
        assert_eq!(coins(pool, cat).await, ("{}".into(), 1));

        let out = apply_batch(
            pool,
            &[(ann, &[("coins", 1)]), (bob, &[("gems", i64::MAX)])],
        )
        .await;
        assert!(out.iter().all(|r| matches!(r, Ok(None))), "{out:?}");
        assert_eq!(coins(pool, ann).await, (r#"{"coins": 5}"#.into(), 1));
        assert_eq!(
            coins(pool, bob).await,
            (r#"{"gems": 2, "coins": 0}"#.into(), 2)
        );
        store.close().await;
    }
}
