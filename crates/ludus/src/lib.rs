//! The `ludus` library: the whole server behind its command line, for
//! studios that write server logic in Rust. Build your own binary, register
//! RPCs and hooks, and run it exactly like `ludus` (same commands, config
//! file, environment and flags; Lua modules still load from `runtime.path`):
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     ludus::Server::builder()
//!         .rpc("echo", |_call, payload| async move { Ok(payload) })
//!         .run()
//! }
//! ```
//!
//! Modules are compiled in; there is no dynamic plugin loading.
//!
//! With the default `jemalloc` feature, jemalloc is the global allocator of
//! any binary that links this crate; a binary that sets its own turns the
//! feature off (`default-features = false`).

mod cli;

use std::future::Future;
use std::process::ExitCode;

pub use ludus_runtime::{
    CallContext, Code, ExecutionMode, NativeCall, NativeModule, RuntimeError, RuntimeServices,
    matches,
};
pub use serde_json::Value;

/// jemalloc rather than the system's malloc: on this server's load (many
/// short-lived allocations of a few sizes from several threads: each
/// request's buffers and headers, each Lua call's tables and strings)
/// glibc's malloc spent a fifth of the core of a Lua RPC over HTTP, and
/// jemalloc is faster there and no larger per idle socket or match
/// (BENCHMARKS.md, "Allocator: jemalloc").
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Entry point of a binary built on Ludus.
#[derive(Debug)]
pub struct Server;

impl Server {
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }
}

/// Collects native registrations, then runs the command line.
#[derive(Debug, Default)]
pub struct ServerBuilder {
    module: NativeModule,
}

impl ServerBuilder {
    /// Registers an RPC, answered at `/v2/rpc/{id}` and on the socket.
    pub fn rpc<F, Fut>(mut self, id: &str, handler: F) -> Self
    where
        F: Fn(NativeCall, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, RuntimeError>> + Send + 'static,
    {
        self.module = self.module.rpc(id, handler);
        self
    }

    /// Registers a before hook for a REST API (Nakama's name, such as
    /// `authenticatedevice`): return the request, changed or not, or `None`
    /// to reject the call.
    pub fn before<F, Fut>(mut self, api: &str, hook: F) -> Self
    where
        F: Fn(NativeCall, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Value>, RuntimeError>> + Send + 'static,
    {
        self.module = self.module.before(api, hook);
        self
    }

    /// Registers an after hook; it gets `(response, request)`.
    pub fn after<F, Fut>(mut self, api: &str, hook: F) -> Self
    where
        F: Fn(NativeCall, Value, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), RuntimeError>> + Send + 'static,
    {
        self.module = self.module.after(api, hook);
        self
    }

    /// Runs when the server shuts down.
    pub fn shutdown<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(NativeCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.module = self.module.shutdown(hook);
        self
    }

    /// Registers an authoritative match handler under `name`: `factory`
    /// makes the handler of each new match (`nk.match_create(name, params)`
    /// or `call.match_create(name, params)` start one).
    pub fn match_handler<F, H>(mut self, name: &str, factory: F) -> Self
    where
        F: Fn(NativeCall) -> H + Send + Sync + 'static,
        H: matches::MatchHandler,
    {
        self.module = self.module.match_handler(name, factory);
        self
    }

    /// Adds a module built elsewhere (for example in a library crate).
    pub fn module(mut self, module: NativeModule) -> Self {
        self.module = self.module.merge(module);
        self
    }

    /// The registrations so far, for starting the server in-process
    /// (`ludus_server::start_with`) in tests.
    pub fn into_module(self) -> NativeModule {
        self.module
    }

    /// Runs the `ludus` command line with the process's arguments.
    pub fn run(self) -> ExitCode {
        self.run_with_args(std::env::args().skip(1).collect())
    }

    /// Runs the command line with `args` (without the program name).
    pub fn run_with_args(self, args: Vec<String>) -> ExitCode {
        cli::main(args, self.module)
    }
}
