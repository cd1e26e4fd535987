//! Nakama's console calls that Ludus does not serve: Satori's (Ludus has
//! no Satori). Each answers HTTP 501 with gRPC code 12 (Unimplemented)
//! naming the call, so a console client can tell "not in this server" from
//! "no such thing" (404). A row goes in the change that routes a real
//! handler (axum refuses a method routed twice on one path).

use axum::Router;
use axum::routing::{MethodFilter, on};
use ludus_core::Code;

use super::ConsoleState;
use crate::error::HttpError;

use MethodFilter as M;

/// `(method, path, name of Nakama's call)` of every route of Nakama's
/// `console.proto` not served.
const ABSENT: &[(MethodFilter, &str, &str)] = &[
    (M::GET, "/v2/console/satori/template", "SatoriListTemplates"),
    (
        M::POST,
        "/v2/console/satori/direct-message",
        "SatoriSendDirectMessage",
    ),
];

pub(super) fn routes(router: Router<ConsoleState>) -> Router<ConsoleState> {
    ABSENT.iter().fold(router, |router, &(method, path, name)| {
        router.route(
            path,
            on(method, move || async move {
                HttpError::new(
                    Code::Unimplemented,
                    format!("the console call {name} is not available in this server: Ludus has no Satori"),
                )
            }),
        )
    })
}
