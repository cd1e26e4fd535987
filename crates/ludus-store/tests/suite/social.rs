//! Friends and groups: every friend transition (invite, accept, delete,
//! block, unblock and the refused ones), `edge_count` kept exact through
//! them and through user deletion, listings with cursors, group roles and
//! their permission rules, and the `max_count` race (100 users join a group
//! of 50 places at once: exactly 50 get in).

use std::sync::Arc;

use ludus_core::Store;
use ludus_core::friend::{Friend, FriendBound, FriendOp, FriendOutcome, FriendState};
use ludus_core::group::{
    Group, GroupFilter, GroupOp, GroupRefusal, GroupRole, GroupUpdate, RoleBound,
};
use ludus_core::store::{self, StoreError};
use uuid::Uuid;

use super::Backend;
use super::storage::user;

const NOW_US: i64 = 1_700_000_000_000_000;

async fn edge_count(store: &Arc<dyn Store>, user: Uuid) -> i32 {
    store.get_users(&[user], &[]).await.unwrap()[0].edge_count
}

async fn states(store: &Arc<dyn Store>, user: Uuid) -> Vec<(Uuid, FriendState)> {
    friends_list(store, user, None, None, 1000)
        .await
        .into_iter()
        .map(|f| (f.user.id, f.state))
        .collect()
}

/// The store's friends listing, collected.
async fn friends_list(
    store: &Arc<dyn Store>,
    user: Uuid,
    state: Option<FriendState>,
    after: Option<FriendBound>,
    limit: usize,
) -> Vec<Friend> {
    store::friends_into(&**store, user, state, after, limit, Vec::new())
        .await
        .unwrap()
}

async fn change(store: &Arc<dyn Store>, user: Uuid, op: FriendOp, target: Uuid) -> FriendOutcome {
    let out = store
        .friends_change(user, op, &[target], "{}", NOW_US)
        .await
        .unwrap();
    assert_eq!(out.len(), 1);
    out[0].1
}

/// Lists `user`'s friends `times` times and checks that each listing shows
/// every friend's profile exactly as `get_users` reads it now.
async fn assert_listed_profiles_current(store: &Arc<dyn Store>, user: Uuid, times: usize) {
    for _ in 0..times {
        let listed = friends_list(store, user, None, None, 100).await;
        let ids: Vec<Uuid> = listed.iter().map(|f| f.user.id).collect();
        let mut now = store.get_users(&ids, &[]).await.unwrap();
        now.sort_by_key(|u| u.id);
        let mut shown: Vec<_> = listed.into_iter().map(|f| f.user).collect();
        shown.sort_by_key(|u| u.id);
        assert_eq!(shown, now);
    }
}

/// A listing shows each friend's profile as it is now, however often the
/// same friends were listed before (the PostgreSQL backend keeps listed
/// profiles by row version, and after a few listings that mostly find them
/// it reads only the edges): an account update, an `edge_count` change, a
/// change made straight in the database (as another node would), a profile
/// too large to cache and a deletion each show on the next listing.
pub(crate) async fn friends_list_follows_profile_changes<B: Backend>() {
    let (backend, store) = B::store().await;
    let ann = user(&store, "ann").await;
    let mut friends = Vec::new();
    for i in 0..5 {
        let f = user(&store, &format!("friend{i}")).await;
        change(&store, ann, FriendOp::Add, f).await;
        friends.push(f);
    }
    assert_listed_profiles_current(&store, ann, 6).await;

    let update = ludus_core::model::AccountUpdate {
        display_name: Some("Renamed".into()),
        metadata: Some(r#"{"level":9}"#.into()),
        ..Default::default()
    };
    store
        .update_account(friends[0], update, NOW_US)
        .await
        .unwrap();
    assert_listed_profiles_current(&store, ann, 2).await;
    let listed = friends_list(&store, ann, None, None, 100).await;
    let f0 = &listed
        .iter()
        .find(|f| f.user.id == friends[0])
        .unwrap()
        .user;
    assert_eq!(f0.display_name, "Renamed");
    let metadata: serde_json::Value = serde_json::from_str(&f0.metadata).unwrap();
    assert_eq!(metadata, serde_json::json!({"level": 9}));

    let before = edge_count(&store, friends[1]).await;
    let other = user(&store, "other").await;
    change(&store, friends[1], FriendOp::Add, other).await;
    assert_eq!(edge_count(&store, friends[1]).await, before + 1);
    assert_listed_profiles_current(&store, ann, 2).await;

    backend
        .exec("UPDATE users SET location = 'Oslo' WHERE username = 'friend2'")
        .await;
    let listed = friends_list(&store, ann, None, None, 100).await;
    let f2 = &listed
        .iter()
        .find(|f| f.user.id == friends[2])
        .unwrap()
        .user;
    assert_eq!(f2.location, "Oslo");
    assert_listed_profiles_current(&store, ann, 2).await;

    // A profile too large for the cache is read again at every listing.
    let big = format!(r#"{{"bio":"{}"}}"#, "x".repeat(3000));
    let update = ludus_core::model::AccountUpdate {
        metadata: Some(big),
        ..Default::default()
    };
    store
        .update_account(friends[4], update, NOW_US)
        .await
        .unwrap();
    assert_listed_profiles_current(&store, ann, 3).await;

    assert!(store.delete_user(friends[3]).await.unwrap());
    let listed = friends_list(&store, ann, None, None, 100).await;
    assert_eq!(listed.len(), 4);
    assert!(listed.iter().all(|f| f.user.id != friends[3]));
    assert_listed_profiles_current(&store, ann, 2).await;
}

/// A listed friend carries the user's profile exactly: fields set and
/// fields left empty alike.
pub(crate) async fn friends_list_carries_profiles<B: Backend>() {
    let (_b, store) = B::store().await;
    let (ann, bob, cat) = (
        user(&store, "ann").await,
        user(&store, "bob").await,
        user(&store, "cat").await,
    );
    let update = ludus_core::model::AccountUpdate {
        display_name: Some("Bob B".into()),
        avatar_url: Some("https://example.com/bob.png".into()),
        lang_tag: Some("fr".into()),
        location: Some("Lyon".into()),
        timezone: Some("Europe/Paris".into()),
        metadata: Some(r#"{"level":7}"#.into()),
        ..Default::default()
    };
    store.update_account(bob, update, NOW_US).await.unwrap();
    change(&store, ann, FriendOp::Add, bob).await;
    change(&store, ann, FriendOp::Add, cat).await;

    let listed = friends_list(&store, ann, None, None, 10).await;
    let of = |id: Uuid| &listed.iter().find(|f| f.user.id == id).unwrap().user;
    let b = of(bob);
    assert_eq!(
        (
            b.display_name.as_str(),
            b.avatar_url.as_str(),
            b.lang_tag.as_str(),
            b.location.as_str(),
            b.timezone.as_str(),
        ),
        (
            "Bob B",
            "https://example.com/bob.png",
            "fr",
            "Lyon",
            "Europe/Paris"
        )
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&b.metadata).unwrap(),
        serde_json::json!({"level": 7})
    );
    let c = of(cat);
    assert_eq!(c.username, "cat");
    assert_eq!(
        (
            c.display_name.as_str(),
            c.avatar_url.as_str(),
            c.location.as_str(),
            c.timezone.as_str(),
        ),
        ("", "", "", "")
    );
    store.close().await;
}

pub(crate) async fn friend_invite_accept_delete_block<B: Backend>() {
    let (_b, store) = B::store().await;
    let (ann, bob) = (user(&store, "ann").await, user(&store, "bob").await);

    assert_eq!(
        change(&store, ann, FriendOp::Add, bob).await,
        FriendOutcome::Invited
    );
    assert_eq!(states(&store, ann).await, [(bob, FriendState::InviteSent)]);
    assert_eq!(
        states(&store, bob).await,
        [(ann, FriendState::InviteReceived)]
    );
    // Inviting again changes nothing.
    assert_eq!(
        change(&store, ann, FriendOp::Add, bob).await,
        FriendOutcome::Unchanged
    );
    assert_eq!(
        change(&store, bob, FriendOp::Add, ann).await,
        FriendOutcome::Accepted
    );
    assert_eq!(states(&store, ann).await, [(bob, FriendState::Friend)]);
    assert_eq!(states(&store, bob).await, [(ann, FriendState::Friend)]);
    assert_eq!(
        (edge_count(&store, ann).await, edge_count(&store, bob).await),
        (1, 1)
    );

    assert_eq!(
        change(&store, ann, FriendOp::Delete, bob).await,
        FriendOutcome::Removed
    );
    assert!(states(&store, ann).await.is_empty());
    assert!(states(&store, bob).await.is_empty());
    assert_eq!(
        (edge_count(&store, ann).await, edge_count(&store, bob).await),
        (0, 0)
    );

    // Block: bob's edge to ann goes, ann keeps a blocked edge.
    change(&store, ann, FriendOp::Add, bob).await;
    assert_eq!(
        change(&store, bob, FriendOp::Block, ann).await,
        FriendOutcome::Changed
    );
    assert_eq!(states(&store, bob).await, [(ann, FriendState::Blocked)]);
    assert!(states(&store, ann).await.is_empty());
    assert_eq!(
        store.friend_state(bob, ann).await.unwrap(),
        Some(FriendState::Blocked)
    );
    assert_eq!(store.friend_state(ann, bob).await.unwrap(), None);
    // A blocked user's invite changes nothing, nor does the blocker's.
    assert_eq!(
        change(&store, ann, FriendOp::Add, bob).await,
        FriendOutcome::Unchanged
    );
    assert_eq!(
        change(&store, bob, FriendOp::Add, ann).await,
        FriendOutcome::Unchanged
    );
    assert!(states(&store, ann).await.is_empty());
    // Unblocking deletes the block; then an invite works again.
    assert_eq!(
        change(&store, bob, FriendOp::Delete, ann).await,
        FriendOutcome::Changed
    );
    assert!(states(&store, bob).await.is_empty());
    assert_eq!(
        change(&store, ann, FriendOp::Add, bob).await,
        FriendOutcome::Invited
    );
    assert_eq!(
        (edge_count(&store, ann).await, edge_count(&store, bob).await),
        (1, 1)
    );
}

pub(crate) async fn friend_changes_with_unknown_users_write_nothing<B: Backend>() {
    let (_b, store) = B::store().await;
    let ann = user(&store, "ann").await;
    let ghost = Uuid::new_v4();
    for op in [FriendOp::Add, FriendOp::Block, FriendOp::Delete] {
        assert_eq!(
            change(&store, ann, op, ghost).await,
            FriendOutcome::Unchanged
        );
    }
    assert!(states(&store, ann).await.is_empty());
    assert_eq!(edge_count(&store, ann).await, 0);
}

pub(crate) async fn friend_lists_page_by_state_and_follow_user_deletion<B: Backend>() {
    let (_b, store) = B::store().await;
    let ann = user(&store, "ann").await;
    let mut others = Vec::new();
    for i in 0..5 {
        let u = user(&store, &format!("friend{i}")).await;
        store
            .friends_change(ann, FriendOp::Add, &[u], r#"{"n":1}"#, NOW_US + i)
            .await
            .unwrap();
        others.push(u);
    }
    // Two of them accept.
    for &u in &others[..2] {
        change(&store, u, FriendOp::Add, ann).await;
    }
    let mut seen = Vec::new();
    let mut after: Option<FriendBound> = None;
    loop {
        let page = friends_list(&store, ann, None, after, 2).await;
        if page.is_empty() {
            break;
        }
        let last = page.last().unwrap();
        after = Some(FriendBound {
            state: last.state,
            position: last.position,
            id: last.user.id,
        });
        seen.extend(page.into_iter().map(|f| (f.user.id, f.state)));
    }
    let expected: Vec<_> = others[..2]
        .iter()
        .map(|&u| (u, FriendState::Friend))
        .chain(others[2..].iter().map(|&u| (u, FriendState::InviteSent)))
        .collect();
    assert_eq!(seen, expected);
    let invites = friends_list(&store, ann, Some(FriendState::InviteSent), None, 100).await;
    assert_eq!(invites.len(), 3);
    // A state filter and a bound together (each combination is its own
    // statement on SQLite): the page after the first invite holds the rest.
    let rest = friends_list(
        &store,
        ann,
        Some(FriendState::InviteSent),
        Some(FriendBound {
            state: invites[0].state,
            position: invites[0].position,
            id: invites[0].user.id,
        }),
        100,
    )
    .await;
    assert_eq!(
        rest.iter().map(|f| f.user.id).collect::<Vec<_>>(),
        others[3..]
    );
    // PostgreSQL keeps JSONB, so compare values, not text.
    let metadata: serde_json::Value = serde_json::from_str(&invites[0].metadata).unwrap();
    assert_eq!(metadata, serde_json::json!({"n": 1}));

    assert!(
        store
            .friend_metadata_update(ann, others[0], r#"{"k":"v"}"#, NOW_US)
            .await
            .unwrap()
    );
    assert!(
        !store
            .friend_metadata_update(ann, Uuid::new_v4(), "{}", NOW_US)
            .await
            .unwrap()
    );

    // A deleted user takes both edges with them; counts follow.
    assert_eq!(edge_count(&store, ann).await, 5);
    assert!(store.delete_user(others[0]).await.unwrap());
    assert_eq!(edge_count(&store, ann).await, 4);
    assert_eq!(states(&store, ann).await.len(), 4);
}

pub(crate) async fn friends_of_friends_skip_self_and_own_friends<B: Backend>() {
    let (_b, store) = B::store().await;
    let [ann, bob, cat, dan] = [
        user(&store, "ann").await,
        user(&store, "bob").await,
        user(&store, "cat").await,
        user(&store, "dan").await,
    ];
    let befriend = |a: Uuid, b: Uuid| {
        let store = store.clone();
        async move {
            change(&store, a, FriendOp::Add, b).await;
            change(&store, b, FriendOp::Add, a).await;
        }
    };
    befriend(ann, bob).await;
    befriend(bob, cat).await;
    befriend(bob, dan).await;
    befriend(ann, dan).await;
    let fof = store.friends_of_friends(ann, None, 100).await.unwrap();
    let got: Vec<_> = fof.iter().map(|f| (f.referrer, f.user.id)).collect();
    assert_eq!(got, [(bob, cat)]);
    let after = store
        .friends_of_friends(ann, Some((bob, cat)), 100)
        .await
        .unwrap();
    assert!(after.is_empty());
}

fn new_group(creator: Uuid, name: &str, open: bool, max_count: i32) -> Group {
    Group {
        id: Uuid::new_v4(),
        creator_id: creator,
        name: name.into(),
        description: "d".into(),
        avatar_url: String::new(),
        lang_tag: "en".into(),
        metadata: "{}".into(),
        open,
        edge_count: 1,
        max_count,
        create_time: 1_700_000_000,
        update_time: 1_700_000_000,
    }
}

async fn group(store: &Arc<dyn Store>, id: Uuid) -> Group {
    store.groups_get(&[id]).await.unwrap().remove(0)
}

async fn role(store: &Arc<dyn Store>, g: Uuid, u: Uuid) -> Option<GroupRole> {
    store.group_role(g, u).await.unwrap()
}

fn refused(r: Result<impl std::fmt::Debug, StoreError>) -> GroupRefusal {
    match r {
        Err(StoreError::Group(g)) => g,
        other => panic!("expected a group refusal, got {other:?}"),
    }
}

/// A group's user listing shows each member's profile as it is now,
/// however often it was listed before (the PostgreSQL backend reads it
/// through the same profile cache as the friends listing).
pub(crate) async fn group_users_follow_profile_changes<B: Backend>() {
    let (backend, store) = B::store().await;
    let boss = user(&store, "boss").await;
    let g = new_group(boss, "Listed", true, 100);
    store.group_create(&g, g.creator_id).await.unwrap();
    // members[i + 1] is `member{i}`.
    let mut members = vec![boss];
    for i in 0..5 {
        let m = user(&store, &format!("member{i}")).await;
        store
            .group_change(g.id, GroupOp::Join, Some(m), &[m], NOW_US)
            .await
            .unwrap();
        members.push(m);
    }
    let check = |times: usize| {
        let store = store.clone();
        async move {
            for _ in 0..times {
                let listed = store.group_users(g.id, None, None, 100).await.unwrap();
                let mut shown: Vec<_> = listed.into_iter().map(|m| m.user).collect();
                shown.sort_by_key(|u| u.id);
                let ids: Vec<Uuid> = shown.iter().map(|u| u.id).collect();
                let mut now = store.get_users(&ids, &[]).await.unwrap();
                now.sort_by_key(|u| u.id);
                assert_eq!(shown, now);
            }
        }
    };
    check(6).await;
    let update = ludus_core::model::AccountUpdate {
        display_name: Some("Renamed".into()),
        ..Default::default()
    };
    store
        .update_account(members[1], update, NOW_US)
        .await
        .unwrap();
    backend
        .exec("UPDATE users SET location = 'Oslo' WHERE username = 'member1'")
        .await;
    let listed = store.group_users(g.id, None, None, 100).await.unwrap();
    let of = |id: Uuid| &listed.iter().find(|m| m.user.id == id).unwrap().user;
    assert_eq!(of(members[1]).display_name, "Renamed");
    assert_eq!(of(members[2]).location, "Oslo");
    check(2).await;
    assert!(store.delete_user(members[3]).await.unwrap());
    let listed = store.group_users(g.id, None, None, 100).await.unwrap();
    assert_eq!(listed.len(), 5);
    assert!(listed.iter().all(|m| m.user.id != members[3]));
    check(2).await;
}

pub(crate) async fn groups_create_update_delete<B: Backend>() {
    let (_b, store) = B::store().await;
    let (ann, bob) = (user(&store, "ann").await, user(&store, "bob").await);
    let g = new_group(ann, "Knights", true, 10);
    store.group_create(&g, g.creator_id).await.unwrap();
    let stored = group(&store, g.id).await;
    assert_eq!((stored.name.as_str(), stored.edge_count), ("Knights", 1));
    assert_eq!(role(&store, g.id, ann).await, Some(GroupRole::Superadmin));
    // The recorded creator may be another id (a module's `creator_id`, or
    // the system user): it is stored as given and gets no membership.
    let mut crafted = new_group(ludus_core::storage::SYSTEM_USER_ID, "Crafted", true, 10);
    store.group_create(&crafted, bob).await.unwrap();
    crafted = group(&store, crafted.id).await;
    assert_eq!(crafted.creator_id, ludus_core::storage::SYSTEM_USER_ID);
    assert_eq!(crafted.edge_count, 1);
    assert_eq!(
        role(&store, crafted.id, bob).await,
        Some(GroupRole::Superadmin)
    );
    assert_eq!(
        role(&store, crafted.id, ludus_core::storage::SYSTEM_USER_ID).await,
        None
    );
    // Names are unique; an unknown creator is refused; neither writes.
    assert_eq!(
        refused(
            store
                .group_create(&new_group(bob, "Knights", true, 10), bob)
                .await
        ),
        GroupRefusal::NameInUse
    );
    let ghosts = new_group(Uuid::new_v4(), "Ghosts", true, 10);
    assert_eq!(
        refused(store.group_create(&ghosts, ghosts.creator_id).await),
        GroupRefusal::UserNotFound
    );
    assert!(
        store
            .groups_list(&GroupFilter {
                name: Some("Ghosts".into()),
                limit: 10,
                ..GroupFilter::default()
            })
            .await
            .unwrap()
            .is_empty()
    );

    let update = GroupUpdate {
        description: Some("new".into()),
        open: Some(false),
        ..GroupUpdate::default()
    };
    assert_eq!(
        refused(store.group_update(g.id, Some(bob), &update, NOW_US).await),
        GroupRefusal::PermissionDenied
    );
    let updated = store
        .group_update(g.id, Some(ann), &update, NOW_US)
        .await
        .unwrap();
    assert_eq!((updated.description.as_str(), updated.open), ("new", false));
    assert_eq!(updated.name, "Knights");

    assert_eq!(
        refused(store.group_delete(g.id, Some(bob)).await),
        GroupRefusal::PermissionDenied
    );
    assert_eq!(store.group_delete(g.id, Some(ann)).await.unwrap(), [ann]);
    assert!(store.groups_get(&[g.id]).await.unwrap().is_empty());
    assert_eq!(
        refused(store.group_delete(g.id, None).await),
        GroupRefusal::NotFound
    );
}

pub(crate) async fn group_roles_follow_nakamas_rules<B: Backend>() {
    let (_b, store) = B::store().await;
    let [boss, adm, mem, req, out] = [
        user(&store, "boss").await,
        user(&store, "adm").await,
        user(&store, "mem").await,
        user(&store, "req").await,
        user(&store, "out").await,
    ];
    let g = new_group(boss, "Closed", false, 4);
    store.group_create(&g, g.creator_id).await.unwrap();
    let ch = |op, caller: Option<Uuid>, targets: Vec<Uuid>| {
        let store = store.clone();
        async move { store.group_change(g.id, op, caller, &targets, NOW_US).await }
    };
    // A closed group: joining is a request, admins accept it with add.
    ch(GroupOp::Join, Some(adm), vec![adm]).await.unwrap();
    assert_eq!(role(&store, g.id, adm).await, Some(GroupRole::JoinRequest));
    assert_eq!(group(&store, g.id).await.edge_count, 1);
    ch(GroupOp::Add, Some(boss), vec![adm, mem]).await.unwrap();
    ch(GroupOp::Promote, Some(boss), vec![adm]).await.unwrap();
    assert_eq!(role(&store, g.id, adm).await, Some(GroupRole::Admin));
    assert_eq!(role(&store, g.id, mem).await, Some(GroupRole::Member));
    assert_eq!(group(&store, g.id).await.edge_count, 3);

    // Members cannot manage; admins cannot touch the superadmin.
    assert_eq!(
        refused(ch(GroupOp::Kick, Some(mem), vec![adm]).await),
        GroupRefusal::PermissionDenied
    );
    assert!(
        ch(GroupOp::Kick, Some(adm), vec![boss])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        ch(GroupOp::Demote, Some(adm), vec![boss])
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(role(&store, g.id, boss).await, Some(GroupRole::Superadmin));
    // The last superadmin cannot leave.
    assert_eq!(
        refused(ch(GroupOp::Leave, Some(boss), vec![boss]).await),
        GroupRefusal::LastSuperadmin
    );

    // Full: one place left, a request then an add of two is refused whole.
    ch(GroupOp::Join, Some(req), vec![req]).await.unwrap();
    assert_eq!(
        refused(ch(GroupOp::Add, Some(adm), vec![req, out]).await),
        GroupRefusal::Full
    );
    assert_eq!(role(&store, g.id, req).await, Some(GroupRole::JoinRequest));
    assert_eq!(role(&store, g.id, out).await, None);
    assert_eq!(
        refused(ch(GroupOp::Add, Some(adm), vec![Uuid::new_v4()]).await),
        GroupRefusal::UserNotFound
    );

    // Ban: a banned member leaves the count and cannot rejoin.
    let changes = ch(GroupOp::Ban, Some(adm), vec![mem]).await.unwrap();
    assert_eq!(changes[0].to, Some(GroupRole::Banned));
    assert_eq!(group(&store, g.id).await.edge_count, 2);
    assert_eq!(
        refused(ch(GroupOp::Join, Some(mem), vec![mem]).await),
        GroupRefusal::Banned
    );
    // Kick lifts a ban; a kicked member's edge is gone.
    ch(GroupOp::Kick, Some(adm), vec![mem]).await.unwrap();
    assert_eq!(role(&store, g.id, mem).await, None);

    // Listings by role with cursors, and a user's groups.
    let all = store.group_users(g.id, None, None, 100).await.unwrap();
    let roles: Vec<_> = all.iter().map(|u| (u.user.id, u.role)).collect();
    assert_eq!(
        roles,
        [
            (boss, GroupRole::Superadmin),
            (adm, GroupRole::Admin),
            (req, GroupRole::JoinRequest)
        ]
    );
    let page = store
        .group_users(
            g.id,
            None,
            Some(RoleBound {
                role: GroupRole::Admin,
                id: adm,
            }),
            100,
        )
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    let admins = store
        .group_users(g.id, Some(GroupRole::Admin), None, 100)
        .await
        .unwrap();
    assert_eq!(admins.len(), 1);
    let mine = store.user_groups(adm, None, None, 100).await.unwrap();
    assert_eq!(mine.len(), 1);
    assert_eq!((mine[0].group.id, mine[0].role), (g.id, GroupRole::Admin));

    // A second superadmin lets the first leave; deleting the one superadmin
    // left takes the group with it (as Nakama's account deletion does).
    ch(GroupOp::Promote, Some(boss), vec![adm]).await.unwrap();
    ch(GroupOp::Leave, Some(boss), vec![boss]).await.unwrap();
    assert_eq!(role(&store, g.id, boss).await, None);
    assert_eq!(group(&store, g.id).await.edge_count, 1);
    assert!(store.delete_user(adm).await.unwrap());
    assert!(store.groups_get(&[g.id]).await.unwrap().is_empty());
}

pub(crate) async fn group_search_filters_and_pages<B: Backend>() {
    let (_b, store) = B::store().await;
    let ann = user(&store, "ann").await;
    for (name, open, lang) in [
        ("alpha", true, "en"),
        ("alpine", false, "fr"),
        ("beta", true, "en"),
        ("alp%x", true, "en"),
    ] {
        let mut g = new_group(ann, name, open, 10);
        g.lang_tag = lang.into();
        store.group_create(&g, g.creator_id).await.unwrap();
    }
    let names = |gs: Vec<Group>| gs.into_iter().map(|g| g.name).collect::<Vec<_>>();
    let list = |f: GroupFilter| {
        let store = store.clone();
        async move { store.groups_list(&f).await.unwrap() }
    };
    let f = |name: Option<&str>| GroupFilter {
        name: name.map(str::to_owned),
        limit: 100,
        ..GroupFilter::default()
    };
    assert_eq!(
        names(list(f(Some("alp%"))).await),
        ["alp%x", "alpha", "alpine"]
    );
    assert_eq!(names(list(f(Some("alpha"))).await), ["alpha"]);
    assert_eq!(
        names(
            list(GroupFilter {
                open: Some(false),
                ..f(None)
            })
            .await
        ),
        ["alpine"]
    );
    assert_eq!(
        names(
            list(GroupFilter {
                lang_tag: Some("en".into()),
                ..f(Some("al%"))
            })
            .await
        ),
        ["alp%x", "alpha"]
    );
    assert!(
        list(GroupFilter {
            members: Some(0),
            ..f(None)
        })
        .await
        .is_empty()
    );
    // Paging by (name, id).
    let first = list(GroupFilter {
        limit: 2,
        ..f(None)
    })
    .await;
    let last = first.last().unwrap();
    let rest = list(GroupFilter {
        after: Some((last.name.clone(), last.id)),
        ..f(None)
    })
    .await;
    assert_eq!(names(first), ["alp%x", "alpha"]);
    assert_eq!(names(rest), ["alpine", "beta"]);
    assert_eq!(store.groups_random(3).await.unwrap().len(), 3);
}

pub(crate) async fn concurrent_joins_never_pass_max_count<B: Backend>() {
    let (_b, store) = B::store().await;
    let owner = user(&store, "owner").await;
    let g = new_group(owner, "Popular", true, 50);
    store.group_create(&g, g.creator_id).await.unwrap();
    let mut users = Vec::new();
    for i in 0..100 {
        users.push(user(&store, &format!("joiner{i}")).await);
    }
    let tasks: Vec<_> = users
        .iter()
        .map(|&u| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .group_change(g.id, GroupOp::Join, Some(u), &[u], NOW_US)
                    .await
            })
        })
        .collect();
    let mut joined = 0;
    let mut full = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(changes) => {
                assert_eq!(changes.len(), 1);
                joined += 1;
            }
            Err(StoreError::Group(GroupRefusal::Full)) => full += 1,
            Err(e) => panic!("unexpected join failure: {e}"),
        }
    }
    // The owner holds one of the 50 places.
    assert_eq!((joined, full), (49, 51));
    let stored = group(&store, g.id).await;
    assert_eq!(stored.edge_count, 50);
    let members = store.group_users(g.id, None, None, 100).await.unwrap();
    assert_eq!(members.len(), 50);
}

/// As Nakama's account deletion: a group whose only superadmin is the
/// deleted user goes with them; a group with another superadmin stays, and
/// every group loses the user from its `edge_count`.
pub(crate) async fn deleting_a_user_takes_the_groups_only_they_lead<B: Backend>() {
    let (_b, store) = B::store().await;
    let (ann, bob) = (user(&store, "ann").await, user(&store, "bob").await);
    let ch = |id: Uuid, op: GroupOp, caller: Uuid, target: Uuid| {
        let store = store.clone();
        async move {
            store
                .group_change(id, op, Some(caller), &[target], NOW_US)
                .await
                .unwrap()
        }
    };
    let solo = new_group(ann, "Solo", true, 10);
    store.group_create(&solo, solo.creator_id).await.unwrap();
    ch(solo.id, GroupOp::Join, bob, bob).await;
    let shared = new_group(ann, "Shared", true, 10);
    store
        .group_create(&shared, shared.creator_id)
        .await
        .unwrap();
    ch(shared.id, GroupOp::Join, bob, bob).await;
    // Member to admin, admin to superadmin: one step each.
    ch(shared.id, GroupOp::Promote, ann, bob).await;
    ch(shared.id, GroupOp::Promote, ann, bob).await;
    assert_eq!(
        role(&store, shared.id, bob).await,
        Some(GroupRole::Superadmin)
    );
    let bobs = new_group(bob, "Bobs", true, 10);
    store.group_create(&bobs, bobs.creator_id).await.unwrap();
    ch(bobs.id, GroupOp::Join, ann, ann).await;

    assert!(store.delete_user(ann).await.unwrap());
    assert!(
        store.groups_get(&[solo.id]).await.unwrap().is_empty(),
        "ann was Solo's only superadmin"
    );
    assert_eq!(role(&store, solo.id, bob).await, None);
    let shared_now = group(&store, shared.id).await;
    assert_eq!(shared_now.edge_count, 1);
    assert_eq!(role(&store, shared.id, ann).await, None);
    assert_eq!(group(&store, bobs.id).await.edge_count, 1);
}

/// Regression: listing a group's users with no state filter included the
/// users the group had banned; Nakama's `ListGroupUsers` leaves them out
/// (states 0-3 only) and shows them only when asked for state 4.
pub(crate) async fn group_users_without_a_state_leave_out_banned_users<B: Backend>() {
    let (_b, store) = B::store().await;
    let (boss, bad, good) = (
        user(&store, "boss").await,
        user(&store, "bad").await,
        user(&store, "good").await,
    );
    let g = new_group(boss, "Strict", true, 10);
    store.group_create(&g, g.creator_id).await.unwrap();
    for m in [bad, good] {
        store
            .group_change(g.id, GroupOp::Join, Some(m), &[m], NOW_US)
            .await
            .unwrap();
    }
    store
        .group_change(g.id, GroupOp::Ban, Some(boss), &[bad], NOW_US)
        .await
        .unwrap();
    let listed = store.group_users(g.id, None, None, 100).await.unwrap();
    let mut ids: Vec<Uuid> = listed.iter().map(|m| m.user.id).collect();
    ids.sort();
    let mut want = vec![boss, good];
    want.sort();
    assert_eq!(ids, want, "the banned user is left out");
    let banned = store
        .group_users(g.id, Some(GroupRole::Banned), None, 100)
        .await
        .unwrap();
    assert_eq!(banned.len(), 1);
    assert_eq!(banned[0].user.id, bad);
}

/// `users_after` pages users in id order from an id, without the system
/// user: how `nk.users_get_random` picks users from a random id.
pub(crate) async fn users_after_pages_in_id_order<B: Backend>() {
    let (_b, store) = B::store().await;
    let mut ids = vec![
        user(&store, "r1").await,
        user(&store, "r2").await,
        user(&store, "r3").await,
    ];
    ids.sort();
    let all: Vec<Uuid> = store
        .users_after(Uuid::nil(), 10)
        .await
        .unwrap()
        .iter()
        .map(|u| u.id)
        .collect();
    assert_eq!(all, ids);
    let after_first = store.users_after(ids[0], 1).await.unwrap();
    assert_eq!(after_first.len(), 1);
    assert_eq!(after_first[0].id, ids[1]);
    assert_eq!(after_first[0].username, {
        let users = store.get_users(&[ids[1]], &[]).await.unwrap();
        users[0].username.clone()
    });
    assert!(store.users_after(ids[2], 10).await.unwrap().is_empty());
}
