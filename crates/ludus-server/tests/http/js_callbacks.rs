//! The JS schedule and shutdown callbacks on both backends, through the
//! real server: `registerLeaderboardReset` and `registerTournamentReset` at
//! the next minute's reset (Nakama's schedules are minutes, so this waits up
//! to a minute), `registerTournamentEnd` when that period's two seconds end,
//! and `registerShutdown` at a graceful stop, seen after a restart on the
//! same database.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer};

both_backends!(js_schedule_and_shutdown_callbacks_run_with_nakamas_arguments);

fn config(config: &mut ludus_server::Config) {
    config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js_callbacks").into();
    config.runtime.js_max_count = 2;
}

async fn rpc(s: &TestServer, id: &str, payload: &str) -> String {
    let url = s.url(&format!("/v2/rpc/{id}?http_key=defaulthttpkey&unwrap"));
    let r = s.raw(s.http.post(url).body(payload.to_owned())).await;
    assert_eq!(r.status, 200, "{id}: {}", r.body);
    // `unwrap` answers the payload itself: JSON parses, text stays text.
    match &r.body {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// What the callback noted under `key`, once it ran (bounded wait).
async fn seen(s: &TestServer, key: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let got = rpc(s, "cb_seen", key).await;
        if !got.is_empty() {
            return serde_json::from_str(&got).unwrap();
        }
        assert!(Instant::now() < deadline, "no callback noted {key}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn js_schedule_and_shutdown_callbacks_run_with_nakamas_arguments(b: Backend) {
    let mut s = TestServer::start_with(b, config).await;
    let created: Value = serde_json::from_str(&rpc(&s, "cb_setup", "").await).unwrap();
    let created = created["created"].as_i64().unwrap();

    // At the next minute the board and the tournament reset; a
    // tournament's period is active for its first two seconds, so it ends
    // two seconds later (the period running at creation had already ended:
    // Nakama's rule, as here, fires no end for it).
    let minute = (created / 60 + 1) * 60;
    let reset = seen(&s, "leaderboard_reset", Duration::from_secs(75)).await;
    assert_eq!(
        reset,
        json!({"id": "js-cb-board", "reset": minute, "mode": "leaderboard_reset"})
    );
    let cup = seen(&s, "tournament_reset", Duration::from_secs(15)).await;
    assert_eq!(cup["id"], "js-cb-cup", "{cup}");
    assert_eq!(cup["mode"], "tournament_reset");
    assert_eq!(cup["reset"], minute, "{cup}");
    let end = seen(&s, "tournament_end", Duration::from_secs(15)).await;
    assert_eq!(end["id"], "js-cb-cup", "{end}");
    assert_eq!(end["mode"], "tournament_end");
    assert_eq!(end["end"], minute + 2, "{end}");

    // A before hook rewrites a REST write, or turns it away; the after hook
    // sees the acks.
    let session = s.device_session("js-callbacks-device").await;
    let user = crate::support::user_id(&session);
    let write = |collection: &str| json!({"objects": [{"collection": collection, "key": "k", "value": "{\"n\":1}"}]});
    let r = s
        .put_bearer(
            "/v2/storage",
            &crate::support::token(&session),
            write("kept"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let after = seen(&s, "after_write", Duration::from_secs(5)).await;
    assert_eq!(after, json!({"user": user, "keys": ["k"]}));
    let r = s
        .get_bearer(
            &format!("/v2/storage/kept?user_id={user}"),
            &crate::support::token(&session),
        )
        .await;
    let value: Value =
        serde_json::from_str(r.body["objects"][0]["value"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"n": 1, "hooked": true}), "{}", r.body);
    let r = s
        .put_bearer(
            "/v2/storage",
            &crate::support::token(&session),
            write("refused"),
        )
        .await;
    assert_ne!(r.status, 200, "{}", r.body);
    let r = s
        .get_bearer(
            &format!("/v2/storage/refused?user_id={user}"),
            &crate::support::token(&session),
        )
        .await;
    assert_eq!(
        r.body["objects"].as_array().map(Vec::len).unwrap_or(0),
        0,
        "{}",
        r.body
    );

    // A graceful stop runs the shutdown callback; its write outlives it.
    assert_eq!(rpc(&s, "cb_shutdown", "").await, "");
    s.restart().await;
    let after: Value = serde_json::from_str(&rpc(&s, "cb_shutdown", "").await).unwrap();
    assert_eq!(after["mode"], "shutdown", "{after}");
}
