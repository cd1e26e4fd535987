//! The console's operations on the PostgreSQL backend: the wipes (one
//! transaction each), the delete of chat history, and the audit log.

use ludus_core::console_ops::{AuditEntry, AuditQuery, Wipe};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};
use uuid::Uuid;

use super::errors::Failure;

/// Groups left with no account to run them when every account but the
/// system user goes: those with a superadmin, none of them the system user.
const ORPHANS_OF_ACCOUNTS: &str = "DELETE FROM groups
  WHERE id IN (SELECT group_id FROM group_edge WHERE state = 0)
    AND id NOT IN (SELECT group_id FROM group_edge WHERE state = 0 AND user_id = $1)";

pub(super) async fn wipe(client: &mut Client, what: Wipe) -> Result<u64, Failure> {
    let system = Uuid::nil();
    let tx = client.transaction().await?;
    let deleted = match what {
        Wipe::Storage => tx.execute("DELETE FROM storage", &[]).await?,
        Wipe::Accounts => {
            tx.execute(ORPHANS_OF_ACCOUNTS, &[&system]).await?;
            // The ledger has no foreign key to cascade (migration 8).
            tx.execute("DELETE FROM wallet_ledger WHERE user_id <> $1", &[&system])
                .await?;
            tx.execute("DELETE FROM users WHERE id <> $1", &[&system])
                .await?
        }
        Wipe::AllData => {
            for table in [
                "storage",
                "wallet_ledger",
                "message",
                "notification",
                "user_edge",
                "group_edge",
                "groups",
                "leaderboard_record",
                "leaderboard",
                "purchase",
                "subscription",
            ] {
                tx.execute(&format!("DELETE FROM {table}"), &[]).await?;
            }
            tx.execute("DELETE FROM user_device WHERE user_id <> $1", &[&system])
                .await?;
            tx.execute("DELETE FROM users WHERE id <> $1", &[&system])
                .await?
        }
    };
    tx.commit().await?;
    Ok(deleted)
}

pub(super) async fn delete_messages(
    client: &mut Client,
    before_us: Option<i64>,
    ids: &[Uuid],
) -> Result<u64, Failure> {
    let tx = client.transaction().await?;
    let mut deleted = 0;
    if let Some(before) = before_us {
        deleted += tx
            .execute("DELETE FROM message WHERE create_time < $1", &[&before])
            .await?;
    }
    if !ids.is_empty() {
        deleted += tx
            .execute("DELETE FROM message WHERE id = ANY($1::uuid[])", &[&ids])
            .await?;
    }
    tx.commit().await?;
    Ok(deleted)
}

pub(super) async fn audit_add(client: &Client, e: &AuditEntry) -> Result<(), Failure> {
    client
        .execute(
            "INSERT INTO console_audit_log (id, create_time, console_user_id, console_username,
                    email, resource, action, message, metadata)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[
                &e.id,
                &e.create_time_us,
                &e.console_user_id,
                &e.console_username,
                &e.email,
                &e.resource,
                &e.action,
                &e.message,
                &e.metadata,
            ],
        )
        .await?;
    Ok(())
}

fn entry_from_row(r: &Row) -> Result<AuditEntry, Failure> {
    Ok(AuditEntry {
        id: r.try_get(0)?,
        create_time_us: r.try_get(1)?,
        console_user_id: r.try_get(2)?,
        console_username: r.try_get(3)?,
        email: r.try_get(4)?,
        resource: r.try_get(5)?,
        action: r.try_get(6)?,
        message: r.try_get(7)?,
        metadata: r.try_get(8)?,
    })
}

pub(super) async fn audit_list(
    client: &Client,
    q: &AuditQuery,
) -> Result<Vec<AuditEntry>, Failure> {
    let mut sql = String::from(
        "SELECT id, create_time, console_user_id, console_username, email, resource, action,
                message, metadata
           FROM console_audit_log WHERE TRUE",
    );
    let mut values: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    let mut bind = |sql: &mut String, clause: &str, value: Box<dyn ToSql + Sync + Send>| {
        values.push(value);
        sql.push_str(&clause.replace('?', &format!("${}", values.len())));
    };
    let f = &q.filter;
    if !f.username.is_empty() {
        bind(
            &mut sql,
            " AND console_username = ?",
            Box::new(f.username.clone()),
        );
    }
    if let Some(resource) = f.resource {
        bind(&mut sql, " AND resource = ?", Box::new(resource));
    }
    if f.action != 0 {
        bind(&mut sql, " AND action = ?", Box::new(f.action));
    }
    if let Some(after) = f.after_us {
        bind(&mut sql, " AND create_time > ?", Box::new(after));
    }
    if let Some(before) = f.before_us {
        bind(&mut sql, " AND create_time < ?", Box::new(before));
    }
    let older = q.position.is_none_or(|p| p.older);
    if let Some(p) = q.position {
        values.push(Box::new(p.time_us));
        values.push(Box::new(p.id));
        let (t, i) = (values.len() - 1, values.len());
        let cmp = if older { "<" } else { ">" };
        sql.push_str(&format!(" AND (create_time, id) {cmp} (${t}, ${i})"));
    }
    let dir = if older { "DESC" } else { "ASC" };
    values.push(Box::new(q.limit as i64 + 1));
    sql.push_str(&format!(
        " ORDER BY create_time {dir}, id {dir} LIMIT ${}",
        values.len()
    ));
    let params: Vec<&(dyn ToSql + Sync)> = values
        .iter()
        .map(|v| v.as_ref() as &(dyn ToSql + Sync))
        .collect();
    let rows = client.query(&sql, &params).await?;
    rows.iter().map(entry_from_row).collect()
}
