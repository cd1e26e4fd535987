//! Stored session revocations: single tokens until they expire, and
//! per-user cutoffs that outlive the account.

use ludus_core::token::TokenKind;

use super::{Backend, device, new_user};

fn sorted(mut tokens: Vec<(String, TokenKind, i64)>) -> Vec<(String, TokenKind, i64)> {
    tokens.sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
    tokens
}

pub(crate) async fn revoked_tokens_load_until_they_expire<B: Backend>() {
    let (_b, store) = B::store().await;
    store
        .revoke_token("t1", TokenKind::Access, 100)
        .await
        .unwrap();
    store
        .revoke_token("t1", TokenKind::Refresh, 200)
        .await
        .unwrap();
    store
        .revoke_token("t2", TokenKind::Access, 300)
        .await
        .unwrap();

    let loaded = store.load_revocations(50).await.unwrap();
    assert_eq!(
        sorted(loaded.tokens),
        [
            ("t1".into(), TokenKind::Access, 100),
            ("t1".into(), TokenKind::Refresh, 200),
            ("t2".into(), TokenKind::Access, 300)
        ]
    );
    assert!(loaded.users.is_empty());

    // At 200 both t1 tokens have expired: an expiry at exactly `now` counts as expired.
    let loaded = store.load_revocations(200).await.unwrap();
    assert_eq!(
        sorted(loaded.tokens),
        [("t2".into(), TokenKind::Access, 300)]
    );
    // Expired revocations were purged, not just filtered.
    let loaded = store.load_revocations(0).await.unwrap();
    assert_eq!(
        sorted(loaded.tokens),
        [("t2".into(), TokenKind::Access, 300)]
    );
    store.close().await;
}

pub(crate) async fn revoking_twice_keeps_the_later_expiry<B: Backend>() {
    let (_b, store) = B::store().await;
    store
        .revoke_token("t", TokenKind::Refresh, 200)
        .await
        .unwrap();
    store
        .revoke_token("t", TokenKind::Refresh, 100)
        .await
        .unwrap();
    assert_eq!(
        store.load_revocations(150).await.unwrap().tokens,
        [("t".into(), TokenKind::Refresh, 200)]
    );
    store
        .revoke_token("t", TokenKind::Refresh, 400)
        .await
        .unwrap();
    assert_eq!(
        store.load_revocations(150).await.unwrap().tokens,
        [("t".into(), TokenKind::Refresh, 400)]
    );
    store.close().await;
}

pub(crate) async fn session_cutoffs_keep_the_latest_and_outlive_the_user<B: Backend>() {
    let (_b, store) = B::store().await;
    let user = new_user("leaver", device("device-0000001"));
    store.create_user(user.clone()).await.unwrap();
    store.revoke_user_sessions(user.id, 100).await.unwrap();
    store.revoke_user_sessions(user.id, 50).await.unwrap();
    assert_eq!(
        store.load_revocations(0).await.unwrap().users,
        [(user.id, 100)]
    );
    store.revoke_user_sessions(user.id, 200).await.unwrap();
    assert_eq!(
        store.load_revocations(0).await.unwrap().users,
        [(user.id, 200)]
    );
    // Deleting the account must not forget that its tokens are revoked.
    assert!(store.delete_user(user.id).await.unwrap());
    store.revoke_user_sessions(user.id, 300).await.unwrap();
    assert_eq!(
        store.load_revocations(10_000).await.unwrap().users,
        [(user.id, 300)]
    );
    store.close().await;
}

pub(crate) async fn bans_set_disable_time_and_revoke_in_one_go<B: Backend>() {
    let (_b, store) = B::store().await;
    let banned = new_user("banned", device("device-0000001"));
    let other = new_user("other", device("device-0000002"));
    store.create_user(banned.clone()).await.unwrap();
    store.create_user(other.clone()).await.unwrap();
    let unknown = uuid::Uuid::new_v4();
    store
        .set_users_banned(&[banned.id, unknown], Some(500))
        .await
        .unwrap();
    let auth = store.find_user_auth(banned.id).await.unwrap().unwrap();
    assert_eq!(auth.disable_time, Some(500));
    let account = store.get_account(banned.id).await.unwrap().unwrap();
    assert_eq!(account.disable_time, Some(500));
    // Only the banned user: no cutoff for the unknown id, nothing for others.
    assert_eq!(
        store.load_revocations(0).await.unwrap().users,
        [(banned.id, 500)]
    );
    let other_auth = store.find_user_auth(other.id).await.unwrap().unwrap();
    assert_eq!(other_auth.disable_time, None);
    // A later ban moves the cutoff forward, never back.
    store
        .set_users_banned(&[banned.id], Some(400))
        .await
        .unwrap();
    assert_eq!(
        store.load_revocations(0).await.unwrap().users,
        [(banned.id, 500)]
    );
    // Lifting the ban clears disable_time and keeps the revocation.
    store.set_users_banned(&[banned.id], None).await.unwrap();
    let auth = store.find_user_auth(banned.id).await.unwrap().unwrap();
    assert_eq!(auth.disable_time, None);
    assert_eq!(
        store.load_revocations(0).await.unwrap().users,
        [(banned.id, 500)]
    );
    store.set_users_banned(&[], Some(600)).await.unwrap();
    store.close().await;
}
