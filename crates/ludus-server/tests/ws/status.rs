//! Status over real sockets: follow by id and username, status updates
//! pushed to followers, appear offline, the `status=true` flag, unfollow and
//! the leave when a socket closes. Alice and Bob use different formats, so
//! every event crosses formats.

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::*;

use crate::both_backends;
use crate::client::{Fmt, WsClient, user};
use crate::support::{Backend, TestServer};

both_backends!(
    status_flow_json_follower,
    status_flow_protobuf_follower,
    users_and_accounts_show_online,
);

/// `online` on users and accounts comes from the status registry: a user
/// with a socket on their status stream (`status=true`) is online.
async fn users_and_accounts_show_online(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (a_token, a_id, _) = user(&server, "status-online-0001").await;
    let (b_token, b_id, _) = user(&server, "status-online-0002").await;
    let online = |body: &serde_json::Value, id: &str| {
        body["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["id"] == id)
            .map(|u| u["online"] == true)
            .unwrap()
    };
    let path = format!("/v2/user?ids={a_id}&ids={b_id}");
    let before = server.get_bearer(&path, &b_token).await;
    assert!(!online(&before.body, &a_id), "{}", before.body);
    let mut a = WsClient::connect_status(&server, &a_token, Fmt::Json).await;
    let _quiet = WsClient::connect(&server, &b_token, Fmt::Json).await;
    let after = server.get_bearer(&path, &b_token).await;
    assert!(online(&after.body, &a_id), "{}", after.body);
    assert!(
        !online(&after.body, &b_id),
        "no status=true, not online: {}",
        after.body
    );
    let account = server.get_bearer("/v2/account", &a_token).await;
    assert_eq!(account.body["user"]["online"], true, "{}", account.body);
    a.request(Message::StatusUpdate(StatusUpdate { status: None }))
        .await;
    let gone = server.get_bearer(&path, &b_token).await;
    assert!(
        !online(&gone.body, &a_id),
        "appearing offline: {}",
        gone.body
    );
}

async fn status_flow_json_follower(backend: Backend) {
    status_flow(backend, Fmt::Protobuf, Fmt::Json).await
}

async fn status_flow_protobuf_follower(backend: Backend) {
    status_flow(backend, Fmt::Json, Fmt::Protobuf).await
}

fn status_event(env: &Envelope) -> &StatusPresenceEvent {
    match &env.message {
        Some(Message::StatusPresenceEvent(e)) => e,
        other => panic!("expected a status presence event, got {other:?}"),
    }
}

fn status_text(p: &UserPresence) -> &str {
    p.status
        .as_ref()
        .map(|s| s.value.as_str())
        .unwrap_or("<none>")
}

async fn status_flow(backend: Backend, alice_fmt: Fmt, bob_fmt: Fmt) {
    let server = TestServer::start(backend).await;
    let (alice_token, alice_id, alice_name) =
        user(&server, &format!("status-alice-{alice_fmt:?}")).await;
    let (bob_token, ..) = user(&server, &format!("status-bob-{bob_fmt:?}")).await;

    // Alice connects with status=true: online with an empty status.
    let mut alice = WsClient::connect_status(&server, &alice_token, alice_fmt).await;
    let mut bob = WsClient::connect(&server, &bob_token, bob_fmt).await;

    // Bob follows Alice by username and sees her presence.
    let reply = bob
        .request(Message::StatusFollow(StatusFollow {
            user_ids: vec![],
            usernames: vec![alice_name.clone()],
        }))
        .await;
    let Some(Message::Status(status)) = reply.message else {
        panic!("{reply:?}")
    };
    assert_eq!(status.presences.len(), 1);
    assert_eq!(status.presences[0].user_id, alice_id);
    assert_eq!(status.presences[0].username, alice_name);
    assert_eq!(status_text(&status.presences[0]), "");

    // Alice sets a status: Bob gets leave(old) + join(new).
    let ack = alice
        .request(Message::StatusUpdate(StatusUpdate {
            status: Some("playing".to_string().into()),
        }))
        .await;
    assert_eq!(ack.message, None);
    let ev = bob.push().await;
    let ev = status_event(&ev);
    assert_eq!(status_text(&ev.joins[0]), "playing");
    assert_eq!(status_text(&ev.leaves[0]), "");

    // Following by id too, and unknown users are skipped without error.
    let reply = bob
        .request(Message::StatusFollow(StatusFollow {
            user_ids: vec![alice_id.clone(), uuid::Uuid::new_v4().to_string()],
            usernames: vec![],
        }))
        .await;
    let Some(Message::Status(status)) = reply.message else {
        panic!("{reply:?}")
    };
    assert_eq!(status.presences.len(), 1);
    assert_eq!(status_text(&status.presences[0]), "playing");

    // Appear offline: no status at all. Bob sees a leave.
    alice
        .request(Message::StatusUpdate(StatusUpdate { status: None }))
        .await;
    let ev = bob.push().await;
    let ev = status_event(&ev);
    assert!(ev.joins.is_empty());
    assert_eq!(ev.leaves[0].user_id, alice_id);

    // Back online, then the socket closes: Bob sees the join, then the leave.
    alice
        .request(Message::StatusUpdate(StatusUpdate {
            status: Some("back".to_string().into()),
        }))
        .await;
    let ev = bob.push().await;
    assert_eq!(status_text(&status_event(&ev).joins[0]), "back");
    drop(alice);
    let ev = bob.push().await;
    assert_eq!(status_text(&status_event(&ev).leaves[0]), "back");

    // After unfollowing, Bob hears nothing more of Alice.
    let ack = bob
        .request(Message::StatusUnfollow(StatusUnfollow {
            user_ids: vec![alice_id.clone()],
        }))
        .await;
    assert_eq!(ack.message, None);
    let mut alice = WsClient::connect_status(&server, &alice_token, alice_fmt).await;
    alice
        .request(Message::StatusUpdate(StatusUpdate {
            status: Some("again".to_string().into()),
        }))
        .await;
    let reply = bob.request(Message::Ping(Ping {})).await;
    assert!(matches!(reply.message, Some(Message::Pong(_))));
    // The ping's reply came back with no event queued before it.
    let pending = bob.drain_pushes();
    assert!(pending.is_empty(), "{pending:?}");
}
