//! `/v2/rpc/{id}` against the JS module in `tests/js`: a session and the
//! http_key reach it, thrown errors become the client's code and message as
//! in Nakama, `nk.walletUpdate` writes through the real store on both
//! backends, and a JS storage index and its filter follow REST writes.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token};

pub(crate) fn js_config(config: &mut ludus_server::Config) {
    config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js").into();
    config.runtime.env = vec!["region=eu".into()];
    config.runtime.js_max_count = 2;
}

async fn js_rpc_with_a_session_and_the_http_key(backend: Backend) {
    let s = TestServer::start_with(backend, js_config).await;
    let session = s.device_session("js-rpc-device-0001").await;
    let body = Value::String("hello js".into()).to_string();
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/js_echo"))
                .bearer_auth(token(&session))
                .body(body.clone()),
        )
        .await;
    assert_eq!(
        (r.status, r.body.clone()),
        (200, json!({"payload": "hello js"}))
    );
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/JS_ECHO?http_key=defaulthttpkey"))
                .body(body.clone()),
        )
        .await;
    assert_eq!(r.body, json!({"payload": "hello js"}));

    // The caller reaches `ctx` under Nakama's JS names.
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/js_whoami"))
                .bearer_auth(token(&session))
                .body("\"\""),
        )
        .await;
    let me: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(me["mode"], "rpc");
    assert_eq!(me["env"], json!({"region": "eu"}));
    assert_eq!(me["userId"].as_str().unwrap().len(), 36, "{me}");
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/js_whoami?http_key=defaulthttpkey"))
                .body("\"\""),
        )
        .await;
    let me: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(me["userId"], Value::Null, "an http_key call has no user");
}

async fn js_rpc_errors_keep_the_thrown_code_and_message(backend: Backend) {
    let s = TestServer::start_with(backend, js_config).await;
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/js_denied?http_key=defaulthttpkey"))
                .body("\"\""),
        )
        .await;
    assert_error(&r, 403, 7);
    assert_eq!(r.body["message"], "nope, not for you");
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/js_broken?http_key=defaulthttpkey"))
                .body("\"\""),
        )
        .await;
    assert_error(&r, 500, 13);
    assert_eq!(r.body["message"], "broken on purpose");
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/js_missing?http_key=defaulthttpkey"))
                .body("\"\""),
        )
        .await;
    assert_error(&r, 404, 5);
}

async fn js_wallet_update_writes_through_the_store(backend: Backend) {
    let s = TestServer::start_with(backend, js_config).await;
    let session = s.device_session("js-rpc-device-0002").await;
    for (coins, before, after) in [(5, 0, 5), (7, 5, 12)] {
        let r = s
            .raw(
                s.http
                    .post(s.url("/v2/rpc/js_earn"))
                    .bearer_auth(token(&session))
                    .body(Value::String(json!({"coins": coins}).to_string()).to_string()),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let answer: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
        assert_eq!(answer, json!({"coins": after, "before": before}));
    }
    let r = s
        .raw(
            s.http
                .get(s.url("/v2/account"))
                .bearer_auth(token(&session)),
        )
        .await;
    let wallet: Value = serde_json::from_str(r.body["wallet"].as_str().unwrap()).unwrap();
    assert_eq!(wallet, json!({"coins": 12}));
    // Spending more than the wallet holds is refused, and changes nothing.
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/js_earn"))
                .bearer_auth(token(&session))
                .body(Value::String(json!({"coins": -100}).to_string()).to_string()),
        )
        .await;
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("failed to update user wallet"),
        "{}",
        r.body
    );
    let r = s
        .raw(
            s.http
                .get(s.url("/v2/account"))
                .bearer_auth(token(&session)),
        )
        .await;
    let wallet: Value = serde_json::from_str(r.body["wallet"].as_str().unwrap()).unwrap();
    assert_eq!(wallet, json!({"coins": 12}));
}

both_backends!(
    js_storage_index_and_filter_follow_writes,
    js_rpc_with_a_session_and_the_http_key,
    js_rpc_errors_keep_the_thrown_code_and_message,
    js_wallet_update_writes_through_the_store,
);

async fn js_storage_index_and_filter_follow_writes(backend: Backend) {
    let s = TestServer::start_with(backend, js_config).await;
    let session = s.device_session("js-index-device-0001").await;
    for (key, tier) in [("ann", "gold"), ("bob", "tin"), ("cy", "gold")] {
        let r = s
            .put_bearer(
                "/v2/storage",
                &token(&session),
                json!({"objects": [{"collection": "js_profiles", "key": key,
                    "value": json!({"tier": tier, "name": key}).to_string(),
                    "permission_read": 2, "permission_write": 1}]}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let list = |query: &str| {
        s.http
            .post(s.url("/v2/rpc/js_index_keys?http_key=defaulthttpkey&unwrap"))
            .body(query.to_owned())
    };
    let r = s.raw(list("*")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Bob is tin: the JS filter kept him out of the index.
    assert_eq!(r.body, json!(["ann", "cy"]));
    let r = s.raw(list("+value.name:cy")).await;
    assert_eq!(r.body, json!(["cy"]));
}
