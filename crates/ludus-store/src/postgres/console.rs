//! The console's users on the PostgreSQL backend: each call is one
//! statement (a change finds its user and updates it in the same one).

use ludus_core::console::{ConsoleUser, ConsoleUserAuth, ConsoleUserChange};
use ludus_core::console_acl::Acl;
use ludus_core::store::ConsoleUserKey;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};
use uuid::Uuid;

use super::errors::Failure;

const COLUMNS: &str = "id, username, email, acl, mfa_required, create_time, update_time, \
     tokens_after_ms, password, disable_time, mfa_secret, mfa_recovery_codes";

/// The row of a key: by id, or by username, else email.
const FIND: &str = "SELECT id FROM console_users WHERE id = $1 OR username = $2 OR email = $2 \
     ORDER BY id = $1 DESC, username = $2 DESC LIMIT 1";

fn user_from_row(row: &Row) -> Result<ConsoleUserAuth, Failure> {
    let acl: String = row.try_get(3)?;
    Ok(ConsoleUserAuth {
        user: ConsoleUser {
            id: row.try_get(0)?,
            username: row.try_get(1)?,
            email: row.try_get(2)?,
            acl: Acl::from_json(&acl),
            mfa_required: row.try_get(4)?,
            mfa_enabled: row.try_get::<_, Option<Vec<u8>>>(10)?.is_some(),
            create_time: row.try_get(5)?,
            update_time: row.try_get(6)?,
            tokens_after_ms: row.try_get(7)?,
        },
        password_hash: row.try_get(8)?,
        disabled: row.try_get::<_, Option<i64>>(9)?.is_some_and(|t| t != 0),
        mfa_secret: row.try_get(10)?,
        mfa_recovery_codes: row.try_get(11)?,
    })
}

/// The parameters of [`FIND`]: an id never matches a name and back.
fn key_params(key: &ConsoleUserKey) -> (Option<Uuid>, Option<&str>) {
    match key {
        ConsoleUserKey::Id(id) => (Some(*id), None),
        ConsoleUserKey::Name(name) => (None, Some(name.as_str())),
    }
}

pub(super) async fn put(client: &Client, user: &ConsoleUser) -> Result<ConsoleUser, Failure> {
    let sql = format!(
        "INSERT INTO console_users (id, username, email, acl, mfa_required, create_time, \
         update_time, tokens_after_ms) VALUES ($1, $2, $3, $4, $5, $6, $8, $7)
         ON CONFLICT (username) DO UPDATE SET acl = excluded.acl, \
         mfa_required = excluded.mfa_required, update_time = excluded.update_time, \
         tokens_after_ms = excluded.tokens_after_ms
         RETURNING {COLUMNS}"
    );
    let row = client
        .query_one(
            &sql,
            &[
                &user.id,
                &user.username,
                &user.email,
                &user.acl.to_json(),
                &user.mfa_required,
                &user.create_time,
                &user.tokens_after_ms,
                &user.update_time,
            ],
        )
        .await?;
    Ok(user_from_row(&row)?.user)
}

pub(super) async fn get(
    client: &Client,
    key: &ConsoleUserKey,
) -> Result<Option<ConsoleUserAuth>, Failure> {
    let (id, name) = key_params(key);
    let sql = format!("SELECT {COLUMNS} FROM console_users WHERE id = ({FIND})");
    match client.query_opt(&sql, &[&id, &name]).await? {
        Some(row) => Ok(Some(user_from_row(&row)?)),
        None => Ok(None),
    }
}

pub(super) async fn list(client: &Client) -> Result<Vec<ConsoleUser>, Failure> {
    let sql = format!("SELECT {COLUMNS} FROM console_users WHERE id <> $1 ORDER BY username");
    let rows = client.query(&sql, &[&Uuid::nil()]).await?;
    rows.iter()
        .map(|r| user_from_row(r).map(|u| u.user))
        .collect()
}

pub(super) async fn change(
    client: &Client,
    key: &ConsoleUserKey,
    change: &ConsoleUserChange,
    now_ms: i64,
) -> Result<Option<ConsoleUser>, Failure> {
    let (id, name) = key_params(key);
    let now = now_ms / 1000;
    let since_max = i64::MAX;
    let acl_json;
    // `$1` and `$2` find the user; each change sets its own columns.
    let (set, guard, values): (&str, &str, Vec<&(dyn ToSql + Sync)>) = match change {
        ConsoleUserChange::Acl(acl) => {
            acl_json = acl.to_json();
            (
                "acl = $3, update_time = $4, tokens_after_ms = $5",
                "",
                vec![&acl_json, &now, &now_ms],
            )
        }
        ConsoleUserChange::Password {
            hash,
            unchanged_since_ms,
        } => (
            "password = $3, update_time = $4, tokens_after_ms = $5",
            "AND tokens_after_ms <= $6",
            vec![
                hash,
                &now,
                &now_ms,
                match unchanged_since_ms {
                    Some(since) => since,
                    None => &since_max,
                },
            ],
        ),
        ConsoleUserChange::SignOut => ("tokens_after_ms = $3", "", vec![&now_ms]),
        ConsoleUserChange::MfaRequired(required) => (
            "mfa_required = $3, update_time = $4",
            "",
            vec![required, &now],
        ),
        ConsoleUserChange::MfaSet {
            secret,
            recovery_codes,
            unchanged_since_ms,
        } => (
            "mfa_secret = $3, mfa_recovery_codes = $4, update_time = $5",
            "AND mfa_secret IS NULL AND tokens_after_ms <= $6",
            vec![secret, recovery_codes, &now, unchanged_since_ms],
        ),
        ConsoleUserChange::MfaRecoveryCodes { before, after } => (
            "mfa_recovery_codes = $3",
            "AND mfa_recovery_codes = $4",
            vec![after, before],
        ),
        ConsoleUserChange::MfaReset => (
            "mfa_secret = NULL, mfa_recovery_codes = NULL, update_time = $3, tokens_after_ms = $4",
            "",
            vec![&now, &now_ms],
        ),
    };
    let sql =
        format!("UPDATE console_users SET {set} WHERE id = ({FIND}) {guard} RETURNING {COLUMNS}");
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&id, &name];
    params.extend(values);
    match client.query_opt(&sql, &params).await? {
        Some(row) => Ok(Some(user_from_row(&row)?.user)),
        None => Ok(None),
    }
}

pub(super) async fn delete(client: &Client, username: &str) -> Result<bool, Failure> {
    let n = client
        .execute(
            "DELETE FROM console_users WHERE username = $1 AND id <> $2",
            &[&username, &Uuid::nil()],
        )
        .await?;
    Ok(n > 0)
}
