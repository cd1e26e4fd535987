//! Nakama's JS `nk` functions over the real server, from the module in
//! `tests/js_nk` (one RPC per group), on both backends: the answers a
//! module sees (Nakama's camelCase keys, times in seconds, errors as
//! Nakama throws them) and their effect seen over REST.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

fn config(config: &mut ludus_server::Config) {
    config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js_nk").into();
    config.runtime.js_max_count = 2;
}

/// Calls `id` with the http key; answers the RPC's JSON answer.
async fn call(s: &TestServer, id: &str, payload: Value) -> Value {
    let r = s
        .post_key(
            &format!("/v2/rpc/{id}?http_key=defaulthttpkey"),
            Value::String(payload.to_string()),
        )
        .await;
    assert_eq!(r.status, 200, "{id}: {}", r.body);
    match r.body["payload"].as_str() {
        Some("") | None => Value::Null,
        Some(text) => serde_json::from_str(text).unwrap(),
    }
}

fn starts(out: &Value, key: &str, prefix: &str) {
    let got = out[key].as_str().unwrap_or_default();
    assert!(got.starts_with(prefix), "{key}: {got:?} is not {prefix:?}…");
}

async fn js_nk_accounts_and_users(b: Backend) {
    let s = TestServer::start_with(b, config).await;
    let me = s.device_session("js-nk-accounts-0001").await;
    let other = s.device_session("js-nk-accounts-0002").await;
    let (me_id, other_id) = (user_id(&me), user_id(&other));
    let out = call(&s, "nk_accounts", json!({"me": me_id, "other": other_id})).await;
    let acc = &out["account"];
    assert_eq!(acc["user"]["userId"], me_id.as_str(), "{out}");
    assert_eq!(acc["user"]["displayName"], "Display Me");
    assert_eq!(acc["user"]["location"], "Berlin");
    assert_eq!(acc["user"]["metadata"], json!({"level": 3}));
    assert!(acc["user"]["createTime"].as_i64().unwrap() > 1_700_000_000);
    assert_eq!(acc["devices"], json!([{"id": "js-nk-accounts-0001"}]));
    assert_eq!(acc["wallet"], json!({}));
    assert_eq!(out["accounts"], json!([me_id, other_id]));
    assert_eq!(out["byId"], json!([other_id]));
    assert_eq!(out["byName"], json!([me_id]));
    assert_eq!(out["random"], 2);
    // Strangers have no friend status, as in Nakama.
    assert_eq!(out["status"], 0);
    starts(&out, "badId", "TypeError: accountGetId: invalid user id");
    starts(&out, "missing", "Error: error getting account: ");
    starts(&out, "badName", "TypeError: accountUpdateId: ");
    starts(
        &out,
        "badRandom",
        "TypeError: usersGetRandom: count must be 0-1000",
    );
    // The change is the account's, as REST reads it.
    let r = s.get_bearer("/v2/account", &token(&me)).await;
    assert_eq!(r.body["user"]["display_name"], "Display Me");

    // A ban refuses sign-in until it is lifted.
    call(&s, "nk_ban", json!({"user": other_id, "ban": true})).await;
    let r = s
        .post_key(
            "/v2/account/authenticate/device?create=false",
            json!({"id": "js-nk-accounts-0002"}),
        )
        .await;
    assert_ne!(r.status, 200, "a banned user signed in: {}", r.body);
    call(&s, "nk_ban", json!({"user": other_id, "ban": false})).await;
    let other = s.device_session("js-nk-accounts-0002").await;

    // A logout revokes the session's token.
    call(
        &s,
        "nk_logout",
        json!({"user": other_id, "token": token(&other)}),
    )
    .await;
    let r = s.get_bearer("/v2/account", &token(&other)).await;
    assert_eq!(r.status, 401, "{}", r.body);

    // An nk error the module lets through reaches the client as Nakama's
    // does: code 13 with the error's message.
    for (payload, message) in [
        ("server", "error getting account: "),
        ("type", "TypeError: accountGetId: invalid user id"),
    ] {
        let r = s
            .post_key(
                "/v2/rpc/nk_uncaught?http_key=defaulthttpkey",
                Value::String(payload.into()),
            )
            .await;
        assert_error(&r, 500, 13);
        let got = r.body["message"].as_str().unwrap_or_default();
        assert!(got.starts_with(message), "{got:?} is not {message:?}…");
    }

    // A deleted account is gone.
    call(&s, "nk_delete", json!({"user": other_id})).await;
    let out = call(&s, "nk_accounts", json!({"me": me_id, "other": other_id})).await;
    assert_eq!(out["accounts"], json!([me_id]));
}

async fn js_nk_authenticate_and_link(b: Backend) {
    let s = TestServer::start_with(b, config).await;
    let out = call(&s, "nk_auth", json!({})).await;
    assert_eq!(
        out["device"],
        json!(["jsnkdevice", true, true, false]),
        "{out}"
    );
    assert_eq!(out["custom"], true);
    assert_eq!(out["email"], "jsnkmail");
    starts(&out, "noCreate", "Error: error authenticating: ");
    starts(
        &out,
        "emptyId",
        "TypeError: authenticateDevice: expects id string",
    );
    assert_eq!(out["linked"], "js-nk-linked-0042");
    assert_eq!(out["linkedEmail"], "linked@example.com");
    assert_eq!(out["unlinked"], true);
    starts(&out, "linkTaken", "Error: error linking: ");
    // The generated token is a session of that user, with its vars.
    let token = out["token"].as_str().unwrap();
    let r = s.get_bearer("/v2/account", token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user"]["username"], "jsnkdevice");
    assert_eq!(r.body["custom_id"], Value::Null);
    let claims = crate::support::claims(token);
    assert_eq!(claims["vrs"], json!({"tier": "gold"}), "{claims}");
    assert!(out["exp"].as_i64().unwrap() > 1_700_000_000);
}

async fn js_nk_storage_and_wallets(b: Backend) {
    let s = TestServer::start_with(b, config).await;
    let me = s.device_session("js-nk-storage-0001").await;
    let me_id = user_id(&me);
    let out = call(&s, "nk_storage", json!({"me": me_id})).await;
    let acks = out["acks"].as_array().unwrap();
    assert_eq!(acks.len(), 2, "{out}");
    assert_eq!(acks[0]["userId"], me_id.as_str());
    assert_eq!(acks[0]["key"], "slot1");
    assert_eq!(acks[1]["userId"], "00000000-0000-0000-0000-000000000000");
    let read = out["read"].as_array().unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0]["value"], json!({"hp": 10}));
    assert_eq!(read[0]["permissionRead"], 2);
    assert_eq!(read[0]["permissionWrite"], 1);
    assert_eq!(read[0]["version"], acks[0]["version"]);
    assert!(read[0]["createTime"].as_i64().unwrap() > 1_700_000_000);
    assert_eq!(out["listed"], json!(["slot1"]));
    assert_eq!(out["cursor"], Value::Null);
    assert_eq!(out["afterDelete"], 0);
    starts(&out, "conflict", "Error: failed to write storage objects: ");
    starts(
        &out,
        "noValue",
        "TypeError: storageWrite: expects value to be supplied",
    );
    assert_eq!(out["wallets"][0]["updated"], json!({"gold": 10}));
    assert_eq!(out["wallets"][0]["previous"], json!({}));
    assert_eq!(out["ledger"], json!([[{"gold": 10}, {"why": "quest"}]]));
    assert_eq!(out["ledgerUpdate"], json!({"why": "quest", "note": "ok"}));
    assert_eq!(out["multi"]["storageWriteAcks"][0]["key"], "multi");
    assert_eq!(
        out["multi"]["walletUpdateAcks"][0]["updated"],
        json!({"gold": 7})
    );
    starts(&out, "overdraw", "Error: failed to update user wallet: ");
    assert_eq!(out["race"], json!([2, 101]));
    starts(
        &out,
        "noRetry",
        "Error: failed to write storage objects with retry: storage write rejected - version check failed",
    );
    starts(
        &out,
        "badRetries",
        "TypeError: storageWriteRetry: max retries must be 0-10",
    );
    // What REST sees.
    let r = s.get_bearer("/v2/account", &token(&me)).await;
    assert_eq!(r.body["user"]["display_name"], "Multi");
    let wallet: Value = serde_json::from_str(r.body["wallet"].as_str().unwrap()).unwrap();
    assert_eq!(wallet, json!({"gold": 7}));
    let r = s
        .get_bearer(
            &format!("/v2/storage/saves?user_id={me_id}&limit=10"),
            &token(&me),
        )
        .await;
    let keys: Vec<&str> = r.body["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["multi", "slot1"], "{}", r.body);
}

async fn js_nk_notifications_chat_and_streams(b: Backend) {
    let s = TestServer::start_with(b, config).await;
    let me = s.device_session("js-nk-inbox-0001").await;
    let me_id = user_id(&me);
    let out = call(&s, "nk_inbox", json!({"me": me_id})).await;
    assert_eq!(
        out["subjects"],
        json!([["one", r#"{"n":1}"#, 5, ""], ["two", r#"{"n":2}"#, 6, ""]]),
        "{out}"
    );
    assert_eq!(out["byId"], json!([["one", {"n": 1}, me_id]]));
    assert_eq!(out["left"], 1);
    starts(&out, "badCode", "TypeError: notificationSend: expects code");
    assert_eq!(out["ack"], json!([true, true]));
    assert_eq!(out["history"], json!([[r#"{"text":"edited"}"#, "lobby"]]));
    assert_eq!(out["afterRemove"], 0);
    assert_eq!(out["streamCount"], 0);
    assert_eq!(out["streamUsers"], 0);
    starts(
        &out,
        "badStream",
        "TypeError: streamCount: expects stream subject",
    );
    let r = s.get_bearer("/v2/notification?limit=10", &token(&me)).await;
    let subjects: Vec<&str> = r.body["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["two"], "{}", r.body);
}

async fn js_nk_friends_and_groups(b: Backend) {
    let s = TestServer::start_with(b, config).await;
    let me = s.device_session("js-nk-social-0001").await;
    let other = s.device_session("js-nk-social-0002").await;
    let (me_id, other_id) = (user_id(&me), user_id(&other));
    let out = call(&s, "nk_social", json!({"me": me_id, "other": other_id})).await;
    // An invite sent (state 1) and received (state 2), as Nakama's.
    assert_eq!(out["friends"], json!([[true, 1, {"since": 2024}]]), "{out}");
    assert_eq!(out["theirs"], 1);
    assert_eq!(out["status"], json!([[true, 1]]));
    assert_eq!(
        out["group"],
        json!(["js-nk-group", true, 10, 1, {"tag": "x"}, "00000000-0000-0000-0000-000000000000"])
    );
    assert_eq!(out["members"], json!([0, 2]));
    assert_eq!(out["renamed"], "changed");
    assert_eq!(out["mine"], json!([["js-nk-group-2", 0]]));
    assert_eq!(out["listed"], 1);
    assert_eq!(out["afterKick"], 1);
    assert_eq!(out["afterDelete"], 0);
    assert_eq!(out["afterUnfriend"], 0);
    starts(&out, "noName", "TypeError: groupCreate: expects group name");
}

async fn js_nk_utilities_and_sql(b: Backend) {
    let port = ludus_testkit::free_port();
    let s = TestServer::start_with(b, |c| {
        config(c);
        c.metrics.prometheus_port = port;
    })
    .await;
    let out = call(&s, "nk_util", json!({})).await;
    assert_eq!(out["inserted"], 1, "{out}");
    assert_eq!(
        out["rows"],
        json!([{"id": 1, "name": "ann", "score": 12.5}])
    );
    starts(&out, "badSql", "Error: failed to exec db query: ");
    assert_eq!(out["aes"], "secret  ");
    starts(&out, "badKey", "Error: expects key 16 bytes long");
    // HMAC-SHA256("key", "hello").
    assert_eq!(
        out["hmac"],
        "9307b3b915efb5171ff14d8cb55fbcc798c6c0ef1456d66ded1a6aa723a58b7b"
    );
    assert_eq!(
        out["jwt"].as_str().unwrap().split('.').next(),
        Some("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9")
    );
    assert_eq!(out["bcrypt"], true);
    assert_eq!(
        out["file"],
        "// The JS module of tests/http/js_nk.rs: one RPC per group of Nakama's JS"
    );
    starts(
        &out,
        "escape",
        "Error: failed to open file: ../js/index.js: the path must stay inside",
    );
    assert_eq!(out["cronPrev"], 1_700_002_800);
    assert_eq!(out["random"], 8);
    starts(&out, "satori", "Error: satori is not configured");
    // What the module recorded is on the exporter's page, as Lua's is.
    starts(
        &out,
        "badTags",
        "TypeError: metricsCounterAdd: expects tag values to be a string",
    );
    let page = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sample = |prefix: &str| {
        page.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{page}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    assert_eq!(sample("nakama_custom_js_nk_calls{"), 5.0);
    assert_eq!(sample("nakama_custom_js_nk_queue"), 7.5);
    assert_eq!(sample("nakama_custom_js_nk_work_count"), 1.0);
    assert!(
        !page.contains("js_nk_bad"),
        "refused arguments record nothing"
    );
}

async fn js_nk_leaderboards_and_tournaments(b: Backend) {
    let s = TestServer::start_with(b, config).await;
    let me = s.device_session("js-nk-boards-0001").await;
    let other = s.device_session("js-nk-boards-0002").await;
    let (me_id, other_id) = (user_id(&me), user_id(&other));
    let out = call(&s, "nk_boards", json!({"me": me_id, "other": other_id})).await;
    let board = &out["board"][0];
    assert_eq!(out["board"].as_array().unwrap().len(), 1, "{out}");
    assert_eq!(board["id"], "js-nk-board");
    assert_eq!(board["sortOrder"], 1);
    assert_eq!(board["operator"], "best");
    assert_eq!(board["authoritative"], true);
    assert_eq!(board["metadata"], json!({"season": 1}));
    assert_eq!(out["first"]["score"], 10);
    assert_eq!(out["first"]["subscore"], 1);
    assert_eq!(out["first"]["metadata"], json!({"run": 1}));
    assert_eq!(out["first"]["ownerId"], me_id.as_str());
    // "best" keeps 10 over 5; the other's 20 ranks first.
    assert_eq!(out["list"], json!([["other", 20, 1], ["me", 10, 2]]));
    // A score that is not better changes nothing, its count included.
    assert_eq!(out["owners"], json!([[true, 1]]));
    assert_eq!(out["cursors"], json!([null, null]));
    assert_eq!(out["haystack"], 2);
    assert_eq!(out["listed"], json!(["js-nk-board"]));
    assert_eq!(out["afterDelete"], 1);
    starts(
        &out,
        "badSort",
        "TypeError: leaderboardCreate: expects sort order to be 'asc' or 'desc'",
    );
    assert_eq!(
        out["cup"],
        json!([["Cup", 1, 10, true, "increment", null, true]])
    );
    assert_eq!(out["cupRecords"], json!([[7, 2]]));
    assert_eq!(out["cups"], json!(["js-nk-cup"]));
    starts(
        &out,
        "notJoined",
        "Error: error writing tournament record: ",
    );
    assert_eq!(out["cupsAfter"], 0);
    // The records are the server's, as REST lists them.
    let r = s
        .get_bearer("/v2/leaderboard/js-nk-board", &token(&me))
        .await;
    assert_eq!(
        r.body["records"][0]["owner_id"],
        me_id.as_str(),
        "{}",
        r.body
    );
}

both_backends!(
    js_nk_leaderboards_and_tournaments,
    js_nk_utilities_and_sql,
    js_nk_accounts_and_users,
    js_nk_authenticate_and_link,
    js_nk_storage_and_wallets,
    js_nk_notifications_chat_and_streams,
    js_nk_friends_and_groups,
    js_nk_export_import_and_notification_updates,
);

async fn js_nk_export_import_and_notification_updates(b: Backend) {
    let s = TestServer::start_with(b, config).await;
    let me = s.device_session("js-nk-porting-0001").await;
    let me_id = user_id(&me);
    let out = call(&s, "nk_porting", json!({"me": me_id})).await;
    assert_eq!(out["exported"], json!([me_id, 1, 1]), "{out}");
    assert_eq!(
        out["imported"],
        json!(["4a7b9c2d-1e3f-4a5b-8c6d-7e8f9a0b1c2d", "js_imported", 1])
    );
    assert_eq!(out["importedObjects"], 1);
    starts(
        &out,
        "importTwice",
        "Error: error importing account: user identifier already exists",
    );
    starts(
        &out,
        "badImport",
        "Error: error importing account: expects data to be a valid account export",
    );
    assert_eq!(out["updated"], json!(["updated", 2, 7]));
    starts(
        &out,
        "badUpdate",
        "TypeError: notificationsUpdate: expects 'id' value to be a valid id",
    );
    starts(&out, "badSendAll", "TypeError: notificationSendAll: ");
}
