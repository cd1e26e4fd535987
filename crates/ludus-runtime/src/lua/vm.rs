//! One Lua VM: a sandboxed LuaJIT state with the `nk` module, the server's
//! modules loaded into it, an instruction budget and a memory limit. The pool
//! owns many; each loads every module, so module-level tables are private to
//! their VM and a write in one call can never race a read in another.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use mlua::{
    FromLuaMulti, Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table,
    Value as LuaValue, VmState,
};
use serde_json::Value;

use super::call_state::{
    CallState, DUAL, Registered, charge, collect, error_text, unlimited, within_limit,
};
use super::call_state::{Parking, clean_message, parked, set_call_deadline, strip_position};
use super::convert;
use super::ctx;
use super::modules::ModuleSource;
use super::nk;
use super::sandbox;
use super::shared::LuaShared;
use crate::context::CallContext;
use crate::error::{LoadError, RuntimeError};
use ludus_core::Code;

/// The instruction hook runs every this many VM instructions.
const HOOK_INTERVAL: u32 = 1000;

/// Where registered callbacks live in each VM's registry.
const CALLBACKS: &str = "ludus.callbacks";

pub(super) struct Vm {
    lua: Lua,
    callbacks: Table,
    invoke: Function,
    /// The body of the runner coroutine (pool VMs only): the trampoline that
    /// calls a registered callback with its `ctx` (which `nk.get_context`
    /// answers while the callback runs), in a loop that yields each call's
    /// outcome and takes the next call's arguments.
    run_loop: Option<Function>,
    /// The coroutine the pool's calls run in, one call after another (made
    /// again if a call kills it), so a call makes no thread of its own.
    runner: std::cell::RefCell<Option<mlua::Thread>>,
    /// The running call's coroutine (`[1]`) and `ctx` (`[2]`), see [`INVOKE`].
    calling: Table,
    shared: Arc<LuaShared>,
}

impl Vm {
    /// Builds a VM and loads every module into it, in name order. Raising
    /// `interrupt` stops whatever call the VM runs.
    pub(super) fn new(
        shared: Arc<LuaShared>,
        modules: &Arc<Vec<ModuleSource>>,
        first: bool,
        interrupt: Arc<AtomicBool>,
    ) -> Result<(Vm, Registered), LoadError> {
        let vm = Vm::build(shared, modules, first, interrupt, true)?;
        vm.load_modules(modules)?;
        let registered = {
            let state = vm.state();
            state.loading.set(false);
            state.registered.borrow().clone()
        };
        vm.finish_loading()
            .map_err(|e| LoadError::Setup(e.to_string()))?;
        Ok((vm, registered))
    }

    /// A VM for one authoritative match: only the match module (and what it
    /// requires) is loaded; answers the table of callbacks it returned and
    /// the match's `ctx`, built before the collection that ends loading.
    pub(super) fn for_match(
        shared: Arc<LuaShared>,
        modules: &Arc<Vec<ModuleSource>>,
        name: &str,
    ) -> Result<(Vm, Table, Table), String> {
        if !modules.iter().any(|m| m.name == name) {
            return Err(format!("no lua module named {name:?} under runtime.path"));
        }
        let vm =
            Vm::build(shared, modules, false, Arc::default(), false).map_err(|e| e.to_string())?;
        let require: Function = vm.lua.globals().get("require").map_err(|e| e.to_string())?;
        vm.reset_budget();
        let result: mlua::Result<(bool, LuaValue)> = vm.invoke.call((require, name));
        let loaded = match result {
            Ok((true, value)) => value,
            Ok((false, err)) => return Err(vm.describe(&err).message),
            Err(e) => return Err(vm.classify(e).message),
        };
        vm.state().loading.set(false);
        let ctx = ctx::context_table(
            &vm.lua,
            &vm.shared,
            &CallContext::new(crate::context::ExecutionMode::Match),
        )
        .map_err(|e| e.to_string())?;
        vm.finish_loading().map_err(|e| e.to_string())?;
        match loaded {
            LuaValue::Table(t) => Ok((vm, t, ctx)),
            _ => Err(
                "match module must return a table containing the match callback functions".into(),
            ),
        }
    }

    /// Ends module loading: globals and the standard library become
    /// read-only (unless `runtime.read_only_globals` is off), then a full
    /// collection returns the compiler and set-up garbage (about a third of
    /// a fresh VM) before the VM starts serving, which matters with one VM
    /// per match.
    fn finish_loading(&self) -> mlua::Result<()> {
        if self.shared.settings.read_only_globals {
            sandbox::freeze(&self.lua)?;
        }
        let _ = self.lua.gc_collect();
        let _ = self.lua.gc_collect();
        Ok(())
    }

    /// Sets how long each later call may run and the setting that names it.
    pub(super) fn set_timeout(&self, timeout: Duration, key: &'static str) {
        let state = self.state();
        state.timeout.set(timeout);
        state.timeout_key.set(key);
    }

    pub(super) fn lua(&self) -> &Lua {
        &self.lua
    }

    /// The async runtime server calls from Lua run on.
    pub(super) fn runtime_handle(&self) -> tokio::runtime::Handle {
        self.shared.handle.clone()
    }

    /// Makes this VM's call the one its thread's server calls see
    /// ([`call_deadline`]) before the thread resumes it.
    pub(super) fn resume_deadline(&self) {
        let deadline = self.state().deadline.get();
        set_call_deadline(deadline);
    }

    /// Calls `f` with `args` under the instruction budget, protected but
    /// without the trampoline (error values become messages): the fast path
    /// of match callbacks, which pass and return a fixed number of values
    /// without allocating. Answers the first four values returned.
    pub(super) fn call_direct<A: mlua::IntoLuaMulti>(
        &self,
        f: &Function,
        args: A,
    ) -> Result<(LuaValue, LuaValue, LuaValue, LuaValue), RuntimeError> {
        self.reset_budget();
        let result = f.call::<(LuaValue, LuaValue, LuaValue, LuaValue)>(args);
        if let Some(stop) = self.state().stopped.get() {
            return Err(self.state().error(stop));
        }
        result.map_err(|e| {
            let mut e = self.classify(e);
            if matches!(&e.code, Code::ResourceExhausted) {
                collect(&self.lua);
            }
            e.message = strip_position(&e.message).to_owned();
            e
        })
    }

    /// The sandboxed state with `nk`, before any module is loaded; a pool
    /// VM (`pool`) gets the loop its calls run in.
    fn build(
        shared: Arc<LuaShared>,
        modules: &Arc<Vec<ModuleSource>>,
        first: bool,
        interrupt: Arc<AtomicBool>,
        pool: bool,
    ) -> Result<Vm, LoadError> {
        let setup = |e: mlua::Error| LoadError::Setup(e.to_string());
        let libs = StdLib::TABLE
            | StdLib::STRING
            | StdLib::MATH
            | StdLib::OS
            | StdLib::PACKAGE
            | StdLib::BIT
            | StdLib::JIT;
        let lua = Lua::new_with(libs, LuaOptions::new()).map_err(setup)?;
        lua.set_app_data(CallState {
            used: Cell::new(0),
            limit: shared.settings.instruction_budget,
            memory_limit: shared.settings.memory_limit_bytes,
            deadline: Cell::new(Instant::now()),
            timeout: Cell::new(shared.settings.call_timeout),
            timeout_key: Cell::new("runtime.lua_call_timeout_ms"),
            interrupt,
            stopped: Cell::new(None),
            loading: Cell::new(true),
            first,
            registered: Default::default(),
        });
        // A global hook: LuaJIT's hooks are per VM, and a per-thread mlua hook
        // would be dropped by the first coroutine that runs. Besides counting,
        // it reads the clock once per interval (a vDSO call of about 20 ns
        // every thousand instructions, well under 1 % of their run time).
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(HOOK_INTERVAL),
            |lua, _| {
                charge(lua, u64::from(HOOK_INTERVAL))?;
                Ok(VmState::Continue)
            },
        )
        .map_err(setup)?;
        let callbacks = lua.create_table().map_err(setup)?;
        lua.set_named_registry_value(CALLBACKS, &callbacks)
            .map_err(setup)?;
        // The base library's own, before the sandbox wraps it.
        let setmetatable: Function = lua.globals().get("setmetatable").map_err(setup)?;
        let lazy = sandbox::install(&lua, &shared, modules).map_err(setup)?;
        // Throws a parked server call's error where its function was called
        // (a callback's error, as the waiting version throws it).
        let raise = lua
            .create_function(|lua, ()| -> mlua::Result<()> {
                let failure = lua
                    .app_data_ref::<Parking>()
                    .and_then(|parking| parking.failure.borrow_mut().take());
                Err(failure.unwrap_or_else(|| mlua::Error::runtime("the server call failed")))
            })
            .map_err(setup)?;
        let (dual, calling, raw_yield): (Function, Table, Function) = lua
            .load(AWAIT)
            .set_name("=ludus.await")
            .call(raise)
            .map_err(setup)?;
        if pool {
            lua.set_app_data(Parking::default());
            lua.set_named_registry_value(DUAL, dual).map_err(setup)?;
        }
        let nk_table = nk::install(&lua, &shared, &callbacks).map_err(setup)?;
        let package: Table = lua.globals().get("package").map_err(setup)?;
        let loaded: Table = package.get("loaded").map_err(setup)?;
        loaded.set("nakama", &nk_table).map_err(setup)?;
        let fallback_ctx: Function = nk_table.get("get_context").map_err(setup)?;
        let (invoke, call_with_ctx, get_context): (Function, Function, Function) = lua
            .load(INVOKE)
            .set_name("=ludus.invoke")
            .call((fallback_ctx, &calling))
            .map_err(setup)?;
        nk_table.set("get_context", get_context).map_err(setup)?;
        let run_loop = if pool {
            Some(
                lua.load(RUN_LOOP)
                    .set_name("=ludus.run")
                    .call((
                        call_with_ctx,
                        raw_yield,
                        setmetatable,
                        &lazy.ctx_metatable,
                        sandbox::ctx_key(),
                        shared.settings.node.as_str(),
                        env!("CARGO_PKG_VERSION"),
                    ))
                    .map_err(setup)?,
            )
        } else {
            None
        };
        if shared.settings.memory_limit_bytes > 0 {
            lua.set_memory_limit(shared.settings.memory_limit_bytes)
                .map_err(setup)?;
        }
        Ok(Vm {
            lua,
            callbacks,
            invoke,
            run_loop,
            runner: Default::default(),
            calling,
            shared,
        })
    }

    fn state(&self) -> mlua::AppDataRef<'_, CallState> {
        self.lua
            .app_data_ref::<CallState>()
            .expect("vm state is set at creation")
    }

    fn load_modules(&self, modules: &[ModuleSource]) -> Result<(), LoadError> {
        let require: Function = self
            .lua
            .globals()
            .get("require")
            .map_err(|e| LoadError::Setup(e.to_string()))?;
        for module in modules {
            self.reset_budget();
            let result: mlua::Result<(bool, LuaValue)> =
                self.invoke.call((require.clone(), module.name.as_str()));
            let failure = match result {
                Ok((true, _)) => None,
                Ok((false, err)) => Some(self.describe(&err).message),
                Err(e) => Some(self.classify(e).message),
            };
            if let Some(message) = failure {
                return Err(LoadError::Module {
                    module: module.name.clone(),
                    message,
                });
            }
        }
        Ok(())
    }

    fn reset_budget(&self) {
        self.state().reset();
    }

    /// Runs a registered callback; `Ok(None)` when it returned nothing. The
    /// callback runs as a coroutine: while it waits on a server call its
    /// thread may run other VMs' calls (see `pool.rs`).
    pub(super) async fn call(
        &self,
        key: &str,
        ctx: CallContext,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        // A raw lookup runs no Lua; unguarded, the key's string costs no
        // protected call (see [`unlimited`]).
        let f: LuaValue = unlimited(&self.lua, || self.callbacks.raw_get(key))
            .map_err(|e| RuntimeError::internal(e.to_string()))?;
        let LuaValue::Function(f) = f else {
            return Err(RuntimeError::not_found("function not found"));
        };
        let result = self
            .call_function(f.clone(), ctx, args)
            .await
            .map_err(|mut e| {
                // Clients see the message, as Nakama shows it; the log keeps where.
                let info = f.info();
                tracing::warn!(
                    module = info.short_src.as_deref().unwrap_or("?"),
                    line = info.line_defined,
                    function = key,
                    code = e.code.as_i32(),
                    error = %e.message,
                    "lua callback failed"
                );
                e.message = strip_position(&e.message).to_owned();
                e
            });
        // A call that ran out of memory leaves garbage behind; collect it now
        // so the next call starts with the VM's full allowance. The runner
        // goes too: until it is resumed, its stack holds the call's `ctx`
        // and arguments.
        if matches!(&result, Err(e) if e.code == Code::ResourceExhausted) {
            self.runner.borrow_mut().take();
            collect(&self.lua);
        }
        result
    }

    async fn call_function(
        &self,
        f: Function,
        mut ctx: CallContext,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        let lua = &self.lua;
        let internal = |e: mlua::Error| RuntimeError::internal(e.to_string());
        self.reset_budget();
        // The run loop makes the `ctx` from these, under the VM's limit.
        let fields = ctx::call_fields(lua, &mut ctx).map_err(internal)?;
        // The run loop's ten arguments before these go to its front: room
        // for them now saves the queue growing twice per call.
        let mut call_args = mlua::MultiValue::with_capacity(args.len() + 10);
        // The payload (or a hook's request) as Lua values: no Lua runs while
        // they are built, and their size is the request's, which the server
        // bounds before it gets here.
        unlimited(lua, || -> mlua::Result<()> {
            for arg in &args {
                call_args.push_back(convert::to_lua(lua, arg)?);
            }
            Ok(())
        })
        .map_err(internal)?;
        // A `ctx` and arguments that alone take the VM past its limit fail
        // the call, as they did when built under it (after a collection, so that an
        // earlier call's garbage does not count).
        within_limit(lua).map_err(|e| self.classify(e))?;
        let (pending, mode, user_id, username, exp, session_id, lang, ip, port) = fields;
        let args = (
            f, pending, mode, user_id, username, exp, session_id, lang, ip, port, call_args,
        );
        let result = self.run(args).await;
        if let Some(stop) = self.state().stopped.get() {
            // Over budget but caught (by a coroutine, say): still a failure.
            return Err(self.state().error(stop));
        }
        match result {
            Ok((true, LuaValue::Nil)) => Ok(None),
            Ok((true, value)) => match &value {
                LuaValue::String(s) => Ok(Some(Value::String(s.to_string_lossy()))),
                LuaValue::Function(_) | LuaValue::UserData(_) | LuaValue::Thread(_) => {
                    Err(RuntimeError::internal(format!(
                        "lua function returned a {}, which cannot be a payload: return a string (or a table from a hook)",
                        value.type_name()
                    )))
                }
                _ => convert::from_lua(lua, &value)
                    .map(Some)
                    .map_err(|e| RuntimeError::internal(format!("cannot convert result: {e}"))),
            },
            Ok((false, err)) => Err(self.describe(&err)),
            Err(e) => Err(self.classify(e)),
        }
    }

    /// Runs one call in the VM's runner coroutine, polled by the pool's
    /// thread: it answers when the call's `ok, result` is yielded. When the
    /// coroutine yields [`parked`] instead, the call waits on a server call
    /// ([`Parking`]): the thread polls other VMs' calls until it is done,
    /// then the coroutine is resumed with its outcome.
    ///
    /// This loop is the whole of the call's async machinery: mlua's async
    /// functions and threads would make a userdata with a finalizer, a
    /// protected call's two closures and a Lua polling loop per server call.
    async fn run(&self, args: impl mlua::IntoLuaMulti) -> mlua::Result<(bool, LuaValue)> {
        let runner = match self.runner.borrow_mut().take() {
            Some(runner) => runner,
            None => match &self.run_loop {
                Some(run_loop) => self.lua.create_thread(run_loop.clone())?,
                None => return Err(mlua::Error::runtime("a match vm serves no pool calls")),
            },
        };
        // Building the arguments runs no Lua, and unguarded their strings
        // cost no protected call each; they are already counted or bounded.
        let mut next = unlimited(&self.lua, || args.into_lua_multi(&self.lua))?;
        let result = loop {
            let out = match runner.resume::<MultiValue>(next) {
                Ok(out) => out,
                Err(e) => break Err(e),
            };
            match out.front() {
                Some(LuaValue::LightUserData(p)) if *p == parked() => {}
                // The run loop's `ok, result`: the call is over.
                Some(LuaValue::Boolean(_)) => {
                    break <(bool, LuaValue)>::from_lua_multi(out, &self.lua);
                }
                // Anything else stopped the coroutine inside the call (the
                // sandbox lets only userdata through a yield of the call
                // itself, and modules can make none): the runner cannot be
                // resumed as a fresh call, so it is dropped.
                _ => break Err(mlua::Error::runtime("a lua call yielded its own coroutine")),
            }
            let call = self
                .lua
                .app_data_ref::<Parking>()
                .and_then(|parking| parking.call.borrow_mut().take());
            let Some(call) = call else {
                break Err(mlua::Error::runtime(
                    "a call yielded with no server call parked",
                ));
            };
            next = match call.await {
                Ok(mut results) => {
                    results.push_front(LuaValue::Boolean(true));
                    results
                }
                Err(e) => {
                    if let Some(parking) = self.lua.app_data_ref::<Parking>() {
                        *parking.failure.borrow_mut() = Some(e);
                    }
                    MultiValue::from_vec(vec![LuaValue::Boolean(false)])
                }
            };
        };
        // A runner that raised outside the call's own `xpcall` is dead: the
        // next call makes a fresh one. Its call could not restore what it
        // found, so nothing runs now: no call's `ctx` or coroutine. Raw sets
        // of existing keys run no Lua and, unguarded, cannot fail on memory.
        if result.is_ok() {
            *self.runner.borrow_mut() = Some(runner);
        } else {
            let _ = unlimited(&self.lua, || {
                self.calling.raw_set(1, LuaValue::Nil)?;
                self.calling.raw_set(2, LuaValue::Nil)
            });
        }
        result
    }

    /// Turns an error value caught by the trampoline into a `RuntimeError`:
    /// `error({"msg", code})` keeps its code, anything else is internal.
    fn describe(&self, err: &LuaValue) -> RuntimeError {
        if let Some(stop) = self.state().stop_reason() {
            return self.state().error(stop);
        }
        match err {
            LuaValue::Table(t) => {
                let message: String = t
                    .raw_get::<LuaValue>(1)
                    .ok()
                    .and_then(|v| v.to_string().ok())
                    .unwrap_or_default();
                let code = match t.raw_get::<LuaValue>(2) {
                    Ok(LuaValue::Integer(c)) => Code::from_i32(c as i32),
                    Ok(LuaValue::Number(c)) => Code::from_i32(c as i32),
                    _ => Code::Internal,
                };
                RuntimeError::new(code, clean_message(&message))
            }
            LuaValue::String(s) => self.message_error(&s.to_string_lossy()),
            LuaValue::Error(e) => match e.as_ref() {
                mlua::Error::MemoryError(_) => RuntimeError::busy(self.memory_message()),
                inner => self.message_error(&error_text(inner)),
            },
            other => self.message_error(&other.to_string().unwrap_or_default()),
        }
    }

    fn classify(&self, e: mlua::Error) -> RuntimeError {
        if let Some(stop) = self.state().stop_reason() {
            return self.state().error(stop);
        }
        match e {
            mlua::Error::MemoryError(_) => RuntimeError::busy(self.memory_message()),
            other => self.message_error(&other.to_string()),
        }
    }

    fn message_error(&self, message: &str) -> RuntimeError {
        if message.contains("not enough memory") {
            return RuntimeError::busy(self.memory_message());
        }
        RuntimeError::internal(clean_message(message))
    }

    fn memory_message(&self) -> String {
        format!(
            "lua call ran out of memory (limit {} bytes per vm): make it allocate less or raise runtime.lua_memory_limit_bytes",
            self.shared.settings.memory_limit_bytes
        )
    }
}

/// Answers three functions. `invoke(fn, ...)` calls `fn(...)` under
/// `xpcall` and answers `ok, result_or_error`; error tables pass through
/// untouched so `error({"msg", code})` keeps its code. `call(fn, ctx, ...)`
/// does the same for a callback and its `ctx`, which the third,
/// `nk.get_context`, answers while the callback runs (`fallback()` when no
/// callback runs). `call` records the running `ctx` in `calling[2]` and the
/// coroutine the callback runs in in `calling[1]` (see [`AWAIT`]): a table
/// the VM keeps, so that when the runner coroutine dies by an error
/// outside the `xpcall` (before `call` could restore them), the VM clears
/// both ([`Vm::run`]) instead of keeping the dead call's `ctx` for good.
const INVOKE: &str = r#"
local fallback, calling = ...
local xpcall, running = xpcall, coroutine.running
local function keep(e) return e end
local function invoke(fn, ...)
  return xpcall(fn, keep, ...)
end
local function call(fn, ctx, ...)
  local outer, outer_co = calling[2], calling[1]
  calling[2] = ctx
  calling[1] = running()
  local ok, result = xpcall(fn, keep, ctx, ...)
  calling[2] = outer
  calling[1] = outer_co
  return ok, result
end
local function get_context()
  local current = calling[2]
  if current ~= nil then return current end
  return fallback()
end
return invoke, call, get_context
"#;

/// Answers `dual(wait, start)`, which makes one `nk` function of two
/// versions of a server call. `start` checks the arguments, parks the call
/// ([`park`]) and answers the marker the calling coroutine then yields to
/// [`Vm::run`], which resumes it with `true` and the results (or `false`,
/// and `raise` throws the error): the coroutine is suspended until the
/// server answers, while its VM thread runs other VMs' calls. `wait`
/// blocks the thread. Suspending runs only where it reaches the pool:
/// directly in the coroutine of a pool call (`calling[1]`, which `call`
/// sets), with no C function between it and the caller. A match callback,
/// a coroutine a module made, or a Lua function called back from Rust
/// (`table.sort`, `string.gsub`) waits instead. A module that yields the
/// call's own coroutine (`coroutine.yield()` outside any coroutine of its
/// own) gets Lua's error, as it did when calls ran on the main thread, and
/// as in Nakama; only the marker, a light userdata no module can make,
/// suspends it.
const AWAIT: &str = r#"
local raise = ...
local running, isyieldable = coroutine.running, coroutine.isyieldable
local raw_yield, type = coroutine.yield, type
local calling = {}
coroutine.yield = function(...)
  local co = calling[1]
  if co ~= nil and co == running() and type((...)) ~= "userdata" then
    error("attempt to yield from outside a coroutine", 2)
  end
  return raw_yield(...)
end
local function settle(ok, ...)
  if ok then return ... end
  return raise()
end
local function dual(wait, start)
  return function(...)
    local co = calling[1]
    if co ~= nil and co == running() and isyieldable() then
      return settle(raw_yield(start(...)))
    end
    return wait(...)
  end
end
return dual, calling, raw_yield
"#;

/// The loop of a VM's runner coroutine: makes the call's `ctx` from the
/// fields Rust pushed (`ctx::CallFields`: the keys are constants of this
/// chunk, the table is made whole at once and registered as lazily filled,
/// see `ctx.rs`), runs `call(fn, ctx, ...)`, yields its `ok, result`, and
/// is resumed with the next call's arguments (a tail call, so the stack
/// never grows). `setmetatable` is the base library's, which the sandbox's
/// wrapper would only pass through to for a fresh table.
const RUN_LOOP: &str = r#"
local call, yield, setmetatable, lazy_ctx, ctx_key, node, version = ...
local function start(fn, pending, execution_mode, user_id, username,
    user_session_exp, session_id, lang, client_ip, client_port, ...)
  local ctx = {
    execution_mode = execution_mode, node = node, version = version,
    user_id = user_id, username = username, user_session_exp = user_session_exp,
    session_id = session_id, lang = lang,
    client_ip = client_ip, client_port = client_port,
    [ctx_key] = pending,
  }
  setmetatable(ctx, lazy_ctx)
  return call(fn, ctx, ...)
end
local function run(...)
  return run(yield(start(...)))
end
return run
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::{HttpRequest, HttpResponse, RuntimeServices};
    use async_trait::async_trait;
    use ludus_core::ApiError;
    use ludus_core::accounts::Credential;
    use ludus_core::model::{Account, AccountUpdate, User};
    use std::collections::BTreeMap;
    use uuid::Uuid;

    struct NoServices;
    fn unused() -> ApiError {
        ApiError::new(Code::Unimplemented, "x")
    }
    #[async_trait]
    impl RuntimeServices for NoServices {
        async fn authenticate(
            &self,
            _: Credential,
            _: String,
            _: bool,
        ) -> Result<crate::Authenticated, ApiError> {
            Err(unused())
        }
        fn generate_token(
            &self,
            _: Uuid,
            _: &str,
            _: i64,
            _: BTreeMap<String, String>,
        ) -> Result<(String, i64), ApiError> {
            Err(unused())
        }
        async fn account(&self, _: Uuid) -> Result<Account, ApiError> {
            Err(unused())
        }
        async fn update_account(&self, _: Uuid, _: AccountUpdate) -> Result<(), ApiError> {
            Err(unused())
        }
        async fn users(&self, _: Vec<String>, _: Vec<String>) -> Result<Vec<User>, ApiError> {
            Err(unused())
        }
        async fn http_request(&self, _: HttpRequest) -> Result<HttpResponse, ApiError> {
            Err(unused())
        }
    }

    /// The one module `m` of a test VM.
    fn module(source: &[u8]) -> Arc<Vec<ModuleSource>> {
        Arc::new(vec![ModuleSource {
            name: "m".into(),
            display_path: "m.lua".into(),
            source: source.to_vec(),
        }])
    }

    fn shared(rt: &tokio::runtime::Runtime, modules: &Arc<Vec<ModuleSource>>) -> Arc<LuaShared> {
        Arc::new(LuaShared {
            settings: crate::RuntimeSettings::default(),
            services: Arc::new(NoServices),
            cache: Default::default(),
            handle: rt.handle().clone(),
            sources: modules.clone(),
            native_matches: Default::default(),
            scripts: Default::default(),
            run_once: Default::default(),
            events: crate::events::EventQueue::new(1).0,
        })
    }

    /// A runner coroutine killed by an error outside its call's `xpcall`
    /// (here a hook that raises at the first instruction after the callback
    /// returned, before the trampoline restores what it found) leaves no
    /// call running: `nk.get_context()` answers its fallback, not the dead
    /// call's `ctx`, and the next call runs in a fresh runner with its own.
    #[test]
    fn a_dead_runner_leaves_no_call_running() {
        use std::sync::atomic::Ordering;
        let rt = tokio::runtime::Runtime::new().unwrap();
        let modules = module(b"return {}");
        let interrupt = Arc::new(AtomicBool::new(false));
        let (vm, _) = Vm::new(shared(&rt, &modules), &modules, true, interrupt).unwrap();
        let lua = vm.lua();
        let kill = Arc::new(AtomicBool::new(false));
        let armed = kill.clone();
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(1),
            move |_, _| match armed.load(Ordering::Relaxed) {
                true => Err(mlua::Error::runtime("killed outside the call")),
                false => Ok(VmState::Continue),
            },
        )
        .unwrap();
        let arm = kill.clone();
        let callback = lua
            .create_function(move |_, ()| {
                arm.store(true, Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
        // The run loop's arguments (see `ctx::CallFields`): no tables
        // pending, and the marker as the caller's id.
        let args = |f: Function, marker: &str| {
            let text = |s: &str| LuaValue::String(lua.create_string(s).unwrap());
            mlua::MultiValue::from_iter([
                LuaValue::Function(f),
                LuaValue::Nil,
                text("rpc"),
                text(marker),
            ])
        };
        let marker = || -> Option<String> {
            lua.load(r#"return require("nakama").get_context().user_id"#)
                .eval()
                .unwrap()
        };
        let died = rt.block_on(vm.run(args(callback, "dead call")));
        assert!(died.is_err(), "the hook did not kill the runner: {died:?}");
        kill.store(false, Ordering::Relaxed);
        assert_eq!(marker(), None, "the dead call's ctx is still current");
        let running: LuaValue = vm.calling.raw_get(1).unwrap();
        assert!(
            running.is_nil(),
            "the dead call's coroutine is still current"
        );

        let reads: Function = lua
            .load(r#"return function() return require("nakama").get_context().user_id end"#)
            .eval()
            .unwrap();
        let (ok, seen) = rt.block_on(vm.run(args(reads, "next call"))).unwrap();
        assert!(ok);
        assert_eq!(
            seen.as_string().map(|s| s.to_string_lossy()),
            Some("next call".into())
        );
        assert_eq!(marker(), None);
    }

    /// A `ctx` a module keeps, unread, still makes its own tables (headers,
    /// query parameters) after thousands of later calls and the collections
    /// they run, and the tables of the `ctx`s nobody kept go with them: the
    /// VM's heap does not grow with the calls.
    #[test]
    fn kept_ctx_tables_outlive_collections_and_dropped_ones_go() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let modules = module(
            br#"
local nk = require("nakama")
local kept = {}
nk.register_rpc(function(ctx, payload)
  if payload == "keep" then kept[#kept + 1] = ctx end
  return ""
end, "call")
nk.register_rpc(function(ctx, payload)
  local names = {}
  for i, k in ipairs(kept) do
    local name = next(k.headers)
    names[i] = name .. "=" .. k.headers[name][1] .. "&" .. k.query_params.q[1]
  end
  return table.concat(names, ",")
end, "read")
"#,
        );
        let interrupt = Arc::new(AtomicBool::new(false));
        let (vm, _) = Vm::new(shared(&rt, &modules), &modules, true, interrupt).unwrap();
        let call = |key: &str, i: usize, payload: &str| {
            let mut ctx = CallContext::new(crate::ExecutionMode::Rpc);
            ctx.headers
                .insert(format!("X-Call-{i}"), vec![format!("h{i}")]);
            ctx.query_params.insert("q".into(), vec![format!("q{i}")]);
            rt.block_on(vm.call(key, ctx, vec![Value::String(payload.into())]))
                .unwrap()
        };
        let heap = || {
            vm.lua().gc_collect().unwrap();
            vm.lua().gc_collect().unwrap();
            vm.lua().used_memory()
        };
        for i in 0..2000 {
            let payload = if i % 500 == 7 { "keep" } else { "drop" };
            call("rpc/call", i, payload);
        }
        let before = heap();
        for i in 2000..6000 {
            call("rpc/call", i, "drop");
        }
        let after = heap();
        assert!(
            after < before + 4096,
            "4000 calls whose ctx nobody kept grew the heap from {before} to {after} bytes"
        );
        let read = call("rpc/read", 9999, "");
        assert_eq!(
            read,
            Some(Value::String(
                "X-Call-7=h7&q7,X-Call-507=h507&q507,X-Call-1007=h1007&q1007,X-Call-1507=h1507&q1507"
                    .into()
            ))
        );
    }

    /// A fresh match VM holds only the `nk` groups it used: reading one
    /// function of another group makes that group then, and the heap grows.
    #[test]
    fn a_match_vm_makes_nk_groups_on_first_use() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let modules = module(
            br#"
local nk = require("nakama")
local M = {}
function M.match_init(ctx, params) return {}, 10, nk.json_encode({idle = true}) end
return M
"#,
        );
        let (vm, _callbacks, _ctx) = Vm::for_match(shared(&rt, &modules), &modules, "m").unwrap();
        let lua = vm.lua();
        let _ = lua.gc_collect();
        let before = lua.used_memory();
        let kind: String = lua
            .load(r#"return type(require("nakama").storage_read)"#)
            .eval()
            .unwrap();
        assert_eq!(kind, "function");
        let _ = lua.gc_collect();
        let after = lua.used_memory();
        assert!(
            after > before + 512,
            "the storage group was made before its first use ({before} then {after} bytes)"
        );
        // A name no group has stays nil and makes nothing.
        let missing: bool = lua
            .load(r#"return require("nakama").no_such_function == nil"#)
            .eval()
            .unwrap();
        assert!(missing);
    }
}
