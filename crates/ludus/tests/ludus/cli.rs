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
