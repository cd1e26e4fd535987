//! Every SQL statement of the PostgreSQL backend. Each connection prepares
//! all of them once, pipelined, when it opens; requests then only bind and
//! execute.

use futures_util::future::try_join_all;
use tokio_postgres::{Client, Statement};

/// The columns of a `User`, in the order `user_from_row` reads them.
macro_rules! user_columns {
    () => {
        "u.id, u.username, u.display_name, u.avatar_url, u.lang_tag, u.location, u.timezone, u.metadata::text, \
         u.facebook_id, u.google_id, u.gamecenter_id, u.steam_id, u.facebook_instant_game_id, u.apple_id, \
         u.edge_count, u.create_time, u.update_time"
    };
}
pub(super) const USER_COLUMNS: usize = 17;

/// The columns `user_from_row` reads, for statements built elsewhere.
pub(super) const USER_SELECT: &str = user_columns!();

macro_rules! auth_select {
    ($from:literal) => {
        concat!(
            "SELECT u.id, u.username, u.password, u.disable_time FROM ",
            $from
        )
    };
}

/// The columns of a storage object, in the order `object_from_row` reads them.
macro_rules! object_columns {
    () => {
        "s.collection::text, s.key::text, s.user_id, s.value::text, s.version::text, s.read, s.write, s.create_time, s.update_time"
    };
}

/// An owner's storage objects in every collection (an account's export;
/// unprepared: rarely run).
pub(super) const OBJECTS_OF_OWNER: &str = concat!(
    "SELECT ",
    object_columns!(),
    " FROM storage s WHERE s.user_id = $1 ORDER BY s.collection, s.key LIMIT $2"
);

/// The columns of a group, in the order `social::group_from_row` reads them.
macro_rules! group_columns {
    () => {
        "g.id, g.creator_id, g.name, g.description, g.avatar_url, g.lang_tag, \
         g.metadata::text, g.open, g.edge_count, g.max_count, g.create_time, g.update_time"
    };
}

/// The columns `social::group_from_row` reads, for statements built elsewhere.
pub(super) const GROUP_SELECT: &str = group_columns!();

/// The columns of a ledger entry, in the order `ledger_from_row` reads them.
macro_rules! ledger_columns {
    () => {
        "id, user_id, changeset::text, metadata::text, create_time, update_time"
    };
}

/// The columns of a chat message, in the order `message_from_row` reads them.
macro_rules! message_columns {
    () => {
        "id, stream_mode, stream_subject, stream_subcontext, stream_label, code, sender_id, username, content, create_time, update_time"
    };
}

/// The users of a registration batch (`RegisterPlain`, `Register`): one
/// row per element of the first six parameters.
macro_rules! insert_new_users {
    () => {
        "INSERT INTO users (id, username, email, custom_id, password, create_time, update_time)
         SELECT n.id, n.username, n.email, n.custom_id, n.password, n.t, n.t
           FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[])
                AS n(id, username, email, custom_id, password, t)"
    };
}

/// The columns of a leaderboard record, in the order `record_from_row` reads them.
macro_rules! record_columns {
    () => {
        "leaderboard_id::text, owner_id, username, score, subscore, num_score, max_num_score, \
         metadata::text, create_time, update_time, expiry_time"
    };
}

/// An owner's records on every board (an account's export; unprepared:
/// rarely run).
pub(super) const RECORDS_OF_OWNER: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM leaderboard_record WHERE owner_id = $1 \
     ORDER BY create_time, leaderboard_id, expiry_time LIMIT $2"
);

/// A sender's channel messages (an account's export; unprepared).
pub(super) const MESSAGES_OF_SENDER: &str = concat!(
    "SELECT ",
    message_columns!(),
    " FROM message WHERE sender_id = $1 ORDER BY create_time, id LIMIT $2"
);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stmt {
    FindDevices,
    FindCustoms,
    FindByEmail,
    FindByUsername,
    FindAuth,
    RegisterPlain,
    Register,
    DeleteUsers,
    Clashes,
    GetAccount,
    UpdateAccount,
    DeleteUser,
    GetUsers,
    UsersAfter,
    RevokeToken,
    RevokeUser,
    BanUsers,
    RevokeBanned,
    PurgeTokens,
    LoadTokens,
    LoadCutoffs,
    InsertMessage,
    UpdateMessage,
    DeleteMessage,
    ListMessagesAsc,
    ListMessagesDesc,
    ListMessagesAfter,
    ListMessagesBefore,
    InsertNotifications,
    ListNotifications,
    DeleteNotifications,
    StorageRead,
    StorageListAll,
    StorageListUser,
    StorageLock,
    StorageInsert,
    StorageUpdate,
    StorageDelete,
    StorageWriteOne,
    StorageWriteBatch,
    WalletLock,
    WalletSet,
    LedgerInsert,
    LedgerList,
    LedgerUpdate,
    WalletUpdateBatch,
    FriendsList,
    FriendEdges,
    ProfilesByIds,
    GroupUsers,
    GroupUserEdges,
    UserGroups,
    GroupsList,
    GroupsByPrefix,
    RecordLock,
    RecordInsert,
    RecordUpdate,
    RecordsGet,
}

impl Stmt {
    /// Every statement, in discriminant order.
    const ALL: [Stmt; 58] = [
        Stmt::FindDevices,
        Stmt::FindCustoms,
        Stmt::FindByEmail,
        Stmt::FindByUsername,
        Stmt::FindAuth,
        Stmt::RegisterPlain,
        Stmt::Register,
        Stmt::DeleteUsers,
        Stmt::Clashes,
        Stmt::GetAccount,
        Stmt::UpdateAccount,
        Stmt::DeleteUser,
        Stmt::GetUsers,
        Stmt::UsersAfter,
        Stmt::RevokeToken,
        Stmt::RevokeUser,
        Stmt::BanUsers,
        Stmt::RevokeBanned,
        Stmt::PurgeTokens,
        Stmt::LoadTokens,
        Stmt::LoadCutoffs,
        Stmt::InsertMessage,
        Stmt::UpdateMessage,
        Stmt::DeleteMessage,
        Stmt::ListMessagesAsc,
        Stmt::ListMessagesDesc,
        Stmt::ListMessagesAfter,
        Stmt::ListMessagesBefore,
        Stmt::InsertNotifications,
        Stmt::ListNotifications,
        Stmt::DeleteNotifications,
        Stmt::StorageRead,
        Stmt::StorageListAll,
        Stmt::StorageListUser,
        Stmt::StorageLock,
        Stmt::StorageInsert,
        Stmt::StorageUpdate,
        Stmt::StorageDelete,
        Stmt::StorageWriteOne,
        Stmt::StorageWriteBatch,
        Stmt::WalletLock,
        Stmt::WalletSet,
        Stmt::LedgerInsert,
        Stmt::LedgerList,
        Stmt::LedgerUpdate,
        Stmt::WalletUpdateBatch,
        Stmt::FriendsList,
        Stmt::FriendEdges,
        Stmt::ProfilesByIds,
        Stmt::GroupUsers,
        Stmt::GroupUserEdges,
        Stmt::UserGroups,
        Stmt::GroupsList,
        Stmt::GroupsByPrefix,
        Stmt::RecordLock,
        Stmt::RecordInsert,
        Stmt::RecordUpdate,
        Stmt::RecordsGet,
    ];

    pub(super) fn sql(self) -> &'static str {
        match self {
            // A batch of sign-in look-ups (`lookup.rs`), the key found last.
            // Each key is looked up on its own through the unique index (the
            // subquery's LIMIT keeps it a per-key lookup): `= ANY($1)` over
            // the table let a plan cached while the table was still empty
            // scan it whole for every batch once it had grown.
            Stmt::FindDevices => {
                "SELECT f.id, f.username, f.password, f.disable_time, k.key \
                   FROM unnest($1::text[]) AS k(key) CROSS JOIN LATERAL ( \
                        SELECT u.id, u.username, u.password, u.disable_time \
                          FROM user_device d JOIN users u ON u.id = d.user_id \
                         WHERE d.id = k.key LIMIT 1) f"
            }
            Stmt::FindCustoms => {
                "SELECT f.id, f.username, f.password, f.disable_time, k.key \
                   FROM unnest($1::text[]) AS k(key) CROSS JOIN LATERAL ( \
                        SELECT u.id, u.username, u.password, u.disable_time \
                          FROM users u WHERE u.custom_id = k.key LIMIT 1) f"
            }
            Stmt::FindByEmail => auth_select!("users u WHERE u.email = $1"),
            Stmt::FindByUsername => auth_select!("users u WHERE u.username = $1"),
            Stmt::FindAuth => auth_select!("users u WHERE u.id = $1"),
            // A registration batch when nothing clashes, which is nearly always
            // (each sign-up was a look-up miss first): no `ON CONFLICT`
            // checks of every unique index before each insert, no
            // `RETURNING`, and one statement in its own transaction. A clash
            // fails it whole, and `register.rs` writes the batch again with
            // `Register`.
            Stmt::RegisterPlain => concat!(
                "WITH new_users AS (",
                insert_new_users!(),
                ")
                 INSERT INTO user_device (id, user_id)
                 SELECT d.id, d.user_id FROM unnest($7::text[], $8::uuid[]) AS d(id, user_id)"
            ),
            // Registers a whole batch in one statement. ON CONFLICT DO NOTHING
            // skips a user that clashes on any unique index (also with an
            // earlier user of the same batch); devices are inserted only for
            // users that went in. The caller deletes users whose device was
            // taken and works out why the skipped ones clashed.
            Stmt::Register => concat!(
                "WITH new_users AS (",
                insert_new_users!(),
                " ON CONFLICT DO NOTHING
                     RETURNING id
                 ), new_devices AS (
                     INSERT INTO user_device (id, user_id)
                     SELECT d.id, d.user_id
                       FROM unnest($7::text[], $8::uuid[]) AS d(id, user_id)
                      WHERE d.user_id IN (SELECT id FROM new_users)
                     ON CONFLICT DO NOTHING
                     RETURNING user_id
                 )
                 SELECT (SELECT coalesce(array_agg(id), '{}') FROM new_users),
                        (SELECT coalesce(array_agg(user_id), '{}') FROM new_devices)"
            ),
            Stmt::DeleteUsers => "DELETE FROM users WHERE id = ANY($1::uuid[])",
            // `IS NOT NULL` lets the planner use the partial unique indexes.
            Stmt::Clashes => {
                "SELECT 'u'::text, username::text FROM users WHERE username = ANY($1::text[])
                 UNION ALL SELECT 'e', email::text FROM users WHERE email IS NOT NULL AND email = ANY($2::text[])
                 UNION ALL SELECT 'c', custom_id::text FROM users WHERE custom_id IS NOT NULL AND custom_id = ANY($3::text[])
                 UNION ALL SELECT 'd', id::text FROM user_device WHERE id = ANY($4::text[])
                 UNION ALL SELECT 'i', id::text FROM users WHERE id = ANY($5::uuid[])"
            }
            Stmt::GetAccount => concat!(
                "SELECT ",
                user_columns!(),
                ", u.wallet::text, u.email, u.custom_id, u.verify_time, u.disable_time,
                   ARRAY(SELECT d.id FROM user_device d WHERE d.user_id = u.id)
                 FROM users u WHERE u.id = $1"
            ),
            Stmt::UpdateAccount => {
                "UPDATE users SET
                     username     = coalesce($2, username),
                     display_name = coalesce($3, display_name),
                     avatar_url   = coalesce($4, avatar_url),
                     lang_tag     = coalesce($5, lang_tag),
                     location     = coalesce($6, location),
                     timezone     = coalesce($7, timezone),
                     metadata     = coalesce($8::text::jsonb, metadata),
                     update_time  = $9
                 WHERE id = $1"
            }
            Stmt::DeleteUser => "DELETE FROM users WHERE id = $1",
            Stmt::GetUsers => concat!(
                "SELECT ",
                user_columns!(),
                " FROM users u WHERE u.id = ANY($1::uuid[]) OR u.username = ANY($2::text[])"
            ),
            Stmt::UsersAfter => concat!(
                "SELECT ",
                user_columns!(),
                " FROM users u WHERE u.id > $1 ORDER BY u.id LIMIT $2"
            ),
            Stmt::RevokeToken => {
                "INSERT INTO revoked_token (token_id, kind, expires_at) VALUES ($1, $2, $3)
                 ON CONFLICT (token_id, kind)
                 DO UPDATE SET expires_at = greatest(revoked_token.expires_at, excluded.expires_at)"
            }
            Stmt::RevokeUser => {
                "INSERT INTO user_session_cutoff (user_id, cutoff) VALUES ($1, $2)
                 ON CONFLICT (user_id)
                 DO UPDATE SET cutoff = greatest(user_session_cutoff.cutoff, excluded.cutoff)"
            }
            Stmt::BanUsers => "UPDATE users SET disable_time = $2 WHERE id = ANY($1)",
            Stmt::RevokeBanned => {
                "INSERT INTO user_session_cutoff (user_id, cutoff)
                 SELECT id, $2 FROM users WHERE id = ANY($1)
                 ON CONFLICT (user_id)
                 DO UPDATE SET cutoff = greatest(user_session_cutoff.cutoff, excluded.cutoff)"
            }
            Stmt::PurgeTokens => "DELETE FROM revoked_token WHERE expires_at <= $1",
            Stmt::LoadTokens => "SELECT token_id, kind, expires_at FROM revoked_token WHERE expires_at > $1",
            Stmt::LoadCutoffs => "SELECT user_id, cutoff FROM user_session_cutoff",
            Stmt::InsertMessage => {
                "INSERT INTO message (id, stream_mode, stream_subject, stream_subcontext, stream_label, code, sender_id, username, content, create_time, update_time)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
            }
            Stmt::UpdateMessage => concat!(
                "UPDATE message SET content = $3, update_time = $4 WHERE id = $1 AND sender_id = $2 \
                 AND stream_mode = $5 AND stream_subject = $6 AND stream_subcontext = $7 AND stream_label = $8 RETURNING ",
                message_columns!()
            ),
            Stmt::DeleteMessage => concat!(
                "DELETE FROM message WHERE id = $1 AND sender_id = $2 \
                 AND stream_mode = $3 AND stream_subject = $4 AND stream_subcontext = $5 AND stream_label = $6 RETURNING ",
                message_columns!()
            ),
            Stmt::ListMessagesAsc => concat!(
                "SELECT ",
                message_columns!(),
                " FROM message WHERE stream_mode = $1 AND stream_subject = $2 AND stream_subcontext = $3 AND stream_label = $4
                  ORDER BY create_time ASC, id ASC LIMIT $5"
            ),
            Stmt::ListMessagesDesc => concat!(
                "SELECT ",
                message_columns!(),
                " FROM message WHERE stream_mode = $1 AND stream_subject = $2 AND stream_subcontext = $3 AND stream_label = $4
                  ORDER BY create_time DESC, id DESC LIMIT $5"
            ),
            Stmt::ListMessagesAfter => concat!(
                "SELECT ",
                message_columns!(),
                " FROM message WHERE stream_mode = $1 AND stream_subject = $2 AND stream_subcontext = $3 AND stream_label = $4
                    AND (create_time, id) > ($6, $7)
                  ORDER BY create_time ASC, id ASC LIMIT $5"
            ),
            Stmt::ListMessagesBefore => concat!(
                "SELECT ",
                message_columns!(),
                " FROM message WHERE stream_mode = $1 AND stream_subject = $2 AND stream_subcontext = $3 AND stream_label = $4
                    AND (create_time, id) < ($6, $7)
                  ORDER BY create_time DESC, id DESC LIMIT $5"
            ),
            Stmt::InsertNotifications => {
                "INSERT INTO notification (id, user_id, subject, content, code, sender_id, create_time)
                 SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int4[], $6::uuid[], $7::int8[])"
            }
            Stmt::ListNotifications => {
                "SELECT id, user_id, subject, content, code, sender_id, create_time FROM notification
                  WHERE user_id = $1 AND ($3::int8 IS NULL OR (create_time, id) > ($3, $4::uuid))
                  ORDER BY create_time ASC, id ASC LIMIT $2"
            }
            Stmt::DeleteNotifications => "DELETE FROM notification WHERE user_id = $1 AND id = ANY($2::uuid[])",
            // One statement for any number of ids: one array per column.
            Stmt::StorageRead => concat!(
                "SELECT ",
                object_columns!(),
                " FROM storage s
                   JOIN unnest($1::text[], $2::text[], $3::uuid[]) AS t(collection, key, user_id)
                     ON s.collection = t.collection AND s.key = t.key AND s.user_id = t.user_id"
            ),
            // Callers with no cursor pass the lowest bound (-1, '', nil), so
            // one plan serves every page.
            Stmt::StorageListAll => concat!(
                "SELECT ",
                object_columns!(),
                " FROM storage s WHERE s.collection = $1 AND s.read >= $2
                    AND (s.read, s.key, s.user_id) > ($4::int2, $5::text, $6::uuid)
                  ORDER BY s.read, s.key, s.user_id LIMIT $3"
            ),
            Stmt::StorageListUser => concat!(
                "SELECT ",
                object_columns!(),
                " FROM storage s WHERE s.user_id = $7 AND s.collection = $1 AND s.read >= $2
                    AND (s.read, s.key, s.user_id) > ($4::int2, $5::text, $6::uuid)
                  ORDER BY s.read, s.key, s.user_id LIMIT $3"
            ),
            Stmt::StorageLock => {
                "SELECT version::text, write FROM storage WHERE collection = $1 AND key = $2 AND user_id = $3 FOR UPDATE"
            }
            // No ON CONFLICT: a row inserted meanwhile by another transaction
            // is a unique violation, and the store retries the whole
            // transaction, which then sees (and locks) that row.
            Stmt::StorageInsert => {
                "INSERT INTO storage (collection, key, user_id, value, version, read, write, create_time, update_time)
                 VALUES ($1, $2, $3, $4::text::jsonb, $5, $6, $7, $8, $8)
                 RETURNING create_time, update_time"
            }
            Stmt::StorageUpdate => {
                "UPDATE storage SET value = $4::text::jsonb, version = $5, read = $6, write = $7, update_time = $8
                 WHERE collection = $1 AND key = $2 AND user_id = $3
                 RETURNING create_time, update_time"
            }
            Stmt::StorageDelete => "DELETE FROM storage WHERE collection = $1 AND key = $2 AND user_id = $3",
            // One unconditional object write as one statement
            // (`object_writes.rs`'s writes that run alone): an existing
            // object is replaced only if the server writes ($9) or the owner
            // may (write = 1); otherwise nothing is returned and the general
            // path reports why.
            Stmt::StorageWriteOne => {
                "INSERT INTO storage (collection, key, user_id, value, version, read, write, create_time, update_time)
                 VALUES ($1, $2, $3, $4::text::jsonb, $5, $6, $7, $8, $8)
                 ON CONFLICT (collection, key, user_id) DO UPDATE
                    SET value = EXCLUDED.value, version = EXCLUDED.version, read = EXCLUDED.read,
                        write = EXCLUDED.write, update_time = EXCLUDED.update_time
                  WHERE $9 OR storage.write = 1
                 RETURNING create_time, update_time"
            }
            // `StorageWriteOne` for many objects of one writer
            // (`object_writes.rs`'s batches): parallel arrays of collection,
            // key, owner, value, version, read and write permissions; `$9`
            // is whether the server writes. Rows go in key order, so two
            // batches lock what they share in the same order.
            Stmt::StorageWriteBatch => {
                "INSERT INTO storage (collection, key, user_id, value, version, read, write, create_time, update_time)
                 SELECT t.collection, t.key, t.user_id, t.value::jsonb, t.version, t.read, t.write, $8, $8
                   FROM unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::smallint[], $7::smallint[])
                        AS t (collection, key, user_id, value, version, read, write)
                  ORDER BY t.collection, t.key, t.user_id
                 ON CONFLICT (collection, key, user_id) DO UPDATE
                    SET value = EXCLUDED.value, version = EXCLUDED.version, read = EXCLUDED.read,
                        write = EXCLUDED.write, update_time = EXCLUDED.update_time
                  WHERE $9 OR storage.write = 1
                 RETURNING collection, key, user_id, create_time, update_time"
            }
            // Row locks in id order, so concurrent multi-user updates never deadlock.
            Stmt::WalletLock => "SELECT id, wallet::text FROM users WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE",
            Stmt::WalletSet => "UPDATE users SET wallet = $2::text::jsonb, update_time = $3 WHERE id = $1",
            Stmt::LedgerInsert => {
                "INSERT INTO wallet_ledger (id, user_id, changeset, metadata, create_time, update_time)
                 SELECT t.id, t.user_id, t.changeset::jsonb, t.metadata::jsonb, $5, $5
                   FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[]) AS t(id, user_id, changeset, metadata)"
            }
            // Callers with no cursor pass the highest bound.
            Stmt::LedgerList => concat!(
                "SELECT ",
                ledger_columns!(),
                " FROM wallet_ledger WHERE user_id = $1 AND (create_time, id) < ($3, $4)
                  ORDER BY create_time DESC, id DESC LIMIT $2"
            ),
            // Single-wallet changes (`wallets.rs`'s batches) as one
            // statement, so a wallet's row lock is held for one statement's
            // execution rather than for round trips, and a batch commits
            // once. `$1` holds the batch's users, each once. Their changes
            // come as rows (`$2`-`$5`: user, key, and the key's sum over the
            // user's updates in the order they came, and the lowest the
            // running sum reaches at an update that changes the key): a
            // user applies only if no balance plus its lowest running sum is
            // below zero, which is `ludus_core::wallet::apply`'s rule for
            // each update in turn. `old` locks the rows in id order (two
            // batches never deadlock) and reads their newest versions; the
            // update computes from them. A user with no row back was not
            // applied (no such user, or a balance would go negative): its
            // callers take the general path, which says which. `$6`-`$9`
            // are the ledger entries (ids, users, changesets, metadata),
            // written for applied users only.
            Stmt::WalletUpdateBatch => {
                "WITH change AS (
                     SELECT * FROM unnest($2::uuid[], $3::text[], $4::int8[], $5::int8[])
                         AS c (user_id, key, amount, lowest)
                 ), old AS (
                     SELECT u.id, u.wallet FROM users u
                      WHERE u.id = ANY ($1::uuid[])
                      ORDER BY u.id
                        FOR UPDATE
                 ), next AS (
                     SELECT o.id,
                            o.wallet || coalesce(jsonb_object_agg(c.key, coalesce((o.wallet ->> c.key)::bigint, 0) + c.amount)
                                                 FILTER (WHERE c.key IS NOT NULL), '{}'::jsonb) AS wallet,
                            coalesce(bool_or(coalesce((o.wallet ->> c.key)::bigint, 0) + c.lowest < 0), false) AS negative
                       FROM old o LEFT JOIN change c ON c.user_id = o.id
                      GROUP BY o.id, o.wallet
                 ), updated AS (
                     UPDATE users u SET wallet = n.wallet, update_time = $10
                       FROM next n
                      WHERE u.id = n.id AND NOT n.negative
                     RETURNING u.id
                 ), ledger AS (
                     INSERT INTO wallet_ledger (id, user_id, changeset, metadata, create_time, update_time)
                     SELECT l.id, l.user_id, l.changeset::jsonb, l.metadata::jsonb, $11, $11
                       FROM unnest($6::uuid[], $7::uuid[], $8::text[], $9::text[]) AS l (id, user_id, changeset, metadata)
                       JOIN updated up ON up.id = l.user_id
                 )
                 SELECT o.id, o.wallet::text
                   FROM old o JOIN updated up ON up.id = o.id"
            }
            // The social listings, hot enough to prepare once per connection.
            // `user_columns!` but for the `jsonb` columns, read as they are
            // (`JsonbText`): `::text` cost the server a conversion and a
            // copy of both for every friend. The profile fields most players
            // leave empty come back NULL when empty (read as ""): PostgreSQL
            // sends a NULL as a bare length, where an empty string costs it
            // a send buffer of its own, and 4,000 of those were 5 % of its
            // CPU on a 1,000-friend page.
            Stmt::FriendsList => {
                "SELECT u.id, u.username, NULLIF(u.display_name, ''), NULLIF(u.avatar_url, ''), \
                 u.lang_tag, NULLIF(u.location, ''), NULLIF(u.timezone, ''), u.metadata, \
                 u.facebook_id, u.google_id, u.gamecenter_id, u.steam_id, \
                 u.facebook_instant_game_id, u.apple_id, u.edge_count, u.create_time, u.update_time, \
                 e.state, e.update_time, e.metadata, e.position, u.xmin
                   FROM user_edge e JOIN users u ON u.id = e.destination_id
                  WHERE e.source_id = $1 AND ($2::smallint IS NULL OR e.state = $2)
                    AND (e.state, e.position, e.destination_id) > ($3, $4, $5)
                  ORDER BY e.state, e.position, e.destination_id LIMIT $6"
            }
            // The same listing without the profiles, for `profiles.rs`.
            Stmt::FriendEdges => {
                "SELECT e.destination_id, u.xmin, e.state, e.update_time, e.metadata, e.position
                   FROM user_edge e JOIN users u ON u.id = e.destination_id
                  WHERE e.source_id = $1 AND ($2::smallint IS NULL OR e.state = $2)
                    AND (e.state, e.position, e.destination_id) > ($3, $4, $5)
                  ORDER BY e.state, e.position, e.destination_id LIMIT $6"
            }
            Stmt::ProfilesByIds => concat!(
                "SELECT ",
                user_columns!(),
                ", u.xmin FROM users u WHERE u.id = ANY($1::uuid[])"
            ),
            Stmt::GroupUsers => concat!(
                "SELECT ",
                user_columns!(),
                ", e.state, u.xmin
                   FROM group_edge e JOIN users u ON u.id = e.user_id
                  WHERE e.group_id = $1
                    AND ($2::smallint IS NULL AND e.state <= 3 OR e.state = $2)
                    AND (e.state, e.user_id) > ($3, $4)
                  ORDER BY e.state, e.user_id LIMIT $5"
            ),
            // The same listing without the profiles, for `profiles.rs`.
            Stmt::GroupUserEdges => {
                "SELECT e.user_id, u.xmin, e.state
                   FROM group_edge e JOIN users u ON u.id = e.user_id
                  WHERE e.group_id = $1
                    AND ($2::smallint IS NULL AND e.state <= 3 OR e.state = $2)
                    AND (e.state, e.user_id) > ($3, $4)
                  ORDER BY e.state, e.user_id LIMIT $5"
            }
            Stmt::UserGroups => concat!(
                "SELECT ",
                group_columns!(),
                ", e.state
                   FROM group_edge e JOIN groups g ON g.id = e.group_id
                  WHERE e.user_id = $1 AND ($2::smallint IS NULL OR e.state = $2)
                    AND (e.state, e.group_id) > ($3, $4)
                  ORDER BY e.state, e.group_id LIMIT $5"
            ),
            Stmt::GroupsList => concat!(
                "SELECT ",
                group_columns!(),
                " FROM groups g
                  WHERE ($1::text IS NULL OR g.name = $1)
                    AND ($2::text IS NULL OR g.lang_tag = $2)
                    AND ($3::integer IS NULL OR g.edge_count <= $3)
                    AND ($4::boolean IS NULL OR g.open = $4)
                    AND (g.name, g.id) > ($5, $6)
                  ORDER BY g.name LIMIT $7"
            ),
            // A name prefix as a plain range on the unique name index ($1
            // up to $1 followed by the highest code point, $8), ordered by
            // the name alone (names are unique), so no plan sorts every
            // match or walks the index from the first name.
            Stmt::GroupsByPrefix => concat!(
                "SELECT ",
                group_columns!(),
                " FROM groups g
                  WHERE g.name >= $1 AND g.name < $8 AND starts_with(g.name, $1)
                    AND ($2::text IS NULL OR g.lang_tag = $2)
                    AND ($3::integer IS NULL OR g.edge_count <= $3)
                    AND ($4::boolean IS NULL OR g.open = $4)
                    AND (g.name, g.id) > ($5, $6)
                  ORDER BY g.name LIMIT $7"
            ),
            Stmt::RecordLock => concat!(
                "SELECT ",
                record_columns!(),
                " FROM leaderboard_record WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3 FOR UPDATE"
            ),
            // A conflict (a record inserted meanwhile) returns no row: the
            // caller retries the transaction.
            Stmt::RecordInsert => concat!(
                "INSERT INTO leaderboard_record (leaderboard_id, owner_id, expiry_time, username, \
                 score, subscore, num_score, max_num_score, metadata, create_time, update_time) \
                 VALUES ($1, $2, $3, $4, $5, $6, 1, $7, COALESCE($8::text::jsonb, '{}'), $9, $9) \
                 ON CONFLICT DO NOTHING RETURNING ",
                record_columns!()
            ),
            Stmt::RecordUpdate => concat!(
                "UPDATE leaderboard_record SET score = $4, subscore = $5, num_score = num_score + 1, \
                 username = COALESCE($6, username), metadata = COALESCE($7::text::jsonb, metadata), \
                 update_time = $8 WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3 RETURNING ",
                record_columns!()
            ),
            // One primary-key look-up per owner, whatever the statistics say:
            // `owner_id = ANY($3)` on a freshly loaded table (no ANALYZE yet)
            // was planned as a scan of the whole board, filtered.
            Stmt::RecordsGet => concat!(
                "SELECT r.* FROM unnest($3::uuid[]) AS o(id) CROSS JOIN LATERAL (SELECT ",
                record_columns!(),
                " FROM leaderboard_record WHERE leaderboard_id = $1 AND expiry_time = $2 \
                 AND owner_id = o.id LIMIT 1) r"
            ),
            Stmt::LedgerUpdate => concat!(
                "UPDATE wallet_ledger SET metadata = metadata || $2::text::jsonb, update_time = $3 WHERE id = $1 RETURNING ",
                ledger_columns!()
            ),
        }
    }
}

/// One connection's prepared statements.
pub(super) struct Statements(Vec<Statement>);

impl Statements {
    pub(super) async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        let statements = try_join_all(Stmt::ALL.iter().map(|s| client.prepare(s.sql()))).await?;
        Ok(Statements(statements))
    }

    pub(super) fn get(&self, stmt: Stmt) -> &Statement {
        &self.0[stmt as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_statement_in_order() {
        for (i, stmt) in Stmt::ALL.iter().enumerate() {
            assert_eq!(*stmt as usize, i, "{stmt:?}");
        }
    }
}
