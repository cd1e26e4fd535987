//! The session hub: this node's sessions, the presences on streams and
//! delivery to them, behind one type with private parts.
//!
//! Every feature of the realtime layer (status, chat, notifications,
//! parties, matches, the matchmaker) is a type of its own that holds an
//! `Arc<Hub>`; none reaches the session registry, the presence tracker or
//! the router any other way, so the cluster has one place to route through.
//! The hub keeps the books and delivers; what a join or leave looks like on
//! the wire is each feature's business ([`Announce`] carries the change to
//! whoever announces it).

use std::sync::Arc;

use ludus_proto::realtime::Envelope;
use uuid::Uuid;

use crate::bus::{Bus, LocalBus};
use crate::outbound::CloseReason;
use crate::registry::{SessionHandle, SessionRegistry};
use crate::router::StreamRouter;
use crate::stream::{Stream, StreamMode};
use crate::tracker::{Presence, PresenceTracker, TrackOutcome};

/// The sessions and presences of one node.
pub struct Hub {
    node: Arc<str>,
    queue_size: usize,
    single_socket: bool,
    sessions: Arc<SessionRegistry>,
    tracker: Arc<PresenceTracker>,
    router: StreamRouter,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("node", &self.node)
            .field("sessions", &self.sessions.count())
            .finish_non_exhaustive()
    }
}

/// A presence change not announced yet: the feature that made it decides
/// when its event goes out (a join's reply goes to the joiner first).
#[must_use = "announce the change, or say why it needs no event"]
#[derive(Debug)]
pub(crate) struct Announce {
    pub(crate) stream: Stream,
    outcome: TrackOutcome,
    presence: Presence,
}

impl Announce {
    /// Whether the session is new on the stream.
    pub(crate) fn is_new(&self) -> bool {
        self.outcome == TrackOutcome::Joined
    }

    pub(crate) fn outcome(&self) -> &TrackOutcome {
        &self.outcome
    }

    /// The joins and leaves the change calls for: a join, an update (the
    /// new presence joins, the old one leaves, as Nakama announces it), or
    /// nothing.
    pub(crate) fn changes(&self) -> (Vec<Presence>, Vec<Presence>) {
        match &self.outcome {
            TrackOutcome::Joined => (vec![self.presence.clone()], Vec::new()),
            TrackOutcome::Updated(old) => (vec![self.presence.clone()], vec![old.clone()]),
            TrackOutcome::Unchanged => (Vec::new(), Vec::new()),
        }
    }
}

/// The presences of `ps` that may be announced: hidden ones never are.
pub(crate) fn visible(ps: &[Presence]) -> Vec<Presence> {
    ps.iter().filter(|p| !p.meta.hidden).cloned().collect()
}

impl Hub {
    /// A hub on the in-process bus (one node).
    pub fn new(node: &str, queue_size: usize, single_socket: bool) -> Hub {
        Hub::with_bus(node, queue_size, single_socket, Arc::new(LocalBus))
    }

    /// A hub whose presence changes and messages for other nodes go through
    /// `bus` (a cluster node).
    pub fn with_bus(node: &str, queue_size: usize, single_socket: bool, bus: Arc<dyn Bus>) -> Hub {
        let node: Arc<str> = Arc::from(node);
        let sessions = Arc::new(SessionRegistry::new());
        let tracker = Arc::new(PresenceTracker::new());
        Hub {
            router: StreamRouter::new(node.clone(), tracker.clone(), sessions.clone(), bus),
            node,
            queue_size,
            single_socket,
            sessions,
            tracker,
        }
    }

    /// This node's name (`name`).
    pub fn node(&self) -> &Arc<str> {
        &self.node
    }

    /// `session` as a presence on this node, with default metadata.
    pub fn presence_of(&self, session: &SessionHandle) -> Presence {
        let mut p = Presence::new(
            session.user_id(),
            session.id(),
            session.username_shared(),
            self.node.clone(),
        );
        p.meta.format = session.format();
        p
    }

    // --- sessions -----------------------------------------------------------

    /// Registers a new session; with `session.single_socket` the user's
    /// older sessions are told and closed.
    pub(crate) fn add_session(&self, session: SessionHandle) {
        let (user, id) = (session.user_id(), session.id());
        self.sessions.add(session, self.single_socket);
        if self.single_socket {
            self.router.bus().session_added(user, id);
        }
    }

    /// A new session's handle with this node's queue size.
    pub(crate) fn new_session(
        &self,
        id: Uuid,
        user: Uuid,
        username: &str,
        format: crate::Format,
    ) -> SessionHandle {
        SessionHandle::new(id, user, username, format, self.queue_size)
    }

    pub(crate) fn remove_session(&self, id: Uuid) -> bool {
        self.sessions.remove(id)
    }

    pub fn session(&self, id: Uuid) -> Option<SessionHandle> {
        self.sessions.get(id)
    }

    /// The sessions of one user on this node.
    pub fn sessions_of(&self, user: Uuid) -> Vec<SessionHandle> {
        self.sessions.sessions_of(user)
    }

    /// Sessions connected to this node.
    pub fn session_count(&self) -> usize {
        self.sessions.count()
    }

    /// Presences on every stream this node tracks (the console's status,
    /// the `presences` gauge).
    pub fn presence_count(&self) -> usize {
        self.tracker.total()
    }

    /// Asks one session to close, on whichever node it is; false when it
    /// is not here (other nodes are asked).
    pub fn disconnect(&self, id: Uuid, reason: CloseReason) -> bool {
        let here = self.sessions.disconnect(id, reason);
        if !here {
            self.router.bus().disconnect(id, reason);
        }
        here
    }

    /// Closes every socket of banned users, on every node, each told first
    /// with Nakama's notice -8.
    pub fn close_banned(&self, users: &[Uuid]) {
        self.remote_banned(users);
        if !users.is_empty() {
            self.router.bus().users_banned(users);
        }
    }

    /// Asks every session of this node to close (shutdown).
    pub fn disconnect_all(&self, reason: CloseReason) {
        self.sessions.disconnect_all(reason)
    }

    /// Every game account was deleted (a console wipe): every socket
    /// closes, on every node, since each belonged to a deleted account.
    pub fn close_wiped_accounts(&self) {
        self.sessions.disconnect_all(CloseReason::Disconnect);
        self.router.bus().accounts_wiped();
    }

    // --- presences ----------------------------------------------------------

    /// Puts a presence on a stream (or updates its metadata) and hands back
    /// the change to announce.
    pub(crate) fn track(&self, stream: &Stream, presence: Presence) -> Announce {
        let outcome = self.tracker.track(stream, presence.clone());
        if outcome != TrackOutcome::Unchanged && !stream.is_node_local() {
            self.router.bus().tracked(stream, &presence);
        }
        Announce {
            stream: stream.clone(),
            outcome,
            presence,
        }
    }

    /// Takes a session off a stream; the presence it had, to announce.
    pub(crate) fn untrack(&self, session: Uuid, stream: &Stream) -> Option<Presence> {
        let gone = self.tracker.untrack(session, stream)?;
        if !stream.is_node_local() {
            self.router.bus().untracked(stream, session);
        }
        Some(gone)
    }

    /// Takes a session off a stream wherever it is connected (a match that
    /// kicks or ends): here at once; on another node by asking that node,
    /// quietly, while the presence it had is answered now.
    pub(crate) fn untrack_anywhere(&self, session: Uuid, stream: &Stream) -> Option<Presence> {
        let p = self.tracker.get(session, stream)?;
        if *p.node == *self.node {
            return self.untrack(session, stream);
        }
        self.router.bus().cast(
            &p.node,
            crate::bus::NodeCast::Untrack {
                session,
                stream: stream.clone(),
            },
        );
        Some(p)
    }

    /// Has another node track one of its sessions on a stream of a feature
    /// that lives here (a party), quietly: the feature announces it.
    pub(crate) fn track_elsewhere(&self, stream: &Stream, presence: Presence) {
        let node = presence.node.clone();
        self.router.bus().cast(
            &node,
            crate::bus::NodeCast::Track {
                stream: stream.clone(),
                presence,
            },
        );
    }

    /// Asks another node and waits for its answer.
    pub(crate) async fn call_node(
        &self,
        node: &str,
        call: crate::bus::NodeCall,
        timeout: std::time::Duration,
    ) -> crate::bus::NodeReply {
        self.router.bus().call(node, call, timeout).await
    }

    /// Whether other nodes may own what an id names (a cluster).
    /// The other nodes alive now.
    pub(crate) fn peers(&self) -> Vec<String> {
        self.router.bus().peers()
    }

    pub(crate) fn clustered(&self) -> bool {
        self.router.bus().clustered()
    }

    /// Whether this node forms the matchmaker's groups now.
    pub(crate) fn matchmaker_role(&self) -> bool {
        self.router.bus().matchmaker_role()
    }

    /// This node's ticket changes, for the other nodes' pools.
    pub(crate) fn tickets_changed(
        &self,
        added: Vec<crate::matchmaker::TicketRecord>,
        removed: Vec<String>,
    ) {
        self.router.bus().tickets(added, removed)
    }

    /// Tells another node something.
    pub(crate) fn cast_node(&self, node: &str, cast: crate::bus::NodeCast) {
        self.router.bus().cast(node, cast)
    }

    /// Takes a session off every stream (it disconnected).
    pub(crate) fn untrack_all(&self, session: Uuid) -> Vec<(Stream, Presence)> {
        let gone = self.tracker.untrack_all(session);
        for (stream, _) in gone.iter().filter(|(s, _)| !s.is_node_local()) {
            self.router.bus().untracked(stream, session);
        }
        gone
    }

    /// Presences on a stream; hidden ones only when asked.
    pub fn presences(&self, stream: &Stream, include_hidden: bool) -> Vec<Presence> {
        self.tracker.list(stream, include_hidden)
    }

    /// A session's presence on a stream.
    pub fn presence(&self, session: Uuid, stream: &Stream) -> Option<Presence> {
        self.tracker.get(session, stream)
    }

    /// Session ids on a stream, hidden included: where its messages go.
    pub fn session_ids(&self, stream: &Stream) -> Vec<Uuid> {
        self.tracker.session_ids(stream)
    }

    /// Presences on a stream, hidden included.
    pub fn count(&self, stream: &Stream) -> usize {
        self.tracker.count(stream)
    }

    /// The cluster bus's health; `None` on one node.
    pub fn bus_health(&self) -> Option<crate::bus::BusHealth> {
        self.router.bus().health()
    }

    pub fn contains(&self, stream: &Stream, session: Uuid) -> bool {
        self.tracker.contains(stream, session)
    }

    /// Up to `limit` streams of one mode, with their presence counts.
    pub fn streams_of_mode(&self, mode: StreamMode, limit: usize) -> Vec<(Stream, usize)> {
        self.tracker.streams_of_mode(mode, limit)
    }

    // --- delivery -----------------------------------------------------------

    /// Sends to every presence on `stream` (hidden ones too), except `skip`.
    pub fn send_to_stream(&self, stream: &Stream, envelope: Envelope, skip: Option<Uuid>) {
        self.router.send_to_stream(stream, envelope, skip)
    }

    /// Sends a status event about `user` to `followers` here and to its
    /// followers on other nodes.
    pub(crate) fn send_to_followers(&self, user: Uuid, followers: &[Uuid], envelope: Envelope) {
        self.router.send_to_followers(user, followers, envelope)
    }

    /// Sends to each of `sessions`, wherever it is connected.
    pub fn send_to_sessions(&self, sessions: &[Uuid], envelope: Envelope) {
        self.router.send_to_sessions(sessions, envelope)
    }

    /// Sends to every session of every node, encoded once per format.
    pub fn send_to_everyone(&self, envelope: Envelope) {
        let message = Arc::new(crate::codec::Encoded::new(envelope));
        self.remote_to_everyone(&message);
        self.router.bus().to_everyone(&message);
    }
}

/// What the cluster bus does to a hub: another node's presences and
/// messages, applied here without being sent back out.
impl Hub {
    /// Another node's session joined a stream or changed its metadata.
    /// Answers whether it is new on the stream.
    pub(crate) fn remote_tracked(&self, stream: &Stream, presence: Presence) -> bool {
        self.tracker.track(stream, presence) == TrackOutcome::Joined
    }

    /// Another node's session left a stream.
    pub(crate) fn remote_untracked(&self, session: Uuid, stream: &Stream) -> Option<Presence> {
        self.tracker.untrack(session, stream)
    }

    /// Replaces what is known of another node's presences on the streams
    /// `which` accepts; answers what changed.
    pub(crate) fn remote_replace(
        &self,
        node: &str,
        which: impl Fn(&Stream) -> bool,
        now: Vec<(Stream, Presence)>,
    ) -> crate::tracker::Replaced {
        self.tracker.replace_node(node, which, now)
    }

    /// This node's own presences on the streams `which` accepts (what it
    /// re-announces after the bus reconnects).
    pub(crate) fn own_presences(&self, which: impl Fn(&Stream) -> bool) -> Vec<(Stream, Presence)> {
        self.tracker
            .of_node(&self.node, |s| !s.is_node_local() && which(s))
    }

    /// Forgets every presence of a node that is gone; answers them.
    pub(crate) fn remote_node_gone(&self, node: &str) -> Vec<(Stream, Presence)> {
        self.tracker.replace_node(node, |_| true, Vec::new()).gone
    }

    /// A message another node sent for `stream`'s sessions here.
    pub(crate) fn remote_to_stream(
        &self,
        stream: &Stream,
        skip: Option<Uuid>,
        message: &Arc<crate::codec::Encoded>,
    ) {
        self.router.deliver_stream_here(stream, skip, message)
    }

    /// A message another node sent for sessions here.
    /// A message for every session here (another node's
    /// [`Hub::send_to_everyone`]); a full queue closes only its session.
    pub(crate) fn remote_to_everyone(&self, message: &Arc<crate::codec::Encoded>) {
        self.sessions.send_to_all(message)
    }

    pub(crate) fn remote_to_sessions(
        &self,
        sessions: &[Uuid],
        message: &Arc<crate::codec::Encoded>,
    ) {
        self.router.deliver_local(sessions, message)
    }

    /// Another node took a session of `user` under `session.single_socket`:
    /// the user's sessions here are told and closed.
    pub(crate) fn remote_session_added(&self, user: Uuid) {
        if self.single_socket {
            self.sessions.replace_user(user);
        }
    }

    /// Users were banned (here or on another node): their sockets here close.
    pub(crate) fn remote_banned(&self, users: &[Uuid]) {
        for &user in users {
            self.sessions.close_banned(user);
        }
    }

    /// Another node deleted every game account: every socket here closes.
    pub(crate) fn remote_accounts_wiped(&self) {
        self.sessions.disconnect_all(CloseReason::Disconnect);
    }

    /// Another node asks a session to close (it is not there).
    pub(crate) fn remote_disconnect(&self, session: Uuid, reason: CloseReason) {
        self.sessions.disconnect(session, reason);
    }
}

/// A server push (no `cid`).
pub(crate) fn push(message: ludus_proto::realtime::envelope::Message) -> Envelope {
    Envelope {
        cid: String::new(),
        message: Some(message),
    }
}
