//! The match envelopes on the socket: `match_create` (relayed), `match_join`
//! (relayed or authoritative, by id or matchmaker token), `match_leave` and
//! `match_data_send`, with Nakama's replies and error codes.

use ludus_proto::pbjson_types::StringValue;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::match_join::Id;
use ludus_proto::realtime::{
    Envelope, Match, MatchCreate, MatchData, MatchDataSend, MatchJoin, MatchLeave, UserPresence,
};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::{Call, Event, JoinReply, MatchMessage, MatchRegistry, not_found, parse_id};
use crate::error::{RtCode, RtError};
use crate::hub::Announce;
use crate::registry::SessionHandle;
use crate::stream::Stream;

impl MatchRegistry {
    /// `match_create`: a relayed match, named (a deterministic id) or not.
    pub(crate) fn create_relayed(
        &self,
        session: &SessionHandle,
        req: MatchCreate,
    ) -> Result<Match, RtError> {
        let id = if req.name.is_empty() {
            Uuid::new_v4()
        } else {
            Uuid::new_v5(&Uuid::NAMESPACE_DNS, req.name.as_bytes())
        };
        let stream = super::relayed_stream(id);
        let a = self.hub.track(&stream, self.hub.presence_of(session));
        let (joins, leaves) = a.changes();
        self.announce(&stream, &joins, &leaves);
        let others = self.match_presences(&stream, session.id(), true);
        Ok(Match {
            match_id: format!("{id}."),
            authoritative: false,
            label: None,
            size: others.len() as i32 + 1,
            presences: others,
            self_: Some(self_presence(session)),
        })
    }

    /// `match_join` by id, or by a matchmaker token (`token_match`: the
    /// id the checked token carries).
    pub(crate) async fn join(
        &self,
        session: &SessionHandle,
        req: MatchJoin,
        token_match: impl FnOnce(&str) -> Result<String, RtError>,
    ) -> Result<(Match, Option<Announce>), RtError> {
        let (match_id, from_token) = match req.id {
            Some(Id::MatchId(id)) if !id.is_empty() => (id, false),
            Some(Id::Token(token)) if !token.is_empty() => (token_match(&token)?, true),
            _ => return Err(RtError::bad_input("No match ID or token found")),
        };
        let (id, node) = parse_id(&match_id)?;
        if node.is_empty() {
            let stream = super::relayed_stream(id);
            // Joining by token may be the first join; by id the match must exist.
            if !from_token && self.hub.count(&stream) == 0 {
                return Err(not_found());
            }
            let announce = self.hub.track(&stream, self.hub.presence_of(session));
            let presences = self.match_presences(&stream, session.id(), announce.is_new());
            let joined = Match {
                match_id,
                authoritative: false,
                label: None,
                size: presences.len() as i32,
                presences,
                self_: Some(self_presence(session)),
            };
            return Ok((joined, Some(announce)));
        }
        if node != self.node() && !self.hub.clustered() {
            return Err(not_found());
        }
        let presence = self.session_presence(session);
        let (stream, label, new) = if node == self.node() {
            let (label, new, entry) = self.attempt(id, &presence, req.metadata).await?;
            let stream = self.stream(id);
            if new {
                // Tracked before the match takes the join, so what it sends
                // in `match_join` reaches the new player too.
                let announce = self.hub.track(&stream, presence.clone());
                // Listed at once with the new player; the match's task stores
                // its own count when it takes the join (after this).
                entry.size.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                entry.event(Event::Joined(presence));
                let presences = self.match_presences(&stream, session.id(), true);
                let joined = Match {
                    match_id,
                    authoritative: true,
                    label: Some(StringValue { value: label }),
                    size: presences.len() as i32,
                    presences,
                    self_: Some(self_presence(session)),
                };
                return Ok((joined, Some(announce)));
            }
            (stream, label, new)
        } else {
            // The match runs on another node: it decides, the player's
            // presence stays here (and crosses through the bus).
            let call = crate::bus::NodeCall::MatchJoin {
                match_id: id,
                presence: presence.clone(),
                metadata: req.metadata,
            };
            let timeout = self.config().call_timeout();
            let (label, new) = self.hub.call_node(node, call, timeout).await?;
            (super::authoritative_stream(id, node), label, new)
        };
        let announce = new.then(|| self.hub.track(&stream, presence.clone()));
        let presences = self.match_presences(&stream, session.id(), new);
        let joined = Match {
            match_id,
            authoritative: true,
            label: Some(StringValue { value: label }),
            size: presences.len() as i32,
            presences,
            self_: Some(self_presence(session)),
        };
        Ok((joined, announce))
    }

    /// Asks a match of this node whether `presence` may join: its label,
    /// whether the presence is new to it, and the match.
    async fn attempt(
        &self,
        id: Uuid,
        presence: &crate::tracker::Presence,
        metadata: std::collections::BTreeMap<String, String>,
    ) -> Result<(String, bool, std::sync::Arc<super::Entry>), RtError> {
        let match_id = format!("{id}.{}", self.node());
        let entry = self.entry(id).ok_or_else(not_found)?;
        let (reply, answer) = oneshot::channel();
        entry
            .call(Call::JoinAttempt {
                presence: presence.clone(),
                metadata,
                reply,
            })
            .map_err(|()| super::busy(&match_id))?;
        let timeout = self.config().call_timeout();
        let (label, new) = match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(JoinReply::Accepted { label, new })) => (label, new),
            Ok(Ok(JoinReply::Rejected(reason))) => {
                let reason = if reason.is_empty() {
                    "Match join rejected".to_owned()
                } else {
                    reason
                };
                return Err(RtError::new(RtCode::MatchJoinRejected, reason));
            }
            Ok(Ok(JoinReply::Ended) | Err(_)) => return Err(not_found()),
            Err(_) => {
                return Err(RtError::new(
                    RtCode::RuntimeException,
                    format!("match {match_id} did not answer the join in time, try again"),
                ));
            }
        };
        Ok((label, new, entry))
    }

    /// A join from a session of another node (a cluster): the match here
    /// decides; that node tracks the player, and the match takes the join
    /// when the track arrives here ([`MatchRegistry::remote_joined`]).
    pub(crate) async fn join_from(
        &self,
        id: Uuid,
        presence: crate::tracker::Presence,
        metadata: std::collections::BTreeMap<String, String>,
    ) -> Result<(String, bool), RtError> {
        let (label, new, _) = self.attempt(id, &presence, metadata).await?;
        Ok((label, new))
    }

    /// A player of another node is now on a match stream of this node.
    pub(crate) fn remote_joined(&self, stream: &Stream, presence: &crate::tracker::Presence) {
        if stream.mode != crate::stream::StreamMode::MatchAuthoritative
            || *stream.label != *self.node()
        {
            return;
        }
        if let Some(entry) = self.entry(stream.subject) {
            entry.event(Event::Joined(presence.clone()));
        }
    }

    /// Data a player on another node sent to a match of this node.
    pub(crate) fn data_from(&self, id: Uuid, message: MatchMessage) {
        let Some(entry) = self.entry(id) else {
            return;
        };
        if entry.input.try_send(Box::new(message)).is_err() {
            tracing::warn!(match_id = %format!("{id}.{}", self.node()), "match input queue full (match.input_queue_size), dropping data from another node");
        }
    }

    /// `match_leave`: leaving a match one is not in is not an error.
    pub(crate) fn leave(&self, session: &SessionHandle, req: MatchLeave) -> Result<(), RtError> {
        let (id, node) = parse_id(&req.match_id)?;
        let stream = if node.is_empty() {
            super::relayed_stream(id)
        } else {
            super::authoritative_stream(id, node)
        };
        if let Some(gone) = self.hub.untrack(session.id(), &stream) {
            self.announce(&stream, &[], std::slice::from_ref(&gone));
            self.left(&stream, &gone);
        }
        Ok(())
    }

    /// `match_data_send`: relayed data goes straight to the other players (or
    /// the listed ones); authoritative data waits for the match's next tick.
    pub(crate) fn data_send(
        &self,
        session: &SessionHandle,
        req: MatchDataSend,
    ) -> Result<(), RtError> {
        let (id, node) = parse_id(&req.match_id)?;
        if !node.is_empty() {
            let stream = super::authoritative_stream(id, node);
            if !self.hub.contains(&stream, session.id()) {
                return Err(not_in_match(&req.match_id));
            }
            let message = MatchMessage {
                sender: self.session_presence(session),
                op_code: req.op_code,
                data: req.data.to_vec(),
                reliable: req.reliable,
                receive_time_ms: ludus_core::chat::now_us() / 1000,
            };
            if node != self.node() {
                if !self.hub.clustered() {
                    return Err(not_found());
                }
                let cast = crate::bus::NodeCast::MatchData {
                    match_id: id,
                    message,
                };
                self.hub.cast_node(node, cast);
                return Ok(());
            }
            let Some(entry) = self.entry(id) else {
                return Err(not_found());
            };
            return entry.input.try_send(Box::new(message)).map_err(|_| {
                RtError::new(
                    RtCode::RuntimeException,
                    format!(
                        "match {} is not keeping up: its input queue is full (match.input_queue_size), message dropped",
                        req.match_id
                    ),
                )
            });
        }
        let stream = super::relayed_stream(id);
        let mut sessions = self.hub.session_ids(&stream);
        if !sessions.contains(&session.id()) {
            return Err(not_in_match(&req.match_id));
        }
        if req.presences.is_empty() {
            sessions.retain(|s| *s != session.id());
        } else {
            let wanted: Vec<Uuid> = req
                .presences
                .iter()
                .map(|p| Uuid::parse_str(&p.session_id))
                .collect::<Result<_, _>>()
                .map_err(|_| RtError::bad_input("Invalid presence session ID in the filter"))?;
            sessions.retain(|s| wanted.contains(s));
        }
        self.hub.send_to_sessions(
            &sessions,
            Envelope {
                cid: String::new(),
                message: Some(Message::MatchData(MatchData {
                    match_id: req.match_id,
                    presence: Some(self_presence(session)),
                    op_code: req.op_code,
                    data: req.data,
                    reliable: req.reliable,
                })),
            },
        );
        Ok(())
    }

    /// Visible presences on a match stream except `me`.
    /// The match's presences as a join answers them: the caller's own is
    /// left out only when it just joined (as Nakama: a session already in
    /// the match sees itself too).
    fn match_presences(&self, stream: &Stream, me: Uuid, new: bool) -> Vec<UserPresence> {
        self.hub
            .presences(stream, false)
            .into_iter()
            .filter(|p| !(new && p.session_id == me))
            .map(|p| p.to_wire(false))
            .collect()
    }
}

fn self_presence(session: &SessionHandle) -> UserPresence {
    UserPresence {
        user_id: session.user_id().to_string(),
        session_id: session.id().to_string(),
        username: session.username().to_owned(),
        persistence: false,
        status: None,
    }
}

fn not_in_match(match_id: &str) -> RtError {
    RtError::new(
        RtCode::MatchNotFound,
        format!("not in match {match_id}: join it before sending data"),
    )
}
