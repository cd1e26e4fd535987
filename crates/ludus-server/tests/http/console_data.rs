//! The console's data calls on both backends: account edits and unlinks,
//! the wallet ledger, storage objects, leaderboards and their records,
//! node status, runtime registrations and the redacted configuration, the
//! ACL in front of each, live matches and their state, groups and their
//! members, the API explorer's RPC calls, a player's notifications, chat
//! history, and the web console's files.

use serde_json::{Value, json};

use crate::both_backends;
use crate::console::{add_user, call, perm, root_token};
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    account_edit_and_unlink,
    wallet_ledger_pages,
    storage_write_read_list_and_delete,
    storage_bad_input_loses_nothing,
    leaderboards_records_and_deletes,
    status_runtime_and_redacted_config,
    data_calls_check_the_acl,
    web_console_files_are_served,
    matches_listed_and_their_state_read,
    groups_and_members,
    api_explorer_calls_rpcs_as_a_user,
    a_players_notifications,
    chat_history_of_a_room,
    accounts_exported_and_imported,
);

async fn lua_server(b: Backend) -> TestServer {
    TestServer::start_with(b, crate::rpc::lua_config).await
}

/// A JSON string field, parsed (PostgreSQL stores JSON in its own layout).
fn json_of(v: &Value) -> Value {
    serde_json::from_str(v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))).unwrap()
}

async fn account(t: &TestServer, root: &str, id: &str) -> Value {
    let r = call(
        t,
        "GET",
        &format!("/v2/console/account/{id}"),
        root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

async fn account_edit_and_unlink(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("console-edit-device").await;
    let alice_id = user_id(&alice);
    let r = t
        .post_bearer(
            "/v2/account/link/custom",
            &token(&alice),
            json!({"id": "console-edit-custom"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let path = format!("/v2/console/account/{alice_id}");
    let r = call(
        &t,
        "POST",
        &path,
        &root,
        json!({"username": "edited_alice", "display_name": "Alice A", "metadata": "{\"vip\":true}"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let a = account(&t, &root, &alice_id).await;
    assert_eq!(a["account"]["user"]["username"], "edited_alice");
    assert_eq!(a["account"]["user"]["display_name"], "Alice A");
    assert_eq!(
        json_of(&a["account"]["user"]["metadata"]),
        json!({"vip": true})
    );
    assert_eq!(a["account"]["custom_id"], "console-edit-custom");
    // Fields this server does not change from the console are refused by
    // name, and nothing of the request is applied.
    let r = call(
        &t,
        "POST",
        &path,
        &root,
        json!({"display_name": "Lost", "wallet": "{\"gold\":1}"}),
    )
    .await;
    let msg = assert_error(&r, 400, 3);
    assert!(msg.contains("wallet"), "{msg}");
    let r = call(&t, "POST", &path, &root, json!({"metadata": "[1]"})).await;
    assert_error(&r, 400, 3);
    let a = account(&t, &root, &alice_id).await;
    assert_eq!(a["account"]["user"]["display_name"], "Alice A");
    assert_eq!(
        json_of(&a["account"]["user"]["metadata"]),
        json!({"vip": true})
    );
    let r = call(
        &t,
        "POST",
        &format!("/v2/console/account/{}", uuid::Uuid::new_v4()),
        &root,
        json!({"display_name": "Nobody"}),
    )
    .await;
    assert_error(&r, 404, 5);
    // Custom id unlinked; then the device is the last identity and stays.
    let r = call(
        &t,
        "POST",
        &format!("{path}/unlink/custom"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let a = account(&t, &root, &alice_id).await;
    assert!(a["account"].get("custom_id").is_none(), "{a}");
    let r = call(
        &t,
        "POST",
        &format!("{path}/unlink/device"),
        &root,
        json!({"device_id": "console-edit-device"}),
    )
    .await;
    assert_error(&r, 403, 7);
    let r = call(
        &t,
        "POST",
        &format!("{path}/unlink/email"),
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 403, 7);
    let r = call(
        &t,
        "POST",
        &format!("{path}/unlink/device"),
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    let a = account(&t, &root, &alice_id).await;
    assert_eq!(a["account"]["devices"][0]["id"], "console-edit-device");
    // The device still signs in.
    let r = t
        .post_key(
            "/v2/account/authenticate/device",
            json!({"id": "console-edit-device"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn wallet_ledger_pages(b: Backend) {
    let t = lua_server(b).await;
    let root = root_token(&t).await;
    let s = t.device_session("console-wallet-device").await;
    let id = user_id(&s);
    let r = t
        .post_bearer("/v2/rpc/lua_wallet", &token(&s), json!(""))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let path = format!("/v2/console/account/{id}/wallet");
    let r = call(&t, "GET", &format!("{path}?limit=2"), &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let items = r.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{}", r.body);
    // Newest first: the bulk change of one gem.
    assert_eq!(items[0]["user_id"], id.as_str());
    let change: Value = serde_json::from_str(items[0]["changeset"].as_str().unwrap()).unwrap();
    assert_eq!(change, json!({"gems": 1}));
    assert!(items[0]["create_time"].as_str().unwrap().ends_with('Z'));
    let cursor = r.body["next_cursor"].as_str().unwrap();
    assert!(!cursor.is_empty());
    let r = call(
        &t,
        "GET",
        &format!("{path}?limit=2&cursor={cursor}"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let items = r.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{}", r.body);
    let meta: Value = serde_json::from_str(items[0]["metadata"].as_str().unwrap()).unwrap();
    assert_eq!(meta["reason"], "start");
    assert_eq!(r.body["next_cursor"], "");
    // No limit: the largest page.
    let r = call(&t, "GET", &path, &root, json!({})).await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 3);
    for bad in ["limit=0", "limit=101", "limit=x"] {
        let r = call(&t, "GET", &format!("{path}?{bad}"), &root, json!({})).await;
        assert_error(&r, 400, 3);
    }
    let r = call(
        &t,
        "GET",
        &format!("{path}?cursor=not-a-cursor"),
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    // The wallet itself is in the account.
    let a = account(&t, &root, &id).await;
    let wallet: Value = serde_json::from_str(a["account"]["wallet"].as_str().unwrap()).unwrap();
    assert_eq!(wallet, json!({"gold": 70, "gems": 3}));
    // One entry deleted: the ledger loses it, the wallet stays.
    let r = call(&t, "GET", &path, &root, json!({})).await;
    let newest = r.body["items"][0]["id"].as_str().unwrap().to_owned();
    let entry = format!("{path}/{newest}");
    let r = call(&t, "DELETE", &entry, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", &path, &root, json!({})).await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 2, "{}", r.body);
    assert_ne!(r.body["items"][0]["id"], newest.as_str());
    assert_error(&call(&t, "DELETE", &entry, &root, json!({})).await, 404, 5);
    let r = call(&t, "DELETE", &format!("{path}/nope"), &root, json!({})).await;
    assert_error(&r, 400, 3);
    let a = account(&t, &root, &id).await;
    let wallet: Value = serde_json::from_str(a["account"]["wallet"].as_str().unwrap()).unwrap();
    assert_eq!(wallet, json!({"gold": 70, "gems": 3}));
}

async fn storage_write_read_list_and_delete(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("console-storage-a").await;
    let alice_id = user_id(&alice);
    let bob = t.device_session("console-storage-b").await;
    let bob_id = user_id(&bob);
    let object = format!("/v2/console/storage/saves/slot1/{alice_id}");
    let r = call(
        &t,
        "PUT",
        &object,
        &root,
        json!({"value": "{\"hp\":3}", "permission_read": 2, "permission_write": 0}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let version = r.body["version"].as_str().unwrap().to_owned();
    assert_eq!(version, ludus_core::storage::version_of("{\"hp\":3}"));
    assert_eq!(r.body["user_id"], alice_id.as_str());
    // Alice sees what the console wrote, with its permissions.
    let r = t
        .get_bearer(
            &format!("/v2/storage/saves?user_id={alice_id}"),
            &token(&alice),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(json_of(&r.body["objects"][0]["value"]), json!({"hp": 3}));
    assert_eq!(r.body["objects"][0]["permission_read"], 2);
    // Permission 0 does not stop the console: it acts as the server.
    let r = call(&t, "PUT", &object, &root, json!({"value": "{\"hp\":4}"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(
        &t,
        "PUT",
        &format!("/v2/console/storage/saves/slot2/{bob_id}"),
        &root,
        json!({"value": "{\"hp\":9}"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", &object, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(json_of(&r.body["value"]), json!({"hp": 4}));
    assert_eq!(r.body["permission_read"], 1, "absent means owner read");
    let r = call(
        &t,
        "GET",
        "/v2/console/storage/collections",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["collections"], json!(["saves"]));
    assert_eq!(r.body["next_cursor"], "");
    // Lists: a collection, one owner's, one object by key; no values.
    let r = call(
        &t,
        "GET",
        "/v2/console/storage?collection=saves",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["total_count"], 2, "{}", r.body);
    assert!(r.body["objects"][0].get("value").is_none(), "{}", r.body);
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/storage?collection=saves&user_id={bob_id}"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["objects"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["objects"][0]["key"], "slot2");
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/storage?collection=saves&user_id={alice_id}&key=slot1"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["objects"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["objects"][0]["key"], "slot1");
    // A delete on a stale version is refused; the right one deletes.
    let r = call(
        &t,
        "DELETE",
        &format!("{object}/{version}"),
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    let current = ludus_core::storage::version_of("{\"hp\":4}");
    let r = call(
        &t,
        "DELETE",
        &format!("{object}/{current}"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&call(&t, "GET", &object, &root, json!({})).await, 404, 5);
    let bobs = format!("/v2/console/storage/saves/slot2/{bob_id}");
    let r = call(&t, "DELETE", &bobs, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(
        &t,
        "GET",
        "/v2/console/storage?collection=saves",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["total_count"], 0, "{}", r.body);
}

async fn storage_bad_input_loses_nothing(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("console-storage-bad").await;
    let alice_id = user_id(&alice);
    let object = format!("/v2/console/storage/c/k/{alice_id}");
    let r = call(&t, "PUT", &object, &root, json!({"value": "{\"n\":1}"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    for (body, needle) in [
        (json!({"value": "[1]"}), ""),
        (json!({"value": ""}), ""),
        (
            json!({"value": "{\"n\":2}", "permission_read": 3}),
            "permission_read",
        ),
        (
            json!({"value": "{\"n\":2}", "permission_write": 2}),
            "permission_write",
        ),
        (json!({"value": "{\"n\":2}", "version": "stale"}), ""),
    ] {
        let r = call(&t, "PUT", &object, &root, body.clone()).await;
        let msg = assert_error(&r, 400, 3);
        assert!(msg.contains(needle), "{body}: {msg}");
    }
    let r = call(&t, "GET", &object, &root, json!({})).await;
    assert_eq!(
        json_of(&r.body["value"]),
        json!({"n": 1}),
        "nothing was overwritten"
    );
    let r = call(
        &t,
        "GET",
        "/v2/console/storage/c/k/not-a-uuid",
        &root,
        json!({}),
    )
    .await;
    let msg = assert_error(&r, 400, 3);
    assert!(msg.contains("not-a-uuid"), "{msg}");
    let r = call(&t, "GET", "/v2/console/storage", &root, json!({})).await;
    let msg = assert_error(&r, 400, 3);
    assert!(msg.contains("collection"), "{msg}");
    let r = call(
        &t,
        "GET",
        "/v2/console/storage?collection=c&key=k",
        &root,
        json!({}),
    )
    .await;
    let msg = assert_error(&r, 400, 3);
    assert!(msg.contains("user_id"), "{msg}");
    let r = call(
        &t,
        "GET",
        "/v2/console/storage?collection=c&cursor=garbage",
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    // Objects the system owns use the nil uuid.
    let system = "/v2/console/storage/c/k/00000000-0000-0000-0000-000000000000";
    let r = call(
        &t,
        "PUT",
        system,
        &root,
        json!({"value": "{\"motd\":\"hi\"}"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", system, &root, json!({})).await;
    assert_eq!(json_of(&r.body["value"]), json!({"motd": "hi"}));
}

async fn leaderboards_records_and_deletes(b: Backend) {
    let t = lua_server(b).await;
    let root = root_token(&t).await;
    let mut owners = Vec::new();
    for (i, score) in [30, 10, 20].into_iter().enumerate() {
        let s = t.device_session(&format!("{i:02}-console-lb-device")).await;
        let r = t
            .post_bearer(
                "/v2/leaderboard/lua_weekly",
                &token(&s),
                json!({"score": score.to_string()}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        owners.push(user_id(&s));
    }
    let r = call(&t, "GET", "/v2/console/leaderboard", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let ids: Vec<&str> = r.body["leaderboards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"lua_weekly") && ids.contains(&"lua_authoritative"),
        "{ids:?}"
    );
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "listed in id order");
    assert_eq!(r.body["total"], ids.len(), "{}", r.body);
    let r = call(
        &t,
        "GET",
        "/v2/console/leaderboard/lua_weekly",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["sort_order"], 1, "descending");
    assert_eq!(r.body["operator"], 0, "best");
    assert_eq!(r.body["reset_schedule"], "0 0 * * 1");
    assert_eq!(r.body["tournament"], false);
    assert_eq!(json_of(&r.body["metadata"]), json!({"kind": "weekly"}));
    let r = call(
        &t,
        "GET",
        "/v2/console/leaderboard/missing",
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 404, 5);
    let records = "/v2/console/leaderboard/lua_weekly/records";
    let r = call(&t, "GET", &format!("{records}?limit=10"), &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let scores: Vec<&str> = r.body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["score"].as_str().unwrap())
        .collect();
    assert_eq!(scores, ["30", "20", "10"]);
    let r = call(&t, "GET", records, &root, json!({})).await;
    assert_eq!(
        r.body["records"].as_array().unwrap().len(),
        1,
        "one by default"
    );
    for bad in ["limit=0", "limit=101", "owner_ids=nope"] {
        let r = call(&t, "GET", &format!("{records}?{bad}"), &root, json!({})).await;
        assert_error(&r, 400, 3);
    }
    // The best record is deleted; the others move up.
    let r = call(
        &t,
        "DELETE",
        &format!("/v2/console/leaderboard/lua_weekly/owner/{}", owners[0]),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", &format!("{records}?limit=10"), &root, json!({})).await;
    let recs = r.body["records"].as_array().unwrap();
    assert_eq!(recs.len(), 2, "{}", r.body);
    assert_eq!(recs[0]["score"], "20");
    assert_eq!(recs[0]["rank"], "1");
    // The console deletes on an authoritative board, which clients cannot.
    let r = call(
        &t,
        "DELETE",
        &format!(
            "/v2/console/leaderboard/lua_authoritative/owner/{}",
            owners[1]
        ),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // The board goes with its records; deleting it again succeeds.
    let board = "/v2/console/leaderboard/lua_weekly";
    let r = call(&t, "DELETE", board, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&call(&t, "GET", board, &root, json!({})).await, 404, 5);
    let r = call(&t, "DELETE", board, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let s = t.device_session("00-console-lb-device").await;
    let r = t
        .post_bearer(
            "/v2/leaderboard/lua_weekly",
            &token(&s),
            json!({"score": "1"}),
        )
        .await;
    assert_error(&r, 404, 5);
}

async fn status_runtime_and_redacted_config(b: Backend) {
    use futures_util::StreamExt as _;
    let t = lua_server(b).await;
    let root = root_token(&t).await;
    let s = t.device_session("console-status-device").await;
    let url = format!(
        "{}/ws?token={}&format=json",
        t.base.replacen("http", "ws", 1),
        token(&s)
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    // The socket is registered once the server has sent nothing yet but
    // accepted it; poll the status briefly rather than sleep a fixed time.
    let mut sessions = 0;
    for _ in 0..50 {
        let r = call(&t, "GET", "/v2/console/status", &root, json!({})).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["nodes"].as_array().unwrap().len(), 1, "{}", r.body);
        let node = &r.body["nodes"][0];
        assert!(!node["name"].as_str().unwrap().is_empty(), "{node}");
        assert!(node["create_time"].as_str().unwrap().ends_with('Z'));
        assert!(r.body["timestamp"].as_str().unwrap().ends_with('Z'));
        sessions = node["session_count"].as_i64().unwrap_or(0);
        if sessions == 1 {
            assert_eq!(node["match_count"].as_i64().unwrap_or(0), 0);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(sessions, 1, "the open socket is counted");
    ws.close(None).await.unwrap();
    while ws.next().await.is_some() {}
    let r = call(&t, "GET", "/v2/console/runtime", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rpcs = r.body["lua_rpc_functions"].as_array().unwrap();
    assert!(rpcs.contains(&json!("lua_wallet")), "{}", r.body);
    let modules = r.body["lua_modules"].as_array().unwrap();
    assert!(
        modules.iter().any(|m| m["path"]
            .as_str()
            .unwrap()
            .ends_with("leaderboard_test.lua")),
        "{}",
        r.body
    );
    let r = call(&t, "GET", "/v2/console/config", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let config: Value = serde_json::from_str(r.body["config"].as_str().unwrap()).unwrap();
    assert_eq!(config["console"]["signing_key"], "REDACTED");
    assert_eq!(config["console"]["password"], "REDACTED");
    assert_eq!(config["session"]["encryption_key"], "REDACTED");
    assert_eq!(config["console"]["username"], "admin");
    assert!(config["console"]["port"].is_number(), "{config}");
    assert!(
        !r.body["config"]
            .as_str()
            .unwrap()
            .contains("\"password\":\"password\"")
    );
    assert!(!r.body["server_version"].as_str().unwrap().is_empty());
}

async fn data_calls_check_the_acl(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("console-data-acl").await;
    let alice_id = user_id(&alice);
    let reader = add_user(
        &t,
        &root,
        "reader",
        json!({
            "STORAGE_DATA": perm(true, false, false),
            "LEADERBOARD": perm(true, false, false),
            "ACCOUNT": perm(true, false, false),
        }),
    )
    .await;
    let object = format!("/v2/console/storage/c/k/{alice_id}");
    let r = call(&t, "PUT", &object, &root, json!({"value": "{\"n\":1}"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let account = format!("/v2/console/account/{alice_id}");
    for (method, path, allowed, resource) in [
        ("GET", object.clone(), true, ""),
        (
            "GET",
            "/v2/console/storage?collection=c".to_owned(),
            true,
            "",
        ),
        ("PUT", object.clone(), false, "STORAGE_DATA"),
        ("DELETE", object.clone(), false, "STORAGE_DATA"),
        ("GET", "/v2/console/leaderboard".to_owned(), true, ""),
        (
            "DELETE",
            "/v2/console/leaderboard/any".to_owned(),
            false,
            "LEADERBOARD",
        ),
        (
            "GET",
            "/v2/console/leaderboard/any/records".to_owned(),
            false,
            "LEADERBOARD_RECORD",
        ),
        (
            "DELETE",
            format!("/v2/console/leaderboard/any/owner/{alice_id}"),
            false,
            "LEADERBOARD_RECORD",
        ),
        ("POST", account.clone(), false, "ACCOUNT"),
        ("POST", format!("{account}/unlink/device"), false, "ACCOUNT"),
        ("GET", format!("{account}/wallet"), false, "ACCOUNT_WALLET"),
        ("GET", "/v2/console/status".to_owned(), true, ""),
        (
            "GET",
            "/v2/console/runtime".to_owned(),
            false,
            "CONFIGURATION",
        ),
        (
            "GET",
            "/v2/console/config".to_owned(),
            false,
            "CONFIGURATION",
        ),
    ] {
        let r = call(&t, method, &path, &reader, json!({"value": "{\"n\":2}"})).await;
        if allowed {
            assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
        } else {
            let msg = assert_error(&r, 403, 7);
            assert!(
                msg.contains(&format!("permission on {resource},")),
                "{method} {path}: {msg}"
            );
        }
    }
    let r = call(&t, "GET", &object, &root, json!({})).await;
    assert_eq!(
        json_of(&r.body["value"]),
        json!({"n": 1}),
        "the refused write changed nothing"
    );
    let r = call(&t, "GET", "/v2/console/status", "", json!({})).await;
    assert_error(&r, 401, 16);
}

async fn web_console_files_are_served(b: Backend) {
    let t = TestServer::start(b).await;
    for (path, kind, needle) in [
        ("/", "text/html", "<script src=\"/console.js\""),
        ("/console.js", "text/javascript", "/v2/console/authenticate"),
        ("/console.css", "text/css", "table"),
    ] {
        let res = t
            .http
            .get(format!("{}{path}", t.console))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        let headers = res.headers().clone();
        assert!(
            headers["content-type"].to_str().unwrap().starts_with(kind),
            "{path}: {headers:?}"
        );
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.contains("script-src 'self'"), "{policy}");
        let body = res.text().await.unwrap();
        assert!(body.contains(needle), "{path}");
    }
    // The files are public; the data behind them is not.
    let r = call(&t, "GET", "/v2/console/account", "", json!({})).await;
    assert_error(&r, 401, 16);
}

async fn matches_listed_and_their_state_read(b: Backend) {
    use futures_util::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    let t = TestServer::start_with(b, |c| {
        c.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua_match").into();
    })
    .await;
    let root = root_token(&t).await;
    let s = t.device_session("console-match-device").await;
    let body = json!({"params": {"max": 6, "mode": "duel"}}).to_string();
    let r = t
        .post_bearer("/v2/rpc/create_match_json", &token(&s), json!(body))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let created: Value = json_of(&r.body["payload"]);
    let match_id = created["match_id"].as_str().unwrap().to_owned();
    // A player joins over the socket.
    let url = format!(
        "{}/ws?token={}&format=json",
        t.base.replacen("http", "ws", 1),
        token(&s)
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let join = json!({"cid": "1", "match_join": {"match_id": match_id}});
    ws.send(Message::text(join.to_string())).await.unwrap();
    loop {
        let Some(Ok(Message::Text(text))) = ws.next().await else {
            panic!("the socket closed before the join answered");
        };
        let reply: Value = serde_json::from_str(&text).unwrap();
        if reply["cid"] == "1" {
            assert!(reply.get("match").is_some(), "{reply}");
            break;
        }
    }
    let r = call(&t, "GET", "/v2/console/match", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = &r.body["matches"][0];
    assert_eq!(
        listed["api_match"]["match_id"],
        match_id.as_str(),
        "{}",
        r.body
    );
    assert_eq!(listed["api_match"]["authoritative"], true);
    assert!(
        listed["api_match"]["label"]
            .as_str()
            .unwrap()
            .contains("duel")
    );
    assert_eq!(listed["node"], match_id.split_once('.').unwrap().1);
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/match?match_id={match_id}"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["matches"].as_array().unwrap().len(), 1, "{}", r.body);
    let r = call(
        &t,
        "GET",
        "/v2/console/match?authoritative=true&query=%2Blabel.mode%3Aranked",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.get("matches").is_none_or(|m| m == &json!([])),
        "no match has that mode: {}",
        r.body
    );
    // The state: the joined player, the tick, and the Lua state as JSON.
    let path = format!("/v2/console/match/{match_id}/state");
    let r = call(&t, "GET", &path, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["presences"][0]["user_id"],
        user_id(&s).as_str(),
        "{}",
        r.body
    );
    assert!(r.body["tick"].as_str().unwrap().parse::<i64>().is_ok());
    let state = json_of(&r.body["state"]);
    assert_eq!(state["count"], 1, "{state}");
    assert_eq!(state["max"], 6);
    // Bad ids and gone matches.
    let r = call(
        &t,
        "GET",
        "/v2/console/match/nonsense/state",
        &root,
        json!({}),
    )
    .await;
    let msg = assert_error(&r, 400, 3);
    assert!(msg.contains("nonsense"), "{msg}");
    let gone = format!(
        "/v2/console/match/{}.{}/state",
        uuid::Uuid::new_v4(),
        listed["node"].as_str().unwrap()
    );
    assert_error(&call(&t, "GET", &gone, &root, json!({})).await, 404, 5);
    for bad in [
        "limit=0",
        "limit=101",
        "min_size=-1",
        "min_size=3&max_size=2",
    ] {
        let r = call(
            &t,
            "GET",
            &format!("/v2/console/match?{bad}"),
            &root,
            json!({}),
        )
        .await;
        assert_error(&r, 400, 3);
    }
    // MATCH read is needed.
    let other = add_user(
        &t,
        &root,
        "nomatch",
        json!({"ACCOUNT": perm(true, false, false)}),
    )
    .await;
    let msg = assert_error(&call(&t, "GET", &path, &other, json!({})).await, 403, 7);
    assert!(msg.contains("permission on MATCH,"), "{msg}");
    ws.close(None).await.unwrap();
}

async fn groups_and_members(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("console-group-a").await;
    let bob = t.device_session("console-group-b").await;
    let (alice_id, bob_id) = (user_id(&alice), user_id(&bob));
    let r = t
        .post_bearer(
            "/v2/group",
            &token(&alice),
            json!({"name": "console-guild", "open": false}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let group_id = r.body["id"].as_str().unwrap().to_owned();
    let r = call(
        &t,
        "GET",
        "/v2/console/group?filter=console",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["groups"][0]["id"], group_id.as_str(), "{}", r.body);
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/group?filter={group_id}"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["total_count"], 1, "{}", r.body);
    let path = format!("/v2/console/group/{group_id}");
    // Edit as the server: no member role needed.
    let r = call(
        &t,
        "POST",
        &path,
        &root,
        json!({"description": "edited by ops", "open": true}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", &path, &root, json!({})).await;
    assert_eq!(r.body["description"], "edited by ops");
    assert_eq!(r.body["open"], true);
    let r = call(&t, "POST", &path, &root, json!({"max_count": 0})).await;
    assert_error(&r, 400, 3);
    // Members: add bob, promote him, demote him, remove him.
    let r = call(
        &t,
        "POST",
        &format!("{path}/add"),
        &root,
        json!({"ids": format!("{bob_id}")}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let role_of = |body: &Value, id: &str| {
        body["group_users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["user"]["id"] == id)
            .map(|u| u["state"].as_i64().unwrap_or(0))
    };
    let r = call(&t, "GET", &format!("{path}/member"), &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(role_of(&r.body, &alice_id), Some(0), "superadmin");
    assert_eq!(role_of(&r.body, &bob_id), Some(2), "member");
    let member = format!("{path}/account/{bob_id}");
    let r = call(&t, "POST", &format!("{member}/promote"), &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", &format!("{path}/member"), &root, json!({})).await;
    assert_eq!(role_of(&r.body, &bob_id), Some(1), "admin");
    let r = call(&t, "POST", &format!("{member}/demote"), &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", &format!("{path}/member"), &root, json!({})).await;
    assert_eq!(role_of(&r.body, &bob_id), Some(2), "member again");
    let r = call(
        &t,
        "DELETE",
        &format!("/v2/console/account/{bob_id}/group/{group_id}"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", &format!("{path}/member"), &root, json!({})).await;
    assert_eq!(role_of(&r.body, &bob_id), None, "{}", r.body);
    // Bad input.
    for (method, p, body) in [
        ("POST", format!("{path}/add"), json!({"ids": "nope"})),
        ("POST", format!("{path}/add"), json!({"ids": ""})),
        ("GET", "/v2/console/group/nope".to_owned(), json!({})),
    ] {
        assert_error(&call(&t, method, &p, &root, body).await, 400, 3);
    }
    let missing = format!("/v2/console/group/{}", uuid::Uuid::new_v4());
    assert_error(&call(&t, "GET", &missing, &root, json!({})).await, 404, 5);
    // GROUP read does not delete; the delete takes the group.
    let reader = add_user(
        &t,
        &root,
        "groupreader",
        json!({"GROUP": perm(true, false, false)}),
    )
    .await;
    let msg = assert_error(&call(&t, "DELETE", &path, &reader, json!({})).await, 403, 7);
    assert!(msg.contains("permission on GROUP,"), "{msg}");
    let msg = assert_error(
        &call(
            &t,
            "POST",
            &format!("{path}/add"),
            &reader,
            json!({"ids": bob_id}),
        )
        .await,
        403,
        7,
    );
    assert!(msg.contains("permission on ACCOUNT_GROUPS,"), "{msg}");
    let r = call(&t, "DELETE", &path, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&call(&t, "GET", &path, &root, json!({})).await, 404, 5);
}

async fn api_explorer_calls_rpcs_as_a_user(b: Backend) {
    let t = lua_server(b).await;
    let root = root_token(&t).await;
    let s = t.device_session("console-explorer-device").await;
    let id = user_id(&s);
    let r = call(&t, "GET", "/v2/console/api/endpoints", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rpcs: Vec<&str> = r.body["rpc_endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["method"].as_str().unwrap())
        .collect();
    assert!(
        rpcs.contains(&"console_ctx") && rpcs.contains(&"echo"),
        "{rpcs:?}"
    );
    let path = "/v2/console/api/endpoints/rpc/console_ctx";
    let r = call(
        &t,
        "POST",
        path,
        &root,
        json!({"body": "hello", "user_id": id, "session_vars": {"tier": "gold"}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["error_message"], "", "{}", r.body);
    let out = json_of(&r.body["body"]);
    assert_eq!(out["user_id"], id.as_str());
    assert_eq!(out["vars"], json!({"tier": "gold"}));
    assert_eq!(out["payload"], "hello");
    assert!(!out["username"].as_str().unwrap().is_empty());
    // As the server: no user in ctx.
    let r = call(&t, "POST", path, &root, json!({"body": "x"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        json_of(&r.body["body"]).get("user_id").is_none(),
        "{}",
        r.body
    );
    // The RPC's own error is answered, not raised.
    let r = call(
        &t,
        "POST",
        "/v2/console/api/endpoints/rpc/denied",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["error_message"].as_str().unwrap().contains("nope"),
        "{}",
        r.body
    );
    // Bad input.
    let r = call(
        &t,
        "POST",
        "/v2/console/api/endpoints/rpc/missing",
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 404, 5);
    let r = call(&t, "POST", path, &root, json!({"user_id": "nope"})).await;
    assert_error(&r, 400, 3);
    let r = call(&t, "POST", path, &root, json!({"session_vars": {"a": "b"}})).await;
    assert_error(&r, 400, 3);
    let r = call(
        &t,
        "POST",
        path,
        &root,
        json!({"user_id": uuid::Uuid::new_v4().to_string()}),
    )
    .await;
    assert_error(&r, 404, 5);
    // Reading the list does not allow calling.
    let reader = add_user(
        &t,
        &root,
        "explorer",
        json!({"API_EXPLORER": perm(true, false, false)}),
    )
    .await;
    let r = call(&t, "GET", "/v2/console/api/endpoints", &reader, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let msg = assert_error(&call(&t, "POST", path, &reader, json!({})).await, 403, 7);
    assert!(msg.contains("permission on API_EXPLORER,"), "{msg}");
}

async fn a_players_notifications(b: Backend) {
    let t = lua_server(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("a-console-notify").await;
    let bob = t.device_session("b-console-notify").await;
    let bob_id = user_id(&bob);
    let body = json!({"user_id": bob_id}).to_string();
    let r = t
        .post_bearer("/v2/rpc/rt_notify", &token(&alice), json!(body))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let path = format!("/v2/console/notification?user_id={bob_id}");
    let r = call(&t, "GET", &path, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let subjects: Vec<&str> = r.body["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        ["one", "three"],
        "the persistent ones, oldest first"
    );
    let first = &r.body["notifications"][0];
    assert_eq!(first["code"], 101);
    assert_eq!(first["user_id"], bob_id.as_str());
    assert_eq!(first["sender_id"], user_id(&alice).as_str());
    assert_eq!(json_of(&first["content"]), json!({"n": 1}));
    assert_eq!(r.body["next_cursor"], "", "a short page is the last");
    // Paged one at a time.
    let r = call(&t, "GET", &format!("{path}&limit=1"), &root, json!({})).await;
    assert_eq!(r.body["notifications"][0]["subject"], "one");
    let cursor = r.body["next_cursor"].as_str().unwrap().to_owned();
    assert!(!cursor.is_empty());
    let r = call(
        &t,
        "GET",
        &format!("{path}&limit=1&cursor={cursor}"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["notifications"][0]["subject"], "three", "{}", r.body);
    for bad in [
        "/v2/console/notification".to_owned(),
        format!("{path}&limit=0"),
        format!("{path}&cursor=garbage"),
        "/v2/console/notification?user_id=nope".to_owned(),
    ] {
        assert_error(&call(&t, "GET", &bad, &root, json!({})).await, 400, 3);
    }
    let other = add_user(
        &t,
        &root,
        "nonotes",
        json!({"ACCOUNT": perm(true, false, false)}),
    )
    .await;
    let msg = assert_error(&call(&t, "GET", &path, &other, json!({})).await, 403, 7);
    assert!(msg.contains("permission on NOTIFICATION,"), "{msg}");
}

async fn chat_history_of_a_room(b: Backend) {
    let t = lua_server(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("a-console-chat").await;
    let bob = t.device_session("b-console-chat").await;
    for _ in 0..2 {
        let body = json!({"room": "console-lobby", "other": user_id(&bob)}).to_string();
        let r = t
            .post_bearer("/v2/rpc/rt_channel", &token(&alice), json!(body))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = call(
        &t,
        "GET",
        "/v2/console/channel?type=2&label=console-lobby",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let messages = r.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{}", r.body);
    assert_eq!(messages[0]["sender_id"], user_id(&alice).as_str());
    assert_eq!(
        json_of(&messages[0]["content"]),
        json!({"text": "from lua"})
    );
    // The enum's name works as well as its number; another room is empty.
    let r = call(
        &t,
        "GET",
        "/v2/console/channel?type=ROOM&label=console-lobby",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["messages"].as_array().unwrap().len(), 2);
    let r = call(
        &t,
        "GET",
        "/v2/console/channel?type=2&label=elsewhere",
        &root,
        json!({}),
    )
    .await;
    assert!(
        r.body.get("messages").is_none_or(|m| m == &json!([])),
        "{}",
        r.body
    );
    let r = call(
        &t,
        "GET",
        &format!(
            "/v2/console/channel?type=4&user_id_one={}&user_id_two={}",
            user_id(&alice),
            user_id(&bob)
        ),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    for bad in [
        "type=9",
        "type=2",
        "type=3&group_id=nope",
        "type=4&user_id_one=nope&user_id_two=nope",
    ] {
        let r = call(
            &t,
            "GET",
            &format!("/v2/console/channel?{bad}"),
            &root,
            json!({}),
        )
        .await;
        assert_error(&r, 400, 3);
    }
    let other = add_user(
        &t,
        &root,
        "nochat",
        json!({"ACCOUNT": perm(true, false, false)}),
    )
    .await;
    let r = call(
        &t,
        "GET",
        "/v2/console/channel?type=2&label=x",
        &other,
        json!({}),
    )
    .await;
    let msg = assert_error(&r, 403, 7);
    assert!(msg.contains("permission on CHANNEL_MESSAGE,"), "{msg}");
}

/// `ExportAccount`, `ImportAccount` and `ImportAccountFull`: the export
/// `nk.account_export_id` writes, imported into an account or as a new one,
/// behind `ACCOUNT_EXPORT`.
async fn accounts_exported_and_imported(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("console-export-dev").await;
    let alice_id = user_id(&alice);
    let r = t
        .put_bearer(
            "/v2/storage",
            &token(&alice),
            json!({"objects": [{"collection": "saves", "key": "slot1", "value": "{\"hp\":7}"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/account/{alice_id}/export"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut export = r.body.clone();
    assert_eq!(
        export["account"]["user"]["id"],
        alice_id.as_str(),
        "{export}"
    );
    assert_eq!(export["objects"][0]["key"], "slot1");

    // As a new account: the export's id, username and device.
    let copy = "0b5c7d9e-2f4a-4b6c-8d0e-1f2a3b4c5d6e";
    export["account"]["user"]["id"] = json!(copy);
    export["account"]["user"]["username"] = json!("console_copy");
    export["account"]["devices"] = json!([{"id": "console-copy-device"}]);
    let r = call(
        &t,
        "POST",
        "/v2/console/account",
        &root,
        json!({"data": export}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["account"]["user"]["id"], copy, "{}", r.body);
    assert_eq!(r.body["account"]["user"]["username"], "console_copy");
    let r = t
        .post_key(
            "/v2/account/authenticate/device?create=false",
            json!({"id": "console-copy-device"}),
        )
        .await;
    assert_eq!(r.status, 200, "the copy signs in: {}", r.body);
    let again = call(
        &t,
        "POST",
        "/v2/console/account",
        &root,
        json!({"data": export}),
    )
    .await;
    assert_error(&again, 409, 6);

    // Into alice: her storage becomes the export's (none).
    export["objects"] = json!([]);
    let r = call(
        &t,
        "PUT",
        &format!("/v2/console/account/{alice_id}/import"),
        &root,
        json!({"data": export}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .post_bearer(
            "/v2/storage",
            &token(&alice),
            json!({"object_ids": [{"collection": "saves", "key": "slot1", "user_id": alice_id}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["objects"].as_array().is_none_or(Vec::is_empty),
        "{}",
        r.body
    );
    let r = call(
        &t,
        "PUT",
        &format!("/v2/console/account/{alice_id}/import"),
        &root,
        json!({"data": "not an export"}),
    )
    .await;
    assert_error(&r, 400, 3);

    // The ACL: reading an export needs ACCOUNT_EXPORT read, importing write.
    let reader = add_user(
        &t,
        &root,
        "exporter",
        json!({"ACCOUNT_EXPORT": perm(true, false, false)}),
    )
    .await;
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/account/{alice_id}/export"),
        &reader,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(
        &t,
        "POST",
        "/v2/console/account",
        &reader,
        json!({"data": export}),
    )
    .await;
    assert_error(&r, 403, 7);
}
