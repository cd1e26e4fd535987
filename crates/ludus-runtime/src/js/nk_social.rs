//! Friends and groups of Nakama's JS `nk` (`friends*`, `friendMetadataUpdate`,
//! `group*`, `groups*`, `userGroupsList`), over the server's one
//! `SocialService` as Lua's are, with Nakama's JS argument order and result
//! keys (`friends`, `friendsOfFriends`, `groupUsers`, `userGroups`,
//! `groups`, each with a `cursor`).

use std::sync::Arc;

use ludus_core::ApiError;
use ludus_core::group::{Group, GroupUpdate};
use ludus_core::social_service::{NewGroup, SocialService};
use ludus_core::storage::SYSTEM_USER_ID;
use rquickjs::{Ctx, Object};
use serde_json::{Value as Json, json};
use uuid::Uuid;

use super::nk_common::{
    Args, NkError, answer, arg, define, json_text, nothing, parsed, served, user_json, uuids_of,
};
use super::shared::JsShared;

/// Most members `groupUsersList` walks, as Lua's.
const MAX_GROUP_USERS: usize = 10_000;
/// Most friends of friends `friendsOfFriendsList` walks, as Lua's.
const MAX_FOF: usize = 1000;

fn group_json(g: &Group) -> Json {
    json!({
        "id": g.id.to_string(),
        "creatorId": g.creator_id.to_string(),
        "name": g.name,
        "description": g.description,
        "avatarUrl": g.avatar_url,
        "langTag": g.lang_tag,
        "open": g.open,
        "edgeCount": g.edge_count,
        "maxCount": g.max_count,
        "createTime": g.create_time,
        "updateTime": g.update_time,
        "metadata": parsed(&g.metadata),
    })
}

fn optional_uuid(a: &Args, i: usize, what: &str) -> Result<Option<Uuid>, NkError> {
    match a.string(i, what)?.as_str() {
        "" => Ok(None),
        s => Uuid::parse_str(s)
            .map(Some)
            .map_err(|_| arg(format!("expects {what} to be a valid identifier"))),
    }
}

/// `limit` (default 100), as an `i32` the service checks itself.
fn limit(a: &Args, i: usize) -> Result<Option<i32>, NkError> {
    let l = a.int_or(i, 100, "limit")?;
    Ok(Some(l.clamp(i32::MIN.into(), i32::MAX.into()) as i32))
}

/// A state filter: absent or -1 is every state.
fn state(a: &Args, i: usize) -> Result<Option<i32>, NkError> {
    let s = a.int_or(i, -1, "state")?;
    Ok((s != -1).then_some(s.clamp(i32::MIN.into(), i32::MAX.into()) as i32))
}

fn text(a: &Args, i: usize, what: &str) -> Result<Option<String>, NkError> {
    Ok(Some(a.string(i, what)?).filter(|s| !s.is_empty()))
}

/// Runs `f` against the social service on this context's thread.
fn social<T, F>(s: &JsShared, what: &str, f: F) -> Result<T, NkError>
where
    T: Send + 'static,
    F: for<'a> FnOnce(
            &'a SocialService,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<T, ApiError>> + Send + 'a>,
        > + Send
        + 'static,
{
    let services = s.services.clone();
    served(s, what, async move { f(services.social()?).await })
}

pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    friends(ctx, nk, shared)?;
    groups(ctx, nk, shared)?;
    members(ctx, nk, shared)
}

fn friends<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "friendsList", |s, a| {
        let user = a.uuid(0, "user id")?;
        let (limit, state) = (limit(a, 1)?, state(a, 2)?);
        let cursor = a.string(3, "cursor")?;
        let page = social(s, "error while trying to list friends", move |svc| {
            Box::pin(async move { svc.list_friends(user, limit, state, &cursor).await })
        })?;
        let friends: Vec<Json> = page
            .friends
            .iter()
            .map(|f| {
                json!({
                    "user": user_json(&f.user),
                    "state": f.state as i64,
                    "updateTime": f.update_time,
                    "metadata": parsed(&f.metadata),
                })
            })
            .collect();
        let mut out = json!({ "friends": friends });
        if let Some(c) = page.cursor.filter(|c| !c.is_empty()) {
            out["cursor"] = c.into();
        }
        answer(out)
    })?;
    define(ctx, nk, shared, "friendsOfFriendsList", |s, a| {
        let user = a.uuid(0, "user id")?;
        let limit = limit(a, 1)?;
        let cursor = a.string(2, "cursor")?;
        let page = social(
            s,
            "error while trying to list friends of friends",
            move |svc| {
                Box::pin(async move { svc.friends_of_friends(user, limit, MAX_FOF, &cursor).await })
            },
        )?;
        let list: Vec<Json> = page
            .friends_of_friends
            .iter()
            .map(|f| json!({ "referrer": f.referrer.to_string(), "user": user_json(&f.user) }))
            .collect();
        let mut out = json!({ "friendsOfFriends": list });
        if let Some(c) = page.cursor.filter(|c| !c.is_empty()) {
            out["cursor"] = c.into();
        }
        answer(out)
    })?;
    define(ctx, nk, shared, "friendsAdd", |s, a| {
        let user = a.uuid(0, "user id")?;
        let username = a.required(1, "username")?;
        let ids = a.strings(2, "ids")?;
        let names = a.strings(3, "usernames")?;
        let metadata = json_text(a.get(4), "metadata")?;
        social(s, "error adding friends", move |svc| {
            Box::pin(async move {
                svc.add_friends(user, &username, &ids, &names, metadata.as_deref())
                    .await
            })
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "friendsDelete", |s, a| {
        let user = a.uuid(0, "user id")?;
        let username = a.string(1, "username")?;
        let ids = a.strings(2, "ids")?;
        let names = a.strings(3, "usernames")?;
        social(s, "error deleting friends", move |svc| {
            Box::pin(async move { svc.delete_friends(user, &username, &ids, &names).await })
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "friendsBlock", |s, a| {
        let user = a.uuid(0, "user id")?;
        let ids = a.strings(2, "ids")?;
        let names = a.strings(3, "usernames")?;
        social(s, "error blocking friends", move |svc| {
            Box::pin(async move { svc.block_friends(user, &ids, &names).await })
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "friendMetadataUpdate", |s, a| {
        let user = a.uuid(0, "user id")?;
        let friend = a.uuid(1, "friend user id")?;
        let Some(metadata) = json_text(a.get(2), "metadata")? else {
            return Err(arg("expects metadata to be an object"));
        };
        social(s, "error updating friends metadata", move |svc| {
            Box::pin(async move { svc.friend_metadata_update(user, friend, &metadata).await })
        })?;
        nothing()
    })?;
    Ok(())
}

fn groups<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "groupCreate", |s, a| {
        let user = a.uuid(0, "user id")?;
        let name = a.required(1, "group name")?;
        // As Nakama: `userId` becomes the superadmin, `creatorId` is only
        // recorded (the system user when absent).
        let creator = optional_uuid(a, 2, "creator id")?.unwrap_or(SYSTEM_USER_ID);
        let g = NewGroup {
            name,
            lang_tag: a.string(3, "lang tag")?,
            description: a.string(4, "description")?,
            avatar_url: a.string(5, "avatar url")?,
            open: a.bool_or(6, false, "open")?,
            metadata: json_text(a.get(7), "metadata")?.unwrap_or_default(),
            max_count: Some(a.int_or(8, 100, "limit")?.clamp(-1, i32::MAX.into()) as i32),
        };
        let group = social(s, "error while trying to create group", move |svc| {
            Box::pin(async move { svc.create_group(user, creator, g).await })
        })?;
        answer(group_json(&group))
    })?;
    define(ctx, nk, shared, "groupUpdate", |s, a| {
        let id = a.uuid(0, "group id")?;
        let caller = optional_uuid(a, 1, "user id")?;
        let update = GroupUpdate {
            name: text(a, 2, "name")?,
            // The nil id changes nothing, as in Nakama.
            creator_id: optional_uuid(a, 3, "creator id")?.filter(|c| !c.is_nil()),
            lang_tag: text(a, 4, "lang tag")?,
            description: text(a, 5, "description")?,
            avatar_url: text(a, 6, "avatar url")?,
            open: match a.get(7) {
                Json::Null => None,
                _ => Some(a.bool_or(7, false, "open")?),
            },
            metadata: json_text(a.get(8), "metadata")?,
            // 0 keeps the stored value, as Nakama's.
            max_count: Some(a.int_or(9, 0, "limit")?)
                .filter(|m| *m != 0)
                .map(|m| m.clamp(-1, i32::MAX.into()) as i32),
        };
        social(s, "error while trying to update group", move |svc| {
            Box::pin(async move { svc.update_group(caller, id, update).await.map(drop) })
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "groupDelete", |s, a| {
        let id = a.uuid(0, "group id")?;
        social(s, "error while trying to delete group", move |svc| {
            Box::pin(async move { svc.delete_group(None, id).await })
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "groupsGetId", |s, a| {
        let ids = uuids_of(a.get(0), "group id")?;
        let groups = social(s, "failed to get groups", move |svc| {
            Box::pin(async move { svc.get_groups(&ids).await })
        })?;
        answer(groups.iter().map(group_json).collect())
    })?;
    define(ctx, nk, shared, "groupsList", |s, a| {
        let name = a.string(0, "name")?;
        let lang = a.string(1, "lang tag")?;
        let open = match a.get(2) {
            Json::Null => None,
            _ => Some(a.bool_or(2, false, "open")?),
        };
        let members = match a.get(3) {
            Json::Null => None,
            _ => Some(a.int_or(3, 0, "members")?),
        };
        let members = members
            .filter(|e| *e >= 0)
            .map(|e| e.min(i32::MAX.into()) as i32);
        let limit = limit(a, 4)?;
        let cursor = a.string(5, "cursor")?;
        let page = social(s, "failed to list groups", move |svc| {
            Box::pin(async move {
                svc.list_groups(&name, &lang, members, open, limit, &cursor)
                    .await
            })
        })?;
        answer(json!({
            "groups": page.groups.iter().map(group_json).collect::<Vec<_>>(),
            "cursor": page.cursor.filter(|c| !c.is_empty()),
        }))
    })?;
    define(ctx, nk, shared, "groupsGetRandom", |s, a| {
        let count = a.int_or(0, 0, "count")?;
        if !(0..=1000).contains(&count) {
            return Err(arg("count must be 0-1000"));
        }
        let groups = social(s, "failed to get random groups", move |svc| {
            Box::pin(async move { svc.random_groups(count as usize).await })
        })?;
        answer(groups.iter().map(group_json).collect())
    })?;
    Ok(())
}

type Manage = for<'a> fn(
    &'a SocialService,
    Option<Uuid>,
    Uuid,
    Vec<Uuid>,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<(), ApiError>> + Send + 'a>,
>;

fn members<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "groupUserJoin", |s, a| {
        let id = a.uuid(0, "group id")?;
        let user = a.uuid(1, "user id")?;
        let username = a.required(2, "username")?;
        social(s, "error while trying to join group", move |svc| {
            Box::pin(async move { svc.join_group(user, &username, id).await })
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "groupUserLeave", |s, a| {
        let id = a.uuid(0, "group id")?;
        let user = a.uuid(1, "user id")?;
        social(s, "error while trying to leave group", move |svc| {
            Box::pin(async move { svc.leave_group(user, id).await })
        })?;
        nothing()
    })?;
    let actions: [(&'static str, &'static str, Manage); 5] = [
        (
            "groupUsersAdd",
            "error while trying to add users into a group",
            |svc, c, g, u| Box::pin(async move { svc.add_group_users(c, g, &u).await }),
        ),
        (
            "groupUsersKick",
            "error while trying to kick users from a group",
            |svc, c, g, u| Box::pin(async move { svc.kick_group_users(c, g, &u).await }),
        ),
        (
            "groupUsersBan",
            "error while trying to ban users from a group",
            |svc, c, g, u| Box::pin(async move { svc.ban_group_users(c, g, &u).await }),
        ),
        (
            "groupUsersPromote",
            "error while trying to promote users in a group",
            |svc, c, g, u| Box::pin(async move { svc.promote_group_users(c, g, &u).await }),
        ),
        (
            "groupUsersDemote",
            "error while trying to demote users in a group",
            |svc, c, g, u| Box::pin(async move { svc.demote_group_users(c, g, &u).await }),
        ),
    ];
    for (name, what, action) in actions {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let id = a.uuid(0, "group id")?;
            let users = uuids_of(a.get(1), "user id")?;
            if users.is_empty() {
                return Err(arg("expects at least one user id"));
            }
            let caller = optional_uuid(a, 2, "caller id")?;
            social(s, what, move |svc| action(svc, caller, id, users))?;
            nothing()
        })?;
    }
    define(ctx, nk, shared, "groupUsersList", |s, a| {
        let id = a.uuid(0, "group id")?;
        let (limit, state) = (limit(a, 1)?, state(a, 2)?);
        let cursor = a.string(3, "cursor")?;
        let page = social(
            s,
            "error while trying to list users in a group",
            move |svc| {
                Box::pin(async move {
                    svc.list_group_users(id, limit, MAX_GROUP_USERS, state, &cursor)
                        .await
                })
            },
        )?;
        let users: Vec<Json> = page
            .users
            .iter()
            .map(|u| json!({ "user": user_json(&u.user), "state": u.role as i64 }))
            .collect();
        answer(json!({ "groupUsers": users, "cursor": page.cursor.filter(|c| !c.is_empty()) }))
    })?;
    define(ctx, nk, shared, "userGroupsList", |s, a| {
        let user = a.uuid(0, "user id")?;
        let (limit, state) = (limit(a, 1)?, state(a, 2)?);
        let cursor = a.string(3, "cursor")?;
        let page = social(
            s,
            "error while trying to list groups for a user",
            move |svc| {
                Box::pin(async move { svc.list_user_groups(user, limit, state, &cursor).await })
            },
        )?;
        let groups: Vec<Json> = page
            .groups
            .iter()
            .map(|g| json!({ "group": group_json(&g.group), "state": g.role as i64 }))
            .collect();
        answer(json!({ "userGroups": groups, "cursor": page.cursor.filter(|c| !c.is_empty()) }))
    })?;
    Ok(())
}
