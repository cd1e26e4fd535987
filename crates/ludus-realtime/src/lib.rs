//! The Ludus realtime layer: everything behind the `/ws` socket that is not
//! transport.
//!
//! - [`SessionRegistry`]: the sessions of this node, by id and by user.
//! - [`Outbound`]: each session's bounded outgoing queue.
//! - [`PresenceTracker`] and [`StreamRouter`]: presences on streams
//!   `(mode, subject, subcontext, label)` and delivery to them, through a
//!   [`Bus`] ([`LocalBus`] on one node).
//! - [`codec`]: envelopes to and from JSON text and protobuf binary.
//! - [`pipeline`]: what each incoming envelope does.
//! - [`status`]: following and online status.
//! - [`chat`]: chat channels (rooms, direct messages) and their messages.
//! - [`notify`]: notifications to users, live and stored.
//! - [`party`]: parties, their leaders, join requests and data.
//! - [`module_streams`]: streams as the server's modules drive them.
//! - [`modules`]: the one seam to the server's module runtime ([`Modules`]:
//!   RPCs, before and after hooks, the matchmaker's matched hook); [`hooks`]
//!   names the messages hooks apply to.
//! - [`query`]: the query language of match listing and the matchmaker
//!   (it lives in `ludus-core`, which storage indexes also query with; re-exported here).
//! - [`matchmaker`] and [`matchmaker_socket`]: tickets, grouping, and the
//!   `matchmaker_matched` push.
//!
//! [`Realtime`] ties them together. It knows nothing of HTTP or SQL: the
//! WebSocket transport lives in `ludus-server`, persistence behind
//! `ludus_core::Store`.

mod bus;
pub mod chat;
pub mod codec;
mod error;
pub mod hooks;
pub mod liveness;
pub mod matches;
pub mod matchmaker;
mod matchmaker_socket;
mod module_streams;
mod modules;
pub mod notify;
mod outbound;
mod party;
mod pipeline;
pub use ludus_core::query;
mod registry;
mod router;
mod status;
mod stream;
mod tracker;

use std::collections::BTreeMap;
use std::sync::Arc;

use ludus_core::Store;
use uuid::Uuid;

pub use bus::{Bus, LocalBus};
pub use codec::{Encoded, Format};
pub use error::{RtCode, RtError};
pub use hooks::{Before, HookFuture};
pub use matches::{MatchConfig, MatchRegistry};
pub use matchmaker::{Matchmaker, MatchmakerConfig, MatchmakerPresence, TicketRequest};
pub use modules::{ModuleFuture, Modules, NoModules};
pub use outbound::{CloseReason, Next, Outbound};
pub use party::{PartyInfo, PartyRegistry, PartySettings};
pub use pipeline::Flow;
pub use registry::{SessionHandle, SessionRegistry};
pub use router::StreamRouter;
pub use status::StatusRegistry;
pub use stream::{Stream, StreamMode};
pub use tracker::{Presence, PresenceMeta, PresenceTracker, TrackOutcome};

/// Settings of the realtime layer (from `socket.*` and `session.*`).
#[derive(Debug, Clone)]
pub struct RealtimeConfig {
    /// Most frames queued for one socket before it is closed.
    pub outgoing_queue_size: usize,
    /// A new socket closes the user's older ones.
    pub single_socket: bool,
    /// This node's name (`name`): the suffix of authoritative match and
    /// party ids, `<uuid>.<node>`.
    pub node: String,
    /// Party limits (`party.*`).
    pub party: PartySettings,
    /// `session.single_party`: a session that joins a party leaves its
    /// other parties (its pending requests stay).
    pub single_party: bool,
    /// `session.encryption_key`: signs the matchmaker's match tokens.
    pub encryption_key: String,
    /// `matchmaker.*`.
    pub matchmaker: MatchmakerConfig,
    /// The match engine's settings (`match.*`).
    pub matches: MatchConfig,
    /// Where authoritative matches run; `None`: the current runtime.
    pub match_spawner: Option<tokio::runtime::Handle>,
}

impl Default for RealtimeConfig {
    fn default() -> Self {
        RealtimeConfig {
            outgoing_queue_size: 64,
            single_socket: false,
            node: "ludus".into(),
            party: PartySettings::default(),
            single_party: false,
            encryption_key: "defaultencryptionkey".into(),
            matchmaker: MatchmakerConfig::default(),
            matches: MatchConfig::default(),
            match_spawner: None,
        }
    }
}

/// Who is connecting: from the verified session token and query.
#[derive(Debug, Clone)]
pub struct Connect {
    pub session_id: Uuid,
    pub user_id: Uuid,
    pub username: String,
    pub format: Format,
    /// `?status=true`: appear online to followers from the start.
    pub status: bool,
    /// The session token's variables and expiry, and `?lang=`, for modules.
    pub vars: BTreeMap<String, String>,
    pub expiry: i64,
    pub lang: String,
}

/// A presence change not announced yet ([`Realtime::track_quietly`]).
#[must_use = "announce the change with emit"]
pub(crate) struct Announce {
    stream: Stream,
    outcome: TrackOutcome,
    presence: Presence,
}

impl Announce {
    /// Whether the session is new on the stream.
    pub(crate) fn is_new(&self) -> bool {
        self.outcome == TrackOutcome::Joined
    }

    /// Sends the presence event the change calls for, if any.
    pub(crate) fn emit(self, rt: &Realtime) {
        let joined = std::slice::from_ref(&self.presence);
        match &self.outcome {
            TrackOutcome::Joined => rt.emit_presence_event(&self.stream, joined, &[]),
            TrackOutcome::Updated(old) => {
                rt.emit_presence_event(&self.stream, joined, std::slice::from_ref(old))
            }
            TrackOutcome::Unchanged => {}
        }
    }
}

/// The realtime layer of one node.
pub struct Realtime {
    pub config: RealtimeConfig,
    pub registry: Arc<SessionRegistry>,
    pub tracker: Arc<PresenceTracker>,
    pub router: StreamRouter,
    pub status: StatusRegistry,
    pub parties: PartyRegistry,
    /// The authoritative matches of this node.
    pub matches: Arc<MatchRegistry>,
    store: Arc<dyn Store>,
    /// This node's matchmaker tickets (`matchmaker_socket` serves them).
    pub matchmaker: Arc<Matchmaker>,
}

impl std::fmt::Debug for Realtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Realtime")
            .field("sessions", &self.registry.count())
            .finish_non_exhaustive()
    }
}

impl Realtime {
    /// A single-node realtime layer on the in-process bus.
    pub fn new(config: RealtimeConfig, store: Arc<dyn Store>) -> Realtime {
        let registry = Arc::new(SessionRegistry::new());
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::new(registry.clone()));
        Realtime::with_bus(config, store, registry, bus)
    }

    /// A realtime layer on a given bus (cluster use).
    pub fn with_bus(
        config: RealtimeConfig,
        store: Arc<dyn Store>,
        registry: Arc<SessionRegistry>,
        bus: Arc<dyn Bus>,
    ) -> Realtime {
        let tracker = Arc::new(PresenceTracker::new());
        let router = StreamRouter::new(tracker.clone(), bus);
        let spawner = config
            .match_spawner
            .clone()
            .unwrap_or_else(tokio::runtime::Handle::current);
        let matches = Arc::new(MatchRegistry::new(
            config.matches.clone(),
            &config.node,
            spawner,
            tracker.clone(),
            router.clone(),
        ));
        Realtime {
            router,
            matches,
            matchmaker: Arc::new(Matchmaker::new(config.matchmaker.clone())),
            config,
            registry,
            tracker,
            status: StatusRegistry::default(),
            parties: PartyRegistry::default(),
            store,
        }
    }

    /// Registers a new session: its notification stream, its own status
    /// (followed, so the user's other sessions see changes), and with
    /// `status=true` its online status.
    pub fn connect(&self, c: Connect) -> SessionHandle {
        let session = SessionHandle::new(
            c.session_id,
            c.user_id,
            &c.username,
            c.format,
            self.config.outgoing_queue_size,
        )
        .with_token_details(c.vars, c.expiry, &c.lang);
        self.registry
            .add(session.clone(), self.config.single_socket);
        self.status.follow(session.id(), [session.user_id()]);
        self.track(&session, &Stream::notifications(c.user_id), true, false, "");
        if c.status {
            self.track(&session, &Stream::status(c.user_id), false, false, "");
        }
        tracing::debug!(session_id = %c.session_id, user_id = %c.user_id, format = c.format.as_str(), "session connected");
        session
    }

    /// Forgets a session: leaves its parties and every stream (announcing
    /// it) and unfollows.
    pub fn disconnect(&self, session: &SessionHandle) {
        self.registry.remove(session.id());
        self.status.unfollow_all(session.id());
        self.party_disconnect(session.id());
        self.matchmaker.remove_session_all(session.id());
        for (stream, presence) in self.tracker.untrack_all(session.id()) {
            self.emit_presence_event(&stream, &[], std::slice::from_ref(&presence));
            self.matches.left(&stream, &presence);
        }
        tracing::debug!(session_id = %session.id(), user_id = %session.user_id(), "session disconnected");
    }

    /// Tracks `session` on `stream` (or updates its metadata) and announces it.
    pub fn track(
        &self,
        session: &SessionHandle,
        stream: &Stream,
        hidden: bool,
        persistence: bool,
        status: &str,
    ) -> TrackOutcome {
        let announce = self.track_quietly(session, stream, hidden, persistence, status);
        let outcome = announce.outcome.clone();
        announce.emit(self);
        outcome
    }

    /// Tracks `session` on `stream` like [`Realtime::track`], but leaves the
    /// presence event to the caller: a join's reply goes to the joiner before
    /// any event about that join, as clients register their presence handlers
    /// once the join has answered.
    pub(crate) fn track_quietly(
        &self,
        session: &SessionHandle,
        stream: &Stream,
        hidden: bool,
        persistence: bool,
        status: &str,
    ) -> Announce {
        let presence = Presence {
            session_id: session.id(),
            user_id: session.user_id(),
            meta: PresenceMeta {
                format: session.format(),
                username: session.username_shared(),
                hidden,
                persistence,
                status: Arc::from(status),
            },
        };
        let outcome = self.tracker.track(stream, presence.clone());
        Announce {
            stream: stream.clone(),
            outcome,
            presence,
        }
    }

    /// Takes a session off a stream and announces it; false when it was not there.
    pub fn untrack(&self, session: Uuid, stream: &Stream) -> bool {
        match self.tracker.untrack(session, stream) {
            Some(p) => {
                self.emit_presence_event(stream, &[], std::slice::from_ref(&p));
                self.matches.left(stream, &p);
                true
            }
            None => false,
        }
    }

    /// Announces joins and leaves in the form the stream's mode calls for.
    /// Hidden presences are never announced.
    fn emit_presence_event(&self, stream: &Stream, joins: &[Presence], leaves: &[Presence]) {
        let visible = |ps: &[Presence]| -> Vec<Presence> {
            ps.iter().filter(|p| !p.meta.hidden).cloned().collect()
        };
        let (joins, leaves) = (visible(joins), visible(leaves));
        if joins.is_empty() && leaves.is_empty() {
            return;
        }
        match stream.mode {
            StreamMode::Status => self.emit_status_event(stream.subject, &joins, &leaves),
            StreamMode::ChatRoom | StreamMode::ChatGroup | StreamMode::ChatDirect => {
                self.emit_channel_event(stream, &joins, &leaves)
            }
            StreamMode::Custom(_) => self.emit_stream_event(stream, &joins, &leaves),
            StreamMode::Party => self.emit_party_event(stream, &joins, &leaves),
            StreamMode::MatchRelayed | StreamMode::MatchAuthoritative => {
                let wire = |ps: Vec<Presence>| ps.iter().map(|p| p.to_wire(false)).collect();
                self.matches
                    .presence_event(stream, wire(joins), wire(leaves))
            }
            _ => {}
        }
    }

    /// The match id a matchmaker token carries (checked and unexpired).
    pub(crate) fn match_token_id(&self, token: &str) -> Result<String, RtError> {
        matchmaker::verify_match_token(&self.config.encryption_key, token, ludus_core::unix_now())
    }

    /// Which of these ids and usernames belong to existing users.
    async fn existing_users(
        &self,
        ids: &[Uuid],
        usernames: &[String],
    ) -> Result<Vec<Uuid>, RtError> {
        let users = self
            .store
            .get_users(ids, usernames)
            .await
            .map_err(|error| {
                tracing::error!(%error, "cannot look up users for a realtime request");
                RtError::internal("could not check users, try again")
            })?;
        Ok(users.into_iter().map(|u| u.id).collect())
    }
}

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
