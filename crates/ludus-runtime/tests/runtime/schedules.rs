//! The schedule hooks (`register_leaderboard_reset`,
//! `register_tournament_end`, `register_tournament_reset`) called through
//! the runtime's `ScheduleHooks` with Nakama's arguments and execution modes.

use ludus_core::leaderboard::{Leaderboard, Operator, SortOrder};
use ludus_core::leaderboard_service::{ScheduleHooks, TournamentView};
use ludus_runtime::CallContext;
use serde_json::Value;

use crate::support::{settings, start};

async fn seen(rt: &ludus_runtime::Runtime, key: &str) -> Value {
    let out = rt
        .rpc(CallContext::default(), "seen", key.into())
        .await
        .unwrap();
    serde_json::from_str(&out).unwrap_or(Value::Null)
}

#[tokio::test]
async fn schedule_hooks_get_nakamas_arguments() {
    let rt = start(settings("schedules")).await.unwrap();
    let mut board = Leaderboard::new("weekly", 1_700_000_000);
    board.operator = Operator::Increment;
    board.sort_order = SortOrder::Ascending;
    board.reset_schedule = Some("0 0 * * 1".into());
    board.metadata = r#"{"kind":"weekly"}"#.into();
    rt.leaderboard_reset(&board, 1_700_438_400).await;
    let v = seen(&rt, "leaderboard_reset").await;
    assert_eq!(v["mode"], "leaderboard_reset");
    assert_eq!(v["id"], "weekly");
    assert_eq!(v["reset"], 1_700_438_400);
    assert_eq!(v["operator"], "increment");
    assert_eq!(v["sort_order"], "0");
    assert_eq!(v["kind"], "weekly");

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
    let v = seen(&rt, "tournament_end").await;
    assert_eq!(v["mode"], "tournament_end");
    assert_eq!(v["title"], "Cup");
    assert_eq!(v["session_end"], 1_700_000_600);
    assert_eq!(v["expiry"], 1_700_003_600);
    rt.tournament_reset(&view, 1_700_000_600, 1_700_003_600)
        .await;
    let v = seen(&rt, "tournament_reset").await;
    assert_eq!(v["mode"], "tournament_reset");
    assert_eq!(v["expiry"], 1_700_003_600);
}

#[tokio::test]
async fn native_schedule_hooks_run_before_lua_ones() {
    use std::sync::{Arc, Mutex};

    let seen = Arc::new(Mutex::new(Vec::new()));
    let (a, b, c) = (seen.clone(), seen.clone(), seen.clone());
    let native = ludus_runtime::NativeModule::new()
        .leaderboard_reset(move |call, board, reset| {
            let a = a.clone();
            async move {
                a.lock()
                    .unwrap()
                    .push(format!("{}:{}:{reset}", call.ctx.mode.as_str(), board.id));
            }
        })
        .tournament_end(move |_, t, end, _| {
            let b = b.clone();
            async move { b.lock().unwrap().push(format!("end:{}:{end}", t.def.id)) }
        })
        .tournament_reset(move |_, t, _, reset| {
            let c = c.clone();
            async move {
                c.lock()
                    .unwrap()
                    .push(format!("reset:{}:{reset}", t.def.id))
            }
        });
    let rt = ludus_runtime::Runtime::start(
        settings("schedules"),
        std::sync::Arc::new(crate::support::FakeServices::default()),
        native,
    )
    .await
    .unwrap();
    rt.leaderboard_reset(&Leaderboard::new("weekly", 0), 60)
        .await;
    let mut def = Leaderboard::new("cup", 0);
    def.duration = 10;
    let view = TournamentView {
        def,
        size: 0,
        can_enter: true,
        start_active: 0,
        end_active: 10,
        prev_reset: 0,
        next_reset: 60,
    };
    rt.tournament_end(&view, 10, 60).await;
    rt.tournament_reset(&view, 10, 60).await;
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            "leaderboard_reset:weekly:60".to_owned(),
            "end:cup:10".to_owned(),
            "reset:cup:60".to_owned()
        ]
    );
    // The Lua hooks ran too.
    assert_eq!(seen_lua(&rt).await["id"], "weekly");
}

async fn seen_lua(rt: &ludus_runtime::Runtime) -> Value {
    seen(rt, "leaderboard_reset").await
}
