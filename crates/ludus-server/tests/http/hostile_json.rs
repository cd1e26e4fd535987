//! The stored-JSON rule end to end: random hostile JSON (deep nesting, lone
//! surrogates, NUL, huge and tiny numbers, long strings and numbers, odd
//! keys) written through every door (REST, a Lua module, a native module,
//! a socket chat message) and read back through every reader (REST read and
//! listing, Lua read and listing, a native read, a socket RPC, chat history)
//! on both backends. Each value is either refused at the write with
//! `InvalidArgument` (400) or read back equal by every reader. Then one
//! known-bad value of each kind at each other door that stores JSON.

use futures_util::{SinkExt, StreamExt};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::both_backends;
use crate::support::{Backend, TestServer, token, user_id};
use ludus_core::storage::{ObjectId, ReadPermission, StorageWrite, VersionCheck, WritePermission};

both_backends!(
    hostile_values_are_refused_or_read_back_equal,
    every_json_door_refuses_the_same_values
);

/// Cases per backend: enough to meet every kind of hostile value several
/// times, few enough to run in seconds.
const CASES: u32 = 48;

fn native_module() -> ludus_server::NativeModule {
    ludus_server::NativeModule::new()
        .rpc("hostile_native_write", |call, payload| async move {
            let owner = caller(&call);
            // Built by hand, not through `StorageWrite::new`: the service
            // must hold the rule on whatever a native module hands it.
            let write = StorageWrite {
                id: ObjectId {
                    collection: "hostile".into(),
                    key: "native".into(),
                    user_id: owner,
                },
                value: payload,
                check: VersionCheck::Any,
                read: ReadPermission::PublicRead,
                write: WritePermission::OwnerWrite,
            };
            Ok(match call.services.storage_write(vec![write]).await {
                Ok(_) => json!({"written": true}).to_string(),
                Err(e) => json!({"code": e.code.as_i32(), "error": e.message}).to_string(),
            })
        })
        .rpc("hostile_account_metadata", |call, text| async move {
            let update = ludus_core::model::AccountUpdate {
                metadata: Some(text),
                ..Default::default()
            };
            call.services.update_account(caller(&call), update).await?;
            Ok(String::new())
        })
        .rpc("hostile_notification", |call, text| async move {
            let n = ludus_core::notification::Notification {
                id: uuid::Uuid::new_v4(),
                user_id: caller(&call),
                subject: "hostile".into(),
                content: text,
                code: 1,
                sender_id: uuid::Uuid::nil(),
                create_time_us: 0,
                persistent: true,
            };
            call.services.notifications_send(vec![n]).await?;
            Ok(String::new())
        })
        .rpc("hostile_wallet_metadata", |call, text| async move {
            let mut update =
                ludus_core::multi_update::MultiUpdate::new(ludus_core::storage::Access::Server);
            update.wallets.push(ludus_core::wallet::WalletUpdate {
                user_id: caller(&call),
                changeset: [("coins".to_owned(), 1)].into(),
                metadata: text,
            });
            call.services.multi_update(update).await?;
            Ok(String::new())
        })
        .rpc("hostile_native_read", |call, key| async move {
            let owner = caller(&call);
            let id = ObjectId::new("hostile", &key, owner)?;
            let objects = call.services.storage_read(vec![id]).await?;
            Ok(objects
                .into_iter()
                .next()
                .map(|o| o.value)
                .unwrap_or_default())
        })
}

fn caller(call: &ludus_server::NativeCall) -> uuid::Uuid {
    call.ctx
        .user_id
        .as_deref()
        .unwrap_or_default()
        .parse()
        .unwrap()
}

fn config(c: &mut ludus_server::Config) {
    crate::rpc::lua_config(c);
    c.runtime.max_rpc_payload_bytes = 1 << 20;
    c.socket.max_message_size_bytes = 1 << 20;
}

// ---- Hostile JSON text ----

fn hostile_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z0-9 ]{0,6}",
        1 => Just(r"\ud800".to_owned()),
        1 => Just(r"\udfff".to_owned()),
        1 => Just(r"\u0000".to_owned()),
        1 => Just(r"\ud83d\ude00".to_owned()),
        1 => Just(r#"\"\\\/\n\t"#.to_owned()),
        1 => Just("é😀\u{7f}".to_owned()),
        1 => Just("x".repeat(300)),
    ];
    prop::collection::vec(piece, 0..4).prop_map(|p| format!("\"{}\"", p.concat()))
}

fn hostile_number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        Just("1e999999".to_owned()),
        Just("-1e309".to_owned()),
        Just("1e-400".to_owned()),
        Just("5e-324".to_owned()),
        Just("0e-99999".to_owned()),
        Just("0e-400".to_owned()),
        Just("-0".to_owned()),
        (1usize..150).prop_map(|n| "9".repeat(n)),
        (1usize..120).prop_map(|n| format!("0.{}1", "0".repeat(n))),
    ]
}

fn hostile_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        hostile_string(),
        hostile_number(),
        Just("true".to_owned()),
        Just("null".to_owned()),
    ]
}

fn hostile_tree() -> impl Strategy<Value = String> {
    hostile_leaf().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((hostile_string(), inner), 0..4).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("{k}:{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// A value nested `levels` deep around a leaf, in arrays or objects.
fn deep() -> impl Strategy<Value = String> {
    (60usize..68, any::<bool>(), hostile_leaf()).prop_map(|(levels, arrays, leaf)| {
        let (open, close) = if arrays { ("[", "]") } else { ("{\"d\":", "}") };
        format!(
            "{}{leaf}{}",
            open.repeat(levels - 1),
            close.repeat(levels - 1)
        )
    })
}

/// Mostly objects (what storage takes); sometimes another root, refused.
fn hostile_document() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => hostile_tree().prop_map(|v| format!("{{\"v\":{v}}}")),
        2 => deep().prop_map(|v| format!("{{\"v\":{v}}}")),
        1 => deep(),
        1 => hostile_tree(),
    ]
}

// ---- Equality as readers see it ----

/// Equal as JSON, numbers compared as 64-bit floats (readers parse them so).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// What a value becomes in a Lua table (as in Nakama): `nil` members and
/// trailing `nil`s vanish, and an empty array is an empty table, `{}`.
fn as_lua_sees_it(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), as_lua_sees_it(v)))
                .collect(),
        ),
        Value::Array(items) => {
            let mut items: Vec<Value> = items.iter().map(as_lua_sees_it).collect();
            while items.last().is_some_and(Value::is_null) {
                items.pop();
            }
            if items.is_empty() {
                json!({})
            } else {
                Value::Array(items)
            }
        }
        other => other.clone(),
    }
}

// ---- The doors and the readers ----

struct Socket {
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    cid: u64,
}

impl Socket {
    async fn open(t: &TestServer, session: &Value) -> Socket {
        let url = format!(
            "{}/ws?token={}&format=json",
            t.base.replacen("http", "ws", 1),
            token(session)
        );
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        Socket { ws, cid: 0 }
    }

    /// Sends one request and answers its reply (skipping pushes).
    async fn request(&mut self, mut envelope: Value) -> Value {
        self.cid += 1;
        let cid = self.cid.to_string();
        envelope["cid"] = json!(cid);
        self.ws
            .send(Message::text(envelope.to_string()))
            .await
            .unwrap();
        loop {
            let frame = self.ws.next().await.unwrap().unwrap();
            let Message::Text(text) = frame else { continue };
            let reply: Value = serde_json::from_str(text.as_str()).unwrap();
            if reply["cid"] == json!(cid) {
                return reply;
            }
        }
    }
}

fn rpc_payload(reply: &crate::support::Reply) -> String {
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["payload"].as_str().unwrap().to_owned()
}

async fn rpc(t: &TestServer, session: &Value, id: &str, payload: &str) -> String {
    let r = t.raw(rpc_request(t, session, id, payload)).await;
    rpc_payload(&r)
}

fn rpc_request(
    t: &TestServer,
    session: &Value,
    id: &str,
    payload: &str,
) -> reqwest::RequestBuilder {
    t.http
        .post(t.url(&format!("/v2/rpc/{id}")))
        .bearer_auth(token(session))
        .body(Value::String(payload.to_owned()).to_string())
}

/// Every reader's view of object `key` of the caller's, parsed.
async fn readers(
    t: &TestServer,
    s: &Value,
    socket: &mut Socket,
    key: &str,
) -> Vec<(String, Value)> {
    let uid = user_id(s);
    let mut seen = Vec::new();
    let parse = |text: &str, who: &str| -> Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{who} read unparsable {text:?}: {e}"))
    };
    let r = t
        .post_bearer(
            "/v2/storage",
            &token(s),
            json!({"object_ids": [{"collection": "hostile", "key": key, "user_id": uid}]}),
        )
        .await;
    assert_eq!(r.status, 200, "REST read of {key}: {}", r.body);
    seen.push((
        "rest read".into(),
        parse(r.body["objects"][0]["value"].as_str().unwrap(), "rest read"),
    ));
    let r = t
        .get_bearer(
            &format!("/v2/storage/hostile?user_id={uid}&limit=100"),
            &token(s),
        )
        .await;
    assert_eq!(r.status, 200, "REST list: {}", r.body);
    let listed = r.body["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["key"] == key)
        .unwrap_or_else(|| panic!("{key} not listed: {}", r.body));
    seen.push((
        "rest list".into(),
        parse(listed["value"].as_str().unwrap(), "rest list"),
    ));
    let native = rpc(t, s, "hostile_native_read", key).await;
    seen.push(("native read".into(), parse(&native, "native read")));
    let reply = socket
        .request(json!({"rpc": {"id": "hostile_native_read", "payload": key}}))
        .await;
    let payload = reply["rpc"]["payload"]
        .as_str()
        .unwrap_or_else(|| panic!("socket rpc failed: {reply}"));
    seen.push(("socket rpc".into(), parse(payload, "socket rpc")));
    for how in ["read", "list"] {
        let lua = rpc(t, s, "hostile_lua_read", &format!("{how}:{key}")).await;
        seen.push((format!("lua {how}"), parse(&lua, "lua")));
    }
    seen
}

/// `via_lua`: the value was written from a Lua table, so every reader
/// sees it as Lua holds it.
fn assert_all_equal(case: &str, written: &Value, seen: &[(String, Value)], via_lua: bool) {
    for (who, value) in seen {
        let (want, got) = if via_lua || who.starts_with("lua") {
            (as_lua_sees_it(written), as_lua_sees_it(value))
        } else {
            (written.clone(), value.clone())
        };
        assert!(
            same(&want, &got),
            "{who} read back {got} for {case} (written as {want})"
        );
    }
}

async fn hostile_values_are_refused_or_read_back_equal(b: Backend) {
    let t = TestServer::start_native(b, native_module(), config).await;
    let s = t.device_session("hostile-json-device").await;
    let mut socket = Socket::open(&t, &s).await;
    let joined = socket
        .request(json!({"channel_join": {"target": "hostile", "type": 1, "persistence": true}}))
        .await;
    let channel = joined["channel"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("channel join answered {joined}"))
        .to_owned();

    let mut runner = TestRunner::new(ProptestConfig {
        cases: CASES,
        ..ProptestConfig::default()
    });
    let (mut refused, mut stored) = (0, 0);
    for _ in 0..CASES {
        let text = hostile_document().new_tree(&mut runner).unwrap().current();
        let case = format!("{text:?}");
        let verdict = ludus_core::stored_json::check_object(&text, "value");

        // REST.
        let r = t
            .put_bearer(
                "/v2/storage",
                &token(&s),
                json!({"objects": [{"collection": "hostile", "key": "rest", "value": text, "permission_read": 2}]}),
            )
            .await;
        match &verdict {
            Ok(()) => assert_eq!(r.status, 200, "REST refused {case}: {}", r.body),
            Err(e) => {
                assert_eq!(r.status, 400, "REST answered {} for {case}", r.status);
                assert_eq!(r.body["message"], json!(e.message), "{case}");
            }
        }

        // A native module.
        let answer: Value =
            serde_json::from_str(&rpc(&t, &s, "hostile_native_write", &text).await).unwrap();
        match &verdict {
            Ok(()) => assert_eq!(answer["written"], true, "native refused {case}: {answer}"),
            Err(_) => assert_eq!(answer["code"], 3, "native answered {answer} for {case}"),
        }

        // The socket: a chat message's content.
        let sent = socket
            .request(json!({"channel_message_send": {"channel_id": channel, "content": text}}))
            .await;
        match &verdict {
            Ok(()) => assert!(sent["channel_message_ack"].is_object(), "{case}: {sent}"),
            Err(_) => assert_eq!(sent["error"]["code"], 3, "{case}: {sent}"),
        }

        // A Lua module: what it decodes, it writes, or is refused cleanly.
        let lua: Value =
            serde_json::from_str(&rpc(&t, &s, "hostile_lua_write", &text).await).unwrap();
        let lua_written = lua["written"] == true;
        if !lua_written {
            assert!(lua["refused"].is_string(), "{case}: {lua}");
        }

        let Ok(()) = verdict else {
            refused += 1;
            continue;
        };
        stored += 1;
        let written: Value = serde_json::from_str(&text).unwrap();
        let seen = readers(&t, &s, &mut socket, "rest").await;
        assert_all_equal(&format!("REST write of {case}"), &written, &seen, false);
        let seen = readers(&t, &s, &mut socket, "native").await;
        assert_all_equal(&format!("native write of {case}"), &written, &seen, false);
        if lua_written {
            // Lua wrote the value as its table holds it.
            let seen = readers(&t, &s, &mut socket, "lua").await;
            assert_all_equal(&format!("Lua write of {case}"), &written, &seen, true);
        } else {
            // A value every other door accepts decodes in Lua too.
            panic!("Lua refused a storable value {case}: {lua}");
        }
        let r = t
            .get_bearer(
                &format!("/v2/channel/{channel}?limit=1&forward=false"),
                &token(&s),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let content: Value =
            serde_json::from_str(r.body["messages"][0]["content"].as_str().unwrap()).unwrap();
        assert!(
            same(&written, &content),
            "chat history read back {content} for {case}"
        );
    }
    // The generator makes both kinds; a run that made only one tested little.
    assert!(
        refused > 0 && stored > 0,
        "refused {refused}, stored {stored}"
    );
}

/// One bad value of each kind at each door that stores JSON besides
/// storage objects: every one answers 400 naming the problem, on both
/// backends, and nothing is stored.
async fn every_json_door_refuses_the_same_values(b: Backend) {
    let t = TestServer::start_native(b, native_module(), config).await;
    let s = t.device_session("hostile-doors-device").await;
    let bad = [
        (
            format!("{{\"a\":{}1{}}}", "[".repeat(64), "]".repeat(64)),
            "nested deeper than 64 levels",
        ),
        (r#"{"a":"\ud800"}"#.to_owned(), "lone surrogate"),
        (r#"{"a":"\u0000"}"#.to_owned(), "NUL character"),
        (r#"{"a\u0000":1}"#.to_owned(), "NUL character"),
        (r#"{"a":1e999999}"#.to_owned(), "outside the range"),
    ];
    for (text, problem) in &bad {
        let doors = [
            (
                "account metadata (native module)",
                t.raw(rpc_request(&t, &s, "hostile_account_metadata", text))
                    .await,
            ),
            (
                "notification content (native module)",
                t.raw(rpc_request(&t, &s, "hostile_notification", text))
                    .await,
            ),
            (
                "wallet metadata (native module)",
                t.raw(rpc_request(&t, &s, "hostile_wallet_metadata", text))
                    .await,
            ),
            (
                "leaderboard record metadata",
                t.post_bearer(
                    "/v2/leaderboard/lua_weekly",
                    &token(&s),
                    json!({"score": "1", "metadata": text}),
                )
                .await,
            ),
            (
                "storage object",
                t.put_bearer(
                    "/v2/storage",
                    &token(&s),
                    json!({"objects": [{"collection": "c", "key": "k", "value": text}]}),
                )
                .await,
            ),
        ];
        for (door, r) in doors {
            assert_eq!(
                r.status, 400,
                "{door} answered {} for {text:?}: {}",
                r.status, r.body
            );
            let message = r.body["message"].as_str().unwrap();
            assert!(message.contains(problem), "{door}: {message}");
        }
    }
    // Names: a NUL in a collection or key is refused on writes, reads and
    // listings alike.
    let writes = t
        .put_bearer(
            "/v2/storage",
            &token(&s),
            json!({"objects": [{"collection": "c\u{0}", "key": "k", "value": "{}"}]}),
        )
        .await;
    let reads = t
        .post_bearer(
            "/v2/storage",
            &token(&s),
            json!({"object_ids": [{"collection": "c", "key": "k\u{0}"}]}),
        )
        .await;
    let lists = t.get_bearer("/v2/storage/c%00", &token(&s)).await;
    for (what, r) in [("write", writes), ("read", reads), ("list", lists)] {
        assert_eq!(r.status, 400, "{what}: {}", r.body);
        assert!(
            r.body["message"]
                .as_str()
                .unwrap()
                .contains("NUL character"),
            "{what}: {}",
            r.body
        );
    }
    // Nothing was stored by the refused writes.
    let r = t.get_bearer("/v2/storage/c", &token(&s)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["objects"].as_array().is_none_or(Vec::is_empty),
        "{}",
        r.body
    );
}
