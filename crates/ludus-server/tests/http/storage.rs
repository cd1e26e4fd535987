//! Storage objects over REST with Nakama's shapes: write, read, list (with
//! cursors), delete, the permission rules between two users, version
//! conflicts, bad input, and the storage hooks of the Lua module in
//! `tests/lua`.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    write_read_list_delete,
    other_users_see_only_public_objects,
    versions_conflicts_and_bad_input,
    listing_pages_and_cursors,
    storage_hooks_rewrite_reject_and_observe,
);

fn keys(objects: &Value) -> Vec<String> {
    let mut k: Vec<String> = objects
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| o["key"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    k.sort();
    k
}

async fn write_read_list_delete(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("storage-device-01").await;
    let (tok, me) = (token(&s), user_id(&s));
    let r = t
        .put_bearer(
            "/v2/storage",
            &tok,
            json!({"objects": [
                {"collection": "saves", "key": "slot1", "value": "{\"hp\":10}"},
                {"collection": "saves", "key": "slot2", "value": "{\"hp\":20}", "permission_read": 2, "permission_write": 1},
            ]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let acks = r.body["acks"].as_array().unwrap();
    assert_eq!(acks.len(), 2);
    assert_eq!(acks[0]["collection"], "saves");
    assert_eq!(acks[0]["key"], "slot1");
    assert_eq!(acks[0]["user_id"], me);
    // Nakama's version: the hex MD5 of the value as written.
    assert_eq!(
        acks[0]["version"],
        ludus_core::storage::version_of("{\"hp\":10}")
    );
    assert!(acks[0]["create_time"].as_str().unwrap().ends_with('Z'));

    let r = t
        .post_bearer(
            "/v2/storage",
            &tok,
            json!({"object_ids": [
                {"collection": "saves", "key": "slot1", "user_id": me},
                {"collection": "saves", "key": "slot2", "user_id": me},
                {"collection": "saves", "key": "nothing", "user_id": me},
            ]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let objects = r.body["objects"].as_array().unwrap();
    assert_eq!(keys(&r.body["objects"]), ["slot1", "slot2"]);
    let slot1 = objects.iter().find(|o| o["key"] == "slot1").unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(slot1["value"].as_str().unwrap()).unwrap(),
        json!({"hp": 10})
    );
    assert_eq!(slot1["permission_read"], 1);
    assert_eq!(slot1["permission_write"], 1);
    assert_eq!(slot1["version"], acks[0]["version"]);

    let r = t.get_bearer("/v2/storage/saves?limit=10", &tok).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Without a user id the listing is of public objects only.
    assert_eq!(keys(&r.body["objects"]), ["slot2"]);
    let r = t
        .get_bearer(&format!("/v2/storage/saves/{me}?limit=10"), &tok)
        .await;
    assert_eq!(keys(&r.body["objects"]), ["slot1", "slot2"]);
    assert!(r.body.get("cursor").is_none());

    let r = t
        .put_bearer(
            "/v2/storage/delete",
            &tok,
            json!({"object_ids": [{"collection": "saves", "key": "slot1"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, json!({}));
    let r = t
        .get_bearer(&format!("/v2/storage/saves/{me}?limit=10"), &tok)
        .await;
    assert_eq!(keys(&r.body["objects"]), ["slot2"]);
    // Deleting what is not there is refused.
    let r = t
        .put_bearer(
            "/v2/storage/delete",
            &tok,
            json!({"object_ids": [{"collection": "saves", "key": "slot1"}]}),
        )
        .await;
    assert_eq!(
        assert_error(&r, 400, 3),
        "storage delete rejected - not found, version check failed, or permission denied"
    );
}

async fn other_users_see_only_public_objects(b: Backend) {
    let t = TestServer::start(b).await;
    let ann = t.device_session("storage-device-ann").await;
    let bob = t.device_session("storage-device-bob").await;
    let ann_id = user_id(&ann);
    let r = t
        .put_bearer(
            "/v2/storage",
            &token(&ann),
            json!({"objects": [
                {"collection": "c", "key": "private", "value": "{}", "permission_read": 1},
                {"collection": "c", "key": "public", "value": "{}", "permission_read": 2},
                {"collection": "c", "key": "hidden", "value": "{}", "permission_read": 0, "permission_write": 0},
            ]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let ids = json!({"object_ids": [
        {"collection": "c", "key": "private", "user_id": ann_id},
        {"collection": "c", "key": "public", "user_id": ann_id},
        {"collection": "c", "key": "hidden", "user_id": ann_id},
    ]});
    let r = t
        .post_bearer("/v2/storage", &token(&bob), ids.clone())
        .await;
    assert_eq!(keys(&r.body["objects"]), ["public"]);
    let r = t.post_bearer("/v2/storage", &token(&ann), ids).await;
    assert_eq!(keys(&r.body["objects"]), ["private", "public"]);
    let r = t
        .get_bearer(&format!("/v2/storage/c/{ann_id}?limit=100"), &token(&bob))
        .await;
    assert_eq!(keys(&r.body["objects"]), ["public"]);
    // Ann cannot change or delete what only the server may write.
    let r = t
        .put_bearer(
            "/v2/storage",
            &token(&ann),
            json!({"objects": [{"collection": "c", "key": "hidden", "value": "{\"x\":1}"}]}),
        )
        .await;
    assert_eq!(
        assert_error(&r, 400, 3),
        "storage write rejected - permission denied"
    );
    let r = t
        .put_bearer(
            "/v2/storage/delete",
            &token(&ann),
            json!({"object_ids": [{"collection": "c", "key": "hidden"}]}),
        )
        .await;
    assert_error(&r, 400, 3);
    // Bob's writes land under his own id, whatever he names.
    let r = t
        .put_bearer(
            "/v2/storage",
            &token(&bob),
            json!({"objects": [{"collection": "c", "key": "public", "value": "{\"bob\":1}"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["acks"][0]["user_id"], user_id(&bob));
}

async fn versions_conflicts_and_bad_input(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("storage-device-02").await;
    let tok = token(&s);
    let write = |objects: Value| {
        let t = &t;
        let tok = tok.clone();
        async move {
            t.put_bearer("/v2/storage", &tok, json!({ "objects": objects }))
                .await
        }
    };
    let r =
        write(json!([{"collection": "c", "key": "k", "value": "{\"v\":1}", "version": "*"}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let version = r.body["acks"][0]["version"].as_str().unwrap().to_owned();

    let r =
        write(json!([{"collection": "c", "key": "k", "value": "{\"v\":2}", "version": "*"}])).await;
    assert_eq!(
        assert_error(&r, 400, 3),
        "storage write rejected - version check failed"
    );
    // A batch is all or nothing: the new object goes with the failed one.
    let r = write(json!([
        {"collection": "c", "key": "new", "value": "{}"},
        {"collection": "c", "key": "k", "value": "{\"v\":2}", "version": "stale"},
    ]))
    .await;
    assert_error(&r, 400, 3);
    let r =
        write(json!([{"collection": "c", "key": "k", "value": "{\"v\":2}", "version": version}]))
            .await;
    assert_eq!(r.status, 200, "{}", r.body);

    for (objects, message) in [
        (
            json!([{"collection": "c", "key": "x", "value": "[1, 2]"}]),
            "value must be a json object",
        ),
        (
            json!([{"collection": "c", "key": "x", "value": "{not json"}]),
            "value must be a json object: expected an object key at $",
        ),
        (
            json!([{"collection": "", "key": "x", "value": "{}"}]),
            "invalid collection or key value supplied, they must be set",
        ),
        (
            json!([{"collection": "c", "key": "x", "value": "{}", "permission_read": 3}]),
            "invalid read permission supplied, it must be either 0, 1 or 2",
        ),
        (
            json!([{"collection": "c", "key": "x", "value": "{}", "permission_write": 2}]),
            "invalid write permission supplied, it must be either 0 or 1",
        ),
    ] {
        let r = write(objects).await;
        assert_eq!(assert_error(&r, 400, 3), message);
    }
    let r = t
        .post_bearer(
            "/v2/storage",
            &tok,
            json!({"object_ids": [{"collection": "c", "key": "k", "user_id": "not-a-uuid"}]}),
        )
        .await;
    assert_eq!(
        assert_error(&r, 400, 3),
        "invalid user id - make sure user id is a valid uuid"
    );
    let me = user_id(&s);
    let r = t
        .get_bearer(&format!("/v2/storage/c/{me}?limit=10"), &tok)
        .await;
    assert_eq!(keys(&r.body["objects"]), ["k"]);
    let r = t.get_bearer("/v2/storage/c?limit=0", &tok).await;
    assert_eq!(
        assert_error(&r, 400, 3),
        "invalid limit - limit must be between 1 and 100"
    );
    let r = t.get_bearer("/v2/storage/c?limit=101", &tok).await;
    assert_error(&r, 400, 3);
    // An empty batch is a no-op, as in Nakama.
    let r = write(json!([])).await;
    assert_eq!(r.status, 200);
}

async fn listing_pages_and_cursors(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("storage-device-03").await;
    let tok = token(&s);
    let me = user_id(&s);
    let objects: Vec<Value> = (0..5)
        .map(|i| json!({"collection": "board", "key": format!("k{i}"), "value": "{}", "permission_read": 2}))
        .collect();
    let r = t
        .put_bearer("/v2/storage", &tok, json!({ "objects": objects }))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Nakama lists one object when no limit is given.
    let r = t.get_bearer("/v2/storage/board", &tok).await;
    assert_eq!(r.body["objects"].as_array().unwrap().len(), 1);

    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let r = t
            .get_bearer(&format!("/v2/storage/board?limit=2&cursor={cursor}"), &tok)
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        seen.extend(keys(&r.body["objects"]));
        match r.body.get("cursor").and_then(Value::as_str) {
            Some(c) => cursor = c.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, ["k0", "k1", "k2", "k3", "k4"]);

    let r = t.get_bearer("/v2/storage/board?limit=2", &tok).await;
    let cursor = r.body["cursor"].as_str().unwrap().to_owned();
    let r = t
        .get_bearer(&format!("/v2/storage/other?limit=2&cursor={cursor}"), &tok)
        .await;
    assert_error(&r, 400, 3);
    let r = t
        .get_bearer(
            &format!("/v2/storage/board/{me}?limit=2&cursor={cursor}"),
            &tok,
        )
        .await;
    assert_error(&r, 400, 3);
}

async fn storage_hooks_rewrite_reject_and_observe(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let s = t.device_session("storage-device-04").await;
    let tok = token(&s);
    // The before hook rejects the "blocked" collection (404) and stamps values.
    let r = t
        .put_bearer(
            "/v2/storage",
            &tok,
            json!({"objects": [{"collection": "blocked", "key": "k", "value": "{}"}]}),
        )
        .await;
    assert_error(&r, 404, 5);
    let r = t
        .put_bearer(
            "/v2/storage",
            &tok,
            json!({"objects": [{"collection": "stamped", "key": "k", "value": "{}"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let me = user_id(&s);
    let r = t
        .post_bearer(
            "/v2/storage",
            &tok,
            json!({"object_ids": [{"collection": "stamped", "key": "k", "user_id": me}]}),
        )
        .await;
    let value: Value =
        serde_json::from_str(r.body["objects"][0]["value"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"stamped": true}));
    let r = t
        .get_bearer(&format!("/v2/storage/stamped/{me}?limit=5"), &tok)
        .await;
    assert_eq!(r.status, 200);
    let r = t
        .put_bearer(
            "/v2/storage/delete",
            &tok,
            json!({"object_ids": [{"collection": "stamped", "key": "k"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // The after hooks saw every call.
    let r = t
        .raw(
            t.http
                .post(t.url("/v2/rpc/cache_get?http_key=defaulthttpkey"))
                .body("\"storage_after\""),
        )
        .await;
    assert_eq!(
        r.body["payload"],
        "write:stamped,read:1,list:stamped,delete:stamped"
    );
}
