//! Helpers for Ludus's integration tests: a real PostgreSQL database per test,
//! real `redis-server` processes ([`RedisServer`]) and free local ports. Test-only; never a dependency of shipped code.
//!
//! [`postgres_database`] returns the URL of a fresh, empty, uniquely named
//! database. With `LUDUS_TEST_POSTGRES_URL` set (a server URL such as
//! `postgres://postgres@127.0.0.1:5432`) databases are created on that
//! server. Otherwise the first call starts a throwaway cluster for this test
//! process (see [`postgres`]) that goes away when the process exits.
//!
//! Nothing here skips a test silently: when PostgreSQL cannot be had, the
//! call panics and says what is missing.

mod postgres;
mod redis;

pub use redis::RedisServer;

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// Environment variable naming an existing server to create test databases on.
pub const POSTGRES_URL_ENV: &str = "LUDUS_TEST_POSTGRES_URL";

/// A TCP port on 127.0.0.1 that was free a moment ago, and whose predecessor
/// was free too: a server started on it also binds its gRPC API on
/// `socket.port - 1`.
pub fn free_port() -> u16 {
    let mut last = None;
    for _ in 0..100 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .unwrap_or_else(|e| panic!("cannot bind a free port on 127.0.0.1: {e}"));
        if port > 1 && TcpListener::bind(("127.0.0.1", port - 1)).is_ok() {
            return port;
        }
        last = Some(port);
    }
    panic!("no free port with a free predecessor on 127.0.0.1 (last tried {last:?})")
}

/// The URL of the PostgreSQL server tests use, without a database name:
/// `LUDUS_TEST_POSTGRES_URL` when set, else the throwaway cluster of this process.
pub fn postgres_server_url() -> String {
    match std::env::var(POSTGRES_URL_ENV) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => postgres::cluster().url(),
    }
}

/// The URL of a new, empty database with a name no other test uses.
pub fn postgres_database() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let server = postgres_server_url();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "ludus_test_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    postgres::create_database(&server, &name);
    with_database(&server, &name)
}

/// `server` with its database part replaced by `database`, query kept.
pub fn with_database(server: &str, database: &str) -> String {
    let (scheme, rest) = server.split_once("://").unwrap_or(("postgres", server));
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    match query {
        Some(query) => format!("{scheme}://{authority}/{database}?{query}"),
        None => format!("{scheme}://{authority}/{database}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_replaces_the_path_only() {
        assert_eq!(with_database("postgres://u@h:1", "d"), "postgres://u@h:1/d");
        assert_eq!(
            with_database("postgres://u:p@h:1/old", "d"),
            "postgres://u:p@h:1/d"
        );
        assert_eq!(
            with_database("postgresql://u@h:1/old?sslmode=disable", "d"),
            "postgresql://u@h:1/d?sslmode=disable"
        );
        assert_eq!(with_database("u@h:1", "d"), "postgres://u@h:1/d");
    }

    #[test]
    fn free_ports_are_usable() {
        let port = free_port();
        assert!(port > 0);
        TcpListener::bind(("127.0.0.1", port)).expect("port is free");
    }
}
