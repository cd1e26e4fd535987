//! The bus: the one place where anything crosses from this node to another.
//!
//! The hub delivers to its own sessions itself; what it hands the bus is
//! what other nodes must learn (this node's presence changes, sessions that
//! replace others under `session.single_socket`, disconnects of sessions
//! that are not here) and messages for sessions connected elsewhere. A
//! single node runs on [`LocalBus`], which has no one to tell; a cluster
//! runs on the Redis bus of [`crate::cluster`].

use std::sync::Arc;

use uuid::Uuid;

use crate::codec::Encoded;
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
    /// `message` for `sessions`, all connected to `node` (not this one).
    fn to_sessions(&self, node: &str, sessions: &[Uuid], message: &Arc<Encoded>);
    /// `message` for the sessions following `user`'s status on every other
    /// node (follows are kept where the follower is connected).
    fn to_followers(&self, user: Uuid, message: &Arc<Encoded>);
    /// `session` of `user` connected here; with `session.single_socket`
    /// every other node closes the user's sessions.
    fn session_added(&self, user: Uuid, session: Uuid);
    /// Asks whichever node holds `session` to close it.
    fn disconnect(&self, session: Uuid, reason: CloseReason);
}

/// The single-node bus: nothing leaves the node.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalBus;

impl Bus for LocalBus {
    fn tracked(&self, _: &Stream, _: &Presence) {}
    fn untracked(&self, _: &Stream, _: Uuid) {}
    fn to_stream(&self, _: &str, _: &Stream, _: Option<Uuid>, _: &Arc<Encoded>) {}
    fn to_sessions(&self, _: &str, _: &[Uuid], _: &Arc<Encoded>) {}
    fn to_followers(&self, _: Uuid, _: &Arc<Encoded>) {}
    fn session_added(&self, _: Uuid, _: Uuid) {}
    fn disconnect(&self, _: Uuid, _: CloseReason) {}
}
