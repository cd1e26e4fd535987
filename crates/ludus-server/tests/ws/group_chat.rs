//! Group chat over real sockets: only members join a group's channel,
//! messages and history work as in rooms, membership changes are announced
//! in the channel with Nakama's codes, and a kicked member is cut off at
//! once (untracked, cannot send, cannot read the history).

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::*;
use serde_json::json;

use crate::both_backends;
use crate::client::{Fmt, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

both_backends!(members_chat_and_a_kick_cuts_off);

fn join_group(id: &str) -> Message {
    Message::ChannelJoin(ChannelJoin {
        target: id.into(),
        r#type: 3,
        ..Default::default()
    })
}

fn send(channel: &str, text: &str) -> Message {
    Message::ChannelMessageSend(ChannelMessageSend {
        channel_id: channel.into(),
        content: json!({ "text": text }).to_string(),
    })
}

/// The next channel message push, skipping other pushes.
async fn next_message(c: &mut WsClient) -> ludus_proto::api::ChannelMessage {
    loop {
        if let Some(Message::ChannelMessage(m)) = c.push().await.message {
            return m;
        }
    }
}

/// The next presence event naming `user`, skipping others (a joiner also
/// hears of their own join).
async fn next_presence(c: &mut WsClient, user: &str) -> ChannelPresenceEvent {
    loop {
        if let Some(Message::ChannelPresenceEvent(e)) = c.push().await.message
            && e.joins.iter().chain(&e.leaves).any(|p| p.user_id == user)
        {
            return e;
        }
    }
}

async fn members_chat_and_a_kick_cuts_off(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (a_token, _a_id, _) = user(&server, "group-chat-ann").await;
    let (b_token, b_id, b_name) = user(&server, "group-chat-bob").await;
    let (c_token, _, _) = user(&server, "group-chat-cat").await;
    let r = server
        .post_bearer(
            "/v2/group",
            &a_token,
            json!({"name": "Chatters", "open": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let group = r.body["id"].as_str().unwrap().to_owned();

    let mut ann = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut bob = WsClient::connect(&server, &b_token, Fmt::Protobuf).await;
    let mut cat = WsClient::connect(&server, &c_token, Fmt::Json).await;

    // Not a member yet: refused, the socket stays.
    let r = bob.request(join_group(&group)).await;
    assert!(error_of(&r).message.contains("not a member"), "{r:?}");
    let r = server
        .post_bearer(&format!("/v2/group/{group}/join"), &b_token, json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    let chan = match ann.request(join_group(&group)).await.message {
        Some(Message::Channel(c)) => c,
        other => panic!("expected a channel, got {other:?}"),
    };
    assert_eq!(chan.id, format!("3.{group}.."));
    assert_eq!(chan.group_id, group);
    match bob.request(join_group(&group)).await.message {
        Some(Message::Channel(_)) => {}
        other => panic!("expected a channel, got {other:?}"),
    }
    let joined = next_presence(&mut ann, &b_id).await;
    assert_eq!(joined.joins[0].user_id, b_id);
    let r = cat.request(join_group(&group)).await;
    assert_eq!(error_of(&r).code, 3, "{r:?}");

    // Messages go to members, with the group id, and into the history.
    match bob.request(send(&chan.id, "hi guild")).await.message {
        Some(Message::ChannelMessageAck(a)) => assert_eq!(a.group_id, group),
        other => panic!("expected an ack, got {other:?}"),
    }
    let m = next_message(&mut ann).await;
    assert_eq!(
        (m.sender_id.as_str(), m.group_id.as_str()),
        (b_id.as_str(), group.as_str())
    );
    let h = server
        .get_bearer(&format!("/v2/channel/{}?limit=10", chan.id), &a_token)
        .await;
    assert_eq!(h.status, 200, "{}", h.body);
    let history = h.body["messages"].as_array().unwrap();
    // Bob's join announcement (code 3), then his message.
    assert_eq!(history.len(), 2, "{}", h.body);
    assert_eq!(history[0]["code"], 3);
    assert_eq!(history[0]["username"], b_name.as_str());
    assert_eq!(history[1]["code"], 0);
    let h = server
        .get_bearer(&format!("/v2/channel/{}", chan.id), &c_token)
        .await;
    assert_eq!(h.status, 404, "{}", h.body);

    // Kicked: announced with code 6, untracked at once, no more access.
    let r = server
        .post_bearer(
            &format!("/v2/group/{group}/kick?user_ids={b_id}"),
            &a_token,
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let m = next_message(&mut ann).await;
    assert_eq!(
        (m.code.map(|c| c.value), m.sender_id.as_str()),
        (Some(6), b_id.as_str())
    );
    let left = next_presence(&mut ann, &b_id).await;
    assert_eq!(left.leaves[0].user_id, b_id);
    let r = bob.request(send(&chan.id, "still here?")).await;
    assert!(error_of(&r).message.contains("must join"), "{r:?}");
    let r = bob.request(join_group(&group)).await;
    assert_eq!(error_of(&r).code, 3, "{r:?}");
    let h = server
        .get_bearer(&format!("/v2/channel/{}", chan.id), &b_token)
        .await;
    assert_eq!(h.status, 404, "{}", h.body);
}
