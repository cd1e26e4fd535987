//! Events reach the modules' callbacks off the caller's path: a client's
//! `POST /v2/event` (marked external), a module's `nk.event`, and the start
//! and end of every socket session (Nakama's `register_event`,
//! `register_event_session_start` and `register_event_session_end`).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::both_backends;
use crate::client::{Fmt, WsClient, user};
use crate::support::{Backend, TestServer};

both_backends!(
    events_reach_the_modules_callbacks,
    events_reach_the_js_modules_callbacks
);

const MODULE: &str = r#"
local nk = require("nakama")
nk.register_event(function(ctx, evt)
  nk.localcache_put("event:" .. evt.name, (evt.properties.k or "") .. "|" .. tostring(evt.external)
    .. "|" .. (ctx.user_id or "") .. "|" .. ctx.execution_mode .. "|" .. tostring(evt.timestamp > 1600000000))
end)
nk.register_event_session_start(function(ctx, evt)
  nk.localcache_put("start:" .. ctx.user_id, evt.name .. "|" .. (ctx.session_id or ""))
end)
nk.register_event_session_end(function(ctx, evt)
  nk.localcache_put("end:" .. ctx.user_id, evt.name)
end)
nk.register_rpc(function(ctx, key) return nk.localcache_get(key, "") end, "events_cache_get")
nk.register_rpc(function(ctx, payload)
  nk.event("from_module", { k = payload })
  return ""
end, "events_emit")
"#;

/// The same callbacks in Nakama's JS API.
const JS_MODULE: &str = r#"
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerEvent(function (ctx, logger, nk, evt) {
    nk.localcachePut("event:" + evt.name, ((evt.properties || {}).k || "") + "|" + String(evt.external)
      + "|" + (ctx.userId || "") + "|" + ctx.executionMode + "|" + String(evt.timestamp > 1600000000));
  });
  initializer.registerEventSessionStart(function (ctx, logger, nk, evt) {
    nk.localcachePut("start:" + ctx.userId, evt.name + "|" + (ctx.sessionId || ""));
  });
  initializer.registerEventSessionEnd(function (ctx, logger, nk, evt) {
    nk.localcachePut("end:" + ctx.userId, evt.name);
  });
  initializer.registerRpc("events_cache_get", function (ctx, logger, nk, key) {
    return nk.localcacheGet(key, "");
  });
  initializer.registerRpc("events_emit", function (ctx, logger, nk, payload) {
    nk.event("from_module", { k: payload });
    return "";
  });
}
"#;

async fn rpc(server: &TestServer, id: &str, payload: &str) -> String {
    let url = server.url(&format!("/v2/rpc/{id}?http_key=defaulthttpkey&unwrap"));
    let r = server
        .raw(server.http.post(url).body(payload.to_owned()))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body.as_str().map(str::to_owned).unwrap_or_default()
}

/// What the callbacks left under `key`, once they have run (bounded wait:
/// the callbacks run on the event workers, after the caller was answered).
async fn eventually(server: &TestServer, key: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = rpc(server, "events_cache_get", key).await;
        if !got.is_empty() {
            return got;
        }
        assert!(Instant::now() < deadline, "no event callback wrote {key}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn events_reach_the_modules_callbacks(backend: Backend) {
    events_reach_callbacks(backend, "events.lua", MODULE).await;
}

async fn events_reach_the_js_modules_callbacks(backend: Backend) {
    events_reach_callbacks(backend, "index.js", JS_MODULE).await;
}

async fn events_reach_callbacks(backend: Backend, file: &str, module: &str) {
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join(file), module).unwrap();
    let path = modules.path().to_string_lossy().into_owned();
    let server = TestServer::start_with(backend, move |c| c.runtime.path = path).await;
    let (token, uid, _) = user(&server, "events-device-0001").await;

    // A client's event, with its caller in ctx.
    let r = server
        .post_bearer(
            "/v2/event",
            &token,
            json!({"name": "clicked", "properties": {"k": "v"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        eventually(&server, "event:clicked").await,
        format!("v|true|{uid}|event|true")
    );
    // A module's event is not external and has no caller.
    rpc(&server, "events_emit", "m").await;
    assert_eq!(
        eventually(&server, "event:from_module").await,
        "m|false||event|true"
    );
    // Bad input is refused and queues nothing.
    let r = server.post_bearer("/v2/event", &token, json!({})).await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = server
        .raw(
            server
                .http
                .post(server.url("/v2/event"))
                .json(&json!({"name": "x"})),
        )
        .await;
    assert_eq!(r.status, 401, "{}", r.body);

    // A socket session's start and end.
    let c = WsClient::connect(&server, &token, Fmt::Json).await;
    let started = eventually(&server, &format!("start:{uid}")).await;
    let (name, session_id) = started.split_once('|').unwrap();
    assert_eq!(name, "session_start");
    assert_eq!(session_id.len(), 36, "{started}");
    drop(c);
    assert_eq!(
        eventually(&server, &format!("end:{uid}")).await,
        "session_end"
    );
}
