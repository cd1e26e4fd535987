//! Wallets, the ledger and multi-updates: changesets that never go below
//! zero, atomic updates of many users, ledger paging and metadata, the
//! hot-wallet race (many writers of one balance), and multi-updates that
//! roll back every part when one fails.

use std::sync::Arc;

use ludus_core::Code;
use ludus_core::model::AccountUpdate;
use ludus_core::multi_update::MultiUpdate;
use ludus_core::storage::{Access, ObjectId, ReadPermission, StorageWrite, WritePermission};
use ludus_core::store::SqlValue;
use ludus_core::wallet::{Wallet, WalletUpdate};
use uuid::Uuid;

use super::Backend;
use super::storage::{service, user};

fn changes(pairs: &[(&str, i64)]) -> Wallet {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

fn update(user: Uuid, pairs: &[(&str, i64)]) -> WalletUpdate {
    WalletUpdate {
        user_id: user,
        changeset: changes(pairs),
        metadata: r#"{"reason":"test"}"#.into(),
    }
}

async fn balance(store: &Arc<dyn ludus_core::Store>, user: Uuid) -> Wallet {
    let account = store.get_account(user).await.unwrap().unwrap();
    serde_json::from_str(&account.wallet).unwrap()
}

async fn ledger_count(store: &Arc<dyn ludus_core::Store>, user: Uuid) -> i64 {
    let rows = store
        .sql_query(
            "SELECT count(*) AS n FROM wallet_ledger WHERE user_id = $1",
            vec![SqlValue::Text(user.to_string())],
            1,
        )
        .await
        .unwrap();
    match &rows[0][0].1 {
        SqlValue::Int(n) => *n,
        other => panic!("count is {other:?}"),
    }
}

pub(crate) async fn wallet_updates_return_previous_and_updated<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let r = svc
        .wallet_update(update(ann, &[("gold", 100), ("gems", 5)]), true)
        .await
        .unwrap();
    assert!(r.previous.is_empty());
    assert_eq!(r.updated, changes(&[("gold", 100), ("gems", 5)]));
    let r = svc
        .wallet_update(update(ann, &[("gold", -30)]), true)
        .await
        .unwrap();
    assert_eq!(r.previous, changes(&[("gold", 100), ("gems", 5)]));
    assert_eq!(r.updated, changes(&[("gold", 70), ("gems", 5)]));
    // The account shows the wallet.
    assert_eq!(
        balance(&store, ann).await,
        changes(&[("gold", 70), ("gems", 5)])
    );

    // Below zero: refused, nothing changes, no ledger entry.
    let e = svc
        .wallet_update(update(ann, &[("gems", 1), ("gold", -71)]), true)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert_eq!(
        e.message,
        "wallet update rejected negative value at path 'gold'"
    );
    assert_eq!(
        balance(&store, ann).await,
        changes(&[("gold", 70), ("gems", 5)])
    );
    assert_eq!(ledger_count(&store, ann).await, 2);

    // Unknown users: an error alone, skipped among others.
    let e = svc
        .wallet_update(update(Uuid::new_v4(), &[("gold", 1)]), false)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::NotFound);
    let results = svc
        .wallets_update(
            vec![
                update(Uuid::new_v4(), &[("gold", 1)]),
                update(ann, &[("gold", 1)]),
            ],
            false,
        )
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].user_id, ann);
}

/// Deleting a user deletes its ledger entries and no one else's, and an
/// update of a deleted user writes none (on PostgreSQL the ledger has no
/// foreign key to do either: migration 8).
pub(crate) async fn deleting_a_user_deletes_its_ledger<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    for who in [ann, bob] {
        svc.wallet_update(update(who, &[("gold", 5)]), true)
            .await
            .unwrap();
        svc.wallets_update(vec![update(who, &[("gold", 1)])], true)
            .await
            .unwrap();
    }
    assert_eq!(ledger_count(&store, ann).await, 2);
    assert!(store.delete_user(ann).await.unwrap());
    assert_eq!(ledger_count(&store, ann).await, 0);
    assert_eq!(ledger_count(&store, bob).await, 2);

    let e = svc
        .wallet_update(update(ann, &[("gold", 1)]), true)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::NotFound);
    let results = svc
        .wallets_update(
            vec![update(ann, &[("gold", 1)]), update(bob, &[("gold", 1)])],
            true,
        )
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(ledger_count(&store, ann).await, 0);
    assert_eq!(ledger_count(&store, bob).await, 3);
}

pub(crate) async fn wallets_update_is_atomic_across_users<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    svc.wallets_update(
        vec![update(ann, &[("gold", 10)]), update(bob, &[("gold", 10)])],
        true,
    )
    .await
    .unwrap();
    // Bob cannot pay 11: Ann's credit is rolled back too.
    let e = svc
        .wallets_update(
            vec![update(ann, &[("gold", 11)]), update(bob, &[("gold", -11)])],
            true,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert_eq!(balance(&store, ann).await, changes(&[("gold", 10)]));
    assert_eq!(balance(&store, bob).await, changes(&[("gold", 10)]));
    assert_eq!(ledger_count(&store, ann).await, 1);
}

pub(crate) async fn ledger_pages_newest_first_and_takes_metadata<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    for i in 1..=5 {
        svc.wallet_update(update(ann, &[("gold", i)]), true)
            .await
            .unwrap();
    }
    svc.wallet_update(update(bob, &[("gold", 1)]), true)
        .await
        .unwrap();
    let first = svc.wallet_ledger_list(ann, 2, "").await.unwrap();
    assert_eq!(first.entries.len(), 2);
    let amounts = |entries: &[ludus_core::wallet::LedgerEntry]| -> Vec<i64> {
        entries
            .iter()
            .map(|e| serde_json::from_str::<Wallet>(&e.changeset).unwrap()["gold"])
            .collect()
    };
    assert_eq!(amounts(&first.entries), [5, 4]);
    let cursor = first.cursor.unwrap();
    let second = svc.wallet_ledger_list(ann, 10, &cursor).await.unwrap();
    assert_eq!(amounts(&second.entries), [3, 2, 1]);
    assert!(second.cursor.is_none());
    // Another user's cursor is refused.
    let e = svc.wallet_ledger_list(bob, 10, &cursor).await.unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);

    let entry = &first.entries[0];
    let updated = svc
        .wallet_ledger_update(entry.id, r#"{"note":"refund"}"#)
        .await
        .unwrap();
    assert_eq!(updated.id, entry.id);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&updated.metadata).unwrap(),
        serde_json::json!({"reason": "test", "note": "refund"})
    );
    let e = svc
        .wallet_ledger_update(Uuid::new_v4(), "{}")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::NotFound);

    // Deleting an entry: only its owner's, once; the wallet stays.
    let e = svc.wallet_ledger_delete(bob, entry.id).await.unwrap_err();
    assert_eq!(e.code, Code::NotFound, "not bob's entry");
    svc.wallet_ledger_delete(ann, entry.id).await.unwrap();
    let e = svc.wallet_ledger_delete(ann, entry.id).await.unwrap_err();
    assert_eq!(e.code, Code::NotFound, "already gone");
    let left = svc.wallet_ledger_list(ann, 10, "").await.unwrap();
    assert_eq!(amounts(&left.entries), [4, 3, 2, 1]);
}

/// Entries made in one transaction share their time: pages still walk them
/// newest first, in descending id order within the instant, and a cursor
/// taken inside the instant resumes after its entry (SQLite's index holds
/// only the time: migration 9).
pub(crate) async fn ledger_pages_entries_of_one_instant_in_id_order<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    svc.wallet_update(update(ann, &[("gold", 100)]), true)
        .await
        .unwrap();
    let earliest = svc.wallet_ledger_list(ann, 1, "").await.unwrap().entries[0].id;
    let together: Vec<WalletUpdate> = (1..=5).map(|i| update(ann, &[("gold", i)])).collect();
    svc.wallets_update(together, true).await.unwrap();

    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = svc.wallet_ledger_list(ann, 2, &cursor).await.unwrap();
        assert!(page.entries.len() <= 2);
        seen.extend(page.entries.iter().map(|e| (e.create_time_us, e.id)));
        match page.cursor {
            Some(next) => cursor = next,
            None => break,
        }
    }
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert_eq!(seen[5].1, earliest);
    let instant = &seen[..5];
    assert!(instant.iter().all(|(t, _)| *t == instant[0].0), "{seen:?}");
    assert!(instant[0].0 > seen[5].0);
    let mut ids: Vec<Uuid> = instant.iter().map(|(_, id)| *id).collect();
    let listed = ids.clone();
    ids.sort_by_key(|id| std::cmp::Reverse(id.to_string()));
    assert_eq!(listed, ids);
}

/// The ledger's entries page newest first whether they are new or older:
/// on SQLite new entries wait in a table of their own until the writer moves
/// them into the indexed one (migration 10), at the default interval
/// usually between ann's fourth and fifth updates (the SQLite-only
/// `ledger_entries_move_into_the_indexed_table` pins where each entry is).
/// Pages, metadata updates and modules' SQL on `wallet_ledger` find an
/// entry wherever it is.
pub(crate) async fn ledger_finds_entries_before_and_after_their_move<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let bob = user(&store, "bob").await;
    for i in 1..=4 {
        svc.wallet_update(update(ann, &[("gold", i)]), true)
            .await
            .unwrap();
    }
    // The SQLite writer moves entries after a commit at least 50 ms after
    // its last move; a write after that commit's returns once it has run.
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    svc.wallet_update(update(bob, &[("gold", 1)]), true)
        .await
        .unwrap();
    svc.wallet_update(update(bob, &[("gold", 2)]), true)
        .await
        .unwrap();
    for i in 5..=6 {
        svc.wallet_update(update(ann, &[("gold", i)]), true)
            .await
            .unwrap();
    }

    let first = svc.wallet_ledger_list(ann, 4, "").await.unwrap();
    let cursor = first.cursor.clone().expect("a second page");
    let second = svc.wallet_ledger_list(ann, 4, &cursor).await.unwrap();
    assert_eq!(second.cursor, None);
    let listed: Vec<Wallet> = first
        .entries
        .iter()
        .chain(&second.entries)
        .map(|e| serde_json::from_str(&e.changeset).unwrap())
        .collect();
    let expected: Vec<Wallet> = (1..=6).rev().map(|i| changes(&[("gold", i)])).collect();
    assert_eq!(listed, expected);
    assert!(first.entries.iter().all(|e| e.user_id == ann));
    assert_eq!(ledger_count(&store, ann).await, 6);
    assert_eq!(ledger_count(&store, bob).await, 2);

    // Metadata updates find the newest entry and the oldest.
    for entry in [&first.entries[0], &second.entries[1]] {
        let updated = svc
            .wallet_ledger_update(entry.id, r#"{"checked":true}"#)
            .await
            .unwrap();
        assert_eq!(updated.id, entry.id);
        assert_eq!(updated.changeset, entry.changeset);
        let metadata: serde_json::Value = serde_json::from_str(&updated.metadata).unwrap();
        assert_eq!(metadata["checked"], true);
        assert_eq!(metadata["reason"], "test");
    }
    // Modules' SQL reads the same metadata, oldest first.
    let rows = store
        .sql_query(
            "SELECT metadata FROM wallet_ledger WHERE user_id = $1 ORDER BY create_time",
            vec![SqlValue::Text(ann.to_string())],
            10,
        )
        .await
        .unwrap();
    let checked: Vec<bool> = rows
        .iter()
        .map(|r| match &r[0].1 {
            SqlValue::Text(t) => serde_json::from_str::<serde_json::Value>(t).unwrap()["checked"]
                .as_bool()
                .unwrap_or(false),
            other => panic!("metadata is {other:?}"),
        })
        .collect();
    assert_eq!(checked, [true, false, false, false, false, true]);
}

/// 100 tasks × 1,000 increments of one wallet: every one lands, each with a
/// ledger entry and an answer one step of its own (the PostgreSQL backend
/// applies the increments gathered in a batch together).
pub(crate) async fn hot_wallet_increments_are_exact<B: Backend>() {
    const TASKS: i64 = 100;
    const EACH: i64 = 1_000;
    let (_b, store) = B::store().await;
    let svc = Arc::new(service(&store));
    let ann = user(&store, "ann").await;
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let svc = svc.clone();
            tokio::spawn(async move {
                let mut balances = Vec::with_capacity(EACH as usize);
                for _ in 0..EACH {
                    let r = svc
                        .wallet_update(update(ann, &[("coins", 1)]), true)
                        .await
                        .unwrap();
                    let before = r.previous.get("coins").copied().unwrap_or(0);
                    assert_eq!(r.updated["coins"], before + 1);
                    balances.push(r.updated["coins"]);
                }
                balances
            })
        })
        .collect();
    let mut balances = Vec::new();
    for t in tasks {
        balances.extend(t.await.unwrap());
    }
    // Each increment saw its own step: the answers are the balances 1 to
    // 100,000, each once, as if the increments had run one at a time.
    balances.sort_unstable();
    assert!(
        balances.iter().copied().eq(1..=TASKS * EACH),
        "the increments' answers are not one step each"
    );
    assert_eq!(
        balance(&store, ann).await,
        changes(&[("coins", TASKS * EACH)])
    );
    assert_eq!(ledger_count(&store, ann).await, TASKS * EACH);
}

/// Many users' wallets changed at once (what the PostgreSQL backend
/// applies in batches): every increment lands exactly once on its own
/// user, each answer's previous and updated wallets are one change apart,
/// and payments that would overdraw fail alone, next to ones that apply.
pub(crate) async fn many_wallets_change_at_once<B: Backend>() {
    const USERS: usize = 20;
    const TASKS: usize = 40;
    const EACH: usize = 50;
    let (_b, store) = B::store().await;
    let svc = Arc::new(service(&store));
    let mut users = Vec::new();
    for i in 0..USERS {
        users.push(user(&store, &format!("u{i}")).await);
    }
    let users = Arc::new(users);
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let (svc, users) = (svc.clone(), users.clone());
            tokio::spawn(async move {
                let mut refused = 0;
                for n in 0..EACH {
                    let who = users[(t + n) % USERS];
                    // Every fifth change of a task tries to pay 1,000 gems,
                    // which no one ever has.
                    if n % 5 == 4 {
                        let e = svc
                            .wallet_update(update(who, &[("coins", 1), ("gems", -1_000)]), true)
                            .await
                            .unwrap_err();
                        assert_eq!(e.code, Code::InvalidArgument);
                        refused += 1;
                        continue;
                    }
                    let r = svc
                        .wallet_update(update(who, &[("coins", 1)]), true)
                        .await
                        .unwrap();
                    assert_eq!(r.user_id, who);
                    let before = r.previous.get("coins").copied().unwrap_or(0);
                    assert_eq!(r.updated["coins"], before + 1);
                }
                refused
            })
        })
        .collect();
    let refused = super::total(tasks).await;
    assert_eq!(refused, TASKS * EACH / 5);
    // Each user got the same number of increments: the tasks walk the
    // users round robin, each from its own offset.
    let each_user = (TASKS * EACH * 4 / 5 / USERS) as i64;
    for &who in users.iter() {
        assert_eq!(balance(&store, who).await, changes(&[("coins", each_user)]));
        assert_eq!(ledger_count(&store, who).await, each_user);
    }
}

pub(crate) async fn concurrent_decrements_never_go_below_zero<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = Arc::new(service(&store));
    let ann = user(&store, "ann").await;
    svc.wallet_update(update(ann, &[("coins", 100)]), false)
        .await
        .unwrap();
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let svc = svc.clone();
            tokio::spawn(async move {
                svc.wallet_update(update(ann, &[("coins", -1)]), false)
                    .await
                    .map(|r| r.updated["coins"])
            })
        })
        .collect();
    let mut paid = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(left) => {
                assert!(left >= 0);
                paid += 1;
            }
            Err(e) => assert_eq!(e.code, Code::InvalidArgument),
        }
    }
    assert_eq!(paid, 100);
    assert_eq!(balance(&store, ann).await, changes(&[("coins", 0)]));
}

pub(crate) async fn multi_update_is_all_or_nothing<B: Backend>() {
    let (_b, store) = B::store().await;
    let svc = service(&store);
    let ann = user(&store, "ann").await;
    let obj = || {
        StorageWrite::new(
            ObjectId::new("inv", "sword", ann).unwrap(),
            r#"{"n":1}"#.into(),
            "",
            ReadPermission::OwnerRead,
            WritePermission::OwnerWrite,
        )
        .unwrap()
    };
    let build = |gold: i64| {
        let mut u = MultiUpdate::new(Access::Server);
        u.accounts.push((
            ann,
            AccountUpdate {
                display_name: Some("Ann the Bold".into()),
                ..AccountUpdate::default()
            },
        ));
        u.writes.push(obj());
        u.wallets.push(update(ann, &[("gold", gold)]));
        u.update_ledger = true;
        u
    };
    // The wallet part fails: the account and the object are untouched.
    let e = svc.multi_update(build(-1)).await.unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    let account = store.get_account(ann).await.unwrap().unwrap();
    assert_eq!(account.user.display_name, "");
    let objects = svc
        .read(
            Access::Server,
            vec![ObjectId::new("inv", "sword", ann).unwrap()],
        )
        .await
        .unwrap();
    assert!(objects.is_empty());
    assert_eq!(ledger_count(&store, ann).await, 0);

    let done = svc.multi_update(build(5)).await.unwrap();
    assert_eq!(done.acks.len(), 1);
    assert_eq!(done.wallets[0].updated, changes(&[("gold", 5)]));
    let account = store.get_account(ann).await.unwrap().unwrap();
    assert_eq!(account.user.display_name, "Ann the Bold");
    assert_eq!(balance(&store, ann).await, changes(&[("gold", 5)]));
}
