//! The command line through the real binary: help for every command (once
//! `--help` after a command was read as a config key needing a value), the
//! version, and config mistakes named.

use std::process::{Command, Output};

fn ludus(args: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ludus"))
        .args(args.split_whitespace())
        .env_remove("RUST_LOG")
        .output()
        .expect("the ludus binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn help_answers_for_every_command() {
    for (args, needle) in [
        ("help", "config keys and defaults"),
        ("--help", "serve"),
        ("-h", "migrate"),
        ("serve --help", "--section.key VALUE"),
        ("migrate --help", "status"),
        ("migrate up --help", "--config FILE"),
        ("check --help", "--config FILE"),
        ("healthcheck --help", "--config FILE"),
        ("bench --help", "fanout"),
        ("bench echo --help", "--in-flight"),
        ("bench match --help", "--interval-ms"),
    ] {
        let out = ludus(args);
        assert!(out.status.success(), "{args}: {}", stderr(&out));
        assert!(
            stdout(&out).contains(needle),
            "{args} should mention {needle}: {}",
            stdout(&out)
        );
    }
    let help = stdout(&ludus("help"));
    assert!(
        help.contains("--socket.port"),
        "every key is listed: {help}"
    );
}

#[test]
fn help_markdown_prints_the_configuration_reference() {
    let out = ludus("help --markdown");
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.starts_with("# Configuration\n"), "{page}");
    assert!(
        page.contains("| `socket.port` | `7350` | port of the API |"),
        "{page}"
    );
    let on_disk = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/configuration.md"
    ))
    .unwrap();
    assert_eq!(
        page, on_disk,
        "docs/configuration.md is what `ludus help --markdown` prints"
    );
}

#[test]
fn version_prints_the_version() {
    for args in ["version", "--version"] {
        let out = ludus(args);
        assert!(out.status.success());
        assert_eq!(
            stdout(&out).trim(),
            format!("ludus {}", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn mistakes_are_named_and_fail() {
    for (args, needle) in [
        ("serve --socket.prot 1", "unknown config key `socket.prot`"),
        ("serve --socket.port", "needs a value"),
        ("migrate sideways", "sideways"),
        ("bench echo --threads 100", "100"),
        ("bench echo --duration 5y", "unknown unit"),
        ("bench fly", "fly"),
        // A cluster on the embedded SQLite is refused before anything starts.
        (
            "serve --cluster.redis redis://127.0.0.1:1",
            "a cluster needs PostgreSQL",
        ),
    ] {
        let out = ludus(args);
        assert!(!out.status.success(), "{args} should fail");
        assert!(
            stderr(&out).contains(needle),
            "{args} should say {needle}: {}",
            stderr(&out)
        );
    }
}

/// Regression: `ludus help | head` panicked ("failed printing to stdout:
/// Broken pipe") once the reader closed the pipe.
#[test]
fn help_into_a_closed_pipe_ends_quietly() {
    use std::io::Read as _;
    use std::process::Stdio;

    let mut child = Command::new(env!("CARGO_BIN_EXE_ludus"))
        .arg("help")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ludus binary runs");
    // Close the reading end before the help is written, as `head` does.
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert!(status.success(), "{status:?}: {err}");
}

/// The access log is a layer the router gets only when debug events are on
/// at start: with `logger.level debug` every request is logged, with the
/// default level none is (and requests skip the layer).
#[test]
fn the_access_log_follows_the_level_set_at_start() {
    use std::io::{Read as _, Write as _};
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    for (level, logged) in [("debug", true), ("info", false)] {
        let dir = tempfile::tempdir().unwrap();
        let port = ludus_testkit::free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_ludus"))
            .args(["--logger.level", level, "--logger.format", "json"])
            .args(["--socket.port", &port.to_string()])
            .args(["--console.port", "0"])
            .arg("--data_dir")
            .arg(dir.path())
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the ludus binary runs");
        let deadline = Instant::now() + Duration::from_secs(30);
        let answer = loop {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                s.write_all(b"GET /healthcheck HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .unwrap();
                let mut answer = String::new();
                s.read_to_string(&mut answer).unwrap();
                break answer;
            }
            assert!(Instant::now() < deadline, "the server did not start");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        child.kill().unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child.wait().unwrap();
        let lines: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("\"path\":\"/healthcheck\""))
            .collect();
        assert_eq!(!lines.is_empty(), logged, "{level}: {out}");
        if logged {
            assert!(lines[0].contains("\"status\":200"), "{}", lines[0]);
        }
    }
}

/// `ludus check` loads the configuration and compiles every module without
/// running any, naming what is wrong; Nakama's `check` does the same.
#[test]
fn check_validates_configuration_and_modules_without_serving() {
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir(&modules).unwrap();
    // Running this module would fail; checking it must not.
    std::fs::write(modules.join("main.lua"), "error('ran at check')\n").unwrap();
    let path = modules.to_string_lossy();
    let out = ludus(&format!("check --runtime.path {path}"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 lua modules"), "{}", stdout(&out));

    std::fs::write(modules.join("broken.lua"), "local ok = 1\nlocal = 2\n").unwrap();
    let out = ludus(&format!("check --runtime.path {path}"));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("broken.lua:2:"), "{err}");
    assert!(err.contains("1 of 2 lua modules"), "{err}");

    let out = ludus(&format!("check --runtime.path {path} --socket.nope 1"));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("socket.nope"), "{}", stderr(&out));
}

/// `ludus healthcheck` exits 0 while a server answers and 1 when none does,
/// for container health checks.
#[test]
fn healthcheck_exit_code_follows_the_server() {
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let port = ludus_testkit::free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ludus"))
        .args(["--socket.port", &port.to_string(), "--logger.level", "warn"])
        .arg("--data_dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the ludus binary runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = ludus(&format!("healthcheck {port}"));
        if out.status.success() {
            assert!(stdout(&out).contains("ok"), "{}", stdout(&out));
            break;
        }
        assert!(Instant::now() < deadline, "never healthy: {}", stderr(&out));
        std::thread::sleep(Duration::from_millis(100));
    }
    // The port also comes from the configuration.
    assert!(
        ludus(&format!("healthcheck --socket.port {port}"))
            .status
            .success()
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let out = ludus(&format!("healthcheck {port}"));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("healthcheck failed"),
        "{}",
        stderr(&out)
    );
}

/// `logger.file` receives the log; with `logger.stdout: false` standard
/// output stays empty (Nakama's keys). Rotation has unit tests of its own.
#[test]
fn logs_go_to_the_file_and_not_to_stdout_when_asked() {
    use std::io::Read as _;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ludus.log");
    let port = ludus_testkit::free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ludus"))
        .args([
            "--socket.port",
            &port.to_string(),
            "--logger.format",
            "json",
        ])
        .args(["--logger.stdout", "false", "--logger.file"])
        .arg(&log)
        .arg("--data_dir")
        .arg(dir.path())
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the ludus binary runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ludus(&format!("healthcheck {port}")).status.success() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child.wait().unwrap();
    assert!(out.is_empty(), "stdout: {out}");
    let written = std::fs::read_to_string(&log).unwrap();
    assert!(written.contains("listening for clients"), "{written}");
    assert!(written.lines().all(|l| l.starts_with('{')), "{written}");

    // A file that cannot be opened stops start-up, naming it.
    let out = ludus(&format!(
        "--logger.file {}/no/such/dir/x.log --data_dir {}",
        dir.path().display(),
        dir.path().display()
    ));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("logger.file"), "{}", stderr(&out));
}
