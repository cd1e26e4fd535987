//! The records of in-app purchases and subscriptions as the server stores
//! them, the stores and environments they come from, and the keyset cursor
//! of their listings. Times are milliseconds since the UNIX epoch, 0 where a
//! time is unset (no refund yet, not stored yet).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

/// The store that sold a purchase (Nakama's `StoreProvider` numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreProvider {
    AppleAppStore = 0,
    GooglePlayStore = 1,
    HuaweiAppGallery = 2,
    FacebookInstantStore = 3,
    SamsungGalaxyStore = 4,
}

impl StoreProvider {
    pub fn code(self) -> i32 {
        self as i32
    }

    pub fn from_code(code: i64) -> Option<StoreProvider> {
        Some(match code {
            0 => StoreProvider::AppleAppStore,
            1 => StoreProvider::GooglePlayStore,
            2 => StoreProvider::HuaweiAppGallery,
            3 => StoreProvider::FacebookInstantStore,
            4 => StoreProvider::SamsungGalaxyStore,
            _ => return None,
        })
    }

    /// The enum's name on Nakama's wire and in its Lua tables.
    pub fn name(self) -> &'static str {
        match self {
            StoreProvider::AppleAppStore => "APPLE_APP_STORE",
            StoreProvider::GooglePlayStore => "GOOGLE_PLAY_STORE",
            StoreProvider::HuaweiAppGallery => "HUAWEI_APP_GALLERY",
            StoreProvider::FacebookInstantStore => "FACEBOOK_INSTANT_STORE",
            StoreProvider::SamsungGalaxyStore => "SAMSUNG_GALAXY_STORE",
        }
    }
}

/// Where a purchase was made (Nakama's `StoreEnvironment` numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreEnvironment {
    Unknown = 0,
    Sandbox = 1,
    Production = 2,
}

impl StoreEnvironment {
    pub fn code(self) -> i32 {
        self as i32
    }

    pub fn from_code(code: i64) -> StoreEnvironment {
        match code {
            1 => StoreEnvironment::Sandbox,
            2 => StoreEnvironment::Production,
            _ => StoreEnvironment::Unknown,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StoreEnvironment::Unknown => "UNKNOWN",
            StoreEnvironment::Sandbox => "SANDBOX",
            StoreEnvironment::Production => "PRODUCTION",
        }
    }
}

/// One validated purchase. A transaction id is stored once and belongs to
/// the user who first validated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Purchase {
    pub user_id: Uuid,
    pub store: StoreProvider,
    pub product_id: String,
    pub transaction_id: String,
    /// The store's answer (or what it signed), as JSON text.
    pub raw_response: String,
    pub purchase_time_ms: i64,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
    pub refund_time_ms: i64,
    pub environment: StoreEnvironment,
    /// The transaction id was already stored when this validation ran.
    pub seen_before: bool,
}

/// One validated subscription, keyed by the store's original transaction id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub user_id: Uuid,
    pub store: StoreProvider,
    pub product_id: String,
    pub original_transaction_id: String,
    pub raw_response: String,
    pub raw_notification: String,
    pub purchase_time_ms: i64,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
    pub expire_time_ms: i64,
    pub refund_time_ms: i64,
    pub environment: StoreEnvironment,
}

impl Subscription {
    /// Not expired at `now_ms` and never refunded.
    pub fn active(&self, now_ms: i64) -> bool {
        self.expire_time_ms > now_ms && self.refund_time_ms == 0
    }
}

/// Where a listing page starts: after the row with this sort key, in the
/// order newest purchase first (purchase time, then user id, then
/// transaction id, all descending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IapCursor {
    pub purchase_time_ms: i64,
    pub user_id: Uuid,
    pub id: String,
    /// The user filter the cursor was made under; a cursor is refused under
    /// another.
    pub filter: Option<Uuid>,
}

impl IapCursor {
    pub fn encode(&self) -> String {
        let filter = self.filter.map(|f| f.to_string()).unwrap_or_default();
        let doc = serde_json::json!([
            self.purchase_time_ms,
            self.user_id.to_string(),
            self.id,
            filter
        ]);
        URL_SAFE_NO_PAD.encode(doc.to_string())
    }

    pub fn decode(text: &str) -> Option<IapCursor> {
        let bytes = URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()?;
        let (time, user, id, filter): (i64, String, String, String) =
            serde_json::from_slice(&bytes).ok()?;
        Some(IapCursor {
            purchase_time_ms: time,
            user_id: Uuid::parse_str(&user).ok()?,
            id,
            filter: if filter.is_empty() {
                None
            } else {
                Some(Uuid::parse_str(&filter).ok()?)
            },
        })
    }
}

/// A page of purchases or subscriptions, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IapListQuery {
    /// Only this user's rows; None lists everyone's.
    pub user: Option<Uuid>,
    pub after: Option<IapCursor>,
    /// Rows to read; the service asks for one more than it shows.
    pub limit: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let c = IapCursor {
            purchase_time_ms: 42,
            user_id: Uuid::nil(),
            id: "tx".into(),
            filter: Some(Uuid::nil()),
        };
        assert_eq!(IapCursor::decode(&c.encode()), Some(c));
        assert_eq!(IapCursor::decode("%%%"), None);
        assert_eq!(IapCursor::decode("e30"), None);
    }

    #[test]
    fn codes_are_nakamas() {
        assert_eq!(StoreProvider::FacebookInstantStore.code(), 3);
        assert_eq!(
            StoreProvider::from_code(2),
            Some(StoreProvider::HuaweiAppGallery)
        );
        assert_eq!(StoreProvider::from_code(9), None);
        assert_eq!(StoreEnvironment::from_code(1).name(), "SANDBOX");
    }
}
