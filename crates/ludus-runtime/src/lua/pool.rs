//! The pool of Lua VMs. A call takes an idle VM, runs on tokio's blocking
//! pool and puts the VM back. When all are busy a bounded number of calls
//! wait, in order, up to a timeout; beyond that they are answered with
//! `ResourceExhausted` at once. The pool never hangs a caller.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Semaphore;

use super::vm::Vm;
use crate::error::{LoadError, RuntimeError};

type Rebuild = Box<dyn Fn() -> Result<Vm, LoadError> + Send + Sync>;

pub(super) struct VmPool {
    inner: Arc<Inner>,
}

struct Inner {
    idle: Mutex<Vec<Vm>>,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue_size: usize,
    timeout: Duration,
    /// Makes a fresh VM when a call panicked and its VM cannot be trusted.
    rebuild: Rebuild,
}

impl VmPool {
    pub(super) fn new(
        vms: Vec<Vm>,
        queue_size: usize,
        timeout: Duration,
        rebuild: Rebuild,
    ) -> Self {
        let permits = Arc::new(Semaphore::new(vms.len()));
        VmPool {
            inner: Arc::new(Inner {
                idle: Mutex::new(vms),
                permits,
                waiting: AtomicUsize::new(0),
                queue_size,
                timeout,
                rebuild,
            }),
        }
    }

    /// Runs `f` on an idle VM. Cancelling the returned future never loses a
    /// VM: the blocking task puts it back itself.
    pub(super) async fn run<R, F>(&self, f: F) -> Result<R, RuntimeError>
    where
        F: FnOnce(&Vm) -> Result<R, RuntimeError> + Send + 'static,
        R: Send + 'static,
    {
        let inner = &self.inner;
        let permit = match inner.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(tokio::sync::TryAcquireError::Closed) => return Err(closed()),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                if inner.waiting.fetch_add(1, Ordering::AcqRel) >= inner.queue_size {
                    inner.waiting.fetch_sub(1, Ordering::AcqRel);
                    tracing::warn!(
                        queue = inner.queue_size,
                        "lua vm pool queue full, refusing call"
                    );
                    return Err(RuntimeError::busy(
                        "server is busy: every lua vm is in use and the wait queue is full, retry later or raise runtime.lua_pool_size",
                    ));
                }
                let acquired =
                    tokio::time::timeout(inner.timeout, inner.permits.clone().acquire_owned())
                        .await;
                inner.waiting.fetch_sub(1, Ordering::AcqRel);
                match acquired {
                    Ok(Ok(p)) => p,
                    Ok(Err(_)) => return Err(closed()),
                    Err(_) => {
                        tracing::warn!(
                            timeout_ms = inner.timeout.as_millis() as u64,
                            "timed out waiting for a lua vm"
                        );
                        return Err(RuntimeError::busy(
                            "server is busy: no lua vm became free in time, retry later or raise runtime.lua_pool_size",
                        ));
                    }
                }
            }
        };
        let inner = self.inner.clone();
        let task = tokio::task::spawn_blocking(move || {
            let vm = inner
                .idle
                .lock()
                .pop()
                .expect("a permit is only held with an idle vm");
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(&vm)));
            let result = match result {
                Ok(r) => {
                    inner.idle.lock().push(vm);
                    r
                }
                Err(_) => {
                    tracing::error!("lua call panicked, replacing its vm");
                    drop(vm);
                    match (inner.rebuild)() {
                        Ok(fresh) => inner.idle.lock().push(fresh),
                        Err(e) => {
                            // Without a VM the permit must go too, or a caller
                            // would wait for a VM that never comes back.
                            tracing::error!(error = %e, "cannot rebuild lua vm, pool shrinks by one");
                            permit.forget();
                            return Err(RuntimeError::internal("lua call failed"));
                        }
                    }
                    Err(RuntimeError::internal("lua call failed"))
                }
            };
            drop(permit);
            result
        });
        match task.await {
            Ok(r) => r,
            Err(e) => Err(RuntimeError::internal(format!(
                "lua call was interrupted: {e}"
            ))),
        }
    }

    /// Refuses new calls; calls already waiting are answered at once.
    pub(super) fn close(&self) {
        self.inner.permits.close();
    }
}

fn closed() -> RuntimeError {
    RuntimeError::new(
        ludus_core::Code::Unavailable,
        "server is shutting down, retry on another node",
    )
}
