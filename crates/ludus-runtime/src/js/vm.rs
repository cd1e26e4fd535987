//! One JS context: a QuickJS runtime of its own (so its memory limit and
//! interrupt handler are its own) with the bundle evaluated and
//! `InitModule` run, and the callbacks it registered. Calls run one at a
//! time on the thread that made it; QuickJS values never leave it.
//!
//! The sandbox is what QuickJS has without its `std` and `os` modules: the
//! language and its built-in objects. No module loader is installed, so
//! `import` reaches nothing, and no function here reads a file or opens a
//! socket; `nk` is the only way out, and its server calls go through
//! `RuntimeServices`.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

use ludus_core::Code;
use rquickjs::context::EvalOptions;
use rquickjs::{Context, Ctx, Function, Object, Persistent, Runtime as Engine, Value};

use super::budget::Budget;
use super::initializer::{Callbacks, Matches, initializer};
use super::logger::root_logger;
use super::nk::nk;
use super::nk_common::to_js;
use super::shared::JsShared;
use crate::context::{CallContext, ExecutionMode};
use crate::error::{LoadError, RuntimeError};

/// What a call that failed without an exception value reports; QuickJS
/// fails that way when it runs out of memory while making the error (a
/// module's own `throw null` reads the same).
pub(super) const NOTHING_THROWN: &str =
    "js call failed with no error value (out of memory, or `throw null`)";

/// QuickJS's own stack limit; the thread has more (`pool.rs`).
pub(super) const STACK_LIMIT: usize = 1 << 20;

pub(super) struct JsVm {
    // Dropped before the engine: the context and the saved values hold it.
    callbacks: Callbacks,
    matches: Matches,
    logger: Persistent<Object<'static>>,
    nk: Persistent<Object<'static>>,
    context: Context,
    _engine: Engine,
    budget: Rc<Budget>,
    shared: Arc<JsShared>,
    /// Set when a call ran out of memory: the thread makes a new context.
    spoiled: bool,
}

/// The keys the module registered (`rpc/<id>`, `before/<api>`…).
pub(crate) type Keys = HashSet<String>;

impl JsVm {
    /// Evaluates the bundle and runs `InitModule`; a syntax error, a throw
    /// or a missing `InitModule` stops here with the file and line.
    pub(super) fn new(shared: Arc<JsShared>) -> Result<JsVm, LoadError> {
        let (engine, context, budget) = engine(&shared)?;
        let module = shared
            .entrypoint
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let registered = Rc::new(RefCell::new(Callbacks::new()));
        let matches = Rc::new(RefCell::new(Matches::new()));
        budget.start(shared.settings.js_call_timeout);
        let loaded = context.with(|ctx| -> Result<_, String> {
            let fail = |e: rquickjs::Error| describe(&ctx, e).1;
            let logger = root_logger(&ctx).map_err(fail)?;
            let nk = nk(&ctx, &shared).map_err(fail)?;
            evaluate(&ctx, &shared).map_err(fail)?;
            let init: Value = ctx.globals().get("InitModule").map_err(fail)?;
            let Some(init) = init.into_function() else {
                return Err(format!(
                    "{module} defines no global InitModule function; a Nakama bundle declares `function InitModule(ctx, logger, nk, initializer)`"
                ));
            };
            let jsctx = call_context(&ctx, &shared, &CallContext::new(ExecutionMode::RunOnce))
                .map_err(fail)?;
            let initializer = initializer(&ctx, &registered, &matches, &shared).map_err(fail)?;
            init.call::<_, ()>((jsctx, logger.clone(), nk.clone(), initializer))
                .map_err(fail)?;
            Ok((Persistent::save(&ctx, logger), Persistent::save(&ctx, nk)))
        });
        let stopped = budget.finish();
        let (logger, nk) = loaded.map_err(|message| LoadError::Module {
            module: module.clone(),
            message: stopped.map_or(message, |s| s.message()),
        })?;
        let callbacks = Rc::try_unwrap(registered)
            .map(RefCell::into_inner)
            .unwrap_or_else(|rc| std::mem::take(&mut *rc.borrow_mut()));
        let matches = matches.borrow().clone();
        Ok(JsVm {
            callbacks,
            matches,
            logger,
            nk,
            context,
            _engine: engine,
            budget,
            shared,
            spoiled: false,
        })
    }

    pub(super) fn keys(&self) -> Keys {
        self.callbacks.keys().cloned().collect()
    }

    /// The match handlers `InitModule` registered, by name.
    pub(super) fn matches(&self) -> &Matches {
        &self.matches
    }

    pub(super) fn spoiled(&self) -> bool {
        self.spoiled
    }

    /// Runs the callback under `key` with `ctx, logger, nk` and `args`.
    /// Answers what it returned: a string as is, `undefined` or `null` as
    /// `None`, anything else as JSON.
    pub(super) fn call(
        &mut self,
        key: &str,
        call: &CallContext,
        args: Vec<serde_json::Value>,
    ) -> Result<Option<serde_json::Value>, RuntimeError> {
        let Some(callback) = self.callbacks.get(key) else {
            return Err(RuntimeError::not_found(format!(
                "no js callback registered as {key}"
            )));
        };
        self.budget.start(self.shared.settings.js_call_timeout);
        let result = self.context.with(|ctx| {
            let run = || -> rquickjs::Result<Option<serde_json::Value>> {
                let f: Function = callback.clone().restore(&ctx)?;
                let logger = self.logger.clone().restore(&ctx)?;
                let nk = self.nk.clone().restore(&ctx)?;
                let mut values = rquickjs::function::Args::new(ctx.clone(), 3 + args.len());
                values.push_arg(call_context(&ctx, &self.shared, call)?)?;
                values.push_arg(logger)?;
                values.push_arg(nk)?;
                for a in &args {
                    values.push_arg(to_js(&ctx, a)?)?;
                }
                let out: Value = f.call_arg(values)?;
                from_js(&ctx, out)
            };
            run().map_err(|e| describe(&ctx, e))
        });
        let stopped = self.budget.finish();
        result.map_err(|(code, message)| {
            if let Some(stop) = stopped {
                return RuntimeError::new(Code::DeadlineExceeded, stop.message());
            }
            // QuickJS throws `out of memory`, or, when even that error
            // cannot be made, nothing at all (`NOTHING_THROWN`).
            if message.contains("out of memory") || message == NOTHING_THROWN {
                self.spoiled = true;
                return RuntimeError::new(
                    Code::ResourceExhausted,
                    format!(
                        "js call ran out of memory: its context may hold {} bytes (runtime.js_memory_limit_bytes)",
                        self.shared.settings.js_memory_limit_bytes
                    ),
                );
            }
            RuntimeError::new(code, message)
        })
    }
}

/// A QuickJS runtime of its own with its memory limit, its stack limit and
/// an interrupt handler that checks the returned budget, and a context on it.
pub(super) fn engine(shared: &JsShared) -> Result<(Engine, Context, Rc<Budget>), LoadError> {
    let setup = |e: rquickjs::Error| LoadError::Setup(format!("js engine: {e}"));
    let engine = Engine::new().map_err(setup)?;
    let limit = shared.settings.js_memory_limit_bytes;
    if limit > 0 {
        engine.set_memory_limit(limit);
    }
    engine.set_max_stack_size(STACK_LIMIT);
    let budget = Rc::new(Budget::new(shared.shutdown.clone()));
    let check = budget.clone();
    engine.set_interrupt_handler(Some(Box::new(move || check.should_stop())));
    let context = Context::full(&engine).map_err(setup)?;
    Ok((engine, context, budget))
}

/// Evaluates the bundle (sloppy mode, as Nakama's goja runs it).
pub(super) fn evaluate(ctx: &Ctx<'_>, shared: &JsShared) -> rquickjs::Result<()> {
    let mut options = EvalOptions::default();
    options.strict = false;
    ctx.eval_file_with_options::<(), _>(&shared.entrypoint, options)
}

/// The `ctx` object with Nakama's JS key names; keys a call does not have
/// are left out, as Nakama does.
pub(super) fn call_context<'js>(
    ctx: &Ctx<'js>,
    shared: &JsShared,
    call: &CallContext,
) -> rquickjs::Result<Value<'js>> {
    let mut o = serde_json::Map::new();
    o.insert("node".into(), shared.settings.node.clone().into());
    o.insert("version".into(), env!("CARGO_PKG_VERSION").into());
    o.insert(
        "env".into(),
        serde_json::to_value(&shared.settings.env).unwrap_or_default(),
    );
    o.insert("executionMode".into(), call.mode.as_str().into());
    let headers = call.headers.grouped();
    if !headers.is_empty() {
        o.insert(
            "headers".into(),
            serde_json::to_value(&*headers).unwrap_or_default(),
        );
    }
    if !call.query_params.is_empty() {
        o.insert(
            "queryParams".into(),
            serde_json::to_value(&call.query_params).unwrap_or_default(),
        );
    }
    if let Some(user) = &call.user_id {
        o.insert("userId".into(), user.clone().into());
        o.insert("username".into(), call.username.clone().into());
        o.insert(
            "vars".into(),
            serde_json::to_value(&call.vars).unwrap_or_default(),
        );
        o.insert("userSessionExp".into(), call.session_expiry.into());
    }
    if let Some(session) = &call.session_id {
        o.insert("sessionId".into(), session.clone().into());
    }
    if !call.lang.is_empty() {
        o.insert("lang".into(), call.lang.clone().into());
    }
    if !call.client_ip.is_empty() {
        o.insert("clientIp".into(), call.client_ip.clone().into());
    }
    if !call.client_port.is_empty() {
        o.insert("clientPort".into(), call.client_port.clone().into());
    }
    to_js(ctx, &serde_json::Value::Object(o))
}

/// A callback's result as a JSON value: strings as they are, `undefined`
/// and `null` as nothing, other values through `JSON.stringify`.
pub(super) fn from_js<'js>(
    ctx: &Ctx<'js>,
    v: Value<'js>,
) -> rquickjs::Result<Option<serde_json::Value>> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if let Some(s) = v.as_string() {
        return Ok(Some(serde_json::Value::String(s.to_string()?)));
    }
    let Some(text) = ctx.json_stringify(v)? else {
        return Ok(None);
    };
    Ok(serde_json::from_str(&text.to_string()?).ok())
}

/// What a failed call tells its caller, as Nakama maps a throw: an object
/// with a string `message` and/or an integer `code` gives those (the code
/// a gRPC code, 13 Internal when absent); an `Error` its message, with its
/// file and line in the log; anything else its text.
pub(super) fn describe(ctx: &Ctx<'_>, e: rquickjs::Error) -> (Code, String) {
    if !matches!(e, rquickjs::Error::Exception) {
        return (Code::Internal, format!("js runtime error: {e}"));
    }
    let thrown = ctx.catch();
    if let Some(exception) = thrown.as_exception() {
        let message = exception.message().unwrap_or_default();
        let code = exception
            .get::<_, Value>("code")
            .ok()
            .and_then(|c| integer(&c))
            .map_or(Code::Internal, Code::from_i32);
        let stack = exception.stack().unwrap_or_default();
        let (file, line) = super::logger::caller(&stack);
        if code == Code::Internal {
            tracing::error!(target: "ludus::js", file, line, error = %message, "js function threw an uncaught exception");
        }
        let name: String = exception.get("name").unwrap_or_else(|_| "Error".into());
        let text = if name == "Error" || message.is_empty() {
            if message.is_empty() { name } else { message }
        } else {
            format!("{name}: {message}")
        };
        return (code, text);
    }
    if let Some(object) = thrown.as_object() {
        let message = object
            .get::<_, Value>("message")
            .ok()
            .and_then(|m| m.as_string().and_then(|s| s.to_string().ok()));
        let code = object
            .get::<_, Value>("code")
            .ok()
            .and_then(|c| integer(&c));
        if message.is_some() || code.is_some() {
            let code = code.map_or(Code::Internal, Code::from_i32);
            let text = message.unwrap_or_else(|| {
                ctx.json_stringify(thrown.clone())
                    .ok()
                    .flatten()
                    .and_then(|s| s.to_string().ok())
                    .unwrap_or_default()
            });
            return (code, text);
        }
    }
    if thrown.is_null() || thrown.is_undefined() {
        return (Code::Internal, NOTHING_THROWN.to_owned());
    }
    let text = ctx
        .json_stringify(thrown.clone())
        .ok()
        .flatten()
        .and_then(|s| s.to_string().ok())
        .map(|t| t.trim_matches('"').to_owned())
        .unwrap_or_else(|| "js function threw a value that is not an error".to_owned());
    (Code::Internal, text)
}

/// A JS number that is a whole number in `i32`'s range.
fn integer(v: &Value<'_>) -> Option<i32> {
    if let Some(i) = v.as_int() {
        return Some(i);
    }
    let f = v.as_float()?;
    (f.fract() == 0.0 && f.abs() <= i32::MAX as f64).then_some(f as i32)
}
