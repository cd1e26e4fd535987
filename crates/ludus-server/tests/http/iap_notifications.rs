//! The stores' server notifications on the console listener. App Store
//! notifications are signed here as Apple signs them: a root, an
//! intermediate and a leaf certificate with real P-256 keys made by the
//! test, the root configured as `iap.apple.root_ca`. Google's are Pub/Sub
//! pushes that the server looks up with a stand-in for Google's token
//! endpoint and Android Publisher, started on 127.0.0.1. Each test checks
//! the stored subscription or purchase as clients and the console see it,
//! what the JS (or native) callback got, and that refused notifications
//! (forged, wrong chain, malformed) answer 400 (Nakama: 500) and change nothing.
//! StoreKit 2 signed transactions sent to the validation routes are signed
//! by the same test chain.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use rsa::pkcs8::EncodePrivateKey as _;
use serde_json::{Value, json};

use crate::both_backends;
use crate::purchases::chrono_like_rfc3339;
use crate::support::{Backend, TestServer, token, user_id};

both_backends!(
    apple_notifications_change_the_subscription_and_call_js,
    refused_apple_notifications_answer_400_and_change_nothing,
    apple_notifications_reach_a_native_callback,
    google_notifications_look_the_token_up_and_call_js,
    storekit2_signed_transactions_validate_against_the_trusted_root,
);

const APPLE_ID: &str = "apple-endpoint-7f3a";
const GOOGLE_ID: &str = "google-endpoint-91c2";
const PACKAGE: &str = "com.ludus.game";

/// A certificate chain as Apple's, with real keys: its leaf signs JWS.
struct Chain {
    root_pem: String,
    x5c: Vec<String>,
    leaf: EcdsaKeyPair,
}

impl Chain {
    fn new() -> Chain {
        let ca = |name: &str| {
            let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
            p.distinguished_name.push(rcgen::DnType::CommonName, name);
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            p
        };
        let root_key = KeyPair::generate().unwrap();
        let root_params = ca("Test Apple Root");
        let root = root_params.self_signed(&root_key).unwrap();
        let root_issuer = rcgen::Issuer::from_params(&root_params, &root_key);
        let inter_key = KeyPair::generate().unwrap();
        let inter_params = ca("Test WWDR Intermediate");
        let inter = inter_params.signed_by(&inter_key, &root_issuer).unwrap();
        let inter_issuer = rcgen::Issuer::from_params(&inter_params, &inter_key);
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let leaf_key = KeyPair::try_from(pkcs8.as_ref()).unwrap();
        let mut lp = CertificateParams::new(Vec::<String>::new()).unwrap();
        lp.distinguished_name
            .push(rcgen::DnType::CommonName, "Test App Store Signing");
        let leaf_cert = lp.signed_by(&leaf_key, &inter_issuer).unwrap();
        Chain {
            root_pem: root.pem(),
            x5c: [leaf_cert.der(), inter.der(), root.der()]
                .iter()
                .map(|d| STANDARD.encode(d))
                .collect(),
            leaf: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                .unwrap(),
        }
    }

    fn sign(&self, payload: &Value) -> String {
        let header = json!({"alg": "ES256", "x5c": self.x5c});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(payload.to_string())
        );
        let sig = self
            .leaf
            .sign(&SystemRandom::new(), input.as_bytes())
            .unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    /// An App Store Server Notification v2 body.
    fn notification(
        &self,
        kind: &str,
        subtype: &str,
        transaction: Value,
        renewal: Value,
    ) -> String {
        let signed = |v: &Value| {
            if v.is_null() {
                String::new()
            } else {
                self.sign(v)
            }
        };
        let payload = json!({
            "notificationType": kind,
            "subtype": subtype,
            "notificationUUID": "5f1b4a57-8c3e-4a8e-9d1e-0c5b7a1d2e3f",
            "version": "2.0",
            "signedDate": now_ms(),
            "data": {
                "bundleId": "com.ludus.game",
                "environment": "Sandbox",
                "signedTransactionInfo": signed(&transaction),
                "signedRenewalInfo": signed(&renewal),
                "status": 1,
            },
        });
        json!({"signedPayload": self.sign(&payload)}).to_string()
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A time `days` from now, in whole seconds (as milliseconds).
fn days_from_now(days: i64) -> i64 {
    (now_ms() / 1000 + days * 86_400) * 1000
}

/// A JS module whose store notification callbacks write what they got to
/// the storage of the purchase's or subscription's owner.
const MODULE: &str = r#"
function record(nk, name, record, payload, type) {
  nk.storageWrite([{collection: "iap_notes", key: name, userId: record.userId,
    value: {record: record, payload: JSON.parse(payload), type: type},
    permissionRead: 2, permissionWrite: 0}]);
}
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerSubscriptionNotificationApple(function (ctx, logger, nk, sub, payload, type) {
    if (ctx.executionMode !== "subscription_notification_apple") { throw new Error("mode " + ctx.executionMode); }
    record(nk, "apple_sub_" + type, sub, payload, type);
  });
  initializer.registerPurchaseNotificationApple(function (ctx, logger, nk, p, payload, type) {
    record(nk, "apple_purchase_" + type, p, payload, type);
  });
  initializer.registerSubscriptionNotificationGoogle(function (ctx, logger, nk, sub, payload, type) {
    record(nk, "google_sub_" + type, sub, payload, type);
  });
  initializer.registerPurchaseNotificationGoogle(function (ctx, logger, nk, p, payload, type) {
    record(nk, "google_purchase_" + type, p, payload, type);
  });
}
"#;

fn module_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.js"), MODULE).unwrap();
    dir
}

async fn start(b: Backend, chain: &Chain, modules: &std::path::Path) -> TestServer {
    let root = chain.root_pem.clone();
    let path = modules.display().to_string();
    TestServer::start_with(b, move |c| {
        c.iap.apple.notifications_endpoint_id = APPLE_ID.into();
        c.iap.apple.root_ca = root;
        c.runtime.path = path;
    })
    .await
}

async fn notify(t: &TestServer, store: &str, id: &str, body: String) -> u16 {
    let url = format!("{}/v2/console/{store}/notifications/{id}", t.console);
    t.http
        .post(url)
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// What the JS callback wrote under `key` for `user`, if anything.
async fn note(t: &TestServer, session: &Value, key: &str) -> Option<Value> {
    let r = t
        .post_bearer(
            "/v2/storage",
            &token(session),
            json!({"object_ids": [{"collection": "iap_notes", "key": key, "user_id": user_id(session)}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let value = r.body["objects"].get(0)?["value"].as_str()?.to_owned();
    Some(serde_json::from_str(&value).unwrap())
}

async fn subscription(t: &TestServer, session: &Value, product: &str) -> crate::support::Reply {
    t.get_bearer(&format!("/v2/iap/subscription/{product}"), &token(session))
        .await
}

fn rfc3339(ms: i64) -> String {
    chrono_like_rfc3339(ms / 1000)
}

async fn apple_notifications_change_the_subscription_and_call_js(b: Backend) {
    let chain = Chain::new();
    let modules = module_dir();
    let t = start(b, &chain, modules.path()).await;
    let ann = t.device_session("iap-note-ann-0001").await;
    let ann_id = user_id(&ann);

    // SUBSCRIBED: the app account token names the player.
    let first_expiry = days_from_now(30);
    let tx = json!({"originalTransactionId": "2000000100", "transactionId": "2000000100",
        "productId": "vip", "appAccountToken": ann_id, "environment": "Sandbox",
        "originalPurchaseDate": 1_700_000_000_000_i64, "purchaseDate": 1_700_000_000_000_i64,
        "expiresDate": first_expiry, "type": "Auto-Renewable Subscription"});
    let body = chain.notification("SUBSCRIBED", "INITIAL_BUY", tx.clone(), Value::Null);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 200);
    let r = subscription(&t, &ann, "vip").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["original_transaction_id"], "2000000100");
    assert_eq!(r.body["expiry_time"], rfc3339(first_expiry));
    assert_eq!(r.body["active"], true);
    assert_eq!(r.body["environment"], 1, "sandbox");
    let note_subscribed = note(&t, &ann, "apple_sub_SUBSCRIBED").await.unwrap();
    assert_eq!(note_subscribed["type"], "SUBSCRIBED");
    assert_eq!(note_subscribed["record"]["productId"], "vip");
    assert_eq!(note_subscribed["record"]["store"], "APPLE_APP_STORE");
    assert_eq!(note_subscribed["record"]["active"], true);
    assert_eq!(
        note_subscribed["payload"]["transactionInfo"]["transactionId"],
        "2000000100"
    );
    assert_eq!(note_subscribed["payload"]["bundleId"], "com.ludus.game");

    // DID_RENEW moves the expiry on.
    let renewed_expiry = days_from_now(60);
    let mut renewal = tx.clone();
    renewal["transactionId"] = json!("2000000200");
    renewal["expiresDate"] = json!(renewed_expiry);
    let body = chain.notification("DID_RENEW", "", renewal.clone(), Value::Null);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 200);
    let r = subscription(&t, &ann, "vip").await;
    assert_eq!(r.body["expiry_time"], rfc3339(renewed_expiry));
    let renewed = note(&t, &ann, "apple_sub_RENEWED").await.unwrap();
    assert_eq!(renewed["record"]["expiryTime"], renewed_expiry / 1000);

    // EXPIRED names no user: the stored subscription's owner is used.
    let ended = days_from_now(-1);
    let info = json!({"originalTransactionId": "2000000100", "productId": "vip",
        "renewalDate": ended, "autoRenewStatus": 0, "environment": "Sandbox"});
    let body = chain.notification("EXPIRED", "VOLUNTARY", Value::Null, info);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 200);
    let r = subscription(&t, &ann, "vip").await;
    assert_eq!(r.body["expiry_time"], rfc3339(ended));
    assert_eq!(r.body["active"], Value::Null, "false is left out");
    assert_eq!(
        note(&t, &ann, "apple_sub_EXPIRED").await.unwrap()["record"]["userId"],
        ann_id.as_str()
    );

    // A refund of the subscription sets its refund time.
    let mut refund = renewal.clone();
    refund["revocationDate"] = json!(now_ms() / 1000 * 1000);
    refund["expiresDate"] = json!(renewed_expiry);
    let body = chain.notification("REFUND", "", refund, Value::Null);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 200);
    let r = subscription(&t, &ann, "vip").await;
    assert!(r.body["refund_time"].is_string(), "{}", r.body);
    assert_eq!(r.body["active"], Value::Null);
    assert_eq!(
        note(&t, &ann, "apple_sub_REFUNDED").await.unwrap()["type"],
        "REFUNDED"
    );

    // A refund of a one-off purchase sets the purchase's refund time and
    // calls the purchase callback.
    let gems = json!({"originalTransactionId": "3000000001", "transactionId": "3000000001",
        "productId": "gems", "appAccountToken": ann_id, "purchaseDate": 1_700_000_100_000_i64,
        "revocationDate": 1_700_000_900_000_i64, "type": "Consumable"});
    let body = chain.notification("REFUND", "", gems, Value::Null);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 200);
    let refunded = note(&t, &ann, "apple_purchase_REFUNDED").await.unwrap();
    assert_eq!(refunded["record"]["transactionId"], "3000000001");
    assert_eq!(refunded["record"]["refundTime"], 1_700_000_900);
    let root = crate::console::root_token(&t).await;
    let r = crate::console::call(
        &t,
        "GET",
        "/v2/console/iap/purchase/3000000001",
        &root,
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user_id"], ann_id.as_str());
    assert!(r.body["refund_time"].is_string(), "{}", r.body);

    // The older path serves the same handler; another id is not served.
    let body = chain.notification("TEST", "", Value::Null, Value::Null);
    let url = format!("{}/v2/console/apple/subscriptions/{APPLE_ID}", t.console);
    let status = t
        .http
        .post(url)
        .body(body.clone())
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 200);
    assert_eq!(notify(&t, "apple", "another-id", body).await, 404);
}

async fn refused_apple_notifications_answer_400_and_change_nothing(b: Backend) {
    let chain = Chain::new();
    let modules = module_dir();
    let t = start(b, &chain, modules.path()).await;
    let bob = t.device_session("iap-note-bob-0001").await;
    let bob_id = user_id(&bob);
    let tx = json!({"originalTransactionId": "4000000100", "transactionId": "4000000100",
        "productId": "vip", "appAccountToken": bob_id,
        "originalPurchaseDate": 1_700_000_000_000_i64, "expiresDate": days_from_now(30)});

    // Signed by a chain under another root.
    let stranger = Chain::new();
    let body = stranger.notification("SUBSCRIBED", "", tx.clone(), Value::Null);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 400);

    // A forged signature: the payload changed after signing.
    let good = chain.notification("SUBSCRIBED", "", tx.clone(), Value::Null);
    let signed: Value = serde_json::from_str(&good).unwrap();
    let parts: Vec<&str> = signed["signedPayload"]
        .as_str()
        .unwrap()
        .split('.')
        .collect();
    let mut payload: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    payload["notificationType"] = json!("DID_RENEW");
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(payload.to_string()),
        parts[2]
    );
    let body = json!({"signedPayload": forged}).to_string();
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 400);

    // A chain of two certificates, and bodies that are not notifications.
    let mut short = Chain::new();
    short.x5c.truncate(2);
    let body = short.notification("SUBSCRIBED", "", tx.clone(), Value::Null);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 400);
    for body in ["not json", "{}", r#"{"signedPayload":"a.b.c"}"#] {
        assert_eq!(
            notify(&t, "apple", APPLE_ID, body.into()).await,
            400,
            "{body}"
        );
    }

    // Nothing was stored or called.
    let r = subscription(&t, &bob, "vip").await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(note(&t, &bob, "apple_sub_SUBSCRIBED").await.is_none());
    assert!(note(&t, &bob, "apple_sub_RENEWED").await.is_none());

    // A renewal of a subscription nobody validated and no token names:
    // 503, so Apple retries once the client has validated it.
    let mut unowned = tx.clone();
    unowned["appAccountToken"] = json!("");
    let body = chain.notification("DID_RENEW", "", unowned, Value::Null);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 503);
    // A token naming no account is skipped with 200.
    let mut ghost = tx.clone();
    ghost["appAccountToken"] = json!(uuid::Uuid::now_v7().to_string());
    let body = chain.notification("SUBSCRIBED", "", ghost, Value::Null);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 200);
    assert_eq!(subscription(&t, &bob, "vip").await.status, 404);

    // The genuine notification is then accepted.
    assert_eq!(notify(&t, "apple", APPLE_ID, good).await, 200);
    assert_eq!(subscription(&t, &bob, "vip").await.status, 200);
}

async fn apple_notifications_reach_a_native_callback(b: Backend) {
    use ludus_core::purchase::notification::{Changed, NotificationType};
    let chain = Chain::new();
    let seen: Arc<Mutex<Vec<(NotificationType, String, String)>>> = Arc::default();
    let kept = seen.clone();
    let native =
        ludus_server::NativeModule::new().subscription_notification_apple(move |call, n| {
            let kept = kept.clone();
            async move {
                assert_eq!(call.ctx.mode.as_str(), "subscription_notification_apple");
                let Changed::Subscription(sub) = &n.change else {
                    panic!("a subscription notification");
                };
                kept.lock().unwrap().push((
                    n.kind,
                    sub.user_id.to_string(),
                    n.provider_payload.clone(),
                ));
                Ok(())
            }
        });
    let root = chain.root_pem.clone();
    let t = TestServer::start_native(b, native, move |c| {
        c.iap.apple.notifications_endpoint_id = APPLE_ID.into();
        c.iap.apple.root_ca = root;
    })
    .await;
    let cat = t.device_session("iap-note-cat-0001").await;
    let tx = json!({"originalTransactionId": "5000000100", "transactionId": "5000000101",
        "productId": "vip", "appAccountToken": user_id(&cat), "expiresDate": days_from_now(7)});
    let body = chain.notification("DID_RENEW", "", tx, Value::Null);
    assert_eq!(notify(&t, "apple", APPLE_ID, body).await, 200);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].0, seen[0].1.as_str()),
        (NotificationType::Renewed, user_id(&cat).as_str())
    );
    let payload: Value = serde_json::from_str(&seen[0].2).unwrap();
    assert_eq!(payload["transactionInfo"]["transactionId"], "5000000101");
}

/// Google's side: the token endpoint (any signed assertion of the test's
/// service account is accepted: the assertion itself is checked by the
/// purchase tests) and Android Publisher's subscription and product
/// lookups. Tokens: `sub-<user>` is a renewed subscription of `vip`,
/// `buy-<user>` a purchase of `gems`; anything else is unknown (404).
async fn google_stand_in() -> String {
    async fn token() -> Response {
        axum::Json(json!({"access_token": "google-access", "expires_in": 3600})).into_response()
    }
    fn authorized(headers: &HeaderMap) -> bool {
        headers.get("authorization").and_then(|v| v.to_str().ok()) == Some("Bearer google-access")
    }
    async fn sub(headers: HeaderMap, Path((package, token)): Path<(String, String)>) -> Response {
        if !authorized(&headers) || package != PACKAGE {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let Some(user) = token.strip_prefix("sub-") else {
            return StatusCode::NOT_FOUND.into_response();
        };
        axum::Json(json!({
            "kind": "androidpublisher#subscriptionPurchaseV2",
            "lineItems": [{"productId": "vip", "expiryTime": chrono_like_rfc3339(1_900_000_000)}],
            "externalAccountIdentifiers": {"obfuscatedExternalAccountId": user},
            "testPurchase": {},
        }))
        .into_response()
    }
    async fn product(
        headers: HeaderMap,
        Path((package, token)): Path<(String, String)>,
    ) -> Response {
        if !authorized(&headers) || package != PACKAGE {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let Some(user) = token.strip_prefix("buy-") else {
            return StatusCode::NOT_FOUND.into_response();
        };
        axum::Json(json!({
            "productLineItem": [{"productId": "gems"}],
            "obfuscatedExternalAccountId": user,
            "purchaseCompletionTime": chrono_like_rfc3339(1_800_000_000),
        }))
        .into_response()
    }
    let app = Router::new()
        .route("/o/oauth2/token", post(token))
        .route(
            "/androidpublisher/v3/applications/{package}/purchases/subscriptionsv2/tokens/{token}",
            get(sub),
        )
        .route(
            "/androidpublisher/v3/applications/{package}/purchases/productsv2/tokens/{token}",
            get(product),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

fn push(notification: Value) -> String {
    json!({
        "message": {"data": STANDARD.encode(notification.to_string()), "messageId": "136969346945"},
        "subscription": "projects/ludus/subscriptions/play",
    })
    .to_string()
}

async fn google_notifications_look_the_token_up_and_call_js(b: Backend) {
    let base = google_stand_in().await;
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
    let pem = key
        .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string();
    let modules = module_dir();
    let path = modules.path().display().to_string();
    let t = TestServer::start_with(b, move |c| {
        c.iap.google.notifications_endpoint_id = GOOGLE_ID.into();
        c.iap.google.client_email = "iap@ludus-test.iam.gserviceaccount.com".into();
        c.iap.google.private_key = pem;
        c.iap.google.base_url = base.clone();
        c.iap.google.oauth_base_url = base;
        c.runtime.path = path;
    })
    .await;
    let dan = t.device_session("iap-note-dan-0001").await;
    let dan_id = user_id(&dan);

    // A renewal: Google's answer names the player and the expiry.
    let body = push(
        json!({"version": "1.0", "packageName": PACKAGE, "eventTimeMillis": "1",
        "subscriptionNotification": {"version": "1.0", "notificationType": 2,
            "purchaseToken": format!("sub-{dan_id}")}}),
    );
    assert_eq!(notify(&t, "google", GOOGLE_ID, body).await, 200);
    let r = subscription(&t, &dan, "vip").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["store"], 1, "google play");
    assert_eq!(r.body["expiry_time"], chrono_like_rfc3339(1_900_000_000));
    assert_eq!(r.body["original_transaction_id"], format!("sub-{dan_id}"));
    let renewed = note(&t, &dan, "google_sub_RENEWED").await.unwrap();
    assert_eq!(renewed["record"]["store"], "GOOGLE_PLAY_STORE");
    assert_eq!(renewed["payload"]["lineItems"][0]["productId"], "vip");

    // Voided: the subscription is refunded, the purchase too.
    let body = push(
        json!({"packageName": PACKAGE, "voidedPurchaseNotification": {
        "purchaseToken": format!("sub-{dan_id}"), "orderId": "GPA.1", "productType": 1, "refundType": 1}}),
    );
    assert_eq!(notify(&t, "google", GOOGLE_ID, body).await, 200);
    let r = subscription(&t, &dan, "vip").await;
    assert!(r.body["refund_time"].is_string(), "{}", r.body);
    assert_eq!(
        note(&t, &dan, "google_sub_REFUNDED").await.unwrap()["type"],
        "REFUNDED"
    );
    let body = push(
        json!({"packageName": PACKAGE, "voidedPurchaseNotification": {
        "purchaseToken": format!("buy-{dan_id}"), "orderId": "GPA.2", "productType": 2, "refundType": 1}}),
    );
    assert_eq!(notify(&t, "google", GOOGLE_ID, body).await, 200);
    let voided = note(&t, &dan, "google_purchase_REFUNDED").await.unwrap();
    assert_eq!(voided["record"]["productId"], "gems");
    assert!(voided["record"]["refundTime"].as_i64().unwrap() > 1_700_000_000);

    // Types Nakama ignores, unknown tokens and malformed pushes.
    let body = push(json!({"packageName": PACKAGE, "subscriptionNotification": {
        "notificationType": 5, "purchaseToken": format!("sub-{dan_id}")}}));
    assert_eq!(notify(&t, "google", GOOGLE_ID, body).await, 200);
    assert!(note(&t, &dan, "google_sub_SUBSCRIBED").await.is_none());
    let body = push(json!({"packageName": PACKAGE, "subscriptionNotification": {
        "notificationType": 4, "purchaseToken": "nobody-knows"}}));
    assert_eq!(notify(&t, "google", GOOGLE_ID, body).await, 502);
    for body in [
        "not json".to_owned(),
        json!({"message": {"data": "%%%"}}).to_string(),
        json!({"message": {"data": STANDARD.encode("not json")}}).to_string(),
    ] {
        assert_eq!(
            notify(&t, "google", GOOGLE_ID, body.clone()).await,
            400,
            "{body}"
        );
    }
    assert!(note(&t, &dan, "google_sub_SUBSCRIBED").await.is_none());
}

async fn storekit2_signed_transactions_validate_against_the_trusted_root(b: Backend) {
    let chain = Chain::new();
    let root = chain.root_pem.clone();
    let t = TestServer::start_with(b, move |c| {
        c.iap.apple.shared_password = "apple-shared-secret".into();
        c.iap.apple.root_ca = root;
    })
    .await;
    let eve = t.device_session("iap-jws-eve-0001").await;
    let post = |path: &'static str, receipt: String| {
        let tok = token(&eve);
        let t = &t;
        async move { t.post_bearer(path, &tok, json!({"receipt": receipt})).await }
    };
    let gems = chain.sign(
        &json!({"transactionId": "6000000001", "originalTransactionId": "6000000001",
        "productId": "gems", "purchaseDate": 1_700_000_000_000_i64, "environment": "Sandbox",
        "type": "Consumable"}),
    );
    let r = post("/v2/iap/purchase/apple", gems.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let p = &r.body["validated_purchases"][0];
    assert_eq!(
        (p["transaction_id"].as_str(), p["product_id"].as_str()),
        (Some("6000000001"), Some("gems"))
    );
    assert_eq!(p["environment"], 1);
    assert_eq!(p["purchase_time"], "2023-11-14T22:13:20Z");
    assert_eq!(
        p["provider_response"],
        Value::Null,
        "nakama answers none for a jws"
    );
    assert_eq!(p["seen_before"], Value::Null);
    let r = post("/v2/iap/purchase/apple", gems.clone()).await;
    assert_eq!(r.body["validated_purchases"][0]["seen_before"], true);

    let expiry = days_from_now(30);
    let vip = chain.sign(
        &json!({"transactionId": "6000000101", "originalTransactionId": "6000000100",
        "productId": "vip", "originalPurchaseDate": 1_700_000_000_000_i64, "expiresDate": expiry}),
    );
    let r = post("/v2/iap/subscription/apple", vip.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let s = &r.body["validated_subscription"];
    assert_eq!(s["original_transaction_id"], "6000000100");
    assert_eq!(s["active"], true);
    assert_eq!(s["expiry_time"], rfc3339(expiry));
    assert_eq!(
        subscription(&t, &eve, "vip").await.body["original_transaction_id"],
        "6000000100"
    );

    // Each route refuses the other kind, and an untrusted signature is 400.
    let r = post("/v2/iap/purchase/apple", vip).await;
    crate::support::assert_error(&r, 400, 9);
    let r = post("/v2/iap/subscription/apple", gems).await;
    crate::support::assert_error(&r, 400, 9);
    let stranger = Chain::new().sign(&json!({"transactionId": "6000000200", "productId": "gems"}));
    let r = post("/v2/iap/purchase/apple", stranger).await;
    assert!(crate::support::assert_error(&r, 400, 3).contains("signed transaction"));
}
