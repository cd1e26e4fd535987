//! Batched sign-in look-ups: concurrent look-ups of a user by device id or
//! custom id queue here and reach PostgreSQL together, one `= ANY($1)`
//! statement per kind and batch, instead of one round trip (and one wake-up
//! of a PostgreSQL backend) each. While a batch runs the next one gathers,
//! so the batch size follows the load: a look-up alone goes out at once.
//!
//! Every sign-in with a device or custom id starts with one of these (a new
//! player's too, before registering), so under load this is where the
//! database spends most of its time per sign-in.

use std::collections::HashMap;
use std::sync::Arc;

use ludus_core::model::UserAuth;
use ludus_core::store::{StoreError, StoreResult};
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::errors::with_retry;
use super::pool::Pool;
use super::statements::Stmt;

/// Most keys sent in one statement.
const MAX_BATCH: usize = 256;

/// Look-ups waiting for a batch; askers wait (asynchronously) when it is full.
const QUEUE_CAPACITY: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Device,
    Custom,
}

impl Kind {
    fn stmt(self) -> Stmt {
        match self {
            Kind::Device => Stmt::FindDevices,
            Kind::Custom => Stmt::FindCustoms,
        }
    }
}

struct Ask {
    kind: Kind,
    key: String,
    reply: oneshot::Sender<StoreResult<Option<UserAuth>>>,
}

pub(super) struct Lookups {
    tx: mpsc::Sender<Ask>,
}

impl Lookups {
    /// Starts the batching task; at most `in_flight` batches run at once.
    /// The task ends when the `Lookups` is dropped.
    pub(super) fn start(pool: Pool, in_flight: usize) -> Lookups {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        tokio::spawn(run(pool, rx, in_flight.max(1)));
        Lookups { tx }
    }

    /// The user whose device id (or custom id) is `key`, if any.
    pub(super) async fn find(&self, kind: Kind, key: &str) -> StoreResult<Option<UserAuth>> {
        let (reply, rx) = oneshot::channel();
        let ask = Ask {
            kind,
            key: key.to_owned(),
            reply,
        };
        self.tx.send(ask).await.map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("store is closed".into())
}

async fn run(pool: Pool, mut rx: mpsc::Receiver<Ask>, in_flight: usize) {
    let slots = Arc::new(Semaphore::new(in_flight));
    while let Some(first) = rx.recv().await {
        // Waiting for a free slot is what lets the next batch grow.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            break;
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(ask) => batch.push(ask),
                Err(_) => break,
            }
        }
        let pool = pool.clone();
        tokio::spawn(async move {
            answer(&pool, batch).await;
            drop(slot);
        });
    }
}

/// Runs one statement per kind present in `batch` and answers every ask.
async fn answer(pool: &Pool, batch: Vec<Ask>) {
    let (devices, customs): (Vec<Ask>, Vec<Ask>) =
        batch.into_iter().partition(|a| a.kind == Kind::Device);
    for asks in [devices, customs] {
        let Some(kind) = asks.first().map(|a| a.kind) else {
            continue;
        };
        let keys: Vec<&str> = asks.iter().map(|a| a.key.as_str()).collect();
        let found = with_retry("find users", || async {
            let conn = pool.get().await?;
            let rows = conn.client.query(conn.stmt(kind.stmt()), &[&keys]).await?;
            let mut found = HashMap::with_capacity(rows.len());
            for row in &rows {
                found.insert(row.try_get::<_, String>(4)?, super::auth_from_row(row)?);
            }
            Ok(found)
        })
        .await;
        match found {
            Ok(found) => {
                // A key asked twice in one batch is answered twice.
                for ask in asks {
                    let _ = ask.reply.send(Ok(found.get(&ask.key).cloned()));
                }
            }
            Err(e) => {
                for ask in asks {
                    let _ = ask.reply.send(Err(e.clone()));
                }
            }
        }
    }
}
