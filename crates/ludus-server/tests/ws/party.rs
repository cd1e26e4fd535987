//! Parties over real sockets, with the leader and the members on different
//! wire formats (JSON and protobuf, both ways): open and closed joins,
//! accepting and turning down requests, removal, promotion, a leaving
//! leader handing over, closing, data with op codes reaching only the other
//! members, disconnects, full parties, errors that keep the socket open,
//! `nk.party_list` from Lua and `GET /v2/party`. Parties live in memory and
//! never touch the database, so these run on SQLite only.

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::*;
use serde_json::Value;

use crate::client::{Fmt, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

async fn server() -> TestServer {
    TestServer::start_with(Backend::Sqlite, |c| {
        c.party.max_size = 4;
        c.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua_party").into();
        c.runtime.lua_pool_size = 1;
    })
    .await
}

struct Member {
    c: WsClient,
    presence: UserPresence,
}

async fn member(server: &TestServer, device: &str, fmt: Fmt) -> Member {
    let (token, user_id, username) = user(server, &format!("{device}-{fmt:?}")).await;
    let mut c = WsClient::connect(server, &token, fmt).await;
    let session_id = rpc(&mut c, "session_id", Value::Null).await;
    let presence = UserPresence {
        user_id,
        session_id,
        username,
        ..Default::default()
    };
    Member { c, presence }
}

fn party_of(env: Envelope) -> Party {
    match env.message {
        Some(Message::Party(p)) => p,
        other => panic!("expected a party, got {other:?}"),
    }
}

/// Sends a request that answers a bare acknowledgement.
async fn ok(c: &mut WsClient, m: Message) {
    let reply = c.request(m).await;
    assert_eq!(reply.message, None, "expected an acknowledgement");
}

/// Sends a request that must fail with BAD_INPUT; returns the message.
async fn refused(c: &mut WsClient, m: Message) -> String {
    let reply = c.request(m).await;
    let e = error_of(&reply);
    assert_eq!(e.code, 3, "BAD_INPUT: {}", e.message);
    e.message.clone()
}

/// The next push matching `pick`, skipping others.
async fn next<T>(c: &mut WsClient, pick: impl Fn(Message) -> Option<T>) -> T {
    loop {
        if let Some(m) = c.push().await.message
            && let Some(t) = pick(m)
        {
            return t;
        }
    }
}

async fn next_presence(c: &mut WsClient) -> PartyPresenceEvent {
    next(c, |m| match m {
        Message::PartyPresenceEvent(e) => Some(e),
        _ => None,
    })
    .await
}

async fn next_leader(c: &mut WsClient) -> PartyLeader {
    next(c, |m| match m {
        Message::PartyLeader(l) => Some(l),
        _ => None,
    })
    .await
}

async fn next_party(c: &mut WsClient) -> Party {
    next(c, |m| match m {
        Message::Party(p) => Some(p),
        _ => None,
    })
    .await
}

async fn next_data(c: &mut WsClient) -> PartyData {
    next(c, |m| match m {
        Message::PartyData(d) => Some(d),
        _ => None,
    })
    .await
}

async fn next_close(c: &mut WsClient) -> PartyClose {
    next(c, |m| match m {
        Message::PartyClose(x) => Some(x),
        _ => None,
    })
    .await
}

/// Round trip: every push sent before it has arrived once this returns.
async fn sync(c: &mut WsClient) {
    let pong = c.request(Message::Ping(Ping {})).await;
    assert!(matches!(pong.message, Some(Message::Pong(_))));
}

fn create(open: bool, max_size: i32) -> Message {
    Message::PartyCreate(PartyCreate {
        open,
        max_size,
        ..Default::default()
    })
}

fn join(id: &str) -> Message {
    Message::PartyJoin(PartyJoin {
        party_id: id.into(),
    })
}

fn leave(id: &str) -> Message {
    Message::PartyLeave(PartyLeave {
        party_id: id.into(),
    })
}

fn data(id: &str, op_code: i64, bytes: &'static [u8]) -> Message {
    Message::PartyDataSend(PartyDataSend {
        party_id: id.into(),
        op_code,
        data: bytes::Bytes::from_static(bytes),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_party_json_leader() {
    open_party(Fmt::Json, Fmt::Protobuf).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_party_protobuf_leader() {
    open_party(Fmt::Protobuf, Fmt::Json).await
}

/// Open joins, presence events, data with op codes to the others only, a
/// leaving leader handing over, and the last one out ending the party.
async fn open_party(lead: Fmt, other: Fmt) {
    let server = server().await;
    let mut ann = member(&server, "open-ann", lead).await;
    let mut ben = member(&server, "open-ben", other).await;
    let mut cat = member(&server, "open-cat", lead).await;

    let p = party_of(ann.c.request(create(true, 3)).await);
    assert!(p.open);
    assert_eq!(p.max_size, 3);
    assert_eq!(p.leader.as_ref(), Some(&ann.presence));
    assert_eq!(p.presences, vec![ann.presence.clone()]);
    let id = p.party_id.clone();
    assert!(id.ends_with(".ludus"), "{id}");

    ok(&mut ben.c, join(&id)).await;
    let got = next_party(&mut ben.c).await;
    assert_eq!(got.party_id, id);
    assert_eq!(got.self_.as_ref(), Some(&ben.presence));
    assert_eq!(got.leader.as_ref(), Some(&ann.presence));
    assert_eq!(
        got.presences,
        vec![ann.presence.clone(), ben.presence.clone()]
    );
    loop {
        let ev = next_presence(&mut ann.c).await;
        if ev.joins.contains(&ben.presence) {
            assert_eq!(ev.party_id, id);
            break;
        }
    }
    ok(&mut cat.c, join(&id)).await;
    next_party(&mut cat.c).await;
    for m in [&mut ann, &mut ben] {
        loop {
            if next_presence(&mut m.c).await.joins.contains(&cat.presence) {
                break;
            }
        }
    }

    // Data goes to the other members with the sender and op code.
    ok(&mut ben.c, data(&id, 1, b"echo")).await;
    ok(&mut ann.c, data(&id, 2, b"")).await;
    let d = next_data(&mut ann.c).await;
    assert_eq!((d.op_code, &d.data[..]), (1, &b"echo"[..]));
    assert_eq!(d.presence.as_ref(), Some(&ben.presence));
    assert_eq!(d.party_id, id);
    for from in [&ben.presence, &ann.presence] {
        let d = next_data(&mut cat.c).await;
        assert_eq!(d.presence.as_ref(), Some(from));
    }
    let d = next_data(&mut ben.c).await;
    assert_eq!((d.op_code, d.data.len()), (2, 0));
    assert_eq!(d.presence.as_ref(), Some(&ann.presence));
    sync(&mut ben.c).await;
    assert!(
        !ben.c
            .drain_pushes()
            .iter()
            .any(|e| matches!(e.message, Some(Message::PartyData(_)))),
        "the sender does not get its own data"
    );

    // The leader leaves: the oldest member leads, everyone sees the leave.
    ok(&mut ann.c, leave(&id)).await;
    let heir = ben.presence.clone();
    for c in [&mut ben.c, &mut cat.c] {
        let l = next_leader(c).await;
        assert_eq!(l.presence.as_ref(), Some(&heir));
        assert_eq!(l.party_id, id);
    }
    loop {
        if next_presence(&mut cat.c)
            .await
            .leaves
            .contains(&ann.presence)
        {
            break;
        }
    }
    let e = refused(&mut ann.c, data(&id, 1, b"x")).await;
    assert!(e.contains("join it before sending data"), "{e}");

    // The last one out ends the party.
    ok(&mut cat.c, leave(&id)).await;
    ok(&mut ben.c, leave(&id)).await;
    let e = refused(&mut ann.c, join(&id)).await;
    assert!(e.contains("party not found"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_party_json_leader() {
    closed_party(Fmt::Json, Fmt::Protobuf).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_party_protobuf_leader() {
    closed_party(Fmt::Protobuf, Fmt::Json).await
}

/// Join requests, their list, accepting, turning down, removing a member,
/// promoting, updating and closing.
async fn closed_party(lead: Fmt, other: Fmt) {
    let server = server().await;
    let mut ann = member(&server, "closed-ann", lead).await;
    let mut ben = member(&server, "closed-ben", other).await;
    let mut cat = member(&server, "closed-cat", other).await;
    let p = party_of(
        ann.c
            .request(Message::PartyCreate(PartyCreate {
                open: false,
                max_size: 0,
                label: r#"{"mode":"duo"}"#.into(),
                hidden: false,
            }))
            .await,
    );
    assert_eq!(p.max_size, 4, "0 asks for party.max_size");
    assert_eq!(p.label, r#"{"mode":"duo"}"#);
    let id = p.party_id.clone();

    ok(&mut ben.c, join(&id)).await;
    let r = next(&mut ann.c, |m| match m {
        Message::PartyJoinRequest(r) => Some(r),
        _ => None,
    })
    .await;
    assert_eq!(
        (r.party_id.as_str(), &r.presences[..]),
        (id.as_str(), &[ben.presence.clone()][..])
    );
    ok(&mut cat.c, join(&id)).await;
    let e = refused(&mut cat.c, join(&id)).await;
    assert!(e.contains("already sent"), "{e}");

    let list = Message::PartyJoinRequestList(PartyJoinRequestList {
        party_id: id.clone(),
    });
    let e = refused(&mut ben.c, list.clone()).await;
    assert!(e.contains("only the party leader"), "{e}");
    let reply = ann.c.request(list.clone()).await;
    let Some(Message::PartyJoinRequest(r)) = reply.message else {
        panic!("{reply:?}")
    };
    assert_eq!(
        r.presences,
        vec![ben.presence.clone(), cat.presence.clone()]
    );
    sync(&mut ben.c).await;
    assert!(
        !ben.c
            .drain_pushes()
            .iter()
            .any(|e| matches!(e.message, Some(Message::Party(_)))),
        "a closed party's joiner waits for the leader"
    );

    // Accept Ben, turn Cat down.
    let accept = |p: &UserPresence| {
        Message::PartyAccept(PartyAccept {
            party_id: id.clone(),
            presence: Some(p.clone()),
        })
    };
    let remove = |p: &UserPresence| {
        Message::PartyRemove(PartyRemove {
            party_id: id.clone(),
            presence: Some(p.clone()),
        })
    };
    ok(&mut ann.c, accept(&ben.presence)).await;
    let got = next_party(&mut ben.c).await;
    assert_eq!(
        got.presences,
        vec![ann.presence.clone(), ben.presence.clone()]
    );
    assert_eq!(got.label, r#"{"mode":"duo"}"#);
    ok(&mut ann.c, remove(&cat.presence)).await;
    let reply = ann.c.request(list.clone()).await;
    let Some(Message::PartyJoinRequest(r)) = reply.message else {
        panic!("{reply:?}")
    };
    assert!(r.presences.is_empty());
    let e = refused(&mut ann.c, accept(&cat.presence)).await;
    assert!(e.contains("no join request"), "{e}");

    // Cat asks again and is let in, then removed: Cat hears party_close.
    ok(&mut cat.c, join(&id)).await;
    ok(&mut ann.c, accept(&cat.presence)).await;
    next_party(&mut cat.c).await;
    let e = refused(&mut ben.c, remove(&cat.presence)).await;
    assert!(e.contains("only the party leader"), "{e}");
    let e = refused(&mut ann.c, remove(&ann.presence)).await;
    assert!(e.contains("cannot remove itself"), "{e}");
    ok(&mut ann.c, remove(&cat.presence)).await;
    assert_eq!(next_close(&mut cat.c).await.party_id, id);
    loop {
        if next_presence(&mut ben.c)
            .await
            .leaves
            .contains(&cat.presence)
        {
            break;
        }
    }
    let e = refused(&mut cat.c, data(&id, 1, b"x")).await;
    assert!(e.contains("not a member"), "{e}");

    // Promote Ben; Ann is no longer the leader.
    ok(
        &mut ann.c,
        Message::PartyPromote(PartyPromote {
            party_id: id.clone(),
            presence: Some(ben.presence.clone()),
        }),
    )
    .await;
    let heir = ben.presence.clone();
    for c in [&mut ann.c, &mut ben.c] {
        assert_eq!(next_leader(c).await.presence.as_ref(), Some(&heir));
    }
    let close = Message::PartyClose(PartyClose {
        party_id: id.clone(),
    });
    let e = refused(&mut ann.c, close.clone()).await;
    assert!(e.contains("only the party leader"), "{e}");

    // The new leader updates the party: every member hears it.
    ok(
        &mut ben.c,
        Message::PartyUpdate(PartyUpdate {
            party_id: id.clone(),
            label: r#"{"mode":"trio"}"#.into(),
            open: true,
            hidden: false,
        }),
    )
    .await;
    for m in [&mut ann, &mut ben] {
        let u = next(&mut m.c, |m| match m {
            Message::PartyUpdate(u) => Some(u),
            _ => None,
        })
        .await;
        assert_eq!((u.label.as_str(), u.open), (r#"{"mode":"trio"}"#, true));
    }
    // Now open: Cat joins at once.
    ok(&mut cat.c, join(&id)).await;
    next_party(&mut cat.c).await;

    // Close: every member hears it, and the party is gone.
    ok(&mut ben.c, close.clone()).await;
    for m in [&mut ann, &mut ben, &mut cat] {
        assert_eq!(next_close(&mut m.c).await.party_id, id);
    }
    let e = refused(&mut ben.c, close).await;
    assert!(e.contains("party not found"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_leaves_the_party_and_hands_over() {
    let server = server().await;
    let mut ann = member(&server, "disc-ann", Fmt::Protobuf).await;
    let mut ben = member(&server, "disc-ben", Fmt::Json).await;
    let p = party_of(ann.c.request(create(true, 2)).await);
    ok(&mut ben.c, join(&p.party_id)).await;
    next_party(&mut ben.c).await;
    ann.c.ws.close(None).await.unwrap();
    let l = next_leader(&mut ben.c).await;
    assert_eq!(l.presence.as_ref(), Some(&ben.presence));
    loop {
        if next_presence(&mut ben.c)
            .await
            .leaves
            .contains(&ann.presence)
        {
            break;
        }
    }
    // Ben leads now: a third player may join the freed place.
    let mut cat = member(&server, "disc-cat", Fmt::Json).await;
    ok(&mut cat.c, join(&p.party_id)).await;
    let got = next_party(&mut cat.c).await;
    assert_eq!(got.leader.as_ref(), Some(&ben.presence));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_parties_and_bad_requests_keep_the_socket_json() {
    bad_requests(Fmt::Json).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_parties_and_bad_requests_keep_the_socket_protobuf() {
    bad_requests(Fmt::Protobuf).await
}

async fn bad_requests(fmt: Fmt) {
    let server = server().await;
    let mut ann = member(&server, "bad-ann", fmt).await;
    let mut ben = member(&server, "bad-ben", fmt).await;
    let mut cat = member(&server, "bad-cat", fmt).await;

    let e = refused(&mut ann.c, create(true, 5)).await;
    assert!(e.contains("must be 1-4"), "{e}");
    let e = refused(
        &mut ann.c,
        Message::PartyCreate(PartyCreate {
            label: "not json".into(),
            ..Default::default()
        }),
    )
    .await;
    assert!(e.contains("JSON object"), "{e}");
    let p = party_of(ann.c.request(create(true, 2)).await);
    let id = p.party_id;
    ok(&mut ben.c, join(&id)).await;
    let e = refused(&mut cat.c, join(&id)).await;
    assert!(e.contains("party full"), "{e}");
    let e = refused(&mut ben.c, join(&id)).await;
    assert!(e.contains("already a member"), "{e}");
    let e = refused(&mut cat.c, data(&id, 1, b"x")).await;
    assert!(e.contains("not a member"), "{e}");
    let e = refused(
        &mut ben.c,
        Message::PartyPromote(PartyPromote {
            party_id: id.clone(),
            presence: Some(ben.presence.clone()),
        }),
    )
    .await;
    assert!(e.contains("only the party leader"), "{e}");
    let e = refused(
        &mut ann.c,
        Message::PartyPromote(PartyPromote {
            party_id: id.clone(),
            presence: Some(cat.presence.clone()),
        }),
    )
    .await;
    assert!(e.contains("not a member"), "{e}");
    let e = refused(
        &mut ann.c,
        Message::PartyAccept(PartyAccept {
            party_id: id.clone(),
            presence: None,
        }),
    )
    .await;
    assert!(e.contains("invalid presence"), "{e}");
    for bad in ["", "nope", "not-a-uuid.ludus"] {
        let e = refused(&mut cat.c, join(bad)).await;
        assert!(e.contains("invalid party id"), "{e}");
    }
    let unknown = format!("{}.ludus", uuid::Uuid::new_v4());
    let e = refused(&mut cat.c, join(&unknown)).await;
    assert!(e.contains("party not found"), "{e}");
    let elsewhere = format!("{}.other-node", uuid::Uuid::new_v4());
    let e = refused(&mut cat.c, leave(&elsewhere)).await;
    assert!(e.contains("party not found"), "{e}");

    // Party matchmaking: the leader (Ann) gets a party ticket; anyone else
    // is refused with a clear error and keeps the socket.
    let add = || {
        Message::PartyMatchmakerAdd(PartyMatchmakerAdd {
            party_id: id.clone(),
            min_count: 2,
            max_count: 2,
            ..Default::default()
        })
    };
    let e = refused(&mut ben.c, add()).await;
    assert!(e.contains("leader"), "{e}");
    let reply = ann.c.request(add()).await;
    match reply.message {
        Some(Message::PartyMatchmakerTicket(t)) => {
            assert_eq!(t.party_id, id);
            assert!(!t.ticket.is_empty());
        }
        other => panic!("expected a party ticket, got {other:?}"),
    }

    for m in [&mut ann, &mut ben, &mut cat] {
        sync(&mut m.c).await;
    }
}

async fn rpc(c: &mut WsClient, id: &str, payload: Value) -> String {
    c.rpc(id, &payload.to_string())
        .await
        .unwrap_or_else(|e| panic!("rpc {id} failed: {e:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lua_party_list_filters_and_pages() {
    let server = server().await;
    let mut ann = member(&server, "list-ann", Fmt::Json).await;
    let open = party_of(ann.c.request(create(true, 2)).await);
    let closed = party_of(ann.c.request(create(false, 3)).await);
    let hidden = party_of(
        ann.c
            .request(Message::PartyCreate(PartyCreate {
                open: true,
                max_size: 4,
                hidden: true,
                ..Default::default()
            }))
            .await,
    );
    let page: Value = serde_json::from_str(
        &rpc(&mut ann.c, "party_list", serde_json::json!({ "limit": 10 })).await,
    )
    .unwrap();
    let ids: Vec<&str> = page["parties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["party_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![open.party_id.as_str(), closed.party_id.as_str()]);
    let first = &page["parties"][0];
    assert_eq!(first["match_id"], open.party_id.as_str());
    assert_eq!(first["maxSize"], 2);
    assert_eq!(first["size"], 1);
    assert_eq!(first["open"], true);
    assert_eq!(first["label"], "{}");

    // Closed only; then hidden included, one per page.
    let page: Value = serde_json::from_str(
        &rpc(
            &mut ann.c,
            "party_list",
            serde_json::json!({ "limit": 10, "open": false }),
        )
        .await,
    )
    .unwrap();
    assert_eq!(page["parties"].as_array().unwrap().len(), 1);
    assert_eq!(page["parties"][0]["party_id"], closed.party_id.as_str());
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page: Value = serde_json::from_str(
            &rpc(
                &mut ann.c,
                "party_list",
                serde_json::json!({ "limit": 1, "show_hidden": true, "cursor": cursor }),
            )
            .await,
        )
        .unwrap();
        for p in page["parties"].as_array().unwrap() {
            seen.push(p["party_id"].as_str().unwrap().to_owned());
        }
        cursor = page["cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(seen, vec![open.party_id, closed.party_id, hidden.party_id]);
    let err = rpc(&mut ann.c, "party_list_bad_limit", Value::Null).await;
    assert!(err.contains("expects limit to be 1-100"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_party_list_filters_pages_and_refuses_bad_input() {
    let server = server().await;
    let mut ann = member(&server, "rest-ann", Fmt::Protobuf).await;
    let (token, _, _) = user(&server, "rest-viewer").await;
    let open = party_of(ann.c.request(create(true, 2)).await);
    let closed = party_of(
        ann.c
            .request(Message::PartyCreate(PartyCreate {
                open: false,
                max_size: 3,
                label: r#"{"mode":"duo"}"#.into(),
                hidden: false,
            }))
            .await,
    );
    party_of(
        ann.c
            .request(Message::PartyCreate(PartyCreate {
                open: true,
                hidden: true,
                ..Default::default()
            }))
            .await,
    );

    let all = server.get_bearer("/v2/party", &token).await;
    assert_eq!(all.status, 200, "{:?}", all.body);
    let ids: Vec<&str> = all.body["parties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["party_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![open.party_id.as_str(), closed.party_id.as_str()]);
    assert_eq!(all.body["parties"][1]["max_size"], 3);
    assert_eq!(all.body["parties"][1]["label"], r#"{"mode":"duo"}"#);
    assert!(all.body.get("cursor").is_none(), "{:?}", all.body);

    let closed_only = server.get_bearer("/v2/party?open=false", &token).await;
    assert_eq!(closed_only.body["parties"].as_array().unwrap().len(), 1);
    assert_eq!(
        closed_only.body["parties"][0]["party_id"],
        closed.party_id.as_str()
    );

    let first = server.get_bearer("/v2/party?limit=1", &token).await;
    assert_eq!(first.body["parties"][0]["party_id"], open.party_id.as_str());
    let cursor = first.body["cursor"].as_str().unwrap().to_owned();
    let second = server
        .get_bearer(&format!("/v2/party?limit=1&cursor={cursor}"), &token)
        .await;
    assert_eq!(
        second.body["parties"][0]["party_id"],
        closed.party_id.as_str()
    );

    for bad in [
        "/v2/party?limit=0",
        "/v2/party?limit=101",
        "/v2/party?limit=x",
        "/v2/party?open=maybe",
        "/v2/party?cursor=nope",
        "/v2/party?query=%2Blabel.mode%3A",
    ] {
        let r = server.get_bearer(bad, &token).await;
        assert_eq!(r.status, 400, "{bad}: {:?}", r.body);
        assert_eq!(r.body["code"], 3, "{bad}");
    }
    // A query over the JSON label finds only the duo party.
    let found = server
        .get_bearer("/v2/party?query=%2Blabel.mode%3Aduo", &token)
        .await;
    assert_eq!(found.status, 200, "{:?}", found.body);
    let found = found.body["parties"].as_array().unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["party_id"], closed.party_id.as_str());
    let r = server.get_bearer("/v2/party", "not-a-token").await;
    assert_eq!(r.status, 401);
}
