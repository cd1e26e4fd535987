//! The realtime `nk` functions and realtime hooks, driven by the Lua module
//! in `tests/lua/realtime_test.lua` through socket RPCs: what a module does
//! must be visible on other sockets (notifications, chat messages, stream
//! data, presence events, disconnects), and before hooks on socket messages
//! must rewrite and reject them. Device ids differ in their first four
//! characters: `server_test.lua` names users after them.

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::*;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::both_backends;
use crate::client::{Fmt, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

both_backends!(
    lua_notifications_reach_sockets_and_store,
    lua_chat_messages_and_channel_ids,
    lua_session_disconnect_closes_the_socket,
    lua_users_ban_id_closes_sockets_and_refuses_sign_in,
    lua_streams_join_send_update_kick_close,
    rt_hooks_rewrite_reject_and_observe_channel_messages,
    lua_status_follow_and_unfollow_for_a_session,
    js_session_disconnect_closes_the_socket,
    js_streams_join_send_update_kick_close,
    js_status_follow_and_unfollow_for_a_session,
    js_rt_hooks_rewrite_reject_and_observe_channel_messages,
);

async fn lua_server(backend: Backend) -> TestServer {
    TestServer::start_with(backend, |config| {
        config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua").into();
        config.runtime.lua_pool_size = 2;
    })
    .await
}

/// The JS twin of the Lua module's streams, session and status RPCs
/// (`tests/js_realtime`, same ids and answers).
async fn js_server(backend: Backend) -> TestServer {
    TestServer::start_with(backend, |config| {
        config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js_realtime").into();
        config.runtime.js_max_count = 2;
    })
    .await
}

/// Runs RPC `id` over the socket and returns its payload.
async fn call(c: &mut WsClient, id: &str, payload: &str) -> String {
    c.rpc(id, payload)
        .await
        .unwrap_or_else(|e| panic!("rpc {id} failed: {e:?}"))
}

async fn call_json(c: &mut WsClient, id: &str, payload: &str) -> Value {
    serde_json::from_str(&call(c, id, payload).await).unwrap()
}

async fn session_id(c: &mut WsClient) -> String {
    call_json(c, "ctx", "{}").await["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The next `stream_data` push, skipping presence events.
async fn stream_data(c: &mut WsClient) -> StreamData {
    loop {
        if let Some(Message::StreamData(d)) = c.push().await.message {
            return d;
        }
    }
}

async fn lua_notifications_reach_sockets_and_store(backend: Backend) {
    let server = lua_server(backend).await;
    let (a_token, a_id, _) = user(&server, "rtn1-notify-sender").await;
    let (b_token, b_id, _) = user(&server, "rtn2-notify-target").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;
    call(&mut a, "rt_notify", &json!({ "user_id": b_id }).to_string()).await;

    let mut subjects = Vec::new();
    for _ in 0..2 {
        let Some(Message::Notifications(n)) = b.push().await.message else {
            panic!("expected notifications")
        };
        subjects.extend(n.notifications);
    }
    let names: Vec<&str> = subjects.iter().map(|n| n.subject.as_str()).collect();
    assert_eq!(names, ["one", "two", "three"]);
    assert_eq!(subjects[0].sender_id, a_id);
    assert_eq!(subjects[0].code, 101);
    assert_eq!(subjects[1].sender_id, "", "no sender_id: from the system");
    assert_eq!(
        serde_json::from_str::<Value>(&subjects[2].content).unwrap(),
        json!({ "n": 3 })
    );

    // Only the persistent ones are stored.
    let listed = server
        .get_bearer("/v2/notification?limit=10", &b_token)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let mut stored: Vec<&str> = listed.body["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["subject"].as_str().unwrap())
        .collect();
    stored.sort_unstable();
    assert_eq!(stored, ["one", "three"]);
}

async fn lua_chat_messages_and_channel_ids(backend: Backend) {
    let server = lua_server(backend).await;
    let (a_token, a_id, a_name) = user(&server, "rtc1-chat-sender").await;
    let (b_token, b_id, _) = user(&server, "rtc2-chat-reader").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;
    let joined = b
        .request(Message::ChannelJoin(ChannelJoin {
            target: "lua-room".into(),
            r#type: 1,
            ..Default::default()
        }))
        .await;
    let Some(Message::Channel(channel)) = joined.message else {
        panic!("{joined:?}")
    };

    let r = call_json(
        &mut a,
        "rt_channel",
        &json!({ "room": "lua-room", "other": b_id }).to_string(),
    )
    .await;
    assert_eq!(r["room"], channel.id.as_str());
    let (lo, hi) = if a_id < b_id {
        (&a_id, &b_id)
    } else {
        (&b_id, &a_id)
    };
    assert_eq!(r["dm"], format!("4.{lo}.{hi}."));
    let ack = &r["ack"];
    assert_eq!(ack["channelId"], channel.id.as_str());
    assert_eq!(ack["username"], a_name.as_str());
    assert_eq!(ack["persistent"], true);
    assert_eq!(ack["code"], 0);
    assert!(ack["createTime"].as_i64().unwrap() > 0);

    // B is on the channel without A having joined it: the module's message
    // reaches it, and is kept in the history.
    // (B first sees the presence event of its own join.)
    let m = loop {
        if let Some(Message::ChannelMessage(m)) = b.push().await.message {
            break m;
        }
    };
    assert_eq!(m.message_id, ack["messageId"].as_str().unwrap());
    assert_eq!(m.sender_id, a_id);
    assert_eq!(
        serde_json::from_str::<Value>(&m.content).unwrap(),
        json!({ "text": "from lua" })
    );
    let history = server
        .get_bearer(&format!("/v2/channel/{}", channel.id), &b_token)
        .await;
    assert_eq!(history.status, 200, "{}", history.body);
    assert_eq!(history.body["messages"].as_array().unwrap().len(), 1);
}

async fn lua_session_disconnect_closes_the_socket(backend: Backend) {
    session_disconnect_closes_the_socket(lua_server(backend).await).await;
}

async fn js_session_disconnect_closes_the_socket(backend: Backend) {
    session_disconnect_closes_the_socket(js_server(backend).await).await;
}

async fn session_disconnect_closes_the_socket(server: TestServer) {
    let (a_token, _, _) = user(&server, "rtd1-disconnect-admin").await;
    let (b_token, _, _) = user(&server, "rtd2-disconnect-victim").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Json).await;
    let b_session = session_id(&mut b).await;
    assert_eq!(call(&mut a, "rt_disconnect", &b_session).await, "ok");
    // No reason given: Nakama's close, normal code and text.
    let (code, reason, _) = b.closed_with_reason().await;
    assert_eq!(code, Some(CloseCode::Normal));
    assert_eq!(reason, "server-side session disconnect");

    // A reason given travels in the close frame.
    let mut c = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;
    let c_session = session_id(&mut c).await;
    let args = json!({"session_id": c_session, "reason": 3}).to_string();
    assert_eq!(call(&mut a, "rt_disconnect_reason", &args).await, "ok");
    let (code, reason, _) = c.closed_with_reason().await;
    assert_eq!(code, Some(CloseCode::Normal));
    assert_eq!(reason, "server-side session disconnect: leave");

    // A reason outside Nakama's 0-4 is refused and closes nothing.
    let mut d = WsClient::connect(&server, &b_token, Fmt::Json).await;
    let d_session = session_id(&mut d).await;
    let args = json!({"session_id": d_session, "reason": 9}).to_string();
    let refused = call(&mut a, "rt_disconnect_reason", &args).await;
    assert!(refused.contains("must be a value 0-4"), "{refused}");
    assert_eq!(session_id(&mut d).await, d_session, "the socket stays open");

    // An unknown session is not an error, as in Nakama.
    let unknown = uuid::Uuid::new_v4().to_string();
    assert_eq!(call(&mut a, "rt_disconnect", &unknown).await, "ok");
}

async fn lua_users_ban_id_closes_sockets_and_refuses_sign_in(backend: Backend) {
    let server = lua_server(backend).await;
    let (a_token, _, _) = user(&server, "rtb1-ban-admin").await;
    let (b_token, b_id, _) = user(&server, "rtb2-ban-victim").await;
    let (_, c_id, _) = user(&server, "rtb3-ban-bystander").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b1 = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;
    let mut b2 = WsClient::connect(&server, &b_token, Fmt::Json).await;
    let sign_in = || {
        server.post_key(
            "/v2/account/authenticate/device",
            json!({"id": "rtb2-ban-victim"}),
        )
    };

    // Bad lists are refused and ban nobody.
    for (ids, want) in [
        (json!("nope"), "invalid user id list"),
        (json!([b_id, 7]), "each user id must be a string"),
        (
            json!([b_id, "not-a-uuid"]),
            "each user id must be a valid id string",
        ),
    ] {
        let said = call(&mut a, "rt_ban", &json!({"ids": ids}).to_string()).await;
        assert!(said.contains(want), "{said}");
    }
    assert_eq!(sign_in().await.status, 200, "nobody was banned");
    assert_eq!(call(&mut a, "rt_ban", r#"{"ids": []}"#).await, "ok");

    // Every socket of the banned user is told (Nakama's notice -8), then closed.
    let args = json!({"ids": [b_id, uuid::Uuid::new_v4().to_string()]}).to_string();
    assert_eq!(call(&mut a, "rt_ban", &args).await, "ok");
    for b in [&mut b1, &mut b2] {
        let Some(Message::Notifications(n)) = b.push().await.message else {
            panic!("expected the ban notice")
        };
        assert_eq!(n.notifications.len(), 1);
        assert_eq!(n.notifications[0].code, -8);
        assert_eq!(n.notifications[0].subject, "banned");
        assert!(!n.notifications[0].persistent);
        let (code, reason, _) = b.closed_with_reason().await;
        assert_eq!(code, Some(CloseCode::Normal));
        assert_eq!(reason, "server-side session disconnect");
    }
    // Its tokens are revoked and it cannot sign in; others are untouched.
    let r = server.get_bearer("/v2/account", &b_token).await;
    assert_eq!(r.status, 401, "{}", r.body);
    let r = sign_in().await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("user account banned"),
        "{}",
        r.body
    );
    assert_eq!(server.get_bearer("/v2/account", &a_token).await.status, 200);
    let bystander = server
        .post_key(
            "/v2/account/authenticate/device",
            json!({"id": "rtb3-ban-bystander"}),
        )
        .await;
    assert_eq!(bystander.status, 200, "{}", bystander.body);
    assert_eq!(crate::support::user_id(&bystander.body), c_id);

    // Lifted: a new sign-in works; the tokens the ban revoked stay revoked.
    let args = json!({"ids": [b_id], "unban": true}).to_string();
    assert_eq!(call(&mut a, "rt_ban", &args).await, "ok");
    let r = sign_in().await;
    assert_eq!(r.status, 200, "{}", r.body);
    let fresh = crate::support::token(&r.body);
    let account = server.get_bearer("/v2/account", &fresh).await;
    assert_eq!(account.status, 200, "{}", account.body);
    assert!(
        account.body.get("disable_time").is_none(),
        "{}",
        account.body
    );
    assert_eq!(server.get_bearer("/v2/account", &b_token).await.status, 401);
}

async fn lua_streams_join_send_update_kick_close(backend: Backend) {
    streams_join_send_update_kick_close(lua_server(backend).await).await;
}

async fn js_streams_join_send_update_kick_close(backend: Backend) {
    streams_join_send_update_kick_close(js_server(backend).await).await;
}

async fn streams_join_send_update_kick_close(server: TestServer) {
    let (a_token, _, _) = user(&server, "rts1-stream-user").await;
    let (b_token, b_id, b_name) = user(&server, "rts2-stream-user").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;

    let r = call_json(&mut a, "rt_stream_join", "ready").await;
    assert_eq!(r["joined"], true);
    assert_eq!(r["again"], false, "a second join only updates");
    assert_eq!(r["count"], 1);
    assert_eq!(r["get"]["status"], "ready");
    assert_eq!(r["get"]["hidden"], false);

    let r = call_json(&mut b, "rt_stream_join", "waiting").await;
    assert_eq!(r["count"], 2);
    // A module's own stream announces who joins (A saw its own join first).
    let e = loop {
        if let Some(Message::StreamPresenceEvent(e)) = a.push().await.message
            && e.joins.iter().any(|p| p.user_id == b_id)
        {
            break e;
        }
    };
    let stream = e.stream.clone().unwrap();
    assert_eq!((stream.mode, stream.label.as_str()), (123, "lobby"));
    assert_eq!(e.joins.len(), 1);
    assert_eq!(e.joins[0].user_id, b_id);
    assert_eq!(e.joins[0].username, b_name);

    call(&mut a, "rt_stream_send", "all").await;
    for c in [&mut a, &mut b] {
        let d = stream_data(c).await;
        assert_eq!(d.data, "data:all");
        assert_eq!(d.stream.unwrap().mode, 123);
    }
    let b_session = session_id(&mut b).await;
    call(&mut a, "rt_stream_send", &b_session).await;
    let d = stream_data(&mut b).await;
    assert_eq!(d.data, format!("data:{b_session}"));
    assert!(
        a.drain_pushes()
            .iter()
            .all(|e| !matches!(e.message, Some(Message::StreamData(_)))),
        "only B was addressed"
    );
    let r = call_json(&mut a, "rt_stream_send_raw", &b_session).await;
    assert!(
        r["bad"].as_str().unwrap().contains("not a valid envelope"),
        "{r}"
    );
    assert!(
        r["empty"].as_str().unwrap().contains("carries no message"),
        "{r}"
    );
    let raw = loop {
        if let Some(Message::Notifications(n)) = b.push().await.message {
            break n;
        }
    };
    assert_eq!(raw.notifications[0].subject, "raw");
    assert_eq!(raw.notifications[0].code, 101);
    assert!(
        a.drain_pushes()
            .iter()
            .all(|e| !matches!(e.message, Some(Message::Notifications(_)))),
        "only B was addressed"
    );

    // B hides: still on the stream, left out of the visible list.
    let r = call_json(&mut b, "rt_stream_update", "away").await;
    assert_eq!(r["get"]["hidden"], true);
    assert_eq!(r["get"]["persistence"], false);
    assert_eq!(r["get"]["status"], "away");
    assert_eq!(r["visible"], 1);
    assert_eq!(r["all"].as_array().unwrap().len(), 2);

    let kick = json!({ "user_id": b_id, "session_id": b_session }).to_string();
    assert_eq!(call(&mut a, "rt_stream_kick", &kick).await, "1");
    assert_eq!(call(&mut a, "rt_stream_leave", "").await, "0");

    call_json(&mut a, "rt_stream_join", "back").await;
    call_json(&mut b, "rt_stream_join", "back").await;
    assert_eq!(call(&mut a, "rt_stream_close", "").await, "0");
    a.drain_pushes();
    call(&mut a, "rt_stream_send", "all").await;
    let r = call(&mut a, "ctx", "{}").await;
    assert!(!r.is_empty());
    assert!(
        a.drain_pushes()
            .iter()
            .all(|e| !matches!(e.message, Some(Message::StreamData(_)))),
        "a closed stream reaches nobody"
    );
}

async fn rt_hooks_rewrite_reject_and_observe_channel_messages(backend: Backend) {
    hooks_rewrite_reject_and_observe_channel_messages(lua_server(backend).await).await;
}

async fn js_rt_hooks_rewrite_reject_and_observe_channel_messages(backend: Backend) {
    hooks_rewrite_reject_and_observe_channel_messages(js_server(backend).await).await;
}

async fn hooks_rewrite_reject_and_observe_channel_messages(server: TestServer) {
    let (a_token, a_id, _) = user(&server, "rth1-hook-sender").await;
    let (b_token, _, _) = user(&server, "rth2-hook-reader").await;
    let mut a = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;
    let mut channel_id = String::new();
    for c in [&mut a, &mut b] {
        let r = c
            .request(Message::ChannelJoin(ChannelJoin {
                target: "hooked-room".into(),
                r#type: 1,
                ..Default::default()
            }))
            .await;
        let Some(Message::Channel(ch)) = r.message else {
            panic!("{r:?}")
        };
        channel_id = ch.id;
    }
    let send = |content: &str| {
        Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: channel_id.clone(),
            content: content.into(),
        })
    };

    // Rewritten by the before hook: B sees the hook's content.
    let r = a.request(send(r#"{"text":"please rewrite"}"#)).await;
    let Some(Message::ChannelMessageAck(ack)) = r.message else {
        panic!("{r:?}")
    };
    let m = loop {
        if let Some(Message::ChannelMessage(m)) = b.push().await.message {
            break m;
        }
    };
    assert_eq!(
        serde_json::from_str::<Value>(&m.content).unwrap(),
        json!({ "text": "rewritten by hook" })
    );
    // The after hook saw the (rewritten) request and the ack.
    let seen = call_json(&mut a, "rt_last_after", "").await;
    assert_eq!(seen["user_id"], a_id.as_str());
    assert_eq!(seen["message_id"], ack.message_id.as_str());
    assert!(
        seen["request"]
            .as_str()
            .unwrap()
            .contains("rewritten by hook")
    );

    // A failing hook: RUNTIME_FUNCTION_EXCEPTION, the socket stays open.
    let r = a.request(send(r#"{"text":"fail please"}"#)).await;
    let e = error_of(&r);
    assert_eq!(e.code, 7, "RUNTIME_FUNCTION_EXCEPTION");
    assert!(e.message.contains("hook says no"), "{}", e.message);
    let r = a.request(Message::Ping(Ping {})).await;
    assert!(matches!(r.message, Some(Message::Pong(_))));

    // Rejected: an error, the message dropped and the socket closed.
    let r = a.request(send(r#"{"text":"reject me"}"#)).await;
    assert_eq!(error_of(&r).code, 1, "UNRECOGNIZED_PAYLOAD");
    a.closed().await;
    let r = b.request(Message::Ping(Ping {})).await;
    assert!(matches!(r.message, Some(Message::Pong(_))));
    let refused = |e: &Envelope| match &e.message {
        Some(Message::ChannelMessage(m)) => {
            m.content.contains("reject") || m.content.contains("fail")
        }
        _ => false,
    };
    assert!(
        !b.drain_pushes().iter().any(refused),
        "refused messages reached nobody"
    );
}

/// `nk.status_follow` makes another session follow a user: it hears the
/// user's status changes until `nk.status_unfollow`.
async fn lua_status_follow_and_unfollow_for_a_session(backend: Backend) {
    status_follow_and_unfollow_for_a_session(lua_server(backend).await).await;
}

async fn js_status_follow_and_unfollow_for_a_session(backend: Backend) {
    status_follow_and_unfollow_for_a_session(js_server(backend).await).await;
}

async fn status_follow_and_unfollow_for_a_session(server: TestServer) {
    let (a_token, a_id, _) = user(&server, "rts1-status-followed").await;
    let (b_token, ..) = user(&server, "rts2-status-follower").await;
    let mut a = WsClient::connect_status(&server, &a_token, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;
    let b_session = session_id(&mut b).await;
    let follow = |unfollow: bool| {
        json!({ "session_id": b_session, "user_ids": [a_id], "unfollow": unfollow }).to_string()
    };
    let out = call_json(&mut a, "rt_status_follow", &follow(false)).await;
    assert!(
        out["bad_session"]
            .as_str()
            .unwrap()
            .contains("expects a valid session id"),
        "{out}"
    );
    assert!(
        out["bad_user"]
            .as_str()
            .unwrap()
            .contains("each user id must be a valid id")
            || out["bad_user"]
                .as_str()
                .unwrap()
                .contains("expects a valid user id"),
        "{out}"
    );
    a.request(Message::StatusUpdate(StatusUpdate {
        status: Some("playing".to_string().into()),
    }))
    .await;
    let heard = loop {
        if let Some(Message::StatusPresenceEvent(e)) = b.push().await.message
            && !e.joins.is_empty()
        {
            break e;
        }
    };
    assert_eq!(heard.joins[0].user_id, a_id);

    call_json(&mut a, "rt_status_follow", &follow(true)).await;
    a.request(Message::StatusUpdate(StatusUpdate {
        status: Some("away".to_string().into()),
    }))
    .await;
    // A round trip on b's socket: anything pushed before it has arrived.
    session_id(&mut b).await;
    let events = b
        .drain_pushes()
        .into_iter()
        .filter(|e| matches!(e.message, Some(Message::StatusPresenceEvent(_))))
        .count();
    assert_eq!(events, 0, "no status events after the unfollow");
}
