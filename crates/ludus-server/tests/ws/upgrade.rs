//! The upgrade: format and token checks before it, the connection limit,
//! `session.single_socket` and shutdown.

use ludus_proto::realtime::Ping;
use ludus_proto::realtime::envelope::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::both_backends;
use crate::client::{BOTH, Fmt, WsClient, user, ws_url};
use crate::support::{Backend, TestServer};

both_backends!(
    bad_format_is_400,
    missing_bad_or_revoked_token_is_401,
    bearer_header_is_accepted,
    connection_limit_answers_503,
    single_socket_closes_the_older_socket,
    shutdown_closes_open_sockets,
);

async fn bad_format_is_400(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "upgrade-format-0001").await;
    let refused = WsClient::connect_query(&server, &format!("token={token}&format=xml"))
        .await
        .err()
        .expect("bad format must not upgrade");
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("format"), "{}", refused.body);
}

async fn missing_bad_or_revoked_token_is_401(backend: Backend) {
    let server = TestServer::start(backend).await;
    for query in [
        "format=json",
        "token=nope&format=json",
        "token=&format=protobuf",
    ] {
        let refused = WsClient::connect_query(&server, query).await.err().unwrap();
        assert_eq!(refused.status, 401, "{query}");
    }
    let s = server.device_session("upgrade-revoked-01").await;
    let token = crate::support::token(&s);
    let r = server
        .post_bearer(
            "/v2/session/logout",
            &token,
            serde_json::json!({"token": token}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let refused = WsClient::connect_query(&server, &format!("token={token}"))
        .await
        .err()
        .unwrap();
    assert_eq!(refused.status, 401);
}

async fn bearer_header_is_accepted(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "upgrade-bearer-001").await;
    let mut req = ws_url(&server, "format=json")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    let mut c = WsClient::from_stream(ws, Fmt::Json);
    let reply = c.request(Message::Ping(Ping {})).await;
    assert!(matches!(reply.message, Some(Message::Pong(_))));
}

async fn connection_limit_answers_503(backend: Backend) {
    let server = TestServer::start_with(backend, |c| c.socket.max_connections = 2).await;
    let (token, ..) = user(&server, "upgrade-limit-0001").await;
    let mut a = WsClient::connect(&server, &token, Fmt::Json).await;
    let _b = WsClient::connect(&server, &token, Fmt::Json).await;
    let refused = WsClient::connect_query(&server, &format!("token={token}"))
        .await
        .err()
        .unwrap();
    assert_eq!(refused.status, 503);
    // A closed socket frees its place.
    a.ws.close(None).await.unwrap();
    let _ = a.closed().await;
    let mut ok = None;
    for _ in 0..50 {
        if let Ok(c) = WsClient::connect_query(&server, &format!("token={token}")).await {
            ok = Some(c);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(ok.is_some(), "the freed place was not given back");
}

/// Regression: sessions used to be registered when their socket task started,
/// after the 101 answer, so a second socket could register first and the
/// older one then closed the newer. They now register before the answer.
async fn single_socket_closes_the_older_socket(backend: Backend) {
    let server = TestServer::start_with(backend, |c| c.session.single_socket = true).await;
    let (token, ..) = user(&server, "upgrade-single-001").await;
    for format in BOTH {
        let mut old = WsClient::connect(&server, &token, format).await;
        let mut new = WsClient::connect(&server, &token, format).await;
        let (code, before) = old.closed().await;
        assert_eq!(code, Some(CloseCode::Normal));
        // Nakama's notice comes first: code -7, subject single_socket.
        let notice = before
            .iter()
            .find_map(|e| match &e.message {
                Some(Message::Notifications(n)) => n.notifications.first().cloned(),
                _ => None,
            })
            .expect("the replaced socket gets a single_socket notification");
        assert_eq!(notice.code, -7);
        assert_eq!(notice.subject, "single_socket");
        assert_eq!(notice.content, "{}");
        assert!(!notice.persistent);
        let reply = new.request(Message::Ping(Ping {})).await;
        assert!(matches!(reply.message, Some(Message::Pong(_))));
    }
}

async fn shutdown_closes_open_sockets(backend: Backend) {
    let mut server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "upgrade-shutdown-1").await;
    let mut c = WsClient::connect(&server, &token, Fmt::Protobuf).await;
    let closed = tokio::spawn(async move { c.closed().await.0 });
    server.restart().await;
    assert_eq!(closed.await.unwrap(), Some(CloseCode::Restart));
    // The restarted server takes sockets again.
    let (token, ..) = user(&server, "upgrade-shutdown-2").await;
    let mut c = WsClient::connect(&server, &token, Fmt::Json).await;
    assert!(matches!(
        c.request(Message::Ping(Ping {})).await.message,
        Some(Message::Pong(_))
    ));
}
