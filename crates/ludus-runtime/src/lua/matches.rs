//! Lua authoritative matches: a module that returns Nakama's seven
//! callbacks (`match_init`, `match_join_attempt`, `match_join`,
//! `match_leave`, `match_loop`, `match_terminate`, `match_signal`) runs in a
//! VM of its own, one per match, so its state never meets another match's.
//!
//! The match state stays a Lua value inside that VM between callbacks: it is
//! never converted. The `dispatcher` table queues effects that the engine
//! applies when the callback returns.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use ludus_realtime::Presence;
use ludus_realtime::matches::{
    Dispatcher, Effect, HandlerError, HandlerFactory, JoinDecision, MatchHandler, MatchInfo,
    MatchInit, MatchMessage, Step, check_label,
};
use mlua::{Function, Lua, Table, Value as LuaValue};
use serde_json::Value;
use uuid::Uuid;

use super::call_state::{in_match, unlimited};
use super::convert;
use super::modules::ModuleSource;
use super::shared::LuaShared;
use super::vm::Vm;
use crate::native::ScriptMatches;

const CALLBACKS: [&str; 7] = [
    "match_init",
    "match_join_attempt",
    "match_join",
    "match_leave",
    "match_loop",
    "match_terminate",
    "match_signal",
];

/// Registry slot of the match's `ctx` table, which label updates change at once.
const MATCH_CTX: &str = "ludus.match_ctx";

/// Most effects whose room a match keeps from one callback to the next.
const KEPT_EFFECTS: usize = 256;

/// Effects queued by the dispatcher during one callback; `true` = deferred.
#[derive(Default)]
struct Queued(RefCell<Vec<(bool, Effect)>>);

pub(crate) struct LuaMatch {
    vm: Vm,
    /// In `CALLBACKS` order.
    fns: Vec<Function>,
    ctx: Table,
    dispatcher: Table,
    /// The messages of a tick with none, reused while it stays empty.
    empty: Table,
    tables: PresenceTables,
    state: LuaValue,
    shared: Arc<LuaShared>,
}

// SAFETY of Send: mlua's `send` feature makes `Lua` and its values `Send`;
// a match VM is only ever used by its match's task, one callback at a time.

impl LuaMatch {
    /// Loads `name` into a fresh VM and checks it returned every callback.
    pub(crate) fn new(
        shared: Arc<LuaShared>,
        modules: &Arc<Vec<ModuleSource>>,
        name: &str,
    ) -> Result<LuaMatch, HandlerError> {
        // Module code runs while the VM loads; its server calls must leave the
        // match worker like a callback's do.
        let (vm, table, ctx) = in_match(|| Vm::for_match(shared.clone(), modules, name))?;
        let mut fns = Vec::with_capacity(CALLBACKS.len());
        for cb in CALLBACKS {
            match table.raw_get::<LuaValue>(cb) {
                Ok(LuaValue::Function(f)) => fns.push(f),
                _ => {
                    return Err(format!(
                        "{cb} not found or not a function in module {name:?}"
                    ));
                }
            }
        }
        let lua = vm.lua();
        lua.set_app_data(Queued::default());
        let dispatcher = dispatcher_table(lua).map_err(|e| e.to_string())?;
        lua.set_named_registry_value(MATCH_CTX, &ctx)
            .map_err(|e| e.to_string())?;
        let empty = lua.create_table().map_err(|e| e.to_string())?;
        Ok(LuaMatch {
            vm,
            fns,
            ctx,
            dispatcher,
            empty,
            tables: PresenceTables::default(),
            state: LuaValue::Nil,
            shared,
        })
    }

    /// Calls callback `i` with `ctx, dispatcher, tick, state, a, b`, then
    /// replays the dispatcher's effects. Answers the first three values the
    /// callback returned after the new state, which it keeps (nil: `End`).
    fn run(
        &mut self,
        i: usize,
        d: &mut Dispatcher,
        tick: i64,
        a: LuaValue,
        b: LuaValue,
    ) -> Result<(Step, LuaValue, LuaValue, LuaValue), HandlerError> {
        let result = in_match(|| {
            self.vm.call_direct(
                &self.fns[i],
                (&self.ctx, &self.dispatcher, tick, self.state.clone(), a, b),
            )
        });
        // The queue's buffer goes back after the replay, so a busy match does
        // not grow a new one every tick.
        let lua = self.vm.lua();
        let mut queued = lua
            .app_data_ref::<Queued>()
            .map(|q| q.0.take())
            .unwrap_or_default();
        // Draining empties the buffer even when a deferred push fails.
        let replayed = queued.drain(..).try_for_each(|(deferred, effect)| {
            if deferred {
                d.push_deferred(effect)
            } else {
                d.push(effect);
                Ok(())
            }
        });
        // A tick that queued unusually many effects does not keep their
        // room for the match's whole life.
        if queued.capacity() <= KEPT_EFFECTS
            && let Some(q) = lua.app_data_ref::<Queued>()
        {
            q.0.replace(queued);
        }
        replayed?;
        let (state, x, y, z) = result.map_err(|e| format!("{}: {}", CALLBACKS[i], e.message))?;
        let step = if state.is_nil() {
            Step::End
        } else {
            Step::Continue
        };
        self.state = state;
        Ok((step, x, y, z))
    }

    /// `match_join` / `match_leave`: callback `i` with the presences' tables.
    fn with_presences(
        &mut self,
        i: usize,
        d: &mut Dispatcher,
        tick: i64,
        presences: &[Presence],
    ) -> Result<Step, HandlerError> {
        let lua = self.vm.lua();
        let list =
            unlimited(lua, || self.tables.list(lua, presences)).map_err(|e| e.to_string())?;
        Ok(self
            .run(i, d, tick, LuaValue::Table(list), LuaValue::Nil)?
            .0)
    }
}

/// The shortest wall-clock budget of a match callback: below it a busy
/// machine's scheduling alone could end a healthy match.
const MIN_CALLBACK_TIMEOUT: Duration = Duration::from_millis(50);

/// How long each callback after `match_init` may run: `percent` of the tick
/// interval, at least [`MIN_CALLBACK_TIMEOUT`]. (`match_init` itself runs
/// under `runtime.lua_call_timeout_ms`: the tick rate is not known yet.)
fn callback_timeout(tick_rate: u32, percent: u32) -> Duration {
    let interval = Duration::from_secs(1) / tick_rate.max(1);
    (interval * percent / 100).max(MIN_CALLBACK_TIMEOUT)
}

impl MatchHandler for LuaMatch {
    fn init(&mut self, info: &MatchInfo, params: &Value) -> Result<MatchInit, HandlerError> {
        let ctx = &self.ctx;
        let set = |k: &str, v: &str| ctx.raw_set(k, v).map_err(|e| e.to_string());
        set("match_id", &info.id)?;
        set("match_node", &info.node)?;
        let lua = self.vm.lua();
        let params = match params {
            Value::Null => LuaValue::Nil,
            p => convert::to_lua(lua, p).map_err(|e| e.to_string())?,
        };
        let (state, rate, label, extra) =
            in_match(|| self.vm.call_direct(&self.fns[0], (&self.ctx, params)))
                .map_err(|e| format!("match_init: {}", e.message))?;
        if state.is_nil() {
            return Err(
                "match_init returned a nil state, it must return: state, tick rate, label".into(),
            );
        }
        self.state = state;
        let tick_rate = match rate {
            LuaValue::Integer(n) => n,
            LuaValue::Number(n) if n.fract() == 0.0 => n as i64,
            _ => {
                return Err(
                    "match_init returned an unexpected second value, it must be a tick rate number"
                        .into(),
                );
            }
        };
        let label = match label {
            LuaValue::Nil => String::new(),
            LuaValue::String(s) => s.to_str().map_err(|e| e.to_string())?.to_owned(),
            _ => {
                return Err(
                    "match_init returned an unexpected third value, it must be a label string"
                        .into(),
                );
            }
        };
        if !extra.is_nil() {
            return Err(
                "match_init returned too many values, it must return: state, tick rate, label"
                    .into(),
            );
        }
        check_label(&label)?;
        let tick_rate = u32::try_from(tick_rate).unwrap_or(0);
        self.vm.set_timeout(
            callback_timeout(tick_rate, self.shared.settings.match_timeout_percent),
            "runtime.lua_match_timeout_percent",
        );
        let _ = self.ctx.raw_set("match_label", label.as_str());
        let _ = self.ctx.raw_set("match_tick_rate", tick_rate);
        Ok(MatchInit { tick_rate, label })
    }

    fn join_attempt(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        presence: &Presence,
        metadata: &BTreeMap<String, String>,
    ) -> Result<JoinDecision, HandlerError> {
        let lua = self.vm.lua();
        let args = unlimited(lua, || -> mlua::Result<(Table, Table)> {
            let meta = lua.create_table_with_capacity(0, metadata.len())?;
            for (k, v) in metadata {
                meta.raw_set(k.as_str(), v.as_str())?;
            }
            Ok((presence_table(lua, presence)?, meta))
        })
        .map_err(|e| e.to_string())?;
        let (step, accept, reason, _) =
            self.run(1, d, tick, LuaValue::Table(args.0), LuaValue::Table(args.1))?;
        if step == Step::End {
            return Ok(JoinDecision::End);
        }
        let accept = match accept {
            LuaValue::Boolean(b) => b,
            _ => {
                return Err(
                    "match_join_attempt must return: state, join result boolean, optional reject reason string"
                        .into(),
                );
            }
        };
        let reason = match reason {
            LuaValue::String(s) => s.to_string_lossy(),
            LuaValue::Nil => String::new(),
            _ => return Err("match_join_attempt returned a non-string reject reason".into()),
        };
        Ok(if accept {
            JoinDecision::Accept
        } else {
            JoinDecision::Reject(reason)
        })
    }

    fn join(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        presences: &[Presence],
    ) -> Result<Step, HandlerError> {
        self.with_presences(2, d, tick, presences)
    }

    fn leave(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        presences: &[Presence],
    ) -> Result<Step, HandlerError> {
        let step = self.with_presences(3, d, tick, presences);
        for p in presences {
            self.tables.0.remove(&p.session_id);
        }
        step
    }

    fn tick(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Step, HandlerError> {
        let lua = self.vm.lua();
        let list = if messages.is_empty() {
            self.empty.clone()
        } else {
            unlimited(lua, || messages_table(lua, &mut self.tables, messages))
                .map_err(|e| e.to_string())?
        };
        let step = self
            .run(4, d, tick, LuaValue::Table(list.clone()), LuaValue::Nil)?
            .0;
        // The shared empty list is only reused while handlers leave it empty.
        if messages.is_empty() && !list.is_empty() {
            self.empty = self.vm.lua().create_table().map_err(|e| e.to_string())?;
        }
        Ok(step)
    }

    fn terminate(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        grace_seconds: u32,
    ) -> Result<Step, HandlerError> {
        Ok(self
            .run(
                5,
                d,
                tick,
                LuaValue::Integer(i64::from(grace_seconds)),
                LuaValue::Nil,
            )?
            .0)
    }

    fn state_json(&mut self) -> Result<String, HandlerError> {
        let lua = self.vm.lua();
        // Runs no module code: the conversion is bounded by its own limit.
        unlimited(lua, || convert::json_text(lua, &self.state)).map_err(|e| e.to_string())
    }

    fn signal(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        data: &str,
    ) -> Result<(Step, String), HandlerError> {
        let data = self
            .vm
            .lua()
            .create_string(data)
            .map_err(|e| e.to_string())?;
        let (step, out, _, _) = self.run(6, d, tick, LuaValue::String(data), LuaValue::Nil)?;
        let out = match out {
            LuaValue::String(s) => s.to_string_lossy(),
            LuaValue::Nil => String::new(),
            _ => return Err("match_signal must return: state, optional data string".into()),
        };
        Ok((step, out))
    }
}

impl std::fmt::Debug for LuaMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LuaMatch")
            .field("node", &self.shared.settings.node)
            .finish_non_exhaustive()
    }
}

fn presence_table(lua: &Lua, p: &Presence) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 4)?;
    t.raw_set("user_id", p.user_id.to_string())?;
    t.raw_set("session_id", p.session_id.to_string())?;
    t.raw_set("username", &*p.username)?;
    t.raw_set("node", &*p.node)?;
    Ok(t)
}

/// One table per player, made when first needed and handed to every
/// callback after: a busy match would otherwise build a presence table (and
/// its id strings) for every message, and spend its time collecting them.
/// Handlers should treat presence tables as read-only, as they are shared.
#[derive(Default)]
struct PresenceTables(HashMap<Uuid, Table>);

impl PresenceTables {
    fn get(&mut self, lua: &Lua, p: &Presence) -> mlua::Result<Table> {
        if let Some(t) = self.0.get(&p.session_id) {
            return Ok(t.clone());
        }
        let t = presence_table(lua, p)?;
        self.0.insert(p.session_id, t.clone());
        Ok(t)
    }

    fn list(&mut self, lua: &Lua, ps: &[Presence]) -> mlua::Result<Table> {
        let list = lua.create_table_with_capacity(ps.len(), 0)?;
        for (i, p) in ps.iter().enumerate() {
            list.raw_set(i + 1, self.get(lua, p)?)?;
        }
        Ok(list)
    }
}

fn messages_table(
    lua: &Lua,
    tables: &mut PresenceTables,
    messages: &[MatchMessage],
) -> mlua::Result<Table> {
    let list = lua.create_table_with_capacity(messages.len(), 0)?;
    for (i, m) in messages.iter().enumerate() {
        let t = lua.create_table_with_capacity(0, 5)?;
        t.raw_set("sender", tables.get(lua, &m.sender)?)?;
        t.raw_set("op_code", m.op_code)?;
        t.raw_set("data", lua.create_string(&m.data)?)?;
        t.raw_set("reliable", m.reliable)?;
        t.raw_set("receive_time_ms", m.receive_time_ms)?;
        list.raw_set(i + 1, t)?;
    }
    Ok(list)
}

/// A presence table from Lua: only its session id matters to the engine.
fn presence_from(v: &LuaValue, what: &str) -> mlua::Result<Presence> {
    let LuaValue::Table(t) = v else {
        return Err(mlua::Error::runtime(format!(
            "{what}: expects presence tables with a session_id"
        )));
    };
    let field = |k: &str| -> Uuid {
        t.raw_get::<String>(k)
            .ok()
            .and_then(|s| Uuid::parse_str(&s).ok())
            .unwrap_or_default()
    };
    let session_id = field("session_id");
    if session_id.is_nil() {
        return Err(mlua::Error::runtime(format!(
            "{what}: a presence has no valid session_id"
        )));
    }
    Ok(Presence::new(
        field("user_id"),
        session_id,
        Arc::from(t.raw_get::<String>("username").unwrap_or_default()),
        Arc::from(t.raw_get::<String>("node").unwrap_or_default()),
    ))
}

/// The sessions of a presence list (recipients and kicks need no more).
fn session_list(v: &LuaValue, what: &str) -> mlua::Result<Option<Vec<Uuid>>> {
    match v {
        LuaValue::Nil => Ok(None),
        LuaValue::Table(t) => {
            let mut out = Vec::new();
            for item in t.sequence_values::<LuaValue>() {
                let item = item?;
                let LuaValue::Table(p) = &item else {
                    return Err(mlua::Error::runtime(format!(
                        "{what}: expects presence tables with a session_id"
                    )));
                };
                let session = p
                    .raw_get::<mlua::LuaString>("session_id")
                    .ok()
                    .and_then(|s| Uuid::try_parse_ascii(&s.as_bytes()).ok())
                    .ok_or_else(|| {
                        mlua::Error::runtime(format!("{what}: a presence has no valid session_id"))
                    })?;
                out.push(session);
            }
            Ok(Some(out))
        }
        _ => Err(mlua::Error::runtime(format!(
            "{what}: presences must be a table of presences or nil"
        ))),
    }
}

fn queue(lua: &Lua, deferred: bool, effect: Effect) -> mlua::Result<()> {
    match lua.app_data_ref::<Queued>() {
        Some(q) => {
            q.0.borrow_mut().push((deferred, effect));
            Ok(())
        }
        None => Err(mlua::Error::runtime("dispatcher used outside a match")),
    }
}

/// The `dispatcher` table passed to every callback after `match_init`.
fn dispatcher_table(lua: &Lua) -> mlua::Result<Table> {
    let d = lua.create_table()?;
    for (name, deferred) in [
        ("broadcast_message", false),
        ("broadcast_message_deferred", true),
    ] {
        d.raw_set(
            name,
            lua.create_function(
                move |lua,
                      (op_code, data, presences, sender, reliable): (
                    i64,
                    LuaValue,
                    LuaValue,
                    LuaValue,
                    Option<bool>,
                )| {
                    unlimited(lua, || {
                        let data = match data {
                            LuaValue::Nil => Vec::new(),
                            LuaValue::String(s) => s.as_bytes().to_vec(),
                            _ => {
                                return Err(mlua::Error::runtime(format!(
                                    "{name}: data must be a string or nil"
                                )));
                            }
                        };
                        let to = session_list(&presences, name)?;
                        let sender = match &sender {
                            LuaValue::Nil => None,
                            v => Some(presence_from(v, name)?),
                        };
                        queue(
                            lua,
                            deferred,
                            Effect::Broadcast {
                                op_code,
                                data,
                                to,
                                sender,
                                reliable: reliable.unwrap_or(true),
                            },
                        )
                    })
                },
            )?,
        )?;
    }
    d.raw_set(
        "match_kick",
        lua.create_function(|lua, presences: LuaValue| {
            unlimited(lua, || {
                let sessions = session_list(&presences, "match_kick")?.unwrap_or_default();
                queue(lua, false, Effect::Kick(sessions))
            })
        })?,
    )?;
    d.raw_set(
        "match_label_update",
        lua.create_function(|lua, label: String| {
            check_label(&label).map_err(mlua::Error::runtime)?;
            if let Ok(ctx) = lua.named_registry_value::<Table>(MATCH_CTX) {
                ctx.raw_set("match_label", label.as_str())?;
            }
            queue(lua, false, Effect::Label(label))
        })?,
    )?;
    Ok(d)
}

/// A Lua module with match callbacks makes matches of its name.
impl ScriptMatches for LuaShared {
    fn has(&self, name: &str) -> bool {
        self.sources.iter().any(|m| m.name == name)
    }

    fn factory(self: Arc<Self>, name: &str) -> HandlerFactory {
        let name = name.to_owned();
        Box::new(move || {
            LuaMatch::new(self.clone(), &self.sources, &name)
                .map(|m| Box::new(m) as Box<dyn MatchHandler>)
        })
    }
}
