//! Group commit of registrations (`batches.rs`): concurrent `create_user`
//! calls queue and a few at a time are written together. While a batch
//! commits, the next one gathers, so the batch size follows the load.
//!
//! A batch is first written by one plain statement in a transaction of its
//! own (`RegisterPlain`), since a sign-up follows a look-up that found no
//! user and nearly never clashes. When PostgreSQL refuses it (a clash fails
//! it whole, and nothing is written), the batch is written again carefully:
//! one transaction and one `Register` statement, `ON CONFLICT DO NOTHING`,
//! then each user told what became of it.
//!
//! Each user is all or nothing: a user whose device id turns out to be taken
//! is deleted again before COMMIT, and a user that was skipped is told which
//! key clashed (a taken identity wins over a taken username). A user skipped
//! for no reason that is still visible (its rival rolled back) is tried
//! again in the next round.

use std::collections::HashSet;

use ludus_core::model::{Identity, NewUser};
use ludus_core::store::{StoreError, StoreResult};
use tokio::sync::oneshot;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::batches::{Batcher, Job};
use super::errors::{self, Failure};
use super::pool::Pool;
use super::statements::Stmt;

/// Rounds for users skipped without a visible clash before giving up on them.
const MAX_ROUNDS: u32 = 3;

struct Pending {
    user: NewUser,
    reply: oneshot::Sender<StoreResult<()>>,
}

impl Pending {
    fn email(&self) -> Option<&str> {
        match &self.user.identity {
            Identity::Email(email) => Some(email),
            _ => None,
        }
    }
    fn custom_id(&self) -> Option<&str> {
        match &self.user.identity {
            Identity::Custom(id) => Some(id),
            _ => None,
        }
    }
    fn device(&self) -> Option<&str> {
        match &self.user.identity {
            Identity::Device(id) => Some(id),
            _ => None,
        }
    }
}

impl Job for Pending {
    /// A new user's id: every sign-up is its own row.
    type Key = Uuid;

    const MAX_BATCH: usize = 256;

    fn key(&self) -> Uuid {
        self.user.id
    }

    async fn apply(pool: Pool, batch: Vec<Pending>) {
        write_batch(&pool, batch).await;
    }

    async fn alone(pool: Pool, pending: Pending) {
        write_batch(&pool, vec![pending]).await;
    }
}

pub(super) struct Registrar(Batcher<Pending>);

impl Registrar {
    /// Starts the batching task; at most `in_flight` batches commit at once.
    pub(super) fn start(pool: Pool, in_flight: usize) -> Registrar {
        Registrar(Batcher::start(pool, in_flight))
    }

    pub(super) async fn register(&self, mut user: NewUser) -> StoreResult<()> {
        if let Identity::Email(email) = &mut user.identity
            && email.chars().any(char::is_uppercase)
        {
            *email = email.to_lowercase();
        }
        let (reply, rx) = oneshot::channel();
        self.0.call(Pending { user, reply }, rx).await
    }

    /// Writes what is queued and stops the task.
    pub(super) async fn close(&self) {
        self.0.close().await;
    }
}

/// What became of one user in one round.
enum Outcome {
    Done(StoreResult<()>),
    TryAgain,
}

async fn write_batch(pool: &Pool, mut batch: Vec<Pending>) {
    match write_plain(pool, &batch).await {
        Ok(()) => {
            for pending in batch {
                let _ = pending.reply.send(Ok(()));
            }
            return;
        }
        Err(PlainFailure::Refused) => {}
        // The caller's next sign-in finds out whether it committed.
        Err(PlainFailure::Lost(error)) => {
            for pending in batch {
                let _ = pending.reply.send(Err(error.clone()));
            }
            return;
        }
    }
    let mut round = 0;
    let mut conflicts = 0;
    while !batch.is_empty() {
        round += 1;
        match commit(pool, &batch).await {
            Ok(outcomes) => {
                let mut again = Vec::new();
                for (pending, outcome) in batch.into_iter().zip(outcomes) {
                    match outcome {
                        Outcome::Done(result) => {
                            let _ = pending.reply.send(result);
                        }
                        Outcome::TryAgain if round < MAX_ROUNDS => again.push(pending),
                        Outcome::TryAgain => {
                            let _ = pending.reply.send(Err(StoreError::Unavailable(
                                "registration kept clashing with concurrent ones, try again".into(),
                            )));
                        }
                    }
                }
                batch = again;
            }
            Err(Failure::Retry(why)) if conflicts < 4 => {
                conflicts += 1;
                round -= 1;
                tracing::debug!(error = %why, users = batch.len(), "registration batch conflicted, retrying");
                tokio::time::sleep(errors::backoff(conflicts)).await;
            }
            Err(failure) => {
                let error = match failure {
                    Failure::Fatal(e) => e,
                    Failure::Retry(_) => StoreError::Unavailable(
                        "registration kept conflicting with concurrent writes, try again".into(),
                    ),
                };
                if matches!(error, StoreError::Backend(_)) && batch.len() > 1 {
                    // One bad row fails the whole statement: write the users one by one
                    // so only that one fails.
                    tracing::warn!(error = %error, users = batch.len(), "registration batch failed, retrying users singly");
                    for pending in batch {
                        Box::pin(write_batch(pool, vec![pending])).await;
                    }
                } else {
                    for pending in batch {
                        let _ = pending.reply.send(Err(error.clone()));
                    }
                }
                return;
            }
        }
    }
}

/// A batch's columns, as the registration statements take them.
struct Columns<'a> {
    ids: Vec<Uuid>,
    usernames: Vec<&'a str>,
    emails: Vec<Option<&'a str>>,
    custom_ids: Vec<Option<&'a str>>,
    passwords: Vec<Option<&'a str>>,
    times: Vec<i64>,
    device_ids: Vec<&'a str>,
    device_users: Vec<Uuid>,
}

impl<'a> Columns<'a> {
    fn of(batch: &'a [Pending]) -> Columns<'a> {
        let (device_ids, device_users) = batch
            .iter()
            .filter_map(|p| p.device().map(|d| (d, p.user.id)))
            .unzip();
        Columns {
            ids: batch.iter().map(|p| p.user.id).collect(),
            usernames: batch.iter().map(|p| p.user.username.as_str()).collect(),
            emails: batch.iter().map(Pending::email).collect(),
            custom_ids: batch.iter().map(Pending::custom_id).collect(),
            passwords: batch
                .iter()
                .map(|p| p.user.password_hash.as_deref())
                .collect(),
            times: batch.iter().map(|p| p.user.create_time).collect(),
            device_ids,
            device_users,
        }
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 8] {
        [
            &self.ids,
            &self.usernames,
            &self.emails,
            &self.custom_ids,
            &self.passwords,
            &self.times,
            &self.device_ids,
            &self.device_users,
        ]
    }
}

/// Why a batch's plain insert did not go in.
enum PlainFailure {
    /// PostgreSQL refused it (a clash, most likely): nothing was written.
    Refused,
    /// No connection, or it failed on the way: whether it committed is unknown.
    Lost(StoreError),
}

/// Writes the whole batch with `RegisterPlain`.
async fn write_plain(pool: &Pool, batch: &[Pending]) -> Result<(), PlainFailure> {
    let columns = Columns::of(batch);
    let conn = pool.get().await.map_err(PlainFailure::Lost)?;
    match conn
        .client
        .execute(conn.stmt(Stmt::RegisterPlain), &columns.params())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.as_db_error().is_some() => {
            tracing::trace!(error = %e, users = batch.len(), "registration batch refused, writing it carefully");
            Err(PlainFailure::Refused)
        }
        Err(e) => Err(PlainFailure::Lost(errors::classify(&e).or_unavailable())),
    }
}

/// One transaction for the whole batch; returns each user's outcome in order.
async fn commit(pool: &Pool, batch: &[Pending]) -> Result<Vec<Outcome>, Failure> {
    let columns = Columns::of(batch);
    let mut conn = pool.get().await?;
    let conn = &mut *conn;
    let tx = conn.client.transaction().await?;
    let row = tx
        .query_one(conn.statements.get(Stmt::Register), &columns.params())
        .await?;
    let inserted: HashSet<Uuid> = row.try_get::<_, Vec<Uuid>>(0)?.into_iter().collect();
    let with_device: HashSet<Uuid> = row.try_get::<_, Vec<Uuid>>(1)?.into_iter().collect();

    // Users that went in but whose device was taken: take them out again.
    let orphans: Vec<Uuid> = batch
        .iter()
        .filter(|p| {
            p.device().is_some()
                && inserted.contains(&p.user.id)
                && !with_device.contains(&p.user.id)
        })
        .map(|p| p.user.id)
        .collect();
    if !orphans.is_empty() {
        tx.execute(conn.statements.get(Stmt::DeleteUsers), &[&orphans])
            .await?;
    }

    // Users that were skipped: find what they clash with, after the orphans are gone.
    let skipped: Vec<&Pending> = batch
        .iter()
        .filter(|p| !inserted.contains(&p.user.id))
        .collect();
    let mut clashes: HashSet<(String, String)> = HashSet::new();
    if !skipped.is_empty() {
        let usernames: Vec<&str> = skipped.iter().map(|p| p.user.username.as_str()).collect();
        let emails: Vec<&str> = skipped.iter().filter_map(|p| p.email()).collect();
        let custom_ids: Vec<&str> = skipped.iter().filter_map(|p| p.custom_id()).collect();
        let devices: Vec<&str> = skipped.iter().filter_map(|p| p.device()).collect();
        let ids: Vec<Uuid> = skipped.iter().map(|p| p.user.id).collect();
        let rows = tx
            .query(
                conn.statements.get(Stmt::Clashes),
                &[&usernames, &emails, &custom_ids, &devices, &ids],
            )
            .await?;
        for row in rows {
            clashes.insert((row.try_get(0)?, row.try_get(1)?));
        }
    }
    tx.commit().await?;

    let clash = |kind: &str, key: &str| clashes.contains(&(kind.to_owned(), key.to_owned()));
    let outcomes = batch
        .iter()
        .map(|p| {
            let id = p.user.id;
            if inserted.contains(&id) {
                if orphans.contains(&id) {
                    return Outcome::Done(Err(StoreError::IdentityTaken));
                }
                return Outcome::Done(Ok(()));
            }
            let identity_taken = match &p.user.identity {
                Identity::Device(d) => clash("d", d),
                Identity::Email(e) => clash("e", e),
                Identity::Custom(c) => clash("c", c),
                // Platform sign-ups never come through the batches.
                Identity::Username(_) | Identity::Social(..) => false,
            };
            if identity_taken {
                Outcome::Done(Err(StoreError::IdentityTaken))
            } else if clash("u", &p.user.username) {
                Outcome::Done(Err(StoreError::UsernameTaken))
            } else if clash("i", &id.to_string()) {
                Outcome::Done(Err(StoreError::Backend("user id already exists".into())))
            } else {
                Outcome::TryAgain
            }
        })
        .collect();
    if batch.len() > 1 {
        tracing::trace!(users = batch.len(), "postgresql group commit");
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use ludus_core::model::{Identity, NewUser};

    use super::*;
    use crate::postgres::testing::{store, user};

    fn pending(name: &str, device: &str) -> (Pending, oneshot::Receiver<StoreResult<()>>) {
        let (reply, rx) = oneshot::channel();
        let user = NewUser {
            id: Uuid::new_v4(),
            username: name.to_owned(),
            identity: Identity::Device(device.to_owned()),
            password_hash: None,
            create_time: 1_700_000_000,
        };
        (Pending { user, reply }, rx)
    }

    /// Writes one batch of (username, device id) and returns each user's id
    /// and outcome, in order.
    async fn write(pool: &Pool, users: &[(&str, &str)]) -> Vec<(Uuid, StoreResult<()>)> {
        let (batch, replies): (Vec<_>, Vec<_>) = users
            .iter()
            .map(|(name, device)| pending(name, device))
            .unzip();
        let ids: Vec<Uuid> = batch.iter().map(|p| p.user.id).collect();
        write_batch(pool, batch).await;
        let mut out = Vec::new();
        for (id, rx) in ids.into_iter().zip(replies) {
            out.push((id, rx.await.unwrap()));
        }
        out
    }

    /// The users of `ids` that have a row, and the owner of each device id.
    async fn rows(pool: &Pool, ids: &[Uuid]) -> (HashSet<Uuid>, Vec<(String, Uuid)>) {
        let conn = pool.get().await.unwrap();
        let users = conn
            .client
            .query("SELECT id FROM users WHERE id = ANY($1)", &[&ids])
            .await
            .unwrap();
        let devices = conn
            .client
            .query("SELECT id::text, user_id FROM user_device", &[])
            .await
            .unwrap();
        let mut devices: Vec<(String, Uuid)> =
            devices.iter().map(|r| (r.get(0), r.get(1))).collect();
        devices.sort();
        (users.iter().map(|r| r.get(0)).collect(), devices)
    }

    /// A batch that clashes is refused whole by the plain statement and
    /// written again carefully: the users that clash with nothing go in,
    /// each clashing one is told why and leaves no row behind; a batch that
    /// clashes with nothing goes in whole.
    #[tokio::test]
    async fn a_clashing_batch_is_written_again_carefully() {
        let (store, _dir) = store().await;
        let ann = user(&store, "ann").await;
        let pool = &store.pool;

        let out = write(
            pool,
            &[
                ("bob", "bob-d"),
                ("cat", "ann-device-0001"),
                ("dan", "dan-d"),
                ("dan", "dan-d2"),
                ("eve", "eve-d"),
            ],
        )
        .await;
        assert!(out[0].1.is_ok(), "{:?}", out[0].1);
        assert!(
            matches!(out[1].1, Err(StoreError::IdentityTaken)),
            "{:?}",
            out[1].1
        );
        let dans: Vec<&StoreResult<()>> = vec![&out[2].1, &out[3].1];
        assert_eq!(dans.iter().filter(|r| r.is_ok()).count(), 1, "{dans:?}");
        assert!(
            dans.iter()
                .any(|r| matches!(r, Err(StoreError::UsernameTaken))),
            "{dans:?}"
        );
        assert!(out[4].1.is_ok(), "{:?}", out[4].1);
        let ids: Vec<Uuid> = out.iter().map(|(id, _)| *id).collect();
        let ok: HashSet<Uuid> = out
            .iter()
            .filter(|(_, r)| r.is_ok())
            .map(|(id, _)| *id)
            .collect();
        let (users, devices) = rows(pool, &ids).await;
        assert_eq!(users, ok, "exactly the users told they are in have a row");
        let winner = if out[2].1.is_ok() {
            (out[2].0, "dan-d")
        } else {
            (out[3].0, "dan-d2")
        };
        let mut expected: Vec<(String, Uuid)> = vec![
            ("ann-device-0001".into(), ann),
            ("bob-d".into(), out[0].0),
            (winner.1.into(), winner.0),
            ("eve-d".into(), out[4].0),
        ];
        expected.sort();
        assert_eq!(devices, expected);

        let out = write(pool, &[("fay", "fay-d"), ("gus", "gus-d")]).await;
        assert!(out.iter().all(|(_, r)| r.is_ok()), "{out:?}");
        let ids: Vec<Uuid> = out.iter().map(|(id, _)| *id).collect();
        let (users, devices) = rows(pool, &ids).await;
        assert_eq!(users.len(), 2);
        assert!(devices.contains(&("fay-d".into(), ids[0])));
        assert!(devices.contains(&("gus-d".into(), ids[1])));
    }
}
