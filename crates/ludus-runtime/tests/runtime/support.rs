//! In-memory `RuntimeServices` and helpers to start a runtime on a fixture.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use ludus_core::ApiError;
use ludus_core::accounts::Credential;
use ludus_core::model::{Account, AccountUpdate, User};
use ludus_core::store::{SqlRow, SqlValue};
use ludus_runtime::{
    Authenticated, HttpRequest, HttpResponse, LoadError, NativeModule, Runtime, RuntimeServices,
    RuntimeSettings,
};
use parking_lot::Mutex;
use uuid::Uuid;

#[derive(Default)]
pub(crate) struct FakeServices {
    users: Mutex<HashMap<String, User>>,
    /// Wallet updates with a `gate` entry wait here (see `gate`).
    gate: Mutex<Gate>,
    gate_open: tokio::sync::Notify,
    /// Gated wallet updates in flight now, and the most at once.
    pub in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    /// `http://hold/` requests started so far.
    pub holds_started: AtomicUsize,
}

#[derive(Default)]
struct Gate {
    waiting: usize,
    opened: u64,
}

impl FakeServices {
    fn user_for(&self, key: String, username: String) -> (User, bool) {
        let mut users = self.users.lock();
        if let Some(u) = users.get(&key) {
            return (u.clone(), false);
        }
        let user = User {
            id: Uuid::new_v4(),
            username: if username.is_empty() {
                format!("user{}", users.len())
            } else {
                username
            },
            metadata: "{}".into(),
            ..Default::default()
        };
        users.insert(key, user.clone());
        (user, true)
    }

    /// Holds a server call until `n` calls wait here at once (or fails it
    /// after `patience`), so a test knows that many were in flight together.
    async fn gate(&self, n: usize, patience: Duration) -> Result<(), ApiError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let opened = {
            let mut g = self.gate.lock();
            g.waiting += 1;
            if g.waiting >= n {
                g.waiting = 0;
                g.opened += 1;
                self.gate_open.notify_waiters();
                None
            } else {
                Some(g.opened)
            }
        };
        let result = match opened {
            None => Ok(()),
            Some(seen) => {
                let deadline = tokio::time::Instant::now() + patience;
                loop {
                    let notified = self.gate_open.notified();
                    tokio::pin!(notified);
                    notified.as_mut().enable();
                    if self.gate.lock().opened != seen {
                        break Ok(());
                    }
                    if tokio::time::timeout_at(deadline, notified).await.is_err() {
                        self.gate.lock().waiting -= 1;
                        break Err(ApiError::internal(format!(
                            "gate of {n} never filled: fewer calls were in flight at once"
                        )));
                    }
                }
            }
        };
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        result
    }

    fn find(&self, id: Uuid) -> Option<User> {
        self.users.lock().values().find(|u| u.id == id).cloned()
    }
}

#[async_trait]
impl RuntimeServices for FakeServices {
    async fn authenticate(
        &self,
        credential: Credential,
        username: String,
        _create: bool,
    ) -> Result<Authenticated, ApiError> {
        let key = match credential {
            Credential::Device { id } => format!("device:{id}"),
            Credential::Custom { id } => format!("custom:{id}"),
            Credential::Email { email, .. } => format!("email:{email}"),
            Credential::Social(social) => format!("{:?}", social),
        };
        let (user, created) = self.user_for(key, username);
        Ok(Authenticated {
            user_id: user.id.to_string(),
            username: user.username,
            created,
        })
    }

    fn generate_token(
        &self,
        user_id: Uuid,
        username: &str,
        expires_at: i64,
        vars: BTreeMap<String, String>,
    ) -> Result<(String, i64), ApiError> {
        let exp = if expires_at == 0 {
            4_000_000_000
        } else {
            expires_at
        };
        Ok((format!("token:{user_id}:{username}:{}", vars.len()), exp))
    }

    async fn account(&self, user_id: Uuid) -> Result<Account, ApiError> {
        let user = self
            .find(user_id)
            .ok_or_else(|| ApiError::not_found("user account not found"))?;
        Ok(Account {
            user,
            wallet: "{}".into(),
            devices: vec!["device-0001".into()],
            ..Default::default()
        })
    }

    async fn update_account(&self, user_id: Uuid, update: AccountUpdate) -> Result<(), ApiError> {
        let mut users = self.users.lock();
        let user = users
            .values_mut()
            .find(|u| u.id == user_id)
            .ok_or_else(|| ApiError::not_found("user account not found"))?;
        if let Some(v) = update.username {
            user.username = v;
        }
        if let Some(v) = update.display_name {
            user.display_name = v;
        }
        if let Some(v) = update.metadata {
            user.metadata = v;
        }
        Ok(())
    }

    async fn users(&self, ids: Vec<String>, usernames: Vec<String>) -> Result<Vec<User>, ApiError> {
        Ok(self
            .users
            .lock()
            .values()
            .filter(|u| ids.contains(&u.id.to_string()) || usernames.contains(&u.username))
            .cloned()
            .collect())
    }

    async fn http_request(&self, request: HttpRequest) -> Result<HttpResponse, ApiError> {
        if request.url.starts_with("http://hold/") {
            self.holds_started.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(request.timeout).await;
            return Ok(HttpResponse {
                status: 200,
                ..Default::default()
            });
        }
        let mut headers = BTreeMap::new();
        headers.insert("content-type".to_string(), vec!["text/plain".to_string()]);
        let mut body = format!("{} ", request.method).into_bytes();
        body.extend(request.body);
        Ok(HttpResponse {
            status: 201,
            headers,
            body,
        })
    }

    /// Acknowledges each write; the collection comes back as
    /// `collection:read:write:check` so a test sees what the Lua table became.
    async fn storage_write(
        &self,
        writes: Vec<ludus_core::storage::StorageWrite>,
    ) -> Result<Vec<ludus_core::storage::StorageAck>, ApiError> {
        Ok(writes
            .iter()
            .map(|w| ludus_core::storage::StorageAck {
                collection: format!(
                    "{}:{}:{}:{:?}",
                    w.id.collection,
                    w.read.as_i64(),
                    w.write.as_i64(),
                    w.check
                ),
                key: w.id.key.clone(),
                user_id: w.id.user_id,
                version: w.version(),
                create_time: 0,
                update_time: 0,
            })
            .collect())
    }

    /// Every user has an empty wallet; the changeset becomes the new one.
    /// A changeset with `gate = n` first waits for `n` such calls at once
    /// (for `gate_ms`, 3 s by default), and one with `hold_ms = t` for that
    /// long.
    async fn wallets_update(
        &self,
        updates: Vec<ludus_core::wallet::WalletUpdate>,
        _update_ledger: bool,
    ) -> Result<Vec<ludus_core::wallet::WalletUpdateResult>, ApiError> {
        for u in &updates {
            if let Some(&n) = u.changeset.get("gate") {
                let patience = u.changeset.get("gate_ms").copied().unwrap_or(3000);
                self.gate(n as usize, Duration::from_millis(patience as u64))
                    .await?;
            }
            if let Some(&t) = u.changeset.get("hold_ms") {
                tokio::time::sleep(Duration::from_millis(t as u64)).await;
            }
        }
        Ok(updates
            .into_iter()
            .map(|u| ludus_core::wallet::WalletUpdateResult {
                user_id: u.user_id,
                updated: u.changeset,
                previous: Default::default(),
            })
            .collect())
    }

    /// Answers how many parameters arrived, so Lua sees the conversion.
    async fn sql_exec(&self, query: &str, params: Vec<SqlValue>) -> Result<u64, ApiError> {
        if query.contains("fail") {
            return Err(ApiError::internal("relation \"fail\" does not exist"));
        }
        Ok(params.len() as u64)
    }

    /// One row that echoes the parameters as columns `p1`, `p2`…, plus a
    /// column of each value type.
    async fn sql_query(&self, query: &str, params: Vec<SqlValue>) -> Result<Vec<SqlRow>, ApiError> {
        if query.contains("fail") {
            return Err(ApiError::internal("relation \"fail\" does not exist"));
        }
        let mut row: SqlRow = params
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("p{}", i + 1), v))
            .collect();
        row.extend([
            ("null".to_owned(), SqlValue::Null),
            ("bool".to_owned(), SqlValue::Bool(true)),
            ("int".to_owned(), SqlValue::Int(-7)),
            ("float".to_owned(), SqlValue::Float(2.5)),
            ("text".to_owned(), SqlValue::Text("t".into())),
            ("bytes".to_owned(), SqlValue::Bytes(vec![0xff, 0])),
        ]);
        Ok(vec![row.clone(), row])
    }
}

pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub(crate) fn settings(name: &str) -> RuntimeSettings {
    let mut env = BTreeMap::new();
    env.insert("region".to_string(), "eu".to_string());
    RuntimeSettings {
        path: fixture(name),
        node: "test-node".into(),
        env,
        pool_size: 2,
        vms_per_thread: 4,
        pool_queue_size: 8,
        pool_timeout: Duration::from_secs(5),
        instruction_budget: 20_000_000,
        memory_limit_bytes: 32 << 20,
        call_timeout: Duration::from_secs(5),
        match_timeout_percent: 50,
        read_only_globals: true,
        max_payload_bytes: 4096,
        config: serde_json::json!({"name": "test-node"}),
        js_entrypoint: String::new(),
        js_max_count: 4,
        js_memory_limit_bytes: 16 << 20,
        js_call_timeout: Duration::from_secs(5),
        event_queue_size: 64,
        event_queue_workers: 2,
    }
}

pub(crate) async fn start(settings: RuntimeSettings) -> Result<Runtime, LoadError> {
    start_with(settings, Arc::new(FakeServices::default())).await
}

/// Starts a runtime whose services the test keeps, to see what they saw.
pub(crate) async fn start_with(
    settings: RuntimeSettings,
    services: Arc<FakeServices>,
) -> Result<Runtime, LoadError> {
    Runtime::start(settings, services, NativeModule::new()).await
}
