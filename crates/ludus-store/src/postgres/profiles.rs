//! A cache of user profiles for the listings that return many users, so
//! that PostgreSQL sends a listed user's profile only when this server does
//! not already hold it.
//!
//! The friends listing and the group members listing read profiles
//! through it.
//!
//! Every cached profile carries the `xmin` of the `users` row it was read
//! from: the id of the transaction that wrote that row version. Any change
//! to the row (an account update, a link, an `edge_count` trigger) writes a
//! new version with a new `xmin`, and freezing keeps `xmin` as it was
//! (PostgreSQL 9.4 and later), so a listing that reads each user's current
//! `xmin` and finds the same one here holds that row's current content. A
//! profile is therefore never served without being checked against the
//! database in the same statement, which keeps every node of a cluster
//! consistent without invalidation messages. An entry is also dropped after
//! [`MAX_AGE`], so a transaction id that wraps around (2^32 transactions
//! later) cannot match an old entry.
//!
//! When most profiles would miss (many listings of different users, a
//! cache smaller than the set of profiles listed), fetching the missing ones
//! in a second statement would cost PostgreSQL more than sending them at
//! once, so the listing reads full rows while fewer than half of them would
//! have been found here, and only the edges plus `xmin` once more than half
//! would. Full rows fill the cache too, so it warms up in either mode. A
//! listed user gone by the time its profile is fetched (deleted between the
//! two statements) makes the listing read full rows instead, so a page is
//! never shorter than the rows it found.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ludus_core::model::{User, UserRef};
use tokio_postgres::types::{FromSql, Type};
use uuid::Uuid;

/// Shards of the map, so concurrent listings rarely wait on one lock.
const SHARDS: usize = 16;

/// Longest an entry is served before it is read again.
pub(super) const MAX_AGE: Duration = Duration::from_secs(600);

/// Largest profile kept (the bytes of its text fields, metadata included),
/// so the cache's memory stays bounded whatever modules store in a user's
/// metadata: a larger one is read from PostgreSQL at every listing.
pub(super) const MAX_PROFILE_BYTES: usize = 2048;

/// Hit ratio (per mille, of listed users found current here) above which
/// a listing reads edges only and fetches the missing profiles afterwards.
const SLIM_ABOVE: u32 = 500;

/// A `users` row version: the `xmin` system column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Xmin(pub(super) u32);

impl<'a> FromSql<'a> for Xmin {
    fn from_sql(
        _ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let bytes: [u8; 4] = raw.try_into().map_err(|_| "xid is not 4 bytes")?;
        Ok(Xmin(u32::from_be_bytes(bytes)))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::XID
    }
}

/// The listings that read profiles through the cache; each keeps its own
/// hit ratio, as each lists its own set of users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Listing {
    Friends = 0,
    GroupUsers = 1,
}

struct Entry {
    xmin: u32,
    /// Seconds after the cache was made that the entry was read.
    read_at: u32,
    user: Arc<User>,
}

pub(super) struct Profiles {
    shards: Box<[Mutex<HashMap<Uuid, Entry>>]>,
    per_shard: usize,
    born: Instant,
    max_age: Duration,
    /// Moving average of the per-mille hit ratio of recent listings, per
    /// [`Listing`].
    hit_ratio: [AtomicU32; 2],
}

impl Profiles {
    /// A cache of about `capacity` profiles; `None` when `capacity` is 0.
    pub(super) fn new(capacity: usize, max_age: Duration) -> Option<Profiles> {
        (capacity > 0).then(|| Profiles {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            per_shard: capacity.div_ceil(SHARDS),
            born: Instant::now(),
            max_age,
            hit_ratio: [AtomicU32::new(0), AtomicU32::new(0)],
        })
    }

    fn now(&self) -> u32 {
        u32::try_from(self.born.elapsed().as_secs()).unwrap_or(u32::MAX)
    }

    fn shard(&self, id: &Uuid) -> MutexGuard<'_, HashMap<Uuid, Entry>> {
        let i = usize::from(id.as_bytes()[15]) % SHARDS;
        // A panic while holding a shard leaves a map that is still whole.
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The profile of `id` if the cache holds row version `xmin`, read
    /// within the last [`MAX_AGE`].
    pub(super) fn get(&self, id: Uuid, xmin: Xmin) -> Option<Arc<User>> {
        let now = self.now();
        let shard = self.shard(&id);
        let entry = shard.get(&id)?;
        let fresh = u64::from(now.saturating_sub(entry.read_at)) < self.max_age.as_secs();
        (entry.xmin == xmin.0 && fresh).then(|| entry.user.clone())
    }

    /// Whether a profile is small enough to keep ([`MAX_PROFILE_BYTES`]).
    pub(super) fn fits(user: &UserRef<'_>) -> bool {
        let texts = [
            user.username,
            user.display_name,
            user.avatar_url,
            user.lang_tag,
            user.location,
            user.timezone,
            user.metadata,
            user.facebook_id,
            user.google_id,
            user.gamecenter_id,
            user.steam_id,
            user.facebook_instant_game_id,
            user.apple_id,
        ];
        texts.iter().map(|t| t.len()).sum::<usize>() <= MAX_PROFILE_BYTES
    }

    /// Keeps `user`, read from row version `xmin`, unless it is larger than
    /// [`MAX_PROFILE_BYTES`]. A full shard is emptied first: listings refill
    /// what they use.
    pub(super) fn put(&self, xmin: Xmin, user: Arc<User>) {
        if !Self::fits(&user.view()) {
            return;
        }
        let read_at = self.now();
        let mut shard = self.shard(&user.id);
        if shard.len() >= self.per_shard && !shard.contains_key(&user.id) {
            shard.clear();
        }
        shard.insert(
            user.id,
            Entry {
                xmin: xmin.0,
                read_at,
                user,
            },
        );
    }

    /// Whether the cache holds `user` at row version `xmin`; when it does
    /// not, keeps it (if it [fits](Self::fits)). Full-row listings call
    /// this for each user they read.
    pub(super) fn check_in(&self, user: &UserRef<'_>, xmin: Xmin) -> bool {
        if self.get(user.id, xmin).is_some() {
            return true;
        }
        if Self::fits(user) {
            self.put(xmin, Arc::new(user.to_user()));
        }
        false
    }

    /// Whether the next listing of this kind should read edges only.
    pub(super) fn slim(&self, listing: Listing) -> bool {
        self.hit_ratio[listing as usize].load(Ordering::Relaxed) > SLIM_ABOVE
    }

    /// Records that a listing found `hits` of its `listed` profiles current.
    pub(super) fn record(&self, listing: Listing, hits: usize, listed: usize) {
        if listed == 0 {
            return;
        }
        let ratio = u32::try_from(hits * 1000 / listed).unwrap_or(1000);
        // A quarter of the new ratio: a few listings change the mode.
        let _ = self.hit_ratio[listing as usize].fetch_update(
            Ordering::Relaxed,
            Ordering::Relaxed,
            |old| Some((old * 3 + ratio) / 4),
        );
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(id: Uuid, name: &str) -> Arc<User> {
        Arc::new(User {
            id,
            username: name.to_owned(),
            ..Default::default()
        })
    }

    #[test]
    fn serves_only_the_version_it_holds() {
        let cache = Profiles::new(100, MAX_AGE).unwrap();
        let id = Uuid::new_v4();
        assert!(cache.get(id, Xmin(7)).is_none());
        cache.put(Xmin(7), user(id, "ann"));
        assert_eq!(cache.get(id, Xmin(7)).unwrap().username, "ann");
        // The row was written again: the old profile is not served.
        assert!(cache.get(id, Xmin(8)).is_none());
        cache.put(Xmin(8), user(id, "anne"));
        assert_eq!(cache.get(id, Xmin(8)).unwrap().username, "anne");
        assert!(cache.get(id, Xmin(7)).is_none());
    }

    #[test]
    fn old_entries_are_not_served() {
        let cache = Profiles::new(100, Duration::ZERO).unwrap();
        let id = Uuid::new_v4();
        cache.put(Xmin(7), user(id, "ann"));
        assert!(cache.get(id, Xmin(7)).is_none());
    }

    #[test]
    fn large_profiles_are_not_kept() {
        let cache = Profiles::new(100, MAX_AGE).unwrap();
        let (small, large) = (Uuid::new_v4(), Uuid::new_v4());
        let mut big = User {
            id: large,
            metadata: "x".repeat(MAX_PROFILE_BYTES + 1),
            ..Default::default()
        };
        cache.put(Xmin(1), user(small, "ann"));
        cache.put(Xmin(1), Arc::new(big.clone()));
        assert!(cache.get(small, Xmin(1)).is_some());
        assert!(cache.get(large, Xmin(1)).is_none());
        big.metadata.truncate(MAX_PROFILE_BYTES - 3);
        big.username = "bob".into();
        cache.put(Xmin(2), Arc::new(big));
        assert!(
            cache.get(large, Xmin(2)).is_some(),
            "exactly at the bound is kept"
        );
    }

    #[test]
    fn zero_capacity_is_no_cache() {
        assert!(Profiles::new(0, MAX_AGE).is_none());
    }

    #[test]
    fn stays_within_its_capacity() {
        let cache = Profiles::new(64, MAX_AGE).unwrap();
        for _ in 0..10_000 {
            cache.put(Xmin(1), user(Uuid::new_v4(), "x"));
        }
        assert!(cache.len() <= 64, "{} entries", cache.len());
        // Rewriting a held entry does not empty its shard.
        let id = Uuid::new_v4();
        cache.put(Xmin(1), user(id, "a"));
        cache.put(Xmin(2), user(id, "b"));
        assert_eq!(cache.get(id, Xmin(2)).unwrap().username, "b");
    }

    #[test]
    fn mode_follows_the_hit_ratio() {
        use Listing::{Friends, GroupUsers};
        let cache = Profiles::new(100, MAX_AGE).unwrap();
        assert!(!cache.slim(Friends), "an empty cache starts with full rows");
        cache.record(Friends, 100, 100);
        cache.record(Friends, 100, 100);
        assert!(!cache.slim(Friends), "two listings are not yet enough");
        cache.record(Friends, 100, 100);
        assert!(cache.slim(Friends));
        assert!(!cache.slim(GroupUsers), "each listing has its own ratio");
        for _ in 0..3 {
            cache.record(Friends, 10, 100);
        }
        assert!(!cache.slim(Friends), "mostly misses go back to full rows");
        cache.record(Friends, 0, 0);
        assert!(!cache.slim(Friends));
    }
}
