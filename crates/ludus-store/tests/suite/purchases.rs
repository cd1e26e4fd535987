//! Stored purchases and subscriptions: a transaction id is kept once, by
//! its first owner, and is `seen_before` ever after; refunds stick; a
//! subscription takes renewals; listings page newest first.

use ludus_core::purchase::{
    IapCursor, IapListQuery, Purchase, StoreEnvironment, StoreProvider, Subscription,
};
use uuid::Uuid;

use super::Backend;

fn purchase(user: Uuid, tx: &str, time: i64) -> Purchase {
    Purchase {
        user_id: user,
        store: StoreProvider::GooglePlayStore,
        product_id: "gems".into(),
        transaction_id: tx.into(),
        raw_response: String::new(),
        purchase_time_ms: time,
        create_time_ms: 0,
        update_time_ms: 0,
        refund_time_ms: 0,
        environment: StoreEnvironment::Sandbox,
        seen_before: false,
    }
}

fn subscription(user: Uuid, original: &str, expire: i64) -> Subscription {
    Subscription {
        user_id: user,
        store: StoreProvider::AppleAppStore,
        product_id: "vip".into(),
        original_transaction_id: original.into(),
        raw_response: "{\"r\":1}".into(),
        raw_notification: String::new(),
        purchase_time_ms: 1_000,
        create_time_ms: 0,
        update_time_ms: 0,
        expire_time_ms: expire,
        refund_time_ms: 0,
        environment: StoreEnvironment::Production,
    }
}

pub(crate) async fn a_transaction_is_kept_once_by_its_first_owner<B: Backend>() {
    let (_b, store) = B::store().await;
    let (ann, bob) = (Uuid::now_v7(), Uuid::now_v7());
    let first = store
        .purchases_upsert(vec![purchase(ann, "t1", 10), purchase(ann, "t2", 20)], 100)
        .await
        .unwrap();
    assert_eq!(first.len(), 2);
    assert!(
        first
            .iter()
            .all(|p| !p.seen_before && p.create_time_ms == 100)
    );
    assert_eq!(first[0].raw_response, "{}");

    // Bob replays Ann's receipt, with a refund now known.
    let mut replay = purchase(bob, "t1", 10);
    replay.refund_time_ms = 150;
    replay.product_id = "other".into();
    let again = store.purchases_upsert(vec![replay], 200).await.unwrap();
    assert_eq!(again.len(), 1);
    let p = &again[0];
    assert!(p.seen_before);
    assert_eq!(p.user_id, ann);
    assert_eq!(p.product_id, "gems");
    assert_eq!(
        (p.create_time_ms, p.update_time_ms, p.refund_time_ms),
        (100, 200, 150)
    );

    // A later validation without a refund keeps the one stored.
    let later = store
        .purchases_upsert(vec![purchase(ann, "t1", 10)], 300)
        .await
        .unwrap();
    assert_eq!(later[0].refund_time_ms, 150);
    let stored = store.purchase_get("t1").await.unwrap().unwrap();
    assert_eq!(stored.refund_time_ms, 150);
    assert_eq!(stored.update_time_ms, 300);
    assert_eq!(stored.environment, StoreEnvironment::Sandbox);
    assert!(store.purchase_get("nope").await.unwrap().is_none());
}

pub(crate) async fn purchases_list_newest_first_by_user_and_page<B: Backend>() {
    let (_b, store) = B::store().await;
    let (ann, bob) = (Uuid::now_v7(), Uuid::now_v7());
    let mut all = Vec::new();
    for i in 0..5 {
        all.push(purchase(ann, &format!("a{i}"), 10 * i));
    }
    all.push(purchase(bob, "b0", 25));
    store.purchases_upsert(all, 1).await.unwrap();

    let ids = |ps: &[Purchase]| {
        ps.iter()
            .map(|p| p.transaction_id.clone())
            .collect::<Vec<_>>()
    };
    let q = |user, after, limit| IapListQuery { user, after, limit };
    let everyone = store.purchases_list(&q(None, None, 10)).await.unwrap();
    assert_eq!(ids(&everyone), ["a4", "a3", "b0", "a2", "a1", "a0"]);

    let page = store.purchases_list(&q(Some(ann), None, 2)).await.unwrap();
    assert_eq!(ids(&page), ["a4", "a3"]);
    let last = &page[1];
    let cursor = IapCursor {
        purchase_time_ms: last.purchase_time_ms,
        user_id: last.user_id,
        id: last.transaction_id.clone(),
        filter: Some(ann),
    };
    let next = store
        .purchases_list(&q(Some(ann), Some(cursor), 10))
        .await
        .unwrap();
    assert_eq!(ids(&next), ["a2", "a1", "a0"]);
}

pub(crate) async fn subscriptions_take_renewals_and_keep_their_owner<B: Backend>() {
    let (_b, store) = B::store().await;
    let (ann, bob) = (Uuid::now_v7(), Uuid::now_v7());
    let kept = store
        .subscriptions_upsert(vec![subscription(ann, "o1", 5_000)], 100)
        .await
        .unwrap();
    assert_eq!(kept[0].raw_notification, "{}");
    assert_eq!(kept[0].create_time_ms, 100);

    let mut renewal = subscription(bob, "o1", 9_000);
    renewal.raw_response = String::new();
    renewal.refund_time_ms = 7_000;
    let kept = store
        .subscriptions_upsert(vec![renewal, subscription(ann, "o2", 6_000)], 200)
        .await
        .unwrap();
    assert_eq!(kept.len(), 2);
    let s = &kept[0];
    assert_eq!(s.user_id, ann);
    assert_eq!((s.expire_time_ms, s.refund_time_ms), (9_000, 7_000));
    assert_eq!((s.create_time_ms, s.update_time_ms), (100, 200));
    assert_eq!(s.raw_response, "{\"r\":1}");

    let got = store.subscription_get(ann, "vip").await.unwrap().unwrap();
    assert_eq!(got.original_transaction_id, "o1", "the latest to expire");
    let by_id = store.subscription_by_transaction("o1").await.unwrap();
    assert_eq!(by_id.as_ref().map(|s| s.user_id), Some(ann));
    assert_eq!(by_id.map(|s| s.refund_time_ms), Some(7_000));
    assert!(
        store
            .subscription_by_transaction("o9")
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.subscription_get(bob, "vip").await.unwrap().is_none());

    let list = store
        .subscriptions_list(&IapListQuery {
            user: Some(ann),
            after: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(list.len(), 2);
}
