//! Leaderboards and tournaments over real HTTP on both backends: Nakama's
//! REST paths and shapes (records with ranks and cursors, records around an
//! owner, own-record deletion, authoritative boards refused to clients,
//! tournaments listed, joined and written), the before/after hooks on the
//! leaderboard routes, and the Lua module `tests/lua/leaderboard_test.lua`
//! calling `nk.leaderboard_*` and `nk.tournament_*` as Nakama's modules do.

use serde_json::{Value, json};

use crate::both_backends;
use crate::support::Backend;
use crate::support::{TestServer, assert_error, token, user_id};

both_backends!(
    records_rank_page_and_delete_over_rest,
    bad_input_gets_clear_errors,
    tournaments_over_rest,
    tournament_listings_use_nakamas_default_and_largest_limits,
    hooks_rewrite_reject_and_observe_writes,
    ranks_survive_a_restart,
    lua_leaderboard_calls,
    lua_tournament_calls,
);

async fn rpc(t: &TestServer, session: &Value, id: &str) -> Value {
    let r = t
        .post_bearer(&format!("/v2/rpc/{id}"), &token(session), json!(""))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap()
}

async fn server(b: Backend) -> TestServer {
    TestServer::start_with(b, crate::rpc::lua_config).await
}

async fn records_rank_page_and_delete_over_rest(b: Backend) {
    let t = server(b).await;
    let mut users = Vec::new();
    for (i, score) in [30, 10, 20].into_iter().enumerate() {
        let s = t
            .device_session(&format!("{i:02}-leaderboard-device"))
            .await;
        let r = t
            .post_bearer(
                "/v2/leaderboard/lua_weekly",
                &token(&s),
                json!({"score": score.to_string(), "subscore": "1", "metadata": "{\"i\":1}"}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["leaderboard_id"], "lua_weekly");
        assert_eq!(r.body["owner_id"], user_id(&s));
        assert_eq!(r.body["score"], score.to_string());
        assert_eq!(r.body["num_score"], 1);
        assert!(r.body["expiry_time"].as_str().unwrap().ends_with('Z'));
        assert!(r.body["username"].as_str().is_some());
        users.push(s);
    }
    // A best that is not better leaves the record alone.
    let r = t
        .post_bearer(
            "/v2/leaderboard/lua_weekly",
            &token(&users[0]),
            json!({"score": "5"}),
        )
        .await;
    assert_eq!(r.body["score"], "30");
    assert_eq!(r.body["rank"], "1");
    // Ranked listing with a cursor.
    let tok = token(&users[1]);
    let r = t
        .get_bearer("/v2/leaderboard/lua_weekly?limit=2", &tok)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let records = r.body["records"].as_array().unwrap();
    let scores: Vec<&str> = records
        .iter()
        .map(|r| r["score"].as_str().unwrap())
        .collect();
    assert_eq!(scores, ["30", "20"]);
    assert_eq!(records[0]["rank"], "1");
    assert_eq!(records[1]["rank"], "2");
    assert_eq!(r.body["rank_count"], "3");
    let cursor = r.body["next_cursor"].as_str().unwrap().to_owned();
    let r = t
        .get_bearer(
            &format!("/v2/leaderboard/lua_weekly?limit=2&cursor={cursor}"),
            &tok,
        )
        .await;
    let records = r.body["records"].as_array().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["score"], "10");
    assert_eq!(records[0]["rank"], "3");
    assert!(r.body["prev_cursor"].as_str().is_some());
    // Owner records only.
    let r = t
        .get_bearer(
            &format!(
                "/v2/leaderboard/lua_weekly?owner_ids={}",
                user_id(&users[2])
            ),
            &tok,
        )
        .await;
    assert!(r.body.get("records").is_none(), "{}", r.body);
    assert_eq!(r.body["owner_records"][0]["rank"], "2");
    // Around an owner.
    let r = t
        .get_bearer(
            &format!(
                "/v2/leaderboard/lua_weekly/owner/{}?limit=1",
                user_id(&users[2])
            ),
            &tok,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["records"][0]["owner_id"], user_id(&users[2]));
    // Deleting my own record.
    let r = t.delete_bearer("/v2/leaderboard/lua_weekly", &tok).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .get_bearer("/v2/leaderboard/lua_weekly?limit=10", &tok)
        .await;
    assert_eq!(r.body["records"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["rank_count"], "2");
}

async fn bad_input_gets_clear_errors(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("leaderboard-bad-input").await;
    let tok = token(&s);
    let r = t
        .post_bearer("/v2/leaderboard/nope", &tok, json!({"score": "1"}))
        .await;
    assert_eq!(assert_error(&r, 404, 5), "leaderboard not found");
    let r = t
        .post_bearer(
            "/v2/leaderboard/lua_authoritative",
            &tok,
            json!({"score": "1"}),
        )
        .await;
    assert_eq!(
        assert_error(&r, 403, 7),
        "leaderboard only allows authoritative score submissions"
    );
    let r = t
        .post_bearer("/v2/leaderboard/lua_weekly", &tok, json!({"score": "-1"}))
        .await;
    assert!(assert_error(&r, 400, 3).contains("out of range"));
    let r = t
        .post_bearer(
            "/v2/leaderboard/lua_weekly",
            &tok,
            json!({"score": "1", "metadata": "[1]"}),
        )
        .await;
    assert!(assert_error(&r, 400, 3).contains("metadata"));
    let r = t
        .get_bearer("/v2/leaderboard/lua_weekly?limit=0", &tok)
        .await;
    assert_error(&r, 400, 3);
    let r = t
        .get_bearer("/v2/leaderboard/lua_weekly?cursor=garbage", &tok)
        .await;
    assert_eq!(assert_error(&r, 400, 3), "cursor is invalid or expired");
    let r = t
        .get_bearer("/v2/leaderboard/lua_weekly/owner/not-a-uuid", &tok)
        .await;
    assert_error(&r, 400, 3);
    // Nothing was written by any of the refused calls.
    let r = t
        .get_bearer("/v2/leaderboard/lua_weekly?limit=10", &tok)
        .await;
    assert!(r.body.get("records").is_none(), "{}", r.body);
    let r = t.get_bearer("/v2/tournament/nope", &tok).await;
    assert_eq!(assert_error(&r, 404, 5), "tournament not found");
}

async fn tournaments_over_rest(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("tournament-rest-device").await;
    let tok = token(&s);
    // The module's RPC made one and deleted it; make one that stays.
    let r = t
        .post_bearer("/v2/rpc/lua_tournament_keep", &tok, json!(""))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    let id = id["id"].as_str().unwrap().to_owned();
    let r = t
        .get_bearer("/v2/tournament?category_start=5&category_end=5", &tok)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = r.body["tournaments"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{}", r.body);
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["title"], "Kept");
    assert_eq!(listed[0]["can_enter"], true);
    assert_eq!(listed[0]["join_required"], true);
    // Joining is required before writing.
    let r = t
        .post_bearer(&format!("/v2/tournament/{id}"), &tok, json!({"score": "3"}))
        .await;
    assert_eq!(
        assert_error(&r, 400, 9),
        "must join tournament before attempting to write value"
    );
    let r = t
        .post_bearer(&format!("/v2/tournament/{id}/join"), &tok, json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .raw(
            t.http
                .put(t.url(&format!("/v2/tournament/{id}")))
                .bearer_auth(&tok)
                .json(&json!({"score": "3"})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["score"], "3");
    assert_eq!(r.body["num_score"], 1);
    let r = t
        .get_bearer(&format!("/v2/tournament/{id}?limit=5"), &tok)
        .await;
    assert_eq!(r.body["records"][0]["owner_id"], user_id(&s));
    let r = t
        .get_bearer(
            &format!("/v2/tournament/{id}/owner/{}?limit=5", user_id(&s)),
            &tok,
        )
        .await;
    assert_eq!(r.body["records"].as_array().unwrap().len(), 1, "{}", r.body);
    let r = t
        .get_bearer("/v2/tournament?category_start=5&category_end=5", &tok)
        .await;
    assert_eq!(r.body["tournaments"][0]["size"], 1);
}

/// Regression: tournament record listings without a `limit` answered one
/// record where Nakama answers 10 (100 around an owner), and took limits
/// up to 1000 where Nakama refuses more than 100 (`api_tournament.go`).
/// The tournament is made from Lua with a fractional start time, which
/// `nk.tournament_create` refused where Nakama truncates it.
async fn tournament_listings_use_nakamas_default_and_largest_limits(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("tournament-limit-device").await;
    let tok = token(&s);
    let out = rpc(&t, &s, "lua_tournament_fill").await;
    assert_eq!(out["start_time"], out["want_start"], "{out}");
    let id = out["id"].as_str().unwrap();
    let r = t.get_bearer(&format!("/v2/tournament/{id}"), &tok).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["records"].as_array().unwrap().len(),
        10,
        "{}",
        r.body
    );
    assert!(r.body["next_cursor"].is_string(), "{}", r.body);
    for limit in [0, 101, 1000] {
        let r = t
            .get_bearer(&format!("/v2/tournament/{id}?limit={limit}"), &tok)
            .await;
        assert!(assert_error(&r, 400, 3).contains("between 1 and 100"));
    }
    let owner = out["owners"][0].as_str().unwrap();
    let r = t
        .get_bearer(&format!("/v2/tournament/{id}/owner/{owner}"), &tok)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["records"].as_array().unwrap().len(),
        12,
        "{}",
        r.body
    );
    let r = t
        .get_bearer(
            &format!("/v2/tournament/{id}/owner/{owner}?limit=101"),
            &tok,
        )
        .await;
    assert!(assert_error(&r, 400, 3).contains("between 1 and 100"));
}

async fn hooks_rewrite_reject_and_observe_writes(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("leaderboard-hooks-device").await;
    let tok = token(&s);
    let r = t
        .post_bearer("/v2/leaderboard/hooked", &tok, json!({"score": "1"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["score"], "77", "the before hook rewrote the score");
    let notes = rpc(&t, &s, "lua_leaderboard_notes").await;
    assert_eq!(notes["after"], "hooked:77");
    let r = t
        .post_bearer("/v2/leaderboard/refused", &tok, json!({"score": "1"}))
        .await;
    assert_error(&r, 404, 5);
}

async fn lua_leaderboard_calls(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("lua-leaderboard-device").await;
    let out = rpc(&t, &s, "lua_leaderboard").await;
    let (a, bb, c) = (
        "11111111-1111-4111-8111-111111111111",
        "22222222-2222-4222-8222-222222222222",
        "33333333-3333-4333-8333-333333333333",
    );
    assert_eq!(out["incr_score"], 35);
    assert_eq!(out["incr_rank"], 1);
    assert_eq!(out["num_score"], 2);
    assert_eq!(out["username"], "user1");
    assert_eq!(out["best_unchanged"], 20, "a best of 1 does not beat 20");
    assert_eq!(out["top"], json!([a, c]));
    assert_eq!(out["top_ranks"], json!([1, 2]));
    assert_eq!(out["metadata_n"], 1);
    assert_eq!(out["owner_rank"], 3);
    assert_eq!(out["has_next"], true);
    assert_eq!(out["no_prev"], true);
    assert_eq!(out["rank_count"], 3);
    assert_eq!(out["page2"], 1);
    assert_eq!(out["page2_owner"], bb);
    assert_eq!(out["page2_rank"], 3);
    assert_eq!(out["around"], bb);
    assert_eq!(out["from_rank_owner"], bb, "rank 3 is B's");
    assert_eq!(out["rank_one_cursor"], "");
    assert_eq!(out["boards"], 1);
    assert_eq!(out["operator"], "increment");
    assert_eq!(out["listed"], 4);
    assert_eq!(out["after_delete"], 2);
    assert_eq!(out["bad_cron_refused"], true);
    assert!(
        out["bad_cron_err"].as_str().unwrap().contains("cron"),
        "{}",
        out["bad_cron_err"]
    );
    assert!(
        out["missing_err"]
            .as_str()
            .unwrap()
            .contains("leaderboard not found")
    );
    assert!(out["negative_err"].as_str().unwrap().contains(">= 0"));
    assert_eq!(out["authoritative_score"], 9);
    assert_eq!(out["deleted"], 0);
}

async fn lua_tournament_calls(b: Backend) {
    let t = server(b).await;
    let s = t.device_session("lua-tournament-device").await;
    let out = rpc(&t, &s, "lua_tournament").await;
    assert_eq!(out["title"], "Cup");
    assert_eq!(out["can_enter"], true);
    assert_eq!(out["join_required"], true);
    assert_eq!(out["category"], 2);
    assert_eq!(out["prize"], "gold");
    assert!(
        out["join_err"]
            .as_str()
            .unwrap()
            .contains("must join tournament"),
        "{}",
        out["join_err"]
    );
    assert_eq!(out["score"], 10);
    assert_eq!(out["num_score"], 1);
    assert_eq!(out["rank"], 1);
    assert!(
        out["attempts_err"]
            .as_str()
            .unwrap()
            .contains("max number of score attempts"),
        "{}",
        out["attempts_err"]
    );
    assert_eq!(out["after_attempt"], 50);
    assert_eq!(out["records"], 1);
    assert_eq!(out["haystack"], 1);
    assert_eq!(out["listed"], true);
    assert_eq!(out["via_leaderboard"], 1);
    assert_eq!(out["deleted"], 0);
}

/// The rank index is rebuilt from the database when the server starts.
async fn ranks_survive_a_restart(b: Backend) {
    let mut t = server(b).await;
    let mut tokens = Vec::new();
    for (i, score) in [7, 9, 8].into_iter().enumerate() {
        let s = t.device_session(&format!("{i:02}-restart-ranks")).await;
        let r = t
            .post_bearer(
                "/v2/leaderboard/lua_weekly",
                &token(&s),
                json!({"score": score.to_string()}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        tokens.push((token(&s), user_id(&s)));
    }
    let before = t
        .get_bearer("/v2/leaderboard/lua_weekly?limit=10", &tokens[0].0)
        .await
        .body;
    t.restart().await;
    let after = t
        .get_bearer("/v2/leaderboard/lua_weekly?limit=10", &tokens[0].0)
        .await;
    assert_eq!(after.status, 200, "{}", after.body);
    assert_eq!(after.body["records"], before["records"]);
    assert_eq!(after.body["records"][0]["owner_id"], tokens[1].1);
    assert_eq!(after.body["rank_count"], "3");
    let r = t
        .get_bearer(
            &format!("/v2/leaderboard/lua_weekly/owner/{}?limit=1", tokens[2].1),
            &tokens[0].0,
        )
        .await;
    assert_eq!(r.body["records"][0]["rank"], "2");
}
