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
//! sandbox's lazy `ctx` metatable and its tables packed in a string
//! ([`pack`]) under the sandbox's hidden key, so it behaves as the whole
//! table: reading or adding a field it lacks, `pairs`, `next`,
//! `table.foreach`, `rawget`, `rawset`, `setmetatable` and the conversion
//! to JSON make the tables first, and making them drops the metatable.
//! They count towards the VM's memory limit once made: a call whose `ctx`
//! tables alone take the VM past it fails when it reads them.

use std::collections::BTreeMap;

use mlua::{Either, Lua, Table};

use super::call_state::{check_memory, collect, unlimited};
use super::shared::LuaShared;
use crate::context::{CallContext, Headers, header_text};

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
/// (vm.rs, `RUN_LOOP`): the tables packed ([`pack`]), then `execution_mode`,
/// `user_id`, `username`, `user_session_exp`, `session_id`, `lang`,
/// `client_ip` and `client_port`, `None` for a field the call lacks (`node`
/// and `version` are the VM's, given to the run loop once). The
/// run loop makes the table with one constructor whose keys are constants
/// of its chunk, so no key is looked up in LuaJIT's string table per call
/// and the table is made at its full size at once (BENCHMARKS.md, "A
/// call's `ctx` made by its run loop").
pub(super) type CallFields<'a> = (
    mlua::LuaString,
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
/// [`context_table`] makes whole. The tables wait packed in one Lua
/// string ([`pack`]), which the run loop files the `ctx` under; made with
/// the VM's limit lifted (no Lua runs; its size is the request's, which the
/// server bounds).
pub(super) fn call_fields<'a>(lua: &Lua, ctx: &'a mut CallContext) -> mlua::Result<CallFields<'a>> {
    let packed = pack(ctx);
    // The transport's header map goes now, while it is in the caches.
    ctx.headers = Headers::default();
    let packed = unlimited(lua, || lua.create_string(&packed))?;
    let s = Scalars::of(ctx);
    Ok((
        packed,
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

/// The tables of a pool call's `ctx` (but `env`, the VM's), packed in
/// bytes: `vars` (a byte 1 then its pairs, or a byte 0 for a call without
/// a user), then the headers' and the query parameters' pairs, each list a
/// `u32` count of pairs followed by the pairs, each text a `u32` length and
/// its bytes (little-endian). Header names are in the form modules see.
///
/// They wait in a Lua string rather than a userdata of each `ctx`: a
/// userdata per call, with the finalizer that drops it in a later
/// collection and the transport's header map it kept until then, cost
/// about a quarter of the Lua thread's time per wallet update
/// (BENCHMARKS.md, "A call's `ctx` tables wait packed in a string"). A
/// string holds nothing outside the VM's heap, counts towards its limit,
/// and goes with its `ctx` in an ordinary collection.
fn pack(ctx: &CallContext) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    match ctx.user_id.is_some() {
        true => {
            out.push(1);
            put_count(&mut out, ctx.vars.len());
            for (k, v) in &ctx.vars {
                put(&mut out, k.as_bytes());
                put(&mut out, v.as_bytes());
            }
        }
        false => out.push(0),
    }
    let at = out.len();
    put_count(&mut out, 0);
    let mut headers = 0usize;
    ctx.headers.each(&mut |name, value| {
        let len_at = out.len();
        put_count(&mut out, 0);
        name(&mut out);
        let len = out.len() - len_at - 4;
        out[len_at..len_at + 4].copy_from_slice(&count_bytes(len));
        put(&mut out, value);
        headers += 1;
    });
    out[at..at + 4].copy_from_slice(&count_bytes(headers));
    let pairs: usize = ctx.query_params.values().map(Vec::len).sum();
    put_count(&mut out, pairs);
    for (k, values) in &ctx.query_params {
        for v in values {
            put(&mut out, k.as_bytes());
            put(&mut out, v.as_bytes());
        }
    }
    out
}

fn count_bytes(n: usize) -> [u8; 4] {
    // Texts and lists are bounded by the request, far below 4 GiB.
    u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes()
}

fn put_count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&count_bytes(n));
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    put_count(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// What [`pack`] wrote, read back.
struct Unpacked {
    vars: Option<BTreeMap<String, String>>,
    headers: BTreeMap<String, Vec<String>>,
    query_params: BTreeMap<String, Vec<String>>,
}

fn unpack(bytes: &[u8]) -> Option<Unpacked> {
    let mut r = Reader(bytes);
    let vars = match r.byte()? {
        0 => None,
        _ => {
            let mut vars = BTreeMap::new();
            for _ in 0..r.count()? {
                vars.insert(r.text()?, r.text()?);
            }
            Some(vars)
        }
    };
    let mut lists = [BTreeMap::new(), BTreeMap::new()];
    for list in &mut lists {
        for _ in 0..r.count()? {
            let name = r.text()?;
            list.entry(name).or_insert_with(Vec::new).push(r.text()?);
        }
    }
    let [headers, query_params] = lists;
    Some(Unpacked {
        vars,
        headers,
        query_params,
    })
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn count(&mut self) -> Option<usize> {
        let (n, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        usize::try_from(u32::from_le_bytes(*n)).ok()
    }

    /// A text: a header's value that is not UTF-8 has its bad bytes
    /// replaced, as grouping the headers does.
    fn text(&mut self) -> Option<String> {
        let n = self.count()?;
        let (bytes, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(header_text(bytes))
    }
}

/// Makes the tables of `t`, a pool call's `ctx`, from `packed` ([`pack`])
/// and drops its lazy metatable (the sandbox's `complete` calls this on the
/// `ctx`'s first read).
pub(super) fn fill_pending(
    lua: &Lua,
    shared: &LuaShared,
    t: &Table,
    packed: &mlua::LuaString,
) -> mlua::Result<()> {
    let unpacked = unpack(&packed.as_bytes())
        .ok_or_else(|| mlua::Error::runtime("the tables of this ctx are unreadable"))?;
    let made = unlimited(lua, || {
        tables(
            lua,
            &shared.settings.env,
            unpacked.vars.as_ref(),
            &unpacked.headers,
            &unpacked.query_params,
        )
    })?;
    drop(unpacked);
    // As for a call's arguments: an earlier call's garbage does not count
    // against what this one made. Tables past the limit are not kept: the
    // read fails with the memory error, and the VM, under its limit again,
    // can go on to answer it.
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
            ExecutionMode::SubscriptionNotificationApple,
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

    /// What a call's `ctx` packs is what its tables are made of: vars only
    /// with a user (empty ones kept), every header value in order under the
    /// name modules see (bytes that are not UTF-8 replaced), every query
    /// value; and bytes cut short read as nothing, never a panic.
    #[test]
    fn packed_tables_read_back_whole() {
        let mut ctx = CallContext::new(ExecutionMode::Rpc);
        ctx.query_params = BTreeMap::from([
            ("q".into(), vec!["1".into(), String::new()]),
            ("é".into(), vec!["ü".into()]),
        ]);
        ctx.headers = Headers::lazy(|visit| {
            visit("x-custom", b"a");
            visit("accept", b"\xfftext");
            visit("x-custom", b"");
        });
        ctx.vars = BTreeMap::from([("k".into(), "v".into())]);
        let without_user = unpack(&pack(&ctx)).unwrap();
        assert_eq!(without_user.vars, None);
        assert_eq!(without_user.headers, *ctx.headers.grouped());
        assert_eq!(without_user.headers["X-Custom"], ["a", ""]);
        assert_eq!(without_user.headers["Accept"], ["\u{fffd}text"]);
        assert_eq!(without_user.query_params, ctx.query_params);

        ctx.user_id = Some("u".into());
        let packed = pack(&ctx);
        let with_user = unpack(&packed).unwrap();
        assert_eq!(with_user.vars, Some(ctx.vars.clone()));
        ctx.vars.clear();
        assert_eq!(unpack(&pack(&ctx)).unwrap().vars, Some(BTreeMap::new()));

        for cut in 0..packed.len() {
            assert!(
                unpack(&packed[..cut]).is_none(),
                "{cut} bytes read as whole"
            );
        }
    }
}
