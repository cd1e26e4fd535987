//! Looking up other players by id and username.

use std::collections::HashSet;

use ludus_core::model::AccountUpdate;
use uuid::Uuid;

use super::{Backend, T0, device, new_user};

pub(crate) async fn get_users_by_ids_and_usernames_deduplicated<B: Backend>() {
    let (_b, store) = B::store().await;
    let [a, b, c] =
        ["ann", "ben", "cat"].map(|name| new_user(name, device(&format!("device-of-{name}"))));
    for user in [&a, &b, &c] {
        store.create_user(user.clone()).await.unwrap();
    }
    let ids = [a.id, b.id, Uuid::new_v4(), a.id];
    let names = ["ben".to_owned(), "cat".to_owned(), "nobody".to_owned()];
    let users = store.get_users(&ids, &names).await.unwrap();
    assert_eq!(users.len(), 3, "each user once: {users:?}");
    let found: HashSet<Uuid> = users.iter().map(|u| u.id).collect();
    assert_eq!(found, HashSet::from([a.id, b.id, c.id]));

    assert_eq!(store.get_users(&[c.id], &[]).await.unwrap().len(), 1);
    assert_eq!(
        store.get_users(&[], &["ann".to_owned()]).await.unwrap()[0].id,
        a.id
    );
    store.close().await;
}

pub(crate) async fn get_users_with_nothing_asked_is_empty<B: Backend>() {
    let (_b, store) = B::store().await;
    store
        .create_user(new_user("someone", device("device-0000001")))
        .await
        .unwrap();
    assert!(store.get_users(&[], &[]).await.unwrap().is_empty());
    assert!(
        store
            .get_users(&[Uuid::new_v4()], &["nobody".to_owned()])
            .await
            .unwrap()
            .is_empty()
    );
    store.close().await;
}

pub(crate) async fn get_users_returns_public_fields<B: Backend>() {
    let (_b, store) = B::store().await;
    let user = new_user("public", device("device-0000001"));
    store.create_user(user.clone()).await.unwrap();
    let update = AccountUpdate {
        display_name: Some("Pub".into()),
        avatar_url: Some("https://example.com/p.png".into()),
        lang_tag: Some("de".into()),
        location: Some("Berlin".into()),
        timezone: Some("Europe/Berlin".into()),
        metadata: Some(r#"{"rank":"gold"}"#.into()),
        ..Default::default()
    };
    store.update_account(user.id, update, T0 + 7).await.unwrap();
    let got = store.get_users(&[user.id], &[]).await.unwrap().remove(0);
    assert_eq!(got.id, user.id);
    assert_eq!(got.username, "public");
    assert_eq!(got.display_name, "Pub");
    assert_eq!(got.avatar_url, "https://example.com/p.png");
    assert_eq!(got.lang_tag, "de");
    assert_eq!(got.location, "Berlin");
    assert_eq!(got.timezone, "Europe/Berlin");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&got.metadata).unwrap()["rank"],
        "gold"
    );
    assert_eq!(got.edge_count, 0);
    assert!(!got.online, "the store knows nothing of presence");
    assert_eq!((got.create_time, got.update_time), (T0, T0 + 7));
    // The account view and the public view agree.
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert_eq!(account.user, got);
    store.close().await;
}
