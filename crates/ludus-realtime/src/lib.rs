//! The Ludus realtime layer: everything behind the `/ws` socket that is not
//! transport.
//!
//! A session hub ([`Hub`]: this node's sessions, the presences on streams
//! `(mode, subject, subcontext, label)` and delivery through a [`Bus`]) is
//! shared by one type per feature, each in its own module:
//! - [`Status`] (`status`): following and online status.
//! - [`Chat`] (`chat`): chat channels (rooms, direct messages) and messages.
//! - [`Notifier`] (`notify`): notifications to users, live and stored.
//! - [`Parties`] (`party/`): a pure membership state machine (`book.rs`)
//!   and its socket glue.
//! - [`MatchRegistry`] (`matches/`): relayed and authoritative matches.
//! - [`Matchmaking`] (`matchmaker_socket`) over the [`Matchmaker`] core
//!   (`matchmaker`).
//! - `module_streams`: streams as the server's modules drive them.
//!
//! [`Realtime`] composes them: it registers sessions, routes each incoming
//! envelope to its feature (`pipeline`), and announces presence changes on
//! any stream through the feature that owns the stream's mode. Also here:
//! [`codec`] (envelopes to and from JSON text and protobuf binary), the
//! [`Modules`] seam to the server's module runtime (RPCs, before and after
//! hooks, the matchmaker's matched hook; [`hooks`] names the messages hooks
//! apply to), and [`query`], the query language of listings and the
//! matchmaker (it lives in `ludus-core`; re-exported here).
//!
//! It knows nothing of HTTP or SQL: the WebSocket transport lives in
//! `ludus-server`, persistence behind `ludus_core::Store`.

mod bus;
pub mod chat;
pub mod cluster;
pub mod codec;
mod error;
pub mod hooks;
mod hub;
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
pub mod wire;

use std::collections::BTreeMap;
use std::sync::Arc;

use ludus_core::Store;
use uuid::Uuid;

pub use bus::{Bus, BusHealth, LocalBus, NodeCall, NodeCast, NodeReply, ReplyFuture};
pub use chat::Chat;
pub use codec::{Encoded, Format};
pub use error::{RtCode, RtError};
pub use hooks::{Before, HookFuture};
pub use hub::Hub;
pub use matches::{MatchConfig, MatchRegistry};
pub use matchmaker::{Matchmaker, MatchmakerConfig, TicketRequest};
pub use matchmaker_socket::Matchmaking;
pub use modules::{ModuleFuture, Modules, NoModules};
pub use notify::Notifier;
pub use outbound::{CloseReason, Next, Outbound};
pub use party::{Parties, PartyInfo, PartySettings};
pub use pipeline::Flow;
pub use registry::{SessionHandle, SessionRegistry};
pub use status::Status;
pub use stream::{Stream, StreamMode};
pub use tracker::{Presence, PresenceMeta, TrackOutcome};

use hub::Announce;

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

/// The realtime layer of one node: the hub and its features.
/// One node's figures for the console's status: its name, sessions,
/// presences, authoritative matches and parties, and when it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFigures {
    pub name: String,
    pub sessions: usize,
    pub presences: usize,
    pub matches: usize,
    pub parties: usize,
    /// UNIX milliseconds.
    pub started_ms: i64,
}

impl NodeFigures {
    fn to_json(&self) -> String {
        serde_json::json!([
            self.name,
            self.sessions,
            self.presences,
            self.matches,
            self.parties,
            self.started_ms
        ])
        .to_string()
    }

    fn from_json(text: &str) -> Option<NodeFigures> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let n = |i: usize| v[i].as_u64().map(|n| n as usize);
        Some(NodeFigures {
            name: v[0].as_str()?.to_owned(),
            sessions: n(1)?,
            presences: n(2)?,
            matches: n(3)?,
            parties: n(4)?,
            started_ms: v[5].as_i64()?,
        })
    }
}

pub struct Realtime {
    hub: Arc<Hub>,
    /// When this node's realtime layer started, UNIX milliseconds.
    started_ms: i64,
    pub status: Status,
    pub chat: Chat,
    pub notifier: Arc<Notifier>,
    pub parties: Parties,
    /// The authoritative matches of this node.
    pub matches: Arc<MatchRegistry>,
    /// This node's matchmaker tickets and their loop.
    pub matchmaker: Matchmaking,
    encryption_key: String,
}

impl std::fmt::Debug for Realtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Realtime")
            .field("sessions", &self.hub.session_count())
            .finish_non_exhaustive()
    }
}

impl Realtime {
    /// A single-node realtime layer on the in-process bus.
    pub fn new(config: RealtimeConfig, store: Arc<dyn Store>) -> Realtime {
        let hub = Hub::new(
            &config.node,
            config.outgoing_queue_size,
            config.single_socket,
        );
        Realtime::with_hub(config, store, Arc::new(hub))
    }

    /// A realtime layer over a given hub (a cluster hub has its own bus).
    pub fn with_hub(config: RealtimeConfig, store: Arc<dyn Store>, hub: Arc<Hub>) -> Realtime {
        let spawner = config
            .match_spawner
            .clone()
            .unwrap_or_else(tokio::runtime::Handle::current);
        // The pool tells the bus of its own tickets (other nodes pool them).
        let core = Arc::new(Matchmaker::with_sink(
            config.matchmaker.clone(),
            Arc::new(HubTickets(hub.clone())),
        ));
        let notifier = Arc::new(Notifier::new(hub.clone(), store.clone()));
        Realtime {
            started_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
            status: Status::new(hub.clone(), store.clone()),
            chat: Chat::new(hub.clone(), store, notifier.clone()),
            notifier,
            parties: Parties::new(
                hub.clone(),
                core.clone(),
                config.party.clone(),
                config.single_party,
            ),
            matches: Arc::new(MatchRegistry::new(
                config.matches.clone(),
                spawner,
                hub.clone(),
            )),
            matchmaker: Matchmaking::new(
                hub.clone(),
                core,
                config.encryption_key.clone(),
                config.matchmaker.interval_sec,
            ),
            encryption_key: config.encryption_key,
            hub,
        }
    }

    /// The session hub the features share.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Registers a new session: its notification stream, its own status
    /// (followed, so the user's other sessions see changes), and with
    /// `status=true` its online status.
    pub fn connect(&self, c: Connect) -> SessionHandle {
        let session = self
            .hub
            .new_session(c.session_id, c.user_id, &c.username, c.format)
            .with_token_details(c.vars, c.expiry, &c.lang);
        self.hub.add_session(session.clone());
        self.notifier.connect(&session);
        self.status.connect(&session, c.status);
        tracing::debug!(session_id = %c.session_id, user_id = %c.user_id, format = c.format.as_str(), "session connected");
        session
    }

    /// Forgets a session: leaves its parties, tickets and every stream
    /// (announcing it) and unfollows.
    pub fn disconnect(&self, session: &SessionHandle) {
        self.hub.remove_session(session.id());
        self.status.disconnect(session.id());
        self.parties.disconnect(session.id());
        self.matchmaker.disconnect(session.id());
        for (stream, presence) in self.hub.untrack_all(session.id()) {
            self.announce(&stream, &[], std::slice::from_ref(&presence));
            self.matches.left(&stream, &presence);
        }
        tracing::debug!(session_id = %session.id(), user_id = %session.user_id(), "session disconnected");
    }

    /// Tracks `session` on any `stream` (or updates its metadata) and
    /// announces it, as modules do with `nk.stream_user_join`.
    pub fn track(
        &self,
        session: &SessionHandle,
        stream: &Stream,
        hidden: bool,
        persistence: bool,
        status: &str,
    ) -> TrackOutcome {
        let mut presence = self.hub.presence_of(session);
        presence.meta.hidden = hidden;
        presence.meta.persistence = persistence;
        presence.meta.status = Arc::from(status);
        let announce = self.hub.track(stream, presence);
        let outcome = announce.outcome().clone();
        self.emit(announce);
        outcome
    }

    /// Takes a session off any stream and announces it; false when it was
    /// not there.
    pub fn untrack(&self, session: Uuid, stream: &Stream) -> bool {
        match self.hub.untrack(session, stream) {
            Some(p) => {
                self.announce(stream, &[], std::slice::from_ref(&p));
                self.matches.left(stream, &p);
                true
            }
            None => false,
        }
    }

    /// Answers another node's question (it names something this node owns).
    pub(crate) async fn serve_call(&self, call: bus::NodeCall) -> bus::NodeReply {
        match call {
            bus::NodeCall::MatchJoin {
                match_id,
                presence,
                metadata,
            } => self.matches.join_from(match_id, presence, metadata).await,
            bus::NodeCall::MatchSignal { match_id, data } => {
                let id = format!("{match_id}.{}", self.hub.node());
                self.matches.signal(&id, data).await.map(|r| (r, false))
            }
            bus::NodeCall::MatchState { match_id } => {
                let id = format!("{match_id}.{}", self.hub.node());
                self.matches
                    .state(&id)
                    .await
                    .map(|state| (state.to_json(), false))
            }
            bus::NodeCall::Status => Ok((self.figures().to_json(), false)),
            bus::NodeCall::Party { presence, envelope } => self.parties.serve(&presence, &envelope),
        }
    }

    /// This node's figures.
    pub fn figures(&self) -> NodeFigures {
        NodeFigures {
            name: self.hub.node().to_string(),
            sessions: self.hub.session_count(),
            presences: self.hub.presence_count(),
            matches: self.matches.count(),
            parties: self.parties.count(),
            started_ms: self.started_ms,
        }
    }

    /// Every node's figures, this node's first: the others are asked over
    /// the bus at once and wait at most `timeout`; a node that does not
    /// answer in time comes back as `Err(name)`.
    pub async fn cluster_figures(
        &self,
        timeout: std::time::Duration,
    ) -> Vec<Result<NodeFigures, String>> {
        let peers = self.hub.peers();
        let asked = peers.iter().map(|node| async move {
            match self
                .hub
                .call_node(node, bus::NodeCall::Status, timeout)
                .await
            {
                Ok((json, _)) => NodeFigures::from_json(&json).ok_or_else(|| node.clone()),
                Err(_) => Err(node.clone()),
            }
        });
        let mut all = vec![Ok(self.figures())];
        all.extend(futures_util::future::join_all(asked).await);
        all
    }

    /// Acts on another node's notice.
    pub(crate) fn serve_cast(&self, cast: bus::NodeCast) {
        match cast {
            bus::NodeCast::MatchData { match_id, message } => {
                self.matches.data_from(match_id, message)
            }
            bus::NodeCast::Untrack { session, stream } => {
                // Quietly: whoever asked has announced it.
                let _ = self.hub.untrack(session, &stream);
            }
            bus::NodeCast::Track { stream, presence } => {
                // Only a session that is still here (it may have gone).
                if self.hub.session(presence.session_id).is_some() {
                    let _ = self.hub.track(&stream, presence);
                }
            }
        }
    }

    /// A session of another node joined a stream (the replica applied it):
    /// a match of this node takes its player.
    pub(crate) fn remote_joined(&self, stream: &Stream, presence: &Presence) {
        self.matches.remote_joined(stream, presence);
    }

    /// A session of another node left a stream (the replica applied it):
    /// a match of this node sees its player leave.
    pub(crate) fn remote_left(&self, stream: &Stream, presence: &Presence) {
        self.matches.left(stream, presence);
        self.parties.remote_left(stream, presence);
    }

    /// A party request of `me` (served here or by the party's node).
    pub(crate) async fn party_message(
        &self,
        me: &Presence,
        message: ludus_proto::realtime::envelope::Message,
    ) -> Result<Option<ludus_proto::realtime::envelope::Message>, RtError> {
        let timeout = self.matches.config().call_timeout();
        self.parties.message(me, message, timeout).await
    }

    /// Presences of another node that is gone (it died or restarted): each
    /// leaves its stream, told to this node's sessions only (every node
    /// tells its own), and matches here see their players leave.
    pub(crate) fn presences_gone(&self, gone: Vec<(Stream, Presence)>) {
        let sessions: std::collections::HashSet<Uuid> =
            gone.iter().map(|(_, p)| p.session_id).collect();
        let changes = crate::tracker::Replaced {
            gone,
            ..Default::default()
        };
        self.presences_reconciled(changes, true);
        // Their tickets leave every pool.
        for session in sessions {
            self.matchmaker.disconnect(session);
            self.parties.disconnect(session);
        }
    }

    /// Another node's presences as read again from Redis after changes of
    /// it were missed (a gap in its numbering, or the bus was down): the
    /// matches here see what joined and left, and with `announce` this
    /// node's sessions are told too (the events that node sent while the
    /// bus was down were lost; on a first read there is nothing to catch up).
    pub(crate) fn presences_reconciled(&self, changes: crate::tracker::Replaced, announce: bool) {
        router::local_only(|| {
            for (stream, p) in &changes.joined {
                if announce {
                    self.announce(stream, std::slice::from_ref(p), &[]);
                }
                self.remote_joined(stream, p);
            }
            if announce {
                for (stream, now, old) in &changes.updated {
                    self.announce(stream, std::slice::from_ref(now), std::slice::from_ref(old));
                }
            }
            for (stream, p) in &changes.gone {
                if announce {
                    self.announce(stream, &[], std::slice::from_ref(p));
                }
                self.remote_left(stream, p);
            }
        });
    }

    /// Announces a change the hub made, through the stream's feature.
    pub(crate) fn emit(&self, announce: Announce) {
        let (joins, leaves) = announce.changes();
        self.announce(&announce.stream, &joins, &leaves);
    }

    /// Announces joins and leaves in the form the stream's mode calls for,
    /// through the feature that owns the mode. Hidden presences are never
    /// announced.
    fn announce(&self, stream: &Stream, joins: &[Presence], leaves: &[Presence]) {
        match stream.mode {
            StreamMode::Status => self.status.announce(stream.subject, joins, leaves),
            StreamMode::ChatRoom | StreamMode::ChatGroup | StreamMode::ChatDirect => {
                self.chat.announce(stream, joins, leaves)
            }
            StreamMode::Custom(_) => module_streams::announce(&self.hub, stream, joins, leaves),
            StreamMode::Party => self.parties.announce(stream, joins, leaves),
            StreamMode::MatchRelayed | StreamMode::MatchAuthoritative => {
                self.matches.announce(stream, joins, leaves)
            }
            _ => {}
        }
    }

    /// The match id a matchmaker token carries (checked and unexpired).
    pub(crate) fn match_token_id(&self, token: &str) -> Result<String, RtError> {
        matchmaker::verify_match_token(&self.encryption_key, token, ludus_core::unix_now())
    }
}

/// The matchmaker pool's changes, through the hub's bus.
struct HubTickets(Arc<Hub>);

impl matchmaker::TicketSink for HubTickets {
    fn changed(&self, added: Vec<matchmaker::TicketRecord>, removed: Vec<String>) {
        self.0.tickets_changed(added, removed);
    }
}

/// The social graph's one door into the realtime layer.
#[async_trait::async_trait]
impl ludus_core::social_service::SocialPresence for Realtime {
    fn is_online(&self, user: Uuid) -> bool {
        self.status.is_online(user)
    }

    async fn notify(
        &self,
        notifications: Vec<ludus_core::notification::Notification>,
    ) -> Result<(), ludus_core::StoreError> {
        self.notifier.notify(notifications).await
    }

    fn left_group(&self, group: Uuid, user: Uuid) {
        self.chat.leave_group_channel(group, user);
    }

    fn blocked(&self, user: Uuid, other: Uuid) {
        self.chat.close_direct_channel(user, other);
    }

    async fn group_event(
        &self,
        group: Uuid,
        user: Uuid,
        username: String,
        code: i32,
    ) -> Result<(), ludus_core::StoreError> {
        self.chat
            .post_group_event(group, user, username, code)
            .await
    }
}

/// Which of these ids and usernames belong to existing users.
pub(crate) async fn existing_users(
    store: &dyn Store,
    ids: &[Uuid],
    usernames: &[String],
) -> Result<Vec<Uuid>, RtError> {
    let users = store.get_users(ids, usernames).await.map_err(|error| {
        tracing::error!(%error, "cannot look up users for a realtime request");
        RtError::internal("could not check users, try again")
    })?;
    Ok(users.into_iter().map(|u| u.id).collect())
}

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
