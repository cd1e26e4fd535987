//! Lua calls that wait on the server: each VM thread runs several VMs and
//! switches to another VM's call while one waits (`lua/pool.rs`), never two
//! calls in one VM; where yielding cannot reach the pool, the call waits.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ludus_core::Code;
use ludus_runtime::{CallContext, Runtime, RuntimeSettings};
use serde_json::Value;

use crate::support::{FakeServices, settings, start_with};

fn one_thread(vms: usize) -> RuntimeSettings {
    let mut s = settings("await");
    s.pool_size = 1;
    s.vms_per_thread = vms;
    s.pool_queue_size = 64;
    s
}

/// Runs `n` `gated` calls at once, each asking `changeset`.
async fn gated(rt: &Arc<Runtime>, n: usize, changeset: &str) -> Vec<Value> {
    let calls: Vec<_> = (0..n)
        .map(|_| {
            let rt = rt.clone();
            let payload = changeset.to_owned();
            tokio::spawn(async move { rt.rpc(CallContext::default(), "gated", payload).await })
        })
        .collect();
    let mut out = Vec::new();
    for c in calls {
        let answer = c
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("gated call failed: {e:?}"));
        out.push(serde_json::from_str(&answer).unwrap());
    }
    out
}

/// One VM thread keeps four wallet updates in flight at once (the gate
/// opens only when four wait together; one VM at a time would fail it),
/// each in its own VM: every call is the first of its VM, and no other
/// call moved its module state while it waited.
#[tokio::test]
async fn one_thread_keeps_several_server_calls_in_flight() {
    let services = Arc::new(FakeServices::default());
    let rt = Arc::new(start_with(one_thread(4), services.clone()).await.unwrap());
    for answer in gated(&rt, 4, r#"{"gate":4}"#).await {
        assert_eq!(answer["calls"], 1, "{answer}");
        assert_eq!(answer["unchanged"], true, "{answer}");
        assert_eq!(answer["updated"]["gate"], 4, "{answer}");
    }
    assert_eq!(services.max_in_flight.load(Ordering::SeqCst), 4);
}

/// A thread runs at most `vms_per_thread` VMs: six calls through a gate of
/// two on a thread of two VMs pass in pairs, never three at once, and
/// reuse the VMs (a VM's later calls see its earlier ones).
#[tokio::test]
async fn a_thread_runs_at_most_its_vms() {
    let services = Arc::new(FakeServices::default());
    let rt = Arc::new(start_with(one_thread(2), services.clone()).await.unwrap());
    let answers = gated(&rt, 6, r#"{"gate":2}"#).await;
    assert_eq!(services.max_in_flight.load(Ordering::SeqCst), 2);
    let mut calls: Vec<i64> = answers
        .iter()
        .map(|a| a["calls"].as_i64().unwrap())
        .collect();
    calls.sort();
    assert_eq!(calls, [1, 1, 2, 2, 3, 3]);
    assert!(
        answers.iter().all(|a| a["unchanged"] == true),
        "{answers:?}"
    );
}

/// With one VM per thread, calls that wait run one after the other: a gate
/// of two never fills and both calls fail with the gate's error.
#[tokio::test]
async fn one_vm_per_thread_waits_one_call_at_a_time() {
    let services = Arc::new(FakeServices::default());
    let rt = Arc::new(start_with(one_thread(1), services.clone()).await.unwrap());
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let rt = rt.clone();
            tokio::spawn(async move {
                rt.rpc(
                    CallContext::default(),
                    "gated",
                    r#"{"gate":2,"gate_ms":300}"#.into(),
                )
                .await
            })
        })
        .collect();
    for c in calls {
        let e = c.await.unwrap().unwrap_err();
        assert!(e.message.contains("gate of 2 never filled"), "{e:?}");
    }
    assert_eq!(services.max_in_flight.load(Ordering::SeqCst), 1);
}

/// A server call in a coroutine the module made, or in a comparator
/// `table.sort` calls from C, cannot suspend the pool's coroutine: it waits,
/// and the module's own coroutine still yields and resumes as in Lua.
#[tokio::test]
async fn server_calls_where_yielding_cannot_reach_the_pool_wait() {
    let rt = start_with(one_thread(4), Arc::default()).await.unwrap();
    let out = rt
        .rpc(CallContext::default(), "nested", String::new())
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok1"], true, "{v}");
    assert_eq!(v["first"], 7, "{v}");
    assert_eq!(v["ok2"], true, "{v}");
    assert_eq!(v["second"], 42, "{v}");
    assert_eq!(v["seen"], 5, "{v}");
    assert_eq!(v["sorted"], serde_json::json!([1, 2, 3]), "{v}");
}

/// Yielding the call's own coroutine is Lua's error, as on the main thread.
#[tokio::test]
async fn yielding_the_call_itself_is_an_error() {
    let rt = start_with(one_thread(2), Arc::default()).await.unwrap();
    let e = rt
        .rpc(CallContext::default(), "top_yield", String::new())
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::Internal, "{e:?}");
    assert!(
        e.message
            .contains("attempt to yield from outside a coroutine"),
        "{e:?}"
    );
}

/// Budgets hold across a wait: a server call past the call's deadline is
/// answered at the deadline, and code that spins after a wait is stopped
/// by the instruction budget; the VM then serves the next call.
#[tokio::test]
async fn budgets_hold_across_a_wait() {
    let mut s = one_thread(2);
    s.call_timeout = Duration::from_millis(300);
    let rt = Arc::new(start_with(s, Arc::default()).await.unwrap());
    let e = rt
        .rpc(
            CallContext::default(),
            "gated",
            r#"{"hold_ms":5000}"#.into(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::DeadlineExceeded, "{e:?}");
    let mut s = one_thread(2);
    s.instruction_budget = 1_000_000;
    let rt = Arc::new(start_with(s, Arc::default()).await.unwrap());
    let e = rt
        .rpc(CallContext::default(), "spin_after_wait", String::new())
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::ResourceExhausted, "{e:?}");
    let answers = gated(&rt, 2, r#"{"gate":2}"#).await;
    assert_eq!(answers.len(), 2);
}

/// `pcall` around a server call that yields: LuaJIT yields across it, the
/// failure the server answers after the wait is caught as a string, and a
/// success answers as usual.
#[tokio::test]
async fn a_yielding_server_call_under_pcall() {
    let rt = start_with(one_thread(2), Arc::default()).await.unwrap();
    let out = rt
        .rpc(CallContext::default(), "guarded", String::new())
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok1"], false, "{v}");
    assert!(
        v["err"]
            .as_str()
            .unwrap()
            .contains("gate of 2 never filled"),
        "{v}"
    );
    assert_eq!(v["ok2"], true, "{v}");
    assert_eq!(v["coins"], 3, "{v}");
}
