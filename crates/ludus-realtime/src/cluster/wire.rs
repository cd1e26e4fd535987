//! What nodes say to each other over Redis, in a compact binary form of
//! their own (little-endian integers, 16-byte ids, length-prefixed text):
//! presence changes, snapshots, heartbeats, messages for sessions and
//! session control. A message that does not parse is dropped and logged by
//! the caller, never applied in part.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use crate::bus::{NodeCall, NodeCast, NodeReply};
use crate::codec::Format;
use crate::error::{RtCode, RtError};
use crate::matches::MatchMessage;
use crate::matchmaker::{TicketRecord, TicketRequest};
use crate::stream::{Stream, StreamMode};
use crate::tracker::{Presence, PresenceMeta};

/// One message between nodes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Wire {
    /// A session of `node` joined `stream` or changed its metadata; `seq`
    /// numbers the node's changes on one shard.
    Track {
        node: Arc<str>,
        epoch: u64,
        seq: u64,
        stream: Stream,
        presence: Presence,
    },
    Untrack {
        node: Arc<str>,
        epoch: u64,
        seq: u64,
        stream: Stream,
        session: Uuid,
    },
    /// `node` rewrote its presences on this shard: read them again.
    Resync {
        node: Arc<str>,
        epoch: u64,
    },
    /// `node` is alive.
    Hello {
        node: Arc<str>,
        epoch: u64,
    },
    /// An envelope (protobuf) for the sessions on `stream` of the node it
    /// is sent to.
    ToStream {
        stream: Stream,
        skip: Option<Uuid>,
        envelope: Bytes,
    },
    /// An envelope (protobuf) for the sessions on a node-local `stream`
    /// ([`Stream::is_node_local`]) of every node but `node`, which sent it.
    ToStreamAll {
        node: Arc<str>,
        stream: Stream,
        skip: Option<Uuid>,
        envelope: Bytes,
    },
    /// An envelope (protobuf) for sessions of the node it is sent to.
    ToSessions {
        sessions: Vec<Uuid>,
        envelope: Bytes,
    },
    /// An envelope (protobuf) for whichever of `sessions` each node but
    /// `node` (the sender) has.
    ToSessionsAll {
        node: Arc<str>,
        sessions: Vec<Uuid>,
        envelope: Bytes,
    },
    /// An envelope (protobuf) for the sessions following `user`.
    ToFollowers {
        node: Arc<str>,
        user: Uuid,
        envelope: Bytes,
    },
    /// `user` opened `session` on `node` (`session.single_socket`).
    SessionAdded {
        node: Arc<str>,
        user: Uuid,
        session: Uuid,
    },
    /// An envelope (protobuf) for every session of each node but `node`.
    ToEveryone {
        node: Arc<str>,
        envelope: Bytes,
    },
    /// `node` banned `users`: close their sockets wherever they are.
    Banned {
        node: Arc<str>,
        users: Vec<Uuid>,
    },
    /// `node` deleted every game account (a console wipe): close every
    /// socket.
    AccountsWiped {
        node: Arc<str>,
    },
    /// Close `session` wherever it is.
    Disconnect {
        session: Uuid,
        reason: u8,
    },
    /// A question for the node it is sent to; answer to `from`, naming `id`.
    Call {
        from: Arc<str>,
        id: u64,
        call: NodeCall,
    },
    Reply {
        id: u64,
        reply: NodeReply,
    },
    Cast(NodeCast),
    /// `node`'s matchmaker tickets that came or went.
    Tickets {
        node: Arc<str>,
        added: Vec<TicketRecord>,
        removed: Vec<String>,
    },
    /// Something of the server's from `node` for every other node.
    Broadcast {
        node: Arc<str>,
        payload: Bytes,
    },
    /// `node`'s probe of the bus: it times its own copy's way back
    /// (`sent_ns` on its own clock).
    Probe {
        node: Arc<str>,
        sent_ns: u64,
    },
}

const TRACK: u8 = 1;
const UNTRACK: u8 = 2;
const RESYNC: u8 = 3;
const HELLO: u8 = 4;
const TO_STREAM: u8 = 5;
const TO_SESSIONS: u8 = 6;
const SESSION_ADDED: u8 = 7;
const DISCONNECT: u8 = 8;
const TO_FOLLOWERS: u8 = 9;
const CALL: u8 = 10;
const REPLY: u8 = 11;
const CAST: u8 = 12;
const TICKETS: u8 = 13;
const BROADCAST: u8 = 14;
const TO_STREAM_ALL: u8 = 15;
const BANNED: u8 = 16;
const TO_SESSIONS_ALL: u8 = 17;
const TO_EVERYONE: u8 = 18;
const PROBE: u8 = 19;
const ACCOUNTS_WIPED: u8 = 20;

const CALL_MATCH_JOIN: u8 = 1;
const CALL_MATCH_SIGNAL: u8 = 2;
const CALL_PARTY: u8 = 3;
const CALL_MATCH_STATE: u8 = 4;
const CALL_STATUS: u8 = 5;
const CAST_MATCH_DATA: u8 = 1;
const CAST_UNTRACK: u8 = 2;
const CAST_TRACK: u8 = 3;

impl Wire {
    pub(crate) fn encode(&self) -> Bytes {
        let mut w = BytesMut::with_capacity(128);
        match self {
            Wire::Track {
                node,
                epoch,
                seq,
                stream,
                presence,
            } => {
                w.put_u8(TRACK);
                put_str(&mut w, node);
                w.put_u64_le(*epoch);
                w.put_u64_le(*seq);
                put_stream(&mut w, stream);
                put_presence(&mut w, presence);
            }
            Wire::Untrack {
                node,
                epoch,
                seq,
                stream,
                session,
            } => {
                w.put_u8(UNTRACK);
                put_str(&mut w, node);
                w.put_u64_le(*epoch);
                w.put_u64_le(*seq);
                put_stream(&mut w, stream);
                put_id(&mut w, *session);
            }
            Wire::Resync { node, epoch } | Wire::Hello { node, epoch } => {
                w.put_u8(if matches!(self, Wire::Resync { .. }) {
                    RESYNC
                } else {
                    HELLO
                });
                put_str(&mut w, node);
                w.put_u64_le(*epoch);
            }
            Wire::ToStream {
                stream,
                skip,
                envelope,
            } => {
                w.put_u8(TO_STREAM);
                put_stream(&mut w, stream);
                put_id(&mut w, skip.unwrap_or(Uuid::nil()));
                put_bytes(&mut w, envelope);
            }
            Wire::ToStreamAll {
                node,
                stream,
                skip,
                envelope,
            } => {
                w.put_u8(TO_STREAM_ALL);
                put_str(&mut w, node);
                put_stream(&mut w, stream);
                put_id(&mut w, skip.unwrap_or(Uuid::nil()));
                put_bytes(&mut w, envelope);
            }
            Wire::ToSessions { sessions, envelope } => {
                w.put_u8(TO_SESSIONS);
                put_ids(&mut w, sessions);
                put_bytes(&mut w, envelope);
            }
            Wire::ToSessionsAll {
                node,
                sessions,
                envelope,
            } => {
                w.put_u8(TO_SESSIONS_ALL);
                put_str(&mut w, node);
                put_ids(&mut w, sessions);
                put_bytes(&mut w, envelope);
            }
            Wire::ToEveryone { node, envelope } => {
                w.put_u8(TO_EVERYONE);
                put_str(&mut w, node);
                put_bytes(&mut w, envelope);
            }
            Wire::Banned { node, users } => {
                w.put_u8(BANNED);
                put_str(&mut w, node);
                put_ids(&mut w, users);
            }
            Wire::AccountsWiped { node } => {
                w.put_u8(ACCOUNTS_WIPED);
                put_str(&mut w, node);
            }
            Wire::ToFollowers {
                node,
                user,
                envelope,
            } => {
                w.put_u8(TO_FOLLOWERS);
                put_str(&mut w, node);
                put_id(&mut w, *user);
                put_bytes(&mut w, envelope);
            }
            Wire::SessionAdded {
                node,
                user,
                session,
            } => {
                w.put_u8(SESSION_ADDED);
                put_str(&mut w, node);
                put_id(&mut w, *user);
                put_id(&mut w, *session);
            }
            Wire::Disconnect { session, reason } => {
                w.put_u8(DISCONNECT);
                put_id(&mut w, *session);
                w.put_u8(*reason);
            }
            Wire::Call { from, id, call } => {
                w.put_u8(CALL);
                put_str(&mut w, from);
                w.put_u64_le(*id);
                match call {
                    NodeCall::MatchJoin {
                        match_id,
                        presence,
                        metadata,
                    } => {
                        w.put_u8(CALL_MATCH_JOIN);
                        put_id(&mut w, *match_id);
                        put_presence(&mut w, presence);
                        w.put_u32_le(metadata.len() as u32);
                        for (k, v) in metadata {
                            put_str(&mut w, k);
                            put_str(&mut w, v);
                        }
                    }
                    NodeCall::MatchSignal { match_id, data } => {
                        w.put_u8(CALL_MATCH_SIGNAL);
                        put_id(&mut w, *match_id);
                        put_str(&mut w, data);
                    }
                    NodeCall::MatchState { match_id } => {
                        w.put_u8(CALL_MATCH_STATE);
                        put_id(&mut w, *match_id);
                    }
                    NodeCall::Status => w.put_u8(CALL_STATUS),
                    NodeCall::Party { presence, envelope } => {
                        w.put_u8(CALL_PARTY);
                        put_presence(&mut w, presence);
                        put_str(&mut w, envelope);
                    }
                }
            }
            Wire::Reply { id, reply } => {
                w.put_u8(REPLY);
                w.put_u64_le(*id);
                match reply {
                    Ok((text, flag)) => {
                        w.put_u8(0);
                        put_str(&mut w, text);
                        w.put_u8(u8::from(*flag));
                    }
                    Err(e) => {
                        w.put_u8(1);
                        w.put_u8(e.code as u8);
                        put_str(&mut w, &e.message);
                    }
                }
            }
            Wire::Cast(cast) => {
                w.put_u8(CAST);
                match cast {
                    NodeCast::MatchData { match_id, message } => {
                        w.put_u8(CAST_MATCH_DATA);
                        put_id(&mut w, *match_id);
                        put_presence(&mut w, &message.sender);
                        w.put_u64_le(message.op_code as u64);
                        put_bytes(&mut w, &message.data);
                        w.put_u8(u8::from(message.reliable));
                        w.put_u64_le(message.receive_time_ms as u64);
                    }
                    NodeCast::Untrack { session, stream } => {
                        w.put_u8(CAST_UNTRACK);
                        put_id(&mut w, *session);
                        put_stream(&mut w, stream);
                    }
                    NodeCast::Track { stream, presence } => {
                        w.put_u8(CAST_TRACK);
                        put_stream(&mut w, stream);
                        put_presence(&mut w, presence);
                    }
                }
            }
            Wire::Tickets {
                node,
                added,
                removed,
            } => {
                w.put_u8(TICKETS);
                put_str(&mut w, node);
                w.put_u32_le(added.len() as u32);
                for t in added {
                    put_ticket(&mut w, t);
                }
                w.put_u32_le(removed.len() as u32);
                for id in removed {
                    put_str(&mut w, id);
                }
            }
            Wire::Broadcast { node, payload } => {
                w.put_u8(BROADCAST);
                put_str(&mut w, node);
                put_bytes(&mut w, payload);
            }
            Wire::Probe { node, sent_ns } => {
                w.put_u8(PROBE);
                put_str(&mut w, node);
                w.put_u64_le(*sent_ns);
            }
        }
        w.freeze()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Wire> {
        let mut r = Reader(bytes);
        let wire = match r.u8()? {
            TRACK => Wire::Track {
                node: r.str()?,
                epoch: r.u64()?,
                seq: r.u64()?,
                stream: r.stream()?,
                presence: r.presence()?,
            },
            UNTRACK => Wire::Untrack {
                node: r.str()?,
                epoch: r.u64()?,
                seq: r.u64()?,
                stream: r.stream()?,
                session: r.id()?,
            },
            RESYNC => Wire::Resync {
                node: r.str()?,
                epoch: r.u64()?,
            },
            HELLO => Wire::Hello {
                node: r.str()?,
                epoch: r.u64()?,
            },
            TO_STREAM => Wire::ToStream {
                stream: r.stream()?,
                skip: Some(r.id()?).filter(|id| !id.is_nil()),
                envelope: Bytes::copy_from_slice(r.bytes()?),
            },
            TO_STREAM_ALL => Wire::ToStreamAll {
                node: r.str()?,
                stream: r.stream()?,
                skip: Some(r.id()?).filter(|id| !id.is_nil()),
                envelope: Bytes::copy_from_slice(r.bytes()?),
            },
            TO_SESSIONS => Wire::ToSessions {
                sessions: r.ids()?,
                envelope: Bytes::copy_from_slice(r.bytes()?),
            },
            TO_SESSIONS_ALL => Wire::ToSessionsAll {
                node: r.str()?,
                sessions: r.ids()?,
                envelope: Bytes::copy_from_slice(r.bytes()?),
            },
            TO_EVERYONE => Wire::ToEveryone {
                node: r.str()?,
                envelope: Bytes::copy_from_slice(r.bytes()?),
            },
            BANNED => Wire::Banned {
                node: r.str()?,
                users: r.ids()?,
            },
            ACCOUNTS_WIPED => Wire::AccountsWiped { node: r.str()? },
            TO_FOLLOWERS => Wire::ToFollowers {
                node: r.str()?,
                user: r.id()?,
                envelope: Bytes::copy_from_slice(r.bytes()?),
            },
            SESSION_ADDED => Wire::SessionAdded {
                node: r.str()?,
                user: r.id()?,
                session: r.id()?,
            },
            DISCONNECT => Wire::Disconnect {
                session: r.id()?,
                reason: r.u8()?,
            },
            CALL => {
                let from = r.str()?;
                let id = r.u64()?;
                let call = match r.u8()? {
                    CALL_MATCH_JOIN => {
                        let match_id = r.id()?;
                        let presence = r.presence()?;
                        let n = r.u32()? as usize;
                        let mut metadata = std::collections::BTreeMap::new();
                        for _ in 0..n {
                            metadata.insert(r.str()?.to_string(), r.str()?.to_string());
                        }
                        NodeCall::MatchJoin {
                            match_id,
                            presence,
                            metadata,
                        }
                    }
                    CALL_MATCH_SIGNAL => NodeCall::MatchSignal {
                        match_id: r.id()?,
                        data: r.str()?.to_string(),
                    },
                    CALL_MATCH_STATE => NodeCall::MatchState { match_id: r.id()? },
                    CALL_STATUS => NodeCall::Status,
                    CALL_PARTY => NodeCall::Party {
                        presence: r.presence()?,
                        envelope: r.str()?.to_string(),
                    },
                    _ => return None,
                };
                Wire::Call { from, id, call }
            }
            REPLY => {
                let id = r.u64()?;
                let reply = match r.u8()? {
                    0 => Ok((r.str()?.to_string(), r.u8()? != 0)),
                    1 => {
                        let code = rt_code(r.u8()?);
                        Err(RtError::new(code, r.str()?.to_string()))
                    }
                    _ => return None,
                };
                Wire::Reply { id, reply }
            }
            CAST => Wire::Cast(match r.u8()? {
                CAST_MATCH_DATA => NodeCast::MatchData {
                    match_id: r.id()?,
                    message: MatchMessage {
                        sender: r.presence()?,
                        op_code: r.u64()? as i64,
                        data: r.bytes()?.to_vec(),
                        reliable: r.u8()? != 0,
                        receive_time_ms: r.u64()? as i64,
                    },
                },
                CAST_UNTRACK => NodeCast::Untrack {
                    session: r.id()?,
                    stream: r.stream()?,
                },
                CAST_TRACK => NodeCast::Track {
                    stream: r.stream()?,
                    presence: r.presence()?,
                },
                _ => return None,
            }),
            TICKETS => {
                let node = r.str()?;
                let n = r.count()?;
                let mut added = Vec::with_capacity(n);
                for _ in 0..n {
                    added.push(r.ticket()?);
                }
                let n = r.count()?;
                let mut removed = Vec::with_capacity(n);
                for _ in 0..n {
                    removed.push(r.str()?.to_string());
                }
                Wire::Tickets {
                    node,
                    added,
                    removed,
                }
            }
            BROADCAST => Wire::Broadcast {
                node: r.str()?,
                payload: Bytes::copy_from_slice(r.bytes()?),
            },
            PROBE => Wire::Probe {
                node: r.str()?,
                sent_ns: r.u64()?,
            },
            _ => return None,
        };
        r.0.is_empty().then_some(wire)
    }
}

fn rt_code(n: u8) -> RtCode {
    match n {
        1 => RtCode::UnrecognizedPayload,
        2 => RtCode::MissingPayload,
        3 => RtCode::BadInput,
        4 => RtCode::MatchNotFound,
        5 => RtCode::MatchJoinRejected,
        6 => RtCode::RuntimeFunctionNotFound,
        7 => RtCode::RuntimeFunctionException,
        _ => RtCode::RuntimeException,
    }
}

/// A presence as a node's snapshot hash holds it: the field names the
/// stream and session, the value is the presence.
pub(crate) fn snapshot_field(stream: &Stream, session: Uuid) -> Bytes {
    let mut w = BytesMut::with_capacity(64);
    put_stream(&mut w, stream);
    put_id(&mut w, session);
    w.freeze()
}

pub(crate) fn snapshot_value(stream: &Stream, presence: &Presence) -> Bytes {
    let mut w = BytesMut::with_capacity(128);
    put_stream(&mut w, stream);
    put_presence(&mut w, presence);
    w.freeze()
}

pub(crate) fn parse_snapshot_value(bytes: &[u8]) -> Option<(Stream, Presence)> {
    let mut r = Reader(bytes);
    let out = (r.stream()?, r.presence()?);
    r.0.is_empty().then_some(out)
}

/// The bytes a stream hashes by to choose its shard.
pub(crate) fn stream_key(stream: &Stream) -> Bytes {
    let mut w = BytesMut::with_capacity(40 + stream.label.len());
    put_stream(&mut w, stream);
    w.freeze()
}

fn put_str(w: &mut BytesMut, s: &str) {
    put_bytes(w, s.as_bytes());
}

fn put_bytes(w: &mut BytesMut, b: &[u8]) {
    w.put_u32_le(b.len() as u32);
    w.put_slice(b);
}

fn put_id(w: &mut BytesMut, id: Uuid) {
    w.put_slice(id.as_bytes());
}

fn put_ids(w: &mut BytesMut, ids: &[Uuid]) {
    w.put_u32_le(ids.len() as u32);
    for id in ids {
        put_id(w, *id);
    }
}

fn put_stream(w: &mut BytesMut, s: &Stream) {
    w.put_u8(s.mode.as_u8());
    put_id(w, s.subject);
    put_id(w, s.subcontext);
    put_str(w, &s.label);
}

fn put_presence(w: &mut BytesMut, p: &Presence) {
    put_id(w, p.user_id);
    put_id(w, p.session_id);
    put_str(w, &p.username);
    put_str(w, &p.node);
    let flags = u8::from(p.meta.hidden)
        | (u8::from(p.meta.persistence) << 1)
        | (u8::from(p.meta.format == Format::Protobuf) << 2);
    w.put_u8(flags);
    put_str(w, &p.meta.status);
}

fn put_ticket(w: &mut BytesMut, t: &TicketRecord) {
    put_str(w, &t.id);
    w.put_u64_le(t.created_ns as u64);
    put_id(w, t.owner.unwrap_or(Uuid::nil()));
    put_str(w, t.party_id.as_deref().unwrap_or(""));
    w.put_u32_le(t.presences.len() as u32);
    for p in &t.presences {
        put_presence(w, p);
    }
    let q = &t.request;
    put_str(w, &q.query);
    w.put_u32_le(q.min_count as u32);
    w.put_u32_le(q.max_count as u32);
    w.put_u32_le(q.count_multiple.unwrap_or(0) as u32);
    w.put_u32_le(q.string_properties.len() as u32);
    for (k, v) in &q.string_properties {
        put_str(w, k);
        put_str(w, v);
    }
    w.put_u32_le(q.numeric_properties.len() as u32);
    for (k, v) in &q.numeric_properties {
        put_str(w, k);
        w.put_u64_le(v.to_bits());
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn id(&mut self) -> Option<Uuid> {
        Uuid::from_slice(self.take(16)?).ok()
    }

    /// A count of items of at least 4 bytes each (no more than the bytes
    /// left could hold).
    fn count(&mut self) -> Option<usize> {
        let n = self.u32()? as usize;
        (n <= self.0.len() / 4).then_some(n)
    }

    fn ticket(&mut self) -> Option<TicketRecord> {
        let id = self.str()?.to_string();
        let created_ns = self.u64()? as i64;
        let owner = Some(self.id()?).filter(|o| !o.is_nil());
        let party = self.str()?;
        let n = self.count()?;
        let mut presences = Vec::with_capacity(n);
        for _ in 0..n {
            presences.push(self.presence()?);
        }
        let query = self.str()?.to_string();
        let min_count = self.u32()? as i32;
        let max_count = self.u32()? as i32;
        let multiple = self.u32()? as i32;
        let n = self.count()?;
        let mut string_properties = std::collections::BTreeMap::new();
        for _ in 0..n {
            string_properties.insert(self.str()?.to_string(), self.str()?.to_string());
        }
        let n = self.count()?;
        let mut numeric_properties = std::collections::BTreeMap::new();
        for _ in 0..n {
            numeric_properties.insert(self.str()?.to_string(), f64::from_bits(self.u64()?));
        }
        Some(TicketRecord {
            id,
            created_ns,
            owner,
            party_id: (!party.is_empty()).then(|| party.to_string()),
            presences,
            request: TicketRequest {
                query,
                min_count,
                max_count,
                count_multiple: (multiple != 0).then_some(multiple),
                string_properties,
                numeric_properties,
            },
        })
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// A count, then that many ids (a count the rest cannot hold is refused
    /// before anything is allocated).
    fn ids(&mut self) -> Option<Vec<Uuid>> {
        let n = self.u32()? as usize;
        if n > self.0.len() / 16 {
            return None;
        }
        (0..n).map(|_| self.id()).collect()
    }

    fn str(&mut self) -> Option<Arc<str>> {
        Some(crate::stream::shared_str(
            std::str::from_utf8(self.bytes()?).ok()?,
        ))
    }

    fn stream(&mut self) -> Option<Stream> {
        Some(Stream {
            mode: StreamMode::from_u8(self.u8()?),
            subject: self.id()?,
            subcontext: self.id()?,
            label: self.str()?,
        })
    }

    fn presence(&mut self) -> Option<Presence> {
        let user_id = self.id()?;
        let session_id = self.id()?;
        let username = self.str()?;
        let node = self.str()?;
        let flags = self.u8()?;
        let status = self.str()?;
        Some(Presence {
            user_id,
            session_id,
            username,
            node,
            meta: PresenceMeta {
                format: if flags & 4 != 0 {
                    Format::Protobuf
                } else {
                    Format::Json
                },
                hidden: flags & 1 != 0,
                persistence: flags & 2 != 0,
                status,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn presence() -> Presence {
        let mut p = Presence::new(Uuid::new_v4(), Uuid::new_v4(), "ann".into(), "a".into());
        p.meta.hidden = true;
        p.meta.status = "busy".into();
        p.meta.format = Format::Protobuf;
        p
    }

    #[test]
    fn every_message_round_trips() {
        let stream = Stream::new(StreamMode::ChatRoom, Uuid::new_v4(), Uuid::nil(), "lobby");
        let p = presence();
        let all = [
            Wire::Track {
                node: "a".into(),
                epoch: 7,
                seq: 9,
                stream: stream.clone(),
                presence: p.clone(),
            },
            Wire::Untrack {
                node: "a".into(),
                epoch: 7,
                seq: 10,
                stream: stream.clone(),
                session: p.session_id,
            },
            Wire::Resync {
                node: "b".into(),
                epoch: 1,
            },
            Wire::Hello {
                node: "c".into(),
                epoch: 2,
            },
            Wire::ToStream {
                stream: stream.clone(),
                skip: Some(p.session_id),
                envelope: Bytes::from_static(b"\x0a\x01x"),
            },
            Wire::ToStream {
                stream: stream.clone(),
                skip: None,
                envelope: Bytes::new(),
            },
            Wire::ToStreamAll {
                node: "b".into(),
                stream: Stream::notifications(p.user_id),
                skip: None,
                envelope: Bytes::from_static(b"\x0a\x01y"),
            },
            Wire::ToSessions {
                sessions: vec![Uuid::new_v4(), Uuid::new_v4()],
                envelope: Bytes::from_static(b"abc"),
            },
            Wire::SessionAdded {
                node: "a".into(),
                user: p.user_id,
                session: p.session_id,
            },
            Wire::ToFollowers {
                node: "a".into(),
                user: p.user_id,
                envelope: Bytes::from_static(b"xyz"),
            },
            Wire::Disconnect {
                session: p.session_id,
                reason: 19,
            },
            Wire::ToSessionsAll {
                node: "a".into(),
                sessions: vec![Uuid::new_v4()],
                envelope: Bytes::from_static(b"def"),
            },
            Wire::ToEveryone {
                node: "b".into(),
                envelope: Bytes::from_static(b"ghi"),
            },
            Wire::Probe {
                node: "a".into(),
                sent_ns: 123_456_789,
            },
            Wire::Banned {
                node: "c".into(),
                users: vec![p.user_id, Uuid::new_v4()],
            },
            Wire::AccountsWiped { node: "a".into() },
            Wire::Call {
                from: "b".into(),
                id: 42,
                call: NodeCall::MatchJoin {
                    match_id: Uuid::new_v4(),
                    presence: p.clone(),
                    metadata: [("password".to_owned(), "x".to_owned())].into(),
                },
            },
            Wire::Call {
                from: "b".into(),
                id: 43,
                call: NodeCall::MatchSignal {
                    match_id: Uuid::new_v4(),
                    data: "hi".into(),
                },
            },
            Wire::Call {
                from: "c".into(),
                id: 44,
                call: NodeCall::MatchState {
                    match_id: Uuid::new_v4(),
                },
            },
            Wire::Call {
                from: "d".into(),
                id: 45,
                call: NodeCall::Status,
            },
            Wire::Reply {
                id: 42,
                reply: Ok(("{\"mode\":1}".into(), true)),
            },
            Wire::Reply {
                id: 43,
                reply: Err(RtError::new(RtCode::MatchJoinRejected, "full")),
            },
            Wire::Cast(NodeCast::MatchData {
                match_id: Uuid::new_v4(),
                message: MatchMessage {
                    sender: p.clone(),
                    op_code: -3,
                    data: vec![1, 2, 3],
                    reliable: true,
                    receive_time_ms: 1_700_000_000_000,
                },
            }),
            Wire::Cast(NodeCast::Untrack {
                session: p.session_id,
                stream: stream.clone(),
            }),
            Wire::Cast(NodeCast::Track {
                stream: stream.clone(),
                presence: p.clone(),
            }),
            Wire::Call {
                from: "c".into(),
                id: 44,
                call: NodeCall::Party {
                    presence: p.clone(),
                    envelope: "{\"party_join\":{}}".into(),
                },
            },
            Wire::Tickets {
                node: "a".into(),
                added: vec![TicketRecord {
                    id: "t1".into(),
                    created_ns: 1_700_000_000_000_000_000,
                    owner: Some(p.session_id),
                    party_id: None,
                    presences: vec![p.clone()],
                    request: TicketRequest {
                        query: "+properties.mode:duel".into(),
                        min_count: 2,
                        max_count: 4,
                        count_multiple: Some(2),
                        string_properties: [("mode".to_owned(), "duel".to_owned())].into(),
                        numeric_properties: [("skill".to_owned(), 12.5)].into(),
                    },
                }],
                removed: vec!["t0".into()],
            },
            Wire::Broadcast {
                node: "a".into(),
                payload: Bytes::from_static(b"u|x|1"),
            },
        ];
        for w in all {
            assert_eq!(Wire::decode(&w.encode()), Some(w));
        }
        let (s, q) = parse_snapshot_value(&snapshot_value(&stream, &p)).unwrap();
        assert_eq!((s, q), (stream, p));
    }

    #[test]
    fn garbage_and_truncations_are_refused() {
        assert_eq!(Wire::decode(b""), None);
        assert_eq!(Wire::decode(b"\x63"), None);
        let w = Wire::ToSessions {
            sessions: vec![Uuid::new_v4()],
            envelope: Bytes::from_static(b"abc"),
        }
        .encode();
        for cut in 0..w.len() {
            assert_eq!(Wire::decode(&w[..cut]), None, "cut at {cut}");
        }
        let mut long = w.to_vec();
        long.push(0);
        assert_eq!(Wire::decode(&long), None, "trailing bytes");
        // A count that claims more sessions than bytes follow.
        assert_eq!(Wire::decode(b"\x06\xff\xff\xff\x7f"), None);
    }
}
