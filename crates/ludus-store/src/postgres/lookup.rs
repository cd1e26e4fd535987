//! Batched sign-in look-ups: concurrent look-ups of a user by device id or
//! custom id queue here and reach PostgreSQL together, one statement per
//! kind and batch (each key still found through its unique index), instead
//! of one round trip (and one wake-up of a PostgreSQL backend) each. While
//! a batch runs the next one gathers, so the batch size follows the load: a
//! look-up alone goes out at once.
//!
//! Every sign-in with a device or custom id starts with one of these (a new
//! player's too, before registering), so under load this is where the
//! database spends most of its time per sign-in.
//!
//! The batches run on connections of their own, whose sessions use
//! PostgreSQL's generic plan for every prepared statement
//! (`plan_cache_mode = force_generic_plan`). Under the default mode a
//! statement prepared while the tables were small keeps being planned afresh
//! for every run while they grow: PostgreSQL compares the generic plan's
//! cost, estimated from today's statistics, with the average cost of every
//! custom plan it made since the statement was prepared, and that average
//! lags behind while the tables grow. During sign-up that replanning took a
//! third of PostgreSQL's CPU, most of it in the join's cost estimates
//! probing the indexes' newest entries (BENCHMARKS.md, "Sign-in look-ups
//! planned once"). A key is always found through its unique index, so the
//! generic plan is the right one for every batch; module SQL and the other
//! statements keep PostgreSQL's default on the general pool.

use std::collections::HashMap;
use std::sync::Arc;

use ludus_core::model::UserAuth;
use ludus_core::store::{StoreError, StoreResult};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_postgres::Config;

use super::errors::with_retry;
use super::pool::Pool;
use super::statements::Stmt;
use crate::StoreOptions;

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

/// What the look-ups' sessions set: one generic plan per statement, and
/// index scans only, so the plan made while the tables are empty (when a
/// scan of the whole table looks cheapest) still finds each key through its
/// unique index once they have grown.
const SESSION_OPTIONS: &str = "-c plan_cache_mode=force_generic_plan -c enable_seqscan=off";

/// The look-ups' own pool of `conns` connections, their sessions set with
/// `SESSION_OPTIONS` (on top of any options the address gives).
pub(super) fn pool(config: &Config, target: String, opts: &StoreOptions, conns: usize) -> Pool {
    let mut config = config.clone();
    let options = match config.get_options() {
        Some(given) if !given.is_empty() => format!("{given} {SESSION_OPTIONS}"),
        _ => SESSION_OPTIONS.to_owned(),
    };
    config.options(&options);
    let opts = StoreOptions {
        max_open_conns: conns,
        ..opts.clone()
    };
    Pool::new(config, target, &opts)
}

struct Ask {
    kind: Kind,
    key: String,
    reply: oneshot::Sender<StoreResult<Option<UserAuth>>>,
}

pub(super) struct Lookups {
    tx: mpsc::Sender<Ask>,
    /// The look-ups' own connections (`pool`).
    pool: Pool,
}

impl Lookups {
    /// Starts the batching task; at most `in_flight` batches run at once.
    /// The task ends when the `Lookups` is dropped.
    pub(super) fn start(pool: Pool, in_flight: usize) -> Lookups {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        tokio::spawn(run(pool.clone(), rx, in_flight.max(1)));
        Lookups { tx, pool }
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

    /// Waits for the batches running and closes the connections: a
    /// look-up asked after this fails as unavailable.
    pub(super) async fn close(&self) {
        self.pool.close().await;
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

#[cfg(test)]
mod tests {
    use ludus_core::Store;
    use ludus_core::model::{Identity, NewUser};
    use uuid::Uuid;

    use super::*;
    use crate::postgres::testing::store;

    fn new_user(name: &str, identity: Identity) -> NewUser {
        NewUser {
            id: Uuid::new_v4(),
            username: name.to_owned(),
            identity,
            password_hash: None,
            create_time: 1_700_000_000,
        }
    }

    /// Regression: a look-up statement prepared while `users` was empty
    /// was planned afresh for every batch while the table grew (PostgreSQL
    /// kept comparing today's generic cost with the average of its custom
    /// plans since the statement was prepared), a third of PostgreSQL's CPU
    /// during sign-up. On the look-ups' connections no batch is planned
    /// afresh, and every key is still found: a repeated key twice, a
    /// missing one not at all.
    #[tokio::test]
    async fn look_ups_are_never_planned_afresh() {
        let (store, _dir) = store().await;
        // Prepared (with the pool's first connection) while the tables are empty.
        let conn = store.lookups.pool.get().await.unwrap();
        // The same two keys as device ids of two users and custom ids of two others.
        let mut owners = HashMap::new();
        for (name, identity) in [
            ("ann", Identity::Device("k1".into())),
            ("bob", Identity::Device("k2".into())),
            ("cat", Identity::Custom("k1".into())),
            ("dan", Identity::Custom("k2".into())),
        ] {
            let (stmt, key) = match &identity {
                Identity::Device(k) => (Stmt::FindDevices, k.clone()),
                Identity::Custom(k) => (Stmt::FindCustoms, k.clone()),
                _ => unreachable!(),
            };
            let user = new_user(name, identity);
            owners.insert((stmt as usize, key), user.id);
            store.create_user(user).await.unwrap();
        }
        let batches: [&[&str]; 4] = [&["k1"], &["k2", "nobody"], &["k1", "k2", "k1"], &["nobody"]];
        for round in 0..4 {
            // The tables grow between rounds, and their statistics with them.
            for i in 0..250 {
                let name = format!("r{round}u{i}");
                let identity = Identity::Device(format!("{name}-device"));
                store.create_user(new_user(&name, identity)).await.unwrap();
            }
            conn.client
                .batch_execute("ANALYZE users, user_device")
                .await
                .unwrap();
            for stmt in [Stmt::FindDevices, Stmt::FindCustoms] {
                for keys in batches {
                    let rows = conn.client.query(conn.stmt(stmt), &[&keys]).await.unwrap();
                    let found: Vec<(String, Uuid)> = rows
                        .iter()
                        .map(|r| (r.get::<_, String>(4), r.get::<_, Uuid>(0)))
                        .collect();
                    let expected: Vec<(String, Uuid)> = keys
                        .iter()
                        .filter_map(|k| {
                            Some((k.to_string(), *owners.get(&(stmt as usize, k.to_string()))?))
                        })
                        .collect();
                    assert_eq!(found, expected, "{stmt:?}, round {round}, keys {keys:?}");
                }
            }
        }
        for stmt in [Stmt::FindDevices, Stmt::FindCustoms] {
            let row = conn
                .client
                .query_one(
                    "SELECT generic_plans, custom_plans FROM pg_prepared_statements \
                     WHERE statement = $1",
                    &[&stmt.sql()],
                )
                .await
                .unwrap();
            let (generic, custom): (i64, i64) = (row.get(0), row.get(1));
            assert!(
                generic == 16 && custom == 0,
                "{stmt:?}: {generic} generic and {custom} custom plans in 16 runs"
            );
        }
    }
}
