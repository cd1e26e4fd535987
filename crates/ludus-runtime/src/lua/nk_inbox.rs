//! What users have received: `nk.notifications_list`,
//! `nk.notifications_delete`, `nk.notifications_get_id`,
//! `nk.notifications_delete_id` and `nk.channel_messages_list`, read and
//! changed as the server, with Nakama's arguments, messages and result
//! tables (camelCase keys, content as JSON text, times in UNIX seconds).

use std::sync::Arc;

use ludus_core::chat::{MODE_DIRECT, MODE_GROUP, MODE_ROOM};
use mlua::{Lua, Table, Value as LuaValue};
use uuid::Uuid;

use super::nk_common::{arg_error, json_value, served, server_function, whole_arg};
use super::shared::LuaShared;

/// Most notifications `nk.notifications_list` answers at once (Nakama's).
const MAX_NOTIFICATIONS: i64 = 1000;
/// Most messages `nk.channel_messages_list` answers at once (Nakama's).
const MAX_MESSAGES: i64 = 100;

fn limit_arg(
    value: LuaValue,
    arg: usize,
    default: i64,
    max: i64,
    message: &str,
) -> mlua::Result<u32> {
    let limit = match value {
        LuaValue::Nil => default,
        v => whole_arg(&v, arg, message)?,
    };
    if !(1..=max).contains(&limit) {
        return Err(arg_error(arg, message));
    }
    Ok(limit as u32)
}

fn optional(lua: &Lua, value: Option<String>) -> mlua::Result<LuaValue> {
    match value {
        Some(v) if !v.is_empty() => Ok(LuaValue::String(lua.create_string(v)?)),
        _ => Ok(LuaValue::Nil),
    }
}

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "notifications_list",
        server_function(
            lua,
            shared,
            move |lua, (user_id, limit, cursor): (String, LuaValue, Option<String>)| {
                let s = s.clone();
                async move {
                    let user = Uuid::parse_str(&user_id)
                        .map_err(|_| arg_error(1, "expects user_id to be a valid uuid"))?;
                    let limit = limit_arg(
                        limit,
                        2,
                        100,
                        MAX_NOTIFICATIONS,
                        "expects limit to be value between 1 and 1000",
                    )?;
                    let page = served(
                        "failed to list notifications",
                        s.services.notifications_list(user, limit, cursor),
                    )
                    .await?;
                    let out = lua.create_table_with_capacity(page.notifications.len(), 0)?;
                    for n in &page.notifications {
                        let t = lua.create_table_with_capacity(0, 7)?;
                        t.raw_set("id", n.id.to_string())?;
                        t.raw_set("subject", n.subject.as_str())?;
                        t.raw_set("content", n.content.as_str())?;
                        t.raw_set("code", n.code)?;
                        t.raw_set("senderId", n.sender_id.to_string())?;
                        t.raw_set("persistent", n.persistent)?;
                        t.raw_set("createTime", n.create_time_us.div_euclid(1_000_000))?;
                        out.raw_push(t)?;
                    }
                    // Nakama answers no cursor with an empty page.
                    let cursor = page.cursor.filter(|_| !page.notifications.is_empty());
                    Ok((out, optional(&lua, cursor)?))
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "notifications_delete",
        server_function(lua, shared, move |_, list: Table| {
            let s = s.clone();
            async move {
                // By user, as Nakama deletes them; a missing user id is the
                // nil user, whose notifications do not exist.
                let mut by_user: Vec<(Uuid, Vec<Uuid>)> = Vec::new();
                for pair in list.pairs::<LuaValue, LuaValue>() {
                    let LuaValue::Table(t) = pair?.1 else {
                        return Err(arg_error(1, "expects a valid set of notifications"));
                    };
                    let user = match t.raw_get::<LuaValue>("user_id")? {
                        LuaValue::Nil => Uuid::nil(),
                        LuaValue::String(u) => Uuid::parse_str(&u.to_str()?)
                            .map_err(|_| arg_error(1, "expects user_id to be a valid UUID"))?,
                        _ => return Err(arg_error(1, "expects user_id to be string")),
                    };
                    let id = match t.raw_get::<LuaValue>("notification_id")? {
                        LuaValue::Nil => continue,
                        LuaValue::String(u) => Uuid::parse_str(&u.to_str()?).map_err(|_| {
                            arg_error(1, "expects notification_id to be a valid UUID")
                        })?,
                        _ => return Err(arg_error(1, "expects notification_id to be string")),
                    };
                    match by_user.iter_mut().find(|(u, _)| *u == user) {
                        Some((_, ids)) => ids.push(id),
                        None => by_user.push((user, vec![id])),
                    }
                }
                for (user, ids) in by_user {
                    served(
                        "failed to delete notifications",
                        s.services.notifications_delete(user, ids),
                    )
                    .await?;
                }
                Ok(())
            }
        })?,
    )?;
    install_by_id(lua, shared, nk)?;
    let s = shared.clone();
    nk.set(
        "channel_messages_list",
        server_function(
            lua,
            shared,
            move |lua,
                  (channel_id, limit, forward, cursor): (
                String,
                LuaValue,
                Option<bool>,
                Option<String>,
            )| {
                let s = s.clone();
                async move {
                    let limit = limit_arg(limit, 2, 100, MAX_MESSAGES, "limit must be 1-100")?;
                    let page = served(
                        "failed to list channel messages",
                        s.services.channel_messages_list(
                            channel_id,
                            limit,
                            forward.unwrap_or(true),
                            cursor,
                        ),
                    )
                    .await?;
                    let out = lua.create_table_with_capacity(page.messages.len(), 0)?;
                    for m in &page.messages {
                        let t = lua.create_table_with_capacity(0, 13)?;
                        t.raw_set("channelId", m.channel.id())?;
                        t.raw_set("messageId", m.id.to_string())?;
                        t.raw_set("code", m.code)?;
                        t.raw_set("senderId", m.sender_id.to_string())?;
                        t.raw_set("username", m.username.as_str())?;
                        t.raw_set("content", m.content.as_str())?;
                        t.raw_set("createTime", m.create_time_us.div_euclid(1_000_000))?;
                        t.raw_set("updateTime", m.update_time_us.div_euclid(1_000_000))?;
                        // Only kept messages have a history.
                        t.raw_set("persistent", true)?;
                        let key = &m.channel;
                        let (room, group, one, two) = match key.mode {
                            MODE_ROOM => (
                                key.label.clone(),
                                String::new(),
                                String::new(),
                                String::new(),
                            ),
                            MODE_GROUP => (
                                String::new(),
                                key.subject.to_string(),
                                String::new(),
                                String::new(),
                            ),
                            MODE_DIRECT => (
                                String::new(),
                                String::new(),
                                key.subject.to_string(),
                                key.subcontext.to_string(),
                            ),
                            _ => Default::default(),
                        };
                        t.raw_set("roomName", room)?;
                        t.raw_set("groupId", group)?;
                        t.raw_set("userIdOne", one)?;
                        t.raw_set("userIdTwo", two)?;
                        out.raw_push(t)?;
                    }
                    Ok((
                        out,
                        optional(&lua, page.next_cursor)?,
                        optional(&lua, page.prev_cursor)?,
                    ))
                }
            },
        )?,
    )?;
    Ok(())
}

/// The ids of `nk.notifications_get_id` and `nk.notifications_delete_id`
/// (argument 1) and their optional user (argument 2), with Nakama's messages.
fn ids_and_user(ids: LuaValue, user: Option<String>) -> mlua::Result<(Vec<Uuid>, Option<Uuid>)> {
    let LuaValue::Table(ids) = ids else {
        return Err(arg_error(1, "invalid user ids list"));
    };
    let mut out = Vec::new();
    for id in ids.sequence_values::<LuaValue>() {
        let id = match id? {
            LuaValue::String(s) if !s.as_bytes().is_empty() => s.to_str()?.to_owned(),
            _ => return Err(arg_error(1, "each notification id must be a string")),
        };
        out.push(
            Uuid::parse_str(&id)
                .map_err(|_| arg_error(1, "each notification id must be a valid id"))?,
        );
    }
    let user = match user.as_deref() {
        None | Some("") => None,
        Some(u) => Some(
            Uuid::parse_str(u).map_err(|_| arg_error(2, "expects user_id to be a valid uuid"))?,
        ),
    };
    Ok((out, user))
}

fn install_by_id(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "notifications_get_id",
        server_function(
            lua,
            shared,
            move |lua, (ids, user): (LuaValue, Option<String>)| {
                let s = s.clone();
                async move {
                    let (ids, user) = ids_and_user(ids, user)?;
                    let found = served(
                        "failed to get notifications",
                        s.services.notifications_get_id(user, ids),
                    )
                    .await?;
                    let out = lua.create_table_with_capacity(found.len(), 0)?;
                    for n in &found {
                        let t = lua.create_table_with_capacity(0, 8)?;
                        t.raw_set("id", n.id.to_string())?;
                        t.raw_set("code", n.code)?;
                        t.raw_set("content", json_value(&lua, &n.content)?)?;
                        t.raw_set("sender_id", n.sender_id.to_string())?;
                        t.raw_set("subject", n.subject.as_str())?;
                        t.raw_set("user_id", n.user_id.to_string())?;
                        t.raw_set("create_time", n.create_time_us.div_euclid(1_000_000))?;
                        // Only persistent notifications are stored.
                        t.raw_set("persistent", true)?;
                        out.raw_push(t)?;
                    }
                    Ok(out)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "notifications_delete_id",
        server_function(
            lua,
            shared,
            move |_, (ids, user): (LuaValue, Option<String>)| {
                let s = s.clone();
                async move {
                    let (ids, user) = ids_and_user(ids, user)?;
                    served(
                        "failed to delete notifications",
                        s.services.notifications_delete_id(user, ids),
                    )
                    .await
                }
            },
        )?,
    )
}
