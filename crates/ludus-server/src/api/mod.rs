//! The REST API on port 7350: routes, and the layers every request passes
//! through (access log, CORS, gzip request bodies, body limit, timeout,
//! no-store caching).

pub(crate) mod absent;
pub(crate) mod access_log;
mod account;
mod authenticate;
mod channel;
mod event;
mod friend;
mod friend_import;
mod group;
pub(crate) mod iap_notification;
mod leaderboard;
mod link;
mod matches;
mod matchmaker;
pub(crate) mod names;
mod notification;
mod party;
mod purchase;
pub(crate) mod rpc;
mod session;
mod social_auth;
mod storage;
mod user;

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use ludus_core::Code;
use serde::Serialize;
use tower_http::cors::{Any, CorsLayer};
use tower_http::decompression::RequestDecompressionLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;

use crate::error::HttpError;
use crate::state::AppState;

/// The `Cache-Control` of every answer that sets none itself.
pub(crate) const CACHE_CONTROL: &str = "no-store, no-cache, must-revalidate";

pub(crate) fn router(state: AppState) -> Router {
    let limit = state.config.socket.max_request_size_bytes;
    let metrics = state.metrics.clone();
    let timeout = Duration::from_millis(state.config.socket.read_timeout_ms);
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::DELETE,
        ])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::USER_AGENT,
        ])
        // No `Vary`: with any origin allowed and fixed method and header
        // lists, no answer depends on the request's `Origin` or
        // `Access-Control-Request-*` headers (and every answer is
        // `no-store`). tower-http would otherwise join its default list into
        // a new header value for every answer (1.5 to 2 % of a Lua RPC).
        .vary(Vec::<header::HeaderName>::new());
    let served = Router::new()
        .route("/healthcheck", get(healthcheck))
        .route(
            "/v2/account/authenticate/device",
            post(authenticate::device),
        )
        .route("/v2/account/authenticate/email", post(authenticate::email))
        .route(
            "/v2/account/authenticate/custom",
            post(authenticate::custom),
        )
        .route("/v2/account/session/refresh", post(session::refresh))
        .route("/v2/session/logout", post(session::logout))
        .route("/v2/event", post(event::send))
        .route(
            "/v2/account",
            get(account::get)
                .put(account::update)
                .delete(account::delete),
        )
        .route("/v2/account/link/device", post(link::link_device))
        .route("/v2/account/link/email", post(link::link_email))
        .route("/v2/account/link/custom", post(link::link_custom))
        .route("/v2/account/unlink/device", post(link::unlink_device))
        .route("/v2/account/unlink/email", post(link::unlink_email))
        .route("/v2/account/unlink/custom", post(link::unlink_custom))
        .merge(social_routes())
        .route("/v2/user", get(user::get_users))
        .route(
            "/v2/friend",
            get(friend::list).post(friend::add).delete(friend::delete),
        )
        .route("/v2/friend/block", post(friend::block))
        .route("/v2/friend/friends", get(friend::friends_of_friends))
        .route("/v2/friend/facebook", post(friend_import::facebook))
        .route("/v2/friend/steam", post(friend_import::steam))
        .route("/v2/group", get(group::list).post(group::create))
        .route(
            "/v2/group/{group_id}",
            put(group::update).delete(group::delete),
        )
        .route("/v2/group/{group_id}/join", post(group::join))
        .route("/v2/group/{group_id}/leave", post(group::leave))
        .route("/v2/group/{group_id}/add", post(group::add))
        .route("/v2/group/{group_id}/kick", post(group::kick))
        .route("/v2/group/{group_id}/ban", post(group::ban))
        .route("/v2/group/{group_id}/promote", post(group::promote))
        .route("/v2/group/{group_id}/demote", post(group::demote))
        .route("/v2/group/{group_id}/user", get(group::list_users))
        .route("/v2/user/{user_id}/group", get(group::list_user_groups))
        .route("/v2/storage", post(storage::read).put(storage::write))
        .route("/v2/storage/delete", put(storage::delete))
        .route("/v2/storage/{collection}", get(storage::list))
        .route(
            "/v2/storage/{collection}/{user_id}",
            get(storage::list_user),
        )
        .route("/v2/channel/{channel_id}", get(channel::history))
        .route("/v2/iap/purchase/apple", post(purchase::apple))
        .route("/v2/iap/purchase/google", post(purchase::google))
        .route("/v2/iap/purchase/huawei", post(purchase::huawei))
        .route("/v2/iap/purchase/samsung", post(purchase::samsung))
        .route(
            "/v2/iap/purchase/facebookinstant",
            post(purchase::facebook_instant),
        )
        .route("/v2/iap/subscription", post(purchase::list_subscriptions))
        .route(
            "/v2/iap/subscription/apple",
            post(purchase::subscription_apple),
        )
        .route(
            "/v2/iap/subscription/google",
            post(purchase::subscription_google),
        )
        .route(
            "/v2/iap/subscription/{product_id}",
            get(purchase::get_subscription),
        )
        .route(
            "/v2/notification",
            get(notification::list).delete(notification::delete),
        )
        .route(
            "/v2/leaderboard/{leaderboard_id}",
            get(leaderboard::list_records)
                .post(leaderboard::write_record)
                .delete(leaderboard::delete_record),
        )
        .route(
            "/v2/leaderboard/{leaderboard_id}/owner/{owner_id}",
            get(leaderboard::list_around_owner),
        )
        .route("/v2/tournament", get(leaderboard::list_tournaments))
        .route(
            "/v2/tournament/{tournament_id}",
            get(leaderboard::list_tournament_records)
                .post(leaderboard::write_tournament_record)
                .put(leaderboard::write_tournament_record)
                .delete(leaderboard::delete_tournament_record),
        )
        .route(
            "/v2/tournament/{tournament_id}/join",
            post(leaderboard::join_tournament),
        )
        .route(
            "/v2/tournament/{tournament_id}/owner/{owner_id}",
            get(leaderboard::list_tournament_around_owner),
        )
        .route("/v2/party", get(party::list))
        .route("/v2/matchmaker/stats", get(matchmaker::stats))
        .route("/v2/match", get(matches::list))
        .route("/ws", get(crate::socket::upgrade))
        .route("/v2/rpc/{id}", get(rpc::call).post(rpc::call));
    let routed = absent::routes(served)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    // The middleware wraps the routed service once, outermost first, rather
    // than each route (`Router::layer`): there every layer boxed every
    // route again, so each request cloned and dropped six nested boxes
    // (4.6 % of the server's samples on the native echo RPC).
    // The access log only when debug events are on (the level is set once,
    // at start): `from_fn` clones the stack below it and boxes it per
    // request, which cost 1 to 2 % of a Lua echo RPC with the log off.
    let access_log = tracing::enabled!(tracing::Level::DEBUG)
        .then(|| axum::middleware::from_fn(access_log::access_log));
    let layered = tower::ServiceBuilder::new()
        .option_layer(access_log)
        .map_response(IntoResponse::into_response)
        .layer(cors)
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static(CACHE_CONTROL),
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::GATEWAY_TIMEOUT,
            timeout,
        ))
        .layer(RequestDecompressionLayer::new())
        .layer(DefaultBodyLimit::max(limit))
        .service(routed);
    match metrics {
        Some(metrics) => Router::new().fallback_service(crate::metrics::layer::Recorded {
            inner: layered,
            metrics,
        }),
        None => Router::new().fallback_service(layered),
    }
}

async fn healthcheck() -> Response {
    empty()
}

async fn not_found() -> HttpError {
    HttpError::new(Code::NotFound, "not found: no such API path")
}

async fn method_not_allowed() -> HttpError {
    // grpc-gateway answers a wrong method with code 12, which maps to 501.
    HttpError::new(Code::Unimplemented, "method not allowed on this path")
}

/// A protojson response body.
pub(crate) fn json<T: Serialize>(value: &T) -> Response {
    encoded_json(serde_json::to_vec(value))
}

/// A response body already encoded as protojson, or the encoder's failure.
pub(crate) fn encoded_json<E: std::fmt::Display>(body: Result<Vec<u8>, E>) -> Response {
    match body {
        Ok(body) => {
            let mut res = body.into_response();
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            res
        }
        Err(e) => {
            HttpError::new(Code::Internal, format!("cannot encode response: {e}")).into_response()
        }
    }
}

/// `{}`, Nakama's answer for calls that return nothing.
pub(crate) fn empty() -> Response {
    let mut res = "{}".into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// Platform sign-in, linking and unlinking (`social_auth.rs`).
fn social_routes() -> Router<AppState> {
    let base = "/v2/account";
    let mut router = Router::new();
    for (provider, auth, link, unlink) in [
        (
            "apple",
            post(social_auth::authenticate_apple),
            post(social_auth::link_apple),
            post(social_auth::unlink_apple),
        ),
        (
            "facebook",
            post(social_auth::authenticate_facebook),
            post(social_auth::link_facebook),
            post(social_auth::unlink_facebook),
        ),
        (
            "facebookinstantgame",
            post(social_auth::authenticate_facebook_instant_game),
            post(social_auth::link_facebook_instant_game),
            post(social_auth::unlink_facebook_instant_game),
        ),
        (
            "gamecenter",
            post(social_auth::authenticate_gamecenter),
            post(social_auth::link_gamecenter),
            post(social_auth::unlink_gamecenter),
        ),
        (
            "google",
            post(social_auth::authenticate_google),
            post(social_auth::link_google),
            post(social_auth::unlink_google),
        ),
        (
            "steam",
            post(social_auth::authenticate_steam),
            post(social_auth::link_steam),
            post(social_auth::unlink_steam),
        ),
    ] {
        router = router
            .route(&format!("{base}/authenticate/{provider}"), auth)
            .route(&format!("{base}/link/{provider}"), link)
            .route(&format!("{base}/unlink/{provider}"), unlink);
    }
    router
}
