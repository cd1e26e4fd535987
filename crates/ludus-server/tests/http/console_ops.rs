//! The console's operations on both backends: the wipes (all accounts, all
//! storage, all data) and the delete of chat messages, notifications by id
//! and sent to players or everyone, unlinking platforms, a group's export,
//! and the audit log of every change with its filters and cursors; each
//! with the permission Nakama's console ACL asks, refused to a read-only
//! console user.

use serde_json::{Value, json};

use crate::both_backends;
use crate::console::{add_user, call, perm, root_token};
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    wipes_delete_what_they_name_and_nothing_more,
    channel_messages_deleted_by_age_and_id,
    notifications_read_sent_and_deleted,
    platforms_unlinked_but_never_the_last_way_in,
    group_exported_with_every_member,
    audit_log_lists_changes_with_filters_and_cursors,
);

/// A console user who may read everything these calls touch and change
/// nothing.
async fn reader(t: &TestServer, root: &str) -> String {
    let read = perm(true, false, false);
    let acl: serde_json::Map<String, Value> = [
        "ACCOUNT",
        "ALL_ACCOUNTS",
        "ALL_DATA",
        "ALL_STORAGE",
        "STORAGE_DATA",
        "NOTIFICATION",
        "CHANNEL_MESSAGE",
        "GROUP",
        "AUDIT_LOG",
    ]
    .into_iter()
    .map(|r| (r.to_owned(), read.clone()))
    .collect();
    add_user(t, root, "reader", Value::Object(acl)).await
}

async fn lua_server(b: Backend) -> TestServer {
    TestServer::start_with(b, crate::rpc::lua_config).await
}

async fn save(t: &TestServer, player: &Value, key: &str) {
    let r = t
        .put_bearer(
            "/v2/storage",
            &token(player),
            json!({"objects": [{"collection": "saves", "key": key, "value": "{\"hp\":1}"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn count(t: &TestServer, root: &str, path: &str, field: &str) -> usize {
    let r = call(t, "GET", path, root, json!({})).await;
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.body[field].as_array().map_or(0, Vec::len)
}

async fn wipes_delete_what_they_name_and_nothing_more(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let reader = reader(&t, &root).await;
    let alice = t.device_session("wipe-alice-0001").await;
    let bob = t.device_session("wipe-bob-00001").await;
    save(&t, &alice, "a").await;
    save(&t, &bob, "b").await;
    // A read-only console user deletes nothing.
    for path in [
        "/v2/console/all",
        "/v2/console/account",
        "/v2/console/storage",
    ] {
        let r = call(&t, "DELETE", path, &reader, json!({})).await;
        let msg = assert_error(&r, 403, 7);
        assert!(msg.contains("delete permission"), "{path}: {msg}");
    }
    assert_eq!(count(&t, &root, "/v2/console/account", "users").await, 2);
    assert_eq!(
        count(&t, &root, "/v2/console/storage?collection=saves", "objects").await,
        2
    );
    // ALL_STORAGE delete wipes storage and leaves the accounts.
    let storage_only = add_user(
        &t,
        &root,
        "storagewiper",
        json!({"ALL_STORAGE": perm(true, false, true)}),
    )
    .await;
    let r = call(&t, "DELETE", "/v2/console/all", &storage_only, json!({})).await;
    assert_error(&r, 403, 7);
    let r = call(
        &t,
        "DELETE",
        "/v2/console/storage",
        &storage_only,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        count(&t, &root, "/v2/console/storage?collection=saves", "objects").await,
        0
    );
    assert_eq!(count(&t, &root, "/v2/console/account", "users").await, 2);
    // Every account goes; the system user stays, so sign-up still works.
    save(&t, &alice, "a2").await;
    let r = call(&t, "DELETE", "/v2/console/account", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(count(&t, &root, "/v2/console/account", "users").await, 0);
    assert_eq!(
        count(&t, &root, "/v2/console/storage?collection=saves", "objects").await,
        0
    );
    // All data: accounts, storage and groups; console users stay.
    let carol = t.device_session("wipe-carol-0001").await;
    save(&t, &carol, "c").await;
    let r = t
        .post_bearer("/v2/group", &token(&carol), json!({"name": "wiped-guild"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(count(&t, &root, "/v2/console/group", "groups").await, 1);
    let r = call(&t, "DELETE", "/v2/console/all", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(count(&t, &root, "/v2/console/account", "users").await, 0);
    assert_eq!(
        count(&t, &root, "/v2/console/storage?collection=saves", "objects").await,
        0
    );
    assert_eq!(count(&t, &root, "/v2/console/group", "groups").await, 0);
    let r = call(&t, "GET", "/v2/console/user", &root, json!({})).await;
    assert_eq!(r.body["users"].as_array().unwrap().len(), 2, "{}", r.body);
    let dave = t.device_session("wipe-dave-00001").await;
    save(&t, &dave, "d").await;
    assert_eq!(count(&t, &root, "/v2/console/account", "users").await, 1);
}

async fn channel_messages_deleted_by_age_and_id(b: Backend) {
    let t = lua_server(b).await;
    let root = root_token(&t).await;
    let reader = reader(&t, &root).await;
    let alice = t.device_session("a-console-purge").await;
    let bob = t.device_session("b-console-purge").await;
    for _ in 0..2 {
        let body = json!({"room": "purge-room", "other": user_id(&bob)}).to_string();
        let r = t
            .post_bearer("/v2/rpc/rt_channel", &token(&alice), json!(body))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let list = "/v2/console/channel?type=2&label=purge-room";
    let r = call(&t, "GET", list, &root, json!({})).await;
    let ids: Vec<String> = r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["message_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2, "{}", r.body);
    // Refused: no delete permission, a bad id, a bad time; nothing goes.
    let by_id = format!("/v2/console/message?ids={}", ids[0]);
    let r = call(&t, "DELETE", &by_id, &reader, json!({})).await;
    assert_error(&r, 403, 7);
    let r = call(
        &t,
        "DELETE",
        "/v2/console/message?ids=nope",
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    let r = call(
        &t,
        "DELETE",
        "/v2/console/message?before=yesterday",
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    assert_eq!(count(&t, &root, list, "messages").await, 2);
    // Neither filter deletes nothing.
    let r = call(&t, "DELETE", "/v2/console/message", &root, json!({})).await;
    assert_eq!(r.body, json!({"total": "0"}));
    // By id: the one message; a time in the past: none.
    let r = call(&t, "DELETE", &by_id, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, json!({"total": "1"}));
    assert_eq!(count(&t, &root, list, "messages").await, 1);
    let r = call(
        &t,
        "DELETE",
        "/v2/console/message?before=2001-01-01T00:00:00Z",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body, json!({"total": "0"}));
    // Before a time after the message: it goes.
    let r = call(
        &t,
        "DELETE",
        "/v2/console/message?before=2100-01-01T00:00:00Z",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body, json!({"total": "1"}));
    assert_eq!(count(&t, &root, list, "messages").await, 0);
}

async fn notifications_read_sent_and_deleted(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let reader = reader(&t, &root).await;
    let alice = t.device_session("console-note-alice").await;
    let bob = t.device_session("console-note-bob").await;
    let (alice_id, bob_id) = (user_id(&alice), user_id(&bob));
    let list = |id: &str| format!("/v2/console/notification?user_id={id}");
    // To one player, persistent.
    let r = call(
        &t,
        "POST",
        "/v2/console/notification",
        &root,
        json!({"user_ids": [alice_id], "subject": "hello", "content": {"gift": 3}, "code": 101, "persistent": true}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", &list(&alice_id), &root, json!({})).await;
    let n = r.body["notifications"][0].clone();
    assert_eq!(n["subject"], "hello", "{}", r.body);
    assert_eq!(n["code"], 101);
    assert_eq!(count(&t, &root, &list(&bob_id), "notifications").await, 0);
    // The player reads it through the client API too.
    let r = t.get_bearer("/v2/notification", &token(&alice)).await;
    let content = r.body["notifications"][0]["content"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(content).unwrap(),
        json!({"gift": 3})
    );
    // One by id; a reader may read it but neither send nor delete.
    let id = n["id"].as_str().unwrap();
    let one = format!("/v2/console/notification/{id}");
    let r = call(&t, "GET", &one, &reader, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user_id"], alice_id.as_str());
    assert_eq!(r.body["subject"], "hello");
    let r = call(&t, "DELETE", &one, &reader, json!({})).await;
    assert_error(&r, 403, 7);
    let r = call(
        &t,
        "POST",
        "/v2/console/notification",
        &reader,
        json!({"subject": "nope"}),
    )
    .await;
    assert_error(&r, 403, 7);
    let r = call(
        &t,
        "GET",
        "/v2/console/notification/not-an-id",
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    let unknown = format!("/v2/console/notification/{}", uuid::Uuid::new_v4());
    let r = call(&t, "GET", &unknown, &root, json!({})).await;
    assert_error(&r, 404, 5);
    // Bad recipients are refused and nothing is sent to anyone.
    for (body, status, code) in [
        (
            json!({"user_ids": [bob_id, "nope"], "subject": "x"}),
            400,
            3,
        ),
        (
            json!({"user_ids": [bob_id, uuid::Uuid::nil().to_string()], "subject": "x"}),
            400,
            3,
        ),
        (
            json!({"user_ids": [bob_id, uuid::Uuid::new_v4().to_string()], "subject": "x", "persistent": true}),
            404,
            5,
        ),
        (
            json!({"user_ids": [bob_id], "subject": "x", "sender_id": "nope"}),
            400,
            3,
        ),
    ] {
        let r = call(&t, "POST", "/v2/console/notification", &root, body.clone()).await;
        assert_error(&r, status, code);
    }
    assert_eq!(count(&t, &root, &list(&bob_id), "notifications").await, 0);
    // Deleted by id: gone; deleting again is no error, as in Nakama.
    let r = call(&t, "DELETE", &one, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", &one, &root, json!({})).await;
    assert_error(&r, 404, 5);
    let r = call(&t, "DELETE", &one, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // To everyone: a stored copy for each player.
    let r = call(
        &t,
        "POST",
        "/v2/console/notification",
        &root,
        json!({"subject": "maintenance", "persistent": true, "sender_id": bob_id}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    for id in [&alice_id, &bob_id] {
        let r = call(&t, "GET", &list(id), &root, json!({})).await;
        let got = r.body["notifications"].as_array().unwrap();
        assert_eq!(got.len(), 1, "{}", r.body);
        assert_eq!(got[0]["subject"], "maintenance");
        assert_eq!(got[0]["sender_id"], bob_id.as_str());
    }
}

async fn platforms_unlinked_but_never_the_last_way_in(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let reader = reader(&t, &root).await;
    let seed = t.device_session("console-platform-seed").await;
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/account/{}/export", user_id(&seed)),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // A new account with every platform linked and no other way in.
    let mut export = r.body.clone();
    let id = uuid::Uuid::new_v4().to_string();
    export["account"]["user"]["id"] = json!(id);
    export["account"]["user"]["username"] = json!("platform_player");
    export["account"]["devices"] = json!([]);
    let platforms = [
        ("apple", "apple_id"),
        ("facebook", "facebook_id"),
        ("facebookinstantgame", "facebook_instant_game_id"),
        ("gamecenter", "gamecenter_id"),
        ("google", "google_id"),
        ("steam", "steam_id"),
    ];
    for (name, field) in platforms {
        export["account"]["user"][field] = json!(format!("{name}-1"));
    }
    let r = call(
        &t,
        "POST",
        "/v2/console/account",
        &root,
        json!({"data": export}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let path = |name: &str| format!("/v2/console/account/{id}/unlink/{name}");
    let r = call(&t, "POST", &path("apple"), &reader, json!({})).await;
    assert_error(&r, 403, 7);
    let r = call(
        &t,
        "POST",
        &format!("/v2/console/account/{}/unlink/steam", uuid::Uuid::new_v4()),
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 404, 5);
    // All but the last go, one by one.
    for (name, field) in &platforms[..5] {
        let r = call(&t, "POST", &path(name), &root, json!({})).await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        let r = call(
            &t,
            "GET",
            &format!("/v2/console/account/{id}"),
            &root,
            json!({}),
        )
        .await;
        assert!(
            r.body["account"]["user"].get(*field).is_none(),
            "{name}: {}",
            r.body
        );
        // Unlinking again: nothing linked, refused as Nakama refuses it.
        let r = call(&t, "POST", &path(name), &root, json!({})).await;
        assert_error(&r, 403, 7);
    }
    // Steam is the last way in and stays.
    let r = call(&t, "POST", &path("steam"), &root, json!({})).await;
    assert_error(&r, 403, 7);
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/account/{id}"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(
        r.body["account"]["user"]["steam_id"], "steam-1",
        "{}",
        r.body
    );
}

async fn group_exported_with_every_member(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let owner = t.device_session("export-group-owner").await;
    let r = t
        .post_bearer(
            "/v2/group",
            &token(&owner),
            json!({"name": "exported-guild", "open": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let group = r.body["id"].as_str().unwrap().to_owned();
    let mut members = vec![user_id(&owner)];
    for i in 0..3 {
        let p = t.device_session(&format!("export-group-member-{i}")).await;
        let r = t
            .post_bearer(&format!("/v2/group/{group}/join"), &token(&p), json!({}))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        members.push(user_id(&p));
    }
    let path = format!("/v2/console/group/{group}/export");
    let r = call(&t, "GET", &path, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["group"]["name"], "exported-guild");
    let mut got: Vec<String> = r.body["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["user"]["id"].as_str().unwrap().to_owned())
        .collect();
    got.sort();
    members.sort();
    assert_eq!(got, members);
    let owner_row = r.body["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["user"]["id"] == user_id(&owner).as_str())
        .unwrap();
    assert_eq!(owner_row["state"], 0, "the creator is superadmin");
    // GROUP read is needed; an unknown group is 404, a bad id 400.
    let nobody = add_user(
        &t,
        &root,
        "nogroup",
        json!({"ACCOUNT": perm(true, false, false)}),
    )
    .await;
    let r = call(&t, "GET", &path, &nobody, json!({})).await;
    assert_error(&r, 403, 7);
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/group/{}/export", uuid::Uuid::new_v4()),
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 404, 5);
    let r = call(&t, "GET", "/v2/console/group/x/export", &root, json!({})).await;
    assert_error(&r, 400, 3);
}

async fn audit_log_lists_changes_with_filters_and_cursors(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let reader = reader(&t, &root).await;
    let ops = add_user(
        &t,
        &root,
        "ops",
        json!({"ACCOUNT": perm(true, true, true), "GROUP": perm(true, false, false)}),
    )
    .await;
    let alice = t.device_session("audit-alice").await;
    let alice_id = user_id(&alice);
    let account = format!("/v2/console/account/{alice_id}");
    // Changes by ops: two bans and an unban; a refused call and a read are
    // not changes.
    for path in ["ban", "unban", "ban"] {
        let r = call(&t, "POST", &format!("{account}/{path}"), &ops, json!({})).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = call(&t, "DELETE", "/v2/console/all", &ops, json!({})).await;
    assert_error(&r, 403, 7);
    let r = call(&t, "GET", &account, &ops, json!({})).await;
    assert_eq!(r.status, 200);
    // A change by root, with a secret in its body.
    let r = call(
        &t,
        "POST",
        &account,
        &root,
        json!({"display_name": "Audited", "password": "hunter2"}),
    )
    .await;
    assert_eq!(
        r.status, 400,
        "passwords are refused, and refusals are not logged"
    );
    let r = call(
        &t,
        "POST",
        &account,
        &root,
        json!({"display_name": "Audited"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Listing needs AUDIT_LOG read; ops has none.
    let r = call(&t, "GET", "/v2/console/audit/log", &ops, json!({})).await;
    assert_error(&r, 403, 7);
    let r = call(&t, "GET", "/v2/console/audit/log", &reader, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let entries = r.body["entries"].as_array().unwrap().clone();
    // Root added two console users (CREATE on USER) before these.
    let ours: Vec<&Value> = entries
        .iter()
        .filter(|e| e["message"].as_str().unwrap().contains(&alice_id))
        .collect();
    assert_eq!(ours.len(), 4, "{}", r.body);
    assert_eq!(ours[0]["username"], "admin", "newest first");
    assert_eq!(ours[0]["action"], 2);
    assert_eq!(ours[0]["resource"], 0);
    let meta: Value = serde_json::from_str(ours[0]["metadata"].as_str().unwrap()).unwrap();
    assert_eq!(meta["body"]["display_name"], "Audited");
    assert!(!r.body.to_string().contains("hunter2"));
    assert_eq!(ours[3]["username"], "ops");
    assert!(ours[3]["message"].as_str().unwrap().contains("/ban"));
    let adds: Vec<&Value> = entries.iter().filter(|e| e["action"] == 1).collect();
    assert_eq!(adds.len(), 2, "{}", r.body);
    assert!(adds.iter().all(|e| e["resource"] == 14));
    // Filters: by user, by resource and action (number or name), by time.
    let by = |q: &str| format!("/v2/console/audit/log?{q}");
    let r = call(&t, "GET", &by("username=ops"), &reader, json!({})).await;
    assert_eq!(r.body["entries"].as_array().unwrap().len(), 3, "{}", r.body);
    let r = call(
        &t,
        "GET",
        &by("resource=USER&action=CREATE"),
        &reader,
        json!({}),
    )
    .await;
    assert_eq!(r.body["entries"].as_array().unwrap().len(), 2, "{}", r.body);
    let r = call(&t, "GET", &by("resource=0&action=2"), &reader, json!({})).await;
    assert_eq!(r.body["entries"].as_array().unwrap().len(), 4, "{}", r.body);
    let r = call(
        &t,
        "GET",
        &by("after=2100-01-01T00:00:00Z"),
        &reader,
        json!({}),
    )
    .await;
    assert_eq!(r.body["entries"], json!([]));
    let r = call(
        &t,
        "GET",
        &by("before=2100-01-01T00:00:00Z"),
        &reader,
        json!({}),
    )
    .await;
    assert_eq!(r.body["entries"].as_array().unwrap().len(), 6);
    for bad in [
        "limit=101",
        "action=SHOUT",
        "resource=NOPE",
        "after=soon",
        "cursor=zzz",
    ] {
        let r = call(&t, "GET", &by(bad), &reader, json!({})).await;
        assert_error(&r, 400, 3);
    }
    // Pages of two: forward with next cursors to the end, back with prev.
    let mut pages = Vec::new();
    let mut q = by("limit=2");
    loop {
        let r = call(&t, "GET", &q, &reader, json!({})).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let ids: Vec<String> = r.body["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect();
        pages.push((ids, r.body["prev_cursor"].clone()));
        match r.body["next_cursor"].as_str().unwrap() {
            "" => break,
            next => q = by(&format!("limit=2&cursor={next}")),
        }
    }
    let all: Vec<String> = pages.iter().flat_map(|(ids, _)| ids.clone()).collect();
    let newest: Vec<String> = entries
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(all, newest, "the pages join up to the whole log");
    assert_eq!(pages.len(), 3);
    assert_eq!(pages[0].1, "", "no newer entries than the first page");
    let prev = pages[2].1.as_str().unwrap();
    let r = call(
        &t,
        "GET",
        &by(&format!("limit=2&cursor={prev}")),
        &reader,
        json!({}),
    )
    .await;
    let back: Vec<String> = r.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        back, pages[1].0,
        "back from the last page is the middle one"
    );
    // A cursor made under other filters is refused.
    let r = call(
        &t,
        "GET",
        &by(&format!("limit=2&username=ops&cursor={prev}")),
        &reader,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    // The console usernames to filter by: any session may list them.
    let r = call(&t, "GET", "/v2/console/audit/log/users", &ops, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut names: Vec<&str> = r.body["usernames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["admin", "ops", "reader"]);
}
