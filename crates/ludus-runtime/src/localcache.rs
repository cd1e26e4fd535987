//! `nk.localcache_*`: a node-local key/value cache shared by every VM, with
//! optional expiry. Bounded, so a module cannot grow it without limit.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

/// Most entries the cache holds; a put beyond it fails with an error.
pub(crate) const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Default)]
pub(crate) struct LocalCache {
    entries: Mutex<HashMap<String, (Value, Option<Instant>)>>,
}

#[derive(Debug, thiserror::Error)]
#[error("localcache is full ({MAX_ENTRIES} entries), delete entries or put them with a ttl")]
pub(crate) struct CacheFull;

impl LocalCache {
    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        let mut entries = self.entries.lock();
        match entries.get(key) {
            Some((_, Some(deadline))) if *deadline <= Instant::now() => {
                entries.remove(key);
                None
            }
            Some((value, _)) => Some(value.clone()),
            None => None,
        }
    }

    /// `ttl` of zero keeps the entry until deleted.
    pub(crate) fn put(&self, key: String, value: Value, ttl: Duration) -> Result<(), CacheFull> {
        let deadline = (!ttl.is_zero()).then(|| Instant::now() + ttl);
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
            let now = Instant::now();
            entries.retain(|_, (_, d)| d.is_none_or(|d| d > now));
            if entries.len() >= MAX_ENTRIES {
                return Err(CacheFull);
            }
        }
        entries.insert(key, (value, deadline));
        Ok(())
    }

    pub(crate) fn delete(&self, key: &str) {
        self.entries.lock().remove(key);
    }

    pub(crate) fn clear(&self) {
        self.entries.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire() {
        let cache = LocalCache::default();
        cache
            .put("a".into(), Value::from(1), Duration::from_nanos(1))
            .unwrap();
        cache
            .put("b".into(), Value::from(2), Duration::ZERO)
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(cache.get("a"), None);
        assert_eq!(cache.get("b"), Some(Value::from(2)));
        cache.delete("b");
        assert_eq!(cache.get("b"), None);
    }
}
