//! The socket's RPCs on the metrics page (Nakama's `WsRpc`): the module
//! runtime as the realtime layer sees it, with each `rpc` envelope counted
//! overall and under its id with transport `ws_rpc` and the gRPC code the
//! module failed with (the socket itself answers every failure as
//! `RUNTIME_FUNCTION_EXCEPTION`). Everything else goes straight to the
//! runtime.

use std::sync::Arc;
use std::time::Instant;

use ludus_core::Code;
use ludus_realtime::{Before, ModuleFuture, Modules, RtError, SessionHandle};
use ludus_runtime::Runtime;
use serde_json::Value;

use super::{ServerMetrics, Slot};

/// [`Runtime`] with its socket RPCs recorded in `metrics`.
pub(crate) struct MeteredModules {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) metrics: Arc<ServerMetrics>,
}

impl Modules for MeteredModules {
    fn rpc(
        &self,
        session: &SessionHandle,
        id: String,
        payload: String,
    ) -> ModuleFuture<'_, Result<String, RtError>> {
        let slot = self.metrics.socket_rpc_slot(&id);
        let recv = payload.len() as u64;
        if let Slot::Other = slot {
            // No module registered this id at start: counted overall only,
            // answered as the runtime answers it.
            let call = Modules::rpc(&*self.runtime, session, id, payload);
            return Box::pin(async move {
                let started = Instant::now();
                let answer = call.await;
                let (sent, code) = match &answer {
                    Ok(reply) => (reply.len() as u64, Code::Ok),
                    Err(_) => (0, Code::Unknown),
                };
                self.metrics
                    .record(slot, started.elapsed(), recv, sent, code);
                answer
            });
        }
        let call = self.runtime.session_rpc(session, id, payload);
        Box::pin(async move {
            let started = Instant::now();
            let answer = call.await;
            let (sent, code) = match &answer {
                Ok(reply) => (reply.len() as u64, Code::Ok),
                // A module may fail with code 0; it still failed.
                Err(e) if e.code == Code::Ok => (0, Code::Unknown),
                Err(e) => (0, e.code),
            };
            self.metrics
                .record(slot, started.elapsed(), recv, sent, code);
            answer.map_err(RtError::from)
        })
    }

    fn has_rt_before(&self, name: &str) -> bool {
        Modules::has_rt_before(&*self.runtime, name)
    }

    fn has_rt_after(&self, name: &str) -> bool {
        Modules::has_rt_after(&*self.runtime, name)
    }

    fn rt_before(
        &self,
        session: &SessionHandle,
        name: &'static str,
        envelope: Value,
    ) -> ModuleFuture<'_, Before> {
        Modules::rt_before(&*self.runtime, session, name, envelope)
    }

    fn rt_after(
        &self,
        session: &SessionHandle,
        name: &'static str,
        request: Value,
        response: Value,
    ) -> ModuleFuture<'_, ()> {
        Modules::rt_after(&*self.runtime, session, name, request, response)
    }

    fn matchmaker_matched(
        &self,
        entries: Value,
    ) -> ModuleFuture<'_, Result<Option<String>, String>> {
        Modules::matchmaker_matched(&*self.runtime, entries)
    }
}
