//! [`Recorded`]: the service around the router that counts each request it
//! answers under its API (Nakama's name), with its bytes, latency and
//! the gRPC code of its answer. It adds no allocation: the API is found by matching
//! the path's segments, and the answer's size is its body's exact length.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::HttpBody as _;
use axum::extract::Request;
use axum::http::header;
use axum::response::Response;
use ludus_core::Code;
use tower::Service;

use super::{ServerMetrics, Slot};
use crate::error::AnswerCode;

/// The router wrapped so every request is recorded.
#[derive(Clone)]
pub(crate) struct Recorded<S> {
    pub(crate) inner: S,
    pub(crate) metrics: Arc<ServerMetrics>,
}

impl<S> Service<Request> for Recorded<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = RecordedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let slot = self.metrics.slot(req.method(), req.uri().path());
        let recv = request_bytes(&req);
        RecordedFuture {
            inner: self.inner.call(req),
            metrics: self.metrics.clone(),
            slot,
            recv,
            start: Instant::now(),
        }
    }
}

/// The body's declared length (what Nakama's handler counts as received).
fn request_bytes(req: &Request) -> u64 {
    req.headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The gRPC code of the answer: `OK` for a 1xx to 3xx; for an error, the
/// code `HttpError` put in its extensions, else the one its status stands
/// for (a transport's 413 or 504, a router's 405). Only an error looks at
/// the extensions.
pub(crate) fn answer_code(res: &Response) -> Code {
    let status = res.status().as_u16();
    if status < 400 {
        return Code::Ok;
    }
    match res.extensions().get::<AnswerCode>() {
        Some(AnswerCode(code)) if *code != Code::Ok => *code,
        _ => Code::from_http_status(status),
    }
}

/// The answer's body length when it is known without reading it.
pub(crate) fn response_bytes(res: &Response) -> u64 {
    res.body().size_hint().exact().unwrap_or(0)
}

pin_project_lite::pin_project! {
    pub(crate) struct RecordedFuture<F> {
        #[pin]
        inner: F,
        metrics: Arc<ServerMetrics>,
        slot: Slot,
        recv: u64,
        start: Instant,
    }
}

impl<F> Future for RecordedFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Poll::Ready(Ok(res)) = this.inner.poll(cx) else {
            return Poll::Pending;
        };
        this.metrics.record(
            *this.slot,
            this.start.elapsed(),
            *this.recv,
            response_bytes(&res),
            answer_code(&res),
        );
        Poll::Ready(Ok(res))
    }
}
