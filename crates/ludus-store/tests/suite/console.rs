//! The console's users: adding (and re-adding, which sets the ACL), look-up
//! by id, username or email, listing without the root user, changes with
//! their token cutoff and the once-only guard of invitation codes, and
//! deletion.

use ludus_core::StoreError;
use ludus_core::console::{ConsoleUser, ConsoleUserChange};
use ludus_core::console_acl::Acl;
use ludus_core::store::ConsoleUserKey;
use uuid::Uuid;

use super::{Backend, T0};

fn user(name: &str, acl: Acl) -> ConsoleUser {
    ConsoleUser {
        id: Uuid::new_v4(),
        username: name.to_owned(),
        email: format!("{name}@example.com"),
        acl,
        mfa_required: false,
        create_time: T0,
        update_time: T0,
        tokens_after_ms: T0 * 1000,
    }
}

fn name(n: &str) -> ConsoleUserKey {
    ConsoleUserKey::Name(n.to_owned())
}

pub(crate) async fn console_users_add_find_list_and_delete<B: Backend>() {
    let (_b, store) = B::store().await;
    let ops = store
        .console_user_put(&user("ops", Acl::ADMIN))
        .await
        .unwrap();
    assert_eq!(ops.acl, Acl::ADMIN);
    let found = store.console_user_get(&name("ops")).await.unwrap().unwrap();
    assert_eq!(found.user, ops);
    assert_eq!(found.password_hash, None);
    assert!(!found.disabled);
    let by_email = store
        .console_user_get(&name("ops@example.com"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_email.user.id, ops.id);
    let by_id = store
        .console_user_get(&ConsoleUserKey::Id(ops.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_id.user.username, "ops");
    assert!(
        store
            .console_user_get(&name("nobody"))
            .await
            .unwrap()
            .is_none()
    );

    // Re-adding a username sets its ACL and keeps its id and creation time.
    let mut again = user("ops", Acl::NONE);
    again.update_time = T0 + 5;
    let again = store.console_user_put(&again).await.unwrap();
    assert_eq!((again.id, again.create_time), (ops.id, T0));
    assert_eq!((again.acl, again.update_time), (Acl::NONE, T0 + 5));
    // Another username with a taken email is refused and writes nothing.
    let mut clash = user("other", Acl::ADMIN);
    clash.email = "ops@example.com".into();
    assert_eq!(
        store.console_user_put(&clash).await.unwrap_err(),
        StoreError::ConsoleUserTaken
    );

    // The root user's row (nil id) is never listed nor deleted by name.
    let mut root = user("", Acl::ADMIN);
    root.id = Uuid::nil();
    root.email = String::new();
    store.console_user_put(&root).await.unwrap();
    store
        .console_user_put(&user("alpha", Acl::ADMIN))
        .await
        .unwrap();
    let names: Vec<String> = store
        .console_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.username)
        .collect();
    assert_eq!(names, ["alpha", "ops"]);
    assert!(!store.console_user_delete("").await.unwrap());
    assert!(store.console_user_delete("ops").await.unwrap());
    assert!(!store.console_user_delete("ops").await.unwrap());
    assert!(
        store
            .console_user_get(&name("ops"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .console_user_get(&ConsoleUserKey::Id(Uuid::nil()))
            .await
            .unwrap()
            .is_some()
    );
}

pub(crate) async fn console_user_changes_move_the_token_cutoff<B: Backend>() {
    let (_b, store) = B::store().await;
    let ops = store
        .console_user_put(&user("ops", Acl::ADMIN))
        .await
        .unwrap();
    let key = ConsoleUserKey::Id(ops.id);
    let t1 = T0 * 1000 + 1_500;
    let changed = store
        .console_user_change(&key, &ConsoleUserChange::Acl(Acl::NONE), t1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.acl, Acl::NONE);
    assert_eq!((changed.tokens_after_ms, changed.update_time), (t1, T0 + 1));

    // A password with a guard: applies once, then the guard refuses.
    let guarded = |hash: &str| ConsoleUserChange::Password {
        hash: hash.to_owned(),
        unchanged_since_ms: Some(t1),
    };
    let t2 = t1 + 10;
    assert!(
        store
            .console_user_change(&name("ops"), &guarded("h1"), t2)
            .await
            .unwrap()
            .is_some()
    );
    let stored = store.console_user_get(&name("ops")).await.unwrap().unwrap();
    assert_eq!(stored.password_hash.as_deref(), Some("h1"));
    assert!(
        store
            .console_user_change(&name("ops"), &guarded("h2"), t2 + 10)
            .await
            .unwrap()
            .is_none()
    );
    let stored = store.console_user_get(&name("ops")).await.unwrap().unwrap();
    assert_eq!(
        stored.password_hash.as_deref(),
        Some("h1"),
        "nothing written"
    );

    // A sign-out moves the cutoff only; unknown users change nothing.
    let t3 = t2 + 1_000_000;
    let out = store
        .console_user_change(&key, &ConsoleUserChange::SignOut, t3)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((out.tokens_after_ms, out.update_time), (t3, T0 + 1));
    assert!(
        store
            .console_user_change(&name("nobody"), &ConsoleUserChange::SignOut, t3)
            .await
            .unwrap()
            .is_none()
    );
}
