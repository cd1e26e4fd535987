//! A small pool of read-only SQLite connections, each owned by its own
//! thread, so reads never run on the async threads. In WAL mode readers see
//! the last committed state and never wait for the writer.
//!
//! Reads queue on one channel that every reader thread takes from; a
//! semaphore bounds how many may wait, so callers slow down instead of
//! growing the queue.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use ludus_core::store::{StoreError, StoreResult};
use rusqlite::Connection;
use tokio::sync::{Semaphore, oneshot};

/// Reads that may be queued or running per reader connection.
const QUEUE_PER_READER: usize = 256;

type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

enum Msg {
    Read(ReadJob),
    Stop,
}

pub(super) struct Readers {
    tx: mpsc::Sender<Msg>,
    permits: Arc<Semaphore>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Readers {
    pub(super) fn start(conns: Vec<Connection>) -> std::io::Result<Readers> {
        let (tx, rx) = mpsc::channel::<Msg>();
        let rx = Arc::new(Mutex::new(rx));
        let permits = Arc::new(Semaphore::new(conns.len().max(1) * QUEUE_PER_READER));
        let mut threads = Vec::with_capacity(conns.len());
        for (i, conn) in conns.into_iter().enumerate() {
            let rx = Arc::clone(&rx);
            let thread = std::thread::Builder::new()
                .name(format!("ludus-sqlite-reader-{i}"))
                .spawn(move || {
                    // As the writer: a queued read does not preempt the I/O thread.
                    ludus_core::sched::batch_scheduling("sqlite reader");
                    run(conn, &rx)
                })?;
            threads.push(thread);
        }
        Ok(Readers {
            tx,
            permits,
            threads: Mutex::new(threads),
        })
    }

    /// Runs `work` on a reader connection and returns its result.
    pub(super) async fn read<T, F>(&self, work: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| closed())?;
        let (reply, rx) = oneshot::channel();
        let job: ReadJob = Box::new(move |conn| {
            let _ = reply.send(work(conn));
            drop(permit);
        });
        self.tx.send(Msg::Read(job)).map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// Lets queued reads finish, then closes every connection.
    pub(super) async fn close(&self) {
        self.permits.close();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for _ in &threads {
            let _ = self.tx.send(Msg::Stop);
        }
        let _ = tokio::task::spawn_blocking(move || {
            for thread in threads {
                let _ = thread.join();
            }
        })
        .await;
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("store is closed".into())
}

fn run(conn: Connection, rx: &Mutex<mpsc::Receiver<Msg>>) {
    loop {
        // The lock is held only while waiting for the next message; the read runs without it.
        let msg = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match msg {
            Ok(Msg::Read(job)) => job(&conn),
            Ok(Msg::Stop) | Err(_) => break,
        }
    }
    if let Err((_, e)) = conn.close() {
        tracing::warn!(error = %e, "closing a sqlite read connection failed");
    }
}
