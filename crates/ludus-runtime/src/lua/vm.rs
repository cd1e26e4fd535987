//! One Lua VM: a sandboxed LuaJIT state with the `nk` module, the server's
//! modules loaded into it, an instruction budget and a memory limit. The pool
//! owns many; each loads every module, so module-level tables are private to
//! their VM and a write in one call can never race a read in another.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::Arc;

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value as LuaValue, VmState};
use serde_json::Value;

use super::convert;
use super::modules::ModuleSource;
use super::nk;
use super::shared::LuaShared;
use crate::context::CallContext;
use crate::error::{LoadError, RuntimeError};
use ludus_core::Code;

/// The instruction hook runs every this many VM instructions.
const HOOK_INTERVAL: u32 = 1000;

/// Where registered callbacks live in each VM's registry.
const CALLBACKS: &str = "ludus.callbacks";

/// What the modules registered while loading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registered {
    pub rpcs: BTreeSet<String>,
    pub before: BTreeSet<String>,
    pub after: BTreeSet<String>,
    pub matchmaker_matched: bool,
    pub shutdown: bool,
}

/// Per-VM bookkeeping kept in the Lua state's app data.
pub(crate) struct CallState {
    /// Instructions used by the current call (in hook intervals).
    pub used: Cell<u64>,
    pub exceeded: Cell<bool>,
    /// True only while modules load: registrations are refused afterwards.
    pub loading: Cell<bool>,
    /// True in the first VM while it loads: `run_once` runs only there.
    pub first: bool,
    pub registered: std::cell::RefCell<Registered>,
}

pub struct Vm {
    lua: Lua,
    callbacks: Table,
    invoke: Function,
    shared: Arc<LuaShared>,
}

impl Vm {
    /// Builds a VM and loads every module into it, in name order.
    pub fn new(
        shared: Arc<LuaShared>,
        modules: &Arc<Vec<ModuleSource>>,
        first: bool,
    ) -> Result<(Vm, Registered), LoadError> {
        let vm = Vm::build(shared, modules, first)?;
        vm.load_modules(modules)?;
        let registered = {
            let state = vm.state();
            state.loading.set(false);
            state.registered.borrow().clone()
        };
        vm.collect_setup_garbage();
        Ok((vm, registered))
    }

    /// A VM for one authoritative match: only the match module (and what it
    /// requires) is loaded; answers the table of callbacks it returned.
    pub fn for_match(
        shared: Arc<LuaShared>,
        modules: &Arc<Vec<ModuleSource>>,
        name: &str,
    ) -> Result<(Vm, Table), String> {
        if !modules.iter().any(|m| m.name == name) {
            return Err(format!("no lua module named {name:?} under runtime.path"));
        }
        let vm = Vm::build(shared, modules, false).map_err(|e| e.to_string())?;
        let require: Function = vm.lua.globals().get("require").map_err(|e| e.to_string())?;
        vm.reset_budget();
        let result: mlua::Result<(bool, LuaValue)> = vm.invoke.call((require, name));
        let loaded = match result {
            Ok((true, value)) => value,
            Ok((false, err)) => return Err(vm.describe(&err).message),
            Err(e) => return Err(vm.classify(e).message),
        };
        vm.state().loading.set(false);
        vm.collect_setup_garbage();
        match loaded {
            LuaValue::Table(t) => Ok((vm, t)),
            _ => Err(
                "match module must return a table containing the match callback functions".into(),
            ),
        }
    }

    /// Building a VM leaves compiler and set-up garbage behind (about a
    /// third of a fresh VM); a full collection returns it before the VM
    /// starts serving, which matters with one VM per match.
    fn collect_setup_garbage(&self) {
        let _ = self.lua.gc_collect();
        let _ = self.lua.gc_collect();
    }

    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Calls `f` with `args` under the instruction budget, protected but
    /// without the trampoline (error values become messages): the fast path
    /// of match callbacks, which pass and return a fixed number of values
    /// without allocating. Answers the first four values returned.
    pub fn call_direct<A: mlua::IntoLuaMulti>(
        &self,
        f: &Function,
        args: A,
    ) -> Result<(LuaValue, LuaValue, LuaValue, LuaValue), RuntimeError> {
        self.reset_budget();
        let result = f.call::<(LuaValue, LuaValue, LuaValue, LuaValue)>(args);
        if self.state().exceeded.get() {
            return Err(RuntimeError::busy(budget_message(
                self.shared.settings.instruction_budget,
            )));
        }
        result.map_err(|e| {
            let mut e = self.classify(e);
            if matches!(&e.code, Code::ResourceExhausted) {
                let _ = self.lua.gc_collect();
            }
            e.message = strip_position(&e.message).to_owned();
            e
        })
    }

    /// The sandboxed state with `nk`, before any module is loaded.
    fn build(
        shared: Arc<LuaShared>,
        modules: &Arc<Vec<ModuleSource>>,
        first: bool,
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
            exceeded: Cell::new(false),
            loading: Cell::new(true),
            first,
            registered: Default::default(),
        });
        let budget = shared.settings.instruction_budget;
        // A global hook: LuaJIT's hooks are per VM, and a per-thread mlua hook
        // would be dropped by the first coroutine that runs.
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(HOOK_INTERVAL),
            move |lua, _| {
                let Some(state) = lua.app_data_ref::<CallState>() else {
                    return Ok(VmState::Continue);
                };
                let used = state.used.get() + u64::from(HOOK_INTERVAL);
                state.used.set(used);
                if used > budget {
                    state.exceeded.set(true);
                    return Err(mlua::Error::runtime(budget_message(budget)));
                }
                Ok(VmState::Continue)
            },
        )
        .map_err(setup)?;
        let callbacks = lua.create_table().map_err(setup)?;
        lua.set_named_registry_value(CALLBACKS, &callbacks)
            .map_err(setup)?;
        sandbox(&lua, modules).map_err(setup)?;
        let nk_table = nk::install(&lua, &shared, &callbacks).map_err(setup)?;
        let package: Table = lua.globals().get("package").map_err(setup)?;
        let loaded: Table = package.get("loaded").map_err(setup)?;
        loaded.set("nakama", nk_table).map_err(setup)?;
        let invoke: Function = lua
            .load(INVOKE)
            .set_name("=ludus.invoke")
            .eval()
            .map_err(setup)?;
        if shared.settings.memory_limit_bytes > 0 {
            lua.set_memory_limit(shared.settings.memory_limit_bytes)
                .map_err(setup)?;
        }
        Ok(Vm {
            lua,
            callbacks,
            invoke,
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
        let state = self.state();
        state.used.set(0);
        state.exceeded.set(false);
    }

    /// Runs a registered callback; `Ok(None)` when it returned nothing.
    pub fn call(
        &self,
        key: &str,
        ctx: &CallContext,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        let f: LuaValue = self
            .callbacks
            .raw_get(key)
            .map_err(|e| RuntimeError::internal(e.to_string()))?;
        let LuaValue::Function(f) = f else {
            return Err(RuntimeError::not_found("function not found"));
        };
        let result = self.call_function(f.clone(), ctx, args).map_err(|mut e| {
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
        // so the next call starts with the VM's full allowance.
        if matches!(&result, Err(e) if e.code == Code::ResourceExhausted) {
            let _ = self.lua.gc_collect();
        }
        result
    }

    fn call_function(
        &self,
        f: Function,
        ctx: &CallContext,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        let lua = &self.lua;
        let internal = |e: mlua::Error| RuntimeError::internal(e.to_string());
        let ctx_table = nk::context_table(lua, &self.shared, ctx).map_err(internal)?;
        let mut call_args = mlua::MultiValue::new();
        call_args.push_back(LuaValue::Function(f));
        call_args.push_back(LuaValue::Table(ctx_table.clone()));
        for arg in &args {
            call_args.push_back(convert::to_lua(lua, arg).map_err(internal)?);
        }
        lua.set_named_registry_value(nk::CURRENT_CTX, ctx_table)
            .map_err(internal)?;
        self.reset_budget();
        let result: mlua::Result<(bool, LuaValue)> = self.invoke.call(call_args);
        let _ = lua.set_named_registry_value(nk::CURRENT_CTX, LuaValue::Nil);
        if self.state().exceeded.get() {
            // Over budget but caught (by a coroutine, say): still a failure.
            return Err(RuntimeError::busy(budget_message(
                self.shared.settings.instruction_budget,
            )));
        }
        match result {
            Ok((true, LuaValue::Nil)) => Ok(None),
            Ok((true, value)) => match &value {
                LuaValue::String(s) => Ok(Some(Value::String(s.to_string_lossy()))),
                _ => convert::from_lua(&value)
                    .map(Some)
                    .map_err(|e| RuntimeError::internal(format!("cannot convert result: {e}"))),
            },
            Ok((false, err)) => Err(self.describe(&err)),
            Err(e) => Err(self.classify(e)),
        }
    }

    /// Turns an error value caught by the trampoline into a `RuntimeError`:
    /// `error({"msg", code})` keeps its code, anything else is internal.
    fn describe(&self, err: &LuaValue) -> RuntimeError {
        if self.state().exceeded.get() {
            return RuntimeError::busy(budget_message(self.shared.settings.instruction_budget));
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
        if self.state().exceeded.get() {
            return RuntimeError::busy(budget_message(self.shared.settings.instruction_budget));
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

fn budget_message(budget: u64) -> String {
    format!(
        "lua call exceeded its budget of {budget} instructions: make it do less work or raise runtime.lua_instruction_budget"
    )
}

/// Drops mlua's wrapping and the traceback, keeping `file:line: message`.
fn clean_message(message: &str) -> String {
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
fn strip_position(message: &str) -> &str {
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

/// Calls `fn(...)` under `xpcall`; answers `ok, result_or_error`. Error
/// tables pass through untouched so `error({"msg", code})` keeps its code.
const INVOKE: &str = r#"
local xpcall = xpcall
local function keep(e) return e end
return function(fn, ...)
  return xpcall(fn, keep, ...)
end
"#;

/// Removes what modules must not reach (files, processes, the debug library,
/// bytecode) and points `require` at the module sources only.
fn sandbox(lua: &Lua, modules: &Arc<Vec<ModuleSource>>) -> mlua::Result<()> {
    // Sources stay on the Rust side, shared by every VM: a VM copies a
    // module's text only while it loads it.
    let modules = modules.clone();
    let sources = lua.create_function(move |lua, name: String| {
        match modules.iter().find(|m| m.name == name) {
            Some(m) => Ok((
                Some(lua.create_string(&m.source)?),
                Some(format!("@{}", m.display_path)),
            )),
            None => Ok((None, None)),
        }
    })?;
    let exhausted = lua.create_function(|lua, ()| {
        Ok(lua
            .app_data_ref::<CallState>()
            .is_some_and(|s| s.exceeded.get()))
    })?;
    let errtext = lua.create_function(|_, e: LuaValue| {
        Ok(match e {
            LuaValue::Error(e) => error_text(&e),
            other => other.to_string().unwrap_or_default(),
        })
    })?;
    let setup: Function = lua.load(SANDBOX).set_name("=ludus.sandbox").eval()?;
    setup.call::<()>((sources, exhausted, errtext))
}

const SANDBOX: &str = r#"
return function(sources, exhausted, errtext)
  local G = _G
  local raw_pcall, raw_xpcall, error, select = pcall, xpcall, error, select
  local loadstring, type = loadstring, type

  -- LuaJIT's compiled traces never call debug hooks, so a compiled loop
  -- would escape the instruction budget: modules run on the interpreter.
  if G.jit then G.jit.off() G.jit.flush() end

  -- Files, processes and the environment of the host are out of reach.
  G.io, G.debug, G.ffi, G.jit = nil, nil, nil, nil
  G.dofile, G.loadfile, G.module = nil, nil, nil
  local os = G.os
  for _, name in ipairs({"execute", "exit", "remove", "rename", "tmpname", "getenv", "setlocale"}) do
    os[name] = nil
  end
  G.string.dump = nil

  -- Text chunks only: precompiled bytecode can break out of any sandbox.
  local function text_only(chunk)
    if type(chunk) == "string" and chunk:byte(1) == 27 then
      return nil, "binary chunks are not allowed"
    end
    return chunk
  end
  G.loadstring = function(chunk, name)
    local ok, why = text_only(chunk)
    if not ok then return nil, why end
    return loadstring(chunk, name)
  end
  G.load = function(chunk, name)
    if type(chunk) == "function" then
      local parts = {}
      while true do
        local piece = chunk()
        if piece == nil or piece == "" then break end
        parts[#parts + 1] = piece
      end
      chunk = table.concat(parts)
    end
    return G.loadstring(chunk, name)
  end

  -- A call over its instruction budget stays stopped even if it is caught;
  -- errors raised by `nk` functions reach Lua code as plain strings.
  local function recheck(ok, ...)
    if exhausted() then error("instruction budget exceeded", 0) end
    if not ok and type((...)) == "userdata" then
      return false, errtext((...))
    end
    return ok, ...
  end
  G.pcall = function(...) return recheck(raw_pcall(...)) end
  G.xpcall = function(...) return recheck(raw_xpcall(...)) end
  local raw_resume = G.coroutine.resume
  G.coroutine.resume = function(...) return recheck(raw_resume(...)) end

  -- require finds the server's modules and nothing on disk.
  local package = G.package
  package.path, package.cpath, package.loadlib = "", "", nil
  local preload = package.preload
  package.loaders = {
    function(name)
      local p = preload[name]
      if p then return p end
      return "\n\tno preloaded module '" .. name .. "'"
    end,
    function(name)
      local source, chunk = sources(name)
      if not source then return "\n\tno server module '" .. name .. "'" end
      local f, err = loadstring(source, chunk)
      if not f then error(err, 0) end
      return f
    end,
  }
  for name in pairs(package.loaded) do
    if name == "jit" or name == "io" or name == "debug" or name == "ffi" or name:match("^jit%.") then
      package.loaded[name] = nil
    end
  end
end
"#;
