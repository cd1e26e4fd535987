//! JS authoritative matches: a name given to `initializer.registerMatch`
//! makes matches whose seven callbacks (`matchInit` … `matchSignal`) run in
//! a QuickJS context of their own, on a thread of their own.
//!
//! Why a context per match, as Nakama gives each match a goja runtime of
//! its own: a match's memory limit and deadline are its own, so a runaway
//! or greedy `matchLoop` ends that match only (a context shared by many
//! matches would lose all of them to one allocation); module-level
//! variables are per match, as Nakama bundles expect; and a callback
//! waiting on a server call (`nk.*` blocks its thread, QuickJS cannot
//! suspend a native call) holds up no other match. The price is about
//! 250 KiB plus the bundle's compiled code per match, and a thread whose
//! stack is reserved, not resident. The context evaluates the bundle and
//! finds the callbacks by their global names; it does not run
//! `InitModule` again (Nakama's rule, and its side effects run once).
//!
//! The match's task calls [`JsMatch`], which hands each callback to the
//! context's thread and waits for its answer: callbacks run one at a time.
//! The state stays a JS value in the context between callbacks; the
//! dispatcher queues effects that the engine applies when the callback
//! returns, as for Lua matches.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;

use ludus_realtime::Presence;
use ludus_realtime::matches::{
    Dispatcher, Effect, HandlerError, HandlerFactory, JoinDecision, MatchHandler, MatchInfo,
    MatchInit, MatchMessage, Step, check_label,
};
use rquickjs::{ArrayBuffer, Context, Ctx, Exception, Function, Object, Persistent, Value};
use serde_json::Value as Json;
use uuid::Uuid;

use super::budget::Budget;
use super::initializer::{MATCH_CALLBACKS, MatchFns, Matches};
use super::logger::root_logger;
use super::nk::nk;
use super::nk_common::to_js;
use super::shared::JsShared;
use super::vm::{NOTHING_THROWN, STACK_LIMIT, call_context, describe, engine, evaluate};
use crate::context::{CallContext, ExecutionMode};
use crate::native::ScriptMatches;

/// The JS module's match handlers, by the names it registered.
pub(crate) struct JsMatches {
    shared: Arc<JsShared>,
    handlers: Matches,
}

impl JsMatches {
    pub(super) fn new(shared: Arc<JsShared>, handlers: Matches) -> JsMatches {
        JsMatches { shared, handlers }
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }
}

impl ScriptMatches for JsMatches {
    fn has(&self, name: &str) -> bool {
        self.handlers.contains_key(name)
    }

    fn factory(self: Arc<Self>, name: &str) -> HandlerFactory {
        let name = name.to_owned();
        Box::new(move || {
            let fns = self
                .handlers
                .get(&name)
                .cloned()
                .ok_or_else(|| format!("no js match handler named {name:?}"))?;
            JsMatch::start(self.shared.clone(), name, fns)
                .map(|m| Box::new(m) as Box<dyn MatchHandler>)
        })
    }
}

/// One callback for the match's thread.
enum Request {
    Init(MatchInfo, Json),
    JoinAttempt(i64, Presence, BTreeMap<String, String>),
    Join(i64, Vec<Presence>),
    Leave(i64, Vec<Presence>),
    Loop(i64, Vec<MatchMessage>),
    Terminate(i64, u32),
    Signal(i64, String),
    /// The state as JSON text, for the console; runs no callback.
    State,
}

/// What a callback answered, with the effects it queued (`true`: deferred).
enum Outcome {
    Init(MatchInit),
    Join(JoinDecision),
    Step(Step),
    Signal(Step, String),
    /// A failed view of the state leaves the match running.
    State(Result<String, HandlerError>),
}

type Reply = Result<(Outcome, Vec<(bool, Effect)>), HandlerError>;

/// The engine's side of a JS match: sends each callback to the match's
/// context and waits for its answer. Dropping it ends the thread.
pub(crate) struct JsMatch {
    requests: SyncSender<Request>,
    replies: Receiver<Reply>,
}

impl std::fmt::Debug for JsMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsMatch").finish_non_exhaustive()
    }
}

impl JsMatch {
    /// Starts the match's thread and waits until its context is ready.
    fn start(shared: Arc<JsShared>, name: String, fns: MatchFns) -> Result<JsMatch, HandlerError> {
        let (requests, inbox) = sync_channel(1);
        let (outbox, replies) = sync_channel(1);
        let (ready_tx, ready) = sync_channel(1);
        std::thread::Builder::new()
            .name(format!("ludus-js-match-{name}"))
            .stack_size(STACK_LIMIT * 8)
            .spawn(move || serve(shared, fns, inbox, outbox, ready_tx))
            .map_err(|e| format!("cannot start a js match thread: {e}"))?;
        ready
            .recv()
            .map_err(|_| "the js match thread ended while loading".to_owned())??;
        Ok(JsMatch { requests, replies })
    }

    fn ask(&mut self, d: &mut Dispatcher, request: Request) -> Result<Outcome, HandlerError> {
        self.requests
            .send(request)
            .map_err(|_| "the js match context is gone".to_owned())?;
        let (outcome, effects) = self
            .replies
            .recv()
            .map_err(|_| "the js match context stopped; see the server log".to_owned())??;
        for (deferred, effect) in effects {
            if deferred {
                d.push_deferred(effect)?;
            } else {
                d.push(effect);
            }
        }
        Ok(outcome)
    }

    fn step(&mut self, d: &mut Dispatcher, request: Request) -> Result<Step, HandlerError> {
        match self.ask(d, request)? {
            Outcome::Step(step) => Ok(step),
            _ => Err("js match answered the wrong callback".into()),
        }
    }
}

impl MatchHandler for JsMatch {
    fn init(&mut self, info: &MatchInfo, params: &Json) -> Result<MatchInit, HandlerError> {
        let mut d = Dispatcher::default();
        match self.ask(&mut d, Request::Init(info.clone(), params.clone()))? {
            Outcome::Init(init) => Ok(init),
            _ => Err("js match answered the wrong callback".into()),
        }
    }

    fn join_attempt(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        presence: &Presence,
        metadata: &BTreeMap<String, String>,
    ) -> Result<JoinDecision, HandlerError> {
        let request = Request::JoinAttempt(tick, presence.clone(), metadata.clone());
        match self.ask(d, request)? {
            Outcome::Join(decision) => Ok(decision),
            _ => Err("js match answered the wrong callback".into()),
        }
    }

    fn join(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        presences: &[Presence],
    ) -> Result<Step, HandlerError> {
        self.step(d, Request::Join(tick, presences.to_vec()))
    }

    fn leave(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        presences: &[Presence],
    ) -> Result<Step, HandlerError> {
        self.step(d, Request::Leave(tick, presences.to_vec()))
    }

    fn tick(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Step, HandlerError> {
        self.step(d, Request::Loop(tick, messages.to_vec()))
    }

    fn terminate(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        grace_seconds: u32,
    ) -> Result<Step, HandlerError> {
        self.step(d, Request::Terminate(tick, grace_seconds))
    }

    fn state_json(&mut self) -> Result<String, HandlerError> {
        match self.ask(&mut Dispatcher::default(), Request::State)? {
            Outcome::State(view) => view,
            _ => Err("js match answered the wrong callback".into()),
        }
    }

    fn signal(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        data: &str,
    ) -> Result<(Step, String), HandlerError> {
        match self.ask(d, Request::Signal(tick, data.to_owned()))? {
            Outcome::Signal(step, out) => Ok((step, out)),
            _ => Err("js match answered the wrong callback".into()),
        }
    }
}

/// The match thread: makes the context, then runs callbacks until the
/// engine drops its [`JsMatch`] or a callback spoils the context.
fn serve(
    shared: Arc<JsShared>,
    fns: MatchFns,
    inbox: Receiver<Request>,
    outbox: SyncSender<Reply>,
    ready: SyncSender<Result<(), HandlerError>>,
) {
    let mut m = match MatchContext::new(shared, &fns) {
        Ok(m) => m,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    while let Ok(request) = inbox.recv() {
        let reply = std::panic::catch_unwind(AssertUnwindSafe(|| m.run(request)))
            .unwrap_or_else(|_| Err("the js match callback failed inside the server".into()));
        let failed = reply.is_err();
        if outbox.send(reply).is_err() || failed {
            // A failed callback ends the match; its context goes with it.
            return;
        }
    }
}

/// Effects the dispatcher queued during the running callback.
type Queue = Rc<RefCell<Vec<(bool, Effect)>>>;

/// One match's context, its callbacks and its state.
struct MatchContext {
    // Dropped before the engine: the context and the saved values hold it.
    fns: Vec<Persistent<Function<'static>>>,
    ctx: Persistent<Object<'static>>,
    logger: Persistent<Object<'static>>,
    nk: Persistent<Object<'static>>,
    dispatcher: Persistent<Object<'static>>,
    state: Option<Persistent<Value<'static>>>,
    queue: Queue,
    /// Each callback's time after `matchInit`.
    timeout: Duration,
    context: Context,
    _engine: rquickjs::Runtime,
    budget: Rc<Budget>,
    shared: Arc<JsShared>,
}

/// The dispatcher's JS side: Nakama's four functions over the native
/// queue, and the label kept in the match's `ctx` at once, as Nakama does.
const DISPATCHER: &str = r#"(function (native, ctx) {
  return Object.freeze({
    broadcastMessage: function (opCode, data, presences, sender, reliable) {
      native.broadcast(false, opCode, data, presences, sender, reliable);
    },
    broadcastMessageDeferred: function (opCode, data, presences, sender, reliable) {
      native.broadcast(true, opCode, data, presences, sender, reliable);
    },
    matchKick: function (presences) { native.kick(presences); },
    matchLabelUpdate: function (label) { native.label(label); ctx.matchLabel = label; },
  });
})"#;

impl MatchContext {
    fn new(shared: Arc<JsShared>, fns: &MatchFns) -> Result<MatchContext, HandlerError> {
        let (engine, context, budget) = engine(&shared).map_err(|e| e.to_string())?;
        let queue: Queue = Rc::default();
        budget.start(shared.settings.js_call_timeout);
        let made = context.with(|ctx| {
            let fail = |e: rquickjs::Error| describe(&ctx, e).1;
            let logger = root_logger(&ctx).map_err(fail)?;
            let nk = nk(&ctx, &shared).map_err(fail)?;
            evaluate(&ctx, &shared).map_err(fail)?;
            let globals = ctx.globals();
            let mut found = Vec::with_capacity(fns.len());
            for (name, key) in fns.iter().zip(MATCH_CALLBACKS) {
                let f: Value = globals.get(name.as_str()).map_err(fail)?;
                let Some(f) = f.into_function() else {
                    return Err(format!(
                        "{key}: the global function {name:?} is gone after the bundle ran"
                    ));
                };
                found.push(Persistent::save(&ctx, f));
            }
            let jsctx = call_context(&ctx, &shared, &CallContext::new(ExecutionMode::Match))
                .map_err(fail)?
                .into_object()
                .ok_or("the match ctx is not an object")?;
            let native = native_dispatcher(&ctx, &queue).map_err(fail)?;
            let make: Function = ctx.eval(DISPATCHER).map_err(fail)?;
            let dispatcher: Object = make.call((native, jsctx.clone())).map_err(fail)?;
            Ok((
                found,
                Persistent::save(&ctx, jsctx),
                Persistent::save(&ctx, logger),
                Persistent::save(&ctx, nk),
                Persistent::save(&ctx, dispatcher),
            ))
        });
        let stopped = budget.finish();
        let (fns, ctx, logger, nk, dispatcher) = made.map_err(|e: String| match stopped {
            Some(stop) => stop.message(),
            None => format!("js match context: {e}"),
        })?;
        Ok(MatchContext {
            fns,
            ctx,
            logger,
            nk,
            dispatcher,
            state: None,
            queue,
            timeout: shared.settings.js_call_timeout,
            context,
            _engine: engine,
            budget,
            shared,
        })
    }

    /// Runs one callback, answering what it decided and the effects it
    /// queued; a failed callback answers an error naming it.
    fn run(&mut self, request: Request) -> Reply {
        let (i, tick) = match &request {
            Request::State => return Ok((Outcome::State(self.state_json()), Vec::new())),
            Request::Init(..) => (0, 0),
            Request::JoinAttempt(t, ..) => (1, *t),
            Request::Join(t, _) => (2, *t),
            Request::Leave(t, _) => (3, *t),
            Request::Loop(t, _) => (4, *t),
            Request::Terminate(t, _) => (5, *t),
            Request::Signal(t, _) => (6, *t),
        };
        let name = MATCH_CALLBACKS[i];
        let limit = if i == 0 {
            self.shared.settings.js_call_timeout
        } else {
            self.timeout
        };
        self.queue.borrow_mut().clear();
        self.budget.start(limit);
        let context = self.context.clone();
        let result = context.with(|ctx| {
            self.call(&ctx, i, tick, request)
                .map_err(|e| describe(&ctx, e).1)
        });
        let stopped = self.budget.finish();
        let effects = std::mem::take(&mut *self.queue.borrow_mut());
        let outcome = result.map_err(|message| {
            if let Some(stop) = stopped {
                return match stop {
                    super::budget::Stop::Deadline(_) if i > 0 => format!(
                        "{name} stopped: it ran longer than its time budget of {} ms (runtime.lua_match_timeout_percent of the tick interval, at least 50 ms)",
                        limit.as_millis()
                    ),
                    _ => format!("{name}: {}", stop.message()),
                };
            }
            if message.contains("out of memory") || message == NOTHING_THROWN {
                return format!(
                    "{name} ran out of memory: a match context may hold {} bytes (runtime.js_memory_limit_bytes)",
                    self.shared.settings.js_memory_limit_bytes
                );
            }
            format!("{name}: {message}")
        })?;
        if let Outcome::Init(init) = &outcome {
            self.timeout =
                callback_timeout(init.tick_rate, self.shared.settings.match_timeout_percent);
        }
        Ok((outcome, effects))
    }

    /// The state through `JSON.stringify`, under the callback deadline and
    /// the memory limit (a `toJSON` of the module's runs there too); empty
    /// when the match has no state (yet).
    fn state_json(&mut self) -> Result<String, HandlerError> {
        let Some(state) = self.state.clone() else {
            return Ok(String::new());
        };
        self.budget.start(self.shared.settings.js_call_timeout);
        let context = self.context.clone();
        let text = context.with(|ctx| {
            let written = state
                .restore(&ctx)
                .and_then(|state| ctx.json_stringify(state))
                .and_then(|text| text.map_or(Ok(String::new()), |t| t.to_string()));
            written.map_err(|e| describe(&ctx, e).1)
        });
        let stopped = self.budget.finish();
        text.map_err(|message| match stopped {
            Some(stop) => format!("match state: {}", stop.message()),
            None => format!("match state cannot be written as JSON: {message}"),
        })
    }

    fn call<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        i: usize,
        tick: i64,
        request: Request,
    ) -> rquickjs::Result<Outcome> {
        let f: Function = self.fns[i].clone().restore(ctx)?;
        let jsctx: Object = self.ctx.clone().restore(ctx)?;
        let logger: Object = self.logger.clone().restore(ctx)?;
        let nk: Object = self.nk.clone().restore(ctx)?;
        if let Request::Init(info, params) = request {
            jsctx.set("matchId", info.id.as_str())?;
            jsctx.set("matchNode", info.node.as_str())?;
            let params = match params {
                Json::Null => Object::new(ctx.clone())?.into_value(),
                p => to_js(ctx, &p)?,
            };
            let out: Value = f.call((jsctx.clone(), logger, nk, params))?;
            let init = self.init_result(ctx, out)?;
            jsctx.set("matchLabel", init.label.as_str())?;
            jsctx.set("matchTickRate", init.tick_rate)?;
            return Ok(Outcome::Init(init));
        }
        let dispatcher: Object = self.dispatcher.clone().restore(ctx)?;
        let state: Value = match &self.state {
            Some(s) => s.clone().restore(ctx)?,
            None => Value::new_undefined(ctx.clone()),
        };
        let (call_ctx, last): (Object, Value) = match request {
            Request::Init(..) | Request::State => unreachable!("handled above"),
            Request::JoinAttempt(_, presence, metadata) => {
                // Nakama gives the join attempt a copy of ctx with the
                // joining user's keys.
                let copy = Object::new(ctx.clone())?;
                for entry in jsctx.props::<String, Value>() {
                    let (k, v) = entry?;
                    copy.set(k, v)?;
                }
                copy.set("userId", presence.user_id.to_string())?;
                copy.set("username", &*presence.username)?;
                copy.set("sessionId", presence.session_id.to_string())?;
                let meta = Object::new(ctx.clone())?;
                for (k, v) in &metadata {
                    meta.set(k.as_str(), v.as_str())?;
                }
                let p = presence_object(ctx, &presence)?;
                let args = [
                    copy.into_value(),
                    logger.into_value(),
                    nk.into_value(),
                    dispatcher.into_value(),
                    Value::new_float(ctx.clone(), tick as f64),
                    state,
                    p.into_value(),
                    meta.into_value(),
                ];
                let mut values = rquickjs::function::Args::new(ctx.clone(), args.len());
                for a in args {
                    values.push_arg(a)?;
                }
                let out: Value = f.call_arg(values)?;
                return self.join_result(ctx, out);
            }
            Request::Join(_, ps) | Request::Leave(_, ps) => (jsctx, presence_list(ctx, &ps)?),
            Request::Loop(_, messages) => (jsctx, message_list(ctx, &messages)?),
            Request::Terminate(_, grace) => (jsctx, Value::new_int(ctx.clone(), grace as i32)),
            Request::Signal(_, data) => (
                jsctx,
                rquickjs::String::from_str(ctx.clone(), &data)?.into_value(),
            ),
        };
        let out: Value = f.call((call_ctx, logger, nk, dispatcher, tick, state, last))?;
        let Some(result) = self.returned_state(ctx, i, &out)? else {
            return Ok(if i == 6 {
                Outcome::Signal(Step::End, String::new())
            } else {
                Outcome::Step(Step::End)
            });
        };
        if i == 6 {
            let data: Value = result.get("data")?;
            let data = if data.is_undefined() || data.is_null() {
                String::new()
            } else if let Some(s) = data.as_string() {
                s.to_string()?
            } else {
                return Err(Exception::throw_type(
                    ctx,
                    "matchSignal 'data' property must be a string",
                ));
            };
            return Ok(Outcome::Signal(Step::Continue, data));
        }
        Ok(Outcome::Step(Step::Continue))
    }

    /// Keeps the `state` of a callback's result; `None` when the callback
    /// returned `null`/`undefined` or a null state (the match ends).
    fn returned_state<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        i: usize,
        out: &Value<'js>,
    ) -> rquickjs::Result<Option<Object<'js>>> {
        if out.is_undefined() || out.is_null() {
            self.state = None;
            return Ok(None);
        }
        let name = MATCH_CALLBACKS[i];
        let Some(result) = out.as_object() else {
            return Err(Exception::throw_type(
                ctx,
                &format!("{name} is expected to return an object with a 'state' property"),
            ));
        };
        let state: Value = result.get("state")?;
        if state.is_undefined() || state.is_null() {
            self.state = None;
            return Ok(None);
        }
        self.state = Some(Persistent::save(ctx, state));
        Ok(Some(result.clone()))
    }

    fn init_result<'js>(&mut self, ctx: &Ctx<'js>, out: Value<'js>) -> rquickjs::Result<MatchInit> {
        let Some(result) = out.as_object() else {
            return Err(Exception::throw_type(
                ctx,
                "matchInit is expected to return an object with 'state', 'tickRate' and 'label' properties",
            ));
        };
        let rate: Value = result.get("tickRate")?;
        let tick_rate = rate
            .as_number()
            .filter(|n| n.fract() == 0.0 && (1.0..=60.0).contains(n))
            .ok_or_else(|| {
                Exception::throw_type(
                    ctx,
                    "matchInit 'tickRate' must be a number between 1 and 60",
                )
            })? as u32;
        let label: Value = result.get("label")?;
        let label = if label.is_undefined() || label.is_null() {
            String::new()
        } else if let Some(s) = label.as_string() {
            s.to_string()?
        } else {
            return Err(Exception::throw_type(
                ctx,
                "matchInit 'label' value must be a string",
            ));
        };
        check_label(&label).map_err(|e| Exception::throw_type(ctx, &e))?;
        let state: Value = result.get("state")?;
        if state.is_undefined() || state.is_null() {
            return Err(Exception::throw_type(
                ctx,
                "matchInit is expected to return an object with a non-null 'state' property",
            ));
        }
        self.state = Some(Persistent::save(ctx, state));
        Ok(MatchInit { tick_rate, label })
    }

    fn join_result<'js>(&mut self, ctx: &Ctx<'js>, out: Value<'js>) -> rquickjs::Result<Outcome> {
        let Some(result) = self.returned_state(ctx, 1, &out)? else {
            return Ok(Outcome::Join(JoinDecision::End));
        };
        let accept: Value = result.get("accept")?;
        let Some(accept) = accept.as_bool() else {
            return Err(Exception::throw_type(
                ctx,
                "matchJoinAttempt 'accept' property must be a boolean",
            ));
        };
        if accept {
            return Ok(Outcome::Join(JoinDecision::Accept));
        }
        let reason: Value = result.get("rejectMessage")?;
        let reason = if reason.is_undefined() || reason.is_null() {
            String::new()
        } else if let Some(s) = reason.as_string() {
            s.to_string()?
        } else {
            return Err(Exception::throw_type(
                ctx,
                "matchJoinAttempt 'rejectMessage' property must be a string",
            ));
        };
        Ok(Outcome::Join(JoinDecision::Reject(reason)))
    }
}

/// The shortest time budget of a match callback, as for Lua matches: below
/// it a busy machine's scheduling alone could end a healthy match.
const MIN_CALLBACK_TIMEOUT: Duration = Duration::from_millis(50);

fn callback_timeout(tick_rate: u32, percent: u32) -> Duration {
    let interval = Duration::from_secs(1) / tick_rate.max(1);
    (interval * percent / 100).max(MIN_CALLBACK_TIMEOUT)
}

fn presence_object<'js>(ctx: &Ctx<'js>, p: &Presence) -> rquickjs::Result<Object<'js>> {
    let o = Object::new(ctx.clone())?;
    o.set("userId", p.user_id.to_string())?;
    o.set("sessionId", p.session_id.to_string())?;
    o.set("username", &*p.username)?;
    o.set("node", &*p.node)?;
    Ok(o)
}

fn presence_list<'js>(ctx: &Ctx<'js>, ps: &[Presence]) -> rquickjs::Result<Value<'js>> {
    let list = rquickjs::Array::new(ctx.clone())?;
    for (i, p) in ps.iter().enumerate() {
        list.set(i, presence_object(ctx, p)?)?;
    }
    Ok(list.into_value())
}

/// `matchLoop`'s messages as Nakama shapes them: `sender`, `opCode`,
/// `data` (an `ArrayBuffer`), `reliable`, `receiveTimeMs`. A sender's
/// object is made once per tick however many messages it sent.
fn message_list<'js>(ctx: &Ctx<'js>, messages: &[MatchMessage]) -> rquickjs::Result<Value<'js>> {
    let list = rquickjs::Array::new(ctx.clone())?;
    let mut senders: HashMap<Uuid, Object<'js>> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        let sender = match senders.get(&m.sender.session_id) {
            Some(o) => o.clone(),
            None => {
                let o = presence_object(ctx, &m.sender)?;
                senders.insert(m.sender.session_id, o.clone());
                o
            }
        };
        let o = Object::new(ctx.clone())?;
        o.set("sender", sender)?;
        o.set("opCode", m.op_code as f64)?;
        o.set("data", ArrayBuffer::new_copy(ctx.clone(), &m.data)?)?;
        o.set("reliable", m.reliable)?;
        o.set("receiveTimeMs", m.receive_time_ms as f64)?;
        list.set(i, o)?;
    }
    Ok(list.into_value())
}

/// The native half of the dispatcher: checks arguments as Nakama does and
/// queues the effects.
fn native_dispatcher<'js>(ctx: &Ctx<'js>, queue: &Queue) -> rquickjs::Result<Object<'js>> {
    let native = Object::new(ctx.clone())?;
    let q = queue.clone();
    native.set(
        "broadcast",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  deferred: bool,
                  op_code: Value<'js>,
                  data: Value<'js>,
                  presences: Value<'js>,
                  sender: Value<'js>,
                  reliable: Value<'js>| {
                let what = if deferred {
                    "broadcastMessageDeferred"
                } else {
                    "broadcastMessage"
                };
                let op_code = op_code
                    .as_number()
                    .filter(|n| n.fract() == 0.0)
                    .ok_or_else(|| {
                        Exception::throw_type(&ctx, &format!("{what} expects an integer opCode"))
                    })? as i64;
                let data = if data.is_undefined() || data.is_null() {
                    Vec::new()
                } else if let Some(s) = data.as_string() {
                    s.to_string()?.into_bytes()
                } else if let Some(b) = ArrayBuffer::from_value(data.clone()) {
                    b.as_bytes().unwrap_or_default().to_vec()
                } else {
                    return Err(Exception::throw_type(
                        &ctx,
                        &format!("{what} expects data to be an ArrayBuffer, a string or null"),
                    ));
                };
                let to = sessions(&ctx, what, &presences)?;
                let sender = if sender.is_undefined() || sender.is_null() {
                    None
                } else {
                    Some(sender_presence(&ctx, what, &sender)?)
                };
                let reliable = if reliable.is_undefined() || reliable.is_null() {
                    true
                } else {
                    reliable.as_bool().ok_or_else(|| {
                        Exception::throw_type(
                            &ctx,
                            &format!("{what} expects reliable to be a boolean"),
                        )
                    })?
                };
                q.borrow_mut().push((
                    deferred,
                    Effect::Broadcast {
                        op_code,
                        data,
                        to,
                        sender,
                        reliable,
                    },
                ));
                Ok(())
            },
        )?,
    )?;
    let q = queue.clone();
    native.set(
        "kick",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, presences: Value<'js>| {
            let sessions = sessions(&ctx, "matchKick", &presences)?.unwrap_or_default();
            q.borrow_mut().push((false, Effect::Kick(sessions)));
            Ok::<(), rquickjs::Error>(())
        })?,
    )?;
    let q = queue.clone();
    native.set(
        "label",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, label: Value<'js>| {
            let Some(label) = label.as_string().map(|s| s.to_string()).transpose()? else {
                return Err(Exception::throw_type(
                    &ctx,
                    "matchLabelUpdate expects a label string",
                ));
            };
            check_label(&label).map_err(|e| Exception::throw_type(&ctx, &e))?;
            q.borrow_mut().push((false, Effect::Label(label)));
            Ok(())
        })?,
    )?;
    Ok(native)
}

/// A presence's session id, which is all the engine needs of a recipient.
fn session_of(ctx: &Ctx<'_>, what: &str, p: &Value<'_>) -> rquickjs::Result<Uuid> {
    let id = p
        .as_object()
        .and_then(|o| o.get::<_, String>("sessionId").ok())
        .and_then(|s| Uuid::parse_str(&s).ok());
    id.ok_or_else(|| {
        Exception::throw_type(
            ctx,
            &format!("{what} expects presences with a valid 'sessionId'"),
        )
    })
}

/// `null`/`undefined`: everyone; an array of presences: those sessions.
fn sessions(ctx: &Ctx<'_>, what: &str, v: &Value<'_>) -> rquickjs::Result<Option<Vec<Uuid>>> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    let Some(list) = v.as_array() else {
        return Err(Exception::throw_type(
            ctx,
            &format!("{what} expects an array of presences or null"),
        ));
    };
    let mut out = Vec::with_capacity(list.len());
    for item in list.iter::<Value>() {
        out.push(session_of(ctx, what, &item?)?);
    }
    Ok(Some(out))
}

fn sender_presence(ctx: &Ctx<'_>, what: &str, v: &Value<'_>) -> rquickjs::Result<Presence> {
    let session_id = session_of(ctx, what, v)?;
    let o = v.as_object().ok_or_else(|| {
        Exception::throw_type(ctx, &format!("{what} expects sender to be an object"))
    })?;
    let user_id = o
        .get::<_, String>("userId")
        .ok()
        .and_then(|s| Uuid::parse_str(&s).ok())
        .ok_or_else(|| {
            Exception::throw_type(
                ctx,
                &format!("{what} expects sender to have a valid 'userId'"),
            )
        })?;
    let username: String = o.get("username").unwrap_or_default();
    let node: String = o.get("node").unwrap_or_default();
    Ok(Presence::new(
        user_id,
        session_id,
        Arc::from(username),
        Arc::from(node),
    ))
}
