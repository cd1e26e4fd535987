//! The Ludus server: the HTTP API on port 7350, configuration and start-up
//! wiring. This is the only crate that knows axum; it turns requests into
//! calls on `ludus-core` and answers with `ludus-proto` wire types.

mod api;
pub mod config;
mod console;
mod convert;
mod digits;
mod error;
mod extract;
mod grpc;
mod lane;
mod log_file;
pub mod logging;
pub mod matchmaker;
pub mod metrics;
mod nakama_config;
pub mod runtime;
mod serve;
mod server;
mod socket;
mod state;
mod wire_json;

pub use config::Config;
pub use ludus_runtime::{Event, NativeCall, NativeModule, RuntimeError, RuntimeServices, matches};
pub use server::{RunningServer, StartError, start, start_with};
