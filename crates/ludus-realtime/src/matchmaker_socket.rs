//! The matchmaker on the socket ([`Matchmaking`], over the pure
//! [`Matchmaker`] core): `matchmaker_add` / `matchmaker_remove`, the
//! processing loop every `matchmaker.interval_sec`, and the
//! `matchmaker_matched` push. Parties add their tickets to the same core.
//!
//! A formed group goes first to the module runtime's
//! `register_matchmaker_matched` hook ([`Modules::matchmaker_matched`]);
//! when it answers a match id (`<uuid>.<anything>`) every member gets that
//! `match_id`, otherwise they all get the same `token`, an HS256 JWT of
//! `session.encryption_key` carrying a new relayed match id `<uuid>.` for 30
//! seconds ([`crate::matchmaker::match_token`]).

use std::sync::Arc;
use std::time::Duration;

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::matchmaker_matched::{Id, MatchmakerUser};
use ludus_proto::realtime::{
    Envelope, MatchmakerAdd, MatchmakerMatched, MatchmakerRemove, MatchmakerTicket, UserPresence,
};
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use uuid::Uuid;

use crate::error::RtError;
use crate::hub::Hub;
use crate::matchmaker::{MatchedEntry, Matchmaker, TicketRequest, match_token};
use crate::modules::Modules;
use crate::registry::SessionHandle;

use ludus_core::unix_now_ns as now_ns;

/// `<uuid>.<anything>`, as Nakama checks a hook's answer.
fn is_match_id(id: &str) -> bool {
    id.split_once('.')
        .is_some_and(|(uuid, _)| Uuid::parse_str(uuid).is_ok())
}

/// The entries as Nakama's Lua runtime shows them to the hook.
fn hook_entries(group: &[MatchedEntry]) -> Value {
    Value::Array(
        group
            .iter()
            .map(|e| {
                let mut properties = Map::new();
                for (k, v) in &e.string_properties {
                    properties.insert(k.clone(), Value::String(v.clone()));
                }
                for (k, v) in &e.numeric_properties {
                    properties.insert(k.clone(), json!(v));
                }
                let mut entry = json!({
                    "presence": {
                        "user_id": e.presence.user_id.to_string(),
                        "session_id": e.presence.session_id.to_string(),
                        "username": &*e.presence.username,
                        "node": &*e.presence.node,
                    },
                    "properties": properties,
                });
                if let Some(party) = &e.party_id {
                    entry["party_id"] = Value::String(party.clone());
                }
                entry
            })
            .collect(),
    )
}

fn wire_user(e: &MatchedEntry) -> MatchmakerUser {
    MatchmakerUser {
        presence: Some(UserPresence {
            user_id: e.presence.user_id.to_string(),
            session_id: e.presence.session_id.to_string(),
            username: e.presence.username.to_string(),
            persistence: false,
            status: None,
        }),
        party_id: e.party_id.clone().unwrap_or_default(),
        string_properties: e.string_properties.clone(),
        numeric_properties: e.numeric_properties.clone(),
    }
}

/// The matchmaker's socket glue over the hub: tickets of sessions, the
/// processing loop and the `matchmaker_matched` push. Parties add their
/// tickets to the same core ([`crate::Parties`]).
pub struct Matchmaking {
    hub: Arc<Hub>,
    core: Arc<Matchmaker>,
    encryption_key: String,
    interval: Duration,
}

impl std::fmt::Debug for Matchmaking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Matchmaking")
            .field("tickets", &self.core.ticket_count())
            .finish_non_exhaustive()
    }
}

impl Matchmaking {
    pub(crate) fn new(
        hub: Arc<Hub>,
        core: Arc<Matchmaker>,
        encryption_key: String,
        interval_sec: u64,
    ) -> Matchmaking {
        Matchmaking {
            hub,
            core,
            encryption_key,
            interval: Duration::from_secs(interval_sec.max(1)),
        }
    }

    /// The tickets and their matching.
    pub fn core(&self) -> &Matchmaker {
        &self.core
    }

    /// `matchmaker_add`: one session's ticket.
    pub(crate) fn add(
        &self,
        session: &SessionHandle,
        req: MatchmakerAdd,
    ) -> Result<MatchmakerTicket, RtError> {
        let presence = self.hub.presence_of(session);
        let ticket = self.core.add(
            vec![presence],
            Some(session.id()),
            None,
            TicketRequest {
                query: req.query,
                min_count: req.min_count,
                max_count: req.max_count,
                count_multiple: req.count_multiple.map(|c| c.value),
                string_properties: req.string_properties,
                numeric_properties: req.numeric_properties,
            },
            now_ns(),
        )?;
        Ok(MatchmakerTicket { ticket })
    }

    /// `matchmaker_remove`.
    pub(crate) fn remove(
        &self,
        session: &SessionHandle,
        req: MatchmakerRemove,
    ) -> Result<(), RtError> {
        if req.ticket.is_empty() {
            return Err(RtError::bad_input("invalid matchmaker ticket: it is empty"));
        }
        Ok(self.core.remove_session(session.id(), &req.ticket)?)
    }

    /// A gone session's tickets go with it.
    pub(crate) fn disconnect(&self, session: Uuid) {
        self.core.remove_session_all(session);
    }

    /// One matchmaking run: forms groups and tells their members. Answers
    /// how many groups formed. The search runs on the blocking pool: it
    /// evaluates every active ticket's query against the whole pool.
    pub async fn process(&self, modules: &Arc<dyn Modules>) -> usize {
        // In a cluster one node forms the groups, from every node's tickets.
        if !self.hub.matchmaker_role() {
            return 0;
        }
        let matchmaker = self.core.clone();
        let groups = match tokio::task::spawn_blocking(move || matchmaker.process(now_ns())).await {
            Ok(groups) => groups,
            Err(error) => {
                tracing::error!(%error, "matchmaker run failed");
                return 0;
            }
        };
        let formed = groups.len();
        // The hook runs for every group at once (each call is its own task,
        // as Nakama runs one goroutine per group), then each group hears.
        let calls: Vec<_> = groups
            .iter()
            .map(|g| {
                let (modules, entries) = (modules.clone(), hook_entries(g));
                tokio::spawn(async move { modules.matchmaker_matched(entries).await })
            })
            .collect();
        for (group, call) in groups.into_iter().zip(calls) {
            let answer = call
                .await
                .unwrap_or_else(|e| Err(format!("the hook's task failed: {e}")));
            self.announce_match(group, answer);
        }
        formed
    }

    /// Runs [`Matchmaking::process`] every `matchmaker.interval_sec`
    /// until `stop` turns true or its sender goes.
    pub async fn run(&self, modules: Arc<dyn Modules>, mut stop: watch::Receiver<bool>) {
        let period = self.interval;
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {
                    self.process(&modules).await;
                }
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return;
                    }
                }
            }
        }
    }

    /// Sends `matchmaker_matched` to every member of `group`, with the
    /// hook's match id if it gave a valid one, else a new token.
    fn announce_match(&self, group: Vec<MatchedEntry>, hook: Result<Option<String>, String>) {
        let mut id = None;
        match hook {
            Ok(Some(match_id)) if is_match_id(&match_id) => id = Some(Id::MatchId(match_id)),
            Ok(Some(other)) => tracing::error!(
                returned = %other,
                "matchmaker matched hook returned an invalid match id, sending a token instead"
            ),
            Ok(None) => {}
            Err(error) => {
                tracing::error!(%error, "matchmaker matched hook failed, sending a token instead")
            }
        }
        let id = id.unwrap_or_else(|| {
            let now_secs = now_ns() / 1_000_000_000;
            let match_id = format!("{}.", Uuid::new_v4());
            Id::Token(match_token(&self.encryption_key, &match_id, now_secs))
        });
        let users: Vec<MatchmakerUser> = group.iter().map(wire_user).collect();
        for (entry, me) in group.iter().zip(&users) {
            let envelope = Envelope {
                cid: String::new(),
                message: Some(Message::MatchmakerMatched(MatchmakerMatched {
                    ticket: entry.ticket.clone(),
                    id: Some(id.clone()),
                    users: users.clone(),
                    self_: Some(me.clone()),
                })),
            };
            self.hub
                .send_to_sessions(&[entry.presence.session_id], envelope);
        }
        tracing::debug!(users = group.len(), "matchmaker formed a match");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matchmaker::{MatchmakerConfig, verify_match_token};
    use crate::tracker::Presence;
    use crate::{Realtime, RealtimeConfig};

    fn connect(rt: &Realtime) -> SessionHandle {
        crate::test_support::session(rt, Uuid::new_v4(), "u", false)
    }

    use crate::test_support::no_modules;
    use crate::test_support::sent_messages as drain;

    async fn add(rt: &Realtime, s: &SessionHandle) -> String {
        add_n(rt, s, 2).await
    }

    async fn add_n(rt: &Realtime, s: &SessionHandle, n: i32) -> String {
        let m = Message::MatchmakerAdd(MatchmakerAdd {
            min_count: n,
            max_count: n,
            ..Default::default()
        });
        rt.handle(
            &crate::NoModules,
            s,
            Envelope {
                cid: "1".into(),
                message: Some(m),
            },
        )
        .await;
        match drain(s).pop() {
            Some(Message::MatchmakerTicket(t)) => t.ticket,
            other => panic!("expected a ticket, got {other:?}"),
        }
    }

    /// The processing loop runs every `interval_sec` (on a paused clock),
    /// both users get one token of a relayed match id, and `stop` ends it.
    #[tokio::test]
    async fn the_loop_matches_every_interval_and_stops() {
        let (store, _dir) = crate::test_support::store().await;
        tokio::time::pause();
        let rt = Arc::new(Realtime::new(
            RealtimeConfig {
                matchmaker: MatchmakerConfig {
                    interval_sec: 15,
                    ..Default::default()
                },
                ..Default::default()
            },
            store,
        ));
        let (a, b) = (connect(&rt), connect(&rt));
        let ta = add(&rt, &a).await;
        add(&rt, &b).await;
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn({
            let rt = rt.clone();
            async move { rt.matchmaker.run(Arc::new(crate::NoModules), stopped).await }
        });
        tokio::time::sleep(Duration::from_secs(14)).await;
        assert!(drain(&a).is_empty(), "nothing before the first interval");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (Some(Message::MatchmakerMatched(ma)), Some(Message::MatchmakerMatched(mb))) =
            (drain(&a).pop(), drain(&b).pop())
        else {
            panic!("both should be matched")
        };
        assert_eq!(ma.ticket, ta);
        assert_eq!(ma.id, mb.id);
        let Some(Id::Token(token)) = ma.id else {
            panic!("expected a token")
        };
        let now = now_ns() / 1_000_000_000;
        let mid = verify_match_token("defaultencryptionkey", &token, now).unwrap();
        assert!(mid.ends_with('.') && is_match_id(&mid), "{mid}");
        assert_eq!(rt.matchmaker.core().ticket_count(), 0);

        // A session's tickets go with it.
        add(&rt, &a).await;
        assert_eq!(rt.matchmaker.core().ticket_count(), 1);
        rt.disconnect(&a);
        assert_eq!(rt.matchmaker.core().ticket_count(), 0);

        stop.send(true).unwrap();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn party_tickets_through_the_realtime_layer() {
        let (store, _dir) = crate::test_support::store().await;
        let rt = Realtime::new(RealtimeConfig::default(), store);
        let (a, b, c) = (connect(&rt), connect(&rt), connect(&rt));
        let member = |s: &SessionHandle| rt.hub().presence_of(s);
        let request = TicketRequest {
            query: "*".into(),
            min_count: 3,
            max_count: 3,
            ..Default::default()
        };
        let t = rt
            .parties
            .matchmaker_add_ticket("party.ludus", vec![member(&a), member(&b)], request)
            .unwrap();
        assert!(rt.parties.matchmaker_remove_ticket("other", &t).is_err());
        assert!(
            rt.parties
                .matchmaker_remove_ticket("party.ludus", "")
                .is_err()
        );
        add_n(&rt, &c, 3).await;
        assert_eq!(rt.matchmaker.process(&no_modules()).await, 1);
        for s in [&a, &b, &c] {
            let Some(Message::MatchmakerMatched(m)) = drain(s).pop() else {
                panic!("expected matchmaker_matched")
            };
            assert_eq!(m.users.len(), 3);
            let parties = m
                .users
                .iter()
                .filter(|u| u.party_id == "party.ludus")
                .count();
            assert_eq!(parties, 2);
        }
        let bad = TicketRequest {
            min_count: 1,
            max_count: 2,
            ..Default::default()
        };
        let e = rt
            .parties
            .matchmaker_add_ticket("party.ludus", vec![member(&a)], bad)
            .unwrap_err();
        assert_eq!(e.code, crate::RtCode::BadInput);
        assert_eq!(rt.parties.matchmaker_remove_all("party.ludus"), 0);
    }

    #[test]
    fn match_ids_from_hooks_are_checked() {
        assert!(is_match_id(&format!("{}.", Uuid::new_v4())));
        assert!(is_match_id(&format!("{}.node1", Uuid::new_v4())));
        assert!(!is_match_id("not-a-uuid.node"));
        assert!(!is_match_id(&Uuid::new_v4().to_string()));
    }

    #[test]
    fn hook_entries_have_nakamas_shape() {
        let user = Uuid::new_v4();
        let session = Uuid::new_v4();
        let entry = MatchedEntry {
            ticket: "t".into(),
            presence: Presence::new(user, session, "ann".into(), "ludus".into()),
            party_id: None,
            string_properties: [("region".to_string(), "eu".to_string())].into(),
            numeric_properties: [("skill".to_string(), 3.0)].into(),
            create_time_ns: 0,
        };
        let mut party = entry.clone();
        party.party_id = Some("p".into());
        assert_eq!(
            hook_entries(&[entry, party]),
            json!([
                {"presence": {"user_id": user.to_string(), "session_id": session.to_string(),
                              "username": "ann", "node": "ludus"},
                 "properties": {"region": "eu", "skill": 3.0}},
                {"presence": {"user_id": user.to_string(), "session_id": session.to_string(),
                              "username": "ann", "node": "ludus"},
                 "properties": {"region": "eu", "skill": 3.0}, "party_id": "p"},
            ])
        );
    }
}
