//! The cluster, end to end: three real `ludus` processes on one PostgreSQL
//! database with a real `redis-server` as the bus, driven over real HTTP and
//! WebSockets. Chat rooms, direct messages, status, notifications and
//! `session.single_socket` across nodes; `kill -9` of a node (its presences
//! leave within the lease, the others carry on); a Redis restart (service
//! back within 5 s); two Redis shards; and a console wipe of every account
//! closing sockets on every node.

mod common;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::request;
use futures_util::{SinkExt as _, StreamExt as _};
use ludus_testkit::RedisServer;
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::Message;

/// The lease the nodes run with: a dead node's presences leave within it
/// (plus a heartbeat).
const LEASE_MS: u64 = 3_000;

/// One node: a `ludus serve` process.
struct Node {
    child: Child,
    addr: SocketAddr,
    /// Its Prometheus exporter (`metrics.prometheus_port`).
    metrics: u16,
    /// Its admin console (`console.port`).
    console: SocketAddr,
}

async fn start_node(name: &str, data: &Path, database: &str, redis: &[String]) -> Node {
    let port = ludus_testkit::free_port();
    let metrics = ludus_testkit::free_port();
    let console = ludus_testkit::free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ludus"));
    cmd.arg("serve")
        .args(["--name", name])
        .arg("--data_dir")
        .arg(data.join(name))
        .args(["--socket.port", &port.to_string()])
        .args(["--console.port", &console.to_string()])
        .args(["--metrics.prometheus_port", &metrics.to_string()])
        .args(["--database.address", database])
        .args(["--session.single_socket", "true"])
        .args(["--cluster.lease_ms", &LEASE_MS.to_string()])
        .args(["--cluster.heartbeat_ms", "500"])
        .args(["--matchmaker.interval_sec", "1"])
        .args(["--logger.level", "warn"])
        .arg("--runtime.path")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../ludus-server/tests/lua_match"
        ))
        .kill_on_drop(true);
    for url in redis {
        cmd.args(["--cluster.redis", url]);
    }
    let child = cmd.spawn().expect("ludus binary starts");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some((200, _)) = request(addr, "GET", "/healthcheck", "", &Value::Null).await {
            return Node {
                child,
                addr,
                metrics,
                console: format!("127.0.0.1:{console}").parse().unwrap(),
            };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("node {name} did not answer on {addr} within 30 s");
}

fn migrate(database: &str) {
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_ludus"))
        .args(["migrate", "up", "--database.address", database])
        .status()
        .unwrap();
    assert!(status.success(), "migrate up");
}

/// Signs a new device in on `addr`: (token, user id).
async fn sign_in(addr: SocketAddr, device: &str) -> (String, String) {
    let (status, body) = request(
        addr,
        "POST",
        &format!("/v2/account/authenticate/device?create=true&username={device}"),
        "Basic ZGVmYXVsdGtleTo=",
        &json!({"id": format!("cluster-test-device-{device}")}),
    )
    .await
    .expect("sign-in answered");
    assert_eq!(status, 200, "{body}");
    let token = body["token"].as_str().unwrap().to_owned();
    let (status, account) = request(
        addr,
        "GET",
        "/v2/account",
        &format!("Bearer {token}"),
        &Value::Null,
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{account}");
    (token, account["user"]["id"].as_str().unwrap().to_owned())
}

type WsStream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A JSON socket that keeps the pushes it has not been asked about yet.
struct Ws {
    ws: WsStream,
    pending: VecDeque<Value>,
    cid: u64,
    closed: bool,
}

impl Ws {
    async fn connect(addr: SocketAddr, token: &str) -> Ws {
        // `status=true`: online to followers and in friend lists, as games connect.
        Ws::open(format!(
            "ws://{addr}/ws?token={token}&format=json&status=true"
        ))
        .await
    }

    /// A socket that does not appear online (`status` not set).
    async fn connect_quiet(addr: SocketAddr, token: &str) -> Ws {
        Ws::open(format!("ws://{addr}/ws?token={token}&format=json")).await
    }

    async fn open(url: String) -> Ws {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.expect("ws");
        Ws {
            ws,
            pending: VecDeque::new(),
            cid: 0,
            closed: false,
        }
    }

    /// Forgets every push received so far.
    async fn drain(&mut self) {
        self.pending.clear();
        while self.read(Duration::from_millis(200)).await.is_some() {}
    }

    /// The next frame within `within`; `None` on timeout or close.
    async fn read(&mut self, within: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .ok()?;
            match frame {
                Some(Ok(Message::Text(t))) => return Some(serde_json::from_str(&t).unwrap()),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    self.closed = true;
                    return None;
                }
                Some(Ok(_)) => {}
            }
        }
    }

    /// Sends `body` with no cid (what expects no reply, as match data).
    async fn send(&mut self, body: Value) {
        self.ws
            .send(Message::Text(body.to_string().into()))
            .await
            .unwrap();
    }

    /// Sends `body` with a fresh cid and answers its reply.
    async fn call(&mut self, mut body: Value) -> Value {
        self.cid += 1;
        let cid = self.cid.to_string();
        body["cid"] = json!(cid);
        self.ws
            .send(Message::Text(body.to_string().into()))
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let Some(v) = self.read(Duration::from_secs(10)).await else {
                break;
            };
            if v["cid"] == json!(cid) {
                return v;
            }
            self.pending.push_back(v);
        }
        panic!("no reply to {body}");
    }

    /// The first push (kept or new) that `want` accepts, within `within`.
    async fn wait(&mut self, within: Duration, want: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(i) = self.pending.iter().position(&want) {
            return self.pending.remove(i);
        }
        let deadline = Instant::now() + within;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let v = self.read(left).await?;
            if want(&v) {
                return Some(v);
            }
            self.pending.push_back(v);
        }
        None
    }

    async fn expect(
        &mut self,
        what: &str,
        within: Duration,
        want: impl Fn(&Value) -> bool,
    ) -> Value {
        match self.wait(within, want).await {
            Some(v) => v,
            None => panic!("no {what} within {within:?}; got {:?}", self.pending),
        }
    }
}

fn has_user(list: &Value, user: &str) -> bool {
    list.as_array()
        .is_some_and(|ps| ps.iter().any(|p| p["user_id"] == json!(user)))
}

fn message_with(content: &'static str) -> impl Fn(&Value) -> bool {
    move |v: &Value| {
        v["channel_message"]["content"]
            .as_str()
            .is_some_and(|c| c.contains(content))
    }
}

async fn join_room(ws: &mut Ws, room: &str) -> Value {
    let reply = ws
        .call(json!({"channel_join": {"target": room, "type": 1}}))
        .await;
    assert!(reply["channel"]["id"].is_string(), "{reply}");
    reply["channel"].clone()
}

async fn say(ws: &mut Ws, channel: &str, text: &str) {
    let reply = ws
        .call(json!({"channel_message_send": {"channel_id": channel, "content": json!({"text": text}).to_string()}}))
        .await;
    assert!(reply["channel_message_ack"].is_object(), "{reply}");
}

const SHORT: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_share_presence_messages_and_survive_faults() {
    let mut redis = RedisServer::start();
    let urls = vec![redis.url()];
    let database = ludus_testkit::postgres_database();
    migrate(&database);
    let dir = tempfile::tempdir().unwrap();
    let a = start_node("node-a", dir.path(), &database, &urls).await;
    let b = start_node("node-b", dir.path(), &database, &urls).await;
    let mut c = start_node("node-c", dir.path(), &database, &urls).await;

    // A second node of the same name is refused while the first one runs.
    let dup = std::process::Command::new(env!("CARGO_BIN_EXE_ludus"))
        .args(["serve", "--name", "node-a", "--logger.level", "error"])
        .arg("--data_dir")
        .arg(dir.path().join("dup"))
        .args(["--socket.port", &ludus_testkit::free_port().to_string()])
        .args(["--console.port", "0"])
        .args(["--database.address", &database])
        .args(["--cluster.redis", &urls[0]])
        .args([
            "--cluster.lease_ms",
            "1500",
            "--cluster.heartbeat_ms",
            "500",
        ])
        .output()
        .unwrap();
    assert!(!dup.status.success());
    let said =
        String::from_utf8_lossy(&dup.stderr).to_string() + &String::from_utf8_lossy(&dup.stdout);
    assert!(said.contains("already running"), "{said}");

    let (ta, ua) = sign_in(a.addr, "ann").await;
    let (tb, ub) = sign_in(b.addr, "bob").await;
    let (tc, uc) = sign_in(c.addr, "cat").await;
    let mut wa = Ws::connect(a.addr, &ta).await;
    let mut wb = Ws::connect(b.addr, &tb).await;
    let mut wc = Ws::connect(c.addr, &tc).await;

    // A socket's notification stream stays on its node: node a's hash holds
    // its head and ann's status presence, nothing for her notifications.
    let deadline = Instant::now() + SHORT;
    while hlen(&urls[0], "ludus:p:node-a") < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hlen(&urls[0], "ludus:p:node-a"), 2);

    // --- a chat room across nodes -------------------------------------------
    let room = join_room(&mut wa, "lobby").await;
    let channel = room["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let joined = join_room(&mut wb, "lobby").await;
    assert!(
        has_user(&joined["presences"], &ua),
        "bob's join lists ann: {joined}"
    );
    wa.expect("bob's join event on node a", SHORT, |v| {
        has_user(&v["channel_presence_event"]["joins"], &ub)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let joined = join_room(&mut wc, "lobby").await;
    assert!(
        has_user(&joined["presences"], &ua) && has_user(&joined["presences"], &ub),
        "{joined}"
    );
    wa.expect("cat's join on a", SHORT, |v| {
        has_user(&v["channel_presence_event"]["joins"], &uc)
    })
    .await;
    wb.expect("cat's join on b", SHORT, |v| {
        has_user(&v["channel_presence_event"]["joins"], &uc)
    })
    .await;

    // A message reaches every node exactly once.
    say(&mut wa, &channel, "hello-from-a").await;
    for (who, ws) in [("a", &mut wa), ("b", &mut wb), ("c", &mut wc)] {
        let got = ws
            .expect(
                &format!("the message on {who}"),
                SHORT,
                message_with("hello-from-a"),
            )
            .await;
        assert_eq!(got["channel_message"]["sender_id"], json!(ua));
        assert!(
            ws.wait(Duration::from_millis(400), message_with("hello-from-a"))
                .await
                .is_none(),
            "node {who} delivered the message twice"
        );
    }

    // --- a direct conversation, started on b with a user on c ---------------
    let dm = wb
        .call(json!({"channel_join": {"target": uc, "type": 2}}))
        .await;
    let dm_id = dm["channel"]["id"].as_str().expect("dm channel").to_owned();
    // Node c lists bob from its replica of node b's presences, which the
    // bus brings after his join: give it the time the room above gives.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let dm_c = wc
        .call(json!({"channel_join": {"target": ub, "type": 2}}))
        .await;
    assert_eq!(dm_c["channel"]["id"], json!(dm_id));
    assert!(has_user(&dm_c["channel"]["presences"], &ub), "{dm_c}");
    // As in the room above: node b learns of cat's join through the bus, and
    // a message sent before it has sends to the nodes it knows of.
    wb.expect("cat's join of the conversation on b", SHORT, |v| {
        v["channel_presence_event"]["channel_id"] == json!(dm_id)
            && has_user(&v["channel_presence_event"]["joins"], &uc)
    })
    .await;
    say(&mut wb, &dm_id, "psst-from-b").await;
    wc.expect(
        "the direct message on c",
        SHORT,
        message_with("psst-from-b"),
    )
    .await;
    assert!(
        wa.wait(Duration::from_millis(300), message_with("psst-from-b"))
            .await
            .is_none()
    );

    // --- status across nodes --------------------------------------------------
    let follow = wb.call(json!({"status_follow": {"user_ids": [ua]}})).await;
    assert!(follow["status"].is_object(), "{follow}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    wa.call(json!({"status_update": {"status": "raiding"}}))
        .await;
    let ev = wb
        .expect("ann's status on b", SHORT, |v| {
            v["status_presence_event"]["joins"]
                .as_array()
                .is_some_and(|j| j.iter().any(|p| p["status"] == json!("raiding")))
        })
        .await;
    assert!(has_user(&ev["status_presence_event"]["joins"], &ua));
    // Online is cluster-wide: bob sees cat (on node c) online.
    let (status, friends) = request(
        b.addr,
        "POST",
        &format!("/v2/friend?ids={uc}"),
        &format!("Bearer {tb}"),
        &Value::Null,
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{friends}");

    // --- notifications reach the user wherever connected ---------------------
    wc.expect("bob's friend request on c", SHORT, |v| {
        v["notifications"]["notifications"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["sender_id"] == json!(ub)))
    })
    .await;
    let (_, list) = request(
        b.addr,
        "GET",
        "/v2/friend",
        &format!("Bearer {tb}"),
        &Value::Null,
    )
    .await
    .unwrap();
    let cat = list["friends"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["user"]["id"] == json!(uc)))
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(
        cat["user"]["online"],
        json!(true),
        "online on another node: {cat}"
    );

    // --- a notification for everyone reaches every node's sockets -----------
    assert_eq!(
        rpc(a.addr, &ta, "notify_everyone", json!("to all")).await,
        "sent"
    );
    for (ws, node) in [(&mut wa, "a"), (&mut wb, "b"), (&mut wc, "c")] {
        ws.expect(
            &format!("the notification for everyone on {node}"),
            SHORT,
            |v| {
                v["notifications"]["notifications"]
                    .as_array()
                    .is_some_and(|n| n.iter().any(|n| n["subject"] == json!("to all")))
            },
        )
        .await;
    }

    // --- single_socket: ann's new socket on b closes her socket on a ---------
    let (ta2, _) = sign_in(b.addr, "ann").await;
    let mut wa2 = Ws::connect(b.addr, &ta2).await;
    wa.expect("the single_socket notice on a", SHORT, |v| {
        v["notifications"]["notifications"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["code"] == json!(-7)))
    })
    .await;
    let deadline = Instant::now() + SHORT;
    while !wa.closed && Instant::now() < deadline {
        wa.read(Duration::from_millis(200)).await;
    }
    assert!(wa.closed, "ann's older socket on node a was closed");
    // Her leave reaches the room on the other nodes.
    wc.expect("ann's leave on c", SHORT, |v| {
        has_user(&v["channel_presence_event"]["leaves"], &ua)
    })
    .await;
    let rejoined = join_room(&mut wa2, "lobby").await;
    assert!(has_user(&rejoined["presences"], &uc));

    // --- kill -9 of node c: cat leaves everywhere within the lease ----------
    c.child.start_kill().unwrap();
    c.child.wait().await.unwrap();
    let killed = Instant::now();
    wb.expect(
        "cat's leave on b after node c died",
        Duration::from_millis(LEASE_MS + 7_000),
        |v| has_user(&v["channel_presence_event"]["leaves"], &uc),
    )
    .await;
    assert!(
        killed.elapsed() < Duration::from_secs(10),
        "{:?}",
        killed.elapsed()
    );
    wa2.expect("cat's leave on b (ann)", SHORT, |v| {
        has_user(&v["channel_presence_event"]["leaves"], &uc)
    })
    .await;
    // The others carry on.
    say(&mut wa2, &channel, "still-here").await;
    wb.expect(
        "a message after the kill",
        SHORT,
        message_with("still-here"),
    )
    .await;
    // Cat reconnects to another node and carries on.
    let mut wc2 = Ws::connect(a.addr, &tc).await;
    let back = join_room(&mut wc2, "lobby").await;
    assert!(has_user(&back["presences"], &ub), "{back}");

    // --- Redis restarts: the service is back within 5 s ----------------------
    redis.restart();
    let restarted = Instant::now();
    let mut recovered = false;
    let mut n = 0;
    while restarted.elapsed() < Duration::from_secs(5) {
        n += 1;
        let text = format!("after-restart-{n}");
        say(&mut wc2, &channel, &text).await;
        let got = wb
            .wait(Duration::from_millis(250), |v| {
                v["channel_message"]["content"]
                    .as_str()
                    .is_some_and(|c| c.contains("after-restart-"))
            })
            .await;
        if got.is_some() {
            recovered = true;
            break;
        }
    }
    assert!(
        recovered,
        "no message crossed nodes within 5 s of the Redis restart"
    );
    // Presences were announced again: a newcomer on b sees cat (on a).
    let (td, ud) = sign_in(b.addr, "dan").await;
    let mut wd = Ws::connect(b.addr, &td).await;
    let deadline = Instant::now() + SHORT;
    loop {
        let j = join_room(&mut wd, "lobby").await;
        if has_user(&j["presences"], &uc) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "presences not re-announced after the restart: {j}"
        );
        wd.call(json!({"channel_leave": {"channel_id": channel}}))
            .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // --- changes made while Redis is down reach the other nodes as events ---
    tokio::time::sleep(Duration::from_millis(300)).await;
    wc2.drain().await;
    redis.kill();
    tokio::time::sleep(Duration::from_millis(300)).await;
    wd.call(json!({"channel_leave": {"channel_id": channel}}))
        .await;
    let (te, ue) = sign_in(b.addr, "eve").await;
    let mut we = Ws::connect(b.addr, &te).await;
    join_room(&mut we, "lobby").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.start_again();
    let back = Instant::now();
    wc2.expect("dan's leave on a, made while Redis was down", SHORT, |v| {
        has_user(&v["channel_presence_event"]["leaves"], &ud)
    })
    .await;
    wc2.expect("eve's join on a, made while Redis was down", SHORT, |v| {
        has_user(&v["channel_presence_event"]["joins"], &ue)
    })
    .await;
    assert!(back.elapsed() < SHORT, "{:?}", back.elapsed());
    // The bus's health on the metrics page: the lost connection, and the
    // node's probes timed through Redis.
    assert!(metric(&a, "nakama_cluster_bus_reconnects").await >= 1.0);
    assert!(metric(&a, "nakama_cluster_bus_lag_count").await >= 1.0);
    drop((a, b));
}

/// The value of the first sample of `name` on a node's metrics page.
async fn metric(node: &Node, name: &str) -> f64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", node.metrics))
        .await
        .unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut page = String::new();
    tcp.read_to_string(&mut page).await.unwrap();
    page.lines()
        .find(|l| l.starts_with(&format!("{name}{{")))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{page}"))
}

/// `HLEN key` on a Redis, 0 when it cannot be read.
fn hlen(url: &str, key: &str) -> usize {
    std::process::Command::new("redis-cli")
        .args(["-u", url, "HLEN", key])
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_redis_shards_carry_every_room() {
    let r1 = RedisServer::start();
    let r2 = RedisServer::start();
    let urls = vec![r1.url(), r2.url()];
    let database = ludus_testkit::postgres_database();
    migrate(&database);
    let dir = tempfile::tempdir().unwrap();
    let a = start_node("shard-a", dir.path(), &database, &urls).await;
    let b = start_node("shard-b", dir.path(), &database, &urls).await;
    let (ta, _) = sign_in(a.addr, "sa").await;
    let (tb, ub) = sign_in(b.addr, "sb").await;
    let mut wa = Ws::connect(a.addr, &ta).await;
    let mut wb = Ws::connect(b.addr, &tb).await;
    let mut channels = Vec::new();
    for i in 0..12 {
        join_room(&mut wb, &format!("room-{i}")).await;
    }
    // Presences cross nodes asynchronously: give them a moment.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for i in 0..12 {
        channels.push(join_room(&mut wa, &format!("room-{i}")).await);
    }
    // Each room's presences live on its shard; both shards are used.
    let mut per_shard = [0usize; 2];
    for (i, url) in urls.iter().enumerate() {
        let out = std::process::Command::new("redis-cli")
            .args(["-u", url, "HLEN", "ludus:p:shard-b"])
            .output();
        if let Ok(out) = out {
            per_shard[i] = String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .unwrap_or(0);
        }
    }
    assert!(
        per_shard.iter().all(|n| *n > 1),
        "both shards hold presences: {per_shard:?}"
    );
    for (i, ch) in channels.iter().enumerate() {
        assert!(has_user(&ch["presences"], &ub), "room {i} lists bob: {ch}");
        let id = ch["id"].as_str().unwrap();
        let text = format!("shard-msg-{i}-");
        say(&mut wa, id, &text).await;
        let got = wb
            .wait(SHORT, |v| {
                v["channel_message"]["content"]
                    .as_str()
                    .is_some_and(|c| c.contains(&text))
            })
            .await;
        assert!(got.is_some(), "room {i}'s message crossed");
    }

    // SIGTERM: node b closes its sockets, its leaves reach node a at once
    // (not a lease later), and it gives its name and presences back.
    let mut b = b;
    let pid = b.child.id().unwrap().to_string();
    let stopped = Instant::now();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    wa.expect(
        "bob's leave after node b stopped",
        Duration::from_secs(3),
        |v| has_user(&v["channel_presence_event"]["leaves"], &ub),
    )
    .await;
    assert!(
        stopped.elapsed() < Duration::from_millis(LEASE_MS),
        "{:?}",
        stopped.elapsed()
    );
    let status = tokio::time::timeout(Duration::from_secs(20), b.child.wait())
        .await
        .expect("node b exits")
        .unwrap();
    assert!(status.success(), "graceful exit: {status:?}");
    for url in &urls {
        let out = std::process::Command::new("redis-cli")
            .args([
                "-u",
                url,
                "EXISTS",
                "ludus:p:shard-b",
                "ludus:lease:shard-b",
            ])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0", "{url}");
    }
    drop(a);
}

/// `POST /v2/rpc/{id}`; the payload it answers.
async fn rpc(addr: SocketAddr, token: &str, id: &str, body: Value) -> String {
    // The body is the payload as a JSON string, as Nakama's clients send it.
    let payload = match body {
        Value::String(s) => s,
        other => other.to_string(),
    };
    let (status, reply) = request(
        addr,
        "POST",
        &format!("/v2/rpc/{id}"),
        &format!("Bearer {token}"),
        &json!(payload),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "rpc {id}: {reply}");
    reply["payload"].as_str().unwrap_or_default().to_owned()
}

fn match_data(op: i64) -> impl Fn(&Value) -> bool {
    move |v: &Value| {
        v["match_data"]["op_code"].as_str() == Some(op.to_string().as_str())
            || v["match_data"]["op_code"] == json!(op)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matches_span_nodes() {
    let redis = RedisServer::start();
    let urls = vec![redis.url()];
    let database = ludus_testkit::postgres_database();
    migrate(&database);
    let dir = tempfile::tempdir().unwrap();
    let a = start_node("m-a", dir.path(), &database, &urls).await;
    let b = start_node("m-b", dir.path(), &database, &urls).await;
    let c = start_node("m-c", dir.path(), &database, &urls).await;
    let (ta, _) = sign_in(a.addr, "ma").await;
    let (tb, ub) = sign_in(b.addr, "mb").await;
    let (tc, uc) = sign_in(c.addr, "mc").await;

    // --- an authoritative match on node a, played from b and c ---------------
    let match_id = rpc(
        a.addr,
        &ta,
        "create_match",
        json!({"params": {"mode": "duel"}}),
    )
    .await;
    assert!(match_id.ends_with(".m-a"), "{match_id}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Listed on every node, label and all.
    let (status, list) = request(
        b.addr,
        "GET",
        "/v2/match?limit=10&authoritative=true&query=%2Blabel.mode%3Aduel",
        &format!("Bearer {tb}"),
        &Value::Null,
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{list}");
    let listed = list["matches"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["match_id"] == json!(match_id)))
        .unwrap_or_else(|| panic!("node b lists node a's match: {list}"));
    assert!(
        listed["label"].as_str().unwrap().contains("duel"),
        "{listed}"
    );
    assert_eq!(listed["handler_name"], json!("match_test"));

    let mut wb = Ws::connect(b.addr, &tb).await;
    let mut wc = Ws::connect(c.addr, &tc).await;
    let joined = wb.call(json!({"match_join": {"match_id": match_id}})).await;
    // The console of node c reads the state of node a's match (the bus
    // carries the question and the answer), with b's player in it. Node a's
    // match takes the join when b's track of the player reaches it through
    // the bus, which may be after b answered the player.
    let deadline = Instant::now() + SHORT;
    let state = loop {
        let (status, state) = request(
            c.console,
            "GET",
            &format!("/v2/console/match/{match_id}/state"),
            "Basic YWRtaW46cGFzc3dvcmQ=",
            &Value::Null,
        )
        .await
        .expect("the console answered");
        assert_eq!(status, 200, "{state}");
        if has_user(&state["presences"], &ub) {
            break state;
        }
        assert!(Instant::now() < deadline, "b's player never in {state}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(state["tick"].as_str().is_some(), "{state}");
    // Node c's console status lists every node, each with its own figures:
    // b holds b's socket and a's match.
    let (status, nodes) = request(
        c.console,
        "GET",
        "/v2/console/status",
        "Basic YWRtaW46cGFzc3dvcmQ=",
        &Value::Null,
    )
    .await
    .expect("the console answered");
    assert_eq!(status, 200, "{nodes}");
    let by_name = |name: &str| {
        nodes["nodes"]
            .as_array()
            .and_then(|ns| ns.iter().find(|n| n["name"] == json!(name)).cloned())
            .unwrap_or_else(|| panic!("{name} in {nodes}"))
    };
    assert_eq!(
        nodes["nodes"][0]["name"],
        json!("m-c"),
        "this node first: {nodes}"
    );
    for name in ["m-a", "m-b", "m-c"] {
        assert_eq!(by_name(name)["health"], json!(0), "{nodes}");
    }
    assert_eq!(by_name("m-a")["match_count"], json!(1), "{nodes}");
    assert_eq!(by_name("m-b")["session_count"], json!(1), "{nodes}");
    assert_eq!(by_name("m-b")["match_count"], json!(0), "{nodes}");
    assert_eq!(joined["match"]["match_id"], json!(match_id), "{joined}");
    assert!(joined["match"]["label"].as_str().unwrap().contains("duel"));
    // The match's own broadcast on join (op 100) reaches the player on b.
    wb.expect("the match's join broadcast on b", SHORT, match_data(100))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let joined = wc.call(json!({"match_join": {"match_id": match_id}})).await;
    assert!(
        has_user(&joined["match"]["presences"], &ub),
        "c's join lists b's player: {joined}"
    );
    wb.expect("c's join event on b", SHORT, |v| {
        has_user(&v["match_presence_event"]["joins"], &uc)
    })
    .await;
    // A rejected join comes back from node a with the match's reason.
    let (td, _) = sign_in(c.addr, "md").await;
    let mut wd = Ws::connect(c.addr, &td).await;
    let refused = wd
        .call(json!({"match_join": {"match_id": match_id, "metadata": {"password": "wrong"}}}))
        .await;
    assert_eq!(refused["error"]["code"], json!(5), "{refused}");
    assert_eq!(refused["error"]["message"], json!("bad password"));

    // Op 1 echoes to the sender only; op 2 goes to everyone, from the sender.
    wb.send(json!({"match_data_send": {"match_id": match_id, "op_code": 1, "data": "ZWNobw=="}}))
        .await;
    let echo = wb.expect("the echo on b", SHORT, match_data(1)).await;
    assert_eq!(echo["match_data"]["data"], json!("ZWNobw=="));
    wc.send(json!({"match_data_send": {"match_id": match_id, "op_code": 2, "data": "YWxs"}}))
        .await;
    let got = wb.expect("c's broadcast on b", SHORT, match_data(2)).await;
    assert_eq!(
        got["match_data"]["presence"]["user_id"],
        json!(uc),
        "sent as c's player: {got}"
    );
    wc.expect("c's broadcast on c", SHORT, match_data(2)).await;

    // The listing's size counts players of every node.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = rpc(c.addr, &tc, "get_match", json!(match_id)).await;
    let got: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(got["size"], json!(2), "{got}");
    // nk.match_signal from node b reaches the match on node a.
    let signalled = rpc(
        b.addr,
        &tb,
        "signal_match",
        json!({"match_id": match_id, "data": "ping"}),
    )
    .await;
    assert_eq!(signalled, "signal ping players 2");

    // Op 4: the match kicks its sender (on c); everyone sees the leave.
    wc.send(json!({"match_data_send": {"match_id": match_id, "op_code": 4}}))
        .await;
    wb.expect("c's kick on b", SHORT, |v| {
        has_user(&v["match_presence_event"]["leaves"], &uc)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = wc
        .call(json!({"match_data_send": {"match_id": match_id, "op_code": 1}}))
        .await;
    assert_eq!(
        refused["error"]["code"],
        json!(4),
        "kicked: no longer in the match: {refused}"
    );
    let signalled = rpc(
        a.addr,
        &ta,
        "signal_match",
        json!({"match_id": match_id, "data": "x"}),
    )
    .await;
    assert_eq!(signalled, "signal x players 1");
    // b leaves: the match sees it.
    wb.call(json!({"match_leave": {"match_id": match_id}}))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let signalled = rpc(
        c.addr,
        &tc,
        "signal_match",
        json!({"match_id": match_id, "data": "y"}),
    )
    .await;
    assert_eq!(signalled, "signal y players 0");

    // --- a relayed match created on b, joined from c ---------------------------
    let created = wb.call(json!({"match_create": {}})).await;
    let relayed = created["match"]["match_id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let joined = wc.call(json!({"match_join": {"match_id": relayed}})).await;
    assert!(has_user(&joined["match"]["presences"], &ub), "{joined}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    wc.send(json!({"match_data_send": {"match_id": relayed, "op_code": 7, "data": "cmVs"}}))
        .await;
    let got = wb.expect("relayed data on b", SHORT, match_data(7)).await;
    assert_eq!(got["match_data"]["data"], json!("cmVs"));

    // --- nk.session_disconnect on node a closes a socket on node c ------------
    let room = join_room(&mut wd, "x").await;
    let sid = room["self"]["session_id"].as_str().unwrap().to_owned();
    let asked = Instant::now();
    assert_eq!(
        rpc(a.addr, &ta, "disconnect_session", json!(sid)).await,
        "ok"
    );
    while !wd.closed && asked.elapsed() < SHORT {
        wd.read(Duration::from_millis(100)).await;
    }
    assert!(wd.closed, "the socket on node c was closed");
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );

    // --- the matchmaker pools tickets of every node and matches them once ----
    let matched_pair = |v: &Value| {
        v["matchmaker_matched"]["users"]
            .as_array()
            .is_some_and(|u| u.len() == 2)
    };
    let ticket = json!({"matchmaker_add": {"min_count": 2, "max_count": 2, "query": "*"}});
    let tb1 = wb.call(ticket.clone()).await;
    assert!(tb1["matchmaker_ticket"]["ticket"].is_string(), "{tb1}");
    wc.call(ticket.clone()).await;
    let got_b = wb
        .expect(
            "a match for b's ticket",
            Duration::from_secs(8),
            matched_pair,
        )
        .await;
    let got_c = wc
        .expect("a match for c's ticket", SHORT, matched_pair)
        .await;
    let users = got_b["matchmaker_matched"]["users"].as_array().unwrap();
    let ids: Vec<&Value> = users.iter().map(|u| &u["presence"]["user_id"]).collect();
    assert!(
        ids.contains(&&json!(ub)) && ids.contains(&&json!(uc)),
        "{got_b}"
    );
    assert_eq!(
        got_b["matchmaker_matched"]["token"],
        got_c["matchmaker_matched"]["token"]
    );
    // Matched once: no second match for the same tickets.
    assert!(
        wb.wait(Duration::from_millis(1500), matched_pair)
            .await
            .is_none()
    );

    // The node holding the role dies: another takes it within seconds.
    let holder = std::process::Command::new("redis-cli")
        .args(["-u", &urls[0], "GET", "ludus:matchmaker"])
        .output()
        .unwrap();
    let holder = String::from_utf8_lossy(&holder.stdout).trim().to_owned();
    let mut nodes = vec![("m-a", a), ("m-b", b), ("m-c", c)];
    let dead = nodes
        .iter()
        .position(|(n, _)| *n == holder)
        .unwrap_or_else(|| panic!("the role is held by a node: {holder:?}"));
    let (_, mut dead) = nodes.remove(dead);
    let mut players = Vec::new();
    for (name, node) in &nodes {
        let (t, _) = sign_in(node.addr, &format!("mm-{name}")).await;
        players.push(Ws::connect(node.addr, &t).await);
    }
    dead.child.start_kill().unwrap();
    dead.child.wait().await.unwrap();
    let killed = Instant::now();
    for ws in players.iter_mut() {
        ws.call(ticket.clone()).await;
    }
    for ws in players.iter_mut() {
        ws.expect(
            "a match after the matchmaker's node died",
            Duration::from_millis(LEASE_MS + 8_000),
            matched_pair,
        )
        .await;
    }
    assert!(
        killed.elapsed() < Duration::from_secs(12),
        "{:?}",
        killed.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parties_span_nodes() {
    let redis = RedisServer::start();
    let urls = vec![redis.url()];
    let database = ludus_testkit::postgres_database();
    migrate(&database);
    let dir = tempfile::tempdir().unwrap();
    let a = start_node("p-a", dir.path(), &database, &urls).await;
    let mut b = start_node("p-b", dir.path(), &database, &urls).await;
    let (ta, ua) = sign_in(a.addr, "pa").await;
    let (tb, ub) = sign_in(b.addr, "pb").await;
    let mut wa = Ws::connect(a.addr, &ta).await;
    let mut wb = Ws::connect(b.addr, &tb).await;

    // A logout on node a: node b refuses the token within a second.
    let (tz, _) = sign_in(a.addr, "pz").await;
    let bearer = format!("Bearer {tz}");
    let (status, _) = request(b.addr, "GET", "/v2/account", &bearer, &Value::Null)
        .await
        .unwrap();
    assert_eq!(status, 200);
    let (status, body) = request(
        a.addr,
        "POST",
        "/v2/session/logout",
        &bearer,
        &json!({"token": tz}),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let out = Instant::now();
    loop {
        let (status, _) = request(b.addr, "GET", "/v2/account", &bearer, &Value::Null)
            .await
            .unwrap();
        if status == 401 {
            break;
        }
        assert!(
            out.elapsed() < Duration::from_secs(1),
            "node b still takes the token"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A ban on node a: the user's socket on node b is told and closed, and
    // node b refuses the user's token, within a second.
    let (tv, uv) = sign_in(b.addr, "pv").await;
    let mut wv = Ws::connect(b.addr, &tv).await;
    // The socket is up (its session answers) before the ban.
    wv.call(json!({"ping": {}})).await;
    let banned = Instant::now();
    assert_eq!(rpc(a.addr, &ta, "ban_user", json!(uv)).await, "ok");
    wv.expect("the ban notice on b", SHORT, |v| {
        v["notifications"]["notifications"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["code"] == json!(-8)))
    })
    .await;
    while !wv.closed && banned.elapsed() < SHORT {
        wv.read(Duration::from_millis(100)).await;
    }
    assert!(wv.closed, "the banned user's socket on node b was closed");
    let bearer_v = format!("Bearer {tv}");
    loop {
        let (status, _) = request(b.addr, "GET", "/v2/account", &bearer_v, &Value::Null)
            .await
            .unwrap();
        if status == 401 {
            break;
        }
        assert!(
            banned.elapsed() < SHORT,
            "node b still takes the banned token"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        banned.elapsed() < Duration::from_secs(1),
        "{:?}",
        banned.elapsed()
    );

    // A party on node a, joined from node b.
    let party = wa
        .call(json!({"party_create": {"open": true, "max_size": 4}}))
        .await;
    let id = party["party"]["party_id"].as_str().unwrap().to_owned();
    assert!(id.ends_with(".p-a"), "{party}");
    let joined = wb.call(json!({"party_join": {"party_id": id}})).await;
    assert!(joined.get("error").is_none(), "{joined}");
    let got = wb
        .expect("the party on b", SHORT, |v| {
            v["party"]["party_id"] == json!(id)
        })
        .await;
    assert!(has_user(&got["party"]["presences"], &ua), "{got}");
    wa.expect("b's join on a", SHORT, |v| {
        has_user(&v["party_presence_event"]["joins"], &ub)
    })
    .await;

    // nk.party_list lists the parties of every node, in one order every node
    // shares: node b sees node a's party with both members; a second party,
    // on node b, follows it, and a page's cursor works on either node.
    let (tq, _) = sign_in(b.addr, "pq").await;
    let mut wq = Ws::connect(b.addr, &tq).await;
    let second = wq
        .call(
            json!({"party_create": {"open": false, "max_size": 3, "label": "{\"mode\":\"duo\"}"}}),
        )
        .await;
    let second_id = second["party"]["party_id"].as_str().unwrap().to_owned();
    assert!(second_id.ends_with(".p-b"), "{second}");
    let deadline = Instant::now() + SHORT;
    let listed = loop {
        let out = rpc(b.addr, &tb, "list_parties", json!({"limit": 10})).await;
        let out: Value = serde_json::from_str(&out).unwrap();
        let ids: Vec<&str> = out["parties"]
            .as_array()
            .map(|p| p.iter().filter_map(|p| p["party_id"].as_str()).collect())
            .unwrap_or_default();
        if ids == [id.as_str(), second_id.as_str()] {
            break out;
        }
        assert!(Instant::now() < deadline, "node b lists {out}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(listed["parties"][0]["size"], json!(2), "{listed}");
    assert_eq!(listed["parties"][0]["maxSize"], json!(4), "{listed}");
    assert_eq!(listed["parties"][1]["open"], json!(false), "{listed}");
    assert_eq!(listed["cursor"], json!(""), "{listed}");
    // Node a hears of node b's party over the bus on its own time: node b
    // listing both says nothing of when node a does.
    let deadline = Instant::now() + SHORT;
    let (first, cursor) = loop {
        let out = rpc(a.addr, &ta, "list_parties", json!({"limit": 1})).await;
        let out: Value = serde_json::from_str(&out).unwrap();
        let cursor = out["cursor"].as_str().unwrap_or_default().to_owned();
        if !cursor.is_empty() {
            break (out, cursor);
        }
        assert!(Instant::now() < deadline, "node a lists {out}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(first["parties"][0]["party_id"], json!(id), "{first}");
    let next = rpc(
        b.addr,
        &tb,
        "list_parties",
        json!({"limit": 1, "cursor": cursor}),
    )
    .await;
    let next: Value = serde_json::from_str(&next).unwrap();
    assert_eq!(next["parties"][0]["party_id"], json!(second_id), "{next}");
    assert_eq!(next["cursor"], json!(""), "{next}");
    drop(wq);
    wb.expect("b hears its own join", SHORT, |v| {
        has_user(&v["party_presence_event"]["joins"], &ub)
    })
    .await;

    // Data both ways.
    tokio::time::sleep(Duration::from_millis(300)).await;
    wb.call(json!({"party_data_send": {"party_id": id, "op_code": 3, "data": "aGk="}}))
        .await;
    let data = wa
        .expect("b's data on a", SHORT, |v| {
            v["party_data"]["op_code"] == json!("3")
        })
        .await;
    assert_eq!(data["party_data"]["presence"]["user_id"], json!(ub));
    wa.call(json!({"party_data_send": {"party_id": id, "op_code": 4, "data": "eW8="}}))
        .await;
    wb.expect("a's data on b", SHORT, |v| {
        v["party_data"]["op_code"] == json!("4")
    })
    .await;

    // The leader on a hands over to b's member; b's requests are served
    // by node a from then on.
    let b_presence = got["party"]["self"].clone();
    wa.call(json!({"party_promote": {"party_id": id, "presence": b_presence}}))
        .await;
    for ws in [&mut wa, &mut wb] {
        ws.expect("the new leader", SHORT, |v| {
            v["party_leader"]["presence"]["user_id"] == json!(ub)
        })
        .await;
    }
    let close_it = wb
        .call(
            json!({"party_update": {"party_id": id, "label": "{\"mode\":\"duo\"}", "open": false}}),
        )
        .await;
    assert!(close_it.get("error").is_none(), "{close_it}");
    wa.expect("the update on a", SHORT, |v| {
        v["party_update"]["party_id"] == json!(id)
    })
    .await;
    // A refused request from the old leader: only the leader may update.
    let refused = wa
        .call(json!({"party_update": {"party_id": id, "label": "{}", "open": true}}))
        .await;
    assert!(refused["error"].is_object(), "{refused}");

    // --- group chat across nodes; a kick on node a takes effect on b --------
    let (status, group) = request(
        a.addr,
        "POST",
        "/v2/group",
        &format!("Bearer {ta}"),
        &json!({"name": "cluster-guild", "open": true}),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{group}");
    let gid = group["id"].as_str().unwrap().to_owned();
    let (status, _) = request(
        b.addr,
        "POST",
        &format!("/v2/group/{gid}/join"),
        &format!("Bearer {tb}"),
        &Value::Null,
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    let ga = wa
        .call(json!({"channel_join": {"target": gid, "type": 3}}))
        .await;
    let gch = ga["channel"]["id"]
        .as_str()
        .expect("group channel")
        .to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let gb = wb
        .call(json!({"channel_join": {"target": gid, "type": 3}}))
        .await;
    assert!(has_user(&gb["channel"]["presences"], &ua), "{gb}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    say(&mut wa, &gch, "guild-hello").await;
    wb.expect("the guild message on b", SHORT, message_with("guild-hello"))
        .await;
    let (status, kicked) = request(
        a.addr,
        "POST",
        &format!("/v2/group/{gid}/kick?user_ids={ub}"),
        &format!("Bearer {ta}"),
        &Value::Null,
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{kicked}");
    wa.expect("b's leave from the guild channel", SHORT, |v| {
        v["channel_presence_event"]["channel_id"] == json!(gch)
            && has_user(&v["channel_presence_event"]["leaves"], &ub)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    say(&mut wa, &gch, "after-kick").await;
    assert!(
        wb.wait(Duration::from_millis(500), message_with("after-kick"))
            .await
            .is_none(),
        "a kicked member on another node no longer hears the group"
    );

    // Sockets without `status=true` have no presence other nodes know of
    // (their notification stream stays on their node): a matchmaker match
    // and a closed party's answers still reach them on the other node.
    let (tm, um) = sign_in(a.addr, "pm").await;
    let (tn, un) = sign_in(b.addr, "pn").await;
    let mut wm = Ws::connect_quiet(a.addr, &tm).await;
    let mut wn = Ws::connect_quiet(b.addr, &tn).await;
    let ticket = json!({"matchmaker_add": {"min_count": 2, "max_count": 2,
        "query": "+properties.mode:quiet", "string_properties": {"mode": "quiet"}}});
    assert!(wm.call(ticket.clone()).await["matchmaker_ticket"].is_object());
    assert!(wn.call(ticket).await["matchmaker_ticket"].is_object());
    for (who, ws) in [("a", &mut wm), ("b", &mut wn)] {
        let got = ws
            .expect(
                &format!("the quiet match on {who}"),
                Duration::from_secs(8),
                |v| {
                    v["matchmaker_matched"]["users"]
                        .as_array()
                        .is_some_and(|u| u.len() == 2)
                },
            )
            .await;
        let users = got["matchmaker_matched"]["users"].to_string();
        assert!(users.contains(&um) && users.contains(&un), "{got}");
    }
    let closed = wm
        .call(json!({"party_create": {"open": false, "max_size": 2}}))
        .await;
    let closed_id = closed["party"]["party_id"].as_str().unwrap().to_owned();
    let asked = wn
        .call(json!({"party_join": {"party_id": closed_id}}))
        .await;
    assert!(asked.get("error").is_none(), "{asked}");
    let request = wm
        .expect("the join request on a", SHORT, |v| {
            v["party_join_request"]["party_id"] == json!(closed_id)
        })
        .await;
    let presence = request["party_join_request"]["presences"][0].clone();
    wm.call(json!({"party_accept": {"party_id": closed_id, "presence": presence}}))
        .await;
    wn.expect("the party, once accepted, on b", SHORT, |v| {
        v["party"]["party_id"] == json!(closed_id)
    })
    .await;

    // Node b dies: its member leaves the party on node a within the lease,
    // and a becomes the leader again.
    b.child.start_kill().unwrap();
    b.child.wait().await.unwrap();
    wa.expect(
        "b's member leaving after its node died",
        Duration::from_millis(LEASE_MS + 7_000),
        |v| has_user(&v["party_presence_event"]["leaves"], &ub),
    )
    .await;
    wa.expect("a leads again", SHORT, |v| {
        v["party_leader"]["presence"]["user_id"] == json!(ua)
    })
    .await;
}

/// A console wipe of every account on one node closes the sockets of the
/// deleted accounts on the other node too, and the other node drops them
/// from its index-only storage index and its board (the bus carries it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_wipe_closes_sockets_on_every_node() {
    let redis = RedisServer::start();
    let urls = vec![redis.url()];
    let database = ludus_testkit::postgres_database();
    migrate(&database);
    let dir = tempfile::tempdir().unwrap();
    let a = start_node("w-a", dir.path(), &database, &urls).await;
    let b = start_node("w-b", dir.path(), &database, &urls).await;
    let (ta, _) = sign_in(a.addr, "wa").await;
    let (tb, _) = sign_in(b.addr, "wb").await;
    let mut wa = Ws::connect(a.addr, &ta).await;
    let mut wb = Ws::connect(b.addr, &tb).await;
    wa.call(json!({"ping": {}})).await;
    wb.call(json!({"ping": {}})).await;
    // Node b's own memory: a storage index entry and a board record.
    rpc(b.addr, &tb, "cluster_wipe_setup", json!("")).await;
    let seen = || async {
        let (status, reply) = request(
            b.addr,
            "POST",
            "/v2/rpc/cluster_wipe_seen?http_key=defaulthttpkey",
            "",
            &json!(""),
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{reply}");
        serde_json::from_str::<Value>(reply["payload"].as_str().unwrap()).unwrap()
    };
    assert_eq!(seen().await, json!({"indexed": 1, "records": 1}));
    // The root console user by HTTP Basic (admin:password) on node a.
    let (status, body) = request(
        a.console,
        "DELETE",
        "/v2/console/account",
        "Basic YWRtaW46cGFzc3dvcmQ=",
        &Value::Null,
    )
    .await
    .expect("the wipe answered");
    assert_eq!(status, 200, "{body}");
    let wiped = Instant::now();
    while !(wa.closed && wb.closed) && wiped.elapsed() < SHORT {
        if !wa.closed {
            wa.read(Duration::from_millis(50)).await;
        }
        if !wb.closed {
            wb.read(Duration::from_millis(50)).await;
        }
    }
    assert!(wa.closed, "the socket on the wiping node was closed");
    assert!(wb.closed, "the socket on the other node was closed");
    // Node b dropped the wiped player's index entry and record too.
    let mut now = seen().await;
    while now != json!({"indexed": 0, "records": 0}) && wiped.elapsed() < SHORT {
        tokio::time::sleep(Duration::from_millis(50)).await;
        now = seen().await;
    }
    assert_eq!(
        now,
        json!({"indexed": 0, "records": 0}),
        "node b after the wipe"
    );
}
