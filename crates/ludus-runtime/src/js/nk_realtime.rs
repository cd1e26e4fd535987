//! The realtime side of Nakama's JS `nk`: notifications
//! (`notificationSend`, `notificationsSend`, `notificationSendAll`,
//! `notificationsList`, `notificationsDelete`, `notificationsGetId`,
//! `notificationsDeleteId`, `notificationsUpdate`),
//! chat (`channelIdBuild`, `channelMessageSend|Update|Remove`,
//! `channelMessagesList`), status follows and streams (`streamUser*`,
//! `streamCount`, `streamClose`, `streamSend`, `streamSendRaw`) and
//! `partyList`, with
//! Nakama's argument order, defaults and result keys.

use std::sync::Arc;

use ludus_core::chat::{ChannelKey, MODE_DIRECT, MODE_GROUP, MODE_ROOM};
use ludus_core::notification::{Notification, NotificationUpdate};
use ludus_proto::realtime::ChannelMessageAck;
use ludus_realtime::{Presence, Stream, StreamMode};
use rquickjs::{Ctx, Object};
use serde_json::{Value as Json, json};
use uuid::Uuid;

use super::nk_common::{
    Args, NkError, NkResult, answer, arg, define, field, int_of, json_text, nothing, parsed,
    served, string_of, uuids_of,
};
use super::shared::JsShared;
use crate::services::StreamMeta;

pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    notifications(ctx, nk, shared)?;
    channels(ctx, nk, shared)?;
    streams(ctx, nk, shared)
}

fn server(what: &str) -> impl Fn(ludus_core::ApiError) -> NkError + '_ {
    move |e| NkError::Server(format!("{what}: {}", e.message))
}

/// An empty string or absent: the system (nil); otherwise a uuid.
fn sender(v: &Json, what: &str) -> Result<Uuid, NkError> {
    match string_of(v, what)?.as_str() {
        "" => Ok(Uuid::nil()),
        id => Uuid::parse_str(id).map_err(|_| arg(format!("expects {what} to be a valid id"))),
    }
}

fn notification(
    user_id: Uuid,
    subject: String,
    content: Option<String>,
    code: i64,
    sender_id: Uuid,
    persistent: bool,
) -> Result<Notification, NkError> {
    let content = content.unwrap_or_else(|| "{}".into());
    crate::nk_pure::notification(user_id, subject, content, code, sender_id, persistent)
        .map_err(arg)
}

fn notifications<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "notificationSend", |s, a| {
        let n = notification(
            a.uuid(0, "user id")?,
            a.string(1, "subject")?,
            json_text(a.get(2), "content")?,
            a.int_or(3, 0, "code")?,
            sender(a.get(4), "sender id")?,
            a.bool_or(5, false, "persistent")?,
        )?;
        send(s, vec![n])
    })?;
    define(ctx, nk, shared, "notificationSendAll", |s, a| {
        // From the system; each recipient's copy carries its own user id.
        let n = notification(
            Uuid::nil(),
            a.string(0, "subject")?,
            json_text(a.get(1), "content")?,
            a.int_or(2, 0, "code")?,
            Uuid::nil(),
            a.bool_or(3, false, "persistent")?,
        )?;
        let services = s.services.clone();
        served(s, "failed to send notification", async move {
            services.notification_send_all(n).await
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "notificationsUpdate", |s, a| {
        let Json::Array(items) = a.get(0) else {
            return Err(arg("expects an array of notification updates"));
        };
        let mut updates = Vec::with_capacity(items.len());
        for item in items {
            let Json::Object(o) = item else {
                return Err(arg("expects each update to be an object"));
            };
            let id = Uuid::parse_str(&string_of(field(o, "id"), "id")?)
                .map_err(|_| arg("expects 'id' value to be a valid id"))?;
            let text = |key: &str| -> Result<Option<String>, NkError> {
                match field(o, key) {
                    Json::Null => Ok(None),
                    v => match string_of(v, key)? {
                        t if t.is_empty() => Err(arg(format!(
                            "expects '{key}' value to be a non-empty string"
                        ))),
                        t => Ok(Some(t)),
                    },
                }
            };
            let sender_id = match text("sender")? {
                None => None,
                Some(t) => Some(
                    Uuid::parse_str(&t)
                        .map_err(|_| arg("expects 'sender' value to be a valid id"))?,
                ),
            };
            updates.push(NotificationUpdate {
                id,
                content: json_text(field(o, "content"), "content")?,
                subject: text("subject")?,
                sender_id,
            });
        }
        let services = s.services.clone();
        served(s, "failed to update notifications", async move {
            services.notifications_update(updates).await
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "notificationsSend", |s, a| {
        let Json::Array(items) = a.get(0) else {
            return Err(arg("expects a valid array of notifications"));
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let Json::Object(o) = item else {
                return Err(arg("expects each notification to be an object"));
            };
            let user = Uuid::parse_str(&string_of(field(o, "userId"), "userId")?)
                .map_err(|_| arg("expects 'userId' value to be a valid id"))?;
            out.push(notification(
                user,
                string_of(field(o, "subject"), "subject")?,
                json_text(field(o, "content"), "content")?,
                match field(o, "code") {
                    Json::Null => 0,
                    v => int_of(v, "code")?,
                },
                sender(field(o, "senderId"), "senderId")?,
                matches!(field(o, "persistent"), Json::Bool(true)),
            )?);
        }
        if out.is_empty() {
            return nothing();
        }
        send(s, out)
    })?;
    define(ctx, nk, shared, "notificationsList", |s, a| {
        let user = a.uuid(0, "user id")?;
        let limit = a.int_or(1, 100, "limit")?;
        if !(1..=1000).contains(&limit) {
            return Err(arg("expects limit to be 1-1000"));
        }
        let cursor = Some(a.string(2, "cursor")?).filter(|c| !c.is_empty());
        let services = s.services.clone();
        let page = served(s, "failed to list notifications", async move {
            services
                .notifications_list(user, limit as u32, cursor)
                .await
        })?;
        let list: Vec<Json> = page
            .notifications
            .iter()
            .map(|n| {
                json!({
                    "id": n.id.to_string(),
                    "subject": n.subject,
                    // Nakama lists the content as its JSON text.
                    "content": n.content,
                    "code": n.code,
                    "senderId": sender_text(n.sender_id),
                    "persistent": n.persistent,
                    "createTime": n.create_time_us.div_euclid(1_000_000),
                })
            })
            .collect();
        let cursor = page.cursor.filter(|c| !c.is_empty() && !list.is_empty());
        answer(json!({ "notifications": list, "cursor": cursor }))
    })?;
    define(ctx, nk, shared, "notificationsDelete", |s, a| {
        let Json::Array(items) = a.get(0) else {
            return Err(arg("expects notifications to be an array"));
        };
        // By user, as Nakama deletes them.
        let mut by_user: Vec<(Uuid, Vec<Uuid>)> = Vec::new();
        for item in items {
            let Json::Object(o) = item else {
                return Err(arg("expects a valid array of notifications"));
            };
            let user = Uuid::parse_str(&string_of(field(o, "userId"), "userId")?)
                .map_err(|_| arg("expects 'userId' value to be a valid id"))?;
            let id = Uuid::parse_str(&string_of(field(o, "notificationId"), "notificationId")?)
                .map_err(|_| arg("expects 'notificationId' value to be a valid id"))?;
            match by_user.iter_mut().find(|(u, _)| *u == user) {
                Some((_, ids)) => ids.push(id),
                None => by_user.push((user, vec![id])),
            }
        }
        for (user, ids) in by_user {
            let services = s.services.clone();
            served(s, "failed to delete notifications", async move {
                services.notifications_delete(user, ids).await
            })?;
        }
        nothing()
    })?;
    define(ctx, nk, shared, "notificationsGetId", |s, a| {
        let ids = uuids_of(a.get(0), "notification id")?;
        let user = optional_user(a)?;
        let services = s.services.clone();
        let found = served(s, "failed to get notifications by id", async move {
            services.notifications_get_id(user, ids).await
        })?;
        let list = found
            .iter()
            .map(|n| {
                json!({
                    "id": n.id.to_string(),
                    "userId": n.user_id.to_string(),
                    "subject": n.subject,
                    "persistent": n.persistent,
                    "content": parsed(&n.content),
                    "code": n.code,
                    "sender": sender_text(n.sender_id),
                    "createTime": n.create_time_us.div_euclid(1_000_000),
                })
            })
            .collect();
        answer(Json::Array(list))
    })?;
    define(ctx, nk, shared, "notificationsDeleteId", |s, a| {
        let ids = uuids_of(a.get(0), "notification id")?;
        let user = optional_user(a)?;
        let services = s.services.clone();
        served(s, "failed to delete notifications by id", async move {
            services.notifications_delete_id(user, ids).await
        })?;
        nothing()
    })?;
    Ok(())
}

fn optional_user(a: &Args) -> Result<Option<Uuid>, NkError> {
    match a.string(1, "user id")?.as_str() {
        "" => Ok(None),
        u => Uuid::parse_str(u)
            .map(Some)
            .map_err(|_| arg("expects user id to be a valid uuid")),
    }
}

/// A sender as Nakama writes one: empty for the system.
fn sender_text(id: Uuid) -> String {
    if id.is_nil() {
        String::new()
    } else {
        id.to_string()
    }
}

fn send(s: &JsShared, list: Vec<Notification>) -> NkResult {
    let services = s.services.clone();
    served(s, "failed to send notifications", async move {
        services.notifications_send(list).await
    })?;
    nothing()
}

/// A chat acknowledgement with Nakama's keys, times in UNIX seconds.
fn ack_json(ack: ChannelMessageAck) -> Json {
    let secs = |t: Option<ludus_proto::Timestamp>| t.map_or(0, |t| t.seconds);
    json!({
        "channelId": ack.channel_id,
        "messageId": ack.message_id,
        "code": ack.code.map_or(0, |c| c.value),
        "username": ack.username,
        "createTime": secs(ack.create_time),
        "updateTime": secs(ack.update_time),
        "persistent": ack.persistent.is_some_and(|p| p.value),
    })
}

fn message_id(a: &Args) -> Result<String, NkError> {
    let id = a.string(1, "message id")?;
    Uuid::parse_str(&id).map_err(|_| arg("invalid message identifier"))?;
    Ok(id)
}

fn content_of(a: &Args, i: usize) -> Result<String, NkError> {
    Ok(json_text(a.get(i), "content")?.unwrap_or_else(|| "{}".into()))
}

fn channels<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "channelIdBuild", |_, a| {
        let me = sender(a.get(0), "sender id")?;
        let target = a.string(1, "target")?;
        let key = match a.int_or(2, 0, "channel type")? {
            1 => ChannelKey::room(&target),
            2 => {
                let other = Uuid::parse_str(&target)
                    .map_err(|_| arg("expects target to be a valid user id"))?;
                ChannelKey::direct(me, other)
            }
            3 => {
                let group = Uuid::parse_str(&target)
                    .map_err(|_| arg("expects target to be a valid group id"))?;
                Ok(ChannelKey::group(group))
            }
            _ => {
                return Err(arg(
                    "expects channel type to be 1 (room), 2 (direct message) or 3 (group)",
                ));
            }
        };
        let key = key.map_err(|e| arg(e.to_string()))?;
        answer(Json::String(key.id()))
    })?;
    define(ctx, nk, shared, "channelMessageSend", |s, a| {
        let channel = a.required(0, "channel id")?;
        let content = content_of(a, 1)?;
        let from = sender(a.get(2), "sender id")?;
        let username = a.string(3, "sender username")?;
        let persist = a.bool_or(4, true, "persist")?;
        let services = s.services.clone();
        let ack = served(s, "failed to send channel message", async move {
            services
                .channel_message_send(&channel, content, from, username, persist)
                .await
        })?;
        answer(ack_json(ack))
    })?;
    define(ctx, nk, shared, "channelMessageUpdate", |s, a| {
        let channel = a.required(0, "channel id")?;
        let id = message_id(a)?;
        let content = content_of(a, 2)?;
        let from = sender(a.get(3), "sender id")?;
        let username = a.string(4, "sender username")?;
        let persist = a.bool_or(5, true, "persist")?;
        let services = s.services.clone();
        let ack = served(s, "failed to update channel message", async move {
            services
                .channel_message_update(&channel, &id, content, from, username, persist)
                .await
        })?;
        answer(ack_json(ack))
    })?;
    define(ctx, nk, shared, "channelMessageRemove", |s, a| {
        let channel = a.required(0, "channel id")?;
        let id = message_id(a)?;
        let from = sender(a.get(2), "sender id")?;
        let username = a.string(3, "sender username")?;
        let persist = a.bool_or(4, true, "persist")?;
        let services = s.services.clone();
        let ack = served(s, "failed to remove channel message", async move {
            services
                .channel_message_remove(&channel, &id, from, username, persist)
                .await
        })?;
        answer(ack_json(ack))
    })?;
    define(ctx, nk, shared, "channelMessagesList", |s, a| {
        let channel = a.required(0, "channel id")?;
        let limit = a.int_or(1, 100, "limit")?;
        if !(1..=100).contains(&limit) {
            return Err(arg("limit must be 1-100"));
        }
        let forward = a.bool_or(2, true, "forward")?;
        let cursor = Some(a.string(3, "cursor")?).filter(|c| !c.is_empty());
        let services = s.services.clone();
        let page = served(s, "failed to list channel messages", async move {
            services
                .channel_messages_list(channel, limit as u32, forward, cursor)
                .await
        })?;
        let messages: Vec<Json> = page
            .messages
            .iter()
            .map(|m| {
                let key = &m.channel;
                let text = |on: bool, v: String| if on { v } else { String::new() };
                json!({
                    "channelId": key.id(),
                    "messageId": m.id.to_string(),
                    "code": m.code,
                    "senderId": m.sender_id.to_string(),
                    "username": m.username,
                    "content": m.content,
                    "createTime": m.create_time_us.div_euclid(1_000_000),
                    "updateTime": m.update_time_us.div_euclid(1_000_000),
                    // Only kept messages have a history.
                    "persistent": true,
                    "roomName": text(key.mode == MODE_ROOM, key.label.clone()),
                    "groupId": text(key.mode == MODE_GROUP, key.subject.to_string()),
                    "userIdOne": text(key.mode == MODE_DIRECT, key.subject.to_string()),
                    "userIdTwo": text(key.mode == MODE_DIRECT, key.subcontext.to_string()),
                })
            })
            .collect();
        answer(json!({
            "messages": messages,
            "nextCursor": page.next_cursor.unwrap_or_default(),
            "prevCursor": page.prev_cursor.unwrap_or_default(),
        }))
    })?;
    for (name, follow) in [("statusFollow", true), ("statusUnfollow", false)] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            // Nakama's JS messages.
            let session = a
                .uuid(0, "session id")
                .map_err(|_| arg("expects a valid session id"))?;
            let users =
                uuids_of(a.get(1), "user id").map_err(|_| arg("expects a valid user id"))?;
            if follow {
                let services = s.services.clone();
                served(s, "failed to follow", async move {
                    services.status_follow(session, users).await
                })?;
            } else {
                s.services
                    .status_unfollow(session, users)
                    .map_err(server("failed to unfollow"))?;
            }
            nothing()
        })?;
    }
    Ok(())
}

/// Nakama's stream object `{mode, subject, subcontext, label}`; keys left
/// out are zero, nil ids or empty.
fn stream_of(v: &Json) -> Result<Stream, NkError> {
    let Json::Object(o) = v else {
        return Err(arg("expects a stream object"));
    };
    let mode = match field(o, "mode") {
        Json::Null => 0,
        v => int_of(v, "stream mode")?,
    };
    let mode = u8::try_from(mode).map_err(|_| arg("expects stream mode to be 0-255"))?;
    let id = |key: &str| -> Result<Uuid, NkError> {
        match string_of(field(o, key), key)?.as_str() {
            "" => Ok(Uuid::nil()),
            s => Uuid::parse_str(s)
                .map_err(|_| arg(format!("expects stream {key} to be a valid id"))),
        }
    };
    let label = string_of(field(o, "label"), "label")?;
    Ok(Stream::new(
        StreamMode::from_u8(mode),
        id("subject")?,
        id("subcontext")?,
        &label,
    ))
}

fn presence_json(node: &str, p: &Presence) -> Json {
    json!({
        "userId": p.user_id.to_string(),
        "sessionId": p.session_id.to_string(),
        "nodeId": node,
        "hidden": p.meta.hidden,
        "persistence": p.meta.persistence,
        "username": &*p.username,
        "status": &*p.meta.status,
    })
}

/// The session ids of a presence array (`null`: everyone on the stream).
fn sessions_of(v: &Json) -> Result<Vec<Uuid>, NkError> {
    match v {
        Json::Null => Ok(Vec::new()),
        Json::Array(items) => items
            .iter()
            .map(|p| {
                let Json::Object(o) = p else {
                    return Err(arg("expects presences to be objects"));
                };
                Uuid::parse_str(&string_of(field(o, "sessionId"), "sessionId")?)
                    .map_err(|_| arg("expects presence sessionId to be a valid id"))
            })
            .collect(),
        _ => Err(arg("expects presences to be an array")),
    }
}

fn streams<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    for (name, update) in [("streamUserJoin", false), ("streamUserUpdate", true)] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let user = a.uuid(0, "user id")?;
            let session = a.uuid(1, "session id")?;
            let stream = stream_of(a.get(2))?;
            if update && s.services.stream_user_get(user, session, &stream).is_none() {
                return Err(NkError::Server(
                    "stream user update failed: the session is not on that stream".into(),
                ));
            }
            let meta = StreamMeta {
                hidden: a.bool_or(3, false, "hidden")?,
                persistence: a.bool_or(4, true, "persistence")?,
                status: a.string(5, "status")?,
            };
            let joined = s
                .services
                .stream_user_join(user, session, &stream, meta)
                .map_err(server("stream user join failed"))?;
            // Nakama's update answers nothing, join whether it was new.
            if update {
                nothing()
            } else {
                answer(joined.into())
            }
        })?;
    }
    define(ctx, nk, shared, "streamUserLeave", |s, a| {
        let user = a.uuid(0, "user id")?;
        let session = a.uuid(1, "session id")?;
        let stream = stream_of(a.get(2))?;
        s.services
            .stream_user_leave(user, session, &stream)
            .map_err(server("stream user leave failed"))?;
        nothing()
    })?;
    define(ctx, nk, shared, "streamUserKick", |s, a| {
        let Json::Object(p) = a.get(0) else {
            return Err(arg("expects a presence object"));
        };
        let id = |key: &str| {
            Uuid::parse_str(&string_of(field(p, key), key)?)
                .map_err(|_| arg(format!("expects presence {key} to be a valid id")))
        };
        let (user, session) = (id("userId")?, id("sessionId")?);
        let stream = stream_of(a.get(1))?;
        s.services
            .stream_user_leave(user, session, &stream)
            .map_err(server("stream user kick failed"))?;
        nothing()
    })?;
    define(ctx, nk, shared, "streamUserList", |s, a| {
        let stream = stream_of(a.get(0))?;
        let hidden = a.bool_or(1, true, "include hidden")?;
        let not_hidden = a.bool_or(2, true, "include not hidden")?;
        let list = s.services.stream_user_list(&stream, hidden, not_hidden);
        let node = s.settings.node.as_str();
        answer(list.iter().map(|p| presence_json(node, p)).collect())
    })?;
    define(ctx, nk, shared, "streamUserGet", |s, a| {
        let user = a.uuid(0, "user id")?;
        let session = a.uuid(1, "session id")?;
        let stream = stream_of(a.get(2))?;
        answer(match s.services.stream_user_get(user, session, &stream) {
            Some(p) => json!({
                "hidden": p.meta.hidden,
                "persistence": p.meta.persistence,
                "username": &*p.username,
                "status": &*p.meta.status,
            }),
            None => Json::Null,
        })
    })?;
    define(ctx, nk, shared, "partyList", |s, a| {
        let limit = a.int_or(0, 10, "limit")?;
        if !(1..=100).contains(&limit) {
            return Err(arg("limit must be 1-100"));
        }
        let open = match a.get(1) {
            Json::Null => None,
            _ => Some(a.bool_or(1, false, "open")?),
        };
        let hidden = a.bool_or(2, false, "show hidden")?;
        let query = a.string(3, "query")?;
        let cursor = a.string(4, "cursor")?;
        let (parties, next) = s
            .services
            .party_list(limit as usize, open, hidden, &query, &cursor)
            .map_err(server("failed to list parties"))?;
        let list: Vec<Json> = parties
            .iter()
            .map(|p| {
                json!({
                    "partyId": p.party_id,
                    "open": p.open,
                    "maxSize": p.max_size,
                    "label": p.label,
                })
            })
            .collect();
        let mut out = json!({ "parties": list });
        if let Some(c) = next.filter(|c| !c.is_empty()) {
            out["cursor"] = c.into();
        }
        answer(out)
    })?;
    define(ctx, nk, shared, "streamCount", |s, a| {
        let stream = stream_of(a.get(0))?;
        answer(s.services.stream_count(&stream).into())
    })?;
    define(ctx, nk, shared, "streamClose", |s, a| {
        s.services.stream_close(&stream_of(a.get(0))?);
        nothing()
    })?;
    define(ctx, nk, shared, "streamSend", |s, a| {
        let stream = stream_of(a.get(0))?;
        let data = a.string(1, "data")?;
        let sessions = sessions_of(a.get(2))?;
        let reliable = a.bool_or(3, true, "reliable")?;
        s.services.stream_send(&stream, data, sessions, reliable);
        nothing()
    })?;
    define(ctx, nk, shared, "streamSendRaw", |s, a| {
        let stream = stream_of(a.get(0))?;
        let envelope: ludus_proto::realtime::Envelope =
            ludus_proto::from_json(a.get(1).to_string().as_bytes())
                .map_err(|e| arg(format!("not a valid envelope: {e}")))?;
        if envelope.message.is_none() {
            return Err(arg("not a valid envelope: it carries no message"));
        }
        let sessions = sessions_of(a.get(2))?;
        s.services
            .stream_send_raw(&stream, envelope, sessions)
            .map_err(server("stream send raw failed"))?;
        nothing()
    })?;
    Ok(())
}
