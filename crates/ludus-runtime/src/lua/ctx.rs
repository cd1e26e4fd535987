//! Lua's `ctx`: the table a callback gets as its first argument, with
//! Nakama's field names, built from a [`CallContext`].
//!
//! Every call gets a fresh table, as in Nakama, so a module that keeps the
//! `ctx` of one call (in its own tables) still reads that call's caller
//! later, never the next one's, and a field absent from a call (`user_id`,
//! `vars`, `session_id`…) is absent from its table.
//!
//! What makes it cheap is who builds it. With a memory limit set, every
//! string, table and field mlua creates is a protected call of its own that
//! allocates a C closure, and a context with six headers took about forty of
//! them: half of a Lua echo RPC's time. Here Rust makes one Lua string of
//! every per-call text (the blob) and passes where each piece starts and
//! ends; a Lua function of the VM, made once with the VM's constants (node,
//! version, the execution modes' names, `runtime.env`), cuts the pieces and
//! builds the tables with presized constructors. A call thus costs mlua one
//! string and one function call, whatever the context holds.

use std::collections::BTreeMap;

use mlua::{Function, Lua, Table, Variadic};

use super::shared::LuaShared;
use super::vm::unlimited;
use crate::context::{CallContext, ExecutionMode};

/// Registry slot of the VM's builder, for the paths that have only the
/// state (`nk.get_context` outside a callback, `run_once`, matches).
const BUILDER: &str = "ludus.ctx_builder";

/// Every mode, in the order of their Lua indexes (see [`mode_index`]).
const ALL_MODES: [ExecutionMode; 11] = [
    ExecutionMode::Rpc,
    ExecutionMode::Before,
    ExecutionMode::After,
    ExecutionMode::RunOnce,
    ExecutionMode::Matchmaker,
    ExecutionMode::Shutdown,
    ExecutionMode::Match,
    ExecutionMode::StorageIndexFilter,
    ExecutionMode::LeaderboardReset,
    ExecutionMode::TournamentEnd,
    ExecutionMode::TournamentReset,
];

/// Where `mode`'s name is in the builder's list (1-based); a new mode
/// fails to compile here until it is listed.
fn mode_index(mode: ExecutionMode) -> i64 {
    match mode {
        ExecutionMode::Rpc => 1,
        ExecutionMode::Before => 2,
        ExecutionMode::After => 3,
        ExecutionMode::RunOnce => 4,
        ExecutionMode::Matchmaker => 5,
        ExecutionMode::Shutdown => 6,
        ExecutionMode::Match => 7,
        ExecutionMode::StorageIndexFilter => 8,
        ExecutionMode::LeaderboardReset => 9,
        ExecutionMode::TournamentEnd => 10,
        ExecutionMode::TournamentReset => 11,
    }
}

/// Builds the `ctx` tables of one VM.
#[derive(Clone)]
pub(super) struct ContextBuilder {
    build: Function,
}

impl ContextBuilder {
    /// Makes a builder for this VM; `node` and `env` are `name` and
    /// `runtime.env` of the settings.
    pub(super) fn new(lua: &Lua, node: &str, env: &BTreeMap<String, String>) -> mlua::Result<Self> {
        let env = lua.create_table_from(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        let modes = lua.create_sequence_from(ALL_MODES.iter().map(|m| m.as_str()))?;
        let build: Function = lua.load(BUILD).set_name("=ludus.ctx").call((
            node,
            env!("CARGO_PKG_VERSION"),
            env,
            modes,
        ))?;
        Ok(ContextBuilder { build })
    }

    /// [`new`](Self::new), kept in the VM's registry for [`context_table`]:
    /// for the pool's VMs, which build a `ctx` per call. A match VM keeps
    /// none (about 4 KB of its heap): it builds one `ctx` for its life.
    pub(super) fn install(
        lua: &Lua,
        node: &str,
        env: &BTreeMap<String, String>,
    ) -> mlua::Result<Self> {
        let builder = ContextBuilder::new(lua, node, env)?;
        lua.set_named_registry_value(BUILDER, &builder.build)?;
        Ok(builder)
    }

    /// A fresh `ctx` table for one call.
    pub(super) fn build(&self, lua: &Lua, ctx: &CallContext) -> mlua::Result<Table> {
        let mut pieces = Pieces {
            blob: String::with_capacity(256),
            marks: Vec::with_capacity(64),
        };
        let (user_id, session_id) = match &ctx.user_id {
            Some(user_id) => (user_id.as_str(), ctx.session_id.as_deref()),
            None => ("", None),
        };
        pieces.text(user_id);
        pieces.text(&ctx.username);
        pieces.text(session_id.unwrap_or(""));
        pieces.text(&ctx.lang);
        pieces.text(&ctx.client_ip);
        pieces.text(&ctx.client_port);
        pieces.count(ctx.vars.len());
        for (k, v) in &ctx.vars {
            pieces.text(k);
            pieces.text(v);
        }
        pieces.multimap(&ctx.headers);
        pieces.multimap(&ctx.query_params);
        // The blob as a Lua string made without mlua's guard (no Lua runs
        // meanwhile; its size is the request's); the builder itself then
        // runs under the VM's limit.
        let blob = unlimited(lua, || lua.create_string(&pieces.blob))?;
        self.build.call((
            blob,
            mode_index(ctx.mode),
            ctx.user_id.is_some(),
            session_id.is_some(),
            ctx.session_expiry,
            Variadic::from_iter(pieces.marks),
        ))
    }
}

/// A fresh `ctx` table, through the builder kept in the VM's registry, or
/// a builder made for this one table where the VM keeps none.
pub(super) fn context_table(
    lua: &Lua,
    shared: &LuaShared,
    ctx: &CallContext,
) -> mlua::Result<Table> {
    let builder = match lua.named_registry_value::<Option<Function>>(BUILDER)? {
        Some(build) => ContextBuilder { build },
        None => ContextBuilder::new(lua, &shared.settings.node, &shared.settings.env)?,
    };
    builder.build(lua, ctx)
}

/// The per-call texts of a context, laid end to end, and the marks that
/// find them again: each text is two marks, where it starts and where it
/// ends (1-based, inclusive, as `string.sub` takes them); a count is one.
struct Pieces {
    blob: String,
    marks: Vec<i64>,
}

impl Pieces {
    fn text(&mut self, s: &str) {
        self.marks.push(self.blob.len() as i64 + 1);
        self.blob.push_str(s);
        self.marks.push(self.blob.len() as i64);
    }

    fn count(&mut self, n: usize) {
        self.marks.push(n as i64);
    }

    /// Nakama's `{name = {value, …}, …}`: the number of names, then each
    /// name, its number of values and the values.
    fn multimap(&mut self, map: &BTreeMap<String, Vec<String>>) {
        self.count(map.len());
        for (k, values) in map {
            self.text(k);
            self.count(values.len());
            for v in values {
                self.text(v);
            }
        }
    }
}

/// Made once per VM with its constants; answers the function that builds a
/// `ctx` from the blob and its marks (see `Pieces`). Every table is fresh;
/// `env` is copied from the VM's own table, which no module can reach.
const BUILD: &str = r#"
local node, version, env, modes = ...
local sub, next = string.sub, next
local function copy_env()
  local t = {}
  for k, v in next, env do t[k] = v end
  return t
end
-- Reads a multimap starting at mark i; answers it and the next mark.
local function multimap(blob, m, i)
  local t = {}
  for _ = 1, m[i] do
    local key = sub(blob, m[i + 1], m[i + 2])
    local count = m[i + 3]
    i = i + 3
    local values = {}
    for v = 1, count do
      values[v] = sub(blob, m[i + 1], m[i + 2])
      i = i + 2
    end
    t[key] = values
  end
  return t, i + 1
end
return function(blob, mode, has_user, has_session, exp, ...)
  local m = {...}
  local user_id, username, vars, user_session_exp, session_id, lang
  if has_user then
    user_id = sub(blob, m[1], m[2])
    username = sub(blob, m[3], m[4])
    user_session_exp = exp
    if has_session then
      session_id = sub(blob, m[5], m[6])
      lang = sub(blob, m[7], m[8])
    end
  end
  local client_ip, client_port
  if m[10] >= m[9] then client_ip = sub(blob, m[9], m[10]) end
  if m[12] >= m[11] then client_port = sub(blob, m[11], m[12]) end
  local i = 13
  local n = m[i]
  i = i + 1
  if has_user then
    vars = {}
    for _ = 1, n do
      vars[sub(blob, m[i], m[i + 1])] = sub(blob, m[i + 2], m[i + 3])
      i = i + 4
    end
  else
    i = i + 4 * n
  end
  local headers, query_params
  headers, i = multimap(blob, m, i)
  query_params = multimap(blob, m, i)
  return {
    env = copy_env(),
    execution_mode = modes[mode],
    node = node,
    version = version,
    headers = headers,
    query_params = query_params,
    user_id = user_id,
    username = username,
    vars = vars,
    user_session_exp = user_session_exp,
    session_id = session_id,
    lang = lang,
    client_ip = client_ip,
    client_port = client_port,
  }
end
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::Value as LuaValue;

    fn builder(lua: &Lua) -> ContextBuilder {
        let env = BTreeMap::from([("region".to_owned(), "eu".to_owned())]);
        ContextBuilder::install(lua, "node-1", &env).unwrap()
    }

    #[test]
    fn every_mode_has_its_name() {
        let lua = Lua::new();
        let b = builder(&lua);
        for (i, mode) in ALL_MODES.into_iter().enumerate() {
            assert_eq!(mode_index(mode), i as i64 + 1);
            let t = b.build(&lua, &CallContext::new(mode)).unwrap();
            assert_eq!(t.get::<String>("execution_mode").unwrap(), mode.as_str());
        }
    }

    #[test]
    fn every_field_comes_through_and_absent_ones_stay_nil() {
        let lua = Lua::new();
        let b = builder(&lua);
        let mut ctx = CallContext::new(ExecutionMode::Before);
        ctx.user_id = Some("u-1".into());
        ctx.username = "ålice".into();
        ctx.vars = BTreeMap::from([("k".into(), "v".into()), ("empty".into(), String::new())]);
        ctx.session_expiry = 1_900_000_123;
        ctx.session_id = Some("s-1".into());
        ctx.lang = "fr".into();
        ctx.headers = BTreeMap::from([
            ("Accept".into(), vec!["a".into(), String::new(), "c".into()]),
            ("X-None".into(), vec![]),
        ]);
        ctx.query_params = BTreeMap::from([("q".into(), vec!["1".into()])]);
        ctx.client_ip = "10.0.0.1".into();
        ctx.client_port = "4242".into();
        let t = b.build(&lua, &ctx).unwrap();
        lua.globals().set("ctx", t).unwrap();
        let check = |expr: &str| -> bool { lua.load(expr).eval().unwrap() };
        assert!(check("ctx.env.region == 'eu' and ctx.node == 'node-1'"));
        assert!(check("ctx.user_id == 'u-1' and ctx.username == 'ålice'"));
        assert!(check("ctx.vars.k == 'v' and ctx.vars.empty == ''"));
        assert!(check("ctx.user_session_exp == 1900000123"));
        assert!(check("ctx.session_id == 's-1' and ctx.lang == 'fr'"));
        assert!(check(
            "#ctx.headers.Accept == 3 and ctx.headers.Accept[1] == 'a' \
             and ctx.headers.Accept[2] == '' and ctx.headers.Accept[3] == 'c'"
        ));
        assert!(check("next(ctx.headers['X-None']) == nil"));
        assert!(check(
            "#ctx.query_params.q == 1 and ctx.query_params.q[1] == '1'"
        ));
        assert!(check(
            "ctx.client_ip == '10.0.0.1' and ctx.client_port == '4242'"
        ));

        // A session without a user (never sent by the transports) and an
        // empty address leave every caller field out, as before.
        let mut anonymous = CallContext::new(ExecutionMode::Rpc);
        anonymous.session_id = Some("s-2".into());
        anonymous.username = "ghost".into();
        anonymous.vars.insert("k".into(), "v".into());
        let t = b.build(&lua, &anonymous).unwrap();
        lua.globals().set("ctx", t).unwrap();
        for field in [
            "user_id",
            "username",
            "vars",
            "user_session_exp",
            "session_id",
            "lang",
            "client_ip",
            "client_port",
        ] {
            let v: LuaValue = lua.load(format!("ctx.{field}")).eval().unwrap();
            assert!(v.is_nil(), "{field} is {v:?}");
        }
        assert!(check(
            "next(ctx.headers) == nil and next(ctx.query_params) == nil"
        ));

        // A user without a session has no session fields.
        let mut http = CallContext::new(ExecutionMode::Rpc);
        http.user_id = Some("u-2".into());
        let t = b.build(&lua, &http).unwrap();
        lua.globals().set("ctx", t).unwrap();
        assert!(check(
            "ctx.user_id == 'u-2' and ctx.session_id == nil and ctx.lang == nil"
        ));
        assert!(check("next(ctx.vars) == nil"));
    }

    #[test]
    fn each_call_gets_its_own_tables() {
        let lua = Lua::new();
        let b = builder(&lua);
        let first = b
            .build(&lua, &CallContext::new(ExecutionMode::Rpc))
            .unwrap();
        first
            .get::<Table>("env")
            .unwrap()
            .set("region", "changed")
            .unwrap();
        let second = b
            .build(&lua, &CallContext::new(ExecutionMode::Rpc))
            .unwrap();
        assert!(!first.equals(&second).unwrap());
        let env: Table = second.get("env").unwrap();
        assert_eq!(env.get::<String>("region").unwrap(), "eu");
    }

    #[test]
    fn a_context_past_the_memory_limit_fails_with_a_memory_error() {
        let lua = Lua::new();
        let b = builder(&lua);
        lua.set_memory_limit(lua.used_memory() + (256 << 10))
            .unwrap();
        let mut ctx = CallContext::new(ExecutionMode::Rpc);
        ctx.headers.insert("Big".into(), vec!["x".repeat(1 << 20)]);
        let err = b.build(&lua, &ctx).unwrap_err();
        assert!(
            matches!(err, mlua::Error::MemoryError(_)) || err.to_string().contains("memory"),
            "{err}"
        );
        // The state stays usable, and a small context still builds.
        b.build(&lua, &CallContext::new(ExecutionMode::Rpc))
            .unwrap();
    }
}
