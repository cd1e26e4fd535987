//! The socket's `rpc` envelope, run by the module runtime: the same
//! `Runtime::rpc` that `/v2/rpc/{id}` calls, with the session's context
//! (user, token variables and expiry, session id, language).

use std::sync::Arc;

use ludus_realtime::{RpcFuture, RpcHandler, RtCode, RtError, SessionHandle};
use ludus_runtime::{CallContext, ExecutionMode, Runtime};

pub(super) struct SocketRpc(pub Arc<Runtime>);

impl RpcHandler for SocketRpc {
    fn rpc(&self, session: &SessionHandle, id: String, payload: String) -> RpcFuture {
        let runtime = self.0.clone();
        let info = session.info();
        let mut ctx = CallContext::new(ExecutionMode::Rpc);
        ctx.user_id = Some(info.user_id.to_string());
        ctx.username = info.username.to_string();
        ctx.vars = info.vars.clone();
        ctx.session_expiry = info.expiry;
        ctx.session_id = Some(info.id.to_string());
        ctx.lang = info.lang.to_string();
        Box::pin(async move {
            if !runtime.has_rpc(&id) {
                return Err(RtError::new(
                    RtCode::RuntimeFunctionNotFound,
                    format!("rpc function {id:?} not found: no module registers it"),
                ));
            }
            runtime
                .rpc(ctx, &id, payload)
                .await
                .map_err(|e| RtError::new(RtCode::RuntimeFunctionException, e.message))
        })
    }
}
