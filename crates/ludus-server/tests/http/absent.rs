//! Nakama's whole REST surface: every route of its `apigrpc.proto` is either
//! served or answers 501 with gRPC code 12 naming the absent feature, never
//! 404, so SDKs can tell "absent" from "not found".

use serde_json::json;

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token};

both_backends!(every_nakama_route_is_served_or_unimplemented);

/// `(method, path)` of every HTTP binding in Nakama 3.x's
/// `apigrpc/apigrpc.proto`, path parameters replaced by `x`.
const NAKAMA_ROUTES: &[(&str, &str)] = &[
    ("GET", "/healthcheck"),
    ("DELETE", "/v2/account"),
    ("GET", "/v2/account"),
    ("PUT", "/v2/account"),
    ("POST", "/v2/account/authenticate/apple"),
    ("POST", "/v2/account/authenticate/custom"),
    ("POST", "/v2/account/authenticate/device"),
    ("POST", "/v2/account/authenticate/email"),
    ("POST", "/v2/account/authenticate/facebook"),
    ("POST", "/v2/account/authenticate/facebookinstantgame"),
    ("POST", "/v2/account/authenticate/gamecenter"),
    ("POST", "/v2/account/authenticate/google"),
    ("POST", "/v2/account/authenticate/steam"),
    ("POST", "/v2/account/link/apple"),
    ("POST", "/v2/account/link/custom"),
    ("POST", "/v2/account/link/device"),
    ("POST", "/v2/account/link/email"),
    ("POST", "/v2/account/link/facebook"),
    ("POST", "/v2/account/link/facebookinstantgame"),
    ("POST", "/v2/account/link/gamecenter"),
    ("POST", "/v2/account/link/google"),
    ("POST", "/v2/account/link/steam"),
    ("POST", "/v2/account/session/refresh"),
    ("POST", "/v2/account/unlink/apple"),
    ("POST", "/v2/account/unlink/custom"),
    ("POST", "/v2/account/unlink/device"),
    ("POST", "/v2/account/unlink/email"),
    ("POST", "/v2/account/unlink/facebook"),
    ("POST", "/v2/account/unlink/facebookinstantgame"),
    ("POST", "/v2/account/unlink/gamecenter"),
    ("POST", "/v2/account/unlink/google"),
    ("POST", "/v2/account/unlink/steam"),
    ("GET", "/v2/channel/x"),
    ("POST", "/v2/event"),
    ("DELETE", "/v2/friend"),
    ("GET", "/v2/friend"),
    ("POST", "/v2/friend"),
    ("POST", "/v2/friend/block"),
    ("POST", "/v2/friend/facebook"),
    ("GET", "/v2/friend/friends"),
    ("POST", "/v2/friend/steam"),
    ("GET", "/v2/group"),
    ("POST", "/v2/group"),
    ("DELETE", "/v2/group/x"),
    ("PUT", "/v2/group/x"),
    ("POST", "/v2/group/x/add"),
    ("POST", "/v2/group/x/ban"),
    ("POST", "/v2/group/x/demote"),
    ("POST", "/v2/group/x/join"),
    ("POST", "/v2/group/x/kick"),
    ("POST", "/v2/group/x/leave"),
    ("POST", "/v2/group/x/promote"),
    ("GET", "/v2/group/x/user"),
    ("POST", "/v2/iap/purchase/apple"),
    ("POST", "/v2/iap/purchase/facebookinstant"),
    ("POST", "/v2/iap/purchase/google"),
    ("POST", "/v2/iap/purchase/huawei"),
    ("POST", "/v2/iap/purchase/samsung"),
    ("POST", "/v2/iap/subscription"),
    ("POST", "/v2/iap/subscription/apple"),
    ("POST", "/v2/iap/subscription/google"),
    ("GET", "/v2/iap/subscription/x"),
    ("DELETE", "/v2/leaderboard/x"),
    ("GET", "/v2/leaderboard/x"),
    ("POST", "/v2/leaderboard/x"),
    ("GET", "/v2/leaderboard/x/owner/x"),
    ("GET", "/v2/match"),
    ("GET", "/v2/matchmaker/stats"),
    ("DELETE", "/v2/notification"),
    ("GET", "/v2/notification"),
    ("GET", "/v2/party"),
    ("GET", "/v2/rpc/x"),
    ("POST", "/v2/rpc/x"),
    ("POST", "/v2/session/logout"),
    ("POST", "/v2/storage"),
    ("PUT", "/v2/storage"),
    ("PUT", "/v2/storage/delete"),
    ("GET", "/v2/storage/x"),
    ("GET", "/v2/storage/x/x"),
    ("GET", "/v2/tournament"),
    ("DELETE", "/v2/tournament/x"),
    ("GET", "/v2/tournament/x"),
    ("POST", "/v2/tournament/x"),
    ("PUT", "/v2/tournament/x"),
    ("POST", "/v2/tournament/x/join"),
    ("GET", "/v2/tournament/x/owner/x"),
    ("GET", "/v2/user"),
    ("GET", "/v2/user/x/group"),
];

/// Regression: Nakama routes Ludus does not serve answered 404 ("not found:
/// no such API path"), which SDKs read as "no such object".
async fn every_nakama_route_is_served_or_unimplemented(b: Backend) {
    let t = TestServer::start(b).await;
    let session = t.device_session("absent-route-device-1").await;
    let bearer = token(&session);
    for &(method, path) in NAKAMA_ROUTES {
        // Served, and they would end the session the loop goes on with.
        if (method, path) == ("DELETE", "/v2/account") || path == "/v2/session/logout" {
            continue;
        }
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let r = t
            .raw(
                t.http
                    .request(method.clone(), t.url(path))
                    .bearer_auth(&bearer)
                    .json(&json!({})),
            )
            .await;
        assert_ne!(
            r.body["message"], "not found: no such API path",
            "{method} {path} is a Nakama route"
        );
        if r.status == 501 {
            let message = assert_error(&r, 501, 12);
            assert!(
                message.ends_with("not available in this server yet"),
                "{method} {path}: {message}"
            );
        }
    }
    let r = t
        .post_bearer("/v2/friend/facebook", &bearer, json!({}))
        .await;
    assert_eq!(assert_error(&r, 400, 3), "facebook token is required");
    // Platform sign-in is served: unconfigured Steam says what to set.
    let r = t
        .post_bearer("/v2/account/link/steam", &bearer, json!({}))
        .await;
    assert_eq!(
        assert_error(&r, 400, 9),
        "steam authentication is not configured, set social.steam.publisher_key and social.steam.app_id"
    );
    // A path Nakama does not have either is still 404.
    let r = t.get_bearer("/v2/friendz", &bearer).await;
    assert_error(&r, 404, 5);
}
