//! The in-memory view of revoked sessions, checked on every authenticated
//! request. The store holds the durable copy; this list is loaded from it at
//! start-up and updated after each write, so a logout survives a restart.

use std::collections::HashMap;
use std::sync::RwLock;

use uuid::Uuid;

use crate::model::Revocations;
use crate::token::{SessionClaims, TokenKind};

#[derive(Debug, Default)]
pub struct RevocationList {
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    tokens: HashMap<(String, TokenKind), i64>,
    /// Tokens of the user issued at or before this time are revoked.
    users: HashMap<Uuid, i64>,
    /// Size after the last purge; the next purge runs once the map doubles.
    purge_at: usize,
}

impl RevocationList {
    pub fn from_stored(stored: Revocations) -> Self {
        let mut inner = Inner::default();
        for (id, kind, exp) in stored.tokens {
            inner.tokens.insert((id, kind), exp);
        }
        inner.users.extend(stored.users);
        inner.purge_at = (inner.tokens.len() * 2).max(1024);
        RevocationList {
            inner: RwLock::new(inner),
        }
    }

    /// True when this token, of this kind, must be refused.
    pub fn is_revoked(&self, claims: &SessionClaims, user: Uuid, kind: TokenKind) -> bool {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        if inner
            .users
            .get(&user)
            .is_some_and(|cutoff| claims.issued_at <= *cutoff)
        {
            return true;
        }
        // Avoids allocating a key on the hot path when nothing was ever revoked.
        !inner.tokens.is_empty() && inner.tokens.contains_key(&(claims.token_id.clone(), kind))
    }

    pub fn revoke_token(&self, token_id: String, kind: TokenKind, expires_at: i64, now: i64) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        inner.tokens.insert((token_id, kind), expires_at);
        if inner.tokens.len() >= inner.purge_at {
            inner.tokens.retain(|_, exp| *exp > now);
            inner.purge_at = (inner.tokens.len() * 2).max(1024);
        }
    }

    pub fn revoke_user(&self, user: Uuid, cutoff: i64) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let entry = inner.users.entry(user).or_insert(cutoff);
        *entry = (*entry).max(cutoff);
    }

    /// The `iat` to give a new token of this user: never at or before a cutoff,
    /// so a sign-in in the same second as a logout is not born revoked.
    pub fn issue_time(&self, user: Uuid, now: i64) -> i64 {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        match inner.users.get(&user) {
            Some(cutoff) if *cutoff >= now => cutoff + 1,
            _ => now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(tid: &str, iat: i64) -> SessionClaims {
        SessionClaims {
            token_id: tid.into(),
            issued_at: iat,
            expires_at: iat + 60,
            ..Default::default()
        }
    }

    #[test]
    fn token_revocation_is_per_kind() {
        let list = RevocationList::default();
        let user = Uuid::new_v4();
        list.revoke_token("t".into(), TokenKind::Access, 100, 0);
        assert!(list.is_revoked(&claims("t", 10), user, TokenKind::Access));
        assert!(!list.is_revoked(&claims("t", 10), user, TokenKind::Refresh));
        assert!(!list.is_revoked(&claims("u", 10), user, TokenKind::Access));
    }

    #[test]
    fn user_cutoff_revokes_older_tokens_and_new_ones_are_issued_after_it() {
        let list = RevocationList::default();
        let user = Uuid::new_v4();
        list.revoke_user(user, 50);
        assert!(list.is_revoked(&claims("a", 50), user, TokenKind::Access));
        assert!(!list.is_revoked(&claims("a", 51), user, TokenKind::Refresh));
        assert_eq!(list.issue_time(user, 50), 51);
        assert_eq!(list.issue_time(user, 70), 70);
        assert_eq!(list.issue_time(Uuid::new_v4(), 10), 10);
    }
}
