//! Every REST call that succeeds runs its after hook, registered under
//! Nakama's method name: one scenario touches each served route once (but
//! platform sign-in, linking and unlinking, which need the platforms'
//! stand-ins and are hooked in `platform_sign_in.rs`), and each call's name
//! must reach the hook exactly as Nakama names it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, Reply, TestServer, token, user_id};

both_backends!(every_successful_call_runs_its_after_hook);

/// The calls the scenario makes, by Nakama's method name.
const CALLED: &[&str] = &[
    "AuthenticateDevice",
    "AuthenticateEmail",
    "AuthenticateCustom",
    "SessionRefresh",
    "SessionLogout",
    "GetAccount",
    "UpdateAccount",
    "DeleteAccount",
    "LinkDevice",
    "LinkEmail",
    "LinkCustom",
    "UnlinkDevice",
    "UnlinkEmail",
    "UnlinkCustom",
    "GetUsers",
    "AddFriends",
    "ListFriends",
    "ListFriendsOfFriends",
    "BlockFriends",
    "DeleteFriends",
    "CreateGroup",
    "UpdateGroup",
    "ListGroups",
    "JoinGroup",
    "ListGroupUsers",
    "AddGroupUsers",
    "PromoteGroupUsers",
    "DemoteGroupUsers",
    "KickGroupUsers",
    "BanGroupUsers",
    "LeaveGroup",
    "ListUserGroups",
    "DeleteGroup",
    "WriteStorageObjects",
    "ReadStorageObjects",
    "ListStorageObjects",
    "DeleteStorageObjects",
    "ListChannelMessages",
    "ListNotifications",
    "DeleteNotifications",
    "WriteLeaderboardRecord",
    "ListLeaderboardRecords",
    "ListLeaderboardRecordsAroundOwner",
    "DeleteLeaderboardRecord",
    "ListTournaments",
    "JoinTournament",
    "WriteTournamentRecord",
    "ListTournamentRecords",
    "ListTournamentRecordsAroundOwner",
    "DeleteTournamentRecord",
    "ListMatches",
    "ListParties",
    "GetMatchmakerStats",
    "Event",
];

const MODULE: &str = r#"
local nk = require("nakama")
nk.leaderboard_create("after_lb", false, "desc", "best", "", nil, true)
nk.tournament_create("after_cup", false, "desc", "best", 3600, "", nil, "Cup", "", 1, 0, 0, 100, 10, true, true)
"#;

fn ok(reply: &Reply, what: &str) -> Value {
    assert_eq!(reply.status, 200, "{what}: {}", reply.body);
    reply.body.clone()
}

async fn every_successful_call_runs_its_after_hook(backend: Backend) {
    let heard: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let native = CALLED
        .iter()
        .fold(ludus_server::NativeModule::new(), |native, name| {
            let heard = heard.clone();
            let name = (*name).to_owned();
            native.after(&name.clone(), move |_call, _response, _request| {
                heard.lock().unwrap().insert(name.clone());
                async { Ok(()) }
            })
        });
    let modules = tempfile::tempdir().unwrap();
    std::fs::write(modules.path().join("after.lua"), MODULE).unwrap();
    let path = modules.path().to_string_lossy().into_owned();
    let s = TestServer::start_native(backend, native, move |c| c.runtime.path = path).await;

    // Three players, one per way in; a session refreshed.
    let a = ok(
        &s.post_key(
            "/v2/account/authenticate/device?create=true&username=after_a",
            json!({"id": "after-device-0001"}),
        )
        .await,
        "device",
    );
    let b = ok(
        &s.post_key(
            "/v2/account/authenticate/email?create=true&username=after_b",
            json!({"email": "after-b@example.com", "password": "password-b1"}),
        )
        .await,
        "email",
    );
    let c = ok(
        &s.post_key(
            "/v2/account/authenticate/custom?create=true&username=after_c",
            json!({"id": "after-custom-0001"}),
        )
        .await,
        "custom",
    );
    ok(
        &s.post_key(
            "/v2/account/session/refresh",
            json!({"token": a["refresh_token"]}),
        )
        .await,
        "refresh",
    );
    let (ta, tb, tc) = (token(&a), token(&b), token(&c));
    let (ua, ub, uc) = (user_id(&a), user_id(&b), user_id(&c));

    // The account and its links.
    ok(&s.get_bearer("/v2/account", &ta).await, "get account");
    ok(
        &s.put_bearer("/v2/account", &ta, json!({"display_name": "Ann"}))
            .await,
        "update account",
    );
    for (kind, body) in [
        ("device", json!({"id": "after-device-a002"})),
        (
            "email",
            json!({"email": "after-a@example.com", "password": "password-a1"}),
        ),
        ("custom", json!({"id": "after-custom-a002"})),
    ] {
        ok(
            &s.post_bearer(&format!("/v2/account/link/{kind}"), &ta, body.clone())
                .await,
            kind,
        );
        ok(
            &s.post_bearer(&format!("/v2/account/unlink/{kind}"), &ta, body)
                .await,
            kind,
        );
    }
    ok(
        &s.get_bearer(&format!("/v2/user?ids={ub}"), &ta).await,
        "users",
    );

    // Friends.
    ok(
        &s.post_bearer(&format!("/v2/friend?ids={ub}"), &ta, json!({}))
            .await,
        "add",
    );
    ok(
        &s.post_bearer(&format!("/v2/friend?ids={ua}"), &tb, json!({}))
            .await,
        "accept",
    );
    ok(&s.get_bearer("/v2/friend", &ta).await, "list friends");
    ok(
        &s.get_bearer("/v2/friend/friends", &ta).await,
        "friends of friends",
    );
    ok(
        &s.post_bearer(&format!("/v2/friend/block?ids={uc}"), &ta, json!({}))
            .await,
        "block",
    );
    ok(
        &s.delete_bearer(&format!("/v2/friend?ids={uc}"), &ta).await,
        "delete friend",
    );

    // A group through its whole life.
    let group = ok(
        &s.post_bearer(
            "/v2/group",
            &ta,
            json!({"name": "after-group", "open": true}),
        )
        .await,
        "create group",
    );
    let gid = group["id"].as_str().unwrap().to_owned();
    ok(
        &s.put_bearer(
            &format!("/v2/group/{gid}"),
            &ta,
            json!({"description": "d"}),
        )
        .await,
        "update group",
    );
    ok(
        &s.get_bearer("/v2/group?name=after%25", &ta).await,
        "list groups",
    );
    ok(
        &s.post_bearer(&format!("/v2/group/{gid}/join"), &tb, json!({}))
            .await,
        "join",
    );
    ok(
        &s.get_bearer(&format!("/v2/group/{gid}/user"), &ta).await,
        "group users",
    );
    let members = |verb: &str, user: &str| format!("/v2/group/{gid}/{verb}?user_ids={user}");
    ok(
        &s.post_bearer(&members("add", &uc), &ta, json!({})).await,
        "add users",
    );
    ok(
        &s.post_bearer(&members("promote", &ub), &ta, json!({}))
            .await,
        "promote",
    );
    ok(
        &s.post_bearer(&members("demote", &ub), &ta, json!({})).await,
        "demote",
    );
    ok(
        &s.post_bearer(&members("kick", &uc), &ta, json!({})).await,
        "kick",
    );
    ok(
        &s.post_bearer(&members("ban", &uc), &ta, json!({})).await,
        "ban",
    );
    ok(
        &s.post_bearer(&format!("/v2/group/{gid}/leave"), &tb, json!({}))
            .await,
        "leave",
    );
    ok(
        &s.get_bearer(&format!("/v2/user/{ua}/group"), &ta).await,
        "user groups",
    );
    ok(
        &s.delete_bearer(&format!("/v2/group/{gid}"), &ta).await,
        "delete group",
    );

    // Storage.
    ok(
        &s.put_bearer(
            "/v2/storage",
            &ta,
            json!({"objects": [{"collection": "c", "key": "k", "value": "{}"}]}),
        )
        .await,
        "write",
    );
    ok(
        &s.post_bearer(
            "/v2/storage",
            &ta,
            json!({"object_ids": [{"collection": "c", "key": "k", "user_id": ua}]}),
        )
        .await,
        "read",
    );
    ok(
        &s.get_bearer(&format!("/v2/storage/c/{ua}"), &ta).await,
        "list",
    );
    ok(
        &s.put_bearer(
            "/v2/storage/delete",
            &ta,
            json!({"object_ids": [{"collection": "c", "key": "k"}]}),
        )
        .await,
        "delete",
    );

    // Chat history and notifications.
    ok(
        &s.get_bearer("/v2/channel/2...after", &ta).await,
        "channel messages",
    );
    ok(
        &s.get_bearer("/v2/notification?limit=10", &ta).await,
        "notifications",
    );
    ok(
        &s.delete_bearer(
            "/v2/notification?ids=00000000-0000-4000-8000-000000000001",
            &ta,
        )
        .await,
        "delete notifications",
    );

    // A leaderboard and a tournament.
    ok(
        &s.post_bearer("/v2/leaderboard/after_lb", &ta, json!({"score": "10"}))
            .await,
        "write record",
    );
    ok(
        &s.get_bearer("/v2/leaderboard/after_lb", &ta).await,
        "records",
    );
    ok(
        &s.get_bearer(&format!("/v2/leaderboard/after_lb/owner/{ua}"), &ta)
            .await,
        "around owner",
    );
    ok(
        &s.delete_bearer("/v2/leaderboard/after_lb", &ta).await,
        "delete record",
    );
    ok(&s.get_bearer("/v2/tournament", &ta).await, "tournaments");
    ok(
        &s.post_bearer("/v2/tournament/after_cup/join", &ta, json!({}))
            .await,
        "join tournament",
    );
    ok(
        &s.put_bearer("/v2/tournament/after_cup", &ta, json!({"score": "5"}))
            .await,
        "tournament record",
    );
    ok(
        &s.get_bearer("/v2/tournament/after_cup", &ta).await,
        "tournament records",
    );
    ok(
        &s.get_bearer(&format!("/v2/tournament/after_cup/owner/{ua}"), &ta)
            .await,
        "tournament around owner",
    );
    ok(
        &s.delete_bearer("/v2/tournament/after_cup", &ta).await,
        "delete tournament record",
    );

    // Listings of realtime state.
    ok(&s.get_bearer("/v2/match", &ta).await, "matches");
    ok(&s.get_bearer("/v2/party", &ta).await, "parties");
    ok(
        &s.get_bearer("/v2/matchmaker/stats", &ta).await,
        "matchmaker stats",
    );
    ok(
        &s.post_bearer("/v2/event", &ta, json!({"name": "after"}))
            .await,
        "event",
    );

    // Ending a session and an account.
    ok(
        &s.post_bearer("/v2/session/logout", &tb, json!({"token": tb}))
            .await,
        "logout",
    );
    ok(&s.delete_bearer("/v2/account", &tc).await, "delete account");

    let heard = heard.lock().unwrap().clone();
    let missing: Vec<_> = CALLED.iter().filter(|n| !heard.contains(**n)).collect();
    assert!(
        missing.is_empty(),
        "after hooks that did not run: {missing:?}"
    );
}
