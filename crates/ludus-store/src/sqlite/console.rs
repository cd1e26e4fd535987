//! The console's users on the SQLite backend: writes run on the writer
//! inside its transaction, reads on the reader threads.

use ludus_core::console::{ConsoleUser, ConsoleUserAuth, ConsoleUserChange};
use ludus_core::console_acl::Acl;
use ludus_core::store::{ConsoleUserKey, StoreResult};
use rusqlite::{Connection, OptionalExtension as _, Row, params};

use super::queries::{IdText, map_err, uuid_at};

const COLUMNS: &str = "id, username, email, acl, mfa_required, create_time, update_time, \
     tokens_after_ms, password, disable_time, mfa_secret, mfa_recovery_codes";

fn user_from_row(row: &Row<'_>) -> rusqlite::Result<ConsoleUserAuth> {
    let acl: String = row.get(3)?;
    Ok(ConsoleUserAuth {
        user: ConsoleUser {
            id: uuid_at(row, 0)?,
            username: row.get(1)?,
            email: row.get(2)?,
            acl: Acl::from_json(&acl),
            mfa_required: row.get(4)?,
            mfa_enabled: row.get::<_, Option<Vec<u8>>>(10)?.is_some(),
            create_time: row.get(5)?,
            update_time: row.get(6)?,
            tokens_after_ms: row.get(7)?,
        },
        password_hash: row.get(8)?,
        disabled: row.get::<_, Option<i64>>(9)?.is_some_and(|t| t != 0),
        mfa_secret: row.get(10)?,
        mfa_recovery_codes: row.get(11)?,
    })
}

pub(super) fn put(conn: &Connection, user: &ConsoleUser) -> StoreResult<ConsoleUser> {
    let sql = format!(
        "INSERT INTO console_users (id, username, email, acl, mfa_required, create_time, \
         update_time, tokens_after_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?8, ?7)
         ON CONFLICT (username) DO UPDATE SET acl = excluded.acl, \
         mfa_required = excluded.mfa_required, update_time = excluded.update_time, \
         tokens_after_ms = excluded.tokens_after_ms
         RETURNING {COLUMNS}"
    );
    conn.query_row(
        &sql,
        params![
            IdText::new(user.id),
            user.username,
            user.email,
            user.acl.to_json(),
            user.mfa_required,
            user.create_time,
            user.tokens_after_ms,
            user.update_time
        ],
        user_from_row,
    )
    .map(|u| u.user)
    .map_err(map_err)
}

pub(super) fn get(conn: &Connection, key: &ConsoleUserKey) -> StoreResult<Option<ConsoleUserAuth>> {
    match key {
        ConsoleUserKey::Id(id) => conn.query_row(
            &format!("SELECT {COLUMNS} FROM console_users WHERE id = ?1"),
            params![IdText::new(*id)],
            user_from_row,
        ),
        ConsoleUserKey::Name(name) => conn.query_row(
            &format!(
                "SELECT {COLUMNS} FROM console_users WHERE username = ?1 OR email = ?1 \
                 ORDER BY username = ?1 DESC LIMIT 1"
            ),
            params![name],
            user_from_row,
        ),
    }
    .optional()
    .map_err(map_err)
}

pub(super) fn list(conn: &Connection) -> StoreResult<Vec<ConsoleUser>> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {COLUMNS} FROM console_users WHERE id <> ?1 ORDER BY username"
        ))
        .map_err(map_err)?;
    let rows = stmt
        .query_map(params![IdText::new(uuid::Uuid::nil())], user_from_row)
        .map_err(map_err)?;
    rows.map(|r| r.map(|u| u.user).map_err(map_err)).collect()
}

pub(super) fn change(
    conn: &Connection,
    key: &ConsoleUserKey,
    change: &ConsoleUserChange,
    now_ms: i64,
) -> StoreResult<Option<ConsoleUser>> {
    let Some(found) = get(conn, key)? else {
        return Ok(None);
    };
    let id = IdText::new(found.user.id);
    let now = now_ms / 1000;
    let run = |set: &str, guard: &str, values: &[&dyn rusqlite::ToSql]| {
        let sql =
            format!("UPDATE console_users SET {set} WHERE id = ?1 {guard} RETURNING {COLUMNS}");
        let mut all: Vec<&dyn rusqlite::ToSql> = vec![&id];
        all.extend_from_slice(values);
        conn.query_row(&sql, all.as_slice(), user_from_row)
            .optional()
            .map(|u| u.map(|u| u.user))
            .map_err(map_err)
    };
    match change {
        ConsoleUserChange::Acl(acl) => run(
            "acl = ?2, update_time = ?3, tokens_after_ms = ?4",
            "",
            &[&acl.to_json(), &now, &now_ms],
        ),
        ConsoleUserChange::Password {
            hash,
            unchanged_since_ms,
        } => run(
            "password = ?2, update_time = ?3, tokens_after_ms = ?4",
            "AND tokens_after_ms <= ?5",
            &[hash, &now, &now_ms, &unchanged_since_ms.unwrap_or(i64::MAX)],
        ),
        ConsoleUserChange::SignOut => run("tokens_after_ms = ?2", "", &[&now_ms]),
        ConsoleUserChange::MfaRequired(required) => {
            run("mfa_required = ?2, update_time = ?3", "", &[required, &now])
        }
        ConsoleUserChange::MfaSet {
            secret,
            recovery_codes,
            unchanged_since_ms,
        } => run(
            "mfa_secret = ?2, mfa_recovery_codes = ?3, update_time = ?4",
            "AND mfa_secret IS NULL AND tokens_after_ms <= ?5",
            &[secret, recovery_codes, &now, unchanged_since_ms],
        ),
        ConsoleUserChange::MfaRecoveryCodes { before, after } => run(
            "mfa_recovery_codes = ?2",
            "AND mfa_recovery_codes = ?3",
            &[after, before],
        ),
        ConsoleUserChange::MfaReset => run(
            "mfa_secret = NULL, mfa_recovery_codes = NULL, update_time = ?2, tokens_after_ms = ?3",
            "",
            &[&now, &now_ms],
        ),
    }
}

pub(super) fn delete(conn: &Connection, username: &str) -> StoreResult<bool> {
    conn.execute(
        "DELETE FROM console_users WHERE username = ?1 AND id <> ?2",
        params![username, IdText::new(uuid::Uuid::nil())],
    )
    .map(|n| n > 0)
    .map_err(map_err)
}
