//! Linking and unlinking identities: linked identities sign in, another
//! user's identity is refused and writes nothing, the last identity is never
//! unlinked, and concurrent unlinks never leave an account without one.

use std::sync::Arc;

use ludus_core::model::Identity;
use ludus_core::store::StoreError;
use uuid::Uuid;

use super::{Backend, T0, device, new_user};

const HASH: &str = "$2b$10$abcdefghijklmnopqrstuuJ3wH0iJbH6x5u0x0x0x0x0x0x0x0x0";

fn custom(id: &str) -> Identity {
    Identity::Custom(id.to_owned())
}

fn email(address: &str) -> Identity {
    Identity::Email(address.to_owned())
}

pub(crate) async fn linked_identities_sign_in<B: Backend>() {
    let (_b, store) = B::store().await;
    let user = new_user("linker", device("link-device-0001"));
    store.create_user(user.clone()).await.unwrap();
    for identity in [device("link-device-0002"), custom("custom-link-1")] {
        store
            .link_identity(user.id, identity, None, T0 + 5)
            .await
            .unwrap();
    }
    store
        .link_identity(
            user.id,
            email("Link@Example.com"),
            Some(HASH.into()),
            T0 + 5,
        )
        .await
        .unwrap();
    for identity in [
        device("link-device-0001"),
        device("link-device-0002"),
        custom("custom-link-1"),
        email("link@example.com"),
    ] {
        let found = store.find_user_by_identity(&identity).await.unwrap();
        assert_eq!(found.map(|u| u.id), Some(user.id), "{identity:?}");
    }
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert_eq!(account.devices, ["link-device-0001", "link-device-0002"]);
    assert_eq!(account.custom_id.as_deref(), Some("custom-link-1"));
    assert_eq!(account.email.as_deref(), Some("link@example.com"));
    assert_eq!(account.user.update_time, T0 + 5);
    let auth = store.find_user_auth(user.id).await.unwrap().unwrap();
    assert_eq!(auth.password_hash.as_deref(), Some(HASH));

    // Linking again what the user has changes nothing; a new custom id
    // replaces the old one.
    store
        .link_identity(user.id, device("link-device-0001"), None, T0 + 6)
        .await
        .unwrap();
    store
        .link_identity(user.id, custom("custom-link-2"), None, T0 + 6)
        .await
        .unwrap();
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert_eq!(account.devices.len(), 2);
    assert_eq!(account.custom_id.as_deref(), Some("custom-link-2"));
    assert!(
        store
            .find_user_by_identity(&custom("custom-link-1"))
            .await
            .unwrap()
            .is_none()
    );
}

pub(crate) async fn linking_another_users_identity_is_refused<B: Backend>() {
    let (_b, store) = B::store().await;
    let mut owner = new_user("owner", email("owner@example.com"));
    owner.password_hash = Some(HASH.into());
    store.create_user(owner.clone()).await.unwrap();
    store
        .link_identity(owner.id, device("owned-device-01"), None, T0)
        .await
        .unwrap();
    store
        .link_identity(owner.id, custom("owned-custom"), None, T0)
        .await
        .unwrap();
    let other = new_user("other", device("other-device-01"));
    store.create_user(other.clone()).await.unwrap();
    for identity in [
        device("owned-device-01"),
        custom("owned-custom"),
        email("OWNER@example.com"),
    ] {
        let err = store
            .link_identity(other.id, identity.clone(), None, T0 + 1)
            .await
            .unwrap_err();
        assert_eq!(err, StoreError::IdentityTaken, "{identity:?}");
        let found = store.find_user_by_identity(&identity).await.unwrap();
        assert_eq!(found.map(|u| u.id), Some(owner.id), "{identity:?}");
    }
    let account = store.get_account(other.id).await.unwrap().unwrap();
    assert_eq!(account.devices, ["other-device-01"]);
    assert_eq!((account.custom_id, account.email), (None, None));
    assert_eq!(
        account.user.update_time, T0,
        "a refused link writes nothing"
    );

    let err = store
        .link_identity(Uuid::new_v4(), device("ghost-device-01"), None, T0)
        .await
        .unwrap_err();
    assert_eq!(err, StoreError::NotFound);
    assert!(
        store
            .find_user_by_identity(&device("ghost-device-01"))
            .await
            .unwrap()
            .is_none()
    );
}

pub(crate) async fn unlinking_keeps_the_last_identity<B: Backend>() {
    let (_b, store) = B::store().await;
    let user = new_user("unlinker", device("unlink-device-01"));
    store.create_user(user.clone()).await.unwrap();
    // The only identity stays.
    assert!(
        !store
            .unlink_identity(user.id, device("unlink-device-01"), T0 + 1)
            .await
            .unwrap()
    );
    store
        .link_identity(user.id, email("unlink@example.com"), Some(HASH.into()), T0)
        .await
        .unwrap();
    store
        .link_identity(user.id, custom("unlink-custom"), None, T0)
        .await
        .unwrap();
    // Not this user's: refused, nothing changes.
    assert!(
        !store
            .unlink_identity(user.id, device("someone-elses-1"), T0 + 1)
            .await
            .unwrap()
    );
    assert!(
        !store
            .unlink_identity(user.id, custom("not-mine"), T0 + 1)
            .await
            .unwrap()
    );
    assert!(
        store
            .unlink_identity(user.id, device("unlink-device-01"), T0 + 2)
            .await
            .unwrap()
    );
    // The email may go by its address in any case; its password goes with it.
    assert!(
        store
            .unlink_identity(user.id, email("UNLINK@example.com"), T0 + 3)
            .await
            .unwrap()
    );
    let auth = store.find_user_auth(user.id).await.unwrap().unwrap();
    assert_eq!(auth.password_hash, None);
    // Only the custom id is left: it stays, even asked for as "whichever".
    assert!(
        !store
            .unlink_identity(user.id, custom(""), T0 + 4)
            .await
            .unwrap()
    );
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert!(account.devices.is_empty());
    assert_eq!(account.email, None);
    assert_eq!(account.custom_id.as_deref(), Some("unlink-custom"));
    assert_eq!(account.user.update_time, T0 + 3);
    assert!(
        !store
            .unlink_identity(Uuid::new_v4(), custom(""), T0)
            .await
            .unwrap()
    );
}

pub(crate) async fn concurrent_unlinks_leave_one_identity<B: Backend>() {
    let (_b, store) = B::store().await;
    for round in 0..5 {
        let user = new_user(
            &format!("racer{round}"),
            device(&format!("race-device-a{round}")),
        );
        store.create_user(user.clone()).await.unwrap();
        store
            .link_identity(user.id, custom(&format!("race-custom-{round}")), None, T0)
            .await
            .unwrap();
        let unlink = |store: Arc<dyn ludus_core::Store>, identity: Identity| {
            tokio::spawn(async move { store.unlink_identity(user.id, identity, T0).await })
        };
        let a = unlink(store.clone(), device(&format!("race-device-a{round}")));
        let b = unlink(store.clone(), custom(""));
        let (a, b) = (a.await.unwrap().unwrap(), b.await.unwrap().unwrap());
        assert!(a ^ b, "exactly one unlink wins, got {a} and {b}");
        let account = store.get_account(user.id).await.unwrap().unwrap();
        assert_eq!(
            account.devices.len() + usize::from(account.custom_id.is_some()),
            1
        );
    }
}
