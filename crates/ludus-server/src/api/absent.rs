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

/// `(method, path, message)` of every route of Nakama's `apigrpc.proto`
/// that Ludus does not serve: none today; a row is `(MethodFilter::POST,
/// "/v2/…", "… is not available in this server yet")`.
pub(crate) const ABSENT_ROUTES: &[(MethodFilter, &str, &str)] = &[];

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
