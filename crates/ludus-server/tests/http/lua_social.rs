//! `nk.friends_*`, `nk.friend_metadata_update`, the `nk.group*` functions and
//! `nk.user_groups_list` from the Lua module in
//! `tests/lua/social_test.lua`, on both backends: Nakama's argument
//! order and defaults, result tables, and the refusals as Lua errors. Then
//! the native equivalent: a native RPC using `RuntimeServices::social()`.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, token, user_id};

both_backends!(
    lua_friends_and_groups,
    native_friends_and_groups,
    lua_users_get_friend_status
);

async fn lua_friends_and_groups(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    // The module's device hook names users "hooked" + the first four
    // characters of the device id.
    let me = t.device_session("lsa1-lua-social").await;
    let bob = t.device_session("lsb2-lua-social").await;
    let cat = t.device_session("lsc3-lua-social").await;
    let payload = json!({
        "bob": user_id(&bob),
        "bob_name": "hookedlsb2",
        "cat": user_id(&cat),
        "cat_name": "hookedlsc3",
    })
    .to_string();
    let r = t
        .post_bearer("/v2/rpc/lua_social", &token(&me), Value::String(payload))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    let bob_id = user_id(&bob);
    assert_eq!(out["friend_count"], 1, "{out}");
    assert_eq!(out["friend_state"], 0);
    assert_eq!(out["friend_user"], bob_id.as_str());
    assert_eq!(out["friend_metadata"], true);
    assert!(out["friend_cursor"].is_null());
    assert_eq!(out["all_count"], 2, "bob a friend, cat invited");
    assert_eq!(out["after_block"], 1, "cat's block removed the invite");
    assert_eq!(out["self_refused"], true);
    assert!(
        out["self_error"]
            .as_str()
            .unwrap()
            .contains("cannot add self as friend")
    );
    assert_eq!(out["fof_referrer"], bob_id.as_str());
    assert_eq!(out["fof_user"], user_id(&cat).as_str());
    assert_eq!(out["group_name"], "Lua Guild");
    assert_eq!(out["group_lang"], "fr");
    assert_eq!(out["group_open"], false);
    assert_eq!(out["group_tier"], 1);
    assert_eq!(out["group_max"], 3);
    // Regression: `nk.group_create` ignored its creator_id argument and
    // recorded the superadmin as the creator. Nil records the system user.
    assert_eq!(out["group_creator"], "00000000-0000-0000-0000-000000000000");
    assert_eq!(out["crafted_creator"], user_id(&cat).as_str());
    // nk.group_update's creator_id replaces the recorded creator.
    assert_eq!(out["crafted_stored_creator"], user_id(&bob).as_str());
    assert_eq!(
        out["crafted_member_count"], 1,
        "the creator is not a member"
    );
    assert_eq!(out["crafted_superadmin"], user_id(&me).as_str());
    assert_eq!(out["crafted_superadmin_state"], 0);
    assert_eq!(out["bad_creator_refused"], true);
    assert!(
        out["bad_creator_error"]
            .as_str()
            .unwrap()
            .contains("expects owner ID to be a valid identifier"),
        "{}",
        out["bad_creator_error"]
    );
    assert_eq!(out["request_state"], 3);
    assert_eq!(out["request_user"], bob_id.as_str());
    assert_eq!(out["denied"], true);
    assert!(
        out["denied_error"]
            .as_str()
            .unwrap()
            .contains("group not found or permission denied"),
        "{}",
        out["denied_error"]
    );
    assert_eq!(out["first_member_state"], 0);
    assert_eq!(out["member_cursor"], true);
    assert_eq!(out["bob_group_state"], 1);
    assert_eq!(out["bob_group_name"], "Lua Guild 2");
    assert_eq!(out["got_name"], "Lua Guild 2");
    assert_eq!(out["got_open"], true);
    assert_eq!(out["got_edges"], 2);
    assert_eq!(out["got_max"], 10);
    assert_eq!(out["listed"], 1);
    assert_eq!(out["random"], 1);
    assert_eq!(out["banned_join_refused"], true);
    assert_eq!(out["last_refused"], true);
    assert!(
        out["last_error"]
            .as_str()
            .unwrap()
            .contains("last superadmin")
    );
    assert_eq!(out["gone"], 0);
    // The friend delete at the end reached bob too: only cat is left.
    let r = t.get_bearer("/v2/friend", &token(&bob)).await;
    let friends = r.body["friends"].as_array().unwrap();
    assert_eq!(friends.len(), 1, "{}", r.body);
    assert_eq!(friends[0]["user"]["id"], user_id(&cat).as_str());
}

fn native_module() -> ludus_server::NativeModule {
    ludus_server::NativeModule::new().rpc("native_social", |call, payload| async move {
        let social = call.services.social()?;
        let me: uuid::Uuid = call
            .ctx
            .user_id
            .as_deref()
            .unwrap_or_default()
            .parse()
            .unwrap();
        let friend: Value = serde_json::from_str(&payload).unwrap();
        let friend = friend["friend"].as_str().unwrap().to_owned();
        social
            .add_friends(
                me,
                &call.ctx.username,
                std::slice::from_ref(&friend),
                &[],
                None,
            )
            .await?;
        let friends = social.list_friends(me, None, None, "").await?;
        // Created for `me` (the superadmin) with the system user recorded
        // as its creator, as a module may.
        let group = social
            .create_group(
                me,
                uuid::Uuid::nil(),
                ludus_core::social_service::NewGroup {
                    name: "Native Guild".into(),
                    open: true,
                    ..Default::default()
                },
            )
            .await?;
        let friend_id: uuid::Uuid = friend.parse().unwrap();
        social.join_group(friend_id, "friend", group.id).await?;
        let users = social
            .list_group_users(group.id, None, ludus_core::group::MAX_LIST_LIMIT, None, "")
            .await?;
        let superadmins: Vec<_> = users
            .users
            .iter()
            .filter(|u| u.role == ludus_core::group::GroupRole::Superadmin)
            .map(|u| u.user.id == me)
            .collect();
        Ok(json!({
            "friends": friends.friends.len(),
            "friend_state": friends.friends[0].state as i64,
            "members": users.users.len(),
            "creator": group.creator_id.to_string(),
            "superadmin_is_me": superadmins,
        })
        .to_string())
    })
}

async fn native_friends_and_groups(b: Backend) {
    let t = TestServer::start_native(b, native_module(), |_| {}).await;
    let me = t.device_session("native-social-me").await;
    let other = t.device_session("native-social-other").await;
    let r = t
        .post_bearer(
            "/v2/rpc/native_social",
            &token(&me),
            Value::String(json!({"friend": user_id(&other)}).to_string()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(
        out,
        json!({
            "friends": 1,
            "friend_state": 1,
            "members": 2,
            "creator": "00000000-0000-0000-0000-000000000000",
            "superadmin_is_me": [true],
        })
    );
    // The invite reached the other user as Nakama's notification.
    let r = t
        .get_bearer("/v2/notification?limit=10", &token(&other))
        .await;
    assert_eq!(r.body["notifications"][0]["code"], -2, "{}", r.body);
}

async fn lua_users_get_friend_status(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let me = t.device_session("lfs1-friend-status").await;
    let bob = t.device_session("lfs2-friend-status").await;
    let cat = t.device_session("lfs3-friend-status").await;
    let payload = json!({"bob": user_id(&bob), "cat": user_id(&cat)}).to_string();
    let r = t
        .post_bearer(
            "/v2/rpc/lua_friend_status",
            &token(&me),
            Value::String(payload),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    // Only bob has an edge: an invite sent (state 1), with its metadata.
    assert_eq!(out["count"], 1, "{out}");
    assert_eq!(out["user"], user_id(&bob).as_str());
    assert_eq!(out["state"], 1);
    assert_eq!(out["note"], "hi");
    assert_eq!(out["has_time"], true);
    assert_eq!(out["empty"], 0);
    assert!(
        out["bad_user"]
            .as_str()
            .unwrap()
            .contains("bad argument #1: invalid user id"),
        "{out}"
    );
    assert!(
        out["bad_id"]
            .as_str()
            .unwrap()
            .contains("bad argument #2: invalid user id"),
        "{out}"
    );
    assert!(
        out["bad_type"]
            .as_str()
            .unwrap()
            .contains("each user id must be a string"),
        "{out}"
    );
    assert!(
        out["satori"]
            .as_str()
            .unwrap()
            .contains("satori is not configured"),
        "{out}"
    );
}
