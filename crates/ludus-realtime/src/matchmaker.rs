//! The matchmaker's core: tickets, their limits, and the grouping of
//! tickets into matches, with no socket, clock or task of its own (the
//! caller passes the time), so every rule is unit-tested directly.
//! [`crate::matchmaker_socket`] puts it on the socket.
//!
//! The rules are Nakama's default matchmaker:
//! - a ticket holds one presence, or every member of a party; its document
//!   is `{"properties": {…its string and numeric properties…}}` plus
//!   `ticket`, `min_count`, `max_count` and `party_id`;
//! - every `process` (each `matchmaker.interval_sec`), each *active* ticket,
//!   oldest first, searches the pool: candidates match its query, have
//!   `min_count >= its min_count` and `max_count <= its max_count`, are not
//!   of its party and share no session with it; best score first, then the
//!   longest waiting;
//! - it first only accepts a group of exactly its `max_count`; on its last
//!   interval (`matchmaker.max_intervals`, or at once when min = max) it
//!   accepts any size from its `min_count`, taking every candidate it can;
//! - a group's size is within every member's `[min_count, max_count]` and a
//!   multiple of every member's `count_multiple`; when it is not a multiple
//!   of the searcher's, the newest tickets that make up the remainder are
//!   dropped (Nakama's comment says it keeps the longest waiting, but its
//!   sort drops the oldest; Ludus does what the comment says);
//! - after its last interval a ticket stops searching but stays in the pool,
//!   where newer tickets still find it.
//!
//! With `matchmaker.rev_precision` a candidate's query must also match the
//! searcher (and every member already in the group), as Nakama's option;
//! Nakama's `rev_threshold` (giving up mutual matching after a while) is not
//! implemented.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use ludus_proto::api;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::error::{RtCode, RtError};
use crate::query::{Query, QueryError};
use crate::tracker::Presence;
use crate::wire::timestamp_us;

/// How long a matchmaker token is valid (Nakama: 30 seconds).
pub const MATCH_TOKEN_TTL_SECS: i64 = 30;
/// Completions (one per matched user) the stats keep (Nakama keeps 10).
const STATS_COMPLETIONS: usize = 10;

/// The matchmaker's settings: the `matchmaker.*` config section itself,
/// with Nakama's key names and defaults (the server checks the values).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MatchmakerConfig {
    /// Tickets one session (or party) may hold at once (Nakama default 3).
    pub max_tickets: usize,
    /// Intervals a ticket insists on a full group before it accepts any
    /// size from its minimum (Nakama default 2).
    pub max_intervals: u32,
    /// Candidates' queries must match the searcher too.
    pub rev_precision: bool,
    /// Seconds between processing runs (Nakama default 15).
    pub interval_sec: u64,
}

impl Default for MatchmakerConfig {
    fn default() -> Self {
        MatchmakerConfig {
            max_tickets: 3,
            max_intervals: 2,
            rev_precision: false,
            interval_sec: 15,
        }
    }
}

/// What a new ticket asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TicketRequest {
    pub query: String,
    pub min_count: i32,
    pub max_count: i32,
    /// `None` is 1.
    pub count_multiple: Option<i32>,
    pub string_properties: BTreeMap<String, String>,
    pub numeric_properties: BTreeMap<String, f64>,
}

/// Why a ticket was refused or not found.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MatchmakerError {
    #[error("invalid minimum count, it must be at least 2")]
    MinCount,
    #[error("invalid maximum count, it must be at least the minimum count")]
    MaxCount,
    #[error("invalid count multiple, it must be at least 1")]
    CountMultiple,
    #[error("invalid count multiple for the minimum count, it must divide it")]
    MinNotMultiple,
    #[error("invalid count multiple for the maximum count, it must divide it")]
    MaxNotMultiple,
    #[error("the ticket holds {0} users, more than its maximum count")]
    TooLarge(usize),
    #[error("a ticket needs at least one presence")]
    NoPresences,
    #[error("a ticket cannot hold the same session twice")]
    DuplicateSession,
    #[error("invalid matchmaker query: {0}")]
    Query(#[from] QueryError),
    #[error("too many matchmaker tickets: a session may hold {0}, remove one first")]
    TooManyTickets(usize),
    #[error("too many matchmaker tickets: a party may hold {0}, remove one first")]
    TooManyPartyTickets(usize),
    #[error("matchmaker ticket not found")]
    TicketNotFound,
}

/// Nakama's codes: validation is `BAD_INPUT`; a refused add (query,
/// ticket limit) is `RUNTIME_EXCEPTION`, as Nakama answers it.
impl From<MatchmakerError> for RtError {
    fn from(e: MatchmakerError) -> RtError {
        let code = match e {
            MatchmakerError::Query(_)
            | MatchmakerError::TooManyTickets(_)
            | MatchmakerError::TooManyPartyTickets(_) => RtCode::RuntimeException,
            _ => RtCode::BadInput,
        };
        RtError::new(code, e.to_string())
    }
}

/// One user of a formed group, as `matchmaker_matched` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchedEntry {
    pub ticket: String,
    pub presence: Presence,
    pub party_id: Option<String>,
    pub string_properties: BTreeMap<String, String>,
    pub numeric_properties: BTreeMap<String, f64>,
    /// When the ticket was made, Unix nanoseconds.
    pub create_time_ns: i64,
}

/// A formed match: every user of every ticket in it.
pub type MatchedGroup = Vec<MatchedEntry>;

/// A ticket as it crosses nodes: a cluster pools every node's tickets, and
/// the node holding the matchmaker's role forms the groups.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketRecord {
    pub id: String,
    pub created_ns: i64,
    pub owner: Option<Uuid>,
    pub party_id: Option<String>,
    pub presences: Vec<Presence>,
    pub request: TicketRequest,
}

/// Where the pool's own changes go (the cluster bus); changes that came
/// from other nodes never go back out.
pub trait TicketSink: Send + Sync {
    fn changed(&self, added: Vec<TicketRecord>, removed: Vec<String>);
}

#[derive(Debug)]
struct Ticket {
    id: String,
    /// Creation order (ties in the creation time never reorder tickets).
    seq: u64,
    created_ns: i64,
    /// The owning session of a solo ticket; None for a party's.
    owner: Option<Uuid>,
    party_id: Option<String>,
    presences: Vec<Presence>,
    query: Query,
    query_text: String,
    min_count: usize,
    max_count: usize,
    count_multiple: usize,
    string_properties: BTreeMap<String, String>,
    numeric_properties: BTreeMap<String, f64>,
    doc: Value,
    /// Runs this ticket searched in; only `process` (one at a time) counts.
    intervals: AtomicU32,
}

impl Ticket {
    fn count(&self) -> usize {
        self.presences.len()
    }

    fn shares_session(&self, other: &Ticket) -> bool {
        self.presences
            .iter()
            .any(|p| other.presences.iter().any(|o| o.session_id == p.session_id))
    }

    fn entries(&self) -> impl Iterator<Item = MatchedEntry> + '_ {
        self.presences.iter().map(|p| MatchedEntry {
            ticket: self.id.clone(),
            presence: p.clone(),
            party_id: self.party_id.clone(),
            string_properties: self.string_properties.clone(),
            numeric_properties: self.numeric_properties.clone(),
            create_time_ns: self.created_ns,
        })
    }
}

#[derive(Debug, Default)]
struct Inner {
    tickets: HashMap<String, Arc<Ticket>>,
    /// Tickets still searching (not past their last interval).
    active: HashSet<String>,
    by_session: HashMap<Uuid, HashSet<String>>,
    by_party: HashMap<String, HashSet<String>>,
    next_seq: u64,
    /// (created, completed) of the last matched users, nanoseconds.
    completions: VecDeque<(i64, i64)>,
    /// Tickets removed since the last flush, for the sink.
    removed: Vec<String>,
}

impl Inner {
    fn remove(&mut self, id: &str) -> Option<Arc<Ticket>> {
        let t = self.tickets.remove(id)?;
        self.removed.push(t.id.clone());
        self.active.remove(id);
        for p in &t.presences {
            if let Some(set) = self.by_session.get_mut(&p.session_id) {
                set.remove(id);
                if set.is_empty() {
                    self.by_session.remove(&p.session_id);
                }
            }
        }
        if let Some(party) = &t.party_id
            && let Some(set) = self.by_party.get_mut(party)
        {
            set.remove(id);
            if set.is_empty() {
                self.by_party.remove(party);
            }
        }
        Some(t)
    }
}

/// The tickets of this node and the rules that group them.
#[derive(Debug)]
pub struct Matchmaker {
    config: MatchmakerConfig,
    inner: Mutex<Inner>,
    sink: Option<Arc<dyn TicketSink>>,
    /// How long each run took (Nakama's `matchmaker_process_time`).
    process_time: ludus_core::metrics::Histogram,
}

impl std::fmt::Debug for dyn TicketSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TicketSink")
    }
}

impl Matchmaker {
    pub fn new(config: MatchmakerConfig) -> Matchmaker {
        Matchmaker {
            config,
            inner: Mutex::new(Inner::default()),
            sink: None,
            process_time: Default::default(),
        }
    }

    /// A pool whose own adds and removals go to `sink` (a cluster node).
    pub fn with_sink(config: MatchmakerConfig, sink: Arc<dyn TicketSink>) -> Matchmaker {
        Matchmaker {
            sink: Some(sink),
            ..Matchmaker::new(config)
        }
    }

    /// Hands the removals of one change to the sink, once unlocked.
    fn flush(&self, mut inner: std::sync::MutexGuard<'_, Inner>) {
        let removed = std::mem::take(&mut inner.removed);
        drop(inner);
        if let Some(sink) = &self.sink
            && !removed.is_empty()
        {
            sink.changed(Vec::new(), removed);
        }
    }

    /// Another node's tickets came in or went: applied, never sent back.
    pub fn apply_remote(&self, added: Vec<TicketRecord>, removed: &[String]) {
        let mut inner = self.lock();
        for id in removed {
            inner.remove(id);
        }
        for rec in added {
            if inner.tickets.contains_key(&rec.id) {
                continue;
            }
            let Ok(ticket) = build_ticket(rec, inner.next_seq) else {
                continue;
            };
            inner.next_seq += 1;
            index_ticket(&mut inner, ticket);
        }
        inner.removed.clear();
    }

    /// This node's own tickets (those of its sessions), to announce again
    /// after the bus came back.
    pub fn own_tickets(&self, node: &str) -> Vec<TicketRecord> {
        self.lock()
            .tickets
            .values()
            .filter(|t| t.presences.first().is_some_and(|p| *p.node == *node))
            .map(|t| record_of(t))
            .collect()
    }

    pub fn config(&self) -> &MatchmakerConfig {
        &self.config
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a ticket for `presences` (one session, or a party's members
    /// with `party_id`); answers its id.
    pub fn add(
        &self,
        presences: Vec<Presence>,
        owner: Option<Uuid>,
        party_id: Option<String>,
        request: TicketRequest,
        now_ns: i64,
    ) -> Result<String, MatchmakerError> {
        if request.min_count < 2 {
            return Err(MatchmakerError::MinCount);
        }
        if request.max_count < request.min_count {
            return Err(MatchmakerError::MaxCount);
        }
        let multiple = request.count_multiple.unwrap_or(1);
        if multiple < 1 {
            return Err(MatchmakerError::CountMultiple);
        }
        if request.min_count % multiple != 0 {
            return Err(MatchmakerError::MinNotMultiple);
        }
        if request.max_count % multiple != 0 {
            return Err(MatchmakerError::MaxNotMultiple);
        }
        if presences.is_empty() {
            return Err(MatchmakerError::NoPresences);
        }
        if presences.len() > request.max_count as usize {
            return Err(MatchmakerError::TooLarge(presences.len()));
        }
        let mut seen = HashSet::new();
        if !presences.iter().all(|p| seen.insert(p.session_id)) {
            return Err(MatchmakerError::DuplicateSession);
        }
        Query::parse(&request.query)?;
        let record = TicketRecord {
            id: Uuid::new_v4().to_string(),
            created_ns: now_ns,
            owner,
            party_id,
            presences,
            request,
        };
        let mut inner = self.lock();
        let max = self.config.max_tickets;
        for p in &record.presences {
            if inner.by_session.get(&p.session_id).map_or(0, HashSet::len) >= max {
                return Err(MatchmakerError::TooManyTickets(max));
            }
        }
        if let Some(party) = &record.party_id
            && inner.by_party.get(party).map_or(0, HashSet::len) >= max
        {
            return Err(MatchmakerError::TooManyPartyTickets(max));
        }
        let id = record.id.clone();
        let shared = self.sink.as_ref().map(|_| record.clone());
        let ticket = build_ticket(record, inner.next_seq)?;
        inner.next_seq += 1;
        index_ticket(&mut inner, ticket);
        drop(inner);
        if let (Some(sink), Some(record)) = (&self.sink, shared) {
            sink.changed(vec![record], Vec::new());
        }
        Ok(id)
    }

    /// Removes a session's own ticket (not a party's).
    pub fn remove_session(&self, session: Uuid, ticket: &str) -> Result<(), MatchmakerError> {
        let mut inner = self.lock();
        match inner.tickets.get(ticket) {
            Some(t) if t.party_id.is_none() && t.owner == Some(session) => {
                inner.remove(ticket);
                self.flush(inner);
                Ok(())
            }
            _ => Err(MatchmakerError::TicketNotFound),
        }
    }

    /// Removes every ticket `session` is in (its socket went); answers how many.
    pub fn remove_session_all(&self, session: Uuid) -> usize {
        let mut inner = self.lock();
        let Some(ids) = inner.by_session.remove(&session) else {
            return 0;
        };
        let n = ids.iter().filter(|id| inner.remove(id).is_some()).count();
        self.flush(inner);
        n
    }

    /// Removes a party's ticket.
    pub fn remove_party(&self, party_id: &str, ticket: &str) -> Result<(), MatchmakerError> {
        let mut inner = self.lock();
        match inner.tickets.get(ticket) {
            Some(t) if t.party_id.as_deref() == Some(party_id) => {
                inner.remove(ticket);
                self.flush(inner);
                Ok(())
            }
            _ => Err(MatchmakerError::TicketNotFound),
        }
    }

    /// Removes every ticket of a party; answers how many.
    pub fn remove_party_all(&self, party_id: &str) -> usize {
        let mut inner = self.lock();
        let Some(ids) = inner.by_party.remove(party_id) else {
            return 0;
        };
        let n = ids.iter().filter(|id| inner.remove(id).is_some()).count();
        self.flush(inner);
        n
    }

    /// Tickets in the pool.
    pub fn ticket_count(&self) -> usize {
        self.lock().tickets.len()
    }

    /// Tickets that still search themselves (the others wait to be found),
    /// Nakama's `matchmaker_active_tickets`.
    pub fn active_ticket_count(&self) -> usize {
        self.lock().active.len()
    }

    /// The duration of each run so far.
    pub fn process_time(&self) -> &ludus_core::metrics::Histogram {
        &self.process_time
    }

    /// `GET /v2/matchmaker/stats`: tickets now, the oldest one's age and
    /// the last completed matches' tickets.
    pub fn stats(&self) -> api::MatchmakerStats {
        let inner = self.lock();
        let oldest = inner.tickets.values().map(|t| t.created_ns).min();
        api::MatchmakerStats {
            ticket_count: inner.tickets.len() as i32,
            oldest_ticket_create_time: oldest.map(|ns| timestamp_us(ns / 1000)),
            completions: inner
                .completions
                .iter()
                .map(|&(c, d)| api::MatchmakerCompletionStats {
                    create_time: Some(timestamp_us(c / 1000)),
                    complete_time: Some(timestamp_us(d / 1000)),
                })
                .collect(),
        }
    }

    /// One matchmaking run: forms every group it can and takes their
    /// tickets out of the pool. The pool is locked only to copy it and to
    /// take the formed groups out (a group one of whose tickets was removed
    /// meanwhile is dropped), so adds and removals never wait for the
    /// searching. Runs of one matchmaker must not overlap (one loop calls it).
    pub fn process(&self, now_ns: i64) -> Vec<MatchedGroup> {
        let started = std::time::Instant::now();
        let plan = self.search();
        let groups = self.take_out(plan, now_ns);
        self.process_time.record(started.elapsed());
        groups
    }

    /// The searching half of [`Matchmaker::process`], on a copy of the pool.
    fn search(&self) -> Plan {
        let (order, pool) = {
            let inner = self.lock();
            if inner.active.is_empty() {
                return Plan::default();
            }
            let mut order: Vec<Arc<Ticket>> = inner
                .active
                .iter()
                .map(|id| inner.tickets[id].clone())
                .collect();
            order.sort_unstable_by_key(|t| t.seq);
            let mut pool: Vec<Arc<Ticket>> = inner.tickets.values().cloned().collect();
            pool.sort_unstable_by_key(|t| t.seq);
            (order, pool)
        };
        let max_intervals = self.config.max_intervals;
        let rev = self.config.rev_precision;

        let mut selected: HashSet<&str> = HashSet::new();
        let mut expired: Vec<&str> = Vec::new();
        let mut groups: Vec<Vec<&str>> = Vec::new();

        for t in &order {
            if selected.contains(t.id.as_str()) {
                continue;
            }
            let intervals = t.intervals.fetch_add(1, Ordering::Relaxed) + 1;
            let last = intervals >= max_intervals || t.min_count == t.max_count;
            if last {
                expired.push(&t.id);
            }
            let mut hits: Vec<(f64, &Ticket)> = pool
                .iter()
                .map(|c| &**c)
                .filter(|c| {
                    c.id != t.id
                        && !selected.contains(c.id.as_str())
                        && c.min_count >= t.min_count
                        && c.max_count <= t.max_count
                        && (t.party_id.is_none() || c.party_id != t.party_id)
                        && !t.shares_session(c)
                        && (!rev || c.query.matches(&t.doc))
                })
                .filter_map(|c| t.query.score(&c.doc).map(|s| (s, c)))
                .collect();
            // Best score first, then the longest waiting (the sort is stable
            // and the pool is in creation order).
            hits.sort_by(|a, b| b.0.total_cmp(&a.0));

            let mut combos: Vec<Vec<&Ticket>> = Vec::new();
            let last_hit = hits.len().saturating_sub(1);
            for (i, &(_, hit)) in hits.iter().enumerate() {
                let size = |c: &Vec<&Ticket>| c.iter().map(|x| x.count()).sum::<usize>();
                let fits = |c: &Vec<&Ticket>| {
                    size(c) + hit.count() + t.count() <= t.max_count
                        && c.iter().all(|x| {
                            !x.shares_session(hit)
                                && (!rev
                                    || (hit.query.matches(&x.doc) && x.query.matches(&hit.doc)))
                        })
                };
                let at = match combos.iter().position(fits) {
                    Some(at) => {
                        combos[at].push(hit);
                        at
                    }
                    None => {
                        combos.push(vec![hit]);
                        combos.len() - 1
                    }
                };
                let mut combo = combos[at].clone();
                let mut l = size(&combo) + t.count();
                let ready = l == t.max_count
                    || (last && l >= t.min_count && l <= t.max_count && i >= last_hit);
                if !ready {
                    continue;
                }
                let rem = l % t.count_multiple;
                if rem != 0 {
                    match newest_summing_to(&combo, rem) {
                        Some(drop) => combo.retain(|x| !drop.contains(&x.id.as_str())),
                        None => continue,
                    }
                    l = size(&combo) + t.count();
                    if !l.is_multiple_of(t.count_multiple) || l < t.min_count {
                        continue;
                    }
                }
                let fits_all = combo.iter().all(|x| {
                    x.min_count <= l && l <= x.max_count && l.is_multiple_of(x.count_multiple)
                });
                if !fits_all {
                    continue;
                }
                combos.remove(at);
                let mut group: Vec<&str> = combo.iter().map(|x| x.id.as_str()).collect();
                group.push(&t.id);
                for x in &combo {
                    selected.insert(x.id.as_str());
                }
                selected.insert(t.id.as_str());
                groups.push(group);
                break;
            }
        }
        let owned = |ids: Vec<&str>| ids.into_iter().map(str::to_owned).collect();
        Plan {
            expired: owned(expired),
            groups: groups.into_iter().map(owned).collect(),
        }
    }

    /// The locked half of [`Matchmaker::process`]: retires expired tickets
    /// from searching and takes out every group whose tickets are all
    /// still there.
    fn take_out(&self, plan: Plan, now_ns: i64) -> Vec<MatchedGroup> {
        let mut inner = self.lock();
        for id in &plan.expired {
            inner.active.remove(id);
        }
        let mut out = Vec::with_capacity(plan.groups.len());
        for group in plan.groups {
            if !group.iter().all(|id| inner.tickets.contains_key(id)) {
                continue;
            }
            let mut entries = Vec::new();
            for id in &group {
                if let Some(t) = inner.remove(id) {
                    entries.extend(t.entries());
                    // One completion per matched user, as Nakama counts them.
                    for _ in 0..t.count() {
                        if inner.completions.len() == STATS_COMPLETIONS {
                            inner.completions.pop_front();
                        }
                        inner.completions.push_back((t.created_ns, now_ns));
                    }
                }
            }
            out.push(entries);
        }
        self.flush(inner);
        out
    }
}

/// A ticket from its record: the query parsed, the document queries see.
fn build_ticket(rec: TicketRecord, seq: u64) -> Result<Ticket, MatchmakerError> {
    let query = Query::parse(&rec.request.query)?;
    let mut properties = Map::new();
    for (k, v) in &rec.request.string_properties {
        properties.insert(k.clone(), Value::String(v.clone()));
    }
    for (k, v) in &rec.request.numeric_properties {
        properties.insert(k.clone(), json!(v));
    }
    let doc = json!({
        "ticket": rec.id,
        "min_count": rec.request.min_count,
        "max_count": rec.request.max_count,
        "party_id": rec.party_id.clone().unwrap_or_default(),
        "properties": properties,
    });
    Ok(Ticket {
        id: rec.id,
        seq,
        created_ns: rec.created_ns,
        owner: rec.owner,
        party_id: rec.party_id,
        presences: rec.presences,
        query,
        query_text: rec.request.query,
        min_count: rec.request.min_count as usize,
        max_count: rec.request.max_count as usize,
        count_multiple: rec.request.count_multiple.unwrap_or(1) as usize,
        string_properties: rec.request.string_properties,
        numeric_properties: rec.request.numeric_properties,
        doc,
        intervals: AtomicU32::new(0),
    })
}

/// Puts a ticket in the pool and its indexes.
fn index_ticket(inner: &mut Inner, ticket: Ticket) {
    let id = ticket.id.clone();
    for p in &ticket.presences {
        inner
            .by_session
            .entry(p.session_id)
            .or_default()
            .insert(id.clone());
    }
    if let Some(party) = &ticket.party_id {
        inner
            .by_party
            .entry(party.clone())
            .or_default()
            .insert(id.clone());
    }
    inner.active.insert(id.clone());
    inner.tickets.insert(id, Arc::new(ticket));
}

fn record_of(t: &Ticket) -> TicketRecord {
    TicketRecord {
        id: t.id.clone(),
        created_ns: t.created_ns,
        owner: t.owner,
        party_id: t.party_id.clone(),
        presences: t.presences.clone(),
        request: TicketRequest {
            query: t.query_text.clone(),
            min_count: t.min_count as i32,
            max_count: t.max_count as i32,
            count_multiple: Some(t.count_multiple as i32),
            string_properties: t.string_properties.clone(),
            numeric_properties: t.numeric_properties.clone(),
        },
    }
}

/// What a search decided: tickets that stop searching, and groups to form.
#[derive(Debug, Default)]
struct Plan {
    expired: Vec<String>,
    groups: Vec<Vec<String>>,
}

/// The tickets to drop so a group shrinks by exactly `rem` users: among
/// the subsets of tickets of at most `rem` users summing to `rem`, the one
/// whose tickets are newest on average (so the longest waiting stay).
fn newest_summing_to<'a>(combo: &[&'a Ticket], rem: usize) -> Option<Vec<&'a str>> {
    let eligible: Vec<&Ticket> = combo.iter().copied().filter(|t| t.count() <= rem).collect();
    // Groups are small (at most max_count tickets) and rem < count_multiple,
    // so a depth-first search over the eligible tickets is cheap; it is
    // capped anyway.
    let mut best: Option<(f64, Vec<&str>)> = None;
    let mut stack: Vec<&Ticket> = Vec::new();
    let mut budget = 10_000u32;
    fn search<'a>(
        eligible: &[&'a Ticket],
        from: usize,
        left: usize,
        stack: &mut Vec<&'a Ticket>,
        best: &mut Option<(f64, Vec<&'a str>)>,
        budget: &mut u32,
    ) {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        if left == 0 {
            let avg = stack.iter().map(|t| t.seq as f64).sum::<f64>() / stack.len() as f64;
            if best.as_ref().is_none_or(|(b, _)| avg > *b) {
                *best = Some((avg, stack.iter().map(|t| t.id.as_str()).collect()));
            }
            return;
        }
        for i in from..eligible.len() {
            if eligible[i].count() <= left {
                stack.push(eligible[i]);
                search(
                    eligible,
                    i + 1,
                    left - eligible[i].count(),
                    stack,
                    best,
                    budget,
                );
                stack.pop();
            }
        }
    }
    search(&eligible, 0, rem, &mut stack, &mut best, &mut budget);
    best.map(|(_, ids)| ids)
}

/// The claims of a matchmaker token (Nakama's names).
#[derive(Serialize, Deserialize)]
struct MatchTokenClaims {
    mid: String,
    exp: i64,
}

/// A matchmaker token: an HS256 JWT (key `session.encryption_key`) carrying
/// the match id (`mid`), valid for [`MATCH_TOKEN_TTL_SECS`] (`exp`).
pub fn match_token(key: &str, match_id: &str, now_secs: i64) -> String {
    ludus_core::token::sign_claims(
        key.as_bytes(),
        &MatchTokenClaims {
            mid: match_id.to_owned(),
            exp: now_secs + MATCH_TOKEN_TTL_SECS,
        },
    )
}

/// Checks a matchmaker token (signature, expiry) and answers its match id.
pub fn verify_match_token(key: &str, token: &str, now_secs: i64) -> Result<String, RtError> {
    let claims: MatchTokenClaims = ludus_core::token::verify_claims(key.as_bytes(), token)
        .map_err(|_| {
            RtError::bad_input("invalid match token, join with the token the matchmaker sent")
        })?;
    if claims.exp <= now_secs {
        return Err(RtError::bad_input(
            "match token expired, it is valid for 30 seconds after matchmaking",
        ));
    }
    // A match id is `<uuid>.<node>` (the node empty for a relayed match).
    let well_formed = claims
        .mid
        .split_once('.')
        .is_some_and(|(id, _)| Uuid::parse_str(id).is_ok());
    if !well_formed {
        return Err(RtError::bad_input(
            "invalid match token: it carries no valid match id",
        ));
    }
    Ok(claims.mid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn presence() -> Presence {
        Presence::new(Uuid::new_v4(), Uuid::new_v4(), "u".into(), "ludus".into())
    }

    fn req(query: &str, min: i32, max: i32) -> TicketRequest {
        TicketRequest {
            query: query.into(),
            min_count: min,
            max_count: max,
            ..Default::default()
        }
    }

    fn mm(max_intervals: u32) -> Matchmaker {
        Matchmaker::new(MatchmakerConfig {
            max_intervals,
            ..Default::default()
        })
    }

    /// Adds a solo ticket; answers (session, ticket).
    fn solo(m: &Matchmaker, r: TicketRequest) -> (Uuid, String) {
        let p = presence();
        let s = p.session_id;
        (s, m.add(vec![p], Some(s), None, r, 1).unwrap())
    }

    fn sessions(group: &MatchedGroup) -> HashSet<Uuid> {
        group.iter().map(|e| e.presence.session_id).collect()
    }

    #[test]
    fn two_players_pair() {
        let m = mm(2);
        let (a, ta) = solo(&m, req("*", 2, 2));
        let (b, _) = solo(&m, req("*", 2, 2));
        let groups = m.process(10);
        assert_eq!(groups.len(), 1);
        assert_eq!(sessions(&groups[0]), HashSet::from([a, b]));
        assert!(groups[0].iter().any(|e| e.ticket == ta));
        assert_eq!(m.ticket_count(), 0);
        assert_eq!(m.stats().completions.len(), 2);
    }

    #[test]
    fn groups_of_n_fill_to_max_count() {
        for n in 2..=8 {
            let m = mm(2);
            let all: HashSet<Uuid> = (0..n).map(|_| solo(&m, req("*", n, n)).0).collect();
            let groups = m.process(1);
            assert_eq!(groups.len(), 1, "n={n}");
            assert_eq!(sessions(&groups[0]), all, "n={n}");
        }
    }

    #[test]
    fn many_players_form_many_groups() {
        let m = mm(2);
        for _ in 0..12 {
            solo(&m, req("*", 4, 4));
        }
        let groups = m.process(1);
        assert_eq!(groups.len(), 3);
        let mut seen = HashSet::new();
        for g in &groups {
            assert_eq!(g.len(), 4);
            for e in g {
                assert!(
                    seen.insert(e.presence.session_id),
                    "a session in two groups"
                );
            }
        }
    }

    #[test]
    fn too_few_players_wait() {
        let m = mm(2);
        solo(&m, req("*", 3, 3));
        solo(&m, req("*", 3, 3));
        assert!(m.process(1).is_empty());
        assert_eq!(m.ticket_count(), 2);
        solo(&m, req("*", 3, 3));
        assert_eq!(m.process(2).len(), 1);
    }

    #[test]
    fn prefers_max_count_until_the_last_interval() {
        let m = mm(3);
        solo(&m, req("*", 2, 4));
        solo(&m, req("*", 2, 4));
        solo(&m, req("*", 2, 4));
        // Intervals 1 and 2: a full group of 4 only.
        assert!(m.process(1).is_empty());
        assert!(m.process(2).is_empty());
        // Interval 3 is the last: any valid size from 2, as many as possible.
        let groups = m.process(3);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].len(), 3);
        assert_eq!(m.ticket_count(), 0);
    }

    #[test]
    fn full_group_forms_at_once() {
        let m = mm(5);
        for _ in 0..4 {
            solo(&m, req("*", 2, 4));
        }
        let groups = m.process(1);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].len(), 4);
    }

    #[test]
    fn expired_tickets_stay_in_the_pool_for_newer_ones() {
        let m = mm(1);
        solo(&m, req("*", 2, 3));
        // Last interval at once, but alone: stays, no longer searching.
        assert!(m.process(1).is_empty());
        assert_eq!(m.ticket_count(), 1);
        assert!(m.process(2).is_empty());
        // A newer ticket finds it.
        solo(&m, req("*", 2, 3));
        assert_eq!(m.process(3).len(), 1);
    }

    #[test]
    fn properties_and_queries() {
        let m = mm(2);
        let mut eu = req("+properties.region:europe", 2, 2);
        eu.string_properties
            .insert("region".into(), "europe".into());
        let mut asia = req("+properties.region:asia", 2, 2);
        asia.string_properties
            .insert("region".into(), "asia".into());
        let (e1, _) = solo(&m, eu.clone());
        let (_a1, _) = solo(&m, asia.clone());
        assert!(m.process(1).is_empty(), "europe and asia never pair");
        let (e2, _) = solo(&m, eu);
        let groups = m.process(2);
        assert_eq!(groups.len(), 1);
        assert_eq!(sessions(&groups[0]), HashSet::from([e1, e2]));
        assert_eq!(groups[0][0].string_properties["region"], "europe");
        assert_eq!(m.ticket_count(), 1);
    }

    #[test]
    fn must_not_and_ranges() {
        let m = mm(2);
        let mut low = req("+properties.skill:<=20 -properties.mode:casual", 2, 2);
        low.numeric_properties.insert("skill".into(), 10.0);
        let mut casual = req("*", 2, 2);
        casual.numeric_properties.insert("skill".into(), 12.0);
        casual
            .string_properties
            .insert("mode".into(), "casual".into());
        let mut high = req("*", 2, 2);
        high.numeric_properties.insert("skill".into(), 50.0);
        let (l, _) = solo(&m, low);
        solo(&m, casual);
        solo(&m, high);
        // low matches neither casual (must-not) nor high (range); casual and
        // high accept anyone, and low's query does not stop them finding low
        // (no mutual matching by default): casual, the older, pairs with low.
        let groups = m.process(1);
        assert_eq!(groups.len(), 1);
        assert!(sessions(&groups[0]).contains(&l));
    }

    #[test]
    fn rev_precision_requires_mutual_matches() {
        let m = Matchmaker::new(MatchmakerConfig {
            rev_precision: true,
            ..Default::default()
        });
        let mut picky = req("+properties.mode:ranked", 2, 2);
        picky
            .string_properties
            .insert("mode".into(), "ranked".into());
        let mut casual = req("*", 2, 2);
        casual
            .string_properties
            .insert("mode".into(), "casual".into());
        solo(&m, picky.clone());
        solo(&m, casual);
        assert!(
            m.process(1).is_empty(),
            "casual's * finds picky, but not mutually"
        );
        solo(&m, picky);
        assert_eq!(m.process(2).len(), 1);
    }

    #[test]
    fn higher_scores_win() {
        let m = mm(2);
        let mut a = req("+properties.mode:ranked properties.region:europe^5", 2, 2);
        a.string_properties.insert("mode".into(), "ranked".into());
        let mut far = req("*", 2, 2);
        far.string_properties.insert("mode".into(), "ranked".into());
        far.string_properties.insert("region".into(), "asia".into());
        let mut near = far.clone();
        near.string_properties
            .insert("region".into(), "europe".into());
        let (sa, _) = solo(&m, a);
        solo(&m, far);
        let (sn, _) = solo(&m, near);
        let groups = m.process(1);
        assert_eq!(sessions(&groups[0]), HashSet::from([sa, sn]));
    }

    #[test]
    fn a_query_that_matches_nothing_never_matches() {
        let m = mm(1);
        solo(&m, req("+properties.nothing:here", 2, 2));
        let (b, _) = solo(&m, req("+properties.nothing:here", 2, 2));
        assert!(m.process(1).is_empty());
        assert!(m.process(2).is_empty());
        assert_eq!(m.ticket_count(), 2);
        assert!(m.remove_session_all(b) == 1);
    }

    #[test]
    fn count_ranges_must_be_compatible() {
        let m = mm(1);
        solo(&m, req("*", 2, 4));
        solo(&m, req("*", 6, 8));
        assert!(m.process(1).is_empty());
        assert!(m.process(2).is_empty());
    }

    #[test]
    fn count_multiple_shapes_groups() {
        let m = mm(1);
        let mut r = req("*", 2, 6);
        r.count_multiple = Some(2);
        for _ in 0..5 {
            solo(&m, r.clone());
        }
        let groups = m.process(1);
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        assert!(sizes.iter().all(|s| s % 2 == 0), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 4, "{sizes:?}");
        assert_eq!(m.ticket_count(), 1);
    }

    #[test]
    fn count_multiple_drops_the_newest() {
        let m = mm(1);
        let mut r = req("*", 2, 4);
        r.count_multiple = Some(2);
        let (oldest, _) = solo(&m, r.clone());
        let (second, _) = solo(&m, r.clone());
        let (newest, _) = solo(&m, r);
        let groups = m.process(1);
        assert_eq!(groups.len(), 1);
        assert_eq!(sessions(&groups[0]), HashSet::from([oldest, second]));
        assert_eq!(m.ticket_count(), 1);
        assert!(m.remove_session_all(newest) == 1);
    }

    #[test]
    fn validation_errors() {
        let m = mm(2);
        let p = || vec![presence()];
        let add = |r: TicketRequest| m.add(p(), None, None, r, 0).unwrap_err();
        assert_eq!(add(req("*", 1, 2)), MatchmakerError::MinCount);
        assert_eq!(add(req("*", 3, 2)), MatchmakerError::MaxCount);
        let mut r = req("*", 2, 4);
        r.count_multiple = Some(0);
        assert_eq!(add(r.clone()), MatchmakerError::CountMultiple);
        r.count_multiple = Some(3);
        assert_eq!(add(r), MatchmakerError::MinNotMultiple);
        let mut r = req("*", 2, 5);
        r.count_multiple = Some(2);
        assert_eq!(add(r), MatchmakerError::MaxNotMultiple);
        assert!(matches!(
            add(req("+properties.x:", 2, 2)),
            MatchmakerError::Query(_)
        ));
        let e = RtError::from(add(req("+properties.x:", 2, 2)));
        assert_eq!(e.code, RtCode::RuntimeException);
        assert!(e.message.contains("expected a value"), "{}", e.message);
        assert_eq!(
            m.add(vec![], None, None, req("*", 2, 2), 0).unwrap_err(),
            MatchmakerError::NoPresences
        );
        let dup = presence();
        assert_eq!(
            m.add(
                vec![dup.clone(), dup],
                None,
                Some("p".into()),
                req("*", 2, 2),
                0
            )
            .unwrap_err(),
            MatchmakerError::DuplicateSession
        );
        assert_eq!(
            m.add(
                vec![presence(), presence(), presence()],
                None,
                Some("p".into()),
                req("*", 2, 2),
                0
            )
            .unwrap_err(),
            MatchmakerError::TooLarge(3)
        );
        assert_eq!(m.ticket_count(), 0, "nothing was added");
    }

    #[test]
    fn ticket_limit_per_session() {
        let m = mm(2);
        let p = presence();
        let s = p.session_id;
        for _ in 0..3 {
            m.add(vec![p.clone()], Some(s), None, req("*", 2, 2), 0)
                .unwrap();
        }
        assert_eq!(
            m.add(vec![p.clone()], Some(s), None, req("*", 2, 2), 0),
            Err(MatchmakerError::TooManyTickets(3))
        );
        // Another session is unaffected.
        solo(&m, req("+properties.none:x", 2, 2));
        assert_eq!(m.remove_session_all(s), 3);
        m.add(vec![p], Some(s), None, req("*", 2, 2), 0).unwrap();
    }

    #[test]
    fn a_session_never_matches_itself() {
        let m = mm(1);
        let p = presence();
        let s = p.session_id;
        m.add(vec![p.clone()], Some(s), None, req("*", 2, 2), 0)
            .unwrap();
        m.add(vec![p], Some(s), None, req("*", 2, 2), 0).unwrap();
        assert!(m.process(1).is_empty());
    }

    #[test]
    fn removal() {
        let m = mm(2);
        let (a, ta) = solo(&m, req("*", 2, 2));
        let (b, _) = solo(&m, req("*", 2, 2));
        assert_eq!(
            m.remove_session(b, &ta),
            Err(MatchmakerError::TicketNotFound)
        );
        assert_eq!(
            m.remove_session(a, "nope"),
            Err(MatchmakerError::TicketNotFound)
        );
        m.remove_session(a, &ta).unwrap();
        assert_eq!(
            m.remove_session(a, &ta),
            Err(MatchmakerError::TicketNotFound)
        );
        assert!(m.process(1).is_empty());
        assert_eq!(m.ticket_count(), 1);
        assert_eq!(m.remove_session_all(b), 1);
        assert_eq!(m.remove_session_all(b), 0);
        assert_eq!(m.stats().ticket_count, 0);
    }

    #[test]
    fn party_tickets() {
        let m = mm(2);
        let members = vec![presence(), presence()];
        let party = "party-1".to_string();
        let t = m
            .add(
                members.clone(),
                None,
                Some(party.clone()),
                req("*", 4, 4),
                5,
            )
            .unwrap();
        // A member cannot remove the party's ticket as its own.
        assert_eq!(
            m.remove_session(members[0].session_id, &t),
            Err(MatchmakerError::TicketNotFound)
        );
        let (a, _) = solo(&m, req("*", 4, 4));
        let (b, _) = solo(&m, req("*", 4, 4));
        let groups = m.process(10);
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        assert_eq!(g.len(), 4);
        assert_eq!(m.stats().completions.len(), 4, "one completion per user");
        assert!(sessions(g).contains(&a) && sessions(g).contains(&b));
        assert_eq!(
            g.iter()
                .filter(|e| e.party_id.as_deref() == Some("party-1"))
                .count(),
            2
        );
        // Limits and removal by party.
        for _ in 0..3 {
            m.add(
                members.clone(),
                None,
                Some(party.clone()),
                req("*", 4, 4),
                5,
            )
            .unwrap();
        }
        assert_eq!(
            m.add(
                vec![presence()],
                None,
                Some(party.clone()),
                req("*", 4, 4),
                5
            ),
            Err(MatchmakerError::TooManyPartyTickets(3))
        );
        assert_eq!(m.remove_party_all(&party), 3);
        let t = m
            .add(
                members.clone(),
                None,
                Some(party.clone()),
                req("*", 4, 4),
                5,
            )
            .unwrap();
        assert_eq!(
            m.remove_party("other", &t),
            Err(MatchmakerError::TicketNotFound)
        );
        m.remove_party(&party, &t).unwrap();
        assert_eq!(m.ticket_count(), 0);
        // A member leaving removes the party ticket too.
        m.add(
            members.clone(),
            None,
            Some(party.clone()),
            req("*", 4, 4),
            5,
        )
        .unwrap();
        assert_eq!(m.remove_session_all(members[1].session_id), 1);
        assert_eq!(m.ticket_count(), 0);
    }

    /// Regression guard for the unlocked search: a ticket removed (its
    /// socket went) between the search and the take-out must not be
    /// matched, and the rest of its group stays in the pool.
    #[test]
    fn a_group_whose_ticket_left_during_the_search_is_dropped() {
        let m = mm(2);
        let (a, _) = solo(&m, req("*", 2, 2));
        solo(&m, req("*", 2, 2));
        let plan = m.search();
        assert_eq!(plan.groups.len(), 1);
        assert_eq!(m.remove_session_all(a), 1);
        assert!(m.take_out(plan, 1).is_empty());
        assert_eq!(m.ticket_count(), 1);
        assert!(m.stats().completions.is_empty());
    }

    #[test]
    fn two_tickets_of_one_party_never_match_each_other() {
        let m = mm(1);
        m.add(vec![presence()], None, Some("p".into()), req("*", 2, 2), 0)
            .unwrap();
        m.add(vec![presence()], None, Some("p".into()), req("*", 2, 2), 0)
            .unwrap();
        assert!(m.process(1).is_empty());
    }

    #[test]
    fn stats_report_oldest_and_completions() {
        let m = mm(2);
        let p = presence();
        m.add(
            vec![p.clone()],
            Some(p.session_id),
            None,
            req("*", 2, 2),
            3_000_000_000,
        )
        .unwrap();
        let s = m.stats();
        assert_eq!(s.ticket_count, 1);
        assert_eq!(s.oldest_ticket_create_time.unwrap().seconds, 3);
        for i in 0..12 {
            let p = presence();
            m.add(vec![p.clone()], Some(p.session_id), None, req("*", 2, 2), i)
                .unwrap();
        }
        m.process(9_000_000_000);
        let s = m.stats();
        assert_eq!(s.ticket_count, 1);
        assert_eq!(s.completions.len(), STATS_COMPLETIONS);
        assert_eq!(s.completions[0].complete_time.unwrap().seconds, 9);
    }

    #[test]
    fn match_tokens() {
        let mid = "6f1f8f5e-4c0e-4d8e-9a55-3b1c2a7d9e01.";
        let token = match_token("key", mid, 100);
        assert_eq!(verify_match_token("key", &token, 100).unwrap(), mid);
        assert_eq!(verify_match_token("key", &token, 129).unwrap(), mid);
        for bad in ["", "abc.", "6f1f8f5e-4c0e-4d8e-9a55-3b1c2a7d9e01"] {
            let t = match_token("key", bad, 100);
            assert!(verify_match_token("key", &t, 100).is_err(), "{bad:?}");
        }
        assert!(
            verify_match_token("key", &token, 130)
                .unwrap_err()
                .message
                .contains("expired")
        );
        assert!(verify_match_token("other", &token, 100).is_err());
        assert!(verify_match_token("key", "garbage", 100).is_err());
        // Nakama's claim names, readable by any JWT library.
        let payload = token.split('.').nth(1).unwrap();
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap();
        let v: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(v, json!({"mid": mid, "exp": 130}));
    }
}
