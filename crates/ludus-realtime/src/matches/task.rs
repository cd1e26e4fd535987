//! One authoritative match: its task builds the handler, runs `match_init`,
//! then ticks at the handler's rate. Between ticks it serves calls (join
//! attempts, signals) and events (joins, leaves, terminate) as they arrive;
//! data messages wait in the bounded input queue for the next tick.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{Envelope, MatchData};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior};
use uuid::Uuid;

use super::handler::{
    Dispatcher, Effect, HandlerError, JoinDecision, MatchHandler, MatchInfo, MatchMessage, Step,
    check_init,
};
use super::{
    Call, Entry, Event, HandlerFactory, Inbox, JoinReply, Labelled, MatchRegistry, MatchState,
};
use crate::error::{RtCode, RtError, error_envelope};
use crate::stream::Stream;
use crate::tracker::Presence;

/// Builds the handler and runs `match_init`, answers `reply`, then runs the
/// match until it ends.
pub(crate) async fn start(
    registry: Arc<MatchRegistry>,
    id: Uuid,
    make: HandlerFactory,
    name: String,
    params: Value,
    reply: oneshot::Sender<Result<String, RtError>>,
) {
    let info = MatchInfo {
        id: format!("{id}.{}", registry.node),
        node: registry.node.to_string(),
        handler_name: name.clone(),
    };
    let fail = |message: String| {
        tracing::warn!(handler = %name, error = %message, "match could not start");
        RtError::new(
            RtCode::RuntimeException,
            format!("match handler {name:?} could not start: {message}"),
        )
    };
    let mut handler = match make() {
        Ok(h) => h,
        Err(e) => {
            let _ = reply.send(Err(fail(e)));
            return;
        }
    };
    let init = match handler
        .init(&info, &params)
        .and_then(|init| check_init(&init).map(|()| init))
    {
        Ok(init) => init,
        Err(e) => {
            let _ = reply.send(Err(fail(e)));
            return;
        }
    };
    let config = &registry.config;
    let (inbox_tx, inbox) = mpsc::unbounded_channel();
    let (input_tx, input) = mpsc::channel(config.input_queue_size.max(1));
    let entry = Arc::new(Entry {
        inbox: inbox_tx,
        pending_calls: Default::default(),
        call_queue_size: config.call_queue_size.max(1),
        input: input_tx,
        listing: std::sync::Mutex::new(Labelled::new(&init.label)),
        size: Default::default(),
        tick_rate: init.tick_rate,
        handler_name: Arc::from(name.as_str()),
    });
    registry.insert(id, entry.clone());
    tracing::debug!(match_id = %info.id, handler = %name, tick_rate = init.tick_rate, "match started");
    if reply.send(Ok(info.id.clone())).is_err() {
        // Nobody waits for it: run it anyway, as Nakama does; its creator's
        // caller went away, not the match.
    }
    let stream = registry.stream(id);
    let mut m = Match {
        stream,
        match_id: Arc::from(info.id.as_str()),
        handler,
        entry,
        registry: registry.clone(),
        tick: 0,
        presences: HashMap::new(),
        markers: HashMap::new(),
        dispatcher: Dispatcher::new(config.deferred_queue_size),
    };
    let phase_seed = config.spread_ticks.then_some(id.as_u128() as u64);
    let outcome = m.run(init.tick_rate, phase_seed, inbox, input).await;
    m.finish(outcome);
}

/// When a match's first tick is due: one period after it starts, as in
/// Nakama, or (with `match.spread_ticks`, `seed` being the match id's
/// random bits) up to a period sooner, at a phase of the match's own.
/// Matches created together (players whose sign-ins finished in one batch
/// find and create theirs at once) would otherwise tick together for their
/// whole lives: at 5,000 players nearly all 500 matches ticked within two
/// milliseconds of each 50, and the last ticks of each burst ran up to 12 ms
/// late. Spread over [`PHASES`] phases of the period, a tenth of them tick
/// together, and no message waits longer for its tick than in Nakama.
fn first_tick(now: Instant, period: Duration, seed: Option<u64>) -> Instant {
    let Some(seed) = seed else {
        return now + period;
    };
    now + period - (period / PHASES) * (seed % u64::from(PHASES)) as u32
}

/// How many phases matches' ticks spread over: enough that each burst of
/// ticks due together is a tenth of the matches, few enough that the match
/// thread still wakes for bursts rather than for every tick (spread over
/// every millisecond, 1,000 players took a third more CPU).
const PHASES: u32 = 10;

/// Why a match ended.
enum Outcome {
    /// The handler returned a nil state (or the grace period ran out).
    Ended,
    Failed(HandlerError),
}

struct Match {
    stream: Stream,
    match_id: Arc<str>,
    handler: Box<dyn MatchHandler>,
    entry: Arc<Entry>,
    registry: Arc<MatchRegistry>,
    tick: i64,
    /// Players whose join completed, by session.
    presences: HashMap<Uuid, Presence>,
    /// Accepted joins not completed yet, with their deadlines.
    markers: HashMap<Uuid, Instant>,
    dispatcher: Dispatcher,
}

/// `Err` ends the match.
type Flow = Result<(), Outcome>;

fn step(result: Result<Step, HandlerError>) -> Flow {
    match result {
        Ok(Step::Continue) => Ok(()),
        Ok(Step::End) => Err(Outcome::Ended),
        Err(e) => Err(Outcome::Failed(e)),
    }
}

impl Match {
    async fn run(
        &mut self,
        tick_rate: u32,
        phase_seed: Option<u64>,
        mut inbox: mpsc::UnboundedReceiver<Box<Inbox>>,
        mut input: mpsc::Receiver<Box<MatchMessage>>,
    ) -> Outcome {
        let period = Duration::from_secs(1) / tick_rate;
        let mut ticker =
            tokio::time::interval_at(first_tick(Instant::now(), period, phase_seed), period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let capacity = self.registry.config.input_queue_size;
        let mut batch: Vec<MatchMessage> = Vec::new();
        let mut stop_at: Option<Instant> = None;
        let mut empty_since = Some(Instant::now());
        loop {
            let flow = tokio::select! {
                biased;
                Some(message) = inbox.recv() => match *message {
                    Inbox::Call(call) => {
                        self.entry.pending_calls.fetch_sub(1, Ordering::AcqRel);
                        self.serve(call)
                    }
                    Inbox::Event(Event::Joined(p)) => self.joined(p),
                    Inbox::Event(Event::Left(p)) => self.left(vec![p]),
                    Inbox::Event(Event::Terminate(grace)) => {
                        let grace_s = grace.as_secs().min(u64::from(u32::MAX)) as u32;
                        stop_at.get_or_insert(Instant::now() + grace);
                        self.call(|h, d, t| h.terminate(d, t, grace_s))
                    }
                },
                _ = ticker.tick() => {
                    while batch.len() < capacity {
                        match input.try_recv() {
                            Ok(m) => batch.push(*m),
                            Err(_) => break,
                        }
                    }
                    let messages = std::mem::take(&mut batch);
                    let flow = self.call(|h, d, t| h.tick(d, t, &messages));
                    batch = messages;
                    batch.clear();
                    let flow = flow.and_then(|()| self.flush_deferred());
                    self.tick += 1;
                    self.sweep_markers();
                    flow
                }
            };
            if let Err(outcome) = flow {
                return outcome;
            }
            let now = Instant::now();
            if stop_at.is_some_and(|t| now >= t) {
                return Outcome::Ended;
            }
            if self.presences.is_empty() && self.markers.is_empty() {
                let since = *empty_since.get_or_insert(now);
                if let Some(max) = self.registry.config.max_empty()
                    && now.duration_since(since) >= max
                {
                    tracing::debug!(match_id = %self.match_id, "match empty too long, ending");
                    return Outcome::Ended;
                }
            } else {
                empty_since = None;
            }
        }
    }

    /// Runs one callback, then applies what it asked of the dispatcher.
    fn call(
        &mut self,
        f: impl FnOnce(&mut dyn MatchHandler, &mut Dispatcher, i64) -> Result<Step, HandlerError>,
    ) -> Flow {
        let result = f(self.handler.as_mut(), &mut self.dispatcher, self.tick);
        let applied = self.apply();
        step(result)?;
        applied
    }

    /// Applies the dispatcher's immediate effects; kicks become leaves.
    fn apply(&mut self) -> Flow {
        let effects = self.dispatcher.take_now();
        let mut kicked = Vec::new();
        for effect in effects {
            match effect {
                Effect::Kick(sessions) => {
                    for s in sessions {
                        if let Some(p) = self.registry.hub.untrack_anywhere(s, &self.stream) {
                            self.registry.presence_event(
                                &self.stream,
                                Vec::new(),
                                vec![p.to_wire(false)],
                            );
                        }
                        if let Some(p) = self.presences.get(&s) {
                            kicked.push(p.clone());
                        }
                    }
                }
                other => self.effect(other),
            }
        }
        if kicked.is_empty() {
            Ok(())
        } else {
            self.left(kicked)
        }
    }

    fn flush_deferred(&mut self) -> Flow {
        for effect in self.dispatcher.take_deferred() {
            self.effect(effect);
        }
        Ok(())
    }

    fn effect(&mut self, effect: Effect) {
        match effect {
            Effect::Broadcast {
                op_code,
                data,
                to,
                sender,
                reliable,
            } => {
                let mut sessions = self.registry.hub.session_ids(&self.stream);
                if let Some(to) = to {
                    sessions.retain(|s| to.contains(s));
                }
                self.registry.hub.send_to_sessions(
                    &sessions,
                    Envelope {
                        cid: String::new(),
                        message: Some(Message::MatchData(MatchData {
                            match_id: self.match_id.to_string(),
                            presence: sender.map(|p| p.to_wire(false)),
                            op_code,
                            data: data.into(),
                            reliable,
                        })),
                    },
                );
            }
            Effect::Label(label) => {
                self.entry.set_label(&label);
                self.registry.index(self.stream.subject, &self.entry);
            }
            Effect::Kick(_) => {}
        }
    }

    fn serve(&mut self, call: Call) -> Flow {
        match call {
            Call::JoinAttempt {
                presence,
                metadata,
                reply,
            } => {
                if self.presences.contains_key(&presence.session_id) {
                    // Already in: Nakama answers the match again, no callback.
                    let _ = reply.send(JoinReply::Accepted {
                        label: self.entry.label().to_string(),
                        new: false,
                    });
                    return Ok(());
                }
                let session = presence.session_id;
                let mut decision = JoinDecision::End;
                let flow = self.call(|h, d, t| {
                    decision = h.join_attempt(d, t, &presence, &metadata)?;
                    Ok(match decision {
                        JoinDecision::End => Step::End,
                        _ => Step::Continue,
                    })
                });
                let answer = match decision {
                    JoinDecision::Accept if flow.is_ok() => {
                        let deadline = Instant::now() + self.registry.config.join_marker_deadline();
                        self.markers.insert(session, deadline);
                        JoinReply::Accepted {
                            label: self.entry.label().to_string(),
                            new: true,
                        }
                    }
                    JoinDecision::Reject(reason) if flow.is_ok() => JoinReply::Rejected(reason),
                    _ => JoinReply::Ended,
                };
                self.unlist_if_ending(&flow);
                let _ = reply.send(answer);
                flow
            }
            Call::State { reply } => {
                // Reading the state runs no callback: the match goes on.
                let state = self.handler.state_json().map_err(|e| {
                    RtError::new(
                        RtCode::RuntimeException,
                        format!("cannot encode the match state: {e}"),
                    )
                });
                let _ = reply.send(state.map(|state| MatchState {
                    presences: self.presences.values().cloned().collect(),
                    tick: self.tick,
                    state,
                }));
                Ok(())
            }
            Call::Signal { data, reply } => {
                let mut answer = String::new();
                let flow = self.call(|h, d, t| {
                    let (step, out) = h.signal(d, t, &data)?;
                    answer = out;
                    Ok(step)
                });
                self.unlist_if_ending(&flow);
                let _ = reply.send(match &flow {
                    Ok(()) | Err(Outcome::Ended) => Ok(answer),
                    Err(Outcome::Failed(e)) => Err(RtError::new(
                        RtCode::RuntimeException,
                        format!("match signal failed: {e}"),
                    )),
                });
                flow
            }
        }
    }

    /// A match that is ending leaves the registry before it answers its
    /// caller, so the caller never finds it listed afterwards.
    fn unlist_if_ending(&self, flow: &Flow) {
        if flow.is_err() {
            self.registry.remove(self.stream.subject);
        }
    }

    /// A presence whose join was accepted is now tracked on the stream.
    fn joined(&mut self, p: Presence) -> Flow {
        if self.markers.remove(&p.session_id).is_none() {
            // Its join deadline passed: it is not part of the match.
            tracing::debug!(match_id = %self.match_id, session_id = %p.session_id, "late join dropped");
            if let Some(gone) = self
                .registry
                .hub
                .untrack_anywhere(p.session_id, &self.stream)
            {
                self.registry
                    .presence_event(&self.stream, Vec::new(), vec![gone.to_wire(false)]);
            }
            return Ok(());
        }
        self.presences.insert(p.session_id, p.clone());
        self.entry
            .size
            .store(self.presences.len(), Ordering::Release);
        self.call(|h, d, t| h.join(d, t, std::slice::from_ref(&p)))
    }

    fn left(&mut self, presences: Vec<Presence>) -> Flow {
        let mut gone = Vec::with_capacity(presences.len());
        for p in presences {
            self.markers.remove(&p.session_id);
            if let Some(p) = self.presences.remove(&p.session_id) {
                gone.push(p);
            }
        }
        self.entry
            .size
            .store(self.presences.len(), Ordering::Release);
        if gone.is_empty() {
            return Ok(());
        }
        self.call(|h, d, t| h.leave(d, t, &gone))
    }

    /// Drops accepted joins that never completed.
    fn sweep_markers(&mut self) {
        if self.markers.is_empty() {
            return;
        }
        let now = Instant::now();
        self.markers.retain(|_, deadline| *deadline > now);
    }

    /// Leaves the registry and untracks every player; a failure is logged
    /// and told to them.
    fn finish(self, outcome: Outcome) {
        self.registry.remove(self.stream.subject);
        let sessions = self.registry.hub.session_ids(&self.stream);
        if let Outcome::Failed(error) = &outcome {
            tracing::error!(
                match_id = %self.match_id,
                handler = %self.entry.handler_name,
                tick = self.tick,
                %error,
                "match handler failed, ending the match"
            );
            self.registry.hub.send_to_sessions(
                &sessions,
                error_envelope(
                    "",
                    RtCode::RuntimeException,
                    &format!("match {} ended: its handler failed: {error}", self.match_id),
                ),
            );
        } else {
            tracing::debug!(match_id = %self.match_id, tick = self.tick, "match ended");
        }
        for s in sessions {
            self.registry.hub.untrack_anywhere(s, &self.stream);
        }
    }
}

#[cfg(test)]
mod first_tick_tests {
    use super::*;

    /// The first tick comes no later than one period after the start
    /// (Nakama's first tick) and never at the start itself; matches made in
    /// the same instant spread their ticks evenly over the period instead of
    /// ticking together.
    #[test]
    fn matches_made_together_tick_apart() {
        let now = Instant::now();
        let period = Duration::from_millis(100);
        let mut buckets = [0u32; 10];
        for _ in 0..2000 {
            let seed = Uuid::new_v4().as_u128() as u64;
            let first = first_tick(now, period, Some(seed));
            assert_eq!(
                first,
                first_tick(now, period, Some(seed)),
                "one phase per match"
            );
            let offset = first - now;
            assert!(offset > Duration::ZERO && offset <= period, "{offset:?}");
            buckets[((offset.as_nanos() - 1) / 10_000_000) as usize] += 1;
        }
        // 200 expected per 10 ms; all in one or two buckets before.
        for (i, n) in buckets.iter().enumerate() {
            assert!(
                (120..=280).contains(n),
                "bucket {i}: {n} of 2000 ({buckets:?})"
            );
        }
        // Any tick rate, the slowest included; without a seed, Nakama's.
        let second = Duration::from_secs(1);
        let offset = first_tick(now, second, Some(u64::MAX)) - now;
        assert!(offset > Duration::ZERO && offset <= second, "{offset:?}");
        assert_eq!(first_tick(now, period, None), now + period);
    }
}
