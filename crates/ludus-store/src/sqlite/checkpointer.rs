//! The WAL checkpointer: a thread with a connection of its own copies the
//! write-ahead log into the database file (and syncs both) while the writer
//! goes on committing.
//!
//! SQLite's default runs that copy inside whichever commit takes the WAL
//! past 1,000 pages, on the one writer thread, so every write queued behind
//! it waits through the copy and two fsyncs (several times a second under a
//! sign-up load). Here the writer wakes this thread after each commit, and
//! the thread checkpoints in `PASSIVE` mode (never waiting for readers or
//! the writer) at most every [`MIN_GAP`]. The writer keeps an automatic
//! checkpoint of its own at a higher mark ([`WRITER_MARK_FRAMES`]): by then
//! the WAL is copied already, so it costs no copy and no sync, and it is
//! what lets the WAL start over from its top instead of growing (a WAL only
//! restarts at the start of a write). Should the WAL still pass
//! [`CAP_FRAMES`] (readers holding old snapshots), the thread checkpoints
//! in `RESTART` mode, which waits for them.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use crate::OpenError;

/// Least time between two checkpoints: a busy writer is checkpointed in
/// batches, not after every commit.
const MIN_GAP: Duration = Duration::from_millis(10);

/// WAL frames (pages) past which a checkpoint waits for readers.
const CAP_FRAMES: i64 = 16_384;

/// The writer connection's own automatic checkpoint mark (SQLite's default
/// is 1,000 pages): by then this thread has copied the WAL, so the
/// writer's checkpoint has nothing to copy or sync, and the WAL starts over
/// from its top rather than growing (about 40 MB at most under load).
pub(super) const WRITER_MARK_FRAMES: i64 = 8_192;

#[derive(Default)]
struct Signal {
    /// (something was committed since the last checkpoint, stop)
    state: Mutex<(bool, bool)>,
    wake: Condvar,
}

/// Handle to the checkpointer thread.
pub(super) struct Checkpointer {
    signal: Arc<Signal>,
    done: Arc<AtomicU64>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What the writer holds to wake the checkpointer.
#[derive(Clone)]
#[cfg_attr(test, derive(Default))]
pub(super) struct Committed(Arc<Signal>);

impl Committed {
    /// A transaction committed: the WAL has grown.
    pub(super) fn notify(&self) {
        let mut state = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.0 {
            state.0 = true;
            self.0.wake.notify_one();
        }
    }
}

impl Checkpointer {
    /// Opens the checkpointer's own connection to `path` and starts it.
    pub(super) fn start(path: &Path) -> Result<Checkpointer, OpenError> {
        let conn = Connection::open(path).map_err(|e| OpenError::Sqlite {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| OpenError::Sqlite {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
        let signal = Arc::new(Signal::default());
        let done = Arc::new(AtomicU64::new(0));
        let thread = {
            let (signal, done) = (signal.clone(), done.clone());
            std::thread::Builder::new()
                .name("ludus-sqlite-checkpoint".into())
                .spawn(move || run(conn, &signal, &done))
                .map_err(OpenError::Thread)?
        };
        Ok(Checkpointer {
            signal,
            done,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// What the writer wakes the checkpointer with.
    pub(super) fn committed(&self) -> Committed {
        Committed(self.signal.clone())
    }

    /// Checkpoints done so far.
    #[cfg(test)]
    pub(super) fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Stops the thread after a last checkpoint and closes its connection.
    pub(super) async fn close(&self) {
        {
            let mut state = self.signal.state.lock().unwrap_or_else(|e| e.into_inner());
            state.1 = true;
            self.signal.wake.notify_one();
        }
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        tracing::debug!(
            checkpoints = self.done.load(Ordering::Relaxed),
            "sqlite checkpointer stopped"
        );
    }
}

fn run(conn: Connection, signal: &Signal, done: &AtomicU64) {
    loop {
        let stop = {
            let mut state = signal.state.lock().unwrap_or_else(|e| e.into_inner());
            while !state.0 && !state.1 {
                state = signal.wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            state.0 = false;
            state.1
        };
        checkpoint(&conn, "PASSIVE", done);
        if stop {
            break;
        }
        std::thread::sleep(MIN_GAP);
    }
    if let Err((_, e)) = conn.close() {
        tracing::warn!(error = %e, "closing the sqlite checkpoint connection failed");
    }
}

/// One checkpoint; a WAL past the cap is checkpointed again, waiting for
/// readers, so that it can start over.
fn checkpoint(conn: &Connection, mode: &str, done: &AtomicU64) {
    let result = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    });
    match result {
        Ok((log, copied)) => {
            done.fetch_add(1, Ordering::Relaxed);
            tracing::trace!(log, copied, mode, "sqlite WAL checkpoint");
            if mode == "PASSIVE" && log > CAP_FRAMES {
                tracing::debug!(
                    log,
                    copied,
                    "sqlite WAL past its cap, checkpointing with RESTART"
                );
                checkpoint(conn, "RESTART", done);
            }
        }
        Err(e) => tracing::warn!(error = %e, mode, "sqlite WAL checkpoint failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With automatic checkpoints off on the writing connection, only the
    /// checkpointer moves committed pages from the WAL into the database
    /// file: the file grows once it has run.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn committed_pages_reach_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ck.db");
        let writer = Connection::open(&path).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute_batch("CREATE TABLE t (v BLOB); ").unwrap();
        let checkpointer = Checkpointer::start(&path).unwrap();
        let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let before = size();
        let blob = vec![7u8; 4096];
        for _ in 0..4 {
            writer.execute_batch("BEGIN").unwrap();
            for _ in 0..128 {
                writer
                    .execute("INSERT INTO t (v) VALUES (?1)", [&blob])
                    .unwrap();
            }
            writer.execute_batch("COMMIT").unwrap();
        }
        // Two megabytes sit in the WAL; the database file has not grown.
        assert!(size() < before + 1_000_000, "{} {}", before, size());
        checkpointer.committed().notify();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while size() < before + 2_000_000 {
            assert!(
                std::time::Instant::now() < deadline,
                "the database file did not grow: {} after {} checkpoints",
                size(),
                checkpointer.done()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(checkpointer.done() >= 1);
        checkpointer.close().await;
        let n: i64 = writer
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 512);
    }
}
