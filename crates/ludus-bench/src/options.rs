//! Command-line options of `ludus bench`, with the defaults of the published
//! workloads.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error(
        "usage: ludus bench <register|login|rpc|ccu|echo|fanout|match|storage|wallet> [flags]; see `ludus bench --help`"
    )]
    NoWorkload,
    #[error(
        "unknown workload `{0}`: use register, login, rpc, ccu, echo, fanout, match, storage or wallet"
    )]
    UnknownWorkload(String),
    #[error("unknown flag `{0}`; see `ludus bench --help`")]
    UnknownFlag(String),
    #[error("flag `{0}` needs a value")]
    MissingValue(String),
    #[error("flag `{flag}`: {message}")]
    BadValue { flag: String, message: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Register,
    Login,
    Rpc,
    Ccu,
    Echo,
    Fanout,
    Match,
    Storage,
    Wallet,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Register => "register",
            Workload::Login => "login",
            Workload::Rpc => "rpc",
            Workload::Ccu => "ccu",
            Workload::Echo => "echo",
            Workload::Fanout => "fanout",
            Workload::Match => "match",
            Workload::Storage => "storage",
            Workload::Wallet => "wallet",
        }
    }
}

/// The realtime socket's wire format (`/ws?format=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Protobuf,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Protobuf => "protobuf",
        }
    }
}

/// Sockets per loopback source address when `--sources` is not given.
pub const SOCKETS_PER_SOURCE: usize = 10_000;

pub const HELP: &str = "\
usage: ludus bench WORKLOAD [flags]

workloads:
  register   new device sign-ups (POST /v2/account/authenticate/device)
  login      sign-ins of devices registered before the clock starts
  rpc        RPC calls with a JSON payload (--rpc-id, default echo)
  ccu        open and hold --concurrency sockets, ramping at --rate per second
  echo       socket round trips: ping/pong by cid, or --rpc ID with a timestamp
  fanout     --concurrency subscribers in --rooms chat rooms; --publishers send
             channel_message_send at --rate messages/s in total
  match      authoritative matches: find-or-create RPC (--match-rpc), join, then
             every --interval-ms alternate op 1 (echo, 44 chars) and op 2
             (broadcast, 35 chars); needs bench/modules on the server
  storage    storage objects: each user in turn writes its own object (public
             read), reads it back, and lists 10 objects of the shared
             collection (PUT/POST/GET /v2/storage)
  wallet     RPC ludus_bench_wallet: adds 1 to the caller's wallet with a
             ledger entry; needs bench/modules on the server

flags:
  --target URL         server base URL (http://127.0.0.1:7350)
  --server-key KEY     server key for sign-in (defaultkey)
  --concurrency N      virtual users, each with its own connection (64)
  --duration SECS      measured duration; the run stops by itself (30)
  --ramp SECS          start users evenly over this many seconds (0)
  --timeout-ms MS      per-request timeout (10000)
  --users N            devices registered before a login run (10000)
  --rpc-id ID          RPC function name (echo)
  --rpc ID             echo workload: call this socket RPC instead of ping
  --rate N             ccu: sockets opened per second; fanout: messages/s (100)
  --rooms N            fanout: chat rooms (10)
  --publishers N       fanout: sockets that publish, one room each in turn (rooms)
  --in-flight N        echo: round trips in flight per socket (1)
  --interval-ms MS     match: time between a player's messages (500)
  --match-rpc ID       match: the find-or-create RPC (ludus_bench_find_match)
  --tick-floor-ms MS   match: also report echo latency above this floor (100)
  --format F           socket message format: json or protobuf (json)
  --payload-size N     RPC payload size in bytes (40)
  --sources N|IP,IP    source addresses: N uses 127.0.0.1..127.0.0.N (1, or
                       one per 10,000 sockets on a loopback target)
  --threads N          worker threads of the load generator (1)
  --json FILE          write the full result as JSON
  --svg FILE           draw rate, latency and users over time
  --quiet              no progress line
";

#[derive(Debug, Clone)]
pub struct Options {
    pub workload: Workload,
    pub target: SocketAddr,
    pub target_text: String,
    pub server_key: String,
    pub concurrency: usize,
    pub duration: Duration,
    pub ramp: Duration,
    pub timeout: Duration,
    pub users: usize,
    pub rpc_id: String,
    pub payload_size: usize,
    pub sources: Vec<IpAddr>,
    /// Whether `--sources` was given (otherwise socket runs add loopback
    /// addresses as they need them).
    pub sources_given: bool,
    /// Sockets per second (ccu) or messages per second (fanout).
    pub rate: f64,
    pub rooms: usize,
    pub publishers: usize,
    pub in_flight: usize,
    pub interval: Duration,
    pub match_rpc: String,
    /// The echo workload calls this socket RPC instead of sending pings.
    pub echo_rpc: Option<String>,
    pub tick_floor: Duration,
    pub format: Format,
    pub threads: usize,
    pub json: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub quiet: bool,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, OptionsError> {
        let mut it = args.iter();
        let workload = match it.next().map(String::as_str) {
            None => return Err(OptionsError::NoWorkload),
            Some("register") => Workload::Register,
            Some("login") => Workload::Login,
            Some("rpc") => Workload::Rpc,
            Some("ccu") => Workload::Ccu,
            Some("echo") => Workload::Echo,
            Some("fanout") => Workload::Fanout,
            Some("match") => Workload::Match,
            Some("storage") => Workload::Storage,
            Some("wallet") => Workload::Wallet,
            Some(other) => return Err(OptionsError::UnknownWorkload(other.to_owned())),
        };
        let mut o = Options {
            workload,
            target: SocketAddr::from((Ipv4Addr::LOCALHOST, 7350)),
            target_text: "http://127.0.0.1:7350".into(),
            server_key: "defaultkey".into(),
            concurrency: 64,
            duration: Duration::from_secs(30),
            ramp: Duration::ZERO,
            timeout: Duration::from_secs(10),
            users: 10_000,
            rpc_id: "echo".into(),
            payload_size: 40,
            sources: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            sources_given: false,
            rate: 100.0,
            rooms: 10,
            publishers: 0,
            in_flight: 1,
            interval: Duration::from_millis(500),
            match_rpc: "ludus_bench_find_match".into(),
            echo_rpc: None,
            tick_floor: Duration::from_millis(100),
            format: Format::Json,
            threads: 1,
            json: None,
            svg: None,
            quiet: false,
        };
        while let Some(flag) = it.next() {
            if flag == "--quiet" {
                o.quiet = true;
                continue;
            }
            let (name, value) = match flag.split_once('=') {
                Some((n, v)) => (n.to_owned(), v.to_owned()),
                None => {
                    let v = it
                        .next()
                        .ok_or_else(|| OptionsError::MissingValue(flag.clone()))?;
                    (flag.clone(), v.clone())
                }
            };
            let bad = |message: &str| OptionsError::BadValue {
                flag: name.clone(),
                message: message.into(),
            };
            let num = |v: &str| v.parse::<u64>().map_err(|_| bad("must be a whole number"));
            match name.as_str() {
                "--target" => {
                    o.target = parse_target(&value).map_err(|m| bad(&m))?;
                    o.target_text = value;
                }
                "--server-key" => o.server_key = value,
                "--concurrency" => o.concurrency = num(&value)?.max(1) as usize,
                "--duration" => o.duration = Duration::from_secs(num(&value)?.max(1)),
                "--ramp" => o.ramp = Duration::from_secs(num(&value)?),
                "--timeout-ms" => o.timeout = Duration::from_millis(num(&value)?.max(1)),
                "--users" => o.users = num(&value)?.max(1) as usize,
                "--rpc-id" => o.rpc_id = value,
                "--payload-size" => o.payload_size = num(&value)? as usize,
                "--threads" => o.threads = num(&value)?.clamp(1, 64) as usize,
                "--sources" => {
                    o.sources = parse_sources(&value).map_err(|m| bad(&m))?;
                    o.sources_given = true;
                }
                "--rpc" => o.echo_rpc = Some(value),
                "--rate" => {
                    o.rate = value
                        .parse::<f64>()
                        .ok()
                        .filter(|r| r.is_finite() && *r > 0.0)
                        .ok_or_else(|| bad("must be a positive number"))?
                }
                "--rooms" => o.rooms = num(&value)?.max(1) as usize,
                "--publishers" => o.publishers = num(&value)?.max(1) as usize,
                "--in-flight" => o.in_flight = num(&value)?.clamp(1, 4096) as usize,
                "--interval-ms" => o.interval = Duration::from_millis(num(&value)?.max(1)),
                "--match-rpc" => o.match_rpc = value,
                "--tick-floor-ms" => o.tick_floor = Duration::from_millis(num(&value)?),
                "--format" => {
                    o.format = match value.as_str() {
                        "json" => Format::Json,
                        "protobuf" => Format::Protobuf,
                        _ => return Err(bad("must be json or protobuf")),
                    }
                }
                "--json" => o.json = Some(value.into()),
                "--svg" => o.svg = Some(value.into()),
                _ => return Err(OptionsError::UnknownFlag(name)),
            }
        }
        if o.publishers == 0 {
            o.publishers = o.rooms;
        }
        if !o.sources_given && o.target.ip().is_loopback() && o.target.is_ipv4() {
            // One source address has about 28,000 ephemeral ports towards one
            // target, and Linux hands out one parity first: past about
            // 14,000 sockets every connect scans the port range in the
            // kernel (measured: half the tool's time, and the ramp stalls).
            // Spread large socket runs over 127.0.0.x, 10,000 a piece.
            let needed = o.concurrency.div_ceil(SOCKETS_PER_SOURCE).clamp(1, 250);
            o.sources = (1..=needed as u8)
                .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
                .collect();
        }
        Ok(o)
    }

    /// Whether the workload drives the realtime socket.
    pub fn is_socket_workload(&self) -> bool {
        matches!(
            self.workload,
            Workload::Ccu | Workload::Echo | Workload::Fanout | Workload::Match
        )
    }
}

fn parse_target(url: &str) -> Result<SocketAddr, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| "must start with http:// (TLS is not supported)".to_string())?;
    let hostport = rest.split('/').next().unwrap_or("");
    let hostport = if hostport.contains(':') {
        hostport.to_owned()
    } else {
        format!("{hostport}:80")
    };
    hostport
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {hostport}: {e}"))?
        .next()
        .ok_or_else(|| format!("{hostport} resolves to no address"))
}

fn parse_sources(v: &str) -> Result<Vec<IpAddr>, String> {
    if let Ok(n) = v.parse::<u8>() {
        if n == 0 {
            return Err("needs at least one address".into());
        }
        return Ok((1..=n)
            .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
            .collect());
    }
    v.split(',')
        .map(|s| {
            s.trim()
                .parse::<IpAddr>()
                .map_err(|_| format!("`{s}` is not an IP address"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn defaults_and_flags() {
        let o = Options::parse(&args("register")).unwrap();
        assert_eq!(o.workload, Workload::Register);
        assert_eq!(o.concurrency, 64);
        assert_eq!(o.target.port(), 7350);
        let o = Options::parse(&args(
            "rpc --target http://127.0.0.1:9000 --concurrency=8 --rpc-id ping --sources 3",
        ))
        .unwrap();
        assert_eq!(o.target.port(), 9000);
        assert_eq!(o.concurrency, 8);
        assert_eq!(o.rpc_id, "ping");
        assert_eq!(o.sources.len(), 3);
        assert_eq!(o.sources[2], "127.0.0.3".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(matches!(Options::parse(&[]), Err(OptionsError::NoWorkload)));
        assert!(matches!(
            Options::parse(&args("fly")),
            Err(OptionsError::UnknownWorkload(_))
        ));
        assert!(matches!(
            Options::parse(&args("login --bogus 1")),
            Err(OptionsError::UnknownFlag(_))
        ));
        assert!(matches!(
            Options::parse(&args("login --duration")),
            Err(OptionsError::MissingValue(_))
        ));
        let e = Options::parse(&args("login --target https://x")).unwrap_err();
        assert!(e.to_string().contains("http://"), "{e}");
        assert!(Options::parse(&args("login --concurrency many")).is_err());
        let e = Options::parse(&args("echo --format xml")).unwrap_err();
        assert!(e.to_string().contains("json or protobuf"), "{e}");
        let o = Options::parse(&args("echo --format protobuf")).unwrap();
        assert_eq!(o.format, Format::Protobuf);
        assert!(Options::parse(&args("ccu --rate 0")).is_err());
    }

    #[test]
    fn socket_flags_and_automatic_sources() {
        let o = Options::parse(&args(
            "fanout --rooms 4 --rate 250.5 --concurrency 25000 --tick-floor-ms 50",
        ))
        .unwrap();
        assert_eq!(o.rooms, 4);
        assert_eq!(o.publishers, 4, "one publisher per room by default");
        assert_eq!(o.rate, 250.5);
        assert_eq!(o.tick_floor, Duration::from_millis(50));
        assert_eq!(o.sources.len(), 3, "25,000 sockets need three addresses");
        let o = Options::parse(&args("echo --rpc ludus_bench_echo --sources 1")).unwrap();
        assert_eq!(o.echo_rpc.as_deref(), Some("ludus_bench_echo"));
        assert_eq!(o.sources.len(), 1);
    }
}
