//! The throwaway PostgreSQL cluster of one test process.
//!
//! Started on first use: `initdb` into a fresh temporary folder, then
//! `pg_ctl start` on a free 127.0.0.1 port with its socket in that folder and
//! durability off (fsync, full page writes): test data need not survive a
//! crash. `initdb` refuses to run as root, so under root both run as the
//! `postgres` user (through `runuser`, `setpriv` or `su`, whichever works).
//!
//! A watchdog shell, started before the server in a process group of its
//! own, polls this process with `kill -0`; once the process is gone it stops
//! the server (immediate shutdown) and deletes the folder. Nothing depends on
//! destructors, which statics never run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use crate::POSTGRES_URL_ENV;

pub(crate) struct Cluster {
    port: u16,
}

impl Cluster {
    pub(crate) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}", self.port)
    }
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The cluster of this process, started on first call.
pub(crate) fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(|| match start() {
        Ok(cluster) => cluster,
        Err(why) => panic!(
            "cannot start a PostgreSQL server for the tests: {why}. Install PostgreSQL \
             (Debian: apt-get install postgresql) or set {POSTGRES_URL_ENV} to a server URL \
             such as postgres://postgres@127.0.0.1:5432"
        ),
    })
}

/// Creates database `name` on the server at `server` with `psql`.
pub(crate) fn create_database(server: &str, name: &str) {
    let maintenance = if has_database(server) {
        server.to_owned()
    } else {
        crate::with_database(server, "postgres")
    };
    let psql = find_bindir().map_or_else(|_| PathBuf::from("psql"), |dir| dir.join("psql"));
    let psql = if psql.is_file() {
        psql
    } else {
        PathBuf::from("psql")
    };
    let output = Command::new(&psql)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &maintenance, "-c"])
        .arg(format!("CREATE DATABASE \"{name}\""))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {}: {e}. Install the PostgreSQL client (Debian: apt-get install postgresql-client)",
                psql.display()
            )
        });
    if !output.status.success() {
        panic!(
            "creating test database {name} on {} failed: {}",
            redact(server),
            text(&output)
        );
    }
}

fn has_database(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.split('?').next().unwrap_or(rest);
    rest.split_once('/').is_some_and(|(_, db)| !db.is_empty())
}

fn redact(url: &str) -> String {
    match (url.split_once("://"), url.rsplit_once('@')) {
        (Some((scheme, rest)), Some((_, host)))
            if rest.contains(':') && rest.find(':') < rest.find('@') =>
        {
            let user = rest.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}")
        }
        _ => url.to_owned(),
    }
}

fn text(output: &Output) -> String {
    let mut s = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    let out = String::from_utf8_lossy(&output.stdout);
    if !out.trim().is_empty() {
        s.push_str(" / ");
        s.push_str(out.trim());
    }
    s
}

fn start() -> Result<Cluster, String> {
    let bindir = find_bindir()?;
    let runner = Runner::detect()?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("ludus-pg-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    runner.give(&dir)?;
    spawn_watchdog(&dir)?;

    let data = dir.join("data");
    let data_arg = data.display().to_string();
    let initdb = runner
        .command(&bindir.join("initdb"), &dir)
        .args([
            "-D",
            &data_arg,
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ])
        .output()
        .map_err(|e| format!("cannot run initdb: {e}"))?;
    if !initdb.status.success() {
        return Err(format!("initdb failed: {}", text(&initdb)));
    }

    let log = dir.join("postgres.log");
    let mut last_error = String::new();
    // A port found free can be taken before the server binds it; try a few.
    for _ in 0..5 {
        let port = crate::free_port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=400",
            dir.display()
        );
        let started = runner
            .command(&bindir.join("pg_ctl"), &dir)
            .args([
                "-D",
                &data_arg,
                "-l",
                &log.display().to_string(),
                "-w",
                "-t",
                "60",
                "-o",
                &options,
                "start",
            ])
            .output()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))?;
        if started.status.success() {
            return Ok(Cluster { port });
        }
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        last_error = format!(
            "pg_ctl start failed: {}; server log: {}",
            text(&started),
            tail(&log_text)
        );
        if !log_text.contains("could not bind") && !log_text.contains("already in use") {
            break;
        }
    }
    Err(last_error)
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(10)..].join(" | ")
}

/// The folder with `initdb` and `pg_ctl`: `pg_config --bindir`, Debian's
/// versioned folders (newest first), then the usual places and `PATH`.
fn find_bindir() -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stdin(Stdio::null())
        .output()
        && out.status.success()
    {
        candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    if let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<(u32, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
            .collect();
        versions.sort_by_key(|v| std::cmp::Reverse(v.0));
        candidates.extend(versions.into_iter().map(|(_, bin)| bin));
    }
    candidates.push(PathBuf::from("/usr/local/pgsql/bin"));
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path));
    }
    candidates
        .into_iter()
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
        .ok_or_else(|| {
            "the PostgreSQL server programs initdb and pg_ctl were not found (looked at pg_config --bindir, \
             /usr/lib/postgresql/*/bin, /usr/local/pgsql/bin and PATH)"
                .to_owned()
        })
}

/// How server programs are run: directly, or as `postgres` when this process is root.
enum Runner {
    Direct,
    Runuser,
    Setpriv,
    Su,
}

impl Runner {
    fn detect() -> Result<Runner, String> {
        if id(&["-u"]).as_deref() != Some("0") {
            return Ok(Runner::Direct);
        }
        if id(&["-u", "postgres"]).is_none() {
            return Err(
                "the tests run as root, initdb refuses root, and there is no `postgres` user \
                        to run it as (the postgresql package creates one)"
                    .to_owned(),
            );
        }
        for runner in [Runner::Runuser, Runner::Setpriv, Runner::Su] {
            let works = runner
                .command(Path::new("true"), Path::new("/"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if works {
                return Ok(runner);
            }
        }
        Err("the tests run as root and none of runuser, setpriv or su can run a program as `postgres`".to_owned())
    }

    /// A command running `program` in `cwd` (readable by the user it runs as).
    fn command(&self, program: &Path, cwd: &Path) -> Command {
        let mut cmd = match self {
            Runner::Direct => Command::new(program),
            Runner::Runuser => {
                let mut cmd = Command::new("runuser");
                cmd.args(["-u", "postgres", "--"]).arg(program);
                cmd
            }
            Runner::Setpriv => {
                let mut cmd = Command::new("setpriv");
                cmd.args([
                    "--reuid=postgres",
                    "--regid=postgres",
                    "--init-groups",
                    "--",
                ])
                .arg(program);
                cmd
            }
            Runner::Su => {
                // su runs one shell line; "$0" and "$@" carry the program and its arguments unquoted.
                let mut cmd = Command::new("su");
                cmd.args(["postgres", "-s", "/bin/sh", "-c", "exec \"$0\" \"$@\""])
                    .arg(program);
                cmd
            }
        };
        cmd.current_dir(cwd).stdin(Stdio::null()).env("LC_ALL", "C");
        cmd
    }

    /// Hands the folder to the user the server runs as.
    fn give(&self, dir: &Path) -> Result<(), String> {
        if matches!(self, Runner::Direct) {
            return Ok(());
        }
        let uid = id(&["-u", "postgres"]).and_then(|s| s.parse().ok());
        let gid = id(&["-g", "postgres"]).and_then(|s| s.parse().ok());
        let (Some(uid), Some(gid)) = (uid, gid) else {
            return Err("cannot read the uid and gid of the `postgres` user".to_owned());
        };
        std::os::unix::fs::chown(dir, Some(uid), Some(gid))
            .map_err(|e| format!("cannot hand {} to the postgres user: {e}", dir.display()))
    }
}

/// `id ARGS`, trimmed, when it succeeds.
fn id(args: &[&str]) -> Option<String> {
    let out = Command::new("id")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Stops the server and removes `dir` once this process has exited.
fn spawn_watchdog(dir: &Path) -> Result<(), String> {
    use std::os::unix::process::CommandExt as _;
    const SCRIPT: &str = r#"
        trap '' INT TERM HUP
        while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
        pidfile="$2/data/postmaster.pid"
        if [ -f "$pidfile" ]; then
            pid=$(head -n 1 "$pidfile")
            kill -QUIT "$pid" 2>/dev/null
            i=0
            while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
            kill -KILL "$pid" 2>/dev/null
        fi
        rm -rf "$2"
    "#;
    Command::new("sh")
        .args(["-c", SCRIPT, "ludus-pg-watchdog"])
        .arg(std::process::id().to_string())
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Out of the test's process group, so a Ctrl-C still lets it clean up.
        .process_group(0)
        .spawn()
        .map(drop)
        .map_err(|e| format!("cannot start the watchdog shell: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_urls_with_a_database() {
        assert!(has_database("postgres://u@h:1/db"));
        assert!(has_database("postgres://u@h:1/db?x=y"));
        assert!(!has_database("postgres://u@h:1"));
        assert!(!has_database("postgres://u@h:1/"));
        assert!(!has_database("postgres://u@h:1?x=y"));
    }

    #[test]
    fn passwords_are_not_printed() {
        assert_eq!(
            redact("postgres://u:secret@h:1/db"),
            "postgres://u:***@h:1/db"
        );
        assert_eq!(redact("postgres://u@h:1"), "postgres://u@h:1");
    }
}
