//! Storage search indexes (Nakama's `nk.register_storage_index`): in-memory
//! indexes over chosen fields of the objects of one collection (and
//! optionally one key), kept current by [`crate::storage_service::StorageService`]
//! after each committed write and delete, filled from the store once the
//! modules have loaded, bounded by `max_entries`, and queried with the
//! match-listing language of [`crate::query`].
//!
//! Each indexed object is one JSON document, the shape Nakama's queries
//! name: `collection`, `key`, `user_id`, `version`, `read`, `write`,
//! `create_time`, `update_time` (UNIX seconds) and `value` holding only the
//! indexed fields, so `+value.level:>=10 -user_id:…` works unchanged.
//!
//! Indexes open in two phases because their filters are module functions
//! and the modules themselves use the storage service: [`StorageIndexes::register`]
//! while modules load, then [`StorageIndexes::start`] once with the filters,
//! which fills every index from the store. Registration is refused after that.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::error::{ApiError, Code};
use crate::query::Query;
use crate::storage::{Access, ListPosition, ListQuery, ObjectId, StorageObject, readable};
use crate::store::Store;

/// Most results one listing may ask for, as Nakama.
pub const MAX_LIST_LIMIT: usize = 10_000;

/// Objects read from the store per page while filling an index.
const FILL_PAGE: usize = 1000;

/// What `nk.register_storage_index` declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSpec {
    pub name: String,
    pub collection: String,
    /// Only objects with this key; empty for every key of the collection.
    pub key: String,
    /// Top-level fields of the value that are indexed (at least one).
    pub fields: Vec<String>,
    /// Fields a listing may order by (`value.<field>`, `-` for descending).
    pub sort_fields: Vec<String>,
    /// Most entries kept; the oldest are evicted beyond 110 % of it.
    pub max_entries: usize,
    /// Listings answer the indexed fields without reading the store.
    pub index_only: bool,
}

/// The module functions that decide whether an object written to an
/// indexed collection goes into an index (`nk.register_storage_index_filter`).
#[async_trait]
pub trait IndexFilter: Send + Sync {
    /// Whether a filter is registered for index `index`.
    fn has_filter(&self, index: &str) -> bool;
    /// True to index `object`, false to leave it out (and remove it).
    async fn keep(&self, index: &str, object: &StorageObject) -> Result<bool, ApiError>;
}

/// One result of [`StorageIndexes::list`]: the indexed object (its value
/// holds only the indexed fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexHit {
    pub object: StorageObject,
}

/// A page of [`StorageIndexes::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexPage {
    pub hits: Vec<IndexHit>,
    /// The cursor of the next page, if there is one.
    pub cursor: Option<String>,
    /// The index answers values itself, without the store.
    pub index_only: bool,
}

/// Every storage index of the server.
#[derive(Default)]
pub struct StorageIndexes {
    state: RwLock<State>,
}

#[derive(Default)]
struct State {
    by_name: HashMap<String, Arc<Index>>,
    /// Set by [`StorageIndexes::start`]; weak, since the filters live in the
    /// module runtime, which itself holds the storage service.
    filter: Option<Weak<dyn IndexFilter>>,
    started: bool,
}

struct Index {
    spec: IndexSpec,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    docs: HashMap<ObjectId, Entry>,
    /// Write order, to evict the oldest of objects updated in the same second.
    seq: u64,
}

struct Entry {
    object: StorageObject,
    doc: Value,
    seq: u64,
}

impl std::fmt::Debug for StorageIndexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.read_state().by_name.keys().cloned().collect();
        f.debug_struct("StorageIndexes")
            .field("indexes", &names)
            .finish()
    }
}

impl StorageIndexes {
    fn read_state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Each index's name and how many objects it holds now, by name
    /// (Nakama's `storage_index_entry_count` gauge).
    pub fn entry_counts(&self) -> Vec<(String, usize)> {
        let mut counts: Vec<(String, usize)> = self
            .read_state()
            .by_name
            .iter()
            .map(|(name, index)| {
                let n = index
                    .entries
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .docs
                    .len();
                (name.clone(), n)
            })
            .collect();
        counts.sort();
        counts
    }

    /// Declares an index, with Nakama's checks; only before [`Self::start`].
    pub fn register(&self, spec: IndexSpec) -> Result<(), ApiError> {
        let invalid = |m: &str| Err(ApiError::invalid(m.to_owned()));
        if spec.name.is_empty() {
            return invalid("storage index 'name' must be set");
        }
        if spec.collection.is_empty() {
            return invalid("storage index 'collection' must be set");
        }
        if spec.max_entries < 1 {
            return invalid("storage index 'max_entries' must be > 0");
        }
        if spec.fields.is_empty() {
            return invalid(
                "storage index 'fields' must contain at least one top level key to index",
            );
        }
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        if state.started {
            return invalid("storage indexes can only be registered while modules load");
        }
        if state.by_name.contains_key(&spec.name) {
            return Err(ApiError::invalid(format!(
                "cannot create index: index with name {:?} already exists",
                spec.name
            )));
        }
        tracing::info!(
            index = %spec.name,
            collection = %spec.collection,
            key = %if spec.key.is_empty() { "*" } else { &spec.key },
            max_entries = spec.max_entries,
            index_only = spec.index_only,
            "storage index registered"
        );
        state.by_name.insert(
            spec.name.clone(),
            Arc::new(Index {
                spec,
                entries: Mutex::default(),
            }),
        );
        Ok(())
    }

    /// Whether any index is registered (writes skip all index work if not).
    pub fn is_empty(&self) -> bool {
        self.read_state().by_name.is_empty()
    }

    /// Whether some index covers `collection`.
    pub fn covers(&self, collection: &str) -> bool {
        self.read_state()
            .by_name
            .values()
            .any(|i| i.spec.collection == collection)
    }

    /// Ends registration, takes the filters and fills every index from the
    /// store: the newest objects that pass the filter, up to `max_entries`.
    pub async fn start(
        &self,
        store: &dyn Store,
        filter: Option<Weak<dyn IndexFilter>>,
    ) -> Result<(), ApiError> {
        let indexes: Vec<Arc<Index>> = {
            let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
            state.started = true;
            state.filter = filter;
            state.by_name.values().cloned().collect()
        };
        for index in indexes {
            let started = std::time::Instant::now();
            let count = self.fill(store, &index).await?;
            tracing::info!(
                index = %index.spec.name,
                entries = count,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "storage index loaded"
            );
        }
        Ok(())
    }

    async fn fill(&self, store: &dyn Store, index: &Index) -> Result<usize, ApiError> {
        let spec = &index.spec;
        let mut kept: Vec<(StorageObject, Value)> = Vec::new();
        let mut query = ListQuery::for_access(Access::Server, &spec.collection, None, FILL_PAGE);
        loop {
            let page = store.storage_list(&query).await?;
            let Some(last) = page.last() else { break };
            query.after = Some(ListPosition {
                read: last.read,
                key: last.key.clone(),
                user_id: last.user_id,
            });
            let full = page.len() >= FILL_PAGE;
            for object in page {
                if !spec.key.is_empty() && object.key != spec.key {
                    continue;
                }
                if self.filter_says(spec, &object).await == Some(false) {
                    continue;
                }
                if let Some(doc) = document(spec, &object) {
                    kept.push(doc);
                }
            }
            if kept.len() > 2 * spec.max_entries {
                keep_newest(&mut kept, spec.max_entries);
            }
            if !full {
                break;
            }
        }
        keep_newest(&mut kept, spec.max_entries);
        // Oldest first, so eviction order follows update times.
        kept.reverse();
        let mut entries = index.entries.lock().unwrap_or_else(|e| e.into_inner());
        for (object, doc) in kept {
            entries.put(object, doc);
        }
        Ok(entries.docs.len())
    }

    /// The filter's answer for `object` in `spec`'s index: `None` when there
    /// is no filter, or it failed (logged; the index is left as it was).
    async fn filter_says(&self, spec: &IndexSpec, object: &StorageObject) -> Option<bool> {
        let filter = self.read_state().filter.as_ref()?.upgrade()?;
        if !filter.has_filter(&spec.name) {
            return None;
        }
        match filter.keep(&spec.name, object).await {
            Ok(keep) => Some(keep),
            Err(e) => {
                tracing::error!(index = %spec.name, error = %e.message, "storage index filter failed");
                None
            }
        }
    }

    fn indexes_of(&self, collection: &str) -> Vec<Arc<Index>> {
        self.read_state()
            .by_name
            .values()
            .filter(|i| i.spec.collection == collection)
            .cloned()
            .collect()
    }

    /// Brings the indexes up to date with objects just committed.
    pub async fn written(&self, objects: &[StorageObject]) {
        for object in objects {
            for index in self.indexes_of(&object.collection) {
                let spec = &index.spec;
                if !spec.key.is_empty() && spec.key != object.key {
                    continue;
                }
                let keep = match self.filter_says(spec, object).await {
                    Some(keep) => keep,
                    None if self.has_filter(spec) => continue,
                    None => true,
                };
                let mut entries = index.entries.lock().unwrap_or_else(|e| e.into_inner());
                let id = object_id(object);
                // Unlike Nakama, an object that no longer has any indexed
                // field leaves the index rather than staying there stale.
                match keep.then(|| document(spec, object)).flatten() {
                    Some((object, doc)) => {
                        entries.put(object, doc);
                        entries.evict(spec.max_entries);
                    }
                    None => {
                        entries.docs.remove(&id);
                    }
                }
            }
        }
    }

    fn has_filter(&self, spec: &IndexSpec) -> bool {
        let state = self.read_state();
        let filter = state.filter.as_ref().and_then(Weak::upgrade);
        filter.is_some_and(|f| f.has_filter(&spec.name))
    }

    /// Keeps only the entries whose object passes `keep`, in every index
    /// (after a console wipe deleted objects under them).
    pub fn retain(&self, keep: impl Fn(&StorageObject) -> bool) {
        let indexes: Vec<Arc<Index>> = self.read_state().by_name.values().cloned().collect();
        for index in indexes {
            let mut entries = index.entries.lock().unwrap_or_else(|e| e.into_inner());
            entries.docs.retain(|_, entry| keep(&entry.object));
        }
    }

    /// Removes objects just deleted from every index.
    pub fn deleted(&self, ids: &[ObjectId]) {
        for id in ids {
            for index in self.indexes_of(&id.collection) {
                let mut entries = index.entries.lock().unwrap_or_else(|e| e.into_inner());
                entries.docs.remove(id);
            }
        }
    }

    /// The entries of index `name` matching `query`, best first or in
    /// `order` (`value.<sort field>`, `create_time` or `update_time`, with
    /// `-` for descending), one page of `limit` after `cursor`. With a
    /// `caller`, index-only results are held to its read permission
    /// (others are checked by the caller when it reads the objects).
    pub fn list(
        &self,
        name: &str,
        query: &str,
        limit: usize,
        order: &[String],
        caller: Option<Uuid>,
        cursor: &str,
    ) -> Result<IndexPage, ApiError> {
        if !(1..=MAX_LIST_LIMIT).contains(&limit) {
            return Err(ApiError::invalid(format!(
                "invalid limit: expects value 1-{MAX_LIST_LIMIT}"
            )));
        }
        let index = self
            .read_state()
            .by_name
            .get(name)
            .cloned()
            .ok_or_else(|| {
                ApiError::new(
                    Code::NotFound,
                    format!("index {name:?} not found, register it with nk.register_storage_index"),
                )
            })?;
        let query_text = if query.trim().is_empty() { "*" } else { query };
        let offset = if cursor.is_empty() {
            0
        } else {
            resume(cursor, query_text, limit, order)?
        };
        let parsed = Query::parse(query_text)
            .map_err(|e| ApiError::invalid(format!("invalid index query: {e}")))?;
        let keys = order
            .iter()
            .map(|o| sort_key(&index.spec, o))
            .collect::<Result<Vec<_>, _>>()?;
        let entries = index.entries.lock().unwrap_or_else(|e| e.into_inner());
        let mut matched: Vec<(f64, &Entry)> = entries
            .docs
            .values()
            .filter_map(|e| parsed.score(&e.doc).map(|s| (s, e)))
            .collect();
        matched.sort_by(|(sa, a), (sb, b)| {
            let by_keys = keys
                .iter()
                .map(|k| k.compare(&a.doc, &b.doc))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal);
            by_keys
                .then_with(|| sb.total_cmp(sa))
                .then_with(|| b.object.update_time.cmp(&a.object.update_time))
                .then_with(|| b.seq.cmp(&a.seq))
        });
        let more = matched.len() > offset + limit;
        let hits = matched
            .into_iter()
            .skip(offset)
            .take(limit)
            .filter(|(_, e)| {
                !index.spec.index_only
                    || caller.is_none_or(|c| readable(&e.object, Access::User(c)))
            })
            .map(|(_, e)| IndexHit {
                object: e.object.clone(),
            })
            .collect();
        let next = more.then(|| cursor_at(query_text, offset + limit, limit, order));
        Ok(IndexPage {
            hits,
            cursor: next,
            index_only: index.spec.index_only,
        })
    }
}

impl Entries {
    fn put(&mut self, object: StorageObject, doc: Value) {
        self.seq += 1;
        let seq = self.seq;
        self.docs
            .insert(object_id(&object), Entry { object, doc, seq });
    }

    /// Nakama's eviction: once the index holds more than 110 % of
    /// `max_entries`, the least recently updated go until `max_entries` remain.
    fn evict(&mut self, max_entries: usize) {
        let count = self.docs.len();
        if count as f64 <= max_entries as f64 * 1.1 {
            return;
        }
        let mut oldest: Vec<(i64, u64, ObjectId)> = self
            .docs
            .iter()
            .map(|(id, e)| (e.object.update_time, e.seq, id.clone()))
            .collect();
        oldest.sort_unstable();
        for (_, _, id) in oldest.into_iter().take(count - max_entries) {
            self.docs.remove(&id);
        }
    }
}

fn object_id(o: &StorageObject) -> ObjectId {
    ObjectId {
        collection: o.collection.clone(),
        key: o.key.clone(),
        user_id: o.user_id,
    }
}

/// The indexed object (its value cut to the indexed fields) and its query
/// document; `None` when the value has none of the fields.
fn document(spec: &IndexSpec, object: &StorageObject) -> Option<(StorageObject, Value)> {
    let Ok(Value::Object(mut value)) = serde_json::from_str::<Value>(&object.value) else {
        return None;
    };
    let fields: Map<String, Value> = spec
        .fields
        .iter()
        .filter_map(|f| value.remove(f).map(|v| (f.clone(), v)))
        .collect();
    if fields.is_empty() {
        return None;
    }
    let doc = serde_json::json!({
        "collection": object.collection,
        "key": object.key,
        "user_id": object.user_id.to_string(),
        "version": object.version,
        "read": object.read.as_i64(),
        "write": object.write.as_i64(),
        "create_time": object.create_time,
        "update_time": object.update_time,
        "value": fields,
    });
    let mut indexed = object.clone();
    indexed.value = doc["value"].to_string();
    Some((indexed, doc))
}

fn keep_newest(kept: &mut Vec<(StorageObject, Value)>, max: usize) {
    kept.sort_by_key(|(o, _)| std::cmp::Reverse(o.update_time));
    kept.truncate(max);
}

/// One ordering of a listing: a path into the document and a direction.
struct SortKey {
    path: Vec<String>,
    descending: bool,
}

fn sort_key(spec: &IndexSpec, order: &str) -> Result<SortKey, ApiError> {
    let (descending, field) = match order.strip_prefix('-') {
        Some(f) => (true, f),
        None => (false, order),
    };
    let path = match field.strip_prefix("value.") {
        Some(f) if spec.sort_fields.iter().any(|s| s == f) => {
            vec!["value".to_owned(), f.to_owned()]
        }
        None if field == "create_time" || field == "update_time" => vec![field.to_owned()],
        _ => {
            return Err(ApiError::invalid(format!(
                "cannot order by {field:?}: name it in the index's sort fields and order by \"value.<field>\""
            )));
        }
    };
    Ok(SortKey { path, descending })
}

impl SortKey {
    /// Numbers before text; documents without the field last either way.
    fn compare(&self, a: &Value, b: &Value) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        let get = |d: &'_ Value| -> Option<Value> {
            let mut v = d;
            for p in &self.path {
                v = v.get(p)?;
            }
            (!v.is_null()).then(|| v.clone())
        };
        match (get(a), get(b)) {
            (None, None) => Equal,
            (None, Some(_)) => Greater,
            (Some(_), None) => Less,
            (Some(x), Some(y)) => {
                let o = match (x.as_f64(), y.as_f64()) {
                    (Some(m), Some(n)) => m.total_cmp(&n),
                    (Some(_), None) => Less,
                    (None, Some(_)) => Greater,
                    (None, None) => text(&x).cmp(&text(&y)),
                };
                if self.descending { o.reverse() } else { o }
            }
        }
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn cursor_at(query: &str, offset: usize, limit: usize, order: &[String]) -> String {
    let raw = serde_json::json!([1, query, offset, limit, order]);
    URL_SAFE_NO_PAD.encode(raw.to_string())
}

/// The offset a cursor continues at, if it belongs to this same listing.
fn resume(cursor: &str, query: &str, limit: usize, order: &[String]) -> Result<usize, ApiError> {
    let invalid = || ApiError::invalid("invalid cursor, list again without one");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let (format, q, offset, l, o): (u8, String, usize, usize, Vec<String>) =
        serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if format != 1 {
        return Err(invalid());
    }
    if q != query {
        return Err(ApiError::invalid("invalid cursor: query mismatch"));
    }
    if l != limit {
        return Err(ApiError::invalid("invalid cursor: limit mismatch"));
    }
    if o != order {
        return Err(ApiError::invalid("invalid cursor: order mismatch"));
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{ReadPermission, WritePermission};

    fn spec(max_entries: usize) -> IndexSpec {
        IndexSpec {
            name: "i".into(),
            collection: "c".into(),
            key: String::new(),
            fields: vec!["n".into(), "s".into()],
            sort_fields: vec!["n".into()],
            max_entries,
            index_only: true,
        }
    }

    fn object(key: &str, value: &str, update_time: i64) -> StorageObject {
        StorageObject {
            collection: "c".into(),
            key: key.into(),
            user_id: Uuid::nil(),
            value: value.into(),
            version: crate::storage::version_of(value),
            read: ReadPermission::PublicRead,
            write: WritePermission::OwnerWrite,
            create_time: update_time,
            update_time,
        }
    }

    fn indexes(max_entries: usize) -> StorageIndexes {
        let i = StorageIndexes::default();
        i.register(spec(max_entries)).unwrap();
        i
    }

    fn keys(page: &IndexPage) -> Vec<&str> {
        page.hits.iter().map(|h| h.object.key.as_str()).collect()
    }

    #[tokio::test]
    async fn eviction_waits_for_110_percent_then_drops_the_oldest() {
        let i = indexes(10);
        for n in 0..11 {
            i.written(&[object(&format!("k{n:02}"), &format!("{{\"n\":{n}}}"), 100)])
                .await;
        }
        // 11 is not more than 110 % of 10: nothing evicted yet.
        let all = i.list("i", "*", 100, &[], None, "").unwrap();
        assert_eq!(all.hits.len(), 11);
        i.written(&[object("k11", "{\"n\":11}", 100)]).await;
        let mut all: Vec<String> = i
            .list("i", "*", 100, &[], None, "")
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.object.key)
            .collect();
        all.sort();
        // Same second everywhere: the two written first go.
        assert_eq!(all.len(), 10);
        assert_eq!(all[0], "k02");
    }

    #[tokio::test]
    async fn order_puts_missing_fields_last_and_values_hold_only_indexed_fields() {
        let i = indexes(10);
        i.written(&[
            object("a", r#"{"n":2,"x":1}"#, 1),
            object("b", r#"{"s":"only text"}"#, 2),
            object("c", r#"{"n":10}"#, 3),
            object("d", r#"{"x":1}"#, 4),
        ])
        .await;
        let up = i.list("i", "", 10, &["value.n".into()], None, "").unwrap();
        assert_eq!(keys(&up), ["a", "c", "b"], "d has no indexed field");
        let down = i.list("i", "", 10, &["-value.n".into()], None, "").unwrap();
        assert_eq!(keys(&down), ["c", "a", "b"]);
        assert_eq!(up.hits[0].object.value, r#"{"n":2}"#);
        let newest = i
            .list("i", "", 10, &["-update_time".into()], None, "")
            .unwrap();
        assert_eq!(keys(&newest), ["c", "b", "a"]);
        // An update without any indexed field leaves the index.
        i.written(&[object("a", r#"{"x":2}"#, 5)]).await;
        let up = i.list("i", "", 10, &["value.n".into()], None, "").unwrap();
        assert_eq!(keys(&up), ["c", "b"]);
        i.deleted(&[ObjectId::new("c", "c", Uuid::nil()).unwrap()]);
        assert_eq!(keys(&i.list("i", "", 10, &[], None, "").unwrap()), ["b"]);
    }

    #[tokio::test]
    async fn should_clauses_rank_and_cursors_belong_to_their_listing() {
        let i = indexes(10);
        i.written(&[
            object("a", r#"{"n":1,"s":"x"}"#, 1),
            object("b", r#"{"n":2,"s":"y"}"#, 1),
        ])
        .await;
        let ranked = i
            .list("i", "value.s:y^5 value.n:1", 10, &[], None, "")
            .unwrap();
        assert_eq!(keys(&ranked), ["b", "a"]);
        let first = i.list("i", "*", 1, &[], None, "").unwrap();
        let cursor = first.cursor.clone().unwrap();
        let second = i.list("i", "*", 1, &[], None, &cursor).unwrap();
        assert_eq!(second.hits.len(), 1);
        assert_ne!(keys(&first), keys(&second));
        assert!(second.cursor.is_none());
        let e = i.list("i", "value.n:1", 1, &[], None, &cursor).unwrap_err();
        assert_eq!(e.message, "invalid cursor: query mismatch");
        let e = i.list("i", "*", 2, &[], None, &cursor).unwrap_err();
        assert_eq!(e.message, "invalid cursor: limit mismatch");
        assert!(i.list("i", "*", 0, &[], None, "").is_err());
    }

    #[test]
    fn registration_checks_as_nakama() {
        let i = indexes(10);
        let e = i.register(spec(10)).unwrap_err();
        assert!(e.message.contains("already exists"), "{}", e.message);
        let e = i
            .register(IndexSpec {
                fields: vec![],
                name: "j".into(),
                ..spec(1)
            })
            .unwrap_err();
        assert!(e.message.contains("'fields'"), "{}", e.message);
        let e = i
            .register(IndexSpec {
                name: "j".into(),
                ..spec(0)
            })
            .unwrap_err();
        assert!(e.message.contains("'max_entries'"), "{}", e.message);
    }
}
