//! Parties: small groups of sessions that stay together across matches, with
//! a leader, open or closed membership, join requests, and data relayed
//! between members. Served requests: `party_create`, `party_join`,
//! `party_accept`, `party_remove`, `party_promote`, `party_leave`,
//! `party_close`, `party_join_request_list`, `party_data_send` and
//! `party_update`; pushes: `party`, `party_presence_event`, `party_leader`,
//! `party_join_request`, `party_close`, `party_data` and `party_update`.
//!
//! The [`PartyRegistry`] owns membership (join order, leader, pending
//! requests). Each member is also tracked on the party's stream (mode 7,
//! subject the party uuid, label the node), so presence events reach members
//! the way they do for every other stream. Party ids are `<uuid>.<node>`.
//!
//! Every change to a party happens under the registry's one lock, including
//! its tracker updates and the pushes it causes, so members see the changes
//! of one party in the order they happened. Pushes only queue frames, so the
//! lock is never held across a wait.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use ludus_core::chat::is_json_object;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{
    Envelope, Party as PartyWire, PartyAccept, PartyClose, PartyCreate, PartyData, PartyDataSend,
    PartyJoin, PartyJoinRequest, PartyJoinRequestList, PartyLeader, PartyLeave, PartyPromote,
    PartyRemove, PartyUpdate, UserPresence,
};
use uuid::Uuid;

use crate::Realtime;
use crate::error::RtError;
use crate::registry::SessionHandle;
use crate::stream::{Stream, StreamMode};
use crate::tracker::{Presence, PresenceMeta};

/// Longest party label, in bytes (Nakama's limit).
pub(crate) const MAX_LABEL_LEN: usize = 2048;

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

/// A live party as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartyInfo {
    pub party_id: String,
    pub open: bool,
    pub hidden: bool,
    pub max_size: usize,
    /// Members now.
    pub size: usize,
    /// The label, `{}` when none was set (as Nakama lists it).
    pub label: String,
}

struct Party {
    /// Creation order, for stable listing pages.
    seq: u64,
    open: bool,
    hidden: bool,
    max_size: usize,
    label: String,
    /// Session id of the leader, always a member.
    leader: Uuid,
    /// Members in join order: the oldest takes over when the leader leaves.
    members: Vec<Presence>,
    /// Sessions waiting for the leader's answer, oldest first.
    requests: Vec<Presence>,
}

impl Party {
    fn member_index(&self, session: Uuid) -> Option<usize> {
        self.members.iter().position(|p| p.session_id == session)
    }

    fn leader_presence(&self) -> Option<&Presence> {
        self.members.iter().find(|p| p.session_id == self.leader)
    }

    fn member_sessions(&self) -> Vec<Uuid> {
        self.members.iter().map(|p| p.session_id).collect()
    }
}

#[derive(Default)]
struct Inner {
    parties: HashMap<Uuid, Party>,
    /// Creation order → party, for listing.
    order: BTreeMap<u64, Uuid>,
    /// Session → parties it is in or has asked to join.
    by_session: HashMap<Uuid, Vec<Uuid>>,
    next_seq: u64,
}

impl Inner {
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
        self.order.remove(&party.seq);
        for p in party.members.iter().chain(&party.requests) {
            self.unlink(p.session_id, id);
        }
        Some(party)
    }
}

/// The parties hosted on this node.
#[derive(Default)]
pub struct PartyRegistry {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for PartyRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartyRegistry")
            .field("parties", &self.count())
            .finish()
    }
}

impl PartyRegistry {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Live parties on this node.
    pub fn count(&self) -> usize {
        self.lock().parties.len()
    }

    /// The members of a party in join order (the matchmaker's party
    /// tickets carry these); `None` when there is no such party.
    pub fn members(&self, party: Uuid) -> Option<Vec<Presence>> {
        self.lock().parties.get(&party).map(|p| p.members.clone())
    }

    /// The leader's presence; `None` when there is no such party.
    pub fn leader(&self, party: Uuid) -> Option<Presence> {
        self.lock()
            .parties
            .get(&party)
            .and_then(|p| p.leader_presence().cloned())
    }

    /// Whether `session` leads `party`.
    pub fn is_leader(&self, party: Uuid, session: Uuid) -> bool {
        self.lock()
            .parties
            .get(&party)
            .is_some_and(|p| p.leader == session)
    }

    /// Parties `session` is a member of (pending requests excluded).
    pub fn parties_of(&self, session: Uuid) -> Vec<Uuid> {
        let inner = self.lock();
        inner
            .by_session
            .get(&session)
            .map(|ids| {
                ids.iter()
                    .filter(|id| {
                        inner
                            .parties
                            .get(id)
                            .is_some_and(|p| p.member_index(session).is_some())
                    })
                    .copied()
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn bad_party_id() -> RtError {
    RtError::bad_input("invalid party id, use the party_id that party_create returned")
}

fn not_found() -> RtError {
    RtError::bad_input("party not found: it has ended, or the id is wrong")
}

fn not_leader(action: &str) -> RtError {
    RtError::bad_input(format!("only the party leader can {action}"))
}

fn party_full(max: usize) -> RtError {
    RtError::bad_input(format!("party full: it has its maximum of {max} members"))
}

fn check_label(label: &str) -> Result<(), RtError> {
    if label.len() > MAX_LABEL_LEN {
        return Err(RtError::bad_input(format!(
            "party label too long, at most {MAX_LABEL_LEN} bytes"
        )));
    }
    if !label.is_empty() && !is_json_object(label) {
        return Err(RtError::bad_input(
            "party label must be a JSON object, or empty",
        ));
    }
    Ok(())
}

/// The session and user a request names; the username is not compared.
fn target_of(presence: Option<&UserPresence>) -> Result<(Uuid, Uuid), RtError> {
    let bad = || {
        RtError::bad_input(
            "invalid presence: give the session_id and user_id of a party member or join request",
        )
    };
    let p = presence.ok_or_else(bad)?;
    let session = Uuid::parse_str(&p.session_id).map_err(|_| bad())?;
    let user = Uuid::parse_str(&p.user_id).map_err(|_| bad())?;
    Ok((session, user))
}

fn push(message: Message) -> Envelope {
    Envelope {
        cid: String::new(),
        message: Some(message),
    }
}

fn wire(p: &Presence) -> UserPresence {
    p.to_wire(false)
}

impl Realtime {
    /// The wire id of a party hosted here.
    pub fn party_id(&self, party: Uuid) -> String {
        format!("{party}.{}", self.config.node)
    }

    /// Reads a wire party id. A party of another node is unknown here
    /// (parties do not span nodes yet).
    pub fn parse_party_id(&self, id: &str) -> Result<Uuid, RtError> {
        let (uuid, node) = id.split_once('.').ok_or_else(bad_party_id)?;
        let party = Uuid::parse_str(uuid).map_err(|_| bad_party_id())?;
        if node != self.config.node {
            return Err(not_found());
        }
        Ok(party)
    }

    fn party_stream(&self, party: Uuid) -> Stream {
        Stream::new(StreamMode::Party, party, Uuid::nil(), &self.config.node)
    }

    fn party_wire(&self, id: Uuid, party: &Party, me: &Presence) -> PartyWire {
        PartyWire {
            party_id: self.party_id(id),
            open: party.open,
            hidden: party.hidden,
            max_size: party.max_size as i32,
            self_: Some(wire(me)),
            leader: party.leader_presence().map(wire),
            presences: party.members.iter().map(wire).collect(),
            label: party.label.clone(),
        }
    }

    /// Called after every change of a party's members (joins, leaves,
    /// removals, the end of the party): the party's matchmaker tickets no
    /// longer describe its members and are dropped (as Nakama does).
    fn party_members_changed(&self, id: Uuid) {
        self.party_matchmaker_remove_all(&self.party_id(id));
    }

    /// Makes `presence` a member: sent the party, then tracked on the
    /// stream, where everyone (the newcomer too) gets a presence event, in
    /// Nakama's order.
    fn party_admit(&self, id: Uuid, party: &mut Party, presence: Presence) {
        party.members.push(presence.clone());
        let message = Message::Party(self.party_wire(id, party, &presence));
        self.router
            .send_to_sessions(&[presence.session_id], push(message));
        let stream = self.party_stream(id);
        if self.tracker.track(&stream, presence.clone()) == crate::TrackOutcome::Joined {
            self.emit_presence_event(&stream, std::slice::from_ref(&presence), &[]);
        }
        self.party_members_changed(id);
    }

    /// `party_create`: a new party led by this session.
    pub fn party_create(
        &self,
        session: &SessionHandle,
        req: PartyCreate,
    ) -> Result<PartyWire, RtError> {
        let max = self.config.party.max_size;
        let max_size = match usize::try_from(req.max_size) {
            Ok(0) => max,
            Ok(n) if n <= max => n,
            _ => {
                return Err(RtError::bad_input(format!(
                    "invalid party max size, must be 1-{max} (0 for {max})"
                )));
            }
        };
        check_label(&req.label)?;
        let me = party_presence(session);
        let mut inner = self.parties.lock();
        self.check_session_room(&inner, session.id())?;
        let id = Uuid::new_v4();
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let party = Party {
            seq,
            open: req.open,
            hidden: req.hidden,
            max_size,
            label: req.label,
            leader: me.session_id,
            members: vec![me.clone()],
            requests: Vec::new(),
        };
        let reply = self.party_wire(id, &party, &me);
        inner.parties.insert(id, party);
        inner.order.insert(seq, id);
        inner.link(me.session_id, id);
        let stream = self.party_stream(id);
        if self.tracker.track(&stream, me.clone()) == crate::TrackOutcome::Joined {
            self.emit_presence_event(&stream, std::slice::from_ref(&me), &[]);
        }
        self.leave_other_parties(&mut inner, me.session_id, id);
        tracing::debug!(party_id = %reply.party_id, session_id = %session.id(), "party created");
        Ok(reply)
    }

    fn check_session_room(&self, inner: &Inner, session: Uuid) -> Result<(), RtError> {
        let most = self.config.party.max_per_session;
        if inner.linked(session) >= most {
            return Err(RtError::bad_input(format!(
                "too many parties for one session, at most {most} joined or requested: leave one first"
            )));
        }
        Ok(())
    }

    /// `party_join`: joins an open party at once, or asks the leader of a
    /// closed one (the leader gets a `party_join_request`; the joiner gets
    /// its `party` once accepted).
    pub fn party_join(&self, session: &SessionHandle, req: PartyJoin) -> Result<(), RtError> {
        let id = self.parse_party_id(&req.party_id)?;
        let me = party_presence(session);
        let mut guard = self.parties.lock();
        let inner = &mut *guard;
        let room = self.check_session_room(inner, me.session_id);
        let party = inner.parties.get_mut(&id).ok_or_else(not_found)?;
        if party.member_index(me.session_id).is_some() {
            return Err(RtError::bad_input("already a member of this party"));
        }
        if party.requests.iter().any(|p| p.session_id == me.session_id) {
            return Err(RtError::bad_input(
                "join request already sent, wait for the party leader to answer",
            ));
        }
        room?;
        if party.members.len() >= party.max_size {
            return Err(party_full(party.max_size));
        }
        let open = party.open;
        if open {
            self.party_admit(id, party, me.clone());
        } else {
            if party.requests.len() >= party.max_size {
                return Err(RtError::bad_input(
                    "too many pending join requests for this party, try again later",
                ));
            }
            party.requests.push(me.clone());
            let request = PartyJoinRequest {
                party_id: self.party_id(id),
                presences: vec![wire(&me)],
            };
            self.router
                .send_to_sessions(&[party.leader], push(Message::PartyJoinRequest(request)));
        }
        inner.link(me.session_id, id);
        if open {
            self.leave_other_parties(inner, me.session_id, id);
        }
        Ok(())
    }

    /// With `session.single_party`, `session` (now in `kept`) leaves every
    /// other party it is a member of.
    fn leave_other_parties(&self, inner: &mut Inner, session: Uuid, kept: Uuid) {
        if !self.config.single_party {
            return;
        }
        let others: Vec<Uuid> = inner
            .by_session
            .get(&session)
            .into_iter()
            .flatten()
            .copied()
            .filter(|id| *id != kept)
            .collect();
        for id in others {
            self.party_depart(inner, id, session);
        }
    }

    /// Finds a party this session leads.
    fn led_party<'a>(
        &self,
        inner: &'a mut Inner,
        party_id: &str,
        session: Uuid,
        action: &str,
    ) -> Result<(Uuid, &'a mut Party), RtError> {
        let id = self.parse_party_id(party_id)?;
        let party = inner.parties.get_mut(&id).ok_or_else(not_found)?;
        if party.leader != session {
            return Err(not_leader(action));
        }
        Ok((id, party))
    }

    /// `party_accept`: the leader lets a pending request in.
    pub fn party_accept(&self, session: &SessionHandle, req: PartyAccept) -> Result<(), RtError> {
        let (target, user) = target_of(req.presence.as_ref())?;
        let mut inner = self.parties.lock();
        let (id, party) = self.led_party(
            &mut inner,
            &req.party_id,
            session.id(),
            "accept join requests",
        )?;
        let Some(at) = party
            .requests
            .iter()
            .position(|p| p.session_id == target && p.user_id == user)
        else {
            return Err(RtError::bad_input(
                "no join request from that presence is pending, list them with party_join_request_list",
            ));
        };
        if party.members.len() >= party.max_size {
            return Err(party_full(party.max_size));
        }
        let joiner = party.requests.remove(at);
        self.party_admit(id, party, joiner);
        self.leave_other_parties(&mut inner, target, id);
        Ok(())
    }

    /// `party_remove`: the leader removes a member (who gets `party_close`)
    /// or turns down a pending request.
    pub fn party_remove(&self, session: &SessionHandle, req: PartyRemove) -> Result<(), RtError> {
        let (target, user) = target_of(req.presence.as_ref())?;
        let mut guard = self.parties.lock();
        let inner = &mut *guard;
        let (id, party) = self.led_party(
            inner,
            &req.party_id,
            session.id(),
            "remove members or join requests",
        )?;
        if target == party.leader {
            return Err(RtError::bad_input(
                "the party leader cannot remove itself, use party_leave or party_close",
            ));
        }
        if let Some(at) = party
            .members
            .iter()
            .position(|p| p.session_id == target && p.user_id == user)
        {
            party.members.remove(at);
            self.untrack(target, &self.party_stream(id));
            self.party_members_changed(id);
            let close = PartyClose {
                party_id: self.party_id(id),
            };
            self.router
                .send_to_sessions(&[target], push(Message::PartyClose(close)));
        } else if let Some(at) = party
            .requests
            .iter()
            .position(|p| p.session_id == target && p.user_id == user)
        {
            party.requests.remove(at);
        } else {
            return Err(RtError::bad_input(
                "that presence is neither a member of this party nor asking to join it",
            ));
        }
        inner.unlink(target, id);
        Ok(())
    }

    /// `party_promote`: the leader hands over; every member gets
    /// `party_leader`.
    pub fn party_promote(&self, session: &SessionHandle, req: PartyPromote) -> Result<(), RtError> {
        let (target, user) = target_of(req.presence.as_ref())?;
        let mut inner = self.parties.lock();
        let (id, party) = self.led_party(&mut inner, &req.party_id, session.id(), "promote")?;
        let Some(new_leader) = party
            .members
            .iter()
            .find(|p| p.session_id == target && p.user_id == user)
            .cloned()
        else {
            return Err(RtError::bad_input(
                "that presence is not a member of this party, only members can lead it",
            ));
        };
        party.leader = new_leader.session_id;
        let leader = PartyLeader {
            party_id: self.party_id(id),
            presence: Some(wire(&new_leader)),
        };
        self.router
            .send_to_sessions(&party.member_sessions(), push(Message::PartyLeader(leader)));
        Ok(())
    }

    /// `party_leave`: leaves a party, or withdraws a pending request.
    pub fn party_leave(&self, session: &SessionHandle, req: PartyLeave) -> Result<(), RtError> {
        let id = self.parse_party_id(&req.party_id)?;
        let mut inner = self.parties.lock();
        let party = inner.parties.get_mut(&id).ok_or_else(not_found)?;
        if let Some(at) = party
            .requests
            .iter()
            .position(|p| p.session_id == session.id())
        {
            party.requests.remove(at);
            inner.unlink(session.id(), id);
            return Ok(());
        }
        if party.member_index(session.id()).is_none() {
            return Err(RtError::bad_input("not a member of this party"));
        }
        self.party_depart(&mut inner, id, session.id());
        Ok(())
    }

    /// A member goes: a leaving leader hands over to the oldest member, the
    /// others see it leave; the last one out ends the party.
    fn party_depart(&self, inner: &mut Inner, id: Uuid, session: Uuid) {
        let Some(party) = inner.parties.get_mut(&id) else {
            return;
        };
        let Some(at) = party.member_index(session) else {
            return;
        };
        party.members.remove(at);
        inner.unlink(session, id);
        let stream = self.party_stream(id);
        let Some(party) = inner.parties.get_mut(&id) else {
            return;
        };
        if party.members.is_empty() {
            self.tracker.untrack(session, &stream);
            inner.remove_party(id);
            self.party_members_changed(id);
            tracing::debug!(party_id = %self.party_id(id), "last member left, party ended");
            return;
        }
        // Nakama's order: the new leader first, then the leave.
        if party.leader == session {
            let heir = party.members[0].clone();
            party.leader = heir.session_id;
            let leader = PartyLeader {
                party_id: self.party_id(id),
                presence: Some(wire(&heir)),
            };
            self.router
                .send_to_sessions(&party.member_sessions(), push(Message::PartyLeader(leader)));
        }
        self.untrack(session, &stream);
        self.party_members_changed(id);
    }

    /// `party_close`: the leader ends the party; every member gets
    /// `party_close`.
    pub fn party_close(&self, session: &SessionHandle, req: PartyClose) -> Result<(), RtError> {
        let mut inner = self.parties.lock();
        let (id, party) = self.led_party(&mut inner, &req.party_id, session.id(), "close it")?;
        let members = party.member_sessions();
        let close = PartyClose {
            party_id: self.party_id(id),
        };
        self.router
            .send_to_sessions(&members, push(Message::PartyClose(close)));
        let stream = self.party_stream(id);
        for member in members {
            // The party is over: nobody is left to hear leave events.
            self.tracker.untrack(member, &stream);
        }
        inner.remove_party(id);
        self.party_members_changed(id);
        tracing::debug!(party_id = %self.party_id(id), "party closed by its leader");
        Ok(())
    }

    /// `party_join_request_list`: the leader sees who is waiting.
    pub fn party_join_request_list(
        &self,
        session: &SessionHandle,
        req: PartyJoinRequestList,
    ) -> Result<PartyJoinRequest, RtError> {
        let mut inner = self.parties.lock();
        let (id, party) = self.led_party(
            &mut inner,
            &req.party_id,
            session.id(),
            "list join requests",
        )?;
        Ok(PartyJoinRequest {
            party_id: self.party_id(id),
            presences: party.requests.iter().map(wire).collect(),
        })
    }

    /// `party_data_send`: relays data to every other member. The payload is
    /// bounded by the socket's message size limit.
    pub fn party_data_send(
        &self,
        session: &SessionHandle,
        req: PartyDataSend,
    ) -> Result<(), RtError> {
        let id = self.parse_party_id(&req.party_id)?;
        let inner = self.parties.lock();
        let party = inner.parties.get(&id).ok_or_else(not_found)?;
        let Some(sender) = party.members.iter().find(|p| p.session_id == session.id()) else {
            return Err(RtError::bad_input(
                "not a member of this party, join it before sending data",
            ));
        };
        let others: Vec<Uuid> = party
            .members
            .iter()
            .map(|p| p.session_id)
            .filter(|s| *s != session.id())
            .collect();
        let data = PartyData {
            party_id: self.party_id(id),
            presence: Some(wire(sender)),
            op_code: req.op_code,
            data: req.data,
        };
        self.router
            .send_to_sessions(&others, push(Message::PartyData(data)));
        Ok(())
    }

    /// `party_update`: the leader changes the label, open and hidden flags;
    /// every member gets the `party_update`.
    pub fn party_update(&self, session: &SessionHandle, req: PartyUpdate) -> Result<(), RtError> {
        check_label(&req.label)?;
        let mut inner = self.parties.lock();
        let (id, party) = self.led_party(&mut inner, &req.party_id, session.id(), "update it")?;
        party.label = req.label.clone();
        party.open = req.open;
        party.hidden = req.hidden;
        let members = party.member_sessions();
        let update = PartyUpdate {
            party_id: self.party_id(id),
            ..req
        };
        self.router
            .send_to_sessions(&members, push(Message::PartyUpdate(update)));
        Ok(())
    }

    /// A disconnecting session leaves its parties and withdraws its
    /// requests.
    pub(crate) fn party_disconnect(&self, session: Uuid) {
        let mut inner = self.parties.lock();
        let Some(ids) = inner.by_session.get(&session).cloned() else {
            return;
        };
        for id in ids {
            let Some(party) = inner.parties.get_mut(&id) else {
                continue;
            };
            if let Some(at) = party.requests.iter().position(|p| p.session_id == session) {
                party.requests.remove(at);
                inner.unlink(session, id);
            } else {
                self.party_depart(&mut inner, id, session);
            }
        }
    }

    /// Live parties in creation order for `nk.party_list`: open or closed
    /// only when `open` says so, hidden ones only with `show_hidden`. The
    /// cursor is the one a previous page returned. `query` searches the
    /// JSON label with the match listing's language (`+label.mode:duo`).
    pub fn party_list(
        &self,
        limit: usize,
        open: Option<bool>,
        show_hidden: bool,
        query: &str,
        cursor: &str,
    ) -> Result<(Vec<PartyInfo>, Option<String>), RtError> {
        let query = match query.trim() {
            "" | "*" => None,
            q => Some(
                crate::query::Query::parse(q)
                    .map_err(|e| RtError::bad_input(format!("invalid party listing query: {e}")))?,
            ),
        };
        let after = match cursor {
            "" => None,
            c => Some(c.parse::<u64>().map_err(|_| {
                RtError::bad_input("invalid cursor, pass the one the previous page returned")
            })?),
        };
        if limit == 0 {
            return Ok((Vec::new(), None));
        }
        let inner = self.parties.lock();
        let start = after.map_or(0, |a| a.saturating_add(1));
        let mut page = Vec::with_capacity(limit.min(100));
        let mut next = None;
        let mut last = None;
        for (seq, id) in inner.order.range(start..) {
            let Some(p) = inner.parties.get(id) else {
                continue;
            };
            if open.is_some_and(|o| o != p.open) || (p.hidden && !show_hidden) {
                continue;
            }
            if let Some(q) = &query {
                let label = serde_json::from_str::<serde_json::Value>(&p.label)
                    .unwrap_or(serde_json::Value::Null);
                if q.score(&serde_json::json!({ "label": label })).is_none() {
                    continue;
                }
            }
            if page.len() == limit {
                next = last.map(|l: u64| l.to_string());
                break;
            }
            last = Some(*seq);
            page.push(PartyInfo {
                party_id: self.party_id(*id),
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
        Ok((page, next))
    }

    /// Sends a party presence event to the members on the party's stream.
    pub(crate) fn emit_party_event(
        &self,
        stream: &Stream,
        joins: &[Presence],
        leaves: &[Presence],
    ) {
        let event = ludus_proto::realtime::PartyPresenceEvent {
            party_id: format!("{}.{}", stream.subject, stream.label),
            joins: joins.iter().map(wire).collect(),
            leaves: leaves.iter().map(wire).collect(),
        };
        self.router
            .send_to_stream(stream, push(Message::PartyPresenceEvent(event)), None);
    }
}

/// A session as a party member.
fn party_presence(session: &SessionHandle) -> Presence {
    Presence {
        session_id: session.id(),
        user_id: session.user_id(),
        meta: PresenceMeta {
            format: session.format(),
            username: session.username_shared(),
            hidden: false,
            persistence: false,
            status: std::sync::Arc::from(""),
        },
    }
}

/// Party matchmaking: the leader puts the whole party in the matchmaker as
/// one ticket (Nakama's `party_matchmaker_add|remove`); the ticket goes when
/// the party's members change.
impl Realtime {
    pub(crate) fn party_matchmaker_add(
        &self,
        session: &SessionHandle,
        req: ludus_proto::realtime::PartyMatchmakerAdd,
    ) -> Result<ludus_proto::realtime::PartyMatchmakerTicket, RtError> {
        let id = self.parse_party_id(&req.party_id)?;
        let members = self
            .parties
            .members(id)
            .ok_or_else(|| RtError::bad_input("party not found"))?;
        if !self.parties.is_leader(id, session.id()) {
            return Err(RtError::bad_input(
                "only the party leader may add the party to the matchmaker",
            ));
        }
        let party_id = self.party_id(id);
        let members = members
            .into_iter()
            .map(|p| crate::matchmaker::MatchmakerPresence {
                user_id: p.user_id,
                session_id: p.session_id,
                username: p.meta.username.to_string(),
                node: self.config.node.clone(),
            })
            .collect();
        let ticket = self.party_matchmaker_add_ticket(
            &party_id,
            members,
            crate::matchmaker::TicketRequest {
                query: req.query,
                min_count: req.min_count,
                max_count: req.max_count,
                count_multiple: req.count_multiple.map(|c| c.value),
                string_properties: req.string_properties.into_iter().collect(),
                numeric_properties: req.numeric_properties.into_iter().collect(),
            },
        )?;
        Ok(ludus_proto::realtime::PartyMatchmakerTicket { party_id, ticket })
    }

    pub(crate) fn party_matchmaker_remove(
        &self,
        session: &SessionHandle,
        req: ludus_proto::realtime::PartyMatchmakerRemove,
    ) -> Result<(), RtError> {
        let id = self.parse_party_id(&req.party_id)?;
        if !self.parties.is_leader(id, session.id()) {
            return Err(RtError::bad_input(
                "only the party leader may remove the party's matchmaker tickets",
            ));
        }
        self.party_matchmaker_remove_ticket(&self.party_id(id), &req.ticket)
    }
}

#[cfg(test)]
mod tests {
    use ludus_proto::realtime::envelope::Message;
    use ludus_proto::realtime::*;

    use super::*;
    use crate::error::RtCode;
    use crate::{Format, Realtime, RealtimeConfig, codec};

    /// A realtime layer on a fresh SQLite store (parties never touch it).
    struct Harness {
        rt: Realtime,
        _dir: tempfile::TempDir,
    }

    async fn realtime(party: PartySettings) -> Harness {
        realtime_with(party, false).await
    }

    async fn realtime_with(party: PartySettings, single_party: bool) -> Harness {
        let (store, dir) = crate::test_support::store().await;
        let rt = Realtime::new(
            RealtimeConfig {
                outgoing_queue_size: 64,
                node: "n1".into(),
                party,
                single_party,
                ..Default::default()
            },
            store,
        );
        Harness { rt, _dir: dir }
    }

    fn connect(rt: &Realtime, name: &str) -> SessionHandle {
        crate::test_support::session(rt, Uuid::new_v4(), name, false)
    }

    use crate::test_support::sent_messages as drain;

    /// Sends a request and returns the reply's message (`None` for a bare
    /// acknowledgement); pushes stay queued.
    async fn ask(rt: &Realtime, s: &SessionHandle, m: Message) -> Option<Message> {
        let before = s.outbound().take_all();
        let flow = rt
            .handle(
                &crate::NoModules,
                s,
                Envelope {
                    cid: "c".into(),
                    message: Some(m),
                },
            )
            .await;
        assert_eq!(
            flow,
            crate::Flow::Continue,
            "party requests keep the socket"
        );
        let mut reply = None;
        let mut keep = before;
        for f in s.outbound().take_all() {
            let e = codec::decode(Format::Json, &f).unwrap();
            if e.cid == "c" {
                reply = Some(e.message);
            } else {
                keep.push(f);
            }
        }
        for f in keep {
            s.send_bytes(f).unwrap();
        }
        reply.expect("no reply with the request's cid")
    }

    async fn error(rt: &Realtime, s: &SessionHandle, m: Message) -> String {
        match ask(rt, s, m).await {
            Some(Message::Error(e)) => {
                assert_eq!(e.code, RtCode::BadInput as i32);
                e.message
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }

    fn presence(s: &SessionHandle) -> Option<UserPresence> {
        Some(UserPresence {
            user_id: s.user_id().to_string(),
            session_id: s.id().to_string(),
            username: s.username().into(),
            ..Default::default()
        })
    }

    async fn create(rt: &Realtime, s: &SessionHandle, open: bool, max_size: i32) -> PartyWire {
        let m = Message::PartyCreate(PartyCreate {
            open,
            max_size,
            label: String::new(),
            hidden: false,
        });
        match ask(rt, s, m).await {
            Some(Message::Party(p)) => p,
            other => panic!("expected a party, got {other:?}"),
        }
    }

    fn join(id: &str) -> Message {
        Message::PartyJoin(PartyJoin {
            party_id: id.into(),
        })
    }

    #[tokio::test]
    async fn open_party_join_announces_and_sends_the_party() {
        let h = realtime(PartySettings::default()).await;
        let rt = &h.rt;
        let (ann, ben) = (connect(rt, "ann"), connect(rt, "ben"));
        let p = create(rt, &ann, true, 4).await;
        assert!(p.party_id.ends_with(".n1"));
        assert_eq!(p.leader, presence(&ann));
        assert_eq!(p.self_, presence(&ann));
        assert_eq!(p.presences.len(), 1);
        assert_eq!(p.max_size, 4);
        drain(&ann);

        assert_eq!(ask(rt, &ben, join(&p.party_id)).await, None);
        let got = drain(&ben);
        let Some(Message::Party(party)) = got.iter().find(|m| matches!(m, Message::Party(_)))
        else {
            panic!("{got:?}")
        };
        assert_eq!(party.self_, presence(&ben));
        assert_eq!(party.leader, presence(&ann));
        assert_eq!(party.presences.len(), 2);
        let Message::PartyPresenceEvent(ev) = &drain(&ann)[0] else {
            panic!()
        };
        assert_eq!(ev.party_id, p.party_id);
        assert_eq!(ev.joins[0].session_id, ben.id().to_string());

        let id = rt.parse_party_id(&p.party_id).unwrap();
        let members = rt.parties.members(id).unwrap();
        assert_eq!(
            members.iter().map(|m| m.session_id).collect::<Vec<_>>(),
            vec![ann.id(), ben.id()]
        );
        assert!(rt.parties.is_leader(id, ann.id()));
        assert!(!rt.parties.is_leader(id, ben.id()));
        assert_eq!(rt.tracker.count(&rt.party_stream(id)), 2);

        assert!(
            error(rt, &ben, join(&p.party_id))
                .await
                .contains("already a member")
        );
    }

    #[tokio::test]
    async fn closed_party_requests_wait_for_the_leader() {
        let h = realtime(PartySettings::default()).await;
        let rt = &h.rt;
        let (ann, ben, cat) = (connect(rt, "ann"), connect(rt, "ben"), connect(rt, "cat"));
        let p = create(rt, &ann, false, 4).await;
        drain(&ann);
        assert_eq!(ask(rt, &ben, join(&p.party_id)).await, None);
        assert_eq!(ask(rt, &cat, join(&p.party_id)).await, None);
        assert!(drain(&ben).is_empty(), "the joiner waits");
        let got = drain(&ann);
        assert_eq!(got.len(), 2);
        let Message::PartyJoinRequest(r) = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!(r.presences, vec![presence(&ben).unwrap()]);
        assert!(
            error(rt, &ben, join(&p.party_id))
                .await
                .contains("already sent")
        );

        let list = Message::PartyJoinRequestList(PartyJoinRequestList {
            party_id: p.party_id.clone(),
        });
        assert!(
            error(rt, &ben, list.clone())
                .await
                .contains("only the party leader")
        );
        let Some(Message::PartyJoinRequest(r)) = ask(rt, &ann, list.clone()).await else {
            panic!()
        };
        assert_eq!(r.presences.len(), 2);

        let accept = |s: &SessionHandle| {
            Message::PartyAccept(PartyAccept {
                party_id: p.party_id.clone(),
                presence: presence(s),
            })
        };
        assert!(
            error(rt, &ben, accept(&cat))
                .await
                .contains("only the party leader")
        );
        assert_eq!(ask(rt, &ann, accept(&ben)).await, None);
        assert!(matches!(&drain(&ben)[..], [Message::Party(p), ..] if p.presences.len() == 2));
        assert!(
            error(rt, &ann, accept(&ben))
                .await
                .contains("no join request")
        );

        // Turning down a request: it is gone from the list.
        let reject = Message::PartyRemove(PartyRemove {
            party_id: p.party_id.clone(),
            presence: presence(&cat),
        });
        assert_eq!(ask(rt, &ann, reject).await, None);
        let Some(Message::PartyJoinRequest(r)) = ask(rt, &ann, list).await else {
            panic!()
        };
        assert!(r.presences.is_empty());
    }

    #[tokio::test]
    async fn remove_promote_leave_and_close() {
        let h = realtime(PartySettings::default()).await;
        let rt = &h.rt;
        let (ann, ben, cat) = (connect(rt, "ann"), connect(rt, "ben"), connect(rt, "cat"));
        let p = create(rt, &ann, true, 0).await;
        assert_eq!(p.max_size, 256, "0 asks for the server's maximum");
        let id = rt.parse_party_id(&p.party_id).unwrap();
        for s in [&ben, &cat] {
            ask(rt, s, join(&p.party_id)).await;
        }
        for s in [&ann, &ben, &cat] {
            drain(s);
        }

        // The leader cannot remove itself; removing a member closes it out.
        let remove = |s: &SessionHandle| {
            Message::PartyRemove(PartyRemove {
                party_id: p.party_id.clone(),
                presence: presence(s),
            })
        };
        assert!(
            error(rt, &ann, remove(&ann))
                .await
                .contains("cannot remove itself")
        );
        assert!(
            error(rt, &ben, remove(&cat))
                .await
                .contains("only the party leader")
        );
        assert_eq!(ask(rt, &ann, remove(&cat)).await, None);
        assert!(matches!(&drain(&cat)[..], [Message::PartyClose(c)] if c.party_id == p.party_id));
        let Message::PartyPresenceEvent(ev) = &drain(&ben)[0] else {
            panic!()
        };
        assert_eq!(ev.leaves[0].session_id, cat.id().to_string());
        drain(&ann);
        assert!(
            error(rt, &ann, remove(&cat))
                .await
                .contains("neither a member")
        );

        // Promote: everyone hears of the new leader.
        let promote = Message::PartyPromote(PartyPromote {
            party_id: p.party_id.clone(),
            presence: presence(&ben),
        });
        assert_eq!(ask(rt, &ann, promote.clone()).await, None);
        for s in [&ann, &ben] {
            assert!(
                matches!(&drain(s)[..], [Message::PartyLeader(l)] if l.presence == presence(&ben))
            );
        }
        assert!(rt.parties.is_leader(id, ben.id()));
        assert!(
            error(rt, &ann, promote)
                .await
                .contains("only the party leader")
        );

        // The leader leaves: the oldest member leads.
        ask(rt, &cat, join(&p.party_id)).await;
        for s in [&ann, &ben, &cat] {
            drain(s);
        }
        let leave = Message::PartyLeave(PartyLeave {
            party_id: p.party_id.clone(),
        });
        assert_eq!(ask(rt, &ben, leave.clone()).await, None);
        for s in [&ann, &cat] {
            let got = drain(s);
            assert!(
                got.iter()
                    .any(|m| matches!(m, Message::PartyLeader(l) if l.presence == presence(&ann)))
            );
            assert!(
                got.iter()
                    .any(|m| matches!(m, Message::PartyPresenceEvent(e) if e.leaves.len() == 1))
            );
        }
        assert!(drain(&ben).is_empty());
        assert!(error(rt, &ben, leave).await.contains("not a member"));

        // Close: every member hears it and the party is gone.
        let close = Message::PartyClose(PartyClose {
            party_id: p.party_id.clone(),
        });
        assert!(
            error(rt, &cat, close.clone())
                .await
                .contains("only the party leader")
        );
        assert_eq!(ask(rt, &ann, close.clone()).await, None);
        for s in [&ann, &cat] {
            assert!(matches!(&drain(s)[..], [Message::PartyClose(_)]));
        }
        assert_eq!(rt.parties.count(), 0);
        assert_eq!(rt.tracker.count(&rt.party_stream(id)), 0);
        assert!(error(rt, &ann, close).await.contains("party not found"));
        assert!(rt.parties.parties_of(cat.id()).is_empty());
    }

    #[tokio::test]
    async fn data_reaches_only_the_other_members() {
        let h = realtime(PartySettings::default()).await;
        let rt = &h.rt;
        let (ann, ben, cat, out) = (
            connect(rt, "ann"),
            connect(rt, "ben"),
            connect(rt, "cat"),
            connect(rt, "out"),
        );
        let p = create(rt, &ann, true, 3).await;
        for s in [&ben, &cat] {
            ask(rt, s, join(&p.party_id)).await;
        }
        for s in [&ann, &ben, &cat] {
            drain(s);
        }
        let send = Message::PartyDataSend(PartyDataSend {
            party_id: p.party_id.clone(),
            op_code: 7,
            data: bytes::Bytes::from_static(b"hi"),
        });
        assert_eq!(ask(rt, &ben, send.clone()).await, None);
        assert!(drain(&ben).is_empty(), "the sender gets nothing back");
        for s in [&ann, &cat] {
            let got = drain(s);
            let [Message::PartyData(d)] = &got[..] else {
                panic!("{got:?}")
            };
            assert_eq!((d.op_code, &d.data[..]), (7, &b"hi"[..]));
            assert_eq!(d.presence, presence(&ben));
        }
        assert!(
            error(rt, &out, send)
                .await
                .contains("join it before sending data")
        );
        // Full: a fourth member is refused.
        assert!(
            error(rt, &out, join(&p.party_id))
                .await
                .contains("party full")
        );
    }

    #[tokio::test]
    async fn disconnect_leaves_parties_and_withdraws_requests() {
        let h = realtime(PartySettings::default()).await;
        let rt = &h.rt;
        let (ann, ben, cat) = (connect(rt, "ann"), connect(rt, "ben"), connect(rt, "cat"));
        let open = create(rt, &ann, true, 4).await;
        let closed = create(rt, &ann, false, 4).await;
        ask(rt, &ben, join(&open.party_id)).await;
        ask(rt, &cat, join(&closed.party_id)).await;
        drain(&ann);
        drain(&ben);
        rt.disconnect(&cat);
        let list = Message::PartyJoinRequestList(PartyJoinRequestList {
            party_id: closed.party_id.clone(),
        });
        let Some(Message::PartyJoinRequest(r)) = ask(rt, &ann, list).await else {
            panic!()
        };
        assert!(r.presences.is_empty());

        rt.disconnect(&ann);
        let got = drain(&ben);
        assert!(got.iter().any(|m| matches!(m, Message::PartyPresenceEvent(e) if e.leaves[0].session_id == ann.id().to_string())));
        assert!(
            got.iter()
                .any(|m| matches!(m, Message::PartyLeader(l) if l.presence == presence(&ben)))
        );
        assert_eq!(
            rt.parties.count(),
            1,
            "the closed party had only ann and ended"
        );
        rt.disconnect(&ben);
        assert_eq!(rt.parties.count(), 0);
    }

    #[tokio::test]
    async fn bad_requests_get_clear_errors() {
        let h = realtime(PartySettings {
            max_size: 8,
            max_per_session: 2,
        })
        .await;
        let rt = &h.rt;
        let (ann, ben) = (connect(rt, "ann"), connect(rt, "ben"));
        let mk = |max_size, label: &str| {
            Message::PartyCreate(PartyCreate {
                open: true,
                max_size,
                label: label.into(),
                hidden: false,
            })
        };
        assert!(error(rt, &ann, mk(9, "")).await.contains("must be 1-8"));
        assert!(error(rt, &ann, mk(-1, "")).await.contains("must be 1-8"));
        assert!(error(rt, &ann, mk(2, "[1]")).await.contains("JSON object"));
        let long = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_LABEL_LEN));
        assert!(error(rt, &ann, mk(2, &long)).await.contains("too long"));
        assert!(
            error(rt, &ann, join("nope"))
                .await
                .contains("invalid party id")
        );
        let other_node = format!("{}.n2", Uuid::new_v4());
        assert!(
            error(rt, &ann, join(&other_node))
                .await
                .contains("party not found")
        );
        let unknown = format!("{}.n1", Uuid::new_v4());
        assert!(
            error(rt, &ann, join(&unknown))
                .await
                .contains("party not found")
        );
        let accept = Message::PartyAccept(PartyAccept {
            party_id: unknown,
            presence: None,
        });
        assert!(error(rt, &ann, accept).await.contains("invalid presence"));

        let a = create(rt, &ann, false, 1).await;
        assert!(
            error(rt, &ben, join(&a.party_id))
                .await
                .contains("party full")
        );
        create(rt, &ann, true, 2).await;
        assert!(
            error(rt, &ann, mk(2, ""))
                .await
                .contains("too many parties")
        );
    }

    #[tokio::test]
    async fn pushes_carry_the_canonical_party_id() {
        let h = realtime(PartySettings::default()).await;
        let rt = &h.rt;
        let (ann, ben) = (connect(rt, "ann"), connect(rt, "ben"));
        let p = create(rt, &ann, false, 2).await;
        drain(&ann);
        // Uuid parsing accepts upper case; the ids sent back never echo it.
        let (uuid, node) = p.party_id.split_once('.').unwrap();
        let shouted = format!("{}.{node}", uuid.to_uppercase());
        assert_eq!(ask(rt, &ben, join(&shouted)).await, None);
        let got = drain(&ann);
        assert!(matches!(&got[..], [Message::PartyJoinRequest(r)] if r.party_id == p.party_id));
    }

    #[tokio::test]
    async fn single_party_leaves_the_other_parties_but_keeps_requests() {
        let h = realtime_with(PartySettings::default(), true).await;
        let rt = &h.rt;
        let (ann, ben, cat) = (connect(rt, "ann"), connect(rt, "ben"), connect(rt, "cat"));
        let a = create(rt, &ann, true, 4).await;
        let closed = create(rt, &cat, false, 4).await;
        ask(rt, &ben, join(&a.party_id)).await;
        ask(rt, &ben, join(&closed.party_id)).await;
        let b = create(rt, &ben, true, 4).await;
        let id = |p: &PartyWire| rt.parse_party_id(&p.party_id).unwrap();
        assert_eq!(
            rt.parties.members(id(&a)).unwrap().len(),
            1,
            "ben left ann's party"
        );
        assert_eq!(rt.parties.parties_of(ben.id()), vec![id(&b)]);
        // The request is still pending: accepting it moves Ben once more.
        let accept = Message::PartyAccept(PartyAccept {
            party_id: closed.party_id.clone(),
            presence: presence(&ben),
        });
        assert_eq!(ask(rt, &cat, accept).await, None);
        assert_eq!(rt.parties.parties_of(ben.id()), vec![id(&closed)]);
        assert!(
            rt.parties.members(id(&b)).is_none(),
            "ben's own party ended"
        );
        assert_eq!(rt.parties.count(), 2);
    }

    #[tokio::test]
    async fn pending_requests_are_bounded_by_the_party_size() {
        let h = realtime(PartySettings::default()).await;
        let rt = &h.rt;
        let ann = connect(rt, "ann");
        let p = create(rt, &ann, false, 2).await;
        for _ in 0..2 {
            let s = connect(rt, "x");
            assert_eq!(ask(rt, &s, join(&p.party_id)).await, None);
        }
        let late = connect(rt, "late");
        assert!(
            error(rt, &late, join(&p.party_id))
                .await
                .contains("too many pending")
        );
    }

    #[tokio::test]
    async fn update_reaches_members_and_listing_follows() {
        let h = realtime(PartySettings::default()).await;
        let rt = &h.rt;
        let (ann, ben) = (connect(rt, "ann"), connect(rt, "ben"));
        let p = create(rt, &ann, true, 4).await;
        ask(rt, &ben, join(&p.party_id)).await;
        drain(&ann);
        drain(&ben);
        let update = Message::PartyUpdate(PartyUpdate {
            party_id: p.party_id.clone(),
            label: r#"{"mode":"duo"}"#.into(),
            open: false,
            hidden: true,
        });
        assert!(
            error(rt, &ben, update.clone())
                .await
                .contains("only the party leader")
        );
        assert_eq!(ask(rt, &ann, update).await, None);
        for s in [&ann, &ben] {
            assert!(
                matches!(&drain(s)[..], [Message::PartyUpdate(u)] if u.label == r#"{"mode":"duo"}"# && !u.open)
            );
        }
        let (listed, _) = rt.party_list(10, None, false, "", "").unwrap();
        assert!(listed.is_empty(), "hidden parties are not listed");
        let (listed, _) = rt.party_list(10, Some(false), true, "*", "").unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].size, 2);
        assert!(!listed[0].open);
        assert!(
            rt.party_list(10, Some(true), true, "", "")
                .unwrap()
                .0
                .is_empty()
        );
    }

    #[tokio::test]
    async fn listing_pages_in_creation_order() {
        let h = realtime(PartySettings::default()).await;
        let rt = &h.rt;
        let mut ids = Vec::new();
        for i in 0..5 {
            let s = connect(rt, "s");
            ids.push(create(rt, &s, i % 2 == 0, 2).await.party_id);
        }
        let (page, cursor) = rt.party_list(2, None, false, "", "").unwrap();
        assert_eq!(
            page.iter().map(|p| &p.party_id).collect::<Vec<_>>(),
            vec![&ids[0], &ids[1]]
        );
        assert_eq!(page[0].label, "{}");
        let (page, cursor) = rt.party_list(2, None, false, "", &cursor.unwrap()).unwrap();
        assert_eq!(
            page.iter().map(|p| &p.party_id).collect::<Vec<_>>(),
            vec![&ids[2], &ids[3]]
        );
        let (page, cursor) = rt.party_list(2, None, false, "", &cursor.unwrap()).unwrap();
        assert_eq!(
            page.iter().map(|p| &p.party_id).collect::<Vec<_>>(),
            vec![&ids[4]]
        );
        assert_eq!(cursor, None);
        let (open, _) = rt.party_list(10, Some(true), false, "", "").unwrap();
        assert_eq!(open.len(), 3);
        assert!(rt.party_list(10, None, false, "", "x").is_err());
        // Queries search the JSON label; a malformed one is refused.
        assert!(rt.party_list(10, None, false, "+label.a:", "").is_err());
        let (none, _) = rt.party_list(10, None, false, "+label.a:1", "").unwrap();
        assert!(none.is_empty(), "no party has that label");
    }
}
