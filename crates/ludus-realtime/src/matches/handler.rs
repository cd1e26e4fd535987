//! What an authoritative match's logic looks like from the engine: the
//! [`MatchHandler`] trait with Nakama's seven callbacks, the values they
//! receive, and the [`Dispatcher`] they act through.
//!
//! Lua match modules (in `ludus-runtime`) and native Rust handlers both
//! implement [`MatchHandler`]; the engine (`task.rs`) never knows which.

use std::collections::BTreeMap;

use serde_json::Value;
use uuid::Uuid;

use crate::tracker::Presence;

/// Longest match label, in bytes (Nakama's limit).
pub const MAX_LABEL_BYTES: usize = 2048;
/// Tick rates a match may ask for, per second.
pub const TICK_RATES: std::ops::RangeInclusive<u32> = 1..=60;

/// One `match_data_send` from a player, delivered to `match_loop`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchMessage {
    pub sender: Presence,
    pub op_code: i64,
    pub data: Vec<u8>,
    pub reliable: bool,
    /// When the server received it, UNIX milliseconds.
    pub receive_time_ms: i64,
}

/// What `match_init` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchInit {
    /// Ticks per second, 1 to 60.
    pub tick_rate: u32,
    /// Listed and searchable; at most [`MAX_LABEL_BYTES`].
    pub label: String,
}

/// Who a match is, for `match_init` and the `ctx` of every callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchInfo {
    /// `<uuid>.<node>`.
    pub id: String,
    pub node: String,
    /// The module (Lua) or registered name (native) that runs it.
    pub handler_name: String,
}

/// After a callback: keep going, or end the match (Nakama: a nil state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Continue,
    End,
}

/// The answer of `match_join_attempt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinDecision {
    Accept,
    /// Refused; the reason reaches the client.
    Reject(String),
    /// The handler returned a nil state: the match ends and the join fails.
    End,
}

/// A handler failure: ends that match only, is logged, and reaches its
/// players.
pub type HandlerError = String;

/// An authoritative match's logic: Nakama's seven callbacks. Each runs on the
/// match's own task, one at a time, so a handler keeps its state in `self`
/// without locks. Every callback but `init` gets the [`Dispatcher`] and the
/// current tick.
pub trait MatchHandler: Send + 'static {
    /// Sets the tick rate and label; `params` come from `match_create`.
    fn init(&mut self, info: &MatchInfo, params: &Value) -> Result<MatchInit, HandlerError>;

    /// Accepts or refuses a player; `metadata` is the client's join metadata.
    fn join_attempt(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        presence: &Presence,
        metadata: &BTreeMap<String, String>,
    ) -> Result<JoinDecision, HandlerError>;

    /// Players who were accepted and are now in the match.
    fn join(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        presences: &[Presence],
    ) -> Result<Step, HandlerError>;

    /// Players who left, disconnected or were kicked.
    fn leave(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        presences: &[Presence],
    ) -> Result<Step, HandlerError>;

    /// One tick with the messages received since the last one (Nakama's
    /// `match_loop`).
    fn tick(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Step, HandlerError>;

    /// The server is stopping: the match has `grace_seconds` more.
    fn terminate(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        grace_seconds: u32,
    ) -> Result<Step, HandlerError>;

    /// The match's state as JSON text, for the console's `GetMatchState`;
    /// empty when the handler has no such view of its state.
    fn state_json(&mut self) -> Result<String, HandlerError> {
        Ok(String::new())
    }

    /// `match_signal` from a module: answers a string to the caller.
    fn signal(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        data: &str,
    ) -> Result<(Step, String), HandlerError>;
}

/// Something a handler asked the dispatcher to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Broadcast {
        op_code: i64,
        data: Vec<u8>,
        /// `None`: every player in the match.
        to: Option<Vec<Uuid>>,
        sender: Option<Presence>,
        reliable: bool,
    },
    Kick(Vec<Uuid>),
    Label(String),
}

/// How a handler acts on its match. Effects apply when the callback returns,
/// in order; deferred broadcasts go out at the end of the tick.
#[derive(Debug, Default)]
pub struct Dispatcher {
    pub(crate) now: Vec<Effect>,
    pub(crate) deferred: Vec<Effect>,
    pub(crate) deferred_limit: usize,
}

impl Dispatcher {
    pub(crate) fn new(deferred_limit: usize) -> Dispatcher {
        Dispatcher {
            now: Vec::new(),
            deferred: Vec::new(),
            deferred_limit,
        }
    }

    /// Sends `match_data` to `to` (players in the match; `None` for all),
    /// from `sender` (`None`: from the server).
    pub fn broadcast(
        &mut self,
        op_code: i64,
        data: impl Into<Vec<u8>>,
        to: Option<&[Presence]>,
        sender: Option<&Presence>,
        reliable: bool,
    ) {
        self.now
            .push(broadcast(op_code, data.into(), to, sender, reliable));
    }

    /// As [`Dispatcher::broadcast`], sent at the end of the current tick.
    pub fn broadcast_deferred(
        &mut self,
        op_code: i64,
        data: impl Into<Vec<u8>>,
        to: Option<&[Presence]>,
        sender: Option<&Presence>,
        reliable: bool,
    ) -> Result<(), HandlerError> {
        self.push_deferred(broadcast(op_code, data.into(), to, sender, reliable))
    }

    /// Removes players from the match; `leave` follows for each.
    pub fn kick(&mut self, presences: &[Presence]) {
        self.now.push(Effect::Kick(
            presences.iter().map(|p| p.session_id).collect(),
        ));
    }

    /// Changes the label that listings show and search.
    pub fn label_update(&mut self, label: &str) -> Result<(), HandlerError> {
        check_label(label)?;
        self.now.push(Effect::Label(label.to_owned()));
        Ok(())
    }

    /// Queues an effect built elsewhere: handler adapters (the Lua one)
    /// collect effects on their own and replay them here.
    pub fn push(&mut self, effect: Effect) {
        self.now.push(effect);
    }

    /// As [`Dispatcher::push`], for the end of the tick; bounded by
    /// `match.deferred_queue_size`.
    pub fn push_deferred(&mut self, effect: Effect) -> Result<(), HandlerError> {
        if self.deferred.len() >= self.deferred_limit {
            return Err(format!(
                "too many deferred broadcasts in one tick (limit {}, match.deferred_queue_size)",
                self.deferred_limit
            ));
        }
        self.deferred.push(effect);
        Ok(())
    }

    pub(crate) fn take_now(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.now)
    }

    pub(crate) fn take_deferred(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.deferred)
    }
}

fn broadcast(
    op_code: i64,
    data: Vec<u8>,
    to: Option<&[Presence]>,
    sender: Option<&Presence>,
    reliable: bool,
) -> Effect {
    Effect::Broadcast {
        op_code,
        data,
        to: to.map(|ps| ps.iter().map(|p| p.session_id).collect()),
        sender: sender.cloned(),
        reliable,
    }
}

/// A label's size limit, with the error handlers see.
pub fn check_label(label: &str) -> Result<(), HandlerError> {
    if label.len() > MAX_LABEL_BYTES {
        return Err(format!(
            "match label too long: {} bytes, at most {MAX_LABEL_BYTES}",
            label.len()
        ));
    }
    Ok(())
}

/// Checks what `match_init` returned.
pub fn check_init(init: &MatchInit) -> Result<(), HandlerError> {
    if !TICK_RATES.contains(&init.tick_rate) {
        return Err(format!(
            "match_init returned tick rate {}, it must be between 1 and 60",
            init.tick_rate
        ));
    }
    check_label(&init.label)
}
