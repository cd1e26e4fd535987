//! `kill -9` of the real `ludus` binary during a storage write load loses no
//! acknowledged write: every object whose write was answered 200 before the
//! kill is there, with the acknowledged version, after a restart on the same
//! database (SQLite in the data folder, and PostgreSQL).

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::request;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const WRITERS: usize = 8;
/// Acknowledged writes to wait for before the kill.
const ACKED_BEFORE_KILL: usize = 300;

/// Starts `ludus serve` and waits until it answers.
async fn serve(data_dir: &Path, database: Option<&str>) -> (Child, SocketAddr) {
    let port = ludus_testkit::free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ludus"));
    cmd.arg("serve")
        .arg("--data_dir")
        .arg(data_dir)
        .arg("--socket.port")
        .arg(port.to_string())
        .args(["--console.port", "0"])
        .arg("--logger.level")
        .arg("error")
        .kill_on_drop(true);
    if let Some(url) = database {
        cmd.arg("--database.address").arg(url);
    }
    let child = cmd.spawn().expect("ludus binary starts");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some((200, _)) = request(addr, "GET", "/healthcheck", "", &Value::Null).await {
            return (child, addr);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("ludus did not answer on {addr} within 30 s");
}

async fn sign_in(addr: SocketAddr) -> String {
    // defaultkey as the HTTP Basic user, no password.
    let basic = "Basic ZGVmYXVsdGtleTo=";
    let (status, body) = request(
        addr,
        "POST",
        "/v2/account/authenticate/device?create=true",
        basic,
        &json!({"id": "crash-test-device-1"}),
    )
    .await
    .expect("sign-in answered");
    assert_eq!(status, 200, "{body}");
    format!("Bearer {}", body["token"].as_str().unwrap())
}

async fn acknowledged_writes_survive_kill_9(database: Option<String>) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    if let Some(url) = &database {
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_ludus"))
            .args(["migrate", "up", "--database.address", url])
            .arg("--data_dir")
            .arg(&data)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let (mut child, addr) = serve(&data, database.as_deref()).await;
    let bearer = sign_in(addr).await;

    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (acked, bearer) = (acked.clone(), bearer.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    let key = format!("w{w}-{i}");
                    let body = json!({"objects": [
                        {"collection": "crash", "key": key, "value": json!({"w": w, "i": i}).to_string()}
                    ]});
                    match request(addr, "PUT", "/v2/storage", &bearer, &body).await {
                        Some((200, reply)) => {
                            let version = reply["acks"][0]["version"].as_str().unwrap().to_owned();
                            acked.lock().unwrap().push((key, version));
                        }
                        // The server is gone (or went mid-reply): stop.
                        _ => break,
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() < ACKED_BEFORE_KILL && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // SIGKILL: no shutdown, no flush.
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= ACKED_BEFORE_KILL,
        "only {} writes",
        acked.len()
    );

    let (_child, addr) = serve(&data, database.as_deref()).await;
    let bearer = sign_in(addr).await;
    let (status, account) = request(addr, "GET", "/v2/account", &bearer, &Value::Null)
        .await
        .unwrap();
    assert_eq!(status, 200);
    let me = account["user"]["id"].as_str().unwrap().to_owned();
    for chunk in acked.chunks(100) {
        let ids: Vec<Value> = chunk
            .iter()
            .map(|(key, _)| json!({"collection": "crash", "key": key, "user_id": me}))
            .collect();
        let (status, reply) = request(
            addr,
            "POST",
            "/v2/storage",
            &bearer,
            &json!({ "object_ids": ids }),
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{reply}");
        let found: std::collections::HashMap<&str, &str> = reply["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["key"].as_str().unwrap(), o["version"].as_str().unwrap()))
            .collect();
        for (key, version) in chunk {
            assert_eq!(
                found.get(key.as_str()),
                Some(&version.as_str()),
                "acknowledged write {key} lost after kill -9"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_acknowledged_writes_survive_kill_9() {
    acknowledged_writes_survive_kill_9(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_acknowledged_writes_survive_kill_9() {
    let url = tokio::task::spawn_blocking(ludus_testkit::postgres_database)
        .await
        .unwrap();
    acknowledged_writes_survive_kill_9(Some(url)).await;
}
