//! The WAL's sync and checkpoints: a thread with a connection of its own
//! makes committed pages durable and copies the write-ahead log into the
//! database file (and syncs both) while the writer goes on committing.
//!
//! SQLite's default runs that copy inside whichever commit takes the WAL
//! past 1,000 pages, on the one writer thread, so every write queued behind
//! it waits through the copy and two fsyncs (several times a second under a
//! sign-up load). Here the writer wakes this thread after each commit. At
//! most every [`Intervals::sync`] the thread syncs the WAL file (commits
//! themselves do not: `synchronous=NORMAL`), which bounds what a power loss
//! can take; at most every [`Intervals::checkpoint`] it checkpoints
//! instead, in `PASSIVE` mode (never waiting for readers or the writer).
//! Checkpointing less often than syncing copies each page a busy writer
//! keeps changing (a wallet's row, the ledger's last leaf) once per
//! checkpoint rather than once per sync, and syncs the database file less
//! often. A checkpoint still owed when commits stop runs once its interval
//! has passed. The writer keeps an automatic checkpoint of its own at a
//! higher mark ([`WRITER_MARK_FRAMES`]): by then the WAL is copied already,
//! so it costs no copy and no sync, and it is what lets the WAL start over
//! from its top instead of growing (a WAL only restarts at the start of a
//! write). Should the WAL still pass [`CAP_FRAMES`] (readers holding old
//! snapshots), the thread checkpoints in `RESTART` mode, which waits for
//! them.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::OpenError;

/// How often the thread makes commits durable and copies them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Intervals {
    /// Least time between two syncs of the WAL (or checkpoints): the most
    /// recent commits a power loss can take (`database.wal_sync_interval_ms`).
    pub sync: Duration,
    /// Least time between two checkpoints (`database.checkpoint_interval_ms`);
    /// at or below `sync`, every round checkpoints.
    pub checkpoint: Duration,
}

/// WAL frames (pages) past which a checkpoint waits for readers.
const CAP_FRAMES: i64 = 16_384;

/// The writer connection's own automatic checkpoint mark (SQLite's default
/// is 1,000 pages): by then this thread has copied the WAL, so the
/// writer's checkpoint has nothing to copy or sync, and the WAL starts over
/// from its top rather than growing (about 40 MB at most under load).
pub(super) const WRITER_MARK_FRAMES: i64 = 8_192;

#[derive(Default)]
struct Signal {
    /// (something was committed since the last sync, stop)
    state: Mutex<(bool, bool)>,
    wake: Condvar,
}

/// What the thread has done, for its log line and the tests.
#[derive(Default)]
struct Counts {
    checkpoints: AtomicU64,
    syncs: AtomicU64,
}

/// Handle to the checkpointer thread.
pub(super) struct Checkpointer {
    signal: Arc<Signal>,
    counts: Arc<Counts>,
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
    pub(super) fn start(path: &Path, intervals: Intervals) -> Result<Checkpointer, OpenError> {
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
        let counts = Arc::new(Counts::default());
        let wal = Wal::new(path);
        let thread = {
            let (signal, counts) = (signal.clone(), counts.clone());
            std::thread::Builder::new()
                .name("ludus-sqlite-checkpoint".into())
                .spawn(move || run(conn, wal, intervals, &signal, &counts))
                .map_err(OpenError::Thread)?
        };
        Ok(Checkpointer {
            signal,
            counts,
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
        self.counts.checkpoints.load(Ordering::Relaxed)
    }

    /// Syncs of the WAL alone done so far.
    #[cfg(test)]
    pub(super) fn syncs(&self) -> u64 {
        self.counts.syncs.load(Ordering::Relaxed)
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
            checkpoints = self.counts.checkpoints.load(Ordering::Relaxed),
            syncs = self.counts.syncs.load(Ordering::Relaxed),
            "sqlite checkpointer stopped"
        );
    }
}

/// The database's WAL file, opened when first synced.
struct Wal {
    path: PathBuf,
    file: Option<File>,
    /// The last sync failed (warned once, until one succeeds).
    failing: bool,
}

impl Wal {
    fn new(db: &Path) -> Wal {
        let mut path = db.as_os_str().to_owned();
        path.push("-wal");
        Wal {
            path: PathBuf::from(path),
            file: None,
            failing: false,
        }
    }

    /// Syncs what the writer appended (`fdatasync`, as SQLite's own sync of
    /// the WAL); false when it failed (warned once until a sync succeeds),
    /// and the file is opened afresh next time. The file stays open: SQLite
    /// removes a WAL only when its last connection closes, and this
    /// thread's stays open meanwhile.
    fn sync(&mut self) -> bool {
        let result = match &mut self.file {
            Some(file) => file.sync_data(),
            empty => File::open(&self.path).and_then(|f| empty.insert(f).sync_data()),
        };
        match result {
            Ok(()) => self.failing = false,
            Err(e) => {
                if !std::mem::replace(&mut self.failing, true) {
                    tracing::warn!(error = %e, wal = %self.path.display(), "syncing the sqlite WAL failed, checkpointing instead");
                }
                self.file = None;
            }
        }
        !self.failing
    }
}

fn run(conn: Connection, mut wal: Wal, intervals: Intervals, signal: &Signal, counts: &Counts) {
    let mut last_checkpoint = Instant::now();
    // Commits synced but not yet copied into the database file.
    let mut owed = false;
    loop {
        let due = owed.then(|| last_checkpoint + intervals.checkpoint);
        let (committed, stop) = wait(signal, due);
        let checkpoint_due = stop || last_checkpoint.elapsed() >= intervals.checkpoint;
        if !checkpoint_due && committed && wal.sync() {
            counts.syncs.fetch_add(1, Ordering::Relaxed);
            owed = true;
        } else if checkpoint_due || committed {
            // Due, or the sync failed: a checkpoint syncs the WAL too.
            checkpoint(&conn, "PASSIVE", &counts.checkpoints);
            last_checkpoint = Instant::now();
            owed = false;
        }
        if stop {
            break;
        }
        std::thread::sleep(intervals.sync);
    }
    if let Err((_, e)) = conn.close() {
        tracing::warn!(error = %e, "closing the sqlite checkpoint connection failed");
    }
}

/// Waits for a commit or the stop, or until `due` when a checkpoint is
/// owed; answers (committed since the last round, stop) and clears the
/// first.
fn wait(signal: &Signal, due: Option<Instant>) -> (bool, bool) {
    let mut state = signal.state.lock().unwrap_or_else(|e| e.into_inner());
    while !state.0 && !state.1 {
        match due {
            None => state = signal.wake.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(due) => {
                let left = due.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                state = signal
                    .wake
                    .wait_timeout(state, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }
    let committed = std::mem::take(&mut state.0);
    (committed, state.1)
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

    /// A checkpoint every round, as before syncs and checkpoints were apart.
    const EVERY_ROUND: Intervals = Intervals {
        sync: Duration::from_millis(10),
        checkpoint: Duration::from_millis(10),
    };

    /// A writing connection with automatic checkpoints off and a table.
    fn writer(path: &Path) -> Connection {
        let writer = Connection::open(path).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "synchronous", "NORMAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute_batch("CREATE TABLE t (v BLOB); ").unwrap();
        writer
    }

    /// Commits 128 pages of 4 KB.
    fn commit_pages(writer: &Connection) {
        let blob = vec![7u8; 4096];
        writer.execute_batch("BEGIN").unwrap();
        for _ in 0..128 {
            writer
                .execute("INSERT INTO t (v) VALUES (?1)", [&blob])
                .unwrap();
        }
        writer.execute_batch("COMMIT").unwrap();
    }

    /// Between checkpoints a commit is made durable by a sync of the WAL
    /// alone: the database file does not grow. The checkpoint still owed
    /// runs once its interval has passed, with no further commit to wake
    /// the thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn commits_are_synced_between_checkpoints_and_copied_when_due() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sync.db");
        let writer = writer(&path);
        let interval = Duration::from_secs(2);
        let started = Instant::now();
        let checkpointer = Checkpointer::start(
            &path,
            Intervals {
                sync: Duration::from_millis(5),
                checkpoint: interval,
            },
        )
        .unwrap();
        let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let before = size();
        for _ in 0..4 {
            commit_pages(&writer);
        }
        checkpointer.committed().notify();
        let deadline = Instant::now() + Duration::from_secs(10);
        while checkpointer.syncs() == 0 {
            assert!(Instant::now() < deadline, "the WAL was never synced");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if started.elapsed() < interval {
            assert_eq!(checkpointer.done(), 0, "checkpointed before its interval");
            assert!(size() < before + 1_000_000, "{} {}", before, size());
        }
        // The file grows while the checkpoint runs; it is counted after.
        while size() < before + 2_000_000 || checkpointer.done() == 0 {
            assert!(
                Instant::now() < deadline,
                "the owed checkpoint never ran: {} bytes after {} checkpoints",
                size(),
                checkpointer.done()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(started.elapsed() >= interval, "checkpointed early");
        checkpointer.close().await;
    }

    /// With automatic checkpoints off on the writing connection, only the
    /// checkpointer moves committed pages from the WAL into the database
    /// file: the file grows once it has run.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn committed_pages_reach_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ck.db");
        let writer = writer(&path);
        let checkpointer = Checkpointer::start(&path, EVERY_ROUND).unwrap();
        let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let before = size();
        for _ in 0..4 {
            commit_pages(&writer);
        }
        // Two megabytes sit in the WAL; the database file has not grown.
        assert!(size() < before + 1_000_000, "{} {}", before, size());
        checkpointer.committed().notify();
        let deadline = Instant::now() + Duration::from_secs(10);
        // The file grows while the checkpoint runs; it is counted after.
        while size() < before + 2_000_000 || checkpointer.done() == 0 {
            assert!(
                Instant::now() < deadline,
                "the database file did not grow: {} after {} checkpoints",
                size(),
                checkpointer.done()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        checkpointer.close().await;
        let n: i64 = writer
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 512);
    }
}
