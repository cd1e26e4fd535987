//! Storage search indexes declared by `tests/lua/storage_index_test.lua`, on
//! both backends: kept current across REST and Lua writes, updates and
//! deletes, the filter, `max_entries` eviction, filling from the store on
//! restart, queries, ordering, cursors and read permissions.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, token, user_id};

both_backends!(
    index_follows_rest_writes_updates_and_deletes,
    index_follows_lua_writes_and_deletes,
    filter_keeps_and_removes,
    max_entries_evicts_the_oldest,
    restart_fills_indexes_from_the_store,
    restart_fills_the_newest_up_to_max_entries,
    listing_pages_and_permissions,
    multi_update_indexes_only_what_commits,
    native_index_and_filter,
);

async fn rpc(t: &TestServer, session: &Value, id: &str, payload: Value) -> Value {
    let r = t
        .post_bearer(
            &format!("/v2/rpc/{id}"),
            &token(session),
            json!(payload.to_string()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap()
}

async fn list(t: &TestServer, s: &Value, args: Value) -> Value {
    let out = rpc(t, s, "idx_list", args).await;
    assert!(out.get("error").is_none(), "{out}");
    out
}

/// The keys of a listing, in order.
fn keys(out: &Value) -> Vec<String> {
    out["objects"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| o["key"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn put(t: &TestServer, s: &Value, collection: &str, key: &str, value: Value) {
    let r = t
        .put_bearer(
            "/v2/storage",
            &token(s),
            json!({"objects": [{"collection": collection, "key": key,
                "value": value.to_string(), "permission_read": 2, "permission_write": 1}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn server(b: Backend) -> TestServer {
    TestServer::start_with(b, crate::rpc::lua_config).await
}

async fn index_follows_rest_writes_updates_and_deletes(b: Backend) {
    let t = server(b).await;
    let a = t.device_session("a-index-rest-device").await;
    let c = t.device_session("c-index-rest-device").await;
    put(
        &t,
        &a,
        "idx_scores",
        "a",
        json!({"level": 5, "name": "ann", "secret": 1}),
    )
    .await;
    put(
        &t,
        &c,
        "idx_scores",
        "c",
        json!({"level": 10, "name": "cid"}),
    )
    .await;
    // Not indexed: another collection.
    put(&t, &a, "other", "a", json!({"level": 7})).await;
    let by_level =
        json!({"index": "idx_scores", "query": "+value.level:>=5", "order": ["-value.level"]});
    let out = list(&t, &a, by_level.clone()).await;
    assert_eq!(keys(&out), ["c", "a"]);
    // Not index-only: the whole stored value comes back, not only the fields.
    assert_eq!(out["objects"][1]["value"]["secret"], 1);
    assert_eq!(out["objects"][1]["user_id"], user_id(&a));

    put(
        &t,
        &a,
        "idx_scores",
        "a",
        json!({"level": 20, "name": "ann"}),
    )
    .await;
    assert_eq!(keys(&list(&t, &a, by_level.clone()).await), ["a", "c"]);
    let ascending = json!({"index": "idx_scores", "query": "*", "order": ["value.level"]});
    assert_eq!(keys(&list(&t, &a, ascending).await), ["c", "a"]);
    let low = json!({"index": "idx_scores", "query": "+value.level:<7"});
    assert_eq!(keys(&list(&t, &a, low).await), Vec::<String>::new());
    let named = json!({"index": "idx_scores", "query": "+value.name:cid"});
    assert_eq!(keys(&list(&t, &a, named).await), ["c"]);

    let r = t
        .put_bearer(
            "/v2/storage/delete",
            &token(&a),
            json!({"object_ids": [{"collection": "idx_scores", "key": "a"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(keys(&list(&t, &a, by_level).await), ["c"]);

    // Errors name the problem.
    let out = rpc(&t, &a, "idx_list", json!({"index": "nope"})).await;
    assert!(
        out["error"].as_str().unwrap().contains("not found"),
        "{out}"
    );
    let unsortable = json!({"index": "idx_scores", "order": ["value.name"]});
    let out = rpc(&t, &a, "idx_list", unsortable).await;
    assert!(
        out["error"].as_str().unwrap().contains("cannot order by"),
        "{out}"
    );
    let bad = json!({"index": "idx_scores", "query": "+value.level:>"});
    let out = rpc(&t, &a, "idx_list", bad).await;
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("invalid index query"),
        "{out}"
    );
    let out = rpc(&t, &a, "idx_register_late", json!({})).await;
    assert_eq!(out["ok"], false);
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("only allowed while modules load"),
        "{out}"
    );
}

async fn index_follows_lua_writes_and_deletes(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("index-lua-device-1").await;
    let me = user_id(&s);
    let write = |key: &str, level: i64| json!({"collection": "idx_scores", "key": key, "user_id": me, "value": {"level": level}});
    rpc(&t, &s, "idx_write", write("x", 1)).await;
    rpc(&t, &s, "idx_write", write("y", 2)).await;
    let all = json!({"index": "idx_scores", "order": ["-value.level"]});
    assert_eq!(keys(&list(&t, &s, all.clone()).await), ["y", "x"]);
    rpc(&t, &s, "idx_write", write("x", 3)).await;
    let out = list(&t, &s, all.clone()).await;
    assert_eq!(keys(&out), ["x", "y"]);
    assert_eq!(out["objects"][0]["value"]["level"], 3);
    let gone = json!({"collection": "idx_scores", "key": "y", "user_id": me});
    rpc(&t, &s, "idx_delete", gone).await;
    assert_eq!(keys(&list(&t, &s, all).await), ["x"]);
}

async fn filter_keeps_and_removes(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("index-filter-device").await;
    let all = json!({"index": "idx_filtered"});
    put(
        &t,
        &s,
        "idx_filtered",
        "p",
        json!({"level": 1, "banned": false}),
    )
    .await;
    put(
        &t,
        &s,
        "idx_filtered",
        "q",
        json!({"level": 2, "banned": true}),
    )
    .await;
    assert_eq!(keys(&list(&t, &s, all.clone()).await), ["p"]);
    // An update the filter refuses takes the object out of the index.
    put(
        &t,
        &s,
        "idx_filtered",
        "p",
        json!({"level": 1, "banned": true}),
    )
    .await;
    assert_eq!(keys(&list(&t, &s, all.clone()).await), Vec::<String>::new());
    put(
        &t,
        &s,
        "idx_filtered",
        "q",
        json!({"level": 2, "banned": false}),
    )
    .await;
    assert_eq!(keys(&list(&t, &s, all).await), ["q"]);
}

async fn max_entries_evicts_the_oldest(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("index-evict-device").await;
    let all = json!({"index": "idx_small", "order": ["value.n"]});
    for n in 1..=3 {
        put(&t, &s, "idx_small", &format!("k{n}"), json!({"n": n})).await;
    }
    assert_eq!(keys(&list(&t, &s, all.clone()).await), ["k1", "k2", "k3"]);
    // A fourth is over 110 % of max_entries 3: the oldest written goes.
    put(&t, &s, "idx_small", "k4", json!({"n": 4})).await;
    let out = list(&t, &s, all.clone()).await;
    assert_eq!(keys(&out), ["k2", "k3", "k4"]);
    // Index-only: values hold only the indexed fields.
    assert_eq!(out["objects"][0]["value"], json!({"n": 2}));
    // Rewriting an old entry makes it the newest: k3 is now the oldest.
    put(&t, &s, "idx_small", "k2", json!({"n": 2})).await;
    put(&t, &s, "idx_small", "k5", json!({"n": 5})).await;
    assert_eq!(keys(&list(&t, &s, all).await), ["k2", "k4", "k5"]);
}

async fn restart_fills_indexes_from_the_store(b: Backend) {
    let mut t = server(b).await;
    let s = t.device_session("index-restart-device").await;
    put(&t, &s, "idx_scores", "r1", json!({"level": 1})).await;
    put(&t, &s, "idx_scores", "r2", json!({"level": 2})).await;
    put(&t, &s, "idx_scores", "plain", json!({"other": 2})).await;
    put(&t, &s, "idx_filtered", "ok", json!({"level": 1})).await;
    put(
        &t,
        &s,
        "idx_filtered",
        "no",
        json!({"level": 1, "banned": true}),
    )
    .await;
    t.restart().await;
    let s = t.device_session("index-restart-device").await;
    let scores = json!({"index": "idx_scores", "order": ["-value.level"]});
    assert_eq!(keys(&list(&t, &s, scores).await), ["r2", "r1"]);
    // The filter applies when filling too.
    let filtered = json!({"index": "idx_filtered"});
    assert_eq!(keys(&list(&t, &s, filtered).await), ["ok"]);
}

async fn listing_pages_and_permissions(b: Backend) {
    let t = server(b).await;
    let a = t.device_session("a-index-pages-device").await;
    let c = t.device_session("c-index-pages-device").await;
    for n in 1..=3 {
        put(&t, &a, "idx_scores", &format!("p{n}"), json!({"level": n})).await;
    }
    // A private object of c's (read permission 1).
    let r = t
        .put_bearer(
            "/v2/storage",
            &token(&c),
            json!({"objects": [{"collection": "idx_scores", "key": "private",
                "value": "{\"level\":9}", "permission_read": 1}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let page = |cursor: &str| json!({"index": "idx_scores", "limit": 2, "order": ["-value.level"], "cursor": cursor});
    let first = list(&t, &a, page("")).await;
    assert_eq!(keys(&first), ["private", "p3"]);
    let cursor = first["cursor"].as_str().unwrap().to_owned();
    assert!(!cursor.is_empty());
    let second = list(&t, &a, page(&cursor)).await;
    assert_eq!(keys(&second), ["p2", "p1"]);
    assert_eq!(second["cursor"], "");
    // A cursor of another listing is refused.
    let other = json!({"index": "idx_scores", "limit": 2, "cursor": cursor});
    let out = rpc(&t, &a, "idx_list", other).await;
    assert!(
        out["error"].as_str().unwrap().contains("order mismatch"),
        "{out}"
    );
    // With a caller, only what that user may read.
    let as_a = json!({"index": "idx_scores", "order": ["-value.level"], "caller": user_id(&a)});
    assert_eq!(keys(&list(&t, &a, as_a).await), ["p3", "p2", "p1"]);
    let as_c = json!({"index": "idx_scores", "order": ["-value.level"], "caller": user_id(&c)});
    assert_eq!(
        keys(&list(&t, &c, as_c).await),
        ["private", "p3", "p2", "p1"]
    );
}

async fn restart_fills_the_newest_up_to_max_entries(b: Backend) {
    let mut t = server(b).await;
    let s = t.device_session("index-fill-max-device").await;
    for n in 1..=4 {
        put(&t, &s, "idx_small", &format!("k{n}"), json!({"n": n})).await;
    }
    // k1 was evicted while running; make it the newest in the store.
    for (key, time) in [("k1", 400), ("k2", 100), ("k3", 300), ("k4", 200)] {
        let age = json!({"collection": "idx_small", "key": key, "update_time": time});
        rpc(&t, &s, "idx_age", age).await;
    }
    t.restart().await;
    let s = t.device_session("index-fill-max-device").await;
    let all = json!({"index": "idx_small", "order": ["value.n"]});
    assert_eq!(keys(&list(&t, &s, all).await), ["k1", "k3", "k4"]);
}

async fn multi_update_indexes_only_what_commits(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("index-multi-device").await;
    put(&t, &s, "idx_scores", "old", json!({"level": 1})).await;
    let args = json!({"key": "new", "failed_key": "never", "delete": "old"});
    let out = rpc(&t, &s, "idx_multi", args).await;
    assert_eq!(out["failed"], true);
    let all = json!({"index": "idx_scores"});
    assert_eq!(keys(&list(&t, &s, all).await), ["new"]);
}

/// A native module's index, filter (odd `n` only) and listing RPC.
fn native_module() -> ludus_server::NativeModule {
    ludus_server::NativeModule::new()
        .storage_index(ludus_core::storage_index::IndexSpec {
            name: "native_idx".into(),
            collection: "idx_native".into(),
            key: String::new(),
            fields: vec!["n".into()],
            sort_fields: vec!["n".into()],
            max_entries: 10,
            index_only: false,
        })
        .storage_index_filter("native_idx", |o| o.value.contains("\"odd\":true"))
        .rpc("native_idx_list", |call, _payload| async move {
            let page = call
                .services
                .storage_index_list("native_idx", "*", 10, vec!["value.n".into()], None, "")
                .await?;
            let keys: Vec<String> = page.objects.into_iter().map(|o| o.key).collect();
            Ok(
                json!({"objects": keys.iter().map(|k| json!({"key": k})).collect::<Vec<_>>()})
                    .to_string(),
            )
        })
}

async fn native_index_and_filter(b: Backend) {
    let t = TestServer::start_native(b, native_module(), crate::rpc::lua_config).await;
    let s = t.device_session("index-native-device").await;
    put(&t, &s, "idx_native", "one", json!({"n": 1, "odd": true})).await;
    put(&t, &s, "idx_native", "two", json!({"n": 2, "odd": false})).await;
    put(&t, &s, "idx_native", "three", json!({"n": 3, "odd": true})).await;
    let out = rpc(&t, &s, "native_idx_list", json!({})).await;
    assert_eq!(keys(&out), ["one", "three"]);
}
