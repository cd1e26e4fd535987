//! The replica of other nodes' presences: applies their numbered changes in
//! order, reads a node's snapshot when a number is missing (or the node is
//! new, or it rewrote its presences) and buffers changes until the snapshot
//! is in, and takes a node that stopped beating for gone.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use uuid::Uuid;

use super::wire::{self, Wire};
use super::{Shared, presence_key};
use crate::Realtime;
use crate::stream::Stream;
use crate::tracker::Presence;

/// What the replica hears.
#[derive(Debug)]
pub(crate) enum Input {
    /// A message from a shard.
    Wire(usize, Wire),
    /// A shard's subscription (re)started.
    Connected(usize),
    /// A node's presences on a shard, as read from its hash; `None` when it
    /// has none there (or the read failed).
    Snapshot {
        shard: usize,
        node: Arc<str>,
        read: Option<Snapshot>,
    },
}

#[derive(Debug)]
pub(crate) struct Snapshot {
    epoch: u64,
    seq: u64,
    presences: Vec<(Stream, Presence)>,
}

#[derive(Debug)]
enum Change {
    Track(Stream, Presence),
    Untrack(Stream, Uuid),
}

#[derive(Debug, Default)]
struct ShardState {
    /// The last change applied, once a snapshot was.
    seq: Option<u64>,
    /// Changes held back while a snapshot is being read.
    loading: Option<Vec<(u64, Change)>>,
    /// The node rewrote its presences while a read was under way.
    again: bool,
    /// A snapshot was applied before: a later one catches up on changes
    /// whose events this node's sessions missed.
    synced: bool,
}

#[derive(Debug)]
struct Peer {
    epoch: u64,
    last_seen: Instant,
    shards: Vec<ShardState>,
}

struct Replica {
    shared: Arc<Shared>,
    realtime: Arc<Realtime>,
    inputs: mpsc::Sender<Input>,
    peers: HashMap<Arc<str>, Peer>,
}

pub(super) async fn run(
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Input>,
    inputs: mpsc::Sender<Input>,
    realtime: Arc<Realtime>,
) {
    let mut tick = tokio::time::interval(Duration::from_millis(shared.config.heartbeat_ms / 2));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut r = Replica {
        shared,
        realtime,
        inputs,
        peers: HashMap::new(),
    };
    loop {
        tokio::select! {
            input = rx.recv() => match input {
                Some(input) => r.handle(input),
                None => return,
            },
            _ = tick.tick() => r.expire(Instant::now()),
        }
    }
}

impl Replica {
    fn handle(&mut self, input: Input) {
        match input {
            Input::Wire(shard, w) => self.wire(shard, w),
            Input::Connected(shard) => self.connected(shard),
            Input::Snapshot { shard, node, read } => self.snapshot(shard, node, read),
        }
    }

    /// The peer `node` in incarnation `epoch`: a new epoch means the old
    /// incarnation died (restarted under the same name), so its presences
    /// leave first.
    fn peer(&mut self, node: &Arc<str>, epoch: u64) -> &mut Peer {
        let shards = self.shared.shards.len();
        let fresh = || Peer {
            epoch,
            last_seen: Instant::now(),
            shards: (0..shards).map(|_| ShardState::default()).collect(),
        };
        let restarted = self.peers.get(node).is_some_and(|p| p.epoch != epoch);
        if restarted {
            tracing::info!(%node, "node restarted; its earlier presences leave");
            self.gone(node);
        }
        if !self.peers.contains_key(node) {
            lock(&self.shared.peers).insert(node.clone());
        }
        let peer = self.peers.entry(node.clone()).or_insert_with(fresh);
        peer.last_seen = Instant::now();
        peer
    }

    fn wire(&mut self, shard: usize, w: Wire) {
        let (node, epoch, seq, change) = match w {
            Wire::Track {
                node,
                epoch,
                seq,
                stream,
                presence,
            } => (node, epoch, seq, Change::Track(stream, presence)),
            Wire::Untrack {
                node,
                epoch,
                seq,
                stream,
                session,
            } => (node, epoch, seq, Change::Untrack(stream, session)),
            Wire::Resync { node, epoch } => {
                if node != self.shared.node {
                    self.peer(&node, epoch);
                    self.read(shard, node);
                }
                return;
            }
            Wire::Hello { node, epoch } => {
                if node != self.shared.node {
                    let known = self.peers.contains_key(&node);
                    let state = &self.peer(&node, epoch).shards[shard];
                    // A node we know nothing of on this shard yet (new, or
                    // its hash was not rewritten when we last read it).
                    if !known || (state.seq.is_none() && state.loading.is_none()) {
                        self.read(shard, node);
                    }
                }
                return;
            }
            _ => return,
        };
        if node == self.shared.node {
            return;
        }
        self.peer(&node, epoch);
        let change = match change {
            // Every presence of a node shares the one copy of its name.
            Change::Track(stream, mut presence) => {
                presence.node = self.name_of(&node);
                Change::Track(stream, presence)
            }
            untrack => untrack,
        };
        let state = &mut self.peers.get_mut(&node).expect("peer").shards[shard];
        if let Some(held) = &mut state.loading {
            held.push((seq, change));
            return;
        }
        match state.seq {
            Some(last) if seq <= last => {}
            Some(last) if seq == last + 1 => {
                state.seq = Some(seq);
                self.apply(change);
            }
            _ => {
                // A gap, or nothing read yet: read the node's presences and
                // hold this change until they are in.
                state.loading = Some(vec![(seq, change)]);
                self.fetch(shard, node);
            }
        }
    }

    /// The replica's own copy of a known node's name.
    fn name_of(&self, node: &Arc<str>) -> Arc<str> {
        self.peers
            .get_key_value(node)
            .map_or_else(|| node.clone(), |(name, _)| name.clone())
    }

    fn apply(&self, change: Change) {
        let hub = self.realtime.hub();
        match change {
            Change::Track(stream, presence) => {
                if hub.remote_tracked(&stream, presence.clone()) {
                    self.realtime.remote_joined(&stream, &presence);
                }
            }
            Change::Untrack(stream, session) => {
                if let Some(p) = hub.remote_untracked(session, &stream) {
                    self.realtime.remote_left(&stream, &p);
                }
            }
        }
    }

    /// Reads `node`'s presences on `shard` again, holding its changes.
    fn read(&mut self, shard: usize, node: Arc<str>) {
        let Some(peer) = self.peers.get_mut(&node) else {
            return;
        };
        let state = &mut peer.shards[shard];
        if state.loading.is_some() {
            state.again = true;
            return;
        }
        state.loading = Some(Vec::new());
        self.fetch(shard, node);
    }

    fn fetch(&self, shard: usize, node: Arc<str>) {
        let conn = self.shared.shards[shard].conn();
        let inputs = self.inputs.clone();
        tokio::spawn(async move {
            let read = match conn {
                Some(mut conn) => read_snapshot(&mut conn, &node).await,
                None => None,
            };
            let _ = inputs.send(Input::Snapshot { shard, node, read }).await;
        });
    }

    fn snapshot(&mut self, shard: usize, node: Arc<str>, read: Option<Snapshot>) {
        if node == self.shared.node {
            return;
        }
        if !self.peers.contains_key(&node) {
            // Found by a scan: a node we have not heard from yet.
            match &read {
                Some(s) => {
                    self.peer(&node, s.epoch).shards[shard].loading = Some(Vec::new());
                }
                None => return,
            }
        }
        let shared = self.shared.clone();
        let Some(peer) = self.peers.get_mut(&node) else {
            return;
        };
        let epoch = peer.epoch;
        let state = &mut peer.shards[shard];
        let held = state.loading.take().unwrap_or_default();
        let again = std::mem::take(&mut state.again);
        let synced = state.synced;
        let in_shard = |s: &Stream| shared.stream_shard(s) == shard;
        match read {
            Some(mut snap) if snap.epoch == epoch => {
                let name = self.name_of(&node);
                for (_, p) in &mut snap.presences {
                    p.node = name.clone();
                }
                let changes = self
                    .realtime
                    .hub()
                    .remote_replace(&node, in_shard, snap.presences);
                self.realtime.presences_reconciled(changes, synced);
                let mut last = snap.seq;
                let mut rest = held.into_iter();
                for (seq, change) in rest.by_ref() {
                    if seq <= last {
                        continue;
                    }
                    if seq != last + 1 {
                        // Still a gap: read again from this change on.
                        let mut more = vec![(seq, change)];
                        more.extend(rest);
                        let state = &mut self.peers.get_mut(&node).expect("peer").shards[shard];
                        state.loading = Some(more);
                        self.fetch(shard, node);
                        return;
                    }
                    last = seq;
                    self.apply(change);
                }
                let state = &mut self.peers.get_mut(&node).expect("peer").shards[shard];
                state.seq = Some(last);
                state.synced = true;
                if again {
                    self.read(shard, node);
                }
            }
            _ => {
                // Nothing there (the node has not rewritten its hash since
                // Redis came back, or it is gone) or an older incarnation's
                // hash: what is known stays until the node's next heartbeat
                // or change reads again (a node that is gone leaves with
                // its lease).
                state.seq = None;
                if again {
                    self.read(shard, node);
                }
            }
        }
    }

    /// A shard came (back): find the nodes with presences on it and read
    /// them all again.
    fn connected(&mut self, shard: usize) {
        let known: Vec<Arc<str>> = self.peers.keys().cloned().collect();
        for node in &known {
            self.read(shard, node.clone());
        }
        let Some(mut conn) = self.shared.shards[shard].conn() else {
            return;
        };
        let inputs = self.inputs.clone();
        let me = self.shared.node.clone();
        tokio::spawn(async move {
            let mut keys: Vec<String> = Vec::new();
            let mut cursor: u64 = 0;
            loop {
                let page: Result<(u64, Vec<String>), _> = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg("ludus:p:*")
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(&mut conn)
                    .await;
                match page {
                    Ok((next, batch)) => {
                        keys.extend(batch);
                        if next == 0 {
                            break;
                        }
                        cursor = next;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot list the cluster's nodes");
                        return;
                    }
                }
            }
            for key in keys {
                let Some(node) = key.strip_prefix("ludus:p:") else {
                    continue;
                };
                if *node == *me || known.iter().any(|k| **k == *node) {
                    continue;
                }
                let node: Arc<str> = Arc::from(node);
                let read = read_snapshot(&mut conn, &node).await;
                let _ = inputs.send(Input::Snapshot { shard, node, read }).await;
            }
        });
    }

    /// Takes the nodes that stopped beating for gone, unless it is this
    /// node that cannot hear anyone.
    fn expire(&mut self, now: Instant) {
        if !self.shared.settled(now) {
            return;
        }
        let lease = Duration::from_millis(self.shared.config.lease_ms);
        let dead: Vec<Arc<str>> = self
            .peers
            .iter()
            .filter(|(_, p)| now.duration_since(p.last_seen) > lease)
            .map(|(n, _)| n.clone())
            .collect();
        for node in dead {
            tracing::info!(%node, lease_ms = lease.as_millis() as u64, "node stopped beating; its presences leave");
            self.gone(&node);
        }
    }

    /// Forgets a node and tells this node's sessions its presences left.
    fn gone(&mut self, node: &Arc<str>) {
        self.peers.remove(node);
        lock(&self.shared.peers).remove(node);
        let left = self.realtime.hub().remote_node_gone(node);
        if !left.is_empty() {
            self.realtime.presences_gone(left);
        }
    }
}

/// A node's presences on one shard, from its hash.
async fn read_snapshot(
    conn: &mut redis::aio::MultiplexedConnection,
    node: &str,
) -> Option<Snapshot> {
    let all: Vec<(Vec<u8>, Vec<u8>)> = match redis::cmd("HGETALL")
        .arg(presence_key(node))
        .query_async(conn)
        .await
    {
        Ok(all) => all,
        Err(error) => {
            // What is known of the node stays; its next heartbeat reads again.
            tracing::warn!(%node, %error, "cannot read a node's presences; trying again on its next heartbeat");
            return None;
        }
    };
    let mut head = None;
    let mut presences = Vec::with_capacity(all.len());
    for (field, value) in all {
        if field == b"#" {
            let text = std::str::from_utf8(&value).ok()?;
            let (epoch, seq) = text.split_once(':')?;
            head = Some((epoch.parse().ok()?, seq.parse().ok()?));
        } else if let Some(p) = wire::parse_snapshot_value(&value) {
            presences.push(p);
        }
    }
    let (epoch, seq) = head?;
    Some(Snapshot {
        epoch,
        seq,
        presences,
    })
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
