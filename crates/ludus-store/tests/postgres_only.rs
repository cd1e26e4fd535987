//! PostgreSQL-only behaviour: explicit migrations, Nakama's address form,
//! unreachable servers and lost connections.

use std::time::Duration;

use ludus_core::model::Identity;
use ludus_core::store::StoreError;
use ludus_store::{OpenError, StoreOptions};

use crate::suite::{device, new_user, pg_exec};

async fn fresh_database() -> String {
    tokio::task::spawn_blocking(ludus_testkit::postgres_database)
        .await
        .expect("test database")
}

fn no_data_dir() -> &'static std::path::Path {
    std::path::Path::new("/nonexistent/ludus-data")
}

#[tokio::test]
async fn unmigrated_database_is_refused() {
    let url = fresh_database().await;
    let err = ludus_store::open(&url, no_data_dir(), StoreOptions::default())
        .await
        .err()
        .expect("refused");
    assert!(matches!(err, OpenError::NotMigrated { .. }), "{err:?}");
    assert!(err.to_string().contains("run `ludus migrate up`"), "{err}");
}

#[tokio::test]
async fn migrate_up_applies_pending_migrations_once() {
    let url = fresh_database().await;
    let status = ludus_store::migrate_status(&url, no_data_dir())
        .await
        .unwrap();
    assert_eq!((status.backend, status.current), ("postgres", 0));
    assert_eq!(status.pending, crate::suite::all_migrations());

    let report = ludus_store::migrate_up(&url, no_data_dir()).await.unwrap();
    assert_eq!((report.from, report.to), (0, status.latest));
    assert_eq!(report.applied, status.pending);

    let again = ludus_store::migrate_up(&url, no_data_dir()).await.unwrap();
    assert!(again.applied.is_empty());
    assert!(again.to_string().contains("nothing to apply"), "{again}");
    let store = ludus_store::open(&url, no_data_dir(), StoreOptions::default())
        .await
        .unwrap();
    assert_eq!(store.backend(), "postgres");
    store.close().await;
}

#[tokio::test]
async fn nakama_bare_address_form_opens() {
    let url = fresh_database().await;
    // postgres://postgres@127.0.0.1:PORT/db  ->  postgres@127.0.0.1:PORT/db
    let bare = url
        .split_once("://")
        .map(|(_, rest)| rest.to_owned())
        .unwrap();
    ludus_store::migrate_up(&bare, no_data_dir()).await.unwrap();
    let store = ludus_store::open(&bare, no_data_dir(), StoreOptions::default())
        .await
        .unwrap();
    store
        .create_user(new_user("bare", device("device-0000001")))
        .await
        .unwrap();
    store.close().await;
}

#[tokio::test]
async fn unreachable_server_fails_to_open() {
    let port = ludus_testkit::free_port();
    let address = format!("postgres://postgres@127.0.0.1:{port}/ludus");
    let err = ludus_store::open(&address, no_data_dir(), StoreOptions::default())
        .await
        .err()
        .expect("refused");
    assert!(matches!(err, OpenError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("check database.address"), "{err}");
}

#[tokio::test]
async fn lost_connections_are_unavailable_then_replaced() {
    let url = fresh_database().await;
    ludus_store::migrate_up(&url, no_data_dir()).await.unwrap();
    let store = ludus_store::open(&url, no_data_dir(), StoreOptions::default())
        .await
        .unwrap();
    store
        .create_user(new_user("survivor", device("device-0000001")))
        .await
        .unwrap();
    pg_exec(
        &url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .await;
    // The first call may still pick a dead connection; it must fail as
    // unavailable, never hang, and the pool must heal.
    let mut healed = false;
    for _ in 0..5 {
        match store
            .find_user_by_identity(&Identity::Username("survivor".into()))
            .await
        {
            Ok(found) => {
                assert!(found.is_some());
                healed = true;
                break;
            }
            Err(e) => assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(healed, "the pool opened new connections");
    store
        .create_user(new_user("after", device("device-0000002")))
        .await
        .unwrap();
    store.close().await;
}

/// Issue 11, hole 4 on PostgreSQL: module SQL refuses `COPY` and the
/// functions that read or write the database server's files, with a clear
/// error, and the next statement runs.
#[tokio::test]
async fn module_sql_cannot_touch_server_files() {
    use crate::suite::Backend as _;

    let (_backend, store) = crate::suite::PostgresBackend::store().await;
    for sql in [
        "COPY (SELECT 1) TO '/tmp/ludus-copy'",
        "SELECT pg_read_file('/etc/hostname')",
        "SELECT lo_import('/etc/hostname')",
    ] {
        match store.sql_query(sql, vec![], 100).await.unwrap_err() {
            StoreError::Sql(m) => assert!(m.contains("not allowed in module SQL"), "{sql}: {m}"),
            other => panic!("{sql}: expected a module sql error, got {other:?}"),
        }
        assert!(store.sql_exec(sql, vec![]).await.is_err(), "{sql}");
    }
    assert_eq!(
        store
            .sql_query("SELECT 1 AS one", vec![], 100)
            .await
            .unwrap()
            .len(),
        1
    );
}

/// One number from a query on a connection of its own.
async fn pg_i64(url: &str, sql: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(connection);
    let n: i64 = client.query_one(sql, &[]).await.expect("query").get(0);
    drop(client);
    let _ = driver.await;
    n
}

/// A new database's tables start with the statistics of empty tables, and
/// plans made from them (a foreign-key check that scans `users` whole) last
/// until the statistics change: the store analyzes tables that are still
/// filling up instead of waiting up to a minute for autovacuum. Updates
/// that leave the row count as it was (wallets, profiles) do not make it
/// analyze the table again; growth by more than half does.
#[tokio::test]
async fn young_tables_are_analyzed_as_they_fill() {
    let url = fresh_database().await;
    ludus_store::migrate_up(&url, no_data_dir()).await.unwrap();
    // Autovacuum off on users: any statistics it gets come from the store.
    pg_exec(&url, "ALTER TABLE users SET (autovacuum_enabled = false)").await;
    const MODS: &str =
        "SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = 'users'";
    const ANALYZED: &str = "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'users'";
    let wait_for = |sql: &'static str, want: fn(i64) -> bool| {
        let url = url.clone();
        async move {
            // PostgreSQL publishes a backend's counts when it goes idle, at
            // most once a second and at the latest after ten.
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            loop {
                let n = pg_i64(&url, sql).await;
                if want(n) {
                    return n;
                }
                assert!(std::time::Instant::now() < deadline, "{sql}: still {n}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };

    // Turned off: 200 sign-ups, and nothing analyzes the table.
    let off = StoreOptions {
        analyze_interval_ms: 0,
        ..StoreOptions::default()
    };
    let store = ludus_store::open(&url, no_data_dir(), off).await.unwrap();
    for i in 0..200 {
        let user = new_user(&format!("young{i}"), device(&format!("young-device-{i}")));
        store.create_user(user).await.unwrap();
    }
    wait_for(MODS, |n| n >= 200).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        pg_i64(&url, ANALYZED).await,
        0,
        "analyzed with the task off"
    );
    store.close().await;

    // On: the table has grown by more than half since (never) analyzed.
    let on = StoreOptions {
        analyze_interval_ms: 100,
        ..StoreOptions::default()
    };
    let store = ludus_store::open(&url, no_data_dir(), on).await.unwrap();
    wait_for(ANALYZED, |n| n == 1).await;
    assert!(pg_i64(&url, MODS).await < 200);

    // Every row updated three times: 600 changes, the same 200 rows. The
    // task ticks 15 times meanwhile and leaves the table alone.
    for round in 0..3 {
        pg_exec(
            &url,
            &format!("UPDATE users SET metadata = '{{\"round\": {round}}}'"),
        )
        .await;
    }
    wait_for(MODS, |n| n >= 600).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        pg_i64(&url, ANALYZED).await,
        1,
        "analyzed again after updates alone"
    );

    // 200 more users: the table has doubled since it was analyzed.
    for i in 200..400 {
        let user = new_user(&format!("young{i}"), device(&format!("young-device-{i}")));
        store.create_user(user).await.unwrap();
    }
    wait_for(ANALYZED, |n| n == 2).await;
    store.close().await;
}

/// The ledger has no foreign key on PostgreSQL (migration 8), so deleting a
/// user deletes its entries itself, and must not miss one that a wallet
/// update holding the user's row commits while the deletion waits for it.
/// Here a transaction of its own plays that update: it changes the user's
/// row and adds a ledger entry, the deletion starts and waits on the row,
/// then the transaction commits. A deletion that took its ledger snapshot
/// before the wait (the ledger first, or one statement for both) would
/// leave that entry behind.
#[tokio::test]
async fn a_user_deleted_while_a_wallet_update_holds_it_keeps_no_ledger() {
    use crate::suite::Backend as _;

    let (backend, store) = crate::suite::PostgresBackend::store().await;
    let url = backend.address();
    let ann = new_user("ann", device("device-0000001"));
    let bob = new_user("bob", device("device-0000002"));
    store.create_user(ann.clone()).await.unwrap();
    store.create_user(bob.clone()).await.unwrap();
    let entry = |user: uuid::Uuid| {
        format!(
            "INSERT INTO wallet_ledger (id, user_id, changeset, metadata, create_time, update_time) \
             VALUES ('{}', '{user}', '{{\"gold\":1}}', '{{}}', 1, 1)",
            uuid::Uuid::new_v4()
        )
    };
    backend.exec(&entry(bob.id)).await;

    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "BEGIN; UPDATE users SET wallet = '{{\"gold\":1}}' WHERE id = '{}'; {};",
            ann.id,
            entry(ann.id)
        ))
        .await
        .unwrap();
    let deleting = tokio::spawn({
        let store = store.clone();
        async move { store.delete_user(ann.id).await }
    });
    // The deletion waits on ann's row until the update commits.
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM users%'";
    let mut waited = false;
    for _ in 0..200 {
        if pg_i64(&url, waiting).await == 1 {
            waited = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(waited, "the deletion waits on the row the update holds");
    client.batch_execute("COMMIT").await.unwrap();
    assert!(deleting.await.unwrap().unwrap());
    drop(client);
    let _ = driver.await;

    let ledger_of =
        |user: uuid::Uuid| format!("SELECT count(*) FROM wallet_ledger WHERE user_id = '{user}'");
    assert_eq!(pg_i64(&url, &ledger_of(ann.id)).await, 0);
    assert_eq!(pg_i64(&url, &ledger_of(bob.id)).await, 1);
    store.close().await;
}
