//! Lua echo RPCs per second through `Runtime::rpc` alone (no HTTP): the
//! runtime's share of an RPC's cost. `cargo run --release -p ludus-runtime
//! --example rpc_throughput -- [vms] [concurrency] [seconds] [http]`.
//!
//! With `http` each call carries the context an HTTP RPC from a signed-in
//! client has (user, session variables, six headers, one query parameter,
//! the client's address), so the cost of building `ctx` is counted; without
//! it the context is empty, as in the figures recorded before.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use ludus_core::accounts::Credential;
use ludus_core::model::{Account, AccountUpdate, User};
use ludus_core::{ApiError, Code};
use ludus_runtime::{
    Authenticated, CallContext, HttpRequest, HttpResponse, NativeModule, Runtime, RuntimeServices,
    RuntimeSettings,
};
use uuid::Uuid;

/// Services the echo never calls.
struct NoServices;

fn unused() -> ApiError {
    ApiError::new(Code::Unimplemented, "not used by this benchmark")
}

#[async_trait]
impl RuntimeServices for NoServices {
    async fn authenticate(
        &self,
        _: Credential,
        _: String,
        _: bool,
    ) -> Result<Authenticated, ApiError> {
        Err(unused())
    }
    fn generate_token(
        &self,
        _: Uuid,
        _: &str,
        _: i64,
        _: BTreeMap<String, String>,
    ) -> Result<(String, i64), ApiError> {
        Err(unused())
    }
    async fn account(&self, _: Uuid) -> Result<Account, ApiError> {
        Err(unused())
    }
    async fn update_account(&self, _: Uuid, _: AccountUpdate) -> Result<(), ApiError> {
        Err(unused())
    }
    async fn users(&self, _: Vec<String>, _: Vec<String>) -> Result<Vec<User>, ApiError> {
        Err(unused())
    }
    async fn http_request(&self, _: HttpRequest) -> Result<HttpResponse, ApiError> {
        Err(unused())
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let vms = args.first().copied().unwrap_or(1);
    let concurrency = args.get(1).copied().unwrap_or(64);
    let secs = args.get(2).copied().unwrap_or(5) as u64;
    let http = std::env::args().any(|a| a == "http");
    let ctx = if http {
        http_context()
    } else {
        CallContext::default()
    };
    let dir = std::env::temp_dir().join(format!("ludus-rpc-throughput-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("bench.lua"),
        "local nk = require(\"nakama\")\n\
         nk.register_rpc(function(ctx, payload) return nk.json_encode(nk.json_decode(payload)) end, \"echo\")\n",
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let settings = RuntimeSettings {
            path: dir.clone(),
            pool_size: vms,
            ..Default::default()
        };
        let runtime = Arc::new(
            Runtime::start(settings, Arc::new(NoServices), NativeModule::new())
                .await
                .unwrap(),
        );
        let done = Arc::new(AtomicU64::new(0));
        let deadline = Instant::now() + Duration::from_secs(secs);
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| {
                let (runtime, done, ctx) = (runtime.clone(), done.clone(), ctx.clone());
                tokio::spawn(async move {
                    while Instant::now() < deadline {
                        let payload = r#"{"user":"player-000123","score":4217}"#.to_string();
                        runtime.rpc(ctx.clone(), "echo", payload).await.unwrap();
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let n = done.load(Ordering::Relaxed);
        println!(
            "{vms} vm(s), {concurrency} concurrent callers, {} context: {:.0} lua echo rpcs/s",
            if http { "http" } else { "empty" },
            n as f64 / secs as f64
        );
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// What an HTTP RPC from a signed-in client carries.
fn http_context() -> CallContext {
    let one = |v: &str| vec![v.to_owned()];
    let mut ctx = CallContext::new(ludus_runtime::ExecutionMode::Rpc);
    ctx.user_id = Some(Uuid::new_v4().to_string());
    ctx.username = "player-000123".into();
    ctx.vars = BTreeMap::from([("platform".to_owned(), "ios".to_owned())]);
    ctx.session_expiry = 1_900_000_000;
    ctx.headers = BTreeMap::from([
        ("Accept".to_owned(), one("application/json")),
        (
            "Authorization".to_owned(),
            one("Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig"),
        ),
        ("Content-Length".to_owned(), one("43")),
        ("Content-Type".to_owned(), one("application/json")),
        ("Host".to_owned(), one("127.0.0.1:7350")),
        ("User-Agent".to_owned(), one("ludus-bench")),
    ])
    .into();
    ctx.query_params = BTreeMap::from([("lang".to_owned(), one("en"))]);
    ctx.client_ip = "127.0.0.1".into();
    ctx.client_port = "50432".into();
    ctx
}
