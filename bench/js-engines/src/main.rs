//! Runs the three workloads of `workloads.js` (echo RPC, A* path search,
//! match loop) on QuickJS (rquickjs) and Boa, and prints calls per second
//! and the memory a fresh context with the module loaded costs.

use std::time::{Duration, Instant};

const WORKLOADS: &str = include_str!("../workloads.js");
const PAYLOAD: &str = r#"{"player":"5e6f0c1a-8f6b-4f4a-9d7e-0c9b8a7d6e5f","level":17,"xp":123456,"coins":9800,"gems":42,"name":"Rowan","class":"ranger","guild":"Northwind","x":12.5,"y":-3.25,"hp":88,"mp":40,"alive":true,"tags":["pvp","daily","event"],"items":[1,2,3,5,8],"stats":{"str":12,"dex":18,"int":9},"region":"eu-west","ping":38,"season":4,"rank":1203}"#;
const CONTEXTS: usize = 200;

/// Resident memory of this process in bytes (Linux).
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Calls `call` for about `for_how_long` and answers calls per second.
fn rate(for_how_long: Duration, mut call: impl FnMut()) -> f64 {
    for _ in 0..3 {
        call();
    }
    let started = Instant::now();
    let mut calls = 0u64;
    while started.elapsed() < for_how_long {
        call();
        calls += 1;
    }
    calls as f64 / started.elapsed().as_secs_f64()
}

fn quickjs(window: Duration) {
    use rquickjs::{Context, Function, Runtime};
    let rt = Runtime::new().unwrap();
    let ctx = Context::full(&rt).unwrap();
    ctx.with(|ctx| {
        ctx.eval::<(), _>(WORKLOADS).unwrap();
        let g = ctx.globals();
        let echo: Function = g.get("echo").unwrap();
        let path: Function = g.get("path").unwrap();
        let tick: Function = g.get("matchLoop").unwrap();
        let steps: String = path.call(()).unwrap();
        assert_eq!(steps, r#"{"steps":504}"#, "the A* port answers what the Lua one does");
        let echo_rate = rate(window, || {
            let out: String = echo.call((PAYLOAD,)).unwrap();
            assert!(out.len() > 10);
        });
        let path_rate = rate(window, || {
            let _: String = path.call(()).unwrap();
        });
        let tick_rate = rate(window, || {
            let _: i32 = tick.call(()).unwrap();
        });
        println!("quickjs  echo {echo_rate:>10.0}/s  path {path_rate:>8.0}/s  matchLoop {tick_rate:>10.0}/s");
    });
    // Memory: one runtime and context per VM, as a pool with per-context
    // memory limits would hold them.
    let before = rss();
    let mut held = Vec::new();
    for _ in 0..CONTEXTS {
        let rt = Runtime::new().unwrap();
        let ctx = Context::full(&rt).unwrap();
        ctx.with(|ctx| ctx.eval::<(), _>(WORKLOADS).unwrap());
        held.push((rt, ctx));
    }
    let per = (rss() - before) / CONTEXTS;
    let used = held[0].0.memory_usage().memory_used_size;
    println!(
        "quickjs  memory per context (RSS delta) {} KiB, QuickJS's own count {} KiB",
        per / 1024,
        used / 1024
    );
}

fn boa(window: Duration) {
    use boa_engine::{Context, JsValue, Source, js_string};
    let mut ctx = Context::default();
    ctx.eval(Source::from_bytes(WORKLOADS)).unwrap();
    let global = ctx.global_object();
    let get = |name: &str, ctx: &mut Context| {
        global
            .get(js_string!(name), ctx)
            .unwrap()
            .as_callable()
            .unwrap()
            .clone()
    };
    let echo = get("echo", &mut ctx);
    let path = get("path", &mut ctx);
    let tick = get("matchLoop", &mut ctx);
    let steps = path.call(&JsValue::undefined(), &[], &mut ctx).unwrap();
    assert_eq!(
        steps.to_string(&mut ctx).unwrap().to_std_string_escaped(),
        r#"{"steps":504}"#
    );
    let payload = JsValue::from(js_string!(PAYLOAD));
    let echo_rate = rate(window, || {
        echo.call(
            &JsValue::undefined(),
            std::slice::from_ref(&payload),
            &mut ctx,
        )
        .unwrap();
    });
    let path_rate = rate(window, || {
        path.call(&JsValue::undefined(), &[], &mut ctx).unwrap();
    });
    let tick_rate = rate(window, || {
        tick.call(&JsValue::undefined(), &[], &mut ctx).unwrap();
    });
    println!(
        "boa      echo {echo_rate:>10.0}/s  path {path_rate:>8.0}/s  matchLoop {tick_rate:>10.0}/s"
    );
    let before = rss();
    let mut held = Vec::new();
    for _ in 0..CONTEXTS {
        let mut ctx = Context::default();
        ctx.eval(Source::from_bytes(WORKLOADS)).unwrap();
        held.push(ctx);
    }
    let per = (rss() - before) / CONTEXTS;
    println!("boa      memory per context (RSS delta) {} KiB", per / 1024);
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let window = Duration::from_secs(secs);
    quickjs(window);
    boa(window);
}
