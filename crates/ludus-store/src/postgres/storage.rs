//! Storage objects, wallets and the ledger on PostgreSQL. A multi-update is
//! one transaction at READ COMMITTED that locks what it changes before
//! deciding: stored objects with `SELECT … FOR UPDATE` (in object order),
//! wallets with one `SELECT … FOR UPDATE` in user-id order. Writers of one
//! hot row therefore queue on its lock and each sees the previous one's
//! result, instead of failing and retrying; only a row inserted by another
//! transaction meanwhile (a unique violation) sends the transaction round
//! again, and deadlocks are retried by the caller's `with_retry`.

use futures_util::future::try_join;
use ludus_core::multi_update::{MultiUpdate, MultiUpdateResult};
use ludus_core::storage::{
    Access, Existing, ListQuery, ObjectId, ReadPermission, Rejection, StorageAck, StorageObject,
    StorageWrite, VersionCheck, WritePermission, check_delete, check_write,
};
use ludus_core::store::StoreError;
use ludus_core::wallet::{self, LedgerBound, LedgerEntry, WalletUpdate, WalletUpdateResult};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Row, Transaction};
use uuid::Uuid;

use super::errors::{Failure, classify};
use super::statements::{Statements, Stmt};

fn permission_error(idx: usize) -> Failure {
    Failure::Fatal(StoreError::Backend(format!(
        "storage column {idx} holds a permission out of range"
    )))
}

pub(super) fn object_from_row(row: &Row) -> Result<StorageObject, Failure> {
    let read: i16 = row.try_get(5)?;
    let write: i16 = row.try_get(6)?;
    Ok(StorageObject {
        collection: row.try_get(0)?,
        key: row.try_get(1)?,
        user_id: row.try_get(2)?,
        value: row.try_get(3)?,
        version: row.try_get(4)?,
        read: ReadPermission::from_i64(read.into()).ok_or_else(|| permission_error(5))?,
        write: WritePermission::from_i64(write.into()).ok_or_else(|| permission_error(6))?,
        create_time: row.try_get(7)?,
        update_time: row.try_get(8)?,
    })
}

pub(super) fn ledger_from_row(row: &Row) -> Result<LedgerEntry, tokio_postgres::Error> {
    Ok(LedgerEntry {
        id: row.try_get(0)?,
        user_id: row.try_get(1)?,
        changeset: row.try_get(2)?,
        metadata: row.try_get(3)?,
        create_time_us: row.try_get(4)?,
        update_time_us: row.try_get(5)?,
    })
}

/// Parameters of `Stmt::StorageRead`: one array per column.
pub(super) fn read_params(ids: &[ObjectId]) -> (Vec<&str>, Vec<&str>, Vec<Uuid>) {
    (
        ids.iter().map(|i| i.collection.as_str()).collect(),
        ids.iter().map(|i| i.key.as_str()).collect(),
        ids.iter().map(|i| i.user_id).collect(),
    )
}

/// The position a listing starts after: the query's cursor or the lowest one.
pub(super) fn list_bound(q: &ListQuery) -> (i16, &str, Uuid) {
    match &q.after {
        Some(a) => (a.read.as_i64() as i16, a.key.as_str(), a.user_id),
        None => (-1, "", Uuid::nil()),
    }
}

/// The position a ledger page starts before: the cursor or the highest one.
pub(super) fn ledger_bound(before: Option<LedgerBound>) -> (i64, Uuid) {
    match before {
        Some(b) => (b.create_time_us, b.id),
        None => (i64::MAX, Uuid::max()),
    }
}

/// A write's failure: a row inserted meanwhile means "run again", an
/// unknown owner is the caller's mistake.
fn write_failure(e: tokio_postgres::Error) -> Failure {
    if let Some(db) = e.as_db_error() {
        if *db.code() == SqlState::UNIQUE_VIOLATION && db.constraint() == Some("storage_pkey") {
            return Failure::Retry("storage object inserted concurrently".into());
        }
        if *db.code() == SqlState::FOREIGN_KEY_VIOLATION {
            return Failure::Fatal(StoreError::Rejected(Rejection::UnknownUser));
        }
    }
    classify(&e)
}

async fn lock_existing(
    tx: &Transaction<'_>,
    st: &Statements,
    id: &ObjectId,
) -> Result<Option<Existing>, Failure> {
    let row = tx
        .query_opt(
            st.get(Stmt::StorageLock),
            &[&id.collection, &id.key, &id.user_id],
        )
        .await?;
    let Some(row) = row else { return Ok(None) };
    let write: i16 = row.try_get(1)?;
    Ok(Some(Existing {
        version: row.try_get(0)?,
        write: WritePermission::from_i64(write.into()).ok_or_else(|| permission_error(1))?,
    }))
}

/// The one wallet change of a multi-update that changes only that
/// (`nk.wallet_update`, the hot path), which `wallets.rs` applies batched
/// with others; `None` for any other multi-update.
pub(super) fn single_wallet(update: &MultiUpdate) -> Option<&WalletUpdate> {
    let [u] = update.wallets.as_slice() else {
        return None;
    };
    let only = update.accounts.is_empty() && update.writes.is_empty() && update.deletes.is_empty();
    only.then_some(u)
}

/// The one write of a multi-update that only writes one object with no
/// version condition, of its own or as the server (a client's `PUT
/// /v2/storage` of one object, `nk.storage_write` of one), which
/// `object_writes.rs` applies batched with others; `None` for any other
/// multi-update.
pub(super) fn single_object_write(update: &MultiUpdate) -> Option<&StorageWrite> {
    let [w] = update.writes.as_slice() else {
        return None;
    };
    let simple = update.accounts.is_empty()
        && update.deletes.is_empty()
        && update.wallets.is_empty()
        && w.check == VersionCheck::Any
        // Another user's object: the general path refuses it.
        && (update.access == Access::Server || update.access == Access::User(w.id.user_id));
    simple.then_some(w)
}

/// The acknowledgement of `w`, written as `version`, from the write's
/// `RETURNING create_time, update_time`.
fn ack(w: &StorageWrite, version: String, row: &Row) -> Result<StorageAck, Failure> {
    Ok(StorageAck {
        collection: w.id.collection.clone(),
        key: w.id.key.clone(),
        user_id: w.id.user_id,
        version,
        create_time: row.try_get(0)?,
        update_time: row.try_get(1)?,
    })
}

/// Everything of a [`MultiUpdate`] inside one open transaction.
pub(super) async fn multi_update(
    tx: &Transaction<'_>,
    st: &Statements,
    update: &MultiUpdate,
    now_us: i64,
) -> Result<MultiUpdateResult, Failure> {
    let now = now_us / 1_000_000;
    for (user, a) in &update.accounts {
        let changed = tx
            .execute(
                st.get(Stmt::UpdateAccount),
                &[
                    user,
                    &a.username,
                    &a.display_name,
                    &a.avatar_url,
                    &a.lang_tag,
                    &a.location,
                    &a.timezone,
                    &a.metadata,
                    &now,
                ],
            )
            .await?;
        if changed == 0 {
            return Err(Failure::Fatal(StoreError::NotFound));
        }
    }
    let acks = write_objects(tx, st, update, now).await?;
    delete_objects(tx, st, update).await?;
    let wallets = update_wallets(tx, st, update, now, now_us).await?;
    Ok(MultiUpdateResult { acks, wallets })
}

async fn write_objects(
    tx: &Transaction<'_>,
    st: &Statements,
    update: &MultiUpdate,
    now: i64,
) -> Result<Vec<StorageAck>, Failure> {
    // Lock in one global order, so two batches never wait on each other in a cycle.
    let mut order: Vec<usize> = (0..update.writes.len()).collect();
    order.sort_by(|&a, &b| update.writes[a].id.cmp(&update.writes[b].id));
    let mut acks: Vec<Option<StorageAck>> = vec![None; update.writes.len()];
    for i in order {
        let w = &update.writes[i];
        let existing = lock_existing(tx, st, &w.id).await?;
        check_write(existing.as_ref(), w, update.access)?;
        let version = w.version();
        let stmt = if existing.is_some() {
            Stmt::StorageUpdate
        } else {
            Stmt::StorageInsert
        };
        let read = w.read.as_i64() as i16;
        let write = w.write.as_i64() as i16;
        let row = tx
            .query_one(
                st.get(stmt),
                &[
                    &w.id.collection,
                    &w.id.key,
                    &w.id.user_id,
                    &w.value,
                    &version,
                    &read,
                    &write,
                    &now,
                ],
            )
            .await
            .map_err(write_failure)?;
        acks[i] = Some(ack(w, version, &row)?);
    }
    Ok(acks.into_iter().flatten().collect())
}

async fn delete_objects(
    tx: &Transaction<'_>,
    st: &Statements,
    update: &MultiUpdate,
) -> Result<(), Failure> {
    let mut deletes: Vec<_> = update.deletes.iter().collect();
    deletes.sort_by(|a, b| a.id.cmp(&b.id));
    for d in deletes {
        let existing = lock_existing(tx, st, &d.id).await?;
        if check_delete(existing.as_ref(), d, update.access)? {
            tx.execute(
                st.get(Stmt::StorageDelete),
                &[&d.id.collection, &d.id.key, &d.id.user_id],
            )
            .await?;
        }
    }
    Ok(())
}

async fn update_wallets(
    tx: &Transaction<'_>,
    st: &Statements,
    update: &MultiUpdate,
    now: i64,
    now_us: i64,
) -> Result<Vec<WalletUpdateResult>, Failure> {
    if update.wallets.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = update.wallets.iter().map(|u| u.user_id).collect();
    let mut stored = std::collections::HashMap::with_capacity(ids.len());
    for row in tx.query(st.get(Stmt::WalletLock), &[&ids]).await? {
        let id: Uuid = row.try_get(0)?;
        let json: String = row.try_get(1)?;
        stored.insert(id, wallet::decode(id, &json)?);
    }
    let mut results = Vec::with_capacity(update.wallets.len());
    for u in &update.wallets {
        // Users that do not exist are skipped, as Nakama does.
        let Some(current) = stored.get_mut(&u.user_id) else {
            continue;
        };
        let updated = wallet::apply(u.user_id, current, &u.changeset)?;
        let previous = std::mem::replace(current, updated.clone());
        results.push(WalletUpdateResult {
            user_id: u.user_id,
            updated,
            previous,
        });
    }
    // The final wallet of each user, written once; the ledger in one statement
    // sent in the same round trip.
    let mut finals: Vec<(&Uuid, String)> = stored
        .iter()
        .map(|(id, w)| (id, wallet::encode(w)))
        .collect();
    finals.sort_by_key(|(id, _)| **id);
    let writes = async {
        for (id, json) in &finals {
            tx.execute(st.get(Stmt::WalletSet), &[*id, json, &now])
                .await?;
        }
        Ok::<_, tokio_postgres::Error>(())
    };
    let ledger = async {
        if !update.update_ledger || results.is_empty() {
            return Ok(0);
        }
        let found: Vec<_> = update
            .wallets
            .iter()
            .filter(|u| stored.contains_key(&u.user_id))
            .collect();
        let entry_ids: Vec<Uuid> = found.iter().map(|_| ludus_core::new_row_id()).collect();
        let users: Vec<Uuid> = found.iter().map(|u| u.user_id).collect();
        let changesets: Vec<String> = found.iter().map(|u| wallet::encode(&u.changeset)).collect();
        let metadata: Vec<&str> = found.iter().map(|u| u.metadata.as_str()).collect();
        tx.execute(
            st.get(Stmt::LedgerInsert),
            &[&entry_ids, &users, &changesets, &metadata, &now_us],
        )
        .await
    };
    try_join(writes, ledger).await?;
    Ok(results)
}
