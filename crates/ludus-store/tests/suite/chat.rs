//! Chat history and notifications: stored, paged both ways in a stable
//! order, updated and removed only by their sender, gone with their user.

use ludus_core::chat::{ChannelKey, ChannelMessage, MessageBound};
use ludus_core::notification::{Notification, NotificationUpdate};
use uuid::Uuid;

use super::{Backend, device, new_user};

fn message(channel: &ChannelKey, sender: Uuid, t: i64, text: &str) -> ChannelMessage {
    ChannelMessage {
        id: Uuid::new_v4(),
        channel: channel.clone(),
        code: 0,
        sender_id: sender,
        username: "ann".into(),
        content: format!(r#"{{"text":"{text}"}}"#),
        create_time_us: t,
        update_time_us: t,
    }
}

fn bound(m: &ChannelMessage) -> MessageBound {
    MessageBound {
        create_time_us: m.create_time_us,
        id: m.id,
    }
}

pub(crate) async fn messages_page_both_ways_by_time_then_id<B: Backend>() {
    let (_b, store) = B::store().await;
    let ann = new_user("ann", device("chat-device-ann01"));
    store.create_user(ann.clone()).await.unwrap();
    let room = ChannelKey::room("lobby").unwrap();
    let other = ChannelKey::room("other").unwrap();
    // Two messages share a timestamp: the id breaks the tie.
    let mut sent = Vec::new();
    for (i, t) in [10, 20, 20, 30, 40].into_iter().enumerate() {
        let m = message(&room, ann.id, t, &format!("m{i}"));
        store.insert_channel_message(&m).await.unwrap();
        sent.push(m);
    }
    store
        .insert_channel_message(&message(&other, ann.id, 15, "elsewhere"))
        .await
        .unwrap();
    let mut expected = sent.clone();
    expected.sort_by_key(|m| (m.create_time_us, m.id));

    let asc = store
        .list_channel_messages(&room, None, true, 10)
        .await
        .unwrap();
    assert_eq!(asc, expected);
    let desc = store
        .list_channel_messages(&room, None, false, 2)
        .await
        .unwrap();
    assert_eq!(desc, vec![expected[4].clone(), expected[3].clone()]);
    let after = store
        .list_channel_messages(&room, Some(bound(&expected[1])), true, 10)
        .await
        .unwrap();
    assert_eq!(after, expected[2..].to_vec());
    let before = store
        .list_channel_messages(&room, Some(bound(&expected[2])), false, 10)
        .await
        .unwrap();
    assert_eq!(before, vec![expected[1].clone(), expected[0].clone()]);
    store.close().await;
}

pub(crate) async fn only_the_sender_updates_or_removes_a_message<B: Backend>() {
    let (_b, store) = B::store().await;
    let ann = new_user("ann", device("chat-device-ann02"));
    let ben = new_user("ben", device("chat-device-ben02"));
    store.create_user(ann.clone()).await.unwrap();
    store.create_user(ben.clone()).await.unwrap();
    let dm = ChannelKey::direct(ann.id, ben.id).unwrap();
    let m = message(&dm, ann.id, 100, "hi");
    store.insert_channel_message(&m).await.unwrap();

    assert_eq!(
        store
            .update_channel_message(&dm, m.id, ben.id, "{}", 200)
            .await
            .unwrap(),
        None
    );
    // Regression: naming another channel than the message's own used to
    // write the change before the mismatch was noticed. Now nothing is written.
    let elsewhere = ChannelKey::room("elsewhere").unwrap();
    assert_eq!(
        store
            .update_channel_message(&elsewhere, m.id, ann.id, r#"{"text":"moved"}"#, 150)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .delete_channel_message(&elsewhere, m.id, ann.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .list_channel_messages(&dm, None, true, 10)
            .await
            .unwrap(),
        vec![m.clone()],
        "a mismatched channel leaves the message untouched"
    );
    let updated = store
        .update_channel_message(&dm, m.id, ann.id, r#"{"text":"hello"}"#, 200)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(updated.content, r#"{"text":"hello"}"#);
    assert_eq!((updated.create_time_us, updated.update_time_us), (100, 200));
    assert_eq!(updated.channel, dm);

    assert_eq!(
        store
            .delete_channel_message(&dm, m.id, ben.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .delete_channel_message(&dm, m.id, ann.id)
            .await
            .unwrap(),
        Some(updated)
    );
    assert_eq!(
        store
            .delete_channel_message(&dm, m.id, ann.id)
            .await
            .unwrap(),
        None
    );
    assert!(
        store
            .list_channel_messages(&dm, None, true, 10)
            .await
            .unwrap()
            .is_empty()
    );
    store.close().await;
}

pub(crate) async fn notifications_list_delete_and_go_with_their_user<B: Backend>() {
    let (_b, store) = B::store().await;
    let ann = new_user("ann", device("chat-device-ann03"));
    let ben = new_user("ben", device("chat-device-ben03"));
    store.create_user(ann.clone()).await.unwrap();
    store.create_user(ben.clone()).await.unwrap();
    let make = |user: Uuid, t: i64| Notification {
        id: Uuid::new_v4(),
        user_id: user,
        subject: format!("subject {t}"),
        content: r#"{"a":1}"#.into(),
        code: 7,
        sender_id: Uuid::nil(),
        create_time_us: t,
        persistent: true,
    };
    let ns = vec![
        make(ann.id, 3),
        make(ann.id, 1),
        make(ann.id, 2),
        make(ben.id, 1),
    ];
    store.insert_notifications(&ns).await.unwrap();
    let page = store.list_notifications(ann.id, None, 2).await.unwrap();
    assert_eq!(page, vec![ns[1].clone(), ns[2].clone()]);
    let rest = store
        .list_notifications(
            ann.id,
            Some(MessageBound {
                create_time_us: 2,
                id: ns[2].id,
            }),
            10,
        )
        .await
        .unwrap();
    assert_eq!(rest, vec![ns[0].clone()]);
    // Only the owner's ids are deleted.
    assert_eq!(
        store
            .delete_notifications(ann.id, &[ns[3].id, ns[1].id])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .list_notifications(ann.id, None, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(store.delete_user(ben.id).await.unwrap());
    assert!(
        store
            .list_notifications(ben.id, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    store.close().await;
}

/// `nk.notifications_get_id` and `nk.notifications_delete_id`: by id, of
/// any user or only of the one named; unknown ids are skipped.
pub(crate) async fn notifications_by_id_of_anyone_or_of_one_user<B: Backend>() {
    let (_b, store) = B::store().await;
    let ann = new_user("ann", device("chat-device-ann04"));
    let ben = new_user("ben", device("chat-device-ben04"));
    store.create_user(ann.clone()).await.unwrap();
    store.create_user(ben.clone()).await.unwrap();
    let make = |user: Uuid, t: i64| Notification {
        id: Uuid::new_v4(),
        user_id: user,
        subject: format!("subject {t}"),
        content: r#"{"a":1}"#.into(),
        code: 7,
        sender_id: Uuid::nil(),
        create_time_us: t,
        persistent: true,
    };
    let ns = vec![make(ann.id, 2), make(ann.id, 1), make(ben.id, 3)];
    store.insert_notifications(&ns).await.unwrap();
    let ids = [ns[0].id, ns[1].id, ns[2].id, Uuid::new_v4()];
    let all = store.notifications_by_id(None, &ids).await.unwrap();
    assert_eq!(all, vec![ns[1].clone(), ns[0].clone(), ns[2].clone()]);
    let bens = store.notifications_by_id(Some(ben.id), &ids).await.unwrap();
    assert_eq!(bens, vec![ns[2].clone()]);
    // Scoped to ann: ben's is kept.
    let gone = store
        .delete_notifications_by_id(Some(ann.id), &[ns[0].id, ns[2].id])
        .await
        .unwrap();
    assert_eq!(gone, 1);
    let left = store.notifications_by_id(None, &ids).await.unwrap();
    assert_eq!(left, vec![ns[1].clone(), ns[2].clone()]);
    // Unscoped: whoever owns them.
    let gone = store.delete_notifications_by_id(None, &ids).await.unwrap();
    assert_eq!(gone, 2);
    assert!(
        store
            .notifications_by_id(None, &ids)
            .await
            .unwrap()
            .is_empty()
    );
    store.close().await;
}

/// `nk.notifications_update`: each field given replaces the stored one,
/// whoever holds the notification; fields not given stay; unknown ids are
/// ignored.
pub(crate) async fn notifications_update_changes_only_the_fields_given<B: Backend>() {
    let (_b, store) = B::store().await;
    let ann = new_user("ann", device("chat-device-ann05"));
    store.create_user(ann.clone()).await.unwrap();
    let make = |t: i64| Notification {
        id: Uuid::new_v4(),
        user_id: ann.id,
        subject: format!("subject {t}"),
        content: r#"{"a":1}"#.into(),
        code: 7,
        sender_id: Uuid::nil(),
        create_time_us: t,
        persistent: true,
    };
    let ns = vec![make(1), make(2)];
    store.insert_notifications(&ns).await.unwrap();
    let sender = Uuid::new_v4();
    let updates = NotificationUpdate::merged(vec![
        NotificationUpdate {
            id: ns[0].id,
            content: Some(r#"{"b":2}"#.into()),
            subject: None,
            sender_id: None,
        },
        NotificationUpdate {
            id: ns[1].id,
            content: None,
            subject: Some("renamed".into()),
            sender_id: Some(sender),
        },
        // A later change of the same id lays over the first.
        NotificationUpdate {
            id: ns[0].id,
            content: None,
            subject: Some("second".into()),
            sender_id: None,
        },
        NotificationUpdate {
            id: Uuid::new_v4(),
            content: None,
            subject: Some("nobody".into()),
            sender_id: None,
        },
    ]);
    assert_eq!(updates.len(), 3);
    assert_eq!(store.update_notifications(&updates).await.unwrap(), 2);
    let got = store
        .notifications_by_id(None, &[ns[0].id, ns[1].id])
        .await
        .unwrap();
    let mut first = ns[0].clone();
    first.content = r#"{"b":2}"#.into();
    first.subject = "second".into();
    let mut second = ns[1].clone();
    second.subject = "renamed".into();
    second.sender_id = sender;
    assert_eq!(got, vec![first, second]);
    assert_eq!(store.update_notifications(&[]).await.unwrap(), 0);
    store.close().await;
}
