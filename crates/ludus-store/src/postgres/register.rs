//! Group commit of registrations: concurrent `create_user` calls queue here
//! and a few at a time are written together, one transaction and one
//! `Register` statement per batch. While a batch commits, the next one
//! gathers, so the batch size follows the load.
//!
//! Each user is all or nothing: a user whose device id turns out to be taken
//! is deleted again before COMMIT, and a user that was skipped is told which
//! key clashed (a taken identity wins over a taken username). A user skipped
//! for no reason that is still visible (its rival rolled back) is tried
//! again in the next round.

use std::collections::HashSet;
use std::sync::Mutex;

use ludus_core::model::{Identity, NewUser};
use ludus_core::store::{StoreError, StoreResult};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::errors::{self, Failure};
use super::pool::Pool;
use super::statements::Stmt;

/// Most users written by one statement.
const MAX_BATCH: usize = 256;

/// Registrations waiting for a batch; senders wait (asynchronously) when it is full.
const QUEUE_CAPACITY: usize = 4096;

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

enum Msg {
    Register(Pending),
    /// Write everything queued before this, then acknowledge.
    Shutdown(oneshot::Sender<()>),
}

pub(super) struct Registrar {
    tx: mpsc::Sender<Msg>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Registrar {
    /// Starts the batching task; at most `in_flight` batches commit at once.
    pub(super) fn start(pool: Pool, in_flight: usize) -> Registrar {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let task = tokio::spawn(run(pool, rx, in_flight.max(1)));
        Registrar {
            tx,
            task: Mutex::new(Some(task)),
        }
    }

    pub(super) async fn register(&self, mut user: NewUser) -> StoreResult<()> {
        if let Identity::Email(email) = &mut user.identity
            && email.chars().any(char::is_uppercase)
        {
            *email = email.to_lowercase();
        }
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Msg::Register(Pending { user, reply }))
            .await
            .map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// Writes what is queued and stops the task.
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
    let slots = std::sync::Arc::new(Semaphore::new(in_flight));
    let mut shutdown = None;
    while shutdown.is_none() {
        let mut batch = match rx.recv().await {
            Some(Msg::Register(pending)) => vec![pending],
            Some(Msg::Shutdown(ack)) => {
                shutdown = Some(ack);
                break;
            }
            None => break,
        };
        // Waiting for a free slot is what lets the next batch grow.
        let Ok(slot) = std::sync::Arc::clone(&slots).acquire_owned().await else {
            break;
        };
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(Msg::Register(pending)) => batch.push(pending),
                Ok(Msg::Shutdown(ack)) => {
                    shutdown = Some(ack);
                    break;
                }
                Err(_) => break,
            }
        }
        let pool = pool.clone();
        tokio::spawn(async move {
            write_batch(&pool, batch).await;
            drop(slot);
        });
    }
    // Wait for every batch still committing.
    let _ = slots.acquire_many(in_flight as u32).await;
    rx.close();
    while let Ok(msg) = rx.try_recv() {
        match msg {
            Msg::Register(pending) => {
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

/// What became of one user in one round.
enum Outcome {
    Done(StoreResult<()>),
    TryAgain,
}

async fn write_batch(pool: &Pool, mut batch: Vec<Pending>) {
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

/// One transaction for the whole batch; returns each user's outcome in order.
async fn commit(pool: &Pool, batch: &[Pending]) -> Result<Vec<Outcome>, Failure> {
    let ids: Vec<Uuid> = batch.iter().map(|p| p.user.id).collect();
    let usernames: Vec<&str> = batch.iter().map(|p| p.user.username.as_str()).collect();
    let emails: Vec<Option<&str>> = batch.iter().map(Pending::email).collect();
    let custom_ids: Vec<Option<&str>> = batch.iter().map(Pending::custom_id).collect();
    let passwords: Vec<Option<&str>> = batch
        .iter()
        .map(|p| p.user.password_hash.as_deref())
        .collect();
    let times: Vec<i64> = batch.iter().map(|p| p.user.create_time).collect();
    let (device_ids, device_users): (Vec<&str>, Vec<Uuid>) = batch
        .iter()
        .filter_map(|p| p.device().map(|d| (d, p.user.id)))
        .unzip();

    let mut conn = pool.get().await?;
    let conn = &mut *conn;
    let tx = conn.client.transaction().await?;
    let row = tx
        .query_one(
            conn.statements.get(Stmt::Register),
            &[
                &ids,
                &usernames,
                &emails,
                &custom_ids,
                &passwords,
                &times,
                &device_ids,
                &device_users,
            ],
        )
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
                Identity::Username(_) => false,
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
