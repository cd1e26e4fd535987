//! Nakama's gRPC API (`nakama.api.Nakama`) on `socket.port - 1` (7349), for
//! the clients that use it (the Java client, the C++ client's gRPC
//! transport).
//!
//! It serves cleartext HTTP/2 (h2c with prior knowledge, as Nakama does
//! without TLS). Each unary call is turned into the REST request of the same
//! call (`bridge`) and answered by the REST router itself, with every layer
//! and hook, so both transports share one handler per call and cannot drift
//! apart; the REST answer is turned back into the response message or into
//! `grpc-status` and `grpc-message`. Metadata arrive as request headers
//! (`authorization` carries the Basic server key or the Bearer session as on
//! REST).

pub(crate) mod bridge;
mod frame;
pub(crate) mod methods;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt as _;

use self::bridge::{Code, INVALID_ARGUMENT};
use self::frame::GrpcBody;
use crate::lane::stopped;

/// gRPC's "unimplemented", "resource exhausted" and "unknown" codes.
const UNIMPLEMENTED: Code = 12;
const RESOURCE_EXHAUSTED: Code = 8;

/// Serves gRPC on `listener` until `stop` turns true; `app` is the REST
/// router, `max_message` the largest request message accepted.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    max_message: usize,
    mut stop: watch::Receiver<bool>,
) {
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        // Pings find peers that vanished without closing.
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(Duration::from_secs(20))
        .max_concurrent_streams(256)
        .max_header_list_size(16 * 1024);
    let (all_closed, open) = watch::channel(());
    loop {
        let (tcp, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::debug!(error = %e, "cannot accept a gRPC connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = stopped(&mut stop) => break,
        };
        let _ = tcp.set_nodelay(true);
        let app = app.clone();
        let builder = builder.clone();
        let mut stop = stop.clone();
        let open = open.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let app = app.clone();
                async move { Ok::<_, Infallible>(call(app, remote, max_message, req).await) }
            });
            let conn = builder.serve_connection(TokioIo::new(tcp), service);
            let mut conn = std::pin::pin!(conn);
            let result = tokio::select! {
                result = conn.as_mut() => result,
                () = stopped(&mut stop) => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%remote, error = %e, "gRPC connection ended with an error");
            }
            drop(open);
        });
    }
    drop(listener);
    drop(open);
    all_closed.closed().await;
}

/// Answers one gRPC call.
async fn call(
    app: Router,
    remote: SocketAddr,
    max_message: usize,
    req: Request<Incoming>,
) -> Response<GrpcBody> {
    let is_grpc = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"));
    if !is_grpc || req.method() != axum::http::Method::POST {
        return frame::http_error(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }
    let name = req
        .uri()
        .path()
        .strip_prefix("/nakama.api.Nakama/")
        .and_then(|name| methods::find(name));
    let Some(method) = name else {
        let path = req.uri().path().to_owned();
        return frame::status(UNIMPLEMENTED, &format!("unknown method {path}"));
    };
    let (parts, body) = req.into_parts();
    // The framed message may be up to the limit plus its 5-byte prefix.
    let bytes = match Limited::new(body, max_message + 5).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return frame::status(
                RESOURCE_EXHAUSTED,
                &format!("request message is larger than {max_message} bytes"),
            );
        }
        Err(_) => return frame::status(INVALID_ARGUMENT, "request body was cut short"),
    };
    let message = match frame::unframe(&bytes) {
        Ok(message) => message,
        Err(problem) => return frame::status(problem.code(), &problem.to_string()),
    };
    let rest = match bridge::rest_request(method, message) {
        Ok(rest) => rest,
        Err((code, text)) => return frame::status(code, &text),
    };
    let mut builder = Request::builder()
        .method(rest.method)
        .uri(rest.path_and_query.as_str());
    for (name, value) in &parts.headers {
        if is_passed_on(name) {
            builder = builder.header(name, value);
        }
    }
    let has_body = rest.body.is_some();
    let body = rest.body.map_or_else(Body::empty, Body::from);
    let Ok(mut request) = builder.body(body) else {
        return frame::status(INVALID_ARGUMENT, "request fields do not make a valid route");
    };
    if has_body {
        request.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    request.extensions_mut().insert(ConnectInfo(remote));
    let Ok(answer) = app.oneshot(request).await;
    let status = answer.status();
    let bytes = match answer.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return frame::status(bridge::INTERNAL, "answer was cut short"),
    };
    match bridge::grpc_answer(method, status, &bytes) {
        Ok(message) => frame::message(&message),
        Err((code, text)) => frame::status(code, &text),
    }
}

/// Metadata that reach the REST handler as headers: everything but HTTP/2's
/// and gRPC's own.
fn is_passed_on(name: &header::HeaderName) -> bool {
    let name = name.as_str();
    !(name.starts_with("grpc-")
        || matches!(
            name,
            "content-type" | "content-length" | "te" | "host" | "connection" | "accept-encoding"
        ))
}
