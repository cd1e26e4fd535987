//! Chat over real sockets: rooms and direct messages, acks and pushes,
//! presence events, updates and removals by the sender only, the
//! persistence flag, and history paging over REST in both directions.

use ludus_proto::pbjson_types::BoolValue;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::*;
use serde_json::Value;

use crate::both_backends;
use crate::client::{Fmt, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

both_backends!(
    room_chat_json_sender,
    room_chat_protobuf_sender,
    direct_messages_and_group_refusal,
    history_pages_forward_and_backward,
    history_fills_cacheable_cursor,
    channel_validation_errors_keep_the_socket,
);

async fn room_chat_json_sender(backend: Backend) {
    room_chat(backend, Fmt::Json, Fmt::Protobuf).await
}

async fn room_chat_protobuf_sender(backend: Backend) {
    room_chat(backend, Fmt::Protobuf, Fmt::Json).await
}

fn join_room(name: &str) -> Message {
    Message::ChannelJoin(ChannelJoin {
        target: name.into(),
        r#type: 1,
        ..Default::default()
    })
}

fn channel(env: Envelope) -> Channel {
    match env.message {
        Some(Message::Channel(c)) => c,
        other => panic!("expected a channel, got {other:?}"),
    }
}

fn ack(env: Envelope) -> ChannelMessageAck {
    match env.message {
        Some(Message::ChannelMessageAck(a)) => a,
        other => panic!("expected an ack, got {other:?}"),
    }
}

/// The next push of the wanted kind, skipping others.
async fn next_message(c: &mut WsClient) -> ludus_proto::api::ChannelMessage {
    loop {
        if let Some(Message::ChannelMessage(m)) = c.push().await.message {
            return m;
        }
    }
}

async fn next_presence(c: &mut WsClient) -> ChannelPresenceEvent {
    loop {
        if let Some(Message::ChannelPresenceEvent(e)) = c.push().await.message {
            return e;
        }
    }
}

async fn room_chat(backend: Backend, a_fmt: Fmt, b_fmt: Fmt) {
    let server = TestServer::start(backend).await;
    let (a_token, a_id, a_name) = user(&server, &format!("chat-room-ann-{a_fmt:?}")).await;
    let (b_token, b_id, _) = user(&server, &format!("chat-room-ben-{b_fmt:?}")).await;
    let mut ann = WsClient::connect(&server, &a_token, a_fmt).await;
    let mut ben = WsClient::connect(&server, &b_token, b_fmt).await;

    let a_chan = channel(ann.request(join_room("lobby")).await);
    // The reply comes before any presence event about the join.
    assert!(
        !ann.drain_pushes()
            .iter()
            .any(|e| matches!(e.message, Some(Message::ChannelPresenceEvent(_)))),
        "a presence event reached the joiner before its channel reply"
    );
    assert_eq!(a_chan.id, "2...lobby");
    assert_eq!(a_chan.room_name, "lobby");
    assert!(a_chan.presences.is_empty());
    assert_eq!(a_chan.self_.as_ref().unwrap().user_id, a_id);
    assert!(a_chan.self_.as_ref().unwrap().persistence);

    let b_chan = channel(ben.request(join_room("lobby")).await);
    assert_eq!(b_chan.presences.len(), 1);
    assert_eq!(b_chan.presences[0].user_id, a_id);
    // Ann hears of her own join (everyone on the channel hears of a join,
    // the joiner too, after its reply), then of Ben's.
    let own = next_presence(&mut ann).await;
    assert_eq!(own.joins[0].user_id, a_id);
    let ev = next_presence(&mut ann).await;
    assert_eq!(ev.channel_id, "2...lobby");
    assert_eq!(ev.joins[0].user_id, b_id);

    // Send: ack to the sender, the message to everyone (sender included).
    let sent = ack(ann
        .request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: a_chan.id.clone(),
            content: r#"{"text":"hello"}"#.into(),
        }))
        .await);
    assert_eq!(sent.channel_id, "2...lobby");
    assert_eq!(sent.username, a_name);
    assert_eq!(sent.code.unwrap().value, 0);
    assert!(sent.persistent.unwrap().value);
    for c in [&mut ann, &mut ben] {
        let m = next_message(c).await;
        assert_eq!(m.message_id, sent.message_id);
        assert_eq!(m.sender_id, a_id);
        assert_eq!(m.content, r#"{"text":"hello"}"#);
        assert_eq!(m.room_name, "lobby");
    }

    // Only the sender may update or remove.
    let r = ben
        .request(Message::ChannelMessageUpdate(ChannelMessageUpdate {
            channel_id: a_chan.id.clone(),
            message_id: sent.message_id.clone(),
            content: r#"{"text":"hijack"}"#.into(),
        }))
        .await;
    assert_eq!(error_of(&r).code, 3);
    let up = ack(ann
        .request(Message::ChannelMessageUpdate(ChannelMessageUpdate {
            channel_id: a_chan.id.clone(),
            message_id: sent.message_id.clone(),
            content: r#"{"text":"edited"}"#.into(),
        }))
        .await);
    assert_eq!(up.code.unwrap().value, 1);
    let m = next_message(&mut ben).await;
    assert_eq!(
        (m.code.unwrap().value, m.content.as_str()),
        (1, r#"{"text":"edited"}"#)
    );

    // History over REST sees the edit.
    let h = server
        .get_bearer("/v2/channel/2...lobby?limit=10", &b_token)
        .await;
    assert_eq!(h.status, 200, "{}", h.body);
    assert_eq!(h.body["messages"][0]["content"], r#"{"text":"edited"}"#);
    assert_eq!(
        h.body["messages"][0]["message_id"],
        sent.message_id.as_str()
    );

    let rm = ack(ann
        .request(Message::ChannelMessageRemove(ChannelMessageRemove {
            channel_id: a_chan.id.clone(),
            message_id: sent.message_id.clone(),
        }))
        .await);
    assert_eq!(rm.code.unwrap().value, 2);
    let m = next_message(&mut ben).await;
    assert_eq!(m.code.unwrap().value, 2);
    let h = server.get_bearer("/v2/channel/2...lobby", &b_token).await;
    assert!(
        h.body
            .get("messages")
            .is_none_or(|m| m.as_array().unwrap().is_empty()),
        "{}",
        h.body
    );

    // Not persisted: delivered but not in history.
    let mut cara = WsClient::connect(&server, &a_token, a_fmt).await;
    cara.request(Message::ChannelJoin(ChannelJoin {
        target: "lobby".into(),
        r#type: 1,
        persistence: Some(BoolValue { value: false }),
        hidden: Some(BoolValue { value: true }),
    }))
    .await;
    let volatile = ack(cara
        .request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: a_chan.id.clone(),
            content: r#"{"text":"gone"}"#.into(),
        }))
        .await);
    assert!(!volatile.persistent.unwrap().value);
    let m = next_message(&mut ben).await;
    assert_eq!(m.message_id, volatile.message_id);
    let h = server.get_bearer("/v2/channel/2...lobby", &b_token).await;
    assert!(
        h.body
            .get("messages")
            .is_none_or(|m| m.as_array().unwrap().is_empty()),
        "{}",
        h.body
    );

    // Leaving announces the leave; the hidden member was never announced.
    let r = ben
        .request(Message::ChannelLeave(ChannelLeave {
            channel_id: b_chan.id.clone(),
        }))
        .await;
    assert_eq!(r.message, None);
    let ev = next_presence(&mut ann).await;
    assert_eq!(ev.leaves[0].user_id, b_id);
    assert!(ev.joins.is_empty());
}

async fn direct_messages_and_group_refusal(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (a_token, a_id, a_name) = user(&server, "chat-dm-ann-000001").await;
    let (b_token, b_id, _) = user(&server, "chat-dm-ben-000001").await;
    let (c_token, ..) = user(&server, "chat-dm-cat-000001").await;
    let mut ann = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut ben = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;

    let dm = |target: &str| {
        Message::ChannelJoin(ChannelJoin {
            target: target.into(),
            r#type: 2,
            ..Default::default()
        })
    };
    let chan = channel(ann.request(dm(&b_id)).await);
    let (one, two) = if a_id < b_id {
        (&a_id, &b_id)
    } else {
        (&b_id, &a_id)
    };
    assert_eq!(chan.id, format!("4.{one}.{two}."));
    assert_eq!((&chan.user_id_one, &chan.user_id_two), (one, two));

    // Ben was not there: he gets a "wants to chat" notification, stored too.
    let n = loop {
        if let Some(Message::Notifications(n)) = ben.push().await.message {
            break n;
        }
    };
    assert_eq!(n.notifications[0].code, -1);
    assert_eq!(n.notifications[0].sender_id, a_id);
    assert!(n.notifications[0].subject.contains(&a_name));
    let stored = server
        .get_bearer("/v2/notification?limit=10", &b_token)
        .await;
    assert_eq!(
        stored.body["notifications"][0]["code"], -1,
        "{}",
        stored.body
    );

    let b_chan = channel(ben.request(dm(&a_id)).await);
    assert_eq!(b_chan.id, chan.id);
    ann.request(Message::ChannelMessageSend(ChannelMessageSend {
        channel_id: chan.id.clone(),
        content: r#"{"m":1}"#.into(),
    }))
    .await;
    assert_eq!(next_message(&mut ben).await.user_id_one, *one);

    // A third user can neither read the history nor join a group channel.
    let h = server
        .get_bearer(&format!("/v2/channel/{}", chan.id), &c_token)
        .await;
    assert_eq!(h.status, 400, "{}", h.body);
    let h = server
        .get_bearer(&format!("/v2/channel/{}", chan.id), &a_token)
        .await;
    assert_eq!(h.status, 200, "{}", h.body);
    let r = ann
        .request(Message::ChannelJoin(ChannelJoin {
            target: uuid::Uuid::new_v4().to_string(),
            r#type: 3,
            ..Default::default()
        }))
        .await;
    // An unknown group: no membership, so no channel.
    assert!(error_of(&r).message.contains("group"), "{r:?}");
    // Unknown user.
    let r = ann.request(dm(&uuid::Uuid::new_v4().to_string())).await;
    assert_eq!(error_of(&r).code, 3);
}

fn ids(body: &Value) -> Vec<String> {
    body.get("messages")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|m| m["content"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn history_pages_forward_and_backward(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "chat-history-ann01").await;
    let mut ann = WsClient::connect(&server, &token, Fmt::Protobuf).await;
    let chan = channel(ann.request(join_room("history")).await);
    for i in 0..5 {
        ann.request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: chan.id.clone(),
            content: format!(r#"{{"n":{i}}}"#),
        }))
        .await;
    }
    let n = |i: u32| format!(r#"{{"n":{i}}}"#);
    let get = |q: String| {
        let server = &server;
        let token = token.clone();
        async move {
            let r = server
                .get_bearer(&format!("/v2/channel/{}?{q}", chan_id()), &token)
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
            r.body
        }
    };
    fn chan_id() -> &'static str {
        "2...history"
    }
    // Forward: oldest first, two per page.
    let p1 = get("limit=2&forward=true".into()).await;
    assert_eq!(ids(&p1), [n(0), n(1)]);
    assert!(p1.get("prev_cursor").is_none());
    let c = p1["next_cursor"].as_str().unwrap().to_owned();
    let p2 = get(format!("limit=2&forward=true&cursor={c}")).await;
    assert_eq!(ids(&p2), [n(2), n(3)]);
    let back = p2["prev_cursor"].as_str().unwrap().to_owned();
    let p3 = get(format!(
        "limit=2&forward=true&cursor={}",
        p2["next_cursor"].as_str().unwrap()
    ))
    .await;
    assert_eq!(ids(&p3), [n(4)]);
    assert!(p3.get("next_cursor").is_none(), "{p3}");
    // Back from page 2 to page 1.
    let p1b = get(format!("limit=2&forward=true&cursor={back}")).await;
    assert_eq!(ids(&p1b), [n(0), n(1)]);
    // Backward: newest first.
    let b1 = get("limit=3&forward=false".into()).await;
    assert_eq!(ids(&b1), [n(4), n(3), n(2)]);
    let b2 = get(format!(
        "limit=3&forward=false&cursor={}",
        b1["next_cursor"].as_str().unwrap()
    ))
    .await;
    assert_eq!(ids(&b2), [n(1), n(0)]);
    // A cursor of the other direction, or garbage, is refused.
    let r = server
        .get_bearer(
            &format!("/v2/channel/2...history?forward=false&cursor={c}"),
            &token,
        )
        .await;
    assert_eq!(r.status, 400);
    let r = server
        .get_bearer("/v2/channel/2...history?cursor=@@", &token)
        .await;
    assert_eq!(r.status, 400);
    let r = server.get_bearer("/v2/channel/9.x.y.z", &token).await;
    assert_eq!(r.status, 400);
    let r = server
        .get_bearer("/v2/channel/2...history?limit=101", &token)
        .await;
    assert_eq!(r.status, 400);
}

/// Regression: `cacheable_cursor` was always empty, so a client caching
/// history could never ask for only the newer messages. Nakama fills it from
/// the page's last message whenever the page holds one.
async fn history_fills_cacheable_cursor(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "chat-cacheable-ann1").await;
    let mut ann = WsClient::connect(&server, &token, Fmt::Json).await;
    let chan = channel(ann.request(join_room("cacheable")).await);
    let send = |i: u32| {
        Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: chan.id.clone(),
            content: format!(r#"{{"n":{i}}}"#),
        })
    };
    let get = |q: String| {
        let server = &server;
        let token = token.clone();
        async move {
            let r = server
                .get_bearer(&format!("/v2/channel/2...cacheable?{q}"), &token)
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
            r.body
        }
    };
    let empty = get("limit=10".into()).await;
    assert!(empty.get("cacheable_cursor").is_none(), "{empty}");
    for i in 0..2 {
        ann.request(send(i)).await;
    }
    // The cacheable cursor continues forward after the page's last message.
    let page = get("limit=10&forward=true".into()).await;
    assert_eq!(ids(&page), [r#"{"n":0}"#, r#"{"n":1}"#]);
    let cacheable = page["cacheable_cursor"].as_str().unwrap().to_owned();
    let newer = get(format!("limit=10&forward=true&cursor={cacheable}")).await;
    assert!(
        newer.get("messages").is_none(),
        "nothing newer yet: {newer}"
    );
    assert_eq!(
        newer["cacheable_cursor"], cacheable,
        "an empty forward page keeps the cursor it was given"
    );
    ann.request(send(2)).await;
    let newer = get(format!("limit=10&forward=true&cursor={cacheable}")).await;
    assert_eq!(ids(&newer), [r#"{"n":2}"#]);
    assert!(
        newer["cacheable_cursor"]
            .as_str()
            .is_some_and(|c| c != cacheable)
    );
    // A backward page's cacheable cursor pages forward too.
    let back = get("limit=1&forward=false".into()).await;
    assert_eq!(ids(&back), [r#"{"n":2}"#]);
    let c = back["cacheable_cursor"].as_str().unwrap();
    let after = get(format!("limit=10&forward=true&cursor={c}")).await;
    assert!(after.get("messages").is_none(), "{after}");
}

async fn channel_validation_errors_keep_the_socket(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "chat-validate-ann1").await;
    for fmt in crate::client::BOTH {
        let mut c = WsClient::connect(&server, &token, fmt).await;
        let chan = channel(c.request(join_room("v")).await);
        for (message, needle) in [
            (join_room(&"x".repeat(65)), "room name"),
            (
                Message::ChannelMessageSend(ChannelMessageSend {
                    channel_id: chan.id.clone(),
                    content: "not json".into(),
                }),
                "json object",
            ),
            (
                Message::ChannelMessageSend(ChannelMessageSend {
                    channel_id: "2...other".into(),
                    content: "{}".into(),
                }),
                "must join",
            ),
            (
                Message::ChannelMessageSend(ChannelMessageSend {
                    channel_id: "bogus".into(),
                    content: "{}".into(),
                }),
                "channel id",
            ),
            (
                Message::ChannelMessageRemove(ChannelMessageRemove {
                    channel_id: chan.id.clone(),
                    message_id: "x".into(),
                }),
                "message id",
            ),
            (
                Message::ChannelMessageRemove(ChannelMessageRemove {
                    channel_id: chan.id.clone(),
                    message_id: uuid::Uuid::new_v4().to_string(),
                }),
                "could not find",
            ),
            (
                Message::ChannelJoin(ChannelJoin {
                    target: "t".into(),
                    r#type: 9,
                    ..Default::default()
                }),
                "channel type",
            ),
        ] {
            let r = c.request(message).await;
            let e = error_of(&r);
            assert_eq!(e.code, 3, "{}", e.message);
            assert!(
                e.message.contains(needle),
                "{} does not say {needle}",
                e.message
            );
        }
        assert!(matches!(
            c.request(Message::Ping(Ping {})).await.message,
            Some(Message::Pong(_))
        ));
    }
}
