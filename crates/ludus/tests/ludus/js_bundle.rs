//! A large JS bundle through the real binary: a generated ~5 MB bundle (the
//! size of a studio's template with its dependencies bundled in) loads, its
//! RPC answers, and its `logger` line in the server's log names the bundle
//! and the line it was written from. How long start-up takes is measured by
//! `scripts/bench-js-startup`, not here.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A bundle of `functions` library functions (about 320 bytes each, as a
/// bundler writes them: each in its own scope, called through a table),
/// then the module; answers it with the line of its `logger.info` call.
fn bundle(functions: usize) -> (String, usize) {
    let mut js = String::from("var lib = (function () {\n  var exports = {};\n");
    for i in 0..functions {
        let _ = write!(
            js,
            "  exports.util{i} = function util{i}(input, options) {{\n    var \
             settings = Object.assign({{ depth: {d}, label: \"util{i}\" }}, options || {{}});\n    \
             var out = [];\n    for (var k = 0; k < settings.depth; k++) {{ out.push(String(input) \
             + \":\" + k); }}\n    return {{ name: settings.label, parts: out, size: out.length }};\n  }};\n",
            d = i % 7 + 1
        );
    }
    js.push_str("  return exports;\n})();\n");
    js.push_str("function bigHello(ctx, logger, nk, payload) {\n");
    let line = js.lines().count() + 1;
    js.push_str("  logger.info(\"big bundle hello %s\", payload);\n");
    js.push_str(&format!(
        "  return JSON.stringify({{ functions: Object.keys(lib).length, last: lib.util{}(\"x\").name }});\n}}\n",
        functions - 1
    ));
    js.push_str(
        "function InitModule(ctx, logger, nk, initializer) {\n  initializer.registerRpc(\"big_hello\", bigHello);\n}\n",
    );
    (js, line)
}

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

/// POSTs `payload` to the RPC with the HTTP key; answers the raw response.
fn rpc(port: u16, id: &str, payload: &str) -> std::io::Result<String> {
    let body = serde_json::to_string(payload).unwrap();
    let request = format!(
        "POST /v2/rpc/{id}?http_key=defaulthttpkey HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.write_all(request.as_bytes())?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

#[test]
fn a_five_megabyte_bundle_loads_answers_and_logs_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    let (js, logger_line) = bundle(16_000);
    assert!(js.len() > 5_000_000, "{} bytes", js.len());
    std::fs::write(modules.join("index.js"), &js).unwrap();
    let log_path = dir.path().join("ludus.log");
    let port = free_port();
    let mut server = Server(
        Command::new(env!("CARGO_BIN_EXE_ludus"))
            .arg("--data_dir")
            .arg(dir.path().join("data"))
            .arg("--runtime.path")
            .arg(&modules)
            .args(["--socket.port", &port.to_string(), "--console.port", "0"])
            .args(["--logger.level", "info", "--logger.format", "json"])
            // Loading runs under the call deadline; a debug build on a
            // shared machine may need more than the default 5 s.
            .args(["--runtime.js_call_timeout_ms", "60000"])
            .stdout(std::fs::File::create(&log_path).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Up to two minutes: a debug build on a shared machine parses slowly.
    let started = Instant::now();
    let answer = loop {
        assert!(
            server.0.try_wait().unwrap().is_none(),
            "the server exited: {}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
        if let Ok(r) = rpc(port, "big_hello", "from the test")
            && r.starts_with("HTTP/1.1 200")
        {
            break r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no answer within two minutes"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    let payload: serde_json::Value = serde_json::from_str(body).unwrap();
    let out: serde_json::Value =
        serde_json::from_str(payload["payload"].as_str().unwrap()).unwrap();
    assert_eq!(out["functions"], 16_000, "{out}");
    assert_eq!(out["last"], "util15999");

    // The logger line, as JSON: the message, and the bundle's file and line.
    let logged = (0..100)
        .find_map(|_| {
            let log = std::fs::read_to_string(&log_path).unwrap();
            let found = log
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|l| l["message"] == "big bundle hello from the test");
            if found.is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            found
        })
        .expect("the logger line is in the server's log");
    let file = logged["file"].as_str().unwrap_or_default();
    assert!(file.ends_with("index.js"), "{logged}");
    assert_eq!(logged["line"], logger_line, "{logged}");
}
