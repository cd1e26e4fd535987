//! SQLite-only behaviour: the data folder and file are created on open,
//! the database runs in WAL mode, and status never creates a file.

use ludus_store::StoreOptions;

#[tokio::test]
async fn open_creates_the_data_dir_in_wal_mode() {
    let root = tempfile::tempdir().unwrap();
    let data_dir = root.path().join("nested").join("data");
    let store = ludus_store::open("", &data_dir, StoreOptions::default())
        .await
        .unwrap();
    assert_eq!(store.backend(), "sqlite");
    store.close().await;
    let path = data_dir.join(ludus_store::SQLITE_FILE_NAME);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

/// The writer and reader threads run as `SCHED_BATCH` (policy 3), so a
/// query queued to one of them does not preempt the thread that queued it;
/// in a niced process they keep the default policy (0) and the niceness.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn writer_and_readers_are_batch_scheduled() {
    let root = tempfile::tempdir().unwrap();
    let store = ludus_store::open("", root.path(), StoreOptions::default())
        .await
        .unwrap();
    // Thread names are cut to 15 bytes: ludus-sqlite-wr, ludus-sqlite-re.
    // A thread takes its name and sets its policy as it starts, which may
    // be just after open returns, and other tests' stores may be starting
    // too: wait a while for this store's threads to show up by name and
    // for every such thread to have the policy.
    let expected = |policy: i64, nice: i64| policy == if nice == 0 { 3 } else { 0 };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (writers, readers) = loop {
        let writers = ludus_core::sched::thread_policies("ludus-sqlite-wr");
        let readers = ludus_core::sched::thread_policies("ludus-sqlite-re");
        let all_set = writers
            .iter()
            .chain(&readers)
            .all(|(_, policy, nice)| expected(*policy, *nice));
        let all_named = !writers.is_empty() && readers.len() >= 2;
        if (all_set && all_named) || std::time::Instant::now() > deadline {
            break (writers, readers);
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    store.close().await;
    assert!(!writers.is_empty(), "no writer thread found");
    assert!(readers.len() >= 2, "readers: {readers:?}");
    for (comm, policy, nice) in writers.iter().chain(&readers) {
        assert!(
            expected(*policy, *nice),
            "{comm}: policy {policy}, nice {nice}"
        );
    }
}

#[tokio::test]
async fn status_of_a_missing_database_creates_nothing() {
    let root = tempfile::tempdir().unwrap();
    let status = ludus_store::migrate_status("", root.path()).await.unwrap();
    assert_eq!((status.backend, status.current), ("sqlite", 0));
    let all = crate::suite::all_migrations();
    assert_eq!(status.pending, all);
    assert!(!root.path().join(ludus_store::SQLITE_FILE_NAME).exists());

    let report = ludus_store::migrate_up("", root.path()).await.unwrap();
    let last = all.last().map(|m| m.version);
    assert_eq!((report.from, Some(report.to)), (0, last));
    let status = ludus_store::migrate_status("", root.path()).await.unwrap();
    assert!(status.pending.is_empty());
}

#[tokio::test]
async fn an_unwritable_data_dir_says_so() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let err = ludus_store::open("", &file.join("data"), StoreOptions::default())
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(err, ludus_store::OpenError::DataDir { .. }),
        "{err:?}"
    );
}

/// Issue 11, hole 4: `nk.sql_exec("ATTACH DATABASE '<any path>' AS x")`
/// then `CREATE TABLE x.t` created a SQLite file anywhere the server could
/// write, and the attachment stayed on the shared writer. Module SQL now
/// runs under an authorizer: ATTACH, DETACH, pragmas that are not read-only
/// and extension loading are refused, by `sql_exec` and `sql_query` alike,
/// and the next statement runs.
#[tokio::test]
async fn module_sql_cannot_attach_files_or_change_the_connection() {
    use ludus_core::store::{SqlValue, StoreError};

    let root = tempfile::tempdir().unwrap();
    let store = ludus_store::open("", &root.path().join("data"), StoreOptions::default())
        .await
        .unwrap();
    let planted = root.path().join("planted.db");
    let attach = format!("ATTACH DATABASE '{}' AS planted", planted.display());
    let refused = |e: StoreError, says: &str| match e {
        StoreError::Sql(m) => assert!(m.contains(says), "{m}"),
        other => panic!("expected a module sql error, got {other:?}"),
    };
    refused(
        store.sql_exec(&attach, vec![]).await.unwrap_err(),
        "ATTACH is not allowed",
    );
    refused(
        store.sql_query(&attach, vec![], 100).await.unwrap_err(),
        "ATTACH is not allowed",
    );
    let bound = "ATTACH DATABASE $1 AS planted";
    let path = vec![SqlValue::Text(planted.display().to_string())];
    refused(
        store.sql_exec(bound, path).await.unwrap_err(),
        "ATTACH is not allowed",
    );
    assert!(
        store
            .sql_exec("CREATE TABLE planted.t (x INTEGER)", vec![])
            .await
            .is_err()
    );
    assert!(!planted.exists(), "no file was created");
    refused(
        store
            .sql_exec("DETACH DATABASE temp", vec![])
            .await
            .unwrap_err(),
        "DETACH is not allowed",
    );
    for pragma in [
        "PRAGMA writable_schema = ON",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA temp_store_directory = '/tmp'",
        "PRAGMA query_only = ON",
    ] {
        refused(
            store.sql_exec(pragma, vec![]).await.unwrap_err(),
            "is not allowed in module SQL",
        );
    }
    refused(
        store
            .sql_query("SELECT load_extension('/tmp/evil.so')", vec![], 100)
            .await
            .unwrap_err(),
        "load_extension() is not allowed",
    );
    // Module SQL still works, read-only pragmas included.
    store
        .sql_exec("CREATE TABLE mine (x INTEGER)", vec![])
        .await
        .unwrap();
    let rows = store
        .sql_query("PRAGMA table_info(mine)", vec![], 100)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        store
            .sql_exec("INSERT INTO mine VALUES (1)", vec![])
            .await
            .unwrap(),
        1
    );
    store.close().await;
}

/// A module statement that never ends (an endless recursive CTE) held the
/// writer, and with it every write of the server, for ever; it is now
/// interrupted at `module_sql_timeout_ms` with a clear error, on the writer
/// and on a reader, and the next statement runs.
#[tokio::test]
async fn runaway_module_sql_is_interrupted() {
    use ludus_core::store::StoreError;

    let root = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        module_sql_timeout_ms: 300,
        ..StoreOptions::default()
    };
    let store = ludus_store::open("", &root.path().join("data"), options)
        .await
        .unwrap();
    let endless = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) \
                   SELECT count(*) FROM r";
    let started = std::time::Instant::now();
    for result in [
        store.sql_exec(endless, vec![]).await.map(|_| ()),
        store.sql_query(endless, vec![], 10).await.map(|_| ()),
    ] {
        match result.unwrap_err() {
            StoreError::Sql(m) => assert!(m.contains("longer than 300 ms"), "{m}"),
            other => panic!("expected a module sql error, got {other:?}"),
        }
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    store
        .sql_exec("CREATE TABLE after (x INTEGER)", vec![])
        .await
        .unwrap();
    store.close().await;
}

/// The schedule loop itself, ticking under paused tokio time: the test
/// moves the service's wall clock past each hourly boundary and lets the
/// loop run many ticks; each reset fires exactly once, a skipped hour fires
/// late and once, and the loop stops on its signal. (The suite's
/// `schedules_fire_once_per_period_across_restarts` covers restarts on
/// both backends.)
#[tokio::test(start_paused = true)]
async fn schedule_loop_fires_each_reset_once_under_paused_time() {
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use ludus_core::leaderboard::{Leaderboard, Operator, SortOrder};
    use ludus_core::leaderboard_service::{
        BoardSpec, Clock, LeaderboardService, ScheduleHooks, TournamentView,
    };

    use crate::suite::{Backend as _, SqliteBackend};

    #[derive(Default)]
    struct Resets(Mutex<Vec<i64>>);

    #[async_trait::async_trait]
    impl ScheduleHooks for Resets {
        async fn leaderboard_reset(&self, _: &Leaderboard, reset: i64) {
            self.0.lock().unwrap().push(reset);
        }
        async fn tournament_end(&self, _: &TournamentView, _: i64, _: i64) {}
        async fn tournament_reset(&self, _: &TournamentView, _: i64, _: i64) {}
    }

    // 2026-01-01T00:00:00Z.
    const HOUR0: i64 = 1_767_225_600;
    let (_backend, store) = SqliteBackend::store().await;
    let now = Arc::new(AtomicI64::new(HOUR0 + 30));
    let read = now.clone();
    let clock: Clock = Arc::new(move || read.load(Ordering::SeqCst));
    let service = Arc::new(LeaderboardService::with_clock(store, clock));
    let mut spec = BoardSpec::leaderboard("hourly");
    spec.sort_order = SortOrder::Descending;
    spec.operator = Operator::Best;
    spec.reset_schedule = "0 * * * *".into();
    service.create(spec).await.unwrap();

    let resets = Arc::new(Resets::default());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(service.clone().run_scheduler(resets.clone(), stopped));
    // Waits (in loop ticks, one a second) until `n` resets fired, then lets
    // a minute of ticks pass in which no more may fire. Paused time may
    // run ahead while a store call is on the SQLite threads, hence the wait.
    let settle = |n: usize| {
        let resets = resets.clone();
        async move {
            for _ in 0..100_000 {
                if resets.0.lock().unwrap().len() >= n {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            for _ in 0..60 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            assert_eq!(resets.0.lock().unwrap().len(), n);
        }
    };
    settle(0).await;
    now.store(HOUR0 + 3600 + 1, Ordering::SeqCst);
    settle(1).await;
    now.store(HOUR0 + 3600 + 500, Ordering::SeqCst);
    settle(1).await;
    now.store(HOUR0 + 7200, Ordering::SeqCst);
    settle(2).await;
    // Three hours pass while nothing ticks: the latest reset fires, once.
    now.store(HOUR0 + 5 * 3600 + 10, Ordering::SeqCst);
    settle(3).await;
    stop.send(true).unwrap();
    task.await.unwrap();
    assert_eq!(
        *resets.0.lock().unwrap(),
        vec![HOUR0 + 3600, HOUR0 + 7200, HOUR0 + 5 * 3600]
    );
}

/// New ledger entries wait in `wallet_ledger_recent` until the writer moves
/// them into `wallet_ledger_indexed` (migration 10): after a commit once
/// `ledger_merge_interval_ms` has passed since its last move, and when the
/// store closes. A page crosses both tables; metadata updates find an entry
/// in either. Modules' SQL writes through the `wallet_ledger` view with the
/// rows it changed as its count, and deleting a user takes its entries from
/// both tables.
#[tokio::test]
async fn ledger_entries_move_into_the_indexed_table() {
    use ludus_core::store::SqlValue;
    use ludus_core::wallet::WalletUpdate;

    use crate::suite::storage::{service, user};

    let root = tempfile::tempdir().unwrap();
    let open = |interval_ms| {
        let opts = StoreOptions {
            ledger_merge_interval_ms: interval_ms,
            ..StoreOptions::default()
        };
        ludus_store::open("", root.path(), opts)
    };
    // No move while the test runs, only at close.
    const NEVER: u64 = 3_600_000;
    let store = open(NEVER).await.unwrap();
    let svc = service(&store);
    let (ann, bob) = (user(&store, "ann").await, user(&store, "bob").await);
    let coin = |user, n: i64| WalletUpdate {
        user_id: user,
        changeset: [("coins".to_owned(), n)].into_iter().collect(),
        metadata: "{}".into(),
    };
    let n = SqlValue::Int;
    for i in 1..=3 {
        svc.wallet_update(coin(ann, i), true).await.unwrap();
    }
    svc.wallet_update(coin(bob, 1), true).await.unwrap();
    assert_eq!(ledger_table_counts(store.clone()).await, (n(4), n(0)));
    store.close().await;

    // Closing moved them; two more wait.
    let store = open(NEVER).await.unwrap();
    let svc = service(&store);
    for i in 4..=5 {
        svc.wallet_update(coin(ann, i), true).await.unwrap();
    }
    svc.wallet_update(coin(bob, 2), true).await.unwrap();
    assert_eq!(ledger_table_counts(store.clone()).await, (n(3), n(4)));
    let first = svc.wallet_ledger_list(ann, 3, "").await.unwrap();
    let second = svc
        .wallet_ledger_list(ann, 3, first.cursor.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(second.cursor, None);
    let listed: Vec<&str> = first
        .entries
        .iter()
        .chain(&second.entries)
        .map(|e| e.changeset.as_str())
        .collect();
    assert_eq!(
        listed,
        (1..=5)
            .rev()
            .map(|i| format!(r#"{{"coins":{i}}}"#))
            .collect::<Vec<_>>()
    );
    // The newest waits, the oldest was moved.
    for entry in [&first.entries[0], &second.entries[1]] {
        let updated = svc
            .wallet_ledger_update(entry.id, r#"{"checked":true}"#)
            .await
            .unwrap();
        assert_eq!(updated.metadata, r#"{"checked":true}"#);
    }

    // Modules write through the view.
    let recent = store
        .sql_query(
            "SELECT id FROM wallet_ledger_recent WHERE user_id = $1",
            vec![SqlValue::Text(bob.to_string())],
            1,
        )
        .await
        .unwrap();
    let SqlValue::Text(recent_id) = recent[0][0].1.clone() else {
        panic!("{recent:?}")
    };
    let module_id = uuid::Uuid::now_v7().to_string();
    let insert = "INSERT INTO wallet_ledger (id, user_id, changeset, create_time) \
                  VALUES ($1, $2, '{\"coins\":9}', 1)";
    let inserted = store
        .sql_exec(
            insert,
            vec![
                SqlValue::Text(module_id.clone()),
                SqlValue::Text(ann.to_string()),
            ],
        )
        .await
        .unwrap();
    assert_eq!(inserted, 1);
    let taken = store
        .sql_exec(
            insert,
            vec![SqlValue::Text(recent_id), SqlValue::Text(ann.to_string())],
        )
        .await
        .unwrap_err();
    assert!(taken.to_string().contains("UNIQUE"), "{taken}");
    assert_eq!(ledger_table_counts(store.clone()).await, (n(3), n(5)));
    let updated = store
        .sql_exec(
            "UPDATE wallet_ledger SET metadata = '{\"seen\":true}' WHERE user_id = $1",
            vec![SqlValue::Text(ann.to_string())],
        )
        .await
        .unwrap();
    assert_eq!(updated, 6);
    let deleted = store
        .sql_exec(
            "DELETE FROM wallet_ledger WHERE id = $1",
            vec![SqlValue::Text(module_id)],
        )
        .await
        .unwrap();
    assert_eq!(deleted, 1);

    // Bob's entries go with him, the waiting one and the moved one.
    assert!(store.delete_user(bob).await.unwrap());
    assert_eq!(ledger_table_counts(store.clone()).await, (n(2), n(3)));
    store.close().await;

    // With no interval the writer moves after every commit: once a later
    // write has returned, an earlier one's entry has moved.
    let store = open(0).await.unwrap();
    let svc = service(&store);
    svc.wallet_update(coin(ann, 6), true).await.unwrap();
    let carol = user(&store, "carol").await;
    let waiting = store
        .sql_query(
            "SELECT count(*) FROM wallet_ledger_recent WHERE user_id <> $1",
            vec![SqlValue::Text(carol.to_string())],
            1,
        )
        .await
        .unwrap();
    assert_eq!(waiting[0][0].1, n(0));
    assert_eq!(ledger_table_counts(store.clone()).await, (n(0), n(6)));
    store.close().await;
}

/// How many entries the recent and the indexed ledger tables hold.
async fn ledger_table_counts(
    store: std::sync::Arc<dyn ludus_core::Store>,
) -> (ludus_core::store::SqlValue, ludus_core::store::SqlValue) {
    let row = store
        .sql_query(
            "SELECT (SELECT count(*) FROM wallet_ledger_recent), \
                    (SELECT count(*) FROM wallet_ledger_indexed)",
            vec![],
            1,
        )
        .await
        .unwrap();
    (row[0][0].1.clone(), row[0][1].1.clone())
}
