//! Leaderboards and tournaments through `LeaderboardService` over each
//! store: operators applied atomically, ranks equal to a sort of what is
//! stored (also after a restart rebuilds the index), no lost increment under
//! 100 concurrent writers, tournament joins, sizes and attempts, bad input
//! that writes nothing, expiring periods, and schedules that fire once per
//! period across restarts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ludus_core::leaderboard::{Leaderboard, Operator, SortOrder};
use ludus_core::leaderboard_service::{
    BoardSpec, Caller, LeaderboardService, ScheduleHooks, TournamentView,
};
use ludus_core::{Code, Store};
use rand::{Rng, SeedableRng};
use uuid::Uuid;

use super::Backend;

/// 2026-01-01T00:00:00Z.
const JAN1: i64 = 1_767_225_600;

fn clock_at(t: i64) -> (Arc<AtomicI64>, ludus_core::leaderboard_service::Clock) {
    let now = Arc::new(AtomicI64::new(t));
    let read = now.clone();
    (now, Arc::new(move || read.load(Ordering::SeqCst)))
}

fn service(store: &Arc<dyn Store>, t: i64) -> (Arc<AtomicI64>, LeaderboardService) {
    let (now, clock) = clock_at(t);
    (now, LeaderboardService::with_clock(store.clone(), clock))
}

fn board(id: &str, sort: SortOrder, op: Operator) -> BoardSpec {
    let mut spec = BoardSpec::leaderboard(id);
    spec.sort_order = sort;
    spec.operator = op;
    spec
}

fn owner(n: u128) -> Uuid {
    Uuid::from_u128(n.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
}

async fn write(
    lb: &LeaderboardService,
    id: &str,
    who: Uuid,
    score: i64,
    subscore: i64,
    op: Option<Operator>,
) -> Result<ludus_core::leaderboard::LeaderboardRecord, ludus_core::ApiError> {
    lb.write(
        Caller::Server,
        id,
        false,
        who,
        Some(format!("u{}", who.as_u128() % 1000)),
        score,
        subscore,
        None,
        op,
    )
    .await
}

/// Lists a whole board page by page and checks ranks against a sort of
/// the stored scores.
async fn assert_ranks_equal_a_sort(
    lb: &LeaderboardService,
    store: &Arc<dyn Store>,
    id: &str,
    sort: SortOrder,
) {
    let mut listed = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = lb
            .records_list(id, false, &[], Some(7), &cursor, 0)
            .await
            .unwrap();
        listed.extend(page.records);
        if page.next_cursor.is_empty() {
            break;
        }
        cursor = page.next_cursor;
    }
    let mut stored = store.leaderboard_scores(id, 0).await.unwrap();
    stored.sort_by(|a, b| {
        ludus_core::rank_index::compare(
            sort,
            (a.score, a.subscore, a.owner),
            (b.score, b.subscore, b.owner),
        )
    });
    assert_eq!(listed.len(), stored.len());
    for (i, (r, s)) in listed.iter().zip(&stored).enumerate() {
        assert_eq!(
            (r.owner_id, r.score, r.subscore),
            (s.owner, s.score, s.subscore)
        );
        assert_eq!(r.rank, i as i64 + 1);
    }
}

pub(crate) async fn random_writes_with_every_operator_rank_like_a_sort<B: Backend>() {
    let (_b, store) = B::store().await;
    let (_, lb) = service(&store, JAN1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(15);
    for (id, sort) in [
        ("desc", SortOrder::Descending),
        ("asc", SortOrder::Ascending),
    ] {
        lb.create(board(id, sort, Operator::Best)).await.unwrap();
        for _ in 0..300 {
            let who = owner(rng.random_range(0..40));
            let op = match rng.random_range(0..5) {
                0 => None,
                1 => Some(Operator::Best),
                2 => Some(Operator::Set),
                3 => Some(Operator::Increment),
                _ => Some(Operator::Decrement),
            };
            let r = write(
                &lb,
                id,
                who,
                rng.random_range(0..20),
                rng.random_range(0..3),
                op,
            )
            .await
            .unwrap();
            assert!(r.rank >= 1);
        }
        assert_ranks_equal_a_sort(&lb, &store, id, sort).await;
        // A restart rebuilds the same index from the store.
        let (_, again) = service(&store, JAN1);
        again.load().await.unwrap();
        assert_ranks_equal_a_sort(&again, &store, id, sort).await;
    }
}

pub(crate) async fn operators_combine_scores_as_nakama<B: Backend>() {
    let (_b, store) = B::store().await;
    let (_, lb) = service(&store, JAN1);
    lb.create(board("b", SortOrder::Descending, Operator::Best))
        .await
        .unwrap();
    let me = owner(1);
    let r = write(&lb, "b", me, 10, 1, None).await.unwrap();
    assert_eq!((r.score, r.subscore, r.num_score, r.rank), (10, 1, 1, 1));
    // Not better: unchanged, no attempt counted.
    let r = write(&lb, "b", me, 5, 0, None).await.unwrap();
    assert_eq!((r.score, r.num_score), (10, 1));
    let r = write(&lb, "b", me, 7, 0, Some(Operator::Increment))
        .await
        .unwrap();
    assert_eq!((r.score, r.subscore, r.num_score), (17, 1, 2));
    let r = write(&lb, "b", me, 20, 5, Some(Operator::Decrement))
        .await
        .unwrap();
    assert_eq!((r.score, r.subscore), (0, 0));
    let r = write(&lb, "b", me, 3, 3, Some(Operator::Set))
        .await
        .unwrap();
    assert_eq!((r.score, r.subscore, r.num_score), (3, 3, 4));
    assert_eq!(
        r.username.as_deref(),
        Some(format!("u{}", me.as_u128() % 1000).as_str())
    );
    // Around an owner: the owner in the middle of the page.
    for n in 2..=9 {
        write(&lb, "b", owner(n), n as i64 * 10, 0, Some(Operator::Set))
            .await
            .unwrap();
    }
    let around = lb
        .records_around("b", false, owner(5), 3, "", 0)
        .await
        .unwrap();
    let ranks: Vec<i64> = around.records.iter().map(|r| r.rank).collect();
    let owners: Vec<Uuid> = around.records.iter().map(|r| r.owner_id).collect();
    assert_eq!(owners, vec![owner(6), owner(5), owner(4)]);
    assert_eq!(ranks, vec![4, 5, 6]);
    // Owner records carry their rank.
    let list = lb
        .records_list("b", false, &[me, owner(9)], None, "", 0)
        .await
        .unwrap();
    assert!(list.records.is_empty());
    let got: Vec<(Uuid, i64)> = list
        .owner_records
        .iter()
        .map(|r| (r.owner_id, r.rank))
        .collect();
    assert_eq!(got, vec![(owner(9), 1), (me, 9)]);
    assert_eq!(list.rank_count, 9);
    // Deleting a record takes it out of the ranks.
    lb.delete_record(Caller::User(owner(9)), "b", false, owner(9))
        .await
        .unwrap();
    let r = write(&lb, "b", owner(8), 0, 0, Some(Operator::Increment))
        .await
        .unwrap();
    assert_eq!(r.rank, 1);
}

pub(crate) async fn concurrent_increments_lose_no_update<B: Backend>() {
    let (_b, store) = B::store().await;
    let (_, lb) = service(&store, JAN1);
    lb.create(board("hot", SortOrder::Descending, Operator::Increment))
        .await
        .unwrap();
    let lb = Arc::new(lb);
    let me = owner(42);
    // A start far from the floor, so every decrement takes exactly 1.
    write(&lb, "hot", me, 1000, 0, None).await.unwrap();
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let lb = lb.clone();
            tokio::spawn(async move {
                let op = if i % 4 == 0 {
                    Operator::Decrement
                } else {
                    Operator::Increment
                };
                let amount = if op == Operator::Decrement { 1 } else { 3 };
                write(&lb, "hot", me, amount, 0, Some(op)).await.unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let stored = store
        .leaderboard_records_get("hot", 0, &[me])
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].num_score, 101);
    // 75 increments of 3 and 25 decrements of 1, none lost.
    assert_eq!(stored[0].score, 1000 + 75 * 3 - 25);
    let list = lb
        .records_list("hot", false, &[], Some(5), "", 0)
        .await
        .unwrap();
    assert_eq!(list.records[0].score, stored[0].score);
}

pub(crate) async fn bad_input_is_refused_and_writes_nothing<B: Backend>() {
    let (_b, store) = B::store().await;
    let (_, lb) = service(&store, JAN1);
    let err = write(&lb, "missing", owner(1), 1, 0, None)
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::NotFound);
    let mut spec = board("auth", SortOrder::Descending, Operator::Best);
    spec.authoritative = true;
    lb.create(spec).await.unwrap();
    let err = lb
        .write(
            Caller::User(owner(1)),
            "auth",
            false,
            owner(1),
            None,
            1,
            0,
            None,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::PermissionDenied);
    let err = write(&lb, "auth", owner(1), -1, 0, None).await.unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
    let err = lb
        .write(
            Caller::Server,
            "auth",
            false,
            owner(1),
            None,
            1,
            0,
            Some("[1]".into()),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
    write(&lb, "auth", owner(2), i64::MAX, 0, None)
        .await
        .unwrap();
    let err = write(&lb, "auth", owner(2), 1, 0, Some(Operator::Increment))
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
    let mut cron = board("cron", SortOrder::Descending, Operator::Best);
    cron.reset_schedule = "every day at noon".into();
    assert_eq!(
        lb.create(cron).await.unwrap_err().code,
        Code::InvalidArgument
    );
    assert!(lb.get("cron").is_none());
    let stored = store
        .leaderboard_records_get("auth", 0, &[owner(1), owner(2)])
        .await
        .unwrap();
    assert_eq!(stored.len(), 1, "only the valid write is stored");
    assert_eq!(stored[0].score, i64::MAX);
    assert_eq!(stored[0].num_score, 1);
    // Creating again returns the existing board unchanged.
    let (again, created) = lb
        .create(board("auth", SortOrder::Ascending, Operator::Set))
        .await
        .unwrap();
    assert!(!created);
    assert!(again.authoritative);
    assert_eq!(again.sort_order, SortOrder::Descending);
}

pub(crate) async fn expired_records_leave_the_current_period<B: Backend>() {
    let (_b, store) = B::store().await;
    let (now, lb) = service(&store, JAN1 + 60);
    let mut spec = board("daily", SortOrder::Descending, Operator::Best);
    spec.reset_schedule = "0 0 * * *".into();
    lb.create(spec).await.unwrap();
    let r = write(&lb, "daily", owner(1), 5, 0, None).await.unwrap();
    assert_eq!(r.expiry_time, JAN1 + 86_400);
    now.store(JAN1 + 86_400 + 5, Ordering::SeqCst);
    let list = lb
        .records_list("daily", false, &[], Some(10), "", 0)
        .await
        .unwrap();
    assert!(
        list.records.is_empty(),
        "yesterday's record left the period"
    );
    // The past period is still readable by its expiry.
    let old = lb
        .records_list("daily", false, &[], Some(10), "", JAN1 + 86_400)
        .await
        .unwrap();
    assert_eq!(old.records.len(), 1);
    let r = write(&lb, "daily", owner(1), 1, 0, None).await.unwrap();
    assert_eq!((r.score, r.num_score, r.rank), (1, 1, 1));
}

fn tournament(id: &str, start: i64) -> BoardSpec {
    let mut spec = board(id, SortOrder::Descending, Operator::Best);
    spec.duration = 3600;
    spec.start_time = start;
    spec.title = "Weekly".into();
    spec.category = 3;
    spec
}

async fn t_write(
    lb: &LeaderboardService,
    id: &str,
    who: Uuid,
    score: i64,
) -> Result<ludus_core::leaderboard::LeaderboardRecord, ludus_core::ApiError> {
    lb.write(Caller::User(who), id, true, who, None, score, 0, None, None)
        .await
}

pub(crate) async fn tournaments_apply_joins_sizes_and_attempts<B: Backend>() {
    let (_b, store) = B::store().await;
    let (now, lb) = service(&store, JAN1);
    let mut spec = tournament("t", JAN1 + 100);
    spec.join_required = true;
    spec.max_size = 2;
    spec.max_num_score = 2;
    lb.create(spec).await.unwrap();
    // Not started yet.
    let err = t_write(&lb, "t", owner(1), 1).await.unwrap_err();
    assert_eq!(err.code, Code::FailedPrecondition);
    now.store(JAN1 + 200, Ordering::SeqCst);
    let err = t_write(&lb, "t", owner(1), 1).await.unwrap_err();
    assert_eq!(
        err.message,
        "must join tournament before attempting to write value"
    );
    lb.tournament_join("t", owner(1), "one").await.unwrap();
    lb.tournament_join("t", owner(1), "one").await.unwrap();
    lb.tournament_join("t", owner(2), "two").await.unwrap();
    let err = lb
        .tournament_join("t", owner(3), "three")
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
    let view = &lb.tournaments_get(&["t".into()])[0];
    assert_eq!((view.size, view.can_enter), (2, false));
    assert_eq!(t_write(&lb, "t", owner(1), 5).await.unwrap().num_score, 1);
    // Not better, but an attempt all the same.
    assert_eq!(t_write(&lb, "t", owner(1), 4).await.unwrap().num_score, 2);
    let err = t_write(&lb, "t", owner(1), 9).await.unwrap_err();
    assert_eq!(err.message, "reached allowed max number of score attempts");
    lb.tournament_add_attempt("t", owner(1), 1).await.unwrap();
    let r = t_write(&lb, "t", owner(1), 9).await.unwrap();
    assert_eq!((r.score, r.num_score, r.rank), (9, 3, 1));
    // Past the active part: no more scores.
    now.store(JAN1 + 100 + 3600, Ordering::SeqCst);
    let err = t_write(&lb, "t", owner(2), 9).await.unwrap_err();
    assert_eq!(err.code, Code::FailedPrecondition);
    // A tournament is not a leaderboard.
    assert_eq!(
        write(&lb, "t", owner(1), 1, 0, None)
            .await
            .unwrap_err()
            .code,
        Code::NotFound
    );
    let (listed, _) = lb.tournament_list(0, 10, Some(0), None, 10, "").unwrap();
    assert_eq!(listed.len(), 1);
    let (listed, _) = lb.tournament_list(4, 10, Some(0), None, 10, "").unwrap();
    assert!(listed.is_empty());
    // Without join_required, a max size still caps new owners.
    let mut spec = tournament("open", JAN1);
    spec.max_size = 1;
    lb.create(spec).await.unwrap();
    now.store(JAN1 + 10, Ordering::SeqCst);
    t_write(&lb, "open", owner(1), 1).await.unwrap();
    let err = t_write(&lb, "open", owner(2), 1).await.unwrap_err();
    assert_eq!(err.message, "tournament has reached max size");
    // A deleted record frees its place.
    lb.delete_record(Caller::Server, "open", true, owner(1))
        .await
        .unwrap();
    t_write(&lb, "open", owner(2), 1).await.unwrap();
    // An ended tournament's records are listed only by their expiry.
    let mut ended = tournament("ended", JAN1 + 10);
    ended.end_time = JAN1 + 20;
    lb.create(ended).await.unwrap();
    now.store(JAN1 + 30, Ordering::SeqCst);
    let err = lb
        .records_list("ended", true, &[], Some(10), "", 0)
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.message.as_ref()),
        (Code::NotFound, "tournament has ended")
    );
    lb.delete("open", true).await.unwrap();
    assert!(lb.get("open").is_none());
}

#[derive(Default)]
struct Fired {
    resets: Mutex<Vec<(String, i64)>>,
    ends: Mutex<Vec<(String, i64)>>,
    calls: AtomicUsize,
}

#[async_trait]
impl ScheduleHooks for Fired {
    async fn leaderboard_reset(&self, board: &Leaderboard, reset: i64) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.resets.lock().unwrap().push((board.id.clone(), reset));
    }
    async fn tournament_end(&self, t: &TournamentView, end: i64, _reset: i64) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.ends.lock().unwrap().push((t.def.id.clone(), end));
    }
    async fn tournament_reset(&self, t: &TournamentView, _end: i64, reset: i64) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.resets.lock().unwrap().push((t.def.id.clone(), reset));
    }
}

pub(crate) async fn schedules_fire_once_per_period_across_restarts<B: Backend>() {
    let (_b, store) = B::store().await;
    let (now, lb) = service(&store, JAN1 + 30);
    let mut spec = board("hourly", SortOrder::Descending, Operator::Best);
    spec.reset_schedule = "0 * * * *".into();
    lb.create(spec).await.unwrap();
    let mut t = tournament("t", JAN1 + 30);
    t.duration = 600;
    t.reset_schedule = "0 * * * *".into();
    lb.create(t).await.unwrap();
    let hooks = Fired::default();
    lb.fire_due(&hooks).await;
    assert_eq!(hooks.calls.load(Ordering::SeqCst), 0, "nothing due yet");
    now.store(JAN1 + 3600 + 1, Ordering::SeqCst);
    lb.fire_due(&hooks).await;
    lb.fire_due(&hooks).await;
    {
        let resets = hooks.resets.lock().unwrap().clone();
        let mut resets: HashMap<String, Vec<i64>> =
            resets.into_iter().fold(HashMap::new(), |mut m, (id, t)| {
                m.entry(id).or_default().push(t);
                m
            });
        assert_eq!(resets.remove("hourly"), Some(vec![JAN1 + 3600]));
        assert_eq!(resets.remove("t"), Some(vec![JAN1 + 3600]));
        assert_eq!(
            hooks.ends.lock().unwrap().clone(),
            vec![("t".to_owned(), JAN1 + 600)]
        );
    }
    // A restart: a new service over the same store fires nothing again.
    let (_, restarted) = service(&store, JAN1 + 3600 + 2);
    restarted.load().await.unwrap();
    let again = Fired::default();
    restarted.fire_due(&again).await;
    assert_eq!(again.calls.load(Ordering::SeqCst), 0);
    // Down across three boundaries: the latest fires once, late.
    let (_, late) = service(&store, JAN1 + 4 * 3600 + 700);
    late.load().await.unwrap();
    let later = Fired::default();
    late.fire_due(&later).await;
    late.fire_due(&later).await;
    let resets = later.resets.lock().unwrap().clone();
    assert!(resets.contains(&("hourly".to_owned(), JAN1 + 4 * 3600)));
    assert_eq!(resets.len(), 2, "{resets:?}");
    assert_eq!(
        later.ends.lock().unwrap().clone(),
        vec![("t".to_owned(), JAN1 + 4 * 3600 + 600)]
    );
}

pub(crate) async fn records_go_with_their_user<B: Backend>() {
    let (_b, store) = B::store().await;
    let (_, lb) = service(&store, JAN1);
    lb.create(board("b", SortOrder::Descending, Operator::Best))
        .await
        .unwrap();
    let user = super::new_user("ranked", super::device("ranked-device"));
    let id = user.id;
    store.create_user(user).await.unwrap();
    write(&lb, "b", id, 5, 0, None).await.unwrap();
    write(&lb, "b", owner(1), 3, 0, None).await.unwrap();
    assert!(store.delete_user(id).await.unwrap());
    lb.forget_owner(id);
    assert!(
        store
            .leaderboard_records_get("b", 0, &[id])
            .await
            .unwrap()
            .is_empty()
    );
    let list = lb
        .records_list("b", false, &[], Some(10), "", 0)
        .await
        .unwrap();
    let owners: Vec<Uuid> = list.records.iter().map(|r| r.owner_id).collect();
    assert_eq!(owners, vec![owner(1)]);
    assert_eq!(list.records[0].rank, 1);
    assert_eq!(list.rank_count, 1);
}

/// Writes and deletes of the same owners racing: the rank index ends up as
/// the store does (a write and a delete of one owner reach the index in the
/// order they reached the store), and so does a fresh index built from it.
pub(crate) async fn racing_writes_and_deletes_leave_true_ranks<B: Backend>() {
    let (_b, store) = B::store().await;
    let (_, lb) = service(&store, JAN1);
    lb.create(board("race", SortOrder::Descending, Operator::Set))
        .await
        .unwrap();
    let lb = Arc::new(lb);
    let tasks: Vec<_> = (0..240u128)
        .map(|i| {
            let lb = lb.clone();
            tokio::spawn(async move {
                let who = owner(i % 6);
                if i % 3 == 0 {
                    lb.delete_record(Caller::Server, "race", false, who)
                        .await
                        .unwrap();
                } else {
                    write(&lb, "race", who, i as i64, 0, None).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_ranks_equal_a_sort(&lb, &store, "race", SortOrder::Descending).await;
    let (_, fresh) = service(&store, JAN1);
    fresh.load().await.unwrap();
    assert_ranks_equal_a_sort(&fresh, &store, "race", SortOrder::Descending).await;
}
