//! `PurchaseService`: validates receipts with each store as Nakama does and
//! keeps what it validated. The stores are reached through the server's
//! [`SocialHttp`] client (every call bounded by `iap.timeout_ms`); service
//! account and app access tokens are cached until five minutes before they
//! expire. A store that cannot be reached or answers an error of its own is
//! `Unavailable`; a receipt the store refuses is `InvalidArgument` or
//! `FailedPrecondition`, so no client mistake becomes a 500.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::apple_jws::AppleRoots;
use super::model::{IapCursor, IapListQuery, Purchase, Subscription};
use super::notification::{
    AppleNotice, Changed, GoogleNotice, NotificationError, NotificationType, Plan,
    StoreNotification, WhenUnowned,
};
use super::{apple, google, huawei, instant, notification, samsung};
use crate::error::{ApiError, Code};
use crate::social_auth::SocialHttp;
use crate::store::Store;
use crate::unix_now;
use crate::urlencode;

/// Keys under `iap` (Nakama's names, and base URLs of ours for tests and
/// proxies).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IapSettings {
    pub apple: AppleIapSettings,
    pub google: GoogleIapSettings,
    pub huawei: HuaweiIapSettings,
    pub facebook_instant: InstantIapSettings,
    pub samsung: SamsungIapSettings,
    /// Longest wait for a store's answer, in milliseconds.
    pub timeout_ms: u64,
    /// Most rows one listing page may ask for.
    pub max_list_limit: usize,
}

impl Default for IapSettings {
    fn default() -> Self {
        IapSettings {
            apple: AppleIapSettings::default(),
            google: GoogleIapSettings::default(),
            huawei: HuaweiIapSettings::default(),
            facebook_instant: InstantIapSettings::default(),
            samsung: SamsungIapSettings::default(),
            timeout_ms: 20_000,
            max_list_limit: 1_000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct AppleIapSettings {
    pub shared_password: String,
    pub base_url: String,
    pub sandbox_base_url: String,
    /// Serves App Store Server Notifications at
    /// `/v2/console/apple/notifications/{id}` when set.
    pub notifications_endpoint_id: String,
    /// PEM certificates Apple's signed data must chain to; empty is Apple
    /// Root CA - G3.
    pub root_ca: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct GoogleIapSettings {
    pub client_email: String,
    pub private_key: String,
    pub base_url: String,
    pub oauth_base_url: String,
    /// Serves Real-time Developer Notifications at
    /// `/v2/console/google/notifications/{id}` when set.
    pub notifications_endpoint_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct HuaweiIapSettings {
    pub public_key: String,
    pub client_id: String,
    pub client_secret: String,
    pub base_url: String,
    pub oauth_base_url: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct InstantIapSettings {
    pub app_secret: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SamsungIapSettings {
    /// When set, a receipt's package name must be this one.
    pub package_name: String,
    pub base_url: String,
}

const SAMSUNG_URL: &str = "https://iap.samsungapps.com";
const APPLE_URL: &str = "https://buy.itunes.apple.com";
const APPLE_SANDBOX_URL: &str = "https://sandbox.itunes.apple.com";
const GOOGLE_URL: &str = "https://androidpublisher.googleapis.com";
const GOOGLE_OAUTH_URL: &str = "https://accounts.google.com";
const HUAWEI_URL: &str = "https://orders-dre.iap.hicloud.com";
const HUAWEI_CHINA_URL: &str = "https://orders-at-dre.iap.dbankcloud.com";
const HUAWEI_OAUTH_URL: &str = "https://oauth-login.cloud.huawei.com";
/// A cached access token is renewed this long before it expires.
const TOKEN_GRACE_SEC: i64 = 300;
/// Rows a listing shows when the caller names no limit.
pub const DEFAULT_LIST_LIMIT: usize = 100;

/// A Google service account (the configured one, or a module's override).
#[derive(Debug, Clone)]
pub struct GoogleAccount {
    pub client_email: String,
    pub private_key: String,
}

/// A page of a listing and the cursor of the next, if there is one.
#[derive(Debug, Clone)]
pub struct IapPage<T> {
    pub items: Vec<T>,
    pub cursor: Option<String>,
}

pub struct PurchaseService {
    settings: IapSettings,
    store: Arc<dyn Store>,
    http: Option<Arc<dyn SocialHttp>>,
    /// Google access tokens by service account email, with their expiry.
    google_tokens: Mutex<HashMap<String, (String, i64)>>,
    huawei_token: Mutex<Option<(String, i64)>>,
    /// The roots Apple's signed notifications must chain to.
    apple_roots: AppleRoots,
}

impl PurchaseService {
    /// `http` None: stores that need a request answer `Unimplemented`.
    pub fn new(
        settings: IapSettings,
        store: Arc<dyn Store>,
        http: Option<Arc<dyn SocialHttp>>,
    ) -> Self {
        PurchaseService {
            store,
            http,
            google_tokens: Mutex::new(HashMap::new()),
            huawei_token: Mutex::new(None),
            apple_roots: AppleRoots::from_pem(&settings.apple.root_ca).unwrap_or_else(|why| {
                // The server checks the key before it builds the service.
                tracing::error!(reason = %why, "iap.apple.root_ca is unusable; trusting apple's root");
                AppleRoots::apple()
            }),
            settings,
        }
    }

    pub fn settings(&self) -> &IapSettings {
        &self.settings
    }

    /// The configured Google service account, or `FailedPrecondition`.
    pub fn google_account(&self) -> Result<GoogleAccount, ApiError> {
        let g = &self.settings.google;
        if g.client_email.is_empty() || g.private_key.is_empty() {
            return Err(not_configured(
                "google",
                "iap.google.client_email and iap.google.private_key",
            ));
        }
        Ok(GoogleAccount {
            client_email: g.client_email.clone(),
            private_key: g.private_key.clone(),
        })
    }

    /// The one-off purchases of an App Store receipt. `password` is the
    /// shared secret (the configured one unless a module overrides it).
    pub async fn validate_apple(
        &self,
        user: Uuid,
        receipt: &str,
        persist: bool,
        password: &str,
    ) -> Result<Vec<Purchase>, ApiError> {
        if let Some(t) = self.apple_signed_transaction(receipt, password)? {
            if notification::ms_of(&t, "expiresDate") != 0 {
                return Err(ApiError::new(
                    Code::FailedPrecondition,
                    "this signed transaction is a subscription's; validate it as a subscription",
                ));
            }
            let mut purchase = notification::apple_purchase(&t, user);
            purchase.raw_response = serde_json::json!({ "jws": receipt }).to_string();
            let mut kept = self.keep_purchases(vec![purchase], persist).await?;
            // Nakama answers no provider response for a signed transaction.
            kept.iter_mut().for_each(|p| p.raw_response.clear());
            return Ok(kept);
        }
        let (answer, raw) = self.apple_receipt(receipt, password).await?;
        let purchases = answer.purchases(user, &raw)?;
        self.keep_purchases(purchases, persist).await
    }

    /// The subscription with the latest expiry of an App Store receipt; all
    /// its subscriptions are kept when `persist`.
    pub async fn validate_subscription_apple(
        &self,
        user: Uuid,
        receipt: &str,
        persist: bool,
        password: &str,
    ) -> Result<Subscription, ApiError> {
        if let Some(t) = self.apple_signed_transaction(receipt, password)? {
            let expiry = notification::ms_of(&t, "expiresDate");
            if expiry == 0 {
                return Err(ApiError::new(
                    Code::FailedPrecondition,
                    "this signed transaction is a one-off purchase's; validate it as a purchase",
                ));
            }
            let mut sub = notification::apple_signed_subscription(&t, user);
            sub.raw_response = serde_json::json!({ "jws": receipt }).to_string();
            let mut kept = self.keep_subscriptions(vec![sub], persist).await?;
            let mut sub = kept.remove(0);
            sub.raw_response.clear();
            return Ok(sub);
        }
        let (answer, raw) = self.apple_receipt(receipt, password).await?;
        let subs = answer.subscriptions(user, &raw)?;
        let mut kept = self.keep_subscriptions(subs, persist).await?;
        Ok(kept.remove(0))
    }

    pub async fn validate_google(
        &self,
        user: Uuid,
        receipt: &str,
        persist: bool,
        account: &GoogleAccount,
    ) -> Result<Vec<Purchase>, ApiError> {
        let parsed = google::GoogleReceipt::parse(receipt)?;
        if parsed.product_id.is_empty() {
            return Err(ApiError::invalid("google receipt has no productId"));
        }
        let path = format!(
            "/androidpublisher/v3/applications/{}/purchases/products/{}/tokens/{}",
            parsed.package_name, parsed.product_id, parsed.purchase_token
        );
        let answer = self.google_get(account, &path).await?;
        let purchase = google::purchase(&parsed, &answer, user)?;
        self.keep_purchases(vec![purchase], persist).await
    }

    pub async fn validate_subscription_google(
        &self,
        user: Uuid,
        receipt: &str,
        persist: bool,
        account: &GoogleAccount,
    ) -> Result<Subscription, ApiError> {
        let parsed = google::GoogleReceipt::parse(receipt)?;
        let path = format!(
            "/androidpublisher/v3/applications/{}/purchases/subscriptionsv2/tokens/{}",
            parsed.package_name, parsed.purchase_token
        );
        let answer = self.google_get(account, &path).await?;
        let sub = google::subscription(&parsed, &answer, user)?;
        let mut kept = self.keep_subscriptions(vec![sub], persist).await?;
        Ok(kept.remove(0))
    }

    pub async fn validate_huawei(
        &self,
        user: Uuid,
        purchase_data: &str,
        signature: &str,
        persist: bool,
    ) -> Result<Vec<Purchase>, ApiError> {
        let h = &self.settings.huawei;
        if h.public_key.is_empty() || h.client_id.is_empty() || h.client_secret.is_empty() {
            return Err(not_configured(
                "huawei",
                "iap.huawei.public_key, iap.huawei.client_id and iap.huawei.client_secret",
            ));
        }
        if purchase_data.is_empty() {
            return Err(ApiError::invalid("purchase cannot be empty"));
        }
        if signature.is_empty() {
            return Err(ApiError::invalid("signature cannot be empty"));
        }
        let data = huawei::verify(&h.public_key, purchase_data, signature)?;
        let token = self.huawei_token().await?;
        let base = if !h.base_url.is_empty() {
            h.base_url.trim_end_matches('/')
        } else if data.account_flag == 1 {
            HUAWEI_CHINA_URL
        } else {
            HUAWEI_URL
        };
        let url = format!("{base}/applications/purchases/tokens/verify");
        let body = serde_json::json!({
            "purchaseToken": data.purchase_token,
            "productId": data.product_id,
        })
        .to_string();
        let auth = format!("Basic {}", basic(&format!("APPAT:{token}")));
        let answer = self
            .post(
                "huawei",
                &url,
                &[
                    ("content-type", "application/json; charset=utf-8"),
                    ("authorization", &auth),
                ],
                body.into_bytes(),
            )
            .await?;
        let purchase = huawei::purchase(&data, &answer, user)?;
        self.keep_purchases(vec![purchase], persist).await
    }

    pub async fn validate_facebook_instant(
        &self,
        user: Uuid,
        signed_request: &str,
        persist: bool,
    ) -> Result<Vec<Purchase>, ApiError> {
        let secret = &self.settings.facebook_instant.app_secret;
        if secret.is_empty() {
            return Err(not_configured(
                "facebook instant",
                "iap.facebook_instant.app_secret",
            ));
        }
        if signed_request.is_empty() {
            return Err(ApiError::invalid("signed request cannot be empty"));
        }
        let purchase = instant::purchase(signed_request, secret, user)?;
        self.keep_purchases(vec![purchase], persist).await
    }

    /// Asks Samsung's receipt service about `purchase_id` (no credentials:
    /// Samsung answers for any purchase id, as Nakama relies on).
    pub async fn validate_samsung(
        &self,
        user: Uuid,
        purchase_id: &str,
        persist: bool,
    ) -> Result<Vec<Purchase>, ApiError> {
        if purchase_id.is_empty() {
            return Err(ApiError::invalid("purchase id cannot be empty"));
        }
        let s = &self.settings.samsung;
        let url = format!(
            "{}/iap/v6/receipt?purchaseID={}",
            base(&s.base_url, SAMSUNG_URL),
            urlencode::escape(purchase_id)
        );
        let http = self.http()?;
        let (status, answer) = http
            .get(&url, self.timeout())
            .await
            .map_err(|why| unreachable("samsung", &why))?;
        if status != 200 {
            return Err(store_error("samsung", status));
        }
        let purchase = samsung::purchase(&answer, purchase_id, &s.package_name, user)?;
        self.keep_purchases(vec![purchase], persist).await
    }

    /// An App Store Server Notification (v2) as Nakama handles it: the
    /// signed payload checked against the configured roots, then the
    /// subscription or purchase it names changed in one store write.
    /// `Ok(None)`: nothing to change or call (answered 200 all the same).
    pub async fn apple_notification(
        &self,
        body: &[u8],
    ) -> Result<Option<StoreNotification>, NotificationError> {
        let notice = AppleNotice::decode(body, &self.apple_roots, unix_now().max(0) as u64)?;
        let raw = String::from_utf8_lossy(body);
        let plan = notice.plan(&raw)?;
        self.apply(plan, notice.data.to_string()).await
    }

    /// A Google Play Real-time Developer Notification as Nakama handles it:
    /// the purchase token it names is looked up with Google (the
    /// configured service account), then the subscription or purchase is
    /// changed in one store write.
    pub async fn google_notification(
        &self,
        body: &[u8],
    ) -> Result<Option<StoreNotification>, NotificationError> {
        let raw = String::from_utf8_lossy(body).into_owned();
        let (package, token, subscription, kind) = match GoogleNotice::decode(body)? {
            GoogleNotice::Other => return Ok(None),
            GoogleNotice::Subscription {
                package_name,
                purchase_token,
                notification_type,
            } => (
                package_name,
                purchase_token,
                true,
                notification::google_kind(notification_type),
            ),
            GoogleNotice::Voided {
                package_name,
                purchase_token,
                subscription,
            } => (
                package_name,
                purchase_token,
                subscription,
                Some(NotificationType::Refunded),
            ),
        };
        let account = self
            .google_account()
            .map_err(|e| NotificationError::Store(e.message.into_owned()))?;
        let path = if subscription {
            format!(
                "/androidpublisher/v3/applications/{package}/purchases/subscriptionsv2/tokens/{token}"
            )
        } else {
            format!(
                "/androidpublisher/v3/applications/{package}/purchases/productsv2/tokens/{token}"
            )
        };
        let answer = self
            .google_get(&account, &path)
            .await
            .map_err(|e| NotificationError::Store(e.message.into_owned()))?;
        let payload = String::from_utf8_lossy(&answer).into_owned();
        let answer: serde_json::Value =
            serde_json::from_slice(&answer).map_err(|_| NotificationError::Answer("not json"))?;
        let Ok(owner) = notification::google_account(&answer) else {
            tracing::warn!(
                "google play names an account id that is not a user id; notification skipped"
            );
            return Ok(None);
        };
        let refund = if kind == Some(NotificationType::Refunded) {
            crate::unix_now_ms()
        } else {
            0
        };
        let plan = if subscription {
            // Types Nakama does not act on change nothing.
            let Some(kind) = kind else { return Ok(None) };
            let mut sub = notification::google_subscription(&answer, &token, &raw)?;
            sub.refund_time_ms = refund;
            Plan::Subscription {
                owner,
                unowned: WhenUnowned::Skip,
                sub,
                kind: Some(kind),
            }
        } else {
            let mut purchase = notification::google_purchase(&answer, &token)?;
            purchase.refund_time_ms = refund;
            Plan::Purchase {
                owner,
                purchase,
                kind: NotificationType::Refunded,
            }
        };
        self.apply(plan, payload).await
    }

    /// Finds the owner of what `plan` changes and stores the change.
    async fn apply(
        &self,
        plan: Plan,
        provider_payload: String,
    ) -> Result<Option<StoreNotification>, NotificationError> {
        let db = |e: crate::store::StoreError| NotificationError::Database(e.to_string());
        let now_ms = crate::unix_now_ms();
        let (kind, change) = match plan {
            Plan::Ignore => return Ok(None),
            Plan::Subscription {
                owner,
                unowned,
                mut sub,
                kind,
            } => {
                let stored = self
                    .store
                    .subscription_by_transaction(&sub.original_transaction_id)
                    .await
                    .map_err(db)?;
                let Some(user) = self
                    .owner(owner, stored.map(|s| s.user_id), unowned)
                    .await?
                else {
                    return Ok(None);
                };
                sub.user_id = user;
                check_stored_id(&sub.original_transaction_id, &sub.product_id).map_err(|_| {
                    NotificationError::Answer("an empty or overlong transaction id")
                })?;
                let mut kept = self
                    .store
                    .subscriptions_upsert(vec![sub], now_ms)
                    .await
                    .map_err(db)?;
                let Some(kind) = kind else { return Ok(None) };
                (kind, Changed::Subscription(kept.remove(0)))
            }
            Plan::Purchase {
                owner,
                mut purchase,
                kind,
            } => {
                let stored = self
                    .store
                    .purchase_get(&purchase.transaction_id)
                    .await
                    .map_err(db)?;
                let Some(user) = self
                    .owner(owner, stored.map(|p| p.user_id), WhenUnowned::Skip)
                    .await?
                else {
                    return Ok(None);
                };
                purchase.user_id = user;
                check_stored_id(&purchase.transaction_id, &purchase.product_id).map_err(|_| {
                    NotificationError::Answer("an empty or overlong transaction id")
                })?;
                let mut kept = self
                    .store
                    .purchases_upsert(vec![purchase], now_ms)
                    .await
                    .map_err(db)?;
                (kind, Changed::Purchase(kept.remove(0)))
            }
        };
        Ok(Some(StoreNotification {
            kind,
            change,
            provider_payload,
        }))
    }

    /// The user a notification's change belongs to: the one it names, if
    /// that account exists, else the stored row's owner. `None`: skip.
    async fn owner(
        &self,
        named: Option<Uuid>,
        stored: Option<Uuid>,
        unowned: WhenUnowned,
    ) -> Result<Option<Uuid>, NotificationError> {
        match named {
            Some(user) => {
                let exists = self
                    .store
                    .find_user_auth(user)
                    .await
                    .map_err(|e| NotificationError::Database(e.to_string()))?
                    .is_some();
                if !exists {
                    tracing::warn!(user_id = %user, "store notification names no known user; skipped");
                }
                Ok(exists.then_some(user))
            }
            None => match (stored, unowned) {
                (Some(user), _) => Ok(Some(user)),
                (None, WhenUnowned::Skip) => Ok(None),
                (None, WhenUnowned::Retry) => Err(NotificationError::Unknown),
            },
        }
    }

    /// The stored purchase of a transaction id, whoever owns it.
    pub async fn purchase_get(&self, transaction_id: &str) -> Result<Option<Purchase>, ApiError> {
        Ok(self.store.purchase_get(transaction_id).await?)
    }

    /// Stored purchases, newest first; `user` None lists everyone's.
    pub async fn purchases_list(
        &self,
        user: Option<Uuid>,
        limit: usize,
        cursor: &str,
    ) -> Result<IapPage<Purchase>, ApiError> {
        let query = self.list_query(user, limit, cursor)?;
        let rows = self.store.purchases_list(&query).await?;
        Ok(page(rows, limit, user, |p| {
            (p.purchase_time_ms, p.user_id, p.transaction_id.clone())
        }))
    }

    /// The caller's stored subscription to a product (the latest to
    /// expire), or `NotFound`.
    pub async fn subscription_get(
        &self,
        user: Uuid,
        product_id: &str,
    ) -> Result<Subscription, ApiError> {
        if product_id.is_empty() {
            return Err(ApiError::invalid("product id cannot be empty"));
        }
        self.store
            .subscription_get(user, product_id)
            .await?
            .ok_or_else(|| ApiError::not_found("subscription not found"))
    }

    pub async fn subscriptions_list(
        &self,
        user: Option<Uuid>,
        limit: usize,
        cursor: &str,
    ) -> Result<IapPage<Subscription>, ApiError> {
        let query = self.list_query(user, limit, cursor)?;
        let rows = self.store.subscriptions_list(&query).await?;
        Ok(page(rows, limit, user, |s| {
            (
                s.purchase_time_ms,
                s.user_id,
                s.original_transaction_id.clone(),
            )
        }))
    }

    fn list_query(
        &self,
        user: Option<Uuid>,
        limit: usize,
        cursor: &str,
    ) -> Result<IapListQuery, ApiError> {
        if limit == 0 || limit > self.settings.max_list_limit {
            return Err(ApiError::invalid(format!(
                "invalid limit: it must be between 1 and {}",
                self.settings.max_list_limit
            )));
        }
        let after = if cursor.is_empty() {
            None
        } else {
            let c = IapCursor::decode(cursor)
                .filter(|c| c.filter == user)
                .ok_or_else(|| {
                    ApiError::invalid(
                        "cursor is invalid or was made for another listing; start again without one",
                    )
                })?;
            Some(c)
        };
        Ok(IapListQuery {
            user,
            after,
            limit: limit + 1,
        })
    }

    async fn keep_purchases(
        &self,
        purchases: Vec<Purchase>,
        persist: bool,
    ) -> Result<Vec<Purchase>, ApiError> {
        if !persist || purchases.is_empty() {
            return Ok(purchases);
        }
        for p in &purchases {
            check_stored_id(&p.transaction_id, &p.product_id)?;
        }
        let now_ms = crate::unix_now_ms();
        Ok(self.store.purchases_upsert(purchases, now_ms).await?)
    }

    async fn keep_subscriptions(
        &self,
        subs: Vec<Subscription>,
        persist: bool,
    ) -> Result<Vec<Subscription>, ApiError> {
        if !persist {
            return Ok(subs);
        }
        for s in &subs {
            check_stored_id(&s.original_transaction_id, &s.product_id)?;
        }
        let now_ms = crate::unix_now_ms();
        Ok(self.store.subscriptions_upsert(subs, now_ms).await?)
    }

    /// A StoreKit 2 signed transaction (a JWS, as Nakama tells it apart: three
    /// dot-separated parts), checked against the trusted roots and
    /// decoded; `None` for an app receipt.
    fn apple_signed_transaction(
        &self,
        receipt: &str,
        password: &str,
    ) -> Result<Option<serde_json::Value>, ApiError> {
        if receipt.is_empty() {
            return Err(ApiError::invalid("receipt cannot be empty"));
        }
        if password.is_empty() {
            return Err(not_configured("apple", "iap.apple.shared_password"));
        }
        if receipt.split('.').count() != 3 {
            return Ok(None);
        }
        let now = unix_now().max(0) as u64;
        super::apple_jws::verify(receipt, &self.apple_roots, now)
            .map(Some)
            .map_err(|e| ApiError::invalid(format!("apple signed transaction refused: {e}")))
    }

    /// Sends an App Store receipt to production, then to the sandbox when
    /// production says it is a sandbox receipt; answers Apple's answer
    /// (checked valid) and its text.
    async fn apple_receipt(
        &self,
        receipt: &str,
        password: &str,
    ) -> Result<(apple::AppleAnswer, String), ApiError> {
        if receipt.is_empty() {
            return Err(ApiError::invalid("receipt cannot be empty"));
        }
        if password.is_empty() {
            return Err(not_configured("apple", "iap.apple.shared_password"));
        }
        let body = serde_json::json!({
            "receipt-data": receipt,
            "password": password,
            "exclude-old-transactions": true,
        })
        .to_string()
        .into_bytes();
        let a = &self.settings.apple;
        let production = format!("{}/verifyReceipt", base(&a.base_url, APPLE_URL));
        let headers = [("content-type", "application/json; charset=utf-8")];
        let mut raw = self
            .post("apple", &production, &headers, body.clone())
            .await?;
        let mut answer = apple::AppleAnswer::parse(&raw)?;
        if answer.status == apple::STATUS_SANDBOX_RECEIPT {
            let sandbox = format!(
                "{}/verifyReceipt",
                base(&a.sandbox_base_url, APPLE_SANDBOX_URL)
            );
            raw = self.post("apple", &sandbox, &headers, body).await?;
            answer = apple::AppleAnswer::parse(&raw)?;
        }
        answer.check_valid()?;
        Ok((answer, String::from_utf8_lossy(&raw).into_owned()))
    }

    async fn google_get(&self, account: &GoogleAccount, path: &str) -> Result<Vec<u8>, ApiError> {
        let token = self.google_token(account).await?;
        let url = format!("{}{path}", base(&self.settings.google.base_url, GOOGLE_URL));
        let http = self.http()?;
        let auth = format!("Bearer {token}");
        let (status, body) = http
            .send(
                "GET",
                &url,
                &[("authorization", &auth), ("accept", "application/json")],
                Vec::new(),
                self.timeout(),
            )
            .await
            .map_err(|why| unreachable("google play", &why))?;
        match status {
            200 => Ok(body),
            400 | 404 | 410 => Err(ApiError::invalid(format!(
                "google play does not know this purchase (status {status}); check the receipt's package name, product and token"
            ))),
            401 | 403 => Err(ApiError::new(
                Code::FailedPrecondition,
                format!(
                    "google play refused the service account (status {status}); grant it access to the app in the play console"
                ),
            )),
            _ => Err(store_error("google play", status)),
        }
    }

    async fn google_token(&self, account: &GoogleAccount) -> Result<String, ApiError> {
        let now = unix_now();
        if let Some((token, expires)) = self
            .google_tokens
            .lock()
            .expect("token cache lock")
            .get(&account.client_email)
            && *expires - TOKEN_GRACE_SEC > now
        {
            return Ok(token.clone());
        }
        let url = format!(
            "{}/o/oauth2/token",
            base(&self.settings.google.oauth_base_url, GOOGLE_OAUTH_URL)
        );
        let assertion = google::assertion(&account.client_email, &account.private_key, &url, now)?;
        let form = format!(
            "grant_type={}&assertion={}",
            urlencode::escape("urn:ietf:params:oauth:grant-type:jwt-bearer"),
            urlencode::escape(&assertion)
        );
        let http = self.http()?;
        let (status, body) = http
            .send(
                "POST",
                &url,
                &[
                    ("content-type", "application/x-www-form-urlencoded"),
                    ("accept", "application/json"),
                ],
                form.into_bytes(),
                self.timeout(),
            )
            .await
            .map_err(|why| unreachable("google oauth", &why))?;
        if status == 400 || status == 401 {
            return Err(ApiError::new(
                Code::FailedPrecondition,
                "google refused the service account's credentials; check iap.google.client_email and iap.google.private_key",
            ));
        }
        if status != 200 {
            return Err(store_error("google oauth", status));
        }
        let (token, expires_in) = google::access_token(&body).ok_or_else(|| {
            ApiError::new(
                Code::Unavailable,
                "google oauth answered without an access token; try again later",
            )
        })?;
        self.google_tokens.lock().expect("token cache lock").insert(
            account.client_email.clone(),
            (token.clone(), now + expires_in),
        );
        Ok(token)
    }

    async fn huawei_token(&self) -> Result<String, ApiError> {
        let now = unix_now();
        if let Some((token, expires)) = &*self.huawei_token.lock().expect("token cache lock")
            && *expires - TOKEN_GRACE_SEC > now
        {
            return Ok(token.clone());
        }
        let h = &self.settings.huawei;
        let url = format!(
            "{}/oauth2/v3/token",
            base(&h.oauth_base_url, HUAWEI_OAUTH_URL)
        );
        let form = format!(
            "grant_type=client_credentials&client_id={}&client_secret={}",
            urlencode::escape(&h.client_id),
            urlencode::escape(&h.client_secret)
        );
        let body = self
            .post(
                "huawei oauth",
                &url,
                &[("content-type", "application/x-www-form-urlencoded")],
                form.into_bytes(),
            )
            .await
            .map_err(|e| {
                if e.code == Code::InvalidArgument {
                    ApiError::new(
                        Code::FailedPrecondition,
                        "huawei refused the app's credentials; check iap.huawei.client_id and iap.huawei.client_secret",
                    )
                } else {
                    e
                }
            })?;
        let (token, expires_in) = google::access_token(&body).ok_or_else(|| {
            ApiError::new(
                Code::Unavailable,
                "huawei oauth answered without an access token; try again later",
            )
        })?;
        *self.huawei_token.lock().expect("token cache lock") =
            Some((token.clone(), now + expires_in));
        Ok(token)
    }

    /// POSTs to a store; a 200 answers the body, a 4xx is `InvalidArgument`
    /// (the store refused what was sent), anything else `Unavailable`.
    async fn post(
        &self,
        store: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<Vec<u8>, ApiError> {
        let http = self.http()?;
        let (status, answer) = http
            .send("POST", url, headers, body, self.timeout())
            .await
            .map_err(|why| unreachable(store, &why))?;
        match status {
            200 => Ok(answer),
            400..=499 => Err(ApiError::invalid(format!(
                "{store} refused the receipt (status {status})"
            ))),
            _ => Err(store_error(store, status)),
        }
    }

    fn http(&self) -> Result<&Arc<dyn SocialHttp>, ApiError> {
        self.http.as_ref().ok_or_else(|| {
            ApiError::new(
                Code::Unimplemented,
                "this server has no http client to reach the stores",
            )
        })
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.settings.timeout_ms.max(1))
    }
}

/// Cuts the extra row the store read for the cursor off a page.
fn page<T>(
    mut rows: Vec<T>,
    limit: usize,
    filter: Option<Uuid>,
    key: impl Fn(&T) -> (i64, Uuid, String),
) -> IapPage<T> {
    let cursor = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(|last| {
            let (purchase_time_ms, user_id, id) = key(last);
            IapCursor {
                purchase_time_ms,
                user_id,
                id,
                filter,
            }
            .encode()
        })
    } else {
        None
    };
    IapPage {
        items: rows,
        cursor,
    }
}

/// Longest transaction or product id kept (the stores' are far shorter).
const MAX_ID_BYTES: usize = 512;

fn check_stored_id(transaction_id: &str, product_id: &str) -> Result<(), ApiError> {
    if transaction_id.is_empty() {
        return Err(ApiError::invalid(
            "the store's answer names no transaction id; the receipt cannot be kept",
        ));
    }
    if transaction_id.len() > MAX_ID_BYTES || product_id.len() > MAX_ID_BYTES {
        return Err(ApiError::invalid(format!(
            "transaction and product ids are kept up to {MAX_ID_BYTES} bytes; this receipt's are longer"
        )));
    }
    Ok(())
}

fn base<'a>(configured: &'a str, default: &'a str) -> &'a str {
    if configured.is_empty() {
        default
    } else {
        configured.trim_end_matches('/')
    }
}

fn not_configured(store: &str, keys: &str) -> ApiError {
    ApiError::new(
        Code::FailedPrecondition,
        format!("{store} iap is not configured; set {keys}"),
    )
}

fn unreachable(store: &str, why: &str) -> ApiError {
    tracing::debug!(store, reason = %why, "store unreachable");
    ApiError::new(
        Code::Unavailable,
        format!("could not reach {store}: {why}; try again later"),
    )
}

fn store_error(store: &str, status: u16) -> ApiError {
    ApiError::new(
        Code::Unavailable,
        format!("{store} answered status {status}; try again later"),
    )
}

fn basic(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlong_or_missing_ids_are_refused_before_the_store() {
        assert!(check_stored_id("t", "p").is_ok());
        let long = "x".repeat(MAX_ID_BYTES + 1);
        assert_eq!(
            check_stored_id(&long, "p").unwrap_err().code,
            Code::InvalidArgument
        );
        assert_eq!(
            check_stored_id("", "p").unwrap_err().code,
            Code::InvalidArgument
        );
    }

    #[test]
    fn form_values_are_escaped() {
        assert_eq!(urlencode::escape("a:b/c d"), "a%3Ab%2Fc%20d");
        assert_eq!(urlencode::escape("x.y-z_~"), "x.y-z_~");
    }

    #[test]
    fn a_page_keeps_limit_rows_and_points_past_the_last() {
        let rows = vec![(3, "c"), (2, "b"), (1, "a")];
        let p = page(rows, 2, None, |r| (r.0, Uuid::nil(), r.1.to_owned()));
        assert_eq!(p.items.len(), 2);
        let c = IapCursor::decode(&p.cursor.unwrap()).unwrap();
        assert_eq!((c.purchase_time_ms, c.id.as_str()), (2, "b"));
        let p = page(vec![(1, "a")], 2, None, |r| {
            (r.0, Uuid::nil(), r.1.to_owned())
        });
        assert!(p.cursor.is_none());
    }
}
