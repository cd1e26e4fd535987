//! Accounts: what a new account holds, partial updates, renames and their
//! clashes, and deletion with everything linked to the user.

use ludus_core::model::{AccountUpdate, Identity};
use ludus_core::store::StoreError;
use uuid::Uuid;

use super::{Backend, T0, device, new_user};

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{s:?} is not JSON: {e}"))
}

pub(crate) async fn new_account_has_defaults<B: Backend>() {
    let (_b, store) = B::store().await;
    let user = new_user("fresh", device("device-0000001"));
    store.create_user(user.clone()).await.unwrap();
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert_eq!(account.user.id, user.id);
    assert_eq!(account.user.username, "fresh");
    assert_eq!(account.user.display_name, "");
    assert_eq!(account.user.avatar_url, "");
    assert_eq!(account.user.lang_tag, "en");
    assert_eq!(account.user.location, "");
    assert_eq!(account.user.timezone, "");
    assert_eq!(json(&account.user.metadata), json("{}"));
    assert_eq!(account.user.edge_count, 0);
    assert!(!account.user.online);
    assert_eq!(
        (account.user.create_time, account.user.update_time),
        (T0, T0)
    );
    assert_eq!(account.user.facebook_id, "");
    assert_eq!(account.user.apple_id, "");
    assert_eq!(json(&account.wallet), json("{}"));
    assert_eq!(account.devices, vec!["device-0000001".to_owned()]);
    assert_eq!(account.email, None);
    assert_eq!(account.custom_id, None);
    assert_eq!(account.verify_time, None);
    assert_eq!(account.disable_time, None);

    let custom = new_user("custom", Identity::Custom("custom-01".into()));
    store.create_user(custom.clone()).await.unwrap();
    let account = store.get_account(custom.id).await.unwrap().unwrap();
    assert_eq!(account.custom_id.as_deref(), Some("custom-01"));
    assert!(account.devices.is_empty());
    store.close().await;
}

pub(crate) async fn account_devices_are_sorted<B: Backend>() {
    let (b, store) = B::store().await;
    let user = new_user("many-devices", device("m-device-0001"));
    store.create_user(user.clone()).await.unwrap();
    // The trait cannot link a second device yet; insert them directly.
    b.exec(&format!(
        "INSERT INTO user_device (id, user_id) VALUES ('z-device-0001', '{id}'), ('A-device-0001', '{id}'), \
         ('a-device-0001', '{id}')",
        id = user.id
    ))
    .await;
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert_eq!(
        account.devices,
        [
            "A-device-0001",
            "a-device-0001",
            "m-device-0001",
            "z-device-0001"
        ]
    );
    store.close().await;
}

pub(crate) async fn unknown_account_is_none<B: Backend>() {
    let (_b, store) = B::store().await;
    assert_eq!(store.get_account(Uuid::new_v4()).await.unwrap(), None);
    store.close().await;
}

pub(crate) async fn update_changes_only_given_fields<B: Backend>() {
    let (_b, store) = B::store().await;
    let user = new_user("updater", device("device-0000001"));
    store.create_user(user.clone()).await.unwrap();
    let update = AccountUpdate {
        display_name: Some("The Updater".into()),
        metadata: Some(r#"{"level": 3, "tags": ["a"]}"#.into()),
        ..Default::default()
    };
    store
        .update_account(user.id, update, T0 + 10)
        .await
        .unwrap();
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert_eq!(account.user.display_name, "The Updater");
    assert_eq!(
        json(&account.user.metadata),
        json(r#"{"level": 3, "tags": ["a"]}"#)
    );
    assert_eq!(account.user.username, "updater");
    assert_eq!(account.user.avatar_url, "");
    assert_eq!(account.user.lang_tag, "en");
    assert_eq!(
        (account.user.create_time, account.user.update_time),
        (T0, T0 + 10)
    );

    let update = AccountUpdate {
        avatar_url: Some("https://example.com/a.png".into()),
        lang_tag: Some("fr".into()),
        location: Some("Lyon".into()),
        timezone: Some("Europe/Paris".into()),
        ..Default::default()
    };
    store
        .update_account(user.id, update, T0 + 20)
        .await
        .unwrap();
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert_eq!(
        account.user.display_name, "The Updater",
        "earlier change kept"
    );
    assert_eq!(account.user.avatar_url, "https://example.com/a.png");
    assert_eq!(account.user.lang_tag, "fr");
    assert_eq!(account.user.location, "Lyon");
    assert_eq!(account.user.timezone, "Europe/Paris");
    assert_eq!(json(&account.user.metadata)["level"], 3);
    assert_eq!(account.devices, ["device-0000001"]);
    store.close().await;
}

pub(crate) async fn update_renames_user<B: Backend>() {
    let (_b, store) = B::store().await;
    let user = new_user("old-name", device("device-0000001"));
    store.create_user(user.clone()).await.unwrap();
    let update = AccountUpdate {
        username: Some("new-name".into()),
        ..Default::default()
    };
    store.update_account(user.id, update, T0 + 1).await.unwrap();
    let found = store
        .find_user_by_identity(&Identity::Username("new-name".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, user.id);
    assert_eq!(
        store
            .find_user_by_identity(&Identity::Username("old-name".into()))
            .await
            .unwrap(),
        None
    );
    // Renaming to one's own name is no clash.
    let update = AccountUpdate {
        username: Some("new-name".into()),
        ..Default::default()
    };
    store.update_account(user.id, update, T0 + 2).await.unwrap();
    // The old name is free again.
    store
        .create_user(new_user("old-name", device("device-0000002")))
        .await
        .unwrap();
    store.close().await;
}

pub(crate) async fn update_username_clash_changes_nothing<B: Backend>() {
    let (_b, store) = B::store().await;
    let alice = new_user("alice", device("device-0000001"));
    let bob = new_user("bob", device("device-0000002"));
    store.create_user(alice.clone()).await.unwrap();
    store.create_user(bob.clone()).await.unwrap();
    let update = AccountUpdate {
        username: Some("alice".into()),
        display_name: Some("Not Alice".into()),
        ..Default::default()
    };
    assert_eq!(
        store.update_account(bob.id, update, T0 + 5).await,
        Err(StoreError::UsernameTaken)
    );
    let account = store.get_account(bob.id).await.unwrap().unwrap();
    assert_eq!(account.user.username, "bob");
    assert_eq!(
        account.user.display_name, "",
        "no part of a failed update is applied"
    );
    assert_eq!(account.user.update_time, T0);
    store.close().await;
}

pub(crate) async fn update_unknown_user_is_not_found<B: Backend>() {
    let (_b, store) = B::store().await;
    let update = AccountUpdate {
        display_name: Some("ghost".into()),
        ..Default::default()
    };
    assert_eq!(
        store.update_account(Uuid::new_v4(), update, T0).await,
        Err(StoreError::NotFound)
    );
    store.close().await;
}

pub(crate) async fn delete_cascades_to_devices<B: Backend>() {
    let (b, store) = B::store().await;
    let user = new_user("doomed", device("device-0000001"));
    store.create_user(user.clone()).await.unwrap();
    b.exec(&format!(
        "INSERT INTO user_device (id, user_id) VALUES ('device-0000002', '{}')",
        user.id
    ))
    .await;

    assert!(store.delete_user(user.id).await.unwrap());
    assert_eq!(store.get_account(user.id).await.unwrap(), None);
    assert_eq!(store.find_user_auth(user.id).await.unwrap(), None);
    for d in ["device-0000001", "device-0000002"] {
        assert_eq!(
            store.find_user_by_identity(&device(d)).await.unwrap(),
            None,
            "{d}"
        );
    }
    assert!(
        !store.delete_user(user.id).await.unwrap(),
        "second delete finds nothing"
    );
    // The devices and the name are free for a new account.
    store
        .create_user(new_user("doomed", device("device-0000001")))
        .await
        .unwrap();
    store
        .create_user(new_user("reborn", device("device-0000002")))
        .await
        .unwrap();
    store.close().await;
}

pub(crate) async fn delete_leaves_other_users_alone<B: Backend>() {
    let (_b, store) = B::store().await;
    let keep = new_user("keep", device("device-0000001"));
    let drop = new_user("drop", device("device-0000002"));
    store.create_user(keep.clone()).await.unwrap();
    store.create_user(drop.clone()).await.unwrap();
    assert!(store.delete_user(drop.id).await.unwrap());
    let account = store.get_account(keep.id).await.unwrap().unwrap();
    assert_eq!(account.devices, ["device-0000001"]);
    store.close().await;
}
