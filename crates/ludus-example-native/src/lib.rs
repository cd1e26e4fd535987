//! An example native module: what a studio writes to add Rust RPCs and hooks
//! to its own Ludus binary (`src/main.rs`).

use ludus::{Code, NativeModule, RuntimeError, Server, ServerBuilder, Value};

/// `native_echo` answers its payload; `native_whoami` the caller's user id;
/// `native_fail` always fails with `INVALID_ARGUMENT`. A before hook on
/// `authenticatecustom` refuses custom ids starting with `banned-`, and
/// gives everyone else the username `native-<id>` when they picked none.
pub fn builder() -> ServerBuilder {
    Server::builder()
        .rpc("native_echo", |_call, payload| async move { Ok(payload) })
        .rpc("native_whoami", |call, _payload| async move {
            Ok(call.ctx.user_id.unwrap_or_default())
        })
        .rpc("native_fail", |_call, _payload| async move {
            Err(RuntimeError::new(Code::InvalidArgument, "native failure"))
        })
        .before("authenticatecustom", |_call, mut req| async move {
            let id = req["account"]["id"].as_str().unwrap_or_default().to_owned();
            if id.starts_with("banned-") {
                return Ok(None);
            }
            if req["username"].as_str().unwrap_or_default().is_empty() {
                req["username"] = Value::String(format!("native-{id}"));
            }
            Ok(Some(req))
        })
}

pub fn module() -> NativeModule {
    builder().into_module()
}
