//! Purchase and subscription validation over REST and Lua against a
//! stand-in for the stores, started by the test on 127.0.0.1: Apple's
//! `verifyReceipt` (production and sandbox), Google's token endpoint (which
//! checks the service account's RS256 assertion with the public half of a
//! key made here) and Android Publisher, and Huawei's token and order
//! services. Huawei purchase data is signed with an RSA key made here and
//! Facebook Instant payments with an HMAC written out below; the server's
//! own code checks them. Every outcome is checked on both backends, and the
//! console's purchase and subscription calls list what was stored.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rsa::pkcs8::{EncodePrivateKey as _, EncodePublicKey as _};
use rsa::{Pkcs1v15Sign, RsaPrivateKey, RsaPublicKey};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    apple_purchases_and_subscriptions_validate_and_persist,
    google_huawei_and_instant_purchases_validate,
    samsung_purchases_validate_once_and_refusals_are_named,
    bad_receipts_and_failing_stores_are_refused_never_500,
    lua_purchase_functions_with_nakamas_arguments,
    js_purchase_functions_with_nakamas_keys,
);

const SECRET: &str = "apple-shared-secret";
const SERVICE_ACCOUNT: &str = "iap@ludus-test.iam.gserviceaccount.com";
const INSTANT_SECRET: &str = "instant-app-secret";
const HUAWEI_ID: &str = "huawei-client";
const HUAWEI_SECRET: &str = "huawei-secret";
const PACKAGE: &str = "com.ludus.game";

/// Keys made once per test: the Google service account's and the Huawei
/// app's.
struct Keys {
    google: RsaPrivateKey,
    huawei: RsaPrivateKey,
}

fn keys() -> Arc<Keys> {
    let mut rng = rsa::rand_core::OsRng;
    Arc::new(Keys {
        google: RsaPrivateKey::new(&mut rng, 2048).unwrap(),
        huawei: RsaPrivateKey::new(&mut rng, 2048).unwrap(),
    })
}

#[derive(Clone)]
struct StandIn {
    google_public: RsaPublicKey,
    base: Arc<std::sync::OnceLock<String>>,
    google_tokens: Arc<AtomicUsize>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// What Apple answers for a receipt: `purchase:<tx>`, `sub:<original>`,
/// `sandbox-purchase:<tx>` (production says 21007), `retry`, `invalid`.
fn apple_answer(receipt: &str, sandbox: bool) -> Value {
    let environment = if sandbox { "Sandbox" } else { "Production" };
    if let Some(tx) = receipt.strip_prefix("sandbox-purchase:") {
        if !sandbox {
            return json!({"status": 21007});
        }
        return json!({"status": 0, "environment": environment, "receipt": {"in_app": [
            {"transaction_id": tx, "original_transaction_id": tx, "product_id": "gems",
             "purchase_date_ms": "1700000000000"}]}});
    }
    if let Some(tx) = receipt.strip_prefix("purchase:") {
        return json!({"status": 0, "environment": environment, "receipt": {"in_app": [
            {"transaction_id": tx, "original_transaction_id": tx, "product_id": "gems",
             "purchase_date_ms": "1700000000000"}]}});
    }
    if let Some(original) = receipt.strip_prefix("sub:") {
        let future = (now_ms() + 86_400_000).to_string();
        let past = (now_ms() - 86_400_000).to_string();
        return json!({"status": 0, "environment": environment,
            "receipt": {"in_app": []},
            "latest_receipt_info": [
                {"transaction_id": "r1", "original_transaction_id": original, "product_id": "vip",
                 "original_purchase_date_ms": "1700000000000", "purchase_date_ms": "1700000000000",
                 "expires_date_ms": past},
                {"transaction_id": "r2", "original_transaction_id": original, "product_id": "vip",
                 "original_purchase_date_ms": "1700000000000", "purchase_date_ms": "1700000500000",
                 "expires_date_ms": future}]});
    }
    match receipt {
        "retry" => json!({"status": 21100, "is-retryable": true}),
        _ => json!({"status": 21002}),
    }
}

async fn apple(sandbox: bool, body: Bytes) -> Response {
    let req: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(req["exclude-old-transactions"], true);
    let receipt = req["receipt-data"].as_str().unwrap_or_default();
    if receipt == "down" {
        return (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response();
    }
    if req["password"] != SECRET {
        return axum::Json(json!({"status": 21004})).into_response();
    }
    axum::Json(apple_answer(receipt, sandbox)).into_response()
}

fn form(body: &[u8]) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let mut out = Vec::new();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(if b[i] == b'+' { b' ' } else { b[i] });
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    };
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

/// Google's token endpoint: the assertion must be the service account's,
/// signed by its key and addressed to this endpoint.
async fn google_token(State(s): State<StandIn>, body: Bytes) -> Response {
    let f = form(&body);
    let get = |k: &str| f.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(
        get("grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    let assertion = get("assertion").unwrap_or_default();
    let parts: Vec<&str> = assertion.split('.').collect();
    let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    let digest = Sha256::digest(format!("{}.{}", parts[0], parts[1]));
    if s.google_public
        .verify(Pkcs1v15Sign::new::<Sha256>(), &digest, &signature)
        .is_err()
    {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    }
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["iss"], SERVICE_ACCOUNT);
    assert_eq!(
        claims["aud"],
        format!("{}/o/oauth2/token", s.base.get().unwrap())
    );
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/androidpublisher"
    );
    s.google_tokens.fetch_add(1, Ordering::SeqCst);
    axum::Json(json!({"access_token": "google-access", "expires_in": 3600, "token_type": "Bearer"}))
        .into_response()
}

fn bearer_is(headers: &HeaderMap, expected: &str) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(expected)
}

async fn google_product(
    headers: HeaderMap,
    Path((package, product, purchase_token)): Path<(String, String, String)>,
) -> Response {
    if !bearer_is(&headers, "Bearer google-access") {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    assert_eq!(package, PACKAGE);
    assert_eq!(product, "gems");
    match purchase_token.as_str() {
        "unknown" => StatusCode::NOT_FOUND.into_response(),
        "cancelled" => axum::Json(json!({"purchaseState": 1})).into_response(),
        t if t.starts_with("test-") => {
            axum::Json(json!({"purchaseState": 0, "purchaseType": 0, "orderId": "GPA.1"}))
                .into_response()
        }
        _ => axum::Json(json!({"purchaseState": 0, "orderId": "GPA.2"})).into_response(),
    }
}

async fn google_subscription(
    headers: HeaderMap,
    Path((_package, purchase_token)): Path<(String, String)>,
) -> Response {
    if !bearer_is(&headers, "Bearer google-access") {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let expiry = chrono_like_rfc3339(now_ms() / 1000 + 86_400);
    let mut answer = json!({"lineItems": [{"productId": "vip", "expiryTime": expiry}],
        "testPurchase": {}});
    if purchase_token == "upgraded" {
        answer["linkedPurchaseToken"] = json!("original-token");
    }
    axum::Json(answer).into_response()
}

/// RFC 3339 in UTC from UNIX seconds (civil-from-days, Howard Hinnant's).
pub(crate) fn chrono_like_rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

async fn huawei_token(body: Bytes) -> Response {
    let f = form(&body);
    let get = |k: &str| f.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if get("client_id").as_deref() != Some(HUAWEI_ID)
        || get("client_secret").as_deref() != Some(HUAWEI_SECRET)
    {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    axum::Json(json!({"access_token": "huawei-access", "expires_in": 3600})).into_response()
}

async fn huawei_verify(headers: HeaderMap, body: Bytes) -> Response {
    let expected = format!("Basic {}", STANDARD.encode("APPAT:huawei-access"));
    if !bearer_is(&headers, &expected) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let req: Value = serde_json::from_slice(&body).unwrap();
    if req["purchaseToken"] == "revoked" {
        return axum::Json(json!({"responseCode": "5", "responseMessage": "invalid"}))
            .into_response();
    }
    let data = json!({"productId": req["productId"], "purchaseToken": req["purchaseToken"]});
    axum::Json(
        json!({"responseCode": "0", "purchaseTokenData": data.to_string(),
        "dataSignature": "x"}),
    )
    .into_response()
}

/// Samsung's receipt service: `good-…` and `test-…` are purchases of
/// `gems` for this app (`test-` in the sandbox), `foreign` is another
/// app's, `garbage` is not JSON; anything else does not exist.
async fn samsung_receipt(Query(q): Query<Vec<(String, String)>>) -> Response {
    let id = q
        .iter()
        .find(|(k, _)| k == "purchaseID")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let ok = |package: &str, mode: &str| {
        axum::Json(json!({"status": "success", "mode": mode, "orderId": "o-1",
            "paymentId": "pay-1", "packageName": package, "itemId": "gems",
            "itemName": "Gems", "itemType": "item", "purchaseDate": "2024-03-01 12:30:05"}))
        .into_response()
    };
    if id.starts_with("good-") {
        ok(PACKAGE, "PRODUCTION")
    } else if id.starts_with("test-") {
        ok(PACKAGE, "TEST")
    } else if id == "foreign" {
        ok("com.other.game", "PRODUCTION")
    } else if id == "garbage" {
        "<html>".into_response()
    } else if id == "down" {
        StatusCode::SERVICE_UNAVAILABLE.into_response()
    } else {
        axum::Json(json!({"status": "fail", "errorCode": 9135, "errorMessage": "not exist order"}))
            .into_response()
    }
}

/// Starts the stand-in; answers its base URL.
async fn stand_in(keys: &Keys) -> (String, Arc<AtomicUsize>) {
    let tokens = Arc::new(AtomicUsize::new(0));
    let state = StandIn {
        google_public: keys.google.to_public_key(),
        base: Arc::new(std::sync::OnceLock::new()),
        google_tokens: tokens.clone(),
    };
    let base_cell = state.base.clone();
    let app = Router::new()
        .route("/prod/verifyReceipt", post(|b: Bytes| apple(false, b)))
        .route("/sandbox/verifyReceipt", post(|b: Bytes| apple(true, b)))
        .route("/o/oauth2/token", post(google_token))
        .route(
            "/androidpublisher/v3/applications/{package}/purchases/products/{product}/tokens/{token}",
            get(google_product),
        )
        .route(
            "/androidpublisher/v3/applications/{package}/purchases/subscriptionsv2/tokens/{token}",
            get(google_subscription),
        )
        .route("/oauth2/v3/token", post(huawei_token))
        .route("/applications/purchases/tokens/verify", post(huawei_verify))
        .route("/iap/v6/receipt", get(samsung_receipt))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    base_cell.set(base.clone()).unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, tokens)
}

async fn start_tweaked(
    b: Backend,
    keys: &Keys,
    tweak: impl FnOnce(&mut ludus_server::Config),
) -> (TestServer, Arc<AtomicUsize>) {
    let (base, tokens) = stand_in(keys).await;
    let pem = keys
        .google
        .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string();
    let huawei_public = STANDARD.encode(
        keys.huawei
            .to_public_key()
            .to_public_key_der()
            .unwrap()
            .as_bytes(),
    );
    let t = TestServer::start_with(b, |c| {
        let i = &mut c.iap;
        i.apple.shared_password = SECRET.into();
        i.apple.base_url = format!("{base}/prod");
        i.apple.sandbox_base_url = format!("{base}/sandbox");
        i.google.client_email = SERVICE_ACCOUNT.into();
        i.google.private_key = pem;
        i.google.base_url = base.clone();
        i.google.oauth_base_url = base.clone();
        i.huawei.public_key = huawei_public;
        i.huawei.client_id = HUAWEI_ID.into();
        i.huawei.client_secret = HUAWEI_SECRET.into();
        i.huawei.base_url = base.clone();
        i.huawei.oauth_base_url = base.clone();
        i.facebook_instant.app_secret = INSTANT_SECRET.into();
        i.samsung.package_name = PACKAGE.into();
        i.samsung.base_url = base.clone();
        i.timeout_ms = 2_000;
        tweak(c);
    })
    .await;
    (t, tokens)
}

fn google_receipt(purchase_token: &str) -> String {
    json!({"orderId": "GPA.1", "packageName": PACKAGE, "productId": "gems",
        "purchaseTime": 1_700_000_000_000_i64, "purchaseState": 0, "purchaseToken": purchase_token})
    .to_string()
}

fn huawei_signed(key: &RsaPrivateKey, purchase_token: &str) -> (String, String) {
    let data = json!({"productId": "gems", "purchaseToken": purchase_token,
        "purchaseTime": 1_700_000_000_000_i64, "purchaseType": 0})
    .to_string();
    let sig = key
        .sign(
            Pkcs1v15Sign::new::<Sha256>(),
            &Sha256::digest(data.as_bytes()),
        )
        .unwrap();
    (data, STANDARD.encode(sig))
}

/// HMAC-SHA256 written out from its definition (RFC 2104), so the test
/// does not share the server's HMAC code.
fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut k = [0u8; 64];
    k[..key.len()].copy_from_slice(key);
    let inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
    let outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
    let inner = Sha256::new()
        .chain_update(&inner)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(&outer)
        .chain_update(inner)
        .finalize()
        .to_vec()
}

fn instant_request(purchase_token: &str, secret: &str) -> String {
    let payload = URL_SAFE_NO_PAD.encode(
        json!({"algorithm": "HMAC-SHA256", "app_id": "42", "is_consumed": false,
            "payment_id": "pay-1", "product_id": "gems", "purchase_time": 1_700_000_000,
            "purchase_token": purchase_token})
        .to_string(),
    );
    let sig = URL_SAFE_NO_PAD.encode(hmac(secret.as_bytes(), payload.as_bytes()));
    format!("{sig}.{payload}")
}

async fn apple_purchases_and_subscriptions_validate_and_persist(b: Backend) {
    let keys = keys();
    let (t, _) = start_tweaked(b, &keys, |_| {}).await;
    let ann = t.device_session("iap-apple-ann").await;
    let bob = t.device_session("iap-apple-bob").await;

    let r = t
        .post_bearer(
            "/v2/iap/purchase/apple",
            &token(&ann),
            json!({"receipt": "purchase:1000"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let p = &r.body["validated_purchases"][0];
    assert_eq!(p["user_id"], user_id(&ann));
    assert_eq!(p["product_id"], "gems");
    assert_eq!(p["transaction_id"], "1000");
    assert_eq!(p.get("store"), None, "APPLE_APP_STORE is 0, left out");
    assert_eq!(p["environment"], 2, "production");
    assert_eq!(p["purchase_time"], "2023-11-14T22:13:20Z");
    assert_eq!(p.get("seen_before"), None);
    assert!(p["create_time"].is_string());
    let raw: Value = serde_json::from_str(p["provider_response"].as_str().unwrap()).unwrap();
    assert_eq!(raw["status"], 0);

    // Seen again, by its owner and then by someone else: still Ann's.
    let r = t
        .post_bearer(
            "/v2/iap/purchase/apple",
            &token(&ann),
            json!({"receipt": "purchase:1000"}),
        )
        .await;
    assert_eq!(
        r.body["validated_purchases"][0]["seen_before"], true,
        "{}",
        r.body
    );
    let r = t
        .post_bearer(
            "/v2/iap/purchase/apple",
            &token(&bob),
            json!({"receipt": "purchase:1000"}),
        )
        .await;
    let p = &r.body["validated_purchases"][0];
    assert_eq!(p["seen_before"], true, "{}", r.body);
    assert_eq!(p["user_id"], user_id(&ann));

    // Not persisted: validated, never stored.
    let r = t
        .post_bearer(
            "/v2/iap/purchase/apple",
            &token(&bob),
            json!({"receipt": "purchase:2000", "persist": false}),
        )
        .await;
    let p = &r.body["validated_purchases"][0];
    assert_eq!(p["transaction_id"], "2000", "{}", r.body);
    assert_eq!(p.get("create_time"), None);
    let r = t
        .post_bearer(
            "/v2/iap/purchase/apple",
            &token(&bob),
            json!({"receipt": "purchase:2000"}),
        )
        .await;
    assert_eq!(r.body["validated_purchases"][0].get("seen_before"), None);

    // A sandbox receipt goes to production, then to the sandbox.
    let r = t
        .post_bearer(
            "/v2/iap/purchase/apple",
            &token(&bob),
            json!({"receipt": "sandbox-purchase:3000"}),
        )
        .await;
    assert_eq!(
        r.body["validated_purchases"][0]["environment"], 1,
        "{}",
        r.body
    );

    // A subscription: the receipt's latest expiry, active, kept for its user.
    let r = t
        .post_bearer(
            "/v2/iap/subscription/apple",
            &token(&ann),
            json!({"receipt": "sub:orig-1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let s = &r.body["validated_subscription"];
    assert_eq!(s["original_transaction_id"], "orig-1");
    assert_eq!(s["product_id"], "vip");
    assert_eq!(s["active"], true);
    assert_eq!(s["user_id"], user_id(&ann));
    let r = t.get_bearer("/v2/iap/subscription/vip", &token(&ann)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["original_transaction_id"], "orig-1");
    assert_eq!(r.body["active"], true);
    let r = t.get_bearer("/v2/iap/subscription/vip", &token(&bob)).await;
    assert_error(&r, 404, 5);
    let r = t
        .post_bearer("/v2/iap/subscription", &token(&ann), json!({"limit": 10}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["validated_subscriptions"].as_array().unwrap().len(),
        1
    );

    // A purchase receipt is not a subscription, and the other way round.
    let r = t
        .post_bearer(
            "/v2/iap/subscription/apple",
            &token(&ann),
            json!({"receipt": "purchase:4000"}),
        )
        .await;
    assert_error(&r, 400, 9);
    let r = t
        .post_bearer(
            "/v2/iap/purchase/apple",
            &token(&ann),
            json!({"receipt": "sub:orig-2"}),
        )
        .await;
    assert_error(&r, 400, 9);

    // The console sees every player's purchases and subscriptions.
    let root = crate::console::root_token(&t).await;
    let r = console_get(&t, "/v2/console/purchase", &root).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let ids: Vec<&str> = r.body["validated_purchases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["transaction_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"1000"), "{ids:?}");
    let ann_id = user_id(&ann);
    let r = console_get(&t, &format!("/v2/console/purchase?user_id={ann_id}"), &root).await;
    for p in r.body["validated_purchases"].as_array().unwrap() {
        assert_eq!(p["user_id"], ann_id.as_str(), "{}", r.body);
    }
    let r = console_get(&t, "/v2/console/iap/purchase/1000", &root).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["transaction_id"], "1000");
    assert_error(
        &console_get(&t, "/v2/console/iap/purchase/nope", &root).await,
        404,
        5,
    );
    let r = console_get(&t, "/v2/console/subscription", &root).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["validated_subscriptions"][0]["original_transaction_id"],
        "orig-1"
    );
    for bad in ["limit=0", "limit=101", "user_id=nope"] {
        let r = console_get(&t, &format!("/v2/console/purchase?{bad}"), &root).await;
        assert_error(&r, 400, 3);
    }
    let other = crate::console::add_user(
        &t,
        &root,
        "noiap",
        json!({"ACCOUNT": crate::console::perm(true, true, true)}),
    )
    .await;
    let msg = assert_error(
        &console_get(&t, "/v2/console/subscription", &other).await,
        403,
        7,
    );
    assert!(msg.contains("permission on IN_APP_PURCHASE,"), "{msg}");
}

async fn console_get(t: &TestServer, path: &str, token: &str) -> crate::support::Reply {
    crate::console::call(t, "GET", path, token, json!({})).await
}

async fn samsung_purchases_validate_once_and_refusals_are_named(b: Backend) {
    let keys = keys();
    let (t, _) = start_tweaked(b, &keys, |_| {}).await;
    let sam = t.device_session("iap-samsung-sam").await;
    let other = t.device_session("iap-samsung-other").await;
    let validate = |session: &Value, body: Value| {
        let bearer = token(session);
        let t = &t;
        async move {
            t.post_bearer("/v2/iap/purchase/samsung", &bearer, body)
                .await
        }
    };
    let r = validate(&sam, json!({"purchase_id": "good-1"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let p = &r.body["validated_purchases"][0];
    assert_eq!(p["store"], 4);
    assert_eq!(p["product_id"], "gems");
    assert_eq!(p["transaction_id"], "good-1");
    assert_eq!(p["environment"], 2);
    assert_eq!(p["purchase_time"], "2024-03-01T12:30:05Z");
    assert_eq!(p["user_id"], user_id(&sam));
    assert_eq!(p.get("seen_before"), None, "{p}");
    // A replay, by anyone, is seen before and never a second grant.
    let r = validate(&other, json!({"purchase_id": "good-1"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["validated_purchases"][0]["seen_before"], true);
    assert_eq!(r.body["validated_purchases"][0]["user_id"], user_id(&sam));
    // Not persisted: validated, nothing stored.
    let r = validate(&sam, json!({"purchase_id": "test-2", "persist": false})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["validated_purchases"][0]["environment"], 1);
    let r = validate(&sam, json!({"purchase_id": "test-2"})).await;
    assert_eq!(r.body["validated_purchases"][0].get("seen_before"), None);
    for (id, status, code, says) in [
        (
            "forged",
            400,
            3,
            "samsung refused the purchase: not exist order (error code 9135)",
        ),
        (
            "foreign",
            400,
            3,
            "samsung purchase is for package \"com.other.game\"",
        ),
        ("garbage", 400, 3, "samsung receipt answer is not json"),
        ("down", 503, 14, "samsung answered status 503"),
    ] {
        let r = validate(&sam, json!({"purchase_id": id})).await;
        let message = assert_error(&r, status, code);
        assert!(message.contains(says), "{id}: {message}");
    }
}

async fn google_huawei_and_instant_purchases_validate(b: Backend) {
    let keys = keys();
    let (t, tokens) = start_tweaked(b, &keys, |_| {}).await;
    let ann = t.device_session("iap-google-ann").await;

    // Google: the receipt bare and in Unity's wrapper; one access token.
    let r = t
        .post_bearer(
            "/v2/iap/purchase/google",
            &token(&ann),
            json!({"purchase": google_receipt("test-token-1")}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let p = &r.body["validated_purchases"][0];
    assert_eq!(p["store"], 1);
    assert_eq!(p["transaction_id"], "test-token-1");
    assert_eq!(p["environment"], 1, "a test purchase is sandbox");
    let wrapped = json!({"json": google_receipt("prod-token-2"), "signature": "s"}).to_string();
    let r = t
        .post_bearer(
            "/v2/iap/purchase/google",
            &token(&ann),
            json!({"purchase": wrapped}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["validated_purchases"][0]["environment"], 2);
    assert_eq!(
        tokens.load(Ordering::SeqCst),
        1,
        "the access token is cached"
    );

    // A cancelled purchase is refused.
    let r = t
        .post_bearer(
            "/v2/iap/purchase/google",
            &token(&ann),
            json!({"purchase": google_receipt("cancelled")}),
        )
        .await;
    assert_error(&r, 400, 9);

    // Google subscription: an upgrade continues the original token.
    let r = t
        .post_bearer(
            "/v2/iap/subscription/google",
            &token(&ann),
            json!({"receipt": google_receipt("upgraded")}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let s = &r.body["validated_subscription"];
    assert_eq!(s["original_transaction_id"], "original-token");
    assert_eq!(s["product_id"], "vip");
    assert_eq!(s["environment"], 1);
    assert_eq!(s["active"], true);

    // Huawei: signed by the app's key, confirmed by the order service.
    let (data, sig) = huawei_signed(&keys.huawei, "hw-token-1");
    let r = t
        .post_bearer(
            "/v2/iap/purchase/huawei",
            &token(&ann),
            json!({"purchase": data, "signature": sig}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let p = &r.body["validated_purchases"][0];
    assert_eq!(p["store"], 2);
    assert_eq!(p["transaction_id"], "hw-token-1");
    assert_eq!(p["environment"], 1);
    let forged = data.replace("gems", "gold");
    let r = t
        .post_bearer(
            "/v2/iap/purchase/huawei",
            &token(&ann),
            json!({"purchase": forged, "signature": sig}),
        )
        .await;
    assert!(assert_error(&r, 400, 3).contains("signature"));
    let (data, sig) = huawei_signed(&keys.huawei, "revoked");
    let r = t
        .post_bearer(
            "/v2/iap/purchase/huawei",
            &token(&ann),
            json!({"purchase": data, "signature": sig}),
        )
        .await;
    assert_error(&r, 400, 9);

    // Facebook Instant: the app secret decides.
    let r = t
        .post_bearer(
            "/v2/iap/purchase/facebookinstant",
            &token(&ann),
            json!({"signed_request": instant_request("fb-token-1", INSTANT_SECRET)}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let p = &r.body["validated_purchases"][0];
    assert_eq!(p["store"], 3);
    assert_eq!(p["transaction_id"], "fb-token-1");
    assert_eq!(p["purchase_time"], "2023-11-14T22:13:20Z");
    let r = t
        .post_bearer(
            "/v2/iap/purchase/facebookinstant",
            &token(&ann),
            json!({"signed_request": instant_request("fb-token-2", "wrong")}),
        )
        .await;
    assert_error(&r, 400, 3);
}

async fn bad_receipts_and_failing_stores_are_refused_never_500(b: Backend) {
    let keys = keys();
    let (t, _) = start_tweaked(b, &keys, |_| {}).await;
    let ann = t.device_session("iap-bad-ann").await;
    let post = |path: &'static str, body: Value| {
        let t = &t;
        let tok = token(&ann);
        async move { t.post_bearer(path, &tok, body).await }
    };
    assert_error(&post("/v2/iap/purchase/apple", json!({})).await, 400, 3);
    let r = post("/v2/iap/purchase/apple", json!({"receipt": "invalid"})).await;
    assert!(assert_error(&r, 400, 9).contains("21002"));
    let r = post("/v2/iap/purchase/apple", json!({"receipt": "retry"})).await;
    assert_error(&r, 503, 14);
    let r = post("/v2/iap/purchase/apple", json!({"receipt": "down"})).await;
    assert!(assert_error(&r, 503, 14).contains("status 500"));
    // A StoreKit 2 signed transaction not signed by Apple's chain.
    let r = post("/v2/iap/purchase/apple", json!({"receipt": "a.b.c"})).await;
    assert!(assert_error(&r, 400, 3).contains("signed transaction"));
    assert_error(&post("/v2/iap/purchase/google", json!({})).await, 400, 3);
    let r = post("/v2/iap/purchase/google", json!({"purchase": "not json"})).await;
    assert!(assert_error(&r, 400, 3).contains("malformed"));
    let r = post(
        "/v2/iap/purchase/google",
        json!({"purchase": google_receipt("unknown")}),
    )
    .await;
    assert_error(&r, 400, 3);
    let r = post(
        "/v2/iap/purchase/huawei",
        json!({"purchase": "{}", "signature": "!!"}),
    )
    .await;
    assert_error(&r, 400, 3);
    let r = post(
        "/v2/iap/purchase/facebookinstant",
        json!({"signed_request": "nodot"}),
    )
    .await;
    assert_error(&r, 400, 3);
    let r = post("/v2/iap/subscription", json!({"limit": 0})).await;
    assert_error(&r, 400, 3);
    let r = post("/v2/iap/subscription", json!({"cursor": "garbage"})).await;
    assert_error(&r, 400, 3);
    let r = post("/v2/iap/purchase/samsung", json!({})).await;
    assert_eq!(assert_error(&r, 400, 3), "purchase id cannot be empty");
    // Without a session, nothing.
    let r = t
        .post_key("/v2/iap/purchase/apple", json!({"receipt": "purchase:1"}))
        .await;
    assert_eq!(r.status, 401);

    // A server whose stores are unconfigured or unreachable.
    let (u, _) = start_tweaked(b, &keys, |c| {
        c.iap.apple.base_url = "http://127.0.0.1:9".into();
        c.iap.google.client_email = String::new();
        c.iap.huawei.client_secret = String::new();
        c.iap.facebook_instant.app_secret = String::new();
    })
    .await;
    let s = u.device_session("iap-unconfigured").await;
    let r = u
        .post_bearer(
            "/v2/iap/purchase/apple",
            &token(&s),
            json!({"receipt": "purchase:1"}),
        )
        .await;
    assert!(assert_error(&r, 503, 14).contains("could not reach apple"));
    for (path, body) in [
        (
            "/v2/iap/purchase/google",
            json!({"purchase": google_receipt("t")}),
        ),
        (
            "/v2/iap/subscription/google",
            json!({"receipt": google_receipt("t")}),
        ),
        (
            "/v2/iap/purchase/huawei",
            json!({"purchase": "{}", "signature": "s"}),
        ),
        (
            "/v2/iap/purchase/facebookinstant",
            json!({"signed_request": "a.b"}),
        ),
    ] {
        let r = u.post_bearer(path, &token(&s), body).await;
        assert!(
            assert_error(&r, 400, 9).contains("not configured"),
            "{path}"
        );
    }
}

async fn lua_purchase_functions_with_nakamas_arguments(b: Backend) {
    let keys = keys();
    let (t, tokens) = start_tweaked(b, &keys, |c| {
        crate::rpc::lua_config(c);
        c.runtime.max_rpc_payload_bytes = 1 << 16;
        // Only a module's override names a Google service account here.
        c.iap.google.client_email = String::new();
    })
    .await;
    let pem = keys
        .google
        .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string();
    let (huawei_data, huawei_signature) = huawei_signed(&keys.huawei, "lua-hw-1");
    let payload = json!({
        "apple": "purchase:lua-1",
        "apple_tx": "lua-1",
        "apple_sub": "sub:lua-orig",
        "google": google_receipt("lua-g-1"),
        "google2": google_receipt("test-lua-g-2"),
        "google_sub": google_receipt("lua-g-sub"),
        "email": SERVICE_ACCOUNT,
        "key": pem,
        "huawei_data": huawei_data,
        "huawei_forged": huawei_data.replace("gems", "gold"),
        "huawei_signature": huawei_signature,
        "instant": instant_request("lua-fb-1", INSTANT_SECRET),
    });
    let s = t.device_session("lua-purchases-device").await;
    let r = t
        .post_bearer(
            "/v2/rpc/lua_purchases",
            &token(&s),
            json!(payload.to_string()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    let first = |call: &str| out[call]["result"]["validated_purchases"][0].clone();
    let me = user_id(&s);

    let apple = &out["apple"]["result"]["validated_purchases"][0];
    assert_eq!(apple["transaction_id"], "lua-1", "{out}");
    assert_eq!(apple["store"], "APPLE_APP_STORE");
    assert_eq!(apple["environment"], "PRODUCTION");
    assert_eq!(apple["purchase_time"], 1_700_000_000);
    assert_eq!(apple["seen_before"], false);
    assert_eq!(apple["user_id"], me.as_str());
    assert_eq!(first("apple_again")["seen_before"], true, "{out}");
    let text = |call: &str| out[call].as_str().unwrap_or_default().to_owned();
    assert!(
        text("apple_wrong_password").contains("error validating apple receipt"),
        "{out}"
    );
    assert!(
        text("google").contains("google iap is not configured"),
        "{out}"
    );
    let google = first("google_override");
    assert_eq!(google["environment"], "SANDBOX", "{out}");
    assert_eq!(google.get("create_time"), None, "not persisted");
    assert_eq!(first("huawei")["store"], "HUAWEI_APP_GALLERY", "{out}");
    assert!(text("huawei_forged").contains("signature"), "{out}");
    assert_eq!(first("instant")["store"], "FACEBOOK_INSTANT_STORE", "{out}");
    assert!(text("samsung").contains("samsung"), "{out}");
    assert!(text("bad_user").contains("bad argument #1"), "{out}");
    assert_eq!(out["get"]["result"]["transaction_id"], "lua-1", "{out}");
    assert_eq!(out["get"]["result"]["user_id"], me.as_str());
    assert_eq!(out["get_missing"].get("result"), None, "{out}");
    // Apple, Huawei: stored; the Google override and Instant were not persisted.
    let page = &out["list_page"];
    assert_eq!(page["result"].as_array().map(Vec::len), Some(1), "{out}");
    assert_ne!(page["cursor"], "");
    assert_eq!(
        out["list_next"]["result"].as_array().map(Vec::len),
        Some(1),
        "{out}"
    );
    assert_eq!(out["list_next"]["cursor"], "");
    assert!(text("list_bad_limit").contains("bad argument #2"), "{out}");
    let sub = &out["sub_apple"]["result"]["validated_subscription"];
    assert_eq!(sub["original_transaction_id"], "lua-orig", "{out}");
    assert_eq!(sub["active"], true);
    let sub = &out["sub_google"]["result"]["validated_subscription"];
    assert_eq!(sub["store"], "GOOGLE_PLAY_STORE", "{out}");
    assert_eq!(out["sub_get"]["result"]["product_id"], "vip", "{out}");
    assert!(
        text("sub_get_missing").contains("subscription not found"),
        "{out}"
    );
    assert_eq!(
        out["subs_list"]["result"].as_array().map(Vec::len),
        Some(2),
        "{out}"
    );
    assert_eq!(
        tokens.load(Ordering::SeqCst),
        1,
        "one token for the override account"
    );
}

/// The JS module's `nk.purchase*` and `nk.subscription*`
/// (`tests/js_nk/index.js`) against the same fake stores: Nakama's JS keys.
async fn js_purchase_functions_with_nakamas_keys(b: Backend) {
    let keys = keys();
    let (t, _tokens) = start_tweaked(b, &keys, |c| {
        c.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js_nk").into();
        c.runtime.max_rpc_payload_bytes = 1 << 16;
        c.iap.google.client_email = String::new();
    })
    .await;
    let payload = json!({
        "apple": "purchase:js-1",
        "appleTx": "js-1",
        "appleSub": "sub:js-orig",
        "google": google_receipt("js-g-1"),
    });
    let s = t.device_session("js-purchases-device").await;
    let r = t
        .post_bearer(
            "/v2/rpc/nk_purchases",
            &token(&s),
            json!(payload.to_string()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    let me = user_id(&s);
    let apple = &out["apple"][0];
    assert_eq!(apple["transactionId"], "js-1", "{out}");
    assert_eq!(apple["store"], "APPLE_APP_STORE");
    assert_eq!(apple["environment"], "PRODUCTION");
    assert_eq!(apple["purchaseTime"], 1_700_000_000);
    assert_eq!(apple["seenBefore"], false);
    assert_eq!(apple["userId"], me.as_str());
    assert!(apple["createTime"].as_i64().is_some(), "persisted: {out}");
    assert_eq!(out["again"], true);
    assert_eq!(out["get"]["transactionId"], "js-1");
    assert_eq!(
        out["list"]["validatedPurchases"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(out["list"]["cursor"], Value::Null);
    let text = |k: &str| out[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("google").contains("google iap is not configured"),
        "{out}"
    );
    assert!(text("samsung").contains("samsung"), "{out}");
    assert_eq!(out["sub"]["originalTransactionId"], "js-orig", "{out}");
    assert_eq!(out["sub"]["active"], true);
    assert_eq!(out["subGet"], "js-orig");
    assert_eq!(out["subs"], 1);
    assert!(
        text("badLimit").starts_with("TypeError: purchasesList: limit must be 1-100"),
        "{out}"
    );
}
