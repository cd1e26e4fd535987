//! `ludus bench` against a real Ludus started in the test: every workload
//! runs for a few seconds with the bench modules of `bench/modules`
//! installed, the counts add up, and bad targets (unreachable, silent, wrong
//! key, closing sockets) are reported as errors by kind instead of hanging.

use std::time::{Duration, Instant};

use ludus_bench::options::Options;
use ludus_server::Config;

async fn server() -> (ludus_server::RunningServer, tempfile::TempDir) {
    server_with(|_| {}).await
}

/// A Ludus on a fresh SQLite data dir with the bench modules installed.
async fn server_with(
    tweak: impl FnOnce(&mut Config),
) -> (ludus_server::RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let modules = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/modules");
    let mut config = Config {
        data_dir: dir.path().join("data"),
        socket: ludus_server::config::SocketConfig {
            port: 0,
            ..Default::default()
        },
        ..Config::default()
    };
    config.runtime.path = modules.into();
    config.console.port = 0;
    tweak(&mut config);
    (ludus_server::start(config).await.unwrap(), dir)
}

fn opts(line: &str) -> Options {
    let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    Options::parse(&args).unwrap()
}

fn assert_counts_add_up(r: &ludus_bench::report::RunResult) {
    let per_second: u64 = r.seconds.iter().map(|s| s.ok).sum();
    assert_eq!(
        per_second, r.summary.total_ok,
        "per-second counts add up to the total"
    );
    let errors: u64 = r.seconds.iter().map(|s| s.errors).sum();
    assert_eq!(errors, r.summary.total_errors);
    assert!(r.bytes_in > 0 && r.bytes_out > 0);
    assert!(r.summary.p50_ms <= r.summary.p99_ms && r.summary.p99_ms <= r.summary.max_ms);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_and_login_against_ludus() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    let r = ludus_bench::run(opts(&format!(
        "register --target {target} --duration 2 --concurrency 4 --quiet"
    )))
    .await
    .unwrap();
    assert!(r.summary.total_ok > 10, "{:?}", r.summary);
    assert_eq!(r.summary.total_errors, 0, "{:?}", r.summary.errors);
    assert_counts_add_up(&r);

    let r = ludus_bench::run(opts(&format!(
        "login --target {target} --duration 2 --concurrency 4 --users 40 --quiet"
    )))
    .await
    .unwrap();
    assert!(r.summary.total_ok > 10);
    assert_eq!(r.summary.total_errors, 0, "{:?}", r.summary.errors);
    assert_counts_add_up(&r);
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_server_key_is_counted_by_kind() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    let r = ludus_bench::run(opts(&format!(
        "register --target {target} --duration 1 --concurrency 2 --server-key nope --quiet"
    )))
    .await
    .unwrap();
    assert_eq!(r.summary.total_ok, 0);
    assert!(r.summary.errors["status 401"] > 0, "{:?}", r.summary.errors);
    // A login run cannot even seed its devices: said plainly, not hung.
    let e = ludus_bench::run(opts(&format!(
        "login --target {target} --duration 1 --server-key nope --quiet"
    )))
    .await
    .unwrap_err();
    assert!(e.contains("status 401"), "{e}");
    srv.shutdown().await;
}

#[tokio::test]
async fn unreachable_target_stops_at_the_deadline() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let r = ludus_bench::run(opts(&format!(
        "register --target http://127.0.0.1:{port} --duration 1 --concurrency 2 --quiet"
    )))
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.summary.total_ok, 0);
    assert!(r.summary.errors["connect"] > 0, "{:?}", r.summary.errors);
}

/// A bare HTTP/1.1 POST with an empty body; the response as text.
async fn post(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

/// The compute-heavy RPC finds the shortest path through the zigzag grid
/// (504 steps, as a breadth-first search finds it), and the `rpc` workload
/// drives it without errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_path_search_rpc_finds_the_shortest_path() {
    let (srv, _dir) = server().await;
    let reply = post(
        srv.local_addr(),
        "/v2/rpc/ludus_bench_path?http_key=defaulthttpkey&unwrap=true",
    )
    .await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with(r#"{"steps":504}"#), "{reply}");
    let target = format!("http://{}", srv.local_addr());
    let r = ludus_bench::run(opts(&format!(
        "rpc --target {target} --rpc-id ludus_bench_path --duration 2 --concurrency 2 --quiet"
    )))
    .await
    .unwrap();
    assert!(r.summary.total_ok > 2, "{:?}", r.summary);
    assert_eq!(r.summary.total_errors, 0, "{:?}", r.summary.errors);
    srv.shutdown().await;
}

/// The social workload seeds its graph once per tag (friends, a big group,
/// groups to search), then each op reads it without errors; a second run
/// with the same tag reuses the data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn social_reads_run_over_seeded_data() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    for op in ["friends", "members", "search"] {
        let r = ludus_bench::run(opts(&format!(
            "social --op {op} --tag t1 --friends 12 --members 25 --groups 30 \
             --target {target} --duration 1 --concurrency 4 --quiet"
        )))
        .await
        .unwrap();
        assert!(r.summary.total_ok > 2, "{op}: {:?}", r.summary);
        assert_eq!(r.summary.total_errors, 0, "{op}: {:?}", r.summary.errors);
        assert_counts_add_up(&r);
    }
    // The same tag finds the data seeded above, and it is what was asked for.
    let seeded = ludus_bench::workload::social::seed(&opts(&format!(
        "social --tag t1 --friends 12 --members 25 --groups 30 --target {target} --quiet"
    )))
    .await
    .unwrap();
    let friends = get_json(srv.local_addr(), "/v2/friend?limit=1000", &seeded.hub).await;
    let friends = friends["friends"].as_array().unwrap();
    assert_eq!(friends.len(), 12);
    assert!(
        friends
            .iter()
            .all(|f| f["state"].as_i64().unwrap_or(0) == 0)
    );
    let path = format!("/v2/group/{}/user?limit=100", seeded.group_id);
    let members = get_json(srv.local_addr(), &path, &seeded.hub).await;
    assert_eq!(
        members["group_users"].as_array().unwrap().len(),
        26,
        "25 and the owner"
    );
    let found = get_json(
        srv.local_addr(),
        "/v2/group?name=social-t1-g1%25&limit=100",
        &seeded.hub,
    )
    .await;
    assert_eq!(
        found["groups"].as_array().unwrap().len(),
        11,
        "g1 and g10-g19"
    );
    srv.shutdown().await;
}

/// A bare HTTP/1.1 GET with a bearer; the JSON body.
async fn get_json(addr: std::net::SocketAddr, path: &str, bearer: &str) -> serde_json::Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {bearer}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{path}: {out}");
    let body = out.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_calls_the_bench_modules_echo() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    let r = ludus_bench::run(opts(&format!(
        "rpc --target {target} --duration 2 --concurrency 4 --quiet"
    )))
    .await
    .unwrap();
    assert!(r.summary.total_ok > 10, "{:?}", r.summary);
    assert_eq!(r.summary.total_errors, 0, "{:?}", r.summary.errors);
    assert_counts_add_up(&r);
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_and_wallet_workloads_run_without_errors() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    for workload in ["storage", "wallet"] {
        let r = ludus_bench::run(opts(&format!(
            "{workload} --target {target} --duration 2 --concurrency 4 --quiet"
        )))
        .await
        .unwrap();
        assert!(r.summary.total_ok > 10, "{workload}: {:?}", r.summary);
        assert_eq!(
            r.summary.total_errors, 0,
            "{workload}: {:?}",
            r.summary.errors
        );
        assert_counts_add_up(&r);
    }
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccu_holds_every_socket_to_the_end() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    let r = ludus_bench::run(opts(&format!(
        "ccu --target {target} --duration 3 --concurrency 40 --rate 100 --quiet"
    )))
    .await
    .unwrap();
    assert_eq!(r.summary.total_errors, 0, "{:?}", r.summary.errors);
    assert_eq!(r.summary.total_ok, 40, "each user connects once");
    assert_eq!(r.summary.peak_users, 40);
    assert_eq!(r.summary.final_users, 40, "all still connected at the end");
    assert!(r.socket);
    assert_counts_add_up(&r);
    // Spread over two loopback source addresses (bound, one port pool each).
    let r = ludus_bench::run(opts(&format!(
        "ccu --target {target} --duration 1 --concurrency 10 --rate 100 --sources 2 --quiet"
    )))
    .await
    .unwrap();
    assert_eq!(r.summary.total_errors, 0, "{:?}", r.summary.errors);
    assert_eq!(r.summary.total_ok, 10);
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_round_trips_by_ping_and_by_rpc() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    for extra in [
        "",
        "--in-flight 4",
        "--rpc ludus_bench_echo",
        "--format protobuf --in-flight 2",
        "--format protobuf --rpc ludus_bench_echo",
    ] {
        let r = ludus_bench::run(opts(&format!(
            "echo --target {target} --duration 2 --concurrency 4 --quiet {extra}"
        )))
        .await
        .unwrap();
        let s = &r.summary;
        assert_eq!(s.total_errors, 0, "{extra}: {:?}", s.errors);
        assert!(s.total_ok > 50, "{extra}: {s:?}");
        // Every answer was timed; at most the window per user is unanswered
        // when the deadline stops the run.
        assert_eq!(s.messages_received, s.total_ok, "{extra}");
        let in_flight = if extra.contains("in-flight 4") {
            4
        } else if extra.contains("in-flight 2") {
            2
        } else {
            1
        };
        assert!(s.messages_sent >= s.total_ok, "{extra}");
        assert!(
            s.messages_sent - s.total_ok <= 4 * in_flight,
            "{extra}: {s:?}"
        );
        assert_counts_add_up(&r);
    }
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fanout_delivers_every_message_to_every_member() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    let (users, rooms) = (40u64, 4u64);
    for format in ["json", "protobuf"] {
        let r = ludus_bench::run(opts(&format!(
            "fanout --target {target} --duration 3 --concurrency {users} --rooms {rooms} --rate 100 --format {format} --quiet"
        )))
        .await
        .unwrap();
        let s = &r.summary;
        assert_eq!(s.total_errors, 0, "{format}: {:?}", s.errors);
        // Sent: one join per user, then the publishes.
        let published = s.messages_sent - users;
        assert!(published > 20, "{format}: {s:?}");
        assert_eq!(
            s.total_ok,
            published * (users / rooms),
            "{format}: each publish reaches every member of its room"
        );
        // Received: the deliveries, one ack per publish and one reply per join.
        assert_eq!(
            s.messages_received,
            s.total_ok + published + users,
            "{format}"
        );
        assert_counts_add_up(&r);
    }
    srv.shutdown().await;
}

// Needs Ludus's authoritative matches (`nk.match_create`, `nk.match_list`,
// `match_join`, match data); fails until they land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_echoes_op_1_and_broadcasts_op_2() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    let r = ludus_bench::run(opts(&format!(
        "match --target {target} --duration 4 --concurrency 20 --ramp 1 --interval-ms 200 --quiet"
    )))
    .await
    .unwrap();
    let s = &r.summary;
    assert_eq!(s.total_errors, 0, "{:?}", s.errors);
    assert!(s.total_ok > 20, "op 1 echoes came back: {s:?}");
    assert_eq!(s.peak_users, 20);
    // Op 2 goes to all ten players of a match: more arrives than is sent.
    assert!(s.messages_received > s.messages_sent, "{s:?}");
    assert!(s.above_floor.is_some());
    assert_counts_add_up(&r);
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_workload_with_a_wrong_key_says_so() {
    let (srv, _dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    let r = ludus_bench::run(opts(&format!(
        "ccu --target {target} --duration 1 --concurrency 3 --server-key nope --quiet"
    )))
    .await
    .unwrap();
    assert_eq!(r.summary.total_ok, 0);
    assert!(
        r.summary.errors["sign-in 401 (wrong --server-key?)"] >= 3,
        "{:?}",
        r.summary.errors
    );
    assert_eq!(r.summary.peak_users, 0);
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_closed_by_the_server_are_counted() {
    // Ludus closes sockets that send nothing for 300 ms; ccu only answers pings.
    let (srv, _dir) = server_with(|c| c.socket.ws_idle_timeout_ms = 300).await;
    let target = format!("http://{}", srv.local_addr());
    let started = Instant::now();
    let r = ludus_bench::run(opts(&format!(
        "ccu --target {target} --duration 2 --concurrency 3 --quiet"
    )))
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let closed: u64 = r
        .summary
        .errors
        .iter()
        .filter(|(k, _)| k.starts_with("closed by server"))
        .map(|(_, v)| v)
        .sum();
    assert!(closed >= 3, "{:?}", r.summary.errors);
    // Each user reconnected after being closed.
    assert!(r.summary.total_ok > 3, "{:?}", r.summary);
    assert_counts_add_up(&r);
    srv.shutdown().await;
}

#[tokio::test]
async fn unreachable_socket_target_stops_at_the_deadline() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let r = ludus_bench::run(opts(&format!(
        "echo --target http://127.0.0.1:{port} --duration 1 --concurrency 2 --quiet"
    )))
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.summary.total_ok, 0);
    assert!(
        r.summary.errors["refused or unreachable (sign-in)"] >= 2,
        "{:?}",
        r.summary.errors
    );
}

#[tokio::test]
async fn silent_server_times_out_and_stops() {
    // A listener that never accepts: connections complete in the backlog,
    // and nothing ever answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let started = Instant::now();
    let r = ludus_bench::run(opts(&format!(
        "fanout --target http://127.0.0.1:{port} --duration 1 --concurrency 2 --timeout-ms 300 --quiet"
    )))
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.summary.total_ok, 0);
    assert!(
        r.summary.errors["sign-in timeout"] >= 2,
        "{:?}",
        r.summary.errors
    );
    drop(listener);
}

/// `--processes`: the run is spread over processes of the real binary, and
/// the result merges what every process measured (users, requests and the
/// latency histogram alike).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_processes_merges_their_measurements() {
    let (srv, dir) = server().await;
    let target = format!("http://{}", srv.local_addr());
    let json = dir.path().join("echo.json");
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_ludus"))
        .args(["bench", "echo", "--processes", "2", "--concurrency", "5"])
        .args([
            "--duration",
            "2",
            "--sources",
            "2",
            "--quiet",
            "--target",
            &target,
        ])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .status()
        .await
        .unwrap();
    assert!(status.success(), "{status}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let s = &r["summary"];
    assert_eq!(r["concurrency"], 5);
    assert_eq!(s["peak_users"], 5, "both processes' users: {s}");
    assert_eq!(s["total_errors"], 0, "{s}");
    let per_second: u64 = r["seconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["ok"].as_u64().unwrap())
        .sum();
    assert_eq!(per_second, s["total_ok"].as_u64().unwrap());
    assert!(per_second > 0);

    // A workload whose users depend on each other stays in one process.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_ludus"))
        .args(["bench", "fanout", "--processes", "2", "--target", &target])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--processes runs ccu, echo"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JS twin of the bench modules (`bench/modules/index.js`), loaded
/// beside the Lua ones: its path search finds the same 504 steps, and the
/// rpc and match workloads run on its echo RPC and its match handler
/// without errors, as `scripts/bench-all`'s JS rows run them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_bench_module_serves_the_rpc_and_match_workloads() {
    let (srv, _dir) = server().await;
    let reply = post(
        srv.local_addr(),
        "/v2/rpc/ludus_bench_js_path?http_key=defaulthttpkey&unwrap=true",
    )
    .await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with(r#"{"steps":504}"#), "{reply}");
    let target = format!("http://{}", srv.local_addr());
    for rpc in ["ludus_bench_js_echo", "ludus_bench_js_path"] {
        let r = ludus_bench::run(opts(&format!(
            "rpc --target {target} --rpc-id {rpc} --duration 2 --concurrency 2 --quiet"
        )))
        .await
        .unwrap();
        assert!(r.summary.total_ok > 2, "{rpc}: {:?}", r.summary);
        assert_eq!(r.summary.total_errors, 0, "{rpc}: {:?}", r.summary.errors);
    }
    let r = ludus_bench::run(opts(&format!(
        "match --target {target} --match-rpc ludus_bench_js_find_match --duration 4 \
         --concurrency 20 --ramp 1 --interval-ms 200 --quiet"
    )))
    .await
    .unwrap();
    let s = &r.summary;
    assert_eq!(s.total_errors, 0, "{:?}", s.errors);
    assert!(s.total_ok > 20, "op 1 echoes came back: {s:?}");
    assert_eq!(s.peak_users, 20);
    assert!(s.messages_received > s.messages_sent, "{s:?}");
    assert_counts_add_up(&r);
    srv.shutdown().await;
}
