//! The console's operations on the SQLite backend: the wipes, the delete of
//! chat history, and the audit log. Writes run on the writer inside its
//! transaction (so a wipe is all or nothing), reads on the reader threads.

use ludus_core::console_ops::{AuditEntry, AuditQuery, Wipe};
use ludus_core::store::StoreResult;
use rusqlite::types::Value;
use rusqlite::{Connection, Row, params};
use uuid::Uuid;

use super::queries::{IdText, map_err, uuid_at};

/// Groups left with no account to run them when every account but the
/// system user goes: those with a superadmin, none of them the system user.
const ORPHANS_OF_ACCOUNTS: &str = "DELETE FROM groups
  WHERE id IN (SELECT group_id FROM group_edge WHERE state = 0)
    AND id NOT IN (SELECT group_id FROM group_edge WHERE state = 0 AND user_id = ?1)";

pub(super) fn wipe(conn: &Connection, what: Wipe) -> StoreResult<u64> {
    let system = IdText::new(Uuid::nil());
    let exec = |sql: &str| conn.execute(sql, []).map_err(map_err);
    let exec_system = |sql: &str| conn.execute(sql, [&system]).map_err(map_err);
    let deleted = match what {
        Wipe::Storage => exec("DELETE FROM storage")?,
        Wipe::Accounts => {
            exec_system(ORPHANS_OF_ACCOUNTS)?;
            // The ledger's tables at once: the per-account trigger would
            // scan them once for every account.
            exec_system("DELETE FROM wallet_ledger_indexed WHERE user_id <> ?1")?;
            exec_system("DELETE FROM wallet_ledger_recent WHERE user_id <> ?1")?;
            exec_system("DELETE FROM users WHERE id <> ?1")?
        }
        Wipe::AllData => {
            for table in [
                "storage",
                "wallet_ledger_indexed",
                "wallet_ledger_recent",
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
                exec(&format!("DELETE FROM {table}"))?;
            }
            exec_system("DELETE FROM user_device WHERE user_id <> ?1")?;
            exec_system("DELETE FROM users WHERE id <> ?1")?
        }
    };
    Ok(deleted as u64)
}

pub(super) fn delete_messages(
    conn: &Connection,
    before_us: Option<i64>,
    ids: &[Uuid],
) -> StoreResult<u64> {
    let mut deleted = 0;
    if let Some(before) = before_us {
        deleted += conn
            .execute("DELETE FROM message WHERE create_time < ?1", [before])
            .map_err(map_err)?;
    }
    if !ids.is_empty() {
        let ids: Vec<String> = ids.iter().map(Uuid::to_string).collect();
        let ids = serde_json::to_string(&ids).unwrap_or_default();
        deleted += conn
            .execute(
                "DELETE FROM message WHERE id IN (SELECT value FROM json_each(?1))",
                [ids],
            )
            .map_err(map_err)?;
    }
    Ok(deleted as u64)
}

pub(super) fn audit_add(conn: &Connection, e: &AuditEntry) -> StoreResult<()> {
    conn.prepare_cached(
        "INSERT INTO console_audit_log (id, create_time, console_user_id, console_username,
                email, resource, action, message, metadata)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .and_then(|mut s| {
        s.execute(params![
            IdText::new(e.id),
            e.create_time_us,
            IdText::new(e.console_user_id),
            e.console_username,
            e.email,
            e.resource,
            e.action,
            e.message,
            e.metadata,
        ])
    })
    .map_err(map_err)?;
    Ok(())
}

fn entry_from_row(r: &Row<'_>) -> rusqlite::Result<AuditEntry> {
    Ok(AuditEntry {
        id: uuid_at(r, 0)?,
        create_time_us: r.get(1)?,
        console_user_id: uuid_at(r, 2)?,
        console_username: r.get(3)?,
        email: r.get(4)?,
        resource: r.get(5)?,
        action: r.get(6)?,
        message: r.get(7)?,
        metadata: r.get(8)?,
    })
}

pub(super) fn audit_list(conn: &Connection, q: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
    let mut sql = String::from(
        "SELECT id, create_time, console_user_id, console_username, email, resource, action,
                message, metadata
           FROM console_audit_log WHERE 1 = 1",
    );
    let mut values: Vec<Value> = Vec::new();
    let mut bind = |sql: &mut String, clause: &str, value: Value| {
        values.push(value);
        sql.push_str(&clause.replace('?', &format!("?{}", values.len())));
    };
    let f = &q.filter;
    if !f.username.is_empty() {
        bind(
            &mut sql,
            " AND console_username = ?",
            f.username.clone().into(),
        );
    }
    if let Some(resource) = f.resource {
        bind(&mut sql, " AND resource = ?", i64::from(resource).into());
    }
    if f.action != 0 {
        bind(&mut sql, " AND action = ?", i64::from(f.action).into());
    }
    if let Some(after) = f.after_us {
        bind(&mut sql, " AND create_time > ?", after.into());
    }
    if let Some(before) = f.before_us {
        bind(&mut sql, " AND create_time < ?", before.into());
    }
    let older = q.position.is_none_or(|p| p.older);
    if let Some(p) = q.position {
        values.push(p.time_us.into());
        values.push(p.id.to_string().into());
        let (t, i) = (values.len() - 1, values.len());
        let cmp = if older { "<" } else { ">" };
        sql.push_str(&format!(" AND (create_time, id) {cmp} (?{t}, ?{i})"));
    }
    let dir = if older { "DESC" } else { "ASC" };
    values.push((q.limit as i64 + 1).into());
    sql.push_str(&format!(
        " ORDER BY create_time {dir}, id {dir} LIMIT +?{}",
        values.len()
    ));
    let mut stmt = conn.prepare(&sql).map_err(map_err)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(values), entry_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}
