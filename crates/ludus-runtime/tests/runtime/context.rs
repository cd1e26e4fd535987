//! Lua's `ctx` across calls on one VM: a module that keeps one call's `ctx`
//! or changes its own never sees or leaks another caller's fields.

use std::collections::BTreeMap;

use ludus_runtime::{CallContext, ExecutionMode, Runtime};
use serde_json::Value;

use crate::support::{settings, start};

/// One VM, so every call below runs in the same Lua state.
async fn runtime() -> Runtime {
    let mut settings = settings("ctx");
    settings.pool_size = 1;
    start(settings).await.unwrap()
}

fn alice() -> CallContext {
    let mut ctx = CallContext::new(ExecutionMode::Rpc);
    ctx.user_id = Some("00000000-0000-4000-8000-00000000a11c".into());
    ctx.username = "alice".into();
    ctx.vars = BTreeMap::from([("team".into(), "red".into())]);
    ctx.session_id = Some("session-alice".into());
    ctx.lang = "fr".into();
    ctx.session_expiry = 1_900_000_000;
    ctx.headers.insert("X-Alice".into(), vec!["secret".into()]);
    ctx.query_params.insert("alice_q".into(), vec!["1".into()]);
    ctx.client_ip = "10.0.0.1".into();
    ctx
}

fn bob() -> CallContext {
    let mut ctx = CallContext::new(ExecutionMode::Rpc);
    ctx.user_id = Some("00000000-0000-4000-8000-000000000b0b".into());
    ctx.username = "bob".into();
    ctx.vars = BTreeMap::from([("team".into(), "blue".into())]);
    ctx.headers.insert("X-Bob".into(), vec!["b".into()]);
    ctx
}

async fn read(rt: &Runtime, ctx: CallContext) -> Value {
    let out = rt.rpc(ctx, "read", String::new()).await.unwrap();
    serde_json::from_str(&out).unwrap()
}

#[tokio::test]
async fn a_kept_ctx_never_shows_the_next_caller() {
    let rt = runtime().await;
    rt.rpc(alice(), "keep", String::new()).await.unwrap();
    let v = read(&rt, bob()).await;
    // The kept table is still Alice's, whoever calls now.
    assert_eq!(v["kept"]["user_id"], "00000000-0000-4000-8000-00000000a11c");
    assert_eq!(v["kept"]["username"], "alice");
    assert_eq!(v["kept"]["vars"]["team"], "red");
    assert_eq!(v["kept"]["session_id"], "session-alice");
    assert_eq!(v["kept"]["header_names"], "X-Alice");
    assert_eq!(v["kept_get_context_was_kept"], true);
    // The caller now is Bob, in a table of its own.
    assert_eq!(v["now"]["user_id"], "00000000-0000-4000-8000-000000000b0b");
    assert_eq!(v["now"]["username"], "bob");
    assert_eq!(v["now"]["vars"]["team"], "blue");
    assert_eq!(v["now"]["header_names"], "X-Bob");
    assert_eq!(v["kept_is_now"], false);
    assert_eq!(v["get_context_is_now"], true);
}

#[tokio::test]
async fn fields_absent_from_a_call_are_absent_from_its_ctx() {
    let rt = runtime().await;
    rt.rpc(alice(), "keep", String::new()).await.unwrap();
    // An `http_key` call: no user, no session, no headers or parameters.
    let v = read(&rt, CallContext::new(ExecutionMode::Rpc)).await;
    let now = v["now"].as_object().unwrap();
    for field in [
        "user_id",
        "username",
        "vars",
        "session_id",
        "lang",
        "user_session_exp",
        "client_ip",
    ] {
        assert!(!now.contains_key(field), "{field} leaked: {v}");
    }
    assert_eq!(now["header_names"], "");
    assert_eq!(now["query_names"], "");
    // A user without a socket session has no session fields.
    let v = read(&rt, bob()).await;
    assert!(v["now"].get("session_id").is_none(), "{v}");
    assert!(v["now"].get("lang").is_none(), "{v}");
}

#[tokio::test]
async fn changes_to_one_ctx_do_not_reach_the_next_call() {
    let rt = runtime().await;
    rt.rpc(alice(), "mutate", String::new()).await.unwrap();
    let v = read(&rt, bob()).await;
    assert_eq!(v["now"]["env_region"], "eu");
    assert_eq!(v["now"]["username"], "bob");
    assert_eq!(v["now"]["header_names"], "X-Bob");
    assert_eq!(v["now"]["query_names"], "");
    assert!(v["now"]["vars"].get("injected").is_none(), "{v}");
    let v = read(&rt, CallContext::new(ExecutionMode::Rpc)).await;
    assert!(v["now"].get("user_id").is_none(), "{v}");
    assert_eq!(v["now"]["env_region"], "eu");
}

#[tokio::test]
async fn get_context_while_modules_load_is_the_run_once_context() {
    let rt = runtime().await;
    rt.rpc(alice(), "keep", String::new()).await.unwrap();
    let v = read(&rt, CallContext::new(ExecutionMode::Rpc)).await;
    assert_eq!(v["loaded_mode"], "run_once");
}

/// A call's `ctx` gets its tables (`env`, `headers`, `query_params`,
/// `vars`) on first use: every way of looking at the table sees them, and
/// a module's own writes before that win.
#[tokio::test]
async fn a_ctx_is_whole_however_it_is_first_read() {
    let rt = runtime().await;
    let all = "client_ip,env,execution_mode,headers,lang,node,query_params,session_id,\
               user_id,user_session_exp,username,vars,version";
    let cases = [
        ("pairs", all.to_owned()),
        ("next", all.to_owned()),
        ("foreach", all.to_owned()),
        ("rawget", "X-Alice".to_owned()),
        ("json", all.to_owned()),
        ("json_nested", all.to_owned()),
        ("assign_nil", format!("nil|{}", all.replace("headers,", ""))),
        (
            "assign_new",
            all.replace("execution_mode,", "execution_mode,extra,"),
        ),
        ("rawset", "mine|alice_q".to_owned()),
        ("setmetatable", "X-Alice|from mt".to_owned()),
        ("getmetatable", "true|nil".to_owned()),
        ("absent", "nil|X-Alice".to_owned()),
    ];
    for (case, want) in cases {
        let got = rt.rpc(alice(), "lazy", case.into()).await.unwrap();
        assert_eq!(got, want, "{case}");
    }
    // A call without a user has no `vars`, however it is read.
    let got = rt
        .rpc(CallContext::new(ExecutionMode::Rpc), "lazy", "pairs".into())
        .await
        .unwrap();
    assert_eq!(got, "env,execution_mode,headers,node,query_params,version");
}
