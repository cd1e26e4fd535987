//! The console's users on the PostgreSQL backend: each call is one
//! statement (a change finds its user and updates it in the same one).

use ludus_core::console::{ConsoleUser, ConsoleUserAuth, ConsoleUserChange};
use ludus_core::console_acl::Acl;
use ludus_core::store::ConsoleUserKey;
use tokio_postgres::{Client, Row};
use uuid::Uuid;

use super::errors::Failure;

const COLUMNS: &str = "id, username, email, acl, mfa_required, create_time, update_time, \
     tokens_after_ms, password, disable_time";

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
            create_time: row.try_get(5)?,
            update_time: row.try_get(6)?,
            tokens_after_ms: row.try_get(7)?,
        },
        password_hash: row.try_get(8)?,
        disabled: row.try_get::<_, Option<i64>>(9)?.is_some_and(|t| t != 0),
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
    let (acl, hash, since) = match change {
        ConsoleUserChange::Acl(acl) => (Some(acl.to_json()), None, i64::MAX),
        ConsoleUserChange::Password {
            hash,
            unchanged_since_ms,
        } => (
            None,
            Some(hash.as_str()),
            unchanged_since_ms.unwrap_or(i64::MAX),
        ),
        ConsoleUserChange::SignOut => (None, None, i64::MAX),
    };
    let now = (!matches!(change, ConsoleUserChange::SignOut)).then_some(now_ms / 1000);
    let sql = format!(
        "UPDATE console_users SET acl = coalesce($3, acl), password = coalesce($4, password), \
         update_time = coalesce($5, update_time), tokens_after_ms = $6 \
         WHERE id = ({FIND}) AND tokens_after_ms <= $7 RETURNING {COLUMNS}"
    );
    let row = client
        .query_opt(&sql, &[&id, &name, &acl, &hash, &now, &now_ms, &since])
        .await?;
    match row {
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
