//! Single-wallet updates (`nk.wallet_update`, the hot path) applied in
//! batches (`batches.rs`) by one statement, `WalletUpdateBatch`, outside
//! any explicit transaction. A batch takes every update gathered, several
//! of one user included: those apply together, in the order they came, as
//! one change of the user's row (their changes summed) that applies only if
//! each of them would, in turn (no running balance below zero), and each
//! gets its own previous and updated wallets and ledger entry. Many writers
//! of one hot wallet thus share a statement and a commit instead of queueing
//! on the row lock one statement each. The statement locks its users in id
//! order, so two batches in flight never deadlock each other.
//!
//! When one user's updates together would take a balance below zero,
//! none of them applies in the batch; each then goes again on its own (a
//! statement of one update), in the order they came, so that those that
//! can apply do, as one at a time would. An update the statement did not
//! apply on its own (unknown user, a balance that would go negative) is
//! answered "not applied", and so is every update of a batch the database
//! refused whole (an overflow, a deadlock with a multi-wallet transaction):
//! the caller then runs the general path, which applies the domain's rules,
//! retries conflicts and reports precisely. Only a connection lost under
//! the statement fails the update, as unavailable: whether it committed is
//! unknown, so it is not run again.

use std::collections::HashMap;

use ludus_core::store::{StoreError, StoreResult};
use ludus_core::wallet::{self, Wallet, WalletUpdate, WalletUpdateResult};
use tokio::sync::oneshot;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::batches::{self, Answer, BatchFailure, Batcher, Job};
use super::pool::Pool;
use super::statements::Stmt;

/// One update on its way to a batch.
struct Pending {
    user_id: Uuid,
    changeset: Wallet,
    /// `changeset` as its ledger entry records it.
    text: String,
    metadata: String,
    ledger: bool,
    now_us: i64,
    reply: oneshot::Sender<StoreResult<Option<WalletUpdateResult>>>,
}

impl Job for Pending {
    type Key = Uuid;

    const GROUPED: bool = true;

    fn key(&self) -> Uuid {
        self.user_id
    }

    async fn apply(pool: Pool, batch: Vec<Pending>) {
        let outcome = statement(&pool, &batch).await;
        // A user whose updates together would take a balance below zero:
        // each goes again on its own, in the order they came, so that those
        // that can apply do, as they would have one at a time.
        for pending in answer(batch, outcome) {
            let outcome = statement(&pool, std::slice::from_ref(&pending)).await;
            let again = answer(vec![pending], outcome);
            debug_assert!(again.is_empty(), "an update alone is never sent again");
        }
    }
}

/// Answers a batch's updates from its statement's outcome, but for those
/// it says go again, which it returns (in the order they came).
fn answer(batch: Vec<Pending>, outcome: Result<Answers, BatchFailure>) -> Vec<Pending> {
    let mut again = Vec::new();
    match outcome {
        Ok(mut answers) => {
            for (i, pending) in batch.into_iter().enumerate() {
                match answers.remove(&i) {
                    Some(Reply::Applied(result)) => pending.answer(result.map(Some)),
                    Some(Reply::Again) => again.push(pending),
                    None => pending.answer(Ok(None)),
                }
            }
        }
        Err(failure) => batches::answer_failed(batch, failure),
    }
    again
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
                    changeset: update.changeset.clone(),
                    text: wallet::encode(&update.changeset),
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

/// One user's updates in a batch, in the order they came.
struct Group {
    user_id: Uuid,
    /// Indexes into the batch.
    updates: Vec<usize>,
    /// Their changes summed, per key.
    sum: Wallet,
    /// Per key, the lowest the running sum reaches at an update that
    /// changes the key: the balance before them plus this must not be
    /// negative.
    lowest: Wallet,
}

impl Group {
    /// Adds an update's changes; `false` when a running sum leaves `i64`.
    fn add(&mut self, index: usize, changeset: &Wallet) -> bool {
        self.updates.push(index);
        for (key, amount) in changeset {
            let sum = self.sum.entry(key.clone()).or_insert(0);
            let Some(next) = sum.checked_add(*amount) else {
                return false;
            };
            *sum = next;
            let lowest = self.lowest.entry(key.clone()).or_insert(next);
            *lowest = (*lowest).min(next);
        }
        true
    }
}

/// Groups a batch's updates by user, in the order each user first came;
/// an update whose group's running sum leaves `i64` is left out, with its
/// whole group (answered "not applied").
fn groups(batch: &[Pending]) -> Vec<Group> {
    let mut at = HashMap::with_capacity(batch.len());
    let mut groups: Vec<Option<Group>> = Vec::with_capacity(batch.len());
    for (i, p) in batch.iter().enumerate() {
        let g = *at.entry(p.user_id).or_insert_with(|| {
            groups.push(Some(Group {
                user_id: p.user_id,
                updates: Vec::new(),
                sum: Wallet::new(),
                lowest: Wallet::new(),
            }));
            groups.len() - 1
        });
        if let Some(group) = &mut groups[g]
            && !group.add(i, &p.changeset)
        {
            groups[g] = None;
        }
    }
    groups.into_iter().flatten().collect()
}

/// What became of an update of a batch whose statement ran.
enum Reply {
    /// Applied: its wallets, or why they could not be read back (it was
    /// applied all the same).
    Applied(StoreResult<WalletUpdateResult>),
    /// Not applied with the other updates of its user, which together would
    /// take a balance below zero: it goes again on its own.
    Again,
}

/// The replies of a batch's updates by their index in the batch; an update
/// with none was not applied (the general path says why).
type Answers = HashMap<usize, Reply>;

/// Runs one batch.
async fn statement(pool: &Pool, batch: &[Pending]) -> Result<Answers, BatchFailure> {
    let groups = groups(batch);
    let users: Vec<Uuid> = groups.iter().map(|g| g.user_id).collect();
    let keys = groups.iter().map(|g| g.sum.len()).sum();
    let (mut change_users, mut change_keys) = (Vec::with_capacity(keys), Vec::with_capacity(keys));
    let (mut sums, mut lowest) = (Vec::with_capacity(keys), Vec::with_capacity(keys));
    for g in &groups {
        for (key, sum) in &g.sum {
            change_users.push(g.user_id);
            change_keys.push(key.as_str());
            sums.push(*sum);
            lowest.push(g.lowest[key]);
        }
    }
    let mut by_user: HashMap<Uuid, &Group> = groups.iter().map(|g| (g.user_id, g)).collect();
    // Ledger entries in the order the updates came, so their ids (which
    // increase as they are made) order one user's entries as applied.
    let logged: Vec<&Pending> = batch
        .iter()
        .filter(|p| p.ledger && by_user.contains_key(&p.user_id))
        .collect();
    let ledger_ids: Vec<Uuid> = logged.iter().map(|_| ludus_core::new_row_id()).collect();
    let ledger_users: Vec<Uuid> = logged.iter().map(|p| p.user_id).collect();
    let ledger_changes: Vec<&str> = logged.iter().map(|p| p.text.as_str()).collect();
    let ledger_metadata: Vec<&str> = logged.iter().map(|p| p.metadata.as_str()).collect();
    // One time for the batch: its updates commit together.
    let now_us = batch.iter().map(|p| p.now_us).max().unwrap_or_default();
    let params: [&(dyn ToSql + Sync); 11] = [
        &users,
        &change_users,
        &change_keys,
        &sums,
        &lowest,
        &ledger_ids,
        &ledger_users,
        &ledger_changes,
        &ledger_metadata,
        &(now_us / 1_000_000),
        &now_us,
    ];
    let rows = batches::query(pool, Stmt::WalletUpdateBatch, &params, batch.len()).await?;
    let mut answers = Answers::with_capacity(batch.len());
    for row in &rows {
        // Without its user an applied row answers no one, and an update
        // answered "not applied" would be applied again: fail them all.
        let user_id: Uuid = row
            .try_get(0)
            .map_err(|e| BatchFailure::Lost(StoreError::Backend(e.to_string())))?;
        let Some(group) = by_user.remove(&user_id) else {
            continue;
        };
        let before = batches::text(row, 1)
            .and_then(|text| wallet::decode(user_id, &text).map_err(StoreError::Rejected));
        answer_group(group, batch, before, &mut answers);
    }
    // A user of several updates not applied: one at a time, some may be.
    for group in by_user.values().filter(|g| g.updates.len() > 1) {
        answers.extend(group.updates.iter().map(|&i| (i, Reply::Again)));
    }
    Ok(answers)
}

/// Each applied update of `group`'s wallets, in turn from the wallet the
/// statement found (`before`).
fn answer_group(
    group: &Group,
    batch: &[Pending],
    before: StoreResult<Wallet>,
    answers: &mut Answers,
) {
    let mut current = before;
    for &i in &group.updates {
        let result = current.and_then(|previous| {
            let updated = wallet::apply(group.user_id, &previous, &batch[i].changeset)
                .map_err(StoreError::Rejected)?;
            Ok(WalletUpdateResult {
                user_id: group.user_id,
                previous,
                updated,
            })
        });
        current = result
            .as_ref()
            .map(|r| r.updated.clone())
            .map_err(Clone::clone);
        answers.insert(i, Reply::Applied(result));
    }
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
            text: wallet::encode(&changeset),
            changeset,
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
    fn a_batch_groups_each_users_updates_with_their_sum_and_lowest_running_sum() {
        let (ann, bob) = (Uuid::new_v4(), Uuid::new_v4());
        let batch: Vec<Pending> = [
            (ann, &[("coins", 5)][..]),
            (bob, &[("gems", 1)][..]),
            (ann, &[("coins", -7), ("gems", 2)][..]),
            (ann, &[("coins", 3)][..]),
            (bob, &[][..]),
        ]
        .into_iter()
        .map(|(u, c)| pending(u, c).0)
        .collect();
        let groups = groups(&batch);
        assert_eq!(groups.len(), 2);
        let (a, b) = (&groups[0], &groups[1]);
        assert_eq!((a.user_id, b.user_id), (ann, bob));
        assert_eq!(a.updates, [0, 2, 3]);
        assert_eq!(b.updates, [1, 4]);
        let map = |pairs: &[(&str, i64)]| -> Wallet {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        assert_eq!(a.sum, map(&[("coins", 1), ("gems", 2)]));
        // coins run 5, -2, 1: a balance below 2 before them goes negative.
        assert_eq!(a.lowest, map(&[("coins", -2), ("gems", 2)]));
        assert_eq!(b.sum, map(&[("gems", 1)]));
        assert_eq!(b.lowest, map(&[("gems", 1)]));
    }

    #[test]
    fn a_group_whose_running_sum_leaves_i64_is_left_out() {
        let (ann, bob) = (Uuid::new_v4(), Uuid::new_v4());
        let batch: Vec<Pending> = [
            (ann, &[("coins", i64::MAX)][..]),
            (bob, &[("coins", 1)][..]),
            (ann, &[("coins", 1)][..]),
            (ann, &[("coins", -5)][..]),
        ]
        .into_iter()
        .map(|(u, c)| pending(u, c).0)
        .collect();
        let groups = groups(&batch);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].user_id, bob);
    }

    /// Several updates of one wallet in one batch apply in the order they
    /// came, each answered with its own wallets and logged with its own
    /// entry; a user whose running balance would dip below zero at any of
    /// its updates has them go again one at a time, in order, so each
    /// applies or not as it would alone, while the other users of the
    /// batch apply together.
    #[tokio::test]
    async fn updates_of_one_wallet_in_a_batch_apply_in_turn() {
        let (store, _dir) = store().await;
        let pool = &store.pool;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let out = apply_batch(
            pool,
            &[
                (ann, &[("coins", 5)]),
                (bob, &[("coins", 2)]),
                (ann, &[("coins", -3)]),
                (ann, &[("coins", 4), ("gems", 1)]),
            ],
        )
        .await;
        let got = |i: usize| got_of(&out, i);
        let coins = |w: &Wallet| w.get("coins").copied();
        assert_eq!(
            (coins(&got(0).previous), coins(&got(0).updated)),
            (None, Some(5))
        );
        assert_eq!(
            (coins(&got(2).previous), coins(&got(2).updated)),
            (Some(5), Some(2))
        );
        assert_eq!(
            (coins(&got(3).previous), coins(&got(3).updated)),
            (Some(2), Some(6))
        );
        assert_eq!(got(3).updated["gems"], 1);
        assert_eq!(coins(&got(1).updated), Some(2));
        assert_eq!(
            super::tests::coins(pool, ann).await,
            (r#"{"gems": 1, "coins": 6}"#.into(), 3)
        );
        // Ann's entries, newest first, are her updates in reverse order.
        let page = store.wallet_ledger_list(ann, None, 10).await.unwrap();
        let changes: Vec<&str> = page.iter().map(|e| e.changeset.as_str()).collect();
        assert_eq!(
            changes,
            [
                r#"{"gems": 1, "coins": 4}"#,
                r#"{"coins": -3}"#,
                r#"{"coins": 5}"#
            ]
        );

        // 6 + 1 - 8 dips below zero before + 10 brings it back: Ann's
        // updates do not apply together, Bob's does; Ann's then go one at a
        // time, in order: +1 applies, -8 would overdraw 7 (not applied: the
        // general path refuses it), +10 applies.
        let out = apply_batch(
            pool,
            &[
                (ann, &[("coins", 1)]),
                (ann, &[("coins", -8)]),
                (bob, &[("coins", 1)]),
                (ann, &[("coins", 10)]),
            ],
        )
        .await;
        let got = |i: usize| got_of(&out, i);
        assert_eq!(
            (coins(&got(0).previous), coins(&got(0).updated)),
            (Some(6), Some(7))
        );
        assert!(matches!(out[1], Ok(None)), "{:?}", out[1]);
        assert_eq!(coins(&got(2).updated), Some(3));
        assert_eq!(
            (coins(&got(3).previous), coins(&got(3).updated)),
            (Some(7), Some(17))
        );
        assert_eq!(
            super::tests::coins(pool, ann).await,
            (r#"{"gems": 1, "coins": 17}"#.into(), 5)
        );
        store.close().await;
    }

    fn got_of(out: &[StoreResult<Option<WalletUpdateResult>>], i: usize) -> WalletUpdateResult {
        out[i].as_ref().unwrap().as_ref().unwrap().clone()
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
