//! `ludus bench` against a real Ludus started in the test: every HTTP
//! workload runs for a few seconds, the counts add up, and bad targets are
//! reported as errors by kind instead of hanging.

use std::time::{Duration, Instant};

use ludus_bench::options::Options;
use ludus_server::Config;

async fn server() -> (ludus_server::RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: dir.path().join("data"),
        socket: ludus_server::config::SocketConfig {
            port: 0,
            ..Default::default()
        },
        ..Config::default()
    };
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

#[tokio::test]
async fn socket_workloads_say_they_need_the_socket() {
    let e = ludus_bench::run(opts("ccu --duration 1 --quiet"))
        .await
        .unwrap_err();
    assert!(e.contains("realtime socket"), "{e}");
}
