//! The per-request access log: one `debug` event per HTTP request with its
//! method, path, status, latency and, once the session extractor has read
//! the token, the caller's user id. The router installs it only when debug
//! events are on at start, so with the log off requests do not pass it.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use uuid::Uuid;

/// Where the session extractor leaves the caller's id for the log line.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestUser(Arc<OnceLock<Uuid>>);

impl RequestUser {
    pub(crate) fn set(&self, user: Uuid) {
        let _ = self.0.set(user);
    }
}

/// The middleware (`axum::middleware::from_fn(access_log)`).
pub(crate) async fn access_log(mut req: Request, next: Next) -> Response {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return next.run(req).await;
    }
    let start = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let user = RequestUser::default();
    req.extensions_mut().insert(user.clone());
    let res = next.run(req).await;
    tracing::debug!(
        method = %method,
        path,
        status = res.status().as_u16(),
        latency_us = start.elapsed().as_micros() as u64,
        user_id = user.0.get().map(tracing::field::display),
        "request"
    );
    res
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Mutex;

    use axum::Router;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::get;
    use tower::ServiceExt as _;

    use super::*;

    /// A log sink the test reads back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn one_debug_line_per_request_with_the_user() {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let user = Uuid::from_u128(7);
        let app = Router::new()
            .route(
                "/teapot",
                get(|req: Request| async move {
                    if let Some(slot) = req.extensions().get::<RequestUser>() {
                        slot.set(Uuid::from_u128(7));
                    }
                    StatusCode::IM_A_TEAPOT
                }),
            )
            .layer(axum::middleware::from_fn(access_log));
        let res = app
            .oneshot(Request::get("/teapot").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::IM_A_TEAPOT);
        let log = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        for field in [
            "method=GET".to_owned(),
            "path=\"/teapot\"".to_owned(),
            "status=418".to_owned(),
            "latency_us=".to_owned(),
            format!("user_id={user}"),
        ] {
            assert!(log.contains(&field), "{field} missing from {log}");
        }
    }
}
