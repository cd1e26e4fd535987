//! Nakama's routes that Ludus does not serve yet. Each answers HTTP 501 with
//! gRPC code 12 (Unimplemented) and names the absent feature, so an SDK can
//! tell "this server lacks friends" from "no such friend" (404).
//!
//! The table is the one place to edit when a feature lands: delete its rows
//! in the same change that routes the real handlers (axum refuses a method
//! routed twice on one path, so a forgotten row fails every test at once).

use axum::Router;
use axum::routing::{MethodFilter, on};
use ludus_core::Code;

use crate::error::HttpError;
use crate::state::AppState;

const SAMSUNG: &str =
    "samsung galaxy store purchase validation is not available in this server yet";

use MethodFilter as M;

/// `(method, path, message)` of every route of Nakama's `apigrpc.proto`
/// that Ludus does not serve.
pub(crate) const ABSENT_ROUTES: &[(MethodFilter, &str, &str)] = &[
    // Samsung purchases.
    (M::POST, "/v2/iap/purchase/samsung", SAMSUNG),
];

/// Adds a 501 route for every row of [`ABSENT_ROUTES`].
pub(super) fn routes(router: Router<AppState>) -> Router<AppState> {
    ABSENT_ROUTES
        .iter()
        .fold(router, |router, &(method, path, message)| {
            router.route(
                path,
                on(method, move || async move {
                    HttpError::new(Code::Unimplemented, message)
                }),
            )
        })
}
