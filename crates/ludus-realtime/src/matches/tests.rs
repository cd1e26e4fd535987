//! The match engine through the pipeline, with a native handler, under
//! paused tokio time: ticks, joins, leaves, data, kicks, labels, signals,
//! failures, termination, and relayed matches.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::match_join::Id;
use ludus_proto::realtime::{
    Envelope, Match, MatchCreate, MatchDataSend, MatchJoin, MatchLeave, UserPresence,
};
use serde_json::Value;
use uuid::Uuid;

use super::*;
use crate::registry::SessionHandle;
use crate::{Realtime, RealtimeConfig};

type Log = Arc<Mutex<Vec<String>>>;

/// A handler that logs every callback and acts on op codes:
/// 1 echo to the sender, 2 broadcast from the sender, 5 deferred broadcast,
/// 6 label update, 7 kick the sender, 8 end (nil state), 9 fail.
struct Echo {
    log: Log,
    max: usize,
    players: usize,
}

impl Echo {
    fn note(&self, s: String) {
        self.log.lock().unwrap().push(s);
    }
}

impl MatchHandler for Echo {
    fn init(&mut self, info: &MatchInfo, params: &Value) -> Result<MatchInit, HandlerError> {
        self.note(format!("init {} {params}", info.handler_name));
        if params.get("fail").is_some() {
            return Err("init refused".into());
        }
        let tick_rate = params.get("rate").and_then(Value::as_u64).unwrap_or(10) as u32;
        Ok(MatchInit {
            tick_rate,
            label: r#"{"mode":"echo","level":3}"#.into(),
        })
    }

    fn join_attempt(
        &mut self,
        _d: &mut Dispatcher,
        tick: i64,
        p: &Presence,
        metadata: &BTreeMap<String, String>,
    ) -> Result<JoinDecision, HandlerError> {
        self.note(format!("attempt {tick} {}", p.username));
        if metadata.get("deny").is_some() {
            return Ok(JoinDecision::Reject("go away".into()));
        }
        if self.players >= self.max {
            return Ok(JoinDecision::Reject("full".into()));
        }
        Ok(JoinDecision::Accept)
    }

    fn join(
        &mut self,
        _d: &mut Dispatcher,
        tick: i64,
        ps: &[Presence],
    ) -> Result<Step, HandlerError> {
        self.players += ps.len();
        self.note(format!("join {tick} {}", ps.len()));
        Ok(Step::Continue)
    }

    fn leave(
        &mut self,
        _d: &mut Dispatcher,
        tick: i64,
        ps: &[Presence],
    ) -> Result<Step, HandlerError> {
        self.players -= ps.len();
        self.note(format!("leave {tick} {}", ps.len()));
        Ok(Step::Continue)
    }

    fn tick(
        &mut self,
        d: &mut Dispatcher,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Step, HandlerError> {
        if !messages.is_empty() {
            self.note(format!("loop {tick} {}", messages.len()));
        }
        for m in messages {
            match m.op_code {
                1 => d.broadcast(
                    1,
                    m.data.clone(),
                    Some(std::slice::from_ref(&m.sender)),
                    None,
                    true,
                ),
                2 => d.broadcast(2, m.data.clone(), None, Some(&m.sender), false),
                5 => d.broadcast_deferred(5, m.data.clone(), None, None, true)?,
                6 => d.label_update(&String::from_utf8_lossy(&m.data))?,
                7 => d.kick(std::slice::from_ref(&m.sender)),
                8 => return Ok(Step::End),
                9 => return Err("boom".into()),
                99 => panic!("a native handler bug"),
                _ => {}
            }
        }
        Ok(Step::Continue)
    }

    fn terminate(
        &mut self,
        _d: &mut Dispatcher,
        tick: i64,
        grace: u32,
    ) -> Result<Step, HandlerError> {
        self.note(format!("terminate {tick} {grace}"));
        Ok(Step::Continue)
    }

    fn signal(
        &mut self,
        _d: &mut Dispatcher,
        _tick: i64,
        data: &str,
    ) -> Result<(Step, String), HandlerError> {
        if data == "stop" {
            return Ok((Step::End, "stopping".into()));
        }
        Ok((Step::Continue, format!("got {data}")))
    }
}

/// What the module runtime does for `match_create`: a factory per match.
fn handler_factory(log: &Log, name: &str) -> HandlerFactory {
    let (log, name) = (log.clone(), name.to_owned());
    Box::new(move || match name.as_str() {
        "echo" => Ok(Box::new(Echo {
            log,
            max: 2,
            players: 0,
        }) as Box<dyn MatchHandler>),
        _ => Err(format!("no match handler named {name:?}")),
    })
}

struct Harness {
    rt: Realtime,
    log: Log,
    _dir: tempfile::TempDir,
}

/// A harness whose matches tick exactly one period after they start, so
/// that tests can pin what each tick sees.
async fn harness(config: MatchConfig) -> Harness {
    harness_as_is(MatchConfig {
        spread_ticks: false,
        ..config
    })
    .await
}

/// A realtime layer with the test handler and `config` as given; time is
/// paused once the store is open.
async fn harness_as_is(config: MatchConfig) -> Harness {
    let (store, dir) = crate::test_support::store().await;
    let rt = Realtime::new(
        RealtimeConfig {
            node: "n1".into(),
            matches: config,
            ..Default::default()
        },
        store,
    );
    let log: Log = Default::default();
    tokio::time::pause();
    Harness { rt, log, _dir: dir }
}

impl Harness {
    /// Creates a match of the test handler `name`.
    async fn create(&self, name: &str, params: Value) -> Result<String, RtError> {
        let make = handler_factory(&self.log, name);
        self.rt.matches.create(name, params, make).await
    }

    fn connect(&self, name: &str) -> SessionHandle {
        crate::test_support::session(&self.rt, Uuid::new_v4(), name, false)
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    async fn send(&self, s: &SessionHandle, m: Message) -> Vec<Envelope> {
        self.rt
            .handle(
                &crate::NoModules,
                s,
                Envelope {
                    cid: "c".into(),
                    message: Some(m),
                },
            )
            .await;
        drain(s)
    }

    async fn join(&self, s: &SessionHandle, match_id: &str) -> Result<Match, (i32, String)> {
        let got = self.send(s, join_msg(match_id, BTreeMap::new())).await;
        reply_match(got)
    }

    async fn data(&self, s: &SessionHandle, match_id: &str, op: i64, data: &str) {
        let got = self
            .send(
                s,
                Message::MatchDataSend(MatchDataSend {
                    match_id: match_id.into(),
                    op_code: op,
                    data: data.as_bytes().to_vec().into(),
                    presences: Vec::new(),
                    reliable: true,
                }),
            )
            .await;
        assert!(got.is_empty(), "data send has no reply: {got:?}");
    }
}

fn join_msg(match_id: &str, metadata: BTreeMap<String, String>) -> Message {
    Message::MatchJoin(MatchJoin {
        id: Some(Id::MatchId(match_id.into())),
        metadata,
    })
}

fn reply_match(got: Vec<Envelope>) -> Result<Match, (i32, String)> {
    for e in got {
        match e.message {
            Some(Message::Match(m)) => return Ok(m),
            Some(Message::Error(err)) => return Err((err.code, err.message)),
            _ => {}
        }
    }
    panic!("no match reply")
}

use crate::test_support::sent as drain;

/// `(op_code, data, sender username)` of the match data a session received.
fn data_of(envs: &[Envelope]) -> Vec<(i64, String, String)> {
    envs.iter()
        .filter_map(|e| match &e.message {
            Some(Message::MatchData(d)) => Some((
                d.op_code,
                String::from_utf8_lossy(&d.data).into_owned(),
                d.presence
                    .as_ref()
                    .map(|p| p.username.clone())
                    .unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

async fn wait(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

#[tokio::test]
async fn authoritative_lifecycle_ticks_joins_data_and_leaves() {
    let h = harness(MatchConfig::default()).await;
    let id = h.create("echo", serde_json::json!({"x": 1})).await.unwrap();
    assert!(id.ends_with(".n1"), "{id}");
    let (a, b) = (h.connect("alice"), h.connect("bob"));
    let ma = h.join(&a, &id).await.unwrap();
    assert!(ma.authoritative);
    assert_eq!(ma.label.unwrap().value, r#"{"mode":"echo","level":3}"#);
    assert_eq!(ma.size, 0);
    let mb = h.join(&b, &id).await.unwrap();
    assert_eq!(mb.size, 1);
    assert_eq!(mb.presences[0].username, "alice");
    // Alice hears of Bob's join.
    let got = drain(&a);
    assert!(got.iter().any(|e| matches!(&e.message,
        Some(Message::MatchPresenceEvent(ev)) if ev.joins.len() == 1 && ev.joins[0].username == "bob" && ev.match_id == id)));

    // Data waits for the next tick: op 1 echoes to the sender only, op 2
    // reaches everyone with the sender named.
    h.data(&a, &id, 1, "ping").await;
    h.data(&b, &id, 2, "hello").await;
    assert!(data_of(&drain(&a)).is_empty(), "nothing before the tick");
    wait(150).await;
    assert_eq!(
        data_of(&drain(&a)),
        vec![
            (1, "ping".into(), String::new()),
            (2, "hello".into(), "bob".into())
        ]
    );
    assert_eq!(data_of(&drain(&b)), vec![(2, "hello".into(), "bob".into())]);

    // Ten ticks a second: after one more second the tick count moved by 10.
    let before = h.rt.matches.signal(&id, "t".into()).await.unwrap();
    assert_eq!(before, "got t");
    assert_eq!(h.rt.matches.get(&id).unwrap().size, 2);
    // Joining again answers the match (every presence, one's own too, as
    // Nakama) and changes nothing.
    let again = h.join(&a, &id).await.unwrap();
    assert_eq!(again.size, 2);
    assert!(
        again
            .presences
            .iter()
            .any(|p| p.session_id == a.id().to_string())
    );
    wait(10).await;
    assert_eq!(h.rt.matches.get(&id).unwrap().size, 2);
    assert_eq!(
        h.log().iter().filter(|l| l.starts_with("attempt")).count(),
        2,
        "no second join attempt"
    );

    let got = h
        .send(
            &b,
            Message::MatchLeave(MatchLeave {
                match_id: id.clone(),
            }),
        )
        .await;
    assert_eq!(
        got,
        vec![Envelope {
            cid: "c".into(),
            message: None
        }]
    );
    wait(10).await;
    assert_eq!(h.rt.matches.get(&id).unwrap().size, 1);
    let log = h.log();
    assert_eq!(log[0], r#"init echo {"x":1}"#);
    assert!(log.contains(&"attempt 0 alice".into()), "{log:?}");
    assert!(log.contains(&"join 0 1".into()), "{log:?}");
    assert!(log.contains(&"loop 0 2".into()), "{log:?}");
    assert!(log.iter().any(|l| l.starts_with("leave ")), "{log:?}");
}

#[tokio::test]
async fn ticks_follow_the_tick_rate() {
    let h = harness(MatchConfig::default()).await;
    let id = h
        .create("echo", serde_json::json!({"rate": 5}))
        .await
        .unwrap();
    let a = h.connect("alice");
    h.join(&a, &id).await.unwrap();
    // At 5 ticks/s a message sent now is seen at tick 0 (t=200ms); one sent
    // at t=1250ms is seen at tick 6 (t=1400ms).
    h.data(&a, &id, 3, "x").await;
    wait(1250).await;
    h.data(&a, &id, 3, "y").await;
    wait(250).await;
    let loops: Vec<String> = h
        .log()
        .into_iter()
        .filter(|l| l.starts_with("loop"))
        .collect();
    assert_eq!(loops, vec!["loop 0 1", "loop 6 1"]);
}

/// When the first tick of each of eight matches saw a message sent right
/// after the match started, in milliseconds (paused time, stepped by 1 ms).
async fn first_ticks(spread_ticks: bool) -> Vec<u128> {
    let h = harness_as_is(MatchConfig {
        spread_ticks,
        ..Default::default()
    })
    .await;
    let mut first_ticks = Vec::new();
    for i in 0..8 {
        let id = h.create("echo", Value::Null).await.unwrap();
        let a = h.connect(&format!("player{i}"));
        h.join(&a, &id).await.unwrap();
        let start = tokio::time::Instant::now();
        h.data(&a, &id, 3, "x").await;
        while !h.log().iter().any(|l| l == "loop 0 1") {
            wait(1).await;
            assert!(start.elapsed() < Duration::from_millis(250), "no tick");
        }
        first_ticks.push(start.elapsed().as_millis());
        h.log.lock().unwrap().clear();
    }
    first_ticks
}

/// With `match.spread_ticks` (the default) a match's first tick comes
/// within one period of its start, at a phase of its own.
#[tokio::test]
async fn spread_ticks_start_within_one_period() {
    let mut ticks = first_ticks(true).await;
    assert!(ticks.iter().all(|ms| (0..=105).contains(ms)), "{ticks:?}");
    ticks.sort_unstable();
    ticks.dedup();
    assert!(ticks.len() > 1, "all at one phase: {ticks:?}");
}

/// Without it every match ticks one period after it starts, as in Nakama.
#[tokio::test]
async fn unspread_ticks_start_one_period_after() {
    let ticks = first_ticks(false).await;
    assert!(ticks.iter().all(|ms| (95..=105).contains(ms)), "{ticks:?}");
}

#[tokio::test]
async fn join_rejections_reach_the_client_with_the_reason() {
    let h = harness(MatchConfig::default()).await;
    let id = h.create("echo", Value::Null).await.unwrap();
    let a = h.connect("alice");
    let deny = BTreeMap::from([("deny".to_string(), "1".to_string())]);
    let err = reply_match(h.send(&a, join_msg(&id, deny)).await).unwrap_err();
    assert_eq!(err, (RtCode::MatchJoinRejected as i32, "go away".into()));
    // The handler takes two players: the third is refused as full.
    h.join(&h.connect("b"), &id).await.unwrap();
    h.join(&h.connect("c"), &id).await.unwrap();
    let err = h.join(&h.connect("d"), &id).await.unwrap_err();
    assert_eq!(err, (RtCode::MatchJoinRejected as i32, "full".into()));
    // Unknown and malformed ids.
    let unknown = format!("{}.n1", Uuid::new_v4());
    assert_eq!(
        h.join(&a, &unknown).await.unwrap_err().0,
        RtCode::MatchNotFound as i32
    );
    assert_eq!(
        h.join(&a, "nope").await.unwrap_err().0,
        RtCode::BadInput as i32
    );
    let other_node = id.replace(".n1", ".n2");
    assert_eq!(
        h.join(&a, &other_node).await.unwrap_err().0,
        RtCode::MatchNotFound as i32
    );
}

#[tokio::test]
async fn a_failing_handler_ends_only_its_match_and_tells_its_players() {
    let h = harness(MatchConfig::default()).await;
    let bad = h.create("echo", Value::Null).await.unwrap();
    let good = h.create("echo", Value::Null).await.unwrap();
    let (a, b) = (h.connect("alice"), h.connect("bob"));
    h.join(&a, &bad).await.unwrap();
    h.join(&b, &good).await.unwrap();
    h.data(&a, &bad, 9, "").await;
    wait(150).await;
    let got = drain(&a);
    assert!(
        got.iter().any(|e| matches!(&e.message,
            Some(Message::Error(err)) if err.message.contains("boom") && err.message.contains(&bad))),
        "{got:?}"
    );
    assert!(h.rt.matches.get(&bad).is_none());
    assert_eq!(h.rt.matches.count(), 1);
    // Alice is no longer in the dead match; Bob's match still plays.
    h.rt.handle(
        &crate::NoModules,
        &a,
        Envelope {
            cid: "d".into(),
            message: Some(Message::MatchDataSend(MatchDataSend {
                match_id: bad.clone(),
                op_code: 1,
                ..Default::default()
            })),
        },
    )
    .await;
    assert!(matches!(&drain(&a)[0].message,
        Some(Message::Error(e)) if e.code == RtCode::MatchNotFound as i32));
    h.data(&b, &good, 1, "still here").await;
    wait(150).await;
    assert_eq!(
        data_of(&drain(&b)),
        vec![(1, "still here".into(), String::new())]
    );
}

#[tokio::test]
async fn a_nil_state_ends_the_match() {
    let h = harness(MatchConfig::default()).await;
    let id = h.create("echo", Value::Null).await.unwrap();
    let a = h.connect("alice");
    h.join(&a, &id).await.unwrap();
    h.data(&a, &id, 8, "").await;
    wait(150).await;
    assert!(h.rt.matches.get(&id).is_none());
    assert!(
        !h.rt
            .hub()
            .contains(&h.rt.matches.stream(parse_id(&id).unwrap().0), a.id())
    );
    // Signals can end a match too, and answer first.
    let id = h.create("echo", Value::Null).await.unwrap();
    assert_eq!(
        h.rt.matches.signal(&id, "stop".into()).await.unwrap(),
        "stopping"
    );
    wait(10).await;
    assert!(h.rt.matches.get(&id).is_none());
    assert_eq!(
        h.rt.matches.signal(&id, "x".into()).await.unwrap_err().code,
        RtCode::MatchNotFound
    );
}

#[tokio::test]
async fn kicks_labels_and_deferred_broadcasts() {
    let h = harness(MatchConfig::default()).await;
    let id = h.create("echo", Value::Null).await.unwrap();
    let (a, b) = (h.connect("alice"), h.connect("bob"));
    h.join(&a, &id).await.unwrap();
    h.join(&b, &id).await.unwrap();
    drain(&a);
    h.data(&b, &id, 6, r#"{"mode":"duel"}"#).await;
    h.data(&b, &id, 5, "later").await;
    h.data(&b, &id, 7, "").await;
    wait(150).await;
    assert_eq!(
        h.rt.matches.get(&id).unwrap().label.as_deref(),
        Some(r#"{"mode":"duel"}"#)
    );
    // Bob was kicked: Alice sees him leave, the match has one player, and
    // the deferred broadcast (end of tick) reached only Alice.
    let got = drain(&a);
    assert!(got.iter().any(|e| matches!(&e.message,
        Some(Message::MatchPresenceEvent(ev)) if ev.leaves.len() == 1 && ev.leaves[0].username == "bob")));
    assert_eq!(data_of(&got), vec![(5, "later".into(), String::new())]);
    assert!(data_of(&drain(&b)).is_empty());
    assert_eq!(h.rt.matches.get(&id).unwrap().size, 1);
    assert!(h.log().iter().any(|l| l == "leave 0 1"), "{:?}", h.log());
}

#[tokio::test]
async fn a_full_input_queue_refuses_with_an_error() {
    let h = harness(MatchConfig {
        input_queue_size: 2,
        ..Default::default()
    })
    .await;
    let id = h.create("echo", Value::Null).await.unwrap();
    let a = h.connect("alice");
    h.join(&a, &id).await.unwrap();
    h.data(&a, &id, 3, "1").await;
    h.data(&a, &id, 3, "2").await;
    let got = h
        .send(
            &a,
            Message::MatchDataSend(MatchDataSend {
                match_id: id.clone(),
                op_code: 3,
                ..Default::default()
            }),
        )
        .await;
    assert!(matches!(&got[0].message,
        Some(Message::Error(e)) if e.message.contains("input queue is full")));
    wait(150).await;
    assert!(h.log().contains(&"loop 0 2".into()), "{:?}", h.log());
}

#[tokio::test]
async fn an_accepted_join_that_never_completes_is_dropped() {
    let h = harness(MatchConfig {
        join_marker_deadline_ms: 500,
        ..Default::default()
    })
    .await;
    let id = h.create("echo", Value::Null).await.unwrap();
    let (uuid, _) = parse_id(&id).unwrap();
    let entry = h.rt.matches.entry(uuid).unwrap();
    let p = Presence::new(Uuid::new_v4(), Uuid::new_v4(), "late".into(), "n1".into());
    let (reply, answer) = tokio::sync::oneshot::channel();
    let _ = entry.call(Call::JoinAttempt {
        presence: p.clone(),
        metadata: BTreeMap::new(),
        reply,
    });
    assert!(matches!(answer.await.unwrap(), JoinReply::Accepted { .. }));
    wait(700).await;
    entry.event(Event::Joined(p));
    wait(10).await;
    assert!(
        !h.log().iter().any(|l| l.starts_with("join")),
        "{:?}",
        h.log()
    );
    assert_eq!(h.rt.matches.get(&id).unwrap().size, 0);
}

#[tokio::test]
async fn disconnects_leave_and_shutdown_terminates_with_grace() {
    let h = harness(MatchConfig::default()).await;
    let id = h.create("echo", Value::Null).await.unwrap();
    let a = h.connect("alice");
    h.join(&a, &id).await.unwrap();
    h.rt.disconnect(&a);
    wait(10).await;
    assert_eq!(h.rt.matches.get(&id).unwrap().size, 0);
    assert!(h.log().iter().any(|l| l.starts_with("leave")));
    h.rt.matches.shutdown(Duration::from_secs(2)).await;
    assert_eq!(h.rt.matches.count(), 0);
    assert!(
        h.log()
            .iter()
            .any(|l| l.starts_with("terminate") && l.ends_with(" 2"))
    );
}

#[tokio::test]
async fn create_failures_are_clear() {
    let h = harness(MatchConfig {
        max_matches: 1,
        ..Default::default()
    })
    .await;
    let err = h.create("nope", Value::Null).await.unwrap_err();
    assert!(err.message.contains("no match handler named"), "{err:?}");
    let err = h
        .create("echo", serde_json::json!({"fail": 1}))
        .await
        .unwrap_err();
    assert!(err.message.contains("init refused"), "{err:?}");
    let err = h
        .create("echo", serde_json::json!({"rate": 61}))
        .await
        .unwrap_err();
    assert!(err.message.contains("between 1 and 60"), "{err:?}");
    h.create("echo", Value::Null).await.unwrap();
    let err = h.create("echo", Value::Null).await.unwrap_err();
    assert!(err.message.contains("match.max_matches"), "{err:?}");
}

#[tokio::test]
async fn relayed_matches_forward_data_with_filters() {
    let h = harness(MatchConfig::default()).await;
    let (a, b, c) = (h.connect("alice"), h.connect("bob"), h.connect("carol"));
    let m = reply_match(
        h.send(
            &a,
            Message::MatchCreate(MatchCreate {
                name: "room-1".into(),
            }),
        )
        .await,
    )
    .unwrap();
    assert!(!m.authoritative && m.match_id.ends_with('.'));
    assert_eq!(m.size, 1);
    // A named match has a deterministic id.
    let again = reply_match(
        h.send(
            &b,
            Message::MatchCreate(MatchCreate {
                name: "room-1".into(),
            }),
        )
        .await,
    )
    .unwrap();
    assert_eq!(again.match_id, m.match_id);
    assert_eq!(again.size, 2);
    let mc = h.join(&c, &m.match_id).await.unwrap();
    assert_eq!(mc.size, 2);
    drain(&a);
    drain(&b);
    // To everyone else…
    h.data(&a, &m.match_id, 4, "all").await;
    assert!(data_of(&drain(&a)).is_empty());
    assert_eq!(data_of(&drain(&b)), vec![(4, "all".into(), "alice".into())]);
    assert_eq!(data_of(&drain(&c)), vec![(4, "all".into(), "alice".into())]);
    // …or to the listed presences only.
    let to_c = UserPresence {
        session_id: c.id().to_string(),
        user_id: c.user_id().to_string(),
        ..Default::default()
    };
    h.send(
        &a,
        Message::MatchDataSend(MatchDataSend {
            match_id: m.match_id.clone(),
            op_code: 4,
            data: b"only c".to_vec().into(),
            presences: vec![to_c],
            reliable: false,
        }),
    )
    .await;
    assert!(data_of(&drain(&b)).is_empty());
    assert_eq!(
        data_of(&drain(&c)),
        vec![(4, "only c".into(), "alice".into())]
    );
    // Listed, then gone once everyone leaves.
    let listed = h.rt.matches.list(&ListRequest {
        limit: 10,
        authoritative: Some(false),
        ..Default::default()
    });
    assert_eq!(listed.unwrap()[0].size, 3);
    for s in [&a, &b, &c] {
        h.send(
            s,
            Message::MatchLeave(MatchLeave {
                match_id: m.match_id.clone(),
            }),
        )
        .await;
    }
    assert_eq!(
        h.join(&a, &m.match_id).await.unwrap_err().0,
        RtCode::MatchNotFound as i32
    );
    // Data for a match one is not in is an error.
    let got = h
        .send(
            &a,
            Message::MatchDataSend(MatchDataSend {
                match_id: m.match_id.clone(),
                op_code: 1,
                ..Default::default()
            }),
        )
        .await;
    assert!(
        matches!(&got[0].message, Some(Message::Error(e)) if e.code == RtCode::MatchNotFound as i32)
    );
}

#[tokio::test]
async fn listing_filters_by_kind_label_and_size() {
    let h = harness(MatchConfig::default()).await;
    let one = h.create("echo", Value::Null).await.unwrap();
    let two = h.create("echo", Value::Null).await.unwrap();
    h.join(&h.connect("a"), &two).await.unwrap();
    let relayed = h.connect("r");
    h.send(&relayed, Message::MatchCreate(MatchCreate::default()))
        .await;
    wait(10).await;
    let list = |req: ListRequest| {
        let mut ids: Vec<String> =
            h.rt.matches
                .list(&req)
                .unwrap()
                .into_iter()
                .map(|m| m.match_id)
                .collect();
        ids.sort();
        ids
    };
    let all = list(ListRequest {
        limit: 10,
        ..Default::default()
    });
    assert_eq!(all.len(), 3);
    let auth = list(ListRequest {
        limit: 10,
        authoritative: Some(true),
        ..Default::default()
    });
    let mut expected = vec![one.clone(), two.clone()];
    expected.sort();
    assert_eq!(auth, expected);
    let with_one = list(ListRequest {
        limit: 10,
        authoritative: Some(true),
        min_size: Some(1),
        ..Default::default()
    });
    assert_eq!(with_one, vec![two.clone()]);
    let by_label = list(ListRequest {
        limit: 10,
        label: Some(r#"{"mode":"echo","level":3}"#.into()),
        ..Default::default()
    });
    assert_eq!(by_label, expected);
    let limited = list(ListRequest {
        limit: 1,
        ..Default::default()
    });
    assert_eq!(limited.len(), 1);
}

#[tokio::test]
async fn a_panicking_handler_ends_only_its_match() {
    let h = harness(MatchConfig::default()).await;
    let bad = h.create("echo", Value::Null).await.unwrap();
    let good = h.create("echo", Value::Null).await.unwrap();
    let (a, b) = (h.connect("alice"), h.connect("bob"));
    h.join(&a, &bad).await.unwrap();
    h.join(&b, &good).await.unwrap();
    h.data(&a, &bad, 99, "").await;
    wait(150).await;
    let got = drain(&a);
    assert!(
        got.iter().any(|e| matches!(&e.message,
            Some(Message::Error(err)) if err.message.contains("panicked"))),
        "{got:?}"
    );
    assert!(h.rt.matches.get(&bad).is_none());
    assert!(
        !h.rt
            .hub()
            .contains(&h.rt.matches.stream(parse_id(&bad).unwrap().0), a.id())
    );
    h.data(&b, &good, 1, "fine").await;
    wait(150).await;
    assert_eq!(data_of(&drain(&b)), vec![(1, "fine".into(), String::new())]);
}

#[test]
fn a_match_state_crosses_the_bus_unchanged() {
    let state = MatchState {
        presences: vec![Presence::new(
            Uuid::new_v4(),
            Uuid::new_v4(),
            Arc::from("ann"),
            Arc::from("node-b"),
        )],
        tick: 42,
        state: r#"{"round":3}"#.into(),
    };
    assert_eq!(MatchState::from_json(&state.to_json()).unwrap(), state);
    for bad in ["", "{}", r#"{"presences":[["x"]],"tick":1,"state":""}"#] {
        assert!(MatchState::from_json(bad).is_err(), "{bad}");
    }
}
