//! Friends and presence over real sockets, as Nakama's clients use them:
//! list friends over REST, follow their ids on the socket, see them come
//! online, and see `online` in the friend and group user listings; a friend
//! invite reaches an online friend as a live notification. A block ends the
//! direct conversation and refuses a new one.

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::*;
use serde_json::json;

use crate::both_backends;
use crate::client::{Fmt, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

both_backends!(
    follow_friends_and_see_them_online,
    a_block_ends_and_refuses_direct_chat
);

async fn follow_friends_and_see_them_online(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (a_token, a_id, _) = user(&server, "friends-ws-ann").await;
    let (b_token, b_id, _) = user(&server, "friends-ws-bob").await;
    let mut ann = WsClient::connect_status(&server, &a_token, Fmt::Json).await;

    // Bob invites Ann: she is online, so the notification arrives live.
    let r = server
        .post_bearer(&format!("/v2/friend?ids={a_id}"), &b_token, json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // (Her own status presence comes first: skip other pushes.)
    let n = loop {
        if let Some(Message::Notifications(n)) = ann.push().await.message {
            break n;
        }
    };
    assert_eq!(n.notifications[0].code, -2);
    assert_eq!(n.notifications[0].sender_id, b_id);
    let r = server
        .post_bearer(&format!("/v2/friend?ids={b_id}"), &a_token, json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Bob lists his friends: Ann is online (she connected with status).
    let r = server.get_bearer("/v2/friend", &b_token).await;
    assert_eq!(r.body["friends"][0]["user"]["id"], a_id.as_str());
    assert_eq!(r.body["friends"][0]["user"]["online"], true);
    // Ann sees Bob offline, follows the ids her friend list gave her, and
    // hears him come online.
    let r = server.get_bearer("/v2/friend", &a_token).await;
    assert!(r.body["friends"][0]["user"]["online"].is_null());
    let ids: Vec<String> = r.body["friends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["user"]["id"].as_str().unwrap().to_owned())
        .collect();
    let reply = ann
        .request(Message::StatusFollow(StatusFollow {
            user_ids: ids,
            usernames: vec![],
        }))
        .await;
    let Some(Message::Status(status)) = reply.message else {
        panic!("{reply:?}")
    };
    assert!(status.presences.is_empty());
    let _bob = WsClient::connect_status(&server, &b_token, Fmt::Protobuf).await;
    loop {
        if let Some(Message::StatusPresenceEvent(e)) = ann.push().await.message {
            assert_eq!(e.joins[0].user_id, b_id);
            break;
        }
    }
    let r = server.get_bearer("/v2/friend", &a_token).await;
    assert_eq!(r.body["friends"][0]["user"]["online"], true);

    // Group user listings carry `online` too.
    let r = server
        .post_bearer(
            "/v2/group",
            &a_token,
            json!({"name": "Onliners", "open": true}),
        )
        .await;
    let group = r.body["id"].as_str().unwrap().to_owned();
    server
        .post_bearer(&format!("/v2/group/{group}/join"), &b_token, json!({}))
        .await;
    let r = server
        .get_bearer(&format!("/v2/group/{group}/user"), &a_token)
        .await;
    let users = r.body["group_users"].as_array().unwrap();
    assert_eq!(users.len(), 2);
    assert!(
        users.iter().all(|u| u["user"]["online"] == true),
        "{}",
        r.body
    );
}

fn dm(user: &str) -> Message {
    Message::ChannelJoin(ChannelJoin {
        target: user.into(),
        r#type: 2,
        ..Default::default()
    })
}

async fn a_block_ends_and_refuses_direct_chat(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (a_token, a_id, _) = user(&server, "block-dm-ann").await;
    let (b_token, b_id, _) = user(&server, "block-dm-bob").await;
    let mut ann = WsClient::connect(&server, &a_token, Fmt::Json).await;
    let mut bob = WsClient::connect(&server, &b_token, Fmt::Json).await;
    let chan = match ann.request(dm(&b_id)).await.message {
        Some(Message::Channel(c)) => c,
        other => panic!("expected a channel, got {other:?}"),
    };
    match bob.request(dm(&a_id)).await.message {
        Some(Message::Channel(_)) => {}
        other => panic!("expected a channel, got {other:?}"),
    }
    let r = server
        .post_bearer(&format!("/v2/friend/block?ids={a_id}"), &b_token, json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Both left the conversation; Ann cannot send there nor start it again.
    let r = ann
        .request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: chan.id.clone(),
            content: r#"{"text":"hello?"}"#.into(),
        }))
        .await;
    assert!(error_of(&r).message.contains("must join"), "{r:?}");
    let r = ann.request(dm(&b_id)).await;
    assert!(error_of(&r).message.contains("user not found"), "{r:?}");
    // Bob, who blocked, may still open it (Nakama checks the other side only).
    match bob.request(dm(&a_id)).await.message {
        Some(Message::Channel(_)) => {}
        other => panic!("expected a channel, got {other:?}"),
    }
}
