//! Session tokens: refresh, logout (one token or all), forged, expired and
//! swapped tokens, and revocations that survive a restart.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ludus_core::token::{self, SessionClaims};
use serde_json::json;

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, claims, refresh_token, token, user_id};

both_backends!(
    refresh_issues_working_tokens,
    refresh_rules,
    swapped_tokens_are_refused,
    forged_expired_and_none_tokens_are_refused,
    logout_one_session,
    logout_all_sessions,
    logout_survives_restart,
);

async fn refresh_issues_working_tokens(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("device-refresh1").await;
    let r = t
        .post_key(
            "/v2/account/session/refresh",
            json!({"token": refresh_token(&s), "vars": {"k": "v"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.get("created").is_none());
    let c = claims(&token(&r.body));
    assert_eq!(c["uid"], user_id(&s));
    assert_eq!(c["vrs"], json!({"k": "v"}));
    assert_eq!(
        c["tid"],
        claims(&token(&s))["tid"],
        "refresh keeps the token id"
    );
    let account = t.get_bearer("/v2/account", &token(&r.body)).await;
    assert_eq!(account.status, 200);
    // Without vars the old ones are kept.
    let r2 = t
        .post_key(
            "/v2/account/session/refresh",
            json!({"token": refresh_token(&r.body)}),
        )
        .await;
    assert_eq!(claims(&token(&r2.body))["vrs"], json!({"k": "v"}));
}

async fn refresh_rules(b: Backend) {
    let t = TestServer::start(b).await;
    let r = t.post_key("/v2/account/session/refresh", json!({})).await;
    assert!(assert_error(&r, 400, 3).contains("required"));
    let r = t
        .post_key(
            "/v2/account/session/refresh",
            json!({"token": "not.a.token"}),
        )
        .await;
    assert_error(&r, 401, 16);
    let s = t.device_session("device-refresh2").await;
    let r = t
        .raw(
            t.http
                .post(t.url("/v2/account/session/refresh"))
                .json(&json!({"token": refresh_token(&s)})),
        )
        .await;
    assert_error(&r, 401, 16);
    // A deleted user cannot refresh.
    assert_eq!(t.delete_bearer("/v2/account", &token(&s)).await.status, 200);
    let r = t
        .post_key(
            "/v2/account/session/refresh",
            json!({"token": refresh_token(&s)}),
        )
        .await;
    assert_error(&r, 401, 16);
}

async fn swapped_tokens_are_refused(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("device-swap001").await;
    // A refresh token is signed with the refresh key: never an access token.
    let r = t.get_bearer("/v2/account", &refresh_token(&s)).await;
    assert_error(&r, 401, 16);
    // And an access token is no refresh token.
    let r = t
        .post_key("/v2/account/session/refresh", json!({"token": token(&s)}))
        .await;
    assert_error(&r, 401, 16);
}

fn signed(key: &str, uid: &str, iat: i64, exp: i64) -> String {
    let claims = SessionClaims {
        token_id: "forged".into(),
        user_id: uid.into(),
        username: "x".into(),
        vars: BTreeMap::new(),
        expires_at: exp,
        issued_at: iat,
    };
    token::sign(key.as_bytes(), &claims)
}

async fn forged_expired_and_none_tokens_are_refused(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("device-forge01").await;
    let uid = user_id(&s);
    let now = ludus_core::unix_now();
    // Correct key, but expired.
    let expired = signed(&t.config.session.encryption_key, &uid, now - 120, now - 60);
    let msg = assert_error(&t.get_bearer("/v2/account", &expired).await, 401, 16);
    assert!(msg.contains("expired"), "{msg}");
    // Correct claims, wrong key.
    let wrong = signed("not-the-key", &uid, now, now + 60);
    assert_error(&t.get_bearer("/v2/account", &wrong).await, 401, 16);
    // alg: none with no signature.
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = token(&s).split('.').nth(1).unwrap().to_owned();
    let none = format!("{header}.{payload}.");
    assert_error(&t.get_bearer("/v2/account", &none).await, 401, 16);
    // A real token with its payload swapped.
    let other = t.device_session("device-forge02").await;
    let mut parts: Vec<String> = token(&s).split('.').map(str::to_owned).collect();
    parts[1] = token(&other).split('.').nth(1).unwrap().to_owned();
    assert_error(
        &t.get_bearer("/v2/account", &parts.join(".")).await,
        401,
        16,
    );
    // Missing and garbage.
    let r = t.raw(t.http.get(t.url("/v2/account"))).await;
    assert!(assert_error(&r, 401, 16).contains("required"));
    assert_error(&t.get_bearer("/v2/account", "garbage").await, 401, 16);
}

async fn logout_one_session(b: Backend) {
    let t = TestServer::start(b).await;
    let a = t.device_session("device-logout1").await;
    let other = t.device_session("device-logout1").await;
    let r = t
        .post_bearer(
            "/v2/session/logout",
            &token(&a),
            json!({"token": token(&a), "refresh_token": refresh_token(&a)}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let msg = assert_error(&t.get_bearer("/v2/account", &token(&a)).await, 401, 16);
    assert!(msg.contains("revoked"), "{msg}");
    let r = t
        .post_key(
            "/v2/account/session/refresh",
            json!({"token": refresh_token(&a)}),
        )
        .await;
    assert_error(&r, 401, 16);
    // The user's other session is untouched.
    assert_eq!(
        t.get_bearer("/v2/account", &token(&other)).await.status,
        200
    );
    // Someone else's token cannot be logged out by this user.
    let stranger = t.device_session("device-logout2").await;
    let r = t
        .post_bearer(
            "/v2/session/logout",
            &token(&other),
            json!({"token": token(&stranger)}),
        )
        .await;
    assert_error(&r, 400, 3);
    assert_eq!(
        t.get_bearer("/v2/account", &token(&stranger)).await.status,
        200
    );
    let r = t
        .post_bearer(
            "/v2/session/logout",
            &token(&other),
            json!({"token": "garbage"}),
        )
        .await;
    assert_error(&r, 400, 3);
}

async fn logout_all_sessions(b: Backend) {
    let t = TestServer::start(b).await;
    let a = t.device_session("device-logall1").await;
    let b2 = t.device_session("device-logall1").await;
    let r = t
        .raw(
            t.http
                .post(t.url("/v2/session/logout"))
                .bearer_auth(token(&a)),
        )
        .await;
    assert_eq!(r.status, 200, "empty body logs out everything: {}", r.body);
    assert_error(&t.get_bearer("/v2/account", &token(&a)).await, 401, 16);
    assert_error(&t.get_bearer("/v2/account", &token(&b2)).await, 401, 16);
    let r = t
        .post_key(
            "/v2/account/session/refresh",
            json!({"token": refresh_token(&b2)}),
        )
        .await;
    assert_error(&r, 401, 16);
    // Signing in again right away works, even within the same second.
    let fresh = t.device_session("device-logall1").await;
    assert_eq!(
        t.get_bearer("/v2/account", &token(&fresh)).await.status,
        200
    );
    let r = t
        .post_key(
            "/v2/account/session/refresh",
            json!({"token": refresh_token(&fresh)}),
        )
        .await;
    assert_eq!(r.status, 200);
    // Regression: a second logout of everything in the same second missed
    // the tokens signed after the first (they carry the cutoff's next
    // second). It revokes them too.
    let r = t
        .raw(
            t.http
                .post(t.url("/v2/session/logout"))
                .bearer_auth(token(&fresh)),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&t.get_bearer("/v2/account", &token(&fresh)).await, 401, 16);
    let again = t.device_session("device-logall1").await;
    assert_eq!(
        t.get_bearer("/v2/account", &token(&again)).await.status,
        200,
        "and the next sign-in is not born revoked"
    );
}

async fn logout_survives_restart(b: Backend) {
    let mut t = TestServer::start(b).await;
    let out = t.device_session("device-restart").await;
    let kept = t.device_session("device-restart").await;
    let r = t
        .post_bearer(
            "/v2/session/logout",
            &token(&out),
            json!({"token": token(&out)}),
        )
        .await;
    assert_eq!(r.status, 200);
    t.restart().await;
    let again = t.device_session("device-restart").await;
    assert_eq!(
        user_id(&again),
        user_id(&out),
        "same device, same user after restart"
    );
    assert_error(&t.get_bearer("/v2/account", &token(&out)).await, 401, 16);
    assert_eq!(t.get_bearer("/v2/account", &token(&kept)).await.status, 200);
    // Logout-all survives a restart too.
    let r = t
        .raw(
            t.http
                .post(t.url("/v2/session/logout"))
                .bearer_auth(token(&kept)),
        )
        .await;
    assert_eq!(r.status, 200);
    t.restart().await;
    assert_error(&t.get_bearer("/v2/account", &token(&kept)).await, 401, 16);
    assert_error(&t.get_bearer("/v2/account", &token(&again)).await, 401, 16);
}
