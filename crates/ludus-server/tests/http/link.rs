//! Linking and unlinking the identities Ludus has (device, email, custom
//! id) over REST: linked identities sign in to the same account, another
//! account's identity is refused, the last identity stays and hooks run.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    linked_identities_sign_in_to_one_account,
    link_refusals_and_the_last_identity,
    link_hooks_run,
    lua_links_with_nakamas_shapes,
);

/// Signs in without creating and answers the user id.
async fn sign_in(t: &TestServer, kind: &str, body: Value) -> Result<String, u16> {
    let r = t
        .post_key(
            &format!("/v2/account/authenticate/{kind}?create=false"),
            body,
        )
        .await;
    if r.status == 200 {
        Ok(user_id(&r.body))
    } else {
        Err(r.status)
    }
}

async fn linked_identities_sign_in_to_one_account(b: Backend) {
    let t = TestServer::start(b).await;
    let s = t.device_session("link-first-device").await;
    let (me, tk) = (user_id(&s), token(&s));
    for (path, body) in [
        ("link/device", json!({"id": "link-second-device"})),
        ("link/custom", json!({"id": "link-custom-01"})),
        (
            "link/email",
            json!({"email": "Linker@Example.com", "password": "password-01"}),
        ),
    ] {
        let r = t
            .post_bearer(&format!("/v2/account/{path}"), &tk, body)
            .await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert_eq!(r.body, json!({}));
    }
    let r = t.get_bearer("/v2/account", &tk).await;
    assert_eq!(
        r.body["devices"],
        json!([{"id": "link-first-device"}, {"id": "link-second-device"}])
    );
    assert_eq!(r.body["custom_id"], "link-custom-01");
    assert_eq!(r.body["email"], "linker@example.com");
    for (kind, body) in [
        ("device", json!({"id": "link-second-device"})),
        ("custom", json!({"id": "link-custom-01"})),
        (
            "email",
            json!({"email": "linker@example.com", "password": "password-01"}),
        ),
    ] {
        assert_eq!(sign_in(&t, kind, body).await, Ok(me.clone()), "{kind}");
    }

    // Unlinked identities no longer sign in; the email's password goes too.
    for (path, body) in [
        ("unlink/device", json!({"id": "link-first-device"})),
        ("unlink/email", json!({"email": "LINKER@example.com"})),
    ] {
        let r = t
            .post_bearer(&format!("/v2/account/{path}"), &tk, body)
            .await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
    assert_eq!(
        sign_in(&t, "device", json!({"id": "link-first-device"})).await,
        Err(404)
    );
    assert_eq!(
        sign_in(
            &t,
            "email",
            json!({"email": "linker@example.com", "password": "password-01"})
        )
        .await,
        Err(404)
    );
    let r = t.get_bearer("/v2/account", &tk).await;
    assert_eq!(r.body["devices"], json!([{"id": "link-second-device"}]));
    assert!(r.body.get("email").is_none(), "{}", r.body);
}

async fn link_refusals_and_the_last_identity(b: Backend) {
    let t = TestServer::start(b).await;
    let owner = t.device_session("owner-device-0001").await;
    let r = t
        .post_bearer(
            "/v2/account/link/custom",
            &token(&owner),
            json!({"id": "owned-custom"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let s = t.device_session("other-device-0001").await;
    let tk = token(&s);
    for (path, body, message) in [
        (
            "link/device",
            json!({"id": "owner-device-0001"}),
            "device id is already in use",
        ),
        (
            "link/custom",
            json!({"id": "owned-custom"}),
            "custom id is already in use",
        ),
    ] {
        let r = t
            .post_bearer(&format!("/v2/account/{path}"), &tk, body)
            .await;
        assert_eq!(assert_error(&r, 409, 6), message);
    }
    // Nakama's input rules.
    for (path, body) in [
        ("link/device", json!({"id": "short"})),
        ("link/custom", json!({"id": ""})),
        ("link/email", json!({"email": "x@y.zz"})),
        (
            "link/email",
            json!({"email": "not-an-email", "password": "password-01"}),
        ),
        ("unlink/device", json!({})),
    ] {
        let r = t
            .post_bearer(&format!("/v2/account/{path}"), &tk, body)
            .await;
        assert_error(&r, 400, 3);
    }
    // The only identity stays; so does another account's.
    let last = "cannot unlink the last account identifier, check the profile exists and keeps another link";
    for (path, body) in [
        ("unlink/device", json!({"id": "other-device-0001"})),
        ("unlink/device", json!({"id": "owner-device-0001"})),
        ("unlink/custom", json!({"id": "owned-custom"})),
    ] {
        let r = t
            .post_bearer(&format!("/v2/account/{path}"), &tk, body)
            .await;
        assert_eq!(assert_error(&r, 403, 7), last, "{path}");
    }
    assert_eq!(
        sign_in(&t, "device", json!({"id": "other-device-0001"})).await,
        Ok(user_id(&s))
    );
    assert_eq!(
        sign_in(&t, "custom", json!({"id": "owned-custom"})).await,
        Ok(user_id(&owner))
    );
    // A platform token that is not one is refused (`platform_sign_in.rs`
    // has the rest).
    let r = t
        .post_bearer("/v2/account/link/google", &tk, json!({"token": "t"}))
        .await;
    assert_error(&r, 401, 16);
    // Without a session, nothing.
    let r = t
        .post_bearer("/v2/account/link/custom", "bad", json!({"id": "custom-x"}))
        .await;
    assert_eq!(r.status, 401);
}

async fn link_hooks_run(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let s = t.device_session("hook-link-device1").await;
    let tk = token(&s);
    let r = t
        .post_bearer("/v2/account/link/custom", &tk, json!({"id": "by-client"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t.get_bearer("/v2/account", &tk).await;
    assert_eq!(
        r.body["custom_id"], "by-client-hooked",
        "the before hook chose the id"
    );
    let r = t
        .post_bearer("/v2/account/unlink/custom", &tk, json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .raw(
            t.http
                .post(t.url("/v2/rpc/cache_get?http_key=defaulthttpkey"))
                .body("\"after_unlink_custom\""),
        )
        .await;
    assert_eq!(r.body["payload"], "any", "the after hook ran");
}

async fn lua_links_with_nakamas_shapes(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let s = t.device_session("lua-first-device").await;
    let r = t
        .post_bearer("/v2/rpc/lua_links", &token(&s), json!("lua-first-device"))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    for call in [
        "link_device",
        "link_custom",
        "link_email",
        "unlink_email_any",
        "unlink_custom_named",
        "unlink_first_device",
    ] {
        assert_eq!(out[call], "ok", "{call}: {out}");
    }
    let text = |call: &str| out[call].as_str().unwrap().to_owned();
    assert!(text("link_bad_user").contains("valid identifier"), "{out}");
    assert!(
        text("link_short_device").contains("error linking: device id invalid"),
        "{out}"
    );
    assert!(
        text("unlink_last_device").contains("error unlinking: cannot unlink the last"),
        "{out}"
    );
    // What Lua linked signs in; what it unlinked does not.
    assert_eq!(
        sign_in(&t, "device", json!({"id": "lua-linked-device"})).await,
        Ok(user_id(&s))
    );
    for (kind, body) in [
        ("device", json!({"id": "lua-first-device"})),
        ("custom", json!({"id": "lua-custom-01"})),
        (
            "email",
            json!({"email": "lua@example.com", "password": "password-01"}),
        ),
    ] {
        assert_eq!(sign_in(&t, kind, body).await, Err(404), "{kind}");
    }
}
