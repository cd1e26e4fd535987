//! Opening, closing and schema versions: data survives a restart, close()
//! finishes queued writes, and a schema this build does not know is refused.

use std::sync::Arc;

use ludus_core::model::{AccountUpdate, Identity};
use ludus_core::store::StoreError;
use ludus_core::token::TokenKind;
use ludus_store::OpenError;

use super::{Backend, T0, device, new_user};

pub(crate) async fn close_then_reopen_keeps_data<B: Backend>() {
    let (b, store) = B::store().await;
    let user = new_user("durable", Identity::Email("durable@example.com".into()));
    store.create_user(user.clone()).await.unwrap();
    let update = AccountUpdate {
        display_name: Some("Still Here".into()),
        ..Default::default()
    };
    store.update_account(user.id, update, T0 + 1).await.unwrap();
    store
        .revoke_token("tok", TokenKind::Access, 500)
        .await
        .unwrap();
    store.revoke_user_sessions(user.id, 42).await.unwrap();
    store.close().await;
    drop(store);

    let store = b.open().await.expect("reopens");
    let found = store
        .find_user_by_identity(&Identity::Email("durable@example.com".into()))
        .await
        .unwrap();
    assert_eq!(found.map(|f| f.id), Some(user.id));
    let account = store.get_account(user.id).await.unwrap().unwrap();
    assert_eq!(account.user.display_name, "Still Here");
    let revocations = store.load_revocations(100).await.unwrap();
    assert_eq!(revocations.tokens, [("tok".into(), TokenKind::Access, 500)]);
    assert_eq!(revocations.users, [(user.id, 42)]);
    store.close().await;
}

pub(crate) async fn calls_after_close_are_unavailable<B: Backend>() {
    let (_b, store) = B::store().await;
    store.close().await;
    let unavailable = |r: Result<_, StoreError>| matches!(r, Err(StoreError::Unavailable(_)));
    assert!(unavailable(
        store
            .create_user(new_user("late", device("device-0000001")))
            .await
            .map(drop)
    ));
    assert!(unavailable(
        store
            .find_user_by_identity(&device("device-0000001"))
            .await
            .map(drop)
    ));
    assert!(unavailable(
        store
            .revoke_token("t", TokenKind::Access, 10)
            .await
            .map(drop)
    ));
}

pub(crate) async fn close_finishes_queued_writes<B: Backend>() {
    let (b, store) = B::store().await;
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let store = Arc::clone(&store);
            let user = new_user(&format!("queued-{i}"), device(&format!("device-{i:08}")));
            tokio::spawn(async move { (store.create_user(user.clone()).await, user) })
        })
        .collect();
    tokio::task::yield_now().await;
    store.close().await;
    let mut written = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (Ok(()), user) => written.push(user),
            (Err(e), _) => assert!(
                matches!(e, StoreError::Unavailable(_)),
                "refused writes say so: {e:?}"
            ),
        }
    }
    drop(store);
    let store = b.open().await.expect("reopens");
    for user in &written {
        let found = store.find_user_by_identity(&user.identity).await.unwrap();
        assert_eq!(
            found.map(|f| f.id),
            Some(user.id),
            "acknowledged write of {} was lost",
            user.username
        );
    }
    store.close().await;
}

pub(crate) async fn newer_schema_is_refused<B: Backend>() {
    let (b, store) = B::store().await;
    store.close().await;
    drop(store);
    b.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'from_the_future', 0)").await;

    let err = b.open().await.err().expect("a newer schema is refused");
    assert!(
        matches!(err, OpenError::TooNew { current: 9999, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("upgrade ludus"), "{err}");
    let status = ludus_store::migrate_status(&b.address(), b.data_dir())
        .await
        .unwrap();
    assert_eq!(status.current, 9999);
    assert!(status.to_string().contains("upgrade ludus"), "{status}");
    let err = ludus_store::migrate_up(&b.address(), b.data_dir())
        .await
        .unwrap_err();
    assert!(matches!(err, OpenError::TooNew { .. }), "{err:?}");
}

pub(crate) async fn schema_is_current_after_open<B: Backend>() {
    let (b, store) = B::store().await;
    let status = ludus_store::migrate_status(&b.address(), b.data_dir())
        .await
        .unwrap();
    assert_eq!(status.current, status.latest);
    assert!(status.pending.is_empty(), "{status}");
    assert_eq!(status.backend, store.backend());
    let report = ludus_store::migrate_up(&b.address(), b.data_dir())
        .await
        .unwrap();
    assert!(report.applied.is_empty(), "{report}");
    assert_eq!(report.to, status.latest);
    store.close().await;
}
