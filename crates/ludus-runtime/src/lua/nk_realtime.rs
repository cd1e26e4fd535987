//! `nk` functions over the realtime layer: notifications, chat messages,
//! session disconnects and streams (`{mode, subject, subcontext, label}`
//! tables). Argument order, defaults and result shapes are Nakama's.

use std::sync::Arc;

use ludus_core::chat::ChannelKey;
use ludus_core::notification::{Notification, NotificationUpdate};
use mlua::{Lua, Table, Value as LuaValue};
use uuid::Uuid;

use super::convert;
use super::nk_common::{api_error, arg_error, block_on, whole_number};
use super::shared::LuaShared;
use crate::services::StreamMeta;
use ludus_realtime::{Presence, Stream, StreamMode};

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    nk.set(
        "channel_id_build",
        lua.create_function(
            |_, (sender_id, target, kind): (Option<String>, String, i64)| {
                let key = match kind {
                    1 => ChannelKey::room(&target),
                    2 => {
                        let me = optional_uuid(sender_id.as_deref(), "sender id")?;
                        let other = uuid_arg(&target, "target")?;
                        ChannelKey::direct(me, other)
                    }
                    3 => Ok(ChannelKey::group(uuid_arg(&target, "target")?)),
                    _ => {
                        return Err(mlua::Error::runtime(
                            "expects channel type to be 1 (room), 2 (direct message) or 3 (group)",
                        ));
                    }
                };
                key.map(|k| k.id())
                    .map_err(|e| mlua::Error::runtime(e.to_string()))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "channel_message_send",
        lua.create_function(
            move |lua,
                  (channel_id, content, sender_id, username, persist): (
                String,
                Option<Table>,
                Option<String>,
                Option<String>,
                Option<bool>,
            )| {
                let content = match content {
                    Some(t) => json_object(lua, t, "message content")?,
                    None => "{}".to_owned(),
                };
                let sender = optional_uuid(sender_id.as_deref(), "sender id")?;
                let ack = block_on(
                    &s,
                    s.services.channel_message_send(
                        &channel_id,
                        content,
                        sender,
                        username.unwrap_or_default(),
                        persist.unwrap_or(false),
                    ),
                )?;
                ack_table(lua, ack)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "status_follow",
        lua.create_function(move |_, (session_id, ids): (String, Table)| {
            let (session, users) = status_args(&session_id, &ids)?;
            block_on(&s, s.services.status_follow(session, users))
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "status_unfollow",
        lua.create_function(move |_, (session_id, ids): (String, Table)| {
            let (session, users) = status_args(&session_id, &ids)?;
            s.services
                .status_unfollow(session, users)
                .map_err(api_error)
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "channel_message_update",
        lua.create_function(
            move |lua,
                  (channel_id, message_id, content, sender_id, username, persist): (
                String,
                String,
                Option<Table>,
                Option<String>,
                Option<String>,
                Option<bool>,
            )| {
                message_id_arg(&message_id)?;
                let content = match content {
                    Some(t) => json_object(lua, t, "message content")?,
                    None => "{}".to_owned(),
                };
                let sender = sender_arg(sender_id.as_deref(), 4)?;
                let ack = block_on(
                    &s,
                    s.services.channel_message_update(
                        &channel_id,
                        &message_id,
                        content,
                        sender,
                        username.unwrap_or_default(),
                        persist.unwrap_or(false),
                    ),
                )?;
                ack_table(lua, ack)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "channel_message_remove",
        lua.create_function(
            move |lua,
                  (channel_id, message_id, sender_id, username, persist): (
                String,
                String,
                Option<String>,
                Option<String>,
                Option<bool>,
            )| {
                message_id_arg(&message_id)?;
                let sender = sender_arg(sender_id.as_deref(), 3)?;
                let ack = block_on(
                    &s,
                    s.services.channel_message_remove(
                        &channel_id,
                        &message_id,
                        sender,
                        username.unwrap_or_default(),
                        persist.unwrap_or(false),
                    ),
                )?;
                ack_table(lua, ack)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "notification_send",
        lua.create_function(
            move |lua,
                  (user_id, subject, content, code, sender_id, persistent): (
                String,
                String,
                Table,
                i32,
                Option<String>,
                Option<bool>,
            )| {
                let n = notification(
                    uuid_arg(&user_id, "user id")?,
                    subject,
                    json_object(lua, content, "content")?,
                    code,
                    optional_uuid(sender_id.as_deref(), "sender id")?,
                    persistent.unwrap_or(false),
                )?;
                block_on(&s, s.services.notifications_send(vec![n]))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "notifications_send",
        lua.create_function(move |lua, list: Table| {
            let mut out = Vec::new();
            for entry in list.sequence_values::<Table>() {
                let t = entry
                    .map_err(|_| mlua::Error::runtime("expects a table of notification tables"))?;
                let user_id: String = t.get("user_id")?;
                let sender_id: Option<String> = t.get("sender_id")?;
                let content = match t.get::<Option<Table>>("content")? {
                    Some(c) => json_object(lua, c, "content")?,
                    None => "{}".to_owned(),
                };
                out.push(notification(
                    uuid_arg(&user_id, "user id")?,
                    t.get::<Option<String>>("subject")?.unwrap_or_default(),
                    content,
                    t.get::<Option<i32>>("code")?.unwrap_or(0),
                    optional_uuid(sender_id.as_deref(), "sender id")?,
                    t.get::<Option<bool>>("persistent")?.unwrap_or(false),
                )?);
            }
            if out.is_empty() {
                return Ok(());
            }
            block_on(&s, s.services.notifications_send(out))
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "notification_send_all",
        lua.create_function(
            move |lua, (subject, content, code, persistent): (String, Table, i32, Option<bool>)| {
                // Sent by the system; the user id is each recipient's.
                let n = notification(
                    Uuid::nil(),
                    subject,
                    json_object(lua, content, "content")?,
                    code,
                    Uuid::nil(),
                    persistent.unwrap_or(false),
                )?;
                block_on(&s, s.services.notification_send_all(n))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "notifications_update",
        lua.create_function(move |lua, list: Table| {
            let mut updates = Vec::new();
            for entry in list.sequence_values::<LuaValue>() {
                let LuaValue::Table(t) = entry? else {
                    return Err(arg_error(1, "expects a valid set of data"));
                };
                updates.push(notification_update(lua, &t)?);
            }
            block_on(&s, s.services.notifications_update(updates))
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "session_disconnect",
        lua.create_function(move |_, (session_id, reason): (String, Option<i32>)| {
            let sid = uuid_arg(&session_id, "session id")?;
            s.services
                .session_disconnect(sid, reason.unwrap_or(0))
                .map_err(api_error)
        })?,
    )?;
    install_streams(lua, shared, nk)
}

fn install_streams(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    for (name, update) in [("stream_user_join", false), ("stream_user_update", true)] {
        let s = shared.clone();
        nk.set(
            name,
            lua.create_function(
                move |_,
                      (user_id, session_id, stream, hidden, persistence, status): (
                    String,
                    String,
                    Table,
                    Option<bool>,
                    Option<bool>,
                    Option<String>,
                )| {
                    let (uid, sid) = (
                        uuid_arg(&user_id, "user id")?,
                        uuid_arg(&session_id, "session id")?,
                    );
                    let stream = stream_key(&stream)?;
                    if update && s.services.stream_user_get(uid, sid, &stream).is_none() {
                        return Err(mlua::Error::runtime(
                            "stream user update failed: the session is not on that stream",
                        ));
                    }
                    let meta = StreamMeta {
                        hidden: hidden.unwrap_or(false),
                        persistence: persistence.unwrap_or(true),
                        status: status.unwrap_or_default(),
                    };
                    let joined = s
                        .services
                        .stream_user_join(uid, sid, &stream, meta)
                        .map_err(api_error)?;
                    // Nakama's update returns nothing, join whether it was new.
                    Ok(if update { None } else { Some(joined) })
                },
            )?,
        )?;
    }
    let s = shared.clone();
    nk.set(
        "stream_user_leave",
        lua.create_function(
            move |_, (user_id, session_id, stream): (String, String, Table)| {
                let (uid, sid) = (
                    uuid_arg(&user_id, "user id")?,
                    uuid_arg(&session_id, "session id")?,
                );
                s.services
                    .stream_user_leave(uid, sid, &stream_key(&stream)?)
                    .map_err(api_error)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "stream_user_kick",
        lua.create_function(move |_, (presence, stream): (Table, Table)| {
            let user_id: String = presence.get("user_id")?;
            let session_id: String = presence.get("session_id")?;
            let (uid, sid) = (
                uuid_arg(&user_id, "presence user_id")?,
                uuid_arg(&session_id, "presence session_id")?,
            );
            s.services
                .stream_user_leave(uid, sid, &stream_key(&stream)?)
                .map_err(api_error)
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "stream_user_list",
        lua.create_function(
            move |lua, (stream, hidden, not_hidden): (Table, Option<bool>, Option<bool>)| {
                let list = s.services.stream_user_list(
                    &stream_key(&stream)?,
                    hidden.unwrap_or(true),
                    not_hidden.unwrap_or(true),
                );
                let out = lua.create_table_with_capacity(list.len(), 0)?;
                for p in &list {
                    out.raw_push(presence_table(lua, &s, p)?)?;
                }
                Ok(out)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "stream_user_get",
        lua.create_function(
            move |lua, (user_id, session_id, stream): (String, String, Table)| {
                let (uid, sid) = (
                    uuid_arg(&user_id, "user id")?,
                    uuid_arg(&session_id, "session id")?,
                );
                match s.services.stream_user_get(uid, sid, &stream_key(&stream)?) {
                    // Nakama's meta table: hidden, persistence, username, status.
                    Some(p) => {
                        let t = lua.create_table_with_capacity(0, 4)?;
                        t.raw_set("hidden", p.meta.hidden)?;
                        t.raw_set("persistence", p.meta.persistence)?;
                        t.raw_set("username", &*p.username)?;
                        t.raw_set("status", &*p.meta.status)?;
                        Ok(LuaValue::Table(t))
                    }
                    None => Ok(LuaValue::Nil),
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "stream_count",
        lua.create_function(move |_, stream: Table| {
            Ok(s.services.stream_count(&stream_key(&stream)?))
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "stream_close",
        lua.create_function(move |_, stream: Table| {
            s.services.stream_close(&stream_key(&stream)?);
            Ok(())
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "stream_send",
        lua.create_function(
            move |_,
                  (stream, data, presences, reliable): (
                Table,
                mlua::LuaString,
                Option<Table>,
                Option<bool>,
            )| {
                let stream = stream_key(&stream)?;
                let mut sessions = Vec::new();
                if let Some(presences) = presences {
                    for p in presences.sequence_values::<Table>() {
                        let session_id: String = p?.get("session_id")?;
                        sessions.push(uuid_arg(&session_id, "presence session_id")?);
                    }
                }
                let data = data.to_str()?.to_owned();
                s.services
                    .stream_send(&stream, data, sessions, reliable.unwrap_or(true));
                Ok(())
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "stream_send_raw",
        lua.create_function(
            move |lua,
                  (stream, envelope, presences, _reliable): (
                Table,
                Table,
                Option<Table>,
                Option<bool>,
            )| {
                let stream = stream_key(&stream)?;
                let json = convert::from_lua(lua, &LuaValue::Table(envelope))?;
                let envelope: ludus_proto::realtime::Envelope =
                    ludus_proto::from_json(json.to_string().as_bytes()).map_err(|e| {
                        mlua::Error::runtime(format!("bad argument #2: not a valid envelope: {e}"))
                    })?;
                if envelope.message.is_none() {
                    return Err(mlua::Error::runtime(
                        "bad argument #2: not a valid envelope: it carries no message",
                    ));
                }
                let mut sessions = Vec::new();
                if let Some(presences) = presences {
                    for p in presences.sequence_values::<Table>() {
                        let session_id: String = p?.get("session_id")?;
                        sessions.push(uuid_arg(&session_id, "presence session_id")?);
                    }
                }
                s.services
                    .stream_send_raw(&stream, envelope, sessions)
                    .map_err(api_error)
            },
        )?,
    )?;
    Ok(())
}

fn presence_table(lua: &Lua, shared: &LuaShared, p: &Presence) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 7)?;
    t.raw_set("user_id", p.user_id.to_string())?;
    t.raw_set("session_id", p.session_id.to_string())?;
    t.raw_set("node", shared.settings.node.as_str())?;
    t.raw_set("hidden", p.meta.hidden)?;
    t.raw_set("persistence", p.meta.persistence)?;
    t.raw_set("username", &*p.username)?;
    t.raw_set("status", &*p.meta.status)?;
    Ok(t)
}

/// Nakama's stream table; fields left out are zero, nil ids or empty.
fn stream_key(t: &Table) -> mlua::Result<Stream> {
    let bad = |what: &str| mlua::Error::runtime(format!("expects a valid stream: {what}"));
    let (mut mode, mut subject, mut subcontext, mut label) = (0u8, Uuid::nil(), Uuid::nil(), None);
    for pair in t.pairs::<String, LuaValue>() {
        let (k, v) = pair?;
        match (k.as_str(), v) {
            ("mode", v @ (LuaValue::Integer(_) | LuaValue::Number(_))) => {
                let n = whole_number(&v).ok_or_else(|| bad("mode must be 0-255"))?;
                mode = u8::try_from(n).map_err(|_| bad("mode must be 0-255"))?
            }
            ("mode", _) => return Err(bad("mode must be a number")),
            ("subject" | "subcontext", LuaValue::String(s)) => {
                let id = Uuid::parse_str(&s.to_str()?)
                    .map_err(|_| bad(&format!("{k} must be a valid identifier")))?;
                if k == "subject" {
                    subject = id;
                } else {
                    subcontext = id;
                }
            }
            ("subject" | "subcontext", _) => return Err(bad(&format!("{k} must be a string"))),
            ("label", LuaValue::String(s)) => label = Some(s),
            ("label", _) => return Err(bad("label must be a string")),
            _ => {}
        }
    }
    let label = match &label {
        Some(s) => s.to_str()?.to_owned(),
        None => String::new(),
    };
    Ok(Stream::new(
        StreamMode::from_u8(mode),
        subject,
        subcontext,
        &label,
    ))
}

fn notification(
    user_id: Uuid,
    subject: String,
    content: String,
    code: i32,
    sender_id: Uuid,
    persistent: bool,
) -> mlua::Result<Notification> {
    crate::nk_pure::notification(
        user_id,
        subject,
        content,
        code.into(),
        sender_id,
        persistent,
    )
    .map_err(mlua::Error::runtime)
}

/// One entry of `nk.notifications_update`: `id`, and any of `content`
/// (a table), `subject` and `sender` (a user id) to replace.
fn notification_update(lua: &Lua, t: &Table) -> mlua::Result<NotificationUpdate> {
    let id = match t.raw_get::<LuaValue>("id")? {
        LuaValue::String(id) => Uuid::parse_str(&id.to_str()?)
            .map_err(|_| arg_error(1, "expects id to be a valid ID"))?,
        _ => return Err(arg_error(1, "expects id to be string")),
    };
    let content = match t.raw_get::<LuaValue>("content")? {
        LuaValue::Nil => None,
        LuaValue::Table(c) => Some(json_object(lua, c, "content")?),
        _ => return Err(arg_error(1, "expects content to be table")),
    };
    let text = |name: &str| -> mlua::Result<Option<String>> {
        match t.raw_get::<LuaValue>(name)? {
            LuaValue::Nil => Ok(None),
            LuaValue::String(v) if v.as_bytes().is_empty() => Err(arg_error(
                1,
                &format!("expects {name} to be a non-empty string"),
            )),
            LuaValue::String(v) => Ok(Some(v.to_str()?.to_owned())),
            _ => Err(arg_error(1, &format!("expects {name} to be string"))),
        }
    };
    let subject = text("subject")?;
    let sender_id = match text("sender")? {
        None => None,
        Some(sender) => Some(
            Uuid::parse_str(&sender)
                .map_err(|_| arg_error(1, "expects sender to be a valid user ID"))?,
        ),
    };
    Ok(NotificationUpdate {
        id,
        content,
        subject,
        sender_id,
    })
}

fn json_object(lua: &Lua, t: Table, what: &str) -> mlua::Result<String> {
    let json = convert::json_text(lua, &LuaValue::Table(t))?;
    if !json.starts_with('{') {
        return Err(mlua::Error::runtime(format!(
            "expects {what} to be a table with named keys (a JSON object)"
        )));
    }
    Ok(json)
}

fn uuid_arg(id: &str, what: &str) -> mlua::Result<Uuid> {
    Uuid::parse_str(id).map_err(|_| {
        mlua::Error::runtime(format!(
            "expects {what} to be a valid identifier, got {id:?}"
        ))
    })
}

/// Nil, an empty string or a uuid: nil and empty mean the system.
fn optional_uuid(id: Option<&str>, what: &str) -> mlua::Result<Uuid> {
    match id {
        None | Some("") => Ok(Uuid::nil()),
        Some(id) => uuid_arg(id, what),
    }
}

/// A chat acknowledgement as Nakama's Lua sees it: camelCase keys, times in
/// UNIX seconds.
fn ack_table(lua: &Lua, ack: ludus_proto::realtime::ChannelMessageAck) -> mlua::Result<Table> {
    let secs = |t: Option<ludus_proto::Timestamp>| t.map_or(0, |t| t.seconds);
    let t = lua.create_table_with_capacity(0, 7)?;
    t.raw_set("channelId", ack.channel_id)?;
    t.raw_set("messageId", ack.message_id)?;
    t.raw_set("code", ack.code.map_or(0, |c| c.value))?;
    t.raw_set("username", ack.username)?;
    t.raw_set("createTime", secs(ack.create_time))?;
    t.raw_set("updateTime", secs(ack.update_time))?;
    t.raw_set("persistent", ack.persistent.is_some_and(|p| p.value))?;
    Ok(t)
}

fn message_id_arg(id: &str) -> mlua::Result<()> {
    Uuid::parse_str(id)
        .map(|_| ())
        .map_err(|_| mlua::Error::runtime("bad argument #2: Invalid message identifier"))
}

/// A sender id argument of Nakama's update and remove: nil or empty is the
/// system.
fn sender_arg(id: Option<&str>, arg: usize) -> mlua::Result<Uuid> {
    match id {
        None | Some("") => Ok(Uuid::nil()),
        Some(id) => Uuid::parse_str(id).map_err(|_| {
            mlua::Error::runtime(format!(
                "bad argument #{arg}: expects sender id to either be not set, empty string or a valid UUID"
            ))
        }),
    }
}

/// `nk.status_follow|unfollow`'s session id and list of user ids, checked
/// as Nakama checks them.
fn status_args(session_id: &str, ids: &Table) -> mlua::Result<(Uuid, Vec<Uuid>)> {
    let session = Uuid::parse_str(session_id)
        .map_err(|_| mlua::Error::runtime("bad argument #1: expects a valid session id"))?;
    let bad = |m: &str| mlua::Error::runtime(format!("bad argument #2: {m}"));
    let mut users = Vec::new();
    for pair in ids.pairs::<LuaValue, LuaValue>() {
        let (k, v) = pair?;
        if !matches!(k, LuaValue::Integer(_) | LuaValue::Number(_)) {
            return Err(bad("invalid user ids list"));
        }
        let LuaValue::String(id) = v else {
            return Err(bad("each user id must be a string"));
        };
        let id = id.to_str()?;
        if id.is_empty() {
            return Err(bad("each user id must be a string"));
        }
        users.push(Uuid::parse_str(&id).map_err(|_| bad("each user id must be a valid id"))?);
    }
    Ok((session, users))
}
