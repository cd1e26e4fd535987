//! `RuntimeServices` over the server's account service, realtime layer,
//! store and an HTTP client: what `nk.authenticate_*`, `nk.account_*`,
//! `nk.users_*`, `nk.http_request`, notifications, chat, sessions, streams
//! and `nk.sql_*` (and native modules) reach.
//!
//! The HTTP client speaks http and https (rustls with the `ring` provider,
//! Mozilla's roots from `webpki-roots` plus any authorities in
//! `runtime.http_ca_file`); it follows no redirects, and every request has
//! the caller's timeout and a bounded response body, whatever the scheme.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ludus_core::accounts::{AccountService, AuthRequest, Credential};
use ludus_core::model::{Account, AccountUpdate, User};
use ludus_core::notification::Notification;
use ludus_core::store::{SqlRow, SqlValue};
use ludus_core::token::{self, SessionClaims};
use ludus_core::{ApiError, Code, unix_now};
use ludus_realtime::matches::{ListRequest, MatchListing};
use ludus_realtime::{CloseReason, Realtime, RtError, Stream, StreamMode};
use ludus_runtime::PartyListing;
use ludus_runtime::{
    Authenticated, ChannelMessageSent, HttpRequest, HttpResponse, RuntimeServices, StreamKey,
    StreamMeta, StreamPresence,
};

use super::RuntimeConfig;
use crate::socket::Sockets;
use uuid::Uuid;

/// Largest response body `nk.http_request` reads.
const MAX_HTTP_RESPONSE_BYTES: usize = 16 << 20;

/// Where the services find the realtime layer: the sockets are built after
/// the runtime (they run its RPCs and hooks), so the slot is filled then. It
/// holds a weak reference, so sockets and runtime do not keep each other alive.
pub type RealtimeSlot = Arc<OnceLock<Weak<Sockets>>>;

pub struct Services {
    accounts: Arc<AccountService>,
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    sockets: RealtimeSlot,
    sql_max_rows: usize,
    /// Storage objects, wallets and the ledger, on behalf of the server.
    storage: ludus_core::storage_service::StorageService,
}

impl Services {
    /// Fails (with a message naming the key) when `runtime.http_ca_file`
    /// cannot be read or holds no certificate.
    pub fn new(
        accounts: Arc<AccountService>,
        sockets: RealtimeSlot,
        config: &RuntimeConfig,
    ) -> Result<Self, String> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.enforce_http(false);
        let tls = tls_config(&config.http_ca_file)?;
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        Ok(Services {
            accounts: accounts.clone(),
            http: Client::builder(TokioExecutor::new()).build(https),
            sockets,
            sql_max_rows: config.sql_max_rows,
            storage: ludus_core::storage_service::StorageService::new(
                accounts.store().clone(),
                ludus_core::storage_service::StorageLimits::default(),
            ),
        })
    }

    fn with_realtime<T>(&self, f: impl FnOnce(&Realtime) -> T) -> Result<T, ApiError> {
        match self.sockets.get().and_then(Weak::upgrade) {
            Some(sockets) => Ok(f(&sockets.realtime)),
            None => Err(ApiError::new(
                Code::Unavailable,
                "the realtime layer is not running, call this after start-up",
            )),
        }
    }
}

/// The client's TLS settings: Mozilla's roots plus the authorities in
/// `ca_file` (PEM), if one is named.
fn tls_config(ca_file: &str) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;

    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if !ca_file.is_empty() {
        let bad = |why: String| format!("runtime.http_ca_file {ca_file:?}: {why}");
        let pem = std::fs::read(ca_file).map_err(|e| bad(format!("cannot read it: {e}")))?;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| bad(format!("not a PEM certificate file: {e}")))?;
            roots.add(cert).map_err(|e| {
                bad(format!(
                    "a certificate in it is not a usable authority: {e}"
                ))
            })?;
            added += 1;
        }
        if added == 0 {
            return Err(bad(
                "holds no certificate; give a PEM file with one or more BEGIN CERTIFICATE blocks"
                    .into(),
            ));
        }
        tracing::info!(
            ca_file,
            certificates = added,
            "extra certificate authorities for nk.http_request"
        );
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
        .map_err(|e| format!("cannot set up tls for nk.http_request: {e}"))
}

fn stream_of(key: &StreamKey) -> Stream {
    Stream::new(
        StreamMode::from_u8(key.mode),
        key.subject,
        key.subcontext,
        &key.label,
    )
}

fn rt_error(e: RtError) -> ApiError {
    let code = match e.code {
        ludus_realtime::RtCode::BadInput => Code::InvalidArgument,
        ludus_realtime::RtCode::MatchNotFound => Code::NotFound,
        _ => Code::Internal,
    };
    ApiError::new(code, e.message)
}

#[async_trait]
impl RuntimeServices for Services {
    async fn authenticate(
        &self,
        credential: Credential,
        username: String,
        create: bool,
    ) -> Result<Authenticated, ApiError> {
        let tokens = self
            .accounts
            .authenticate(AuthRequest {
                credential,
                username,
                create,
                vars: BTreeMap::new(),
            })
            .await?;
        let caller = self.accounts.verify_access(&tokens.token)?;
        Ok(Authenticated {
            user_id: caller.user_id.to_string(),
            username: caller.claims.username,
            created: tokens.created,
        })
    }

    fn generate_token(
        &self,
        user_id: Uuid,
        username: &str,
        expires_at: i64,
        vars: BTreeMap<String, String>,
    ) -> Result<(String, i64), ApiError> {
        let settings = self.accounts.settings();
        let now = unix_now();
        let exp = if expires_at > 0 {
            expires_at
        } else {
            now + settings.token_expiry_sec
        };
        let claims = SessionClaims {
            token_id: Uuid::new_v4().to_string(),
            user_id: user_id.to_string(),
            username: username.to_owned(),
            vars,
            expires_at: exp,
            issued_at: now,
        };
        Ok((
            token::sign(settings.encryption_key.as_bytes(), &claims),
            exp,
        ))
    }

    async fn account(&self, user_id: Uuid) -> Result<Account, ApiError> {
        self.accounts.account(user_id).await
    }

    async fn update_account(&self, user_id: Uuid, update: AccountUpdate) -> Result<(), ApiError> {
        self.accounts.update_account(user_id, update).await
    }

    async fn users(&self, ids: Vec<String>, usernames: Vec<String>) -> Result<Vec<User>, ApiError> {
        self.accounts.users(&ids, &usernames).await
    }

    async fn http_request(&self, request: HttpRequest) -> Result<HttpResponse, ApiError> {
        let failed = |what: &str, e: &dyn std::error::Error| {
            // hyper's errors say little at the top ("client error (Connect)"):
            // the cause (refused, certificate unknown…) is in the chain.
            let mut message = format!("http request error: {what}: {e}");
            let mut cause = e.source();
            while let Some(c) = cause {
                message.push_str(&format!(": {c}"));
                cause = c.source();
            }
            ApiError::new(Code::Internal, message)
        };
        let mut builder = hyper::Request::builder()
            .method(request.method.as_str())
            .uri(request.url.as_str());
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let req = builder
            .body(Full::new(Bytes::from(request.body)))
            .map_err(|e| failed("bad request", &e))?;
        let exchange = async {
            let res = self
                .http
                .request(req)
                .await
                .map_err(|e| failed("cannot connect or send", &e))?;
            let status = res.status().as_u16();
            let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (name, value) in res.headers() {
                headers
                    .entry(name.as_str().to_owned())
                    .or_default()
                    .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
            }
            let body = Limited::new(res.into_body(), MAX_HTTP_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| failed("cannot read response body", &*e))?
                .to_bytes()
                .to_vec();
            Ok(HttpResponse {
                status,
                headers,
                body,
            })
        };
        match tokio::time::timeout(request.timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err(ApiError::new(
                Code::DeadlineExceeded,
                format!(
                    "http request error: no answer within {} ms",
                    request.timeout.as_millis()
                ),
            )),
        }
    }

    async fn notifications_send(&self, notifications: Vec<Notification>) -> Result<(), ApiError> {
        let sockets = self.sockets.get().and_then(Weak::upgrade).ok_or_else(|| {
            ApiError::new(
                Code::Unavailable,
                "the realtime layer is not running, call this after start-up",
            )
        })?;
        sockets
            .realtime
            .notify(notifications)
            .await
            .map_err(|error| {
                tracing::error!(%error, "cannot store notifications sent by a module");
                ApiError::new(Code::Internal, "could not store notifications, try again")
            })
    }

    /// Nakama's reasons 0-4 (0: none given, which Nakama reads as 4,
    /// disconnect); the socket's close frame carries it.
    fn session_disconnect(&self, session_id: Uuid, reason: i32) -> Result<(), ApiError> {
        let reason = u8::try_from(reason)
            .ok()
            .and_then(CloseReason::module)
            .ok_or_else(|| {
                ApiError::new(
                    Code::InvalidArgument,
                    "invalid disconnect reason, must be a value 0-4",
                )
            })?;
        self.with_realtime(|rt| {
            rt.registry.disconnect(session_id, reason);
        })
    }

    async fn channel_message_send(
        &self,
        channel_id: &str,
        content: String,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ChannelMessageSent, ApiError> {
        let sockets = self.sockets.get().and_then(Weak::upgrade).ok_or_else(|| {
            ApiError::new(
                Code::Unavailable,
                "the realtime layer is not running, call this after start-up",
            )
        })?;
        let ack = sockets
            .realtime
            .channel_message_send_as(channel_id, content, sender, username, persist)
            .await
            .map_err(rt_error)?;
        let secs = |t: Option<ludus_proto::Timestamp>| t.map_or(0, |t| t.seconds);
        Ok(ChannelMessageSent {
            channel_id: ack.channel_id,
            message_id: ack.message_id,
            code: ack.code.map_or(0, |c| c.value),
            username: ack.username,
            create_time: secs(ack.create_time),
            update_time: secs(ack.update_time),
            persistent: ack.persistent.is_some_and(|p| p.value),
            room_name: ack.room_name,
            group_id: ack.group_id,
            user_id_one: ack.user_id_one,
            user_id_two: ack.user_id_two,
        })
    }

    fn stream_user_join(
        &self,
        user: Uuid,
        session: Uuid,
        stream: &StreamKey,
        meta: StreamMeta,
    ) -> Result<bool, ApiError> {
        self.with_realtime(|rt| {
            rt.stream_user_join(
                user,
                session,
                &stream_of(stream),
                meta.hidden,
                meta.persistence,
                &meta.status,
            )
        })?
        .map_err(rt_error)
    }

    fn stream_user_leave(
        &self,
        user: Uuid,
        session: Uuid,
        stream: &StreamKey,
    ) -> Result<(), ApiError> {
        self.with_realtime(|rt| {
            rt.stream_user_leave(user, session, &stream_of(stream));
        })
    }

    fn stream_user_list(
        &self,
        stream: &StreamKey,
        include_hidden: bool,
        include_not_hidden: bool,
    ) -> Vec<StreamPresence> {
        self.with_realtime(|rt| {
            rt.tracker
                .list(&stream_of(stream), true)
                .into_iter()
                .filter(|p| {
                    if p.meta.hidden {
                        include_hidden
                    } else {
                        include_not_hidden
                    }
                })
                .map(|p| presence_of(&p))
                .collect()
        })
        .unwrap_or_default()
    }

    fn stream_user_get(
        &self,
        user: Uuid,
        session: Uuid,
        stream: &StreamKey,
    ) -> Option<StreamPresence> {
        self.with_realtime(|rt| {
            rt.tracker
                .get(session, &stream_of(stream))
                .filter(|p| p.user_id == user)
                .map(|p| presence_of(&p))
        })
        .ok()
        .flatten()
    }

    fn stream_count(&self, stream: &StreamKey) -> usize {
        self.with_realtime(|rt| rt.tracker.count(&stream_of(stream)))
            .unwrap_or(0)
    }

    fn stream_close(&self, stream: &StreamKey) {
        let _ = self.with_realtime(|rt| rt.stream_close(&stream_of(stream)));
    }

    fn stream_send(&self, stream: &StreamKey, data: String, sessions: Vec<Uuid>, reliable: bool) {
        let _ =
            self.with_realtime(|rt| rt.stream_send(&stream_of(stream), data, &sessions, reliable));
    }

    // Parties

    fn party_list(
        &self,
        limit: usize,
        open: Option<bool>,
        show_hidden: bool,
        query: &str,
        cursor: &str,
    ) -> Result<(Vec<PartyListing>, Option<String>), ApiError> {
        let (page, next) = self
            .with_realtime(|rt| rt.party_list(limit, open, show_hidden, query, cursor))?
            .map_err(rt_error)?;
        let listed = page
            .into_iter()
            .map(|p| PartyListing {
                party_id: p.party_id,
                open: p.open,
                hidden: p.hidden,
                max_size: p.max_size,
                size: p.size,
                label: p.label,
            })
            .collect();
        Ok((listed, next))
    }

    // Matches

    async fn match_create(
        &self,
        module: &str,
        params: serde_json::Value,
    ) -> Result<String, ApiError> {
        let matches = self.with_realtime(|rt| rt.matches.clone())?;
        matches.create(module, params).await.map_err(rt_error)
    }

    fn match_get(&self, match_id: &str) -> Option<MatchListing> {
        self.with_realtime(|rt| rt.matches.get(match_id))
            .ok()
            .flatten()
    }

    fn match_list(&self, request: ListRequest) -> Result<Vec<MatchListing>, ApiError> {
        self.with_realtime(|rt| rt.matches.list(&request))?
            .map_err(rt_error)
    }

    async fn match_signal(&self, match_id: &str, data: String) -> Result<String, ApiError> {
        let matches = self.with_realtime(|rt| rt.matches.clone())?;
        matches.signal(match_id, data).await.map_err(rt_error)
    }

    // SQL

    async fn sql_exec(&self, query: &str, params: Vec<SqlValue>) -> Result<u64, ApiError> {
        self.accounts
            .store()
            .sql_exec(query, params)
            .await
            .map_err(|e| sql_error("exec", e))
    }

    async fn sql_query(&self, query: &str, params: Vec<SqlValue>) -> Result<Vec<SqlRow>, ApiError> {
        self.accounts
            .store()
            .sql_query(query, params, self.sql_max_rows)
            .await
            .map_err(|e| sql_error("query", e))
    }

    // Storage and wallets: one-line delegations to `StorageService`, as the server.

    async fn storage_read(
        &self,
        ids: Vec<ludus_core::storage::ObjectId>,
    ) -> Result<Vec<ludus_core::storage::StorageObject>, ApiError> {
        self.storage
            .read(ludus_core::storage::Access::Server, ids)
            .await
    }

    async fn storage_write(
        &self,
        writes: Vec<ludus_core::storage::StorageWrite>,
    ) -> Result<Vec<ludus_core::storage::StorageAck>, ApiError> {
        self.storage
            .write(ludus_core::storage::Access::Server, writes)
            .await
    }

    async fn storage_delete(
        &self,
        deletes: Vec<ludus_core::storage::StorageDelete>,
    ) -> Result<(), ApiError> {
        self.storage
            .delete(ludus_core::storage::Access::Server, deletes)
            .await
    }

    async fn storage_list(
        &self,
        caller: Option<Uuid>,
        owner: Option<Uuid>,
        collection: &str,
        limit: usize,
        cursor: &str,
    ) -> Result<ludus_core::storage::StoragePage, ApiError> {
        let access = caller.map_or(
            ludus_core::storage::Access::Server,
            ludus_core::storage::Access::User,
        );
        self.storage
            .list(access, collection, owner, limit, cursor)
            .await
    }

    async fn wallets_update(
        &self,
        updates: Vec<ludus_core::wallet::WalletUpdate>,
        update_ledger: bool,
    ) -> Result<Vec<ludus_core::wallet::WalletUpdateResult>, ApiError> {
        self.storage.wallets_update(updates, update_ledger).await
    }

    async fn wallet_ledger_list(
        &self,
        user: Uuid,
        limit: usize,
        cursor: &str,
    ) -> Result<ludus_core::wallet::LedgerPage, ApiError> {
        self.storage.wallet_ledger_list(user, limit, cursor).await
    }

    async fn wallet_ledger_update(
        &self,
        id: Uuid,
        metadata: &str,
    ) -> Result<ludus_core::wallet::LedgerEntry, ApiError> {
        self.storage.wallet_ledger_update(id, metadata).await
    }

    async fn multi_update(
        &self,
        update: ludus_core::multi_update::MultiUpdate,
    ) -> Result<ludus_core::multi_update::MultiUpdateResult, ApiError> {
        self.storage.multi_update(update).await
    }
}

fn sql_error(what: &str, e: ludus_core::StoreError) -> ApiError {
    match e {
        ludus_core::StoreError::Sql(message) => ApiError::new(Code::Internal, message),
        other => {
            tracing::warn!(error = %other, what, "module sql failed");
            ApiError::from(other)
        }
    }
}

fn presence_of(p: &ludus_realtime::Presence) -> StreamPresence {
    StreamPresence {
        user_id: p.user_id,
        session_id: p.session_id,
        username: p.meta.username.to_string(),
        hidden: p.meta.hidden,
        persistence: p.meta.persistence,
        status: p.meta.status.to_string(),
    }
}
