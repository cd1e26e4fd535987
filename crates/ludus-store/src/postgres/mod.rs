//! The PostgreSQL backend: a pool of connections with prepared statements
//! (see [`pool`]), group commit (see [`batches`]) of registrations (see
//! [`register`]), single-wallet updates (see [`wallets`]) and single-object
//! storage writes (see [`object_writes`]), storage reads by id gathered the
//! same way (see [`object_reads`]), and single statements for everything
//! else. Serialization failures and deadlocks are retried here;
//! unique violations become `UsernameTaken` or `IdentityTaken` by
//! constraint name; lost connections become `Unavailable`.

mod analyze;
mod batches;
mod chat;
mod console;
mod console_ops;
mod console_records;
mod errors;
mod leaderboard;
mod links;
mod lookup;
mod module_sql;
mod object_reads;
mod object_writes;
mod pool;
mod profiles;
mod purchases;
mod register;
mod schema;
mod social;
mod statements;
mod storage;
#[cfg(test)]
mod testing;
mod wallets;

use async_trait::async_trait;
use ludus_core::chat::{ChannelKey, ChannelMessage, MessageBound};
use ludus_core::console::{ConsoleUser, ConsoleUserAuth, ConsoleUserChange};
use ludus_core::console_ops::{AuditEntry, AuditQuery, Wipe};
use ludus_core::console_records::{
    AccountNote, AclTemplate, ConsoleSetting, NoteWrite, NotesPosition,
};
use ludus_core::friend::{
    FriendBound, FriendOfFriend, FriendOp, FriendOutcome, FriendSink, FriendState,
};
use ludus_core::group::{
    Group, GroupFilter, GroupOp, GroupRole, GroupUpdate, GroupUser, RoleBound, RoleChange,
    UserGroup,
};
use ludus_core::leaderboard::{Leaderboard, LeaderboardRecord, RecordWrite, WriteOutcome};
use ludus_core::model::{
    Account, AccountUpdate, Identity, NewUser, Provider, Revocations, User, UserAuth, UserRef,
};
use ludus_core::multi_update::{MultiUpdate, MultiUpdateResult};
use ludus_core::notification::{Notification, NotificationUpdate};
use ludus_core::purchase::{IapListQuery, Purchase, Subscription};
use ludus_core::storage::{Access, ListQuery, ObjectId, StorageObject};
use ludus_core::store::{
    ConsoleUserKey, JoinOutcome, RankedScore, ScheduleKind, SqlRow, SqlValue, Store, StoreError,
    StoreResult, TournamentJoin,
};
use ludus_core::token::TokenKind;
use ludus_core::wallet::{LedgerBound, LedgerEntry};
use tokio_postgres::types::{FromSql, Type};
use tokio_postgres::{Config, Row};
use uuid::Uuid;

use crate::address::describe;
use crate::migrate::{self, MigrationReport, MigrationStatus};
use crate::{OpenError, StoreOptions};
use errors::{Failure, with_retry};
use object_reads::ObjectReads;
use object_writes::ObjectWrites;
use pool::Pool;
use register::Registrar;
use statements::{Stmt, USER_COLUMNS};
use wallets::Wallets;

/// A deleted user's wallet ledger (`delete_user`).
const LEDGER_DELETE: &str = "DELETE FROM wallet_ledger WHERE user_id = $1";

pub(crate) struct PgStore {
    pool: Pool,
    registrar: Registrar,
    wallets: Wallets,
    object_writes: ObjectWrites,
    object_reads: ObjectReads,
    lookups: lookup::Lookups,
    /// Listed users' profiles by row version (`database.profile_cache_entries`).
    profiles: Option<profiles::Profiles>,
    analyzer: analyze::Analyzer,
}

async fn connect_for_setup(
    config: &Config,
    target: &str,
) -> Result<tokio_postgres::Client, OpenError> {
    pool::connect(config).await.map_err(|e| OpenError::Connect {
        target: target.to_owned(),
        message: schema::describe(&e),
    })
}

impl PgStore {
    /// Runs a statement that returns at most one chat message row.
    async fn message_opt(
        &self,
        what: &'static str,
        stmt: Stmt,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> StoreResult<Option<ChannelMessage>> {
        with_retry(what, || async {
            let conn = self.pool.get().await?;
            let row = conn.client.query_opt(conn.stmt(stmt), params).await?;
            Ok(row.as_ref().map(chat::message_from_row).transpose()?)
        })
        .await
    }

    /// Checks the schema version, then opens the pool and the registration
    /// and look-up batchers.
    pub(crate) async fn open(config: Config, opts: &StoreOptions) -> Result<PgStore, OpenError> {
        let target = describe(&config);
        let client = connect_for_setup(&config, &target).await?;
        let current = schema::current_version(&client)
            .await
            .map_err(|e| OpenError::Database {
                target: target.clone(),
                message: schema::describe(&e),
            })?;
        drop(client);
        migrate::check_version(&target, current, migrate::POSTGRES)?;

        // Sign-in look-ups by device or custom id run batched on connections
        // of their own (`lookup.rs`), taken out of `max_open_conns`.
        let lookup_conns = (opts.max_open_conns / 2).clamp(1, 4);
        let general = StoreOptions {
            max_open_conns: opts.max_open_conns.saturating_sub(lookup_conns).max(1),
            ..opts.clone()
        };
        let lookup_pool = lookup::pool(&config, target.clone(), opts, lookup_conns);
        let pool = Pool::new(config, target.clone(), &general);
        // Open one connection of each now, so a bad setting fails here rather
        // than on the first request.
        for pool in [&pool, &lookup_pool] {
            pool.get().await.map_err(|e| OpenError::Connect {
                target: target.clone(),
                message: e.to_string(),
            })?;
        }
        // At most half the pool commits registration batches; the rest
        // serves everything else.
        let half = (pool.size() / 2).max(1);
        let registrar = Registrar::start(pool.clone(), opts.register_in_flight.clamp(1, half));
        let lookups = lookup::Lookups::start(lookup_pool, lookup_conns);
        // Single-wallet updates, single-object writes and reads go in
        // batches, each kind at most `batches_in_flight` at once: while they
        // run, the next gathers.
        let in_flight = opts.batches_in_flight.clamp(1, half);
        let wallets = Wallets::start(pool.clone(), in_flight);
        let object_writes = ObjectWrites::start(pool.clone(), in_flight);
        let object_reads = ObjectReads::start(pool.clone(), in_flight);
        tracing::info!(
            backend = "postgres",
            database = %target,
            schema_version = current,
            max_open_conns = pool.size() + lookup_conns,
            lookup_conns,
            "store open"
        );
        // Statistics of tables that are still filling up, so plans made
        // while they were empty do not outlive it.
        let analyzer = analyze::Analyzer::start(
            pool.clone(),
            std::time::Duration::from_millis(opts.analyze_interval_ms),
        );
        Ok(PgStore {
            pool,
            registrar,
            wallets,
            object_writes,
            object_reads,
            lookups,
            profiles: profiles::Profiles::new(opts.profile_cache_entries, profiles::MAX_AGE),
            analyzer,
        })
    }

    async fn auth(
        &self,
        stmt: Stmt,
        key: &(dyn tokio_postgres::types::ToSql + Sync),
    ) -> StoreResult<Option<UserAuth>> {
        with_retry("find user", || async {
            let conn = self.pool.get().await?;
            let row = conn.client.query_opt(conn.stmt(stmt), &[key]).await?;
            Ok(row.as_ref().map(auth_from_row).transpose()?)
        })
        .await
    }
}

pub(crate) async fn migrate_up(config: &Config) -> Result<MigrationReport, OpenError> {
    let target = describe(config);
    let mut client = connect_for_setup(config, &target).await?;
    schema::migrate_up(&mut client, &target).await
}

pub(crate) async fn migrate_status(config: &Config) -> Result<MigrationStatus, OpenError> {
    let target = describe(config);
    let client = connect_for_setup(config, &target).await?;
    schema::status(&client, &target).await
}

fn auth_from_row(row: &Row) -> Result<UserAuth, tokio_postgres::Error> {
    Ok(UserAuth {
        id: row.try_get(0)?,
        username: row.try_get(1)?,
        password_hash: row.try_get(2)?,
        disable_time: row.try_get(3)?,
    })
}

/// The user of a row in `user_columns!` order.
fn user_from_row(row: &Row) -> Result<User, tokio_postgres::Error> {
    user_ref_from_row(row).map(|u| u.to_user())
}

/// The user of a row in `user_columns!` order, borrowing its strings from
/// the row; `metadata` comes as `jsonb` or as text (see [`JsonbText`]).
fn user_ref_from_row(row: &Row) -> Result<UserRef<'_>, tokio_postgres::Error> {
    let text = |i: usize| -> Result<&str, tokio_postgres::Error> {
        Ok(row.try_get::<_, Option<&str>>(i)?.unwrap_or_default())
    };
    Ok(UserRef {
        id: row.try_get(0)?,
        username: text(1)?,
        display_name: text(2)?,
        avatar_url: text(3)?,
        lang_tag: text(4)?,
        location: text(5)?,
        timezone: text(6)?,
        metadata: row.try_get::<_, JsonbText<'_>>(7)?.0,
        facebook_id: text(8)?,
        google_id: text(9)?,
        gamecenter_id: text(10)?,
        steam_id: text(11)?,
        facebook_instant_game_id: text(12)?,
        apple_id: text(13)?,
        edge_count: row.try_get(14)?,
        online: false,
        create_time: row.try_get(15)?,
        update_time: row.try_get(16)?,
    })
}

/// A `jsonb` column's text, borrowed from its binary form (a version byte,
/// 1, then the text PostgreSQL writes for it), so a listing can select the
/// column itself rather than `::text`, which makes the server convert
/// and copy it once more; a `text` column (a statement that selects
/// `metadata::text`) is taken as it is.
pub(super) struct JsonbText<'a>(pub(super) &'a str);

impl<'a> FromSql<'a> for JsonbText<'a> {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        if *ty != Type::JSONB {
            return Ok(JsonbText(std::str::from_utf8(raw)?));
        }
        match raw.split_first() {
            Some((1, text)) => Ok(JsonbText(std::str::from_utf8(text)?)),
            _ => Err("unknown jsonb format version".into()),
        }
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSONB || <&str as FromSql>::accepts(ty)
    }
}

#[async_trait]
impl Store for PgStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn stats(&self) -> ludus_core::store::StoreStats {
        self.pool.stats()
    }

    async fn find_user_by_identity(&self, identity: &Identity) -> StoreResult<Option<UserAuth>> {
        match identity {
            Identity::Device(id) => self.lookups.find(lookup::Kind::Device, id).await,
            Identity::Custom(id) => self.lookups.find(lookup::Kind::Custom, id).await,
            Identity::Email(email) => {
                if email.chars().any(char::is_uppercase) {
                    self.auth(Stmt::FindByEmail, &email.to_lowercase()).await
                } else {
                    self.auth(Stmt::FindByEmail, email).await
                }
            }
            Identity::Username(name) => self.auth(Stmt::FindByUsername, name).await,
            Identity::Social(provider, id) => {
                let sql = format!(
                    "SELECT u.id, u.username, u.password, u.disable_time FROM users u WHERE u.{} = $1",
                    provider.column()
                );
                with_retry("find user", || async {
                    let conn = self.pool.get().await?;
                    let row = conn.client.query_opt(&sql, &[id]).await?;
                    Ok(row.as_ref().map(auth_from_row).transpose()?)
                })
                .await
            }
        }
    }

    async fn find_user_auth(&self, id: Uuid) -> StoreResult<Option<UserAuth>> {
        self.auth(Stmt::FindAuth, &id).await
    }

    async fn create_user(&self, user: NewUser) -> StoreResult<()> {
        if let Identity::Social(provider, id) = &user.identity {
            // Platform sign-ups are rare next to device ones: one plain
            // statement, outside the registration batches.
            let sql = format!(
                "INSERT INTO users (id, username, {}, create_time, update_time)
                 VALUES ($1, $2, $3, $4, $4)",
                provider.column()
            );
            return with_retry("register user", || async {
                let conn = self.pool.get().await?;
                conn.client
                    .execute(&sql, &[&user.id, &user.username, id, &user.create_time])
                    .await?;
                Ok(())
            })
            .await;
        }
        self.registrar.register(user).await
    }

    async fn get_account(&self, id: Uuid) -> StoreResult<Option<Account>> {
        with_retry("get account", || async {
            let conn = self.pool.get().await?;
            let Some(row) = conn
                .client
                .query_opt(conn.stmt(Stmt::GetAccount), &[&id])
                .await?
            else {
                return Ok(None);
            };
            let mut devices: Vec<String> = row.try_get(USER_COLUMNS + 5)?;
            // Byte order, whatever the database's collation.
            devices.sort_unstable();
            Ok(Some(Account {
                user: user_from_row(&row)?,
                wallet: row.try_get(USER_COLUMNS)?,
                email: row.try_get(USER_COLUMNS + 1)?,
                devices,
                custom_id: row.try_get(USER_COLUMNS + 2)?,
                verify_time: row.try_get(USER_COLUMNS + 3)?,
                disable_time: row.try_get(USER_COLUMNS + 4)?,
            }))
        })
        .await
    }

    async fn link_identity(
        &self,
        user: Uuid,
        identity: Identity,
        password_hash: Option<String>,
        now: i64,
    ) -> StoreResult<()> {
        links::link_identity(&self.pool, user, &identity, password_hash.as_deref(), now).await
    }

    async fn unlink_identity(&self, user: Uuid, identity: Identity, now: i64) -> StoreResult<bool> {
        links::unlink_identity(&self.pool, user, &identity, now).await
    }

    async fn update_account(&self, id: Uuid, update: AccountUpdate, now: i64) -> StoreResult<()> {
        let changed = with_retry("update account", || async {
            let conn = self.pool.get().await?;
            let changed = conn
                .client
                .execute(
                    conn.stmt(Stmt::UpdateAccount),
                    &[
                        &id,
                        &update.username,
                        &update.display_name,
                        &update.avatar_url,
                        &update.lang_tag,
                        &update.location,
                        &update.timezone,
                        &update.metadata,
                        &now,
                    ],
                )
                .await?;
            Ok::<_, Failure>(changed)
        })
        .await?;
        if changed == 0 {
            Err(StoreError::NotFound)
        } else {
            Ok(())
        }
    }

    async fn import_account(
        &self,
        import: &ludus_core::model::AccountImport,
    ) -> StoreResult<Vec<ObjectId>> {
        let user = import.user_id();
        let a = &import.account;
        let u = &a.user;
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        let email = a.email.as_deref().map(str::to_lowercase);
        let ids = [
            non_empty(&u.facebook_id),
            non_empty(&u.google_id),
            non_empty(&u.gamecenter_id),
            non_empty(&u.steam_id),
            non_empty(&u.facebook_instant_game_id),
            non_empty(&u.apple_id),
        ];
        with_retry("import account", || async {
            let mut conn = self.pool.get().await?;
            let tx = conn.client.transaction().await?;
            match import.into {
                None => {
                    let taken = tx
                        .query_opt("SELECT 1 FROM users WHERE id = $1", &[&user])
                        .await?;
                    if taken.is_some() {
                        return Err(StoreError::UserIdTaken.into());
                    }
                    tx.execute(
                        "INSERT INTO users (id, username, display_name, avatar_url, lang_tag,
                            location, timezone, metadata, wallet, email, custom_id, facebook_id,
                            google_id, gamecenter_id, steam_id, facebook_instant_game_id,
                            apple_id, create_time, update_time, verify_time, disable_time)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb, $9::text::jsonb,
                            $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)",
                        &[
                            &user,
                            &u.username,
                            &u.display_name,
                            &u.avatar_url,
                            &u.lang_tag,
                            &u.location,
                            &u.timezone,
                            &u.metadata,
                            &a.wallet,
                            &email,
                            &a.custom_id,
                            &ids[0],
                            &ids[1],
                            &ids[2],
                            &ids[3],
                            &ids[4],
                            &ids[5],
                            &u.create_time,
                            &u.update_time,
                            &a.verify_time,
                            &a.disable_time,
                        ],
                    )
                    .await?;
                    for d in &a.devices {
                        tx.execute(
                            "INSERT INTO user_device (id, user_id) VALUES ($1, $2)",
                            &[d, &user],
                        )
                        .await?;
                    }
                }
                Some(_) => {
                    let changed = tx
                        .execute(
                            "UPDATE users SET metadata = $2::text::jsonb, wallet = $3::text::jsonb
                              WHERE id = $1",
                            &[&user, &u.metadata, &a.wallet],
                        )
                        .await?;
                    if changed == 0 {
                        return Err(StoreError::NotFound.into());
                    }
                }
            }
            let replaced = tx
                .query(
                    "DELETE FROM storage WHERE user_id = $1 RETURNING collection::text, key::text",
                    &[&user],
                )
                .await?
                .iter()
                .map(|r| {
                    Ok(ObjectId {
                        collection: r.try_get(0)?,
                        key: r.try_get(1)?,
                        user_id: user,
                    })
                })
                .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
            for o in &import.objects {
                tx.execute(
                    "INSERT INTO storage (collection, key, user_id, value, version, read, write,
                        create_time, update_time)
                     VALUES ($1, $2, $3, $4::text::jsonb, $5, $6, $7, $8, $9)",
                    &[
                        &o.collection,
                        &o.key,
                        &user,
                        &o.value,
                        &o.version,
                        &(o.read.as_i64() as i16),
                        &(o.write.as_i64() as i16),
                        &o.create_time,
                        &o.update_time,
                    ],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(replaced)
        })
        .await
    }

    async fn delete_user(&self, id: Uuid) -> StoreResult<bool> {
        with_retry("delete user", || async {
            let mut conn = self.pool.get().await?;
            let delete_user = conn.stmt(Stmt::DeleteUser).clone();
            // Groups the user is the only superadmin of go with the user,
            // as in Nakama; one transaction.
            let tx = conn.client.transaction().await?;
            tx.execute(crate::ORPHANED_GROUPS_DELETE_POSTGRES, &[&id])
                .await?;
            let deleted = tx.execute(&delete_user, &[&id]).await?;
            // The ledger has no foreign key to cascade (migration 8): its
            // entries go in a statement after the user's row, whose delete
            // waited for any wallet update holding the row, so this one's
            // snapshot sees the entries such an update committed.
            tx.execute(LEDGER_DELETE, &[&id]).await?;
            tx.commit().await?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn get_users(&self, ids: &[Uuid], usernames: &[String]) -> StoreResult<Vec<User>> {
        if ids.is_empty() && usernames.is_empty() {
            return Ok(Vec::new());
        }
        with_retry("get users", || async {
            let conn = self.pool.get().await?;
            let rows = conn
                .client
                .query(conn.stmt(Stmt::GetUsers), &[&ids, &usernames])
                .await?;
            Ok(rows.iter().map(user_from_row).collect::<Result<_, _>>()?)
        })
        .await
    }

    async fn users_after(&self, after: Uuid, limit: usize) -> StoreResult<Vec<User>> {
        with_retry("users after", || async {
            let conn = self.pool.get().await?;
            let rows = conn
                .client
                .query(conn.stmt(Stmt::UsersAfter), &[&after, &(limit as i64)])
                .await?;
            Ok(rows.iter().map(user_from_row).collect::<Result<_, _>>()?)
        })
        .await
    }

    async fn revoke_token(
        &self,
        token_id: &str,
        kind: TokenKind,
        expires_at: i64,
    ) -> StoreResult<()> {
        with_retry("revoke token", || async {
            let conn = self.pool.get().await?;
            conn.client
                .execute(
                    conn.stmt(Stmt::RevokeToken),
                    &[&token_id, &kind.as_str(), &expires_at],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn revoke_user_sessions(&self, user: Uuid, cutoff: i64) -> StoreResult<()> {
        with_retry("revoke sessions", || async {
            let conn = self.pool.get().await?;
            conn.client
                .execute(conn.stmt(Stmt::RevokeUser), &[&user, &cutoff])
                .await?;
            Ok(())
        })
        .await
    }

    async fn set_users_banned(&self, ids: &[Uuid], at: Option<i64>) -> StoreResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        with_retry("ban users", || async {
            let mut conn = self.pool.get().await?;
            let (ban, cutoff) = (
                conn.stmt(Stmt::BanUsers).clone(),
                conn.stmt(Stmt::RevokeBanned).clone(),
            );
            let tx = conn.client.transaction().await?;
            tx.execute(&ban, &[&ids, &at]).await?;
            if let Some(at) = at {
                tx.execute(&cutoff, &[&ids, &at]).await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn load_revocations(&self, now: i64) -> StoreResult<Revocations> {
        with_retry("load revocations", || async {
            let conn = self.pool.get().await?;
            let purged = conn
                .client
                .execute(conn.stmt(Stmt::PurgeTokens), &[&now])
                .await?;
            if purged > 0 {
                tracing::debug!(purged, "purged expired token revocations");
            }
            let mut revocations = Revocations::default();
            for row in conn
                .client
                .query(conn.stmt(Stmt::LoadTokens), &[&now])
                .await?
            {
                let kind: String = row.try_get(1)?;
                match TokenKind::parse(&kind) {
                    Some(kind) => revocations
                        .tokens
                        .push((row.try_get(0)?, kind, row.try_get(2)?)),
                    None => tracing::warn!(kind, "ignoring token revocation of unknown kind"),
                }
            }
            for row in conn.client.query(conn.stmt(Stmt::LoadCutoffs), &[]).await? {
                revocations.users.push((row.try_get(0)?, row.try_get(1)?));
            }
            Ok::<_, Failure>(revocations)
        })
        .await
    }

    async fn insert_channel_message(&self, m: &ChannelMessage) -> StoreResult<()> {
        let mode = i16::from(m.channel.mode);
        with_retry("insert message", || async {
            let conn = self.pool.get().await?;
            conn.client
                .execute(
                    conn.stmt(Stmt::InsertMessage),
                    &[
                        &m.id,
                        &mode,
                        &m.channel.subject,
                        &m.channel.subcontext,
                        &m.channel.label,
                        &m.code,
                        &m.sender_id,
                        &m.username,
                        &m.content,
                        &m.create_time_us,
                        &m.update_time_us,
                    ],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn update_channel_message(
        &self,
        channel: &ChannelKey,
        id: Uuid,
        sender: Uuid,
        content: &str,
        update_time_us: i64,
    ) -> StoreResult<Option<ChannelMessage>> {
        let mode = i16::from(channel.mode);
        self.message_opt(
            "update message",
            Stmt::UpdateMessage,
            &[
                &id,
                &sender,
                &content,
                &update_time_us,
                &mode,
                &channel.subject,
                &channel.subcontext,
                &channel.label,
            ],
        )
        .await
    }

    async fn delete_channel_message(
        &self,
        channel: &ChannelKey,
        id: Uuid,
        sender: Uuid,
    ) -> StoreResult<Option<ChannelMessage>> {
        let mode = i16::from(channel.mode);
        self.message_opt(
            "delete message",
            Stmt::DeleteMessage,
            &[
                &id,
                &sender,
                &mode,
                &channel.subject,
                &channel.subcontext,
                &channel.label,
            ],
        )
        .await
    }

    async fn list_channel_messages(
        &self,
        channel: &ChannelKey,
        bound: Option<MessageBound>,
        ascending: bool,
        limit: usize,
    ) -> StoreResult<Vec<ChannelMessage>> {
        let mode = i16::from(channel.mode);
        let limit = limit as i64;
        with_retry("list messages", || async {
            let conn = self.pool.get().await?;
            let key: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
                &mode,
                &channel.subject,
                &channel.subcontext,
                &channel.label,
                &limit,
            ];
            let rows = match bound {
                None => {
                    let stmt = if ascending {
                        Stmt::ListMessagesAsc
                    } else {
                        Stmt::ListMessagesDesc
                    };
                    conn.client.query(conn.stmt(stmt), &key).await?
                }
                Some(b) => {
                    let stmt = if ascending {
                        Stmt::ListMessagesAfter
                    } else {
                        Stmt::ListMessagesBefore
                    };
                    let mut params = key.to_vec();
                    params.push(&b.create_time_us);
                    params.push(&b.id);
                    conn.client.query(conn.stmt(stmt), &params).await?
                }
            };
            Ok(rows
                .iter()
                .map(chat::message_from_row)
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    async fn insert_notifications(&self, ns: &[Notification]) -> StoreResult<()> {
        if ns.is_empty() {
            return Ok(());
        }
        let ids: Vec<Uuid> = ns.iter().map(|n| n.id).collect();
        let users: Vec<Uuid> = ns.iter().map(|n| n.user_id).collect();
        let subjects: Vec<&str> = ns.iter().map(|n| n.subject.as_str()).collect();
        let contents: Vec<&str> = ns.iter().map(|n| n.content.as_str()).collect();
        let codes: Vec<i32> = ns.iter().map(|n| n.code).collect();
        let senders: Vec<Uuid> = ns.iter().map(|n| n.sender_id).collect();
        let times: Vec<i64> = ns.iter().map(|n| n.create_time_us).collect();
        with_retry("insert notifications", || async {
            let conn = self.pool.get().await?;
            conn.client
                .execute(
                    conn.stmt(Stmt::InsertNotifications),
                    &[&ids, &users, &subjects, &contents, &codes, &senders, &times],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn list_notifications(
        &self,
        user: Uuid,
        after: Option<MessageBound>,
        limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        let limit = limit as i64;
        let time = after.map(|b| b.create_time_us);
        let id = after.map(|b| b.id);
        with_retry("list notifications", || async {
            let conn = self.pool.get().await?;
            let rows = conn
                .client
                .query(
                    conn.stmt(Stmt::ListNotifications),
                    &[&user, &limit, &time, &id],
                )
                .await?;
            Ok(rows
                .iter()
                .map(chat::notification_from_row)
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    async fn delete_notifications(&self, user: Uuid, ids: &[Uuid]) -> StoreResult<u64> {
        with_retry("delete notifications", || async {
            let conn = self.pool.get().await?;
            Ok(conn
                .client
                .execute(conn.stmt(Stmt::DeleteNotifications), &[&user, &ids])
                .await?)
        })
        .await
    }

    async fn purchases_upsert(
        &self,
        purchases: Vec<Purchase>,
        now_ms: i64,
    ) -> StoreResult<Vec<Purchase>> {
        purchases::upsert_purchases(&self.pool, &purchases, now_ms).await
    }

    async fn purchase_get(&self, transaction_id: &str) -> StoreResult<Option<Purchase>> {
        purchases::get_purchase(&self.pool, transaction_id).await
    }

    async fn purchases_list(&self, query: &IapListQuery) -> StoreResult<Vec<Purchase>> {
        purchases::list_purchases(&self.pool, query).await
    }

    async fn subscriptions_upsert(
        &self,
        subscriptions: Vec<Subscription>,
        now_ms: i64,
    ) -> StoreResult<Vec<Subscription>> {
        purchases::upsert_subscriptions(&self.pool, &subscriptions, now_ms).await
    }

    async fn subscription_get(
        &self,
        user: Uuid,
        product_id: &str,
    ) -> StoreResult<Option<Subscription>> {
        purchases::get_subscription(&self.pool, user, product_id).await
    }

    async fn subscription_by_transaction(
        &self,
        original_transaction_id: &str,
    ) -> StoreResult<Option<Subscription>> {
        purchases::subscription_by_transaction(&self.pool, original_transaction_id).await
    }

    async fn subscriptions_list(&self, query: &IapListQuery) -> StoreResult<Vec<Subscription>> {
        purchases::list_subscriptions(&self.pool, query).await
    }

    async fn notifications_by_id(
        &self,
        user: Option<Uuid>,
        ids: &[Uuid],
    ) -> StoreResult<Vec<Notification>> {
        with_retry("get notifications", || async {
            let conn = self.pool.get().await?;
            let rows = conn
                .client
                .query(
                    "SELECT id, user_id, subject, content, code, sender_id, create_time
                       FROM notification
                      WHERE id = ANY($1::uuid[]) AND ($2::uuid IS NULL OR user_id = $2)
                      ORDER BY create_time ASC, id ASC",
                    &[&ids, &user],
                )
                .await?;
            Ok(rows
                .iter()
                .map(chat::notification_from_row)
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    async fn delete_notifications_by_id(
        &self,
        user: Option<Uuid>,
        ids: &[Uuid],
    ) -> StoreResult<u64> {
        with_retry("delete notifications", || async {
            let conn = self.pool.get().await?;
            Ok(conn
                .client
                .execute(
                    "DELETE FROM notification
                      WHERE id = ANY($1::uuid[]) AND ($2::uuid IS NULL OR user_id = $2)",
                    &[&ids, &user],
                )
                .await?)
        })
        .await
    }

    async fn update_notifications(&self, updates: &[NotificationUpdate]) -> StoreResult<u64> {
        if updates.is_empty() {
            return Ok(0);
        }
        let ids: Vec<Uuid> = updates.iter().map(|u| u.id).collect();
        let contents: Vec<Option<&str>> = updates.iter().map(|u| u.content.as_deref()).collect();
        let subjects: Vec<Option<&str>> = updates.iter().map(|u| u.subject.as_deref()).collect();
        let senders: Vec<Option<Uuid>> = updates.iter().map(|u| u.sender_id).collect();
        // One statement: the ids are unique (merged), so each row changes once.
        with_retry("update notifications", || async {
            let conn = self.pool.get().await?;
            Ok(conn
                .client
                .execute(
                    "UPDATE notification n
                        SET content = coalesce(u.content, n.content),
                            subject = coalesce(u.subject, n.subject),
                            sender_id = coalesce(u.sender, n.sender_id)
                       FROM unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[])
                            AS u(id, content, subject, sender)
                      WHERE n.id = u.id",
                    &[&ids, &contents, &subjects, &senders],
                )
                .await?)
        })
        .await
    }

    async fn sql_exec(&self, sql: &str, params: Vec<SqlValue>) -> StoreResult<u64> {
        crate::module_sql::check(sql)?;
        module_sql::exec(&self.pool, sql, &params).await
    }

    async fn sql_query(
        &self,
        sql: &str,
        params: Vec<SqlValue>,
        max_rows: usize,
    ) -> StoreResult<Vec<SqlRow>> {
        crate::module_sql::check(sql)?;
        module_sql::query(&self.pool, sql, &params, max_rows).await
    }

    async fn storage_read(&self, ids: &[ObjectId]) -> StoreResult<Vec<StorageObject>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.object_reads.read(ids).await
    }

    async fn storage_list(&self, query: &ListQuery) -> StoreResult<Vec<StorageObject>> {
        let (read, key, user) = storage::list_bound(query);
        let min_read = query.min_read.as_i64() as i16;
        let limit = query.limit as i64;
        with_retry("list storage", || async {
            let conn = self.pool.get().await?;
            let rows = match &query.owner {
                None => {
                    conn.client
                        .query(
                            conn.stmt(Stmt::StorageListAll),
                            &[&query.collection, &min_read, &limit, &read, &key, &user],
                        )
                        .await?
                }
                Some(owner) => {
                    conn.client
                        .query(
                            conn.stmt(Stmt::StorageListUser),
                            &[
                                &query.collection,
                                &min_read,
                                &limit,
                                &read,
                                &key,
                                &user,
                                owner,
                            ],
                        )
                        .await?
                }
            };
            rows.iter().map(storage::object_from_row).collect()
        })
        .await
    }

    async fn multi_update(
        &self,
        update: MultiUpdate,
        now_us: i64,
    ) -> StoreResult<MultiUpdateResult> {
        if let Some(single) = storage::single_wallet(&update)
            && let Some(done) = self
                .wallets
                .update(single, update.update_ledger, now_us)
                .await?
        {
            return Ok(MultiUpdateResult {
                acks: Vec::new(),
                wallets: vec![done],
            });
        }
        let now = now_us / 1_000_000;
        if let Some(w) = storage::single_object_write(&update)
            && let Some(ack) = self
                .object_writes
                .write(w, update.access == Access::Server, now)
                .await?
        {
            return Ok(MultiUpdateResult {
                acks: vec![ack],
                wallets: Vec::new(),
            });
        }
        with_retry("multi update", || async {
            let mut conn = self.pool.get().await?;
            let conn = &mut *conn;
            let tx = conn.client.transaction().await?;
            let result = storage::multi_update(&tx, &conn.statements, &update, now_us).await?;
            tx.commit().await?;
            Ok(result)
        })
        .await
    }

    async fn wallet_ledger_list(
        &self,
        user: Uuid,
        before: Option<LedgerBound>,
        limit: usize,
    ) -> StoreResult<Vec<LedgerEntry>> {
        let (time, id) = storage::ledger_bound(before);
        let limit = limit as i64;
        with_retry("list wallet ledger", || async {
            let conn = self.pool.get().await?;
            let rows = conn
                .client
                .query(conn.stmt(Stmt::LedgerList), &[&user, &limit, &time, &id])
                .await?;
            Ok(rows
                .iter()
                .map(storage::ledger_from_row)
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    async fn storage_collections(&self, after: &str, limit: usize) -> StoreResult<Vec<String>> {
        let limit = limit as i64;
        with_retry("list storage collections", || async {
            let conn = self.pool.get().await?;
            let rows = conn
                .client
                .query(
                    "SELECT DISTINCT collection FROM storage WHERE collection > $1 ORDER BY collection LIMIT $2",
                    &[&after, &limit],
                )
                .await?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
        .await
    }

    async fn wallet_ledger_delete(&self, user: Uuid, id: Uuid) -> StoreResult<bool> {
        with_retry("delete wallet ledger entry", || async {
            let conn = self.pool.get().await?;
            let n = conn
                .client
                .execute(
                    "DELETE FROM wallet_ledger WHERE id = $1 AND user_id = $2",
                    &[&id, &user],
                )
                .await?;
            Ok(n > 0)
        })
        .await
    }

    async fn wallet_ledger_update(
        &self,
        id: Uuid,
        metadata: &str,
        now_us: i64,
    ) -> StoreResult<Option<LedgerEntry>> {
        with_retry("update wallet ledger", || async {
            let conn = self.pool.get().await?;
            let row = conn
                .client
                .query_opt(conn.stmt(Stmt::LedgerUpdate), &[&id, &metadata, &now_us])
                .await?;
            Ok(row.as_ref().map(storage::ledger_from_row).transpose()?)
        })
        .await
    }

    async fn friends_change(
        &self,
        user: Uuid,
        op: FriendOp,
        targets: &[Uuid],
        metadata: &str,
        now_us: i64,
    ) -> StoreResult<Vec<(Uuid, FriendOutcome)>> {
        with_retry("change friends", || async {
            let mut conn = self.pool.get().await?;
            let tx = conn.client.transaction().await?;
            let out = social::friends_change(&tx, user, op, targets, metadata, now_us).await?;
            tx.commit().await?;
            Ok(out)
        })
        .await
    }

    async fn friends_import(
        &self,
        user: Uuid,
        provider: Provider,
        provider_ids: &[String],
        reset: bool,
        now_us: i64,
    ) -> StoreResult<Vec<Uuid>> {
        with_retry("import friends", || async {
            let mut conn = self.pool.get().await?;
            let tx = conn.client.transaction().await?;
            let out =
                social::friends_import(&tx, user, provider, provider_ids, reset, now_us).await?;
            tx.commit().await?;
            Ok(out)
        })
        .await
    }

    async fn friends_list_into(
        &self,
        user: Uuid,
        state: Option<FriendState>,
        after: Option<FriendBound>,
        limit: usize,
        mut sink: Box<dyn FriendSink>,
    ) -> StoreResult<Box<dyn FriendSink>> {
        let cache = self.profiles.as_ref();
        let page = with_retry("list friends", || async {
            let conn = self.pool.get().await?;
            social::friends_page(&conn, cache, user, state, after, limit).await
        })
        .await?;
        // Pushed after the retry loop, so a retried read never pushes twice.
        let pushed = social::push_friends(&page, cache, &mut *sink);
        pushed.map_err(|e| match e {
            Failure::Fatal(e) => e,
            Failure::Retry(why) => StoreError::Backend(why),
        })?;
        Ok(sink)
    }

    async fn friends_of_friends(
        &self,
        user: Uuid,
        after: Option<(Uuid, Uuid)>,
        limit: usize,
    ) -> StoreResult<Vec<FriendOfFriend>> {
        with_retry("list friends of friends", || async {
            let conn = self.pool.get().await?;
            social::friends_of_friends(&conn.client, user, after, limit).await
        })
        .await
    }

    async fn friend_state(&self, user: Uuid, other: Uuid) -> StoreResult<Option<FriendState>> {
        with_retry("friend state", || async {
            let conn = self.pool.get().await?;
            social::friend_state(&conn.client, user, other).await
        })
        .await
    }

    async fn friend_metadata_update(
        &self,
        user: Uuid,
        friend: Uuid,
        metadata: &str,
        now_us: i64,
    ) -> StoreResult<bool> {
        with_retry("update friend metadata", || async {
            let conn = self.pool.get().await?;
            social::friend_metadata_update(&conn.client, user, friend, metadata, now_us).await
        })
        .await
    }

    async fn group_create(&self, group: &Group, superadmin: Uuid) -> StoreResult<()> {
        with_retry("create group", || async {
            let mut conn = self.pool.get().await?;
            let tx = conn.client.transaction().await?;
            social::group_create(&tx, group, superadmin).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn group_update(
        &self,
        id: Uuid,
        caller: Option<Uuid>,
        update: &GroupUpdate,
        now_us: i64,
    ) -> StoreResult<Group> {
        with_retry("update group", || async {
            let mut conn = self.pool.get().await?;
            let tx = conn.client.transaction().await?;
            let group = social::group_update(&tx, id, caller, update, now_us).await?;
            tx.commit().await?;
            Ok(group)
        })
        .await
    }

    async fn group_delete(&self, id: Uuid, caller: Option<Uuid>) -> StoreResult<Vec<Uuid>> {
        with_retry("delete group", || async {
            let mut conn = self.pool.get().await?;
            let tx = conn.client.transaction().await?;
            let members = social::group_delete(&tx, id, caller).await?;
            tx.commit().await?;
            Ok(members)
        })
        .await
    }

    async fn group_change(
        &self,
        id: Uuid,
        op: GroupOp,
        caller: Option<Uuid>,
        targets: &[Uuid],
        now_us: i64,
    ) -> StoreResult<Vec<RoleChange>> {
        with_retry("change group members", || async {
            let mut conn = self.pool.get().await?;
            let tx = conn.client.transaction().await?;
            let changes = social::group_change(&tx, id, op, caller, targets, now_us).await?;
            tx.commit().await?;
            Ok(changes)
        })
        .await
    }

    async fn groups_get(&self, ids: &[Uuid]) -> StoreResult<Vec<Group>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        with_retry("get groups", || async {
            let conn = self.pool.get().await?;
            social::groups_get(&conn.client, ids).await
        })
        .await
    }

    async fn groups_list(&self, filter: &GroupFilter) -> StoreResult<Vec<Group>> {
        with_retry("list groups", || async {
            let conn = self.pool.get().await?;
            social::groups_list(&conn, filter).await
        })
        .await
    }

    async fn groups_random(&self, count: usize) -> StoreResult<Vec<Group>> {
        with_retry("random groups", || async {
            let conn = self.pool.get().await?;
            social::groups_random(&conn.client, count).await
        })
        .await
    }

    async fn group_users(
        &self,
        group: Uuid,
        role: Option<GroupRole>,
        after: Option<RoleBound>,
        limit: usize,
    ) -> StoreResult<Vec<GroupUser>> {
        with_retry("list group users", || async {
            let conn = self.pool.get().await?;
            social::group_users(&conn, self.profiles.as_ref(), group, role, after, limit).await
        })
        .await
    }

    async fn user_groups(
        &self,
        user: Uuid,
        role: Option<GroupRole>,
        after: Option<RoleBound>,
        limit: usize,
    ) -> StoreResult<Vec<UserGroup>> {
        with_retry("list user groups", || async {
            let conn = self.pool.get().await?;
            social::user_groups(&conn, user, role, after, limit).await
        })
        .await
    }

    async fn group_role(&self, group: Uuid, user: Uuid) -> StoreResult<Option<GroupRole>> {
        with_retry("group role", || async {
            let conn = self.pool.get().await?;
            social::group_role(&conn.client, group, user).await
        })
        .await
    }

    async fn leaderboard_create(&self, board: &Leaderboard) -> StoreResult<(Leaderboard, bool)> {
        with_retry("create leaderboard", || async {
            let conn = self.pool.get().await?;
            leaderboard::create(&conn.client, board).await
        })
        .await
    }

    async fn leaderboard_delete(&self, id: &str) -> StoreResult<bool> {
        with_retry("delete leaderboard", || async {
            let conn = self.pool.get().await?;
            // Records go with the board (ON DELETE CASCADE).
            let n = conn
                .client
                .execute("DELETE FROM leaderboard WHERE id = $1", &[&id])
                .await?;
            Ok(n == 1)
        })
        .await
    }

    async fn leaderboards_load(&self) -> StoreResult<Vec<Leaderboard>> {
        with_retry("load leaderboards", || async {
            let conn = self.pool.get().await?;
            leaderboard::load(&conn.client).await
        })
        .await
    }

    async fn leaderboard_set_ranks(&self, id: &str, enable: bool) -> StoreResult<bool> {
        with_retry("set leaderboard ranks", || async {
            let conn = self.pool.get().await?;
            let n = conn
                .client
                .execute(
                    "UPDATE leaderboard SET enable_ranks = $2 WHERE id = $1",
                    &[&id, &enable],
                )
                .await?;
            Ok(n == 1)
        })
        .await
    }

    async fn leaderboard_scores(&self, id: &str, expiry: i64) -> StoreResult<Vec<RankedScore>> {
        with_retry("read leaderboard scores", || async {
            let conn = self.pool.get().await?;
            leaderboard::scores(&conn.client, id, expiry).await
        })
        .await
    }

    async fn leaderboard_records_get(
        &self,
        id: &str,
        expiry: i64,
        owners: &[Uuid],
    ) -> StoreResult<Vec<LeaderboardRecord>> {
        with_retry("read leaderboard records", || async {
            let conn = self.pool.get().await?;
            leaderboard::records_get(&conn.client, &conn.statements, id, expiry, owners).await
        })
        .await
    }

    async fn objects_of_owner(&self, owner: Uuid, limit: usize) -> StoreResult<Vec<StorageObject>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        with_retry("read an owner's storage objects", || async {
            let conn = self.pool.get().await?;
            let rows = conn
                .client
                .query(statements::OBJECTS_OF_OWNER, &[&owner, &limit])
                .await?;
            rows.iter().map(storage::object_from_row).collect()
        })
        .await
    }

    async fn records_of_owner(
        &self,
        owner: Uuid,
        limit: usize,
    ) -> StoreResult<Vec<LeaderboardRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        with_retry("read an owner's records", || async {
            let conn = self.pool.get().await?;
            leaderboard::records_of_owner(&conn.client, owner, limit).await
        })
        .await
    }

    async fn messages_of_sender(
        &self,
        sender: Uuid,
        limit: usize,
    ) -> StoreResult<Vec<ChannelMessage>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        with_retry("read a sender's messages", || async {
            let conn = self.pool.get().await?;
            let rows = conn
                .client
                .query(statements::MESSAGES_OF_SENDER, &[&sender, &limit])
                .await?;
            Ok(rows
                .iter()
                .map(chat::message_from_row)
                .collect::<Result<_, _>>()?)
        })
        .await
    }

    async fn leaderboard_record_write(
        &self,
        w: &RecordWrite,
        now: i64,
    ) -> StoreResult<WriteOutcome> {
        with_retry("write leaderboard record", || async {
            let mut conn = self.pool.get().await?;
            let conn = &mut *conn;
            let tx = conn.client.transaction().await?;
            let outcome = leaderboard::write(&tx, &conn.statements, w, now).await?;
            if matches!(outcome, WriteOutcome::Rejected(_)) {
                tx.rollback().await?;
            } else {
                tx.commit().await?;
            }
            Ok(outcome)
        })
        .await
    }

    async fn leaderboard_record_delete(
        &self,
        id: &str,
        owner: Uuid,
        expiry: i64,
    ) -> StoreResult<bool> {
        with_retry("delete leaderboard record", || async {
            let mut conn = self.pool.get().await?;
            let tx = conn.client.transaction().await?;
            let n = tx
                .execute(
                    "DELETE FROM leaderboard_record
                      WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3",
                    &[&id, &expiry, &owner],
                )
                .await?;
            if n == 1 {
                // A deleted tournament record frees its place in max_size.
                tx.execute(
                    "UPDATE leaderboard SET size = size - 1
                      WHERE id = $1 AND size_expiry = $2 AND size > 0",
                    &[&id, &expiry],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(n == 1)
        })
        .await
    }

    async fn tournament_join(&self, join: &TournamentJoin, now: i64) -> StoreResult<JoinOutcome> {
        with_retry("join tournament", || async {
            let mut conn = self.pool.get().await?;
            let tx = conn.client.transaction().await?;
            let outcome = leaderboard::join(&tx, join, now).await?;
            tx.commit().await?;
            Ok(outcome)
        })
        .await
    }

    async fn tournament_add_attempt(
        &self,
        id: &str,
        owner: Uuid,
        expiry: i64,
        count: i64,
    ) -> StoreResult<bool> {
        with_retry("add tournament attempts", || async {
            let conn = self.pool.get().await?;
            let n = conn
                .client
                .execute(
                    "UPDATE leaderboard_record SET max_num_score = GREATEST(max_num_score + $4, 1)
                      WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3",
                    &[&id, &expiry, &owner, &count],
                )
                .await?;
            Ok(n == 1)
        })
        .await
    }

    async fn leaderboard_schedule_fired(
        &self,
        id: &str,
        kind: ScheduleKind,
        period: i64,
    ) -> StoreResult<bool> {
        with_retry("record leaderboard schedule", || async {
            let conn = self.pool.get().await?;
            let n = conn
                .client
                .execute(leaderboard::schedule_sql(kind), &[&id, &period])
                .await?;
            Ok(n == 1)
        })
        .await
    }

    async fn console_user_put(&self, user: &ConsoleUser) -> StoreResult<ConsoleUser> {
        with_retry("add console user", || async {
            let conn = self.pool.get().await?;
            console::put(&conn.client, user).await
        })
        .await
    }

    async fn console_user_get(&self, key: &ConsoleUserKey) -> StoreResult<Option<ConsoleUserAuth>> {
        with_retry("get console user", || async {
            let conn = self.pool.get().await?;
            console::get(&conn.client, key).await
        })
        .await
    }

    async fn console_users(&self) -> StoreResult<Vec<ConsoleUser>> {
        with_retry("list console users", || async {
            let conn = self.pool.get().await?;
            console::list(&conn.client).await
        })
        .await
    }

    async fn console_user_change(
        &self,
        key: &ConsoleUserKey,
        change: &ConsoleUserChange,
        now_ms: i64,
    ) -> StoreResult<Option<ConsoleUser>> {
        with_retry("change console user", || async {
            let conn = self.pool.get().await?;
            console::change(&conn.client, key, change, now_ms).await
        })
        .await
    }

    async fn console_user_delete(&self, username: &str) -> StoreResult<bool> {
        with_retry("delete console user", || async {
            let conn = self.pool.get().await?;
            console::delete(&conn.client, username).await
        })
        .await
    }

    async fn console_wipe(&self, what: Wipe) -> StoreResult<u64> {
        with_retry("console wipe", || async {
            let mut conn = self.pool.get().await?;
            console_ops::wipe(&mut conn.client, what).await
        })
        .await
    }

    async fn channel_messages_delete(
        &self,
        before_us: Option<i64>,
        ids: &[Uuid],
    ) -> StoreResult<u64> {
        with_retry("delete channel messages", || async {
            let mut conn = self.pool.get().await?;
            console_ops::delete_messages(&mut conn.client, before_us, ids).await
        })
        .await
    }

    async fn audit_add(&self, entry: &AuditEntry) -> StoreResult<()> {
        with_retry("add audit log entry", || async {
            let conn = self.pool.get().await?;
            console_ops::audit_add(&conn.client, entry).await
        })
        .await
    }

    async fn audit_list(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        with_retry("list audit log", || async {
            let conn = self.pool.get().await?;
            console_ops::audit_list(&conn.client, query).await
        })
        .await
    }

    async fn account_note_put(&self, write: &NoteWrite) -> StoreResult<Option<AccountNote>> {
        with_retry("write account note", || async {
            let conn = self.pool.get().await?;
            console_records::note_put(&conn.client, write).await
        })
        .await
    }

    async fn account_notes(
        &self,
        user: Uuid,
        from: Option<NotesPosition>,
        limit: usize,
    ) -> StoreResult<Vec<AccountNote>> {
        with_retry("list account notes", || async {
            let conn = self.pool.get().await?;
            console_records::notes(&conn.client, user, from, limit).await
        })
        .await
    }

    async fn account_note_delete(&self, user: Uuid, id: Uuid) -> StoreResult<bool> {
        with_retry("delete account note", || async {
            let conn = self.pool.get().await?;
            console_records::note_delete(&conn.client, user, id).await
        })
        .await
    }

    async fn acl_template_add(&self, template: &AclTemplate) -> StoreResult<AclTemplate> {
        with_retry("add acl template", || async {
            let conn = self.pool.get().await?;
            console_records::template_add(&conn.client, template).await
        })
        .await
    }

    async fn acl_template_update(
        &self,
        template: &AclTemplate,
    ) -> StoreResult<Option<AclTemplate>> {
        with_retry("update acl template", || async {
            let conn = self.pool.get().await?;
            console_records::template_update(&conn.client, template).await
        })
        .await
    }

    async fn acl_templates(&self) -> StoreResult<Vec<AclTemplate>> {
        with_retry("list acl templates", || async {
            let conn = self.pool.get().await?;
            console_records::templates(&conn.client).await
        })
        .await
    }

    async fn acl_template_delete(&self, id: Uuid) -> StoreResult<bool> {
        with_retry("delete acl template", || async {
            let conn = self.pool.get().await?;
            console_records::template_delete(&conn.client, id).await
        })
        .await
    }

    async fn console_settings(&self, names: &[String]) -> StoreResult<Vec<ConsoleSetting>> {
        with_retry("list console settings", || async {
            let conn = self.pool.get().await?;
            console_records::settings(&conn.client, names).await
        })
        .await
    }

    async fn console_setting_set(
        &self,
        name: &str,
        value: &str,
        now: i64,
    ) -> StoreResult<Option<ConsoleSetting>> {
        with_retry("set console setting", || async {
            let conn = self.pool.get().await?;
            console_records::setting_set(&conn.client, name, value, now).await
        })
        .await
    }

    async fn close(&self) {
        self.analyzer.close();
        self.registrar.close().await;
        self.wallets.close().await;
        self.object_writes.close().await;
        self.object_reads.close().await;
        self.lookups.close().await;
        self.pool.close().await;
        tracing::info!(backend = "postgres", "store closed");
    }
}
