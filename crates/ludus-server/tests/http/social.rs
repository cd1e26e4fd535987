//! Friends and groups over REST with Nakama's paths and shapes: the friend
//! state machine with its notifications, blocking, friends of friends and
//! cursors; groups open and closed, every role rule as a client meets it,
//! searches, bad input that writes nothing, the `max_count` race over real
//! HTTP (100 joins at once to a group of 50 places), and the hooks of the
//! Lua module in `tests/lua/social_test.lua`.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    friends_invite_accept_block_delete,
    friends_bad_input_and_cursors,
    groups_roles_and_membership,
    groups_search_and_bad_input,
    social_hooks_rewrite_refuse_and_observe,
    concurrent_joins_over_http_fill_exactly_max_count,
);

struct Player {
    token: String,
    id: String,
    name: String,
}

async fn player(t: &TestServer, device: &str) -> Player {
    let s = t.device_session(device).await;
    let token = token(&s);
    let id = user_id(&s);
    let r = t.get_bearer("/v2/account", &token).await;
    let name = r.body["user"]["username"].as_str().unwrap().to_owned();
    Player { token, id, name }
}

/// `(user id, state)` of each friend of `p`, in listing order.
async fn friends(t: &TestServer, p: &Player) -> Vec<(String, i64)> {
    let r = t.get_bearer("/v2/friend", &p.token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["friends"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    (
                        f["user"]["id"].as_str().unwrap().to_owned(),
                        // Zero values are omitted, as protojson does.
                        f["state"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `(code, sender)` of each stored notification of `p`.
async fn notifications(t: &TestServer, p: &Player) -> Vec<(i64, String)> {
    let r = t.get_bearer("/v2/notification?limit=100", &p.token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["notifications"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| {
                    (
                        n["code"].as_i64().unwrap(),
                        n["sender_id"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn post(t: &TestServer, p: &Player, path: &str) -> crate::support::Reply {
    t.post_bearer(path, &p.token, json!({})).await
}

async fn friends_invite_accept_block_delete(b: Backend) {
    let t = TestServer::start(b).await;
    let ann = player(&t, "social-friends-ann").await;
    let bob = player(&t, "social-friends-bob").await;
    let cat = player(&t, "social-friends-cat").await;

    let r = post(&t, &ann, &format!("/v2/friend?ids={}", bob.id)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(friends(&t, &ann).await, [(bob.id.clone(), 1)]);
    assert_eq!(friends(&t, &bob).await, [(ann.id.clone(), 2)]);
    assert_eq!(notifications(&t, &bob).await, [(-2, ann.id.clone())]);

    // Accepting by username.
    let r = post(&t, &bob, &format!("/v2/friend?usernames={}", ann.name)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(friends(&t, &ann).await, [(bob.id.clone(), 0)]);
    assert_eq!(friends(&t, &bob).await, [(ann.id.clone(), 0)]);
    assert_eq!(notifications(&t, &ann).await, [(-3, bob.id.clone())]);
    let r = t.get_bearer("/v2/friend", &ann.token).await;
    let f = &r.body["friends"][0];
    assert_eq!(f["user"]["username"], bob.name.as_str());
    assert!(f["update_time"].is_string());
    // No socket, so not online (the field is omitted when false).
    assert!(f["user"]["online"].is_null());
    // Each user owns one edge.
    let r = t.get_bearer("/v2/account", &ann.token).await;
    assert_eq!(r.body["user"]["edge_count"], 1);

    // Friends of friends: cat befriends bob, and ann sees cat through bob.
    post(&t, &cat, &format!("/v2/friend?ids={}", bob.id)).await;
    post(&t, &bob, &format!("/v2/friend?ids={}", cat.id)).await;
    let r = t.get_bearer("/v2/friend/friends", &ann.token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["friends_of_friends"][0]["referrer"], bob.id.as_str());
    assert_eq!(
        r.body["friends_of_friends"][0]["user"]["id"],
        cat.id.as_str()
    );
    assert_eq!(r.body["friends_of_friends"].as_array().unwrap().len(), 1);

    // Blocking: cat blocks ann; ann's invite changes nothing.
    let r = post(&t, &cat, &format!("/v2/friend/block?ids={}", ann.id)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post(&t, &ann, &format!("/v2/friend?ids={}", cat.id)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(friends(&t, &ann).await, [(bob.id.clone(), 0)]);
    let cats = friends(&t, &cat).await;
    assert!(cats.contains(&(ann.id.clone(), 3)), "{cats:?}");
    let r = t.get_bearer("/v2/friend?state=3", &cat.token).await;
    assert_eq!(r.body["friends"].as_array().unwrap().len(), 1);

    // Deleting a friend removes both sides and tells the other.
    let r = t
        .delete_bearer(&format!("/v2/friend?ids={}", bob.id), &ann.token)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(friends(&t, &ann).await.is_empty());
    assert_eq!(friends(&t, &bob).await, [(cat.id.clone(), 0)]);
    assert!(
        notifications(&t, &bob)
            .await
            .contains(&(-9, ann.id.clone()))
    );
    let r = t.get_bearer("/v2/account", &ann.token).await;
    assert!(r.body["user"]["edge_count"].is_null());
}

async fn friends_bad_input_and_cursors(b: Backend) {
    let t = TestServer::start(b).await;
    let ann = player(&t, "social-input-ann").await;
    let r = post(&t, &ann, &format!("/v2/friend?ids={}", ann.id)).await;
    assert_eq!(assert_error(&r, 400, 3), "cannot add self as friend");
    let r = post(&t, &ann, &format!("/v2/friend?usernames={}", ann.name)).await;
    assert_eq!(assert_error(&r, 400, 3), "cannot add self as friend");
    let r = post(&t, &ann, "/v2/friend").await;
    assert_error(&r, 400, 3);
    let r = post(&t, &ann, "/v2/friend?ids=not-a-uuid").await;
    assert!(assert_error(&r, 400, 3).contains("not-a-uuid"));
    let r = post(&t, &ann, "/v2/friend?usernames=nobody-has-this-name").await;
    assert_eq!(
        assert_error(&r, 400, 3),
        "no valid id or username was provided"
    );
    let r = post(&t, &ann, "/v2/friend/block?ids=").await;
    assert_error(&r, 400, 3);
    // An unknown but well-formed id writes nothing.
    let r = post(
        &t,
        &ann,
        "/v2/friend?ids=8f2d4e6a-1b3c-4d5e-8f90-a1b2c3d4e5f6",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(friends(&t, &ann).await.is_empty());

    // Cursors page through invites in order and refuse other listings.
    let mut invited = Vec::new();
    for i in 0..3 {
        let p = player(&t, &format!("social-input-friend-{i}")).await;
        post(&t, &ann, &format!("/v2/friend?ids={}", p.id)).await;
        invited.push(p.id);
    }
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let r = t
            .get_bearer(&format!("/v2/friend?limit=2&cursor={cursor}"), &ann.token)
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        for f in r.body["friends"].as_array().unwrap() {
            seen.push(f["user"]["id"].as_str().unwrap().to_owned());
        }
        match r.body["cursor"].as_str() {
            Some(c) if !c.is_empty() => cursor = c.to_owned(),
            _ => break,
        }
    }
    assert_eq!(seen, invited);
    let r = t.get_bearer("/v2/friend?limit=1", &ann.token).await;
    let c = r.body["cursor"].as_str().unwrap().to_owned();
    let r = t
        .get_bearer(
            &format!("/v2/friend?limit=1&state=0&cursor={c}"),
            &ann.token,
        )
        .await;
    assert_error(&r, 400, 3);
    let r = t
        .get_bearer("/v2/friend?cursor=garbage!!", &ann.token)
        .await;
    assert_error(&r, 400, 3);
    let r = t.get_bearer("/v2/friend?state=7", &ann.token).await;
    assert_error(&r, 400, 3);
    let r = t.get_bearer("/v2/friend?limit=1001", &ann.token).await;
    assert_error(&r, 400, 3);
}

async fn create(t: &TestServer, p: &Player, body: Value) -> crate::support::Reply {
    t.post_bearer("/v2/group", &p.token, body).await
}

/// `(user id, state)` of each user of a group, as `p` lists them.
async fn members(t: &TestServer, p: &Player, group: &str) -> Vec<(String, i64)> {
    let r = t
        .get_bearer(&format!("/v2/group/{group}/user"), &p.token)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["group_users"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|u| {
                    (
                        u["user"]["id"].as_str().unwrap().to_owned(),
                        u["state"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn groups_roles_and_membership(b: Backend) {
    let t = TestServer::start(b).await;
    let ann = player(&t, "social-groups-ann").await;
    let bob = player(&t, "social-groups-bob").await;
    let cat = player(&t, "social-groups-cat").await;
    let r = create(
        &t,
        &ann,
        json!({"name": "Closed Club", "description": "d", "open": false, "max_count": 3}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let g = r.body["id"].as_str().unwrap().to_owned();
    assert_eq!(r.body["creator_id"], ann.id.as_str());
    assert_eq!(r.body["edge_count"], 1);
    assert_eq!(r.body["max_count"], 3);
    assert_eq!(r.body["lang_tag"], "en");
    assert_eq!(r.body["open"], false);

    // A closed group: a join is a request the superadmin hears about.
    let r = post(&t, &bob, &format!("/v2/group/{g}/join")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        members(&t, &ann, &g).await,
        [(ann.id.clone(), 0), (bob.id.clone(), 3)]
    );
    assert_eq!(notifications(&t, &ann).await, [(-5, bob.id.clone())]);
    // Members only manage when admins.
    let r = post(&t, &bob, &format!("/v2/group/{g}/add?user_ids={}", cat.id)).await;
    assert_error(&r, 404, 5);
    let r = post(&t, &ann, &format!("/v2/group/{g}/add?user_ids={}", bob.id)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(notifications(&t, &bob).await, [(-4, ann.id.clone())]);
    let r = post(
        &t,
        &ann,
        &format!("/v2/group/{g}/promote?user_ids={}", bob.id),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        members(&t, &ann, &g).await,
        [(ann.id.clone(), 0), (bob.id.clone(), 1)]
    );
    // An admin cannot act on the superadmin: nothing changes.
    for action in ["kick", "ban", "demote"] {
        let r = post(
            &t,
            &bob,
            &format!("/v2/group/{g}/{action}?user_ids={}", ann.id),
        )
        .await;
        assert_eq!(r.status, 200, "{action}: {}", r.body);
    }
    assert_eq!(members(&t, &ann, &g).await[0], (ann.id.clone(), 0));
    // The last superadmin cannot leave.
    let r = post(&t, &ann, &format!("/v2/group/{g}/leave")).await;
    assert_eq!(
        assert_error(&r, 400, 3),
        "cannot leave group when you are the last superadmin"
    );
    // Admins update; outsiders may not; only superadmins delete.
    let r = t
        .put_bearer(
            &format!("/v2/group/{g}"),
            &bob.token,
            json!({"description": "by bob", "open": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .put_bearer(
            &format!("/v2/group/{g}"),
            &cat.token,
            json!({"name": "Mine"}),
        )
        .await;
    assert_error(&r, 404, 5);
    let r = t
        .put_bearer(&format!("/v2/group/{g}"), &bob.token, json!({}))
        .await;
    assert_error(&r, 400, 3);
    let r = t.delete_bearer(&format!("/v2/group/{g}"), &bob.token).await;
    assert_error(&r, 404, 5);

    // Now open with one place left: cat joins straight in, then it is full.
    let r = post(&t, &cat, &format!("/v2/group/{g}/join")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .get_bearer(&format!("/v2/user/{}/group", cat.id), &cat.token)
        .await;
    let ug = &r.body["user_groups"][0];
    assert_eq!(ug["group"]["description"], "by bob");
    assert_eq!(ug["group"]["edge_count"], 3);
    assert_eq!(ug["state"], 2);
    let dan = player(&t, "social-groups-dan").await;
    let r = post(&t, &dan, &format!("/v2/group/{g}/join")).await;
    assert_eq!(assert_error(&r, 400, 3), "group is full");

    // Banned: out of the group and cannot come back.
    let r = post(&t, &bob, &format!("/v2/group/{g}/ban?user_ids={}", cat.id)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post(&t, &cat, &format!("/v2/group/{g}/join")).await;
    assert_error(&r, 403, 7);
    let r = t
        .get_bearer(&format!("/v2/group/{g}/user?state=4"), &ann.token)
        .await;
    assert_eq!(r.body["group_users"][0]["user"]["id"], cat.id.as_str());

    // A second superadmin lets the first leave; then the group goes.
    post(
        &t,
        &ann,
        &format!("/v2/group/{g}/promote?user_ids={}", bob.id),
    )
    .await;
    let r = post(&t, &ann, &format!("/v2/group/{g}/leave")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t.delete_bearer(&format!("/v2/group/{g}"), &bob.token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .get_bearer(&format!("/v2/group/{g}/user"), &bob.token)
        .await;
    assert_error(&r, 404, 5);
}

async fn groups_search_and_bad_input(b: Backend) {
    let t = TestServer::start(b).await;
    let ann = player(&t, "social-search-ann").await;
    for (name, lang, open) in [
        ("Dragons", "en", true),
        ("Dragonflies", "fr", true),
        ("Drakes", "en", false),
    ] {
        let r = create(
            &t,
            &ann,
            json!({"name": name, "lang_tag": lang, "open": open}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["max_count"], 100);
    }
    let names = |r: &crate::support::Reply| -> Vec<String> {
        r.body["groups"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|g| g["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let r = t
        .get_bearer("/v2/group?name=Dragon%25&limit=10", &ann.token)
        .await;
    assert_eq!(names(&r), ["Dragonflies", "Dragons"]);
    let r = t
        .get_bearer("/v2/group?lang_tag=en&limit=10", &ann.token)
        .await;
    assert_eq!(names(&r), ["Dragons", "Drakes"]);
    let r = t
        .get_bearer("/v2/group?open=false&limit=10", &ann.token)
        .await;
    assert_eq!(names(&r), ["Drakes"]);
    // One group per page by default, with a cursor to the next.
    let r = t.get_bearer("/v2/group", &ann.token).await;
    assert_eq!(names(&r), ["Dragonflies"]);
    let c = r.body["cursor"].as_str().unwrap().to_owned();
    let r = t
        .get_bearer(&format!("/v2/group?limit=10&cursor={c}"), &ann.token)
        .await;
    assert_eq!(names(&r), ["Dragons", "Drakes"]);
    let r = t.get_bearer("/v2/group?cursor=nope", &ann.token).await;
    assert_error(&r, 400, 3);

    // Bad input writes nothing.
    let r = create(&t, &ann, json!({"name": ""})).await;
    assert_error(&r, 400, 3);
    let r = create(&t, &ann, json!({"name": "x".repeat(256)})).await;
    assert_error(&r, 400, 3);
    let r = create(&t, &ann, json!({"name": "Dragons"})).await;
    assert_error(&r, 409, 6);
    let r = create(&t, &ann, json!({"name": "Negative", "max_count": -1})).await;
    assert_error(&r, 400, 3);
    let r = t
        .get_bearer("/v2/group?name=Negative&limit=10", &ann.token)
        .await;
    assert!(names(&r).is_empty());
    let r = post(&t, &ann, "/v2/group/not-a-uuid/join").await;
    assert_error(&r, 400, 3);
    let r = post(
        &t,
        &ann,
        "/v2/group/8f2d4e6a-1b3c-4d5e-8f90-a1b2c3d4e5f6/join",
    )
    .await;
    assert_eq!(assert_error(&r, 404, 5), "group not found");
}

async fn social_hooks_rewrite_refuse_and_observe(b: Backend) {
    let t = TestServer::start_with(b, crate::rpc::lua_config).await;
    // The module's device hook names users "hooked" + the id's first four
    // characters, so these differ there.
    let ann = player(&t, "hka1-social-hooks").await;
    let bob = player(&t, "hkb2-social-hooks").await;
    let r = post(&t, &ann, "/v2/friend?usernames=hook-refused").await;
    assert_eq!(
        assert_error(&r, 400, 3),
        "adding hook-refused is refused by the hook"
    );
    let r = post(&t, &ann, &format!("/v2/friend?ids={}", bob.id)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = create(&t, &ann, json!({"name": "Hooked"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["description"], "stamped by hook");
    let g = r.body["id"].as_str().unwrap().to_owned();
    members(&t, &ann, &g).await;
    let cached = |key: &'static str| {
        let t = &t;
        async move {
            t.raw(
                t.http
                    .post(t.url("/v2/rpc/cache_get?http_key=defaulthttpkey"))
                    .body(format!("\"{key}\"")),
            )
            .await
            .body["payload"]
                .clone()
        }
    };
    assert_eq!(cached("after_add_friends").await, "1");
    assert_eq!(cached("after_create_group").await, "Hooked");
    assert_eq!(cached("after_list_group_users").await, "1");
}

async fn concurrent_joins_over_http_fill_exactly_max_count(b: Backend) {
    let t = TestServer::start(b).await;
    let owner = player(&t, "social-race-owner").await;
    let r = create(
        &t,
        &owner,
        json!({"name": "Fifty", "open": true, "max_count": 50}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let g = r.body["id"].as_str().unwrap().to_owned();
    let mut tokens = Vec::new();
    for i in 0..100 {
        tokens.push(token(
            &t.device_session(&format!("social-race-{i:03}")).await,
        ));
    }
    let joins = tokens.iter().map(|tok| {
        let req = t
            .http
            .post(t.url(&format!("/v2/group/{g}/join")))
            .bearer_auth(tok)
            .json(&json!({}));
        async move { req.send().await.unwrap().status().as_u16() }
    });
    let statuses = futures_util::future::join_all(joins).await;
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let full = statuses.iter().filter(|s| **s == 400).count();
    assert_eq!((ok, full), (49, 51), "{statuses:?}");
    let r = t
        .get_bearer(&format!("/v2/group/{g}/user?limit=100"), &owner.token)
        .await;
    assert_eq!(r.body["group_users"].as_array().unwrap().len(), 50);
    let r = t
        .get_bearer("/v2/group?name=Fifty&limit=1", &owner.token)
        .await;
    assert_eq!(r.body["groups"][0]["edge_count"], 50);
}
