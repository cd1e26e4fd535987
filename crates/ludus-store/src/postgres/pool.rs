//! A small pool of PostgreSQL connections, each with its statements prepared.
//!
//! A semaphore caps open connections at `max_open_conns`; a request that
//! finds none free waits at most `acquire_timeout_ms` and then fails as
//! unavailable instead of hanging. Broken or too old connections are dropped
//! when handed back and replaced on demand.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ludus_core::store::{StoreError, StoreResult};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::{Client, Config, NoTls, Statement};

use super::errors;
use super::statements::{Statements, Stmt};
use crate::StoreOptions;

/// How long close() waits for requests still holding a connection.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub(super) struct Pool {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    target: String,
    idle: Mutex<Vec<Conn>>,
    permits: Arc<Semaphore>,
    size: u32,
    max_lifetime: Option<Duration>,
    acquire_timeout: Duration,
    closed: AtomicBool,
    /// Requests that waited for a connection, and their wait in all.
    waits: AtomicU64,
    wait_ns: AtomicU64,
    /// Group commits of the batchers on this pool, and their jobs.
    batches: AtomicU64,
    batched: AtomicU64,
}

/// An open connection and its prepared statements.
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) statements: Statements,
    born: Instant,
}

impl Conn {
    pub(super) fn stmt(&self, stmt: Stmt) -> &Statement {
        self.statements.get(stmt)
    }
}

/// A connection lent by the pool; handed back when dropped.
pub(super) struct PooledConn {
    conn: Option<Conn>,
    pool: Arc<Inner>,
    _permit: OwnedSemaphorePermit,
}

impl Deref for PooledConn {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn
            .as_ref()
            .expect("connection is present until drop")
    }
}

impl std::ops::DerefMut for PooledConn {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("connection is present until drop")
    }
}

impl Drop for PooledConn {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if !self.pool.closed.load(Ordering::Acquire) && self.pool.reusable(&conn) {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
    }
}

impl Inner {
    fn reusable(&self, conn: &Conn) -> bool {
        !conn.client.is_closed()
            && self
                .max_lifetime
                .is_none_or(|max| conn.born.elapsed() < max)
    }
}

impl Pool {
    pub(super) fn new(config: Config, target: String, opts: &StoreOptions) -> Pool {
        let size = opts
            .max_open_conns
            .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize)) as u32;
        Pool {
            inner: Arc::new(Inner {
                config,
                target,
                idle: Mutex::new(Vec::with_capacity(size as usize)),
                permits: Arc::new(Semaphore::new(size as usize)),
                size,
                max_lifetime: (opts.conn_max_lifetime_ms > 0)
                    .then(|| Duration::from_millis(opts.conn_max_lifetime_ms)),
                acquire_timeout: Duration::from_millis(opts.acquire_timeout_ms.max(1)),
                closed: AtomicBool::new(false),
                waits: AtomicU64::new(0),
                wait_ns: AtomicU64::new(0),
                batches: AtomicU64::new(0),
                batched: AtomicU64::new(0),
            }),
        }
    }

    /// Most connections open at once.
    pub(super) fn size(&self) -> usize {
        self.inner.size as usize
    }

    /// One group commit of `jobs` jobs.
    pub(super) fn count_batch(&self, jobs: usize) {
        self.inner.batches.fetch_add(1, Ordering::Relaxed);
        self.inner.batched.fetch_add(jobs as u64, Ordering::Relaxed);
    }

    pub(super) fn stats(&self) -> ludus_core::store::StoreStats {
        let inner = &self.inner;
        let idle = inner.idle.lock().unwrap_or_else(|e| e.into_inner()).len() as u64;
        let in_use = u64::from(inner.size).saturating_sub(inner.permits.available_permits() as u64);
        ludus_core::store::StoreStats {
            batches: inner.batches.load(Ordering::Relaxed),
            batched: inner.batched.load(Ordering::Relaxed),
            pool: Some(ludus_core::store::PoolStats {
                max_open: u64::from(inner.size),
                open: in_use + idle,
                in_use,
                idle,
                wait_count: inner.waits.load(Ordering::Relaxed),
                wait_ns: inner.wait_ns.load(Ordering::Relaxed),
            }),
        }
    }

    /// A connection, reused when one is idle, opened otherwise.
    pub(super) async fn get(&self) -> StoreResult<PooledConn> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let permit = match Arc::clone(&inner.permits).try_acquire_owned() {
            Ok(permit) => Ok(Ok(permit)),
            Err(_) => {
                let started = Instant::now();
                let got = tokio::time::timeout(
                    inner.acquire_timeout,
                    Arc::clone(&inner.permits).acquire_owned(),
                )
                .await;
                inner.waits.fetch_add(1, Ordering::Relaxed);
                inner.wait_ns.fetch_add(
                    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
                    Ordering::Relaxed,
                );
                got
            }
        };
        let permit = match permit {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(closed()),
            Err(_) => {
                tracing::warn!(
                    size = inner.size,
                    waited_ms = inner.acquire_timeout.as_millis() as u64,
                    "no database connection became free"
                );
                return Err(StoreError::Unavailable(format!(
                    "no database connection became free within {} ms; raise database.max_open_conns",
                    inner.acquire_timeout.as_millis()
                )));
            }
        };
        loop {
            let idle = inner.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match idle {
                Some(conn) if inner.reusable(&conn) => {
                    return Ok(PooledConn {
                        conn: Some(conn),
                        pool: Arc::clone(inner),
                        _permit: permit,
                    });
                }
                // Broken or too old: drop it and look again.
                Some(_) => continue,
                None => break,
            }
        }
        let conn = self.open().await?;
        Ok(PooledConn {
            conn: Some(conn),
            pool: Arc::clone(inner),
            _permit: permit,
        })
    }

    async fn open(&self) -> StoreResult<Conn> {
        let client = connect(&self.inner.config).await.map_err(|e| {
            tracing::warn!(target_db = %self.inner.target, error = %e, "cannot connect to postgresql");
            StoreError::Unavailable(format!("cannot connect to the database: {e}"))
        })?;
        let statements = Statements::prepare(&client)
            .await
            .map_err(|e| errors::classify(&e).or_unavailable())?;
        tracing::debug!(target_db = %self.inner.target, "opened postgresql connection");
        Ok(Conn {
            client,
            statements,
            born: Instant::now(),
        })
    }

    /// Refuses new requests, waits for the ones in flight, closes every connection.
    pub(super) async fn close(&self) {
        let inner = &self.inner;
        inner.closed.store(true, Ordering::Release);
        if tokio::time::timeout(DRAIN_TIMEOUT, inner.permits.acquire_many(inner.size))
            .await
            .is_err()
        {
            tracing::warn!("database requests still running at close, dropping their connections");
        }
        inner.permits.close();
        inner.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("store is closed".into())
}

/// Opens one connection and drives it on a task of its own.
pub(super) async fn connect(config: &Config) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "postgresql connection ended");
        }
    });
    Ok(client)
}
