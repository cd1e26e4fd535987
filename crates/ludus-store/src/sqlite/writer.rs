//! The single SQLite writer: a dedicated thread owns the read-write
//! connection and commits every write queued while the previous transaction
//! ran in one transaction (group commit).
//!
//! A write that fails (a taken username, say) leaves nothing behind while
//! the rest of its batch commits. Most failures change no row (a check
//! before the first statement, or a statement that fails, which SQLite
//! undoes by itself), so writes run bare and the connection's change count
//! tells whether a failed one left rows behind. Only then is the batch
//! rolled back and run again with a SAVEPOINT around each write, which
//! rolls back that write alone. Savepoints on every write cost 8 % of the
//! wallet updates a core commits (each page a write touches is copied to
//! the savepoint's journal first: BENCHMARKS.md, "Writes without a
//! savepoint each"); hence writes are `Fn` closures, which can run twice.
//! Callers hear back only after COMMIT, so a reply of success means the
//! write is visible to every reader.
//!
//! A write sees the open transaction as a [`Tx`]: the connection (by
//! `Deref`) and the statements the batch's writes have used, each taken
//! from rusqlite's statement cache once a batch instead of once a use. A
//! use of the cache hashes the SQL text twice, copies it into a key and
//! clears the bindings: about a tenth of the writer's own instructions
//! per wallet update, which runs three statements (BENCHMARKS.md,
//! "Statements held for a batch on SQLite").

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ludus_core::store::{StoreError, StoreResult};
use rusqlite::{CachedStatement, Connection, Statement};
use tokio::sync::{mpsc, oneshot};

use super::checkpointer::Committed;
use super::queries::exec;

/// Most writes committed in one transaction; bounds how long one batch holds
/// the write lock and how late its first caller hears back.
const MAX_BATCH: usize = 512;

/// Writes waiting for the writer; senders wait (asynchronously) when it is full.
const QUEUE_CAPACITY: usize = 4096;

/// The writer's open transaction as a write sees it: the connection, and
/// the statements the batch's writes have taken through [`Tx::with`],
/// which go back to rusqlite's cache when the batch ends.
pub(super) struct Tx<'c> {
    conn: &'c Connection,
    /// Keyed by the SQL's address: a call site's text is one `'static` str.
    held: RefCell<Vec<(&'static str, CachedStatement<'c>)>>,
}

impl<'c> Tx<'c> {
    pub(super) fn new(conn: &'c Connection) -> Tx<'c> {
        Tx {
            conn,
            held: RefCell::new(Vec::new()),
        }
    }

    /// Runs `f` on the statement of `sql`, taken from the cache (or
    /// prepared) on the batch's first use and held until the batch ends.
    /// rusqlite resets a statement when its run ends (`execute`, a
    /// `query_row`, a dropped `Rows`), and `f` binds every parameter, so a
    /// held statement carries nothing from one use to the next. `f` must
    /// not call `with` again: the held statements are borrowed while it runs.
    pub(super) fn with<R>(
        &self,
        sql: &'static str,
        f: impl FnOnce(&mut Statement<'c>) -> rusqlite::Result<R>,
    ) -> rusqlite::Result<R> {
        let mut held = self.held.borrow_mut();
        let at = match held.iter().position(|(s, _)| std::ptr::eq(*s, sql)) {
            Some(at) => at,
            None => {
                held.push((sql, self.conn.prepare_cached(sql)?));
                held.len() - 1
            }
        };
        f(&mut held[at].1)
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

/// A write waiting for its transaction, type-erased so one queue carries them all.
trait WriteJob: Send {
    /// Runs the write inside the open transaction (again, if its batch is
    /// run again: the last run's outcome counts); false means it failed.
    fn run(&mut self, tx: &Tx<'_>) -> bool;
    /// Reports the outcome once the transaction has committed, or why it did not.
    fn finish(self: Box<Self>, commit: Result<(), StoreError>);
}

struct Job<F, T> {
    work: F,
    outcome: Option<StoreResult<T>>,
    reply: oneshot::Sender<StoreResult<T>>,
}

impl<F, T> WriteJob for Job<F, T>
where
    F: Fn(&Tx<'_>) -> StoreResult<T> + Send,
    T: Send,
{
    fn run(&mut self, tx: &Tx<'_>) -> bool {
        let outcome = (self.work)(tx);
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, commit: Result<(), StoreError>) {
        let result = match (self.outcome, commit) {
            // A failed write reports its own error, whatever became of the batch.
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (_, Err(e)) => Err(e),
            (None, Ok(())) => Err(StoreError::Backend("write was not run".into())),
        };
        // The caller may have gone away; the write stands either way.
        let _ = self.reply.send(result);
    }
}

/// Work the writer does in a transaction of its own, at most once every
/// `every`, after a commit: so only while writes come, and never in a
/// batch's transaction, whose writes it would make wait.
#[derive(Clone, Copy)]
pub(super) struct Upkeep {
    pub(super) every: Duration,
    /// Returns how many rows it changed; named in logs by `what`.
    pub(super) work: fn(&Connection) -> StoreResult<usize>,
    pub(super) what: &'static str,
}

enum Msg {
    Write(Box<dyn WriteJob>),
    /// Commit everything queued before this, close the connection, then acknowledge.
    Shutdown(oneshot::Sender<()>),
}

/// Handle to the writer thread.
pub(super) struct Writer {
    tx: mpsc::Sender<Msg>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Group commits made and the writes they carried.
    counts: Arc<BatchCounts>,
}

#[derive(Default)]
struct BatchCounts {
    batches: AtomicU64,
    writes: AtomicU64,
}

impl Writer {
    /// Starts the writer on `conn`; each commit wakes `committed` (the
    /// checkpointer: the connection's own automatic checkpoints are off).
    /// `upkeep` also runs once more before the connection closes.
    pub(super) fn start(
        conn: Connection,
        committed: Committed,
        upkeep: Option<Upkeep>,
    ) -> std::io::Result<Writer> {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let counts = Arc::new(BatchCounts::default());
        let thread_counts = counts.clone();
        let thread = std::thread::Builder::new()
            .name("ludus-sqlite-writer".into())
            .spawn(move || {
                // A write queued to this sleeping thread does not preempt
                // the I/O thread: it queues more, and the batch grows
                // (+38 % storage writes on one core; BENCHMARKS.md).
                ludus_core::sched::batch_scheduling("sqlite writer");
                run(conn, rx, &committed, upkeep, &thread_counts)
            })?;
        Ok(Writer {
            tx,
            thread: Mutex::new(Some(thread)),
            counts,
        })
    }

    /// Group commits made so far and the writes they carried.
    pub(super) fn batch_counts(&self) -> (u64, u64) {
        (
            self.counts.batches.load(Ordering::Relaxed),
            self.counts.writes.load(Ordering::Relaxed),
        )
    }

    /// Queues a write and waits until its transaction has committed.
    ///
    /// `work` may run twice (module docs), so it must not change what it
    /// captured, which `Fn` ensures, and it must change the database only
    /// with statements that count as changes (INSERT, UPDATE, DELETE) or
    /// with a single statement of another kind: a write that fails after a
    /// `CREATE TABLE` of its own would keep the table.
    pub(super) async fn write<T, F>(&self, work: F) -> StoreResult<T>
    where
        F: Fn(&Tx<'_>) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let job = Box::new(Job {
            work,
            outcome: None,
            reply,
        });
        self.tx.send(Msg::Write(job)).await.map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// Commits what is queued, closes the connection and ends the thread.
    pub(super) async fn close(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Shutdown(ack)).await.is_ok() {
            let _ = done.await;
        }
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            // The thread has acknowledged, so joining takes microseconds; still off the async threads.
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("store is closed".into())
}

fn run(
    conn: Connection,
    mut rx: mpsc::Receiver<Msg>,
    committed: &Committed,
    upkeep: Option<Upkeep>,
    counts: &BatchCounts,
) {
    let mut batch: Vec<Box<dyn WriteJob>> = Vec::with_capacity(MAX_BATCH);
    let mut shutdown = None;
    let mut last_upkeep = Instant::now();
    while shutdown.is_none() {
        match rx.blocking_recv() {
            Some(Msg::Write(job)) => batch.push(job),
            Some(Msg::Shutdown(ack)) => shutdown = Some(ack),
            // Every handle is gone without a close(): nothing more can arrive.
            None => break,
        }
        while batch.len() < MAX_BATCH && shutdown.is_none() {
            match rx.try_recv() {
                Ok(Msg::Write(job)) => batch.push(job),
                Ok(Msg::Shutdown(ack)) => shutdown = Some(ack),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            counts.batches.fetch_add(1, Ordering::Relaxed);
            counts
                .writes
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
            commit_batch(&conn, &mut batch);
            committed.notify();
            if let Some(upkeep) = upkeep
                && last_upkeep.elapsed() >= upkeep.every
            {
                let _ = run_upkeep(&conn, upkeep, committed);
                last_upkeep = Instant::now();
            }
        }
    }
    // Refuse what raced with the shutdown instead of leaving callers waiting.
    rx.close();
    while let Ok(msg) = rx.try_recv() {
        match msg {
            Msg::Write(job) => job.finish(Err(closed())),
            Msg::Shutdown(ack) => {
                let _ = ack.send(());
            }
        }
    }
    if let Some(upkeep) = upkeep {
        let _ = run_upkeep(&conn, upkeep, committed);
    }
    if let Err((_, e)) = conn.close() {
        tracing::warn!(error = %e, "closing the sqlite write connection failed");
    }
    tracing::debug!("sqlite writer stopped");
    if let Some(ack) = shutdown {
        let _ = ack.send(());
    }
}

/// Runs the batch in one transaction and replies to each write.
fn commit_batch(conn: &Connection, batch: &mut Vec<Box<dyn WriteJob>>) {
    let size = batch.len();
    let tx = Tx::new(conn);
    let result = match run_in_transaction(&tx, batch, Guard::Bare) {
        Err(Abort::Undo) => {
            rollback(conn);
            tracing::debug!(
                writes = size,
                "a write failed after changing rows: its batch runs again with savepoints"
            );
            run_in_transaction(&tx, batch, Guard::Savepoints)
        }
        other => other,
    };
    // The held statements go back to the cache before anything else runs.
    drop(tx);
    let result = result.map_err(|abort| match abort {
        Abort::Failed(e) => e,
        Abort::Undo => StoreError::Backend("a write could not be undone".into()),
    });
    if let Err(e) = &result {
        tracing::warn!(error = %e, writes = size, "sqlite group commit failed");
        rollback(conn);
    } else {
        tracing::trace!(writes = size, "sqlite group commit");
    }
    for job in batch.drain(..) {
        job.finish(result.clone());
    }
}

/// Runs the upkeep in its own transaction; a failure rolls it back and is
/// logged (what it would have changed waits for the next run). Answers the
/// upkeep's outcome, which only tests read.
pub(super) fn run_upkeep(
    conn: &Connection,
    upkeep: Upkeep,
    committed: &Committed,
) -> StoreResult<usize> {
    let result = exec(conn, "BEGIN IMMEDIATE")
        .and_then(|()| (upkeep.work)(conn))
        .and_then(|rows| exec(conn, "COMMIT").map(|()| rows));
    match &result {
        Ok(0) => {}
        Ok(rows) => {
            tracing::trace!(rows, what = upkeep.what, "sqlite writer upkeep");
            committed.notify();
        }
        Err(e) => {
            tracing::warn!(error = %e, what = upkeep.what, "sqlite writer upkeep failed");
            rollback(conn);
        }
    }
    result
}

/// How a batch keeps a failed write's rows out.
#[derive(Clone, Copy)]
enum Guard {
    /// No savepoints: a failed write that changed rows aborts the run.
    Bare,
    /// A savepoint around each write, rolled back when it fails.
    Savepoints,
}

/// Why a run of a batch stopped before COMMIT.
#[derive(Debug)]
enum Abort {
    /// A write failed after changing rows, which only a savepoint could undo.
    Undo,
    /// The transaction itself failed; every write of the batch fails with this.
    Failed(StoreError),
}

impl From<StoreError> for Abort {
    fn from(e: StoreError) -> Self {
        Abort::Failed(e)
    }
}

fn run_in_transaction(
    tx: &Tx<'_>,
    batch: &mut [Box<dyn WriteJob>],
    guard: Guard,
) -> Result<(), Abort> {
    let conn: &Connection = tx;
    exec(conn, "BEGIN IMMEDIATE")?;
    for job in batch.iter_mut() {
        match guard {
            Guard::Bare => {
                let before = conn.total_changes();
                if !job.run(tx) && conn.total_changes() != before {
                    return Err(Abort::Undo);
                }
            }
            Guard::Savepoints => {
                exec(conn, "SAVEPOINT write")?;
                if !job.run(tx) {
                    exec(conn, "ROLLBACK TO write")?;
                }
                exec(conn, "RELEASE write")?;
            }
        }
        // An error that ends the whole transaction (SQLite rolls back on
        // some, e.g. a full disk): what follows must not commit alone.
        if conn.is_autocommit() {
            return Err(Abort::Failed(StoreError::Backend(
                "the write transaction was rolled back".into(),
            )));
        }
    }
    exec(conn, "COMMIT")?;
    Ok(())
}

fn rollback(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    type Reply = oneshot::Receiver<StoreResult<()>>;

    fn conn() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v TEXT NOT NULL UNIQUE)")
            .unwrap();
        conn
    }

    /// A write that inserts `rows` and then fails when `fail` says so,
    /// counting its runs.
    fn job(
        rows: &'static [&'static str],
        fail: bool,
        runs: &Arc<AtomicUsize>,
    ) -> (Box<dyn WriteJob>, Reply) {
        let (reply, rx) = oneshot::channel();
        let runs = runs.clone();
        let work = move |conn: &Tx<'_>| {
            runs.fetch_add(1, Ordering::SeqCst);
            for v in rows {
                conn.execute("INSERT INTO t (v) VALUES (?1)", [v])
                    .map_err(|e| StoreError::Sql(e.to_string()))?;
            }
            if fail {
                return Err(StoreError::Sql("refused".into()));
            }
            Ok(())
        };
        let job: Box<dyn WriteJob> = Box::new(Job {
            work,
            outcome: None,
            reply,
        });
        (job, rx)
    }

    fn rows(conn: &Connection) -> Vec<String> {
        let mut stmt = conn.prepare("SELECT v FROM t ORDER BY v").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    fn outcome(mut rx: Reply) -> StoreResult<()> {
        rx.try_recv().expect("every write hears back")
    }

    /// A write that fails after inserting a row: its batch runs again with
    /// savepoints, so its row is gone and the others' are committed once.
    #[test]
    fn a_write_that_fails_after_changing_rows_leaves_none() {
        let conn = conn();
        let runs: Vec<Arc<AtomicUsize>> = (0..3).map(|_| Arc::default()).collect();
        let (a, ra) = job(&["a"], false, &runs[0]);
        let (b, rb) = job(&["b1", "b2"], true, &runs[1]);
        let (c, rc) = job(&["c"], false, &runs[2]);
        commit_batch(&conn, &mut vec![a, b, c]);
        assert_eq!(rows(&conn), ["a", "c"]);
        assert!(outcome(ra).is_ok());
        assert!(matches!(outcome(rb), Err(StoreError::Sql(m)) if m == "refused"));
        assert!(outcome(rc).is_ok());
        // a and b ran bare, then the whole batch with savepoints.
        let counts: Vec<usize> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
        assert_eq!(counts, [2, 2, 1]);
        assert!(conn.is_autocommit());
    }

    /// Failures that change no row (a check before any statement, or a
    /// refused statement, which SQLite undoes itself) keep the bare run:
    /// every write runs once.
    #[test]
    fn a_write_that_fails_without_changes_runs_once() {
        let conn = conn();
        conn.execute("INSERT INTO t (v) VALUES ('taken')", [])
            .unwrap();
        let runs: Vec<Arc<AtomicUsize>> = (0..4).map(|_| Arc::default()).collect();
        let (a, ra) = job(&["a"], false, &runs[0]);
        let (b, rb) = job(&[], true, &runs[1]);
        let (c, rc) = job(&["taken"], false, &runs[2]);
        let (d, rd) = job(&["d"], false, &runs[3]);
        commit_batch(&conn, &mut vec![a, b, c, d]);
        assert_eq!(rows(&conn), ["a", "d", "taken"]);
        assert!(outcome(ra).is_ok());
        assert!(outcome(rb).is_err());
        assert!(matches!(outcome(rc), Err(StoreError::Sql(m)) if m.contains("UNIQUE")));
        assert!(outcome(rd).is_ok());
        assert!(runs.iter().all(|r| r.load(Ordering::SeqCst) == 1));
    }

    /// A batch takes a statement from the cache once and holds it: its
    /// uses run the same statement, the cache has none meanwhile, and the
    /// statement goes back when the batch ends.
    #[test]
    fn a_batch_holds_its_statements_until_it_ends() {
        use rusqlite::StatementStatus::Run;
        const INSERT: &str = "INSERT INTO t (v) VALUES (?1)";
        let conn = conn();
        let tx = Tx::new(&conn);
        tx.with(INSERT, |s| s.execute(["a"])).unwrap();
        tx.with(INSERT, |s| {
            assert_eq!(s.get_status(Run), 1, "the first use's statement");
            s.execute(["b"])
        })
        .unwrap();
        assert_eq!(
            conn.prepare_cached(INSERT).unwrap().get_status(Run),
            0,
            "held out of the cache"
        );
        drop(tx);
        assert_eq!(conn.prepare_cached(INSERT).unwrap().get_status(Run), 2);
        assert_eq!(rows(&conn), ["a", "b"]);
    }

    /// A use that fails leaves the held statement reset, with nothing
    /// bound from it in the next use.
    #[test]
    fn a_held_statement_fails_and_runs_again() {
        const FIND: &str = "SELECT v FROM t WHERE v >= ?1 ORDER BY v";
        let conn = conn();
        conn.execute_batch("INSERT INTO t (v) VALUES ('a'), ('b')")
            .unwrap();
        let tx = Tx::new(&conn);
        let bad = tx.with(FIND, |s| s.query_row(["a"], |r| r.get::<_, i64>(0)));
        assert!(bad.is_err(), "text read as a number: {bad:?}");
        let failed = tx.with(FIND, |s| s.query_row(["c"], |r| r.get::<_, String>(0)));
        assert!(matches!(failed, Err(rusqlite::Error::QueryReturnedNoRows)));
        let found = tx.with(FIND, |s| s.query_row(["b"], |r| r.get::<_, String>(0)));
        assert_eq!(found.unwrap(), "b");
        drop(tx);
        // Nothing pending: the connection can run and roll back DDL.
        conn.execute_batch("BEGIN; DROP TABLE t; ROLLBACK").unwrap();
    }

    /// The same through the writer thread: a multi-row write refused half
    /// way commits nothing of its own, and the writes beside it commit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_beside_a_failed_one_commit_through_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let setup = Connection::open(&path).unwrap();
        setup
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (v TEXT NOT NULL UNIQUE)")
            .unwrap();
        drop(setup);
        let writer =
            Writer::start(Connection::open(&path).unwrap(), Committed::default(), None).unwrap();
        let writer = Arc::new(writer);
        let mut tasks = Vec::new();
        for i in 0..200 {
            let writer = writer.clone();
            tasks.push(tokio::spawn(async move {
                writer
                    .write(move |conn| {
                        conn.execute("INSERT INTO t (v) VALUES (?1)", [format!("ok-{i}")])
                            .map_err(|e| StoreError::Backend(e.to_string()))?;
                        if i % 7 == 0 {
                            // Half way: a duplicate of its own row.
                            conn.execute("INSERT INTO t (v) VALUES (?1)", [format!("ok-{i}")])
                                .map_err(|e| StoreError::Sql(e.to_string()))?;
                        }
                        Ok(())
                    })
                    .await
            }));
        }
        for (i, task) in tasks.into_iter().enumerate() {
            let result = task.await.unwrap();
            assert_eq!(result.is_err(), i % 7 == 0, "write {i}: {result:?}");
        }
        writer.close().await;
        let conn = Connection::open(&path).unwrap();
        let count: usize = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, (0..200).filter(|i| i % 7 != 0).count());
    }
}
