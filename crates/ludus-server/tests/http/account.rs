//! The caller's account and other users' profiles.

use serde_json::json;

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    get_account_shape,
    update_account_fields,
    update_rules_and_clashes,
    delete_account,
    get_users_by_id_and_username,
);

async fn get_account_shape(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("device-acct001").await;
    let r = t.get_bearer("/v2/account", &token(&s)).await;
    assert_eq!(r.status, 200);
    let a = &r.body;
    assert_eq!(a["user"]["id"], user_id(&s));
    assert_eq!(a["devices"], json!([{"id": "device-acct001"}]));
    assert_eq!(a["wallet"], "{}");
    assert_eq!(a["user"]["metadata"], "{}");
    assert_eq!(a["user"]["lang_tag"], "en");
    let created = a["user"]["create_time"].as_str().unwrap();
    assert!(
        created.ends_with('Z') && created.contains('T'),
        "RFC 3339 time: {created}"
    );
    assert!(
        a["user"].get("edge_count").is_none(),
        "zero values are omitted"
    );
    assert!(a["user"].get("online").is_none());
    assert!(a.get("email").is_none());
    assert!(a.get("disable_time").is_none());
}

async fn update_account_fields(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("device-acct002").await;
    let r = t
        .put_bearer(
            "/v2/account",
            &token(&s),
            json!({"display_name": "Aria", "avatar_url": "https://a/b.png", "lang_tag": "fr", "location": "Paris", "timezone": "Europe/Paris", "username": "aria"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, json!({}));
    let a = t.get_bearer("/v2/account", &token(&s)).await.body;
    assert_eq!(a["user"]["display_name"], "Aria");
    assert_eq!(a["user"]["avatar_url"], "https://a/b.png");
    assert_eq!(a["user"]["lang_tag"], "fr");
    assert_eq!(a["user"]["location"], "Paris");
    assert_eq!(a["user"]["timezone"], "Europe/Paris");
    assert_eq!(a["user"]["username"], "aria");
    // A partial update leaves the other fields alone.
    let r = t
        .put_bearer("/v2/account", &token(&s), json!({"location": "Lyon"}))
        .await;
    assert_eq!(r.status, 200);
    let a = t.get_bearer("/v2/account", &token(&s)).await.body;
    assert_eq!(a["user"]["location"], "Lyon");
    assert_eq!(a["user"]["display_name"], "Aria");
}

async fn update_rules_and_clashes(b: Backend) {
    let t = TestServer::start(b).await;
    let first = t
        .post_key(
            "/v2/account/authenticate/device?username=taken",
            json!({"id": "device-acct003"}),
        )
        .await;
    assert_eq!(first.status, 200);
    let s = t.device_session("device-acct004").await;
    let before = t.get_bearer("/v2/account", &token(&s)).await.body;
    let r = t
        .put_bearer(
            "/v2/account",
            &token(&s),
            json!({"username": "taken", "display_name": "Nope"}),
        )
        .await;
    assert_error(&r, 409, 6);
    let after = t.get_bearer("/v2/account", &token(&s)).await.body;
    assert_eq!(before["user"]["username"], after["user"]["username"]);
    assert!(
        after["user"].get("display_name").is_none(),
        "a failed update changes nothing"
    );
    let r = t
        .put_bearer("/v2/account", &token(&s), json!({"username": "has space"}))
        .await;
    assert_error(&r, 400, 3);
    let r = t
        .put_bearer(
            "/v2/account",
            &token(&s),
            json!({"display_name": "x".repeat(300)}),
        )
        .await;
    assert!(assert_error(&r, 400, 3).contains("display_name"));
    let r = t
        .put_bearer("/v2/account", &token(&s), json!({"display_name": 5}))
        .await;
    assert_error(&r, 400, 3);
}

async fn delete_account(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("device-acct005").await;
    assert_eq!(t.delete_bearer("/v2/account", &token(&s)).await.status, 200);
    assert_error(&t.get_bearer("/v2/account", &token(&s)).await, 401, 16);
    let r = t
        .post_key(
            "/v2/account/authenticate/device?create=false",
            json!({"id": "device-acct005"}),
        )
        .await;
    assert_error(&r, 404, 5);
    let again = t.device_session("device-acct005").await;
    assert_eq!(again["created"], true);
    assert_ne!(user_id(&again), user_id(&s));
}

async fn get_users_by_id_and_username(b: Backend) {
    let t = TestServer::start(b).await;
    let a = t
        .post_key(
            "/v2/account/authenticate/device?username=alpha",
            json!({"id": "device-users01"}),
        )
        .await
        .body;
    let bb = t
        .post_key(
            "/v2/account/authenticate/device?username=beta",
            json!({"id": "device-users02"}),
        )
        .await
        .body;
    let path = format!(
        "/v2/user?ids={}&usernames=beta&usernames=alpha&usernames=ghost",
        user_id(&a)
    );
    let r = t.get_bearer(&path, &token(&a)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut names: Vec<String> = r.body["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["alpha", "beta"],
        "each user once, unknown names skipped"
    );
    let r = t
        .get_bearer(&format!("/v2/user?ids={}", user_id(&bb)), &token(&a))
        .await;
    assert_eq!(r.body["users"][0]["id"], user_id(&bb));
    let r = t.get_bearer("/v2/user?ids=not-a-uuid", &token(&a)).await;
    assert!(assert_error(&r, 400, 3).contains("not-a-uuid"));
    let r = t.get_bearer("/v2/user", &token(&a)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({}), "no users: an empty object");
    let r = t.raw(t.http.get(t.url("/v2/user?ids=x"))).await;
    assert_error(&r, 401, 16);
}
