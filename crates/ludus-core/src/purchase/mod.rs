//! In-app purchases and subscriptions (Apple App Store, Google Play, Huawei
//! AppGallery, Facebook Instant Games, Samsung Galaxy Store): what each
//! store's answer or signature says (`apple`, `google`, `huawei`, `instant`,
//! `samsung`, pure code over
//! the `model` records) and the `PurchaseService` that asks the stores
//! through the server's HTTP seam and keeps what they confirmed.

pub mod apple;
pub mod apple_jws;
pub mod google;
pub mod huawei;
pub mod instant;
pub mod model;
pub mod notification;
pub mod samsung;
mod service;

pub use model::{IapCursor, IapListQuery, Purchase, StoreEnvironment, StoreProvider, Subscription};
pub use service::{
    AppleIapSettings, DEFAULT_LIST_LIMIT, GoogleAccount, GoogleIapSettings, HuaweiIapSettings,
    IapPage, IapSettings, InstantIapSettings, PurchaseService, SamsungIapSettings,
};
