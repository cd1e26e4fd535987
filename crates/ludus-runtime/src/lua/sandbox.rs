//! The sandbox every VM runs in: what modules can reach and what they can
//! change.
//!
//! [`install`] runs on a fresh state, before the `nk` module and before any
//! module loads. It removes what reaches the host (files, processes, the
//! environment, the debug library, FFI, bytecode, every `jit.*` module and
//! anything else LuaJIT preloads), points `require` at the server's modules
//! only, puts the budget-aware pattern matcher in place of LuaJIT's, and
//! wraps the few functions that could escape the budgets or change shared
//! state (`pcall`, `xpcall`, `coroutine.resume`, `setfenv`,
//! `collectgarbage`, `rawset`, `table.insert`), and those that must see a
//! lazily filled table whole (`pairs`, `next`, `table.foreach`, `rawget`,
//! `rawset`, `setmetatable`).
//!
//! [`freeze`] runs once the modules have loaded (`runtime.read_only_globals`,
//! on by default as in Nakama): `_G`, the standard library tables, `nakama`,
//! `package` and its tables become read-only views, so one call can never
//! change what a later call on the same VM sees. A frozen table keeps its
//! identity (every upvalue and function environment still points at it) but
//! its entries move to a hidden table behind `__index`; writes reach
//! `__newindex` and fail. `pairs`, `next`, `table.foreach` and `rawget`
//! see through frozen tables; `rawset` and `table.insert` refuse them.
//! Modules' own tables stay writable.
//!
//! [`make_lazy`] registers a table its metatable fills on demand (`nk`,
//! whose functions are made on first use; a call's `ctx` instead holds its
//! tables packed under [`ctx_key`]): `pairs`, `next`, `table.foreach`,
//! `rawget`, `rawset` and `setmetatable` complete it first, and a freeze
//! moves the filling to its hidden contents.

use std::sync::Arc;

use mlua::{Function, LightUserData, Lua, Table, Value as LuaValue};

use super::call_state::{CallState, error_text};
use super::ctx;
use super::lazy::{COMPLETE, LAZY};
use super::modules::ModuleSource;
use super::pattern;
use super::shared::LuaShared;

/// Registry slot of the function that freezes the globals after loading.
const FREEZE: &str = "ludus.freeze";

/// What `package.loaded` keeps after set-up (besides `nakama`, added later).
const LOADED: &str = "_G string table math os package bit coroutine";

/// Sandboxes a fresh state (see the module documentation).
pub(crate) fn install(
    lua: &Lua,
    shared: &Arc<LuaShared>,
    modules: &Arc<Vec<ModuleSource>>,
) -> mlua::Result<Lazy> {
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
    let stopped = lua.create_function(|lua, ()| {
        Ok(lua
            .app_data_ref::<CallState>()
            .is_some_and(|s| s.stopped.get().is_some()))
    })?;
    let errtext = lua.create_function(|_, e: LuaValue| {
        Ok(match e {
            LuaValue::Error(e) => error_text(&e),
            other => other.to_string().unwrap_or_default(),
        })
    })?;
    let is_c_function = lua.create_function(|_, f: LuaValue| {
        Ok(matches!(&f, LuaValue::Function(f) if f.info().what == "C"))
    })?;
    let shared = shared.clone();
    let fill_ctx = lua.create_function(move |lua, (t, packed): (Table, mlua::LuaString)| {
        ctx::fill_pending(lua, &shared, &t, &packed)
    })?;
    pattern::install(lua)?;
    let setup: Function = lua.load(SANDBOX).set_name("=ludus.sandbox").eval()?;
    let (freeze, lazy, lazy_ctx, complete): (Function, Table, Table, Function) = setup.call((
        sources,
        stopped,
        errtext,
        is_c_function,
        LOADED,
        fill_ctx,
        ctx_key(),
    ))?;
    lua.set_named_registry_value(LAZY, &lazy)?;
    lua.set_named_registry_value(COMPLETE, complete)?;
    lua.set_named_registry_value(FREEZE, freeze)?;
    Ok(Lazy {
        ctx_metatable: lazy_ctx,
    })
}

/// The key under which a call's `ctx` holds its tables, packed, until
/// its first read: the address of a static, as a light userdata no module
/// can make.
pub(crate) fn ctx_key() -> LightUserData {
    static CTX_TABLES: u8 = 0;
    LightUserData(std::ptr::addr_of!(CTX_TABLES).cast_mut().cast())
}

/// What registers a table filled on demand from Rust, without a Lua call.
pub(crate) struct Lazy {
    /// The metatable of a call's `ctx` until its first read (see the
    /// sandbox's script): the key a packed `ctx` holds its tables under is
    /// [`ctx_key`].
    pub ctx_metatable: Table,
}

/// Makes globals, the standard library, `nakama` and `package` read-only
/// (see the module documentation). Runs once, after the modules loaded.
pub(crate) fn freeze(lua: &Lua) -> mlua::Result<()> {
    let freeze: LuaValue = lua.named_registry_value(FREEZE)?;
    lua.set_named_registry_value(FREEZE, LuaValue::Nil)?;
    match freeze {
        LuaValue::Function(f) => f.call(()),
        _ => Ok(()),
    }
}

const SANDBOX: &str = r#"
return function(sources, stopped, errtext, is_c_function, keep_loaded, fill_ctx, ctx_key)
  local G = _G
  local raw_pcall, raw_xpcall, error, select = pcall, xpcall, error, select
  local loadstring, type, tostring, next = loadstring, type, tostring, next
  local setmetatable, getmetatable = setmetatable, getmetatable

  -- LuaJIT's compiled traces never call debug hooks, so a compiled loop
  -- would escape the instruction budget: modules run on the interpreter.
  if G.jit then G.jit.off() G.jit.flush() end

  -- Files, processes and the environment of the host are out of reach.
  G.io, G.debug, G.ffi, G.jit = nil, nil, nil, nil
  G.dofile, G.loadfile, G.module = nil, nil, nil
  -- newproxy's userdata take a __gc finalizer, which would run in whatever
  -- later call happens to collect them.
  G.newproxy = nil
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

  -- A call over a budget stays stopped even if it is caught; errors raised
  -- by `nk` functions reach Lua code as plain strings.
  local function recheck(ok, ...)
    if stopped() then error("lua call stopped: over its budget", 0) end
    if not ok and type((...)) == "userdata" then
      return false, errtext((...))
    end
    return ok, ...
  end
  G.pcall = function(...) return recheck(raw_pcall(...)) end
  G.xpcall = function(...) return recheck(raw_xpcall(...)) end
  local raw_resume = G.coroutine.resume
  G.coroutine.resume = function(...) return recheck(raw_resume(...)) end

  -- The thread's environment and the environments of built-in functions
  -- (`require` reads its loaders from its own) are shared by every call.
  local raw_setfenv = G.setfenv
  G.setfenv = function(f, t)
    if f == 0 or (type(f) == "function" and is_c_function(f)) then
      error("setfenv: the environment of the thread or of a built-in function cannot be changed", 2)
    end
    if type(f) == "number" and f > 0 then f = f + 1 end
    local r = raw_setfenv(f, t)
    return r
  end

  -- Stopping or retuning the collector would outlive the call.
  local raw_collect = G.collectgarbage
  G.collectgarbage = function(opt, arg)
    if opt == nil or opt == "collect" or opt == "count" or opt == "step" then
      return raw_collect(opt, arg)
    end
    error("collectgarbage: option '" .. tostring(opt) .. "' is not allowed (only collect, count and step)", 2)
  end

  -- require finds the server's modules and nothing on disk; nothing LuaJIT
  -- preloads (jit.*, string.buffer, table.new…) stays reachable.
  local package = G.package
  -- (package.searchpath opens files: it would tell which exist.)
  package.path, package.cpath, package.loadlib, package.seeall = "", "", nil, nil
  package.searchpath = nil
  local preload = package.preload
  for name in next, preload do preload[name] = nil end
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
  local keep = {}
  for name in keep_loaded:gmatch("%S+") do keep[name] = true end
  local loaded = package.loaded
  for name in next, loaded do
    if not keep[name] then loaded[name] = nil end
  end

  -- Read-only tables, filled by the freeze below: frozen[view] = contents.
  local frozen = setmetatable({}, {__mode = "k"})
  local function refuse(what)
    error(what .. ": globals and the standard library are read-only while calls run; " ..
      "set module state up while the module loads, in the module's own tables", 3)
  end
  -- Tables filled on demand: lazy[t] makes every entry of t (`nk`). A
  -- call's `ctx` holds its tables packed in a string (ctx.rs, `pack`)
  -- under `ctx_key`, a light userdata no module can make or reach (`next`,
  -- `pairs`, `table.foreach` and `rawget` complete the table before they
  -- look): no entry in `lazy` per call.
  local lazy = setmetatable({}, {__mode = "k"})
  local ctx_rawget, ctx_rawset = rawget, rawset
  local function complete(t)
    if type(t) ~= "table" then return end
    local packed = ctx_rawget(t, ctx_key)
    if packed ~= nil then
      ctx_rawset(t, ctx_key, nil)
      fill_ctx(t, packed)
      return
    end
    local make = lazy[t]
    if make then
      lazy[t] = nil
      make(t)
    end
  end
  local raw_rawset, raw_rawget, raw_insert, raw_pairs = rawset, rawget, table.insert, pairs
  G.rawset = function(t, k, v)
    if frozen[t] then refuse("rawset") end
    complete(t)
    return raw_rawset(t, k, v)
  end
  -- A lazy table's metatable fills it: it is completed before it changes.
  G.setmetatable = function(t, mt)
    complete(t)
    return setmetatable(t, mt)
  end
  -- A call's `ctx` until its tables are made (ctx.rs): reading a field it
  -- lacks, or adding one, makes them first; making them drops this
  -- metatable. Rust code converting a table to JSON completes it through
  -- `complete`, which the registry keeps (`lazy::complete`).
  local lazy_ctx = {
    __index = function(t, k)
      complete(t)
      return raw_rawget(t, k)
    end,
    __newindex = function(t, k, v)
      complete(t)
      raw_rawset(t, k, v)
    end,
  }
  G.rawget = function(t, k)
    local contents = frozen[t]
    if contents then
      complete(contents)
      return raw_rawget(contents, k)
    end
    complete(t)
    return raw_rawget(t, k)
  end
  G.table.insert = function(t, ...)
    if frozen[t] then refuse("table.insert") end
    return raw_insert(t, ...)
  end
  -- LuaJIT's table.foreach walks with the library's own `next`, not the
  -- one above: it too sees a lazy table whole, and a frozen one's contents.
  local raw_foreach = G.table.foreach
  if raw_foreach then
    G.table.foreach = function(t, f)
      local contents = frozen[t]
      if contents then t = contents end
      complete(t)
      return raw_foreach(t, f)
    end
  end
  local function see_through_next(t, k)
    local contents = frozen[t]
    if contents then
      if k == nil then complete(contents) end
      return next(contents, k)
    end
    if k == nil then complete(t) end
    return next(t, k)
  end
  G.next = see_through_next
  G.pairs = function(t)
    if frozen[t] then return see_through_next, t, nil end
    complete(t)
    return raw_pairs(t)
  end

  return function()
    local function freeze(t, name)
      if frozen[t] then return frozen[t] end
      local contents = {}
      for k, v in next, t do contents[k] = v end
      for k in next, contents do raw_rawset(t, k, nil) end
      frozen[t] = contents
      -- A lazy table goes on filling its contents, out of reach.
      if lazy[t] then
        setmetatable(contents, getmetatable(t))
        lazy[contents], lazy[t] = lazy[t], nil
      end
      setmetatable(t, {
        __index = contents,
        __newindex = function(_, k) refuse("cannot set " .. name .. "." .. tostring(k)) end,
        __metatable = false,
      })
      return contents
    end
    local loaded_view = setmetatable({}, {
      __index = loaded,
      __newindex = function(_, k) refuse("cannot set package.loaded." .. tostring(k)) end,
      __metatable = false,
    })
    frozen[loaded_view] = loaded
    package.loaded = loaded_view
    freeze(package.preload, "package.preload")
    freeze(package.loaders, "package.loaders")
    freeze(package, "package")
    if loaded.nakama then freeze(loaded.nakama, "nakama") end
    for _, name in ipairs({"string", "table", "math", "os", "bit", "coroutine"}) do
      if G[name] then freeze(G[name], name) end
    end
    -- Strings index their methods straight from the frozen contents; the
    -- metatable itself is hidden behind a read-only face.
    local string_mt = getmetatable("")
    local face = {__index = G.string}
    freeze(face, "string metatable")
    string_mt.__index = frozen[G.string]
    string_mt.__metatable = face
    freeze(G, "_G")
  end, lazy, lazy_ctx, complete
end
"#;
