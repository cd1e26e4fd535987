//! Parties: small groups of sessions that stay together across matches, with
//! a leader, open or closed membership, join requests, and data relayed
//! between members. Served requests: `party_create`, `party_join`,
//! `party_accept`, `party_remove`, `party_promote`, `party_leave`,
//! `party_close`, `party_join_request_list`, `party_data_send` and
//! `party_update`; pushes: `party`, `party_presence_event`, `party_leader`,
//! `party_join_request`, `party_close`, `party_data` and `party_update`.
//!
//! `book.rs` is the membership state machine (join order, leader, pending
//! requests, the rules), pure and unit-tested; [`Parties`] is its socket
//! glue over the hub. Each member is also tracked on the party's stream
//! (mode 7, subject the party uuid, label the node), so presence events
//! reach members the way they do for every other stream. Party ids are
//! `<uuid>.<node>`.
//!
//! Every change to a party happens under the book's one lock, including its
//! tracker updates and the pushes it causes, so members see the changes of
//! one party in the order they happened. Pushes only queue frames, so the
//! lock is never held across a wait.

use std::sync::{Arc, Mutex, MutexGuard};

use ludus_core::chat::is_json_object;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{
    Party as PartyWire, PartyAccept, PartyClose, PartyCreate, PartyData, PartyDataSend, PartyJoin,
    PartyJoinRequest, PartyJoinRequestList, PartyLeader, PartyLeave, PartyMatchmakerAdd,
    PartyMatchmakerRemove, PartyMatchmakerTicket, PartyPresenceEvent, PartyPromote, PartyRemove,
    PartyUpdate, UserPresence,
};
use uuid::Uuid;

use crate::error::RtError;
use crate::hub::{Hub, push, visible};
use crate::matchmaker::{Matchmaker, TicketRequest};
use crate::stream::{Stream, StreamMode};
use crate::tracker::Presence;

mod book;

pub use book::PartySettings;
use book::{Effect, ListFilter, PartyBook, not_found};

/// Where the parties of every node are listed for the others: mode 7,
/// subject the largest uuid (no party has it).
fn index_stream() -> Stream {
    Stream::new(StreamMode::Party, Uuid::max(), Uuid::nil(), "")
}

/// Longest party label, in bytes (Nakama's limit).
pub(crate) const MAX_LABEL_LEN: usize = 2048;

/// A listing cursor, `<creation µs>:<party id>` of the page's last party.
fn parse_cursor(cursor: &str) -> Option<(u64, Uuid)> {
    let (key, id) = cursor.split_once(':')?;
    Some((key.parse().ok()?, Uuid::parse_str(id).ok()?))
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

fn bad_party_id() -> RtError {
    RtError::bad_input("invalid party id, use the party_id that party_create returned")
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

fn wire(p: &Presence) -> UserPresence {
    p.to_wire(false)
}

/// The parties hosted on this node, over the hub: the [`PartyBook`] keeps
/// membership; this type turns its effects into stream presences and pushes.
pub struct Parties {
    hub: Arc<Hub>,
    matchmaker: Arc<Matchmaker>,
    book: Mutex<PartyBook>,
}

impl std::fmt::Debug for Parties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parties")
            .field("parties", &self.count())
            .finish_non_exhaustive()
    }
}

impl Parties {
    pub(crate) fn new(
        hub: Arc<Hub>,
        matchmaker: Arc<Matchmaker>,
        settings: PartySettings,
        single_party: bool,
    ) -> Parties {
        Parties {
            hub,
            matchmaker,
            book: Mutex::new(PartyBook::new(settings, single_party)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PartyBook> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Live parties on this node.
    pub fn count(&self) -> usize {
        self.lock().count()
    }

    /// The members of a party in join order (the matchmaker's party
    /// tickets carry these); `None` when there is no such party.
    pub fn members(&self, party: Uuid) -> Option<Vec<Presence>> {
        self.lock().get(party).map(|p| p.members.clone())
    }

    /// The leader's presence; `None` when there is no such party.
    pub fn leader(&self, party: Uuid) -> Option<Presence> {
        self.lock()
            .get(party)
            .and_then(|p| p.leader_presence().cloned())
    }

    /// Whether `session` leads `party`.
    pub fn is_leader(&self, party: Uuid, session: Uuid) -> bool {
        self.lock().get(party).is_some_and(|p| p.leader == session)
    }

    /// Parties `session` is a member of (pending requests excluded).
    pub fn parties_of(&self, session: Uuid) -> Vec<Uuid> {
        self.lock().parties_of(session)
    }

    /// The wire id of a party hosted here.
    pub fn party_id(&self, party: Uuid) -> String {
        format!("{party}.{}", self.hub.node())
    }

    /// Reads the wire id of a party of this node; one of another node is
    /// not found here (`message` sends its requests to that node).
    pub fn parse_id(&self, id: &str) -> Result<Uuid, RtError> {
        let (uuid, node) = id.split_once('.').ok_or_else(bad_party_id)?;
        let party = Uuid::parse_str(uuid).map_err(|_| bad_party_id())?;
        if node != &**self.hub.node() {
            return Err(not_found());
        }
        Ok(party)
    }

    /// The party's stream: mode 7, subject the party, label the node.
    pub fn stream(&self, party: Uuid) -> Stream {
        Stream::new(StreamMode::Party, party, Uuid::nil(), self.hub.node())
    }

    fn party_wire(&self, id: Uuid, book: &PartyBook, me: &Presence) -> Option<PartyWire> {
        let party = book.get(id)?;
        Some(PartyWire {
            party_id: self.party_id(id),
            open: party.open,
            hidden: party.hidden,
            max_size: party.max_size as i32,
            self_: Some(wire(me)),
            leader: party.leader_presence().map(wire),
            presences: party.members.iter().map(wire).collect(),
            label: party.label.clone(),
        })
    }

    /// Carries out what a change of the book means for members, in order,
    /// still under the book's lock: members see one party's changes in the
    /// order they happened. Pushes only queue frames, so the lock is never
    /// held across a wait.
    fn apply(&self, book: &PartyBook, effects: Vec<Effect>) {
        for effect in effects {
            let members_changed = effect.changes_members();
            let party = match effect {
                Effect::Joined {
                    party,
                    presence,
                    send_party,
                } => {
                    if send_party && let Some(p) = self.party_wire(party, book, &presence) {
                        self.hub
                            .send_to_sessions(&[presence.session_id], push(Message::Party(p)));
                    }
                    let stream = self.stream(party);
                    if *presence.node != **self.hub.node() {
                        // A member of another node: its node tracks it (and
                        // tells the others); it hears its own join from here.
                        let joiner = presence.session_id;
                        self.hub.track_elsewhere(&stream, presence.clone());
                        let joins = [presence];
                        self.announce(&stream, &joins, &[]);
                        if let Some(event) = self.presence_event(&stream, &joins, &[]) {
                            self.hub.send_to_sessions(&[joiner], event);
                        }
                        party
                    } else {
                        let a = self.hub.track(&stream, presence);
                        let (joins, leaves) = a.changes();
                        self.announce(&stream, &joins, &leaves);
                        party
                    }
                }
                Effect::Requested {
                    party,
                    leader,
                    presence,
                } => {
                    let request = PartyJoinRequest {
                        party_id: self.party_id(party),
                        presences: vec![wire(&presence)],
                    };
                    self.hub
                        .send_to_sessions(&[leader], push(Message::PartyJoinRequest(request)));
                    party
                }
                Effect::LeaderChanged {
                    party,
                    leader,
                    members,
                } => {
                    let leader = PartyLeader {
                        party_id: self.party_id(party),
                        presence: Some(wire(&leader)),
                    };
                    self.hub
                        .send_to_sessions(&members, push(Message::PartyLeader(leader)));
                    party
                }
                Effect::Left {
                    party,
                    presence,
                    removed,
                } => {
                    let stream = self.stream(party);
                    if let Some(gone) = self.hub.untrack_anywhere(presence.session_id, &stream) {
                        self.announce(&stream, &[], &[gone]);
                    }
                    if removed {
                        let close = PartyClose {
                            party_id: self.party_id(party),
                        };
                        self.matchmaker.remove_party_all(&self.party_id(party));
                        self.hub.send_to_sessions(
                            &[presence.session_id],
                            push(Message::PartyClose(close)),
                        );
                        continue;
                    }
                    party
                }
                Effect::Ended {
                    party,
                    members,
                    closed,
                } => {
                    if closed {
                        let close = PartyClose {
                            party_id: self.party_id(party),
                        };
                        self.hub
                            .send_to_sessions(&members, push(Message::PartyClose(close)));
                    }
                    let stream = self.stream(party);
                    for member in &members {
                        // The party is over: nobody is left to hear leaves.
                        let _ = self.hub.untrack_anywhere(*member, &stream);
                    }
                    tracing::debug!(party_id = %self.party_id(party), closed, "party ended");
                    self.index(book, party);
                    party
                }
            };
            if members_changed {
                // The party's tickets no longer describe its members, and
                // go (as Nakama does).
                self.matchmaker.remove_party_all(&self.party_id(party));
            }
        }
    }

    /// Runs one change of the book and carries out its effects.
    fn change(
        &self,
        f: impl FnOnce(&mut PartyBook) -> Result<Vec<Effect>, RtError>,
    ) -> Result<(), RtError> {
        let mut book = self.lock();
        let effects = f(&mut book)?;
        self.apply(&book, effects);
        Ok(())
    }

    /// `party_create`: a new party led by this session.
    pub fn create(&self, me: &Presence, req: PartyCreate) -> Result<PartyWire, RtError> {
        check_label(&req.label)?;
        let me = me.clone();
        let id = Uuid::new_v4();
        let mut book = self.lock();
        let effects = book.create(
            id,
            me.clone(),
            req.open,
            req.hidden,
            req.max_size,
            req.label,
        )?;
        let reply = self
            .party_wire(id, &book, &me)
            .expect("the party was just created");
        self.index(&book, id);
        self.apply(&book, effects);
        tracing::debug!(party_id = %reply.party_id, session_id = %me.session_id, "party created");
        Ok(reply)
    }

    /// `party_join`: joins an open party at once, or asks the leader of a
    /// closed one (the leader gets a `party_join_request`; the joiner gets
    /// its `party` once accepted).
    pub fn join(&self, me: &Presence, req: PartyJoin) -> Result<(), RtError> {
        let id = self.parse_id(&req.party_id)?;
        let me = me.clone();
        self.change(|book| book.join(id, me))
    }

    /// `party_accept`: the leader lets a pending request in.
    pub fn accept(&self, me: &Presence, req: PartyAccept) -> Result<(), RtError> {
        let target = target_of(req.presence.as_ref())?;
        let id = self.parse_id(&req.party_id)?;
        self.change(|book| book.accept(id, me.session_id, target))
    }

    /// `party_remove`: the leader removes a member (who gets `party_close`)
    /// or turns down a pending request.
    pub fn remove(&self, me: &Presence, req: PartyRemove) -> Result<(), RtError> {
        let target = target_of(req.presence.as_ref())?;
        let id = self.parse_id(&req.party_id)?;
        self.change(|book| book.remove(id, me.session_id, target))
    }

    /// `party_promote`: the leader hands over; every member gets
    /// `party_leader`.
    pub fn promote(&self, me: &Presence, req: PartyPromote) -> Result<(), RtError> {
        let target = target_of(req.presence.as_ref())?;
        let id = self.parse_id(&req.party_id)?;
        self.change(|book| book.promote(id, me.session_id, target))
    }

    /// `party_leave`: leaves a party, or withdraws a pending request.
    pub fn leave(&self, me: &Presence, req: PartyLeave) -> Result<(), RtError> {
        let id = self.parse_id(&req.party_id)?;
        self.change(|book| book.leave(id, me.session_id))
    }

    /// `party_close`: the leader ends the party; every member gets
    /// `party_close`.
    pub fn close(&self, me: &Presence, req: PartyClose) -> Result<(), RtError> {
        let id = self.parse_id(&req.party_id)?;
        self.change(|book| book.close(id, me.session_id))
    }

    /// `party_join_request_list`: the leader sees who is waiting.
    pub fn join_requests(
        &self,
        me: &Presence,
        req: PartyJoinRequestList,
    ) -> Result<PartyJoinRequest, RtError> {
        let id = self.parse_id(&req.party_id)?;
        let requests = self.lock().requests(id, me.session_id)?;
        Ok(PartyJoinRequest {
            party_id: self.party_id(id),
            presences: requests.iter().map(wire).collect(),
        })
    }

    /// `party_data_send`: relays data to every other member. The payload is
    /// bounded by the socket's message size limit.
    pub fn data_send(&self, me: &Presence, req: PartyDataSend) -> Result<(), RtError> {
        let id = self.parse_id(&req.party_id)?;
        let book = self.lock();
        let (sender, others) = book.data_targets(id, me.session_id)?;
        let data = PartyData {
            party_id: self.party_id(id),
            presence: Some(wire(&sender)),
            op_code: req.op_code,
            data: req.data,
        };
        self.hub
            .send_to_sessions(&others, push(Message::PartyData(data)));
        Ok(())
    }

    /// `party_update`: the leader changes the label, open and hidden flags;
    /// every member gets the `party_update`.
    pub fn update(&self, me: &Presence, req: PartyUpdate) -> Result<(), RtError> {
        check_label(&req.label)?;
        let id = self.parse_id(&req.party_id)?;
        let mut book = self.lock();
        let members = book.update(id, me.session_id, &req.label, req.open, req.hidden)?;
        self.index(&book, id);
        let update = PartyUpdate {
            party_id: self.party_id(id),
            ..req
        };
        self.hub
            .send_to_sessions(&members, push(Message::PartyUpdate(update)));
        Ok(())
    }

    /// One party request of `me`: served here, or by the node the party
    /// lives on (a cluster), whose answer comes back.
    pub(crate) async fn message(
        &self,
        me: &Presence,
        message: Message,
        timeout: std::time::Duration,
    ) -> Result<Option<Message>, RtError> {
        let owner = party_of(&message)
            .and_then(|id| id.split_once('.'))
            .map(|(_, node)| node.to_owned())
            .filter(|node| !node.is_empty() && **node != **self.hub.node() && self.hub.clustered());
        let Some(node) = owner else {
            return self.here(me, message);
        };
        let envelope = push(message);
        let text = crate::codec::encode(crate::Format::Json, &envelope)
            .ok_or_else(|| RtError::internal("could not encode a party request"))?;
        let call = crate::bus::NodeCall::Party {
            presence: me.clone(),
            envelope: String::from_utf8_lossy(&text).into_owned(),
        };
        let (reply, has_reply) = self.hub.call_node(&node, call, timeout).await?;
        if !has_reply {
            return Ok(None);
        }
        let envelope = crate::codec::decode(crate::Format::Json, reply.as_bytes())
            .map_err(|_| RtError::internal("a party reply from another node did not parse"))?;
        Ok(envelope.message)
    }

    /// A party request of a session of another node, for a party here.
    pub(crate) fn serve(&self, me: &Presence, envelope: &str) -> crate::bus::NodeReply {
        let request = crate::codec::decode(crate::Format::Json, envelope.as_bytes())
            .map_err(|_| RtError::bad_input("a party request from another node did not parse"))?;
        let message = request
            .message
            .ok_or_else(|| RtError::bad_input("an empty party request"))?;
        match self.here(me, message)? {
            Some(m) => {
                let text = crate::codec::encode(crate::Format::Json, &push(m))
                    .ok_or_else(|| RtError::internal("could not encode a party reply"))?;
                Ok((String::from_utf8_lossy(&text).into_owned(), true))
            }
            None => Ok((String::new(), false)),
        }
    }

    /// Serves a party request on this node.
    fn here(&self, me: &Presence, message: Message) -> Result<Option<Message>, RtError> {
        match message {
            Message::PartyCreate(req) => self.create(me, req).map(|p| Some(Message::Party(p))),
            Message::PartyJoin(req) => self.join(me, req).map(|()| None),
            Message::PartyLeave(req) => self.leave(me, req).map(|()| None),
            Message::PartyPromote(req) => self.promote(me, req).map(|()| None),
            Message::PartyAccept(req) => self.accept(me, req).map(|()| None),
            Message::PartyRemove(req) => self.remove(me, req).map(|()| None),
            Message::PartyClose(req) => self.close(me, req).map(|()| None),
            Message::PartyJoinRequestList(req) => self
                .join_requests(me, req)
                .map(|r| Some(Message::PartyJoinRequest(r))),
            Message::PartyDataSend(req) => self.data_send(me, req).map(|()| None),
            Message::PartyUpdate(req) => self.update(me, req).map(|()| None),
            Message::PartyMatchmakerAdd(req) => self
                .matchmaker_add(me, req)
                .map(|t| Some(Message::PartyMatchmakerTicket(t))),
            Message::PartyMatchmakerRemove(req) => self.matchmaker_remove(me, req).map(|()| None),
            _ => Err(RtError::bad_input("not a party request")),
        }
    }

    /// A member of another node left a party stream of this node (it left,
    /// disconnected or its node died): it leaves the party.
    pub(crate) fn remote_left(&self, stream: &Stream, presence: &Presence) {
        if stream.mode != StreamMode::Party || *stream.label != **self.hub.node() {
            return;
        }
        let _ = self.change(|book| book.leave(stream.subject, presence.session_id));
    }

    /// A disconnecting session leaves its parties and withdraws its
    /// requests.
    pub(crate) fn disconnect(&self, session: Uuid) {
        let _ = self.change(|book| Ok(book.disconnect(session)));
    }

    /// Live parties in creation order for `nk.party_list`: open or closed
    /// only when `open` says so, hidden ones only with `show_hidden`. The
    /// cursor is the one a previous page returned. `query` searches the
    /// JSON label with the match listing's language (`+label.mode:duo`).
    pub fn list(
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
            c => Some(parse_cursor(c).ok_or_else(|| {
                RtError::bad_input("invalid cursor, pass the one the previous page returned")
            })?),
        };
        let filter = ListFilter {
            open,
            show_hidden,
            query: query.as_ref(),
        };
        let (local, mut more) = self.lock().list(limit, &filter, after);
        let mut page: Vec<(u64, Uuid, PartyInfo)> = local
            .into_iter()
            .map(|p| {
                let info = PartyInfo {
                    party_id: self.party_id(p.id),
                    open: p.open,
                    hidden: p.hidden,
                    max_size: p.max_size,
                    size: p.size,
                    label: p.label,
                };
                (p.created_us, p.id, info)
            })
            .collect();
        // Other nodes' parties, from the index their nodes keep.
        page.extend(
            self.remote_listings()
                .into_iter()
                .filter(|(key, id, info)| {
                    after.is_none_or(|a| (*key, *id) > a)
                        && filter.accepts(info.open, info.hidden, &info.label)
                }),
        );
        page.sort_by_key(|(key, id, _)| (*key, *id));
        if page.len() > limit {
            page.truncate(limit);
            more = true;
        }
        let next = match page.last() {
            Some((key, id, _)) if more => Some(format!("{key}:{id}")),
            _ => None,
        };
        Ok((page.into_iter().map(|(_, _, info)| info).collect(), next))
    }

    /// Puts a party of this node (or its new flags and label) on the index
    /// stream, where the other nodes of a cluster list it: a hidden presence
    /// whose session is the party, its status the label, its username the
    /// creation time, flags and size limit. A party that ended leaves it.
    fn index(&self, book: &PartyBook, id: Uuid) {
        let Some(party) = book.get(id) else {
            let _ = self.hub.untrack(id, &index_stream());
            return;
        };
        let mut p = Presence::new(
            Uuid::nil(),
            id,
            Arc::from(format!(
                "{}|{}|{}|{}",
                party.created_us,
                u8::from(party.open),
                u8::from(party.hidden),
                party.max_size
            )),
            self.hub.node().clone(),
        );
        p.meta.hidden = true;
        p.meta.status = Arc::from(if party.label.is_empty() {
            "{}"
        } else {
            party.label.as_str()
        });
        // Nobody is told: the index is read, never announced.
        let _ = self.hub.track(&index_stream(), p);
    }

    /// Parties of other nodes, from the index stream: (creation time, id,
    /// listing).
    fn remote_listings(&self) -> Vec<(u64, Uuid, PartyInfo)> {
        let here = self.hub.node().clone();
        self.hub
            .presences(&index_stream(), true)
            .into_iter()
            .filter(|p| p.node != here)
            .filter_map(|p| {
                let mut parts = p.username.split('|');
                let created_us: u64 = parts.next()?.parse().ok()?;
                let open = parts.next()? == "1";
                let hidden = parts.next()? == "1";
                let max_size = parts.next()?.parse().ok()?;
                let stream = Stream::new(StreamMode::Party, p.session_id, Uuid::nil(), &p.node);
                let info = PartyInfo {
                    party_id: format!("{}.{}", p.session_id, p.node),
                    open,
                    hidden,
                    max_size,
                    size: self.hub.count(&stream),
                    label: p.meta.status.to_string(),
                };
                Some((created_us, p.session_id, info))
            })
            .collect()
    }

    /// Sends a party presence event (the visible joins and leaves) to the
    /// members on the party's stream.
    pub(crate) fn announce(&self, stream: &Stream, joins: &[Presence], leaves: &[Presence]) {
        if let Some(event) = self.presence_event(stream, joins, leaves) {
            self.hub.send_to_stream(stream, event, None);
        }
    }

    /// The party presence event for the visible joins and leaves, if any.
    fn presence_event(
        &self,
        stream: &Stream,
        joins: &[Presence],
        leaves: &[Presence],
    ) -> Option<ludus_proto::realtime::Envelope> {
        let (joins, leaves) = (visible(joins), visible(leaves));
        if joins.is_empty() && leaves.is_empty() {
            return None;
        }
        let event = PartyPresenceEvent {
            party_id: format!("{}.{}", stream.subject, stream.label),
            joins: joins.iter().map(wire).collect(),
            leaves: leaves.iter().map(wire).collect(),
        };
        Some(push(Message::PartyPresenceEvent(event)))
    }

    /// `party_matchmaker_add`: the leader puts the whole party in the
    /// matchmaker as one ticket; the ticket goes when the members change.
    pub fn matchmaker_add(
        &self,
        me: &Presence,
        req: PartyMatchmakerAdd,
    ) -> Result<PartyMatchmakerTicket, RtError> {
        let id = self.parse_id(&req.party_id)?;
        let members = self
            .members(id)
            .ok_or_else(|| RtError::bad_input("party not found"))?;
        if !self.is_leader(id, me.session_id) {
            return Err(RtError::bad_input(
                "only the party leader may add the party to the matchmaker",
            ));
        }
        let party_id = self.party_id(id);
        let ticket = self.matchmaker_add_ticket(
            &party_id,
            members,
            TicketRequest {
                query: req.query,
                min_count: req.min_count,
                max_count: req.max_count,
                count_multiple: req.count_multiple.map(|c| c.value),
                string_properties: req.string_properties.into_iter().collect(),
                numeric_properties: req.numeric_properties.into_iter().collect(),
            },
        )?;
        Ok(PartyMatchmakerTicket { party_id, ticket })
    }

    /// `party_matchmaker_remove`: the leader withdraws one of the party's
    /// tickets.
    pub fn matchmaker_remove(
        &self,
        me: &Presence,
        req: PartyMatchmakerRemove,
    ) -> Result<(), RtError> {
        let id = self.parse_id(&req.party_id)?;
        if !self.is_leader(id, me.session_id) {
            return Err(RtError::bad_input(
                "only the party leader may remove the party's matchmaker tickets",
            ));
        }
        self.matchmaker_remove_ticket(&self.party_id(id), &req.ticket)
    }

    /// A party's ticket (`nk.party_matchmaker_add` too): all its members in
    /// one ticket (they match together), limited per party and per member.
    pub fn matchmaker_add_ticket(
        &self,
        party_id: &str,
        members: Vec<Presence>,
        request: TicketRequest,
    ) -> Result<String, RtError> {
        Ok(self.matchmaker.add(
            members,
            None,
            Some(party_id.to_owned()),
            request,
            ludus_core::unix_now_ns(),
        )?)
    }

    /// Removes one of a party's tickets.
    pub fn matchmaker_remove_ticket(&self, party_id: &str, ticket: &str) -> Result<(), RtError> {
        if ticket.is_empty() {
            return Err(RtError::bad_input("invalid matchmaker ticket: it is empty"));
        }
        Ok(self.matchmaker.remove_party(party_id, ticket)?)
    }

    /// Removes every ticket of a party; answers how many.
    pub fn matchmaker_remove_all(&self, party_id: &str) -> usize {
        self.matchmaker.remove_party_all(party_id)
    }
}

/// The party id a party request names (none for `party_create`).
fn party_of(message: &Message) -> Option<&str> {
    Some(match message {
        Message::PartyJoin(r) => &r.party_id,
        Message::PartyLeave(r) => &r.party_id,
        Message::PartyPromote(r) => &r.party_id,
        Message::PartyAccept(r) => &r.party_id,
        Message::PartyRemove(r) => &r.party_id,
        Message::PartyClose(r) => &r.party_id,
        Message::PartyJoinRequestList(r) => &r.party_id,
        Message::PartyDataSend(r) => &r.party_id,
        Message::PartyUpdate(r) => &r.party_id,
        Message::PartyMatchmakerAdd(r) => &r.party_id,
        Message::PartyMatchmakerRemove(r) => &r.party_id,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use ludus_proto::realtime::envelope::Message;
    use ludus_proto::realtime::*;

    use super::*;
    use crate::error::RtCode;
    use crate::{Format, Realtime, RealtimeConfig, SessionHandle, codec};

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

        let id = rt.parties.parse_id(&p.party_id).unwrap();
        let members = rt.parties.members(id).unwrap();
        assert_eq!(
            members.iter().map(|m| m.session_id).collect::<Vec<_>>(),
            vec![ann.id(), ben.id()]
        );
        assert!(rt.parties.is_leader(id, ann.id()));
        assert!(!rt.parties.is_leader(id, ben.id()));
        assert_eq!(rt.hub().count(&rt.parties.stream(id)), 2);

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
        let id = rt.parties.parse_id(&p.party_id).unwrap();
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
        assert_eq!(rt.hub().count(&rt.parties.stream(id)), 0);
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
        let id = |p: &PartyWire| rt.parties.parse_id(&p.party_id).unwrap();
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
        let (listed, _) = rt.parties.list(10, None, false, "", "").unwrap();
        assert!(listed.is_empty(), "hidden parties are not listed");
        let (listed, _) = rt.parties.list(10, Some(false), true, "*", "").unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].size, 2);
        assert!(!listed[0].open);
        assert!(
            rt.parties
                .list(10, Some(true), true, "", "")
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
        let (page, cursor) = rt.parties.list(2, None, false, "", "").unwrap();
        assert_eq!(
            page.iter().map(|p| &p.party_id).collect::<Vec<_>>(),
            vec![&ids[0], &ids[1]]
        );
        assert_eq!(page[0].label, "{}");
        let (page, cursor) = rt
            .parties
            .list(2, None, false, "", &cursor.unwrap())
            .unwrap();
        assert_eq!(
            page.iter().map(|p| &p.party_id).collect::<Vec<_>>(),
            vec![&ids[2], &ids[3]]
        );
        let (page, cursor) = rt
            .parties
            .list(2, None, false, "", &cursor.unwrap())
            .unwrap();
        assert_eq!(
            page.iter().map(|p| &p.party_id).collect::<Vec<_>>(),
            vec![&ids[4]]
        );
        assert_eq!(cursor, None);
        let (open, _) = rt.parties.list(10, Some(true), false, "", "").unwrap();
        assert_eq!(open.len(), 3);
        assert!(rt.parties.list(10, None, false, "", "x").is_err());
        // Queries search the JSON label; a malformed one is refused.
        assert!(rt.parties.list(10, None, false, "+label.a:", "").is_err());
        let (none, _) = rt.parties.list(10, None, false, "+label.a:1", "").unwrap();
        assert!(none.is_empty(), "no party has that label");
    }
}
