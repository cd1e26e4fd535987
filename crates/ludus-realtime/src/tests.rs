//! Unit tests of the realtime layer as a whole: sessions, status and the
//! pipeline, without a transport.

use std::sync::Arc;

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{Envelope, Ping, StatusFollow, StatusUpdate};
use uuid::Uuid;

use super::*;

/// A realtime layer on a fresh SQLite store.
struct Harness {
    rt: Realtime,
    store: Arc<dyn ludus_core::Store>,
    _dir: tempfile::TempDir,
}

async fn realtime(single_socket: bool) -> Harness {
    let (store, dir) = crate::test_support::store().await;
    let rt = Realtime::new(
        RealtimeConfig {
            outgoing_queue_size: 16,
            single_socket,
            ..Default::default()
        },
        store.clone(),
    );
    Harness {
        rt,
        store,
        _dir: dir,
    }
}

impl Harness {
    /// A registered user.
    async fn user(&self) -> Uuid {
        let id = Uuid::new_v4();
        self.store
            .create_user(ludus_core::model::NewUser {
                id,
                username: format!("user-{}", &id.to_string()[..8]),
                identity: ludus_core::model::Identity::Device(format!("device-{id}")),
                password_hash: None,
                create_time: 1,
            })
            .await
            .unwrap();
        id
    }
}

fn connect(rt: &Realtime, user: Uuid, status: bool) -> SessionHandle {
    let name = format!("user-{}", &user.to_string()[..8]);
    crate::test_support::session(rt, user, &name, status)
}

use crate::test_support::sent as drain;

fn env(cid: &str, m: Message) -> Envelope {
    Envelope {
        cid: cid.into(),
        message: Some(m),
    }
}

#[tokio::test]
async fn ping_gets_pong_with_cid() {
    let h = realtime(false).await;
    let rt = &h.rt;
    let s = connect(rt, Uuid::new_v4(), false);
    assert_eq!(
        rt.handle(&crate::NoModules, &s, env("9", Message::Ping(Ping {})))
            .await,
        Flow::Continue
    );
    let got = drain(&s);
    assert_eq!(got, vec![env("9", Message::Pong(Default::default()))]);
}

#[tokio::test]
async fn empty_envelope_is_answered_and_closes() {
    let h = realtime(false).await;
    let rt = &h.rt;
    let s = connect(rt, Uuid::new_v4(), false);
    assert_eq!(
        rt.handle(
            &crate::NoModules,
            &s,
            Envelope {
                cid: "1".into(),
                message: None
            }
        )
        .await,
        Flow::Close
    );
    let got = drain(&s);
    assert!(
        matches!(&got[0].message, Some(Message::Error(e)) if e.code == RtCode::MissingPayload as i32)
    );
}

#[tokio::test]
async fn server_only_message_closes() {
    let h = realtime(false).await;
    let rt = &h.rt;
    let s = connect(rt, Uuid::new_v4(), false);
    let flow = rt
        .handle(
            &crate::NoModules,
            &s,
            env("1", Message::Status(Default::default())),
        )
        .await;
    assert_eq!(flow, Flow::Close);
}

#[tokio::test]
async fn party_matchmaking_is_for_the_leader_and_ends_when_members_change() {
    use ludus_proto::realtime::{
        PartyCreate, PartyJoin, PartyLeave, PartyMatchmakerAdd, PartyMatchmakerRemove,
    };
    let h = realtime(false).await;
    let rt = &h.rt;
    let (leader, member) = (
        connect(rt, Uuid::new_v4(), false),
        connect(rt, Uuid::new_v4(), false),
    );
    rt.handle(
        &crate::NoModules,
        &leader,
        env(
            "1",
            Message::PartyCreate(PartyCreate {
                open: true,
                max_size: 4,
                ..Default::default()
            }),
        ),
    )
    .await;
    let party_id = drain(&leader)
        .into_iter()
        .find_map(|e| match e.message {
            Some(Message::Party(p)) => Some(p.party_id),
            _ => None,
        })
        .expect("a party");
    rt.handle(
        &crate::NoModules,
        &member,
        env(
            "2",
            Message::PartyJoin(PartyJoin {
                party_id: party_id.clone(),
            }),
        ),
    )
    .await;
    drain(&member);
    let add = |id: &str| {
        Message::PartyMatchmakerAdd(PartyMatchmakerAdd {
            party_id: id.into(),
            min_count: 2,
            max_count: 4,
            query: "*".into(),
            ..Default::default()
        })
    };
    // Only the leader may add; a bad party id is an error; the socket stays open.
    assert_eq!(
        rt.handle(&crate::NoModules, &member, env("3", add(&party_id)))
            .await,
        Flow::Continue
    );
    assert!(drain(&member).iter().any(|e| matches!(&e.message,
        Some(Message::Error(e)) if e.message.contains("leader"))));
    drain(&leader);
    rt.handle(&crate::NoModules, &leader, env("4", add("nope")))
        .await;
    assert!(
        drain(&leader)
            .iter()
            .any(|e| matches!(&e.message, Some(Message::Error(_))))
    );
    rt.handle(&crate::NoModules, &leader, env("5", add(&party_id)))
        .await;
    let ticket = drain(&leader)
        .into_iter()
        .find_map(|e| match e.message {
            Some(Message::PartyMatchmakerTicket(t)) => Some(t),
            _ => None,
        })
        .expect("a party ticket");
    assert_eq!(ticket.party_id, party_id);
    assert_eq!(rt.matchmaker.core().ticket_count(), 1);
    // Removed by the leader…
    rt.handle(
        &crate::NoModules,
        &leader,
        env(
            "6",
            Message::PartyMatchmakerRemove(PartyMatchmakerRemove {
                party_id: party_id.clone(),
                ticket: ticket.ticket.clone(),
            }),
        ),
    )
    .await;
    assert_eq!(rt.matchmaker.core().ticket_count(), 0);
    // …or dropped when the members change.
    rt.handle(&crate::NoModules, &leader, env("7", add(&party_id)))
        .await;
    assert_eq!(rt.matchmaker.core().ticket_count(), 1);
    rt.handle(
        &crate::NoModules,
        &member,
        env(
            "8",
            Message::PartyLeave(PartyLeave {
                party_id: party_id.clone(),
            }),
        ),
    )
    .await;
    assert_eq!(rt.matchmaker.core().ticket_count(), 0);
}

#[tokio::test]
async fn followers_see_status_changes_and_appear_offline() {
    let h = realtime(false).await;
    let rt = &h.rt;
    let (alice, bob) = (h.user().await, h.user().await);
    let a = connect(rt, alice, true);
    let b = connect(rt, bob, false);
    let flow = rt
        .handle(
            &crate::NoModules,
            &b,
            env(
                "1",
                Message::StatusFollow(StatusFollow {
                    user_ids: vec![alice.to_string()],
                    usernames: vec![],
                }),
            ),
        )
        .await;
    assert_eq!(flow, Flow::Continue);
    let got = drain(&b);
    let Some(Message::Status(status)) = &got[0].message else {
        panic!("{got:?}")
    };
    assert_eq!(status.presences.len(), 1);
    assert_eq!(status.presences[0].user_id, alice.to_string());

    rt.handle(
        &crate::NoModules,
        &a,
        env(
            "2",
            Message::StatusUpdate(StatusUpdate {
                status: Some("busy".to_string().into()),
            }),
        ),
    )
    .await;
    let got = drain(&b);
    let Some(Message::StatusPresenceEvent(ev)) = &got[0].message else {
        panic!("{got:?}")
    };
    assert_eq!(
        ev.joins[0].status.as_ref().map(|s| s.value.as_str()),
        Some("busy")
    );
    assert_eq!(
        ev.leaves[0].status.as_ref().map(|s| s.value.as_str()),
        Some("")
    );

    // No status at all: appear offline, followers see a leave.
    rt.handle(
        &crate::NoModules,
        &a,
        env("3", Message::StatusUpdate(StatusUpdate { status: None })),
    )
    .await;
    let got = drain(&b);
    let Some(Message::StatusPresenceEvent(ev)) = &got[0].message else {
        panic!("{got:?}")
    };
    assert!(ev.joins.is_empty());
    assert_eq!(ev.leaves.len(), 1);
}

#[tokio::test]
async fn disconnect_announces_the_leave_to_followers() {
    let h = realtime(false).await;
    let rt = &h.rt;
    let (alice, bob) = (h.user().await, h.user().await);
    let a = connect(rt, alice, true);
    let b = connect(rt, bob, false);
    rt.status
        .follow(
            &b,
            StatusFollow {
                user_ids: vec![alice.to_string()],
                usernames: vec![],
            },
        )
        .await
        .unwrap();
    rt.disconnect(&a);
    let got = drain(&b);
    let Some(Message::StatusPresenceEvent(ev)) = &got[0].message else {
        panic!("{got:?}")
    };
    assert_eq!(ev.leaves[0].user_id, alice.to_string());
    assert_eq!(rt.hub().session_count(), 1);
}

#[tokio::test]
async fn bad_user_id_is_bad_input_and_keeps_the_socket() {
    let h = realtime(false).await;
    let rt = &h.rt;
    let s = connect(rt, Uuid::new_v4(), false);
    let flow = rt
        .handle(
            &crate::NoModules,
            &s,
            env(
                "4",
                Message::StatusFollow(StatusFollow {
                    user_ids: vec!["nope".into()],
                    usernames: vec![],
                }),
            ),
        )
        .await;
    assert_eq!(flow, Flow::Continue);
    let got = drain(&s);
    assert!(
        matches!(&got[0].message, Some(Message::Error(e)) if e.code == RtCode::BadInput as i32)
    );
    assert_eq!(got[0].cid, "4");
}

#[tokio::test]
async fn single_socket_replaces_the_older_session() {
    let h = realtime(true).await;
    let rt = &h.rt;
    let user = Uuid::new_v4();
    let old = connect(rt, user, false);
    let _new = connect(rt, user, false);
    assert_eq!(old.outbound().close_reason(), Some(CloseReason::Replaced));
}

#[tokio::test]
async fn notifications_reach_every_socket_of_the_user_and_persist_when_asked() {
    let h = realtime(false).await;
    let rt = &h.rt;
    let ann = h.user().await;
    let (a1, a2) = (connect(rt, ann, false), connect(rt, ann, false));
    let make = |persistent: bool| ludus_core::notification::Notification {
        id: Uuid::new_v4(),
        user_id: ann,
        subject: "s".into(),
        content: "{}".into(),
        code: 5,
        sender_id: Uuid::nil(),
        create_time_us: 1,
        persistent,
    };
    rt.notifier
        .notify(vec![make(true), make(false)])
        .await
        .unwrap();
    for s in [&a1, &a2] {
        let got = drain(s);
        let Some(Message::Notifications(n)) = &got[0].message else {
            panic!("{got:?}")
        };
        assert_eq!(n.notifications.len(), 2);
    }
    let stored = h.store.list_notifications(ann, None, 10).await.unwrap();
    assert_eq!(stored.len(), 1);
}

#[tokio::test]
async fn room_messages_reach_every_member_once_encoded() {
    let h = realtime(false).await;
    let rt = &h.rt;
    let (ann, ben) = (h.user().await, h.user().await);
    let (a, b) = (connect(rt, ann, false), connect(rt, ben, false));
    for s in [&a, &b] {
        let join = Message::ChannelJoin(ludus_proto::realtime::ChannelJoin {
            target: "room".into(),
            r#type: 1,
            ..Default::default()
        });
        rt.handle(&crate::NoModules, s, env("j", join)).await;
    }
    drain(&a);
    drain(&b);
    let send = Message::ChannelMessageSend(ludus_proto::realtime::ChannelMessageSend {
        channel_id: "2...room".into(),
        content: r#"{"x":1}"#.into(),
    });
    assert_eq!(
        rt.handle(&crate::NoModules, &a, env("s", send)).await,
        Flow::Continue
    );
    let (got_a, got_b) = (drain(&a), drain(&b));
    assert!(
        got_a
            .iter()
            .any(|e| matches!(e.message, Some(Message::ChannelMessageAck(_))))
    );
    assert!(
        got_b
            .iter()
            .any(|e| matches!(e.message, Some(Message::ChannelMessage(_))))
    );
    let key = ludus_core::chat::ChannelKey::room("room").unwrap();
    assert_eq!(
        h.store
            .list_channel_messages(&key, None, true, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}
