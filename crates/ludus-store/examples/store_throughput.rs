//! Measures the store alone on the two hot paths of sign-in: device
//! registration (a failed look-up, then `create_user`) and login (a
//! successful look-up), with many requests in flight as a server has.
//!
//! ```text
//! cargo run --release -p ludus-store --example store_throughput -- [sqlite|postgres] [users] [in-flight]
//! ```
//!
//! SQLite runs in a temporary folder; PostgreSQL on a fresh database from
//! `ludus-testkit` (a throwaway local server, or `LUDUS_TEST_POSTGRES_URL`).
//! The async side runs on one worker thread.

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt as _;
use futures_util::stream;
use ludus_core::model::{Identity, NewUser};
use ludus_store::StoreOptions;
use uuid::Uuid;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let backend = args.first().map_or("sqlite", String::as_str).to_owned();
    let users: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let in_flight: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(256);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run(&backend, users, in_flight));
}

async fn run(backend: &str, users: usize, in_flight: usize) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let address = match backend {
        "sqlite" => String::new(),
        "postgres" => {
            let url = tokio::task::spawn_blocking(ludus_testkit::postgres_database)
                .await
                .expect("test database");
            ludus_store::migrate_up(&url, dir.path())
                .await
                .expect("migrate up");
            url
        }
        other => panic!("unknown backend {other:?}, use sqlite or postgres"),
    };
    let store = ludus_store::open(&address, dir.path(), StoreOptions::default())
        .await
        .expect("store opens");
    println!("{backend}: {users} users, {in_flight} requests in flight");

    let rate = measure(users, in_flight, |i| {
        let store = Arc::clone(&store);
        async move {
            let identity = Identity::Device(format!("bench-device-{i:012}"));
            assert!(
                store
                    .find_user_by_identity(&identity)
                    .await
                    .unwrap()
                    .is_none()
            );
            let user = NewUser {
                id: Uuid::new_v4(),
                username: format!("bench{i}"),
                identity,
                password_hash: None,
                create_time: 1_700_000_000,
            };
            store.create_user(user).await.unwrap();
        }
    })
    .await;
    println!("register (find miss + create): {rate:>9.0} /s");

    let rate = measure(users, in_flight, |i| {
        let store = Arc::clone(&store);
        async move {
            let identity = Identity::Device(format!("bench-device-{i:012}"));
            assert!(
                store
                    .find_user_by_identity(&identity)
                    .await
                    .unwrap()
                    .is_some()
            );
        }
    })
    .await;
    println!("login (find hit):              {rate:>9.0} /s");
    store.close().await;
}

/// Runs `op(0..n)` with `in_flight` at a time and returns operations per second.
async fn measure<F, Fut>(n: usize, in_flight: usize, op: F) -> f64
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    stream::iter(0..n)
        .map(op)
        .buffer_unordered(in_flight)
        .collect::<Vec<()>>()
        .await;
    n as f64 / started.elapsed().as_secs_f64()
}
