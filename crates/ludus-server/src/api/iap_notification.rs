//! The stores' server notifications, served where Nakama serves them: on
//! the console listener, without a console session (the endpoint id in the
//! path is the secret), at `/v2/console/apple/notifications/{id}` and
//! `/v2/console/google/notifications/{id}` (and the older `subscriptions`
//! paths), each only when `iap.<store>.notifications_endpoint_id` is set.
//!
//! ludus-core's `PurchaseService` checks the notification and changes the
//! stored purchase or subscription; then the module callback registered
//! for it runs. The answers are Nakama's: 200 when the notification was
//! handled or is to be ignored, and 500 with an empty body when it was
//! refused (malformed, not signed by a trusted chain, unknown to Google),
//! which tells the store to send it again later. A failing callback is
//! logged and answered 200, except for Google's voided purchases, 500 as
//! in Nakama.

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::any;
use ludus_core::purchase::StoreProvider;
use ludus_core::purchase::notification::{Changed, NotificationError, StoreNotification};

use crate::state::AppState;

/// Adds the notification routes the configuration turns on.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    state: &AppState,
) -> Router<S> {
    let mut router = router;
    let iap = &state.config.iap;
    for (store, id) in [
        ("apple", &iap.apple.notifications_endpoint_id),
        ("google", &iap.google.notifications_endpoint_id),
    ] {
        if id.is_empty() {
            continue;
        }
        for kind in ["subscriptions", "notifications"] {
            let path = format!("/v2/console/{store}/{kind}/{id}");
            let s = state.clone();
            let handler = if store == "apple" {
                any(move |body: Bytes| apple(s.clone(), body))
            } else {
                any(move |body: Bytes| google(s.clone(), body))
            };
            router = router.route(&path, handler);
            tracing::info!(endpoint = %format!("/v2/console/{store}/{kind}/<id>"), "store notifications served");
        }
    }
    router
}

async fn apple(state: AppState, body: Bytes) -> StatusCode {
    let handled = state.purchases.apple_notification(&body).await;
    finish(&state, "apple", handled).await
}

async fn google(state: AppState, body: Bytes) -> StatusCode {
    let handled = state.purchases.google_notification(&body).await;
    finish(&state, "google", handled).await
}

/// The answer to a notification that changed nothing. Nakama answers 500
/// to all; here the sender's mistakes (malformed, untrusted, incomplete)
/// are 400, a transaction not stored yet 503, the store's failure 502 and
/// ours 500. A store retries on any answer but 200, so each is retried as
/// under Nakama.
fn refused(e: &NotificationError) -> StatusCode {
    match e {
        NotificationError::Malformed(_)
        | NotificationError::Untrusted(_)
        | NotificationError::Incomplete(_) => StatusCode::BAD_REQUEST,
        NotificationError::Unknown => StatusCode::SERVICE_UNAVAILABLE,
        NotificationError::Store(_) | NotificationError::Answer(_) => StatusCode::BAD_GATEWAY,
        NotificationError::Database(_) | NotificationError::Callback(_) => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

async fn finish(
    state: &AppState,
    store: &str,
    handled: Result<Option<StoreNotification>, NotificationError>,
) -> StatusCode {
    let notification = match handled {
        Ok(Some(n)) => n,
        Ok(None) => return StatusCode::OK,
        Err(e) => {
            tracing::warn!(store, reason = %e, "store notification refused");
            return refused(&e);
        }
    };
    match state.runtime.store_notification(&notification).await {
        Ok(_) => StatusCode::OK,
        Err(e) => {
            tracing::error!(store, error = %e, kind = notification.kind.name(), "store notification callback failed");
            let voided_google_purchase = notification.store() == StoreProvider::GooglePlayStore
                && matches!(notification.change, Changed::Purchase(_));
            if voided_google_purchase {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::OK
            }
        }
    }
}
