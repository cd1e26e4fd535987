//! Matches over real sockets, JSON and protobuf: authoritative matches run
//! by the Lua module in `tests/lua_match` and by a native handler, relayed
//! matches, the match `nk` functions, and `GET /v2/match`.

use std::collections::BTreeMap;

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::match_join::Id;
use ludus_proto::realtime::*;
use ludus_server::NativeModule;
use ludus_server::matches::{
    Dispatcher, HandlerError, JoinDecision, MatchHandler, MatchInfo, MatchInit, MatchMessage,
    Presence, Step,
};
use serde_json::{Value, json};

use crate::both_backends;
use crate::client::{Fmt, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

both_backends!(
    bench_match_module_with_ten_players,
    lua_match_lifecycle,
    lua_match_bad_input_and_failures,
    native_match_lifecycle,
    relayed_match_with_filters,
    match_listing_over_http,
    shutdown_ends_matches_and_finishes_requests
);

async fn lua_server(backend: Backend) -> TestServer {
    TestServer::start_native(backend, native_module(), |config| {
        config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua_match").into();
        config.runtime.lua_pool_size = 2;
        // Small enough that a runaway loop stops quickly.
        config.runtime.lua_instruction_budget = 2_000_000;
        // The longest time budget (ten ticks), so the instruction budget is
        // what stops the runaway loop below however slow the host: on a slow
        // VM a debug build's 2,000,000 instructions outlasted the default
        // half a tick (the time budget has its own test, runtime's
        // `hostile.rs`).
        config.runtime.lua_match_timeout_percent = 1000;
        config.matches.executor_threads = 2;
    })
    .await
}

async fn rpc(c: &mut WsClient, id: &str, payload: &str) -> Result<String, String> {
    c.rpc(id, payload).await.map_err(|e| e.message)
}

async fn create(c: &mut WsClient, module: &str, params: Value) -> String {
    rpc(
        c,
        "create_match",
        &json!({"module": module, "params": params}).to_string(),
    )
    .await
    .unwrap()
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

fn joined(env: &Envelope) -> &Match {
    match &env.message {
        Some(Message::Match(m)) => m,
        other => panic!("expected a match, got {other:?}"),
    }
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

/// The next `match_data` push with `op_code`, skipping everything else.
async fn data(c: &mut WsClient, op_code: i64) -> MatchData {
    loop {
        if let Some(Message::MatchData(d)) = c.push().await.message
            && d.op_code == op_code
        {
            return d;
        }
    }
}

/// The next push that is an error.
async fn error_push(c: &mut WsClient) -> ludus_proto::realtime::Error {
    loop {
        if let Some(Message::Error(e)) = c.push().await.message {
            return e;
        }
    }
}

async fn lua_match_lifecycle(backend: Backend) {
    let server = lua_server(backend).await;
    let (a_token, a_id, _) = user(&server, "mlc1-match-a").await;
    let (b_token, _, b_name) = user(&server, "mlc2-match-b").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;

    let id = create(&mut a, "match_test", json!({"mode": "duel", "level": 3})).await;
    assert!(
        id.ends_with(".ludus"),
        "authoritative ids carry the node: {id}"
    );
    let got: Value = serde_json::from_str(&rpc(&mut a, "get_match", &id).await.unwrap()).unwrap();
    assert_eq!(got["authoritative"], true);
    assert_eq!(got["handler_name"], "match_test");
    assert_eq!(got["tick_rate"], 10);
    assert_eq!(got["size"], 0);

    let ma = join(&mut a, &id, &[]).await;
    let ma = joined(&ma);
    assert!(ma.authoritative);
    let label: Value = serde_json::from_str(&ma.label.as_ref().unwrap().value).unwrap();
    assert_eq!(label["mode"], "duel");
    assert_eq!(ma.self_.as_ref().unwrap().user_id, a_id);
    // The join callback ran in match mode with the match's ctx.
    let hello = data(&mut a, 100).await;
    let hello: Value = serde_json::from_slice(&hello.data).unwrap();
    assert_eq!(hello["match_id"], id.as_str());
    assert_eq!(hello["mode"], "match");
    assert_eq!(hello["node"], "ludus");

    let mb = join(&mut b, &id, &[]).await;
    assert_eq!(joined(&mb).size, 1, "bob sees alice");
    // Alice hears of her own join too (after her reply, in an order with the
    // match's own pushes that the match decides): wait for Bob's.
    let ev = loop {
        if let Some(Message::MatchPresenceEvent(ev)) = a.push().await.message
            && ev.joins.iter().any(|p| p.username == b_name)
        {
            break ev;
        }
    };
    assert_eq!(ev.joins.len(), 1);

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
    let answer = rpc(
        &mut a,
        "signal_match",
        &json!({"match_id": id, "data": "hi"}).to_string(),
    )
    .await
    .unwrap();
    assert_eq!(answer, "signal hi players 2");
    // Regression: nk.accounts_get_id inside a match callback panicked (it
    // blocked on a match worker directly); it answers like any server call.
    let answer = rpc(
        &mut a,
        "signal_match",
        &json!({"match_id": id, "data": format!("accounts {a_id}")}).to_string(),
    )
    .await
    .unwrap();
    assert!(answer.starts_with("accounts 1 "), "{answer}");

    // Label updates are listed; deferred broadcasts see the new label.
    send(&mut a, &id, 3, "").await;
    send(&mut a, &id, 8, "").await;
    let deferred = data(&mut b, 8).await;
    assert!(
        String::from_utf8_lossy(&deferred.data).contains("changed"),
        "{deferred:?}"
    );
    let got: Value = serde_json::from_str(&rpc(&mut a, "get_match", &id).await.unwrap()).unwrap();
    assert!(got["label"].as_str().unwrap().contains("changed"));

    // A kick removes bob: alice sees him leave, the match counts one player.
    send(&mut b, &id, 4, "").await;
    loop {
        if let Some(Message::MatchPresenceEvent(ev)) = a.push().await.message
            && !ev.leaves.is_empty()
        {
            assert_eq!(ev.leaves[0].username, b_name);
            break;
        }
    }
    let answer = rpc(
        &mut a,
        "signal_match",
        &json!({"match_id": id, "data": "count"}).to_string(),
    )
    .await
    .unwrap();
    assert_eq!(answer, "signal count players 1");

    // Leaving is acknowledged with an empty envelope.
    let left = a
        .request(Message::MatchLeave(MatchLeave {
            match_id: id.clone(),
        }))
        .await;
    assert!(left.message.is_none());
    // A signal that returns a nil state ends the match.
    let answer = rpc(
        &mut a,
        "signal_match",
        &json!({"match_id": id, "data": "end"}).to_string(),
    )
    .await
    .unwrap();
    assert_eq!(answer, "ending");
    assert_eq!(rpc(&mut a, "get_match", &id).await.unwrap(), "null");
}

async fn lua_match_bad_input_and_failures(backend: Backend) {
    let server = lua_server(backend).await;
    let (a_token, _, _) = user(&server, "mbi1-match-a").await;
    let (b_token, _, _) = user(&server, "mbi2-match-b").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Protobuf).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Json).await;

    // Unknown modules and bad init params fail the create with a clear error.
    let err = rpc(
        &mut a,
        "create_match",
        &json!({"module": "no_such_module"}).to_string(),
    )
    .await
    .unwrap_err();
    assert!(err.contains("no_such_module"), "{err}");
    let err = rpc(
        &mut a,
        "create_match",
        &json!({"module": "match_test", "params": {"rate": 100}}).to_string(),
    )
    .await
    .unwrap_err();
    assert!(err.contains("between 1 and 60"), "{err}");

    let id = create(&mut a, "match_test", json!({"max": 1})).await;
    // Rejected joins answer the handler's reason; full matches refuse.
    let r = join(&mut a, &id, &[("password", "wrong")]).await;
    assert_eq!(error_of(&r).code, 5, "MATCH_JOIN_REJECTED");
    assert_eq!(error_of(&r).message, "bad password");
    joined(&join(&mut a, &id, &[]).await);
    let r = join(&mut b, &id, &[]).await;
    assert_eq!(error_of(&r).message, "match full");
    // Unknown, malformed and foreign-node ids.
    let r = join(&mut b, &format!("{}.ludus", uuid::Uuid::new_v4()), &[]).await;
    assert_eq!(error_of(&r).code, 4, "MATCH_NOT_FOUND");
    let r = join(&mut b, "not-a-match", &[]).await;
    assert_eq!(error_of(&r).code, 3, "BAD_INPUT");
    let r = join(&mut b, &id.replace(".ludus", ".other"), &[]).await;
    assert_eq!(error_of(&r).code, 4);
    // Data for a match one is not in is refused, the socket stays open.
    let r = b
        .request(Message::MatchDataSend(MatchDataSend {
            match_id: id.clone(),
            op_code: 1,
            ..Default::default()
        }))
        .await;
    assert_eq!(error_of(&r).code, 4);
    // Payloads of every size up to the frame limit pass through.
    for size in [0usize, 1, 100, 3000] {
        let payload = "x".repeat(size);
        send(&mut a, &id, 1, &payload).await;
        assert_eq!(data(&mut a, 1).await.data.len(), size);
    }

    // A second match, untouched by what follows.
    let other = create(&mut b, "match_test", json!({})).await;
    joined(&join(&mut b, &other, &[]).await);

    // A handler error ends its match and tells its players.
    send(&mut a, &id, 5, "").await;
    let e = error_push(&mut a).await;
    assert!(e.message.contains("handler blew up"), "{e:?}");
    assert!(e.message.contains(&id), "{e:?}");
    assert_eq!(rpc(&mut a, "get_match", &id).await.unwrap(), "null");

    // A runaway loop is stopped by the instruction budget.
    let looping = create(&mut a, "match_test", json!({})).await;
    joined(&join(&mut a, &looping, &[]).await);
    send(&mut a, &looping, 7, "").await;
    let e = error_push(&mut a).await;
    assert!(e.message.contains("instructions"), "{e:?}");
    assert_eq!(rpc(&mut a, "get_match", &looping).await.unwrap(), "null");

    // A join attempt that returns garbage ends the match with a clear error.
    let garbage = create(&mut a, "match_test", json!({})).await;
    let r = join(&mut a, &garbage, &[("garbage", "1")]).await;
    assert_eq!(error_of(&r).code, 4);
    assert_eq!(rpc(&mut a, "get_match", &garbage).await.unwrap(), "null");

    // A nil state from match_loop ends the match quietly.
    let quiet = create(&mut a, "match_test", json!({})).await;
    joined(&join(&mut a, &quiet, &[]).await);
    send(&mut a, &quiet, 6, "").await;
    for _ in 0..50 {
        if rpc(&mut a, "get_match", &quiet).await.unwrap() == "null" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(rpc(&mut a, "get_match", &quiet).await.unwrap(), "null");

    // The other match still plays.
    send(&mut b, &other, 1, "alive").await;
    assert_eq!(&data(&mut b, 1).await.data[..], b"alive");
}

/// A native handler: echoes op 1 to the sender, counts players, ends on op 9.
struct NativeEcho {
    players: usize,
}

impl MatchHandler for NativeEcho {
    fn init(&mut self, info: &MatchInfo, params: &Value) -> Result<MatchInit, HandlerError> {
        Ok(MatchInit {
            tick_rate: 20,
            label: json!({"native": true, "id": info.id, "params": params}).to_string(),
        })
    }

    fn join_attempt(
        &mut self,
        _d: &mut Dispatcher,
        _tick: i64,
        _p: &Presence,
        _m: &BTreeMap<String, String>,
    ) -> Result<JoinDecision, HandlerError> {
        Ok(if self.players < 2 {
            JoinDecision::Accept
        } else {
            JoinDecision::Reject("two players at most".into())
        })
    }

    fn join(
        &mut self,
        d: &mut Dispatcher,
        _tick: i64,
        ps: &[Presence],
    ) -> Result<Step, HandlerError> {
        self.players += ps.len();
        d.broadcast(50, format!("players {}", self.players), None, None, true);
        Ok(Step::Continue)
    }

    fn leave(
        &mut self,
        _d: &mut Dispatcher,
        _tick: i64,
        ps: &[Presence],
    ) -> Result<Step, HandlerError> {
        self.players -= ps.len();
        Ok(Step::Continue)
    }

    fn tick(
        &mut self,
        d: &mut Dispatcher,
        _tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Step, HandlerError> {
        for m in messages {
            if m.op_code == 9 {
                return Ok(Step::End);
            }
            d.broadcast(
                m.op_code,
                m.data.clone(),
                Some(std::slice::from_ref(&m.sender)),
                None,
                true,
            );
        }
        Ok(Step::Continue)
    }

    fn terminate(
        &mut self,
        _d: &mut Dispatcher,
        _tick: i64,
        _grace: u32,
    ) -> Result<Step, HandlerError> {
        Ok(Step::End)
    }

    fn signal(
        &mut self,
        _d: &mut Dispatcher,
        _tick: i64,
        data: &str,
    ) -> Result<(Step, String), HandlerError> {
        Ok((Step::Continue, format!("native {data}")))
    }
}

fn native_module() -> NativeModule {
    NativeModule::new()
        .rpc("slow_native", |_call, payload| async move {
            tokio::time::sleep(std::time::Duration::from_millis(400)).await;
            Ok(payload)
        })
        .match_handler("native_echo", |_call| NativeEcho { players: 0 })
        .rpc("native_create", |call, payload| async move {
            let params: Value = serde_json::from_str(&payload).unwrap_or(Value::Null);
            call.match_create("native_echo", params)
                .await
                .map_err(|e| ludus_server::RuntimeError::new(e.code, e.message))
        })
}

async fn native_match_lifecycle(backend: Backend) {
    let server = lua_server(backend).await;
    let (a_token, _, _) = user(&server, "mnl1-native-a").await;
    let (b_token, _, _) = user(&server, "mnl2-native-b").await;
    let (c_token, _, _) = user(&server, "mnl3-native-c").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Protobuf).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Json).await;
    let mut c = WsClient::connect(&server, &c_token, Fmt::Json).await;
    // Created from a native RPC, and from Lua by the same name.
    let id = rpc(&mut a, "native_create", r#"{"map":"dust"}"#)
        .await
        .unwrap();
    let from_lua = create(&mut a, "native_echo", json!({})).await;
    assert_ne!(id, from_lua);
    let m = join(&mut a, &id, &[]).await;
    let label: Value = serde_json::from_str(&joined(&m).label.as_ref().unwrap().value).unwrap();
    assert_eq!(label["params"]["map"], "dust");
    assert_eq!(label["id"], id.as_str());
    assert_eq!(&data(&mut a, 50).await.data[..], b"players 1");
    joined(&join(&mut b, &id, &[]).await);
    assert_eq!(&data(&mut a, 50).await.data[..], b"players 2");
    let r = join(&mut c, &id, &[]).await;
    assert_eq!(error_of(&r).message, "two players at most");
    send(&mut b, &id, 7, "native echo").await;
    assert_eq!(&data(&mut b, 7).await.data[..], b"native echo");
    let answer = rpc(
        &mut a,
        "signal_match",
        &json!({"match_id": id, "data": "x"}).to_string(),
    )
    .await
    .unwrap();
    assert_eq!(answer, "native x");
    // Bob disconnects: the slot frees up for Carol.
    drop(b);
    let mut joined_c = false;
    for _ in 0..50 {
        let r = join(&mut c, &id, &[]).await;
        if matches!(r.message, Some(Message::Match(_))) {
            joined_c = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(joined_c, "a disconnect frees the player's slot");
    send(&mut c, &id, 9, "").await;
    for _ in 0..50 {
        if rpc(&mut a, "get_match", &id).await.unwrap() == "null" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(rpc(&mut a, "get_match", &id).await.unwrap(), "null");
}

async fn relayed_match_with_filters(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (a_token, a_id, _) = user(&server, "mrf1-relay-a").await;
    let (b_token, _, _) = user(&server, "mrf2-relay-b").await;
    let (c_token, _, _) = user(&server, "mrf3-relay-c").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;
    let mut c = WsClient::connect(&server, &c_token, Fmt::Json).await;
    let created = a
        .request(Message::MatchCreate(MatchCreate {
            name: "lobby-7".into(),
        }))
        .await;
    let m = joined(&created).clone();
    assert!(!m.authoritative);
    assert!(m.match_id.ends_with('.'));
    let again = b
        .request(Message::MatchCreate(MatchCreate {
            name: "lobby-7".into(),
        }))
        .await;
    assert_eq!(joined(&again).match_id, m.match_id, "names give stable ids");
    let mc = join(&mut c, &m.match_id, &[]).await;
    // The joiner hears of its join after the reply (clients register their
    // presence handler once the join resolved).
    assert!(
        !c.drain_pushes()
            .iter()
            .any(|e| matches!(e.message, Some(Message::MatchPresenceEvent(_)))),
        "a presence event reached the joiner before its match reply"
    );
    let mc = joined(&mc);
    assert_eq!(mc.size, 2);
    let c_self = mc.self_.clone().unwrap();
    // Joining again, as Nakama answers it: every presence, one's own too.
    let rejoined = join(&mut c, &m.match_id, &[]).await;
    let rejoined = joined(&rejoined);
    assert_eq!(rejoined.size, 3);
    assert_eq!(rejoined.presences.len(), 3);
    assert!(rejoined.presences.contains(&c_self), "{rejoined:?}");
    // Everyone else…
    send(&mut a, &m.match_id, 3, "all").await;
    for cl in [&mut b, &mut c] {
        let d = data(cl, 3).await;
        assert_eq!(&d.data[..], b"all");
        assert_eq!(d.presence.unwrap().user_id, a_id);
    }
    // …or only the listed presences.
    a.send(&Envelope {
        cid: String::new(),
        message: Some(Message::MatchDataSend(MatchDataSend {
            match_id: m.match_id.clone(),
            op_code: 4,
            data: b"just c".to_vec().into(),
            presences: vec![c_self],
            reliable: false,
        })),
    })
    .await;
    let d = data(&mut c, 4).await;
    assert_eq!(&d.data[..], b"just c");
    assert!(!d.reliable);
    send(&mut a, &m.match_id, 5, "marker").await;
    // Bob got the marker but never the filtered message.
    loop {
        match b.push().await.message {
            Some(Message::MatchData(d)) if d.op_code == 5 => break,
            Some(Message::MatchData(d)) => panic!("bob got {d:?}"),
            _ => {}
        }
    }
    // Leaving announces it; an empty match is gone.
    for cl in [&mut a, &mut b, &mut c] {
        let r = cl
            .request(Message::MatchLeave(MatchLeave {
                match_id: m.match_id.clone(),
            }))
            .await;
        assert!(r.message.is_none());
    }
    let r = join(&mut a, &m.match_id, &[]).await;
    assert_eq!(error_of(&r).code, 4);
}

async fn match_listing_over_http(backend: Backend) {
    let server = lua_server(backend).await;
    let (token, _, _) = user(&server, "mlh1-list-device").await;
    let mut a = WsClient::connect(&server, &token, Fmt::Json).await;
    let duel = create(&mut a, "match_test", json!({"mode": "duel", "level": 5})).await;
    let ffa = create(&mut a, "match_test", json!({"mode": "ffa", "level": 1})).await;
    joined(&join(&mut a, &ffa, &[]).await);
    let relay = a
        .request(Message::MatchCreate(MatchCreate::default()))
        .await;
    let relay_id = joined(&relay).match_id.clone();

    let list = |q: &'static str| {
        let server = &server;
        let token = token.clone();
        async move {
            let r = server.get_bearer(&format!("/v2/match?{q}"), &token).await;
            assert_eq!(r.status, 200, "{q}: {}", r.body);
            let mut ids: Vec<String> = r.body["matches"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|m| m["match_id"].as_str().unwrap().to_owned())
                .collect();
            ids.sort();
            ids
        }
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(list("limit=10").await.len(), 3);
    assert_eq!(
        list("limit=10&authoritative=true").await,
        sorted(vec![duel.clone(), ffa.clone()])
    );
    assert_eq!(
        list("limit=10&authoritative=false").await,
        vec![relay_id.clone()]
    );
    assert!(
        list("limit=10&authoritative=false&query=%2Blabel.mode%3Aduel")
            .await
            .is_empty()
    );
    assert_eq!(
        list("limit=10&authoritative=true&min_size=1").await,
        vec![ffa.clone()]
    );
    assert_eq!(
        list("limit=10&authoritative=true&max_size=0").await,
        vec![duel.clone()]
    );
    assert_eq!(list("limit=1").await.len(), 1);
    // Regression: no limit listed one match; Nakama's default is 10.
    assert_eq!(list("").await.len(), 3);
    // Regression: nakama-js sends `label=` beside every query, and the empty
    // label filtered everything out; a query replaces the label, as Nakama.
    assert_eq!(
        list("label=&query=%2Blabel.mode%3Aduel").await,
        vec![duel.clone()]
    );
    assert_eq!(
        list("label=nothing&query=%2Blabel.mode%3Aduel").await,
        vec![duel.clone()]
    );
    assert_eq!(
        list("limit=10&query=%2Blabel.mode%3Aduel").await,
        vec![duel.clone()]
    );
    assert_eq!(
        list("limit=10&query=%2Blabel.level%3A%3E%3D3").await,
        vec![duel.clone()]
    );
    assert_eq!(
        list("limit=10&query=-label.mode%3Aduel").await,
        vec![ffa.clone()]
    );
    assert_eq!(
        list("limit=10&query=%2Blabel.tags%3Aranked").await,
        sorted(vec![duel.clone(), ffa.clone()])
    );
    assert!(list("limit=10&query=%2Blabel.mode%3Anone").await.is_empty());
    // A query without should clauses stops at the limit; one with them ranks.
    assert_eq!(list("limit=1&query=%2Blabel.tags%3Aranked").await.len(), 1);
    assert_eq!(
        list("limit=1&query=label.mode%3Aduel%20label.mode%3Aother").await,
        vec![duel.clone()]
    );
    // The relayed match is listed with no label.
    let r = server
        .get_bearer("/v2/match?limit=10&authoritative=false", &token)
        .await;
    let relayed = r.body["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["match_id"] == relay_id.as_str())
        .unwrap();
    assert!(relayed.get("label").is_none());
    assert_eq!(relayed["size"], 1);
    // Bad input is a clear 400.
    for q in [
        "limit=0",
        "limit=101",
        "limit=x",
        "min_size=-1",
        "query=%2Blabel.mode%3A",
    ] {
        let r = server.get_bearer(&format!("/v2/match?{q}"), &token).await;
        assert_eq!(r.status, 400, "{q}: {}", r.body);
        assert!(!r.body["message"].as_str().unwrap().is_empty());
    }
    // nk.match_list sees the same, with the find-or-create pattern.
    let found: Value = serde_json::from_str(
        &rpc(
            &mut a,
            "list_matches",
            &json!({"limit": 10, "authoritative": true, "query": "+label.mode:ffa"}).to_string(),
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(found["matches"][0]["match_id"], ffa.as_str());
    let first = rpc(&mut a, "find_or_create", "").await.unwrap();
    assert!(first == duel || first == ffa, "an open match is reused");
    assert!(server.get_bearer("/v2/match", "bad-token").await.status == 401);
}

/// The benchmark's own modules (`bench/modules`): ten players find the same
/// match through the find-or-create RPC, the eleventh gets a new one; op 1
/// comes back to its sender only, op 2 reaches all ten.
async fn bench_match_module_with_ten_players(backend: Backend) {
    let server = TestServer::start_with(backend, |config| {
        config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/modules").into();
        config.runtime.lua_pool_size = 2;
    })
    .await;
    let mut players = Vec::new();
    let mut match_id = String::new();
    for i in 0..11 {
        let (token, _, _) = user(&server, &format!("bmm{i:02}-bench-player")).await;
        let fmt = if i % 2 == 0 { Fmt::Json } else { Fmt::Protobuf };
        let mut c = WsClient::connect(&server, &token, fmt).await;
        let found: Value =
            serde_json::from_str(&rpc(&mut c, "ludus_bench_find_match", "{}").await.unwrap())
                .unwrap();
        let id = found["match_id"].as_str().unwrap().to_owned();
        let m = join(&mut c, &id, &[]).await;
        assert_eq!(joined(&m).match_id, id);
        if i == 0 {
            match_id = id;
        } else if i < 10 {
            assert_eq!(id, match_id, "player {i} joins the open match");
        } else {
            assert_ne!(id, match_id, "the eleventh player gets a new match");
        }
        players.push(c);
    }
    let echo = "e".repeat(44);
    let broadcast = "b".repeat(35);
    send(&mut players[0], &match_id, 1, &echo).await;
    assert_eq!(data(&mut players[0], 1).await.data, echo.as_bytes());
    send(&mut players[1], &match_id, 2, &broadcast).await;
    for (i, p) in players.iter_mut().take(10).enumerate() {
        let d = data(p, 2).await;
        assert_eq!(d.data, broadcast.as_bytes(), "player {i}");
    }
    // Nobody but player 0 saw the echo.
    for p in players.iter_mut().skip(1) {
        assert!(
            p.drain_pushes()
                .iter()
                .all(|e| !matches!(&e.message, Some(Message::MatchData(d)) if d.op_code == 1))
        );
    }
}

/// A graceful shutdown (Nakama's `shutdown_grace_sec`): a request in flight
/// is answered, each authoritative match gets its `match_terminate` with the
/// grace period while its players are still there, and then every socket is
/// closed with 1012 (service restart).
async fn shutdown_ends_matches_and_finishes_requests(backend: Backend) {
    let mut server = lua_server(backend).await;
    let (token, ..) = user(&server, "shutdown-match-a").await;
    let mut a = WsClient::connect(&server, &token, Fmt::Json).await;
    let id = create(&mut a, "match_test", json!({"mode": "last"})).await;
    join(&mut a, &id, &[]).await;
    let _hello = data(&mut a, 100).await;

    let url = server.url("/v2/rpc/slow_native?http_key=defaulthttpkey&unwrap");
    let slow = tokio::spawn(async move {
        let r = reqwest::Client::new()
            .post(url)
            .body("kept")
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    });
    // The request is in the server before shutdown starts.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let closed = tokio::spawn(async move { a.closed().await });
    server.restart().await;

    assert_eq!(slow.await.unwrap(), (200, "kept".to_owned()));
    let (code, before) = closed.await.unwrap();
    assert_eq!(
        code,
        Some(tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Restart)
    );
    let grace = server.config.shutdown_grace_sec;
    let terminated = before.iter().any(|e| match &e.message {
        Some(Message::MatchData(d)) => {
            d.op_code == 99 && d.data == format!("terminating {grace}").as_bytes()
        }
        _ => false,
    });
    assert!(
        terminated,
        "match_terminate's broadcast before the close: {before:?}"
    );
}
