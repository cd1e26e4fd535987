//! SQLite-only behaviour: the data folder and file are created on open,
//! the database runs in WAL mode, and status never creates a file.

use ludus_store::{MigrationInfo, StoreOptions};

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

#[tokio::test]
async fn status_of_a_missing_database_creates_nothing() {
    let root = tempfile::tempdir().unwrap();
    let status = ludus_store::migrate_status("", root.path()).await.unwrap();
    assert_eq!((status.backend, status.current), ("sqlite", 0));
    assert_eq!(
        status.pending,
        [
            MigrationInfo {
                version: 1,
                name: "init"
            },
            MigrationInfo {
                version: 2,
                name: "chat_notifications"
            },
            MigrationInfo {
                version: 3,
                name: "storage_wallet"
            }
        ]
    );
    assert!(!root.path().join(ludus_store::SQLITE_FILE_NAME).exists());

    let report = ludus_store::migrate_up("", root.path()).await.unwrap();
    assert_eq!((report.from, report.to), (0, 3));
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
