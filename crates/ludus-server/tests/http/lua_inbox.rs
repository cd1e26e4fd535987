//! `nk.notifications_list|delete`, `nk.channel_messages_list`,
//! `nk.channel_message_update|remove`,
//! `nk.session_logout`, `nk.account_delete_id` and `nk.users_get_random` from
//! `tests/lua/inbox_test.lua`, on both backends: Nakama's arguments,
//! defaults, result tables and refusals, and their effect seen over REST.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    lua_notifications_history_logout_and_delete,
    lua_notifications_by_id,
    lua_account_export,
    lua_account_import
);

async fn lua_notifications_history_logout_and_delete(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let me = t.device_session("ibme-inbox-0001").await;
    let bob = t.device_session("ibbo-inbox-0001").await;
    let cat = t.device_session("ibca-inbox-0001").await;
    let payload = json!({
        "bob": user_id(&bob),
        "bob_token": token(&bob),
        "cat": user_id(&cat),
    })
    .to_string();
    let r = t
        .post_bearer("/v2/rpc/lua_inbox", &token(&me), Value::String(payload))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    let text = |k: &str| out[k].as_str().unwrap_or_default().to_owned();

    assert_eq!(out["page1"], 2, "{out}");
    assert_eq!(out["page1_subject"], "note 1");
    assert_eq!(out["page1_content"], r#"{"n":1}"#);
    assert_eq!(out["page1_code"], 7);
    assert_eq!(out["page1_sender"], "00000000-0000-0000-0000-000000000000");
    assert!(out["page1_time"].as_i64().unwrap() > 1_700_000_000);
    assert_eq!(out["cursor"], true);
    assert_eq!(out["page2"], 1);
    assert_eq!(out["page2_subject"], "note 3");
    assert_eq!(out["all_default"], 3, "Nakama's default limit is 100");
    assert_eq!(out["empty_cursor"], true);
    assert!(text("bad_limit").contains("expects limit to be value between 1 and 1000"));
    assert!(text("bad_user").contains("expects user_id to be a valid uuid"));
    assert_eq!(out["after_delete"], 2);
    assert!(text("bad_delete").contains("expects notification_id to be a valid UUID"));

    assert_eq!(out["msgs1"], 2);
    assert_eq!(out["msg_room"], "inbox-room");
    assert_eq!(out["msg_channel"], true);
    assert_eq!(out["msg_content"], r#"{"text":"hi 1"}"#);
    assert_eq!(out["msg_persistent"], true);
    assert_eq!(out["next_cursor"], true);
    assert_eq!(out["prev_cursor_first"], true);
    assert_eq!(out["msgs2"], 1);
    assert_eq!(out["msgs2_content"], r#"{"text":"hi 3"}"#);
    assert_eq!(out["newest_first"], r#"{"text":"hi 3"}"#);
    assert_eq!(out["msgs_default"], 3);
    assert!(text("bad_msg_limit").contains("limit must be 1-100"));
    assert!(
        text("bad_channel").contains("failed to list channel messages"),
        "{out}"
    );
    assert_eq!(out["direct"], 0);

    assert_eq!(out["update_code"], 1, "Nakama's code of an update");
    assert_eq!(out["update_persistent"], true);
    assert_eq!(out["updated_content"], r#"{"v":10}"#);
    assert!(
        text("update_other_sender").contains("channel message not found"),
        "{out}"
    );
    assert!(
        text("update_bad_id").contains("Invalid message identifier"),
        "{out}"
    );
    assert!(
        text("update_bad_sender").contains("expects sender id"),
        "{out}"
    );
    assert_eq!(out["remove_code"], 2, "Nakama's code of a removal");
    assert_eq!(out["after_remove"], 1);
    assert!(
        text("remove_again").contains("channel message not found"),
        "{out}"
    );

    assert_eq!(out["random_two"], 2);
    assert_eq!(out["random_two_distinct"], true);
    assert_eq!(out["random_all"], 3, "every user, each once");
    assert_eq!(out["random_default"], 0, "Nakama's default count is 0");
    assert_eq!(out["random_fraction"], 1);
    assert!(text("random_bad").contains("count must be 0-1000"));

    assert!(text("bad_logout").contains("expects valid user id"));
    assert!(text("bad_delete_account").contains("expects user ID to be a valid identifier"));
    // Bob's token was logged out; cat's account is gone.
    let r = t.get_bearer("/v2/account", &token(&bob)).await;
    assert_error(&r, 401, 16);
    let r = t.get_bearer("/v2/account", &token(&cat)).await;
    assert!(r.status == 401 || r.status == 404, "{}", r.body);
    let r = t.get_bearer("/v2/account", &token(&me)).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn lua_notifications_by_id(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let me = t.device_session("nbme-inbox-0002").await;
    let bob = t.device_session("nbbo-inbox-0002").await;
    let cat = t.device_session("nbca-inbox-0002").await;
    let payload = json!({"bob": user_id(&bob), "cat": user_id(&cat)}).to_string();
    let r = t
        .post_bearer(
            "/v2/rpc/lua_notifications_by_id",
            &token(&me),
            Value::String(payload),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    let text = |k: &str| out[k].as_str().unwrap_or_default().to_owned();
    assert_eq!(out["all"], 2, "{out}");
    assert_eq!(out["first_subject"], "for bob");
    assert_eq!(out["first_who"], "bob");
    assert_eq!(out["first_user"], user_id(&bob).as_str());
    assert_eq!(out["first_code"], 5);
    assert_eq!(out["first_persistent"], true);
    assert!(out["first_time"].as_i64().unwrap() > 1_700_000_000);
    assert_eq!(out["first_sender"], "00000000-0000-0000-0000-000000000000");
    assert_eq!(out["of_cat"], 1);
    assert_eq!(out["after_scoped"], 1, "deleting as cat kept bob's");
    assert_eq!(out["after_all"], 0);
    assert!(
        text("bad_list").contains("bad argument #1: invalid user ids list"),
        "{out}"
    );
    assert!(
        text("bad_id").contains("each notification id must be a valid id"),
        "{out}"
    );
    assert!(
        text("bad_type").contains("each notification id must be a string"),
        "{out}"
    );
    assert!(
        text("bad_user").contains("bad argument #2: expects user_id to be a valid uuid"),
        "{out}"
    );
}

async fn lua_account_export(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let me = t.device_session("exme-export-0001").await;
    let bob = t.device_session("exbo-export-0001").await;
    let payload = json!({"bob": user_id(&bob)}).to_string();
    let r = t
        .post_bearer(
            "/v2/rpc/lua_account_export",
            &token(&me),
            Value::String(payload),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(out["user"], user_id(&me).as_str(), "{out}");
    // JSON text as the backend keeps it (PostgreSQL's jsonb spaces it).
    let json = |k: &str| -> Value { serde_json::from_str(out[k].as_str().unwrap()).unwrap() };
    assert_eq!(json("wallet"), json!({"coins": 5}));
    assert_eq!(out["objects"], 2);
    assert_eq!(out["first_collection"], "export_a");
    assert_eq!(out["notifications"], 1);
    assert_eq!(out["notification_subject"], "for export");
    assert_eq!(out["ledger"], 1);
    assert_eq!(json("ledger_changeset"), json!({"coins": 5}));
    assert_eq!(out["messages"], 1);
    assert_eq!(json("message_content"), json!({"text": "mine"}));
    assert_eq!(out["records"], 1);
    assert_eq!(out["record_score"], "42", "64-bit numbers are strings");
    assert_eq!(out["friends"], 1);
    assert_eq!(out["friend"], user_id(&bob).as_str());
    assert_eq!(out["groups"], 0);
    let text = |k: &str| out[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("bad_id").contains("expects user ID to be a valid identifier"),
        "{out}"
    );
    assert!(text("unknown").contains("account not found"), "{out}");
}

async fn lua_account_import(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let me = t.device_session("imme-import-0001").await;
    let r = t
        .post_bearer("/v2/rpc/lua_account_import", &token(&me), json!(""))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(
        out["made_id"], "6e0f2b1c-3a4d-4e5f-8a9b-0c1d2e3f4a5b",
        "{out}"
    );
    assert_eq!(out["made_username"], "imported_copy");
    assert_eq!(out["made_wallet"], 3);
    assert_eq!(out["made_devices"], 1);
    assert_eq!(out["made_objects"], 1);
    let text = |k: &str| out[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("again").contains("user identifier already exists"),
        "{out}"
    );
    assert_eq!(out["into_id"], user_id(&me).as_str());
    assert_ne!(
        out["into_username"], "imported_copy",
        "only metadata and wallet change"
    );
    assert_eq!(out["into_metadata"], true);
    assert_eq!(out["into_wallet"], 9);
    assert_eq!(out["into_a"], 1);
    assert_eq!(out["into_b"], 0, "storage is replaced by the export's");
    assert!(
        text("bad_json").contains("expects data to be a valid account export"),
        "{out}"
    );
    assert!(
        text("empty").contains("expects data to be present"),
        "{out}"
    );
    assert!(
        text("bad_into").contains("expects user ID to be a valid identifier"),
        "{out}"
    );
    assert!(text("unknown_into").contains("not found"), "{out}");
    assert!(text("bad_value").contains("must be a json object"), "{out}");
    // The new account signs in with the device its export named.
    let r = t
        .post_key(
            "/v2/account/authenticate/device?create=false",
            json!({"id": "imported-copy-device-01"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}
