//! The web console: three files compiled into the binary (`ui/`), served
//! on the console's port at `/`, `/console.js` and `/console.css`. They hold
//! no data, so they are public; the page signs in and calls the console API
//! like any other client, through the same ACL gate. A content security
//! policy keeps the page to its own script and to this origin.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::ConsoleState;

const INDEX: &str = include_str!("ui/index.html");
const SCRIPT: &str = include_str!("ui/console.js");
const STYLE: &str = include_str!("ui/console.css");

/// Only this origin's script, style and API; no frames, no plugins.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

pub(super) fn routes(router: Router<ConsoleState>) -> Router<ConsoleState> {
    router
        .route(
            "/",
            get(|| async { file(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/console.js",
            get(|| async { file(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/console.css",
            get(|| async { file(STYLE, "text/css; charset=utf-8") }),
        )
}

fn file(body: &'static str, content_type: &'static str) -> Response {
    let mut res = body.into_response();
    let headers = res.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}
