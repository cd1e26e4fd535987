//! `RuntimeServices` over the server's account service and an HTTP client:
//! what `nk.authenticate_*`, `nk.account_*`, `nk.users_*` and
//! `nk.http_request` (and native modules) reach.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ludus_core::accounts::{AccountService, AuthRequest, Credential};
use ludus_core::model::{Account, AccountUpdate, User};
use ludus_core::token::{self, SessionClaims};
use ludus_core::{ApiError, Code, unix_now};
use ludus_runtime::{Authenticated, HttpRequest, HttpResponse, RuntimeServices};
use uuid::Uuid;

/// Largest response body `nk.http_request` reads.
const MAX_HTTP_RESPONSE_BYTES: usize = 16 << 20;

pub struct Services {
    accounts: Arc<AccountService>,
    http: Client<HttpConnector, Full<Bytes>>,
}

impl Services {
    pub fn new(accounts: Arc<AccountService>) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Services {
            accounts,
            http: Client::builder(TokioExecutor::new()).build(connector),
        }
    }
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
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            ApiError::new(Code::Internal, format!("http request error: {what}: {e}"))
        };
        if request.url.starts_with("https://") {
            return Err(ApiError::new(
                Code::Unimplemented,
                "http request error: https urls are not supported yet, use http:// or a local proxy",
            ));
        }
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
                .map_err(|e| failed("cannot read response body", &e))?
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
}
