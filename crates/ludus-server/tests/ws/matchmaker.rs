//! The matchmaker over real sockets, JSON and protobuf clients together,
//! with `matchmaker.interval_sec` at 1: pairing and larger groups with
//! properties and queries, one shared token per match, removal, errors that
//! keep the socket open, the ticket limit, tickets gone with their socket,
//! `GET /v2/matchmaker/stats`, and the `register_matchmaker_matched` hook
//! (`tests/lua/matchmaker_test.lua`) answering a match id.
//!
//! The matchmaker never touches the database, so these run on SQLite only.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use ludus_proto::pbjson_types::Int32Value;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::matchmaker_matched::Id;
use ludus_proto::realtime::*;
use serde_json::Value;

use crate::client::{Fmt, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

async fn server() -> TestServer {
    TestServer::start_with(Backend::Sqlite, |c| c.matchmaker.interval_sec = 1).await
}

fn add(query: &str, min: i32, max: i32, region: &str) -> Message {
    Message::MatchmakerAdd(MatchmakerAdd {
        min_count: min,
        max_count: max,
        query: query.into(),
        string_properties: BTreeMap::from([("region".into(), region.into())]),
        numeric_properties: BTreeMap::from([("skill".into(), 10.0)]),
        count_multiple: None,
    })
}

/// Adds a ticket and answers its id.
async fn ticket(c: &mut WsClient, m: Message) -> String {
    match c.request(m).await.message {
        Some(Message::MatchmakerTicket(t)) => {
            assert!(!t.ticket.is_empty());
            t.ticket
        }
        other => panic!("expected a ticket, got {other:?}"),
    }
}

/// The next `matchmaker_matched` push.
async fn matched(c: &mut WsClient) -> MatchmakerMatched {
    loop {
        if let Some(Message::MatchmakerMatched(m)) = c.push().await.message {
            return m;
        }
    }
}

fn token_of(m: &MatchmakerMatched) -> String {
    match &m.id {
        Some(Id::Token(t)) => t.clone(),
        other => panic!("expected a token, got {other:?}"),
    }
}

async fn stats(server: &TestServer, token: &str) -> Value {
    let r = server.get_bearer("/v2/matchmaker/stats", token).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body
}

/// Polls the stats until `ticket_count` is `n` (the matchmaker runs on its
/// own clock, so tests wait for what it did, never for a fixed time).
async fn wait_tickets(server: &TestServer, token: &str, n: i64) {
    for _ in 0..100 {
        if stats(server, token).await["ticket_count"]
            .as_i64()
            .unwrap_or(0)
            == n
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("ticket count never reached {n}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pair_with_properties_and_query_share_one_token() {
    let server = server().await;
    let (ta, ida, _) = user(&server, "mma1-pair-device").await;
    let (tb, idb, _) = user(&server, "mmb1-pair-device").await;
    let (tc, _, _) = user(&server, "mmc1-pair-device").await;
    let mut a = WsClient::connect(&server, &ta, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &tb, Fmt::Protobuf).await;
    let mut c = WsClient::connect(&server, &tc, Fmt::Json).await;
    let q = "+properties.region:europe +properties.skill:>=5";
    // c is in asia: its own query would accept anyone, but a's and b's
    // queries exclude it, and c's range excludes them.
    let tc_ticket = ticket(&mut c, add("+properties.skill:>100", 2, 2, "asia")).await;
    let t_a = ticket(&mut a, add(q, 2, 2, "europe")).await;
    let t_b = ticket(&mut b, add(q, 2, 2, "europe")).await;

    let ma = matched(&mut a).await;
    let mb = matched(&mut b).await;
    assert_eq!(ma.ticket, t_a);
    assert_eq!(mb.ticket, t_b);
    let token = token_of(&ma);
    assert_eq!(token, token_of(&mb), "a matched pair shares one token");
    let key = &server.config.session.encryption_key;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mid = ludus_realtime::matchmaker::verify_match_token(key, &token, now).unwrap();
    let (uuid, node) = mid.split_once('.').unwrap();
    assert!(
        uuid::Uuid::parse_str(uuid).is_ok() && node.is_empty(),
        "{mid}"
    );
    assert!(ludus_realtime::matchmaker::verify_match_token(key, &token, now + 31).is_err());

    let users: HashSet<String> = ma
        .users
        .iter()
        .map(|u| u.presence.as_ref().unwrap().user_id.clone())
        .collect();
    assert_eq!(users, HashSet::from([ida.clone(), idb.clone()]));
    let me = ma.self_.as_ref().unwrap();
    assert_eq!(me.presence.as_ref().unwrap().user_id, ida);
    assert_eq!(me.string_properties["region"], "europe");
    assert_eq!(me.numeric_properties["skill"], 10.0);
    assert_eq!(mb.self_.unwrap().presence.unwrap().user_id, idb);

    // c's ticket is still there, and removable.
    wait_tickets(&server, &tc, 1).await;
    let r = c
        .request(Message::MatchmakerRemove(MatchmakerRemove {
            ticket: tc_ticket,
        }))
        .await;
    assert!(r.message.is_none(), "empty ack, got {r:?}");
    wait_tickets(&server, &tc, 0).await;
    let s = stats(&server, &tc).await;
    assert_eq!(s["completions"].as_array().unwrap().len(), 2, "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_players_in_both_formats_form_one_match() {
    let server = server().await;
    let mut clients = Vec::new();
    for (i, fmt) in [Fmt::Json, Fmt::Protobuf, Fmt::Json, Fmt::Protobuf]
        .into_iter()
        .enumerate()
    {
        let (t, _, _) = user(&server, &format!("mmq{i}-four-device")).await;
        clients.push(WsClient::connect(&server, &t, fmt).await);
    }
    for c in &mut clients {
        let mut m = add("+properties.region:eu", 3, 4, "eu");
        if let Message::MatchmakerAdd(a) = &mut m {
            a.count_multiple = Some(Int32Value { value: 1 });
        }
        ticket(c, m).await;
    }
    let mut tokens = HashSet::new();
    let mut tickets = HashSet::new();
    for c in &mut clients {
        let m = matched(c).await;
        assert_eq!(m.users.len(), 4);
        tickets.insert(m.ticket.clone());
        tokens.insert(token_of(&m));
    }
    assert_eq!(tokens.len(), 1, "one token for the whole match");
    assert_eq!(tickets.len(), 4, "each learns its own ticket");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removal_errors_and_the_ticket_limit_keep_the_socket() {
    let server = server().await;
    let (t, _, _) = user(&server, "mmr1-errors").await;
    for fmt in [Fmt::Json, Fmt::Protobuf] {
        let mut c = WsClient::connect(&server, &t, fmt).await;
        let never = "+properties.region:nowhere";
        let id = ticket(&mut c, add(never, 2, 2, "eu")).await;
        let r = c
            .request(Message::MatchmakerRemove(MatchmakerRemove {
                ticket: id.clone(),
            }))
            .await;
        assert!(r.message.is_none(), "{r:?}");
        let r = c
            .request(Message::MatchmakerRemove(MatchmakerRemove { ticket: id }))
            .await;
        assert_eq!(error_of(&r).code, 3);
        assert!(error_of(&r).message.contains("not found"), "{r:?}");
        let r = c
            .request(Message::MatchmakerRemove(MatchmakerRemove {
                ticket: String::new(),
            }))
            .await;
        assert_eq!(error_of(&r).code, 3);

        // A bad query: Nakama's code 0, a message saying where, socket open.
        let r = c.request(add("+properties.region:", 2, 2, "eu")).await;
        assert_eq!(error_of(&r).code, 0);
        assert!(
            error_of(&r).message.contains("query parse error at 19"),
            "{r:?}"
        );
        let r = c.request(add("*", 1, 2, "eu")).await;
        assert_eq!(error_of(&r).code, 3);
        assert!(error_of(&r).message.contains("minimum count"), "{r:?}");
        let r = c.request(add("*", 4, 2, "eu")).await;
        assert_eq!(error_of(&r).code, 3);
        let mut m = add("*", 2, 5, "eu");
        if let Message::MatchmakerAdd(a) = &mut m {
            a.count_multiple = Some(Int32Value { value: 2 });
        }
        let r = c.request(m).await;
        assert_eq!(error_of(&r).code, 3);
        assert!(error_of(&r).message.contains("maximum count"), "{r:?}");

        // Three tickets per session, the fourth refused.
        for _ in 0..3 {
            ticket(&mut c, add(never, 2, 2, "eu")).await;
        }
        let r = c.request(add(never, 2, 2, "eu")).await;
        assert_eq!(error_of(&r).code, 0);
        assert!(error_of(&r).message.contains("too many"), "{r:?}");
        let r = c.request(Message::Ping(Ping {})).await;
        assert!(
            matches!(r.message, Some(Message::Pong(_))),
            "socket still open"
        );
        drop(c);
        wait_tickets(&server, &t, 0).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tickets_go_with_their_socket_and_stats_need_a_session() {
    let server = server().await;
    let (ta, _, _) = user(&server, "mmd1-gone-device").await;
    let (tb, _, _) = user(&server, "mmd2-gone-device").await;
    let r = server
        .http
        .get(server.url("/v2/matchmaker/stats"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);

    let mut a = WsClient::connect(&server, &ta, Fmt::Protobuf).await;
    ticket(&mut a, add("*", 2, 2, "eu")).await;
    ticket(&mut a, add("*", 3, 3, "eu")).await;
    let s = stats(&server, &tb).await;
    assert_eq!(s["ticket_count"], 2);
    assert!(
        s["oldest_ticket_create_time"]
            .as_str()
            .unwrap()
            .ends_with('Z'),
        "{s}"
    );
    a.ws.close(None).await.unwrap();
    wait_tickets(&server, &tb, 0).await;

    // Nobody left to match with: b waits alone.
    let mut b = WsClient::connect(&server, &tb, Fmt::Json).await;
    ticket(&mut b, add("*", 2, 2, "eu")).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(b.drain_pushes().is_empty());
    assert_eq!(stats(&server, &tb).await["ticket_count"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matched_hook_returns_a_match_id() {
    let server = TestServer::start_with(Backend::Sqlite, |c| {
        c.matchmaker.interval_sec = 1;
        c.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua").into();
        c.runtime.lua_pool_size = 2;
    })
    .await;
    let (ta, ida, _) = user(&server, "mmh1-hook-device").await;
    let (tb, _, _) = user(&server, "mmh2-hook-device").await;
    let mut a = WsClient::connect(&server, &ta, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &tb, Fmt::Protobuf).await;
    let hooked = |c: &mut Message| {
        if let Message::MatchmakerAdd(m) = c {
            m.string_properties.insert("mode".into(), "hooked".into());
        }
    };
    let mut m = add("+properties.mode:hooked", 2, 2, "eu");
    hooked(&mut m);
    ticket(&mut a, m.clone()).await;
    ticket(&mut b, m).await;
    let id = "6f1f8f5e-4c0e-4d8e-9a55-3b1c2a7d9e01.ludus".to_string();
    for c in [&mut a, &mut b] {
        let m = matched(c).await;
        assert_eq!(m.id, Some(Id::MatchId(id.clone())));
    }

    // What the hook was given: Nakama's entry tables.
    let payload = a.rpc("mm_entries", "").await.unwrap();
    let v: Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(v["mode"], "matchmaker");
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    let mine = entries
        .iter()
        .find(|e| e["presence"]["user_id"] == ida.as_str())
        .unwrap();
    assert_eq!(mine["presence"]["node"], "ludus");
    assert!(mine["presence"]["session_id"].as_str().is_some());
    assert_eq!(mine["properties"]["mode"], "hooked");
    assert_eq!(mine["properties"]["skill"], 10.0);
    assert!(mine.get("party_id").is_none());

    // A group the hook declines gets a token.
    let m = add("+properties.region:other", 2, 2, "other");
    ticket(&mut a, m.clone()).await;
    ticket(&mut b, m).await;
    let ma = matched(&mut a).await;
    let mb = matched(&mut b).await;
    assert_eq!(token_of(&ma), token_of(&mb));
}
