//! Registration and sign-in look-ups: each identity kind, clashes that must
//! write nothing, and concurrent registrations.

use std::collections::HashSet;
use std::sync::Arc;

use ludus_core::model::Identity;
use ludus_core::store::StoreError;
use uuid::Uuid;

use super::{Backend, device, new_user};

pub(crate) async fn finds_users_by_each_identity<B: Backend>() {
    let (_b, store) = B::store().await;
    let by_device = new_user("dev-user", device("device-0000001"));
    let by_custom = new_user("custom-user", Identity::Custom("custom-01".into()));
    let mut by_email = new_user("email-user", Identity::Email("player@example.com".into()));
    by_email.password_hash =
        Some("$2b$10$abcdefghijklmnopqrstuuJ3wH0iJbH6x5u0x0x0x0x0x0x0x0x0".into());
    for user in [&by_device, &by_custom, &by_email] {
        store.create_user(user.clone()).await.unwrap();
    }

    let found = store
        .find_user_by_identity(&device("device-0000001"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.id, found.username.as_str()),
        (by_device.id, "dev-user")
    );
    assert_eq!(found.password_hash, None);
    assert_eq!(found.disable_time, None);

    let found = store
        .find_user_by_identity(&Identity::Custom("custom-01".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, by_custom.id);

    let found = store
        .find_user_by_identity(&Identity::Email("player@example.com".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, by_email.id);
    assert_eq!(found.password_hash, by_email.password_hash);

    let found = store
        .find_user_by_identity(&Identity::Username("custom-user".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, by_custom.id);

    let found = store.find_user_auth(by_email.id).await.unwrap().unwrap();
    assert_eq!(found.username, "email-user");
    assert_eq!(found.password_hash, by_email.password_hash);
    store.close().await;
}

pub(crate) async fn unknown_identities_are_none<B: Backend>() {
    let (_b, store) = B::store().await;
    store
        .create_user(new_user("someone", device("device-0000001")))
        .await
        .unwrap();
    for identity in [
        device("device-0000002"),
        Identity::Custom("custom-01".into()),
        Identity::Email("nobody@example.com".into()),
        Identity::Username("nobody".into()),
    ] {
        assert_eq!(
            store.find_user_by_identity(&identity).await.unwrap(),
            None,
            "{identity:?}"
        );
    }
    assert_eq!(store.find_user_auth(Uuid::new_v4()).await.unwrap(), None);
    store.close().await;
}

pub(crate) async fn emails_are_stored_lower_cased<B: Backend>() {
    let (_b, store) = B::store().await;
    let user = new_user("mixed", Identity::Email("Mixed.Case@Example.COM".into()));
    store.create_user(user.clone()).await.unwrap();
    for asked in ["mixed.case@example.com", "MIXED.CASE@EXAMPLE.COM"] {
        let found = store
            .find_user_by_identity(&Identity::Email(asked.into()))
            .await
            .unwrap();
        assert_eq!(found.map(|f| f.id), Some(user.id), "{asked}");
    }
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert_eq!(account.email.as_deref(), Some("mixed.case@example.com"));
    // The same address in another case is the same identity.
    let again = new_user("other", Identity::Email("mixed.case@example.COM".into()));
    assert_eq!(
        store.create_user(again).await,
        Err(StoreError::IdentityTaken)
    );
    store.close().await;
}

pub(crate) async fn username_clash_writes_nothing<B: Backend>() {
    let (_b, store) = B::store().await;
    store
        .create_user(new_user("bob", device("device-0000001")))
        .await
        .unwrap();
    let identities = [
        device("device-0000002"),
        Identity::Custom("custom-01".into()),
        Identity::Email("bob@example.com".into()),
    ];
    for identity in identities {
        let clash = new_user("bob", identity.clone());
        assert_eq!(
            store.create_user(clash.clone()).await,
            Err(StoreError::UsernameTaken),
            "{identity:?}"
        );
        assert_eq!(
            store.find_user_by_identity(&identity).await.unwrap(),
            None,
            "{identity:?}"
        );
        assert_eq!(store.find_user_auth(clash.id).await.unwrap(), None);
    }
    store.close().await;
}

pub(crate) async fn device_clash_leaves_no_user_row<B: Backend>() {
    let (_b, store) = B::store().await;
    let first = new_user("alice", device("device-0000001"));
    store.create_user(first.clone()).await.unwrap();
    let clash = new_user("bob", device("device-0000001"));
    assert_eq!(
        store.create_user(clash.clone()).await,
        Err(StoreError::IdentityTaken)
    );
    // No user row may stay behind without its device.
    assert_eq!(
        store
            .find_user_by_identity(&Identity::Username("bob".into()))
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.find_user_auth(clash.id).await.unwrap(), None);
    assert!(
        store
            .get_users(&[clash.id], &["bob".into()])
            .await
            .unwrap()
            .is_empty()
    );
    // The device still belongs to the first user, and "bob" is free.
    let owner = store
        .find_user_by_identity(&device("device-0000001"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(owner.id, first.id);
    store
        .create_user(new_user("bob", device("device-0000002")))
        .await
        .unwrap();
    store.close().await;
}

pub(crate) async fn custom_and_email_clashes_leave_no_user_row<B: Backend>() {
    let (_b, store) = B::store().await;
    store
        .create_user(new_user("custom", Identity::Custom("custom-01".into())))
        .await
        .unwrap();
    store
        .create_user(new_user(
            "email",
            Identity::Email("taken@example.com".into()),
        ))
        .await
        .unwrap();
    let clashes = [
        new_user("second-custom", Identity::Custom("custom-01".into())),
        new_user("second-email", Identity::Email("taken@example.com".into())),
    ];
    for clash in clashes {
        assert_eq!(
            store.create_user(clash.clone()).await,
            Err(StoreError::IdentityTaken),
            "{:?}",
            clash.identity
        );
        assert_eq!(store.find_user_auth(clash.id).await.unwrap(), None);
        assert_eq!(
            store
                .find_user_by_identity(&Identity::Username(clash.username.clone()))
                .await
                .unwrap(),
            None
        );
    }
    store.close().await;
}

pub(crate) async fn taken_identity_wins_over_taken_username<B: Backend>() {
    let (_b, store) = B::store().await;
    store
        .create_user(new_user("alice", device("device-0000001")))
        .await
        .unwrap();
    store
        .create_user(new_user(
            "carol",
            Identity::Email("carol@example.com".into()),
        ))
        .await
        .unwrap();
    // Both the username and the identity are taken: the caller must learn of the
    // identity, so it signs in instead of picking another name.
    let both = new_user("alice", device("device-0000001"));
    assert_eq!(
        store.create_user(both).await,
        Err(StoreError::IdentityTaken)
    );
    let both = new_user("carol", Identity::Email("carol@example.com".into()));
    assert_eq!(
        store.create_user(both).await,
        Err(StoreError::IdentityTaken)
    );
    store.close().await;
}

pub(crate) async fn concurrent_creates_of_one_device_have_one_winner<B: Backend>() {
    let (_b, store) = B::store().await;
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let store = Arc::clone(&store);
            let user = new_user(&format!("racer-{i}"), device("shared-device-01"));
            tokio::spawn(async move { (user.id, store.create_user(user).await) })
        })
        .collect();
    let mut winners = Vec::new();
    for task in tasks {
        let (id, result) = task.await.unwrap();
        match result {
            Ok(()) => winners.push(id),
            Err(e) => assert_eq!(e, StoreError::IdentityTaken),
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "exactly one registration of the device wins"
    );
    let owner = store
        .find_user_by_identity(&device("shared-device-01"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(owner.id, winners[0]);
    let names: Vec<String> = (0..24).map(|i| format!("racer-{i}")).collect();
    let users = store.get_users(&[], &names).await.unwrap();
    assert_eq!(users.len(), 1, "losers left no user rows");
    store.close().await;
}

pub(crate) async fn concurrent_creates_of_distinct_users_all_succeed<B: Backend>() {
    let (_b, store) = B::store().await;
    const N: usize = 300;
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let store = Arc::clone(&store);
            let identity = match i % 3 {
                0 => device(&format!("device-{i:08}")),
                1 => Identity::Custom(format!("custom-{i:08}")),
                _ => Identity::Email(format!("user{i}@example.com")),
            };
            let user = new_user(&format!("user-{i}"), identity);
            tokio::spawn(async move { store.create_user(user.clone()).await.map(|()| user) })
        })
        .collect();
    let mut created = Vec::new();
    for task in tasks {
        created.push(task.await.unwrap().expect("distinct users never clash"));
    }
    for user in &created {
        let found = store
            .find_user_by_identity(&user.identity)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.id, user.id);
    }
    let names: Vec<String> = created.iter().map(|u| u.username.clone()).collect();
    assert_eq!(store.get_users(&[], &names).await.unwrap().len(), N);
    store.close().await;
}

/// Many look-ups at once (on PostgreSQL they share statements): each gets
/// its own user, a device id never finds the user of an equal custom id, a
/// key asked twice at once is answered twice, and unknown keys find nobody.
pub(crate) async fn concurrent_lookups_each_find_their_own_user<B: Backend>() {
    let (_b, store) = B::store().await;
    let mut users = Vec::new();
    for i in 0..40 {
        let identity = if i % 2 == 0 {
            device(&format!("key-{i:08}"))
        } else {
            Identity::Custom(format!("key-{i:08}"))
        };
        let user = new_user(&format!("look-{i}"), identity);
        store.create_user(user.clone()).await.unwrap();
        users.push(user);
    }
    let tasks: Vec<_> = (0..400)
        .map(|n| {
            let store = Arc::clone(&store);
            let i = n % 40;
            // Every key under both kinds: only the one it was made with finds it.
            let identity = if (n / 40) % 2 == 0 {
                device(&format!("key-{i:08}"))
            } else {
                Identity::Custom(format!("key-{i:08}"))
            };
            let unknown = device(&format!("key-unknown-{n}"));
            tokio::spawn(async move {
                let found = store.find_user_by_identity(&identity).await.unwrap();
                let nobody = store.find_user_by_identity(&unknown).await.unwrap();
                (i, identity, found.map(|u| u.id), nobody)
            })
        })
        .collect();
    for task in tasks {
        let (i, identity, found, nobody) = task.await.unwrap();
        let user = &users[i];
        if user.identity == identity {
            assert_eq!(found, Some(user.id), "{identity:?}");
        } else {
            assert_eq!(found, None, "{identity:?} is the other kind's key");
        }
        assert!(nobody.is_none());
    }
    store.close().await;
}

pub(crate) async fn concurrent_username_clashes_have_one_winner_each<B: Backend>() {
    let (_b, store) = B::store().await;
    const PAIRS: usize = 40;
    // Both users of a pair want the same name with different devices; they
    // race in the same batches.
    let tasks: Vec<_> = (0..PAIRS * 2)
        .map(|i| {
            let store = Arc::clone(&store);
            let user = new_user(
                &format!("name-{}", i / 2),
                device(&format!("device-{i:08}")),
            );
            tokio::spawn(async move { (store.create_user(user.clone()).await, user) })
        })
        .collect();
    let mut winners = HashSet::new();
    for task in tasks {
        let (result, user) = task.await.unwrap();
        match result {
            Ok(()) => assert!(
                winners.insert(user.username.clone()),
                "{} won twice",
                user.username
            ),
            Err(e) => {
                assert_eq!(e, StoreError::UsernameTaken);
                assert_eq!(
                    store.find_user_by_identity(&user.identity).await.unwrap(),
                    None,
                    "loser kept its device"
                );
            }
        }
    }
    assert_eq!(winners.len(), PAIRS);
    store.close().await;
}
