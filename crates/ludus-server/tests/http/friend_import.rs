//! Facebook and Steam friend imports (`POST /v2/friend/facebook`,
//! `/v2/friend/steam`, `sync` on sign-in and linking, Lua's
//! `import_friends`) against a stand-in for the Graph API and Steam's Web
//! API started by the test: the server's own code reads every page, makes
//! the friendships Nakama makes, and names a platform that fails.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    facebook_import_reads_every_page_and_befriends_players_only,
    reset_removes_friendships_and_invites_but_keeps_blocks,
    sync_imports_on_sign_in_when_asked_and_on_link_unless_refused,
    failing_platforms_are_named_and_change_nothing,
    lua_import_friends_argument,
    js_import_friends_argument,
);

const STEAM_KEY: &str = "steam-publisher-key";
const STEAM_APP: i64 = 480;

/// Who is friends with whom on each platform, and how many Graph pages
/// were served.
#[derive(Clone, Default)]
struct Platforms {
    facebook: Arc<HashMap<&'static str, Vec<&'static str>>>,
    steam: Arc<HashMap<&'static str, Vec<&'static str>>>,
    graph_pages: Arc<AtomicUsize>,
}

fn q(query: &[(String, String)], name: &str) -> Option<String> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// Starts the stand-in; answers its base URL. Graph tokens are `fb:<id>`,
/// Steam tickets `ticket:<steam id>`.
async fn stand_in(p: Platforms) -> String {
    async fn me(Query(query): Query<Vec<(String, String)>>) -> Response {
        match q(&query, "access_token").and_then(|t| t.strip_prefix("fb:").map(str::to_owned)) {
            Some(id) => axum::Json(json!({"id": id, "name": id})).into_response(),
            None => (StatusCode::BAD_REQUEST, "bad token").into_response(),
        }
    }
    // Two friends a page; the cursor is the index of the next friend.
    async fn friends(
        State(p): State<Platforms>,
        Query(query): Query<Vec<(String, String)>>,
    ) -> Response {
        p.graph_pages.fetch_add(1, Ordering::SeqCst);
        let token = q(&query, "access_token").unwrap_or_default();
        match token.as_str() {
            "fb:down" => return (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response(),
            "fb:garbage" => return "<html>".into_response(),
            _ => {}
        }
        let Some(list) = token.strip_prefix("fb:").and_then(|id| p.facebook.get(id)) else {
            return (StatusCode::BAD_REQUEST, "bad token").into_response();
        };
        let from: usize = q(&query, "after").map_or(0, |a| a.parse().unwrap());
        let page: Vec<Value> = list
            .iter()
            .skip(from)
            .take(2)
            .map(|id| json!({"id": id, "name": id}))
            .collect();
        let next = from + page.len();
        let paging = if next < list.len() {
            json!({"cursors": {"before": from.to_string(), "after": next.to_string()},
                   "next": format!("https://graph.facebook.com/next?after={next}")})
        } else {
            json!({"cursors": {"before": from.to_string(), "after": next.to_string()}})
        };
        axum::Json(json!({"data": page, "paging": paging})).into_response()
    }
    async fn ticket(Query(query): Query<Vec<(String, String)>>) -> Response {
        if q(&query, "key").as_deref() != Some(STEAM_KEY) {
            return (StatusCode::FORBIDDEN, "bad key").into_response();
        }
        match q(&query, "ticket").and_then(|t| t.strip_prefix("ticket:").map(str::to_owned)) {
            Some(id) => {
                axum::Json(json!({"response": {"params": {"result": "OK", "steamid": id}}}))
                    .into_response()
            }
            None => axum::Json(
                json!({"response": {"error": {"errorcode": 101, "errordesc": "Invalid ticket"}}}),
            )
            .into_response(),
        }
    }
    async fn steam_friends(
        State(p): State<Platforms>,
        Query(query): Query<Vec<(String, String)>>,
    ) -> Response {
        assert_eq!(q(&query, "key").as_deref(), Some(STEAM_KEY));
        assert_eq!(q(&query, "relationship").as_deref(), Some("friend"));
        let id = q(&query, "steamid").unwrap_or_default();
        match id.as_str() {
            "private" => return (StatusCode::UNAUTHORIZED, "private").into_response(),
            "down" => return (StatusCode::BAD_GATEWAY, "down").into_response(),
            _ => {}
        }
        let friends: Vec<Value> = p
            .steam
            .get(id.as_str())
            .into_iter()
            .flatten()
            .map(|f| json!({"steamid": f, "relationship": "friend", "friend_since": 1}))
            .collect();
        axum::Json(json!({"friendslist": {"friends": friends}})).into_response()
    }
    let app = Router::new()
        .route("/v22.0/me", get(me))
        .route("/v22.0/me/friends", get(friends))
        .route("/ISteamUserAuth/AuthenticateUserTicket/v1/", get(ticket))
        .route("/ISteamUser/GetFriendList/v0001/", get(steam_friends))
        .with_state(p);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn start(
    b: Backend,
    p: Platforms,
    tweak: impl FnOnce(&mut ludus_server::Config),
) -> TestServer {
    let base = stand_in(p).await;
    TestServer::start_with(b, |c| {
        c.social.facebook.base_url = base.clone();
        c.social.steam.base_url = base.clone();
        c.social.steam.publisher_key = STEAM_KEY.into();
        c.social.steam.app_id = STEAM_APP;
        c.social.timeout_ms.0 = 2_000;
        tweak(c);
    })
    .await
}

fn platforms(
    facebook: &[(&'static str, &[&'static str])],
    steam: &[(&'static str, &[&'static str])],
) -> Platforms {
    let map = |pairs: &[(&'static str, &[&'static str])]| {
        Arc::new(pairs.iter().map(|(k, v)| (*k, v.to_vec())).collect())
    };
    Platforms {
        facebook: map(facebook),
        steam: map(steam),
        graph_pages: Arc::default(),
    }
}

/// Signs up a player with Facebook id `id` (no import); answers the session.
async fn facebook_player(t: &TestServer, id: &str) -> Value {
    let r = t
        .post_key(
            &format!("/v2/account/authenticate/facebook?username={id}"),
            json!({"token": format!("fb:{id}")}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

async fn steam_player(t: &TestServer, id: &str, name: &str) -> Value {
    let r = t
        .post_key(
            &format!("/v2/account/authenticate/steam?username={name}"),
            json!({"token": format!("ticket:{id}")}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// `(username, state, metadata)` of each of the session's friends, sorted.
async fn friends(t: &TestServer, session: &Value) -> Vec<(String, i64, Value)> {
    let r = t.get_bearer("/v2/friend", &token(session)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut out: Vec<_> = r.body["friends"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|f| {
            let metadata = f["metadata"]
                .as_str()
                .map_or(Value::Null, |m| serde_json::from_str(m).unwrap());
            (
                f["user"]["username"].as_str().unwrap().to_owned(),
                f["state"].as_i64().unwrap_or(0),
                metadata,
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn names(list: &[(String, i64, Value)]) -> Vec<(&str, i64)> {
    list.iter().map(|(n, s, _)| (n.as_str(), *s)).collect()
}

async fn notifications(t: &TestServer, session: &Value) -> Vec<Value> {
    let r = t
        .get_bearer("/v2/notification?limit=100", &token(session))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["notifications"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn facebook_import_reads_every_page_and_befriends_players_only(b: Backend) {
    let p = platforms(
        &[(
            "fa",
            &["fb", "nobody1", "fc", "nobody2", "fe", "nobody3", "fa"],
        )],
        &[],
    );
    let pages = p.graph_pages.clone();
    let t = start(b, p, |_| {}).await;
    let a = facebook_player(&t, "fa").await;
    let fb = facebook_player(&t, "fb").await;
    let c = facebook_player(&t, "fc").await;
    let e = facebook_player(&t, "fe").await;
    // C invited A already; E blocked A.
    let r = t
        .post_bearer(
            &format!("/v2/friend?ids={}", user_id(&a)),
            &token(&c),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .post_bearer(
            &format!("/v2/friend/block?ids={}", user_id(&a)),
            &token(&e),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    let r = t
        .post_bearer("/v2/friend/facebook", &token(&a), json!({"token": "fb:fa"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, json!({}));
    // Seven friends at two a page.
    assert_eq!(pages.load(Ordering::SeqCst), 4);
    let mine = friends(&t, &a).await;
    assert_eq!(names(&mine), [("fb", 0), ("fc", 0)], "{mine:?}");
    for (_, _, metadata) in &mine {
        assert_eq!(metadata["provider"], "facebook", "{mine:?}");
    }
    assert_eq!(names(&friends(&t, &fb).await), [("fa", 0)]);
    assert_eq!(names(&friends(&t, &c).await), [("fa", 0)]);
    assert_eq!(names(&friends(&t, &e).await), [("fa", 3)]);
    // The new friends hear of it with Nakama's notice.
    let notes = notifications(&t, &fb).await;
    let joined: Vec<_> = notes.iter().filter(|n| n["code"] == -6).collect();
    assert_eq!(joined.len(), 1, "{notes:?}");
    assert_eq!(joined[0]["subject"], "Your friend has just joined the game");
    assert_eq!(joined[0]["sender_id"], user_id(&a));
    assert_eq!(joined[0]["persistent"], true);
    let content: Value = serde_json::from_str(joined[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"username": "fa"}));
    assert!(notifications(&t, &e).await.iter().all(|n| n["code"] != -6));

    // Again: nothing new, nobody notified twice.
    let r = t
        .post_bearer("/v2/friend/facebook", &token(&a), json!({"token": "fb:fa"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let notes = notifications(&t, &fb).await;
    assert_eq!(notes.iter().filter(|n| n["code"] == -6).count(), 1);
}

async fn reset_removes_friendships_and_invites_but_keeps_blocks(b: Backend) {
    let p = platforms(&[], &[("100", &["200"]), ("300", &[])]);
    let t = start(b, p, |_| {}).await;
    let a = steam_player(&t, "100", "alice").await;
    let s2 = steam_player(&t, "200", "bob").await;
    let d = t.device_session("reset-friend-device-d").await;
    let f = t.device_session("reset-friend-device-f").await;
    let g = t.device_session("reset-friend-device-g").await;
    let add = |from: &Value, to: &Value| {
        let (from, to) = (token(from), user_id(to));
        let t = &t;
        async move {
            let r = t
                .post_bearer(&format!("/v2/friend?ids={to}"), &from, json!({}))
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
        }
    };
    add(&a, &d).await;
    add(&d, &a).await;
    add(&a, &f).await;
    let r = t
        .post_bearer(
            &format!("/v2/friend/block?ids={}", user_id(&g)),
            &token(&a),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(friends(&t, &a).await.len(), 3);

    let r = t
        .post_bearer(
            "/v2/friend/steam?reset=true",
            &token(&a),
            json!({"token": "ticket:100"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mine = friends(&t, &a).await;
    assert_eq!(names(&mine).len(), 2, "{mine:?}");
    assert!(names(&mine).contains(&("bob", 0)), "{mine:?}");
    assert!(
        mine.iter().any(|(_, s, _)| *s == 3),
        "the block stays: {mine:?}"
    );
    assert_eq!(
        mine.iter().find(|f| f.0 == "bob").unwrap().2["provider"],
        "steam"
    );
    assert!(friends(&t, &d).await.is_empty());
    assert!(friends(&t, &f).await.is_empty());
    assert_eq!(names(&friends(&t, &s2).await), [("alice", 0)]);

    // A reset with no platform friends at all still resets.
    let lone = steam_player(&t, "300", "carol").await;
    add(&lone, &d).await;
    let r = t
        .post_bearer(
            "/v2/friend/steam?reset=true",
            &token(&lone),
            json!({"token": "ticket:300"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(friends(&t, &lone).await.is_empty());
    // The account's edge count went down with the edges (a second reset
    // and a listing agree).
    let r = t.get_bearer("/v2/account", &token(&lone)).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn sync_imports_on_sign_in_when_asked_and_on_link_unless_refused(b: Backend) {
    let p = platforms(
        &[("f2", &["f1"]), ("f3", &["f1"]), ("f4", &["f1"])],
        &[("500", &["400"]), ("600", &["400"])],
    );
    let t = start(b, p, |_| {}).await;
    let f1 = facebook_player(&t, "f1").await;
    let s1 = steam_player(&t, "400", "steamer").await;

    // Sign-in imports only with sync=true.
    let r = t
        .post_key(
            "/v2/account/authenticate/facebook?username=f2",
            json!({"token": "fb:f2"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(friends(&t, &r.body).await.is_empty());
    let r = t
        .post_key(
            "/v2/account/authenticate/facebook?sync=true&username=f3",
            json!({"token": "fb:f3"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(names(&friends(&t, &r.body).await), [("f1", 0)]);
    let r = t
        .post_key(
            "/v2/account/authenticate/steam?sync=true&username=s500",
            json!({"token": "ticket:500"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(names(&friends(&t, &r.body).await), [("steamer", 0)]);

    // Linking imports unless sync=false.
    let d1 = t.device_session("sync-link-device-1").await;
    let r = t
        .post_bearer(
            "/v2/account/link/facebook?sync=false",
            &token(&d1),
            json!({"token": "fb:f4"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(friends(&t, &d1).await.is_empty());
    let d2 = t.device_session("sync-link-device-2").await;
    let r = t
        .post_bearer(
            "/v2/account/link/steam",
            &token(&d2),
            json!({"token": "ticket:600"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(names(&friends(&t, &d2).await).len(), 1);
    assert_eq!(friends(&t, &s1).await.len(), 2);
    assert_eq!(names(&friends(&t, &f1).await), [("f3", 0)]);
}

async fn failing_platforms_are_named_and_change_nothing(b: Backend) {
    let p = platforms(&[], &[]);
    let t = start(b, p.clone(), |_| {}).await;
    let a = t.device_session("failing-import-device-a").await;
    let friend = t.device_session("failing-import-device-b").await;
    for (from, to) in [(&a, &friend), (&friend, &a)] {
        let r = t
            .post_bearer(
                &format!("/v2/friend?ids={}", user_id(to)),
                &token(from),
                json!({}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    for (path, body, status, code, says) in [
        (
            "/v2/friend/facebook?reset=true",
            json!({"token": "fb:down"}),
            401,
            16,
            "could not import facebook friends: facebook friends answered http 500",
        ),
        (
            "/v2/friend/facebook?reset=true",
            json!({"token": "fb:garbage"}),
            401,
            16,
            "could not import facebook friends: facebook friends answer is not json",
        ),
        (
            "/v2/friend/facebook?reset=true",
            json!({}),
            400,
            3,
            "facebook token is required",
        ),
        (
            "/v2/friend/steam?reset=true",
            json!({"token": "forged"}),
            401,
            16,
            "could not authenticate steam profile: steam refused the ticket: Invalid ticket, 101",
        ),
        (
            "/v2/friend/steam?reset=true",
            json!({"token": "ticket:down"}),
            401,
            16,
            "could not import steam friends: steam friends answered http 502",
        ),
        (
            "/v2/friend/steam?reset=true",
            json!({}),
            400,
            3,
            "steam access token is required",
        ),
        (
            "/v2/friend/steam?reset=maybe",
            json!({"token": "ticket:1"}),
            400,
            3,
            "reset",
        ),
    ] {
        let r = t.post_bearer(path, &token(&a), body.clone()).await;
        let message = assert_error(&r, status, code);
        assert!(message.contains(says), "{path} {body}: {message}");
        // A failed import with reset removed nothing.
        assert_eq!(friends(&t, &a).await.len(), 1, "{path} {body}");
    }
    // A private Steam friend list imports nothing, as in Nakama, and is no error.
    let r = t
        .post_bearer(
            "/v2/friend/steam",
            &token(&a),
            json!({"token": "ticket:private"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Not configured: Nakama's FailedPrecondition, before the token is read.
    drop(t);
    let t = TestServer::start(b).await;
    let a = t.device_session("failing-import-device-c").await;
    let r = t
        .post_bearer("/v2/friend/steam", &token(&a), json!({}))
        .await;
    assert_error(&r, 400, 9);
}

async fn lua_import_friends_argument(b: Backend) {
    let p = platforms(
        &[("lf2", &["lf1"])],
        &[("800", &["700"]), ("900", &["700"])],
    );
    let t = start(b, p, crate::rpc::lua_config).await;
    let f1 = facebook_player(&t, "lf1").await;
    let s1 = steam_player(&t, "700", "luasteamfriend").await;
    let caller = t.device_session("lua-import-device").await;
    let r = t
        .post_bearer(
            "/v2/rpc/lua_friend_import",
            &token(&caller),
            json!(
                json!({"steam": "ticket:800", "steam_quiet": "ticket:900", "facebook": "fb:lf2"})
                    .to_string()
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    // authenticate_steam imports by default; with false it does not.
    assert_eq!(out["steam"], 1, "{out}");
    assert_eq!(out["steam_quiet"], 0, "{out}");
    // link_facebook imports by default.
    assert_eq!(names(&friends(&t, &caller).await), [("lf1", 0)]);
    assert_eq!(friends(&t, &s1).await.len(), 1);
    assert_eq!(friends(&t, &f1).await.len(), 1);
}

/// The JS twin: `importFriends` of nk.authenticateSteam and nk.linkFacebook.
async fn js_import_friends_argument(b: Backend) {
    let p = platforms(
        &[("jf2", &["jf1"])],
        &[("800", &["700"]), ("900", &["700"])],
    );
    let t = start(b, p, |c| {
        c.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js_platforms").into();
    })
    .await;
    let f1 = facebook_player(&t, "jf1").await;
    let s1 = steam_player(&t, "700", "jssteamfriend").await;
    let caller = t.device_session("js-import-device").await;
    let r = t
        .post_bearer(
            "/v2/rpc/js_friend_import",
            &token(&caller),
            json!(
                json!({"steam": "ticket:800", "steam_quiet": "ticket:900", "facebook": "fb:jf2"})
                    .to_string()
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(out["steam"], 1, "{out}");
    assert_eq!(out["steam_quiet"], 0, "{out}");
    assert_eq!(names(&friends(&t, &caller).await), [("jf1", 0)]);
    assert_eq!(friends(&t, &s1).await.len(), 1);
    assert_eq!(friends(&t, &f1).await.len(), 1);
}
