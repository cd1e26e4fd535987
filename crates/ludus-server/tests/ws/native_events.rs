//! A native module's share of events and the matchmaker: `event`,
//! `event_session_start` and `event_session_end` hooks get what Lua's
//! callbacks get (a client's `POST /v2/event`, [`NativeCall::event`], each
//! socket session's start and end), and a native `matchmaker_matched` hook
//! sends the matched players to the match it names.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::matchmaker_matched::Id;
use ludus_proto::realtime::*;
use ludus_server::{Event, NativeModule};
use serde_json::{Value, json};

use crate::both_backends;
use crate::client::{Fmt, WsClient, user};
use crate::support::{Backend, TestServer};

both_backends!(native_hooks_get_events_and_sessions);

type Seen = Arc<Mutex<Vec<String>>>;

fn module(seen: &Seen) -> NativeModule {
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen.clone());
    NativeModule::new()
        .event(move |call, e: Event| {
            let s = s1.clone();
            async move {
                let who = call.ctx.user_id.map(|u| u.to_string()).unwrap_or_default();
                let k = e.properties.get("k").cloned().unwrap_or_default();
                s.lock()
                    .unwrap()
                    .push(format!("event:{}:{k}:{}:{who}", e.name, e.external));
            }
        })
        .event_session_start(move |call, e: Event| {
            let s = s2.clone();
            async move {
                let who = call.ctx.user_id.map(|u| u.to_string()).unwrap_or_default();
                s.lock().unwrap().push(format!("start:{}:{who}", e.name));
            }
        })
        .event_session_end(move |call, e: Event| {
            let s = s3.clone();
            async move {
                let who = call.ctx.user_id.map(|u| u.to_string()).unwrap_or_default();
                s.lock().unwrap().push(format!("end:{}:{who}", e.name));
            }
        })
        .rpc("native_emit", |call, payload| async move {
            call.event(Event {
                name: "from_native".into(),
                properties: [("k".to_owned(), payload)].into(),
                ..Event::default()
            });
            Ok(String::new())
        })
}

/// Waits (bounded) until a hook recorded `entry`: the hooks run on the
/// event workers, after the caller was answered.
async fn eventually(seen: &Seen, entry: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.lock().unwrap().iter().any(|e| e == entry) {
        assert!(
            Instant::now() < deadline,
            "no hook recorded {entry}: {:?}",
            seen.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn native_hooks_get_events_and_sessions(backend: Backend) {
    let seen: Seen = Arc::default();
    let server = TestServer::start_native(backend, module(&seen), |_| {}).await;
    let (token, uid, _) = user(&server, "nevents-user-000001").await;

    let r = server
        .post_bearer(
            "/v2/event",
            &token,
            json!({"name": "from_client", "properties": {"k": "v1"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    eventually(&seen, &format!("event:from_client:v1:true:{uid}")).await;

    let r = server
        .post_bearer("/v2/rpc/native_emit", &token, Value::String("v2".into()))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    eventually(&seen, "event:from_native:v2:false:").await;

    let c = WsClient::connect(&server, &token, Fmt::Json).await;
    eventually(&seen, &format!("start:session_start:{uid}")).await;
    drop(c);
    eventually(&seen, &format!("end:session_end:{uid}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_matchmaker_matched_names_the_match() {
    let given: Arc<Mutex<Option<Value>>> = Arc::default();
    let keep = given.clone();
    let native = NativeModule::new().matchmaker_matched(move |_call, entries| {
        let keep = keep.clone();
        async move {
            let n = entries.as_array().map_or(0, Vec::len);
            *keep.lock().unwrap() = Some(entries);
            // Two players go to a match of the hook's choosing; others get
            // a token.
            Ok((n == 2).then(|| "1b7c4e2a-9d3f-4c1e-8a55-0e2f6a7d9c10.ludus".to_owned()))
        }
    });
    let server = TestServer::start_native(Backend::Sqlite, native, |c| {
        c.matchmaker.interval_sec = 1;
    })
    .await;
    let (ta, ida, _) = user(&server, "nmma-hook-device-01").await;
    let (tb, _, _) = user(&server, "nmmb-hook-device-01").await;
    let mut a = WsClient::connect(&server, &ta, Fmt::Json).await;
    let mut b = WsClient::connect(&server, &tb, Fmt::Protobuf).await;
    let add = Message::MatchmakerAdd(MatchmakerAdd {
        min_count: 2,
        max_count: 2,
        query: "*".into(),
        ..Default::default()
    });
    for c in [&mut a, &mut b] {
        match c.request(add.clone()).await.message {
            Some(Message::MatchmakerTicket(_)) => {}
            other => panic!("expected a ticket, got {other:?}"),
        }
    }
    for c in [&mut a, &mut b] {
        let m = loop {
            if let Some(Message::MatchmakerMatched(m)) = c.push().await.message {
                break m;
            }
        };
        assert_eq!(
            m.id,
            Some(Id::MatchId(
                "1b7c4e2a-9d3f-4c1e-8a55-0e2f6a7d9c10.ludus".into()
            ))
        );
    }
    let entries = given.lock().unwrap().clone().expect("the hook ran");
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert!(
        entries
            .iter()
            .any(|e| e["presence"]["user_id"] == ida.as_str()),
        "{entries:?}"
    );
}
