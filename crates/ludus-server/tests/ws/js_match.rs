//! JS authoritative matches over real sockets, JSON and protobuf: the
//! handler in `tests/js_match` (Nakama's JS shapes), created through
//! `nk.matchCreate` from JS and from a Lua module, the dispatcher's four
//! functions, signals, a runaway `matchLoop`, `matchTerminate` at
//! shutdown, and `registerMatchmakerMatched` sending a group to a JS match.

use std::collections::BTreeMap;

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::match_join::Id;
use ludus_proto::realtime::*;
use serde_json::{Value, json};

use crate::both_backends;
use crate::client::{Fmt, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

both_backends!(
    js_match_lifecycle,
    js_match_runaway_and_terminate,
    js_matchmaker_hook_creates_a_js_match
);

async fn js_server(backend: Backend) -> TestServer {
    TestServer::start_with(backend, |config| {
        config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js_match").into();
        config.runtime.js_max_count = 2;
        config.runtime.lua_pool_size = 1;
        config.matches.executor_threads = 2;
    })
    .await
}

async fn rpc(c: &mut WsClient, id: &str, payload: &str) -> String {
    c.rpc(id, payload).await.map_err(|e| e.message).unwrap()
}

async fn create(c: &mut WsClient, module: &str, params: Value) -> String {
    rpc(
        c,
        "js_create",
        &json!({"module": module, "params": params}).to_string(),
    )
    .await
}

async fn get(c: &mut WsClient, id: &str) -> Value {
    serde_json::from_str(&rpc(c, "js_get", id).await).unwrap()
}

async fn join(c: &mut WsClient, match_id: &str, metadata: &[(&str, &str)]) -> Envelope {
    c.request(Message::MatchJoin(MatchJoin {
        id: Some(Id::MatchId(match_id.into())),
        metadata: metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    }))
    .await
}

async fn send(c: &mut WsClient, match_id: &str, op_code: i64, data: &str) {
    c.send(&Envelope {
        cid: String::new(),
        message: Some(Message::MatchDataSend(MatchDataSend {
            match_id: match_id.into(),
            op_code,
            data: data.as_bytes().to_vec().into(),
            presences: Vec::new(),
            reliable: true,
        })),
    })
    .await;
}

async fn data(c: &mut WsClient, op_code: i64) -> MatchData {
    loop {
        if let Some(Message::MatchData(d)) = c.push().await.message
            && d.op_code == op_code
        {
            return d;
        }
    }
}

async fn js_match_lifecycle(backend: Backend) {
    let server = js_server(backend).await;
    let (a_token, a_id, _) = user(&server, "jsm1-match-a").await;
    let (b_token, _, b_name) = user(&server, "jsm2-match-b").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;

    let id = create(&mut a, "js_arena", json!({"mode": "duel"})).await;
    let got = get(&mut a, &id).await;
    assert_eq!(got["authoritative"], true);
    assert_eq!(got["handlerName"], "js_arena");
    assert_eq!(got["label"], r#"{"mode":"duel"}"#);
    assert_eq!(got["size"], 0);

    // A join the handler refuses answers its reason.
    let r = join(&mut a, &id, &[("password", "wrong")]).await;
    assert_eq!(error_of(&r).message, "bad password");
    let Some(Message::Match(m)) = join(&mut a, &id, &[]).await.message else {
        panic!("alice could not join")
    };
    assert!(m.authoritative);
    let hello: Value = serde_json::from_slice(&data(&mut a, 100).await.data).unwrap();
    assert_eq!(hello, json!({"matchId": id, "mode": "match", "joined": 1}));
    let Some(Message::Match(m)) = join(&mut b, &id, &[]).await.message else {
        panic!("bob could not join")
    };
    assert_eq!(m.size, 1, "bob sees alice");

    // Op 1 echoes to the sender only; op 2 reaches everyone from the sender.
    send(&mut b, &id, 1, "echo me").await;
    let echoed = data(&mut b, 1).await;
    assert_eq!(&echoed.data[..], b"echo me");
    assert!(echoed.presence.is_none(), "server messages carry no sender");
    send(&mut a, &id, 2, "to all").await;
    for c in [&mut a, &mut b] {
        let d = data(c, 2).await;
        assert_eq!(&d.data[..], b"to all");
        assert_eq!(d.presence.unwrap().user_id, a_id);
    }
    assert!(
        a.drain_pushes()
            .iter()
            .all(|e| !matches!(&e.message, Some(Message::MatchData(d)) if d.op_code == 1)),
        "alice never gets bob's echo"
    );

    // Signals reach the handler and answer.
    let signal = json!({"matchId": id, "data": "hi"}).to_string();
    assert_eq!(
        rpc(&mut a, "js_signal", &signal).await,
        "signal hi players 2"
    );

    // Label updates are listed; a deferred broadcast sees the new label.
    send(&mut a, &id, 3, "").await;
    send(&mut a, &id, 8, "").await;
    let deferred = data(&mut b, 8).await;
    assert_eq!(&deferred.data[..], br#"deferred:{"mode":"changed"}"#);
    assert_eq!(get(&mut a, &id).await["label"], r#"{"mode":"changed"}"#);
    let listed: Value = serde_json::from_str(&rpc(&mut a, "js_list", "").await).unwrap();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["matchId"] == id.as_str()),
        "{listed}"
    );

    // A kick removes bob: alice sees him leave, the match counts one.
    send(&mut b, &id, 4, "").await;
    loop {
        if let Some(Message::MatchPresenceEvent(ev)) = a.push().await.message
            && !ev.leaves.is_empty()
        {
            assert_eq!(ev.leaves[0].username, b_name);
            break;
        }
    }
    let signal = json!({"matchId": id, "data": "count"}).to_string();
    assert_eq!(
        rpc(&mut a, "js_signal", &signal).await,
        "signal count players 1"
    );
    // Leaving by hand, then a signal returning null ends the match.
    let left = a
        .request(Message::MatchLeave(MatchLeave {
            match_id: id.clone(),
        }))
        .await;
    assert!(left.message.is_none());
    let signal = json!({"matchId": id, "data": "count"}).to_string();
    assert_eq!(
        rpc(&mut a, "js_signal", &signal).await,
        "signal count players 0"
    );
    let end = json!({"matchId": id, "data": "end"}).to_string();
    assert_eq!(rpc(&mut a, "js_signal", &end).await, "");
    assert_eq!(get(&mut a, &id).await, Value::Null);

    // One path for every runtime: a Lua module creates a JS match, and
    // JS creates a Lua one, by name.
    let from_lua = rpc(&mut a, "lua_create_js", "").await;
    let got = get(&mut a, &from_lua).await;
    assert_eq!(got["handlerName"], "js_arena");
    assert_eq!(got["label"], r#"{"mode":"from lua"}"#);
    let lua_match = create(&mut a, "lua_echo", json!({})).await;
    assert_eq!(get(&mut a, &lua_match).await["label"], "lua echo");
    let signal = json!({"matchId": lua_match, "data": "ping"}).to_string();
    assert_eq!(rpc(&mut a, "js_signal", &signal).await, "lua ping");
    // An unknown name fails the create, naming how to register it.
    let e = a
        .rpc("js_create", &json!({"module": "nowhere"}).to_string())
        .await
        .unwrap_err();
    assert!(e.message.contains("registerMatch"), "{}", e.message);
}

async fn js_match_runaway_and_terminate(backend: Backend) {
    let mut server = js_server(backend).await;
    let (token, ..) = user(&server, "jsm3-match-a").await;
    let mut a = WsClient::connect(&server, &token, Fmt::Json).await;

    // A runaway matchLoop ends that match with a clear error; another
    // match goes on.
    let looping = create(&mut a, "js_arena", json!({})).await;
    let other = create(&mut a, "js_arena", json!({})).await;
    join(&mut a, &looping, &[]).await;
    send(&mut a, &looping, 7, "").await;
    let e = loop {
        if let Some(Message::Error(e)) = a.push().await.message {
            break e;
        }
    };
    assert!(
        e.message.contains("matchLoop") && e.message.contains("time budget"),
        "{e:?}"
    );
    assert_eq!(get(&mut a, &looping).await, Value::Null);
    let signal = json!({"matchId": other, "data": "still"}).to_string();
    assert_eq!(
        rpc(&mut a, "js_signal", &signal).await,
        "signal still players 0"
    );

    // At shutdown matchTerminate runs with the grace period and may still
    // broadcast.
    join(&mut a, &other, &[]).await;
    let _hello = data(&mut a, 100).await;
    let closed = tokio::spawn(async move { a.closed().await });
    server.restart().await;
    let (_, before) = closed.await.unwrap();
    let grace = server.config.shutdown_grace_sec;
    let terminated = before.iter().any(|e| match &e.message {
        Some(Message::MatchData(d)) => {
            d.op_code == 99 && d.data == format!("terminating {grace}").as_bytes()
        }
        _ => false,
    });
    assert!(
        terminated,
        "matchTerminate's broadcast before the close: {before:?}"
    );
}

async fn js_matchmaker_hook_creates_a_js_match(backend: Backend) {
    let server = TestServer::start_with(backend, |config| {
        config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js_match").into();
        config.runtime.js_max_count = 2;
        config.runtime.lua_pool_size = 1;
        config.matchmaker.interval_sec = 1;
    })
    .await;
    let (ta, ..) = user(&server, "jsm4-matched-a").await;
    let (tb, ..) = user(&server, "jsm5-matched-b").await;
    let mut a = WsClient::connect(&server, &ta, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &tb, Fmt::Protobuf).await;
    let add = Message::MatchmakerAdd(MatchmakerAdd {
        min_count: 2,
        max_count: 2,
        query: "*".into(),
        ..Default::default()
    });
    for c in [&mut a, &mut b] {
        assert!(matches!(
            c.request(add.clone()).await.message,
            Some(Message::MatchmakerTicket(_))
        ));
    }
    let mut ids = Vec::new();
    for c in [&mut a, &mut b] {
        let id = loop {
            if let Some(Message::MatchmakerMatched(m)) = c.push().await.message {
                match m.id {
                    Some(matchmaker_matched::Id::MatchId(id)) => break id,
                    other => panic!("expected a match id from the js hook, got {other:?}"),
                }
            }
        };
        ids.push(id);
    }
    assert_eq!(ids[0], ids[1]);
    let got = get(&mut a, &ids[0]).await;
    assert_eq!(got["handlerName"], "js_arena");
    assert_eq!(got["label"], r#"{"mode":"matched 2 ids"}"#);
    let Some(Message::Match(m)) = join(&mut b, &ids[0], &[]).await.message else {
        panic!("bob could not join the matched match")
    };
    assert!(m.authoritative);
}
