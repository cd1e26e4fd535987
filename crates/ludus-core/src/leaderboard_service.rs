//! `LeaderboardService`: the one entry point of leaderboards and tournaments
//! for REST handlers, Lua and native modules. It keeps every board in memory
//! (loaded at start, changed only through it), a [`RankIndex`] per board
//! period (built from the store on first use), applies Nakama's rules and
//! errors, and runs the schedules (resets, tournament ends) once per period
//! across restarts: the store records the last period that fired, and only
//! the caller that records it runs the hook.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use tokio::sync::{OnceCell, watch};
use uuid::Uuid;

use crate::error::{ApiError, Code};
use crate::leaderboard::{
    self, Leaderboard, LeaderboardRecord, Operator, RecordWrite, SortOrder, TournamentLimits,
    WriteOutcome,
};
use crate::rank_index::{RankIndex, Ranked};
use crate::schedule::{Schedule, tournament_deadlines};
use crate::store::{JoinOutcome, ScheduleKind, Store, TournamentJoin};

/// The wall clock in UNIX seconds; tests pass one driven by tokio's clock.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Who asks: a client (its user id; authoritative boards refuse it) or the
/// server (modules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    User(Uuid),
    Server,
}

/// A board with its parsed schedule.
#[derive(Debug)]
pub struct Board {
    pub def: Leaderboard,
    schedule: Option<Schedule>,
}

impl Board {
    /// The expiry of the period `now` falls in (0: records never expire),
    /// and whether records of it can exist (a tournament past its expiry
    /// has none).
    fn current_expiry(&self, now: i64) -> (i64, bool) {
        if self.def.is_tournament() {
            let (_, _, expiry) = self.deadlines(now);
            (expiry, expiry == 0 || expiry > now)
        } else {
            let expiry = self
                .schedule
                .as_ref()
                .and_then(|s| s.next_after(now))
                .unwrap_or(0);
            (expiry, true)
        }
    }

    fn deadlines(&self, now: i64) -> (i64, i64, i64) {
        tournament_deadlines(
            self.def.start_time,
            self.def.end_time,
            self.def.duration as i64,
            self.schedule.as_ref(),
            now,
        )
    }

    /// Nakama's `prev_reset` and `next_reset` of a leaderboard.
    pub fn resets(&self, now: i64) -> (i64, i64) {
        match &self.schedule {
            Some(s) if self.def.start_time <= now => (
                s.last_at_or_before(now).unwrap_or(0),
                s.next_after(now).unwrap_or(0),
            ),
            Some(s) => (0, s.next_after(now).unwrap_or(0)),
            None => (0, 0),
        }
    }
}

/// A tournament as clients see it: its configuration and its current period.
#[derive(Debug, Clone, PartialEq)]
pub struct TournamentView {
    pub def: Leaderboard,
    pub size: u32,
    pub can_enter: bool,
    pub start_active: i64,
    pub end_active: i64,
    pub prev_reset: i64,
    pub next_reset: i64,
}

/// A page of records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordList {
    pub records: Vec<LeaderboardRecord>,
    pub owner_records: Vec<LeaderboardRecord>,
    pub next_cursor: String,
    pub prev_cursor: String,
    pub rank_count: i64,
}

/// What a new leaderboard or tournament is made of (Nakama's arguments).
#[derive(Debug, Clone, PartialEq)]
pub struct BoardSpec {
    pub id: String,
    pub authoritative: bool,
    pub sort_order: SortOrder,
    pub operator: Operator,
    pub reset_schedule: String,
    pub metadata: String,
    pub enable_ranks: bool,
    /// Tournaments only (duration > 0).
    pub title: String,
    pub description: String,
    pub category: u32,
    pub start_time: i64,
    pub end_time: i64,
    pub duration: u32,
    pub max_size: u32,
    pub max_num_score: u32,
    pub join_required: bool,
}

impl BoardSpec {
    pub fn leaderboard(id: &str) -> BoardSpec {
        BoardSpec {
            id: id.to_owned(),
            authoritative: false,
            sort_order: SortOrder::Descending,
            operator: Operator::Best,
            reset_schedule: String::new(),
            metadata: String::new(),
            enable_ranks: true,
            title: String::new(),
            description: String::new(),
            category: 0,
            start_time: 0,
            end_time: 0,
            duration: 0,
            max_size: 0,
            max_num_score: 0,
            join_required: false,
        }
    }
}

/// Modules' schedule callbacks (`register_leaderboard_reset`,
/// `register_tournament_end`, `register_tournament_reset`).
#[async_trait]
pub trait ScheduleHooks: Send + Sync {
    async fn leaderboard_reset(&self, board: &Leaderboard, reset: i64);
    async fn tournament_end(&self, tournament: &TournamentView, end: i64, reset: i64);
    async fn tournament_reset(&self, tournament: &TournamentView, end: i64, reset: i64);
}

#[derive(Serialize, Deserialize)]
struct Cursor {
    /// Next page (true) or previous page.
    n: bool,
    b: String,
    e: i64,
    s: i64,
    ss: i64,
    /// The owner id as a number (uuid's serde support is not enabled).
    o: u128,
}

fn encode_cursor(c: &Cursor) -> String {
    base64::engine::general_purpose::URL_SAFE.encode(serde_json::to_vec(c).unwrap_or_default())
}

fn decode_cursor(s: &str, board: &str, expiry: i64) -> Result<Option<Cursor>, ApiError> {
    if s.is_empty() {
        return Ok(None);
    }
    let invalid = || ApiError::invalid("cursor is invalid or expired");
    let bytes = base64::engine::general_purpose::URL_SAFE
        .decode(s)
        .map_err(|_| invalid())?;
    let c: Cursor = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if c.b != board || c.e != expiry {
        return Err(invalid());
    }
    Ok(Some(c))
}

type Window = Arc<OnceCell<RwLock<RankIndex>>>;

pub struct LeaderboardService {
    store: Arc<dyn Store>,
    clock: Clock,
    boards: RwLock<HashMap<String, Arc<Board>>>,
    windows: RwLock<HashMap<(String, i64), Window>>,
    /// The last period each board's schedule is known to have fired for,
    /// so the loop asks the store only when a new period is due.
    fired: std::sync::Mutex<HashMap<(String, ScheduleKind), i64>>,
    /// Striped by (board, owner): a record's store change and its rank
    /// index update happen under one of these, so a write and a delete of
    /// the same owner reach the index in the order they reached the store.
    owner_locks: Vec<tokio::sync::Mutex<()>>,
}

/// Stripes of [`LeaderboardService::owner_locks`].
const OWNER_LOCK_STRIPES: usize = 256;

fn not_found(tournament: bool) -> ApiError {
    if tournament {
        ApiError::not_found("tournament not found")
    } else {
        ApiError::not_found("leaderboard not found")
    }
}

impl LeaderboardService {
    pub fn new(store: Arc<dyn Store>) -> LeaderboardService {
        Self::with_clock(store, Arc::new(crate::unix_now))
    }

    pub fn with_clock(store: Arc<dyn Store>, clock: Clock) -> LeaderboardService {
        LeaderboardService {
            store,
            clock,
            boards: RwLock::new(HashMap::new()),
            windows: RwLock::new(HashMap::new()),
            fired: std::sync::Mutex::new(HashMap::new()),
            owner_locks: (0..OWNER_LOCK_STRIPES)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
        }
    }

    fn now(&self) -> i64 {
        (self.clock)()
    }

    /// The lock that orders one owner's record changes on one board.
    async fn lock_owner(&self, id: &str, owner: Uuid) -> tokio::sync::MutexGuard<'_, ()> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (id, owner).hash(&mut h);
        self.owner_locks[(h.finish() as usize) % OWNER_LOCK_STRIPES]
            .lock()
            .await
    }

    /// Loads every board and builds the rank index of each one's current
    /// period, so the first reads after a restart are as fast as later ones.
    pub async fn load(&self) -> Result<(), ApiError> {
        let boards = self.store.leaderboards_load().await?;
        let now = self.now();
        let mut loaded = Vec::with_capacity(boards.len());
        for def in boards {
            let schedule = match &def.reset_schedule {
                Some(s) => Some(Schedule::parse(s)?),
                None => None,
            };
            loaded.push(Arc::new(Board { def, schedule }));
        }
        {
            let mut map = self.boards.write().unwrap_or_else(|e| e.into_inner());
            for b in &loaded {
                map.insert(b.def.id.clone(), b.clone());
            }
        }
        for b in loaded {
            let (expiry, possible) = b.current_expiry(now);
            if possible {
                self.window(&b, expiry).await?;
            }
        }
        Ok(())
    }

    /// Forgets every board and rank index and loads them again from the
    /// store, after a console wipe deleted records or boards under them.
    pub async fn reload(&self) -> Result<(), ApiError> {
        self.boards
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.windows
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.fired.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.load().await
    }

    pub fn get(&self, id: &str) -> Option<Arc<Board>> {
        self.boards
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// A board for reading: the leaderboard calls read tournaments too (as
    /// Nakama's do; its stock tournament module lists a tournament's records
    /// with `nk.leaderboard_records_list`), the tournament calls only
    /// tournaments.
    fn readable(&self, id: &str, tournament: bool) -> Result<Arc<Board>, ApiError> {
        match self.get(id) {
            Some(b) if b.def.is_tournament() || !tournament => Ok(b),
            _ => Err(not_found(tournament)),
        }
    }

    fn board(&self, id: &str, tournament: bool) -> Result<Arc<Board>, ApiError> {
        match self.get(id) {
            Some(b) if b.def.is_tournament() == tournament => Ok(b),
            _ => Err(not_found(tournament)),
        }
    }

    /// The rank index of one period, built from the store on first use.
    async fn window(&self, board: &Board, expiry: i64) -> Result<Window, ApiError> {
        let key = (board.def.id.clone(), expiry);
        let existing = self
            .windows
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        let cell = match existing {
            Some(c) => c,
            None => self
                .windows
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .entry(key)
                .or_default()
                .clone(),
        };
        cell.get_or_try_init(|| async {
            let scores = self.store.leaderboard_scores(&board.def.id, expiry).await?;
            let index = RankIndex::build(
                board.def.sort_order,
                scores
                    .into_iter()
                    .map(|s| (s.owner, s.score, s.subscore, s.num_score)),
            );
            Ok::<_, ApiError>(RwLock::new(index))
        })
        .await?;
        Ok(cell)
    }

    /// Creates a leaderboard or tournament; an existing one with the same id
    /// is returned as it is (Nakama's behaviour), unless it is of the other
    /// kind. Returns the board and whether it was created.
    pub async fn create(&self, spec: BoardSpec) -> Result<(Leaderboard, bool), ApiError> {
        leaderboard::check_id(&spec.id)?;
        let tournament = spec.duration > 0;
        let schedule = if spec.reset_schedule.is_empty() {
            None
        } else {
            Some(Schedule::parse(&spec.reset_schedule)?)
        };
        let metadata = leaderboard::check_metadata(&spec.metadata)?;
        let now = self.now();
        if let Some(existing) = self.get(&spec.id) {
            if existing.def.is_tournament() != tournament {
                return Err(ApiError::new(
                    Code::AlreadyExists,
                    "cannot create: a leaderboard or tournament with this id already exists",
                ));
            }
            return Ok((existing.def.clone(), false));
        }
        let mut def = Leaderboard::new(&spec.id, now);
        def.authoritative = spec.authoritative;
        def.sort_order = spec.sort_order;
        def.operator = spec.operator;
        def.reset_schedule = schedule.as_ref().map(|s| s.as_str().to_owned());
        def.metadata = metadata;
        def.enable_ranks = spec.enable_ranks;
        if tournament {
            if spec.start_time < 0 || spec.end_time < 0 {
                return Err(ApiError::invalid(
                    "tournament start and end time must be >= 0",
                ));
            }
            if spec.end_time > 0 && spec.end_time <= spec.start_time.max(0) {
                return Err(ApiError::invalid(
                    "tournament end time must be after its start time",
                ));
            }
            if spec.end_time > 0 && spec.end_time < now {
                return Err(ApiError::invalid(
                    "tournament end time must not be in the past",
                ));
            }
            def.title = spec.title;
            def.description = spec.description;
            def.category = spec.category;
            def.duration = spec.duration;
            def.start_time = if spec.start_time == 0 {
                now
            } else {
                spec.start_time
            };
            def.end_time = spec.end_time;
            def.join_required = spec.join_required;
            if spec.max_size > 0 {
                def.max_size = spec.max_size;
            }
            if spec.max_num_score > 0 {
                def.max_num_score = spec.max_num_score;
            }
        }
        let (def, created) = self.store.leaderboard_create(&def).await?;
        let board = Arc::new(Board {
            schedule: match &def.reset_schedule {
                Some(s) => Some(Schedule::parse(s)?),
                None => None,
            },
            def: def.clone(),
        });
        self.boards
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(def.id.clone(), board);
        Ok((def, created))
    }

    /// Deletes a leaderboard (`tournament` false) or tournament and its records.
    pub async fn delete(&self, id: &str, tournament: bool) -> Result<(), ApiError> {
        let Ok(_) = self.board(id, tournament) else {
            // Nakama: deleting what does not exist succeeds.
            return Ok(());
        };
        self.store.leaderboard_delete(id).await?;
        self.boards
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        self.windows
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(b, _), _| b != id);
        self.fired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(b, _), _| b != id);
        Ok(())
    }

    /// Takes a deleted user out of every rank index in memory; the store
    /// deleted their records with the user (in the same transaction).
    pub fn forget_owner(&self, owner: Uuid) {
        let windows: Vec<Window> = self
            .windows
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for window in windows {
            if let Some(index) = window.get() {
                index
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(owner);
            }
        }
    }

    /// Plain leaderboards (not tournaments) by id, leaving out unknown ids.
    pub fn leaderboards_get(&self, ids: &[String]) -> Vec<Arc<Board>> {
        ids.iter()
            .filter_map(|id| self.get(id))
            .filter(|b| !b.def.is_tournament())
            .collect()
    }

    /// Up to `limit` leaderboards (tournaments excluded) in id order after
    /// the cursor; returns the next cursor (the last id) when more remain.
    pub fn leaderboard_list(
        &self,
        limit: usize,
        cursor: &str,
    ) -> Result<(Vec<Arc<Board>>, String), ApiError> {
        if !(1..=10_000).contains(&limit) {
            return Err(ApiError::invalid("limit must be between 1 and 10000"));
        }
        let mut all: Vec<Arc<Board>> = self
            .boards
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|b| !b.def.is_tournament() && b.def.id.as_str() > cursor)
            .cloned()
            .collect();
        all.sort_by(|a, b| a.def.id.cmp(&b.def.id));
        let more = all.len() > limit;
        all.truncate(limit);
        let next = if more {
            all.last().map(|b| b.def.id.clone()).unwrap_or_default()
        } else {
            String::new()
        };
        Ok((all, next))
    }

    /// Turns ranks off for a leaderboard (`nk.leaderboard_rank_disable`).
    pub async fn rank_disable(&self, id: &str, tournament: bool) -> Result<(), ApiError> {
        let board = self.board(id, tournament)?;
        self.store.leaderboard_set_ranks(id, false).await?;
        let mut def = board.def.clone();
        def.enable_ranks = false;
        let board = Arc::new(Board {
            def,
            schedule: board.schedule.clone(),
        });
        self.boards
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_owned(), board);
        Ok(())
    }

    /// Submits a score (`tournament` chooses which kind of board `id` must be).
    #[allow(clippy::too_many_arguments)]
    pub async fn write(
        &self,
        caller: Caller,
        id: &str,
        tournament: bool,
        owner: Uuid,
        username: Option<String>,
        score: i64,
        subscore: i64,
        metadata: Option<String>,
        override_operator: Option<Operator>,
    ) -> Result<LeaderboardRecord, ApiError> {
        let board = self.board(id, tournament)?;
        let def = &board.def;
        if def.authoritative && caller != Caller::Server {
            return Err(ApiError::new(
                Code::PermissionDenied,
                if tournament {
                    "tournament only allows authoritative score submissions"
                } else {
                    "leaderboard only allows authoritative score submissions"
                },
            ));
        }
        let metadata = match metadata {
            Some(m) if !m.is_empty() => Some(leaderboard::check_metadata(&m)?),
            _ => None,
        };
        let now = self.now();
        let (expiry, limits) = if tournament {
            let (start_active, end_active, expiry) = board.deadlines(now);
            if start_active > now || end_active <= now {
                return Err(ApiError::new(
                    Code::FailedPrecondition,
                    "tournament is not active and cannot accept new scores",
                ));
            }
            let limits = TournamentLimits {
                join_required: def.join_required,
                max_num_score: def.max_num_score,
                max_size: def.max_size,
            };
            (expiry, Some(limits))
        } else {
            (board.current_expiry(now).0, None)
        };
        let w = RecordWrite {
            leaderboard_id: id.to_owned(),
            owner_id: owner,
            username: username.filter(|u| !u.is_empty()),
            score,
            subscore,
            metadata,
            operator: override_operator.unwrap_or(def.operator),
            sort_order: def.sort_order,
            expiry_time: expiry,
            tournament: limits,
        };
        let window = self.window(&board, expiry).await?;
        let _ordered = self.lock_owner(id, owner).await;
        let outcome = self.store.leaderboard_record_write(&w, now).await?;
        let mut record = match outcome {
            WriteOutcome::Written(r) => {
                if let Some(index) = window.get() {
                    index.write().unwrap_or_else(|e| e.into_inner()).upsert(
                        owner,
                        r.score,
                        r.subscore,
                        r.num_score,
                    );
                }
                r
            }
            WriteOutcome::Unchanged(r) => r,
            WriteOutcome::Rejected(rejection) => return Err(rejection.into()),
        };
        if def.enable_ranks
            && let Some(index) = window.get()
        {
            let index = index.read().unwrap_or_else(|e| e.into_inner());
            record.rank = index.rank(owner).unwrap_or(0) as i64;
        }
        Ok(record)
    }

    /// Deletes an owner's record of the current period.
    pub async fn delete_record(
        &self,
        caller: Caller,
        id: &str,
        tournament: bool,
        owner: Uuid,
    ) -> Result<(), ApiError> {
        let board = self.board(id, tournament)?;
        if board.def.authoritative && caller != Caller::Server {
            return Err(ApiError::new(
                Code::PermissionDenied,
                "only the server may delete scores of an authoritative board",
            ));
        }
        let (expiry, _) = board.current_expiry(self.now());
        let window = self.window(&board, expiry).await?;
        let _ordered = self.lock_owner(id, owner).await;
        self.store
            .leaderboard_record_delete(id, owner, expiry)
            .await?;
        if let Some(index) = window.get() {
            index
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .remove(owner);
        }
        Ok(())
    }

    fn resolve_expiry(&self, board: &Board, expiry_override: i64) -> (i64, bool) {
        if expiry_override != 0 {
            return (expiry_override, true);
        }
        board.current_expiry(self.now())
    }

    /// Records of a period: a page of `limit` from the cursor (none when
    /// `limit` is `None`) and the records of `owners`.
    pub async fn records_list(
        &self,
        id: &str,
        tournament: bool,
        owners: &[Uuid],
        limit: Option<usize>,
        cursor: &str,
        expiry_override: i64,
    ) -> Result<RecordList, ApiError> {
        self.list_from(id, tournament, owners, limit, cursor, expiry_override, None)
            .await
    }

    /// A listing from the cursor or, when `at` is set, from that 0-based
    /// position.
    #[allow(clippy::too_many_arguments)]
    async fn list_from(
        &self,
        id: &str,
        tournament: bool,
        owners: &[Uuid],
        limit: Option<usize>,
        cursor: &str,
        expiry_override: i64,
        at: Option<usize>,
    ) -> Result<RecordList, ApiError> {
        let board = self.readable(id, tournament)?;
        if tournament
            && expiry_override == 0
            && board.def.end_time > 0
            && board.def.end_time <= self.now()
        {
            return Err(ApiError::not_found("tournament has ended"));
        }
        let (expiry, possible) = self.resolve_expiry(&board, expiry_override);
        if !possible {
            return Ok(RecordList::default());
        }
        let cursor = decode_cursor(cursor, id, expiry)?;
        let window = self.window(&board, expiry).await?;
        let (page, rank_count, owner_ranks) = {
            let index = window
                .get()
                .ok_or_else(|| ApiError::internal("rank index missing"))?
                .read()
                .unwrap_or_else(|e| e.into_inner());
            let page = match limit {
                None => Page::default(),
                Some(limit) => page_from(&index, limit, cursor.as_ref(), at),
            };
            let owner_ranks: HashMap<Uuid, i64> = owners
                .iter()
                .filter_map(|o| index.rank(*o).map(|r| (*o, r as i64)))
                .collect();
            (page, index.len() as i64, owner_ranks)
        };
        let mut wanted: Vec<Uuid> = page.items.iter().map(|r| r.owner).collect();
        wanted.extend_from_slice(owners);
        wanted.sort_unstable();
        wanted.dedup();
        let fetched = if wanted.is_empty() {
            Vec::new()
        } else {
            self.store
                .leaderboard_records_get(id, expiry, &wanted)
                .await?
        };
        let by_owner: HashMap<Uuid, LeaderboardRecord> =
            fetched.into_iter().map(|r| (r.owner_id, r)).collect();
        let records: Vec<LeaderboardRecord> = page
            .items
            .iter()
            .filter_map(|ranked| {
                let mut r = by_owner.get(&ranked.owner)?.clone();
                r.rank = ranked.rank as i64;
                Some(r)
            })
            .collect();
        let mut owner_records: Vec<LeaderboardRecord> = owners
            .iter()
            .filter_map(|o| {
                let mut r = by_owner.get(o)?.clone();
                r.rank = if board.def.enable_ranks {
                    owner_ranks.get(o).copied().unwrap_or(0)
                } else {
                    0
                };
                Some(r)
            })
            .collect();
        owner_records.sort_by(|a, b| {
            crate::rank_index::compare(
                board.def.sort_order,
                (a.score, a.subscore, a.owner_id),
                (b.score, b.subscore, b.owner_id),
            )
        });
        owner_records.dedup_by(|a, b| a.owner_id == b.owner_id);
        let cursor_at = |r: &Ranked, next: bool| {
            encode_cursor(&Cursor {
                n: next,
                b: id.to_owned(),
                e: expiry,
                s: r.score,
                ss: r.subscore,
                o: r.owner.as_u128(),
            })
        };
        Ok(RecordList {
            next_cursor: page
                .more_after
                .then(|| page.items.last().map(|r| cursor_at(r, true)))
                .flatten()
                .unwrap_or_default(),
            prev_cursor: page
                .more_before
                .then(|| page.items.first().map(|r| cursor_at(r, false)))
                .flatten()
                .unwrap_or_default(),
            records,
            owner_records,
            rank_count: if board.def.enable_ranks {
                rank_count
            } else {
                0
            },
        })
    }

    /// Records around an owner (Nakama's haystack): `limit` records with the
    /// owner in the middle where there are enough on both sides; with a
    /// cursor, the page it points at.
    pub async fn records_around(
        &self,
        id: &str,
        tournament: bool,
        owner: Uuid,
        limit: usize,
        cursor: &str,
        expiry_override: i64,
    ) -> Result<RecordList, ApiError> {
        if !cursor.is_empty() {
            return self
                .records_list(id, tournament, &[], Some(limit), cursor, expiry_override)
                .await;
        }
        let board = self.readable(id, tournament)?;
        let (expiry, possible) = self.resolve_expiry(&board, expiry_override);
        if !possible {
            return Ok(RecordList::default());
        }
        let window = self.window(&board, expiry).await?;
        let start = {
            let index = window
                .get()
                .ok_or_else(|| ApiError::internal("rank index missing"))?
                .read()
                .unwrap_or_else(|e| e.into_inner());
            let Some(rank) = index.rank(owner) else {
                return Ok(RecordList::default());
            };
            let pos = rank as usize - 1;
            let start = pos.saturating_sub(limit / 2);
            let end = (start + limit).min(index.len());
            end.saturating_sub(limit)
        };
        self.list_from(
            id,
            tournament,
            &[],
            Some(limit),
            "",
            expiry_override,
            Some(start),
        )
        .await
    }

    /// A cursor whose next page starts at 1-based `rank` (empty for rank 1),
    /// as `nk.leaderboard_records_list_cursor_from_rank`.
    pub async fn cursor_from_rank(
        &self,
        id: &str,
        rank: u64,
        expiry_override: i64,
    ) -> Result<String, ApiError> {
        if rank < 1 {
            return Err(ApiError::invalid("invalid rank - must be > 1"));
        }
        let board = self.readable(id, false)?;
        let (expiry, possible) = self.resolve_expiry(&board, expiry_override);
        if !possible {
            return Err(ApiError::invalid("invalid expiry"));
        }
        if rank == 1 {
            return Ok(String::new());
        }
        let window = self.window(&board, expiry).await?;
        let before = window
            .get()
            .ok_or_else(|| ApiError::internal("rank index missing"))?
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .range(rank as usize - 2, 1);
        let Some(r) = before.first() else {
            return Err(ApiError::not_found(format!(
                "failed to get cursor from rank: no record at rank {}",
                rank - 1
            )));
        };
        Ok(encode_cursor(&Cursor {
            n: true,
            b: id.to_owned(),
            e: expiry,
            s: r.score,
            ss: r.subscore,
            o: r.owner.as_u128(),
        }))
    }

    /// Joins a tournament period (a no-op unless it requires joining).
    pub async fn tournament_join(
        &self,
        id: &str,
        owner: Uuid,
        username: &str,
    ) -> Result<(), ApiError> {
        let board = self.board(id, true)?;
        if !board.def.join_required {
            return Ok(());
        }
        let now = self.now();
        let (_, end_active, expiry) = board.deadlines(now);
        if end_active <= now {
            return Err(ApiError::invalid(
                "tournament is not active and cannot accept new joins",
            ));
        }
        let window = self.window(&board, expiry).await?;
        let join = TournamentJoin {
            id: id.to_owned(),
            owner,
            username: username.to_owned(),
            expiry,
            max_num_score: board.def.max_num_score,
            max_size: board.def.max_size,
        };
        let _ordered = self.lock_owner(id, owner).await;
        match self.store.tournament_join(&join, now).await? {
            JoinOutcome::Joined => {
                if let Some(index) = window.get() {
                    index
                        .write()
                        .unwrap_or_else(|e| e.into_inner())
                        .upsert(owner, 0, 0, 0);
                }
                Ok(())
            }
            JoinOutcome::AlreadyJoined => Ok(()),
            JoinOutcome::Full => Err(ApiError::invalid(
                "tournament cannot be joined as it has reached its max size",
            )),
        }
    }

    /// Gives an owner `count` more attempts in the current period.
    pub async fn tournament_add_attempt(
        &self,
        id: &str,
        owner: Uuid,
        count: i64,
    ) -> Result<(), ApiError> {
        if count == 0 {
            return Ok(());
        }
        let board = self.board(id, true)?;
        let now = self.now();
        let (_, end_active, expiry) = board.deadlines(now);
        if end_active <= now {
            return Err(ApiError::new(
                Code::FailedPrecondition,
                "tournament is not active",
            ));
        }
        self.store
            .tournament_add_attempt(id, owner, expiry, count)
            .await?;
        Ok(())
    }

    /// A tournament with its current period.
    pub fn tournament_view(&self, board: &Board) -> TournamentView {
        let now = self.now();
        let (start_active, end_active, expiry) = board.deadlines(now);
        let size = self
            .windows
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(board.def.id.clone(), expiry))
            .and_then(|w| {
                w.get()
                    .map(|i| i.read().unwrap_or_else(|e| e.into_inner()).len())
            })
            .unwrap_or(0) as u32;
        let mut can_enter = start_active <= now && end_active >= now;
        if size >= board.def.max_size {
            can_enter = false;
        }
        let prev_reset = match &board.schedule {
            Some(s) if board.def.start_time <= now => s.last_at_or_before(now).unwrap_or(0),
            _ => 0,
        };
        TournamentView {
            def: board.def.clone(),
            size,
            can_enter,
            start_active,
            end_active,
            prev_reset,
            next_reset: expiry,
        }
    }

    /// Up to `limit` leaderboards and tournaments with their current
    /// period, in id order after `cursor` (the console's list).
    pub fn board_views(&self, limit: usize, cursor: &str) -> Vec<TournamentView> {
        let mut boards: Vec<Arc<Board>> = self
            .boards
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|b| b.def.id.as_str() > cursor)
            .cloned()
            .collect();
        boards.sort_by(|a, b| a.def.id.cmp(&b.def.id));
        boards.truncate(limit);
        boards.iter().map(|b| self.tournament_view(b)).collect()
    }

    /// How many leaderboards and tournaments there are.
    pub fn board_count(&self) -> usize {
        self.boards.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn tournaments_get(&self, ids: &[String]) -> Vec<TournamentView> {
        ids.iter()
            .filter_map(|id| self.get(id))
            .filter(|b| b.def.is_tournament())
            .map(|b| self.tournament_view(&b))
            .collect()
    }

    /// Tournaments whose category is in `[category_start, category_end]`
    /// that overlap `[start_time, end_time]`, in id order after the cursor.
    /// With neither time given, the active and future ones (Nakama's rule).
    #[allow(clippy::too_many_arguments)]
    pub fn tournament_list(
        &self,
        category_start: u32,
        category_end: u32,
        start_time: Option<i64>,
        end_time: Option<i64>,
        limit: usize,
        cursor: &str,
    ) -> Result<(Vec<TournamentView>, String), ApiError> {
        if !(1..=100).contains(&limit) {
            return Err(ApiError::invalid("limit must be between 1 and 100"));
        }
        if category_end >= 128 {
            return Err(ApiError::invalid(
                "tournament category end must be >=0 and <128",
            ));
        }
        if category_end < category_start {
            return Err(ApiError::invalid(
                "tournament category end must be greater than category start",
            ));
        }
        if let (Some(s), Some(e)) = (start_time, end_time)
            && e != 0
            && e < s
        {
            return Err(ApiError::invalid(
                "tournament end time must be greater than start time",
            ));
        }
        let now = self.now();
        let open = start_time.is_none() && end_time.is_none();
        let start_time = start_time.unwrap_or(0);
        let end_time = end_time.unwrap_or(0);
        let mut all: Vec<Arc<Board>> = self
            .boards
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|b| {
                let d = &b.def;
                d.is_tournament()
                    && d.id.as_str() > cursor
                    && (category_start..=category_end).contains(&d.category)
                    && (start_time == 0 || d.end_time == 0 || d.end_time >= start_time)
                    && (end_time == 0 || d.start_time <= end_time)
                    && (!open || d.end_time == 0 || d.end_time > now)
            })
            .cloned()
            .collect();
        all.sort_by(|a, b| a.def.id.cmp(&b.def.id));
        let more = all.len() > limit;
        all.truncate(limit);
        let next = if more {
            all.last().map(|b| b.def.id.clone()).unwrap_or_default()
        } else {
            String::new()
        };
        Ok((all.iter().map(|b| self.tournament_view(b)).collect(), next))
    }

    /// Fires every reset and tournament end that is due and has not fired
    /// for its period (in this process or a previous one).
    pub async fn fire_due(&self, hooks: &dyn ScheduleHooks) {
        let now = self.now();
        let boards: Vec<Arc<Board>> = self
            .boards
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for board in boards {
            if let Err(e) = self.fire_board(&board, now, hooks).await {
                tracing::warn!(leaderboard = %board.def.id, error = %e, "schedule check failed");
            }
        }
        // Periods that ended leave memory; a listing of one loads it again.
        let current: HashMap<String, i64> = self
            .boards
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|b| (b.def.id.clone(), b.current_expiry(now).0))
            .collect();
        self.windows
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(id, expiry), _| current.get(id) == Some(expiry));
    }

    async fn fire_board(
        &self,
        board: &Board,
        now: i64,
        hooks: &dyn ScheduleHooks,
    ) -> Result<(), ApiError> {
        let def = &board.def;
        if !def.is_tournament() {
            let Some(schedule) = &board.schedule else {
                return Ok(());
            };
            let Some(reset) = schedule.last_at_or_before(now) else {
                return Ok(());
            };
            if reset > def.create_time && self.claim(&def.id, ScheduleKind::Reset, reset).await? {
                hooks.leaderboard_reset(def, reset).await;
            }
            return Ok(());
        }
        let view = self.tournament_view(board);
        // The active part that ended last: the current period's when it is
        // over, else the previous period's.
        let end = if view.end_active <= now {
            view.end_active
        } else {
            match &board.schedule {
                Some(schedule) => match schedule.last_at_or_before(view.start_active - 1) {
                    Some(prev) => board.deadlines(prev.max(def.start_time)).1,
                    None => 0,
                },
                None => 0,
            }
        };
        // The last reset (end of a period) at or before now.
        let reset = match &board.schedule {
            Some(schedule) => {
                let last = schedule.last_at_or_before(now).unwrap_or(0);
                if def.end_time > 0 {
                    last.min(def.end_time)
                } else {
                    last
                }
            }
            None if def.end_time > 0 && def.end_time <= now => def.end_time,
            None => 0,
        };
        let first = def.start_time.max(def.create_time);
        if end > first && end <= now && self.claim(&def.id, ScheduleKind::End, end).await? {
            hooks
                .tournament_end(&view, end, reset.max(view.next_reset))
                .await;
        }
        if reset > first && self.claim(&def.id, ScheduleKind::Reset, reset).await? {
            hooks.tournament_reset(&view, end, reset).await;
        }
        Ok(())
    }

    /// True when this process should run the hook of `period`: the store
    /// recorded it as fired by this call (exactly one caller wins, across
    /// nodes and restarts). Periods known to have fired skip the store.
    async fn claim(&self, id: &str, kind: ScheduleKind, period: i64) -> Result<bool, ApiError> {
        let key = (id.to_owned(), kind);
        let known = self
            .fired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        if known.is_some_and(|k| k >= period) {
            return Ok(false);
        }
        let won = self
            .store
            .leaderboard_schedule_fired(id, kind, period)
            .await?;
        self.fired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, period);
        Ok(won)
    }

    /// Checks the schedules every second until `stop` turns true.
    pub async fn run_scheduler(
        self: Arc<Self>,
        hooks: Arc<dyn ScheduleHooks>,
        mut stop: watch::Receiver<bool>,
    ) {
        loop {
            if *stop.borrow() {
                return;
            }
            self.fire_due(hooks.as_ref()).await;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.changed() => {}
            }
        }
    }
}

#[derive(Default)]
struct Page {
    items: Vec<Ranked>,
    more_before: bool,
    more_after: bool,
}

fn page_from(index: &RankIndex, limit: usize, cursor: Option<&Cursor>, at: Option<usize>) -> Page {
    let total = index.len();
    let (start, end) = match cursor {
        None => {
            let start = at.unwrap_or(0).min(total);
            (start, (start + limit).min(total))
        }
        Some(c) if c.n => {
            let before = index.position_of(Uuid::from_u128(c.o), c.s, c.ss);
            // Strictly after the cursor's record, whether or not it moved.
            let at = index.rank(Uuid::from_u128(c.o)).map(|r| r as usize - 1);
            let start = if at == Some(before) {
                before + 1
            } else {
                before
            };
            (start, (start + limit).min(total))
        }
        Some(c) => {
            let end = index
                .position_of(Uuid::from_u128(c.o), c.s, c.ss)
                .min(total);
            (end.saturating_sub(limit), end)
        }
    };
    Page {
        items: index.range(start, end.saturating_sub(start)),
        more_before: start > 0,
        more_after: end < total,
    }
}
