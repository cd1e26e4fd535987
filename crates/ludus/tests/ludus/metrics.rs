//! Prometheus metrics scraped by a real Prometheus (Debian's `prometheus`
//! package; `scripts/test` installs it): the real binary with
//! `metrics.prometheus_port` set, a Prometheus scraping it every second,
//! and its query API asked for Nakama's series until they show the
//! requests made (or a deadline passes), the labelled ones (`transport`,
//! `rpc_id`, `rpc_code`) among them.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the process when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request with `Connection: close`; the whole answer.
fn http(port: u16, request: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    Some(answer)
}

fn authenticate(port: u16, device: &str) {
    let body = format!("{{\"id\":\"{device}\"}}");
    // "defaultkey:" in base64.
    let answer = http(
        port,
        &format!(
            "POST /v2/account/authenticate/device?create=true HTTP/1.1\r\nHost: x\r\n\
             Authorization: Basic ZGVmYXVsdGtleTo=\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .expect("the server answers");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// The value of `query` in Prometheus, if it has one sample.
fn query(prometheus: u16, query: &str) -> Option<f64> {
    let answer = http(
        prometheus,
        &format!(
            "GET /api/v1/query?query={query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        ),
    )?;
    let body = answer.split("\r\n\r\n").nth(1)?;
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    let result = json["data"]["result"].as_array()?;
    let value = result.first()?["value"][1].as_str()?;
    value.parse().ok()
}

/// Waits until `query` answers a value that `ok` accepts.
fn wait_for(prometheus: u16, q: &str, deadline: Instant, ok: impl Fn(f64) -> bool) -> f64 {
    loop {
        if let Some(v) = query(prometheus, q)
            && ok(v)
        {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "prometheus never saw the expected {q} (last: {:?})",
            query(prometheus, q)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_real_prometheus_scrapes_nakamas_series() {
    let prometheus_bin = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("prometheus is not installed (Debian: apt-get install prometheus; scripts/test installs it)");
    let dir = tempfile::tempdir().unwrap();
    let api = ludus_testkit::free_port();
    let metrics = ludus_testkit::free_port();
    let prom = ludus_testkit::free_port();
    let _ludus = Killed(
        Command::new(env!("CARGO_BIN_EXE_ludus"))
            .args(["--socket.port", &api.to_string()])
            .args(["--console.port", "0"])
            .args(["--metrics.prometheus_port", &metrics.to_string()])
            .args(["--name", "metrics-node"])
            .arg("--data_dir")
            .arg(dir.path().join("data"))
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the ludus binary runs"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while http(
        api,
        "GET /healthcheck HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .is_none()
    {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The exporter answers the text format itself.
    let scrape = http(metrics, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");
    assert!(
        scrape.contains("# TYPE nakama_overall_count counter"),
        "{scrape}"
    );
    assert!(
        scrape.contains("nakama_sessions{node_name=\"metrics-node\"} 0"),
        "{scrape}"
    );

    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: ludus\n    static_configs:\n      - targets: ['127.0.0.1:{metrics}']\n"
        ),
    )
    .unwrap();
    let _prometheus = Killed(
        Command::new(prometheus_bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus runs"),
    );
    let deadline = Instant::now() + Duration::from_secs(90);
    authenticate(api, "device-metrics-0001");
    let q = "nakama_AuthenticateDevice_count%7Bnode_name%3D%22metrics-node%22%7D";
    let before = wait_for(prom, q, deadline, |v| v >= 1.0);
    for i in 0..3 {
        authenticate(api, &format!("device-metrics-100{i}"));
    }
    wait_for(prom, q, deadline, |v| v >= before + 3.0);
    // The overall counts and the latency summary are there too.
    let overall = wait_for(prom, "nakama_overall_request_count", deadline, |v| v >= 4.0);
    assert!(overall >= 4.0);
    wait_for(
        prom,
        "nakama_AuthenticateDevice_latency_ms_count",
        deadline,
        |v| v >= 4.0,
    );
    wait_for(
        prom,
        "nakama_overall_latency_ms%7Bquantile%3D%220.99%22%7D",
        deadline,
        |v| v > 0.0,
    );
    // Nakama's labelled families: the sign-ups under transport `api` and
    // code `OK`, and a call without a token under `Unauthenticated`.
    let answer = http(
        api,
        "GET /v2/account HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .expect("the server answers");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let labelled = |family: &str, id: &str, code: &str| {
        format!(
            "{family}%7Btransport%3D%22api%22%2Crpc_id%3D%22{id}%22%2Crpc_code%3D%22{code}%22%7D"
        )
    };
    wait_for(
        prom,
        &labelled("nakama_count", "AuthenticateDevice", "OK"),
        deadline,
        |v| v >= 4.0,
    );
    wait_for(
        prom,
        &labelled("nakama_latency_count", "AuthenticateDevice", "OK"),
        deadline,
        |v| v >= 4.0,
    );
    wait_for(
        prom,
        &labelled("nakama_count", "GetAccount", "Unauthenticated"),
        deadline,
        |v| v == 1.0,
    );
    // Series read at scrape time: the store's group commits (the sign-ups)
    // and the gauges of the parts that hold them.
    wait_for(prom, "nakama_store_batched_writes", deadline, |v| v >= 4.0);
    wait_for(prom, "nakama_presences", deadline, |v| v >= 0.0);
    wait_for(
        prom,
        "nakama_matchmaker_process_time_count",
        deadline,
        |v| v >= 0.0,
    );
}
