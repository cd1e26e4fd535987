//! Single-wallet updates (`nk.wallet_update`, the hot path) applied in
//! batches (`batches.rs`) by one statement, `WalletUpdateBatch`, outside
//! any explicit transaction; a further update of a user already in the
//! gathering batch runs alone (`WalletUpdateOne`). The batch statement locks
//! its users in id order, so two batches in flight never deadlock each
//! other.
//!
//! An update the statement did not apply (unknown user, a balance that
//! would go negative) is answered "not applied", and so is every update of
//! a batch the database refused whole (an overflow, a deadlock with a
//! multi-wallet transaction): the caller then runs the general path, which
//! applies the domain's rules, retries conflicts and reports precisely.
//! Only a connection lost under the statement fails the update, as
//! unavailable: whether it committed is unknown, so it is not run again.

use ludus_core::store::{StoreError, StoreResult};
use ludus_core::wallet::{self, WalletUpdate, WalletUpdateResult};
use tokio::sync::oneshot;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::batches::{self, Answer, Applied, BatchFailure, Batcher, Job};
use super::pool::Pool;
use super::statements::Stmt;

/// One update on its way to a batch.
struct Pending {
    user_id: Uuid,
    changeset: String,
    metadata: String,
    ledger: bool,
    now_us: i64,
    reply: oneshot::Sender<StoreResult<Option<WalletUpdateResult>>>,
}

impl Job for Pending {
    type Key = Uuid;

    fn key(&self) -> Uuid {
        self.user_id
    }

    async fn apply(pool: Pool, batch: Vec<Pending>) {
        let outcome = statement(&pool, &batch).await;
        batches::answer_all(batch, outcome);
    }

    async fn alone(pool: Pool, pending: Pending) {
        let result = batches::query_alone(
            &pool,
            Stmt::WalletUpdateOne,
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
        let answer =
            result.and_then(|row| row.map(|row| results(pending.user_id, &row, 0)).transpose());
        pending.answer(answer);
    }
}

impl Answer for Pending {
    type Output = WalletUpdateResult;

    fn answer(self, result: StoreResult<Option<WalletUpdateResult>>) {
        let _ = self.reply.send(result);
    }
}

pub(super) struct Wallets(Batcher<Pending>);

impl Wallets {
    /// Starts the batching task; at most `in_flight` batches run at once.
    pub(super) fn start(pool: Pool, in_flight: usize) -> Wallets {
        Wallets(Batcher::start(pool, in_flight))
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
        self.0
            .call(
                Pending {
                    user_id: update.user_id,
                    changeset: wallet::encode(&update.changeset),
                    metadata: update.metadata.clone(),
                    ledger,
                    now_us,
                    reply,
                },
                rx,
            )
            .await
    }

    /// Applies what is queued and stops the task.
    pub(super) async fn close(&self) {
        self.0.close().await;
    }
}

/// Runs one batch.
async fn statement(pool: &Pool, batch: &[Pending]) -> Result<Applied<Pending>, BatchFailure> {
    let users: Vec<Uuid> = batch.iter().map(|p| p.user_id).collect();
    let changesets: Vec<&str> = batch.iter().map(|p| p.changeset.as_str()).collect();
    let ids: Vec<Uuid> = batch.iter().map(|_| ludus_core::new_row_id()).collect();
    let metadata: Vec<&str> = batch.iter().map(|p| p.metadata.as_str()).collect();
    let ledger: Vec<bool> = batch.iter().map(|p| p.ledger).collect();
    // One time for the batch: its updates commit together.
    let now_us = batch.iter().map(|p| p.now_us).max().unwrap_or_default();
    let params: [&(dyn ToSql + Sync); 7] = [
        &users,
        &changesets,
        &ids,
        &metadata,
        &ledger,
        &(now_us / 1_000_000),
        &now_us,
    ];
    let rows = batches::query(pool, Stmt::WalletUpdateBatch, &params, batch.len()).await?;
    let mut applied = Applied::<Pending>::with_capacity(rows.len());
    for row in &rows {
        // Without its user an applied row answers no one, and an update
        // answered "not applied" would be applied again: fail them all.
        let user_id: Uuid = row
            .try_get(0)
            .map_err(|e| BatchFailure::Lost(StoreError::Backend(e.to_string())))?;
        applied.insert(user_id, results(user_id, row, 1));
    }
    Ok(applied)
}

/// An applied update's wallets from its row of an answer: the previous
/// wallet's text in column `at`, the updated one's in the next.
fn results(user_id: Uuid, row: &Row, at: usize) -> StoreResult<WalletUpdateResult> {
    let decoded =
        |i| wallet::decode(user_id, &batches::text(row, i)?).map_err(StoreError::Rejected);
    Ok(WalletUpdateResult {
        user_id,
        previous: decoded(at)?,
        updated: decoded(at + 1)?,
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
        Pending::apply(pool.clone(), batch).await;
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
        let (batch, alone) = batches::split(queue);
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
