//! `nk.friends_list|add|delete|block`, `nk.friends_of_friends_list`,
//! `nk.friend_metadata_update`, `nk.group_create|update|delete`,
//! `nk.group_user_join|leave`, `nk.group_users_add|kick|ban|promote|demote`,
//! `nk.group_users_list`, `nk.user_groups_list` and
//! `nk.groups_get_id|list|get_random`, with Nakama's argument order,
//! defaults and result tables. Each turns its arguments into domain values
//! and calls `ludus_core::social_service::SocialService` (through
//! `RuntimeServices::social`) as the server: a missing caller id acts with
//! every permission.

use std::sync::Arc;

use ludus_core::ApiError;
use ludus_core::group::{Group, GroupUpdate};
use ludus_core::social_service::NewGroup;
use ludus_core::storage::SYSTEM_USER_ID;
use mlua::{Lua, Table, Value as LuaValue};
use uuid::Uuid;

use super::convert;
use super::nk_common::{arg_error, run};
use super::nk_common::{json_table, user_table};
use super::shared::LuaShared;

/// Lua's largest group member page (Nakama's `group_users_list` bound).
const LUA_MAX_GROUP_USERS: usize = 10_000;
/// Lua's largest friends-of-friends page (Nakama's bound).
const LUA_MAX_FOF: usize = 1000;

fn uuid_arg(arg: usize, value: &str, what: &str) -> mlua::Result<Uuid> {
    Uuid::parse_str(value)
        .map_err(|_| arg_error(arg, &format!("expects {what} to be a valid identifier")))
}

/// An optional id argument: nil or empty is `None`.
fn opt_uuid(arg: usize, value: Option<String>, what: &str) -> mlua::Result<Option<Uuid>> {
    match value.as_deref() {
        None | Some("") => Ok(None),
        Some(v) => uuid_arg(arg, v, what).map(Some),
    }
}

fn metadata_json(lua: &Lua, arg: usize, value: Option<Table>) -> mlua::Result<Option<String>> {
    value
        .map(|t| {
            let v = convert::from_lua(lua, &LuaValue::Table(t))?;
            // An empty Lua table converts to an array; metadata is an object.
            let v = match v {
                serde_json::Value::Array(a) if a.is_empty() => {
                    serde_json::Value::Object(Default::default())
                }
                v => v,
            };
            if !v.is_object() {
                return Err(arg_error(arg, "expects metadata to be a table"));
            }
            Ok(v.to_string())
        })
        .transpose()
}

fn strings(value: Option<Vec<String>>) -> Vec<String> {
    value.unwrap_or_default()
}

fn uuids(arg: usize, value: Vec<String>) -> mlua::Result<Vec<Uuid>> {
    value
        .iter()
        .map(|id| uuid_arg(arg, id, "user id"))
        .collect()
}

/// `-1` (Nakama's "no filter") or nil is `None`.
fn state_filter(state: Option<i64>) -> Option<i32> {
    state.filter(|s| *s != -1).map(|s| s as i32)
}

fn limit_arg(limit: Option<i64>, default: i64) -> Option<i32> {
    Some(
        limit
            .unwrap_or(default)
            .clamp(i32::MIN.into(), i32::MAX.into()) as i32,
    )
}

fn cursor_value(lua: &Lua, cursor: Option<String>) -> mlua::Result<LuaValue> {
    match cursor {
        Some(c) => Ok(LuaValue::String(lua.create_string(&c)?)),
        None => Ok(LuaValue::Nil),
    }
}

fn group_table(lua: &Lua, g: &Group) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 12)?;
    t.raw_set("id", g.id.to_string())?;
    t.raw_set("creator_id", g.creator_id.to_string())?;
    t.raw_set("name", g.name.as_str())?;
    t.raw_set("description", g.description.as_str())?;
    t.raw_set("avatar_url", g.avatar_url.as_str())?;
    t.raw_set("lang_tag", g.lang_tag.as_str())?;
    t.raw_set("metadata", json_table(lua, &g.metadata)?)?;
    t.raw_set("open", g.open)?;
    t.raw_set("edge_count", g.edge_count)?;
    t.raw_set("max_count", g.max_count)?;
    t.raw_set("create_time", g.create_time)?;
    t.raw_set("update_time", g.update_time)?;
    Ok(t)
}

fn groups_table(lua: &Lua, groups: &[Group]) -> mlua::Result<Table> {
    let out = lua.create_table_with_capacity(groups.len(), 0)?;
    for g in groups {
        out.raw_push(group_table(lua, g)?)?;
    }
    Ok(out)
}

type FriendAddArgs = (
    String,
    String,
    Option<Vec<String>>,
    Option<Vec<String>>,
    Option<Table>,
);

type GroupsListArgs = (
    Option<String>,
    Option<String>,
    Option<bool>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

type FriendEditArgs = (String, String, Option<Vec<String>>, Option<Vec<String>>);

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    install_friends(lua, shared, nk)?;
    install_groups(lua, shared, nk)?;
    install_group_members(lua, shared, nk)
}

fn install_friends(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "friends_list",
        lua.create_function(
            move |lua,
                  (user_id, limit, state, cursor): (
                String,
                Option<i64>,
                Option<i64>,
                Option<String>,
            )| {
                let user = uuid_arg(1, &user_id, "user ID")?;
                let page = run(&s, "error while trying to list friends", async {
                    s.services
                        .social()?
                        .list_friends(
                            user,
                            limit_arg(limit, 100),
                            state_filter(state),
                            cursor.as_deref().unwrap_or_default(),
                        )
                        .await
                })?;
                let friends = lua.create_table_with_capacity(page.friends.len(), 0)?;
                for f in &page.friends {
                    let t = lua.create_table_with_capacity(0, 4)?;
                    t.raw_set("user", user_table(lua, &f.user)?)?;
                    t.raw_set("state", f.state as i64)?;
                    t.raw_set("update_time", f.update_time)?;
                    t.raw_set("metadata", json_table(lua, &f.metadata)?)?;
                    friends.raw_push(t)?;
                }
                Ok((friends, cursor_value(lua, page.cursor)?))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "users_get_friend_status",
        lua.create_function(move |lua, (user_id, others): (String, LuaValue)| {
            let user = Uuid::parse_str(&user_id).map_err(|_| arg_error(1, "invalid user id"))?;
            let LuaValue::Table(others) = others else {
                return Err(arg_error(2, "invalid user ids list"));
            };
            let mut ids = Vec::new();
            for id in others.sequence_values::<LuaValue>() {
                let id = match id? {
                    LuaValue::String(s) if !s.as_bytes().is_empty() => s.to_str()?.to_owned(),
                    _ => return Err(arg_error(2, "each user id must be a string")),
                };
                ids.push(Uuid::parse_str(&id).map_err(|_| arg_error(2, "invalid user id"))?);
            }
            let friends = run(&s, "failed to get users friend status", async {
                s.services.social()?.friend_status(user, &ids).await
            })?;
            let out = lua.create_table_with_capacity(friends.len(), 0)?;
            for f in &friends {
                let t = lua.create_table_with_capacity(0, 4)?;
                t.raw_set("user", user_table(lua, &f.user)?)?;
                t.raw_set("state", f.state as i64)?;
                t.raw_set("update_time", f.update_time)?;
                t.raw_set("metadata", json_table(lua, &f.metadata)?)?;
                out.raw_push(t)?;
            }
            Ok(out)
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "friends_of_friends_list",
        lua.create_function(
            move |lua, (user_id, limit, cursor): (String, Option<i64>, Option<String>)| {
                let user = uuid_arg(1, &user_id, "user ID")?;
                let page = run(&s, "error while trying to list friends of friends", async {
                    s.services
                        .social()?
                        .friends_of_friends(
                            user,
                            limit_arg(limit, 100),
                            LUA_MAX_FOF,
                            cursor.as_deref().unwrap_or_default(),
                        )
                        .await
                })?;
                let out = lua.create_table_with_capacity(page.friends_of_friends.len(), 0)?;
                for f in &page.friends_of_friends {
                    let t = lua.create_table_with_capacity(0, 2)?;
                    t.raw_set("referrer", f.referrer.to_string())?;
                    t.raw_set("user", user_table(lua, &f.user)?)?;
                    out.raw_push(t)?;
                }
                Ok((out, cursor_value(lua, page.cursor)?))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "friends_add",
        lua.create_function(
            move |lua, (user_id, username, ids, usernames, metadata): FriendAddArgs| {
                let user = uuid_arg(1, &user_id, "user ID")?;
                if username.is_empty() {
                    return Err(arg_error(2, "expects username string"));
                }
                let metadata = metadata_json(lua, 5, metadata)?;
                let (ids, usernames) = (strings(ids), strings(usernames));
                run(&s, "error adding friends", async {
                    s.services
                        .social()?
                        .add_friends(user, &username, &ids, &usernames, metadata.as_deref())
                        .await
                })
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "friends_delete",
        lua.create_function(
            move |_, (user_id, username, ids, usernames): FriendEditArgs| {
                let user = uuid_arg(1, &user_id, "user ID")?;
                let (ids, usernames) = (strings(ids), strings(usernames));
                run(&s, "error deleting friends", async {
                    s.services
                        .social()?
                        .delete_friends(user, &username, &ids, &usernames)
                        .await
                })
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "friends_block",
        lua.create_function(
            move |_, (user_id, _username, ids, usernames): FriendEditArgs| {
                let user = uuid_arg(1, &user_id, "user ID")?;
                let (ids, usernames) = (strings(ids), strings(usernames));
                run(&s, "error blocking friends", async {
                    s.services
                        .social()?
                        .block_friends(user, &ids, &usernames)
                        .await
                })
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "friend_metadata_update",
        lua.create_function(
            move |lua, (user_id, friend_id, metadata): (String, String, Table)| {
                let user = uuid_arg(1, &user_id, "user ID")?;
                let friend = uuid_arg(2, &friend_id, "user ID")?;
                let metadata = metadata_json(lua, 3, Some(metadata))?.unwrap_or_default();
                run(&s, "error updating friends metadata", async {
                    s.services
                        .social()?
                        .friend_metadata_update(user, friend, &metadata)
                        .await
                })
            },
        )?,
    )?;
    Ok(())
}

type GroupCreateArgs = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<bool>,
    Option<Table>,
    Option<i64>,
);

type GroupUpdateArgs = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<bool>,
    Option<Table>,
    Option<i64>,
);

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

fn install_groups(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "group_create",
        lua.create_function(
            move |lua,
                  (
                user_id,
                name,
                creator_id,
                lang_tag,
                description,
                avatar_url,
                open,
                metadata,
                max_count,
            ): GroupCreateArgs| {
                let user = uuid_arg(1, &user_id, "user ID")?;
                if name.is_empty() {
                    return Err(arg_error(2, "expects group name not be empty"));
                }
                // As Nakama: `user_id` becomes the superadmin, `creator_id`
                // is only recorded; nil records the system user, and any
                // other value (the empty string too) must be an id.
                let creator = match creator_id {
                    None => SYSTEM_USER_ID,
                    Some(id) => uuid_arg(3, &id, "owner ID")?,
                };
                let metadata = metadata_json(lua, 8, metadata)?;
                let g = NewGroup {
                    name,
                    description: description.unwrap_or_default(),
                    avatar_url: avatar_url.unwrap_or_default(),
                    lang_tag: lang_tag.unwrap_or_default(),
                    metadata: metadata.unwrap_or_default(),
                    open: open.unwrap_or(false),
                    max_count: Some(max_count.unwrap_or(100).clamp(-1, i32::MAX.into()) as i32),
                };
                let group = run(&s, "error while trying to create group", async {
                    s.services.social()?.create_group(user, creator, g).await
                })?;
                group_table(lua, &group)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "group_update",
        lua.create_function(
            move |lua,
                  (
                group_id,
                user_id,
                name,
                creator_id,
                lang_tag,
                description,
                avatar_url,
                open,
                metadata,
                max_count,
            ): GroupUpdateArgs| {
                let id = uuid_arg(1, &group_id, "group ID")?;
                let caller = opt_uuid(2, user_id, "user ID")?;
                // The nil id changes nothing, as in Nakama.
                let creator_id = opt_uuid(4, creator_id, "creator ID")?.filter(|c| !c.is_nil());
                let update = GroupUpdate {
                    name: non_empty(name),
                    description: non_empty(description),
                    avatar_url: non_empty(avatar_url),
                    lang_tag: non_empty(lang_tag),
                    metadata: metadata_json(lua, 9, metadata)?,
                    open,
                    // 0 keeps the stored value, as Nakama's.
                    max_count: max_count
                        .filter(|m| *m != 0)
                        .map(|m| m.clamp(-1, i32::MAX.into()) as i32),
                    creator_id,
                };
                run(&s, "error while trying to update group", async {
                    s.services.social()?.update_group(caller, id, update).await
                })
                .map(drop)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "group_delete",
        lua.create_function(move |_, group_id: String| {
            let id = uuid_arg(1, &group_id, "group ID")?;
            run(&s, "error while trying to delete group", async {
                s.services.social()?.delete_group(None, id).await
            })
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "groups_get_id",
        lua.create_function(move |lua, ids: Vec<String>| {
            let ids = ids
                .iter()
                .map(|id| uuid_arg(1, id, "group ID"))
                .collect::<mlua::Result<Vec<_>>>()?;
            let groups = run(&s, "failed to get groups", async {
                s.services.social()?.get_groups(&ids).await
            })?;
            groups_table(lua, &groups)
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "groups_list",
        lua.create_function(
            move |lua, (name, lang_tag, open, edge_count, limit, cursor): GroupsListArgs| {
                let members = edge_count
                    .filter(|e| *e >= 0)
                    .map(|e| e.min(i32::MAX.into()) as i32);
                let page = run(&s, "failed to list groups", async {
                    s.services
                        .social()?
                        .list_groups(
                            name.as_deref().unwrap_or_default(),
                            lang_tag.as_deref().unwrap_or_default(),
                            members,
                            open,
                            limit_arg(limit, 100),
                            cursor.as_deref().unwrap_or_default(),
                        )
                        .await
                })?;
                Ok((
                    groups_table(lua, &page.groups)?,
                    cursor_value(lua, page.cursor)?,
                ))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "groups_get_random",
        lua.create_function(move |lua, count: Option<i64>| {
            let count = count.unwrap_or(0);
            if count < 0 {
                return Err(arg_error(1, "count must be 0-100"));
            }
            let groups = run(&s, "failed to get random groups", async {
                s.services.social()?.random_groups(count as usize).await
            })?;
            groups_table(lua, &groups)
        })?,
    )?;
    Ok(())
}

fn install_group_members(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "group_user_join",
        lua.create_function(
            move |_, (group_id, user_id, username): (String, String, String)| {
                let id = uuid_arg(1, &group_id, "group ID")?;
                let user = uuid_arg(2, &user_id, "user ID")?;
                run(&s, "error while trying to join group", async {
                    s.services.social()?.join_group(user, &username, id).await
                })
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "group_user_leave",
        lua.create_function(
            move |_, (group_id, user_id, _username): (String, String, Option<String>)| {
                let id = uuid_arg(1, &group_id, "group ID")?;
                let user = uuid_arg(2, &user_id, "user ID")?;
                run(&s, "error while trying to leave group", async {
                    s.services.social()?.leave_group(user, id).await
                })
            },
        )?,
    )?;
    type Manage = fn(
        &ludus_core::social_service::SocialService,
        Option<Uuid>,
        Uuid,
        Vec<Uuid>,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<(), ApiError>> + Send + '_>,
    >;
    let actions: [(&str, &str, Manage); 5] = [
        (
            "group_users_add",
            "error while trying to add users into a group",
            |svc, c, g, u| Box::pin(async move { svc.add_group_users(c, g, &u).await }),
        ),
        (
            "group_users_kick",
            "error while trying to kick users from a group",
            |svc, c, g, u| Box::pin(async move { svc.kick_group_users(c, g, &u).await }),
        ),
        (
            "group_users_ban",
            "error while trying to ban users from a group",
            |svc, c, g, u| Box::pin(async move { svc.ban_group_users(c, g, &u).await }),
        ),
        (
            "group_users_promote",
            "error while trying to promote users in a group",
            |svc, c, g, u| Box::pin(async move { svc.promote_group_users(c, g, &u).await }),
        ),
        (
            "group_users_demote",
            "error while trying to demote users in a group",
            |svc, c, g, u| Box::pin(async move { svc.demote_group_users(c, g, &u).await }),
        ),
    ];
    for (name, what, action) in actions {
        let s = shared.clone();
        nk.set(
            name,
            lua.create_function(
                move |_, (group_id, user_ids, caller_id): (String, Vec<String>, Option<String>)| {
                    let id = uuid_arg(1, &group_id, "group ID")?;
                    if user_ids.is_empty() {
                        return Err(arg_error(2, "expects at least one user ID"));
                    }
                    let users = uuids(2, user_ids)?;
                    let caller = opt_uuid(3, caller_id, "caller ID")?;
                    run(&s, what, async {
                        action(s.services.social()?, caller, id, users).await
                    })
                },
            )?,
        )?;
    }
    let s = shared.clone();
    nk.set(
        "group_users_list",
        lua.create_function(
            move |lua,
                  (group_id, limit, state, cursor): (
                String,
                Option<i64>,
                Option<i64>,
                Option<String>,
            )| {
                let id = uuid_arg(1, &group_id, "group ID")?;
                let page = run(&s, "error while trying to list users in a group", async {
                    s.services
                        .social()?
                        .list_group_users(
                            id,
                            limit_arg(limit, 100),
                            LUA_MAX_GROUP_USERS,
                            state_filter(state),
                            cursor.as_deref().unwrap_or_default(),
                        )
                        .await
                })?;
                let users = lua.create_table_with_capacity(page.users.len(), 0)?;
                for u in &page.users {
                    let t = lua.create_table_with_capacity(0, 2)?;
                    t.raw_set("user", user_table(lua, &u.user)?)?;
                    t.raw_set("state", u.role as i64)?;
                    users.raw_push(t)?;
                }
                Ok((users, cursor_value(lua, page.cursor)?))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "user_groups_list",
        lua.create_function(
            move |lua,
                  (user_id, limit, state, cursor): (
                String,
                Option<i64>,
                Option<i64>,
                Option<String>,
            )| {
                let user = uuid_arg(1, &user_id, "user ID")?;
                let page = run(&s, "error while trying to list groups for a user", async {
                    s.services
                        .social()?
                        .list_user_groups(
                            user,
                            limit_arg(limit, 100),
                            state_filter(state),
                            cursor.as_deref().unwrap_or_default(),
                        )
                        .await
                })?;
                let groups = lua.create_table_with_capacity(page.groups.len(), 0)?;
                for g in &page.groups {
                    let t = lua.create_table_with_capacity(0, 2)?;
                    t.raw_set("group", group_table(lua, &g.group)?)?;
                    t.raw_set("state", g.role as i64)?;
                    groups.raw_push(t)?;
                }
                Ok((groups, cursor_value(lua, page.cursor)?))
            },
        )?,
    )?;
    Ok(())
}
