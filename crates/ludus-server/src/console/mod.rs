//! The admin console API on its own listener (`console.port`, 7351 as
//! Nakama): Nakama's `console.proto` calls at their HTTP paths, over the same
//! services as the client API plus `ConsoleService` (console users and
//! their sessions).
//!
//! Every route but sign-in is added through [`ConsoleRoutes::add`], which
//! puts the ACL gate in front of its handler: the gate checks the console
//! session (Bearer token, or the root user by HTTP Basic) and the one
//! permission the route needs, and hands the handler a [`ConsoleCaller`].
//! Nakama's console calls Ludus does not serve (Satori's) answer 501
//! (`absent.rs`).
//! The web console's files are served at `/` (`ui.rs`). The gate logs
//! every change a console user asks for (the audit trail) and writes the
//! successful ones to the audit log (`audit.rs`).

mod absent;
mod account_edit;
mod account_port;
mod accounts;
mod audit;
mod auth;
mod body_templates;
mod channels;
mod explorer;
mod groups;
mod leaderboards;
mod matches;
mod notes;
mod notifications;
mod purchases;
mod settings;
mod status;
mod storage;
mod templates;
mod ui;
mod users;
mod wallet;
mod wipes;

pub(crate) use wipes::{after_wipe, wiped};

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ludus_core::Code;
use ludus_core::console_acl::{Level, Need, RESOURCES};
use ludus_core::console_service::{ConsoleCaller, ConsoleService};
use serde::de::DeserializeOwned;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;

use crate::error::HttpError;
use crate::state::AppState;

/// What console handlers get: the client API's services and the console's.
#[derive(Clone)]
pub(crate) struct ConsoleState {
    pub(crate) app: AppState,
    pub(crate) console: Arc<ConsoleService>,
    /// The client API's router: the API explorer sends its calls through it.
    pub(crate) client_api: Router,
    /// When this node's console started, milliseconds since the epoch.
    pub(crate) started_ms: i64,
}

/// Milliseconds since the epoch, the console's clock for tokens and lockouts.
pub(crate) fn now_ms() -> i64 {
    ludus_core::unix_now_us() / 1000
}

/// The console router: sign-in, the gated routes, 501 for Nakama's console
/// calls not served, and the listener's layers.
pub(crate) fn router(state: ConsoleState) -> Router {
    let limit = state.app.config.console.max_message_size_bytes;
    let timeout = Duration::from_millis(state.app.config.console.read_timeout_ms);
    let mut routes = ConsoleRoutes {
        // The stores' notifications share the listener, as in Nakama.
        router: crate::api::iap_notification::routes(auth::public_routes(), &state.app),
        state: state.clone(),
    };
    users::routes(&mut routes);
    accounts::routes(&mut routes);
    account_edit::routes(&mut routes);
    account_port::routes(&mut routes);
    wallet::routes(&mut routes);
    storage::routes(&mut routes);
    leaderboards::routes(&mut routes);
    matches::routes(&mut routes);
    groups::routes(&mut routes);
    explorer::routes(&mut routes);
    purchases::routes(&mut routes);
    notifications::routes(&mut routes);
    channels::routes(&mut routes);
    status::routes(&mut routes);
    wipes::routes(&mut routes);
    audit::routes(&mut routes);
    notes::routes(&mut routes);
    templates::routes(&mut routes);
    settings::routes(&mut routes);
    let routed = ui::routes(absent::routes(routes.router))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    routed.layer(
        tower::ServiceBuilder::new()
            .map_response(IntoResponse::into_response)
            .layer(SetResponseHeaderLayer::if_not_present(
                header::CACHE_CONTROL,
                HeaderValue::from_static(crate::api::CACHE_CONTROL),
            ))
            .layer(TimeoutLayer::with_status_code(
                StatusCode::GATEWAY_TIMEOUT,
                timeout,
            ))
            .layer(DefaultBodyLimit::max(limit)),
    )
}

/// The console's routes under construction; [`ConsoleRoutes::add`] is the
/// only way to add one that needs a session.
pub(crate) struct ConsoleRoutes {
    router: Router<ConsoleState>,
    state: ConsoleState,
}

impl ConsoleRoutes {
    /// Adds `handler` at `path`, behind the gate that checks `need`.
    pub(crate) fn add(&mut self, path: &str, need: Need, handler: MethodRouter<ConsoleState>) {
        let gate_state = (self.state.clone(), need, Arc::<str>::from(path));
        let gated = handler.route_layer(from_fn_with_state(gate_state, gate));
        let router = std::mem::take(&mut self.router);
        self.router = router.route(path, gated);
    }
}

/// The ACL gate in front of every console call but sign-in.
async fn gate(
    State((state, need, route)): State<(ConsoleState, Need, Arc<str>)>,
    req: Request,
    next: Next,
) -> Response {
    let caller = match authorize(&state, req.headers()).await {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    if !caller.acl.allows(need) {
        return HttpError::new(Code::PermissionDenied, refused(need)).into_response();
    }
    let changes = req.method() != axum::http::Method::GET;
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let query = req.uri().query().map(str::to_owned);
    // The body is read here, within the listener's limit, so the audit log
    // can say what was asked; the handler reads the same bytes.
    let (parts, body) = req.into_parts();
    let limit = state.app.config.console.max_message_size_bytes;
    let body = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return HttpError::with_status(
                StatusCode::PAYLOAD_TOO_LARGE,
                Code::InvalidArgument,
                format!("request body too large, the limit is {limit} bytes"),
            )
            .into_response();
        }
    };
    let mut req = Request::from_parts(parts, axum::body::Body::from(body.clone()));
    req.extensions_mut().insert(caller.clone());
    let res = next.run(req).await;
    // The audit trail: every change a console user made, as one log event
    // (target `ludus::console::audit`); reads are not logged.
    if changes {
        tracing::info!(
            target: "ludus::console::audit",
            console_user = %caller.username,
            console_user_id = %caller.id,
            %method,
            path,
            status = res.status().as_u16(),
            "console change"
        );
    }
    // And in the audit log the console reads back, once it succeeded.
    if res.status().is_success() {
        let call = audit::Call {
            caller: &caller,
            need,
            method: &method,
            route: &route,
            path: &path,
            query: query.as_deref(),
            body: &body,
        };
        if let Some(entry) = audit::entry(&call, ludus_core::unix_now_us()) {
            audit::record(&state, entry).await;
        }
    }
    res
}

fn refused(need: Need) -> String {
    match need {
        Need::Session => "console session required".into(),
        Need::Permission(resource, level) => {
            let level = match level {
                Level::Read => "read",
                Level::Write => "write",
                Level::Delete => "delete",
            };
            format!(
                "your console user lacks the {level} permission on {}, ask an administrator to grant it",
                RESOURCES[resource as usize]
            )
        }
    }
}

/// The console user of a request: a Bearer session token, or the root
/// user's name and password as HTTP Basic.
async fn authorize(
    state: &ConsoleState,
    headers: &axum::http::HeaderMap,
) -> Result<ConsoleCaller, HttpError> {
    let missing = || {
        HttpError::unauthenticated(
            "console session required, sign in at /v2/console/authenticate and send `Authorization: Bearer <token>`",
        )
    };
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(missing)?;
    if let Some(token) = crate::extract::strip_scheme(value, "Bearer") {
        return Ok(state.console.verify(token.trim(), now_ms()).await?);
    }
    if let Some(b64) = crate::extract::strip_scheme(value, "Basic") {
        let raw = STANDARD.decode(b64.trim()).map_err(|_| missing())?;
        let text = String::from_utf8(raw).map_err(|_| missing())?;
        let (user, password) = text.split_once(':').unwrap_or((&text, ""));
        return Ok(state.console.basic(user, password, now_ms())?);
    }
    Err(missing())
}

/// The signed-in console user, put there by the gate.
#[derive(Debug)]
pub(crate) struct Caller(pub ConsoleCaller);

impl FromRequestParts<ConsoleState> for Caller {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _: &ConsoleState) -> Result<Self, HttpError> {
        parts
            .extensions
            .get::<ConsoleCaller>()
            .cloned()
            .map(Caller)
            .ok_or_else(|| HttpError::unauthenticated("console session required"))
    }
}

/// A console request body, decoded with the protojson rules of the client
/// API; an empty body is `{}`.
#[derive(Debug)]
pub(crate) struct Body<T>(pub T);

impl<T: DeserializeOwned + Default> FromRequest<ConsoleState> for Body<T> {
    type Rejection = HttpError;

    async fn from_request(req: Request, state: &ConsoleState) -> Result<Self, HttpError> {
        let limit = state.app.config.console.max_message_size_bytes;
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                HttpError::with_status(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    Code::InvalidArgument,
                    format!("request body too large, the limit is {limit} bytes"),
                )
            } else {
                HttpError::invalid(format!("cannot read request body: {rejection}"))
            }
        })?;
        crate::extract::decode_json(&bytes).map(Body)
    }
}

async fn not_found() -> HttpError {
    HttpError::new(Code::NotFound, "not found: no such console API path")
}

async fn method_not_allowed() -> HttpError {
    HttpError::new(Code::Unimplemented, "method not allowed on this path")
}
