//! The admin console on its own port: sign-in of the root user and of
//! console users, lockout, expiry and sign-out of console sessions, console
//! users and their invitation codes, the ACL on every call, bad input, and
//! Nakama's console calls not served yet.

use ludus_core::console::ConsoleClaims;
use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, Reply, TestServer, assert_error, claims, token, user_id};

both_backends!(
    root_signs_in_with_nakamas_claims,
    wrong_credentials_and_bad_tokens_are_refused,
    repeated_failures_lock_the_account,
    expired_and_foreign_tokens_are_refused,
    sign_out_ends_the_session,
    root_by_http_basic,
    console_users_from_invitation_to_deletion,
    every_user_call_checks_the_acl,
    bad_user_input_answers_4xx,
    unserved_console_calls_answer_501,
    accounts_list_get_ban_unban_and_delete,
    account_friends_and_groups,
    account_calls_check_the_acl_and_ids,
    default_password_is_refused_on_a_public_interface,
);

pub(crate) const ROOT: (&str, &str) = ("admin", "password");
const OPS_PASSWORD: &str = "a long ops password";

pub(crate) async fn call(
    t: &TestServer,
    method: &str,
    path: &str,
    token: &str,
    body: Value,
) -> Reply {
    let url = format!("{}{}", t.console, path);
    let req = t
        .http
        .request(method.parse().unwrap(), url)
        .bearer_auth(token)
        .json(&body);
    t.raw(req).await
}

async fn sign_in(t: &TestServer, username: &str, password: &str) -> Reply {
    let url = format!("{}/v2/console/authenticate", t.console);
    t.raw(
        t.http
            .post(url)
            .json(&json!({"username": username, "password": password})),
    )
    .await
}

pub(crate) async fn root_token(t: &TestServer) -> String {
    let r = sign_in(t, ROOT.0, ROOT.1).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["token"].as_str().unwrap().to_owned()
}

/// Adds a console user with `acl`, sets its password with the invitation
/// code and answers its session token.
pub(crate) async fn add_user(t: &TestServer, by: &str, name: &str, acl: Value) -> String {
    let r = call(
        t,
        "POST",
        "/v2/console/user",
        by,
        json!({"username": name, "email": format!("{name}@example.com"), "acl": acl}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let code = r.body["token"].as_str().unwrap().to_owned();
    let r = call(
        t,
        "POST",
        "/v2/console/authenticate/password_change",
        "",
        json!({"code": code, "password": OPS_PASSWORD}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = sign_in(t, name, OPS_PASSWORD).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["token"].as_str().unwrap().to_owned()
}

pub(crate) fn perm(read: bool, write: bool, delete: bool) -> Value {
    json!({"read": read, "write": write, "delete": delete})
}

async fn root_signs_in_with_nakamas_claims(b: Backend) {
    let t = TestServer::start(b).await;
    let r = sign_in(&t, ROOT.0, ROOT.1).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["mfa_code"],
        Value::Null,
        "unpopulated fields are written"
    );
    let c = claims(r.body["token"].as_str().unwrap());
    assert_eq!(c["usn"], "admin");
    assert_eq!(c["id"], "00000000-0000-0000-0000-000000000000");
    // Nakama's admin bitmap: every bit of 12 bytes set.
    assert_eq!(c["acl"], "_".repeat(16));
    let exp = c["exp"].as_i64().unwrap();
    let now = ludus_core::unix_now();
    assert!((now + 86_400 - 5..=now + 86_400).contains(&exp), "{exp}");
    let token = r.body["token"].as_str().unwrap();
    let r = call(&t, "GET", "/v2/console/user", token, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, json!({"users": []}), "the root user is not listed");
    // The client API's port knows nothing of the console.
    let r = t
        .raw(t.http.get(t.url("/v2/console/user")).bearer_auth(token))
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
}

async fn wrong_credentials_and_bad_tokens_are_refused(b: Backend) {
    let t = TestServer::start(b).await;
    let msg = assert_error(&sign_in(&t, "admin", "Password").await, 401, 16);
    assert!(msg.contains("invalid credentials"), "{msg}");
    assert_error(&sign_in(&t, "nobody", "password").await, 401, 16);
    let msg = assert_error(&sign_in(&t, "admin", "").await, 400, 3);
    assert!(msg.contains("required"), "{msg}");
    let url = format!("{}/v2/console/authenticate", t.console);
    let r = t
        .raw(
            t.http
                .post(&url)
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    assert_error(&r, 400, 3);
    // No session, a garbage one, a client API session.
    let r = t
        .raw(t.http.get(format!("{}/v2/console/user", t.console)))
        .await;
    let msg = assert_error(&r, 401, 16);
    assert!(msg.contains("sign in"), "{msg}");
    assert_error(
        &call(&t, "GET", "/v2/console/user", "x.y.z", json!({})).await,
        401,
        16,
    );
    let session = t.device_session("console-device-1").await;
    let client_token = session["token"].as_str().unwrap();
    assert_error(
        &call(&t, "GET", "/v2/console/user", client_token, json!({})).await,
        401,
        16,
    );
}

async fn repeated_failures_lock_the_account(b: Backend) {
    let t = TestServer::start_with(b, |c| c.console.max_failed_sign_ins = 3).await;
    let root = root_token(&t).await;
    add_user(&t, &root, "ops", json!({"USER": perm(true, false, false)})).await;
    for _ in 0..3 {
        assert_error(&sign_in(&t, "admin", "wrong").await, 401, 16);
        assert_error(&sign_in(&t, "ops", "wrong one").await, 401, 16);
    }
    // The right passwords are refused while the accounts are locked out.
    let msg = assert_error(&sign_in(&t, ROOT.0, ROOT.1).await, 429, 8);
    assert!(msg.contains("try again later"), "{msg}");
    assert_error(&sign_in(&t, "ops", OPS_PASSWORD).await, 429, 8);
    // Signing in by email reaches the same account and its lock.
    assert_error(&sign_in(&t, "ops@example.com", OPS_PASSWORD).await, 429, 8);
    // Sessions issued before stay valid; other accounts are not locked.
    let r = call(&t, "GET", "/v2/console/user", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    add_user(
        &t,
        &root,
        "other",
        json!({"USER": perm(true, false, false)}),
    )
    .await;
}

async fn expired_and_foreign_tokens_are_refused(b: Backend) {
    let t = TestServer::start(b).await;
    let token = root_token(&t).await;
    let mut c: ConsoleClaims = serde_json::from_value(claims(&token)).unwrap();
    c.expires_at = ludus_core::unix_now() - 1;
    let expired = ludus_core::token::sign_claims(b"defaultsigningkey", &c);
    let msg = assert_error(
        &call(&t, "GET", "/v2/console/user", &expired, json!({})).await,
        401,
        16,
    );
    assert!(msg.contains("expired"), "{msg}");
    c.expires_at = ludus_core::unix_now() + 60;
    let foreign = ludus_core::token::sign_claims(b"another key", &c);
    assert_error(
        &call(&t, "GET", "/v2/console/user", &foreign, json!({})).await,
        401,
        16,
    );
    // The same claims signed with the console's key work.
    let fresh = ludus_core::token::sign_claims(b"defaultsigningkey", &c);
    let r = call(&t, "GET", "/v2/console/user", &fresh, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // A session signed with the client API's key is not a console session.
    let client_key = t.config.session.encryption_key.clone();
    let wrong_kind = ludus_core::token::sign_claims(client_key.as_bytes(), &c);
    assert_error(
        &call(&t, "GET", "/v2/console/user", &wrong_kind, json!({})).await,
        401,
        16,
    );
}

async fn sign_out_ends_the_session(b: Backend) {
    let mut t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let ops = add_user(&t, &root, "ops", json!({"USER": perm(true, false, false)})).await;
    for token in [&root, &ops] {
        let r = call(
            &t,
            "POST",
            "/v2/console/authenticate/logout",
            "",
            json!({"token": token}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_error(
            &call(&t, "GET", "/v2/console/user", token, json!({})).await,
            401,
            16,
        );
    }
    // A token that does not verify signs nothing out, without an error.
    let r = call(
        &t,
        "POST",
        "/v2/console/authenticate/logout",
        "",
        json!({"token": "nonsense"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Signing in again at once works, and the sign-outs survive a restart.
    let again = root_token(&t).await;
    t.restart().await;
    assert_error(
        &call(&t, "GET", "/v2/console/user", &root, json!({})).await,
        401,
        16,
    );
    assert_error(
        &call(&t, "GET", "/v2/console/user", &ops, json!({})).await,
        401,
        16,
    );
    let r = call(&t, "GET", "/v2/console/user", &again, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn root_by_http_basic(b: Backend) {
    let t = TestServer::start(b).await;
    let url = format!("{}/v2/console/user", t.console);
    let r = t
        .raw(t.http.get(&url).basic_auth(ROOT.0, Some(ROOT.1)))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .raw(t.http.get(&url).basic_auth(ROOT.0, Some("nope")))
        .await;
    assert_error(&r, 401, 16);
    let r = t
        .raw(t.http.get(&url).basic_auth("ops", Some(ROOT.1)))
        .await;
    assert_error(&r, 401, 16);
}

async fn console_users_from_invitation_to_deletion(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let r = call(
        &t,
        "POST",
        "/v2/console/user",
        &root,
        json!({"username": "Ops", "email": "Ops@Example.com",
               "acl": {"USER": perm(true, false, false), "ACCOUNT": perm(true, true, false)}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let user = &r.body["user"];
    assert_eq!(user["username"], "ops");
    assert_eq!(user["email"], "ops@example.com");
    assert_eq!(user["acl"]["ACCOUNT"], perm(true, true, false));
    assert_eq!(user["acl"]["USER"], perm(true, false, false));
    assert_eq!(user["acl"]["ALL_DATA"], perm(false, false, false));
    assert_eq!(user["acl"].as_object().unwrap().len(), 30);
    assert_eq!(user["mfa_required"], false);
    assert!(user["create_time"].as_str().unwrap().ends_with('Z'));
    let code = r.body["token"].as_str().unwrap().to_owned();
    // No password before the invitation is used.
    assert_error(&sign_in(&t, "ops", OPS_PASSWORD).await, 401, 16);
    let change = |code: &str, password: &str| {
        call(
            &t,
            "POST",
            "/v2/console/authenticate/password_change",
            "",
            json!({"code": code, "password": password}),
        )
    };
    let msg = assert_error(&change(&code, "short").await, 400, 3);
    assert!(msg.contains("12 and 128"), "{msg}");
    let r = change(&code, OPS_PASSWORD).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // A code works once.
    assert_error(&change(&code, "another long password").await, 401, 16);
    assert_error(&change("forged", "another long password").await, 401, 16);
    let ops = sign_in(&t, "ops", OPS_PASSWORD).await;
    assert_eq!(ops.status, 200, "{}", ops.body);
    let ops = ops.body["token"].as_str().unwrap().to_owned();
    let c = claims(&ops);
    assert_eq!(
        (c["usn"].as_str(), c["ema"].as_str()),
        (Some("ops"), Some("ops@example.com"))
    );
    // By email too.
    assert_eq!(
        sign_in(&t, "ops@example.com", OPS_PASSWORD).await.status,
        200
    );
    // Listed and read.
    let r = call(&t, "GET", "/v2/console/user", &ops, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["users"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["users"][0]["username"], "ops");
    let r = call(&t, "GET", "/v2/console/user/ops", &ops, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["email"], "ops@example.com");
    assert_error(
        &call(&t, "GET", "/v2/console/user/nobody", &ops, json!({})).await,
        404,
        5,
    );
    // A new ACL ends the user's sessions; the stored ACL is what counts.
    let r = call(
        &t,
        "PUT",
        "/v2/console/user/ops",
        &root,
        json!({"acl": {"USER": perm(true, true, true)}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["acl"]["ACCOUNT"], perm(false, false, false));
    assert_error(
        &call(&t, "GET", "/v2/console/user", &ops, json!({})).await,
        401,
        16,
    );
    let ops = sign_in(&t, "ops", OPS_PASSWORD).await.body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // A reset gives a new code and ends the sessions; the old password is gone.
    let r = call(
        &t,
        "POST",
        "/v2/console/user/ops/reset/password",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let reset = r.body["code"].as_str().unwrap().to_owned();
    assert_error(
        &call(&t, "GET", "/v2/console/user", &ops, json!({})).await,
        401,
        16,
    );
    assert_error(&sign_in(&t, "ops", OPS_PASSWORD).await, 401, 16);
    assert_eq!(change(&reset, "the new ops password").await.status, 200);
    assert_eq!(sign_in(&t, "ops", "the new ops password").await.status, 200);
    // Adding an existing username sets its ACL, as Nakama does.
    let r = call(
        &t,
        "POST",
        "/v2/console/user",
        &root,
        json!({"username": "ops", "email": "ops@example.com", "acl": {"MATCH": perm(true, false, false)}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user"]["acl"]["MATCH"], perm(true, false, false));
    assert_eq!(r.body["user"]["acl"]["USER"], perm(false, false, false));
    // Deleted: gone from the list, its sign-in refused.
    let r = call(
        &t,
        "DELETE",
        "/v2/console/user?username=ops",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&sign_in(&t, "ops", "the new ops password").await, 401, 16);
    let r = call(&t, "GET", "/v2/console/user", &root, json!({})).await;
    assert_eq!(r.body, json!({"users": []}));
    let msg = assert_error(
        &call(
            &t,
            "DELETE",
            "/v2/console/user?username=ops",
            &root,
            json!({}),
        )
        .await,
        400,
        3,
    );
    assert!(msg.contains("not found"), "{msg}");
}

async fn every_user_call_checks_the_acl(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let none_of_user = add_user(
        &t,
        &root,
        "accounts",
        json!({"ACCOUNT": perm(true, true, true)}),
    )
    .await;
    let reader = add_user(
        &t,
        &root,
        "reader",
        json!({"USER": perm(true, false, false)}),
    )
    .await;
    let writer = add_user(
        &t,
        &root,
        "writer",
        json!({"USER": perm(true, true, false), "MATCH": perm(true, false, false)}),
    )
    .await;
    let new_user = json!({"username": "extra", "email": "extra@example.com",
                          "acl": {"USER": perm(true, false, false)}});
    // (caller, method, path, body, allowed)
    let cases: Vec<(&str, &str, &str, Value, bool)> = vec![
        (
            none_of_user.as_str(),
            "GET",
            "/v2/console/user",
            json!({}),
            false,
        ),
        (reader.as_str(), "GET", "/v2/console/user", json!({}), true),
        (
            none_of_user.as_str(),
            "GET",
            "/v2/console/user/reader",
            json!({}),
            true,
        ),
        (
            reader.as_str(),
            "POST",
            "/v2/console/user",
            new_user.clone(),
            false,
        ),
        (
            reader.as_str(),
            "PUT",
            "/v2/console/user/accounts",
            json!({"acl": {"USER": perm(true, false, false)}}),
            false,
        ),
        (
            reader.as_str(),
            "POST",
            "/v2/console/user/accounts/reset/password",
            json!({}),
            false,
        ),
        (
            writer.as_str(),
            "DELETE",
            "/v2/console/user?username=accounts",
            json!({}),
            false,
        ),
        (
            reader.as_str(),
            "DELETE",
            "/v2/console/user?username=accounts",
            json!({}),
            false,
        ),
        (
            writer.as_str(),
            "POST",
            "/v2/console/user",
            new_user.clone(),
            true,
        ),
        (
            writer.as_str(),
            "POST",
            "/v2/console/user/extra/reset/password",
            json!({}),
            true,
        ),
    ];
    for (token, method, path, body, allowed) in cases {
        let r = call(&t, method, path, token, body).await;
        if allowed {
            assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
        } else {
            let msg = assert_error(&r, 403, 7);
            assert!(msg.contains("permission on USER"), "{msg}");
        }
    }
    // A user grants only what it holds itself.
    let r = call(
        &t,
        "POST",
        "/v2/console/user",
        &writer,
        json!({"username": "greedy", "email": "greedy@example.com",
               "acl": {"USER": perm(true, true, true)}}),
    )
    .await;
    let msg = assert_error(&r, 400, 3);
    assert!(msg.contains("do not hold"), "{msg}");
    let r = call(
        &t,
        "PUT",
        "/v2/console/user/extra",
        &writer,
        json!({"acl": {"MATCH": perm(true, false, false)}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Nobody changes or deletes their own user, the root user included.
    let r = call(
        &t,
        "PUT",
        "/v2/console/user/writer",
        &writer,
        json!({"acl": {"USER": perm(true, false, false)}}),
    )
    .await;
    assert_error(&r, 400, 9);
    let r = call(
        &t,
        "DELETE",
        "/v2/console/user?username=admin",
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 9);
}

async fn bad_user_input_answers_4xx(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    add_user(&t, &root, "ops", json!({"USER": perm(true, false, false)})).await;
    let add = |body: Value| call(&t, "POST", "/v2/console/user", &root, body);
    let user = |u: &str, e: &str, acl: Value| json!({"username": u, "email": e, "acl": acl});
    let read = json!({"USER": perm(true, false, false)});
    for (body, status, code, needle) in [
        (
            user("", "x@example.com", read.clone()),
            400,
            3,
            "username is required",
        ),
        (user("a", "x@example.com", read.clone()), 400, 3, "3-20"),
        (user("_bad", "x@example.com", read.clone()), 400, 3, "3-20"),
        (
            user("admin", "x@example.com", read.clone()),
            400,
            9,
            "your own",
        ),
        (
            user("newbie", "", read.clone()),
            400,
            3,
            "email is required",
        ),
        (
            user("newbie", "not-an-email", read.clone()),
            400,
            3,
            "email",
        ),
        (
            user("newbie", "x@example.com", json!({})),
            400,
            3,
            "at least one permission",
        ),
        (
            user(
                "newbie",
                "x@example.com",
                json!({"USERS": perm(true, false, false)}),
            ),
            400,
            3,
            "USERS",
        ),
        (
            user("newbie", "ops@example.com", read.clone()),
            400,
            9,
            "already exists",
        ),
        (json!({"username": 5}), 400, 3, "invalid JSON"),
    ] {
        let r = add(body.clone()).await;
        let msg = assert_error(&r, status, code);
        assert!(msg.contains(needle), "{body}: {msg}");
    }
    // Nothing was added by the refused calls.
    let r = call(&t, "GET", "/v2/console/user", &root, json!({})).await;
    assert_eq!(r.body["users"].as_array().unwrap().len(), 1, "{}", r.body);
    let r = call(
        &t,
        "PUT",
        "/v2/console/user/nobody",
        &root,
        json!({"acl": read}),
    )
    .await;
    assert_error(&r, 404, 5);
    let r = call(&t, "DELETE", "/v2/console/user", &root, json!({})).await;
    assert_error(&r, 400, 3);
    let r = call(
        &t,
        "POST",
        "/v2/console/user/nobody/reset/password",
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 404, 5);
    // Too large a body.
    let big = "x".repeat(t.config.console.max_message_size_bytes + 1);
    let r = call(
        &t,
        "POST",
        "/v2/console/user",
        &root,
        json!({"username": big}),
    )
    .await;
    assert_eq!(r.status, 413, "{}", r.body);
}

async fn unserved_console_calls_answer_501(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    // Satori's calls only: Ludus has no Satori.
    for (method, path, name) in [
        ("GET", "/v2/console/satori/template", "SatoriListTemplates"),
        (
            "POST",
            "/v2/console/satori/direct-message",
            "SatoriSendDirectMessage",
        ),
    ] {
        let r = call(&t, method, path, &root, json!({})).await;
        let msg = assert_error(&r, 501, 12);
        assert!(msg.contains(name), "{path}: {msg}");
    }
    let r = call(&t, "GET", "/v2/console/nothing", &root, json!({})).await;
    assert_error(&r, 404, 5);
    let r = call(&t, "PATCH", "/v2/console/user", &root, json!({})).await;
    assert_error(&r, 501, 12);
}

async fn default_password_is_refused_on_a_public_interface(b: Backend) {
    let flag = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    let public = flag("console.address", "0.0.0.0");
    let err = config_error(std::slice::from_ref(&public));
    assert!(
        err.contains("console.password") && err.contains("127.0.0.1"),
        "{err}"
    );
    let own_password = flag("console.password", "a password of our own");
    let err = config_error(&[public, own_password]);
    assert!(err.contains("console.signing_key"), "{err}");
    // The client API's interface counts when the console has none of its own.
    let err = config_error(&[flag("socket.address", "0.0.0.0")]);
    assert!(err.contains("console.password"), "{err}");
    // On a loopback interface the defaults start (with a warning).
    assert!(ludus_server::Config::load(None, [], &[]).is_ok());
    // With both set, the console listens on every interface.
    let t = TestServer::start_with(b, |c| {
        c.console.address = "0.0.0.0".into();
        c.console.password = "a password of our own".into();
        c.console.signing_key = "a key of our own".into();
    })
    .await;
    let r = sign_in(&t, "admin", "a password of our own").await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The configuration's verdict on flags, as `ludus serve` would report it.
fn config_error(flags: &[(String, String)]) -> String {
    match ludus_server::Config::load(None, [], flags) {
        Ok(_) => panic!("the configuration was accepted"),
        Err(e) => e.to_string(),
    }
}

async fn accounts_list_get_ban_unban_and_delete(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("console-alice-device").await;
    let bob = t.device_session("console-bob-device").await;
    let (alice_id, bob_id) = (user_id(&alice), user_id(&bob));
    let r = t
        .put_bearer("/v2/account", &token(&alice), json!({"username": "alice"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Every account, in id order; then filtered by id and by username.
    let r = call(&t, "GET", "/v2/console/account", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut ids: Vec<&str> = r.body["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{}", r.body);
    assert_eq!(r.body["next_cursor"], "");
    ids.sort();
    let mut expected = vec![alice_id.as_str(), bob_id.as_str()];
    expected.sort();
    assert_eq!(ids, expected);
    for filter in [alice_id.as_str(), "alice"] {
        let path = format!("/v2/console/account?filter={filter}");
        let r = call(&t, "GET", &path, &root, json!({})).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["users"].as_array().unwrap().len(), 1, "{}", r.body);
        assert_eq!(r.body["users"][0]["username"], "alice");
    }
    let r = call(
        &t,
        "GET",
        "/v2/console/account?filter=nobody",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["users"], json!([]));
    let r = call(
        &t,
        "GET",
        "/v2/console/account?cursor=junk",
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    // One account, with its devices and no ban.
    let path = format!("/v2/console/account/{alice_id}");
    let r = call(&t, "GET", &path, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["account"]["user"]["username"], "alice");
    assert_eq!(
        r.body["account"]["devices"][0]["id"],
        "console-alice-device"
    );
    assert_eq!(r.body["disable_time"], Value::Null);
    // Banned: the session stops working, sign-in is refused.
    let r = call(&t, "POST", &format!("{path}/ban"), &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&t.get_bearer("/v2/account", &token(&alice)).await, 401, 16);
    let again = t
        .post_key(
            "/v2/account/authenticate/device",
            json!({"id": "console-alice-device"}),
        )
        .await;
    assert_error(&again, 403, 7);
    let r = call(&t, "GET", &path, &root, json!({})).await;
    assert!(
        r.body["disable_time"].as_str().unwrap().ends_with('Z'),
        "{}",
        r.body
    );
    // Unbanned: it signs in again.
    let r = call(&t, "POST", &format!("{path}/unban"), &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let again = t
        .post_key(
            "/v2/account/authenticate/device",
            json!({"id": "console-alice-device"}),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    // Deleted: gone, its session with it; bob stays.
    let r = call(&t, "DELETE", &path, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&call(&t, "GET", &path, &root, json!({})).await, 404, 5);
    // Its session reaches no account: revoked (401) once the deletion's
    // second has passed, not found (404) within it.
    let r = t.get_bearer("/v2/account", &token(&again.body)).await;
    assert!(matches!(r.status, 401 | 404), "{}", r.body);
    assert_error(&call(&t, "DELETE", &path, &root, json!({})).await, 404, 5);
    let r = call(&t, "GET", "/v2/console/account", &root, json!({})).await;
    assert_eq!(r.body["users"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["users"][0]["id"], bob_id.as_str());
}

async fn account_friends_and_groups(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("console-friend-a").await;
    let bob = t.device_session("console-friend-b").await;
    let (alice_id, bob_id) = (user_id(&alice), user_id(&bob));
    let r = t
        .post_bearer(
            &format!("/v2/friend?ids={bob_id}"),
            &token(&alice),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .post_bearer(
            "/v2/group",
            &token(&alice),
            json!({"name": "console-guild"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/account/{alice_id}/friend"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["friends"][0]["user"]["id"], bob_id.as_str());
    // Alice sent the invite: state 1 (invite sent).
    assert_eq!(r.body["friends"][0]["state"], 1);
    // The console removes the invite, on both sides.
    let r = call(
        &t,
        "DELETE",
        &format!("/v2/console/account/{alice_id}/friend/{bob_id}"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    for (who, other) in [(&alice_id, &bob_id), (&bob_id, &alice_id)] {
        let r = call(
            &t,
            "GET",
            &format!("/v2/console/account/{who}/friend"),
            &root,
            json!({}),
        )
        .await;
        let ids: Vec<&Value> = r
            .body
            .get("friends")
            .and_then(Value::as_array)
            .map(|f| f.iter().map(|f| &f["user"]["id"]).collect())
            .unwrap_or_default();
        assert!(!ids.contains(&&json!(other)), "{}", r.body);
    }
    let r = call(
        &t,
        "DELETE",
        &format!("/v2/console/account/{alice_id}/friend/not-a-uuid"),
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 400, 3);
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/account/{alice_id}/group"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user_groups"][0]["group"]["name"], "console-guild");
    // Superadmin: state 0, omitted as protojson omits zeros.
    assert!(
        r.body["user_groups"][0]["state"].as_i64().unwrap_or(0) == 0,
        "{}",
        r.body
    );
    let r = call(
        &t,
        "GET",
        &format!("/v2/console/account/{bob_id}/group"),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.get("user_groups").is_none_or(|g| g == &json!([])),
        "{}",
        r.body
    );
}

async fn account_calls_check_the_acl_and_ids(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("console-acl-device").await;
    let alice_id = user_id(&alice);
    let reader = add_user(
        &t,
        &root,
        "reader",
        json!({"ACCOUNT": perm(true, false, false)}),
    )
    .await;
    let users_only = add_user(&t, &root, "users", json!({"USER": perm(true, true, true)})).await;
    let path = format!("/v2/console/account/{alice_id}");
    for (token, method, path, allowed, resource) in [
        (reader.as_str(), "GET", path.clone(), true, ""),
        (
            reader.as_str(),
            "GET",
            "/v2/console/account".to_owned(),
            true,
            "",
        ),
        (
            reader.as_str(),
            "POST",
            format!("{path}/ban"),
            false,
            "ACCOUNT",
        ),
        (
            reader.as_str(),
            "POST",
            format!("{path}/unban"),
            false,
            "ACCOUNT",
        ),
        (reader.as_str(), "DELETE", path.clone(), false, "ACCOUNT"),
        (
            reader.as_str(),
            "GET",
            format!("{path}/friend"),
            false,
            "ACCOUNT_FRIENDS",
        ),
        (
            reader.as_str(),
            "GET",
            format!("{path}/group"),
            false,
            "ACCOUNT_GROUPS",
        ),
        (users_only.as_str(), "GET", path.clone(), false, "ACCOUNT"),
        (
            users_only.as_str(),
            "GET",
            "/v2/console/account".to_owned(),
            false,
            "ACCOUNT",
        ),
    ] {
        let r = call(&t, method, &path, token, json!({})).await;
        if allowed {
            assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
        } else {
            let msg = assert_error(&r, 403, 7);
            assert!(msg.contains(&format!("permission on {resource},")), "{msg}");
        }
    }
    // The ban was refused: alice still works.
    assert_eq!(
        t.get_bearer("/v2/account", &token(&alice)).await.status,
        200
    );
    for bad in ["not-a-uuid", "00000000-0000-0000-0000-000000000000"] {
        let r = call(
            &t,
            "GET",
            &format!("/v2/console/account/{bad}"),
            &root,
            json!({}),
        )
        .await;
        assert_error(&r, 400, 3);
        let r = call(
            &t,
            "POST",
            &format!("/v2/console/account/{bad}/ban"),
            &root,
            json!({}),
        )
        .await;
        assert_error(&r, 400, 3);
    }
    let missing = uuid::Uuid::new_v4();
    let r = call(
        &t,
        "POST",
        &format!("/v2/console/account/{missing}/ban"),
        &root,
        json!({}),
    )
    .await;
    assert_error(&r, 404, 5);
}
