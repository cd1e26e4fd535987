//! Builds and runs the example binary like a studio would, then calls its
//! native RPCs and hooks over HTTP.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Kills the server when the test ends, even on failure.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free port whose predecessor is free too (the server's gRPC port).
fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if port > 1 && TcpListener::bind(("127.0.0.1", port - 1)).is_ok() {
            return port;
        }
    }
}

#[tokio::test]
async fn example_binary_serves_native_rpcs_and_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _server = Server(
        Command::new(env!("CARGO_BIN_EXE_ludus-example-native"))
            .args(["--data_dir", dir.path().to_str().unwrap()])
            .args(["--socket.port", &port.to_string()])
            .args(["--console.port", "0"])
            .args(["--logger.level", "warn"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let started = Instant::now();
    while http
        .get(format!("{base}/healthcheck"))
        .send()
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "server did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let res = http
        .post(format!("{base}/v2/rpc/native_echo?http_key=defaulthttpkey"))
        .body("\"hi there\"")
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"payload": "hi there"})
    );

    let res = http
        .post(format!("{base}/v2/rpc/native_fail?http_key=defaulthttpkey"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"code": 3, "message": "native failure", "error": "native failure"})
    );

    let auth = |id: &str| {
        http.post(format!("{base}/v2/account/authenticate/custom"))
            .basic_auth("defaultkey", Some(""))
            .json(&json!({"id": id}))
            .send()
    };
    assert_eq!(
        auth("banned-player-1").await.unwrap().status().as_u16(),
        404
    );
    let session: Value = auth("player-0001").await.unwrap().json().await.unwrap();
    let token = session["token"].as_str().unwrap();

    let res = http
        .post(format!("{base}/v2/rpc/native_whoami"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let uid = res.json::<Value>().await.unwrap()["payload"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(uid.len(), 36);

    let account: Value = http
        .get(format!("{base}/v2/account"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(account["user"]["id"], uid.as_str());
    assert_eq!(
        account["user"]["username"], "native-player-0001",
        "the before hook named the user"
    );

    // The native match handler: created by a native RPC, then listed.
    let res = http
        .post(format!("{base}/v2/rpc/native_create_duel?unwrap"))
        .bearer_auth(token)
        .body(r#"{"arena":"pit"}"#)
        .send()
        .await
        .unwrap();
    // `?unwrap`: the body goes in and the payload comes back as is.
    let match_id = res.text().await.unwrap();
    assert!(match_id.ends_with(".ludus"), "{match_id}");
    let list: Value = http
        .get(format!("{base}/v2/match?limit=10&authoritative=true"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = &list["matches"][0];
    assert_eq!(listed["match_id"], match_id.as_str());
    assert_eq!(listed["handler_name"], "native_duel");
    assert_eq!(listed["tick_rate"], 10);
    let label: Value = serde_json::from_str(listed["label"].as_str().unwrap()).unwrap();
    assert_eq!(label["arena"], "pit");
}
