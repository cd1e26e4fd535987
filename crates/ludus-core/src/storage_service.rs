//! `StorageService`: storage objects, wallets, the ledger and multi-updates
//! as every caller uses them. REST handlers, the Lua `nk` functions and
//! native modules each turn their arguments into the domain types and
//! delegate here in one line, so the rules (limits, permissions, cursors)
//! are applied the same way whoever asks.

use std::sync::Arc;

use uuid::Uuid;

use crate::chat::now_us;
use crate::error::{ApiError, Code};
use crate::multi_update::{MultiUpdate, MultiUpdateResult};
use crate::storage::{
    Access, ListQuery, ObjectId, StorageAck, StorageDelete, StorageObject, StoragePage,
    StorageWrite, readable,
};
use crate::storage_index::StorageIndexes;
use crate::store::Store;
use crate::stored_json;
use crate::wallet::{self, LedgerEntry, LedgerPage, WalletUpdate, WalletUpdateResult};

/// Bounds on what one call may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageLimits {
    /// Most objects, deletes, wallet and account updates one call may carry
    /// together (`storage.max_batch_size`; Nakama has no such bound, only
    /// its request size limit).
    pub max_batch: usize,
}

impl Default for StorageLimits {
    fn default() -> Self {
        StorageLimits { max_batch: 1000 }
    }
}

pub struct StorageService {
    store: Arc<dyn Store>,
    limits: StorageLimits,
    /// Kept current after every committed write and delete.
    indexes: StorageIndexes,
}

impl StorageService {
    pub fn new(store: Arc<dyn Store>, limits: StorageLimits) -> StorageService {
        StorageService {
            store,
            limits,
            indexes: StorageIndexes::default(),
        }
    }

    /// The storage search indexes: registered while modules load, started
    /// once after (see [`StorageIndexes::start`]).
    pub fn indexes(&self) -> &StorageIndexes {
        &self.indexes
    }

    /// Starts the indexes: ends registration and fills them from the store.
    pub async fn start_indexes(
        &self,
        filter: Option<std::sync::Weak<dyn crate::storage_index::IndexFilter>>,
    ) -> Result<(), ApiError> {
        self.indexes.start(self.store.as_ref(), filter).await
    }

    /// One page of storage index `name` (`nk.storage_index_list`): the
    /// objects matching `query`, read from the store unless the index is
    /// index-only; with a `caller`, only what that user may read.
    pub async fn index_list(
        &self,
        name: &str,
        query: &str,
        limit: usize,
        order: &[String],
        caller: Option<Uuid>,
        cursor: &str,
    ) -> Result<StoragePage, ApiError> {
        let page = self
            .indexes
            .list(name, query, limit, order, caller, cursor)?;
        let mut objects: Vec<StorageObject> = page.hits.into_iter().map(|h| h.object).collect();
        if !page.index_only && !objects.is_empty() {
            let ids: Vec<ObjectId> = objects
                .iter()
                .map(|o| ObjectId {
                    collection: o.collection.clone(),
                    key: o.key.clone(),
                    user_id: o.user_id,
                })
                .collect();
            let access = caller.map_or(Access::Server, Access::User);
            let stored = self.store.storage_read(&ids).await?;
            // Keep the index's order; re-index what changed since it was indexed.
            let mut by_id: std::collections::HashMap<(String, String, Uuid), StorageObject> =
                stored
                    .into_iter()
                    .map(|o| ((o.collection.clone(), o.key.clone(), o.user_id), o))
                    .collect();
            let mut stale = Vec::new();
            objects = objects
                .into_iter()
                .filter_map(|hit| {
                    let o = by_id.remove(&(hit.collection, hit.key, hit.user_id))?;
                    if o.version != hit.version {
                        stale.push(o.clone());
                    }
                    readable(&o, access).then_some(o)
                })
                .collect();
            if !stale.is_empty() {
                self.indexes.written(&stale).await;
            }
        }
        Ok(StoragePage {
            objects,
            cursor: page.cursor,
        })
    }

    pub fn limits(&self) -> StorageLimits {
        self.limits
    }

    fn check_batch(&self, size: usize) -> Result<(), ApiError> {
        if size > self.limits.max_batch {
            return Err(ApiError::invalid(format!(
                "too many objects in one request ({size}), send at most {} at once",
                self.limits.max_batch
            )));
        }
        Ok(())
    }

    /// The objects among `ids` that `access` may read; missing and
    /// unreadable ones are left out, as Nakama does.
    pub async fn read(
        &self,
        access: Access,
        ids: Vec<ObjectId>,
    ) -> Result<Vec<StorageObject>, ApiError> {
        for id in &ids {
            crate::storage::check_names(&id.collection, &id.key)?;
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.check_batch(ids.len())?;
        let mut objects = self.store.storage_read(&ids).await?;
        objects.retain(|o| readable(o, access));
        Ok(objects)
    }

    /// One page of a collection: for the server every object (of `owner`,
    /// when given); for a user all of their own objects, or the public
    /// objects of others. `limit` 0 answers an empty page, as Nakama does.
    pub async fn list(
        &self,
        access: Access,
        collection: &str,
        owner: Option<Uuid>,
        limit: usize,
        cursor: &str,
    ) -> Result<StoragePage, ApiError> {
        stored_json::check_name(collection, "collection", crate::storage::MAX_NAME_LEN)?;
        if limit == 0 {
            return Ok(StoragePage::default());
        }
        let mut query = ListQuery::for_access(access, collection, owner, limit + 1);
        if !cursor.is_empty() {
            query.resume(cursor)?;
        }
        let mut objects = self.store.storage_list(&query).await?;
        let cursor = if objects.len() > limit {
            objects.truncate(limit);
            objects.last().map(|last| query.cursor_after(last))
        } else {
            None
        };
        Ok(StoragePage { objects, cursor })
    }

    /// Writes a batch: all of it or none.
    pub async fn write(
        &self,
        access: Access,
        writes: Vec<StorageWrite>,
    ) -> Result<Vec<StorageAck>, ApiError> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let mut update = MultiUpdate::new(access);
        update.writes = writes;
        Ok(self.multi_update(update).await?.acks)
    }

    /// Deletes a batch: all of it or none.
    pub async fn delete(
        &self,
        access: Access,
        deletes: Vec<StorageDelete>,
    ) -> Result<(), ApiError> {
        if deletes.is_empty() {
            return Ok(());
        }
        let mut update = MultiUpdate::new(access);
        update.deletes = deletes;
        self.multi_update(update).await?;
        Ok(())
    }

    /// Changes several wallets at once; users that do not exist are skipped.
    pub async fn wallets_update(
        &self,
        updates: Vec<WalletUpdate>,
        update_ledger: bool,
    ) -> Result<Vec<WalletUpdateResult>, ApiError> {
        if updates.is_empty() {
            return Ok(Vec::new());
        }
        let mut update = MultiUpdate::new(Access::Server);
        update.wallets = updates;
        update.update_ledger = update_ledger;
        Ok(self.multi_update(update).await?.wallets)
    }

    /// Changes one user's wallet; `NotFound` when there is no such user.
    pub async fn wallet_update(
        &self,
        update: WalletUpdate,
        update_ledger: bool,
    ) -> Result<WalletUpdateResult, ApiError> {
        self.wallets_update(vec![update], update_ledger)
            .await?
            .pop()
            .ok_or_else(|| ApiError::not_found("user not found"))
    }

    /// A page of a user's ledger, newest first; `cursor` is the one the
    /// previous page returned.
    pub async fn wallet_ledger_list(
        &self,
        user: Uuid,
        limit: usize,
        cursor: &str,
    ) -> Result<LedgerPage, ApiError> {
        if limit > wallet::MAX_LEDGER_LIMIT {
            return Err(ApiError::invalid(format!(
                "expects limit to be 0-{}",
                wallet::MAX_LEDGER_LIMIT
            )));
        }
        if limit == 0 {
            return Ok(LedgerPage::default());
        }
        let before = if cursor.is_empty() {
            None
        } else {
            Some(wallet::resume(user, cursor)?)
        };
        let mut entries = self
            .store
            .wallet_ledger_list(user, before, limit + 1)
            .await?;
        let cursor = if entries.len() > limit {
            entries.truncate(limit);
            entries.last().map(|last| wallet::cursor_after(user, last))
        } else {
            None
        };
        Ok(LedgerPage { entries, cursor })
    }

    /// A page of `limit` storage collection names after `cursor` (the last
    /// name of the previous page), and the cursor of the next page.
    pub async fn collections(
        &self,
        cursor: &str,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>), ApiError> {
        let mut names = self.store.storage_collections(cursor, limit + 1).await?;
        let next = if names.len() > limit {
            names.truncate(limit);
            names.last().cloned()
        } else {
            None
        };
        Ok((names, next))
    }

    /// Deletes one of `user`'s ledger entries; `NotFound` when the user has
    /// no such entry.
    pub async fn wallet_ledger_delete(&self, user: Uuid, id: Uuid) -> Result<(), ApiError> {
        if self.store.wallet_ledger_delete(user, id).await? {
            Ok(())
        } else {
            Err(ApiError::new(
                Code::NotFound,
                "wallet ledger item not found for this user",
            ))
        }
    }

    /// Merges metadata (a JSON object) into a ledger entry's.
    pub async fn wallet_ledger_update(
        &self,
        id: Uuid,
        metadata: &str,
    ) -> Result<LedgerEntry, ApiError> {
        stored_json::check_object(metadata, "ledger metadata")?;
        self.store
            .wallet_ledger_update(id, metadata, now_us())
            .await?
            .ok_or_else(|| ApiError::new(Code::NotFound, "wallet ledger item not found"))
    }

    /// Applies everything in one transaction: all of it or none.
    pub async fn multi_update(&self, update: MultiUpdate) -> Result<MultiUpdateResult, ApiError> {
        if update.is_empty() {
            return Ok(MultiUpdateResult::default());
        }
        self.check_batch(
            update.accounts.len()
                + update.writes.len()
                + update.deletes.len()
                + update.wallets.len(),
        )?;
        // Every door's writes meet here: the stored-JSON rule holds even for
        // values a native module built without the checked constructors.
        for w in &update.wallets {
            stored_json::check_object(&w.metadata, "wallet metadata")?;
            for currency in w.changeset.keys() {
                stored_json::check_name(currency, "wallet changeset key", usize::MAX)?;
            }
        }
        for w in &update.writes {
            crate::storage::check_names(&w.id.collection, &w.id.key)?;
            crate::storage::check_json_object(&w.value)?;
        }
        for d in &update.deletes {
            crate::storage::check_names(&d.id.collection, &d.id.key)?;
        }
        for (_, account) in &update.accounts {
            account.check()?;
        }
        let access = update.access;
        // What the indexes need once the transaction commits (nothing when
        // no index covers the collections written).
        let indexed = !self.indexes.is_empty();
        let (writes, deletes) = if indexed {
            (
                update
                    .writes
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| self.indexes.covers(&w.id.collection))
                    .map(|(i, w)| (i, w.id.clone(), w.value.clone(), w.read, w.write))
                    .collect::<Vec<_>>(),
                update
                    .deletes
                    .iter()
                    .filter(|d| self.indexes.covers(&d.id.collection))
                    .map(|d| d.id.clone())
                    .collect::<Vec<_>>(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let result = self
            .store
            .multi_update(update, now_us())
            .await
            .map_err(|e| {
                if let crate::store::StoreError::Rejected(r) = &e {
                    tracing::debug!(?access, reason = %r, "storage or wallet change rejected");
                }
                ApiError::from(e)
            })?;
        if !writes.is_empty() {
            let written: Vec<StorageObject> = writes
                .into_iter()
                .filter_map(|(i, id, value, read, write)| {
                    // Acks come in the order the writes were asked.
                    let ack = result.acks.get(i).filter(|a| {
                        a.collection == id.collection && a.key == id.key && a.user_id == id.user_id
                    })?;
                    Some(StorageObject {
                        collection: id.collection,
                        key: id.key,
                        user_id: id.user_id,
                        value,
                        version: ack.version.clone(),
                        read,
                        write,
                        create_time: ack.create_time,
                        update_time: ack.update_time,
                    })
                })
                .collect();
            self.indexes.written(&written).await;
        }
        if !deletes.is_empty() {
            self.indexes.deleted(&deletes);
        }
        Ok(result)
    }
}
