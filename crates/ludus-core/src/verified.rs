//! Access tokens this node has verified, so that a client's every request
//! does not check the HMAC and decode the claims again (about 1.2 µs, 5 % of
//! a Lua echo RPC over HTTP on one core; BENCHMARKS.md).
//!
//! An entry is found by a keyed hash of the token's signature and holds the
//! whole token: a hit needs the very same text, so a token that was never
//! verified (another signature, or a verified signature under other claims)
//! always misses and is checked in full. What a hit skips is only what the
//! text alone decides (signature, claims); the caller still checks the
//! expiry and the revocations on every use. Bounded: each shard holds at
//! most its share of `capacity` entries; a full shard first drops its
//! expired ones, then everything (the next requests verify again).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, MutexGuard};

use crate::token::Caller;

const SHARDS: usize = 16;

/// Entries by the hash of their token's tail: the token and its caller.
type Shard = HashMap<u64, (Box<str>, Caller)>;

pub(crate) struct VerifiedTokens {
    shards: Vec<Mutex<Shard>>,
    per_shard: usize,
    /// Keyed per process, so nobody can aim tokens at one entry.
    hasher: RandomState,
}

impl VerifiedTokens {
    /// Holds at most about `capacity` tokens; 0 holds none.
    pub(crate) fn new(capacity: usize) -> Self {
        VerifiedTokens {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            per_shard: capacity.div_ceil(SHARDS),
            hasher: RandomState::new(),
        }
    }

    fn slot(&self, token: &str) -> (u64, MutexGuard<'_, Shard>) {
        // The signature is the last segment; hashing its tail is enough to
        // tell tokens apart (an HMAC output), and the entry keeps the whole text.
        let tail = &token.as_bytes()[token.len().saturating_sub(16)..];
        let h = self.hasher.hash_one(tail);
        let shard = &self.shards[(h as usize) % SHARDS];
        // A panic while held left the map whole (no call in here panics
        // half way through a change).
        (h, shard.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The caller of `token` if this exact token was verified and has not
    /// expired at `now`.
    pub(crate) fn get(&self, token: &str, now: i64) -> Option<Caller> {
        if self.per_shard == 0 {
            return None;
        }
        let (h, shard) = self.slot(token);
        match shard.get(&h) {
            Some((text, caller)) if **text == *token && caller.claims.expires_at > now => {
                Some(caller.clone())
            }
            _ => None,
        }
    }

    /// Remembers a token that passed every check but revocation.
    pub(crate) fn insert(&self, token: &str, caller: &Caller, now: i64) {
        if self.per_shard == 0 {
            return;
        }
        let (h, mut shard) = self.slot(token);
        if shard.len() >= self.per_shard && !shard.contains_key(&h) {
            shard.retain(|_, (_, c)| c.claims.expires_at > now);
            if shard.len() >= self.per_shard {
                shard.clear();
            }
        }
        shard.insert(h, (token.into(), caller.clone()));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::SessionClaims;
    use uuid::Uuid;

    fn caller(exp: i64) -> Caller {
        Caller {
            user_id: Uuid::new_v4(),
            claims: SessionClaims {
                expires_at: exp,
                ..Default::default()
            },
        }
    }

    #[test]
    fn only_the_same_text_hits_and_only_until_it_expires() {
        let cache = VerifiedTokens::new(100);
        let c = caller(1_000);
        cache.insert("aaa.bbb.signature-of-a", &c, 10);
        let hit = cache.get("aaa.bbb.signature-of-a", 999).unwrap();
        assert_eq!(hit.user_id, c.user_id);
        // Same signature, other claims: a miss (checked in full elsewhere).
        assert!(cache.get("aaa.ccc.signature-of-a", 999).is_none());
        assert!(cache.get("aaa.bbb.signature-of-b", 999).is_none());
        assert!(cache.get("aaa.bbb.signature-of-a", 1_000).is_none());
    }

    #[test]
    fn it_stays_within_its_capacity() {
        let cache = VerifiedTokens::new(64);
        for i in 0..10_000 {
            cache.insert(&format!("h.p.sig-{i:08}"), &caller(1_000), 10);
            assert!(cache.len() <= 64, "{}", cache.len());
        }
        // A full shard drops its expired entries first and keeps live ones.
        let cache = VerifiedTokens::new(2 * SHARDS);
        for i in 0..1_000 {
            cache.insert(&format!("h.p.early-{i}"), &caller(20), 10);
        }
        let live = caller(1_000);
        cache.insert("h.p.live", &live, 30);
        for i in 0..1_000 {
            cache.insert(&format!("h.p.late-{i}"), &caller(25), 30);
        }
        assert_eq!(cache.get("h.p.live", 30).unwrap().user_id, live.user_id);
        assert!(cache.len() <= 2 * SHARDS);
    }

    #[test]
    fn capacity_zero_remembers_nothing() {
        let cache = VerifiedTokens::new(0);
        cache.insert("a.b.c", &caller(1_000), 10);
        assert!(cache.get("a.b.c", 10).is_none());
        assert_eq!(cache.len(), 0);
    }
}
