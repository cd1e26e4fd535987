//! The party book: the membership state machine of this node's parties,
//! with no sockets, streams or clocks in it.
//!
//! Each operation checks the rules (leader-only actions, sizes, pending
//! requests, `session.single_party`) against the book, changes it, and
//! answers the [`Effect`]s the change calls for, in the order members must
//! see them. The socket glue (`party/mod.rs`) turns effects into presence
//! tracking and pushes; the book never sends anything.

use std::collections::{BTreeSet, HashMap};

use uuid::Uuid;

use crate::error::RtError;
use crate::query::Query;
use crate::tracker::Presence;

/// Limits of parties: the `party.*` config section itself (Nakama has no
/// such keys: it caps every party at 256; the server checks the values).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PartySettings {
    /// Largest party; a `party_create` asking for more is refused, one
    /// asking for 0 gets this size. Pending join requests of a party are
    /// bounded by its size too, as in Nakama.
    pub max_size: usize,
    /// Most parties one session may be in or have asked to join at once.
    pub max_per_session: usize,
}

impl Default for PartySettings {
    fn default() -> Self {
        PartySettings {
            max_size: 256,
            max_per_session: 32,
        }
    }
}

/// One party's state.
#[derive(Debug, Clone)]
pub(crate) struct Party {
    /// Creation time in µs, unique on this node: the listing order, which
    /// a cluster's nodes share (ties between nodes go by party id).
    pub(crate) created_us: u64,
    pub(crate) open: bool,
    pub(crate) hidden: bool,
    pub(crate) max_size: usize,
    pub(crate) label: String,
    /// Session id of the leader, always a member.
    pub(crate) leader: Uuid,
    /// Members in join order: the oldest takes over when the leader leaves.
    pub(crate) members: Vec<Presence>,
    /// Sessions waiting for the leader's answer, oldest first.
    pub(crate) requests: Vec<Presence>,
}

impl Party {
    fn member_index(&self, session: Uuid) -> Option<usize> {
        self.members.iter().position(|p| p.session_id == session)
    }

    pub(crate) fn leader_presence(&self) -> Option<&Presence> {
        self.members.iter().find(|p| p.session_id == self.leader)
    }

    pub(crate) fn member_sessions(&self) -> Vec<Uuid> {
        self.members.iter().map(|p| p.session_id).collect()
    }

    fn is_member(&self, session: Uuid) -> bool {
        self.member_index(session).is_some()
    }
}

/// What a change means for the party's members, in the order they see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// `presence` is a member now: tracked on the party's stream (everyone,
    /// the newcomer too, sees it join). With `send_party`, it is first sent
    /// the party (a joiner; the creator gets it as its reply instead).
    Joined {
        party: Uuid,
        presence: Presence,
        send_party: bool,
    },
    /// A closed party's leader is asked to let `presence` in.
    Requested {
        party: Uuid,
        leader: Uuid,
        presence: Presence,
    },
    /// Every member is told the new leader.
    LeaderChanged {
        party: Uuid,
        leader: Presence,
        members: Vec<Uuid>,
    },
    /// `presence` left (or was removed, `removed`, and is told the party is
    /// closed to it); the others see it leave.
    Left {
        party: Uuid,
        presence: Presence,
        removed: bool,
    },
    /// The party is over: its last member left, or its leader closed it
    /// (`closed`: the members are told). Nobody is left to hear leaves.
    Ended {
        party: Uuid,
        members: Vec<Uuid>,
        closed: bool,
    },
}

impl Effect {
    /// Whether the party's members changed (its matchmaker tickets no longer
    /// describe them).
    pub(crate) fn changes_members(&self) -> bool {
        !matches!(
            self,
            Effect::Requested { .. } | Effect::LeaderChanged { .. }
        )
    }
}

/// A party as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) id: Uuid,
    pub(crate) created_us: u64,
    pub(crate) open: bool,
    pub(crate) hidden: bool,
    pub(crate) max_size: usize,
    pub(crate) size: usize,
    pub(crate) label: String,
}

pub(crate) fn not_found() -> RtError {
    RtError::bad_input("party not found: it has ended, or the id is wrong")
}

fn not_leader(action: &str) -> RtError {
    RtError::bad_input(format!("only the party leader can {action}"))
}

fn party_full(max: usize) -> RtError {
    RtError::bad_input(format!("party full: it has its maximum of {max} members"))
}

/// The parties of one node.
#[derive(Debug, Default)]
pub(crate) struct PartyBook {
    settings: PartySettings,
    single_party: bool,
    parties: HashMap<Uuid, Party>,
    /// (creation time, party), for listing.
    order: BTreeSet<(u64, Uuid)>,
    /// Session → parties it is in or has asked to join.
    by_session: HashMap<Uuid, Vec<Uuid>>,
    /// The last creation time given out.
    last_created_us: u64,
}

impl PartyBook {
    pub(crate) fn new(settings: PartySettings, single_party: bool) -> PartyBook {
        PartyBook {
            settings,
            single_party,
            ..PartyBook::default()
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.parties.len()
    }

    pub(crate) fn get(&self, id: Uuid) -> Option<&Party> {
        self.parties.get(&id)
    }

    /// Parties `session` is a member of (pending requests excluded).
    pub(crate) fn parties_of(&self, session: Uuid) -> Vec<Uuid> {
        self.by_session
            .get(&session)
            .map(|ids| {
                ids.iter()
                    .filter(|id| self.parties.get(id).is_some_and(|p| p.is_member(session)))
                    .copied()
                    .collect()
            })
            .unwrap_or_default()
    }

    fn link(&mut self, session: Uuid, party: Uuid) {
        self.by_session.entry(session).or_default().push(party);
    }

    fn unlink(&mut self, session: Uuid, party: Uuid) {
        if let Some(list) = self.by_session.get_mut(&session) {
            list.retain(|p| *p != party);
            if list.is_empty() {
                self.by_session.remove(&session);
            }
        }
    }

    fn linked(&self, session: Uuid) -> usize {
        self.by_session.get(&session).map_or(0, Vec::len)
    }

    /// Forgets a party and every session's link to it.
    fn remove_party(&mut self, id: Uuid) -> Option<Party> {
        let party = self.parties.remove(&id)?;
        self.order.remove(&(party.created_us, id));
        for p in party.members.iter().chain(&party.requests) {
            self.unlink(p.session_id, id);
        }
        Some(party)
    }

    fn check_room(&self, session: Uuid) -> Result<(), RtError> {
        let most = self.settings.max_per_session;
        if self.linked(session) >= most {
            return Err(RtError::bad_input(format!(
                "too many parties for one session, at most {most} joined or requested: leave one first"
            )));
        }
        Ok(())
    }

    /// A party `session` leads.
    fn led(&mut self, id: Uuid, session: Uuid, action: &str) -> Result<&mut Party, RtError> {
        let party = self.parties.get_mut(&id).ok_or_else(not_found)?;
        if party.leader != session {
            return Err(not_leader(action));
        }
        Ok(party)
    }

    /// A new party led by `leader`; `max_size` 0 is the largest allowed.
    pub(crate) fn create(
        &mut self,
        id: Uuid,
        leader: Presence,
        open: bool,
        hidden: bool,
        max_size: i32,
        label: String,
    ) -> Result<Vec<Effect>, RtError> {
        let max = self.settings.max_size;
        let max_size = match usize::try_from(max_size) {
            Ok(0) => max,
            Ok(n) if n <= max => n,
            _ => {
                return Err(RtError::bad_input(format!(
                    "invalid party max size, must be 1-{max} (0 for {max})"
                )));
            }
        };
        self.check_room(leader.session_id)?;
        let created_us = (ludus_core::unix_now_us().max(0) as u64).max(self.last_created_us + 1);
        self.last_created_us = created_us;
        let session = leader.session_id;
        self.parties.insert(
            id,
            Party {
                created_us,
                open,
                hidden,
                max_size,
                label,
                leader: session,
                members: vec![leader.clone()],
                requests: Vec::new(),
            },
        );
        self.order.insert((created_us, id));
        self.link(session, id);
        let mut effects = vec![Effect::Joined {
            party: id,
            presence: leader,
            send_party: false,
        }];
        self.leave_others(session, id, &mut effects);
        Ok(effects)
    }

    /// Joins an open party at once, or asks the leader of a closed one.
    pub(crate) fn join(&mut self, id: Uuid, joiner: Presence) -> Result<Vec<Effect>, RtError> {
        let session = joiner.session_id;
        let room = self.check_room(session);
        let party = self.parties.get_mut(&id).ok_or_else(not_found)?;
        if party.is_member(session) {
            return Err(RtError::bad_input("already a member of this party"));
        }
        if party.requests.iter().any(|p| p.session_id == session) {
            return Err(RtError::bad_input(
                "join request already sent, wait for the party leader to answer",
            ));
        }
        room?;
        if party.members.len() >= party.max_size {
            return Err(party_full(party.max_size));
        }
        let mut effects = Vec::new();
        if party.open {
            party.members.push(joiner.clone());
            effects.push(Effect::Joined {
                party: id,
                presence: joiner,
                send_party: true,
            });
            self.link(session, id);
            self.leave_others(session, id, &mut effects);
        } else {
            if party.requests.len() >= party.max_size {
                return Err(RtError::bad_input(
                    "too many pending join requests for this party, try again later",
                ));
            }
            party.requests.push(joiner.clone());
            effects.push(Effect::Requested {
                party: id,
                leader: party.leader,
                presence: joiner,
            });
            self.link(session, id);
        }
        Ok(effects)
    }

    /// The leader lets a pending request in.
    pub(crate) fn accept(
        &mut self,
        id: Uuid,
        leader: Uuid,
        target: (Uuid, Uuid),
    ) -> Result<Vec<Effect>, RtError> {
        let party = self.led(id, leader, "accept join requests")?;
        let Some(at) = party
            .requests
            .iter()
            .position(|p| (p.session_id, p.user_id) == target)
        else {
            return Err(RtError::bad_input(
                "no join request from that presence is pending, list them with party_join_request_list",
            ));
        };
        if party.members.len() >= party.max_size {
            return Err(party_full(party.max_size));
        }
        let joiner = party.requests.remove(at);
        party.members.push(joiner.clone());
        let mut effects = vec![Effect::Joined {
            party: id,
            presence: joiner,
            send_party: true,
        }];
        self.leave_others(target.0, id, &mut effects);
        Ok(effects)
    }

    /// The leader removes a member or turns down a pending request.
    pub(crate) fn remove(
        &mut self,
        id: Uuid,
        leader: Uuid,
        target: (Uuid, Uuid),
    ) -> Result<Vec<Effect>, RtError> {
        let party = self.led(id, leader, "remove members or join requests")?;
        if target.0 == party.leader {
            return Err(RtError::bad_input(
                "the party leader cannot remove itself, use party_leave or party_close",
            ));
        }
        let same = |p: &Presence| (p.session_id, p.user_id) == target;
        let mut effects = Vec::new();
        if let Some(at) = party.members.iter().position(same) {
            let presence = party.members.remove(at);
            effects.push(Effect::Left {
                party: id,
                presence,
                removed: true,
            });
        } else if let Some(at) = party.requests.iter().position(same) {
            party.requests.remove(at);
        } else {
            return Err(RtError::bad_input(
                "that presence is neither a member of this party nor asking to join it",
            ));
        }
        self.unlink(target.0, id);
        Ok(effects)
    }

    /// The leader hands over to another member.
    pub(crate) fn promote(
        &mut self,
        id: Uuid,
        leader: Uuid,
        target: (Uuid, Uuid),
    ) -> Result<Vec<Effect>, RtError> {
        let party = self.led(id, leader, "promote")?;
        let Some(heir) = party
            .members
            .iter()
            .find(|p| (p.session_id, p.user_id) == target)
            .cloned()
        else {
            return Err(RtError::bad_input(
                "that presence is not a member of this party, only members can lead it",
            ));
        };
        party.leader = heir.session_id;
        Ok(vec![Effect::LeaderChanged {
            party: id,
            leader: heir,
            members: party.member_sessions(),
        }])
    }

    /// Leaves a party, or withdraws a pending request.
    pub(crate) fn leave(&mut self, id: Uuid, session: Uuid) -> Result<Vec<Effect>, RtError> {
        let party = self.parties.get_mut(&id).ok_or_else(not_found)?;
        if let Some(at) = party.requests.iter().position(|p| p.session_id == session) {
            party.requests.remove(at);
            self.unlink(session, id);
            return Ok(Vec::new());
        }
        if !party.is_member(session) {
            return Err(RtError::bad_input("not a member of this party"));
        }
        let mut effects = Vec::new();
        self.depart(id, session, &mut effects);
        Ok(effects)
    }

    /// The leader ends the party.
    pub(crate) fn close(&mut self, id: Uuid, leader: Uuid) -> Result<Vec<Effect>, RtError> {
        let members = self.led(id, leader, "close it")?.member_sessions();
        self.remove_party(id);
        Ok(vec![Effect::Ended {
            party: id,
            members,
            closed: true,
        }])
    }

    /// The pending requests, for the leader.
    pub(crate) fn requests(&mut self, id: Uuid, leader: Uuid) -> Result<Vec<Presence>, RtError> {
        Ok(self.led(id, leader, "list join requests")?.requests.clone())
    }

    /// Who `session`'s party data goes to: the other members; `session`
    /// must be a member.
    pub(crate) fn data_targets(
        &self,
        id: Uuid,
        session: Uuid,
    ) -> Result<(Presence, Vec<Uuid>), RtError> {
        let party = self.parties.get(&id).ok_or_else(not_found)?;
        let Some(sender) = party.members.iter().find(|p| p.session_id == session) else {
            return Err(RtError::bad_input(
                "not a member of this party, join it before sending data",
            ));
        };
        let others = party
            .members
            .iter()
            .map(|p| p.session_id)
            .filter(|s| *s != session)
            .collect();
        Ok((sender.clone(), others))
    }

    /// The leader changes the label and flags; answers the members to tell.
    pub(crate) fn update(
        &mut self,
        id: Uuid,
        leader: Uuid,
        label: &str,
        open: bool,
        hidden: bool,
    ) -> Result<Vec<Uuid>, RtError> {
        let party = self.led(id, leader, "update it")?;
        party.label = label.to_owned();
        party.open = open;
        party.hidden = hidden;
        Ok(party.member_sessions())
    }

    /// A gone session leaves its parties and withdraws its requests.
    pub(crate) fn disconnect(&mut self, session: Uuid) -> Vec<Effect> {
        let mut effects = Vec::new();
        let Some(ids) = self.by_session.get(&session).cloned() else {
            return effects;
        };
        for id in ids {
            let Some(party) = self.parties.get_mut(&id) else {
                continue;
            };
            if let Some(at) = party.requests.iter().position(|p| p.session_id == session) {
                party.requests.remove(at);
                self.unlink(session, id);
            } else {
                self.depart(id, session, &mut effects);
            }
        }
        effects
    }

    /// With `session.single_party`, `session` (now in `kept`) leaves every
    /// other party it is a member of; its pending requests stay.
    fn leave_others(&mut self, session: Uuid, kept: Uuid, effects: &mut Vec<Effect>) {
        if !self.single_party {
            return;
        }
        let others: Vec<Uuid> = self
            .by_session
            .get(&session)
            .into_iter()
            .flatten()
            .copied()
            .filter(|id| *id != kept)
            .collect();
        for id in others {
            self.depart(id, session, effects);
        }
    }

    /// A member goes: a leaving leader hands over to the oldest member
    /// (Nakama's order: the new leader first, then the leave); the last one
    /// out ends the party.
    fn depart(&mut self, id: Uuid, session: Uuid, effects: &mut Vec<Effect>) {
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        let Some(at) = party.member_index(session) else {
            return;
        };
        let presence = party.members.remove(at);
        if party.members.is_empty() {
            self.remove_party(id);
            self.unlink(session, id);
            effects.push(Effect::Ended {
                party: id,
                members: vec![session],
                closed: false,
            });
            return;
        }
        if party.leader == session {
            let heir = party.members[0].clone();
            party.leader = heir.session_id;
            effects.push(Effect::LeaderChanged {
                party: id,
                leader: heir,
                members: party.member_sessions(),
            });
        }
        self.unlink(session, id);
        effects.push(Effect::Left {
            party: id,
            presence,
            removed: false,
        });
    }

    /// Live parties in creation order after `after` (the last one of a
    /// previous page), at most `limit`: open or closed only when `open`
    /// says so, hidden ones only with `show_hidden`, matching `query` on
    /// the JSON label. Answers whether more follow.
    pub(crate) fn list(
        &self,
        limit: usize,
        filter: &ListFilter<'_>,
        after: Option<(u64, Uuid)>,
    ) -> (Vec<Listed>, bool) {
        if limit == 0 {
            return (Vec::new(), false);
        }
        let range = match after {
            Some(a) => self
                .order
                .range((std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded)),
            None => self.order.range(..),
        };
        let mut page = Vec::with_capacity(limit.min(100));
        for (created_us, id) in range {
            let Some(p) = self.parties.get(id) else {
                continue;
            };
            if !filter.accepts(p.open, p.hidden, &p.label) {
                continue;
            }
            if page.len() == limit {
                return (page, true);
            }
            page.push(Listed {
                id: *id,
                created_us: *created_us,
                open: p.open,
                hidden: p.hidden,
                max_size: p.max_size,
                size: p.members.len(),
                label: if p.label.is_empty() {
                    "{}".into()
                } else {
                    p.label.clone()
                },
            });
        }
        (page, false)
    }
}

/// Which parties a listing wants.
#[derive(Debug, Default)]
pub(crate) struct ListFilter<'a> {
    /// Only open (or only closed) parties.
    pub(crate) open: Option<bool>,
    pub(crate) show_hidden: bool,
    /// Searched on `{"label": <the JSON label>}`.
    pub(crate) query: Option<&'a Query>,
}

impl ListFilter<'_> {
    pub(crate) fn accepts(&self, open: bool, hidden: bool, label: &str) -> bool {
        if self.open.is_some_and(|o| o != open) || (hidden && !self.show_hidden) {
            return false;
        }
        match self.query {
            Some(q) => {
                let label = serde_json::from_str::<serde_json::Value>(label)
                    .unwrap_or(serde_json::Value::Null);
                q.score(&serde_json::json!({ "label": label })).is_some()
            }
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The state machine alone: every transition, and the refused ones.
    use super::*;

    fn member(name: &str) -> Presence {
        Presence::new(Uuid::new_v4(), Uuid::new_v4(), name.into(), "n1".into())
    }

    fn book() -> PartyBook {
        PartyBook::new(PartySettings::default(), false)
    }

    fn target(p: &Presence) -> (Uuid, Uuid) {
        (p.session_id, p.user_id)
    }

    fn new_party(b: &mut PartyBook, leader: &Presence, open: bool, max: i32) -> Uuid {
        let id = Uuid::new_v4();
        let effects = b
            .create(id, leader.clone(), open, false, max, String::new())
            .unwrap();
        assert_eq!(
            effects,
            vec![Effect::Joined {
                party: id,
                presence: leader.clone(),
                send_party: false
            }]
        );
        id
    }

    #[test]
    fn open_join_admits_closed_join_asks_the_leader() {
        let mut b = book();
        let (l, a) = (member("l"), member("a"));
        let open = new_party(&mut b, &l, true, 4);
        assert_eq!(
            b.join(open, a.clone()).unwrap(),
            vec![Effect::Joined {
                party: open,
                presence: a.clone(),
                send_party: true
            }]
        );
        let closed = new_party(&mut b, &l, false, 4);
        assert_eq!(
            b.join(closed, a.clone()).unwrap(),
            vec![Effect::Requested {
                party: closed,
                leader: l.session_id,
                presence: a.clone()
            }]
        );
        assert!(b.join(closed, a.clone()).is_err(), "a second request");
        assert!(b.join(open, a.clone()).is_err(), "already a member");
        assert_eq!(b.parties_of(a.session_id), vec![open]);
        assert_eq!(b.requests(closed, l.session_id).unwrap(), vec![a.clone()]);
        assert!(b.requests(closed, a.session_id).is_err(), "not the leader");
        let joined = b.accept(closed, l.session_id, target(&a)).unwrap();
        assert!(matches!(
            &joined[..],
            [Effect::Joined {
                send_party: true,
                ..
            }]
        ));
        assert!(
            b.accept(closed, l.session_id, target(&a)).is_err(),
            "no request left"
        );
    }

    #[test]
    fn sizes_and_room_are_bounded() {
        let mut b = PartyBook::new(
            PartySettings {
                max_size: 2,
                max_per_session: 2,
            },
            false,
        );
        let (l, a, c) = (member("l"), member("a"), member("c"));
        assert!(
            b.create(Uuid::new_v4(), l.clone(), true, false, 3, String::new())
                .is_err(),
            "larger than party.max_size"
        );
        let p = new_party(&mut b, &l, true, 0);
        assert_eq!(b.get(p).unwrap().max_size, 2, "0 asks for the largest");
        b.join(p, a.clone()).unwrap();
        assert!(b.join(p, c.clone()).is_err(), "full");
        new_party(&mut b, &l, true, 1);
        assert!(
            b.create(Uuid::new_v4(), l.clone(), true, false, 1, String::new())
                .is_err(),
            "a third party for one session"
        );
    }

    #[test]
    fn leader_only_actions_are_refused_to_others() {
        let mut b = book();
        let (l, a) = (member("l"), member("a"));
        let p = new_party(&mut b, &l, true, 4);
        b.join(p, a.clone()).unwrap();
        let s = a.session_id;
        assert!(b.promote(p, s, target(&l)).is_err());
        assert!(b.remove(p, s, target(&l)).is_err());
        assert!(b.close(p, s).is_err());
        assert!(b.update(p, s, "", true, false).is_err());
        assert!(
            b.remove(p, l.session_id, target(&l)).is_err(),
            "removing itself"
        );
        assert!(b.promote(p, l.session_id, target(&member("x"))).is_err());
        assert_eq!(b.get(p).unwrap().leader, l.session_id, "nothing changed");
    }

    #[test]
    fn a_leaving_leader_hands_over_then_leaves_and_the_last_ends_it() {
        let mut b = book();
        let (l, a, c) = (member("l"), member("a"), member("c"));
        let p = new_party(&mut b, &l, true, 4);
        b.join(p, a.clone()).unwrap();
        b.join(p, c.clone()).unwrap();
        assert_eq!(
            b.leave(p, l.session_id).unwrap(),
            vec![
                Effect::LeaderChanged {
                    party: p,
                    leader: a.clone(),
                    members: vec![a.session_id, c.session_id]
                },
                Effect::Left {
                    party: p,
                    presence: l.clone(),
                    removed: false
                }
            ]
        );
        assert!(b.leave(p, l.session_id).is_err(), "not a member any more");
        let removed = b.remove(p, a.session_id, target(&c)).unwrap();
        assert!(matches!(&removed[..], [Effect::Left { removed: true, .. }]));
        assert_eq!(
            b.leave(p, a.session_id).unwrap(),
            vec![Effect::Ended {
                party: p,
                members: vec![a.session_id],
                closed: false
            }]
        );
        assert_eq!(b.count(), 0);
        assert!(b.by_session.is_empty(), "no links left behind");
    }

    #[test]
    fn close_and_disconnect_leave_nothing_behind() {
        let mut b = book();
        let (l, a, w) = (member("l"), member("a"), member("w"));
        let p = new_party(&mut b, &l, true, 4);
        b.join(p, a.clone()).unwrap();
        let q = new_party(&mut b, &a, false, 4);
        b.join(q, w.clone()).unwrap();
        // `a` disconnects: it leaves `p`, its party `q` ends (w's request with it).
        let effects = b.disconnect(a.session_id);
        assert_eq!(effects.len(), 2, "{effects:?}");
        assert!(b.get(q).is_none());
        assert!(b.parties_of(w.session_id).is_empty());
        assert!(!b.by_session.contains_key(&w.session_id));
        assert_eq!(
            b.close(p, l.session_id).unwrap(),
            vec![Effect::Ended {
                party: p,
                members: vec![l.session_id],
                closed: true
            }]
        );
        assert!(b.by_session.is_empty() && b.order.is_empty());
    }

    #[test]
    fn single_party_leaves_other_parties_but_keeps_requests() {
        let mut b = PartyBook::new(PartySettings::default(), true);
        let (l1, l2, l3, a) = (member("l1"), member("l2"), member("l3"), member("a"));
        let p1 = new_party(&mut b, &l1, true, 4);
        let p2 = new_party(&mut b, &l2, true, 4);
        let closed = new_party(&mut b, &l3, false, 4);
        b.join(closed, a.clone()).unwrap();
        b.join(p1, a.clone()).unwrap();
        let effects = b.join(p2, a.clone()).unwrap();
        assert!(
            effects.contains(&Effect::Left {
                party: p1,
                presence: a.clone(),
                removed: false
            }),
            "{effects:?}"
        );
        assert_eq!(b.parties_of(a.session_id), vec![p2]);
        assert_eq!(b.get(closed).unwrap().requests.len(), 1, "request kept");
    }

    #[test]
    fn listing_pages_and_filters() {
        let mut b = book();
        let l = member("l");
        let ids: Vec<Uuid> = (0..3).map(|i| new_party(&mut b, &l, i != 1, 4)).collect();
        let all = ListFilter::default();
        let (page, more) = b.list(2, &all, None);
        assert_eq!(page.iter().map(|p| p.id).collect::<Vec<_>>(), ids[..2]);
        assert!(more);
        assert!(page[0].created_us < page[1].created_us, "{page:?}");
        let after = (page[1].created_us, page[1].id);
        let (rest, more) = b.list(2, &all, Some(after));
        assert_eq!(rest.iter().map(|p| p.id).collect::<Vec<_>>(), ids[2..]);
        assert!(!more);
        let open = ListFilter {
            open: Some(true),
            ..ListFilter::default()
        };
        let (open, _) = b.list(10, &open, None);
        assert_eq!(open.len(), 2);
        assert_eq!(open[0].label, "{}");
    }
}
