//! One integration-test binary for the store: the shared conformance suite
//! (`suite`), instantiated once per backend, then checks that only make
//! sense for one backend. PostgreSQL tests run against a real server
//! (`ludus-testkit` starts one, or uses `LUDUS_TEST_POSTGRES_URL`).

#[macro_use]
mod suite;
mod postgres_only;
mod sqlite_only;

mod sqlite {
    store_test_suite!(crate::suite::SqliteBackend);
}

mod postgres {
    store_test_suite!(crate::suite::PostgresBackend);
}
