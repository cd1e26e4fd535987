//! Lua's `ctx`: the table a callback gets as its first argument, with
//! Nakama's field names, built from a [`CallContext`].
//!
//! Every call gets a fresh table, as in Nakama, so a module that keeps the
//! `ctx` of one call (in its own tables) still reads that call's caller
//! later, never the next one's, and a field absent from a call (`user_id`,
//! `vars`, `session_id`…) is absent from its table.
//!
//! Its tables, and the whole `ctx` of a match or of `nk.run_once`
//! ([`context_table`]), Rust builds directly, with the VM's memory limit
//! lifted (see [`unlimited`]): with a limit set, mlua guards each string,
//! table and field it makes with a protected call of its own, and a
//! context with six headers needs about forty. No Lua code runs there, so
//! neither does the instruction hook. An earlier design built the tables
//! with a Lua function from one string of every text and the marks that
//! cut it; it took more than half of a Lua echo RPC's time on its VM
//! thread (BENCHMARKS.md).
//!
//! A pool call's `ctx` is made by its VM's run loop (vm.rs, `RUN_LOOP`)
//! from the [`CallFields`] Rust pushes onto the runner coroutine: one
//! table constructor whose keys are constants of the loop's chunk, so no
//! key goes through LuaJIT's string table per call (BENCHMARKS.md, "A
//! call's `ctx` made by its run loop"). It is made under the VM's limit,
//! as module code's tables are. It gets its text and number fields at once
//! and its four tables (`env`, `headers`, `query_params`, `vars`) when the
//! call first needs them: most calls never read them, and making them was
//! about a tenth of a Lua echo RPC's cost. Until then the table carries the
//! sandbox's lazy `ctx` metatable and a [`Pending`] in the sandbox's
//! registry of lazy tables, so it behaves as the whole table: reading or
//! adding a field it lacks, `pairs`, `next`, `rawget`, `rawset`,
//! `setmetatable` and the conversion to JSON make the tables first, and
//! making them drops the metatable. They count towards the VM's memory
//! limit once made: a call whose `ctx` tables alone take the VM past it
//! fails when it reads them.

use std::collections::BTreeMap;
use std::sync::Arc;

use mlua::{AnyUserData, Either, Lua, Table, UserData, UserDataMethods};

use super::shared::LuaShared;
use super::vm::{check_memory, collect, unlimited};
use crate::context::{CallContext, Headers};

/// A fresh `ctx` table, made whole, with the node's name and `runtime.env`
/// from the VM's settings: the contexts made once (a match's, `run_once`'s).
pub(super) fn context_table(
    lua: &Lua,
    shared: &LuaShared,
    ctx: &CallContext,
) -> mlua::Result<Table> {
    unlimited(lua, || {
        whole(lua, &shared.settings.node, &shared.settings.env, ctx)
    })
}

fn whole(
    lua: &Lua,
    node: &str,
    env: &BTreeMap<String, String>,
    ctx: &CallContext,
) -> mlua::Result<Table> {
    let mut fields = scalars(node, ctx);
    let vars = ctx.user_id.is_some().then_some(&ctx.vars);
    let made = tables(lua, env, vars, &ctx.headers.grouped(), &ctx.query_params)?;
    fields.extend(
        made.into_iter()
            .map(|(k, t)| (k, Field::Right(Either::Left(t)))),
    );
    lua.create_table_from(fields)
}

/// What a pool call's `ctx` is made of, as the VM's run loop takes it
/// (vm.rs, `RUN_LOOP`): the [`Pending`] tables, then `execution_mode`,
/// `user_id`, `username`, `user_session_exp`, `session_id`, `lang`,
/// `client_ip` and `client_port`, `None` for a field the call lacks (`node`
/// and `version` are the VM's, given to the run loop once). The
/// run loop makes the table with one constructor whose keys are constants
/// of its chunk, so no key is looked up in LuaJIT's string table per call
/// and the table is made at its full size at once (BENCHMARKS.md, "A
/// call's `ctx` made by its run loop").
pub(super) type CallFields<'a> = (
    AnyUserData,
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    Option<i64>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

/// A pool call's [`CallFields`]: the same fields, present and absent, as
/// [`context_table`] makes whole. The tables wait in a [`Pending`], made
/// with the VM's limit lifted (no Lua runs; their size is the request's,
/// which the server bounds).
pub(super) fn call_fields<'a>(
    lua: &Lua,
    shared: &Arc<LuaShared>,
    ctx: &'a mut CallContext,
) -> mlua::Result<CallFields<'a>> {
    let pending = Pending {
        shared: shared.clone(),
        vars: ctx.user_id.is_some().then(|| std::mem::take(&mut ctx.vars)),
        headers: std::mem::take(&mut ctx.headers),
        query_params: std::mem::take(&mut ctx.query_params),
    };
    let pending = unlimited(lua, || lua.create_userdata(pending))?;
    let s = Scalars::of(ctx);
    Ok((
        pending,
        s.execution_mode,
        s.user_id,
        s.username,
        s.user_session_exp,
        s.session_id,
        s.lang,
        s.client_ip,
        s.client_port,
    ))
}

/// The text and number fields of a `ctx` but `node` and `version`, `None`
/// for one the call lacks: the caller's only with a user, the session's
/// only with a session too (a socket's), as Nakama's contexts have them;
/// the address only when known. The one place these rules live, for the
/// contexts made whole and those the run loop makes.
struct Scalars<'a> {
    execution_mode: &'a str,
    user_id: Option<&'a str>,
    username: Option<&'a str>,
    user_session_exp: Option<i64>,
    session_id: Option<&'a str>,
    lang: Option<&'a str>,
    client_ip: Option<&'a str>,
    client_port: Option<&'a str>,
}

impl<'a> Scalars<'a> {
    fn of(ctx: &'a CallContext) -> Self {
        let user = ctx.user_id.as_deref();
        let session = user.and(ctx.session_id.as_deref());
        let known = |s: &'a str| (!s.is_empty()).then_some(s);
        Scalars {
            execution_mode: ctx.mode.as_str(),
            user_id: user,
            username: user.map(|_| ctx.username.as_str()),
            user_session_exp: user.map(|_| ctx.session_expiry),
            session_id: session,
            lang: session.map(|_| ctx.lang.as_str()),
            client_ip: known(&ctx.client_ip),
            client_port: known(&ctx.client_port),
        }
    }
}

/// A field's value: text, a table or a number.
type Field<'a> = Either<&'a str, Either<Table, i64>>;

/// The text and number fields of a `ctx` made whole.
fn scalars<'a>(node: &'a str, ctx: &'a CallContext) -> Vec<(&'static str, Field<'a>)> {
    let s = Scalars::of(ctx);
    let mut fields: Vec<(&str, Field)> = Vec::with_capacity(14);
    fields.push(("execution_mode", Field::Left(s.execution_mode)));
    fields.push(("node", Field::Left(node)));
    fields.push(("version", Field::Left(env!("CARGO_PKG_VERSION"))));
    if let Some(exp) = s.user_session_exp {
        fields.push(("user_session_exp", Field::Right(Either::Right(exp))));
    }
    for (name, text) in [
        ("user_id", s.user_id),
        ("username", s.username),
        ("session_id", s.session_id),
        ("lang", s.lang),
        ("client_ip", s.client_ip),
        ("client_port", s.client_port),
    ] {
        if let Some(text) = text {
            fields.push((name, Field::Left(text)));
        }
    }
    fields
}

/// The tables of `ctx`; `vars` only for a call with a user. Each table is
/// made in one go from its fields (one mlua operation per table, not one
/// per field: each costs a lock and a reference).
fn tables(
    lua: &Lua,
    env: &BTreeMap<String, String>,
    vars: Option<&BTreeMap<String, String>>,
    headers: &BTreeMap<String, Vec<String>>,
    query_params: &BTreeMap<String, Vec<String>>,
) -> mlua::Result<Vec<(&'static str, Table)>> {
    let mut made = Vec::with_capacity(4);
    made.push(("env", map(lua, env)?));
    made.push(("headers", multimap(lua, headers)?));
    made.push(("query_params", multimap(lua, query_params)?));
    if let Some(vars) = vars {
        made.push(("vars", map(lua, vars)?));
    }
    Ok(made)
}

/// The tables of a pool call's `ctx` not made yet: called with the `ctx`
/// (by the sandbox's `complete`), it makes them and drops the lazy
/// metatable.
struct Pending {
    shared: Arc<LuaShared>,
    vars: Option<BTreeMap<String, String>>,
    headers: Headers,
    query_params: BTreeMap<String, Vec<String>>,
}

impl Pending {
    fn fill(&self, lua: &Lua, t: &Table) -> mlua::Result<()> {
        let made = unlimited(lua, || {
            tables(
                lua,
                &self.shared.settings.env,
                self.vars.as_ref(),
                &self.headers.grouped(),
                &self.query_params,
            )
        })?;
        // As for a call's arguments: an earlier call's garbage does not
        // count against what this one made. Tables past the limit are not
        // kept: the read fails with the memory error, and the VM, under its
        // limit again, can go on to answer it.
        if check_memory(lua, 0).is_err() {
            collect(lua);
            if let Err(e) = check_memory(lua, 0) {
                drop(made);
                collect(lua);
                return Err(e);
            }
        }
        unlimited(lua, || {
            for (name, table) in made {
                t.raw_set(name, table)?;
            }
            t.set_metatable(None)
        })
    }
}

impl UserData for Pending {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(mlua::MetaMethod::Call, |lua, pending, t: Table| {
            pending.fill(lua, &t)
        });
    }
}

fn map(lua: &Lua, map: &BTreeMap<String, String>) -> mlua::Result<Table> {
    lua.create_table_from(map.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// Nakama's `{name = {value, …}, …}`.
fn multimap(lua: &Lua, map: &BTreeMap<String, Vec<String>>) -> mlua::Result<Table> {
    let lists = map
        .iter()
        .map(|(k, values)| {
            let list = lua.create_sequence_from(values.iter().map(String::as_str))?;
            Ok((k.as_str(), list))
        })
        .collect::<mlua::Result<Vec<_>>>()?;
    lua.create_table_from(lists)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ExecutionMode;
    use mlua::Value as LuaValue;

    /// Builds contexts for node `node-1` with `runtime.env` `region = eu`.
    struct Builder(BTreeMap<String, String>);

    impl Builder {
        fn build(&self, lua: &Lua, ctx: &CallContext) -> mlua::Result<Table> {
            whole(lua, "node-1", &self.0, ctx)
        }
    }

    fn builder() -> Builder {
        Builder(BTreeMap::from([("region".to_owned(), "eu".to_owned())]))
    }

    #[test]
    fn every_mode_has_its_name() {
        let lua = Lua::new();
        let b = builder();
        for mode in [
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
        ] {
            let t = b.build(&lua, &CallContext::new(mode)).unwrap();
            assert_eq!(t.get::<String>("execution_mode").unwrap(), mode.as_str());
            assert_eq!(t.get::<String>("node").unwrap(), "node-1");
            assert_eq!(
                t.get::<String>("version").unwrap(),
                env!("CARGO_PKG_VERSION")
            );
        }
    }

    #[test]
    fn every_field_comes_through_and_absent_ones_stay_nil() {
        let lua = Lua::new();
        let b = builder();
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
        ])
        .into();
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
        let b = builder();
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
}
