//! Storage objects: `(collection, key, user_id) → JSON object` with a
//! version and read/write permissions, and the rules Nakama applies to them
//! (input limits, optimistic concurrency, who may read, write, list and
//! delete what), kept here as pure functions so every backend applies the
//! same rules inside its own transaction.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use md5::{Digest as _, Md5};
use uuid::Uuid;

use crate::error::{ApiError, Code};
use crate::stored_json;

/// Nakama's system user: owner of server-owned objects, sender of server
/// chat messages. The migrations insert it.
pub const SYSTEM_USER_ID: Uuid = Uuid::nil();

/// Longest collection name and key, in characters (Nakama's columns are
/// `VARCHAR(128)`).
pub const MAX_NAME_LEN: usize = 128;

/// Most objects one listing page may hold (Nakama's bound).
pub const MAX_LIST_LIMIT: usize = 100;

/// Who makes a storage call. The server (modules, native code) ignores
/// permissions; a user is held to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Server,
    User(Uuid),
}

/// `permission_read`: who may read an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ReadPermission {
    /// Only the server.
    NoRead = 0,
    /// The owner and the server.
    OwnerRead = 1,
    /// Everyone.
    PublicRead = 2,
}

impl ReadPermission {
    pub fn from_i64(n: i64) -> Option<ReadPermission> {
        match n {
            0 => Some(ReadPermission::NoRead),
            1 => Some(ReadPermission::OwnerRead),
            2 => Some(ReadPermission::PublicRead),
            _ => None,
        }
    }

    /// A client's value, `None` meaning Nakama's default (owner read).
    pub fn parse(n: Option<i64>) -> Result<ReadPermission, ApiError> {
        match n {
            None => Ok(ReadPermission::OwnerRead),
            Some(n) => ReadPermission::from_i64(n).ok_or_else(|| {
                ApiError::invalid("invalid read permission supplied, it must be either 0, 1 or 2")
            }),
        }
    }

    pub fn as_i64(self) -> i64 {
        self as i64
    }
}

/// `permission_write`: who may change or delete an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WritePermission {
    /// Only the server.
    NoWrite = 0,
    /// The owner and the server.
    OwnerWrite = 1,
}

impl WritePermission {
    pub fn from_i64(n: i64) -> Option<WritePermission> {
        match n {
            0 => Some(WritePermission::NoWrite),
            1 => Some(WritePermission::OwnerWrite),
            _ => None,
        }
    }

    /// A client's value, `None` meaning Nakama's default (owner write).
    pub fn parse(n: Option<i64>) -> Result<WritePermission, ApiError> {
        match n {
            None => Ok(WritePermission::OwnerWrite),
            Some(n) => WritePermission::from_i64(n).ok_or_else(|| {
                ApiError::invalid("invalid write permission supplied, it must be either 0 or 1")
            }),
        }
    }

    pub fn as_i64(self) -> i64 {
        self as i64
    }
}

/// Names one object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId {
    pub collection: String,
    pub key: String,
    /// [`SYSTEM_USER_ID`] for server-owned objects.
    pub user_id: Uuid,
}

impl ObjectId {
    /// Checks collection and key as Nakama does, plus their length.
    pub fn new(collection: &str, key: &str, user_id: Uuid) -> Result<ObjectId, ApiError> {
        check_names(collection, key)?;
        Ok(ObjectId {
            collection: collection.to_owned(),
            key: key.to_owned(),
            user_id,
        })
    }
}

/// A stored object. Times are UNIX seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageObject {
    pub collection: String,
    pub key: String,
    pub user_id: Uuid,
    /// A JSON object.
    pub value: String,
    pub version: String,
    pub read: ReadPermission,
    pub write: WritePermission,
    pub create_time: i64,
    pub update_time: i64,
}

/// The condition a write puts on the stored version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionCheck {
    /// `""`: write whatever is stored (last write wins).
    Any,
    /// `"*"`: write only if the object does not exist yet.
    IfNotExists,
    /// Write only if the stored version is this one.
    IfMatch(String),
}

impl VersionCheck {
    pub fn parse(version: &str) -> VersionCheck {
        match version {
            "" => VersionCheck::Any,
            "*" => VersionCheck::IfNotExists,
            v => VersionCheck::IfMatch(v.to_owned()),
        }
    }
}

/// One object to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageWrite {
    pub id: ObjectId,
    /// A JSON object, stored as given; its version is derived from these bytes.
    pub value: String,
    pub check: VersionCheck,
    pub read: ReadPermission,
    pub write: WritePermission,
}

impl StorageWrite {
    /// A write checked with Nakama's rules: collection and key set and at
    /// most [`MAX_NAME_LEN`] characters, value a JSON object.
    pub fn new(
        id: ObjectId,
        value: String,
        version: &str,
        read: ReadPermission,
        write: WritePermission,
    ) -> Result<StorageWrite, ApiError> {
        if value.is_empty() {
            return Err(names_must_be_set());
        }
        check_json_object(&value)?;
        Ok(StorageWrite {
            id,
            value,
            check: VersionCheck::parse(version),
            read,
            write,
        })
    }

    /// The version the object will have after this write.
    pub fn version(&self) -> String {
        version_of(&self.value)
    }
}

/// One object to delete; `version` makes the delete conditional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageDelete {
    pub id: ObjectId,
    pub version: Option<String>,
}

impl StorageDelete {
    pub fn new(id: ObjectId, version: &str) -> StorageDelete {
        StorageDelete {
            id,
            version: (!version.is_empty()).then(|| version.to_owned()),
        }
    }
}

/// What a successful write answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageAck {
    pub collection: String,
    pub key: String,
    pub user_id: Uuid,
    pub version: String,
    pub create_time: i64,
    pub update_time: i64,
}

/// Why a change was refused. Every backend reports these the same way, and
/// the whole transaction they happened in is rolled back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("storage write rejected - version check failed")]
    Version,
    #[error("storage write rejected - permission denied")]
    Permission,
    #[error("storage delete rejected - not found, version check failed, or permission denied")]
    Delete,
    #[error("wallet update rejected negative value at path '{path}'")]
    WalletNegative { user_id: Uuid, path: String },
    #[error("wallet update rejected: the value at path '{path}' would overflow")]
    WalletOverflow { user_id: Uuid, path: String },
    #[error("the stored wallet of user {user_id} is not an object of whole numbers")]
    WalletCorrupt { user_id: Uuid },
    /// A write or account change named a user that does not exist.
    #[error("user not found, storage objects and wallets belong to existing users")]
    UnknownUser,
}

impl Rejection {
    /// Whether `error` is this rejection as the services answer it (the
    /// transports see only the `ApiError`).
    pub fn answered(&self, error: &ApiError) -> bool {
        error.code == Code::InvalidArgument && error.message == self.to_string()
    }
}

impl From<Rejection> for ApiError {
    fn from(r: Rejection) -> Self {
        let code = match r {
            Rejection::UnknownUser => Code::NotFound,
            Rejection::WalletCorrupt { .. } => Code::Internal,
            _ => Code::InvalidArgument,
        };
        ApiError::new(code, r.to_string())
    }
}

/// What the store knows of a stored object when it checks a change against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Existing {
    pub version: String,
    pub write: WritePermission,
}

/// Nakama's version of a value: the hex MD5 of its bytes.
pub fn version_of(value: &str) -> String {
    let digest = Md5::digest(value.as_bytes());
    let mut out = String::with_capacity(32);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether `write` may go ahead given what is stored now.
pub fn check_write(
    existing: Option<&Existing>,
    write: &StorageWrite,
    access: Access,
) -> Result<(), Rejection> {
    if let Access::User(user) = access
        && user != write.id.user_id
    {
        return Err(Rejection::Permission);
    }
    match (existing, &write.check) {
        (Some(_), VersionCheck::IfNotExists) => Err(Rejection::Version),
        (None, VersionCheck::IfMatch(_)) => Err(Rejection::Version),
        (None, _) => Ok(()),
        (Some(e), _) if access != Access::Server && e.write != WritePermission::OwnerWrite => {
            Err(Rejection::Permission)
        }
        (Some(e), VersionCheck::IfMatch(v)) if e.version != *v => Err(Rejection::Version),
        (Some(_), _) => Ok(()),
    }
}

/// Whether `delete` may go ahead given what is stored now: `Ok(true)` to
/// delete, `Ok(false)` when there is nothing to do (an unconditional server
/// delete of a missing object).
pub fn check_delete(
    existing: Option<&Existing>,
    delete: &StorageDelete,
    access: Access,
) -> Result<bool, Rejection> {
    let Some(e) = existing else {
        return match (access, &delete.version) {
            (Access::Server, None) => Ok(false),
            _ => Err(Rejection::Delete),
        };
    };
    if let Access::User(user) = access
        && (user != delete.id.user_id || e.write != WritePermission::OwnerWrite)
    {
        return Err(Rejection::Delete);
    }
    match &delete.version {
        Some(v) if *v != e.version => Err(Rejection::Delete),
        _ => Ok(true),
    }
}

/// Whether `access` may read `object`.
pub fn readable(object: &StorageObject, access: Access) -> bool {
    match access {
        Access::Server => true,
        Access::User(user) => {
            object.read == ReadPermission::PublicRead
                || (object.read == ReadPermission::OwnerRead && object.user_id == user)
        }
    }
}

/// Where a listing page continues: listings are ordered by
/// (read permission, key, user id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPosition {
    pub read: ReadPermission,
    pub key: String,
    pub user_id: Uuid,
}

/// One page of a collection as the store reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub collection: String,
    /// Only this user's objects.
    pub owner: Option<Uuid>,
    /// Only objects with at least this read permission.
    pub min_read: ReadPermission,
    /// Strictly after this position.
    pub after: Option<ListPosition>,
    pub limit: usize,
}

impl ListQuery {
    /// The listing `access` may see: the server sees everything, a user all
    /// of their own objects and the public objects of others.
    pub fn for_access(
        access: Access,
        collection: &str,
        owner: Option<Uuid>,
        limit: usize,
    ) -> ListQuery {
        let min_read = match (access, owner) {
            (Access::Server, _) => ReadPermission::NoRead,
            (Access::User(user), Some(owner)) if user == owner => ReadPermission::OwnerRead,
            (Access::User(_), _) => ReadPermission::PublicRead,
        };
        ListQuery {
            collection: collection.to_owned(),
            owner,
            min_read,
            after: None,
            limit,
        }
    }

    /// The opaque cursor of the page after `last`. It names the listing it
    /// belongs to, so it cannot be replayed against another collection,
    /// owner or permission level.
    pub fn cursor_after(&self, last: &StorageObject) -> String {
        let owner = self.owner.map(|o| o.to_string()).unwrap_or_default();
        let raw = serde_json::json!([
            1,
            self.collection,
            owner,
            self.min_read.as_i64(),
            last.read.as_i64(),
            last.key,
            last.user_id.to_string(),
        ]);
        URL_SAFE_NO_PAD.encode(raw.to_string())
    }

    /// Continues after a cursor this same listing produced.
    pub fn resume(&mut self, cursor: &str) -> Result<(), ApiError> {
        let malformed = || ApiError::invalid("malformed cursor was used, list again without one");
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor.trim_end_matches('='))
            .map_err(|_| malformed())?;
        let parts: (u8, String, String, i64, i64, String, String) =
            serde_json::from_slice(&bytes).map_err(|_| malformed())?;
        let (format, collection, owner, min_read, read, key, user_id) = parts;
        let user_id = Uuid::parse_str(&user_id).map_err(|_| malformed())?;
        let same_owner = self.owner.map(|o| o.to_string()).unwrap_or_default() == owner;
        if format != 1 {
            return Err(malformed());
        }
        if collection != self.collection || !same_owner || min_read != self.min_read.as_i64() {
            return Err(ApiError::invalid(
                "cursor belongs to another listing, list this collection again without a cursor",
            ));
        }
        let read = ReadPermission::from_i64(read).ok_or_else(malformed)?;
        self.after = Some(ListPosition { read, key, user_id });
        Ok(())
    }
}

/// A page of objects and the cursor of the next one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoragePage {
    pub objects: Vec<StorageObject>,
    pub cursor: Option<String>,
}

fn names_must_be_set() -> ApiError {
    ApiError::invalid("invalid collection or key value supplied, they must be set")
}

/// Collection and key must be set, at most [`MAX_NAME_LEN`] characters and
/// free of NUL (the stored-names rule of [`crate::stored_json`]).
pub fn check_names(collection: &str, key: &str) -> Result<(), ApiError> {
    if collection.is_empty() || key.is_empty() {
        return Err(names_must_be_set());
    }
    if collection.chars().count() > MAX_NAME_LEN || key.chars().count() > MAX_NAME_LEN {
        return Err(ApiError::invalid(format!(
            "collection and key must be at most {MAX_NAME_LEN} characters"
        )));
    }
    stored_json::check_name(collection, "collection", MAX_NAME_LEN)?;
    stored_json::check_name(key, "key", MAX_NAME_LEN)
}

/// Nakama accepts a value only if it is a JSON object; Ludus also holds it
/// to the rule every reader accepts ([`crate::stored_json`]).
pub fn check_json_object(value: &str) -> Result<(), ApiError> {
    stored_json::check_object(value, "value")
}

/// A user id as clients send it: empty for none, else a valid non-nil UUID.
pub fn parse_user_id(id: &str) -> Result<Option<Uuid>, ApiError> {
    if id.is_empty() {
        return Ok(None);
    }
    match Uuid::parse_str(id) {
        Ok(u) if !u.is_nil() => Ok(Some(u)),
        _ => Err(ApiError::invalid(
            "invalid user id - make sure user id is a valid uuid",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(check: VersionCheck, owner: Uuid) -> StorageWrite {
        StorageWrite {
            id: ObjectId {
                collection: "c".into(),
                key: "k".into(),
                user_id: owner,
            },
            value: "{}".into(),
            check,
            read: ReadPermission::OwnerRead,
            write: WritePermission::OwnerWrite,
        }
    }

    fn existing(version: &str, write: WritePermission) -> Existing {
        Existing {
            version: version.into(),
            write,
        }
    }

    #[test]
    fn version_is_hex_md5_of_the_value() {
        assert_eq!(version_of(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(version_of(r#"{"a":1}"#), "bb6cb5c68df4652941caf652a366f2d8");
        assert_eq!(version_of("{}"), "99914b932bd37a50b983c5e7c90ae93b");
    }

    #[test]
    fn version_checks_follow_nakama() {
        let me = Uuid::from_u128(1);
        let user = Access::User(me);
        let stored = existing("v1", WritePermission::OwnerWrite);
        assert_eq!(
            check_write(None, &write(VersionCheck::Any, me), user),
            Ok(())
        );
        assert_eq!(
            check_write(None, &write(VersionCheck::IfNotExists, me), user),
            Ok(())
        );
        assert_eq!(
            check_write(Some(&stored), &write(VersionCheck::IfNotExists, me), user),
            Err(Rejection::Version)
        );
        assert_eq!(
            check_write(None, &write(VersionCheck::IfMatch("v1".into()), me), user),
            Err(Rejection::Version)
        );
        assert_eq!(
            check_write(
                Some(&stored),
                &write(VersionCheck::IfMatch("v2".into()), me),
                user
            ),
            Err(Rejection::Version)
        );
        assert_eq!(
            check_write(
                Some(&stored),
                &write(VersionCheck::IfMatch("v1".into()), me),
                user
            ),
            Ok(())
        );
    }

    #[test]
    fn users_cannot_write_locked_or_foreign_objects_but_the_server_can() {
        let me = Uuid::from_u128(1);
        let locked = existing("v1", WritePermission::NoWrite);
        assert_eq!(
            check_write(
                Some(&locked),
                &write(VersionCheck::Any, me),
                Access::User(me)
            ),
            Err(Rejection::Permission)
        );
        assert_eq!(
            check_write(Some(&locked), &write(VersionCheck::Any, me), Access::Server),
            Ok(())
        );
        assert_eq!(
            check_write(
                None,
                &write(VersionCheck::Any, Uuid::from_u128(2)),
                Access::User(me)
            ),
            Err(Rejection::Permission)
        );
    }

    #[test]
    fn delete_rules() {
        let me = Uuid::from_u128(1);
        let id = ObjectId {
            collection: "c".into(),
            key: "k".into(),
            user_id: me,
        };
        let plain = StorageDelete::new(id.clone(), "");
        let versioned = StorageDelete::new(id, "v1");
        let open = existing("v1", WritePermission::OwnerWrite);
        let locked = existing("v1", WritePermission::NoWrite);
        assert_eq!(check_delete(None, &plain, Access::Server), Ok(false));
        assert_eq!(
            check_delete(None, &plain, Access::User(me)),
            Err(Rejection::Delete)
        );
        assert_eq!(
            check_delete(Some(&open), &plain, Access::User(me)),
            Ok(true)
        );
        assert_eq!(
            check_delete(Some(&locked), &plain, Access::User(me)),
            Err(Rejection::Delete)
        );
        assert_eq!(
            check_delete(Some(&locked), &plain, Access::Server),
            Ok(true)
        );
        assert_eq!(
            check_delete(
                Some(&existing("v2", WritePermission::OwnerWrite)),
                &versioned,
                Access::Server
            ),
            Err(Rejection::Delete)
        );
        assert_eq!(
            check_delete(Some(&open), &plain, Access::User(Uuid::from_u128(2))),
            Err(Rejection::Delete)
        );
    }

    #[test]
    fn values_must_be_json_objects() {
        assert!(check_json_object(r#" {"a": [1, 2]}"#).is_ok());
        for bad in ["[1]", "1", "\"s\"", "{", "{} x", "null"] {
            assert!(check_json_object(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_are_bounded() {
        assert!(check_names("c", "k").is_ok());
        assert!(check_names("", "k").is_err());
        assert!(check_names("c", "").is_err());
        assert!(check_names(&"é".repeat(128), "k").is_ok());
        assert!(check_names(&"c".repeat(129), "k").is_err());
    }

    #[test]
    fn cursors_resume_only_their_own_listing() {
        let me = Uuid::from_u128(1);
        let query = ListQuery::for_access(Access::User(me), "saves", Some(me), 10);
        assert_eq!(query.min_read, ReadPermission::OwnerRead);
        let last = StorageObject {
            collection: "saves".into(),
            key: "slot 2".into(),
            user_id: me,
            value: "{}".into(),
            version: String::new(),
            read: ReadPermission::PublicRead,
            write: WritePermission::OwnerWrite,
            create_time: 0,
            update_time: 0,
        };
        let cursor = query.cursor_after(&last);
        let mut same = query.clone();
        same.resume(&cursor).unwrap();
        assert_eq!(
            same.after,
            Some(ListPosition {
                read: ReadPermission::PublicRead,
                key: "slot 2".into(),
                user_id: me,
            })
        );
        let mut other_collection = ListQuery::for_access(Access::User(me), "other", Some(me), 10);
        assert!(other_collection.resume(&cursor).is_err());
        let mut public = ListQuery::for_access(Access::User(me), "saves", None, 10);
        assert!(public.resume(&cursor).is_err());
        let mut garbage = query.clone();
        assert!(garbage.resume("not a cursor").is_err());
    }

    #[test]
    fn listing_scope_follows_the_caller() {
        let me = Uuid::from_u128(1);
        let other = Uuid::from_u128(2);
        assert_eq!(
            ListQuery::for_access(Access::Server, "c", None, 1).min_read,
            ReadPermission::NoRead
        );
        assert_eq!(
            ListQuery::for_access(Access::User(me), "c", Some(other), 1).min_read,
            ReadPermission::PublicRead
        );
        assert_eq!(
            ListQuery::for_access(Access::User(me), "c", None, 1).min_read,
            ReadPermission::PublicRead
        );
    }
}
