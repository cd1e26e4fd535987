//! An example native module: what a studio writes to add Rust RPCs and hooks
//! to its own Ludus binary (`src/main.rs`).

use std::collections::BTreeMap;

use ludus::matches::{
    Dispatcher, HandlerError, JoinDecision, MatchHandler, MatchInfo, MatchInit, MatchMessage,
    Presence, Step,
};
use ludus::{Code, NativeModule, RuntimeError, Server, ServerBuilder, Value};

/// `native_echo` answers its payload; `native_whoami` the caller's user id;
/// `native_fail` always fails with `INVALID_ARGUMENT`. A before hook on
/// `authenticatecustom` refuses custom ids starting with `banned-`, and
/// gives everyone else the username `native-<id>` when they picked none.
/// `native_duel` is an authoritative match for two players, started by the
/// `native_create_duel` RPC.
pub fn builder() -> ServerBuilder {
    Server::builder()
        .match_handler("native_duel", |_call| Duel::default())
        .rpc("native_create_duel", |call, payload| async move {
            let params = serde_json::from_str(&payload).unwrap_or(Value::Null);
            call.match_create("native_duel", params)
                .await
                .map_err(|e| RuntimeError::new(e.code, e.message))
        })
        .rpc("native_echo", |_call, payload| async move { Ok(payload) })
        .rpc("native_whoami", |call, _payload| async move {
            Ok(call.ctx.user_id.unwrap_or_default())
        })
        .rpc("native_fail", |_call, _payload| async move {
            Err(RuntimeError::new(Code::InvalidArgument, "native failure"))
        })
        .before("authenticatecustom", |_call, mut req| async move {
            let id = req["account"]["id"].as_str().unwrap_or_default().to_owned();
            if id.starts_with("banned-") {
                return Ok(None);
            }
            if req["username"].as_str().unwrap_or_default().is_empty() {
                req["username"] = Value::String(format!("native-{id}"));
            }
            Ok(Some(req))
        })
}

pub fn module() -> NativeModule {
    builder().into_module()
}

/// A two-player match at 10 ticks/s: op code 1 echoes to the sender, any
/// other op code goes to the opponent; it ends when both have left.
#[derive(Debug, Default)]
pub struct Duel {
    players: Vec<Presence>,
}

impl MatchHandler for Duel {
    fn init(&mut self, _info: &MatchInfo, params: &Value) -> Result<MatchInit, HandlerError> {
        let arena = params["arena"].as_str().unwrap_or("default");
        Ok(MatchInit {
            tick_rate: 10,
            label: serde_json::json!({ "kind": "duel", "arena": arena, "open": true }).to_string(),
        })
    }

    fn join_attempt(
        &mut self,
        _d: &mut Dispatcher,
        _tick: i64,
        _presence: &Presence,
        _metadata: &BTreeMap<String, String>,
    ) -> Result<JoinDecision, HandlerError> {
        Ok(if self.players.len() < 2 {
            JoinDecision::Accept
        } else {
            JoinDecision::Reject("the duel is full".into())
        })
    }

    fn join(
        &mut self,
        d: &mut Dispatcher,
        _tick: i64,
        ps: &[Presence],
    ) -> Result<Step, HandlerError> {
        self.players.extend_from_slice(ps);
        if self.players.len() == 2 {
            d.label_update(r#"{"kind":"duel","open":false}"#)?;
        }
        Ok(Step::Continue)
    }

    fn leave(
        &mut self,
        _d: &mut Dispatcher,
        _tick: i64,
        ps: &[Presence],
    ) -> Result<Step, HandlerError> {
        self.players.retain(|p| !ps.contains(p));
        Ok(if self.players.is_empty() {
            Step::End
        } else {
            Step::Continue
        })
    }

    fn tick(
        &mut self,
        d: &mut Dispatcher,
        _tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Step, HandlerError> {
        for m in messages {
            if m.op_code == 1 {
                d.broadcast(
                    1,
                    m.data.clone(),
                    Some(std::slice::from_ref(&m.sender)),
                    None,
                    true,
                );
            } else {
                let others: Vec<Presence> = self
                    .players
                    .iter()
                    .filter(|p| **p != m.sender)
                    .cloned()
                    .collect();
                d.broadcast(
                    m.op_code,
                    m.data.clone(),
                    Some(&others),
                    Some(&m.sender),
                    m.reliable,
                );
            }
        }
        Ok(Step::Continue)
    }

    fn terminate(
        &mut self,
        _d: &mut Dispatcher,
        _tick: i64,
        _grace: u32,
    ) -> Result<Step, HandlerError> {
        Ok(Step::End)
    }

    fn signal(
        &mut self,
        _d: &mut Dispatcher,
        _tick: i64,
        _data: &str,
    ) -> Result<(Step, String), HandlerError> {
        Ok((Step::Continue, self.players.len().to_string()))
    }
}
