//! The `nk` API as modules use it: every implemented function is called by
//! `fixtures/nk/main.lua` and its results are checked here.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use ludus_realtime::Modules as _;
use ludus_runtime::{CallContext, Code, ExecutionMode, Runtime};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::support::{settings, start};

async fn runtime() -> Runtime {
    start(settings("nk")).await.unwrap()
}

async fn call(rt: &Runtime, id: &str, payload: &str) -> Value {
    let out = rt
        .rpc(CallContext::default(), id, payload.to_string())
        .await
        .unwrap_or_else(|e| panic!("rpc {id} failed: {e:?}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("rpc {id} answered {out:?}: {e}"))
}

#[tokio::test]
async fn rpc_ids_are_case_insensitive_and_payloads_round_trip() {
    let rt = runtime().await;
    assert!(rt.has_rpc("echo") && rt.has_rpc("ECHO"));
    let out = rt
        .rpc(CallContext::default(), "EcHo", "héllo \u{0}".into())
        .await
        .unwrap();
    assert_eq!(out, "héllo \u{0}");
    let out = rt
        .rpc(CallContext::default(), "nothing", "x".into())
        .await
        .unwrap();
    assert_eq!(out, "");
    let err = rt
        .rpc(CallContext::default(), "not_a_string", "".into())
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::Internal);
    let err = rt
        .rpc(CallContext::default(), "missing", "".into())
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::NotFound);
}

#[tokio::test]
async fn payload_over_the_limit_is_refused() {
    let rt = runtime().await;
    let err = rt
        .rpc(CallContext::default(), "echo", "x".repeat(4097))
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
    assert!(err.message.contains("too large"), "{}", err.message);
}

#[tokio::test]
async fn json_follows_nakama_rules() {
    let rt = runtime().await;
    let v = call(&rt, "json", r#"{"a":[1,2,{"b":null}],"n":1.5,"s":"x"}"#).await;
    assert_eq!(v["decoded"], json!({"a":[1,2,{}],"n":1.5,"s":"x"}));
    assert_eq!(v["empty"], json!({}));
    assert_eq!(v["list"], json!([1, 2.5, "three"]));
    assert_eq!(v["holes"], json!(["a", null, "c"]));
    assert_eq!(v["nested"], json!({"a":{"b":true}}));
}

#[tokio::test]
async fn codecs_hashes_and_crypto() {
    let rt = runtime().await;
    let v = call(&rt, "codecs", "").await;
    assert_eq!(v["b64"], "aGVsbG8/");
    assert_eq!(v["b64_back"], "hello?");
    assert_eq!(v["b64_nopad"], "YQ");
    assert_eq!(v["b64url"], "__4=");
    assert_eq!(v["b64url_back"], "fffe");
    assert_eq!(v["b16"], "4142");
    assert_eq!(v["b16_back"], "AB");
    assert_eq!(v["md5"], "900150983cd24fb0d6963f7d28e17f72");
    assert_eq!(
        v["sha256"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        v["hmac"],
        "5031fe3d989c6d1537a013fa6e739da23463fdaec3b70137d828e36ace221bd0"
    );
    assert_eq!(v["bcrypt_ok"], true);
    assert_eq!(v["bcrypt_bad"], false);
    assert_eq!(v["aes128"], "12345678");
    assert_eq!(v["aes256"], "abcd");
    assert_eq!(v["aes_len"], 20, "16-byte iv + input padded to 4 bytes");
    assert_eq!(v["uuid"].as_str().unwrap().len(), 36);
    assert!(v["time"].as_i64().unwrap() > 1_600_000_000_000);
    assert_eq!(v["time_table"], 1_609_459_200_000i64);
    assert_eq!(v["cron"], 1_609_545_600);
    assert_eq!(v["bad_b64"], false);
    assert!(
        v["bad_key"]
            .as_str()
            .unwrap()
            .contains("expects key 16 bytes long")
    );

    let jwt = v["jwt"].as_str().unwrap();
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    assert_eq!(b64.decode(parts[1]).unwrap(), br#"{"exp":100,"sub":"u1"}"#);
    let mut mac = Hmac::<Sha256>::new_from_slice(b"key").unwrap();
    mac.update(format!("{}.{}", parts[0], parts[1]).as_bytes());
    assert_eq!(
        b64.decode(parts[2]).unwrap(),
        mac.finalize().into_bytes().to_vec()
    );
}

/// RS256 tokens signed in Lua with a PKCS#8 or a PKCS#1 key verify with the
/// public key (read independently of the signing code); a bad key or an
/// unknown algorithm fails with a message that says what to pass.
#[tokio::test]
async fn jwt_generate_signs_rs256() {
    use rsa::pkcs8::DecodePublicKey as _;
    use rsa::signature::Verifier as _;

    let keys = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/keys");
    let public = std::fs::read_to_string(format!("{keys}/rs256_public.pem")).unwrap();
    let verifier = rsa::pkcs1v15::VerifyingKey::<Sha256>::new(
        rsa::RsaPublicKey::from_public_key_pem(&public).unwrap(),
    );
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let rt = runtime().await;
    for file in ["rs256_pkcs8.pem", "rs256_pkcs1.pem"] {
        let pem = std::fs::read_to_string(format!("{keys}/{file}")).unwrap();
        let v = call(&rt, "jwt_rs256", &pem).await;
        let token = v["token"].as_str().unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "{token}");
        assert_eq!(
            b64.decode(parts[0]).unwrap(),
            br#"{"alg":"RS256","typ":"JWT"}"#
        );
        assert_eq!(b64.decode(parts[1]).unwrap(), br#"{"exp":100,"sub":"u1"}"#);
        let signature =
            rsa::pkcs1v15::Signature::try_from(b64.decode(parts[2]).unwrap().as_slice()).unwrap();
        let signed = format!("{}.{}", parts[0], parts[1]);
        verifier
            .verify(signed.as_bytes(), &signature)
            .unwrap_or_else(|e| panic!("{file}: signature does not verify: {e}"));
        // A changed payload does not verify: the check above can fail.
        assert!(verifier.verify(b"x.y", &signature).is_err());

        let bad_pem = v["bad_pem"].as_str().unwrap();
        assert!(
            bad_pem.contains("could not parse private key")
                && bad_pem.contains("BEGIN PRIVATE KEY"),
            "{bad_pem}"
        );
        let bad_algo = v["bad_algo"].as_str().unwrap();
        assert!(
            bad_algo.contains("only allowed 'HS256', 'RS256'"),
            "{bad_algo}"
        );
    }
}

#[tokio::test]
async fn ctx_carries_nakama_fields() {
    let rt = runtime().await;
    let mut ctx = CallContext::new(ExecutionMode::Rpc);
    ctx.user_id = Some("7f0b4f4e-0000-4000-8000-000000000001".into());
    ctx.username = "alice".into();
    ctx.vars.insert("k".into(), "v".into());
    ctx.query_params
        .insert("q".into(), vec!["1".into(), "2".into()]);
    ctx.headers.insert("X-Thing".into(), vec!["h".into()]);
    ctx.client_ip = "127.0.0.1".into();
    let out = rt.rpc(ctx, "ctx", String::new()).await.unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mode"], "rpc");
    assert_eq!(v["node"], "test-node");
    assert_eq!(v["env"], json!({"region": "eu"}));
    assert_eq!(v["user_id"], "7f0b4f4e-0000-4000-8000-000000000001");
    assert_eq!(v["username"], "alice");
    assert_eq!(v["vars"], json!({"k": "v"}));
    assert_eq!(v["query_params"], json!({"q": ["1", "2"]}));
    assert_eq!(v["headers"], json!({"X-Thing": ["h"]}));
    assert_eq!(v["client_ip"], "127.0.0.1");
    assert_eq!(v["same"], true);
    assert_eq!(v["config_name"], "test-node");
}

#[tokio::test]
async fn localcache_and_run_once() {
    let rt = runtime().await;
    let v = call(&rt, "cache", "stored").await;
    assert_eq!(v["got"], "stored");
    assert_eq!(v["gone"], "default");
    assert_eq!(v["cleared"], true);
    // Cleared by the call above, which shows the cache is shared; run_once
    // ran before that, in one VM only, as its count of 1 showed.
    assert_eq!(v["run_once_count"], 1);
    assert_eq!(v["run_once_mode"], "run_once");
}

#[tokio::test]
async fn logger_returns_its_message() {
    let rt = runtime().await;
    let out = rt
        .rpc(CallContext::default(), "logger", "x".into())
        .await
        .unwrap();
    assert_eq!(out, "error x");
}

#[tokio::test]
async fn accounts_users_and_tokens() {
    let rt = runtime().await;
    let v = call(&rt, "accounts", "").await;
    assert_eq!(v["username"], "devuser");
    assert_eq!(v["created"], true);
    assert_eq!(v["account_user_id"], v["uid"]);
    assert_eq!(v["account_nested"], v["uid"]);
    assert_eq!(v["account_devices"], json!([{"id": "device-0001"}]));
    assert_eq!(v["account_wallet"], json!({}));
    assert_eq!(v["accounts"], 2);
    assert_eq!(v["users"], 2);
    assert_eq!(v["by_name"], "renamed");
    assert_eq!(v["metadata_level"], 3);
    assert_eq!(v["exp"], 4_000_000_000i64);
    assert!(v["token"].as_str().unwrap().ends_with(":devuser:1"));
}

#[tokio::test]
async fn http_request_goes_through_the_services() {
    let rt = runtime().await;
    let v = call(&rt, "http", "ping").await;
    assert_eq!(
        v,
        json!({"code": 201, "content_type": "text/plain", "body": "POST ping"})
    );
}

/// `nk.sql_exec` / `nk.sql_query` convert Lua values to `SqlValue` and
/// back (the services echo them; the real database is tested in ludus-server
/// and the store suite), and refuse what cannot be sent.
#[tokio::test]
async fn sql_values_convert_both_ways() {
    let rt = runtime().await;
    let v = call(&rt, "sql", "").await;
    assert_eq!(v["rows"], 2);
    assert_eq!(
        (v["changed"].clone(), v["none"].clone()),
        (json!(2), json!(0))
    );
    assert_eq!(v["p1"], 42);
    assert_eq!(v["p2"], 1.25);
    assert_eq!(v["p3"], true);
    assert_eq!(v["p4"], "text");
    assert_eq!(v["p5"], r#"{"a":1}"#, "tables travel as JSON text");
    assert_eq!(
        (v["p6_len"].clone(), v["p6_byte"].clone()),
        (json!(2), json!(255))
    );
    assert_eq!(v["p7"], 9_007_199_254_740_992i64);
    assert_eq!(v["null_is_nil"], true);
    assert_eq!(
        (
            v["bool"].clone(),
            v["int"].clone(),
            v["float"].clone(),
            v["text"].clone()
        ),
        (json!(true), json!(-7), json!(2.5), json!("t"))
    );
    assert_eq!(v["bytes"], json!([255, 0]));
    let err = |k: &str| v[k].as_str().unwrap().to_owned();
    assert!(
        err("err_list").contains("expects a list of params"),
        "{}",
        err("err_list")
    );
    assert!(
        err("err_fn").contains("parameter $1 is a function"),
        "{}",
        err("err_fn")
    );
    assert!(
        err("err_db").contains("sql query error: relation \"fail\" does not exist"),
        "{}",
        err("err_db")
    );
    assert!(
        err("err_empty").contains("expects a query string"),
        "{}",
        err("err_empty")
    );
}

#[tokio::test]
async fn lua_errors_map_to_codes() {
    let rt = runtime().await;
    let e = rt
        .rpc(CallContext::default(), "fail_plain", "".into())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (Code::Internal, "plain failure")
    );
    let e = rt
        .rpc(CallContext::default(), "fail_code", "".into())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (Code::InvalidArgument, "custom failure")
    );
    let e = rt
        .rpc(CallContext::default(), "fail_nk", "".into())
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::Internal);
    assert!(e.message.contains("valid identifier"), "{}", e.message);
    // The failures left the VMs usable.
    assert_eq!(
        rt.rpc(CallContext::default(), "echo", "ok".into())
            .await
            .unwrap(),
        "ok"
    );
}

#[tokio::test]
async fn registering_after_start_up_is_refused() {
    let rt = runtime().await;
    let out = rt
        .rpc(CallContext::default(), "late_register", "".into())
        .await
        .unwrap();
    assert!(out.contains("only allowed while modules load"), "{out}");
}

#[tokio::test]
async fn module_tables_are_private_to_each_vm() {
    let rt = runtime().await;
    let mut counts = Vec::new();
    for _ in 0..6 {
        let n: u32 = rt
            .rpc(CallContext::default(), "module_counter", "".into())
            .await
            .unwrap()
            .parse()
            .unwrap();
        counts.push(n);
    }
    // Two VMs, each with its own counter: never more than the calls it served.
    assert!(counts.iter().all(|n| *n <= 6), "{counts:?}");
}

#[tokio::test]
async fn hooks_rewrite_reject_and_observe() {
    let rt = runtime().await;
    assert!(rt.has_before("authenticatedevice"));
    assert!(rt.has_after("authenticatedevice"));
    assert!(!rt.has_before("getaccount"));
    let req = json!({"account": {"id": "device-1"}, "username": "mine"});
    let out = rt
        .before(CallContext::default(), "authenticatedevice", req.clone())
        .await
        .unwrap();
    assert_eq!(out.unwrap()["username"], "from-hook");
    let rejected = json!({"account": {"id": "reject-me"}});
    let out = rt
        .before(CallContext::default(), "authenticatedevice", rejected)
        .await
        .unwrap();
    assert_eq!(out, None);
    rt.after(
        CallContext::default(),
        "authenticatedevice",
        json!({"created": true}),
        req,
    )
    .await
    .unwrap();
    let seen = call(&rt, "cache_get", "after_seen").await;
    assert_eq!(seen["value"], "device-1:true");
    // No hook: the request passes through unchanged.
    let out = rt
        .before(CallContext::default(), "getaccount", json!({"x": 1}))
        .await
        .unwrap();
    assert_eq!(out, Some(json!({"x": 1})));
    assert!(rt.has_rt_before("channeljoin"));
    let env = json!({"channel_join": {"target": "room"}});
    let out = rt
        .rt_before(CallContext::default(), "channeljoin", env.clone())
        .await
        .unwrap();
    assert_eq!(out, Some(env));
}

#[tokio::test]
async fn matchmaker_matched_and_shutdown() {
    let rt = runtime().await;
    let out = rt
        .matchmaker_matched(json!([{"a": 1}, {"b": 2}]))
        .await
        .unwrap();
    assert_eq!(out.as_deref(), Some("match-2"));
    rt.shutdown().await;
    let err = rt
        .rpc(CallContext::default(), "echo", "x".into())
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::Unavailable);
}

#[tokio::test]
async fn uuid_bytes_random_rsa_cron_prev_and_file_read() {
    use rsa::pkcs1::EncodeRsaPrivateKey as _;
    use rsa::signature::Verifier as _;
    let rt = runtime().await;
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 1024).unwrap();
    let pem = key.to_pkcs1_pem(rsa::pkcs1::LineEnding::LF).unwrap();
    let v = call(&rt, "utils", &pem).await;
    assert_eq!(v["uuid_len"], 16);
    assert_eq!(v["uuid_back"], "4ec4f126-3f9d-11e7-84ef-b7c182b36521");
    let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    assert!(text("bad_uuid").contains("not a valid UUID string"), "{v}");
    assert!(text("bad_uuid_bytes").contains("not a valid UUID byte string"));
    assert_eq!(v["random_len"], 32);
    assert_eq!(v["random_differs"], true);
    assert_eq!(v["random_fraction"], 3);
    assert!(text("random_zero").contains("count must be 1-1000"));
    assert!(text("random_many").contains("count must be 1-1000"));
    // The signature verifies with the key's public half.
    let signature = base64::engine::general_purpose::STANDARD
        .decode(text("signature"))
        .unwrap();
    let verifier = rsa::pkcs1v15::VerifyingKey::<Sha256>::new(key.to_public_key());
    let signature = rsa::pkcs1v15::Signature::try_from(&signature[..]).unwrap();
    verifier.verify(b"sign me", &signature).unwrap();
    assert!(text("bad_key").contains("no valid blocks found"), "{v}");
    assert!(text("no_input").contains("expects input string"));
    assert_eq!(v["cron_prev"], 1_609_545_600);
    assert_eq!(v["cron_prev_exact"], 1_609_459_200);
    assert!(text("cron_bad").contains("expects a valid cron string"));
    assert_eq!(v["file"], "hello from runtime.path\n");
    assert_eq!(v["file_dot"], "hello from runtime.path\n");
    assert!(text("file_escape").contains("inside runtime.path"), "{v}");
    assert!(text("file_absolute").contains("inside runtime.path"), "{v}");
    assert!(text("file_missing").contains("failed to open file"), "{v}");
    assert!(text("file_empty").contains("expects relative path string"));
}
