//! `nk.storage_*` and `nk.wallet*` argument handling, against the fake
//! services: Nakama's defaults (system user, owner read and write), what a
//! Lua table becomes, and Nakama's argument errors before anything is sent.

use ludus_core::storage::version_of;
use ludus_runtime::CallContext;
use serde_json::{Value, json};

use crate::support::{settings, start};

async fn call(id: &str) -> Value {
    let rt = start(settings("storage")).await.unwrap();
    let out = rt
        .rpc(CallContext::default(), id, String::new())
        .await
        .unwrap_or_else(|e| panic!("rpc {id} failed: {e:?}"));
    serde_json::from_str(&out).unwrap()
}

fn contains(out: &Value, field: &str, text: &str) {
    let got = out[field].as_str().unwrap_or_default();
    assert!(got.contains(text), "{field}: {got:?} lacks {text:?}");
}

#[tokio::test]
async fn storage_arguments_follow_nakama() {
    let out = call("writes").await;
    assert_eq!(
        out["acks"][0],
        json!({
            "collection": "c:1:1:Any",
            "key": "defaults",
            "user_id": "00000000-0000-0000-0000-000000000000",
            "version": version_of(r#"{"a":1}"#),
        })
    );
    assert_eq!(out["acks"][1]["collection"], "c:2:0:IfNotExists");
    assert_eq!(
        out["acks"][1]["user_id"],
        "8d0f7a2e-4b0c-4a4e-9d55-2b1f0e1c9f10"
    );
    assert_eq!(out["acks"][1]["version"], version_of(r#"{"b":[1,2]}"#));
    assert_eq!(out["empty"], 0);
    contains(&out, "no_value", "expects value to be supplied");
    contains(&out, "no_key", "expects key to be supplied");
    contains(
        &out,
        "empty_collection",
        "expects collection to be a non-empty string",
    );
    contains(&out, "bad_user", "expects user_id to be a valid ID");
    contains(&out, "bad_read", "invalid read permission supplied");
    contains(&out, "array_value", "value must be a json object");
    contains(&out, "not_a_list", "expects a valid set of data");
    contains(&out, "read_no_key", "expects key to be supplied");
    contains(
        &out,
        "delete_empty_version",
        "expects version to be a non-empty string",
    );
    contains(&out, "list_negative", "limit must not be negative");
}

#[tokio::test]
async fn wallet_arguments_follow_nakama() {
    let out = call("wallet").await;
    assert_eq!(out["updated"], json!({"gold": 5, "gems": -2}));
    assert_eq!(out["previous_empty"], true);
    contains(
        &out,
        "fraction",
        "expects changeset values to be whole numbers",
    );
    contains(&out, "bad_user", "expects a valid user id");
    contains(
        &out,
        "bulk_missing_changeset",
        "expects changeset to be supplied",
    );
    contains(&out, "ledger_limit", "expects limit to be 0-100");
}
