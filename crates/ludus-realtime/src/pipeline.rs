//! The realtime pipeline: what each incoming envelope does.
//!
//! Every one of the envelope's 50 members lands in exactly one arm below:
//! - requests Ludus serves get their reply (same `cid`) or an `error`
//!   envelope; a validation error keeps the socket open;
//! - an envelope with no message, or with a server-to-client message, is
//!   answered with `MISSING_PAYLOAD` / `UNRECOGNIZED_PAYLOAD` and closes the
//!   socket, as Nakama does.

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{Envelope, Pong};

use crate::Realtime;
use crate::error::{RtCode, RtError, error_envelope};
use crate::hooks::{Before, message_name};
use crate::modules::Modules;
use crate::registry::SessionHandle;

/// What the socket does after a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Close,
}

impl Realtime {
    /// Handles one decoded envelope from `session`, through the module
    /// runtime's before and after hooks when it registers some; replies go
    /// to its queue.
    pub async fn handle(
        &self,
        modules: &dyn Modules,
        session: &SessionHandle,
        envelope: Envelope,
    ) -> Flow {
        let Some(name) = envelope.message.as_ref().and_then(message_name) else {
            return self.serve(modules, session, envelope, false).await.0;
        };
        let mut envelope = envelope;
        if modules.has_rt_before(name) {
            let cid = envelope.cid.clone();
            let json = match serde_json::to_value(&envelope) {
                Ok(v) => v,
                Err(_) => return self.serve(modules, session, envelope, false).await.0,
            };
            match modules.rt_before(session, name, json).await {
                Before::Continue(v) => match serde_json::from_value::<Envelope>(v) {
                    Ok(mut rewritten) if rewritten.message.is_some() => {
                        rewritten.cid = cid;
                        envelope = rewritten;
                    }
                    _ => {
                        self.reply(
                            session,
                            error_envelope(
                                &cid,
                                RtCode::RuntimeFunctionException,
                                "before hook returned an invalid envelope, return the one it was given or nil",
                            ),
                        );
                        return Flow::Continue;
                    }
                },
                Before::Reject => {
                    tracing::warn!(session_id = %session.id(), resource = name, "before hook rejected a socket message, closing");
                    self.reply(
                        session,
                        error_envelope(
                            &cid,
                            RtCode::UnrecognizedPayload,
                            "Requested resource was not found.",
                        ),
                    );
                    return Flow::Close;
                }
                Before::Failed(message) => {
                    self.reply(
                        session,
                        error_envelope(&cid, RtCode::RuntimeFunctionException, &message),
                    );
                    return Flow::Continue;
                }
            }
        }
        if !modules.has_rt_after(name) {
            return self.serve(modules, session, envelope, false).await.0;
        }
        let request = serde_json::to_value(&envelope).unwrap_or_default();
        let (flow, reply) = self.serve(modules, session, envelope, true).await;
        let response = reply
            .and_then(|r| serde_json::to_value(&r).ok())
            .unwrap_or_default();
        modules.rt_after(session, name, request, response).await;
        flow
    }

    /// Serves one envelope; with `keep_reply`, also answers what it replied
    /// (for after hooks).
    async fn serve(
        &self,
        modules: &dyn Modules,
        session: &SessionHandle,
        envelope: Envelope,
        keep_reply: bool,
    ) -> (Flow, Option<Envelope>) {
        let cid = envelope.cid;
        let Some(message) = envelope.message else {
            self.reply(
                session,
                error_envelope(
                    &cid,
                    RtCode::MissingPayload,
                    "missing message: the envelope carries no request",
                ),
            );
            return (Flow::Close, None);
        };
        // A join's presence event goes out after its reply (see
        // `hub::Announce`).
        let mut announce = None;
        let result: Result<Option<Message>, RtError> = match message {
            Message::Ping(_) => Ok(Some(Message::Pong(Pong {}))),
            // A client's answer to our application ping: liveness is counted
            // by the transport, which saw the frame arrive.
            Message::Pong(_) => return (Flow::Continue, None),
            Message::StatusFollow(req) => self
                .status
                .follow(session, req)
                .await
                .map(|s| Some(Message::Status(s))),
            Message::StatusUnfollow(req) => self.status.unfollow(session, req).map(|()| None),
            Message::StatusUpdate(req) => self.status.update(session, req).map(|()| None),

            Message::ChannelJoin(req) => self.chat.join(session, req).await.map(|(c, joined)| {
                announce = Some(joined);
                Some(Message::Channel(c))
            }),
            Message::ChannelLeave(req) => self.chat.leave(session, req).map(|()| None),
            Message::ChannelMessageSend(req) => self
                .chat
                .send(session, req)
                .await
                .map(|a| Some(Message::ChannelMessageAck(a))),
            Message::ChannelMessageUpdate(req) => self
                .chat
                .update(session, req)
                .await
                .map(|a| Some(Message::ChannelMessageAck(a))),
            Message::ChannelMessageRemove(req) => self
                .chat
                .remove(session, req)
                .await
                .map(|a| Some(Message::ChannelMessageAck(a))),
            Message::MatchCreate(req) => self
                .matches
                .create_relayed(session, req)
                .map(|m| Some(Message::Match(m))),
            Message::MatchJoin(req) => self
                .matches
                .join(session, req, |t| self.match_token_id(t))
                .await
                .map(|(m, joined)| {
                    announce = joined;
                    Some(Message::Match(m))
                }),
            // Acknowledged with an empty envelope, as Nakama does.
            Message::MatchLeave(req) => self.matches.leave(session, req).map(|()| None),
            Message::MatchDataSend(req) => match self.matches.data_send(session, req) {
                // No reply on success, as Nakama.
                Ok(()) => return (Flow::Continue, None),
                Err(e) => Err(e),
            },
            Message::MatchmakerAdd(req) => self
                .matchmaker
                .add(session, req)
                .map(|t| Some(Message::MatchmakerTicket(t))),
            Message::MatchmakerRemove(req) => self.matchmaker.remove(session, req).map(|()| None),
            m @ (Message::PartyCreate(_)
            | Message::PartyJoin(_)
            | Message::PartyLeave(_)
            | Message::PartyPromote(_)
            | Message::PartyAccept(_)
            | Message::PartyRemove(_)
            | Message::PartyClose(_)
            | Message::PartyJoinRequestList(_)
            | Message::PartyDataSend(_)
            | Message::PartyUpdate(_)
            | Message::PartyMatchmakerAdd(_)
            | Message::PartyMatchmakerRemove(_)) => {
                let me = self.hub.presence_of(session);
                self.party_message(&me, m).await
            }
            Message::Rpc(rpc) => {
                modules
                    .rpc(session, rpc.id.clone(), rpc.payload)
                    .await
                    .map(|payload| {
                        Some(Message::Rpc(ludus_proto::api::Rpc {
                            id: rpc.id,
                            payload,
                            http_key: String::new(),
                        }))
                    })
            }

            // Messages only the server sends.
            Message::Channel(_)
            | Message::ChannelMessage(_)
            | Message::ChannelMessageAck(_)
            | Message::ChannelPresenceEvent(_)
            | Message::Error(_)
            | Message::Match(_)
            | Message::MatchData(_)
            | Message::MatchPresenceEvent(_)
            | Message::MatchmakerMatched(_)
            | Message::MatchmakerTicket(_)
            | Message::Notifications(_)
            | Message::Status(_)
            | Message::StatusPresenceEvent(_)
            | Message::StreamData(_)
            | Message::StreamPresenceEvent(_)
            | Message::Party(_)
            | Message::PartyLeader(_)
            | Message::PartyJoinRequest(_)
            | Message::PartyMatchmakerTicket(_)
            | Message::PartyData(_)
            | Message::PartyPresenceEvent(_) => {
                tracing::debug!(session_id = %session.id(), "client sent a server-only message, closing");
                self.reply(
                    session,
                    error_envelope(
                        &cid,
                        RtCode::UnrecognizedPayload,
                        "unrecognized message: clients cannot send this message type",
                    ),
                );
                return (Flow::Close, None);
            }
        };
        let reply = match result {
            Ok(message) => Envelope { cid, message },
            Err(e) => {
                tracing::debug!(session_id = %session.id(), code = e.code as i32, error = %e.message, "realtime request failed");
                e.envelope(&cid)
            }
        };
        let kept = keep_reply.then(|| reply.clone());
        self.reply(session, reply);
        if let Some(announce) = announce {
            self.emit(announce);
        }
        (Flow::Continue, kept)
    }

    fn reply(&self, session: &SessionHandle, envelope: Envelope) {
        // A full queue closes the session; the socket task notices.
        let _ = session.send_one(&envelope);
    }
}
