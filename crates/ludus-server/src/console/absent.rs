//! Nakama's console calls that Ludus does not serve yet: each answers HTTP
//! 501 with gRPC code 12 (Unimplemented) naming the call, so a console
//! client can tell "not in this server" from "no such thing" (404). Delete a
//! row in the change that routes the real handler (axum refuses a method
//! routed twice on one path). Path parameters are named alike wherever
//! paths share a prefix, as the router requires.

use axum::Router;
use axum::routing::{MethodFilter, on};
use ludus_core::Code;

use super::ConsoleState;
use crate::error::HttpError;

use MethodFilter as M;

/// `(method, path, name of Nakama's call)` of every route of Nakama's
/// `console.proto` not served yet.
const ABSENT: &[(MethodFilter, &str, &str)] = &[
    (
        M::POST,
        "/v2/console/authenticate/mfa",
        "AuthenticateMFASetup",
    ),
    (
        M::POST,
        "/v2/console/account/{account_id}/note",
        "AddAccountNote",
    ),
    (
        M::GET,
        "/v2/console/account/{account_id}/note",
        "ListAccountNotes",
    ),
    (M::POST, "/v2/console/acl/template", "AddAclTemplate"),
    (M::PUT, "/v2/console/acl/template/{id}", "UpdateAclTemplate"),
    (M::GET, "/v2/console/acl/template", "ListAclTemplates"),
    (
        M::DELETE,
        "/v2/console/acl/template/{id}",
        "DeleteAclTemplate",
    ),
    (
        M::DELETE,
        "/v2/console/account/{account_id}/note/{note_id}",
        "DeleteAccountNote",
    ),
    (
        M::POST,
        "/v2/console/api/endpoints/{method}",
        "CallApiEndpoint",
    ),
    (M::GET, "/v2/console/setting/{name}", "GetSetting"),
    (M::GET, "/v2/console/setting", "ListSettings"),
    (
        M::POST,
        "/v2/console/user/{username}/mfa/require",
        "RequireUserMfa",
    ),
    (
        M::POST,
        "/v2/console/user/{username}/mfa/reset",
        "ResetUserMfa",
    ),
    (M::POST, "/v2/console/setting/{name}", "UpdateSetting"),
    (M::GET, "/v2/console/satori/template", "SatoriListTemplates"),
    (
        M::POST,
        "/v2/console/satori/direct-message",
        "SatoriSendDirectMessage",
    ),
    (M::GET, "/v2/console/extensions", "RegisteredExtensions"),
];

pub(super) fn routes(router: Router<ConsoleState>) -> Router<ConsoleState> {
    ABSENT.iter().fold(router, |router, &(method, path, name)| {
        router.route(
            path,
            on(method, move || async move {
                HttpError::new(
                    Code::Unimplemented,
                    format!("the console call {name} is not available in this server yet"),
                )
            }),
        )
    })
}
