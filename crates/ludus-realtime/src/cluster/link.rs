//! The links to one Redis shard: the writer (this node's changes and
//! messages, in order, batched into one MULTI per round trip), the
//! subscriber (what other nodes say; reconnects with backoff and then has
//! the writer rewrite this node's presences) and the heartbeat.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use tokio::sync::mpsc;

use super::replica::Input;
use super::wire::{self, Wire};
use super::{ALL, ClusterError, Op, PRESENCE, Shard, Shared};
use crate::Realtime;
use crate::codec::{self, Encoded, Format};
use crate::outbound::CloseReason;
use crate::stream::Stream;
use crate::tracker::Presence;

/// Most ops sent in one round trip.
const BATCH: usize = 512;
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Takes the node's name: waits out a dead namesake's lease, refuses a
/// live one.
pub(super) async fn take_lease(shared: &Shared) -> Result<(), ClusterError> {
    let shard = &shared.shards[0];
    let key = super::lease_key(&shared.node);
    let deadline = Instant::now() + Duration::from_millis(shared.config.lease_ms * 2);
    loop {
        let mut conn = shard.conn().expect("connected in Cluster::connect");
        let taken: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(shared.epoch)
            .arg("NX")
            .arg("PX")
            .arg(shared.config.lease_ms)
            .query_async(&mut conn)
            .await
            .map_err(|source| ClusterError::Redis {
                url: shard.url.clone(),
                source,
            })?;
        if taken.is_some() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(ClusterError::NameTaken(shared.node.to_string()));
        }
        tracing::info!(node = %shared.node, "waiting for the lease of a node of the same name to run out");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Removes this node's presences and lease (it is leaving).
pub(super) async fn release(shared: &Shared) {
    for shard in &shared.shards {
        if let Some(mut conn) = shard.conn() {
            let mut pipe = redis::pipe();
            pipe.del(super::presence_key(&shared.node)).ignore();
            if shard.index == 0 {
                pipe.del(super::lease_key(&shared.node)).ignore();
                if shared.matchmaker.load(std::sync::atomic::Ordering::Acquire) {
                    pipe.del(super::MATCHMAKER_KEY).ignore();
                }
            }
            let _ = tokio::time::timeout(CONNECT_TIMEOUT, pipe.query_async::<()>(&mut conn)).await;
        }
    }
}

/// How long one round trip may take: a node's rewrite of its presences (one
/// MULTI of every presence it has on the shard) and another's read of it
/// take longer than the client's 500 ms default under load, and a reply
/// given up on is a rewrite started again.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) fn connection_config() -> redis::AsyncConnectionConfig {
    redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
}

async fn connect(shard: &Shard) -> Option<redis::aio::MultiplexedConnection> {
    match tokio::time::timeout(
        CONNECT_TIMEOUT,
        shard
            .client
            .get_multiplexed_async_connection_with_config(&connection_config()),
    )
    .await
    {
        Ok(Ok(c)) => Some(c),
        _ => None,
    }
}

/// Sends this node's ops to one shard, in order; a batch that cannot be sent
/// is dropped and the node's presences are rewritten once it can.
pub(super) async fn write(
    shared: Arc<Shared>,
    index: usize,
    mut ops: mpsc::Receiver<Op>,
    realtime: Arc<Realtime>,
) {
    let shard = &shared.shards[index];
    let key = super::presence_key(&shared.node);
    let mut seq: u64 = 0;
    let mut batch = Vec::with_capacity(BATCH);
    let mut warned_at: Option<Instant> = None;
    while ops.recv_many(&mut batch, BATCH).await > 0 {
        let mut conn = match shard.conn() {
            Some(c) => c,
            None => match connect(shard).await {
                Some(c) => {
                    *shard.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(c.clone());
                    c
                }
                None => {
                    shard
                        .dirty
                        .store(true, std::sync::atomic::Ordering::Release);
                    batch.clear();
                    continue;
                }
            },
        };
        let mut pipe = redis::pipe();
        pipe.atomic();
        if shard.dirty.swap(false, std::sync::atomic::Ordering::AcqRel) {
            resync(&shared, index, &realtime, &key, seq, &mut pipe);
        }
        let mut fences = Vec::new();
        for op in batch.drain(..) {
            match op {
                Op::Fence(done) => fences.push(done),
                Op::Track(stream, presence) => {
                    seq += 1;
                    hash_presence(&mut pipe, &key, &stream, &presence);
                    hash_head(&mut pipe, &key, shared.epoch, seq);
                    let event = Wire::Track {
                        node: shared.node.clone(),
                        epoch: shared.epoch,
                        seq,
                        stream,
                        presence,
                    };
                    pipe.publish(PRESENCE, event.encode().as_ref()).ignore();
                }
                Op::Untrack(stream, session) => {
                    seq += 1;
                    pipe.hdel(&key, wire::snapshot_field(&stream, session).as_ref())
                        .ignore();
                    hash_head(&mut pipe, &key, shared.epoch, seq);
                    let event = Wire::Untrack {
                        node: shared.node.clone(),
                        epoch: shared.epoch,
                        seq,
                        stream,
                        session,
                    };
                    pipe.publish(PRESENCE, event.encode().as_ref()).ignore();
                }
                Op::Publish(channel, payload) => {
                    pipe.publish(channel, payload.as_ref()).ignore();
                }
                Op::Heartbeat => {
                    pipe.pexpire(&key, shared.config.lease_ms as i64).ignore();
                    if index == 0 {
                        pipe.cmd("SET")
                            .arg(super::lease_key(&shared.node))
                            .arg(shared.epoch)
                            .arg("PX")
                            .arg(shared.config.lease_ms)
                            .ignore();
                    }
                    let hello = Wire::Hello {
                        node: shared.node.clone(),
                        epoch: shared.epoch,
                    };
                    pipe.publish(ALL, hello.encode().as_ref()).ignore();
                }
            }
        }
        let sent = if pipe.is_empty() {
            Ok(())
        } else {
            pipe.query_async::<()>(&mut conn).await
        };
        if let Err(error) = sent {
            *shard.conn.lock().unwrap_or_else(|e| e.into_inner()) = None;
            shard
                .dirty
                .store(true, std::sync::atomic::Ordering::Release);
            if warned_at.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                warned_at = Some(Instant::now());
                tracing::warn!(shard = %shard.url, %error, "cannot write to the cluster bus; local traffic goes on, presences are rewritten on reconnect");
            }
        }
        for done in fences {
            let _ = done.send(());
        }
    }
}

/// Rewrites this node's presences on the shard from its tracker, then says
/// so, so that the others read them again.
fn resync(
    shared: &Shared,
    index: usize,
    realtime: &Realtime,
    key: &str,
    seq: u64,
    pipe: &mut redis::Pipeline,
) {
    let own = realtime
        .hub()
        .own_presences(|s| shared.stream_shard(s) == index);
    pipe.del(key).ignore();
    for (stream, p) in &own {
        hash_presence(pipe, key, stream, p);
    }
    hash_head(pipe, key, shared.epoch, seq);
    pipe.pexpire(key, shared.config.lease_ms as i64).ignore();
    let event = Wire::Resync {
        node: shared.node.clone(),
        epoch: shared.epoch,
    };
    pipe.publish(PRESENCE, event.encode().as_ref()).ignore();
}

/// One presence in the node's hash.
fn hash_presence(pipe: &mut redis::Pipeline, key: &str, stream: &Stream, p: &Presence) {
    pipe.hset(
        key,
        wire::snapshot_field(stream, p.session_id).as_ref(),
        wire::snapshot_value(stream, p).as_ref(),
    )
    .ignore();
}

/// The hash's head, `epoch:seq`: the last change its presences include.
fn hash_head(pipe: &mut redis::Pipeline, key: &str, epoch: u64, seq: u64) {
    pipe.hset(key, "#", format!("{epoch}:{seq}")).ignore();
}

/// Listens to one shard: messages for this node's sessions are delivered
/// here and now; presence changes and heartbeats go to the replica.
pub(super) async fn subscribe(
    shared: Arc<Shared>,
    index: usize,
    inputs: mpsc::Sender<Input>,
    realtime: Arc<Realtime>,
) {
    let shard = &shared.shards[index];
    let own = super::node_channel(&shared.node);
    let mut backoff = BACKOFF_MIN;
    let mut was_up = false;
    loop {
        let pubsub = async {
            let mut ps = tokio::time::timeout(CONNECT_TIMEOUT, shard.client.get_async_pubsub())
                .await
                .ok()?
                .ok()?;
            ps.subscribe(&[PRESENCE, ALL, own.as_str()]).await.ok()?;
            Some(ps)
        }
        .await;
        if let Some(ps) = pubsub {
            backoff = BACKOFF_MIN;
            *shard.up_since.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            let was_reconnect = was_up;
            if was_up {
                // The writer's connection died with the server: a fresh one.
                *shard.conn.lock().unwrap_or_else(|e| e.into_inner()) = None;
                tracing::info!(shard = %shard.url, "cluster bus reconnected; re-announcing presences");
            }
            was_up = true;
            // What others said while we were away is read again, and what we
            // did is written again.
            shard
                .dirty
                .store(true, std::sync::atomic::Ordering::Release);
            let _ = shard.ops.try_send(Op::Heartbeat);
            if inputs.send(Input::Connected(index)).await.is_err() {
                return;
            }
            if index == 0 && was_reconnect {
                // Broadcasts made while we were away are lost: the server
                // reads what it must again.
                let _ = shared.broadcasts.send(bytes::Bytes::new());
            }
            if index == 0 {
                // Every pool hears of this node's tickets again.
                let own = realtime.matchmaker.core().own_tickets(&shared.node);
                if !own.is_empty() {
                    realtime.hub().tickets_changed(own, Vec::new());
                }
            }
            let mut messages = ps.into_on_message();
            while let Some(msg) = messages.next().await {
                let Some(w) = Wire::decode(msg.get_payload_bytes()) else {
                    tracing::warn!(shard = %shard.url, channel = msg.get_channel_name(), "dropping a cluster message that does not parse");
                    continue;
                };
                if let Some(w) = deliver(&shared, &realtime, w)
                    && inputs.send(Input::Wire(index, w)).await.is_err()
                {
                    return;
                }
            }
            *shard.up_since.lock().unwrap_or_else(|e| e.into_inner()) = None;
            shared
                .reconnects
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(shard = %shard.url, "lost the cluster bus; serving local traffic, reconnecting");
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Handles the messages that need no replica state; hands back the rest.
fn deliver(shared: &Arc<Shared>, realtime: &Arc<Realtime>, w: Wire) -> Option<Wire> {
    let hub = realtime.hub();
    let decode = |bytes: &[u8]| match codec::decode(Format::Protobuf, bytes) {
        Ok(envelope) => Some(Arc::new(Encoded::new(envelope))),
        Err(error) => {
            tracing::warn!(%error, "dropping a cluster message with a bad envelope");
            None
        }
    };
    match w {
        Wire::ToStream {
            stream,
            skip,
            envelope,
        } => {
            if let Some(message) = decode(&envelope) {
                hub.remote_to_stream(&stream, skip, &message);
            }
        }
        Wire::ToStreamAll {
            node,
            stream,
            skip,
            envelope,
        } => {
            if node != shared.node
                && hub.count(&stream) > 0
                && let Some(message) = decode(&envelope)
            {
                hub.remote_to_stream(&stream, skip, &message);
            }
        }
        Wire::ToSessions { sessions, envelope } => {
            if let Some(message) = decode(&envelope) {
                hub.remote_to_sessions(&sessions, &message);
            }
        }
        Wire::ToSessionsAll {
            node,
            sessions,
            envelope,
        } => {
            if node != shared.node
                && sessions.iter().any(|s| hub.session(*s).is_some())
                && let Some(message) = decode(&envelope)
            {
                hub.remote_to_sessions(&sessions, &message);
            }
        }
        Wire::ToFollowers {
            node,
            user,
            envelope,
        } => {
            if node != shared.node
                && let Some(message) = decode(&envelope)
            {
                realtime.status.deliver_to_followers(user, &message);
            }
        }
        Wire::SessionAdded { node, user, .. } => {
            if node != shared.node {
                hub.remote_session_added(user);
            }
        }
        Wire::ToEveryone { node, envelope } => {
            if node != shared.node
                && let Some(message) = decode(&envelope)
            {
                hub.remote_to_everyone(&message);
            }
        }
        Wire::Banned { node, users } => {
            if node != shared.node {
                hub.remote_banned(&users);
            }
        }
        Wire::AccountsWiped { node } => {
            if node != shared.node {
                hub.remote_accounts_wiped();
            }
        }
        Wire::Disconnect { session, reason } => {
            if let Some(reason) = CloseReason::from_u8(reason) {
                hub.remote_disconnect(session, reason);
            }
        }
        Wire::Call { from, id, call } => {
            let (shared, realtime) = (shared.clone(), realtime.clone());
            tokio::spawn(async move {
                let reply = realtime.serve_call(call).await;
                shared.to_node(&from, &id.to_le_bytes(), &Wire::Reply { id, reply });
            });
        }
        Wire::Reply { id, reply } => shared.answered(id, reply),
        Wire::Tickets {
            node,
            added,
            removed,
        } => {
            if node != shared.node {
                realtime.matchmaker.core().apply_remote(added, &removed);
            }
        }
        Wire::Probe { node, sent_ns } => {
            if node == shared.node {
                let now = u64::try_from(shared.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                shared.lag.record_ns(now.saturating_sub(sent_ns));
            }
        }
        Wire::Broadcast { node, payload } => {
            if node != shared.node && !payload.is_empty() {
                let _ = shared.broadcasts.send(payload);
            }
        }
        Wire::Cast(cast) => realtime.serve_cast(cast),
        other => return Some(other),
    }
    None
}

/// Renews this node's lease and says it is alive, every `heartbeat_ms`.
pub(super) async fn heartbeat(shared: Arc<Shared>, index: usize) {
    let mut tick = tokio::time::interval(Duration::from_millis(shared.config.heartbeat_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        shared.shards[index].send(Op::Heartbeat);
        let probe = Wire::Probe {
            node: shared.node.clone(),
            sent_ns: u64::try_from(shared.started.elapsed().as_nanos()).unwrap_or(u64::MAX),
        };
        shared.shards[index].send(Op::Publish(super::ALL.into(), probe.encode()));
    }
}

/// Takes or renews the matchmaker's role on the first shard, every
/// heartbeat; a holder that stops renewing loses it after a lease.
pub(super) async fn matchmaker_role(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_millis(shared.config.heartbeat_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let shard = &shared.shards[0];
    loop {
        tick.tick().await;
        let held = match shard.conn() {
            Some(mut conn) => {
                let taken: Result<Option<String>, _> = redis::cmd("SET")
                    .arg(super::MATCHMAKER_KEY)
                    .arg(&*shared.node)
                    .arg("NX")
                    .arg("PX")
                    .arg(shared.config.lease_ms)
                    .query_async(&mut conn)
                    .await;
                match taken {
                    Ok(Some(_)) => true,
                    Ok(None) => {
                        let holder: Result<Option<String>, _> = redis::cmd("GET")
                            .arg(super::MATCHMAKER_KEY)
                            .query_async(&mut conn)
                            .await;
                        let mine = matches!(&holder, Ok(Some(h)) if *h == *shared.node);
                        if mine {
                            let _: Result<(), _> = redis::cmd("PEXPIRE")
                                .arg(super::MATCHMAKER_KEY)
                                .arg(shared.config.lease_ms)
                                .query_async(&mut conn)
                                .await;
                        }
                        mine
                    }
                    Err(_) => false,
                }
            }
            None => false,
        };
        let was = shared
            .matchmaker
            .swap(held, std::sync::atomic::Ordering::AcqRel);
        if held != was {
            tracing::info!(node = %shared.node, held, "matchmaker role changed");
        }
    }
}
