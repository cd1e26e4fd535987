//! Matches: relayed (the server only forwards data between players) and
//! authoritative (a [`MatchHandler`] owns the game loop).
//!
//! - [`handler`]: the handler trait, its values and the [`Dispatcher`].
//! - `task.rs`: one task per authoritative match, ticking at its rate and
//!   serving calls (join attempts, joins, leaves, signals, the console's
//!   state reads) between ticks.
//! - `socket.rs`: the `match_create|join|leave|data_send` envelopes.
//! - [`MatchRegistry`]: the live authoritative matches of this node, their
//!   labels for listing, and where their tasks run.
//!
//! A match's players are presences on its stream (`MatchRelayed` with the
//! match uuid, or `MatchAuthoritative` with the uuid and the node as label),
//! so delivery and presence events reuse the tracker and the router.
//!
//! Invariants: a handler's callbacks run one at a time on its own task; a
//! failing or ending handler ends only its match, which leaves the registry
//! and untracks its players; inputs are bounded (`match.input_queue_size`,
//! `match.call_queue_size`), a full queue refuses, never blocks.

pub mod handler;
mod socket;
mod task;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use ludus_proto::pbjson_types::StringValue;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{Envelope, MatchPresenceEvent, UserPresence};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

pub use handler::{
    Dispatcher, Effect, HandlerError, JoinDecision, MAX_LABEL_BYTES, MatchHandler, MatchInfo,
    MatchInit, MatchMessage, Step, check_init, check_label,
};

use crate::error::{RtCode, RtError};
use crate::hub::Hub;
use crate::query::Query;
use crate::stream::{Stream, StreamMode};
/// Handlers see players as the realtime layer's one presence type.
pub use crate::tracker::Presence;

/// Settings of the match engine: the `match.*` config section itself
/// (Nakama's key names where Nakama has them). The server checks the values
/// at start (`MatchConfig::check`); nothing is clamped silently.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MatchConfig {
    /// Data messages waiting for a match's next tick; more are refused.
    pub input_queue_size: usize,
    /// Join attempts and signals waiting for a match; more are refused.
    pub call_queue_size: usize,
    /// Deferred broadcasts one tick may queue.
    pub deferred_queue_size: usize,
    /// How long an accepted join may take to complete before it is dropped.
    pub join_marker_deadline_ms: u64,
    /// End a match after it has been empty this long; 0: never.
    pub max_empty_sec: u64,
    /// Most live authoritative matches on this node.
    pub max_matches: usize,
    /// Longest a caller waits for a busy match to answer a join attempt or a
    /// signal.
    pub call_timeout_ms: u64,
    /// Threads that run match handlers (the server's match runtime); 0: one
    /// per core.
    pub executor_threads: usize,
    /// Start each match's ticks at a phase of its own (taken from its id),
    /// so that matches created together do not tick together; false: every
    /// match ticks one period after it starts, as in Nakama.
    pub spread_ticks: bool,
}

impl Default for MatchConfig {
    fn default() -> Self {
        MatchConfig {
            input_queue_size: 128,
            call_queue_size: 128,
            deferred_queue_size: 128,
            join_marker_deadline_ms: 15_000,
            max_empty_sec: 0,
            max_matches: 100_000,
            call_timeout_ms: 10_000,
            executor_threads: 0,
            spread_ticks: true,
        }
    }
}

impl MatchConfig {
    /// The first key with a value the engine cannot run with, and why.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.input_queue_size == 0 {
            return Err(("match.input_queue_size", "must be at least 1"));
        }
        if self.call_queue_size == 0 {
            return Err(("match.call_queue_size", "must be at least 1"));
        }
        if self.call_timeout_ms == 0 {
            return Err(("match.call_timeout_ms", "must be at least 1"));
        }
        if self.join_marker_deadline_ms == 0 {
            return Err(("match.join_marker_deadline_ms", "must be at least 1"));
        }
        if self.max_matches == 0 {
            return Err(("match.max_matches", "must be at least 1"));
        }
        Ok(())
    }

    pub(crate) fn join_marker_deadline(&self) -> Duration {
        Duration::from_millis(self.join_marker_deadline_ms)
    }

    pub(crate) fn max_empty(&self) -> Option<Duration> {
        (self.max_empty_sec > 0).then(|| Duration::from_secs(self.max_empty_sec))
    }

    pub(crate) fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }
}

/// Makes the handler of one new match; the module runtime builds one per
/// `match_create` (a native registration or a Lua module). Called on the
/// match's own task, so it may take a while (a Lua VM loads there); an
/// error names what is missing.
pub type HandlerFactory =
    Box<dyn FnOnce() -> Result<Box<dyn MatchHandler>, HandlerError> + Send + 'static>;

/// A match as listings show it (`GET /v2/match`, `nk.match_list|get`).
#[derive(Debug, Clone, PartialEq)]
pub struct MatchListing {
    pub match_id: String,
    pub authoritative: bool,
    /// Authoritative matches only.
    pub label: Option<String>,
    pub size: usize,
    pub tick_rate: u32,
    pub handler_name: String,
}

impl MatchListing {
    pub fn to_api(&self) -> ludus_proto::api::Match {
        ludus_proto::api::Match {
            match_id: self.match_id.clone(),
            authoritative: self.authoritative,
            label: self.label.clone().map(|value| StringValue { value }),
            size: self.size as i32,
            tick_rate: self.tick_rate as i32,
            handler_name: self.handler_name.clone(),
        }
    }
}

/// A listing request; `None` fields do not filter.
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    pub limit: usize,
    pub authoritative: Option<bool>,
    /// Exact label (authoritative matches).
    pub label: Option<String>,
    pub min_size: Option<usize>,
    pub max_size: Option<usize>,
    /// Query over the JSON label, e.g. `+label.mode:duel`.
    pub query: Option<String>,
}

/// Most matches one listing returns.
pub const MAX_LIST_LIMIT: usize = 100;

/// Calls that wait for the match's answer.
pub(crate) enum Call {
    JoinAttempt {
        presence: Presence,
        metadata: std::collections::BTreeMap<String, String>,
        reply: oneshot::Sender<JoinReply>,
    },
    Signal {
        data: String,
        reply: oneshot::Sender<Result<String, RtError>>,
    },
    /// The console reads the match's presences, tick and state.
    State {
        reply: oneshot::Sender<Result<MatchState, RtError>>,
    },
}

/// What the console shows of a running match (Nakama's `MatchState`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MatchState {
    pub presences: Vec<Presence>,
    pub tick: i64,
    /// The handler's state as JSON text; empty when it cannot tell.
    pub state: String,
}

impl MatchState {
    /// The form another node's console receives it in over the bus.
    pub(crate) fn to_json(&self) -> String {
        let presences: Vec<Value> = self
            .presences
            .iter()
            .map(|p| {
                serde_json::json!([
                    p.user_id.to_string(),
                    p.session_id.to_string(),
                    &*p.username,
                    &*p.node,
                ])
            })
            .collect();
        serde_json::json!({"presences": presences, "tick": self.tick, "state": self.state})
            .to_string()
    }

    pub(crate) fn from_json(text: &str) -> Result<MatchState, RtError> {
        let bad = || {
            RtError::new(
                RtCode::RuntimeException,
                "another node answered a match state this node cannot read",
            )
        };
        let v: Value = serde_json::from_str(text).map_err(|_| bad())?;
        let presences = v["presences"]
            .as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|p| {
                let text = |i: usize| p[i].as_str().ok_or_else(bad);
                let id = |i: usize| text(i).and_then(|t| Uuid::parse_str(t).map_err(|_| bad()));
                Ok(Presence::new(
                    id(0)?,
                    id(1)?,
                    Arc::from(text(2)?),
                    Arc::from(text(3)?),
                ))
            })
            .collect::<Result<Vec<_>, RtError>>()?;
        Ok(MatchState {
            presences,
            tick: v["tick"].as_i64().ok_or_else(bad)?,
            state: v["state"].as_str().ok_or_else(bad)?.to_owned(),
        })
    }
}

pub(crate) enum Inbox {
    Call(Call),
    Event(Event),
}

/// Notices that must not be lost: they never wait on a full queue.
pub(crate) enum Event {
    Joined(Presence),
    Left(Presence),
    Terminate(Duration),
}

pub(crate) enum JoinReply {
    /// `new` is false when the session was already in the match.
    Accepted {
        label: String,
        new: bool,
    },
    Rejected(String),
    Ended,
}

pub(crate) struct Entry {
    /// Calls and events in one channel (one poll per wake-up); calls are
    /// bounded by `pending_calls`, events never wait. Both channels carry
    /// boxes: a tokio channel allocates its first block of 32 slots when it
    /// is made, which for these types was about 8 KB of every idle match.
    inbox: mpsc::UnboundedSender<Box<Inbox>>,
    pending_calls: AtomicUsize,
    call_queue_size: usize,
    input: mpsc::Sender<Box<MatchMessage>>,
    listing: Mutex<Labelled>,
    size: AtomicUsize,
    tick_rate: u32,
    handler_name: Arc<str>,
}

struct Labelled {
    label: Arc<str>,
    /// `{"label": <the label parsed as JSON>}`, what queries search.
    doc: Value,
}

impl Labelled {
    fn new(label: &str) -> Labelled {
        let parsed = serde_json::from_str::<Value>(label).unwrap_or(Value::Null);
        Labelled {
            label: Arc::from(label),
            doc: serde_json::json!({ "label": parsed }),
        }
    }
}

/// The authoritative matches of this node.
pub struct MatchRegistry {
    config: MatchConfig,
    node: Arc<str>,
    spawner: tokio::runtime::Handle,
    hub: Arc<Hub>,
    matches: RwLock<HashMap<Uuid, Arc<Entry>>>,
    /// Matches being created (counted against `max_matches`).
    starting: AtomicUsize,
}

impl std::fmt::Debug for MatchRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchRegistry")
            .field("matches", &self.count())
            .finish_non_exhaustive()
    }
}

impl MatchRegistry {
    /// A registry whose match tasks run on `spawner` (a runtime of their own
    /// in the server, so match logic never holds up sockets).
    pub fn new(
        config: MatchConfig,
        spawner: tokio::runtime::Handle,
        hub: Arc<Hub>,
    ) -> MatchRegistry {
        MatchRegistry {
            config,
            node: hub.node().clone(),
            spawner,
            hub,
            matches: RwLock::new(HashMap::new()),
            starting: AtomicUsize::new(0),
        }
    }

    pub fn config(&self) -> &MatchConfig {
        &self.config
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    /// Live authoritative matches.
    pub fn count(&self) -> usize {
        self.read().len()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Uuid, Arc<Entry>>> {
        self.matches.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Uuid, Arc<Entry>>> {
        self.matches.write().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn entry(&self, id: Uuid) -> Option<Arc<Entry>> {
        self.read().get(&id).cloned()
    }

    /// The stream of an authoritative match of this node.
    pub fn stream(&self, id: Uuid) -> Stream {
        authoritative_stream(id, &self.node)
    }

    /// A session of this node as its matches see it.
    pub(crate) fn session_presence(&self, session: &crate::registry::SessionHandle) -> Presence {
        self.hub.presence_of(session)
    }

    /// Creates an authoritative match run by the handler `make` builds
    /// (`name` is its handler name in listings); answers its id once
    /// `match_init` has run.
    pub async fn create(
        self: &Arc<Self>,
        name: &str,
        params: Value,
        make: HandlerFactory,
    ) -> Result<String, RtError> {
        let starting = self.starting.fetch_add(1, Ordering::AcqRel);
        let _undo = Undo(&self.starting);
        if self.count() + starting >= self.config.max_matches {
            return Err(RtError::new(
                RtCode::RuntimeException,
                format!(
                    "too many matches on this node (limit {}, match.max_matches)",
                    self.config.max_matches
                ),
            ));
        }
        let (reply, answer) = oneshot::channel();
        let registry = self.clone();
        let name = name.to_owned();
        let id = Uuid::new_v4();
        let running = self
            .spawner
            .spawn(task::start(registry, id, make, name, params, reply));
        // A handler that panics (native code can) ends only its own match.
        let registry = self.clone();
        self.spawner.spawn(async move {
            if let Err(e) = running.await
                && e.is_panic()
            {
                registry.panicked(id);
            }
        });
        match answer.await {
            Ok(result) => result,
            Err(_) => Err(RtError::internal("the match stopped while it started")),
        }
    }

    /// Registers a started match; the task calls it after `match_init`.
    pub(crate) fn insert(&self, id: Uuid, entry: Arc<Entry>) {
        self.index(id, &entry);
        self.write().insert(id, entry);
    }

    pub(crate) fn remove(&self, id: Uuid) {
        self.write().remove(&id);
        let _ = self.hub.untrack(id, &index_stream());
    }

    /// Puts the match (or its new label) on the index stream, where the
    /// other nodes of a cluster list it: a hidden presence whose session is
    /// the match, its status the label, its username the tick rate and
    /// handler name.
    pub(crate) fn index(&self, id: Uuid, entry: &Entry) {
        let mut p = Presence::new(
            Uuid::nil(),
            id,
            Arc::from(format!("{}|{}", entry.tick_rate, entry.handler_name)),
            self.node.clone(),
        );
        p.meta.hidden = true;
        p.meta.status = entry.label();
        // Nobody is told: the index is read, never announced.
        let _ = self.hub.track(&index_stream(), p);
    }

    /// Matches of other nodes, from the index stream.
    fn remote_listings(&self) -> Vec<(MatchListing, Value)> {
        self.hub
            .presences(&index_stream(), true)
            .into_iter()
            .filter(|p| *p.node != *self.node)
            .map(|p| {
                let (rate, handler) = p.username.split_once('|').unwrap_or(("0", ""));
                let stream = authoritative_stream(p.session_id, &p.node);
                let listing = MatchListing {
                    match_id: format!("{}.{}", p.session_id, p.node),
                    authoritative: true,
                    label: Some(p.meta.status.to_string()),
                    size: self.hub.count(&stream),
                    tick_rate: rate.parse().unwrap_or(0),
                    handler_name: handler.to_owned(),
                };
                let doc = Labelled::new(&p.meta.status).doc;
                (listing, doc)
            })
            .collect()
    }

    /// Cleans up after a match whose task panicked: out of the registry, its
    /// players untracked and told.
    fn panicked(&self, id: Uuid) {
        let match_id = format!("{id}.{}", self.node);
        tracing::error!(%match_id, "match handler panicked, ending the match");
        self.remove(id);
        let stream = self.stream(id);
        let sessions = self.hub.session_ids(&stream);
        self.hub.send_to_sessions(
            &sessions,
            crate::error::error_envelope(
                "",
                RtCode::RuntimeException,
                &format!("match {match_id} ended: its handler panicked"),
            ),
        );
        for s in sessions {
            self.hub.untrack_anywhere(s, &stream);
        }
    }

    /// One match by id (`<uuid>.<node>` or `<uuid>.` for relayed ones).
    pub fn get(&self, match_id: &str) -> Option<MatchListing> {
        let (id, node) = parse_id(match_id).ok()?;
        if node.is_empty() {
            let stream = relayed_stream(id);
            let size = self.hub.count(&stream);
            return (size > 0).then(|| relayed_listing(id, size));
        }
        if node != &*self.node {
            return self
                .remote_listings()
                .into_iter()
                .map(|(l, _)| l)
                .find(|l| l.match_id == match_id);
        }
        self.entry(id).map(|e| self.listing(id, &e))
    }

    fn listing(&self, id: Uuid, e: &Entry) -> MatchListing {
        MatchListing {
            match_id: format!("{id}.{}", self.node),
            authoritative: true,
            label: Some(e.label().to_string()),
            size: e.size.load(Ordering::Acquire),
            tick_rate: e.tick_rate,
            handler_name: e.handler_name.to_string(),
        }
    }

    /// Lists matches as Nakama does: with a query or a label, authoritative
    /// matches only (best query score first; none when `authoritative` is
    /// false); otherwise authoritative ones unless `authoritative` is false,
    /// then relayed ones unless it is true.
    pub fn list(&self, req: &ListRequest) -> Result<Vec<MatchListing>, RtError> {
        let limit = req.limit.clamp(1, MAX_LIST_LIMIT);
        let size_ok =
            |n: usize| req.min_size.is_none_or(|m| n >= m) && req.max_size.is_none_or(|m| n <= m);
        let query = match req.query.as_deref().map(str::trim) {
            Some(q) if !q.is_empty() => Some(
                Query::parse(q)
                    .map_err(|e| RtError::bad_input(format!("invalid match listing query: {e}")))?,
            ),
            _ => None,
        };
        // As Nakama: a query, even an empty one, replaces the exact label
        // (nakama-js always sends `label=` beside its query).
        let label = req.label.as_ref().filter(|_| req.query.is_none());
        let mut out = Vec::new();
        // Only should clauses make scores differ; otherwise stop at the limit.
        let ranked = query.as_ref().is_some_and(Query::ranks);
        let filtered = query.is_some() || label.is_some();
        if filtered && req.authoritative == Some(false) {
            // Labels and queries only exist on authoritative matches.
            return Ok(out);
        }
        if req.authoritative != Some(false) {
            let matches = self.read();
            // Scores first; listings (labels copied) only for what is returned.
            let mut scored: Vec<(f64, Uuid, Arc<Entry>)> = Vec::new();
            for (id, e) in matches.iter() {
                if !size_ok(e.size.load(Ordering::Acquire)) {
                    continue;
                }
                let score = {
                    let l = e.lock_listing();
                    if let Some(label) = label
                        && *l.label != **label
                    {
                        continue;
                    }
                    match &query {
                        Some(q) => match q.score(&l.doc) {
                            Some(s) => s,
                            None => continue,
                        },
                        None => 0.0,
                    }
                };
                scored.push((score, *id, e.clone()));
                if !ranked && scored.len() >= limit {
                    break;
                }
            }
            drop(matches);
            // Other nodes' matches (a cluster), from the index.
            let mut remote = Vec::new();
            if ranked || scored.len() < limit {
                for (listing, doc) in self.remote_listings() {
                    if !size_ok(listing.size) {
                        continue;
                    }
                    if let Some(label) = label
                        && listing.label.as_deref() != Some(label.as_str())
                    {
                        continue;
                    }
                    let score = match &query {
                        Some(q) => match q.score(&doc) {
                            Some(s) => s,
                            None => continue,
                        },
                        None => 0.0,
                    };
                    remote.push((score, listing));
                }
            }
            if ranked {
                scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            }
            let mut all: Vec<(f64, MatchListing)> = scored
                .into_iter()
                .map(|(s, id, e)| (s, self.listing(id, &e)))
                .chain(remote)
                .collect();
            if ranked {
                all.sort_by(|a, b| b.0.total_cmp(&a.0));
            }
            out.extend(all.into_iter().take(limit).map(|(_, l)| l));
        }
        if out.len() < limit
            && req.authoritative != Some(true)
            && req.query.is_none()
            && label.is_none()
        {
            for (stream, size) in self
                .hub
                .streams_of_mode(StreamMode::MatchRelayed, usize::MAX)
            {
                if out.len() >= limit {
                    break;
                }
                if size_ok(size) {
                    out.push(relayed_listing(stream.subject, size));
                }
            }
        }
        Ok(out)
    }

    /// Sends `match_signal` data to a match and answers what it returned.
    pub async fn signal(&self, match_id: &str, data: String) -> Result<String, RtError> {
        let (id, node) = parse_id(match_id)?;
        if !node.is_empty() && node != &*self.node && self.hub.clustered() {
            let call = crate::bus::NodeCall::MatchSignal { match_id: id, data };
            let timeout = self.config.call_timeout();
            return self
                .hub
                .call_node(node, call, timeout)
                .await
                .map(|(r, _)| r);
        }
        let entry = self.local_entry(match_id)?;
        let (reply, answer) = oneshot::channel();
        entry
            .call(Call::Signal { data, reply })
            .map_err(|()| busy(match_id))?;
        match tokio::time::timeout(self.config.call_timeout(), answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(not_found()),
            Err(_) => Err(RtError::new(
                RtCode::RuntimeException,
                format!("match {match_id} did not answer the signal in time"),
            )),
        }
    }

    /// A match's presences, tick and state (the console's `GetMatchState`).
    /// A relayed match has no state; a match of another node is read on
    /// that node.
    pub async fn state(&self, match_id: &str) -> Result<MatchState, RtError> {
        let (id, node) = parse_id(match_id)?;
        if node.is_empty() {
            let stream = relayed_stream(id);
            if self.hub.count(&stream) == 0 {
                return Err(not_found());
            }
            return Ok(MatchState::default());
        }
        if node != &*self.node {
            if !self.hub.clustered() {
                return Err(not_found());
            }
            // The node that runs it answers, through the bus.
            let call = crate::bus::NodeCall::MatchState { match_id: id };
            let (json, _) = self
                .hub
                .call_node(node, call, self.config.call_timeout())
                .await?;
            return MatchState::from_json(&json);
        }
        let entry = self.local_entry(match_id)?;
        let (reply, answer) = oneshot::channel();
        entry
            .call(Call::State { reply })
            .map_err(|()| busy(match_id))?;
        match tokio::time::timeout(self.config.call_timeout(), answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(not_found()),
            Err(_) => Err(RtError::new(
                RtCode::RuntimeException,
                format!("match {match_id} did not answer in time"),
            )),
        }
    }

    /// The entry of a local authoritative match by its full id.
    fn local_entry(&self, match_id: &str) -> Result<Arc<Entry>, RtError> {
        let (id, node) = parse_id(match_id)?;
        if node != &*self.node {
            return Err(not_found());
        }
        self.entry(id).ok_or_else(not_found)
    }

    /// A presence left a match stream (leave, disconnect): tells the match.
    pub(crate) fn left(&self, stream: &Stream, presence: &Presence) {
        if stream.mode != StreamMode::MatchAuthoritative || *stream.label != *self.node {
            return;
        }
        if let Some(e) = self.entry(stream.subject) {
            e.event(Event::Left(presence.clone()));
        }
    }

    /// Asks every match to terminate with `grace`, then waits (at most the
    /// grace and a second) for them to end.
    pub async fn shutdown(&self, grace: Duration) {
        let entries: Vec<Arc<Entry>> = self.read().values().cloned().collect();
        if entries.is_empty() {
            return;
        }
        tracing::info!(
            matches = entries.len(),
            grace_ms = grace.as_millis() as u64,
            "terminating matches"
        );
        for e in &entries {
            e.event(Event::Terminate(grace));
        }
        drop(entries);
        let deadline = tokio::time::Instant::now() + grace + Duration::from_secs(1);
        while self.count() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Announces the visible joins and leaves on a match stream.
    pub(crate) fn announce(&self, stream: &Stream, joins: &[Presence], leaves: &[Presence]) {
        let wire = |ps: &[Presence]| -> Vec<UserPresence> {
            ps.iter()
                .filter(|p| !p.meta.hidden)
                .map(|p| p.to_wire(false))
                .collect()
        };
        let (joins, leaves) = (wire(joins), wire(leaves));
        if joins.is_empty() && leaves.is_empty() {
            return;
        }
        self.presence_event(stream, joins, leaves);
    }

    /// Sends a `match_presence_event` to everyone on a match stream.
    pub(crate) fn presence_event(
        &self,
        stream: &Stream,
        joins: Vec<UserPresence>,
        leaves: Vec<UserPresence>,
    ) {
        let match_id = stream_match_id(stream);
        self.hub.send_to_stream(
            stream,
            Envelope {
                cid: String::new(),
                message: Some(Message::MatchPresenceEvent(MatchPresenceEvent {
                    match_id,
                    joins,
                    leaves,
                })),
            },
            None,
        );
    }
}

impl Entry {
    /// Queues a call unless `match.call_queue_size` calls already wait.
    pub(crate) fn call(&self, call: Call) -> Result<(), ()> {
        if self.pending_calls.fetch_add(1, Ordering::AcqRel) >= self.call_queue_size {
            self.pending_calls.fetch_sub(1, Ordering::AcqRel);
            return Err(());
        }
        self.inbox.send(Box::new(Inbox::Call(call))).map_err(|_| {
            self.pending_calls.fetch_sub(1, Ordering::AcqRel);
        })
    }

    pub(crate) fn event(&self, event: Event) {
        let _ = self.inbox.send(Box::new(Inbox::Event(event)));
    }

    fn lock_listing(&self) -> std::sync::MutexGuard<'_, Labelled> {
        self.listing.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn label(&self) -> Arc<str> {
        self.lock_listing().label.clone()
    }

    fn set_label(&self, label: &str) {
        *self.lock_listing() = Labelled::new(label);
    }
}

struct Undo<'a>(&'a AtomicUsize);

impl Drop for Undo<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `<uuid>.<node>` → (uuid, node); the node is empty for relayed matches.
pub fn parse_id(match_id: &str) -> Result<(Uuid, &str), RtError> {
    let (id, node) = match_id
        .split_once('.')
        .ok_or_else(|| RtError::bad_input("Invalid match ID"))?;
    let id = Uuid::parse_str(id).map_err(|_| RtError::bad_input("Invalid match ID"))?;
    Ok((id, node))
}

/// The stream of a relayed match.
pub fn relayed_stream(id: Uuid) -> Stream {
    Stream::new(StreamMode::MatchRelayed, id, Uuid::nil(), "")
}

/// Where every node's authoritative matches are listed for the others (a
/// stream no client or module can name: its subject is the largest uuid).
pub(crate) fn index_stream() -> Stream {
    Stream::new(StreamMode::MatchAuthoritative, Uuid::max(), Uuid::nil(), "")
}

/// The stream of an authoritative match run by `node`.
pub fn authoritative_stream(id: Uuid, node: &str) -> Stream {
    Stream::new(StreamMode::MatchAuthoritative, id, Uuid::nil(), node)
}

/// The match id a match stream stands for.
pub fn stream_match_id(stream: &Stream) -> String {
    format!("{}.{}", stream.subject, stream.label)
}

fn relayed_listing(id: Uuid, size: usize) -> MatchListing {
    MatchListing {
        match_id: format!("{id}."),
        authoritative: false,
        label: None,
        size,
        tick_rate: 0,
        handler_name: String::new(),
    }
}

fn not_found() -> RtError {
    RtError::new(RtCode::MatchNotFound, "Match not found")
}

fn busy(match_id: &str) -> RtError {
    RtError::new(
        RtCode::RuntimeException,
        format!(
            "match {match_id} is busy: its call queue is full (match.call_queue_size), try again"
        ),
    )
}

#[cfg(test)]
mod tests;
