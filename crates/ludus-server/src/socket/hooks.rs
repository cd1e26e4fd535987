//! Socket messages through the module runtime's `register_rt_before|after`
//! hooks: `ludus_realtime::RtHooks` over `Runtime::rt_before|rt_after`, with
//! the session's context as `ctx`. Which messages have hooks is looked up
//! once at start-up (registrations never change afterwards), so a message
//! without hooks costs a set lookup, not an allocation.

use std::collections::HashSet;
use std::sync::Arc;

use ludus_realtime::hooks::MESSAGE_NAMES;
use ludus_realtime::{Before, HookFuture, RtHooks, SessionHandle};
use ludus_runtime::{CallContext, ExecutionMode, Runtime};
use serde_json::Value;

pub(super) struct SocketHooks {
    runtime: Arc<Runtime>,
    before: HashSet<&'static str>,
    after: HashSet<&'static str>,
}

impl SocketHooks {
    pub(super) fn new(runtime: Arc<Runtime>) -> SocketHooks {
        let with = |has: &dyn Fn(&str) -> bool| -> HashSet<&'static str> {
            MESSAGE_NAMES.iter().copied().filter(|n| has(n)).collect()
        };
        SocketHooks {
            before: with(&|n| runtime.has_rt_before(n)),
            after: with(&|n| runtime.has_rt_after(n)),
            runtime,
        }
    }
}

fn session_context(session: &SessionHandle, mode: ExecutionMode) -> CallContext {
    let info = session.info();
    let mut ctx = CallContext::new(mode);
    ctx.user_id = Some(info.user_id.to_string());
    ctx.username = info.username.to_string();
    ctx.vars = info.vars.clone();
    ctx.session_expiry = info.expiry;
    ctx.session_id = Some(info.id.to_string());
    ctx.lang = info.lang.to_string();
    ctx
}

impl RtHooks for SocketHooks {
    fn has_before(&self, name: &str) -> bool {
        self.before.contains(name)
    }

    fn has_after(&self, name: &str) -> bool {
        self.after.contains(name)
    }

    fn before(
        &self,
        session: &SessionHandle,
        name: &'static str,
        envelope: Value,
    ) -> HookFuture<Before> {
        let runtime = self.runtime.clone();
        let ctx = session_context(session, ExecutionMode::Before);
        Box::pin(async move {
            match runtime.rt_before(ctx, name, envelope).await {
                Ok(Some(v)) => Before::Continue(v),
                Ok(None) => Before::Reject,
                Err(e) => Before::Failed(e.message),
            }
        })
    }

    fn after(
        &self,
        session: &SessionHandle,
        name: &'static str,
        request: Value,
        response: Value,
    ) -> HookFuture<()> {
        let runtime = self.runtime.clone();
        let ctx = session_context(session, ExecutionMode::After);
        let session_id = session.id();
        Box::pin(async move {
            if let Err(e) = runtime.rt_after(ctx, name, response, request).await {
                tracing::warn!(%session_id, hook = name, error = %e.message, "realtime after hook failed");
            }
        })
    }
}
