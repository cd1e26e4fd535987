//! A small pool of PostgreSQL connections, each with its statements prepared.
//!
//! A semaphore caps open connections at `max_open_conns`; a request that
//! finds none free waits at most `acquire_timeout_ms` and then fails as
//! unavailable instead of hanging. Broken or too old connections are dropped
//! when handed back and replaced on demand.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
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
            }),
        }
    }

    /// Most connections open at once.
    pub(super) fn size(&self) -> usize {
        self.inner.size as usize
    }

    /// A connection, reused when one is idle, opened otherwise.
    pub(super) async fn get(&self) -> StoreResult<PooledConn> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let permit = match tokio::time::timeout(
            inner.acquire_timeout,
            Arc::clone(&inner.permits).acquire_owned(),
        )
        .await
        {
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
