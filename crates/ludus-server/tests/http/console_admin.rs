//! The console's calls for its own administration, on both backends: notes
//! on accounts (pages and cursors), ACL templates, settings, the registered
//! extensions, multi-factor sign-in (setup, codes, recovery codes, require
//! and reset), and the API explorer's calls of the client API as a user.
//! Each with Nakama's shapes and permissions, a read-only console user
//! refused where Nakama refuses, bad input 400 and unknown ids 404.

use serde_json::{Value, json};

use crate::both_backends;
use crate::console::{ROOT, add_user, call, perm, root_token};
use crate::support::{Backend, Reply, TestServer, assert_error, claims, token, user_id};

both_backends!(
    account_notes_added_listed_changed_and_deleted,
    acl_templates_added_listed_changed_and_deleted,
    settings_read_listed_and_changed,
    mfa_set_up_used_required_and_reset,
    root_mfa_when_the_configuration_asks,
    api_explorer_calls_the_client_api_as_a_user,
);

const NIL: &str = "00000000-0000-0000-0000-000000000000";

async fn sign_in(t: &TestServer, username: &str, password: &str, mfa: &str) -> Reply {
    let url = format!("{}/v2/console/authenticate", t.console);
    t.raw(
        t.http
            .post(url)
            .json(&json!({"username": username, "password": password, "mfa": mfa})),
    )
    .await
}

async fn account_notes_added_listed_changed_and_deleted(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("notes-alice-0001").await;
    let bob = t.device_session("notes-bob-00001").await;
    let (a, b_id) = (user_id(&alice), user_id(&bob));
    let notes = |id: &str| format!("/v2/console/account/{id}/note");
    let reader = add_user(
        &t,
        &root,
        "notereader",
        json!({"ACCOUNT_NOTES": perm(true, false, false)}),
    )
    .await;
    let writer = add_user(
        &t,
        &root,
        "notewriter",
        json!({"ACCOUNT_NOTES": perm(true, true, false)}),
    )
    .await;

    // Added by root: Nakama's shape, every field written.
    let r = call(&t, "POST", &notes(&a), &root, json!({"note": "first"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let first = r.body.clone();
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "id",
        "user_id",
        "note",
        "create_time",
        "update_time",
        "create_id",
        "create_username",
        "update_id",
        "update_username",
    ] {
        assert!(keys.contains(&key), "{key} in {first}");
    }
    assert_eq!(first["user_id"], a.as_str());
    assert_eq!(first["note"], "first");
    assert_eq!(first["create_id"], NIL);
    assert_eq!(first["create_username"], ROOT.0);
    assert!(first["create_time"].as_str().unwrap().ends_with('Z'));
    // Two more, by another console user; a note on bob too.
    for text in ["second", "third"] {
        let r = call(&t, "POST", &notes(&a), &writer, json!({"note": text})).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["create_username"], "notewriter");
    }
    let r = call(&t, "POST", &notes(&b_id), &root, json!({"note": "bob's"})).await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Newest first, two a page, with Nakama's cursor.
    let r = call(
        &t,
        "GET",
        &format!("{}?limit=2", notes(&a)),
        &reader,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let page: Vec<&str> = r.body["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["note"].as_str().unwrap())
        .collect();
    assert_eq!(page, ["third", "second"], "{}", r.body);
    let cursor = r.body["cursor"].as_str().unwrap().to_owned();
    assert!(!cursor.is_empty());
    let next = format!("{}?limit=2&cursor={cursor}", notes(&a));
    let r = call(&t, "GET", &next, &reader, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["notes"].as_array().unwrap().len(), 1, "{}", r.body);
    assert_eq!(r.body["notes"][0]["note"], "first");
    assert_eq!(r.body["cursor"], "");
    // A cursor is its account's; a bad one is refused; a limit out of
    // range is Nakama's default of 10.
    let other = format!("{}?cursor={cursor}", notes(&b_id));
    assert_error(&call(&t, "GET", &other, &reader, json!({})).await, 400, 3);
    let bad = format!("{}?cursor=nope", notes(&a));
    assert_error(&call(&t, "GET", &bad, &reader, json!({})).await, 400, 3);
    let r = call(
        &t,
        "GET",
        &format!("{}?limit=500", notes(&a)),
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["notes"].as_array().unwrap().len(), 3, "{}", r.body);

    // Changed by id: the text and who changed it, not when it was made.
    let id = first["id"].as_str().unwrap();
    let r = call(
        &t,
        "POST",
        &notes(&a),
        &writer,
        json!({"id": id, "note": "first, changed"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["id"], id);
    assert_eq!(r.body["note"], "first, changed");
    assert_eq!(r.body["create_time"], first["create_time"]);
    assert_eq!(r.body["create_username"], ROOT.0);
    assert_eq!(r.body["update_username"], "notewriter");

    // Refused: read-only user, bad and unknown ids, empty notes.
    let r = call(&t, "POST", &notes(&a), &reader, json!({"note": "x"})).await;
    let msg = assert_error(&r, 403, 7);
    assert!(msg.contains("ACCOUNT_NOTES"), "{msg}");
    let unknown = uuid::Uuid::new_v4().to_string();
    for (path, body, status, code) in [
        (notes(&a), json!({"note": ""}), 400, 3),
        (notes(&a), json!({"note": "  "}), 400, 3),
        (notes("nope"), json!({"note": "x"}), 400, 3),
        (notes(&a), json!({"id": "nope", "note": "x"}), 400, 3),
        (notes(&unknown), json!({"note": "x"}), 404, 5),
        (notes(&a), json!({"id": unknown, "note": "x"}), 404, 5),
        (notes(&a), json!({"note": 5}), 400, 3),
    ] {
        let r = call(&t, "POST", &path, &root, body.clone()).await;
        assert_error(&r, status, code);
    }
    // Bob's note is not alice's to change.
    let r = call(&t, "GET", &notes(&b_id), &root, json!({})).await;
    let bobs = r.body["notes"][0]["id"].as_str().unwrap().to_owned();
    let r = call(
        &t,
        "POST",
        &notes(&a),
        &root,
        json!({"id": bobs, "note": "x"}),
    )
    .await;
    assert_error(&r, 404, 5);
    assert_error(
        &call(&t, "GET", &notes(&unknown), &root, json!({})).await,
        404,
        5,
    );

    // Deleted: needs the delete permission; a second time it is gone.
    let one = format!("{}/{id}", notes(&a));
    let msg = assert_error(&call(&t, "DELETE", &one, &writer, json!({})).await, 403, 7);
    assert!(msg.contains("delete permission"), "{msg}");
    let r = call(&t, "DELETE", &one, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&call(&t, "DELETE", &one, &root, json!({})).await, 404, 5);
    let wrong_account = format!("{}/{bobs}", notes(&a));
    assert_error(
        &call(&t, "DELETE", &wrong_account, &root, json!({})).await,
        404,
        5,
    );
    let bad = format!("{}/nope", notes(&a));
    assert_error(&call(&t, "DELETE", &bad, &root, json!({})).await, 400, 3);
    let r = call(&t, "GET", &notes(&a), &root, json!({})).await;
    assert_eq!(r.body["notes"].as_array().unwrap().len(), 2, "{}", r.body);

    // The audit log has them under ACCOUNT_NOTES, as Nakama's actions.
    let r = call(
        &t,
        "GET",
        "/v2/console/audit/log?resource=ACCOUNT_NOTES",
        &root,
        json!({}),
    )
    .await;
    let actions: Vec<i64> = r.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_i64().unwrap())
        .collect();
    assert!(actions.contains(&2) && actions.contains(&3), "{}", r.body);

    // A note goes with its account.
    let r = t.delete_bearer("/v2/account", &token(&bob)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(
        &call(&t, "GET", &notes(&b_id), &root, json!({})).await,
        404,
        5,
    );
}

async fn acl_templates_added_listed_changed_and_deleted(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let path = "/v2/console/acl/template";
    let writer = add_user(
        &t,
        &root,
        "templater",
        json!({"ACL_TEMPLATE": perm(true, true, false)}),
    )
    .await;
    let bystander = add_user(
        &t,
        &root,
        "bystander",
        json!({"ACCOUNT": perm(true, false, false)}),
    )
    .await;
    let acl = json!({"ACCOUNT": perm(true, true, false), "USER": perm(true, false, false)});
    let r = call(
        &t,
        "POST",
        path,
        &writer,
        json!({"name": "support", "description": "first line", "acl": acl}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let support = r.body.clone();
    assert_eq!(support["name"], "support");
    assert_eq!(support["description"], "first line");
    assert_eq!(support["acl"]["ACCOUNT"], perm(true, true, false));
    assert_eq!(support["acl"]["GROUP"], perm(false, false, false));
    assert_eq!(support["acl"].as_object().unwrap().len(), 30);
    assert!(support["create_time"].as_str().unwrap().ends_with('Z'));
    let id = support["id"].as_str().unwrap().to_owned();
    let r = call(
        &t,
        "POST",
        path,
        &root,
        json!({"name": "auditor", "acl": {"AUDIT_LOG": perm(true, false, false)}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Any console session lists them, by name.
    let r = call(&t, "GET", path, &bystander, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let names: Vec<&str> = r.body["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["auditor", "support"]);

    // Bad input and a taken name change nothing.
    for (body, status, code, needle) in [
        (
            json!({"name": "support", "acl": acl}),
            409,
            6,
            "already exists",
        ),
        (json!({"name": "", "acl": acl}), 400, 3, "name"),
        (json!({"name": "x".repeat(65), "acl": acl}), 400, 3, "64"),
        (
            json!({"name": "y", "description": "d".repeat(65)}),
            400,
            3,
            "description",
        ),
        (
            json!({"name": "y", "acl": {"ACOUNT": perm(true, false, false)}}),
            400,
            3,
            "ACOUNT",
        ),
        (json!({"name": ["y"]}), 400, 3, "JSON"),
    ] {
        let r = call(&t, "POST", path, &root, body.clone()).await;
        let msg = assert_error(&r, status, code);
        assert!(msg.contains(needle), "{body}: {msg}");
    }
    let r = call(&t, "POST", path, &bystander, json!({"name": "z"})).await;
    assert_error(&r, 403, 7);

    // Changed: name, description and permissions.
    let one = format!("{path}/{id}");
    let r = call(
        &t,
        "PUT",
        &one,
        &writer,
        json!({"name": "support-2", "description": "", "acl": {"GROUP": perm(true, false, false)}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["id"], id.as_str());
    assert_eq!(r.body["name"], "support-2");
    assert_eq!(r.body["acl"]["ACCOUNT"], perm(false, false, false));
    assert_eq!(r.body["acl"]["GROUP"], perm(true, false, false));
    let unknown = format!("{path}/{}", uuid::Uuid::new_v4());
    for (p, body, status, code) in [
        (unknown.as_str(), json!({"name": "a"}), 404, 5),
        (&format!("{path}/nope"), json!({"name": "a"}), 400, 3),
        (one.as_str(), json!({"name": "auditor"}), 409, 6),
        (one.as_str(), json!({"name": ""}), 400, 3),
    ] {
        assert_error(&call(&t, "PUT", p, &root, body).await, status, code);
    }
    assert_error(
        &call(&t, "PUT", &one, &bystander, json!({"name": "q"})).await,
        403,
        7,
    );

    // Deleted with the delete permission only; a second time it is gone.
    assert_error(&call(&t, "DELETE", &one, &writer, json!({})).await, 403, 7);
    let r = call(&t, "DELETE", &one, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&call(&t, "DELETE", &one, &root, json!({})).await, 404, 5);
    let bad = format!("{path}/nope");
    assert_error(&call(&t, "DELETE", &bad, &root, json!({})).await, 400, 3);
    let r = call(&t, "GET", path, &root, json!({})).await;
    assert_eq!(
        r.body["templates"].as_array().unwrap().len(),
        1,
        "{}",
        r.body
    );
}

async fn settings_read_listed_and_changed(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let reader = add_user(
        &t,
        &root,
        "setreader",
        json!({"SETTINGS": perm(true, false, false)}),
    )
    .await;
    let bystander = add_user(
        &t,
        &root,
        "nosettings",
        json!({"ACCOUNT": perm(true, false, false)}),
    )
    .await;
    // Listed by any session: Nakama's one setting with its default.
    let r = call(&t, "GET", "/v2/console/setting", &bystander, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["acl_resources"], json!([]));
    let s = &r.body["settings"][0];
    assert_eq!(r.body["settings"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&s["name"], &s["value"]),
        (&json!("utc_toggle"), &json!("false"))
    );
    let t0: i64 = s["update_time_sec"].as_str().unwrap().parse().unwrap();
    assert!(t0 > 1_700_000_000, "{s}");
    let r = call(
        &t,
        "GET",
        "/v2/console/setting?names=nope",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.body["settings"], json!([]), "{}", r.body);
    let r = call(
        &t,
        "GET",
        "/v2/console/setting?names=utc_toggle",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(
        r.body["settings"].as_array().unwrap().len(),
        1,
        "{}",
        r.body
    );

    // One by name needs SETTINGS read.
    let one = "/v2/console/setting/utc_toggle";
    let r = call(&t, "GET", one, &reader, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["value"], "false");
    assert_error(&call(&t, "GET", one, &bystander, json!({})).await, 403, 7);
    let r = call(&t, "GET", "/v2/console/setting/theme", &root, json!({})).await;
    assert_error(&r, 404, 5);

    // Changed with SETTINGS write: a JSON value of a known name.
    let r = call(&t, "POST", one, &reader, json!({"value": "true"})).await;
    assert_error(&r, 403, 7);
    let r = call(&t, "POST", one, &root, json!({"value": "true"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["name"], "utc_toggle");
    assert_eq!(r.body["value"], "true");
    for (path, body) in [
        (one, json!({"value": "yes"})),
        (one, json!({})),
        ("/v2/console/setting/theme", json!({"value": "true"})),
    ] {
        assert_error(&call(&t, "POST", path, &root, body).await, 400, 3);
    }
    let r = call(&t, "GET", one, &reader, json!({})).await;
    assert_eq!(r.body["value"], "true");

    // No Hiro and no Satori here.
    let r = call(&t, "GET", "/v2/console/extensions", &bystander, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body,
        json!({"hiro": false, "hiro_systems": null, "satori": false})
    );
}

/// The code the user's authenticator app shows now.
fn app_code(secret: &str) -> String {
    ludus_core::console_mfa::code_at(secret, ludus_core::unix_now()).unwrap()
}

/// The secret inside a setup token, as the web console reads it.
fn setup_secret(setup: &str) -> String {
    claims(setup)["secret"].as_str().unwrap().to_owned()
}

async fn mfa_set_up_used_required_and_reset(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let password = "a long mfa password";
    // A console user who must use MFA: its first sign-in answers the setup
    // token instead of a session.
    let r = call(
        &t,
        "POST",
        "/v2/console/user",
        &root,
        json!({"username": "mfaops", "email": "mfaops@example.com",
               "acl": {"ACCOUNT": perm(true, false, false)}, "mfa_required": true}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user"]["mfa_required"], true);
    assert_eq!(r.body["user"]["mfa_enabled"], false);
    let code = r.body["token"].as_str().unwrap().to_owned();
    let r = call(
        &t,
        "POST",
        "/v2/console/authenticate/password_change",
        "",
        json!({"code": code, "password": password}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = sign_in(&t, "mfaops", password, "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["token"], "", "no session before MFA is set up");
    let setup = r.body["mfa_code"].as_str().unwrap().to_owned();
    let c = claims(&setup);
    assert_eq!(c["mfa_required"], true);
    assert!(
        c["mfa_url"]
            .as_str()
            .unwrap()
            .starts_with("otpauth%3A%2F%2Ftotp%2FHeroicLabs%3Amfaops"),
        "{c}"
    );
    let secret = setup_secret(&setup);

    // Setup: a wrong or malformed code, or a bad token, sets nothing up.
    let mfa = "/v2/console/authenticate/mfa";
    let wrong = if app_code(&secret) == "000000" {
        "111111"
    } else {
        "000000"
    };
    for (body, status, code) in [
        (json!({"mfa": setup, "code": wrong}), 400, 3),
        (json!({"mfa": setup, "code": "12"}), 400, 3),
        (json!({"mfa": "nope", "code": app_code(&secret)}), 401, 16),
        (json!({"mfa": setup}), 400, 3),
    ] {
        assert_error(&call(&t, "POST", mfa, "", body).await, status, code);
    }
    let r = call(
        &t,
        "POST",
        mfa,
        "",
        json!({"mfa": setup, "code": app_code(&secret)}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let recovery: Vec<String> = r.body["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(recovery.len(), 16);
    assert!(recovery.iter().all(|c| c.len() == 8), "{recovery:?}");
    // A setup token works once.
    let r = call(
        &t,
        "POST",
        mfa,
        "",
        json!({"mfa": setup, "code": app_code(&secret)}),
    )
    .await;
    assert_error(&r, 401, 16);

    // Sign-in now needs a code: missing, malformed, wrong, then right.
    let msg = assert_error(&sign_in(&t, "mfaops", password, "").await, 403, 7);
    assert!(msg.contains("MFA code is required"), "{msg}");
    assert_error(&sign_in(&t, "mfaops", password, "12ab").await, 400, 3);
    assert_error(&sign_in(&t, "mfaops", password, wrong).await, 401, 16);
    let r = sign_in(&t, "mfaops", password, &app_code(&secret)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let session = r.body["token"].as_str().unwrap().to_owned();
    assert_eq!(r.body["mfa_code"], Value::Null);
    assert_eq!(
        call(&t, "GET", "/v2/console/account", &session, json!({}))
            .await
            .status,
        200
    );
    // A recovery code works once.
    let r = sign_in(&t, "mfaops", password, &recovery[3]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(
        &sign_in(&t, "mfaops", password, &recovery[3]).await,
        401,
        16,
    );
    let r = call(&t, "GET", "/v2/console/user/mfaops", &root, json!({})).await;
    assert_eq!(r.body["mfa_enabled"], true, "{}", r.body);
    assert_eq!(r.body["mfa_required"], true, "{}", r.body);

    // Require and reset need USER write; unknown users are 404.
    let reader = add_user(
        &t,
        &root,
        "userreader",
        json!({"USER": perm(true, false, false)}),
    )
    .await;
    let require = "/v2/console/user/mfaops/mfa/require";
    let reset = "/v2/console/user/mfaops/mfa/reset";
    for path in [require, reset] {
        let msg = assert_error(&call(&t, "POST", path, &reader, json!({})).await, 403, 7);
        assert!(msg.contains("write permission on USER"), "{msg}");
    }
    for path in [
        "/v2/console/user/nobody/mfa/require",
        "/v2/console/user/nobody/mfa/reset",
    ] {
        assert_error(&call(&t, "POST", path, &root, json!({})).await, 404, 5);
    }
    let root_require = format!("/v2/console/user/{}/mfa/require", ROOT.0);
    assert_error(
        &call(&t, "POST", &root_require, &root, json!({})).await,
        400,
        3,
    );
    assert_error(
        &call(&t, "POST", require, &root, json!({"required": "maybe"})).await,
        400,
        3,
    );
    let r = call(&t, "POST", require, &root, json!({"required": false})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", "/v2/console/user/mfaops", &root, json!({})).await;
    assert_eq!(r.body["mfa_required"], false, "{}", r.body);
    // Set up, MFA still applies; a reset removes it and ends the sessions.
    assert_error(&sign_in(&t, "mfaops", password, "").await, 403, 7);
    let r = call(&t, "POST", reset, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(&t, "GET", "/v2/console/account", &session, json!({})).await;
    assert_error(&r, 401, 16);
    let r = sign_in(&t, "mfaops", password, "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!r.body["token"].as_str().unwrap().is_empty(), "{}", r.body);
    let r = call(&t, "GET", "/v2/console/user/mfaops", &root, json!({})).await;
    assert_eq!(r.body["mfa_enabled"], false, "{}", r.body);
    // Required again: the next sign-in sets MFA up anew.
    let r = call(&t, "POST", require, &root, json!({"required": true})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = sign_in(&t, "mfaops", password, "").await;
    assert_eq!(r.body["token"], "", "{}", r.body);
    assert!(r.body["mfa_code"].is_string(), "{}", r.body);
}

async fn root_mfa_when_the_configuration_asks(b: Backend) {
    let t = TestServer::start_with(b, |c| c.mfa.admin_account_enabled = true).await;
    let r = sign_in(&t, ROOT.0, ROOT.1, "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["token"], "");
    let setup = r.body["mfa_code"].as_str().unwrap().to_owned();
    assert_eq!(claims(&setup)["user_id"], NIL);
    let secret = setup_secret(&setup);
    let r = call(
        &t,
        "POST",
        "/v2/console/authenticate/mfa",
        "",
        json!({"mfa": setup, "code": app_code(&secret)}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&sign_in(&t, ROOT.0, ROOT.1, "").await, 403, 7);
    let r = sign_in(&t, ROOT.0, ROOT.1, &app_code(&secret)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let root = r.body["token"].as_str().unwrap().to_owned();
    // A lost device: the root user's MFA is reset by name, and its next
    // sign-in sets it up again.
    let reset = format!("/v2/console/user/{}/mfa/reset", ROOT.0);
    let r = call(&t, "POST", &reset, &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = sign_in(&t, ROOT.0, ROOT.1, "").await;
    assert!(r.body["mfa_code"].is_string(), "{}", r.body);
}

async fn api_explorer_calls_the_client_api_as_a_user(b: Backend) {
    let t = TestServer::start(b).await;
    let root = root_token(&t).await;
    let alice = t.device_session("explorer-alice-01").await;
    let a = user_id(&alice);
    // The client API's methods, by name, with body templates.
    let r = call(&t, "GET", "/v2/console/api/endpoints", &root, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let endpoints = r.body["endpoints"].as_array().unwrap();
    let names: Vec<&str> = endpoints
        .iter()
        .map(|e| e["method"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(names.contains(&"GetAccount") && names.contains(&"WriteStorageObjects"));
    assert!(!names.contains(&"Healthcheck") && !names.contains(&"RpcFunc"));
    let template = |name: &str| {
        endpoints
            .iter()
            .find(|e| e["method"] == name)
            .map(|e| e["body_template"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(template("GetAccount"), "");
    let write: Value = serde_json::from_str(&template("WriteStorageObjects")).unwrap();
    assert_eq!(write["objects"][0]["collection"], "<string>");

    let api = |name: &str| format!("/v2/console/api/endpoints/{name}");
    let as_alice = |body: Value| json!({"user_id": a, "body": body.to_string()});
    // Read and change the account as alice; camelCase names work too.
    let r = call(
        &t,
        "POST",
        &api("UpdateAccount"),
        &root,
        as_alice(json!({"displayName": "Al"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["error_message"], "", "{}", r.body);
    let r = call(&t, "POST", &api("GetAccount"), &root, json!({"user_id": a})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let account: Value = serde_json::from_str(r.body["body"].as_str().unwrap()).unwrap();
    assert_eq!(account["user"]["id"], a.as_str());
    assert_eq!(account["user"]["display_name"], "Al");
    let r = call(
        &t,
        "POST",
        &api("WriteStorageObjects"),
        &root,
        as_alice(json!({"objects": [{"collection": "c", "key": "k", "value": "{\"a\":1}"}]})),
    )
    .await;
    assert_eq!(r.body["error_message"], "", "{}", r.body);
    let acks: Value = serde_json::from_str(r.body["body"].as_str().unwrap()).unwrap();
    assert_eq!(acks["acks"][0]["user_id"], a.as_str());
    // Path fields fill the route: alice's object read back by list.
    let r = call(
        &t,
        "POST",
        &api("ListStorageObjects"),
        &root,
        as_alice(json!({"collection": "c", "user_id": a})),
    )
    .await;
    let list: Value = serde_json::from_str(r.body["body"].as_str().unwrap()).unwrap();
    assert_eq!(list["objects"][0]["key"], "k", "{}", r.body);
    // Sign-in methods need no user.
    let r = call(
        &t,
        "POST",
        &api("AuthenticateDevice"),
        &root,
        json!({"body": json!({"account": {"id": "explorer-made-device"}}).to_string()}),
    )
    .await;
    let session: Value = serde_json::from_str(r.body["body"].as_str().unwrap()).unwrap();
    assert!(
        session["token"].as_str().is_some_and(|t| !t.is_empty()),
        "{}",
        r.body
    );
    // The call's own refusal is answered as error_message with 200.
    let r = call(
        &t,
        "POST",
        &api("LinkCustom"),
        &root,
        as_alice(json!({"id": ""})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        !r.body["error_message"].as_str().unwrap().is_empty(),
        "{}",
        r.body
    );
    assert_eq!(r.body["body"], "");

    // Bad input.
    let unknown = uuid::Uuid::new_v4().to_string();
    for (name, body, status, code) in [
        ("NoSuchMethod", json!({"user_id": a}), 404, 5),
        ("RpcFunc", json!({"user_id": a}), 404, 5),
        ("GetAccount", json!({}), 400, 3),
        ("GetAccount", json!({"user_id": "nope"}), 400, 3),
        ("GetAccount", json!({"user_id": unknown}), 404, 5),
        ("GetAccount", json!({"user_id": a, "body": "{}"}), 400, 3),
        (
            "UpdateAccount",
            json!({"user_id": a, "body": "not json"}),
            400,
            3,
        ),
        (
            "UpdateAccount",
            json!({"user_id": a, "body": "{\"display_name\": 5}"}),
            400,
            3,
        ),
        (
            "ListStorageObjects",
            json!({"user_id": a, "body": "{}"}),
            400,
            3,
        ),
    ] {
        let r = call(&t, "POST", &api(name), &root, body.clone()).await;
        assert_error(&r, status, code);
    }
    // Reading the list does not allow calling.
    let reader = add_user(
        &t,
        &root,
        "apireader",
        json!({"API_EXPLORER": perm(true, false, false)}),
    )
    .await;
    let r = call(
        &t,
        "POST",
        &api("GetAccount"),
        &reader,
        json!({"user_id": a}),
    )
    .await;
    assert_error(&r, 403, 7);
    // The call is in the audit log, the password in its body redacted.
    let r = call(
        &t,
        "POST",
        &api("AuthenticateEmail"),
        &root,
        json!({"body": json!({"account": {"email": "e@example.com", "password": "hunter2hunter2"}}).to_string()}),
    )
    .await;
    assert_eq!(r.body["error_message"], "", "{}", r.body);
    let r = call(
        &t,
        "GET",
        "/v2/console/audit/log?action=INVOKE",
        &root,
        json!({}),
    )
    .await;
    let text = r.body.to_string();
    assert!(
        text.contains("AuthenticateEmail") && !text.contains("hunter2"),
        "{text}"
    );
}
