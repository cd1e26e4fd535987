//! `SignInThrottle`: Ludus's limit on failed sign-ins (Nakama's client API
//! has none). Each failure counts against the account named (an email or
//! username) and the source address; past `free_failures` in a row, a key
//! is refused for a back-off that doubles with each further failure, up to
//! `max_backoff_ms`, with `ResourceExhausted`. A success clears its account
//! key and is never delayed. At most `max_tracked` keys are remembered: when
//! full, the one idle longest is forgotten, so memory stays bounded whatever
//! a client sends.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{ApiError, Code};

/// The `session.sign_in_*` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleSettings {
    /// Failures in a row a key may have before it is refused (0: off).
    pub free_failures: u32,
    /// The first back-off, in milliseconds; each further failure doubles it.
    pub backoff_ms: u64,
    pub max_backoff_ms: u64,
    /// Most keys (accounts and addresses) remembered.
    pub max_tracked: usize,
}

impl Default for ThrottleSettings {
    fn default() -> Self {
        ThrottleSettings {
            free_failures: 5,
            backoff_ms: 1_000,
            max_backoff_ms: 300_000,
            max_tracked: 100_000,
        }
    }
}

struct Entry {
    failures: u32,
    blocked_until: Instant,
    last: Instant,
}

pub struct SignInThrottle {
    settings: ThrottleSettings,
    entries: Mutex<HashMap<String, Entry>>,
}

impl SignInThrottle {
    pub fn new(settings: ThrottleSettings) -> Self {
        SignInThrottle {
            settings,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuses while any of `keys` is backing off.
    pub fn check(&self, keys: &[String]) -> Result<(), ApiError> {
        if self.settings.free_failures == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let entries = self.lock();
        let wait = keys
            .iter()
            .filter_map(|k| entries.get(k))
            .map(|e| e.blocked_until.saturating_duration_since(now))
            .max()
            .unwrap_or_default();
        if wait.is_zero() {
            return Ok(());
        }
        Err(ApiError::new(
            Code::ResourceExhausted,
            format!(
                "too many failed sign-ins, try again in {} seconds",
                wait.as_millis().div_ceil(1000)
            ),
        ))
    }

    /// Counts a failure against each of `keys`.
    pub fn failed(&self, keys: &[String]) {
        let s = self.settings;
        if s.free_failures == 0 {
            return;
        }
        let now = Instant::now();
        let forget_after = Duration::from_millis(s.max_backoff_ms.saturating_mul(2).max(1));
        let mut entries = self.lock();
        for key in keys {
            if !entries.contains_key(key) && entries.len() >= s.max_tracked.max(1) {
                let oldest = entries
                    .iter()
                    .min_by_key(|(_, e)| e.last)
                    .map(|(k, _)| k.clone());
                if let Some(oldest) = oldest {
                    entries.remove(&oldest);
                }
            }
            let entry = entries.entry(key.clone()).or_insert(Entry {
                failures: 0,
                blocked_until: now,
                last: now,
            });
            // A key quiet for long starts afresh.
            if now.duration_since(entry.last) > forget_after {
                entry.failures = 0;
            }
            entry.failures = entry.failures.saturating_add(1);
            entry.last = now;
            if entry.failures > s.free_failures {
                let doublings = (entry.failures - s.free_failures - 1).min(32);
                let backoff = s
                    .backoff_ms
                    .saturating_mul(1u64 << doublings)
                    .min(s.max_backoff_ms);
                entry.blocked_until = now + Duration::from_millis(backoff);
            }
        }
    }

    /// A success clears the account's failures (not the address's).
    pub fn succeeded(&self, account_key: &str) {
        if self.settings.free_failures > 0 {
            self.lock().remove(account_key);
        }
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| (*s).to_owned()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn failures_past_the_free_ones_back_off_doubling_up_to_the_cap() {
        let t = SignInThrottle::new(ThrottleSettings {
            free_failures: 2,
            backoff_ms: 1_000,
            max_backoff_ms: 4_000,
            max_tracked: 10,
        });
        let k = keys(&["account:a", "addr:1.2.3.4"]);
        t.failed(&k);
        t.failed(&k);
        assert!(t.check(&k).is_ok(), "two failures are free");
        t.failed(&k);
        let e = t.check(&k).unwrap_err();
        assert_eq!(e.code, Code::ResourceExhausted);
        assert_eq!(
            e.message,
            "too many failed sign-ins, try again in 1 seconds"
        );
        // The address alone is refused too, for another account.
        assert!(t.check(&keys(&["account:b", "addr:1.2.3.4"])).is_err());
        tokio::time::advance(Duration::from_millis(1_001)).await;
        assert!(t.check(&k).is_ok());
        t.failed(&k);
        assert!(t.check(&k).unwrap_err().message.contains("in 2 seconds"));
        for _ in 0..5 {
            t.failed(&k);
        }
        assert!(
            t.check(&k).unwrap_err().message.contains("in 4 seconds"),
            "capped"
        );
        // Success clears the account, not the address.
        t.succeeded("account:a");
        assert!(t.check(&keys(&["account:a"])).is_ok());
        assert!(t.check(&keys(&["addr:1.2.3.4"])).is_err());
        // Long quiet: the count starts afresh.
        tokio::time::advance(Duration::from_secs(60)).await;
        t.failed(&k);
        assert!(t.check(&k).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn memory_is_bounded_and_off_means_off() {
        let t = SignInThrottle::new(ThrottleSettings {
            max_tracked: 3,
            ..ThrottleSettings::default()
        });
        for i in 0..50 {
            t.failed(&[format!("addr:{i}")]);
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        assert_eq!(t.tracked(), 3);
        let off = SignInThrottle::new(ThrottleSettings {
            free_failures: 0,
            ..ThrottleSettings::default()
        });
        let k = keys(&["account:a"]);
        for _ in 0..100 {
            off.failed(&k);
        }
        assert!(off.check(&k).is_ok());
    }
}
