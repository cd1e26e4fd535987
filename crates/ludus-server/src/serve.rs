//! The HTTP/1 accept loop: accepts TCP connections, serves each in the lane
//! (`crate::lane`) and, from the first request the lane hands over, with
//! hyper (with upgrades, for `/ws`), and stops gracefully when told to.
//!
//! `axum::serve` offers no header-read timeout, so a client that connects
//! and never sends a request would hold a socket and a task forever; this
//! loop gives hyper a timer and `socket.handshake_timeout_ms` instead.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::Service as _;

use crate::lane::{Lane, Left, Rewind, stopped};

/// Serves `app` on `listener` until `stop` turns true, then stops accepting,
/// lets open connections finish their current request and returns once all
/// have closed.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    lane: Option<Arc<Lane>>,
    handshake_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(handshake_timeout);
    // Each connection task holds a clone of `open`; once all are dropped,
    // every connection has finished.
    let (all_closed, open) = watch::channel(());
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped(&mut stop) => break,
        };
        let (mut tcp, remote) = match accepted {
            Ok(pair) => pair,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Typically out of file descriptors: back off rather than spin.
                tracing::error!(error = %e, "cannot accept a connection, retrying in 1s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        // Realtime replies are small and latency-bound: no Nagle delay.
        let _ = tcp.set_nodelay(true);
        let app = app.clone();
        let lane = lane.clone();
        let builder = builder.clone();
        let mut stop = stop.clone();
        let open = open.clone();
        tokio::spawn(async move {
            let read = match lane {
                Some(lane) => match lane.serve(&mut tcp, remote, &mut stop).await {
                    Left::Closed => {
                        drop(open);
                        return;
                    }
                    Left::HandOver(read) => read,
                },
                None => Bytes::new(),
            };
            // Connect info gives modules `ctx.client_ip` and `ctx.client_port`.
            let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                req.extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(remote));
                app.clone().call(req)
            });
            let conn = builder
                .serve_connection(TokioIo::new(Rewind::new(read, tcp)), service)
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            let result = tokio::select! {
                result = conn.as_mut() => result,
                () = stopped(&mut stop) => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%remote, error = %e, "connection ended with an error");
            }
            drop(open);
        });
    }
    drop(listener);
    drop(open);
    all_closed.closed().await;
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}
