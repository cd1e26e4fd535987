//! Store server notifications, read as Nakama reads them: Apple's App Store
//! Server Notifications v2 (a signed JWS, checked by `apple_jws`) and
//! Google Play's Real-time Developer Notifications (a Pub/Sub push whose
//! base64 `data` names a purchase token; the server then asks Google about
//! it). Pure rules: what a notification says, which stored row it changes
//! and which module callback it calls; `PurchaseService` does the reading
//! and writing.

use base64::Engine as _;
use serde_json::Value;
use uuid::Uuid;

use super::apple_jws::{self, AppleRoots, JwsError};
use super::model::{Purchase, StoreEnvironment, StoreProvider, Subscription};

/// What a notification tells the modules (Nakama's `runtime.NotificationType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotificationType {
    Subscribed = 1,
    Renewed = 2,
    Expired = 3,
    Cancelled = 4,
    Refunded = 5,
}

impl NotificationType {
    /// The name module callbacks get.
    pub fn name(self) -> &'static str {
        match self {
            NotificationType::Subscribed => "SUBSCRIBED",
            NotificationType::Renewed => "RENEWED",
            NotificationType::Expired => "EXPIRED",
            NotificationType::Cancelled => "CANCELLED",
            NotificationType::Refunded => "REFUNDED",
        }
    }
}

/// A notification the server acted on, for the module callback registered
/// for its store and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreNotification {
    pub kind: NotificationType,
    pub change: Changed,
    /// The store's data as JSON text: Apple's notification `data` (with
    /// `transactionInfo` and `renewalInfo` decoded), or Google's answer
    /// about the purchase.
    pub provider_payload: String,
}

impl StoreNotification {
    pub fn store(&self) -> StoreProvider {
        match &self.change {
            Changed::Purchase(p) => p.store,
            Changed::Subscription(s) => s.store,
        }
    }
}

/// The stored row a notification changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changed {
    Purchase(Purchase),
    Subscription(Subscription),
}

/// Why a notification was refused. Nakama answers each with 500, so the
/// store sends it again later.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotificationError {
    #[error("the notification body is not {0}")]
    Malformed(&'static str),
    #[error("the notification's signature is not trusted: {0}")]
    Untrusted(#[from] JwsError),
    #[error("the notification lacks {0}")]
    Incomplete(&'static str),
    #[error("no stored purchase or subscription names this transaction yet")]
    Unknown,
    #[error("the store could not be asked about the purchase: {0}")]
    Store(String),
    #[error("the store's answer about the purchase is unusable: {0}")]
    Answer(&'static str),
    #[error("the database failed: {0}")]
    Database(String),
    #[error("the module's callback failed: {0}")]
    Callback(String),
}

/// How the owner of the changed row is found when the notification names
/// none, and what to do when no stored row names one either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnowned {
    /// Refuse (500), so the store retries once the client validated.
    Retry,
    /// Answer 200 and change nothing.
    Skip,
}

/// What one notification asks of the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Nothing to store or call (a type Nakama does not handle).
    Ignore,
    Subscription {
        /// The owner the notification names (its app account token), if any.
        owner: Option<Uuid>,
        unowned: WhenUnowned,
        sub: Subscription,
        /// The callback to call after storing, if any.
        kind: Option<NotificationType>,
    },
    Purchase {
        owner: Option<Uuid>,
        purchase: Purchase,
        kind: NotificationType,
    },
}

/// An Apple notification checked and decoded.
#[derive(Debug, Clone)]
pub struct AppleNotice {
    /// `notificationType`, in upper case.
    pub notification_type: String,
    pub subtype: String,
    /// `data`, with `transactionInfo` and `renewalInfo` decoded from their
    /// signed forms.
    pub data: Value,
}

impl AppleNotice {
    /// Checks the body's `signedPayload` against `roots` at `now_sec` and
    /// decodes it and the signed transaction and renewal inside (which the
    /// outer signature covers).
    pub fn decode(
        body: &[u8],
        roots: &AppleRoots,
        now_sec: u64,
    ) -> Result<Self, NotificationError> {
        let body: Value = serde_json::from_slice(body)
            .map_err(|_| NotificationError::Malformed("json with a signedPayload"))?;
        let signed = body
            .get("signedPayload")
            .and_then(Value::as_str)
            .unwrap_or("");
        let payload = apple_jws::verify(signed, roots, now_sec)?;
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let mut data = match payload.get("data") {
            Some(Value::Object(d)) => d.clone(),
            _ => serde_json::Map::new(),
        };
        for (signed_key, key) in [
            ("signedTransactionInfo", "transactionInfo"),
            ("signedRenewalInfo", "renewalInfo"),
        ] {
            let jws = data.get(signed_key).and_then(Value::as_str).unwrap_or("");
            let decoded = if jws.is_empty() {
                Value::Null
            } else {
                apple_jws::payload_of(jws)?
            };
            data.insert(key.to_owned(), decoded);
        }
        Ok(AppleNotice {
            notification_type: text(&payload, "notificationType").to_ascii_uppercase(),
            subtype: text(&payload, "subtype"),
            data: Value::Object(data),
        })
    }

    fn info(&self, key: &str) -> Option<&Value> {
        self.data.get(key).filter(|v| v.is_object())
    }

    /// What the notification asks for; `raw` is the body as received (kept
    /// as the subscription's `raw_notification`).
    pub fn plan(&self, raw: &str) -> Result<Plan, NotificationError> {
        let kind = self.notification_type.as_str();
        match kind {
            "DID_RENEW" | "SUBSCRIBED" | "DID_CHANGE_RENEWAL_PREF" | "OFFER_REDEEMED" => {
                let t = self
                    .info("transactionInfo")
                    .ok_or(NotificationError::Incomplete("transactionInfo"))?;
                let mut product = text(t, "productId");
                if matches!(self.subtype.as_str(), "UPGRADE" | "DOWNGRADE")
                    && let Some(r) = self.info("renewalInfo")
                {
                    product = text(r, "autoRenewProductId");
                }
                let sub = apple_subscription(t, product, raw, ms(t, "expiresDate"));
                Ok(Plan::Subscription {
                    owner: account_token(t),
                    unowned: WhenUnowned::Retry,
                    sub: Subscription {
                        refund_time_ms: ms(t, "revocationDate"),
                        ..sub
                    },
                    kind: Some(if kind == "DID_RENEW" {
                        NotificationType::Renewed
                    } else {
                        NotificationType::Subscribed
                    }),
                })
            }
            "EXPIRED" | "DID_CHANGE_RENEWAL_STATUS" | "GRACE_PERIOD_EXPIRED" | "REVOKED" => {
                let r = self
                    .info("renewalInfo")
                    .ok_or(NotificationError::Incomplete("renewalInfo"))?;
                let expiry = ms(r, "renewalDate").max(ms(r, "gracePeriodExpiresDate"));
                let sub = apple_subscription(r, text(r, "productId"), raw, expiry);
                let kind = match kind {
                    "DID_CHANGE_RENEWAL_STATUS" if self.subtype == "AUTO_RENEW_DISABLED" => {
                        Some(NotificationType::Cancelled)
                    }
                    // Auto-renewal turned back on: stored, nothing to call.
                    "DID_CHANGE_RENEWAL_STATUS" => None,
                    _ => Some(NotificationType::Expired),
                };
                Ok(Plan::Subscription {
                    owner: account_token(r),
                    unowned: WhenUnowned::Skip,
                    sub,
                    kind,
                })
            }
            "REFUND" => {
                let t = self
                    .info("transactionInfo")
                    .ok_or(NotificationError::Incomplete("transactionInfo"))?;
                let owner = account_token(t);
                if ms(t, "expiresDate") != 0 {
                    let sub =
                        apple_subscription(t, text(t, "productId"), raw, ms(t, "expiresDate"));
                    Ok(Plan::Subscription {
                        owner,
                        unowned: WhenUnowned::Skip,
                        sub: Subscription {
                            refund_time_ms: ms(t, "revocationDate"),
                            ..sub
                        },
                        kind: Some(NotificationType::Refunded),
                    })
                } else {
                    Ok(Plan::Purchase {
                        owner,
                        purchase: Purchase {
                            raw_response: raw.to_owned(),
                            ..apple_purchase(t, Uuid::nil())
                        },
                        kind: NotificationType::Refunded,
                    })
                }
            }
            _ => Ok(Plan::Ignore),
        }
    }
}

/// The one-off purchase of an Apple signed transaction, for `user`.
pub fn apple_purchase(t: &Value, user: Uuid) -> Purchase {
    Purchase {
        user_id: user,
        store: StoreProvider::AppleAppStore,
        product_id: text(t, "productId"),
        transaction_id: text(t, "transactionId"),
        raw_response: String::new(),
        purchase_time_ms: ms(t, "purchaseDate"),
        create_time_ms: 0,
        update_time_ms: 0,
        refund_time_ms: ms(t, "revocationDate"),
        environment: apple_environment(t),
        seen_before: false,
    }
}

/// The subscription of an Apple signed transaction, for `user`.
pub fn apple_signed_subscription(t: &Value, user: Uuid) -> Subscription {
    Subscription {
        user_id: user,
        refund_time_ms: ms(t, "revocationDate"),
        raw_notification: String::new(),
        ..apple_subscription(t, text(t, "productId"), "", ms(t, "expiresDate"))
    }
}

/// A millisecond time field of Apple's JSON, 0 when absent.
pub fn ms_of(v: &Value, key: &str) -> i64 {
    ms(v, key)
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

fn ms(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// The app account token, when it is a user id (Nakama logs and ignores
/// one that is not a UUID).
fn account_token(v: &Value) -> Option<Uuid> {
    let token = v.get("appAccountToken").and_then(Value::as_str)?;
    let id = Uuid::parse_str(token).ok();
    if id.is_none() && !token.is_empty() {
        tracing::warn!(
            app_account_token = token,
            "app store notification's appAccountToken is not a uuid"
        );
    }
    id.filter(|id| !id.is_nil())
}

fn apple_environment(v: &Value) -> StoreEnvironment {
    if v.get("environment").and_then(Value::as_str) == Some("Sandbox") {
        StoreEnvironment::Sandbox
    } else {
        StoreEnvironment::Production
    }
}

fn apple_subscription(info: &Value, product_id: String, raw: &str, expiry: i64) -> Subscription {
    Subscription {
        user_id: Uuid::nil(),
        store: StoreProvider::AppleAppStore,
        product_id,
        original_transaction_id: text(info, "originalTransactionId"),
        raw_response: String::new(),
        raw_notification: raw.to_owned(),
        purchase_time_ms: ms(info, "originalPurchaseDate"),
        create_time_ms: 0,
        update_time_ms: 0,
        expire_time_ms: expiry,
        refund_time_ms: 0,
        environment: apple_environment(info),
    }
}

/// What a Google Real-time Developer Notification names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoogleNotice {
    /// A subscription changed: its token and Google's notification type.
    Subscription {
        package_name: String,
        purchase_token: String,
        notification_type: i64,
    },
    /// A purchase was refunded or charged back (voided).
    Voided {
        package_name: String,
        purchase_token: String,
        subscription: bool,
    },
    /// One-time product and test notifications: Nakama acts on neither.
    Other,
}

/// Google's subscription notification types Nakama acts on.
pub fn google_kind(notification_type: i64) -> Option<NotificationType> {
    match notification_type {
        4 => Some(NotificationType::Subscribed),
        2 => Some(NotificationType::Renewed),
        13 => Some(NotificationType::Expired),
        3 => Some(NotificationType::Cancelled),
        _ => None,
    }
}

impl GoogleNotice {
    /// Reads a Pub/Sub push body: `{"message": {"data": base64}}`, the data
    /// being the developer notification's JSON.
    pub fn decode(body: &[u8]) -> Result<GoogleNotice, NotificationError> {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        let body: Value = serde_json::from_slice(body)
            .map_err(|_| NotificationError::Malformed("a pub/sub push (json)"))?;
        let data = body
            .pointer("/message/data")
            .and_then(Value::as_str)
            .unwrap_or("");
        // Pub/Sub sends standard base64; Nakama decodes the URL alphabet.
        let decoded = URL_SAFE
            .decode(data)
            .or_else(|_| STANDARD.decode(data))
            .map_err(|_| NotificationError::Malformed("a pub/sub push with base64 data"))?;
        let n: Value = serde_json::from_slice(&decoded).map_err(|_| {
            NotificationError::Malformed("a pub/sub push whose data is a developer notification")
        })?;
        let package_name = text(&n, "packageName");
        let token = |v: &Value| -> Result<String, NotificationError> {
            let t = text(v, "purchaseToken");
            // The token and package go into a URL path.
            let safe = |s: &str| {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
            };
            if safe(&t) && safe(&package_name) {
                Ok(t)
            } else {
                Err(NotificationError::Malformed(
                    "a developer notification with a package name and purchase token",
                ))
            }
        };
        if let Some(s) = n.get("subscriptionNotification").filter(|v| v.is_object()) {
            return Ok(GoogleNotice::Subscription {
                purchase_token: token(s)?,
                notification_type: s
                    .get("notificationType")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
                package_name,
            });
        }
        if n.get("oneTimeProductNotification")
            .is_some_and(Value::is_object)
        {
            return Ok(GoogleNotice::Other);
        }
        if let Some(v) = n
            .get("voidedPurchaseNotification")
            .filter(|v| v.is_object())
        {
            return Ok(GoogleNotice::Voided {
                purchase_token: token(v)?,
                subscription: v.get("productType").and_then(Value::as_i64) == Some(1),
                package_name,
            });
        }
        Ok(GoogleNotice::Other)
    }
}

/// The user a Google answer names (`obfuscatedExternalAccountId`, else
/// the profile id), `Err` when it names one that is not a user id.
pub fn google_account(answer: &Value) -> Result<Option<Uuid>, uuid::Error> {
    let ids = answer.get("externalAccountIdentifiers").unwrap_or(answer);
    for key in ["obfuscatedExternalAccountId", "obfuscatedExternalProfileId"] {
        match ids.get(key).and_then(Value::as_str) {
            Some(id) if !id.is_empty() => return Uuid::parse_str(id).map(Some),
            _ => {}
        }
    }
    Ok(None)
}

/// A subscription from Google's `subscriptionsv2` answer about `token`.
pub fn google_subscription(
    answer: &Value,
    token: &str,
    raw: &str,
) -> Result<Subscription, NotificationError> {
    let item = answer
        .pointer("/lineItems/0")
        .ok_or(NotificationError::Answer("no line item"))?;
    let expiry = item
        .get("expiryTime")
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp_millis())
        .unwrap_or(0);
    let original = match answer.get("linkedPurchaseToken").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => t.to_owned(),
        _ => token.to_owned(),
    };
    Ok(Subscription {
        user_id: Uuid::nil(),
        store: StoreProvider::GooglePlayStore,
        product_id: text(item, "productId"),
        original_transaction_id: original,
        raw_response: String::new(),
        raw_notification: raw.to_owned(),
        purchase_time_ms: 0,
        create_time_ms: 0,
        update_time_ms: 0,
        expire_time_ms: expiry,
        refund_time_ms: 0,
        environment: if answer.get("testPurchase").is_some_and(|v| !v.is_null()) {
            StoreEnvironment::Sandbox
        } else {
            StoreEnvironment::Production
        },
    })
}

/// A purchase from Google's `productsv2` answer about `token`.
pub fn google_purchase(answer: &Value, token: &str) -> Result<Purchase, NotificationError> {
    let item = answer
        .pointer("/productLineItem/0")
        .ok_or(NotificationError::Answer("no product line item"))?;
    let purchased = answer
        .get("purchaseCompletionTime")
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp_millis())
        .unwrap_or(0);
    Ok(Purchase {
        user_id: Uuid::nil(),
        store: StoreProvider::GooglePlayStore,
        product_id: text(item, "productId"),
        transaction_id: token.to_owned(),
        raw_response: String::new(),
        purchase_time_ms: purchased,
        create_time_ms: 0,
        update_time_ms: 0,
        refund_time_ms: 0,
        environment: if answer
            .get("testPurchaseContext")
            .is_some_and(|v| !v.is_null())
        {
            StoreEnvironment::Sandbox
        } else {
            StoreEnvironment::Production
        },
        seen_before: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::purchase::apple_jws::tests::TestChain;
    use serde_json::json;

    fn notice(chain: &TestChain, kind: &str, subtype: &str, t: Value, r: Value) -> AppleNotice {
        let data = json!({
            "bundleId": "com.game",
            "signedTransactionInfo": if t.is_null() { String::new() } else { chain.sign(&t) },
            "signedRenewalInfo": if r.is_null() { String::new() } else { chain.sign(&r) },
        });
        let body = json!({"signedPayload": chain.sign(&json!({
            "notificationType": kind, "subtype": subtype, "data": data,
        }))});
        AppleNotice::decode(
            body.to_string().as_bytes(),
            &chain.roots(),
            crate::unix_now() as u64,
        )
        .unwrap()
    }

    #[test]
    fn apple_renewals_refunds_and_expiries_plan_nakamas_changes() {
        let chain = TestChain::new();
        let user = Uuid::now_v7();
        let t = json!({
            "originalTransactionId": "o1", "transactionId": "t2", "productId": "vip",
            "expiresDate": 9_000, "originalPurchaseDate": 1_000, "environment": "Sandbox",
            "appAccountToken": user.to_string(),
        });
        let r = json!({"autoRenewProductId": "vip_plus", "originalTransactionId": "o1",
                       "productId": "vip", "renewalDate": 8_000, "gracePeriodExpiresDate": 8_500});
        let n = notice(&chain, "did_renew", "", t.clone(), r.clone());
        assert_eq!(n.data["transactionInfo"]["productId"], "vip");
        let Plan::Subscription {
            owner,
            unowned,
            sub,
            kind,
        } = n.plan("raw").unwrap()
        else {
            panic!("a renewal changes a subscription");
        };
        assert_eq!(
            (owner, unowned, kind),
            (
                Some(user),
                WhenUnowned::Retry,
                Some(NotificationType::Renewed)
            )
        );
        assert_eq!((sub.expire_time_ms, sub.purchase_time_ms), (9_000, 1_000));
        assert_eq!(sub.environment, StoreEnvironment::Sandbox);
        assert_eq!(sub.raw_notification, "raw");

        let n = notice(&chain, "SUBSCRIBED", "UPGRADE", t.clone(), r.clone());
        let Plan::Subscription { sub, kind, .. } = n.plan("").unwrap() else {
            panic!()
        };
        assert_eq!(
            (sub.product_id.as_str(), kind),
            ("vip_plus", Some(NotificationType::Subscribed))
        );

        let n = notice(&chain, "EXPIRED", "", Value::Null, r.clone());
        let Plan::Subscription {
            owner,
            unowned,
            sub,
            kind,
        } = n.plan("").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (owner, unowned, kind),
            (None, WhenUnowned::Skip, Some(NotificationType::Expired))
        );
        assert_eq!(sub.expire_time_ms, 8_500, "the grace period, when later");

        let n = notice(
            &chain,
            "DID_CHANGE_RENEWAL_STATUS",
            "AUTO_RENEW_ENABLED",
            Value::Null,
            r.clone(),
        );
        assert!(matches!(
            n.plan("").unwrap(),
            Plan::Subscription { kind: None, .. }
        ));

        let mut refunded = t.clone();
        refunded["revocationDate"] = json!(7_000);
        let n = notice(&chain, "REFUND", "", refunded.clone(), Value::Null);
        let Plan::Subscription { sub, kind, .. } = n.plan("").unwrap() else {
            panic!()
        };
        assert_eq!(
            (sub.refund_time_ms, kind),
            (7_000, Some(NotificationType::Refunded))
        );

        refunded["expiresDate"] = json!(0);
        refunded["purchaseDate"] = json!(500);
        let n = notice(&chain, "REFUND", "", refunded, Value::Null);
        let Plan::Purchase { purchase, kind, .. } = n.plan("").unwrap() else {
            panic!()
        };
        assert_eq!(
            (purchase.transaction_id.as_str(), purchase.refund_time_ms),
            ("t2", 7_000)
        );
        assert_eq!(
            (purchase.purchase_time_ms, kind),
            (500, NotificationType::Refunded)
        );

        let n = notice(&chain, "DID_RENEW", "", Value::Null, r);
        assert_eq!(
            n.plan("").unwrap_err(),
            NotificationError::Incomplete("transactionInfo")
        );
        let n = notice(&chain, "TEST", "", Value::Null, Value::Null);
        assert_eq!(n.plan("").unwrap(), Plan::Ignore);
    }

    #[test]
    fn apple_bodies_that_are_not_signed_by_the_chain_are_refused() {
        let chain = TestChain::new();
        let roots = chain.roots();
        let now = crate::unix_now() as u64;
        assert!(matches!(
            AppleNotice::decode(b"nope", &roots, now).unwrap_err(),
            NotificationError::Malformed(_)
        ));
        let other = TestChain::new();
        let body = json!({"signedPayload": other.sign(&json!({"notificationType": "REFUND"}))});
        assert!(matches!(
            AppleNotice::decode(body.to_string().as_bytes(), &roots, now).unwrap_err(),
            NotificationError::Untrusted(JwsError::Chain(_))
        ));
    }

    #[test]
    fn google_pushes_name_their_token() {
        use base64::engine::general_purpose::STANDARD;
        let push =
            |n: Value| json!({"message": {"data": STANDARD.encode(n.to_string())}}).to_string();
        let n = GoogleNotice::decode(
            push(json!({"packageName": "com.game",
            "subscriptionNotification": {"notificationType": 2, "purchaseToken": "tok"}}))
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            n,
            GoogleNotice::Subscription {
                package_name: "com.game".into(),
                purchase_token: "tok".into(),
                notification_type: 2,
            }
        );
        assert_eq!(google_kind(2), Some(NotificationType::Renewed));
        assert_eq!(google_kind(5), None);
        let n = GoogleNotice::decode(
            push(json!({"packageName": "com.game",
            "voidedPurchaseNotification": {"productType": 2, "purchaseToken": "tok"}}))
            .as_bytes(),
        )
        .unwrap();
        assert!(matches!(
            n,
            GoogleNotice::Voided {
                subscription: false,
                ..
            }
        ));
        for bad in [
            "nope".to_owned(),
            json!({"message": {"data": "***"}}).to_string(),
            push(json!({"packageName": "a/b", "subscriptionNotification": {"purchaseToken": "t"}})),
        ] {
            assert!(matches!(
                GoogleNotice::decode(bad.as_bytes()),
                Err(NotificationError::Malformed(_))
            ));
        }
        let user = Uuid::now_v7();
        let answer = json!({"externalAccountIdentifiers": {"obfuscatedExternalAccountId": user.to_string()},
            "lineItems": [{"productId": "vip", "expiryTime": "2030-01-01T00:00:00Z"}],
            "linkedPurchaseToken": "first", "testPurchase": {}});
        assert_eq!(google_account(&answer).ok(), Some(Some(user)));
        assert!(google_account(&json!({"obfuscatedExternalAccountId": "x"})).is_err());
        let s = google_subscription(&answer, "tok", "raw").unwrap();
        assert_eq!(
            (s.original_transaction_id.as_str(), s.expire_time_ms),
            ("first", 1_893_456_000_000)
        );
        assert_eq!(s.environment, StoreEnvironment::Sandbox);
    }
}
