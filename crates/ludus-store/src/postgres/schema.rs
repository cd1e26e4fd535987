//! Schema versions on PostgreSQL: reading the applied version and applying
//! the embedded migrations (`ludus migrate up`), each in one transaction
//! together with its `schema_migrations` row, so a migration is either fully
//! applied and recorded or not at all.

use ludus_core::unix_now;
use tokio_postgres::Client;

use crate::OpenError;
use crate::migrate::{self, MigrationInfo, MigrationReport, MigrationStatus};

/// Highest applied version, 0 when the database has no `schema_migrations` table.
pub(super) async fn current_version(client: &Client) -> Result<i64, tokio_postgres::Error> {
    let exists: bool = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        return Ok(0);
    }
    client
        .query_one(
            "SELECT coalesce(max(version), 0)::int8 FROM schema_migrations",
            &[],
        )
        .await
        .map(|r| r.get(0))
}

pub(super) async fn status(client: &Client, target: &str) -> Result<MigrationStatus, OpenError> {
    let current = current_version(client)
        .await
        .map_err(|e| database(target, &e))?;
    let pending = migrate::pending(migrate::POSTGRES, current)
        .map(MigrationInfo::from)
        .collect();
    Ok(MigrationStatus {
        backend: "postgres",
        current,
        latest: migrate::latest(migrate::POSTGRES),
        pending,
    })
}

pub(super) async fn migrate_up(
    client: &mut Client,
    target: &str,
) -> Result<MigrationReport, OpenError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                 version    BIGINT NOT NULL PRIMARY KEY,
                 name       TEXT   NOT NULL,
                 applied_at BIGINT NOT NULL
             )",
        )
        .await
        .map_err(|e| database(target, &e))?;
    let from = current_version(client)
        .await
        .map_err(|e| database(target, &e))?;
    let latest = migrate::latest(migrate::POSTGRES);
    if from > latest {
        return Err(OpenError::TooNew {
            target: target.to_owned(),
            current: from,
            latest,
        });
    }
    let mut applied = Vec::new();
    let mut current = from;
    for m in migrate::pending(migrate::POSTGRES, from) {
        let failed = |e: tokio_postgres::Error| OpenError::Migration {
            version: m.version,
            name: m.name,
            message: describe(&e),
            current,
        };
        let tx = client.transaction().await.map_err(failed)?;
        tx.batch_execute(m.sql).await.map_err(failed)?;
        // A concurrent `migrate up` that got here first makes this insert fail,
        // rolling this copy of the migration back.
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            &[&m.version, &m.name, &unix_now()],
        )
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        tracing::info!(
            backend = "postgres",
            version = m.version,
            name = m.name,
            "applied migration"
        );
        current = m.version;
        applied.push(MigrationInfo::from(m));
    }
    Ok(MigrationReport {
        backend: "postgres",
        from,
        to: current,
        applied,
    })
}

fn database(target: &str, e: &tokio_postgres::Error) -> OpenError {
    OpenError::Database {
        target: target.to_owned(),
        message: describe(e),
    }
}

/// The server's own message when there is one; tokio-postgres' top-level
/// text is only "db error".
pub(super) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}
