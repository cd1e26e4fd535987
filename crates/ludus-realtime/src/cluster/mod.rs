//! The cluster: many Ludus nodes on one PostgreSQL, with Redis as the bus.
//!
//! Every node keeps a replica of every node's presences in its own tracker,
//! so listing a stream, counting it or asking whether a user is online stays
//! a local read. What crosses nodes goes through Redis, on the shard a
//! consistent hash of the stream (or user, or session) picks, so everything
//! about one stream is ordered on one shard:
//! - `ludus:presence`: each node's presence changes, numbered per shard
//!   (`seq`) within the node's incarnation (`epoch`).
//! - `ludus:p:<node>`: a hash per node and shard holding that node's
//!   presences on the shard's streams, under a lease: the node renews its
//!   expiry every heartbeat, so a dead node's presences leave Redis on their
//!   own. A node that sees a gap in another's numbers, or a new node, reads
//!   the hash again (a snapshot) and applies the changes it buffered since.
//! - `ludus:node:<node>`: messages for that node's sessions, one publish per
//!   node that has recipients, whatever their number.
//! - `ludus:all`: heartbeats, `session.single_socket` takeovers and
//!   disconnects of sessions held elsewhere.
//! - `ludus:lease:<node>` (first shard): the node's name is taken while it
//!   runs, so two nodes cannot share one.
//! - `ludus:matchmaker` (first shard): the node that forms matchmaker groups
//!   from the pooled tickets of every node (they cross on `ludus:all` of
//!   the first shard); another takes the role when it stops renewing.
//!
//! A node whose heartbeats stop for `cluster.lease_ms` is gone: every other
//! node drops its presences and tells its own sessions they left (each node
//! only its own, so nobody hears a leave twice). When Redis goes away, nodes
//! serve their local traffic, reconnect with backoff, rewrite their hashes
//! and re-read everyone else's. Nothing persisted depends on Redis.

mod link;
mod replica;
mod wire;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::Realtime;
use crate::bus::{Bus, NodeCall, NodeCast, NodeReply, ReplyFuture};
use crate::codec::{Encoded, Format};
use crate::error::{RtCode, RtError};
use crate::outbound::CloseReason;
use crate::stream::Stream;
use crate::tracker::Presence;
use wire::Wire;

/// `cluster.*`: where the bus is, and how fast a dead node is noticed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// Redis URLs (`redis://host:port`); empty: a single node. Several are
    /// shards, each stream on the one a consistent hash of its key picks.
    /// In a file a list or a comma-separated string; the flag repeats.
    #[serde(deserialize_with = "urls")]
    pub redis: Vec<String>,
    /// A node silent this long is gone and its presences leave.
    pub lease_ms: u64,
    /// How often a node says it is alive and renews its lease.
    pub heartbeat_ms: u64,
    /// Changes and messages waiting for one shard; past it they are dropped
    /// (and the node's presences rewritten once the shard keeps up), so a
    /// slow Redis never stalls a socket.
    pub queue_size: usize,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            redis: Vec::new(),
            lease_ms: 6_000,
            heartbeat_ms: 1_000,
            queue_size: 65_536,
        }
    }
}

fn urls<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    let all = match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    };
    Ok(all
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect())
}

impl ClusterConfig {
    /// Whether this node joins a cluster.
    pub fn enabled(&self) -> bool {
        !self.redis.is_empty()
    }

    /// The first bad key and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        for url in &self.redis {
            if let Err(e) = redis::Client::open(url.as_str()) {
                return Err(("cluster.redis", format!("`{url}` is not a Redis URL: {e}")));
            }
        }
        if self.heartbeat_ms < 50 {
            return Err(("cluster.heartbeat_ms", "must be at least 50".into()));
        }
        if self.lease_ms < 3 * self.heartbeat_ms {
            return Err((
                "cluster.lease_ms",
                "must be at least three heartbeats (cluster.heartbeat_ms), or a busy node is taken for dead".into(),
            ));
        }
        if self.queue_size < 64 {
            return Err(("cluster.queue_size", "must be at least 64".into()));
        }
        Ok(())
    }
}

/// Why a node could not join its cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot reach Redis at {url}: {source}")]
    Redis {
        url: String,
        #[source]
        source: redis::RedisError,
    },
    #[error(
        "a node named `{0}` is already running in this cluster (Redis key ludus:lease:{0} is held); give every node its own `name`"
    )]
    NameTaken(String),
}

/// One change or message on its way to a shard.
#[derive(Debug)]
enum Op {
    Track(Stream, Presence),
    Untrack(Stream, Uuid),
    Publish(String, Bytes),
    Heartbeat,
    /// Answered once every op queued before it has been sent to Redis.
    Fence(tokio::sync::oneshot::Sender<()>),
}

/// One Redis instance and what goes to it.
struct Shard {
    index: usize,
    url: String,
    client: redis::Client,
    ops: mpsc::Sender<Op>,
    /// Set when an op was dropped: the node's hash must be rewritten.
    dirty: AtomicBool,
    /// The command connection, while there is one (the writer keeps it).
    conn: Mutex<Option<redis::aio::MultiplexedConnection>>,
    /// Since when the subscription has been up; `None` while down.
    up_since: Mutex<Option<Instant>>,
}

impl Shard {
    fn send(&self, op: Op) {
        if self.ops.try_send(op).is_err() {
            // Full (or shutting down): the hash is rewritten when it drains.
            if !self.dirty.swap(true, Ordering::AcqRel) {
                tracing::warn!(shard = %self.url, "cluster queue full, dropping changes until it drains");
            }
        }
    }

    fn conn(&self) -> Option<redis::aio::MultiplexedConnection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What the hub and the tasks share.
struct Shared {
    node: Arc<str>,
    epoch: u64,
    config: ClusterConfig,
    shards: Vec<Shard>,
    /// Calls to other nodes waiting for their answer, by id.
    calls: Mutex<std::collections::HashMap<u64, tokio::sync::oneshot::Sender<NodeReply>>>,
    next_call: std::sync::atomic::AtomicU64,
    /// Whether this node holds the matchmaker's role (`ludus:matchmaker`).
    matchmaker: AtomicBool,
    /// Other nodes' broadcasts for the server; an empty one means "some may
    /// have been missed" (the bus was down).
    broadcasts: mpsc::UnboundedSender<Bytes>,
    /// The clock of this node's probes, and how long they took.
    started: std::time::Instant,
    lag: ludus_core::metrics::Histogram,
    /// Connections to a Redis shard lost so far.
    reconnects: std::sync::atomic::AtomicU64,
    /// The other nodes alive now, as the replica sees them.
    peers: Mutex<std::collections::BTreeSet<Arc<str>>>,
}

const PRESENCE: &str = "ludus:presence";
const ALL: &str = "ludus:all";

fn node_channel(node: &str) -> String {
    format!("ludus:node:{node}")
}

fn presence_key(node: &str) -> String {
    format!("ludus:p:{node}")
}

/// Who forms the matchmaker's groups: the node named here, while it renews.
const MATCHMAKER_KEY: &str = "ludus:matchmaker";

fn lease_key(node: &str) -> String {
    format!("ludus:lease:{node}")
}

impl Shared {
    /// Publishes `wire` on `node`'s channel, on the shard `key` picks.
    fn to_node(&self, node: &str, key: &[u8], wire: &Wire) {
        self.shard_of(key)
            .send(Op::Publish(node_channel(node), wire.encode()));
    }

    /// The answer to call `id` arrived.
    fn answered(&self, id: u64, reply: NodeReply) {
        let waiting = self
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        if let Some(tx) = waiting {
            let _ = tx.send(reply);
        }
    }

    fn shard_of(&self, key: &[u8]) -> &Shard {
        &self.shards[jump_hash(fnv1a(key), self.shards.len())]
    }

    fn stream_shard(&self, stream: &Stream) -> usize {
        self.shard_of(&wire::stream_key(stream)).index
    }

    /// Whether every shard has been connected for at least `lease_ms`: only
    /// then does a silent node count as gone, not as cut off from us.
    fn settled(&self, now: Instant) -> bool {
        let lease = Duration::from_millis(self.config.lease_ms);
        self.shards.iter().all(|s| {
            s.up_since
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some_and(|t| now.duration_since(t) >= lease)
        })
    }
}

/// The bus of a cluster node.
struct RedisBus(Arc<Shared>);

impl Bus for RedisBus {
    fn tracked(&self, stream: &Stream, presence: &Presence) {
        self.0
            .shard_of(&wire::stream_key(stream))
            .send(Op::Track(stream.clone(), presence.clone()));
    }

    fn untracked(&self, stream: &Stream, session: Uuid) {
        self.0
            .shard_of(&wire::stream_key(stream))
            .send(Op::Untrack(stream.clone(), session));
    }

    fn to_stream(&self, node: &str, stream: &Stream, skip: Option<Uuid>, message: &Arc<Encoded>) {
        let Some(envelope) = message.bytes(Format::Protobuf) else {
            return;
        };
        let key = wire::stream_key(stream);
        let payload = Wire::ToStream {
            stream: stream.clone(),
            skip,
            envelope,
        }
        .encode();
        self.0
            .shard_of(&key)
            .send(Op::Publish(node_channel(node), payload));
    }

    fn to_stream_everywhere(&self, stream: &Stream, skip: Option<Uuid>, message: &Arc<Encoded>) {
        let Some(envelope) = message.bytes(Format::Protobuf) else {
            return;
        };
        let key = wire::stream_key(stream);
        let payload = Wire::ToStreamAll {
            node: self.0.node.clone(),
            stream: stream.clone(),
            skip,
            envelope,
        }
        .encode();
        self.0.shard_of(&key).send(Op::Publish(ALL.into(), payload));
    }

    fn to_sessions(&self, node: &str, sessions: &[Uuid], message: &Arc<Encoded>) {
        let (Some(first), Some(envelope)) = (sessions.first(), message.bytes(Format::Protobuf))
        else {
            return;
        };
        let payload = Wire::ToSessions {
            sessions: sessions.to_vec(),
            envelope,
        }
        .encode();
        self.0
            .shard_of(first.as_bytes())
            .send(Op::Publish(node_channel(node), payload));
    }

    fn to_sessions_everywhere(&self, sessions: &[Uuid], message: &Arc<Encoded>) {
        let (Some(first), Some(envelope)) = (sessions.first(), message.bytes(Format::Protobuf))
        else {
            return;
        };
        let payload = Wire::ToSessionsAll {
            node: self.0.node.clone(),
            sessions: sessions.to_vec(),
            envelope,
        }
        .encode();
        self.0
            .shard_of(first.as_bytes())
            .send(Op::Publish(ALL.into(), payload));
    }

    fn to_followers(&self, user: Uuid, message: &Arc<Encoded>) {
        let Some(envelope) = message.bytes(Format::Protobuf) else {
            return;
        };
        let payload = Wire::ToFollowers {
            node: self.0.node.clone(),
            user,
            envelope,
        }
        .encode();
        self.0
            .shard_of(user.as_bytes())
            .send(Op::Publish(ALL.into(), payload));
    }

    fn call(&self, node: &str, call: NodeCall, timeout: Duration) -> ReplyFuture {
        let shared = self.0.clone();
        let id = shared.next_call.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        shared
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        let key = match &call {
            NodeCall::MatchJoin { match_id, .. }
            | NodeCall::MatchSignal { match_id, .. }
            | NodeCall::MatchState { match_id } => *match_id.as_bytes(),
            NodeCall::Status => [0; 16],
            NodeCall::Party { presence, .. } => *presence.session_id.as_bytes(),
        };
        let wire = Wire::Call {
            from: shared.node.clone(),
            id,
            call,
        };
        shared.to_node(node, &key, &wire);
        let node = node.to_owned();
        Box::pin(async move {
            match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(reply)) => reply,
                _ => {
                    shared
                        .calls
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&id);
                    Err(RtError::new(
                        RtCode::RuntimeException,
                        format!("node {node} did not answer in time, try again"),
                    ))
                }
            }
        })
    }

    fn cast(&self, node: &str, cast: NodeCast) {
        // By match (or session): a match's data stays in order.
        let key = match &cast {
            NodeCast::MatchData { match_id, .. } => *match_id.as_bytes(),
            NodeCast::Untrack { session, .. } => *session.as_bytes(),
            NodeCast::Track { presence, .. } => *presence.session_id.as_bytes(),
        };
        self.0.to_node(node, &key, &Wire::Cast(cast));
    }

    fn tickets(&self, added: Vec<crate::matchmaker::TicketRecord>, removed: Vec<String>) {
        // One shard for the whole pool: its changes stay in order.
        let wire = Wire::Tickets {
            node: self.0.node.clone(),
            added,
            removed,
        };
        self.0.shards[0].send(Op::Publish(ALL.into(), wire.encode()));
    }

    fn matchmaker_role(&self) -> bool {
        self.0.matchmaker.load(Ordering::Acquire)
    }

    fn clustered(&self) -> bool {
        true
    }

    fn peers(&self) -> Vec<String> {
        self.0
            .peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|p| p.to_string())
            .collect()
    }

    fn health(&self) -> Option<crate::bus::BusHealth> {
        Some(crate::bus::BusHealth {
            reconnects: self.0.reconnects.load(Ordering::Relaxed),
            lag: self.0.lag.snapshot(),
        })
    }

    fn broadcast(&self, payload: Bytes) {
        let wire = Wire::Broadcast {
            node: self.0.node.clone(),
            payload,
        };
        self.0.shards[0].send(Op::Publish(ALL.into(), wire.encode()));
    }

    fn session_added(&self, user: Uuid, session: Uuid) {
        let payload = Wire::SessionAdded {
            node: self.0.node.clone(),
            user,
            session,
        }
        .encode();
        self.0
            .shard_of(user.as_bytes())
            .send(Op::Publish(ALL.into(), payload));
    }

    fn to_everyone(&self, message: &Arc<Encoded>) {
        let Some(envelope) = message.bytes(Format::Protobuf) else {
            return;
        };
        let payload = Wire::ToEveryone {
            node: self.0.node.clone(),
            envelope,
        }
        .encode();
        self.0.shards[0].send(Op::Publish(ALL.into(), payload));
    }

    fn users_banned(&self, users: &[Uuid]) {
        let payload = Wire::Banned {
            node: self.0.node.clone(),
            users: users.to_vec(),
        }
        .encode();
        self.0.shards[0].send(Op::Publish(ALL.into(), payload));
    }

    fn accounts_wiped(&self) {
        let payload = Wire::AccountsWiped {
            node: self.0.node.clone(),
        }
        .encode();
        self.0.shards[0].send(Op::Publish(ALL.into(), payload));
    }

    fn disconnect(&self, session: Uuid, reason: CloseReason) {
        let payload = Wire::Disconnect {
            session,
            reason: reason.to_u8(),
        }
        .encode();
        self.0
            .shard_of(session.as_bytes())
            .send(Op::Publish(ALL.into(), payload));
    }
}

/// A node that has taken its name in the cluster and not started yet.
pub struct Cluster {
    shared: Arc<Shared>,
    ops: Vec<mpsc::Receiver<Op>>,
    heard: Option<mpsc::UnboundedReceiver<Bytes>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("node", &self.shared.node)
            .field("shards", &self.shared.shards.len())
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// Connects to every shard and takes `node`'s lease (waiting out the
    /// lease of a node of the same name that just died).
    pub async fn connect(config: &ClusterConfig, node: &str) -> Result<Cluster, ClusterError> {
        let epoch = u64::from_le_bytes(Uuid::new_v4().as_bytes()[..8].try_into().unwrap_or([1; 8]));
        let mut shards = Vec::new();
        let mut receivers = Vec::new();
        let (broadcasts, heard) = mpsc::unbounded_channel();
        for (index, url) in config.redis.iter().enumerate() {
            let fail = |source| ClusterError::Redis {
                url: url.clone(),
                source,
            };
            let client = redis::Client::open(url.as_str()).map_err(fail)?;
            let conn = tokio::time::timeout(
                Duration::from_secs(5),
                client.get_multiplexed_async_connection_with_config(&link::connection_config()),
            )
            .await
            .map_err(|_| {
                fail(redis::RedisError::from(std::io::Error::from(
                    std::io::ErrorKind::TimedOut,
                )))
            })?
            .map_err(fail)?;
            let (tx, rx) = mpsc::channel(config.queue_size);
            receivers.push(rx);
            shards.push(Shard {
                index,
                url: url.clone(),
                client,
                ops: tx,
                dirty: AtomicBool::new(false),
                conn: Mutex::new(Some(conn)),
                up_since: Mutex::new(None),
            });
        }
        let shared = Arc::new(Shared {
            node: Arc::from(node),
            epoch,
            config: config.clone(),
            shards,
            calls: Mutex::new(std::collections::HashMap::new()),
            next_call: std::sync::atomic::AtomicU64::new(1),
            matchmaker: AtomicBool::new(false),
            broadcasts,
            started: std::time::Instant::now(),
            lag: Default::default(),
            reconnects: Default::default(),
            peers: Default::default(),
        });
        link::take_lease(&shared).await?;
        tracing::info!(node, shards = shared.shards.len(), "joined the cluster");
        Ok(Cluster {
            shared,
            ops: receivers,
            heard: Some(heard),
        })
    }

    /// What other nodes broadcast for the server (once): payloads as sent,
    /// and an empty payload whenever some may have been missed.
    pub fn broadcasts(&mut self) -> Option<mpsc::UnboundedReceiver<Bytes>> {
        self.heard.take()
    }

    /// The bus the node's hub sends through.
    pub fn bus(&self) -> Arc<dyn Bus> {
        Arc::new(RedisBus(self.shared.clone()))
    }

    /// Starts the links to every shard and the replica of other nodes'
    /// presences, feeding `realtime` (built on [`Cluster::bus`]).
    pub fn start(self, realtime: Arc<Realtime>) -> ClusterHandle {
        let (inputs, rx) = mpsc::channel(self.shared.config.queue_size);
        let mut tasks = Vec::new();
        let mut writers = Vec::new();
        for (shard, ops) in self.ops.into_iter().enumerate() {
            writers.push(tokio::spawn(link::write(
                self.shared.clone(),
                shard,
                ops,
                realtime.clone(),
            )));
            tasks.push(tokio::spawn(link::subscribe(
                self.shared.clone(),
                shard,
                inputs.clone(),
                realtime.clone(),
            )));
            tasks.push(tokio::spawn(link::heartbeat(self.shared.clone(), shard)));
        }
        tasks.push(tokio::spawn(link::matchmaker_role(self.shared.clone())));
        tasks.push(tokio::spawn(replica::run(
            self.shared.clone(),
            rx,
            inputs,
            realtime,
        )));
        ClusterHandle {
            shared: self.shared,
            tasks,
            writers,
        }
    }
}

/// A running cluster node; [`ClusterHandle::leave`] lets the name go.
pub struct ClusterHandle {
    shared: Arc<Shared>,
    /// Heartbeats, subscriptions, the matchmaker's role and the replica.
    tasks: Vec<JoinHandle<()>>,
    /// One writer per shard.
    writers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for ClusterHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterHandle")
            .field("node", &self.shared.node)
            .finish_non_exhaustive()
    }
}

impl ClusterHandle {
    /// Lets queued changes go out (at most `grace`), then removes this
    /// node's presences and lease from Redis and stops its tasks.
    ///
    /// The tasks that write on their own (heartbeats renew the lease, the
    /// matchmaker's role, a resubscription's heartbeat) stop first, and each
    /// writer answers a fence once everything queued before it is sent, so
    /// nothing this node wrote lands after the release and brings a key
    /// back.
    pub async fn leave(self, grace: Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        for t in &self.tasks {
            t.abort();
        }
        for t in self.tasks {
            let _ = t.await;
        }
        let mut fences = Vec::new();
        for shard in &self.shared.shards {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let sent = tokio::time::timeout_at(deadline, shard.ops.send(Op::Fence(tx))).await;
            if matches!(sent, Ok(Ok(()))) {
                fences.push(rx);
            }
        }
        for fence in fences {
            let _ = tokio::time::timeout_at(deadline, fence).await;
        }
        for t in &self.writers {
            t.abort();
        }
        for t in self.writers {
            let _ = t.await;
        }
        link::release(&self.shared).await;
        tracing::info!(node = %self.shared.node, "left the cluster");
    }
}

/// 64-bit FNV-1a: a stable hash of a key (the same on every node).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Lamping and Veach's jump consistent hash (as Centrifugo shards Redis):
/// adding a shard moves only 1/n of the keys.
fn jump_hash(mut key: u64, buckets: usize) -> usize {
    let (mut b, mut j): (i64, i64) = (-1, 0);
    while j < buckets as i64 {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b.max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jump_hash_spreads_and_moves_little() {
        let keys: Vec<u64> = (0..10_000u64).map(|k| fnv1a(&k.to_le_bytes())).collect();
        let mut counts = [0usize; 4];
        for k in &keys {
            counts[jump_hash(*k, 4)] += 1;
        }
        assert!(
            counts.iter().all(|c| (2_000..3_000).contains(c)),
            "{counts:?}"
        );
        let moved = keys
            .iter()
            .filter(|k| jump_hash(**k, 4) != jump_hash(**k, 5))
            .count();
        // About a fifth of the keys move to the new shard, none elsewhere.
        assert!((1_500..2_500).contains(&moved), "{moved}");
        assert!(keys.iter().all(|k| {
            let (a, b) = (jump_hash(*k, 4), jump_hash(*k, 5));
            a == b || b == 4
        }));
        assert_eq!(jump_hash(12345, 1), 0);
    }

    #[test]
    fn a_full_shard_queue_drops_and_never_waits() {
        let (tx, mut rx) = mpsc::channel(2);
        let shard = Shard {
            index: 0,
            url: "redis://127.0.0.1:1".into(),
            client: redis::Client::open("redis://127.0.0.1:1").unwrap(),
            ops: tx,
            dirty: AtomicBool::new(false),
            conn: Mutex::new(None),
            up_since: Mutex::new(None),
        };
        // A Redis that does not keep up: nobody drains the queue.
        for _ in 0..100 {
            shard.send(Op::Heartbeat);
        }
        assert!(
            shard.dirty.load(Ordering::Acquire),
            "dropped changes mark the node's presences for a rewrite"
        );
        let mut queued = 0;
        while rx.try_recv().is_ok() {
            queued += 1;
        }
        assert_eq!(queued, 2, "the queue holds its bound, no more");
    }

    #[test]
    fn config_reads_lists_and_comma_lists_and_checks_keys() {
        let c: ClusterConfig =
            serde_json::from_str(r#"{"redis": "redis://a:1, redis://b:2"}"#).unwrap();
        assert_eq!(c.redis, vec!["redis://a:1", "redis://b:2"]);
        let c: ClusterConfig = serde_json::from_str(r#"{"redis": ["redis://a:1"]}"#).unwrap();
        assert!(c.enabled());
        assert!(c.check().is_ok());
        let bad = ClusterConfig {
            redis: vec!["http://nope".into()],
            ..Default::default()
        };
        assert_eq!(bad.check().unwrap_err().0, "cluster.redis");
        let short = ClusterConfig {
            lease_ms: 1_000,
            heartbeat_ms: 1_000,
            ..Default::default()
        };
        assert_eq!(short.check().unwrap_err().0, "cluster.lease_ms");
        assert!(!ClusterConfig::default().enabled());
    }
}
