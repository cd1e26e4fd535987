//! A Lua call's state inside its VM, below everything else in `lua/`: the
//! budgets (instructions, memory, deadline) a call runs under, the server
//! call it has parked, what the modules registered while loading, whether
//! the thread runs a match callback, and the text of its errors. Every other
//! file of the Lua runtime may use it; it uses none of them.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mlua::{LightUserData, Lua, MultiValue};

use crate::error::RuntimeError;
use ludus_core::Code;

/// Registry slot of `dual(wait, start)` (see [`AWAIT`]).
pub(super) const DUAL: &str = "ludus.dual";

/// A server call a pool call waits on, as [`Vm::run`] awaits it.
pub(super) type ParkedCall = Pin<Box<dyn Future<Output = mlua::Result<MultiValue>> + Send>>;

/// A pool VM's server call in flight (its app data). A yielding `nk`
/// function's `start` ([`park`]) leaves the call here and its coroutine
/// yields [`parked`]; [`Vm::run`] takes the call, awaits it, and resumes
/// the coroutine with `true` and the results, or with `false` after
/// leaving the error here for `raise` to throw where the function was
/// called. A VM runs one call at a time, and that call waits on one server
/// call at a time, so one slot of each suffices.
#[derive(Default)]
pub(super) struct Parking {
    pub(super) call: RefCell<Option<ParkedCall>>,
    pub(super) failure: RefCell<Option<mlua::Error>>,
}

/// What a coroutine yields to say its server call is parked: the address
/// of a static, as a light userdata no module can make.
pub(super) fn parked() -> LightUserData {
    static PARKED: u8 = 0;
    LightUserData(std::ptr::addr_of!(PARKED).cast_mut().cast())
}

/// Leaves `call` for [`Vm::run`] and answers the value the calling
/// coroutine yields to it (see [`Parking`]).
pub(super) fn park(lua: &Lua, call: ParkedCall) -> mlua::Result<LightUserData> {
    let parking = lua
        .app_data_ref::<Parking>()
        .ok_or_else(|| mlua::Error::runtime("server calls yield only in a pool vm"))?;
    // Every `start` is followed at once by its coroutine's yield, and
    // `Vm::run` empties the slot when it sees that; were a yield ever to
    // fail, its call would be left here, and is dropped now rather than
    // awaited for a call it does not belong to.
    *parking.call.borrow_mut() = Some(call);
    Ok(parked())
}

/// What the modules registered while loading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Registered {
    pub rpcs: BTreeSet<String>,
    pub before: BTreeSet<String>,
    pub after: BTreeSet<String>,
    pub matchmaker_matched: bool,
    pub shutdown: bool,
    /// `register_leaderboard_reset`, `register_tournament_reset`,
    /// `register_tournament_end`.
    pub leaderboard_reset: bool,
    pub tournament_reset: bool,
    pub tournament_end: bool,
    /// `register_event`, `register_event_session_start`, `_end`.
    pub event: bool,
    pub event_session_start: bool,
    pub event_session_end: bool,
    /// Storage indexes with a filter function.
    pub index_filters: BTreeSet<String>,
}

/// Why the current call was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// It ran more VM instructions (and pattern-matching steps) than allowed.
    Instructions,
    /// It ran past its wall-clock deadline.
    Deadline,
    /// The runtime is shutting down.
    Shutdown,
}

/// Per-VM bookkeeping kept in the Lua state's app data.
pub(crate) struct CallState {
    /// Instructions used by the current call (in hook intervals), plus the
    /// steps of the pattern matcher.
    pub used: Cell<u64>,
    /// Instructions one call may use.
    pub limit: u64,
    /// Bytes the VM may allocate (0: no limit), for buffers built in Rust.
    pub memory_limit: usize,
    /// When the current call must stop.
    pub deadline: Cell<Instant>,
    /// How long each call may run; matches shorten it after `match_init`.
    pub timeout: Cell<Duration>,
    /// The setting named in the error of a call past its deadline.
    pub timeout_key: Cell<&'static str>,
    /// Raised by the pool when the runtime shuts down: every call stops.
    pub interrupt: Arc<AtomicBool>,
    /// Set once the current call is over a budget; it stays stopped even if
    /// Lua code catches the error.
    pub stopped: Cell<Option<Stop>>,
    /// True only while modules load: registrations are refused afterwards.
    pub loading: Cell<bool>,
    /// True in the first VM while it loads: `run_once` runs only there.
    pub first: bool,
    pub registered: std::cell::RefCell<Registered>,
}

impl CallState {
    /// Starts the budgets of a new call.
    pub(super) fn reset(&self) {
        self.used.set(0);
        self.stopped.set(None);
        let deadline = Instant::now() + self.timeout.get();
        self.deadline.set(deadline);
        CALL_DEADLINE.with(|d| d.set(Some(deadline)));
    }

    /// Why a call that failed must count as stopped: over a budget, or past
    /// its deadline while the hook could not see it (waiting on the server).
    pub(super) fn stop_reason(&self) -> Option<Stop> {
        self.stopped
            .get()
            .or_else(|| (Instant::now() >= self.deadline.get()).then_some(Stop::Deadline))
    }

    /// Counts `n` units of work against the call's budgets and checks its
    /// deadline: the instruction hook calls it every `HOOK_INTERVAL`
    /// instructions and the pattern matcher every few thousand steps, so a
    /// call is stopped within microseconds of its deadline wherever it runs.
    pub(crate) fn charge(&self, n: u64) -> mlua::Result<()> {
        let used = self.used.get() + n;
        self.used.set(used);
        let stop = if used > self.limit {
            Stop::Instructions
        } else if self.interrupt.load(Ordering::Relaxed) {
            Stop::Shutdown
        } else if Instant::now() >= self.deadline.get() {
            Stop::Deadline
        } else {
            return match self.stopped.get() {
                // A stopped call raised its error already; raise it again
                // wherever the caught call goes on running.
                Some(stop) => Err(mlua::Error::runtime(self.message(stop))),
                None => Ok(()),
            };
        };
        self.stopped.set(Some(stop));
        Err(mlua::Error::runtime(self.message(stop)))
    }

    fn message(&self, stop: Stop) -> String {
        match stop {
            Stop::Instructions => format!(
                "lua call exceeded its budget of {} instructions: make it do less work or raise runtime.lua_instruction_budget",
                self.limit
            ),
            Stop::Deadline => format!(
                "lua call exceeded its time budget of {} ms: make it do less work or raise {}",
                self.timeout.get().as_millis(),
                self.timeout_key.get()
            ),
            Stop::Shutdown => "the server is shutting down: the lua call was stopped".into(),
        }
    }

    /// The error the caller sees for a stopped call.
    pub(super) fn error(&self, stop: Stop) -> RuntimeError {
        let code = match stop {
            Stop::Instructions => Code::ResourceExhausted,
            Stop::Deadline => Code::DeadlineExceeded,
            Stop::Shutdown => Code::Unavailable,
        };
        RuntimeError::new(code, self.message(stop))
    }
}

thread_local! {
    /// The deadline of the Lua call running on this thread, for the server
    /// calls it waits on (`nk_common::block_on`), which see no VM.
    static CALL_DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// When the Lua call running on this thread must end.
pub(crate) fn call_deadline() -> Option<Instant> {
    CALL_DEADLINE.with(Cell::get)
}

/// Makes `deadline` the one this thread's server calls see: the VM's call
/// that the thread resumes next.
pub(super) fn set_call_deadline(deadline: Instant) {
    CALL_DEADLINE.with(|d| d.set(Some(deadline)));
}

/// Fails as the VM's allocator would when `extra` bytes built in Rust (a
/// `gsub` result before it becomes a Lua string) would take the VM past its
/// memory limit: Rust buffers are not counted by Lua's allocator.
pub(crate) fn check_memory(lua: &Lua, extra: usize) -> mlua::Result<()> {
    let limit = lua
        .app_data_ref::<CallState>()
        .map_or(0, |s| s.memory_limit);
    if limit > 0 && lua.used_memory().saturating_add(extra) > limit {
        return Err(mlua::Error::MemoryError("not enough memory".into()));
    }
    Ok(())
}

/// A full collection with the VM's limit lifted. A VM at its limit must
/// still be able to collect: a finalizer the collection runs may allocate
/// (a stack slot, say), and under the limit that allocation fails and
/// aborts the collection, which then frees nothing, call after call.
pub(crate) fn collect(lua: &Lua) {
    let _ = unlimited(lua, || lua.gc_collect());
}

/// [`check_memory`] after a collection if needed: fails only if what is
/// live takes the VM past its limit, not what is garbage.
pub(crate) fn within_limit(lua: &Lua) -> mlua::Result<()> {
    if check_memory(lua, 0).is_err() {
        collect(lua);
        check_memory(lua, 0)?;
    }
    Ok(())
}

/// Runs `f`, the server's own Rust code building Lua values of a size the
/// server bounds (a tick's messages, a presence list, a dispatcher call's
/// arguments), with the VM's memory limit lifted.
///
/// With a limit set, mlua guards each of its allocating operations (every
/// string, table and `raw_set`) with a `pcall` and two fresh C closures
/// (LuaJIT has no light C functions): garbage that made a busy match spend
/// a quarter of its time building messages and collecting those closures.
/// Without a limit mlua runs them unguarded, as it does by default. No Lua
/// code runs inside `f`, so the limit still bounds every allocation a
/// module makes, and what `f` allocates counts towards it afterwards.
///
/// The limit in force is what `set_memory_limit` answers when it lifts
/// it (no app-data look-up per use), and it is put back afterwards; inside
/// an outer `unlimited` there is none to put back.
pub(crate) fn unlimited<R>(lua: &Lua, f: impl FnOnce() -> R) -> R {
    struct Restore<'a>(&'a Lua, usize);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            let _ = self.0.set_memory_limit(self.1);
        }
    }
    match lua.set_memory_limit(0) {
        Ok(limit) if limit > 0 => {
            let _restore = Restore(lua, limit);
            f()
        }
        _ => f(),
    }
}

/// Charges `n` units of work to the call running in `lua` (see
/// [`CallState::charge`]).
pub(crate) fn charge(lua: &Lua, n: u64) -> mlua::Result<()> {
    match lua.app_data_ref::<CallState>() {
        Some(state) => state.charge(n),
        None => Ok(()),
    }
}

/// Ends a server call the running Lua call waits on at that call's deadline,
/// so a module cannot outwait its budget in `nk.http_request` or SQL.
pub(crate) async fn within_deadline<T>(
    fut: impl std::future::Future<Output = Result<T, ludus_core::ApiError>>,
) -> Result<T, ludus_core::ApiError> {
    let Some(deadline) = call_deadline() else {
        return fut.await;
    };
    match tokio::time::timeout_at(deadline.into(), fut).await {
        Ok(result) => result,
        Err(_) => Err(ludus_core::ApiError::new(
            Code::DeadlineExceeded,
            "the server call did not finish within the lua call's time budget",
        )),
    }
}

/// Drops mlua's wrapping and the traceback, keeping `file:line: message`.
pub(super) fn clean_message(message: &str) -> String {
    let message = message
        .split("\nstack traceback:")
        .next()
        .unwrap_or(message);
    let message = message.strip_prefix("runtime error: ").unwrap_or(message);
    let message = message.strip_prefix("callback error: ").unwrap_or(message);
    message.trim().to_owned()
}

/// The message of an error raised in Rust code called from Lua, without
/// mlua's wrapping and tracebacks.
pub(crate) fn error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => error_text(cause),
        mlua::Error::RuntimeError(msg) => msg.clone(),
        mlua::Error::WithContext { cause, .. } => error_text(cause),
        other => clean_message(&other.to_string()),
    }
}

/// `path/to/file.lua:12: message` → `message`.
pub(super) fn strip_position(message: &str) -> &str {
    let Some((head, rest)) = message.split_once(".lua:") else {
        return message;
    };
    if head.contains('\n') {
        return message;
    }
    match rest.split_once(": ") {
        Some((line, msg)) if line.bytes().all(|b| b.is_ascii_digit()) => msg,
        _ => message,
    }
}

thread_local! {
    static IN_MATCH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is running a match callback: server calls made from
/// there must leave the match runtime's worker first (see `nk_common::block_on`).
pub(crate) fn in_match_callback() -> bool {
    IN_MATCH.with(|c| c.get())
}

pub(super) fn in_match<R>(f: impl FnOnce() -> R) -> R {
    IN_MATCH.with(|c| c.set(true));
    let r = f();
    IN_MATCH.with(|c| c.set(false));
    r
}
