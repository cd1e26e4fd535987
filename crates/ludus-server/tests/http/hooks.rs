//! Before and after hooks on the REST API, from the Lua module in
//! `tests/lua`: rewriting a request, rejecting it (404), failing it with a
//! code, and after hooks seeing request and response.

use serde_json::json;

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, claims, token, user_id};

async fn server(backend: Backend) -> TestServer {
    TestServer::start_with(backend, crate::rpc::lua_config).await
}

async fn cache(s: &TestServer, key: &str) -> String {
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/cache_get?http_key=defaulthttpkey"))
                .body(format!("\"{key}\"")),
        )
        .await;
    r.body["payload"].as_str().unwrap().to_owned()
}

async fn before_hook_rewrites_and_rejects(backend: Backend) {
    let s = server(backend).await;
    let session = s.device_session("abcd-device-0001").await;
    assert_eq!(
        claims(&token(&session))["usn"],
        "hookedabcd",
        "the hook chose the username"
    );
    assert_eq!(cache(&s, "after_auth").await, "abcd-device-0001:true");

    let r = s
        .post_key(
            "/v2/account/authenticate/device",
            json!({"id": "blocked-device-01"}),
        )
        .await;
    assert_eq!(assert_error(&r, 404, 5), "requested resource was not found");
    let r = s
        .post_key(
            "/v2/account/authenticate/device",
            json!({"id": "erroring-device-1"}),
        )
        .await;
    assert_eq!(assert_error(&r, 400, 9), "device not allowed");

    // A hook that returns nil for a call with a request rejects it too.
    let r = s
        .get_bearer(
            "/v2/user?ids=00000000-0000-0000-0000-000000000000",
            &token(&session),
        )
        .await;
    assert_error(&r, 404, 5);
}

async fn hooks_on_account_calls(backend: Backend) {
    let s = server(backend).await;
    let session = s.device_session("efgh-device-0001").await;
    let t = token(&session);
    let r = s
        .put_bearer("/v2/account", &t, json!({"display_name": "quiet"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = s.get_bearer("/v2/account", &t).await;
    assert_eq!(
        r.body["user"]["display_name"], "QUIET",
        "the before hook rewrote it"
    );
    assert_eq!(
        cache(&s, "after_get_account").await,
        format!("{}:hookedefgh", user_id(&session))
    );
}

/// Regression: `ListChannelMessages`, `ListNotifications`,
/// `DeleteNotifications` and `GetMatchmakerStats` ran no hooks at all.
async fn hooks_on_chat_notification_and_matchmaker_calls(backend: Backend) {
    let s = server(backend).await;
    let session = s.device_session("ijkl-device-0001").await;
    let t = token(&session);
    let me = user_id(&session);

    let r = s.get_bearer("/v2/channel/2...hooked?limit=7", &t).await;
    assert_eq!(
        assert_error(&r, 400, 3),
        "limit seven is refused by the hook"
    );
    let r = s.get_bearer("/v2/channel/2...hooked", &t).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(cache(&s, "before_channel").await, "2...hooked");
    assert_eq!(cache(&s, "after_channel").await, "2...hooked");

    let r = s.get_bearer("/v2/notification?limit=13", &t).await;
    assert_error(&r, 404, 5);
    assert_eq!(cache(&s, "after_notifications").await, "nil");
    let r = s.get_bearer("/v2/notification", &t).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(cache(&s, "after_notifications").await, me);

    let id = "00000000-0000-0000-0000-00000000000a";
    let r = s
        .delete_bearer(&format!("/v2/notification?ids={id}"), &t)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(cache(&s, "before_delete_notifications").await, "1");
    assert_eq!(cache(&s, "after_delete_notifications").await, id);

    let r = s.get_bearer("/v2/matchmaker/stats", &t).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(cache(&s, "before_matchmaker_stats").await, me);
    assert_eq!(cache(&s, "after_matchmaker_stats").await, "0");
}

/// `ListFriends` answers with JSON written from the page without the wire
/// types; its after hook must still get the response as the client does.
async fn after_hook_sees_the_friend_list(backend: Backend) {
    let s = server(backend).await;
    let ann = s.device_session("mnop-device-0001").await;
    let bob = s.device_session("qrst-device-0001").await;
    let r = s
        .post_bearer(
            &format!("/v2/friend?ids={}", user_id(&bob)),
            &token(&ann),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = s.get_bearer("/v2/friend?limit=5", &token(&ann)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["friends"][0]["user"]["id"], user_id(&bob).as_str());
    assert_eq!(
        cache(&s, "after_list_friends").await,
        format!("1:{}:1:5", user_id(&bob))
    );
}

both_backends!(
    before_hook_rewrites_and_rejects,
    hooks_on_account_calls,
    hooks_on_chat_notification_and_matchmaker_calls,
    after_hook_sees_the_friend_list,
);
