//! One transaction over accounts, storage objects and wallets: what
//! `nk.multi_update` asks for, and what every storage write, delete and
//! wallet update becomes on its way to the store (a storage write is a
//! multi-update with only writes in it).

use uuid::Uuid;

use crate::model::AccountUpdate;
use crate::storage::{Access, StorageAck, StorageDelete, StorageWrite};
use crate::wallet::{WalletUpdate, WalletUpdateResult};

/// Changes applied together: all of them or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiUpdate {
    /// Whose permissions the storage writes and deletes are held to.
    pub access: Access,
    pub accounts: Vec<(Uuid, AccountUpdate)>,
    pub writes: Vec<StorageWrite>,
    pub deletes: Vec<StorageDelete>,
    pub wallets: Vec<WalletUpdate>,
    /// Records each wallet change in the ledger.
    pub update_ledger: bool,
}

impl MultiUpdate {
    /// Nothing to change yet, on behalf of `access`.
    pub fn new(access: Access) -> MultiUpdate {
        MultiUpdate {
            access,
            accounts: Vec::new(),
            writes: Vec::new(),
            deletes: Vec::new(),
            wallets: Vec::new(),
            update_ledger: false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty()
            && self.writes.is_empty()
            && self.deletes.is_empty()
            && self.wallets.is_empty()
    }
}

/// What a multi-update answers, each list in the order it was asked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiUpdateResult {
    pub acks: Vec<StorageAck>,
    /// One per wallet update whose user exists; others are skipped, as Nakama does.
    pub wallets: Vec<WalletUpdateResult>,
}
