//! `nk.metrics_counter_add`, `nk.metrics_gauge_set` and
//! `nk.metrics_timer_record` from `tests/lua/metrics_test.lua`: what a
//! module records is on the exporter's page under Nakama's names for custom
//! metrics (`<prefix>_<custom_prefix>_<name>`), with its tags as labels.

use serde_json::{Value, json};

use crate::support::{Backend, TestServer, token};

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
