//! The sandbox and the budgets: escapes are refused, runaway loops and huge
//! allocations are stopped with an error to the caller, and a saturated pool
//! answers errors instead of hanging.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ludus_runtime::{CallContext, Code, Runtime};
use serde_json::Value;

use crate::support::{FakeServices, settings, start, start_with};

async fn runtime() -> Runtime {
    start(settings("sandbox")).await.unwrap()
}

/// Calls `id` and asserts that it fails with the memory error.
async fn out_of_memory(rt: &Runtime, ctx: CallContext, id: &str, payload: String) {
    let err = rt.rpc(ctx, id, payload).await.unwrap_err();
    assert_eq!(err.code, Code::ResourceExhausted, "{id}: {err:?}");
    assert!(err.message.contains("memory"), "{id}: {}", err.message);
}

/// Asserts that the runtime still answers a trivial call.
async fn serves_next(rt: &Runtime) {
    assert_eq!(
        rt.rpc(CallContext::default(), "ok", "".into())
            .await
            .unwrap(),
        "fine"
    );
}

#[tokio::test]
async fn escapes_are_refused() {
    let rt = runtime().await;
    let out = rt
        .rpc(CallContext::default(), "escapes", "".into())
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    for (check, ok) in v.as_object().unwrap() {
        assert_eq!(ok, &Value::Bool(true), "sandbox check {check} failed: {v}");
    }
}

#[tokio::test]
async fn runaway_loops_are_stopped() {
    let rt = runtime().await;
    for id in ["loop", "loop_pcall", "loop_numeric"] {
        let started = Instant::now();
        let err = rt
            .rpc(CallContext::default(), id, "".into())
            .await
            .unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted, "{id}: {err:?}");
        assert!(err.message.contains("instruction"), "{id}: {}", err.message);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{id} took {:?}",
            started.elapsed()
        );
    }
    // The VMs survive and serve the next call.
    serves_next(&rt).await;
}

#[tokio::test]
async fn deep_recursion_fails_the_call_only() {
    let rt = runtime().await;
    let err = rt
        .rpc(CallContext::default(), "recurse", "".into())
        .await
        .unwrap_err();
    assert!(
        matches!(err.code, Code::Internal | Code::ResourceExhausted),
        "{err:?}"
    );
    serves_next(&rt).await;
}

#[tokio::test]
async fn loops_inside_coroutines_are_stopped() {
    let rt = runtime().await;
    let started = Instant::now();
    let result = rt
        .rpc(CallContext::default(), "coroutine_loop", "".into())
        .await;
    // The budget error stops the coroutine; the call then fails with it.
    let err = result.unwrap_err();
    assert_eq!(err.code, Code::ResourceExhausted, "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn huge_allocations_are_stopped() {
    let mut s = settings("sandbox");
    s.instruction_budget = 10_000_000_000;
    let rt = start(s).await.unwrap();
    for id in ["alloc_table", "alloc_string"] {
        out_of_memory(&rt, CallContext::default(), id, "".into()).await;
    }
    serves_next(&rt).await;
}

/// The server builds a call's payload and `ctx` with the VM's memory limit
/// lifted (no mlua guard per value): the module still runs under the
/// limit, and arguments that alone exceed it still fail the call.
#[tokio::test]
async fn call_arguments_leave_the_memory_limit_in_force() {
    let mut s = settings("sandbox");
    s.instruction_budget = 10_000_000_000;
    let limit = s.memory_limit_bytes;
    // Payloads past the VM's limit reach it only when the payload limit is
    // raised above it (by default it is far below).
    s.max_payload_bytes = 2 * limit;
    let rt = start(s).await.unwrap();
    let mut ctx = CallContext::default();
    ctx.headers.insert("Big".into(), vec!["h".repeat(64 << 10)]);
    let payload = "p".repeat(1 << 20);
    for _ in 0..3 {
        assert_eq!(
            rt.rpc(ctx.clone(), "sizes", payload.clone()).await.unwrap(),
            format!("{}:{}", 1 << 20, 64 << 10)
        );
        for id in ["alloc_table", "alloc_string"] {
            out_of_memory(&rt, ctx.clone(), id, payload.clone()).await;
        }
    }
    out_of_memory(&rt, ctx.clone(), "sizes", "p".repeat(limit + (1 << 20))).await;
    // A `ctx` that alone exceeds the limit fails the call the same way.
    let mut huge = CallContext::default();
    huge.headers
        .insert("Huge".into(), vec!["h".repeat(limit + (1 << 20))]);
    out_of_memory(&rt, huge, "sizes", "".into()).await;
    assert_eq!(
        rt.rpc(ctx, "sizes", payload).await.unwrap(),
        format!("{}:{}", 1 << 20, 64 << 10)
    );
}

/// Server functions build their results with the memory limit lifted (no
/// mlua guard per value), then hold them to it: a result that takes the VM
/// past its limit fails the call with the memory error, and the VM serves
/// the next call.
#[tokio::test]
async fn server_results_are_held_to_the_memory_limit() {
    let mut s = settings("sandbox");
    s.instruction_budget = 10_000_000_000;
    let rt = start(s).await.unwrap();
    for _ in 0..2 {
        let ctx = CallContext::default();
        out_of_memory(&rt, ctx, "results_over_limit", "20000".into()).await;
        serves_next(&rt).await;
    }
}

/// `nk.json_encode` fills a table first only if it is one the sandbox fills
/// on first use: a module's metatable cannot make the conversion (which
/// runs with the memory limit lifted) call module code.
#[tokio::test]
async fn json_conversion_calls_no_module_code() {
    let rt = start(settings("sandbox")).await.unwrap();
    assert_eq!(
        rt.rpc(CallContext::default(), "forged_complete", "".into())
            .await
            .unwrap(),
        r#"{"a":1} false"#
    );
}

/// `nk.json_decode` builds its value unguarded only when even the largest
/// value its text could make fits under the limit: the bound it assumes
/// (64 heap bytes per byte of text) holds for the shapes that grow most, and
/// a value past the limit still fails the call with the memory error.
#[tokio::test]
async fn json_decode_is_held_to_the_memory_limit() {
    let mut s = settings("sandbox");
    s.instruction_budget = 10_000_000_000;
    s.max_payload_bytes = 8 << 20;
    let limit = s.memory_limit_bytes;
    let rt = start(s).await.unwrap();
    let items = |item: &dyn Fn(usize) -> String, n: usize, open: &str, close: &str| {
        let body: Vec<String> = (0..n).map(item).collect();
        format!("{open}{}{close}", body.join(","))
    };
    let deep = format!("{}{}", "[".repeat(60), "]".repeat(60));
    let shapes = [
        items(&|_| "[]".into(), 30_000, "[", "]"),
        items(&|_| "{}".into(), 30_000, "[", "]"),
        items(&|i| format!("\"{i}\":[]"), 30_000, "{", "}"),
        items(&|i| format!("\"{i}\":0"), 30_000, "{", "}"),
        items(&|_| "0".into(), 30_000, "[", "]"),
        items(&|i| format!("\"{i}\""), 30_000, "[", "]"),
        items(&|_| deep.clone(), 1_000, "[", "]"),
    ];
    for shape in shapes {
        let answer = rt
            .rpc(CallContext::default(), "decode_growth", shape.clone())
            .await
            .unwrap();
        let (growth, kind) = answer.split_once(' ').unwrap();
        let growth: f64 = growth.parse().unwrap();
        assert_eq!(kind, "table");
        assert!(
            growth > 1.0 && growth < 64.0,
            "{growth} bytes per byte of {}…",
            &shape[..40]
        );
    }
    // 24 bytes per byte of this text (see above): 1.2 times the limit.
    let n = limit / 20 / 3;
    let too_big = items(&|_| "[]".into(), n, "[", "]");
    for _ in 0..2 {
        let ctx = CallContext::default();
        out_of_memory(&rt, ctx, "decode_over_limit", too_big.clone()).await;
    }
    serves_next(&rt).await;
}

#[tokio::test]
async fn saturated_pool_answers_errors_instead_of_hanging() {
    let mut s = settings("sandbox");
    // One VM in all: `hold` waits on a server call, which would let a
    // thread's other VMs take the next calls.
    s.pool_size = 1;
    s.vms_per_thread = 1;
    s.pool_queue_size = 1;
    s.pool_timeout = Duration::from_millis(100);
    let services = std::sync::Arc::new(FakeServices::default());
    let rt = std::sync::Arc::new(start_with(s, services.clone()).await.unwrap());
    let started = Instant::now();
    let hold = |rt: std::sync::Arc<Runtime>| {
        tokio::spawn(async move { rt.rpc(CallContext::default(), "hold", "600".into()).await })
    };
    let mut calls = vec![hold(rt.clone())];
    // The others come once the first holds the VM: on a loaded machine they
    // could otherwise come first, and the first would find the queue full.
    while services.holds_started.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the first call never started"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    calls.extend((0..3).map(|_| hold(rt.clone())));
    let mut ok = 0;
    let mut busy = 0;
    let mut waited_too_long = 0;
    for c in calls {
        match c.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(e.code, Code::ResourceExhausted, "{e:?}");
                assert!(e.message.contains("busy"), "{}", e.message);
                busy += 1;
                if e.message.contains("no lua vm became free in time") {
                    waited_too_long += 1;
                }
            }
        }
    }
    // One runs, one waits in the queue until the pool's sweeper takes it out
    // (long before `hold` ends), two find the queue full.
    assert_eq!((ok, busy, waited_too_long), (1, 3, 1));
    assert!(started.elapsed() < Duration::from_secs(5));
    // Once free, the pool serves again.
    serves_next(&rt).await;
}

/// `nk` makes most functions on first use; nothing a module does can tell
/// (see `fixtures/lazy_nk`).
#[tokio::test]
async fn lazy_nk_functions_look_made_from_the_start() {
    let rt = start(settings("lazy_nk")).await.unwrap();
    let first = rt
        .rpc(CallContext::default(), "rawget_first", "".into())
        .await
        .unwrap();
    assert_eq!(first, "function");
    let out = rt
        .rpc(CallContext::default(), "listing", "".into())
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["missing"], "", "{v}");
    assert!(v["count"].as_u64().unwrap() > 100, "{v}");
    assert_eq!(v["override"], "mine");
    assert_eq!(v["unknown"], "nil");
    assert_eq!(v["write_refused"], true);
}

/// VM threads run as `SCHED_BATCH` (policy 3), so a call queued to an idle
/// VM does not preempt the thread that queued it; a niced process's VM
/// threads keep the default policy (0) and their niceness.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn vm_threads_are_batch_scheduled() {
    let rt = start(settings("sandbox")).await.unwrap();
    serves_next(&rt).await;
    // A thread takes its name and policy as it starts: wait a while for
    // both VM threads to show up set.
    let expected = |policy: i64, nice: i64| policy == if nice == 0 { 3 } else { 0 };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let vms = loop {
        let vms = ludus_core::sched::thread_policies("ludus-lua-");
        let ready = vms.len() >= 2 && vms.iter().all(|(_, p, n)| expected(*p, *n));
        if ready || std::time::Instant::now() > deadline {
            break vms;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    for (comm, policy, nice) in &vms {
        assert_eq!(
            *policy,
            if *nice == 0 { 3 } else { 0 },
            "{comm} nice {nice}"
        );
    }
    let vms = vms.len();
    assert!(vms >= 2, "the pool's two VM threads, found {vms}");
}
