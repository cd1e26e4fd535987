//! Notifications: pushed to online users, stored, listed with a cursor and
//! deleted by id over REST. Direct-message requests are the notifications
//! Ludus sends by itself so far.

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::*;
use serde_json::Value;

use crate::both_backends;
use crate::client::{Fmt, WsClient, user};
use crate::support::{Backend, TestServer};

both_backends!(stored_notifications_page_and_delete);

fn notes(body: &Value) -> Vec<Value> {
    body.get("notifications")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

async fn stored_notifications_page_and_delete(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (b_token, b_id, _) = user(&server, "notify-ben-0000001").await;
    // Three users ask Ben to chat while he is offline.
    let mut senders = Vec::new();
    for i in 0..3 {
        let (token, id, _) = user(&server, &format!("notify-sender-{i:04}")).await;
        let mut c = WsClient::connect(
            &server,
            &token,
            if i % 2 == 0 { Fmt::Json } else { Fmt::Protobuf },
        )
        .await;
        c.request(Message::ChannelJoin(ChannelJoin {
            target: b_id.clone(),
            r#type: 2,
            ..Default::default()
        }))
        .await;
        senders.push(id);
    }
    let p1 = server
        .get_bearer("/v2/notification?limit=2", &b_token)
        .await;
    assert_eq!(p1.status, 200, "{}", p1.body);
    let first = notes(&p1.body);
    assert_eq!(first.len(), 2);
    assert_eq!(first[0]["sender_id"], senders[0].as_str());
    assert_eq!(first[0]["code"], -1);
    assert_eq!(first[0]["persistent"], true);
    let content: Value = serde_json::from_str(first[0]["content"].as_str().unwrap()).unwrap();
    assert!(content["username"].is_string());
    let cursor = p1.body["cacheable_cursor"].as_str().unwrap().to_owned();
    let p2 = server
        .get_bearer(
            &format!("/v2/notification?limit=2&cacheable_cursor={cursor}"),
            &b_token,
        )
        .await;
    let second = notes(&p2.body);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0]["sender_id"], senders[2].as_str());

    // Delete two by id; a stranger's token deletes nothing of Ben's.
    let (other_token, ..) = user(&server, "notify-stranger-01").await;
    let ids = format!(
        "ids={}&ids={}",
        first[0]["id"].as_str().unwrap(),
        second[0]["id"].as_str().unwrap()
    );
    let r = server
        .delete_bearer(&format!("/v2/notification?{ids}"), &other_token)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        notes(
            &server
                .get_bearer("/v2/notification?limit=100", &b_token)
                .await
                .body
        )
        .len(),
        3
    );
    // Regression: no limit listed 100; Nakama's default is one.
    assert_eq!(
        notes(&server.get_bearer("/v2/notification", &b_token).await.body).len(),
        1
    );
    let r = server
        .delete_bearer(&format!("/v2/notification?{ids}"), &b_token)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let left = notes(
        &server
            .get_bearer("/v2/notification?limit=100", &b_token)
            .await
            .body,
    );
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["id"], first[1]["id"]);

    // Bad input.
    let r = server
        .delete_bearer("/v2/notification?ids=nope", &b_token)
        .await;
    assert_eq!(r.status, 400);
    let r = server
        .get_bearer("/v2/notification?cacheable_cursor=%40%40", &b_token)
        .await;
    assert_eq!(r.status, 400);
    let r = server
        .get_bearer("/v2/notification?limit=0", &b_token)
        .await;
    assert_eq!(r.status, 400);
    let r = server.get_bearer("/v2/notification", "bad-token").await;
    assert_eq!(r.status, 401);
}
