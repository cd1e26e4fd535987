//! The JS runtime (`src/js/`): a Nakama-style bundle loaded into a real
//! pool of QuickJS contexts, with in-memory services standing in for the
//! server. JS twins of the Lua tests in `sandbox.rs`, `hostile.rs` and
//! `await.rs`, and Nakama's rules for registration, errors, `ctx`, the
//! logger and the `nk` functions the runtime has.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ludus_core::Code;
use ludus_runtime::{CallContext, LoadError, Runtime, RuntimeSettings};
use serde_json::{Value, json};

use crate::support::{FakeServices, settings, start, start_with};

fn js() -> RuntimeSettings {
    settings("js")
}

async fn rpc(rt: &Runtime, id: &str, payload: &str) -> Result<String, ludus_runtime::RuntimeError> {
    rt.rpc(CallContext::default(), id, payload.to_owned()).await
}

#[tokio::test]
async fn init_module_registers_rpcs_that_answer_their_payload() {
    let rt = start(js()).await.unwrap();
    assert!(rt.has_rpc("echo"));
    // Ids are case-insensitive, as Nakama's: `Count` is reached as `count`.
    assert!(rt.has_rpc("COUNT"));
    assert!(rt.rpc_ids().contains("fail_custom"));
    assert_eq!(rpc(&rt, "echo", r#"{"a":1}"#).await.unwrap(), r#"{"a":1}"#);
    let missing = rpc(&rt, "nope", "").await.unwrap_err();
    assert_eq!(missing.code, Code::NotFound);
}

#[tokio::test]
async fn a_thrown_object_gives_the_client_its_code_and_message() {
    let rt = start(js()).await.unwrap();
    let e = rpc(&rt, "fail_custom", "").await.unwrap_err();
    assert_eq!(e.code, Code::FailedPrecondition);
    assert_eq!(e.message, "not enough gold");
    let e = rpc(&rt, "fail_error", "").await.unwrap_err();
    assert_eq!(e.code, Code::Internal);
    assert_eq!(e.message, "boom");
    let e = rpc(&rt, "fail_typed", "").await.unwrap_err();
    assert_eq!(e.code, Code::Internal);
    assert!(e.message.starts_with("TypeError: "), "{}", e.message);
    let e = rpc(&rt, "not_a_string", "").await.unwrap_err();
    assert!(
        e.message.contains("only one return value of type string"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn ctx_has_nakamas_js_key_names() {
    let rt = start(js()).await.unwrap();
    let call = CallContext {
        user_id: Some("4ec4f126-3f9d-11e7-84ef-b7c182b36521".into()),
        username: "ana".into(),
        vars: [("tier".to_owned(), "gold".to_owned())].into(),
        session_expiry: 1_900_000_000,
        session_id: Some("s-1".into()),
        lang: "de".into(),
        client_ip: "10.0.0.9".into(),
        client_port: "4242".into(),
        query_params: [("q".to_owned(), vec!["1".to_owned()])].into(),
        ..CallContext::default()
    };
    let answer = rt.rpc(call, "ctx", String::new()).await.unwrap();
    let ctx: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(ctx["node"], "test-node");
    assert_eq!(ctx["executionMode"], "rpc");
    assert_eq!(ctx["env"], json!({"region": "eu"}));
    assert_eq!(ctx["userId"], "4ec4f126-3f9d-11e7-84ef-b7c182b36521");
    assert_eq!(ctx["username"], "ana");
    assert_eq!(ctx["vars"], json!({"tier": "gold"}));
    assert_eq!(ctx["userSessionExp"], 1_900_000_000);
    assert_eq!(ctx["sessionId"], "s-1");
    assert_eq!(ctx["lang"], "de");
    assert_eq!(ctx["clientIp"], "10.0.0.9");
    assert_eq!(ctx["clientPort"], "4242");
    assert_eq!(ctx["queryParams"], json!({"q": ["1"]}));
    // An http_key call has no user.
    let answer = rpc(&rt, "ctx", "").await.unwrap();
    let ctx: Value = serde_json::from_str(&answer).unwrap();
    assert!(ctx.get("userId").is_none(), "{ctx}");
}

#[tokio::test]
async fn logger_fields_accumulate_without_changing_the_parent() {
    let rt = start(js()).await.unwrap();
    let answer: Value = serde_json::from_str(&rpc(&rt, "logs", "").await.unwrap()).unwrap();
    assert_eq!(answer["fields"], json!({"match": "m1", "round": 2}));
    assert_eq!(answer["root"], json!({}));
}

#[tokio::test]
async fn nk_utilities_answer_as_nakamas() {
    let rt = start(js()).await.unwrap();
    let u: Value = serde_json::from_str(&rpc(&rt, "utils", "").await.unwrap()).unwrap();
    assert_eq!(u["uuid"], true);
    assert_eq!(u["b64"], "aGVsbG8/");
    assert_eq!(u["b64nopad"], "aGk");
    assert_eq!(u["b64url"], "aGVsbG8_");
    assert_eq!(u["b64back"], "hello?");
    assert_eq!(u["b16"], "415a");
    assert_eq!(u["b16back"], "AZ");
    assert_eq!(
        u["sha256"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(u["md5"], "900150983cd24fb0d6963f7d28e17f72");
    assert_eq!(u["bytes"], 3);
    assert_eq!(u["cron"], 1_700_002_800);
    assert_eq!(u["timeIsNow"], true);
    assert_eq!(u["cache"], json!([42, "gone"]));
    let e = rpc(&rt, "bad_base64", "").await.unwrap_err();
    assert!(
        e.message.contains("not a valid base64 string"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn before_hooks_registered_by_nakamas_names_rewrite_the_request() {
    let rt = start(js()).await.unwrap();
    assert!(rt.has_before("getaccount"));
    assert!(rt.has_before("deletefriends"));
    assert!(!rt.has_after("getaccount"));
    let out = rt
        .before(
            CallContext::default(),
            "deletefriends",
            json!({"ids": ["a"]}),
        )
        .await
        .unwrap();
    assert_eq!(out, Some(json!({"ids": ["rewritten"]})));
}

/// Nakama hands JS hooks the request with lowerCamelCase field names (its
/// JS runtime's protojson uses JSON names), as the `nkruntime` types say
/// (`displayName`): the server's proto names are renamed at every depth,
/// while the keys of map fields (`vars`, `properties`, …) are the caller's
/// and stay. Before, JS hooks saw `display_name` and a TypeScript module's
/// `data.displayName` was undefined.
#[tokio::test]
async fn js_hooks_see_nakamas_camel_case_field_names() {
    let rt = start(js()).await.unwrap();
    let seen = rt
        .before(
            CallContext::default(),
            "getaccount",
            json!({
                "display_name": "Ann",
                "account": {"device_id": "d1", "vars": {"my_key": "v", "other_one": "w"}},
                "string_properties": {"game_mode": "duel"},
                "user_ids": ["u1"],
                "items": [{"user_id": "u2", "lang_tag": "en"}],
            }),
        )
        .await
        .unwrap();
    assert_eq!(
        seen,
        Some(json!({
            "displayName": "Ann",
            "account": {"deviceId": "d1", "vars": {"my_key": "v", "other_one": "w"}},
            "stringProperties": {"game_mode": "duel"},
            "userIds": ["u1"],
            "items": [{"userId": "u2", "langTag": "en"}],
        }))
    );
}

/// Twin of the Lua sandbox: nothing of the host is reachable by name.
#[tokio::test]
async fn module_code_reaches_no_files_network_or_process() {
    let rt = start(js()).await.unwrap();
    let seen: Value = serde_json::from_str(&rpc(&rt, "reach", "").await.unwrap()).unwrap();
    for (name, kind) in seen.as_object().unwrap() {
        assert_eq!(kind, "undefined", "{name} is reachable from module code");
    }
}

/// Twin of `everything_reachable_is_on_the_allow_list`: the global object
/// holds the language's built-ins and the bundle's own functions, nothing
/// that reaches the host.
#[tokio::test]
async fn every_global_is_on_the_allow_list() {
    const BUILT_INS: &[&str] = &[
        // QuickJS's own: `performance.now()` and `queueMicrotask` reach no
        // host resource (no timer, no I/O).
        "Atomics",
        "DOMException",
        "Float16Array",
        "InternalError",
        "Iterator",
        "performance",
        "queueMicrotask",
        "AggregateError",
        "Array",
        "ArrayBuffer",
        "BigInt",
        "BigInt64Array",
        "BigUint64Array",
        "Boolean",
        "DataView",
        "Date",
        "Error",
        "EvalError",
        "FinalizationRegistry",
        "Float32Array",
        "Float64Array",
        "Function",
        "Infinity",
        "Int16Array",
        "Int32Array",
        "Int8Array",
        "JSON",
        "Map",
        "Math",
        "NaN",
        "Number",
        "Object",
        "Promise",
        "Proxy",
        "RangeError",
        "ReferenceError",
        "Reflect",
        "RegExp",
        "Set",
        "SharedArrayBuffer",
        "String",
        "Symbol",
        "SyntaxError",
        "TypeError",
        "URIError",
        "Uint16Array",
        "Uint32Array",
        "Uint8Array",
        "Uint8ClampedArray",
        "WeakMap",
        "WeakRef",
        "WeakSet",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "eval",
        "globalThis",
        "isFinite",
        "isNaN",
        "parseFloat",
        "parseInt",
        "undefined",
        "unescape",
    ];
    let rt = start(js()).await.unwrap();
    let names: Vec<String> = serde_json::from_str(&rpc(&rt, "globals", "").await.unwrap()).unwrap();
    let module = ["calls", "InitModule"];
    let strange: Vec<&String> = names
        .iter()
        .filter(|n| !BUILT_INS.contains(&n.as_str()) && !module.contains(&n.as_str()))
        .filter(|n| !n.starts_with(char::is_lowercase) || !is_module_function(n))
        .collect();
    assert!(
        strange.is_empty(),
        "globals outside the allow-list: {strange:?}\nall: {names:?}"
    );
}

/// The fixture's own top-level functions (lower camel case, defined in
/// `fixtures/js/index.js`).
fn is_module_function(name: &str) -> bool {
    let source = include_str!("../fixtures/js/index.js");
    source.contains(&format!("function {name}("))
}

/// Twin of `hostile.rs`: a runaway loop ends its call at the deadline, even
/// one that tries to catch the interrupt, and the context serves the next.
#[tokio::test]
async fn a_runaway_loop_ends_at_the_deadline_and_the_context_lives_on() {
    let mut s = js();
    s.js_max_count = 1;
    s.js_call_timeout = Duration::from_millis(200);
    let rt = start(s).await.unwrap();
    for id in ["spin", "spin_catching"] {
        let e = rpc(&rt, id, "").await.unwrap_err();
        assert_eq!(e.code, Code::DeadlineExceeded, "{id}: {e:?}");
        assert!(
            e.message.contains("runtime.js_call_timeout_ms"),
            "{}",
            e.message
        );
        assert_eq!(rpc(&rt, "echo", "still here").await.unwrap(), "still here");
    }
}

/// Twin of the Lua sandbox's `loops_inside_coroutines_are_stopped`: a
/// loop inside a generator (JS's coroutine) ends at the deadline too.
#[tokio::test]
async fn a_loop_inside_a_generator_ends_at_the_deadline() {
    let mut s = js();
    s.js_max_count = 1;
    s.js_call_timeout = Duration::from_millis(200);
    let rt = start(s).await.unwrap();
    let started = std::time::Instant::now();
    let e = rpc(&rt, "spin_generator", "").await.unwrap_err();
    assert_eq!(e.code, Code::DeadlineExceeded, "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(rpc(&rt, "echo", "next").await.unwrap(), "next");
}

/// Twin of the Lua sandbox's `deep_recursion_fails_the_call_only`: QuickJS's
/// stack limit ends the call with an error, not the thread or the process,
/// and the same context serves the next call (its module state kept).
#[tokio::test]
async fn deep_recursion_fails_the_call_only() {
    let mut s = js();
    s.js_max_count = 1;
    let rt = start(s).await.unwrap();
    assert_eq!(rpc(&rt, "count", "").await.unwrap(), "1");
    let e = rpc(&rt, "recurse", "").await.unwrap_err();
    assert_eq!(e.code, Code::Internal, "{e:?}");
    assert!(
        e.message.contains("Maximum call stack size exceeded"),
        "{}",
        e.message
    );
    assert_eq!(rpc(&rt, "count", "").await.unwrap(), "2");
}

/// Twin of `hostile.rs`'s `shutdown_stops_running_calls`: with a deadline
/// far away, shutting the runtime down stops a running JS call.
#[tokio::test]
async fn shutdown_stops_running_js_calls() {
    let mut s = js();
    s.js_call_timeout = Duration::from_secs(60);
    let rt = Arc::new(start(s).await.unwrap());
    let call = {
        let rt = rt.clone();
        tokio::spawn(async move { rpc(&rt, "spin", "").await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    rt.shutdown().await;
    let e = call.await.unwrap().unwrap_err();
    assert!(
        matches!(e.code, Code::Unavailable | Code::DeadlineExceeded),
        "{e:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_runaway_allocation_ends_its_call_and_the_context_is_made_anew() {
    let mut s = js();
    s.js_max_count = 1;
    s.js_memory_limit_bytes = 8 << 20;
    let rt = start(s).await.unwrap();
    assert_eq!(rpc(&rt, "count", "").await.unwrap(), "1");
    let e = rpc(&rt, "hog", "").await.unwrap_err();
    assert_eq!(e.code, Code::ResourceExhausted, "{e:?}");
    assert!(
        e.message.contains("runtime.js_memory_limit_bytes"),
        "{}",
        e.message
    );
    // A fresh context: its module state starts over.
    assert_eq!(rpc(&rt, "count", "").await.unwrap(), "1");
}

/// Twin of `await.rs`: two calls waiting on the server at once, each in its
/// own context (the fake's gate opens only when both wait together).
#[tokio::test]
async fn a_call_waiting_on_the_server_holds_no_thread_another_call_needs() {
    let services = Arc::new(FakeServices::default());
    let mut s = js();
    s.js_max_count = 2;
    let rt = Arc::new(start_with(s, services.clone()).await.unwrap());
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let rt = rt.clone();
            tokio::spawn(async move {
                rt.rpc(CallContext::default(), "wallet", r#"{"gate":2}"#.into())
                    .await
            })
        })
        .collect();
    for c in calls {
        let answer: Value = serde_json::from_str(&c.await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["updated"]["gate"], 2, "{answer}");
        assert_eq!(answer["userId"], "4ec4f126-3f9d-11e7-84ef-b7c182b36521");
    }
    assert_eq!(services.max_in_flight.load(Ordering::SeqCst), 2);
}

/// Twin of the Lua pool's rule: a call that waits longer than the pool
/// timeout is answered `ResourceExhausted` and never runs.
#[tokio::test]
async fn a_call_that_waits_too_long_is_refused_and_never_runs() {
    let mut s = js();
    s.js_max_count = 1;
    s.pool_timeout = Duration::from_millis(200);
    let rt = Arc::new(
        start_with(s, Arc::new(FakeServices::default()))
            .await
            .unwrap(),
    );
    let held = {
        let rt = rt.clone();
        tokio::spawn(async move {
            rt.rpc(
                CallContext::default(),
                "wallet",
                r#"{"hold_ms":800}"#.into(),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let e = rpc(&rt, "mark", "late").await.unwrap_err();
    assert_eq!(e.code, Code::ResourceExhausted, "{e:?}");
    assert!(
        e.message.contains("runtime.lua_pool_timeout_ms"),
        "{}",
        e.message
    );
    held.await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(rpc(&rt, "marked", "").await.unwrap(), "none");
}

/// Module state is per context: one context's calls see their own counter.
#[tokio::test]
async fn module_state_belongs_to_one_context() {
    let mut s = js();
    s.js_max_count = 1;
    let rt = start(s).await.unwrap();
    for n in 1..=3 {
        assert_eq!(rpc(&rt, "count", "").await.unwrap(), n.to_string());
    }
}

#[tokio::test]
async fn an_id_registered_by_lua_and_js_is_refused_naming_both() {
    let err = start(settings("js_twice")).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LoadError::Setup(_)), "{text}");
    assert!(text.contains("\"shared_id\""), "{text}");
    assert!(
        text.contains("index.js") && text.contains("a lua module"),
        "{text}"
    );
}

#[tokio::test]
async fn a_bundle_that_cannot_load_stops_start_naming_the_problem() {
    let err = start(settings("js_no_init")).await.unwrap_err().to_string();
    assert!(err.contains("InitModule"), "{err}");
    let err = start(settings("js_syntax")).await.unwrap_err().to_string();
    assert!(
        err.contains("index.js") && err.contains("SyntaxError"),
        "{err}"
    );
    let err = start(settings("js_match_inline"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("registerMatch(\"lobby\")") && err.contains("top level"),
        "{err}"
    );
}

#[tokio::test]
async fn no_bundle_means_no_js_runtime() {
    // The Lua fixtures have no index.js: nothing from JS is registered.
    let rt = start(settings("await")).await.unwrap();
    assert!(!rt.has_rpc("echo") || rt.rpc_ids().contains("echo"));
    let mut s = js();
    s.js_entrypoint = "other.js".into();
    let rt = start(s).await.unwrap();
    assert!(!rt.has_rpc("fail_custom"));
}

mod matches {
    //! JS match handlers (`js/matches.rs`) driven through the engine's
    //! `MatchHandler` calls, as the match task makes them.

    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use ludus_realtime::Presence;
    use ludus_realtime::matches::{
        Dispatcher, JoinDecision, MatchHandler, MatchInfo, MatchMessage, Step,
    };
    use serde_json::{Value, json};
    use uuid::Uuid;

    use crate::support::{settings, start};

    fn info() -> MatchInfo {
        MatchInfo {
            id: "m1.test-node".into(),
            node: "test-node".into(),
            handler_name: "arena".into(),
        }
    }

    fn player(name: &str) -> Presence {
        Presence::new(
            Uuid::new_v4(),
            Uuid::new_v4(),
            Arc::from(name),
            Arc::from("test-node"),
        )
    }

    /// Runs a blocking handler call off the async worker, as the match
    /// task's executor does.
    async fn off<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        tokio::task::spawn_blocking(f).await.unwrap()
    }

    fn seen(handler: &mut Box<dyn MatchHandler>, d: &mut Dispatcher) -> Value {
        let (step, out) = handler.signal(d, 99, "state").unwrap();
        assert_eq!(step, Step::Continue);
        serde_json::from_str(&out).unwrap()
    }

    #[tokio::test]
    async fn js_match_callbacks_get_nakamas_shapes_and_keep_their_state() {
        let rt = start(settings("js_match")).await.unwrap();
        assert!(rt.has_match_handler("arena"));
        let (make, make_again) = (rt.match_handler("arena"), rt.match_handler("arena"));
        off(move || {
            let mut h = make().unwrap();
            let init = h.init(&info(), &json!({"mode": "duel", "max": 2})).unwrap();
            assert_eq!(init.tick_rate, 10);
            assert_eq!(init.label, r#"{"mode":"duel"}"#);
            let mut d = Dispatcher::default();
            let (ana, bo, cy) = (player("ana"), player("bo"), player("cy"));
            let none = BTreeMap::new();
            let wrong: BTreeMap<String, String> =
                [("password".to_owned(), "wrong".to_owned())].into();
            assert_eq!(
                h.join_attempt(&mut d, 1, &ana, &wrong).unwrap(),
                JoinDecision::Reject("bad password".into())
            );
            assert_eq!(
                h.join_attempt(&mut d, 1, &ana, &none).unwrap(),
                JoinDecision::Accept
            );
            assert_eq!(
                h.join(&mut d, 1, &[ana.clone(), bo.clone()]).unwrap(),
                Step::Continue
            );
            // Full at two: the third is refused with no reason.
            assert_eq!(
                h.join_attempt(&mut d, 2, &cy, &none).unwrap(),
                JoinDecision::Reject(String::new())
            );
            let message = MatchMessage {
                sender: bo.clone(),
                op_code: 1,
                data: b"hi".to_vec(),
                reliable: false,
                receive_time_ms: 1_700_000_000_123,
            };
            assert_eq!(h.tick(&mut d, 3, &[message]).unwrap(), Step::Continue);
            assert_eq!(h.tick(&mut d, 4, &[]).unwrap(), Step::Continue);
            assert_eq!(
                h.leave(&mut d, 5, std::slice::from_ref(&ana)).unwrap(),
                Step::Continue
            );
            assert_eq!(h.terminate(&mut d, 6, 7).unwrap(), Step::Continue);
            // The console's view of the state: JSON.stringify of it, and
            // the match runs on.
            let view: Value = serde_json::from_str(&h.state_json().unwrap()).unwrap();
            assert_eq!(view["players"], json!(["bo@test-node"]), "{view}");
            assert_eq!(
                (view["grace"].clone(), view["max"].clone()),
                (json!(7), json!(2))
            );
            assert_eq!(view["ctx"]["matchId"], "m1.test-node", "{view}");
            let s = seen(&mut h, &mut d);
            // A Map in the state kept its entries: the state stayed a JS
            // value between callbacks (JSON would have emptied it).
            assert_eq!(
                s["seen"]["3:bo"],
                json!({"op": 1, "text": "hi", "isBuffer": true, "reliable": false,
                       "at": 1_700_000_000_123u64, "user": bo.user_id.to_string()})
            );
            assert_eq!(s["players"], json!(["bo@test-node"]));
            assert_eq!(s["lastTick"], 4);
            assert_eq!(s["grace"], 7);
            assert_eq!(s["mode"], "match");
            assert_eq!(s["matchId"], "m1.test-node");
            assert_eq!(s["label"], r#"{"mode":"duel"}"#);
            assert_eq!(s["tickRate"], 10);
            assert_eq!(s["sameCtx"], true);
            // The join attempt's ctx carries the joining user, as Nakama's.
            assert_eq!(s["lastAttempt"]["userId"], cy.user_id.to_string());
            assert_eq!(s["lastAttempt"]["sessionId"], cy.session_id.to_string());
            assert_eq!(s["lastAttempt"]["presence"], "cy");
            // Each match has a context of its own: module state is per match.
            assert_eq!(s["contexts"], 1);
            let mut other = make_again().unwrap();
            assert_eq!(other.state_json().unwrap(), "", "no state before matchInit");
            other.init(&info(), &Value::Null).unwrap();
            let s = seen(&mut other, &mut d);
            assert_eq!(
                s["contexts"], 1,
                "a second match starts from fresh module state"
            );
            // A null return ends the match.
            assert_eq!(h.signal(&mut d, 8, "end").unwrap().0, Step::End);
            // A join attempt answering garbage fails with Nakama's message.
            let garbage: BTreeMap<String, String> = [("garbage".to_owned(), "1".to_owned())].into();
            let e = other.join_attempt(&mut d, 2, &cy, &garbage).unwrap_err();
            assert!(
                e.contains("matchJoinAttempt") && e.contains("'accept' property must be a boolean"),
                "{e}"
            );
        })
        .await;
    }

    #[tokio::test]
    async fn lua_and_js_match_names_are_found_through_one_path() {
        let rt = start(settings("js_match")).await.unwrap();
        assert!(rt.has_match_handler("arena") && rt.has_match_handler("lua_arena"));
        let (js, lua) = (rt.match_handler("arena"), rt.match_handler("lua_arena"));
        off(move || {
            let mut d = Dispatcher::default();
            let mut lua = lua().unwrap();
            assert_eq!(lua.init(&info(), &Value::Null).unwrap().label, "lua");
            assert_eq!(lua.signal(&mut d, 1, "hi").unwrap().1, "lua hi");
            let mut js = js().unwrap();
            assert_eq!(js.init(&info(), &Value::Null).unwrap().tick_rate, 10);
        })
        .await;
        let e = off({
            let unknown = rt.match_handler("nowhere");
            move || unknown().err().unwrap()
        })
        .await;
        assert!(e.contains("registerMatch(\"nowhere\""), "{e}");
    }

    /// A runaway `matchLoop` ends at its time budget (half the tick
    /// interval, at least 50 ms) and fails that match only; a greedy one
    /// ends at the memory limit.
    #[tokio::test]
    async fn a_runaway_or_greedy_match_loop_ends_only_that_match() {
        let mut s = settings("js_match");
        s.js_memory_limit_bytes = 24 << 20;
        let rt = start(s).await.unwrap();
        let (a, b, c) = (
            rt.match_handler("arena"),
            rt.match_handler("arena"),
            rt.match_handler("arena"),
        );
        off(move || {
            let mut d = Dispatcher::default();
            let (mut a, mut b, mut c) = (a().unwrap(), b().unwrap(), c().unwrap());
            for h in [&mut a, &mut b, &mut c] {
                h.init(&info(), &Value::Null).unwrap();
            }
            let p = player("ana");
            let op = |op_code| MatchMessage {
                sender: p.clone(),
                op_code,
                data: Vec::new(),
                reliable: true,
                receive_time_ms: 0,
            };
            let started = Instant::now();
            let e = a.tick(&mut d, 1, &[op(7)]).unwrap_err();
            assert!(
                e.contains("matchLoop") && e.contains("time budget of 50 ms"),
                "{e}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{:?}",
                started.elapsed()
            );
            let e = b.tick(&mut d, 1, &[op(9)]).unwrap_err();
            assert!(
                e.contains("matchLoop") && e.contains("out of memory"),
                "{e}"
            );
            // The other match goes on.
            assert_eq!(c.tick(&mut d, 1, &[op(1)]).unwrap(), Step::Continue);
            assert_eq!(seen(&mut c, &mut d)["lastTick"], 1);
        })
        .await;
    }
}

mod hooks {
    //! `registerRtBefore|After`, `registerEvent*` and `registerShutdown`,
    //! each fired where the Lua twin fires.

    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use ludus_runtime::{CallContext, Event};
    use serde_json::json;

    use crate::support::{FakeServices, settings, start_with};

    async fn seen(rt: &ludus_runtime::Runtime, key: &str) -> String {
        rt.rpc(CallContext::default(), "seen", key.to_owned())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn js_realtime_event_and_shutdown_callbacks_fire() {
        let services = Arc::new(FakeServices::default());
        let rt = Arc::new(
            start_with(settings("js_hooks"), services.clone())
                .await
                .unwrap(),
        );
        // Nakama's message names, case-insensitive; an unknown one is
        // refused naming what is expected.
        assert!(
            seen(&rt, "badName").await.contains("realtime message name"),
            "{}",
            seen(&rt, "badName").await
        );
        let user = "4ec4f126-3f9d-11e7-84ef-b7c182b36521";
        let call = || CallContext {
            user_id: Some(user.into()),
            ..CallContext::default()
        };
        let envelope = json!({"channelJoin": {"target": "lobby", "type": 1}});
        let rewritten = rt
            .rt_before(call(), "channeljoin", envelope.clone())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rewritten["channelJoin"]["target"], "rewritten");
        rt.rt_after(call(), "channeljoin", json!({}), rewritten)
            .await
            .unwrap();
        assert_eq!(seen(&rt, "after").await, format!("rewritten by {user}"));

        rt.start_events();
        rt.event(
            call(),
            Event {
                name: "level_up".into(),
                properties: [("level".to_owned(), "3".to_owned())].into(),
                timestamp_ms: 0,
                external: true,
            },
        );
        rt.session_event(true, call);
        for _ in 0..200 {
            if seen(&rt, "start").await != "nothing" && seen(&rt, "event").await != "nothing" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(seen(&rt, "event").await, "level_up 3 true event");
        assert_eq!(seen(&rt, "start").await, format!("session_start {user}"));

        // The matched entries under Nakama's JS names; the answer is the id.
        let entries = json!([
            {"presence": {"user_id": "u1", "session_id": "s1", "username": "ana", "node": "n1"},
             "properties": {"region": "eu"}},
            {"presence": {"user_id": "u2", "session_id": "s2", "username": "bo", "node": "n1"},
             "properties": {}, "party_id": "p2"},
        ]);
        assert_eq!(
            rt.matchmaker_matched(entries).await.unwrap().as_deref(),
            Some("m 2 u1 s1 ana n1 eu p2 matchmaker")
        );

        assert_eq!(services.max_in_flight.load(Ordering::Relaxed), 0);
        rt.shutdown().await;
        assert_eq!(
            services.max_in_flight.load(Ordering::Relaxed),
            1,
            "the shutdown callback ran its server call"
        );
    }
}

mod schedules {
    //! `registerLeaderboardReset`, `registerTournamentEnd|Reset` through the
    //! runtime's `ScheduleHooks`, with Nakama's JS keys.

    use ludus_core::leaderboard::{Leaderboard, SortOrder};
    use ludus_core::leaderboard_service::{ScheduleHooks, TournamentView};
    use ludus_runtime::CallContext;

    use crate::support::{settings, start};

    async fn seen(rt: &ludus_runtime::Runtime, key: &str) -> String {
        rt.rpc(CallContext::default(), "seen", key.to_owned())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn js_schedule_hooks_get_nakamas_js_arguments() {
        let rt = start(settings("js_hooks")).await.unwrap();
        let mut board = Leaderboard::new("weekly", 1_700_000_000);
        board.sort_order = SortOrder::Ascending;
        board.reset_schedule = Some("0 0 * * 1".into());
        rt.leaderboard_reset(&board, 1_700_438_400).await;
        assert_eq!(
            seen(&rt, "leaderboard_reset").await,
            "leaderboard_reset weekly 0 1700438400"
        );
        let mut def = Leaderboard::new("cup", 1_700_000_000);
        def.duration = 600;
        def.title = "Cup".into();
        let view = TournamentView {
            def,
            size: 3,
            can_enter: false,
            start_active: 1_700_000_000,
            end_active: 1_700_000_600,
            prev_reset: 0,
            next_reset: 1_700_003_600,
        };
        rt.tournament_end(&view, 1_700_000_600, 1_700_003_600).await;
        assert_eq!(
            seen(&rt, "tournament_end").await,
            "tournament_end Cup 1700000600 1700000600 1700003600"
        );
        rt.tournament_reset(&view, 1_700_000_600, 1_700_003_600)
            .await;
        assert_eq!(
            seen(&rt, "tournament_reset").await,
            "tournament_reset cup 1700000600 1700003600"
        );
    }
}

mod storage_index {
    //! `registerStorageIndex` reaches the services from the first context;
    //! `registerStorageIndexFilter` decides through `IndexFilter`.

    use ludus_core::storage::{ReadPermission, StorageObject, WritePermission};
    use ludus_core::storage_index::IndexFilter;
    use ludus_runtime::CallContext;
    use uuid::Uuid;

    use crate::support::{settings, start};

    #[tokio::test]
    async fn js_storage_index_and_its_filter() {
        let rt = start(settings("js_hooks")).await.unwrap();
        let index = rt
            .rpc(CallContext::default(), "seen", "index".into())
            .await
            .unwrap();
        assert!(
            index.starts_with("failed to create storage index: "),
            "{index}"
        );
        assert!(rt.has_filter("players") && !rt.has_filter("others"));
        let user = Uuid::new_v4();
        let mut object = StorageObject {
            collection: "profiles".into(),
            key: "me".into(),
            user_id: user,
            value: r#"{"tier":"gold"}"#.into(),
            version: "v1".into(),
            read: ReadPermission::OwnerRead,
            write: WritePermission::OwnerWrite,
            create_time: 0,
            update_time: 0,
        };
        assert!(rt.keep("players", &object).await.unwrap());
        object.value = r#"{"tier":"tin"}"#.into();
        assert!(!rt.keep("players", &object).await.unwrap());
        let seen = rt
            .rpc(CallContext::default(), "seen", "filter".into())
            .await
            .unwrap();
        assert!(
            seen == format!("storage_index_filter profiles {user} 1"),
            "{seen}"
        );
    }
}
