//! Storage reads by id gathered into one statement (`batches.rs`): the ids
//! of concurrent reads (a client's `POST /v2/storage`, `nk.storage_read`)
//! go to PostgreSQL as one `StorageRead`, and each read gets back the
//! objects of its own ids, in the order it named them (an id named twice,
//! twice, as the statement's join gives them). Reads change nothing, so no
//! read ever runs alone: each gets a key of its own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use ludus_core::storage::{ObjectId, StorageObject};
use ludus_core::store::StoreResult;
use tokio::sync::oneshot;

use super::batches::{Batcher, Job};
use super::pool::Pool;
use super::statements::Stmt;
use super::storage;

/// One read on its way to a batch.
struct Pending {
    /// The read's own number: reads never share a key.
    seq: u64,
    ids: Vec<ObjectId>,
    reply: oneshot::Sender<StoreResult<Vec<StorageObject>>>,
}

impl Job for Pending {
    type Key = u64;

    fn key(&self) -> u64 {
        self.seq
    }

    async fn apply(pool: Pool, batch: Vec<Pending>) {
        let ids: Vec<ObjectId> = batch.iter().flat_map(|p| p.ids.iter().cloned()).collect();
        match read(&pool, &ids).await {
            Ok(found) => {
                for p in batch {
                    let objects = p
                        .ids
                        .iter()
                        .filter_map(|id| found.get(id).cloned())
                        .collect();
                    let _ = p.reply.send(Ok(objects));
                }
            }
            Err(e) => {
                for p in batch {
                    let _ = p.reply.send(Err(e.clone()));
                }
            }
        }
    }

    async fn alone(pool: Pool, p: Pending) {
        Self::apply(pool, vec![p]).await;
    }
}

/// The stored objects among `ids`, by id.
async fn read(pool: &Pool, ids: &[ObjectId]) -> StoreResult<HashMap<ObjectId, StorageObject>> {
    let (collections, keys, users) = storage::read_params(ids);
    let conn = pool.get().await?;
    let rows = conn
        .client
        .query(conn.stmt(Stmt::StorageRead), &[&collections, &keys, &users])
        .await
        .map_err(|e| super::errors::classify(&e).or_unavailable())?;
    let mut found = HashMap::with_capacity(rows.len());
    for row in &rows {
        let object = storage::object_from_row(row).map_err(|e| e.or_unavailable())?;
        let id = ObjectId {
            collection: object.collection.clone(),
            key: object.key.clone(),
            user_id: object.user_id,
        };
        found.insert(id, object);
    }
    Ok(found)
}

/// Queues reads for their batches.
pub(super) struct ObjectReads {
    batcher: Batcher<Pending>,
    next: AtomicU64,
}

impl ObjectReads {
    /// Starts the batching task; at most `in_flight` batches run at once.
    pub(super) fn start(pool: Pool, in_flight: usize) -> ObjectReads {
        ObjectReads {
            batcher: Batcher::start(pool, in_flight),
            next: AtomicU64::new(0),
        }
    }

    /// The stored objects among `ids`, read with others queued beside it.
    pub(super) async fn read(&self, ids: &[ObjectId]) -> StoreResult<Vec<StorageObject>> {
        let (reply, rx) = oneshot::channel();
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        self.batcher
            .call(
                Pending {
                    seq,
                    ids: ids.to_vec(),
                    reply,
                },
                rx,
            )
            .await
    }

    /// Answers what is queued and stops the task.
    pub(super) async fn close(&self) {
        self.batcher.close().await;
    }
}

#[cfg(test)]
mod tests {
    use ludus_core::Store;
    use ludus_core::multi_update::MultiUpdate;
    use ludus_core::storage::{Access, ReadPermission, StorageWrite, WritePermission};

    use super::*;
    use crate::postgres::testing::{store, user};

    fn id(key: &str, owner: uuid::Uuid) -> ObjectId {
        ObjectId::new("saves", key, owner).unwrap()
    }

    /// Two reads in one batch: each gets the objects of its own ids, in the
    /// order it named them, an id named twice twice, unknown ids left out.
    #[tokio::test]
    async fn each_read_of_a_batch_gets_its_own_objects() {
        let (store, _dir) = store().await;
        let ann = user(&store, "ann").await;
        for key in ["a", "b", "c"] {
            let mut update = MultiUpdate::new(Access::Server);
            update.writes.push(
                StorageWrite::new(
                    id(key, ann),
                    format!(r#"{{"key":"{key}"}}"#),
                    "",
                    ReadPermission::PublicRead,
                    WritePermission::OwnerWrite,
                )
                .unwrap(),
            );
            store
                .multi_update(update, 1_700_000_000_000_000)
                .await
                .unwrap();
        }
        let ask = |ids: Vec<ObjectId>| {
            let (reply, rx) = oneshot::channel();
            (Pending { seq: 0, ids, reply }, rx)
        };
        let (first, first_rx) = ask(vec![id("c", ann), id("missing", ann), id("a", ann)]);
        let (second, second_rx) = ask(vec![id("b", ann), id("a", ann), id("b", ann)]);
        Pending::apply(store.pool.clone(), vec![first, second]).await;
        let keys = |objects: Vec<StorageObject>| -> Vec<String> {
            objects.into_iter().map(|o| o.key).collect()
        };
        assert_eq!(keys(first_rx.await.unwrap().unwrap()), ["c", "a"]);
        assert_eq!(keys(second_rx.await.unwrap().unwrap()), ["b", "a", "b"]);
        store.close().await;
    }
}
