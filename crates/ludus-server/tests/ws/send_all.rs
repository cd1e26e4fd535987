//! `nk.notification_send_all` and `nk.notifications_update` from
//! `tests/lua/inbox_test.lua`: a notification for everyone reaches every
//! open socket, and when persistent a stored copy reaches every user,
//! online or not; an update changes what REST lists.

use std::time::{Duration, Instant};

use ludus_proto::realtime::envelope::Message;
use serde_json::{Value, json};

use crate::both_backends;
use crate::client::{Fmt, WsClient, user};
use crate::support::{Backend, TestServer};

both_backends!(
    notification_send_all_reaches_every_socket_and_user,
    notifications_update_changes_stored_notifications
);

fn lua_config(config: &mut ludus_server::Config) {
    config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua").into();
    config.runtime.lua_pool_size = 2;
}

/// The next `notifications` push of `c` (other pushes are skipped).
async fn next_notification(c: &mut WsClient) -> ludus_proto::api::Notification {
    loop {
        if let Some(Message::Notifications(n)) = c.push().await.message {
            assert_eq!(n.notifications.len(), 1, "{n:?}");
            return n.notifications.into_iter().next().unwrap();
        }
    }
}

async fn stored(server: &TestServer, token: &str, subject: &str) -> Vec<Value> {
    let r = server.get_bearer("/v2/notification?limit=100", token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["notifications"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n["subject"] == subject)
        .collect()
}

async fn notification_send_all_reaches_every_socket_and_user(backend: Backend) {
    let server = TestServer::start_with(backend, lua_config).await;
    let (ann, _, _) = user(&server, "annsendall-000001").await;
    let (bob, _, _) = user(&server, "bobsendall-000001").await;
    // Offline throughout: only a stored copy can reach her.
    let (cat, _, _) = user(&server, "catsendall-000001").await;
    let mut a = WsClient::connect(&server, &ann, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &bob, Fmt::Protobuf).await;

    let out = a
        .rpc(
            "lua_notification_send_all",
            &json!({"subject": "live only", "persistent": false}).to_string(),
        )
        .await
        .unwrap();
    let out: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out["sent"], "no error", "{out}");
    assert!(
        out["no_subject"]
            .as_str()
            .unwrap()
            .contains("expects subject to be a non-empty string"),
        "{out}"
    );
    assert!(
        out["bad_code"].as_str().unwrap().contains("expects code"),
        "{out}"
    );
    for c in [&mut a, &mut b] {
        let n = next_notification(c).await;
        assert_eq!(
            (n.subject.as_str(), n.code, n.persistent),
            ("live only", 11, false)
        );
        assert_eq!(n.content, r#"{"all":true}"#);
        // From the system: no sender, as every system push.
        assert_eq!(n.sender_id, "");
    }
    for token in [&ann, &bob, &cat] {
        assert!(stored(&server, token, "live only").await.is_empty());
    }

    a.rpc(
        "lua_notification_send_all",
        &json!({"subject": "for all", "persistent": true}).to_string(),
    )
    .await
    .unwrap();
    let mut ids = Vec::new();
    for c in [&mut a, &mut b] {
        let n = next_notification(c).await;
        assert_eq!((n.subject.as_str(), n.persistent), ("for all", true));
        ids.push(n.id);
    }
    assert_ne!(
        ids[0], ids[1],
        "each user's copy is a notification of its own"
    );
    // The copies are made in the background after the call returns.
    let deadline = Instant::now() + Duration::from_secs(10);
    for token in [&ann, &bob, &cat] {
        loop {
            let got = stored(&server, token, "for all").await;
            if got.len() == 1 {
                assert_eq!(got[0]["code"], 11);
                break;
            }
            assert!(got.is_empty(), "{got:?}");
            assert!(Instant::now() < deadline, "no stored copy arrived");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn notifications_update_changes_stored_notifications(backend: Backend) {
    let server = TestServer::start_with(backend, lua_config).await;
    let (me, me_id, _) = user(&server, "menoteupdate-0001").await;
    let (bob, bob_id, _) = user(&server, "bobnoteupdate-001").await;
    let r = server
        .post_bearer(
            "/v2/rpc/lua_notifications_update",
            &me,
            Value::String(json!({"bob": bob_id}).to_string()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(out["subject"], "after", "{out}");
    assert_eq!(out["v"], 2);
    assert_eq!(out["sender"], me_id.as_str());
    assert_eq!(out["code"], 9, "the code is not changed");
    assert_eq!(out["user"], bob_id.as_str());
    assert_eq!(out["again_subject"], "again");
    assert_eq!(out["again_v"], 2, "content not given stays");
    assert_eq!(out["again_sender"], me_id.as_str());
    assert_eq!(out["empty"], "no error");
    let text = |k: &str| out[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("bad_id").contains("expects id to be a valid ID"),
        "{out}"
    );
    assert!(
        text("bad_subject").contains("expects subject to be a non-empty string"),
        "{out}"
    );
    assert!(
        text("bad_content").contains("expects content to be table"),
        "{out}"
    );
    assert!(
        text("bad_sender").contains("expects sender to be a valid user ID"),
        "{out}"
    );
    assert!(
        text("bad_entry").contains("expects a valid set of data"),
        "{out}"
    );
    assert!(text("nul_subject").contains("NUL"), "{out}");
    let listed = stored(&server, &bob, "again").await;
    assert_eq!(listed.len(), 1, "REST lists the change");
    assert_eq!(listed[0]["content"], r#"{"v":2}"#);
    assert_eq!(listed[0]["sender_id"], me_id.as_str());
}
