//! The bus: the one place where anything crosses from this node to another.
//!
//! The hub delivers to its own sessions itself; what it hands the bus is
//! what other nodes must learn (this node's presence changes, sessions that
//! replace others under `session.single_socket`, disconnects of sessions
//! that are not here) and messages for sessions connected elsewhere. A
//! single node runs on [`LocalBus`], which has no one to tell; a cluster
//! runs on the Redis bus of [`crate::cluster`].

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::codec::Encoded;
use crate::error::{RtCode, RtError};
use crate::matches::MatchMessage;
use crate::matchmaker::TicketRecord;
use crate::outbound::CloseReason;
use crate::stream::Stream;
use crate::tracker::Presence;

/// Where messages and presence changes go when they leave this node. Every
/// method returns at once: a bus queues, it never blocks the caller.
pub trait Bus: Send + Sync + 'static {
    /// A session of this node joined `stream`, or its metadata changed.
    fn tracked(&self, stream: &Stream, presence: &Presence);
    /// A session of this node left `stream`.
    fn untracked(&self, stream: &Stream, session: Uuid);
    /// `message` for the sessions on `stream` that are connected to `node`
    /// (not this one), except `skip`.
    fn to_stream(&self, node: &str, stream: &Stream, skip: Option<Uuid>, message: &Arc<Encoded>);
    /// `message` for the sessions on `stream` on every other node (a
    /// stream whose presences stay on their node, [`Stream::is_node_local`]).
    fn to_stream_everywhere(&self, stream: &Stream, skip: Option<Uuid>, message: &Arc<Encoded>);
    /// `message` for `sessions`, all connected to `node` (not this one).
    fn to_sessions(&self, node: &str, sessions: &[Uuid], message: &Arc<Encoded>);
    /// `message` for `sessions`, wherever they are (their node is not
    /// known here): every other node delivers to those it has.
    fn to_sessions_everywhere(&self, sessions: &[Uuid], message: &Arc<Encoded>);
    /// `message` for the sessions following `user`'s status on every other
    /// node (follows are kept where the follower is connected).
    fn to_followers(&self, user: Uuid, message: &Arc<Encoded>);
    /// `message` for every session of every other node.
    fn to_everyone(&self, message: &Arc<Encoded>);
    /// `session` of `user` connected here; with `session.single_socket`
    /// every other node closes the user's sessions.
    fn session_added(&self, user: Uuid, session: Uuid);
    /// Asks whichever node holds `session` to close it.
    fn disconnect(&self, session: Uuid, reason: CloseReason);
    /// `users` were banned: every other node closes their sockets.
    fn users_banned(&self, users: &[Uuid]);
    /// Every game account was deleted (a console wipe): every other node
    /// closes all its sockets.
    fn accounts_wiped(&self);
    /// Asks `node` (which owns what the call names) and waits at most
    /// `timeout` for its answer.
    fn call(&self, node: &str, call: NodeCall, timeout: Duration) -> ReplyFuture;
    /// Tells `node` something that needs no answer.
    fn cast(&self, node: &str, cast: NodeCast);
    /// This node's matchmaker tickets that came or went, for every other
    /// node's pool.
    fn tickets(&self, added: Vec<TicketRecord>, removed: Vec<String>);
    /// Whether this node forms the matchmaker's groups now (one node of a
    /// cluster holds the role at a time).
    fn matchmaker_role(&self) -> bool;
    /// Whether there are other nodes at all (ids naming another node are
    /// simply unknown on a single node).
    fn clustered(&self) -> bool;
    /// The other nodes alive now (beating within their lease), by name.
    fn peers(&self) -> Vec<String> {
        Vec::new()
    }
    /// Something of the server's for every other node (a revocation); they
    /// hand it to the server as it came.
    fn broadcast(&self, payload: bytes::Bytes);
    /// The bus's health for the metrics; `None` on one node.
    fn health(&self) -> Option<BusHealth> {
        None
    }
}

/// How a cluster bus fares: connections to Redis lost (each followed by a
/// reconnect), and how long this node's own probes took to come back
/// through Redis (one per shard and heartbeat, timed on one clock).
#[derive(Debug, Clone)]
pub struct BusHealth {
    pub reconnects: u64,
    pub lag: ludus_core::metrics::HistogramSnapshot,
}

/// An answer from another node: a text and a flag, or an error to pass on.
pub type NodeReply = Result<(String, bool), RtError>;

/// The answer of [`Bus::call`].
pub type ReplyFuture = Pin<Box<dyn Future<Output = NodeReply> + Send>>;

/// A question for the node that owns a match.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeCall {
    /// A session elsewhere asks to join: `Ok((label, new))`.
    MatchJoin {
        match_id: Uuid,
        presence: Presence,
        metadata: BTreeMap<String, String>,
    },
    /// `nk.match_signal` from elsewhere: `Ok((result, _))`.
    MatchSignal { match_id: Uuid, data: String },
    /// The console of another node reads a match's presences, tick and
    /// state: `Ok((json, _))` (see `matches::MatchState::to_json`).
    MatchState { match_id: Uuid },
    /// The console of another node asks for this node's figures:
    /// `Ok((json, _))` (see [`crate::NodeFigures`]).
    Status,
    /// A party request (a JSON envelope) of a session elsewhere, for a party
    /// of the node: `Ok((reply envelope, true))` or `Ok((_, false))` when
    /// the request has no reply.
    Party {
        presence: Presence,
        envelope: String,
    },
}

/// A notice for another node.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeCast {
    /// Data a player elsewhere sent to a match of the node.
    MatchData {
        match_id: Uuid,
        message: MatchMessage,
    },
    /// Take one of your sessions off a stream, without announcing it (the
    /// match that kicked it announced it).
    Untrack { session: Uuid, stream: Stream },
    /// Put one of your sessions on a stream, without announcing it (the
    /// party it joined announces it).
    Track { stream: Stream, presence: Presence },
}

fn not_in_cluster(node: &str) -> RtError {
    RtError::new(
        RtCode::MatchNotFound,
        format!("node {node} is not in this cluster"),
    )
}

/// The single-node bus: nothing leaves the node.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalBus;

impl Bus for LocalBus {
    fn tracked(&self, _: &Stream, _: &Presence) {}
    fn untracked(&self, _: &Stream, _: Uuid) {}
    fn to_stream(&self, _: &str, _: &Stream, _: Option<Uuid>, _: &Arc<Encoded>) {}
    fn to_stream_everywhere(&self, _: &Stream, _: Option<Uuid>, _: &Arc<Encoded>) {}
    fn to_sessions(&self, _: &str, _: &[Uuid], _: &Arc<Encoded>) {}
    fn to_sessions_everywhere(&self, _: &[Uuid], _: &Arc<Encoded>) {}
    fn to_followers(&self, _: Uuid, _: &Arc<Encoded>) {}
    fn to_everyone(&self, _: &Arc<Encoded>) {}
    fn session_added(&self, _: Uuid, _: Uuid) {}
    fn disconnect(&self, _: Uuid, _: CloseReason) {}
    fn users_banned(&self, _: &[Uuid]) {}
    fn accounts_wiped(&self) {}
    fn call(&self, node: &str, _: NodeCall, _: Duration) -> ReplyFuture {
        let error = not_in_cluster(node);
        Box::pin(async move { Err(error) })
    }
    fn cast(&self, _: &str, _: NodeCast) {}
    fn tickets(&self, _: Vec<TicketRecord>, _: Vec<String>) {}
    fn matchmaker_role(&self) -> bool {
        true
    }
    fn clustered(&self) -> bool {
        false
    }
    fn broadcast(&self, _: bytes::Bytes) {}
}
