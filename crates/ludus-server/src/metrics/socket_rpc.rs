//! The socket's RPCs on the metrics page (Nakama's `WsRpc`): the module
//! runtime as the realtime layer sees it, with each `rpc` envelope counted
//! overall and under its id in the same `Rpc_*` families as
//! `/v2/rpc/{id}`. Everything else goes straight to the runtime.

use std::sync::Arc;
use std::time::Instant;

use ludus_realtime::{Before, ModuleFuture, Modules, RtError, SessionHandle};
use ludus_runtime::Runtime;
use serde_json::Value;

use super::ServerMetrics;

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
        let slot = self.metrics.rpc_slot(&id);
        let recv = payload.len() as u64;
        let call = Modules::rpc(&*self.runtime, session, id, payload);
        Box::pin(async move {
            let started = Instant::now();
            let answer = call.await;
            let sent = answer.as_ref().map_or(0, |reply| reply.len() as u64);
            self.metrics
                .record(slot, started.elapsed(), recv, sent, answer.is_err());
            answer
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
