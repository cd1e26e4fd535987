//! Chat over the socket ([`Chat`]): `channel_join`, `channel_leave`,
//! `channel_message_send|update|remove`, and the `channel_message` and
//! `channel_presence_event` pushes.
//!
//! A channel is a stream (room, group or direct conversation, see
//! `ludus_core::chat::ChannelKey` for Nakama's ids); joining tracks the
//! session on it, messages go to every presence on it, and are stored when
//! the sender joined with persistence on (the default). Group channels are
//! for the group's members; a user who stops being one (leaves, is kicked
//! or banned) is untracked from it at once (`leave_group_channel`), so they
//! neither read nor send there any more (`Realtime`'s
//! `ludus_core::social_service::SocialPresence` calls in here).

use ludus_core::chat::{
    CODE_CHAT, CODE_CHAT_REMOVE, CODE_CHAT_UPDATE, ChannelError, ChannelKey, ChannelMessage,
    MODE_DIRECT, MODE_GROUP, MODE_ROOM, now_us,
};
use ludus_core::friend::FriendState;
use ludus_core::group::GroupRole;
use ludus_core::notification::{CODE_DM_REQUEST, Notification};
use ludus_core::store::StoreError;
use ludus_proto::api;
use ludus_proto::pbjson_types::{BoolValue, Int32Value};
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{
    Channel, ChannelJoin, ChannelLeave, ChannelMessageAck, ChannelMessageRemove,
    ChannelMessageSend, ChannelMessageUpdate, ChannelPresenceEvent, Envelope,
};
use std::sync::Arc;

use ludus_core::Store;
use uuid::Uuid;

use crate::error::{RtCode, RtError};
use crate::hub::{Announce, Hub, visible};
use crate::notify::Notifier;
use crate::registry::SessionHandle;
use crate::stream::{Stream, StreamMode};
use crate::tracker::Presence;
use crate::wire::timestamp_us;

/// Longest message content, in bytes (the socket read limit bounds it too).
pub const MAX_CONTENT_LEN: usize = 4096;

/// The stream of a channel.
pub fn stream_of(key: &ChannelKey) -> Stream {
    let mode = match key.mode {
        MODE_GROUP => StreamMode::ChatGroup,
        MODE_DIRECT => StreamMode::ChatDirect,
        _ => StreamMode::ChatRoom,
    };
    Stream::new(mode, key.subject, key.subcontext, &key.label)
}

/// The channel of a chat stream.
pub fn key_of(stream: &Stream) -> ChannelKey {
    let mode = match stream.mode {
        StreamMode::ChatGroup => MODE_GROUP,
        StreamMode::ChatDirect => MODE_DIRECT,
        _ => MODE_ROOM,
    };
    ChannelKey {
        mode,
        subject: stream.subject,
        subcontext: stream.subcontext,
        label: stream.label.to_string(),
    }
}

/// The names a channel carries on the wire: room name, group id, or the two users.
struct ChannelNames {
    room_name: String,
    group_id: String,
    user_id_one: String,
    user_id_two: String,
}

fn names(key: &ChannelKey) -> ChannelNames {
    let mut n = ChannelNames {
        room_name: String::new(),
        group_id: String::new(),
        user_id_one: String::new(),
        user_id_two: String::new(),
    };
    match key.mode {
        MODE_ROOM => n.room_name = key.label.clone(),
        MODE_GROUP => n.group_id = key.subject.to_string(),
        _ => {
            n.user_id_one = key.subject.to_string();
            n.user_id_two = key.subcontext.to_string();
        }
    }
    n
}

/// A stored or live message in its wire form.
pub fn message_to_wire(m: &ChannelMessage, persistent: bool) -> api::ChannelMessage {
    let n = names(&m.channel);
    api::ChannelMessage {
        channel_id: m.channel.id(),
        message_id: m.id.to_string(),
        code: Some(Int32Value { value: m.code }),
        sender_id: m.sender_id.to_string(),
        username: m.username.clone(),
        content: m.content.clone(),
        create_time: Some(timestamp_us(m.create_time_us)),
        update_time: Some(timestamp_us(m.update_time_us)),
        persistent: Some(BoolValue { value: persistent }),
        room_name: n.room_name,
        group_id: n.group_id,
        user_id_one: n.user_id_one,
        user_id_two: n.user_id_two,
    }
}

/// What a module does to a stored message ([`Chat::update_as`],
/// [`Chat::remove_as`]).
enum Edit {
    Update(String),
    Remove,
}

fn ack_of(m: &ChannelMessage, persistent: bool) -> ChannelMessageAck {
    let n = names(&m.channel);
    ChannelMessageAck {
        channel_id: m.channel.id(),
        message_id: m.id.to_string(),
        code: Some(Int32Value { value: m.code }),
        username: m.username.clone(),
        create_time: Some(timestamp_us(m.create_time_us)),
        update_time: Some(timestamp_us(m.update_time_us)),
        persistent: Some(BoolValue { value: persistent }),
        room_name: n.room_name,
        group_id: n.group_id,
        user_id_one: n.user_id_one,
        user_id_two: n.user_id_two,
    }
}

fn bad_channel_id() -> RtError {
    RtError::bad_input("invalid channel id, use the id channel_join returned")
}

fn parse_channel(id: &str) -> Result<ChannelKey, RtError> {
    ChannelKey::parse(id).map_err(|_| bad_channel_id())
}

fn check_content(content: &str) -> Result<(), RtError> {
    if content.len() > MAX_CONTENT_LEN {
        return Err(RtError::bad_input(format!(
            "message content too long, at most {MAX_CONTENT_LEN} bytes"
        )));
    }
    ludus_core::stored_json::check_object(content, "message content")
        .map_err(|e| RtError::bad_input(e.message))
}

/// Chat channels and their messages, over the hub.
pub struct Chat {
    hub: Arc<Hub>,
    store: Arc<dyn Store>,
    notifier: Arc<Notifier>,
}

impl std::fmt::Debug for Chat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chat").finish_non_exhaustive()
    }
}

impl Chat {
    pub(crate) fn new(hub: Arc<Hub>, store: Arc<dyn Store>, notifier: Arc<Notifier>) -> Chat {
        Chat {
            hub,
            store,
            notifier,
        }
    }

    /// `channel_join`: joins a room or a direct conversation. The join's
    /// presence event is the caller's to send, after the reply.
    pub(crate) async fn join(
        &self,
        session: &SessionHandle,
        req: ChannelJoin,
    ) -> Result<(Channel, Announce), RtError> {
        if req.target.is_empty() {
            return Err(RtError::bad_input(
                "channel target required: a room name, user id or group id",
            ));
        }
        let me = session.user_id();
        let key = match req.r#type {
            0 | 1 => {
                ChannelKey::room(&req.target).map_err(|e| RtError::bad_input(e.to_string()))?
            }
            2 => {
                let other = Uuid::parse_str(&req.target).map_err(|_| {
                    RtError::bad_input(ChannelError::InvalidDirectTarget.to_string())
                })?;
                let key =
                    ChannelKey::direct(me, other).map_err(|e| RtError::bad_input(e.to_string()))?;
                if other != me
                    && crate::existing_users(&*self.store, &[other], &[])
                        .await?
                        .is_empty()
                {
                    return Err(RtError::bad_input("user not found: no user has that id"));
                }
                // A user who blocked the caller looks absent, as in Nakama.
                if other != me {
                    let state = self.store.friend_state(other, me).await.map_err(|e| {
                        tracing::error!(error = %e, "cannot look up a block");
                        RtError::new(RtCode::RuntimeException, "failed to look up user id")
                    })?;
                    if state == Some(FriendState::Blocked) {
                        return Err(RtError::bad_input("user not found: no user has that id"));
                    }
                }
                key
            }
            3 => {
                let group = Uuid::parse_str(&req.target).map_err(|_| {
                    RtError::bad_input("invalid group id in group channel join, it must be a uuid")
                })?;
                // Members only (superadmins, admins, members): not join
                // requests, not banned users.
                let role = self.store.group_role(group, me).await.map_err(|e| {
                    tracing::error!(error = %e, "cannot look up group membership");
                    RtError::new(
                        RtCode::RuntimeException,
                        "failed to look up group membership",
                    )
                })?;
                if !role.is_some_and(GroupRole::is_member) {
                    return Err(RtError::bad_input(
                        "group not found, or you are not a member of it",
                    ));
                }
                ChannelKey::group(group)
            }
            _ => return Err(RtError::bad_input(ChannelError::InvalidType.to_string())),
        };
        let hidden = req.hidden.is_some_and(|h| h.value);
        let persistence = req.persistence.is_none_or(|p| p.value);
        let stream = stream_of(&key);
        let mut presence = self.hub.presence_of(session);
        presence.meta.hidden = hidden;
        presence.meta.persistence = persistence;
        let announce = self.hub.track(&stream, presence);
        let is_new = announce.is_new();
        let presences = self.hub.presences(&stream, false);
        if is_new && key.mode == MODE_DIRECT {
            let other = if key.subject == me {
                key.subcontext
            } else {
                key.subject
            };
            if other != me && !presences.iter().any(|p| p.user_id == other) {
                self.dm_request(session, other).await;
            }
        }
        let n = names(&key);
        let channel = Channel {
            id: key.id(),
            presences: presences
                .iter()
                .filter(|p| !(is_new && p.session_id == session.id()))
                .map(|p| p.to_wire(false))
                .collect(),
            self_: Some(ludus_proto::realtime::UserPresence {
                user_id: me.to_string(),
                session_id: session.id().to_string(),
                username: session.username().to_owned(),
                persistence,
                status: None,
            }),
            room_name: n.room_name,
            group_id: n.group_id,
            user_id_one: n.user_id_one,
            user_id_two: n.user_id_two,
        };
        Ok((channel, announce))
    }

    /// Tells `other` that this session's user wants to chat (Nakama's code -1).
    async fn dm_request(&self, session: &SessionHandle, other: Uuid) {
        let content = serde_json::json!({ "username": session.username() }).to_string();
        let n = Notification {
            id: ludus_core::new_row_id(),
            user_id: other,
            subject: format!("{} wants to chat", session.username()),
            content,
            code: CODE_DM_REQUEST,
            sender_id: session.user_id(),
            create_time_us: now_us(),
            persistent: true,
        };
        if let Err(e) = self.notifier.notify(vec![n]).await {
            tracing::warn!(error = %e, "cannot send the direct message request notification");
        }
    }

    /// Untracks every session of `user` (on any node) from a group's chat
    /// channel, announcing the leave to the members still there.
    pub fn leave_group_channel(&self, group: Uuid, user: Uuid) {
        let stream = stream_of(&ChannelKey::group(group));
        for p in self.hub.presences(&stream, true) {
            if p.user_id == user
                && let Some(gone) = self.hub.untrack_anywhere(p.session_id, &stream)
            {
                self.announce(&stream, &[], &[gone]);
            }
        }
    }

    /// Ends a direct conversation: every session on the DM
    /// stream of the two users leaves it (after a block, as Nakama does).
    pub fn close_direct_channel(&self, user: Uuid, other: Uuid) {
        let Ok(key) = ChannelKey::direct(user, other) else {
            return;
        };
        let stream = stream_of(&key);
        for p in self.hub.presences(&stream, true) {
            if let Some(gone) = self.hub.untrack_anywhere(p.session_id, &stream) {
                self.announce(&stream, &[], &[gone]);
            }
        }
    }

    /// `channel_leave`.
    pub fn leave(&self, session: &SessionHandle, req: ChannelLeave) -> Result<(), RtError> {
        let key = parse_channel(&req.channel_id)?;
        let stream = stream_of(&key);
        if let Some(gone) = self.hub.untrack(session.id(), &stream) {
            self.announce(&stream, &[], &[gone]);
        }
        Ok(())
    }

    /// The presence of `session` on a channel, which it must have joined.
    fn member(
        &self,
        session: &SessionHandle,
        key: &ChannelKey,
        what: &str,
    ) -> Result<Presence, RtError> {
        self.hub
            .presence(session.id(), &stream_of(key))
            .ok_or_else(|| {
                RtError::bad_input(format!("must join the channel before {what} messages"))
            })
    }

    /// `channel_message_send`: stores (when persistent) and delivers a message.
    pub async fn send(
        &self,
        session: &SessionHandle,
        req: ChannelMessageSend,
    ) -> Result<ChannelMessageAck, RtError> {
        let key = parse_channel(&req.channel_id)?;
        check_content(&req.content)?;
        let me = self.member(session, &key, "sending")?;
        let now = now_us();
        let message = ChannelMessage {
            id: ludus_core::new_row_id(),
            channel: key,
            code: CODE_CHAT,
            sender_id: session.user_id(),
            username: session.username().to_owned(),
            content: req.content,
            create_time_us: now,
            update_time_us: now,
        };
        self.deliver(message, me.meta.persistence).await
    }

    /// Stores a new message when `persist`, then pushes it to the channel and
    /// returns the sender's ack.
    async fn deliver(
        &self,
        message: ChannelMessage,
        persist: bool,
    ) -> Result<ChannelMessageAck, RtError> {
        if persist {
            self.store
                .insert_channel_message(&message)
                .await
                .map_err(|error| {
                    tracing::error!(%error, "cannot store chat message");
                    RtError::internal("could not persist message to channel history, try again")
                })?;
        }
        self.push_message(&message, persist);
        Ok(ack_of(&message, persist))
    }

    /// A message sent by the server's modules (`nk.channel_message_send`):
    /// no membership needed; `sender` nil means the system.
    pub async fn send_as(
        &self,
        channel_id: &str,
        content: String,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ChannelMessageAck, RtError> {
        let key = parse_channel(channel_id)?;
        check_content(&content)?;
        let now = now_us();
        let message = ChannelMessage {
            id: ludus_core::new_row_id(),
            channel: key,
            code: CODE_CHAT,
            sender_id: sender,
            username,
            content,
            create_time_us: now,
            update_time_us: now,
        };
        self.deliver(message, persist).await
    }

    /// A message changed by the server's modules (`nk.channel_message_update`):
    /// no membership needed; when `persist`, the stored message of that id
    /// and sender (nil for the system) is changed, as Nakama's
    /// `ChannelMessageUpdate`.
    pub async fn update_as(
        &self,
        channel_id: &str,
        message_id: &str,
        content: String,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ChannelMessageAck, RtError> {
        check_content(&content)?;
        let edit = Edit::Update(content);
        self.edit_as(channel_id, message_id, edit, sender, username, persist)
            .await
    }

    /// A message removed by the server's modules (`nk.channel_message_remove`),
    /// as [`Chat::update_as`].
    pub async fn remove_as(
        &self,
        channel_id: &str,
        message_id: &str,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ChannelMessageAck, RtError> {
        self.edit_as(
            channel_id,
            message_id,
            Edit::Remove,
            sender,
            username,
            persist,
        )
        .await
    }

    /// The one path of a module's update or removal: the pushed message, and
    /// the stored one changed first when `persist` (an unknown id or another
    /// sender's message is refused and nothing is pushed).
    async fn edit_as(
        &self,
        channel_id: &str,
        message_id: &str,
        edit: Edit,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ChannelMessageAck, RtError> {
        let id = Uuid::parse_str(message_id)
            .map_err(|_| RtError::bad_input("invalid message id, expected a uuid"))?;
        let key = parse_channel(channel_id)?;
        let now = now_us();
        let (code, content) = match edit {
            Edit::Update(content) => (CODE_CHAT_UPDATE, content),
            Edit::Remove => (CODE_CHAT_REMOVE, "{}".to_owned()),
        };
        let mut message = ChannelMessage {
            id,
            channel: key,
            code,
            sender_id: sender,
            username,
            content,
            create_time_us: now,
            update_time_us: now,
        };
        if persist {
            let stored = if code == CODE_CHAT_UPDATE {
                self.store
                    .update_channel_message(&message.channel, id, sender, &message.content, now)
                    .await
            } else {
                self.store
                    .delete_channel_message(&message.channel, id, sender)
                    .await
            };
            let stored = stored
                .map_err(|error| {
                    tracing::error!(%error, code, "cannot change chat message");
                    RtError::internal("could not persist the change to channel history, try again")
                })?
                .ok_or_else(|| RtError::bad_input("channel message not found"))?;
            message.create_time_us = stored.create_time_us;
        }
        self.push_message(&message, persist);
        Ok(ack_of(&message, persist))
    }

    /// `channel_message_update`: only the sender may change a message.
    pub async fn update(
        &self,
        session: &SessionHandle,
        req: ChannelMessageUpdate,
    ) -> Result<ChannelMessageAck, RtError> {
        let id = Uuid::parse_str(&req.message_id)
            .map_err(|_| RtError::bad_input("invalid message id, expected a uuid"))?;
        let key = parse_channel(&req.channel_id)?;
        check_content(&req.content)?;
        let me = self.member(session, &key, "updating")?;
        let persistent = me.meta.persistence;
        let now = now_us();
        let mut message = if persistent {
            let stored = self
                .store
                .update_channel_message(&key, id, session.user_id(), &req.content, now)
                .await
                .map_err(|error| {
                    tracing::error!(%error, "cannot update chat message");
                    RtError::internal(
                        "could not persist message update to channel history, try again",
                    )
                })?;
            // The store matches id, sender and channel together, so a
            // mismatch writes nothing.
            stored.ok_or_else(|| {
                RtError::bad_input("could not find message to update in channel history")
            })?
        } else {
            ChannelMessage {
                id,
                channel: key,
                code: CODE_CHAT,
                sender_id: session.user_id(),
                username: session.username().to_owned(),
                content: req.content,
                create_time_us: now,
                update_time_us: now,
            }
        };
        message.code = CODE_CHAT_UPDATE;
        self.push_message(&message, persistent);
        Ok(ack_of(&message, persistent))
    }

    /// `channel_message_remove`: only the sender may remove a message.
    pub async fn remove(
        &self,
        session: &SessionHandle,
        req: ChannelMessageRemove,
    ) -> Result<ChannelMessageAck, RtError> {
        let id = Uuid::parse_str(&req.message_id)
            .map_err(|_| RtError::bad_input("invalid message id, expected a uuid"))?;
        let key = parse_channel(&req.channel_id)?;
        let me = self.member(session, &key, "removing")?;
        let persistent = me.meta.persistence;
        let now = now_us();
        let mut message = if persistent {
            let stored = self
                .store
                .delete_channel_message(&key, id, session.user_id())
                .await
                .map_err(|error| {
                    tracing::error!(%error, "cannot remove chat message");
                    RtError::internal(
                        "could not persist message removal to channel history, try again",
                    )
                })?;
            stored.ok_or_else(|| {
                RtError::bad_input("could not find message to remove in channel history")
            })?
        } else {
            ChannelMessage {
                id,
                channel: key,
                code: CODE_CHAT,
                sender_id: session.user_id(),
                username: session.username().to_owned(),
                content: String::new(),
                create_time_us: now,
                update_time_us: now,
            }
        };
        message.code = CODE_CHAT_REMOVE;
        message.content = "{}".to_owned();
        message.update_time_us = now;
        self.push_message(&message, persistent);
        Ok(ack_of(&message, persistent))
    }

    /// Delivers a `channel_message` to everyone on the channel, sender included.
    fn push_message(&self, message: &ChannelMessage, persistent: bool) {
        self.hub.send_to_stream(
            &stream_of(&message.channel),
            Envelope {
                cid: String::new(),
                message: Some(Message::ChannelMessage(message_to_wire(
                    message, persistent,
                ))),
            },
            None,
        );
    }

    /// Announces joins and leaves (the visible ones) to everyone on the
    /// channel.
    pub(crate) fn announce(&self, stream: &Stream, joins: &[Presence], leaves: &[Presence]) {
        let (joins, leaves) = (visible(joins), visible(leaves));
        if joins.is_empty() && leaves.is_empty() {
            return;
        }
        let key = key_of(stream);
        let n = names(&key);
        let event = ChannelPresenceEvent {
            channel_id: key.id(),
            joins: joins.iter().map(|p| p.to_wire(false)).collect(),
            leaves: leaves.iter().map(|p| p.to_wire(false)).collect(),
            room_name: n.room_name,
            group_id: n.group_id,
            user_id_one: n.user_id_one,
            user_id_two: n.user_id_two,
        };
        self.hub.send_to_stream(
            stream,
            Envelope {
                cid: String::new(),
                message: Some(Message::ChannelPresenceEvent(event)),
            },
            None,
        );
    }
}

impl Chat {
    /// Posts a membership change of a group (Nakama's codes 3-9) to its
    /// channel: stored, then pushed to the members on it.
    pub async fn post_group_event(
        &self,
        group: Uuid,
        user: Uuid,
        username: String,
        code: i32,
    ) -> Result<(), StoreError> {
        let now = now_us();
        let message = ChannelMessage {
            id: Uuid::new_v4(),
            channel: ChannelKey::group(group),
            code,
            sender_id: user,
            username,
            content: "{}".to_owned(),
            create_time_us: now,
            update_time_us: now,
        };
        self.store.insert_channel_message(&message).await?;
        self.push_message(&message, true);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_and_channels_map_both_ways() {
        for key in [
            ChannelKey::room("lobby").unwrap(),
            ChannelKey::direct(Uuid::new_v4(), Uuid::new_v4()).unwrap(),
            ChannelKey::group(Uuid::new_v4()),
        ] {
            assert_eq!(key_of(&stream_of(&key)), key);
        }
    }

    #[test]
    fn microsecond_timestamps() {
        let t = timestamp_us(1_700_000_000_123_456);
        assert_eq!((t.seconds, t.nanos), (1_700_000_000, 123_456_000));
    }
}
