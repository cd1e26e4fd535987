//! Native modules: Rust registrations behind the same `Runtime` calls, and
//! winning over Lua ones of the same name.

use std::sync::Arc;

use ludus_runtime::{CallContext, Code, NativeModule, Runtime, RuntimeError};
use serde_json::json;

use crate::support::{FakeServices, settings};

#[tokio::test]
async fn native_rpcs_and_hooks() {
    let native = NativeModule::new()
        .rpc("Echo", |_, payload| async move {
            Ok(format!("native:{payload}"))
        })
        .rpc("fail", |_, _| async move {
            Err(RuntimeError::new(Code::PermissionDenied, "no"))
        })
        .rpc("whoami", |call, _| async move {
            Ok(call.ctx.user_id.unwrap_or_default())
        })
        .before("getaccount", |_, _| async move { Ok(None) })
        .after("getaccount", |_, res, _| async move {
            assert_eq!(res["ok"], true);
            Ok(())
        });
    let rt = Runtime::start(settings("nk"), Arc::new(FakeServices::default()), native)
        .await
        .unwrap();
    // Native `echo` wins over the Lua module's `echo`.
    let out = rt
        .rpc(CallContext::default(), "echo", "x".into())
        .await
        .unwrap();
    assert_eq!(out, "native:x");
    let err = rt
        .rpc(CallContext::default(), "fail", "".into())
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::PermissionDenied);
    let ctx = CallContext {
        user_id: Some("u".into()),
        ..Default::default()
    };
    assert_eq!(rt.rpc(ctx, "whoami", "".into()).await.unwrap(), "u");
    assert!(rt.has_before("getaccount"));
    assert_eq!(
        rt.before(CallContext::default(), "getaccount", json!({}))
            .await
            .unwrap(),
        None
    );
    rt.after(
        CallContext::default(),
        "getaccount",
        json!({"ok": true}),
        json!(null),
    )
    .await
    .unwrap();
    assert!(rt.rpc_ids().contains("whoami"));
}
