//! Issue 11 against the real binary. Hole 1: a module that starts LuaJIT's
//! profiler with an erroring callback made LuaJIT call `exit(EXIT_FAILURE)`,
//! so the server died with status 1 and no log line; the server must answer
//! the call with an error and keep serving. Hole 3: SIGTERM waited for a
//! backtracking pattern running in C (a 70 s call still needed SIGKILL);
//! shutdown must end soon after its grace period.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MODULE: &str = r#"
local nk = require("nakama")
nk.register_rpc(function()
  local profile = require("jit.profile")
  profile.start("f", function() error("boom") end)
  while true do end
end, "profile_exit")
nk.register_rpc(function() return "fine" end, "ok")
nk.register_rpc(function()
  return tostring(string.find(string.rep("x", 4000), "(.-)x(.-)x(.-)y"))
end, "backtrack")
"#;

/// Kills the server when the test ends, however it ends.
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

/// POSTs to `/v2/rpc/{id}` with the HTTP key; answers status and body.
fn rpc(port: u16, id: &str) -> (u16, String) {
    let request = format!(
        "POST /v2/rpc/{id}?http_key=defaulthttpkey&unwrap HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let response = exchange(port, &request, Duration::from_secs(30)).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// Sends one whole HTTP request and reads the answer until the server
/// closes the connection.
fn exchange(port: u16, request: &str, wait: Duration) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(wait))?;
    stream.write_all(request.as_bytes())?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

/// Starts `ludus` with the hostile module and `flags`; answers once it
/// serves its health check. A port another process took between
/// `free_port` and the bind (tests and other runs share the machine) makes
/// the server exit at start: it is started again on another port.
fn start(dir: &std::path::Path, flags: &[&str]) -> (Server, u16) {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("hostile.lua"), MODULE).unwrap();
    for _ in 0..3 {
        let port = free_port();
        let mut server = Server(
            Command::new(env!("CARGO_BIN_EXE_ludus"))
                .arg("--data_dir")
                .arg(dir.join("data"))
                .arg("--runtime.path")
                .arg(&modules)
                .args(["--socket.port", &port.to_string(), "--logger.level", "warn"])
                .args(["--console.port", "0"])
                .args(flags)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let started = Instant::now();
        loop {
            if server.0.try_wait().unwrap().is_some() {
                break;
            }
            if healthy(port) {
                return (server, port);
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    panic!("the server exited while starting, three times")
}

/// Whether a server on `port` answers `GET /healthcheck` with 200.
fn healthy(port: u16) -> bool {
    let request = "GET /healthcheck HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    exchange(port, request, Duration::from_secs(5))
        .is_ok_and(|response| response.starts_with("HTTP/1.1 200"))
}

#[test]
fn a_module_cannot_exit_the_process_through_jit_profile() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port) = start(dir.path(), &[]);

    let (status, body) = rpc(port, "profile_exit");
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("module 'jit.profile' not found"), "{body}");
    // The profiler's callback would have fired within milliseconds.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "the server exited: {:?}",
        server.0.try_wait()
    );
    let (status, body) = rpc(port, "ok");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("fine"), "{body}");
}

/// With a call timeout longer than the shutdown grace (10 s), SIGTERM during
/// a backtracking pattern still ends the process soon after the grace: the
/// runtime stops the call when it closes.
#[cfg(unix)]
#[test]
fn sigterm_does_not_wait_for_a_runaway_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port) = start(
        dir.path(),
        &[
            "--runtime.lua_call_timeout_ms",
            "60000",
            "--runtime.lua_instruction_budget",
            "1000000000000",
        ],
    );
    let call = std::thread::spawn(move || {
        // The answer does not matter (the server closes the connection).
        let _ = std::panic::catch_unwind(|| rpc(port, "backtrack"));
    });
    std::thread::sleep(Duration::from_millis(500));
    let status = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    let exit = loop {
        if let Some(exit) = server.0.try_wait().unwrap() {
            break exit;
        }
        // Grace (10 s) plus slack; the runaway call alone would take minutes.
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server still runs {:?} after SIGTERM",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(exit.success(), "{exit:?}");
    call.join().unwrap();
}
