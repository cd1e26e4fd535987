//! `nk.metrics_counter_add`, `nk.metrics_gauge_set` and
//! `nk.metrics_timer_record` from `tests/lua/metrics_test.lua`: what a
//! module records is on the exporter's page under Nakama's names for custom
//! metrics (`<prefix>_<custom_prefix>_<name>`), with its tags as labels.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, token};

both_backends!(server_series_reach_the_exporter);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lua_metrics_reach_the_exporter() {
    let port = ludus_testkit::free_port();
    let t = TestServer::start_with(Backend::Sqlite, |c| {
        crate::rpc::lua_config(c);
        c.metrics.prometheus_port = port;
    })
    .await;
    let s = t.device_session("lua-metrics-device").await;
    let r = t
        .post_bearer("/v2/rpc/lua_metrics", &token(&s), json!(""))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    assert!(
        out["bad_tags"]
            .as_str()
            .unwrap()
            .contains("bad argument #2: expects tags to be a table of strings"),
        "{out}"
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
    assert_eq!(sample("nakama_custom_lua_logins{"), 5.0);
    let logins = page
        .lines()
        .find(|l| l.starts_with("nakama_custom_lua_logins{"))
        .unwrap();
    assert!(logins.contains("mode=\"test\""), "{logins}");
    assert_eq!(sample("nakama_custom_lua_queue{"), 7.5);
    assert_eq!(sample("nakama_custom_lua_work_count{"), 1.0);
    assert!(
        !page.contains("lua_bad"),
        "refused arguments record nothing"
    );
}

/// The series read at scrape time or recorded off the request path: hooks
/// (`overall_before_*`, `overall_after_*`), presences, the Lua pool, the
/// matchmaker, the store's group commits and, on PostgreSQL, the pool; and
/// Nakama's labelled families (`count`, ... with `transport`, `rpc_id` and
/// `rpc_code`) for the REST, HTTP RPC and socket RPC answers made.
async fn server_series_reach_the_exporter(b: Backend) {
    let port = ludus_testkit::free_port();
    let t = TestServer::start_with(b, |c| {
        crate::rpc::lua_config(c);
        c.metrics.prometheus_port = port;
    })
    .await;
    let s = t.device_session("server-metrics-device").await;
    // storage_test.lua hooks WriteStorageObjects before and after.
    let r = t
        .put_bearer(
            "/v2/storage",
            &token(&s),
            json!({"objects": [{"collection": "metrics", "key": "k", "value": "{\"a\":1}"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let ws = format!(
        "ws://{}/ws?token={}",
        t.base.trim_start_matches("http://"),
        token(&s)
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(ws).await.unwrap();
    // An RPC over the socket counts as Nakama's WsRpc: under its id.
    use futures_util::{SinkExt as _, StreamExt as _};
    socket
        .send(tokio_tungstenite::tungstenite::Message::text(
            r#"{"cid":"1","rpc":{"id":"echo","payload":"hi"}}"#,
        ))
        .await
        .unwrap();
    let reply = socket.next().await.unwrap().unwrap();
    assert!(
        reply.to_text().unwrap().contains("\"cid\":\"1\""),
        "{reply}"
    );
    // Failures for the labelled families, each with the gRPC code of its
    // answer: an RPC refused by its module (code 7) over the socket and
    // over HTTP, a call without a valid token, and a before hook's refusal
    // with code 9, whose HTTP status (400) alone would say InvalidArgument.
    socket
        .send(tokio_tungstenite::tungstenite::Message::text(
            r#"{"cid":"2","rpc":{"id":"denied","payload":""}}"#,
        ))
        .await
        .unwrap();
    let reply = socket.next().await.unwrap().unwrap();
    let reply = reply.to_text().unwrap();
    assert!(
        reply.contains("\"cid\":\"2\"") && reply.contains("\"error\""),
        "{reply}"
    );
    let r = t.post_bearer("/v2/rpc/denied", &token(&s), json!("")).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = t.get_bearer("/v2/account", "not-a-token").await;
    assert_eq!(r.status, 401, "{}", r.body);
    let r = t
        .post_key(
            "/v2/account/authenticate/device",
            json!({"id": "erroring-device-1"}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let page = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sample = |name: &str| -> f64 {
        page.lines()
            .find(|l| l.starts_with(&format!("{name}{{")))
            .unwrap_or_else(|| panic!("no {name} in\n{page}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    let socket_rpc = page
        .lines()
        .find(|l| l.starts_with("nakama_Rpc_count{") && l.contains("rpc_id=\"echo\""))
        .unwrap_or_else(|| panic!("no socket rpc count in\n{page}"));
    assert!(socket_rpc.ends_with(" 1"), "{socket_rpc}");
    // Nakama's labelled families: each answer under its transport, id and
    // code.
    let labelled = |family: &str, transport: &str, id: &str, code: &str| -> f64 {
        let labels = format!("transport=\"{transport}\",rpc_id=\"{id}\",rpc_code=\"{code}\"}}");
        page.lines()
            .find(|l| l.starts_with(&format!("{family}{{")) && l.contains(&labels))
            .unwrap_or_else(|| panic!("no {family} with {labels} in\n{page}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    assert_eq!(labelled("nakama_count", "ws_rpc", "echo", "OK"), 1.0);
    assert_eq!(
        labelled("nakama_count", "ws_rpc", "denied", "PermissionDenied"),
        1.0
    );
    assert_eq!(
        labelled("nakama_count", "api_rpc", "denied", "PermissionDenied"),
        1.0
    );
    assert_eq!(
        labelled("nakama_count", "api", "GetAccount", "Unauthenticated"),
        1.0
    );
    assert_eq!(
        labelled(
            "nakama_count",
            "api",
            "AuthenticateDevice",
            "FailedPrecondition"
        ),
        1.0
    );
    assert!(labelled("nakama_count", "api", "AuthenticateDevice", "OK") >= 1.0);
    assert_eq!(
        labelled("nakama_recv_bytes", "ws_rpc", "echo", "OK"),
        2.0,
        "the payload's bytes"
    );
    assert_eq!(
        labelled("nakama_latency_count", "api", "WriteStorageObjects", "OK"),
        1.0
    );
    assert!(
        !page.contains("rpc_code=\"InvalidArgument\""),
        "no answer was InvalidArgument\n{page}"
    );
    assert_eq!(sample("nakama_AuthenticateDevice_errors"), 1.0);
    assert!(sample("nakama_overall_before_count") >= 1.0);
    assert!(sample("nakama_overall_after_count") >= 1.0);
    assert!(sample("nakama_overall_before_latency_ms_count") >= 1.0);
    // The before hook's refusal above, counted as Nakama's traceApiBefore does.
    assert_eq!(sample("nakama_overall_before_errors"), 1.0);
    assert!(
        sample("nakama_presences") >= 1.0,
        "the socket's notification stream"
    );
    assert!(sample("nakama_lua_runtimes") >= 1.0);
    assert_eq!(sample("nakama_javascript_runtimes"), 0.0);
    assert_eq!(sample("nakama_matchmaker_active_tickets"), 0.0);
    assert!(page.contains("# TYPE nakama_matchmaker_process_time summary"));
    // storage_index_test.lua declares indexes: each has its entry count.
    assert!(
        page.lines().any(
            |l| l.starts_with("nakama_storage_index_entry_count{") && l.contains("index_name=")
        ),
        "{page}"
    );
    assert!(sample("nakama_store_batches") >= 1.0);
    assert!(sample("nakama_store_batched_writes") >= sample("nakama_store_batches"));
    match b {
        Backend::Postgres => {
            assert!(sample("nakama_db_max_open_conns") >= 1.0);
            assert!(sample("nakama_db_total_open_conns") >= 1.0);
        }
        Backend::Sqlite => assert!(!page.contains("nakama_db_"), "sqlite has no pool"),
    }
    assert!(
        !page.contains("cluster_bus"),
        "one node has no bus to report"
    );
}
