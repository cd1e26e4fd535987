//! A test server and client: starts `ludus_server` on a free port with a fresh
//! database of the chosen backend, and speaks JSON to it.

use base64::Engine as _;
use ludus_server::{Config, RunningServer};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// Expands to one `#[tokio::test]` per backend for each named async test
/// function taking a `Backend`.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::Backend::Postgres).await
                }
            )*
        }
    };
}

pub(crate) struct TestServer {
    server: Option<RunningServer>,
    pub base: String,
    /// Where the gRPC API listens (`socket.grpc`).
    pub grpc: Option<std::net::SocketAddr>,
    /// The admin console's base URL.
    pub console: String,
    pub http: reqwest::Client,
    pub config: Config,
    _dir: tempfile::TempDir,
}

pub(crate) struct Reply {
    pub status: u16,
    pub body: Value,
}

impl TestServer {
    pub(crate) async fn start(backend: Backend) -> TestServer {
        Self::start_with(backend, |_| {}).await
    }

    pub(crate) async fn start_with(
        backend: Backend,
        tweak: impl FnOnce(&mut Config),
    ) -> TestServer {
        Self::start_native(backend, ludus_server::NativeModule::new(), tweak).await
    }

    /// A server with native registrations compiled in.
    pub(crate) async fn start_native(
        backend: Backend,
        native: ludus_server::NativeModule,
        tweak: impl FnOnce(&mut Config),
    ) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config {
            data_dir: dir.path().join("data"),
            ..Config::default()
        };
        config.socket.port = 0;
        // The console on a free port too, so tests run side by side.
        config.console.port = 0;
        config.logger.level = "warn".into();
        // Fast hashing keeps the email tests quick; cost 10 is exercised elsewhere.
        config.session.bcrypt_cost = 4;
        // Tests fail sign-ins on purpose, all from 127.0.0.1; the throttle
        // has tests of its own that turn it on.
        config.session.sign_in_free_failures = 0;
        if backend == Backend::Postgres {
            let url = ludus_testkit::postgres_database();
            ludus_store::migrate_up(&url, &config.data_dir)
                .await
                .unwrap();
            config.database.address = vec![url];
        }
        tweak(&mut config);
        let server = ludus_server::start_with(config.clone(), native)
            .await
            .unwrap();
        let base = format!("http://{}", server.local_addr());
        let console = format!("http://{}", server.console_addr());
        TestServer {
            grpc: server.grpc_addr(),
            server: Some(server),
            base,
            console,
            http: reqwest::Client::new(),
            config,
            _dir: dir,
        }
    }

    /// Stops the server gracefully and starts it again on the same database.
    pub(crate) async fn restart(&mut self) {
        self.server.take().unwrap().shutdown().await;
        let server = ludus_server::start(self.config.clone()).await.unwrap();
        self.base = format!("http://{}", server.local_addr());
        self.grpc = server.grpc_addr();
        self.console = format!("http://{}", server.console_addr());
        self.server = Some(server);
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let bytes = res.bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Reply { status, body }
    }

    /// POST with the server key as Basic user.
    pub(crate) async fn post_key(&self, path: &str, body: Value) -> Reply {
        self.send(
            self.http
                .post(self.url(path))
                .basic_auth("defaultkey", Some(""))
                .json(&body),
        )
        .await
    }

    pub(crate) async fn post_bearer(&self, path: &str, token: &str, body: Value) -> Reply {
        self.send(
            self.http
                .post(self.url(path))
                .bearer_auth(token)
                .json(&body),
        )
        .await
    }

    pub(crate) async fn get_bearer(&self, path: &str, token: &str) -> Reply {
        self.send(self.http.get(self.url(path)).bearer_auth(token))
            .await
    }

    pub(crate) async fn put_bearer(&self, path: &str, token: &str, body: Value) -> Reply {
        self.send(self.http.put(self.url(path)).bearer_auth(token).json(&body))
            .await
    }

    pub(crate) async fn delete_bearer(&self, path: &str, token: &str) -> Reply {
        self.send(self.http.delete(self.url(path)).bearer_auth(token))
            .await
    }

    pub(crate) async fn raw(&self, req: reqwest::RequestBuilder) -> Reply {
        self.send(req).await
    }

    /// Signs in a new device and returns the session JSON.
    pub(crate) async fn device_session(&self, device_id: &str) -> Value {
        let r = self
            .post_key(
                "/v2/account/authenticate/device",
                serde_json::json!({ "id": device_id }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    }
}

/// The claims of a JWT, decoded without checking it, as clients do.
pub(crate) fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&raw).unwrap()
}

pub(crate) fn token(session: &Value) -> String {
    session["token"].as_str().unwrap().to_owned()
}

pub(crate) fn refresh_token(session: &Value) -> String {
    session["refresh_token"].as_str().unwrap().to_owned()
}

pub(crate) fn user_id(session: &Value) -> String {
    claims(&token(session))["uid"].as_str().unwrap().to_owned()
}

/// Asserts an error reply's status and gRPC code and returns its message.
pub(crate) fn assert_error(reply: &Reply, status: u16, code: i64) -> String {
    assert_eq!(
        reply.status, status,
        "unexpected status, body {}",
        reply.body
    );
    assert_eq!(
        reply.body["code"], code,
        "unexpected code, body {}",
        reply.body
    );
    let msg = reply.body["message"].as_str().unwrap().to_owned();
    assert!(!msg.is_empty());
    msg
}
