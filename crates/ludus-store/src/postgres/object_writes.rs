//! Single-object storage writes with no version condition (a client's
//! `PUT /v2/storage` of one object, `nk.storage_write` of one: a game's
//! usual save) applied in batches (`batches.rs`) by one statement,
//! `StorageWriteBatch`, outside any explicit transaction; a further write
//! of an object already in the gathering batch runs alone
//! (`StorageWriteOne`). The batch statement writes its objects in key
//! order, so two batches in flight never deadlock each other.
//!
//! A write replaces an existing object only when the server writes or the
//! owner may (`write = 1`). A write the statement did not apply (such an
//! object), and every write of a batch the database refused whole (an
//! unknown owner), is answered "not applied": the caller then runs the
//! general path, which applies the domain's rules and reports precisely.
//! Only a connection lost under the statement fails the write, as
//! unavailable.

use ludus_core::storage::{ObjectId, StorageAck, StorageWrite};
use ludus_core::store::{StoreError, StoreResult};
use tokio::sync::oneshot;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::batches::{self, Answer, Applied, BatchFailure, Batcher, Job};
use super::pool::Pool;
use super::statements::Stmt;

/// One write on its way to a batch.
struct Pending {
    id: ObjectId,
    value: String,
    version: String,
    read: i16,
    write: i16,
    /// Written by the server: replaces any existing object.
    server: bool,
    now: i64,
    reply: oneshot::Sender<StoreResult<Option<StorageAck>>>,
}

/// A written object's `create_time, update_time` from a row, at `at`.
fn times(row: &Row, at: usize) -> StoreResult<(i64, i64)> {
    let time = |i| {
        row.try_get::<_, i64>(i)
            .map_err(|e| StoreError::Backend(e.to_string()))
    };
    Ok((time(at)?, time(at + 1)?))
}

impl Job for Pending {
    type Key = ObjectId;

    fn key(&self) -> ObjectId {
        self.id.clone()
    }

    async fn apply(pool: Pool, batch: Vec<Pending>) {
        // The server's writes and users' go by statements of their own: the
        // statement's replace rule names one writer.
        let (server, users): (Vec<_>, Vec<_>) = batch.into_iter().partition(|p| p.server);
        for part in [server, users] {
            if !part.is_empty() {
                let outcome = statement(&pool, &part).await;
                batches::answer_all(part, outcome);
            }
        }
    }

    async fn alone(pool: Pool, p: Pending) {
        let result = batches::query_alone(
            &pool,
            Stmt::StorageWriteOne,
            &[
                &p.id.collection,
                &p.id.key,
                &p.id.user_id,
                &p.value,
                &p.version,
                &p.read,
                &p.write,
                &p.now,
                &p.server,
            ],
        )
        .await;
        let written = result.and_then(|row| row.map(|row| times(&row, 0)).transpose());
        p.answer(written);
    }
}

impl Answer for Pending {
    type Output = (i64, i64);

    fn answer(self, result: StoreResult<Option<(i64, i64)>>) {
        let ack = result.map(|times| {
            times.map(|(create_time, update_time)| StorageAck {
                collection: self.id.collection,
                key: self.id.key,
                user_id: self.id.user_id,
                version: self.version,
                create_time,
                update_time,
            })
        });
        let _ = self.reply.send(ack);
    }
}

/// Runs one batch, all of one writer (`server` or users).
async fn statement(pool: &Pool, batch: &[Pending]) -> Result<Applied<Pending>, BatchFailure> {
    let collections: Vec<&str> = batch.iter().map(|p| p.id.collection.as_str()).collect();
    let keys: Vec<&str> = batch.iter().map(|p| p.id.key.as_str()).collect();
    let users: Vec<Uuid> = batch.iter().map(|p| p.id.user_id).collect();
    let values: Vec<&str> = batch.iter().map(|p| p.value.as_str()).collect();
    let versions: Vec<&str> = batch.iter().map(|p| p.version.as_str()).collect();
    let reads: Vec<i16> = batch.iter().map(|p| p.read).collect();
    let writes: Vec<i16> = batch.iter().map(|p| p.write).collect();
    // One time for the batch: its writes commit together.
    let now = batch.iter().map(|p| p.now).max().unwrap_or_default();
    let server = batch.iter().any(|p| p.server);
    let params: [&(dyn ToSql + Sync); 9] = [
        &collections,
        &keys,
        &users,
        &values,
        &versions,
        &reads,
        &writes,
        &now,
        &server,
    ];
    let rows = batches::query(pool, Stmt::StorageWriteBatch, &params, batch.len()).await?;
    let mut applied = Applied::<Pending>::with_capacity(rows.len());
    for row in &rows {
        // Without its key an applied row answers no one, and a write
        // answered "not applied" would be written again: fail them all.
        let id = (|| {
            Ok::<_, tokio_postgres::Error>(ObjectId {
                collection: row.try_get(0)?,
                key: row.try_get(1)?,
                user_id: row.try_get(2)?,
            })
        })()
        .map_err(|e| BatchFailure::Lost(StoreError::Backend(e.to_string())))?;
        applied.insert(id, times(row, 3));
    }
    Ok(applied)
}

/// Queues single-object writes for their batches.
pub(super) struct ObjectWrites(Batcher<Pending>);

impl ObjectWrites {
    /// Starts the batching task; at most `in_flight` batches run at once.
    pub(super) fn start(pool: Pool, in_flight: usize) -> ObjectWrites {
        ObjectWrites(Batcher::start(pool, in_flight))
    }

    /// Writes `w` with others queued beside it. `Ok(None)` when it was not
    /// written: the caller runs the general path.
    pub(super) async fn write(
        &self,
        w: &StorageWrite,
        server: bool,
        now: i64,
    ) -> StoreResult<Option<StorageAck>> {
        let (reply, rx) = oneshot::channel();
        self.0
            .call(
                Pending {
                    id: w.id.clone(),
                    value: w.value.clone(),
                    version: w.version(),
                    read: w.read.as_i64() as i16,
                    write: w.write.as_i64() as i16,
                    server,
                    now,
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

#[cfg(test)]
mod tests {
    use ludus_core::Store;

    use super::*;
    use crate::postgres::testing::{store, user};

    type Reply = oneshot::Receiver<StoreResult<Option<StorageAck>>>;

    fn pending(owner: Uuid, key: &str, value: &str, write: i16, server: bool) -> (Pending, Reply) {
        let (reply, rx) = oneshot::channel();
        let pending = Pending {
            id: ObjectId {
                collection: "saves".into(),
                key: key.into(),
                user_id: owner,
            },
            value: value.into(),
            version: ludus_core::storage::version_of(value),
            read: 1,
            write,
            server,
            now: 1_700_000_000,
            reply,
        };
        (pending, rx)
    }

    /// Applies one batch and returns each write's answer, in order.
    async fn apply_batch(
        pool: &Pool,
        writes: Vec<(Pending, Reply)>,
    ) -> Vec<StoreResult<Option<StorageAck>>> {
        let (batch, replies): (Vec<_>, Vec<_>) = writes.into_iter().unzip();
        Pending::apply(pool.clone(), batch).await;
        let mut out = Vec::new();
        for rx in replies {
            out.push(rx.await.unwrap());
        }
        out
    }

    async fn stored(pool: &Pool, owner: Uuid, key: &str) -> Option<String> {
        let conn = pool.get().await.unwrap();
        conn.client
            .query_opt(
                "SELECT value::text FROM storage WHERE collection = 'saves' AND key = $2 AND user_id = $1",
                &[&owner, &key],
            )
            .await
            .unwrap()
            .map(|row| row.get(0))
    }

    /// In one batch: new objects and objects their owner may write are
    /// written and acknowledged with their version; an object its owner
    /// may not write is answered "not applied" and kept, unless the server
    /// writes it; a batch with an unknown owner is refused whole and every
    /// write answered "not applied", nothing written.
    #[tokio::test]
    async fn each_write_of_a_batch_is_answered_for_itself() {
        let (store, _dir) = store().await;
        let pool = &store.pool;
        let ann = user(&store, "ann").await;
        let bob = user(&store, "bob").await;
        let out = apply_batch(
            pool,
            vec![
                pending(ann, "slot1", r#"{"level":1}"#, 1, false),
                pending(bob, "slot1", r#"{"level":2}"#, 0, false),
            ],
        )
        .await;
        let ack = out[0].as_ref().unwrap().as_ref().unwrap();
        assert_eq!((ack.user_id, ack.key.as_str()), (ann, "slot1"));
        assert_eq!(
            ack.version,
            ludus_core::storage::version_of(r#"{"level":1}"#)
        );
        assert_eq!(ack.create_time, 1_700_000_000);
        assert!(out[1].as_ref().unwrap().is_some());

        // Bob's object is not writable by its owner any more.
        let out = apply_batch(
            pool,
            vec![
                pending(ann, "slot1", r#"{"level":3}"#, 1, false),
                pending(bob, "slot1", r#"{"level":4}"#, 1, false),
            ],
        )
        .await;
        assert!(out[0].as_ref().unwrap().is_some());
        assert!(matches!(out[1], Ok(None)), "{:?}", out[1]);
        assert_eq!(
            stored(pool, ann, "slot1").await.as_deref(),
            Some(r#"{"level": 3}"#)
        );
        assert_eq!(
            stored(pool, bob, "slot1").await.as_deref(),
            Some(r#"{"level": 2}"#)
        );
        // The server may.
        let out = apply_batch(pool, vec![pending(bob, "slot1", r#"{"level":5}"#, 0, true)]).await;
        assert!(out[0].as_ref().unwrap().is_some());
        assert_eq!(
            stored(pool, bob, "slot1").await.as_deref(),
            Some(r#"{"level": 5}"#)
        );

        let out = apply_batch(
            pool,
            vec![
                pending(ann, "slot2", r#"{"level":6}"#, 1, false),
                pending(Uuid::new_v4(), "slot2", r#"{"level":7}"#, 1, false),
            ],
        )
        .await;
        assert!(out.iter().all(|r| matches!(r, Ok(None))), "{out:?}");
        assert_eq!(stored(pool, ann, "slot2").await, None);
        store.close().await;
    }
}
