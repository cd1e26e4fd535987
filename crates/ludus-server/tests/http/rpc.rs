//! `/v2/rpc/{id}` against the Lua module in `tests/lua`: every auth form,
//! both methods, wrapped and unwrapped bodies, errors, budgets and the
//! `nk` server calls on both storage backends.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

pub(crate) fn lua_config(config: &mut ludus_server::Config) {
    config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua").into();
    config.runtime.env = vec!["region=eu".into()];
    config.runtime.lua_pool_size = 2;
    config.runtime.lua_instruction_budget = 5_000_000;
    config.runtime.max_rpc_payload_bytes = 1024;
    config.runtime.sql_max_rows = 2;
}

async fn server(backend: Backend) -> TestServer {
    TestServer::start_with(backend, lua_config).await
}

fn payload(reply: &crate::support::Reply) -> Value {
    assert_eq!(reply.status, 200, "{}", reply.body);
    serde_json::from_str(reply.body["payload"].as_str().unwrap()).unwrap()
}

async fn rpc_with_every_auth_form(backend: Backend) {
    let s = server(backend).await;
    let session = s.device_session("rpc-device-0001").await;
    let body = Value::String("hello".into()).to_string();

    // Session token.
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/echo"))
                .bearer_auth(token(&session))
                .body(body.clone()),
        )
        .await;
    assert_eq!(
        (r.status, r.body.clone()),
        (200, json!({"payload": "hello"}))
    );
    // http_key as query parameter.
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/echo?http_key=defaulthttpkey"))
                .body(body.clone()),
        )
        .await;
    assert_eq!(r.body, json!({"payload": "hello"}));
    // http_key as the Basic user name.
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/ECHO"))
                .basic_auth("defaulthttpkey", Some(""))
                .body(body.clone()),
        )
        .await;
    assert_eq!(r.body, json!({"payload": "hello"}));

    // Wrong keys and tokens, and none at all.
    for req in [
        s.http.post(s.url("/v2/rpc/echo?http_key=wrong")),
        s.http
            .post(s.url("/v2/rpc/echo"))
            .basic_auth("wrong", Some("")),
        s.http
            .post(s.url("/v2/rpc/echo"))
            .bearer_auth("not.a.token"),
        s.http.post(s.url("/v2/rpc/echo")),
    ] {
        let r = s.raw(req.body(body.clone())).await;
        assert_error(&r, 401, 16);
        assert_eq!(
            r.body["error"], r.body["message"],
            "rpc errors carry `error`"
        );
    }
}

async fn rpc_bodies_methods_and_context(backend: Backend) {
    let s = server(backend).await;
    let session = s.device_session("rpc-device-0002").await;

    // ?unwrap: the body goes in and comes out as is.
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/echo?unwrap&http_key=defaulthttpkey"))
                .header("content-type", "application/json")
                .body(r#"{"raw":true}"#),
        )
        .await;
    assert_eq!((r.status, r.body.clone()), (200, json!({"raw": true})));

    // A body that is not a JSON string is refused.
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/echo?http_key=defaulthttpkey"))
                .body(r#"{"a":1}"#),
        )
        .await;
    assert_error(&r, 400, 3);

    // GET: query parameters reach ctx.query_params, http_key excepted, and
    // the headers ctx.headers.
    let r = s
        .raw(
            s.http
                .get(s.url("/v2/rpc/ctx?a=1&a=2&b=x"))
                .bearer_auth(token(&session))
                .header("x-custom", "yes")
                .header("x-custom", "again"),
        )
        .await;
    let v = payload(&r);
    assert_eq!(v["query"], json!({"a": ["1", "2"], "b": ["x"]}));
    assert_eq!(v["user_id"], user_id(&session).as_str());
    // A repeated header keeps each value, in order, under Nakama's name.
    assert_eq!(v["header"], json!(["yes", "again"]));
    assert_eq!(v["client_ip"], "127.0.0.1");
    assert_eq!(v["mode"], "rpc");
    assert_eq!(v["env"], json!({"region": "eu"}));
    assert_eq!(v["payload"], "");

    let r = s
        .raw(s.http.get(s.url("/v2/rpc/ctx?http_key=defaulthttpkey")))
        .await;
    let v = payload(&r);
    assert_eq!(v["user_id"], Value::Null, "http_key calls have no user");
    assert_eq!(v["query"], json!({}));
}

async fn rpc_errors(backend: Backend) {
    let s = server(backend).await;
    let key = "?http_key=defaulthttpkey";
    let r = s
        .raw(s.http.post(s.url(&format!("/v2/rpc/missing{key}"))))
        .await;
    assert_error(&r, 404, 5);
    let r = s
        .raw(s.http.post(s.url(&format!("/v2/rpc/denied{key}"))))
        .await;
    assert_eq!(assert_error(&r, 403, 7), "nope");
    assert_eq!(r.body["error"], "nope");
    let r = s
        .raw(s.http.post(s.url(&format!("/v2/rpc/spin{key}"))))
        .await;
    assert!(assert_error(&r, 429, 8).contains("instruction"));
    let big = Value::String("x".repeat(2000)).to_string();
    let r = s
        .raw(s.http.post(s.url(&format!("/v2/rpc/echo{key}"))).body(big))
        .await;
    assert!(assert_error(&r, 400, 3).contains("too large"));
    // The server still answers after all of that.
    let r = s
        .raw(
            s.http
                .post(s.url(&format!("/v2/rpc/echo{key}")))
                .body("\"ok\""),
        )
        .await;
    assert_eq!(r.body, json!({"payload": "ok"}));
}

async fn lua_calls_into_the_server(backend: Backend) {
    let s = server(backend).await;
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/server_calls?http_key=defaulthttpkey")),
        )
        .await;
    let v = payload(&r);
    assert_eq!(v["username"], "luauser");
    assert_eq!(v["created"], true);
    assert_eq!(v["created_again"], false);
    assert_eq!(v["display"], "Lua Display");
    assert_eq!(v["vip"], true);
    assert_eq!(v["custom_id"], "lua-made-0001");
    assert_eq!(
        (
            v["accounts"].clone(),
            v["by_id"].clone(),
            v["by_name"].clone()
        ),
        (json!(3), json!(2), json!(2))
    );
    // The generated token is a real session: it calls the API.
    let t = v["token"].as_str().unwrap();
    let r = s.get_bearer("/v2/account", t).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user"]["id"], v["uid"]);
    assert_eq!(crate::support::claims(t)["vrs"], json!({"via": "lua"}));
}

/// `nk.sql_exec` / `nk.sql_query` on the server's own database: a table the
/// module creates in `run_once`, every value type, placeholders, errors
/// and `runtime.sql_max_rows`.
async fn lua_sql_on_the_database(backend: Backend) {
    let s = server(backend).await;
    let r = s
        .raw(s.http.post(s.url("/v2/rpc/sql?http_key=defaulthttpkey")))
        .await;
    let v = payload(&r);
    assert_eq!(
        (
            v["inserted"].clone(),
            v["updated"].clone(),
            v["rows"].clone()
        ),
        (json!(2), json!(1), json!(2))
    );
    assert_eq!(
        v["first"],
        json!({"id": 1, "name": "ann", "score": 13.5, "active": true, "blob": [0, 1, 255]})
    );
    assert_eq!(
        v["second"],
        json!({"id": 2, "name": "bob", "score": 7, "active": false, "blob_is_nil": true})
    );
    let bad_column = v["bad_column"].as_str().unwrap();
    assert!(
        bad_column.contains("sql query error") && bad_column.contains("nope"),
        "{bad_column}"
    );
    let bad_params = v["bad_params"].as_str().unwrap();
    assert!(
        bad_params.contains("5 placeholder(s) but 1 parameter(s)"),
        "{bad_params}"
    );
    assert_eq!(v["duplicate_refused"], true);
    assert_eq!(v["count"], 2, "failed statements wrote nothing");
    let too_many = v["too_many"].as_str().unwrap();
    assert!(too_many.contains("more than 2 rows"), "{too_many}");
}

/// `nk.http_request` against a one-shot HTTP server on 127.0.0.1.
async fn http_request_from_lua(backend: Backend) {
    let s = server(backend).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = conn.read(&mut buf).await.unwrap();
        let request = String::from_utf8_lossy(&buf[..n]).to_lowercase();
        conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
            .await
            .unwrap();
        request
    });
    let url = Value::String(format!("http://{addr}/path")).to_string();
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/fetch?http_key=defaulthttpkey"))
                .body(url),
        )
        .await;
    assert_eq!(
        payload(&r),
        json!({"code": 200, "body": "hello", "content_type": "text/plain"})
    );
    let request = upstream.await.unwrap();
    assert!(request.starts_with("get /path http/1.1"), "{request}");
    assert!(request.contains("x-from: lua"), "{request}");

    // Nothing listens there: a clear error, not a hang.
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/rpc/fetch?http_key=defaulthttpkey"))
                .body("\"http://127.0.0.1:9/\""),
        )
        .await;
    assert!(assert_error(&r, 500, 13).contains("http request error"));
}

async fn saturated_pool_answers_429(backend: Backend) {
    let s = TestServer::start_with(backend, |c| {
        lua_config(c);
        c.runtime.lua_pool_size = 1;
        c.runtime.lua_pool_queue_size = 0;
        c.runtime.lua_instruction_budget = 200_000_000;
    })
    .await;
    let url = s.url("/v2/rpc/spin?http_key=defaulthttpkey");
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let req = s.http.post(url.clone());
            tokio::spawn(async move {
                let res = req.send().await.unwrap();
                let status = res.status().as_u16();
                let body: Value = res.json().await.unwrap();
                (
                    status,
                    body["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
        })
        .collect();
    let mut busy = 0;
    for c in calls {
        let (status, message) = c.await.unwrap();
        // The call that ran hit its budget (429 too); the others were refused at once.
        assert_eq!(status, 429, "{message}");
        if message.contains("busy") {
            busy += 1;
        }
    }
    assert!(busy >= 2, "{busy} calls were refused as busy");
}

/// Tokens a module makes follow the sign-in rule: a logout-all revokes the
/// ones made before it, and one made right after it (same second) works.
async fn module_tokens_follow_revocation(backend: Backend) {
    let s = server(backend).await;
    let session = s.device_session("rpc-device-tokens").await;
    let uid = user_id(&session);
    let make = || async {
        let body = Value::String(json!({"user_id": uid, "username": "tok"}).to_string());
        let r = s
            .raw(
                s.http
                    .post(s.url("/v2/rpc/token_for?http_key=defaulthttpkey"))
                    .body(body.to_string()),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["payload"].as_str().unwrap().to_owned()
    };
    let before = make().await;
    assert_eq!(s.get_bearer("/v2/account", &before).await.status, 200);
    let r = s
        .raw(
            s.http
                .post(s.url("/v2/session/logout"))
                .bearer_auth(token(&session)),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&s.get_bearer("/v2/account", &before).await, 401, 16);
    let after = make().await;
    assert_eq!(
        s.get_bearer("/v2/account", &after).await.status,
        200,
        "a token made after the logout is not born revoked"
    );
}

both_backends!(
    module_tokens_follow_revocation,
    rpc_with_every_auth_form,
    rpc_bodies_methods_and_context,
    rpc_errors,
    lua_calls_into_the_server,
    lua_sql_on_the_database,
    http_request_from_lua,
    saturated_pool_answers_429,
);
