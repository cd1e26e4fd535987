//! Limits and liveness over real sockets: a flooding client, a client that
//! never reads while others keep receiving, 1,000 idle sockets, pings and
//! pong wait, and the idle timeout.

use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::*;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::both_backends;
use crate::client::{Fmt, WsClient, user};
use crate::support::{Backend, TestServer};

both_backends!(
    pushes_and_pongs_flow_while_a_slow_request_is_served,
    requests_beyond_the_pending_limit_are_refused,
    a_flooding_client_is_closed_and_others_are_served,
    a_client_that_never_reads_is_closed_and_others_get_every_message,
    a_silent_client_is_dropped_after_pong_wait,
    idle_timeout_closes_a_client_that_only_answers_pings,
);

/// A server whose native RPC `slow` answers after 1.5 s.
async fn slow_rpc_server(
    backend: Backend,
    tweak: impl FnOnce(&mut ludus_server::Config),
) -> TestServer {
    let native = ludus_server::NativeModule::new().rpc("slow", |_call, payload| async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        Ok(payload)
    });
    TestServer::start_native(backend, native, tweak).await
}

async fn join_room(c: &mut WsClient) -> Envelope {
    c.request(Message::ChannelJoin(ChannelJoin {
        target: "busy".into(),
        r#type: 1,
        ..Default::default()
    }))
    .await
}

fn rpc_envelope(cid: &str, id: &str) -> Envelope {
    Envelope {
        cid: cid.into(),
        message: Some(Message::Rpc(ludus_proto::api::Rpc {
            id: id.into(),
            payload: "p".into(),
            http_key: String::new(),
        })),
    }
}

/// Regression: while a socket request was in flight (a slow RPC here) the
/// connection stopped draining its outgoing queue and reading frames, so a
/// player in a busy room was closed with "outgoing queue full", and one
/// whose request outlasted `pong_wait` was dropped as silent, although the
/// client read everything and answered every ping.
async fn pushes_and_pongs_flow_while_a_slow_request_is_served(backend: Backend) {
    let server = slow_rpc_server(backend, |c| {
        c.socket.outgoing_queue_size = 16;
        c.socket.ping_period_ms = 100;
        // Shorter than the 1.5 s request, with room for a loaded host's
        // stalls (500 ms once closed the socket while CI shared the cores).
        c.socket.pong_wait_ms = 1000;
    })
    .await;
    let (a_token, ..) = user(&server, "limits-slow-00001").await;
    let (b_token, ..) = user(&server, "limits-slow-00002").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;
    let Some(Message::Channel(channel)) = join_room(&mut a).await.message else {
        panic!("a could not join")
    };
    join_room(&mut b).await;
    a.drain_pushes();
    a.send(&rpc_envelope("slow", "slow")).await;
    // Reading while bob talks: the client answers pings as it reads.
    let reader = tokio::spawn(async move {
        let mut messages = 0;
        loop {
            let env = a.recv().await.expect("closed while the rpc was in flight");
            match env.message {
                Some(Message::ChannelMessage(_)) => messages += 1,
                Some(Message::Rpc(r)) if env.cid == "slow" => {
                    assert_eq!(r.payload, "p");
                    return (a, messages);
                }
                _ => {}
            }
        }
    });
    for i in 0..200 {
        let ack = b
            .request(Message::ChannelMessageSend(ChannelMessageSend {
                channel_id: channel.id.clone(),
                content: format!(r#"{{"n":{i}}}"#),
            }))
            .await;
        assert!(matches!(ack.message, Some(Message::ChannelMessageAck(_))));
    }
    let (mut a, before_reply) = reader.await.unwrap();
    // Every message arrives (some may come after the reply).
    let mut messages = before_reply;
    while messages < 200 {
        if let Some(Message::ChannelMessage(_)) = a.push().await.message {
            messages += 1;
        }
    }
    let r = a.request(Message::Ping(Ping {})).await;
    assert!(
        matches!(r.message, Some(Message::Pong(_))),
        "the socket is still open"
    );
}

/// Requests wait their turn in order behind the one being served, up to
/// `socket.max_pending_requests`; one more is refused and the socket stays open.
async fn requests_beyond_the_pending_limit_are_refused(backend: Backend) {
    let server = slow_rpc_server(backend, |c| c.socket.max_pending_requests = 2).await;
    let (token, ..) = user(&server, "limits-pending-001").await;
    let mut c = WsClient::connect(&server, &token, Fmt::Protobuf).await;
    c.send(&rpc_envelope("slow", "slow")).await;
    for cid in ["p1", "p2", "p3"] {
        c.send(&Envelope {
            cid: cid.into(),
            message: Some(Message::Ping(Ping {})),
        })
        .await;
    }
    let mut order = Vec::new();
    while order.len() < 4 {
        let env = c.push().await;
        match env.message {
            Some(Message::Error(e)) => {
                assert_eq!(env.cid, "p3");
                assert_eq!(e.code, 3, "{e:?}");
                assert!(e.message.contains("socket.max_pending_requests"), "{e:?}");
                order.push("refused");
            }
            Some(Message::Rpc(_)) => order.push("slow"),
            Some(Message::Pong(_)) => order.push(if env.cid == "p1" { "p1" } else { "p2" }),
            other => panic!("unexpected {other:?}"),
        }
    }
    // The refusal comes at once; the waiting pings answer after the rpc, in order.
    assert_eq!(order, ["refused", "slow", "p1", "p2"]);
}

async fn a_flooding_client_is_closed_and_others_are_served(backend: Backend) {
    let server = TestServer::start_with(backend, |c| c.socket.write_wait_ms = 500).await;
    let (token, ..) = user(&server, "limits-flood-00001").await;
    let flooder = WsClient::connect(&server, &token, Fmt::Json).await;
    let mut other = WsClient::connect(&server, &token, Fmt::Protobuf).await;
    let (mut tx, _rx) = flooder.ws.split();
    let cid = "f".repeat(3500);
    let frame =
        tokio_tungstenite::tungstenite::Message::text(format!(r#"{{"cid":"{cid}","ping":{{}}}}"#));
    // Never reads: replies pile up until the server gives up on this client.
    let flood = tokio::spawn(async move {
        for i in 0..100_000u32 {
            if tx.send(frame.clone()).await.is_err() {
                return Some(i);
            }
        }
        None
    });
    let mut pings = 0;
    while !flood.is_finished() {
        let r = other.request(Message::Ping(Ping {})).await;
        assert!(matches!(r.message, Some(Message::Pong(_))));
        pings += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(pings < 3000, "the flooding client was never closed");
    }
    let sent = flood.await.unwrap();
    assert!(
        sent.is_some(),
        "the server never closed the flooding client"
    );
    let r = other.request(Message::Ping(Ping {})).await;
    assert!(matches!(r.message, Some(Message::Pong(_))));
}

/// Also pins a regression: without `TCP_NODELAY` on accepted sockets, each
/// of these 4,000 request/reply round trips waited on Nagle and delayed ACKs
/// (about 40 ms each), and this test took over a minute.
async fn a_client_that_never_reads_is_closed_and_others_get_every_message(backend: Backend) {
    let server = TestServer::start_with(backend, |c| c.socket.write_wait_ms = 1000).await;
    let (alice_token, alice_id, _) = user(&server, "limits-slow-alice1").await;
    let (slow_token, ..) = user(&server, "limits-slow-slow01").await;
    let (fast_token, ..) = user(&server, "limits-slow-fast01").await;
    let mut alice = WsClient::connect_status(&server, &alice_token, Fmt::Protobuf).await;
    let mut slow = WsClient::connect(&server, &slow_token, Fmt::Json).await;
    let mut fast = WsClient::connect(&server, &fast_token, Fmt::Protobuf).await;
    let follow = || {
        Message::StatusFollow(StatusFollow {
            user_ids: vec![alice_id.clone()],
            usernames: vec![],
        })
    };
    slow.request(follow()).await;
    fast.request(follow()).await;

    const UPDATES: usize = 4000;
    let reader = tokio::spawn(async move {
        let mut seen = 0;
        while seen < UPDATES {
            let ev = fast.push().await;
            assert!(
                matches!(ev.message, Some(Message::StatusPresenceEvent(_))),
                "{ev:?}"
            );
            seen += 1;
        }
        seen
    });
    // Each event carries the old and the new status: about 4 KB.
    let long = "s".repeat(2000);
    for i in 0..UPDATES {
        let status = format!("{i:05}{long}");
        let ack = alice
            .request(Message::StatusUpdate(StatusUpdate {
                status: Some(status.into()),
            }))
            .await;
        assert_eq!(ack.message, None);
    }
    assert_eq!(reader.await.unwrap(), UPDATES);
    // The slow client was cut off: what it can still read ends in a close,
    // long before all 4,000 events.
    let (_, got) = slow.closed().await;
    assert!(
        got.len() < UPDATES,
        "the slow client got everything: {}",
        got.len()
    );
}

async fn a_silent_client_is_dropped_after_pong_wait(backend: Backend) {
    let server = TestServer::start_with(backend, |c| {
        c.socket.ping_period_ms = 100;
        c.socket.pong_wait_ms = 300;
    })
    .await;
    let (token, ..) = user(&server, "limits-pong-wait01").await;
    let mut silent = WsClient::connect(&server, &token, Fmt::Json).await;
    let live = WsClient::connect(&server, &token, Fmt::Json).await;
    // The live client reads (so it answers pings); the silent one does not.
    let (mut live_tx, mut live_rx) = live.ws.split();
    let reader = tokio::spawn(async move {
        let mut pongs = 0;
        while let Some(Ok(frame)) = live_rx.next().await {
            if let tokio_tungstenite::tungstenite::Message::Text(_) = frame {
                pongs += 1;
            }
            if pongs == 1 {
                break;
            }
        }
        pongs
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    live_tx
        .send(tokio_tungstenite::tungstenite::Message::text(
            r#"{"cid":"1","ping":{}}"#,
        ))
        .await
        .unwrap();
    assert_eq!(reader.await.unwrap(), 1, "the live client was dropped");
    // Reading now makes the client answer the old pings on a connection the
    // server already dropped, so it may see a reset before the close frame.
    let (code, _) = silent.closed().await;
    assert!(matches!(code, Some(CloseCode::Away) | None), "{code:?}");
}

async fn idle_timeout_closes_a_client_that_only_answers_pings(backend: Backend) {
    let server = TestServer::start_with(backend, |c| {
        c.socket.ping_period_ms = 100;
        c.socket.pong_wait_ms = 300;
        c.socket.ws_idle_timeout_ms = 500;
    })
    .await;
    let (token, ..) = user(&server, "limits-idle-000001").await;
    let mut c = WsClient::connect(&server, &token, Fmt::Protobuf).await;
    let started = std::time::Instant::now();
    // Reading answers pings, so only the idle timeout can close it.
    let (code, _) = c.closed().await;
    assert_eq!(code, Some(CloseCode::Away));
    assert!(
        started.elapsed() >= Duration::from_millis(450),
        "{:?}",
        started.elapsed()
    );
}

/// 1,000 sockets that upgrade and send nothing stay open and cost the server
/// nothing visible: a new client is served at once. SQLite only: the store
/// plays no part once the sockets are up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_sockets_leave_the_server_responsive() {
    let server = TestServer::start(Backend::Sqlite).await;
    let (token, ..) = user(&server, "limits-idle-thousand").await;
    let mut idle = Vec::with_capacity(1000);
    for i in 0..1000 {
        let fmt = if i % 2 == 0 { Fmt::Json } else { Fmt::Protobuf };
        idle.push(WsClient::connect(&server, &token, fmt).await);
    }
    let mut fresh = WsClient::connect(&server, &token, Fmt::Json).await;
    let r = fresh.request(Message::Ping(Ping {})).await;
    assert!(matches!(r.message, Some(Message::Pong(_))));
    let health = server
        .raw(server.http.get(server.url("/healthcheck")))
        .await;
    assert_eq!(health.status, 200);
    // A sample of the idle sockets is still open and answers.
    for c in idle.iter_mut().step_by(97) {
        let r = c.request(Message::Ping(Ping {})).await;
        assert!(matches!(r.message, Some(Message::Pong(_))));
    }
}
