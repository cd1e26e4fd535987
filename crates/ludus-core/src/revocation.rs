//! The in-memory view of revoked sessions, checked on every authenticated
//! request. The store holds the durable copy; this list is loaded from it at
//! start-up and updated after each write, so a logout survives a restart.

use std::collections::HashMap;
use std::sync::RwLock;

use uuid::Uuid;

use crate::model::Revocations;
use crate::token::{SessionClaims, TokenKind};

/// One revocation as it crosses to the other nodes of a cluster (each node
/// checks tokens against its own in-memory list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoked {
    Token {
        token_id: String,
        kind: String,
        expires_at: i64,
    },
    User {
        user: Uuid,
        cutoff: i64,
    },
}

impl Revoked {
    /// A line of text: `t|kind|expires_at|token_id` or `u|user|cutoff`.
    pub fn encode(&self) -> String {
        match self {
            Revoked::Token {
                token_id,
                kind,
                expires_at,
            } => format!("t|{kind}|{expires_at}|{token_id}"),
            Revoked::User { user, cutoff } => format!("u|{user}|{cutoff}"),
        }
    }

    pub fn decode(text: &str) -> Option<Revoked> {
        let mut parts = text.splitn(4, '|');
        match parts.next()? {
            "t" => Some(Revoked::Token {
                kind: parts.next()?.to_owned(),
                expires_at: parts.next()?.parse().ok()?,
                token_id: parts.next()?.to_owned(),
            }),
            "u" => Some(Revoked::User {
                user: parts.next()?.parse().ok()?,
                cutoff: parts.next()?.parse().ok()?,
            }),
            _ => None,
        }
    }
}

/// Where this node's revocations go so that every node applies them (the
/// cluster bus).
pub trait RevocationFeed: Send + Sync {
    fn revoked(&self, revoked: &Revoked);
}

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

    /// Adds what the store holds (revocations another node made while this
    /// one could not hear of them).
    pub fn merge(&self, stored: Revocations, now: i64) {
        for (id, kind, exp) in stored.tokens {
            self.revoke_token(id, kind, exp, now);
        }
        for (user, cutoff) in stored.users {
            self.revoke_user(user, cutoff);
        }
    }

    /// Applies a revocation another node made.
    pub fn apply(&self, revoked: Revoked, now: i64) {
        match revoked {
            Revoked::Token {
                token_id,
                kind,
                expires_at,
            } => {
                if let Some(kind) = TokenKind::parse(&kind) {
                    self.revoke_token(token_id, kind, expires_at, now);
                }
            }
            Revoked::User { user, cutoff } => self.revoke_user(user, cutoff),
        }
    }

    pub fn revoke_user(&self, user: Uuid, cutoff: i64) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let entry = inner.users.entry(user).or_insert(cutoff);
        *entry = (*entry).max(cutoff);
    }

    /// The `iat` to give a new token of this user: never at or before a cutoff,
    /// so a sign-in in the same second as a logout is not born revoked. It is
    /// also the cutoff a logout of every session takes: a token signed after
    /// an earlier logout of the same second carries `cutoff + 1`, and must
    /// go too.
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
    fn revocations_cross_as_text_and_back() {
        for r in [
            Revoked::Token {
                token_id: "a|b".into(),
                kind: "refresh".into(),
                expires_at: 12,
            },
            Revoked::User {
                user: Uuid::new_v4(),
                cutoff: 99,
            },
        ] {
            assert_eq!(Revoked::decode(&r.encode()), Some(r));
        }
        assert_eq!(Revoked::decode("x|1"), None);
        assert_eq!(Revoked::decode("u|not-a-uuid|1"), None);
    }

    #[test]
    fn revocations_from_another_node_apply_and_merge() {
        let list = RevocationList::default();
        let user = Uuid::new_v4();
        list.apply(
            Revoked::Token {
                token_id: "t".into(),
                kind: TokenKind::Refresh.as_str().into(),
                expires_at: 100,
            },
            0,
        );
        assert!(list.is_revoked(&claims("t", 10), user, TokenKind::Refresh));
        list.apply(Revoked::User { user, cutoff: 40 }, 0);
        assert!(list.is_revoked(&claims("x", 40), user, TokenKind::Access));
        let other = Uuid::new_v4();
        list.merge(
            Revocations {
                tokens: vec![("s".into(), TokenKind::Access, 100)],
                users: vec![(other, 30)],
            },
            0,
        );
        assert!(list.is_revoked(&claims("s", 10), user, TokenKind::Access));
        assert!(list.is_revoked(&claims("y", 30), other, TokenKind::Access));
        // A merge never lowers a cutoff already known.
        list.merge(
            Revocations {
                tokens: vec![],
                users: vec![(user, 10)],
            },
            0,
        );
        assert!(list.is_revoked(&claims("x", 40), user, TokenKind::Access));
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
