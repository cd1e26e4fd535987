//! `nk.storage_*`, `nk.wallet*` and `nk.multi_update` from the Lua module
//! in `tests/lua/storage_test.lua`, on both backends, and the wallet as the
//! account endpoint shows it.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, token, user_id};

both_backends!(
    lua_storage_calls,
    lua_wallet_calls,
    lua_multi_update,
    lua_storage_write_retry
);

async fn call(t: &TestServer, session: &Value, id: &str) -> Value {
    let r = t
        .post_bearer(&format!("/v2/rpc/{id}"), &token(session), json!(""))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap()
}

async fn lua_storage_calls(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let s = t.device_session("lua-storage-device1").await;
    let out = call(&t, &s, "lua_storage").await;
    assert_eq!(out["ack_user"], "00000000-0000-0000-0000-000000000000");
    assert_eq!(
        out["ack_version"],
        ludus_core::storage::version_of(r#"{"n":1}"#)
    );
    assert_eq!(out["motd"], "hello");
    assert_eq!(out["motd_owner"], "00000000-0000-0000-0000-000000000000");
    assert_eq!(out["mine"], 2, "the server wrote past permission_write 0");
    assert_eq!(out["mine_write"], 0);
    assert_eq!(out["read_count"], 2);
    assert_eq!(out["first_page"], 1);
    assert_eq!(out["has_cursor"], true);
    assert_eq!(out["second_page"], 1);
    assert_eq!(out["own"], 1);
    assert_eq!(out["stale_refused"], true);
    assert!(
        out["stale_error"]
            .as_str()
            .unwrap()
            .contains("storage write rejected - version check failed"),
        "{}",
        out["stale_error"]
    );
    assert_eq!(out["bad_refused"], true);
    assert!(
        out["bad_error"]
            .as_str()
            .unwrap()
            .contains("expects value to be supplied")
    );
    assert_eq!(out["deleted"], true);
    // The owner reads the object the server locked (write permission 0,
    // omitted on the wire as a zero value).
    let r = t
        .post_bearer(
            "/v2/storage",
            &token(&s),
            json!({"object_ids": [{"collection": "lua", "key": "mine", "user_id": user_id(&s)}]}),
        )
        .await;
    assert_eq!(r.body["objects"][0]["permission_write"], Value::Null);
    // A client may list the server's public objects by the system user's id;
    // the module deleted its only one.
    let r = t
        .get_bearer(
            "/v2/storage/lua/00000000-0000-0000-0000-000000000000?limit=10",
            &token(&s),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.get("objects").is_none(), "{}", r.body);
}

async fn lua_wallet_calls(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let s = t.device_session("lua-wallet-device1").await;
    let out = call(&t, &s, "lua_wallet").await;
    assert_eq!(out["gold"], 100);
    assert_eq!(out["previous_gold"], Value::Null);
    assert_eq!(out["gold2"], 70);
    assert_eq!(out["previous2"], 100);
    assert_eq!(out["negative_refused"], true);
    assert!(
        out["negative_error"]
            .as_str()
            .unwrap()
            .contains("wallet update rejected negative value at path 'gold'"),
        "{}",
        out["negative_error"]
    );
    assert_eq!(out["bulk_gems"], 3);
    assert_eq!(out["bulk_user"], user_id(&s));
    // Three ledger entries, newest first: pages of 2 then 1.
    assert_eq!(out["first_page"], 2);
    assert_eq!(out["first_change"], 1);
    assert_eq!(out["rest"], 1);
    assert_eq!(out["rest_cursor"], "");
    assert_eq!(out["note"], "checked");
    assert_eq!(out["reason"], "bulk");
    // The account endpoint shows the wallet.
    let r = t.get_bearer("/v2/account", &token(&s)).await;
    let wallet: Value = serde_json::from_str(r.body["wallet"].as_str().unwrap()).unwrap();
    assert_eq!(wallet, json!({"gold": 70, "gems": 3}));
}

async fn lua_multi_update(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let s = t.device_session("lua-multi-device01").await;
    let out = call(&t, &s, "lua_multi").await;
    assert_eq!(out["failed"], true);
    assert!(
        out["failed_error"]
            .as_str()
            .unwrap()
            .contains("error running multi update"),
        "{}",
        out["failed_error"]
    );
    assert_eq!(out["nothing_written"], true);
    assert_eq!(out["acks"], 1);
    assert_eq!(out["coins"], 5);
    assert_eq!(out["display_name"], "Multi");
}

async fn lua_storage_write_retry(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    let s = t.device_session("lua-retry-device01").await;
    let out = call(&t, &s, "lua_storage_write_retry").await;
    assert_eq!(out["calls"], 2, "one conflict, then a fresh read: {out}");
    assert_eq!(out["ack_key"], "counter");
    assert_eq!(out["ack_user"], user_id(&s).as_str());
    assert_eq!(out["n"], 12, "the second attempt built on the other write");
    assert_eq!(out["version_matches"], true);
    assert!(
        out["exhausted"]
            .as_str()
            .unwrap()
            .contains("storage write retries exhausted"),
        "{out}"
    );
    assert_eq!(out["tries"], 3, "the first attempt and 2 retries");
    assert_eq!(out["created"], 1);
    assert_eq!(out["fresh_found"], 0);
    assert_eq!(out["empty_keys"], 0);
    assert_eq!(out["nothing_to_write"], 0);
    let text = |k: &str| out[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("bad_retries").contains("max retries must be a value between 0 and 10"),
        "{out}"
    );
    assert!(
        text("bad_fn").contains("expects a valid update function"),
        "{out}"
    );
    assert!(
        text("bad_keys").contains("expects a valid set of keys"),
        "{out}"
    );
    assert!(
        text("bad_return").contains("expects to return a valid table"),
        "{out}"
    );
    assert!(text("fn_error").contains("boom"), "{out}");
}
