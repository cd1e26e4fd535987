//! The SQL of the SQLite backend: one function per store operation, each
//! given the connection it runs on (a reader's or the writer's), and the
//! mapping of SQLite errors to [`StoreError`]. Every statement goes through
//! `prepare_cached`, so each connection parses it once.

use std::borrow::Cow;

use ludus_core::model::{
    Account, AccountUpdate, Identity, NewUser, Revocations, User, UserAuth, UserRef,
};
use ludus_core::store::{StoreError, StoreResult};
use ludus_core::token::TokenKind;
use rusqlite::types::{ToSqlOutput, Type, ValueRef};
use rusqlite::{Connection, ErrorCode, OptionalExtension as _, Row, ToSql, params};
use uuid::Uuid;

/// The columns of [`User`], in the order [`user_from_row`] reads them.
macro_rules! user_columns {
    () => {
        "u.id, u.username, u.display_name, u.avatar_url, u.lang_tag, u.location, u.timezone, u.metadata, \
         u.facebook_id, u.google_id, u.gamecenter_id, u.steam_id, u.facebook_instant_game_id, u.apple_id, \
         u.edge_count, u.create_time, u.update_time"
    };
}
pub(super) use user_columns;
const USER_COLUMNS: usize = 17;

/// The columns [`user_from_row`] reads, for other modules' statements.
pub(super) const USER_SELECT: &str = user_columns!();

macro_rules! auth_select {
    ($from:literal) => {
        concat!(
            "SELECT u.id, u.username, u.password, u.disable_time FROM ",
            $from
        )
    };
}

/// A UUID as the lower-case hyphenated text stored in SQLite, without allocating.
pub(super) struct IdText([u8; 36]);

impl IdText {
    pub(super) fn new(id: Uuid) -> IdText {
        let mut buf = [0u8; 36];
        id.hyphenated().encode_lower(&mut buf);
        IdText(buf)
    }
}

impl ToSql for IdText {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(ValueRef::Text(&self.0)))
    }
}

pub(super) fn uuid_at(row: &Row<'_>, idx: usize) -> rusqlite::Result<Uuid> {
    let text = row.get_ref(idx)?.as_str()?;
    Uuid::parse_str(text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

/// Email addresses are stored lower-cased; allocate only when there is something to lower.
pub(super) fn lower(email: &str) -> Cow<'_, str> {
    if email.chars().any(char::is_uppercase) {
        Cow::Owned(email.to_lowercase())
    } else {
        Cow::Borrowed(email)
    }
}

/// The user of a row in [`user_columns`] order.
pub(super) fn user_from_row(row: &Row<'_>) -> rusqlite::Result<User> {
    user_ref_from_row(row).map(|u| u.to_user())
}

/// The user of a row in [`user_columns`] order, borrowing its strings from
/// the row (valid until the statement steps again).
pub(super) fn user_ref_from_row<'r>(row: &'r Row<'_>) -> rusqlite::Result<UserRef<'r>> {
    let text = |i: usize| -> rusqlite::Result<&'r str> {
        match row.get_ref(i)? {
            ValueRef::Null => Ok(""),
            v => Ok(v.as_str()?),
        }
    };
    Ok(UserRef {
        id: uuid_at(row, 0)?,
        username: text(1)?,
        display_name: text(2)?,
        avatar_url: text(3)?,
        lang_tag: text(4)?,
        location: text(5)?,
        timezone: text(6)?,
        metadata: text(7)?,
        facebook_id: text(8)?,
        google_id: text(9)?,
        gamecenter_id: text(10)?,
        steam_id: text(11)?,
        facebook_instant_game_id: text(12)?,
        apple_id: text(13)?,
        edge_count: row.get(14)?,
        online: false,
        create_time: row.get(15)?,
        update_time: row.get(16)?,
    })
}

fn auth_from_row(row: &Row<'_>) -> rusqlite::Result<UserAuth> {
    Ok(UserAuth {
        id: uuid_at(row, 0)?,
        username: row.get(1)?,
        password_hash: row.get(2)?,
        disable_time: row.get(3)?,
    })
}

/// Maps an SQLite error to the store's outcomes; unique violations name the
/// clashing column in their message (`UNIQUE constraint failed: users.email`).
pub(super) fn map_err(e: rusqlite::Error) -> StoreError {
    let rusqlite::Error::SqliteFailure(failure, message) = &e else {
        return StoreError::Backend(e.to_string());
    };
    match failure.code {
        ErrorCode::ConstraintViolation => {
            match message
                .as_deref()
                .and_then(|m| m.strip_prefix("UNIQUE constraint failed: "))
            {
                Some("users.username") => StoreError::UsernameTaken,
                Some("console_users.username" | "console_users.email") => {
                    StoreError::ConsoleUserTaken
                }
                Some("console_acl_template.name") => StoreError::AclTemplateTaken,
                Some("groups.name") => {
                    StoreError::Group(ludus_core::group::GroupRefusal::NameInUse)
                }
                Some("users.id") => StoreError::Backend("user id already exists".into()),
                Some(column) if column.starts_with("users.") || column == "user_device.id" => {
                    StoreError::IdentityTaken
                }
                _ => StoreError::Backend(e.to_string()),
            }
        }
        ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
            StoreError::Unavailable("database is busy, try again".into())
        }
        ErrorCode::DiskFull
        | ErrorCode::SystemIoFailure
        | ErrorCode::CannotOpen
        | ErrorCode::ReadOnly => StoreError::Unavailable(e.to_string()),
        _ => StoreError::Backend(e.to_string()),
    }
}

/// Runs a statement without parameters or rows (transaction control), cached like the rest.
pub(super) fn exec(conn: &Connection, sql: &str) -> StoreResult<()> {
    conn.prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute([]))
        .map(drop)
        .map_err(map_err)
}

pub(super) fn find_by_identity(
    conn: &Connection,
    identity: &Identity,
) -> StoreResult<Option<UserAuth>> {
    if let Identity::Social(provider, id) = identity {
        let sql = format!(
            "SELECT u.id, u.username, u.password, u.disable_time FROM users u WHERE u.{} = ?1",
            provider.column()
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
        return stmt
            .query_row([id.as_str()], auth_from_row)
            .optional()
            .map_err(map_err);
    }
    let (sql, key) = match identity {
        Identity::Device(id) => (
            auth_select!("user_device d JOIN users u ON u.id = d.user_id WHERE d.id = ?1"),
            Cow::Borrowed(id.as_str()),
        ),
        Identity::Custom(id) => (
            auth_select!("users u WHERE u.custom_id = ?1"),
            Cow::Borrowed(id.as_str()),
        ),
        Identity::Email(email) => (auth_select!("users u WHERE u.email = ?1"), lower(email)),
        Identity::Username(name) => (
            auth_select!("users u WHERE u.username = ?1"),
            Cow::Borrowed(name.as_str()),
        ),
        Identity::Social(..) => unreachable!("answered above"),
    };
    let mut stmt = conn.prepare_cached(sql).map_err(map_err)?;
    stmt.query_row([key.as_ref()], auth_from_row)
        .optional()
        .map_err(map_err)
}

pub(super) fn find_auth(conn: &Connection, id: Uuid) -> StoreResult<Option<UserAuth>> {
    let mut stmt = conn
        .prepare_cached(auth_select!("users u WHERE u.id = ?1"))
        .map_err(map_err)?;
    stmt.query_row([IdText::new(id)], auth_from_row)
        .optional()
        .map_err(map_err)
}

/// Inserts the user and its identity; runs inside the writer's savepoint, so
/// a failure after the first insert leaves nothing behind.
/// An empty text as SQL NULL (ids an account does not have).
fn non_empty(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}

pub(super) fn import_account(
    conn: &Connection,
    import: &ludus_core::model::AccountImport,
) -> StoreResult<Vec<ludus_core::storage::ObjectId>> {
    let user = import.user_id();
    let id = IdText::new(user);
    let a = &import.account;
    let u = &a.user;
    match import.into {
        None => {
            let taken: Option<i64> = conn
                .query_row("SELECT 1 FROM users WHERE id = ?1", params![id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(map_err)?;
            if taken.is_some() {
                return Err(StoreError::UserIdTaken);
            }
            conn.prepare_cached(
                "INSERT INTO users (id, username, display_name, avatar_url, lang_tag, location,
                    timezone, metadata, wallet, email, custom_id, facebook_id, google_id,
                    gamecenter_id, steam_id, facebook_instant_game_id, apple_id, create_time,
                    update_time, verify_time, disable_time)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                    ?17, ?18, ?19, ?20, ?21)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    id,
                    u.username,
                    u.display_name,
                    u.avatar_url,
                    u.lang_tag,
                    u.location,
                    u.timezone,
                    u.metadata,
                    a.wallet,
                    a.email.as_deref().map(lower),
                    a.custom_id,
                    non_empty(&u.facebook_id),
                    non_empty(&u.google_id),
                    non_empty(&u.gamecenter_id),
                    non_empty(&u.steam_id),
                    non_empty(&u.facebook_instant_game_id),
                    non_empty(&u.apple_id),
                    u.create_time,
                    u.update_time,
                    a.verify_time,
                    a.disable_time
                ])
            })
            .map_err(map_err)?;
            let mut device = conn
                .prepare_cached("INSERT INTO user_device (id, user_id) VALUES (?1, ?2)")
                .map_err(map_err)?;
            for d in &a.devices {
                device.execute(params![d, id]).map_err(map_err)?;
            }
        }
        Some(_) => {
            let changed = conn
                .prepare_cached("UPDATE users SET metadata = ?2, wallet = ?3 WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute(params![id, u.metadata, a.wallet]))
                .map_err(map_err)?;
            if changed == 0 {
                return Err(StoreError::NotFound);
            }
        }
    }
    let mut old = conn
        .prepare_cached("SELECT collection, key FROM storage WHERE user_id = ?1")
        .map_err(map_err)?;
    let replaced = old
        .query_map(params![id], |r| {
            Ok(ludus_core::storage::ObjectId {
                collection: r.get(0)?,
                key: r.get(1)?,
                user_id: user,
            })
        })
        .map_err(map_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(map_err)?;
    conn.prepare_cached("DELETE FROM storage WHERE user_id = ?1")
        .and_then(|mut stmt| stmt.execute(params![id]))
        .map_err(map_err)?;
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO storage (collection, key, user_id, value, version, read, write,
                create_time, update_time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .map_err(map_err)?;
    for o in &import.objects {
        insert
            .execute(params![
                o.collection,
                o.key,
                id,
                o.value,
                o.version,
                o.read.as_i64(),
                o.write.as_i64(),
                o.create_time,
                o.update_time
            ])
            .map_err(map_err)?;
    }
    Ok(replaced)
}

pub(super) fn create_user(conn: &Connection, user: &NewUser) -> StoreResult<()> {
    let id = IdText::new(user.id);
    let (email, custom_id) = match &user.identity {
        Identity::Email(email) => (Some(lower(email)), None),
        Identity::Custom(custom) => (None, Some(custom.as_str())),
        Identity::Device(_) | Identity::Username(_) | Identity::Social(..) => (None, None),
    };
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO users (id, username, email, custom_id, password, create_time, update_time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        )
        .map_err(map_err)?;
    if let Err(e) = insert.execute(params![
        id,
        user.username,
        email,
        custom_id,
        user.password_hash,
        user.create_time
    ]) {
        return Err(match map_err(e) {
            // A taken identity wins: the caller then signs in to that account.
            StoreError::UsernameTaken if identity_exists(conn, &user.identity)? => {
                StoreError::IdentityTaken
            }
            other => other,
        });
    }
    if let Identity::Device(device) = &user.identity {
        let mut insert = conn
            .prepare_cached("INSERT INTO user_device (id, user_id) VALUES (?1, ?2)")
            .map_err(map_err)?;
        insert.execute(params![device, id]).map_err(map_err)?;
    }
    if let Identity::Social(provider, social_id) = &user.identity {
        // Inside the writer's savepoint with the insert above: a taken id
        // undoes the whole registration.
        let sql = format!("UPDATE users SET {} = ?2 WHERE id = ?1", provider.column());
        conn.prepare_cached(&sql)
            .and_then(|mut stmt| stmt.execute(params![id, social_id]))
            .map_err(map_err)?;
    }
    Ok(())
}

fn identity_exists(conn: &Connection, identity: &Identity) -> StoreResult<bool> {
    match identity {
        // The username is the identity here, and it is what clashed.
        Identity::Username(_) => Ok(false),
        _ => Ok(find_by_identity(conn, identity)?.is_some()),
    }
}

pub(super) fn get_account(conn: &Connection, id: Uuid) -> StoreResult<Option<Account>> {
    // One read transaction, so the user and its devices come from one snapshot.
    exec(conn, "BEGIN")?;
    let account = read_account(conn, id);
    // Ends the read transaction whatever the outcome; a read has nothing to roll back.
    let end = exec(conn, "COMMIT");
    let account = account?;
    end?;
    Ok(account)
}

fn read_account(conn: &Connection, id: Uuid) -> StoreResult<Option<Account>> {
    let id = IdText::new(id);
    let mut stmt = conn
        .prepare_cached(concat!(
            "SELECT ",
            user_columns!(),
            ", u.wallet, u.email, u.custom_id, u.verify_time, u.disable_time FROM users u WHERE u.id = ?1"
        ))
        .map_err(map_err)?;
    let account = stmt
        .query_row([&id], |row| {
            Ok(Account {
                user: user_from_row(row)?,
                wallet: row.get(USER_COLUMNS)?,
                email: row.get(USER_COLUMNS + 1)?,
                devices: Vec::new(),
                custom_id: row.get(USER_COLUMNS + 2)?,
                verify_time: row.get(USER_COLUMNS + 3)?,
                disable_time: row.get(USER_COLUMNS + 4)?,
            })
        })
        .optional()
        .map_err(map_err)?;
    let Some(mut account) = account else {
        return Ok(None);
    };
    let mut devices = conn
        .prepare_cached("SELECT id FROM user_device WHERE user_id = ?1")
        .map_err(map_err)?;
    account.devices = devices
        .query_map([&id], |row| row.get(0))
        .map_err(map_err)?
        .collect::<Result<_, _>>()
        .map_err(map_err)?;
    account.devices.sort_unstable();
    Ok(Some(account))
}

pub(super) fn update_account(
    conn: &Connection,
    id: Uuid,
    update: &AccountUpdate,
    now: i64,
) -> StoreResult<()> {
    let mut stmt = conn
        .prepare_cached(
            "UPDATE users SET
                 username     = coalesce(?2, username),
                 display_name = coalesce(?3, display_name),
                 avatar_url   = coalesce(?4, avatar_url),
                 lang_tag     = coalesce(?5, lang_tag),
                 location     = coalesce(?6, location),
                 timezone     = coalesce(?7, timezone),
                 metadata     = coalesce(?8, metadata),
                 update_time  = ?9
             WHERE id = ?1",
        )
        .map_err(map_err)?;
    let changed = stmt
        .execute(params![
            IdText::new(id),
            update.username,
            update.display_name,
            update.avatar_url,
            update.lang_tag,
            update.location,
            update.timezone,
            update.metadata,
            now
        ])
        .map_err(map_err)?;
    if changed == 0 {
        Err(StoreError::NotFound)
    } else {
        Ok(())
    }
}

/// Devices go with the user through `ON DELETE CASCADE`.
pub(super) fn delete_user(conn: &Connection, id: Uuid) -> StoreResult<bool> {
    // Groups the user is the only superadmin of go with the user, as in
    // Nakama; the user's other memberships go by cascade. Both in the
    // writer's savepoint for this write.
    conn.prepare_cached(crate::ORPHANED_GROUPS_DELETE_SQLITE)
        .and_then(|mut s| s.execute([IdText::new(id)]))
        .map_err(map_err)?;
    let mut stmt = conn
        .prepare_cached("DELETE FROM users WHERE id = ?1")
        .map_err(map_err)?;
    Ok(stmt.execute([IdText::new(id)]).map_err(map_err)? > 0)
}

pub(super) fn get_users(
    conn: &Connection,
    ids: &[Uuid],
    usernames: &[String],
) -> StoreResult<Vec<User>> {
    // One statement text for any number of keys: the lists travel as JSON arrays.
    let ids: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    let ids = serde_json::to_string(&ids).map_err(|e| StoreError::Backend(e.to_string()))?;
    let usernames =
        serde_json::to_string(usernames).map_err(|e| StoreError::Backend(e.to_string()))?;
    let mut stmt = conn
        .prepare_cached(concat!(
            "SELECT ",
            user_columns!(),
            " FROM users u
              WHERE u.id IN (SELECT value FROM json_each(?1))
                 OR u.username IN (SELECT value FROM json_each(?2))"
        ))
        .map_err(map_err)?;
    let rows = stmt
        .query_map([ids, usernames], user_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn users_after(conn: &Connection, after: Uuid, limit: usize) -> StoreResult<Vec<User>> {
    let mut stmt = conn
        .prepare_cached(concat!(
            "SELECT ",
            user_columns!(),
            " FROM users u WHERE u.id > ?1 ORDER BY u.id LIMIT +?2"
        ))
        .map_err(map_err)?;
    let rows = stmt
        .query_map(params![IdText::new(after), limit as i64], user_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn revoke_token(
    conn: &Connection,
    token_id: &str,
    kind: TokenKind,
    expires_at: i64,
) -> StoreResult<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO revoked_token (token_id, kind, expires_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (token_id, kind) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)",
        )
        .map_err(map_err)?;
    stmt.execute(params![token_id, kind.as_str(), expires_at])
        .map(drop)
        .map_err(map_err)
}

pub(super) fn revoke_user_sessions(conn: &Connection, user: Uuid, cutoff: i64) -> StoreResult<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO user_session_cutoff (user_id, cutoff) VALUES (?1, ?2)
             ON CONFLICT (user_id) DO UPDATE SET cutoff = max(cutoff, excluded.cutoff)",
        )
        .map_err(map_err)?;
    stmt.execute(params![IdText::new(user), cutoff])
        .map(drop)
        .map_err(map_err)
}

/// Bans (or, with `None`, unbans) users; on the writer, so one transaction.
pub(super) fn set_users_banned(
    conn: &Connection,
    ids: &[Uuid],
    at: Option<i64>,
) -> StoreResult<()> {
    let mut stmt = conn
        .prepare_cached("UPDATE users SET disable_time = ?2 WHERE id = ?1")
        .map_err(map_err)?;
    for id in ids {
        let updated = stmt
            .execute(params![IdText::new(*id), at])
            .map_err(map_err)?;
        if let (1.., Some(at)) = (updated, at) {
            revoke_user_sessions(conn, *id, at)?;
        }
    }
    Ok(())
}

/// Purges expired token revocations and returns the rest; runs on the writer.
pub(super) fn load_revocations(conn: &Connection, now: i64) -> StoreResult<Revocations> {
    let purged = conn
        .prepare_cached("DELETE FROM revoked_token WHERE expires_at <= ?1")
        .and_then(|mut stmt| stmt.execute([now]))
        .map_err(map_err)?;
    if purged > 0 {
        tracing::debug!(purged, "purged expired token revocations");
    }
    let mut revocations = Revocations::default();
    let mut stmt = conn
        .prepare_cached("SELECT token_id, kind, expires_at FROM revoked_token")
        .map_err(map_err)?;
    let mut rows = stmt.query([]).map_err(map_err)?;
    while let Some(row) = rows.next().map_err(map_err)? {
        let kind: String = row.get(1).map_err(map_err)?;
        match TokenKind::parse(&kind) {
            Some(kind) => revocations.tokens.push((
                row.get(0).map_err(map_err)?,
                kind,
                row.get(2).map_err(map_err)?,
            )),
            None => tracing::warn!(kind, "ignoring token revocation of unknown kind"),
        }
    }
    let mut stmt = conn
        .prepare_cached("SELECT user_id, cutoff FROM user_session_cutoff")
        .map_err(map_err)?;
    let users = stmt
        .query_map([], |row| Ok((uuid_at(row, 0)?, row.get(1)?)))
        .map_err(map_err)?;
    revocations.users = users.collect::<Result<_, _>>().map_err(map_err)?;
    Ok(revocations)
}

#[cfg(test)]
mod tests {
    /// Regression: SQLite (since 3.47) plans a bare bound parameter in
    /// `LIMIT` with its value, so binding it again marks the statement
    /// stale and every call prepared the statement anew (2 % of a
    /// 1,000-friend listing, more of a short page). `LIMIT +?` keeps the
    /// value out of the plan; this keeps every statement of the backend so.
    #[test]
    fn no_statement_limits_by_a_bare_parameter() {
        let bare = concat!("LIMIT", " ?");
        for (file, source) in [
            ("chat.rs", include_str!("chat.rs")),
            ("connection.rs", include_str!("connection.rs")),
            ("leaderboard.rs", include_str!("leaderboard.rs")),
            ("links.rs", include_str!("links.rs")),
            ("mod.rs", include_str!("mod.rs")),
            ("queries.rs", include_str!("queries.rs")),
            ("social.rs", include_str!("social.rs")),
            ("storage.rs", include_str!("storage.rs")),
            ("writer.rs", include_str!("writer.rs")),
        ] {
            assert!(
                !source.contains(bare),
                "sqlite/{file} binds a bare LIMIT parameter: write `LIMIT +?`"
            );
        }
    }
}
