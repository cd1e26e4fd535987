//! What the PostgreSQL unit tests share: a migrated store on a database of
//! its own in the test cluster (`ludus_testkit::postgres_database`), and
//! users with a device each.

use ludus_core::Store;
use ludus_core::model::{Identity, NewUser};
use uuid::Uuid;

use super::PgStore;
use crate::StoreOptions;
use crate::address::{Address, parse};

/// A store on a fresh, migrated database; the directory holds the
/// migration's scratch files and must outlive the store.
pub(super) async fn store() -> (PgStore, tempfile::TempDir) {
    let url = tokio::task::spawn_blocking(ludus_testkit::postgres_database)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    crate::migrate_up(&url, dir.path()).await.unwrap();
    let Address::Postgres(config) = parse(&url).unwrap() else {
        panic!("{url} is not a PostgreSQL address");
    };
    let store = PgStore::open(*config, &StoreOptions::default())
        .await
        .unwrap();
    (store, dir)
}

/// A new user named `name` whose device id is `{name}-device-0001`.
pub(super) async fn user(store: &PgStore, name: &str) -> Uuid {
    let id = Uuid::new_v4();
    store
        .create_user(NewUser {
            id,
            username: name.to_owned(),
            identity: Identity::Device(format!("{name}-device-0001")),
            password_hash: None,
            create_time: 1_700_000_000,
        })
        .await
        .unwrap();
    id
}
