//! The console's access control: what a console user may read, write and
//! delete, per resource, as Nakama's console keeps it (its `AclResources`
//! enum, three permission bits per resource). The same value is stored as
//! JSON, answered as a map of resource names, and carried in console tokens
//! as Nakama's base64url bitmap.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

/// Nakama's console resources, in the order of its `AclResources` enum:
/// the position is the resource's place in the bitmap and never changes.
pub const RESOURCES: [&str; 30] = [
    "ACCOUNT",
    "ACCOUNT_WALLET",
    "ACCOUNT_EXPORT",
    "ACCOUNT_FRIENDS",
    "ACCOUNT_GROUPS",
    "ACCOUNT_NOTES",
    "ACL_TEMPLATE",
    "ALL_ACCOUNTS",
    "ALL_DATA",
    "ALL_STORAGE",
    "API_EXPLORER",
    "AUDIT_LOG",
    "CONFIGURATION",
    "CHANNEL_MESSAGE",
    "USER",
    "GROUP",
    "IN_APP_PURCHASE",
    "LEADERBOARD",
    "LEADERBOARD_RECORD",
    "MATCH",
    "NOTIFICATION",
    "SATORI_MESSAGE",
    "SETTINGS",
    "STORAGE_DATA",
    "STORAGE_DATA_IMPORT",
    "HIRO_INVENTORY",
    "HIRO_PROGRESSION",
    "HIRO_ECONOMY",
    "HIRO_STATS",
    "HIRO_ENERGY",
];

/// A console resource, by its place in [`RESOURCES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Account = 0,
    AccountWallet = 1,
    AccountExport = 2,
    AccountFriends = 3,
    AccountGroups = 4,
    AccountNotes = 5,
    AclTemplate = 6,
    AllAccounts = 7,
    AllData = 8,
    AllStorage = 9,
    ApiExplorer = 10,
    AuditLog = 11,
    Configuration = 12,
    ChannelMessage = 13,
    User = 14,
    Group = 15,
    InAppPurchase = 16,
    Leaderboard = 17,
    LeaderboardRecord = 18,
    Match = 19,
    Notification = 20,
    Settings = 22,
    StorageData = 23,
}

/// What a call does to its resource: the bit within the resource's three.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Read = 0,
    Write = 1,
    Delete = 2,
}

/// Bytes of the bitmap: three bits per resource, rounded up.
const BITMAP_BYTES: usize = (RESOURCES.len() * 3).div_ceil(8);
const ALL_BITS: u128 = (1u128 << (RESOURCES.len() * 3)) - 1;

/// One console user's permissions: bit `resource * 3 + level` set when
/// allowed. All bits set is an admin, who may do everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Acl(u128);

/// What a console call needs: nothing beyond a valid session, or one
/// permission on one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Session,
    Permission(Resource, Level),
}

/// Read, write and delete of one resource, as Nakama's `Permissions` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Permissions {
    pub read: bool,
    pub write: bool,
    pub delete: bool,
}

/// The stored form: `{"admin": true}` or the map of every resource, as
/// Nakama stores it, so a database moved between them reads the same.
#[derive(Serialize, Deserialize, Default)]
#[serde(default)]
struct StoredAcl {
    admin: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    acl: BTreeMap<String, Permissions>,
}

impl Acl {
    pub const NONE: Acl = Acl(0);
    pub const ADMIN: Acl = Acl(ALL_BITS);

    fn bit(resource: usize, level: Level) -> u128 {
        1u128 << (resource * 3 + level as usize)
    }

    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    pub fn is_admin(self) -> bool {
        self.0 == ALL_BITS
    }

    /// Whether these permissions allow a call that needs `need`.
    pub fn allows(self, need: Need) -> bool {
        match need {
            Need::Session => true,
            Need::Permission(resource, level) => self.0 & Acl::bit(resource as usize, level) != 0,
        }
    }

    /// Whether every permission of `other` is one of these (a console user
    /// grants only what it holds itself).
    pub fn covers(self, other: Acl) -> bool {
        self.0 & other.0 == other.0
    }

    /// From a map of resource names; names Nakama does not know are an
    /// error, so a typo never silently grants less than asked.
    pub fn from_map(map: &BTreeMap<String, Permissions>) -> Result<Acl, String> {
        let mut bits = 0u128;
        for (name, p) in map {
            let Some(i) = RESOURCES.iter().position(|r| r == name) else {
                return Err(name.clone());
            };
            for (on, level) in [
                (p.read, Level::Read),
                (p.write, Level::Write),
                (p.delete, Level::Delete),
            ] {
                if on {
                    bits |= Acl::bit(i, level);
                }
            }
        }
        Ok(Acl(bits))
    }

    /// Every resource with its permissions, as the console API answers.
    pub fn to_map(self) -> BTreeMap<String, Permissions> {
        RESOURCES
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let on = |level| self.0 & Acl::bit(i, level) != 0;
                let p = Permissions {
                    read: on(Level::Read),
                    write: on(Level::Write),
                    delete: on(Level::Delete),
                };
                ((*name).to_owned(), p)
            })
            .collect()
    }

    /// The stored JSON form.
    pub fn to_json(self) -> String {
        let stored = match self.is_admin() {
            true => StoredAcl {
                admin: true,
                acl: BTreeMap::new(),
            },
            false => StoredAcl {
                admin: false,
                acl: self.to_map(),
            },
        };
        serde_json::to_string(&stored).expect("an acl always serializes")
    }

    /// Reads the stored JSON form; anything unreadable grants nothing.
    pub fn from_json(json: &str) -> Acl {
        match serde_json::from_str::<StoredAcl>(json) {
            Ok(s) if s.admin => Acl::ADMIN,
            Ok(s) => {
                let known: BTreeMap<String, Permissions> = s
                    .acl
                    .into_iter()
                    .filter(|(k, _)| RESOURCES.contains(&k.as_str()))
                    .collect();
                Acl::from_map(&known).unwrap_or(Acl::NONE)
            }
            Err(_) => Acl::NONE,
        }
    }

    /// Nakama's token form: the bitmap, most significant bit first, with the
    /// padding bits set too for an admin, base64url without padding.
    pub fn to_token(self) -> String {
        let mut bytes = [0u8; BITMAP_BYTES];
        if self.is_admin() {
            bytes = [0xFF; BITMAP_BYTES];
        } else {
            for i in 0..RESOURCES.len() * 3 {
                if self.0 & (1u128 << i) != 0 {
                    bytes[i / 8] |= 1 << (7 - i % 8);
                }
            }
        }
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Reads the token form; a bitmap of the wrong size grants nothing.
    pub fn from_token(text: &str) -> Acl {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(text) else {
            return Acl::NONE;
        };
        if bytes.len() != BITMAP_BYTES {
            return Acl::NONE;
        }
        let mut bits = 0u128;
        for i in 0..RESOURCES.len() * 3 {
            if bytes[i / 8] & (1 << (7 - i % 8)) != 0 {
                bits |= 1u128 << i;
            }
        }
        Acl(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, bool, bool, bool)]) -> BTreeMap<String, Permissions> {
        entries
            .iter()
            .map(|(n, r, w, d)| {
                (
                    (*n).to_owned(),
                    Permissions {
                        read: *r,
                        write: *w,
                        delete: *d,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_map_grants_exactly_what_it_names() {
        let acl = Acl::from_map(&map(&[("ACCOUNT", true, false, false)])).unwrap();
        assert!(acl.allows(Need::Permission(Resource::Account, Level::Read)));
        assert!(!acl.allows(Need::Permission(Resource::Account, Level::Write)));
        assert!(!acl.allows(Need::Permission(Resource::User, Level::Read)));
        assert!(acl.allows(Need::Session));
        assert_eq!(
            Acl::from_map(&map(&[("ACOUNT", true, false, false)])),
            Err("ACOUNT".into())
        );
    }

    #[test]
    fn every_resource_granted_is_an_admin() {
        let all: Vec<_> = RESOURCES.iter().map(|r| (*r, true, true, true)).collect();
        let acl = Acl::from_map(&map(&all)).unwrap();
        assert!(acl.is_admin());
        assert_eq!(acl.to_json(), r#"{"admin":true}"#);
        assert_eq!(acl.to_token(), "_".repeat(16));
    }

    #[test]
    fn json_and_token_forms_round_trip() {
        let acl = Acl::from_map(&map(&[
            ("ACCOUNT", true, true, false),
            ("HIRO_ENERGY", false, false, true),
        ]))
        .unwrap();
        assert_eq!(Acl::from_json(&acl.to_json()), acl);
        assert_eq!(Acl::from_token(&acl.to_token()), acl);
        // ACCOUNT read and write are the first two bits of the first byte.
        let bytes = URL_SAFE_NO_PAD.decode(acl.to_token()).unwrap();
        assert_eq!(bytes.len(), 12);
        assert_eq!(bytes[0], 0b1100_0000);
        assert_eq!(Acl::from_json(r#"{"admin":true}"#), Acl::ADMIN);
        assert_eq!(Acl::from_json("not json"), Acl::NONE);
        assert_eq!(Acl::from_token("AAAA"), Acl::NONE);
    }

    #[test]
    fn covers_is_a_subset_check() {
        let read = Acl::from_map(&map(&[("USER", true, false, false)])).unwrap();
        let read_write = Acl::from_map(&map(&[("USER", true, true, false)])).unwrap();
        assert!(read_write.covers(read));
        assert!(!read.covers(read_write));
        assert!(Acl::ADMIN.covers(read_write));
    }
}
