//! Command-line options of `ludus bench`, with the defaults of the published
//! workloads: one clap subcommand per workload, all sharing one set of
//! flags. Durations take units (`30s`, `2m`, `250ms`; a bare number is the
//! flag's own unit), and a value out of range is refused with a message,
//! never clamped.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum, value_parser};

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
    Leaderboard,
    Social,
}

/// What the `social` workload measures (`--op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SocialOp {
    /// The hub user's whole friend list
    Friends,
    /// Pages of the big group's members
    Members,
    /// Prefix searches over the groups
    Search,
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
            Workload::Social => "social",
            Workload::Leaderboard => "leaderboard",
        }
    }
}

/// The server's realtime protocol (`--protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Protocol {
    /// Nakama's (`/ws`), which Ludus speaks
    Nakama,
    /// Centrifugo's client protocol (JSON over `/connection/websocket`,
    /// anonymous connections): fanout only
    Centrifugo,
}

/// The realtime socket's wire format (`/ws?format=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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

/// What each request of the `leaderboard` workload does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LeaderboardOp {
    /// POST /v2/leaderboard/{id} with a random score
    Write,
    /// GET /v2/leaderboard/{id}?limit=100
    Top,
    /// GET /v2/leaderboard/{id}/owner/{own id}?limit=100, after one write
    Around,
}

impl LeaderboardOp {
    pub fn name(self) -> &'static str {
        match self {
            LeaderboardOp::Write => "write",
            LeaderboardOp::Top => "top",
            LeaderboardOp::Around => "around",
        }
    }
}

/// What each request of the `storage` workload does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StorageOp {
    /// Write, read back and list, in turn
    Mixed,
    /// PUT /v2/storage: the user's own object, a new value each time
    Write,
    /// POST /v2/storage: the user's own object, after one write
    Read,
    /// GET /v2/storage/ludus_bench?limit=10, after one write
    List,
}

/// Sockets per loopback source address when `--sources` is not given.
pub const SOCKETS_PER_SOURCE: usize = 10_000;

/// `ludus bench WORKLOAD [flags]`.
#[derive(Debug, Parser)]
#[command(
    name = "ludus bench",
    about = "Load-test a Nakama-compatible server with Nakama's published workloads",
    disable_version_flag = true,
    disable_help_subcommand = true,
    subcommand_value_name = "WORKLOAD",
    subcommand_help_heading = "Workloads",
    after_help = "Every workload takes the same flags (`ludus bench WORKLOAD --help`). \
        Several servers (the nodes of a cluster, on one database): repeat --target, \
        or give a comma list; virtual user i talks to target i mod N."
)]
struct Cli {
    #[command(subcommand)]
    workload: WorkloadCommand,
}

#[derive(Debug, Subcommand)]
enum WorkloadCommand {
    /// New device sign-ups (POST /v2/account/authenticate/device)
    Register(Flags),
    /// Sign-ins of devices registered before the clock starts
    Login(Flags),
    /// RPC calls with a JSON payload (--rpc-id, default echo)
    Rpc(Flags),
    /// Open and hold --concurrency sockets, ramping at --rate per second
    Ccu(Flags),
    /// Socket round trips: ping/pong by cid, or --rpc ID with a timestamp
    Echo(Flags),
    /// --concurrency subscribers in --rooms chat rooms; --publishers send
    /// channel_message_send at --rate messages/s in total
    Fanout(Flags),
    /// Authoritative matches: find-or-create RPC (--match-rpc), join, then
    /// every --interval-ms alternate op 1 (echo) and op 2 (broadcast);
    /// needs bench/modules on the server
    Match(Flags),
    /// Storage objects: each user in turn writes its own object (public
    /// read), reads it back, and lists 10 objects of the shared collection
    /// (PUT/POST/GET /v2/storage); --storage-op write, read or list runs
    /// one of the three alone
    Storage(Flags),
    /// RPC ludus_bench_wallet: adds 1 to the caller's wallet with a ledger
    /// entry; needs bench/modules on the server
    Wallet(Flags),
    /// Social graph reads (--op friends|members|search) over data seeded
    /// once per --tag: --friends friends, a group of --members, --groups
    /// groups
    Social(Flags),
    /// Leaderboard records (--leaderboard-op): writes of random scores by
    /// every user, reads of the top 100, or of the 100 records around the
    /// user's own; the board (--leaderboard-id) must exist (bench/modules
    /// creates ludus_bench)
    Leaderboard(Flags),
}

/// The flags every workload takes.
#[derive(Debug, Args)]
struct Flags {
    /// Server base URL. Repeat it (or give a comma list) to spread the
    /// virtual users over several servers, such as the nodes of a cluster:
    /// user i talks to target i mod N, sign-in and socket alike
    #[arg(long = "target", default_value = "http://127.0.0.1:7350", value_parser = parse_target,
          value_delimiter = ',', action = ArgAction::Append)]
    targets: Vec<Target>,
    /// Server key for sign-in
    #[arg(long, default_value = "defaultkey")]
    server_key: String,
    /// Virtual users, each with its own connection
    #[arg(long, default_value_t = 64, value_parser = value_parser!(u64).range(1..=1_000_000))]
    concurrency: u64,
    /// Measured duration (30s, 2m; a bare number is seconds); the run stops by itself
    #[arg(long, default_value = "30s", value_parser = positive_seconds)]
    duration: Duration,
    /// Start users evenly over this long (a bare number is seconds)
    #[arg(long, default_value = "0s", value_parser = seconds)]
    ramp: Duration,
    /// Per-request timeout (a bare number is milliseconds)
    #[arg(long = "timeout-ms", default_value = "10000", value_parser = positive_millis)]
    timeout: Duration,
    /// Devices registered before a login run
    #[arg(long, default_value_t = 10_000, value_parser = value_parser!(u64).range(1..=10_000_000))]
    users: u64,
    /// RPC function name
    #[arg(long, default_value = "echo")]
    rpc_id: String,
    /// Echo workload: call this socket RPC instead of ping
    #[arg(long = "rpc")]
    echo_rpc: Option<String>,
    /// ccu: sockets opened per second; fanout: messages per second
    #[arg(long, default_value = "100", value_parser = positive_rate)]
    rate: f64,
    /// fanout: chat rooms
    #[arg(long, default_value_t = 10, value_parser = value_parser!(u64).range(1..=100_000))]
    rooms: u64,
    /// fanout: sockets that publish, one room each in turn (default: one per room)
    #[arg(long, value_parser = value_parser!(u64).range(1..=1_000_000))]
    publishers: Option<u64>,
    /// echo: round trips in flight per socket
    #[arg(long, default_value_t = 1, value_parser = value_parser!(u64).range(1..=4096))]
    in_flight: u64,
    /// match: time between a player's messages (a bare number is milliseconds)
    #[arg(long = "interval-ms", default_value = "500", value_parser = positive_millis)]
    interval: Duration,
    /// match: the find-or-create RPC
    #[arg(long, default_value = "ludus_bench_find_match")]
    match_rpc: String,
    /// match: also report echo latency above this floor (a bare number is milliseconds)
    #[arg(long = "tick-floor-ms", default_value = "100", value_parser = millis)]
    tick_floor: Duration,
    /// storage: what each request does
    #[arg(long, value_enum, default_value_t = StorageOp::Mixed)]
    storage_op: StorageOp,
    /// leaderboard: what each request does
    #[arg(long, value_enum, default_value_t = LeaderboardOp::Write)]
    leaderboard_op: LeaderboardOp,
    /// leaderboard: the board's id
    #[arg(long, default_value = "ludus_bench")]
    leaderboard_id: String,
    /// leaderboard: scores are drawn uniformly from 0 to this
    #[arg(long, default_value_t = 1_000_000, value_parser = value_parser!(u64).range(1..=1_000_000_000_000))]
    score_max: u64,
    /// Socket message format
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
    /// fanout: the server's realtime protocol, to measure another server
    /// beside Ludus with the same client
    #[arg(long, value_enum, default_value_t = Protocol::Nakama)]
    protocol: Protocol,
    /// Sockets connect with `status=true` (appear online: one status
    /// presence per user, which every node of a cluster keeps)
    #[arg(long)]
    status: bool,
    /// RPC payload size in bytes
    #[arg(long, default_value_t = 40, value_parser = value_parser!(u64).range(0..=1_048_576))]
    payload_size: u64,
    /// Source addresses: N uses 127.0.0.1..127.0.0.N, or a list IP,IP (default
    /// one, or one per 10,000 sockets on a loopback target)
    #[arg(long, value_parser = parse_sources)]
    sources: Option<Sources>,
    /// social: what the measured requests read
    #[arg(long, value_enum, default_value_t = SocialOp::Friends)]
    op: SocialOp,
    /// social: names the seeded data; a run with the tag of an earlier one
    /// reuses its data (default: a new tag per run)
    #[arg(long)]
    tag: Option<String>,
    /// social: mutual friends of the hub user
    #[arg(long, default_value_t = 1_000, value_parser = value_parser!(u64).range(0..=100_000))]
    friends: u64,
    /// social: members of the big group
    #[arg(long, default_value_t = 10_000, value_parser = value_parser!(u64).range(1..=1_000_000))]
    members: u64,
    /// social: groups to search over
    #[arg(long, default_value_t = 100_000, value_parser = value_parser!(u64).range(0..=10_000_000))]
    groups: u64,
    /// Worker threads of the load generator
    #[arg(long, default_value_t = 1, value_parser = value_parser!(u64).range(1..=64))]
    threads: u64,
    /// Run as this many processes (ccu, echo, match, rpc), each with its
    /// share of --concurrency and of --sources, one result merged from all:
    /// one process holds only as many sockets as its open-files limit
    #[arg(long, default_value_t = 1, value_parser = value_parser!(u64).range(1..=64))]
    processes: u64,
    /// Internal: a process of a --processes run writes what it measured here
    #[arg(long, hide = true)]
    recorder_out: Option<PathBuf>,
    /// Write the full result as JSON to this file
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw rate, latency and users over time to this SVG file
    #[arg(long)]
    svg: Option<PathBuf>,
    /// No progress line
    #[arg(long)]
    quiet: bool,
}

/// A `--target` URL and the address it resolves to.
#[derive(Debug, Clone)]
struct Target {
    addr: SocketAddr,
    text: String,
}

/// `--sources`, resolved.
#[derive(Debug, Clone)]
struct Sources(Vec<IpAddr>);

#[derive(Debug, Clone)]
pub struct Options {
    pub workload: Workload,
    /// The servers, in `--target` order; virtual users take them in turn
    /// (`Options::target`).
    pub targets: Vec<SocketAddr>,
    /// The `--target` URLs as given, comma-separated, for the report.
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
    pub protocol: Protocol,
    /// Sockets appear online (`/ws?status=true`).
    pub status: bool,
    pub storage_op: StorageOp,
    pub leaderboard_op: LeaderboardOp,
    pub leaderboard_id: String,
    pub score_max: u64,
    pub threads: usize,
    /// `--processes`: how many processes run the workload together.
    pub processes: usize,
    /// Where a process of a `--processes` run writes its measurements.
    pub recorder_out: Option<PathBuf>,
    pub social_op: SocialOp,
    /// Names seeded data; a fresh one per run unless `--tag` is given.
    pub tag: String,
    pub friends: usize,
    pub members: usize,
    pub groups: usize,
    /// The `social` workload's seeded data, once seeded.
    pub social: Option<Seeded>,
    pub json: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub quiet: bool,
}

impl Options {
    /// Parses `WORKLOAD [flags]` (the words after `ludus bench`). A request
    /// for help, or a mistake, is a `clap::Error` that prints itself.
    pub fn parse(args: &[String]) -> Result<Options, clap::Error> {
        let cli = Cli::try_parse_from(
            std::iter::once("ludus bench").chain(args.iter().map(String::as_str)),
        )?;
        let (workload, f) = match cli.workload {
            WorkloadCommand::Register(f) => (Workload::Register, f),
            WorkloadCommand::Login(f) => (Workload::Login, f),
            WorkloadCommand::Rpc(f) => (Workload::Rpc, f),
            WorkloadCommand::Ccu(f) => (Workload::Ccu, f),
            WorkloadCommand::Echo(f) => (Workload::Echo, f),
            WorkloadCommand::Fanout(f) => (Workload::Fanout, f),
            WorkloadCommand::Match(f) => (Workload::Match, f),
            WorkloadCommand::Storage(f) => (Workload::Storage, f),
            WorkloadCommand::Wallet(f) => (Workload::Wallet, f),
            WorkloadCommand::Social(f) => (Workload::Social, f),
            WorkloadCommand::Leaderboard(f) => (Workload::Leaderboard, f),
        };
        if f.protocol == Protocol::Centrifugo && workload != Workload::Fanout {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                "--protocol centrifugo is for the fanout workload only\n",
            ));
        }
        let concurrency = f.concurrency as usize;
        let sources_given = f.sources.is_some();
        let loopback = f
            .targets
            .iter()
            .all(|t| t.addr.ip().is_loopback() && t.addr.is_ipv4());
        let sources = match f.sources {
            Some(Sources(list)) => list,
            None if loopback => {
                // One source address has about 28,000 ephemeral ports towards
                // one target, and Linux hands out one parity first: past
                // about 14,000 sockets every connect scans the port range in
                // the kernel (measured: half the tool's time, and the ramp
                // stalls). Spread large socket runs over 127.0.0.x, 10,000 a
                // piece.
                let needed = concurrency.div_ceil(SOCKETS_PER_SOURCE).clamp(1, 250);
                (1..=needed as u8)
                    .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
                    .collect()
            }
            None => vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        };
        let target_text = f
            .targets
            .iter()
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join(",");
        Ok(Options {
            workload,
            targets: f.targets.iter().map(|t| t.addr).collect(),
            target_text,
            server_key: f.server_key,
            concurrency,
            duration: f.duration,
            ramp: f.ramp,
            timeout: f.timeout,
            users: f.users as usize,
            rpc_id: f.rpc_id,
            payload_size: f.payload_size as usize,
            sources,
            sources_given,
            rate: f.rate,
            rooms: f.rooms as usize,
            publishers: f.publishers.unwrap_or(f.rooms) as usize,
            in_flight: f.in_flight as usize,
            interval: f.interval,
            match_rpc: f.match_rpc,
            echo_rpc: f.echo_rpc,
            tick_floor: f.tick_floor,
            format: f.format,
            protocol: f.protocol,
            status: f.status,
            storage_op: f.storage_op,
            leaderboard_op: f.leaderboard_op,
            leaderboard_id: f.leaderboard_id,
            score_max: f.score_max,
            threads: f.threads as usize,
            processes: f.processes as usize,
            recorder_out: f.recorder_out,
            social_op: f.op,
            tag: f.tag.unwrap_or_else(run_tag),
            friends: f.friends as usize,
            members: f.members as usize,
            groups: f.groups as usize,
            social: None,
            json: f.json,
            svg: f.svg,
            quiet: f.quiet,
        })
    }

    /// The server virtual user `i` talks to: the targets in turn, so users
    /// 0, N, 2N… go to the first of N targets, 1, N+1… to the second.
    pub fn target(&self, i: usize) -> SocketAddr {
        self.targets[i % self.targets.len()]
    }

    /// The source address of virtual user `i`. Users are counted per target
    /// (`i / N`), so every target sees every source address: with three
    /// targets and three addresses, target and address taken both as
    /// `i mod 3` would tie each address to one target.
    pub fn source(&self, i: usize) -> IpAddr {
        self.sources[(i / self.targets.len()) % self.sources.len()]
    }

    /// Whether the workload drives the realtime socket.
    pub fn is_socket_workload(&self) -> bool {
        matches!(
            self.workload,
            Workload::Ccu | Workload::Echo | Workload::Fanout | Workload::Match
        )
    }
}

/// A duration with an optional unit (`ms`, `s`, `m`, `h`); a bare number
/// counts in `bare`.
fn duration(text: &str, bare: Duration) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u32 = number.parse().map_err(|_| {
        format!(
            "`{text}` is not a duration: write a whole number with a unit, such as 30s, 2m or 250ms"
        )
    })?;
    let unit = match unit {
        "" => bare,
        "ms" => Duration::from_millis(1),
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        other => return Err(format!("unknown unit `{other}`: use ms, s, m or h")),
    };
    unit.checked_mul(n)
        .filter(|d| *d <= Duration::from_secs(7 * 24 * 3600))
        .ok_or_else(|| format!("`{text}` is too long: at most a week"))
}

fn positive(d: Duration, text: &str) -> Result<Duration, String> {
    if d.is_zero() {
        Err(format!("`{text}` must be more than zero"))
    } else {
        Ok(d)
    }
}

fn seconds(text: &str) -> Result<Duration, String> {
    duration(text, Duration::from_secs(1))
}

fn positive_seconds(text: &str) -> Result<Duration, String> {
    positive(seconds(text)?, text)
}

fn millis(text: &str) -> Result<Duration, String> {
    duration(text, Duration::from_millis(1))
}

fn positive_millis(text: &str) -> Result<Duration, String> {
    positive(millis(text)?, text)
}

fn positive_rate(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r > 0.0)
        .ok_or_else(|| format!("`{text}` must be a positive number"))
}

fn parse_target(url: &str) -> Result<Target, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| "must start with http:// (TLS is not supported)".to_string())?;
    let hostport = rest.split('/').next().unwrap_or("");
    let hostport = if hostport.contains(':') {
        hostport.to_owned()
    } else {
        format!("{hostport}:80")
    };
    let addr = hostport
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {hostport}: {e}"))?
        .next()
        .ok_or_else(|| format!("{hostport} resolves to no address"))?;
    Ok(Target {
        addr,
        text: url.to_owned(),
    })
}

fn parse_sources(v: &str) -> Result<Sources, String> {
    if let Ok(n) = v.parse::<u8>() {
        if n == 0 {
            return Err("needs at least one address".into());
        }
        return Ok(Sources(
            (1..=n)
                .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
                .collect(),
        ));
    }
    v.split(',')
        .map(|s| {
            s.trim()
                .parse::<IpAddr>()
                .map_err(|_| format!("`{s}` is not an IP address"))
        })
        .collect::<Result<_, _>>()
        .map(Sources)
}

/// Tells a run apart from earlier runs against the same database.
pub fn run_tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}", nanos & 0xffff_ffff_ffff)
}

/// What the measured requests need from the seeding.
#[derive(Debug, Clone)]
pub struct Seeded {
    /// `Bearer <token>` of the hub user.
    pub hub: String,
    pub group_id: String,
    /// Group names start with this, then `g<i>`.
    pub prefix: String,
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn error(s: &str) -> clap::Error {
        Options::parse(&args(s)).unwrap_err()
    }

    #[test]
    fn defaults_and_flags() {
        let o = Options::parse(&args("register")).unwrap();
        assert_eq!(o.workload, Workload::Register);
        assert_eq!(o.concurrency, 64);
        assert_eq!(o.target(0).port(), 7350);
        assert_eq!(o.duration, Duration::from_secs(30));
        let o = Options::parse(&args(
            "rpc --target http://127.0.0.1:9000 --concurrency=8 --rpc-id ping --sources 3",
        ))
        .unwrap();
        assert_eq!(o.target(0).port(), 9000);
        assert_eq!(o.concurrency, 8);
        assert_eq!(o.rpc_id, "ping");
        assert_eq!(o.sources.len(), 3);
        assert_eq!(o.sources[2], "127.0.0.3".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn leaderboard_flags() {
        let o = Options::parse(&args("leaderboard")).unwrap();
        assert_eq!(o.workload, Workload::Leaderboard);
        assert_eq!(o.leaderboard_op, LeaderboardOp::Write);
        assert_eq!(o.leaderboard_id, "ludus_bench");
        assert_eq!(o.score_max, 1_000_000);
        let o = Options::parse(&args(
            "leaderboard --leaderboard-op around --leaderboard-id weekly --score-max 10",
        ))
        .unwrap();
        assert_eq!(o.leaderboard_op, LeaderboardOp::Around);
        assert_eq!(o.leaderboard_id, "weekly");
        assert_eq!(o.score_max, 10);
        assert!(Options::parse(&args("leaderboard --leaderboard-op sideways")).is_err());
        assert!(Options::parse(&args("leaderboard --score-max 0")).is_err());
    }

    #[test]
    fn storage_flags() {
        let o = Options::parse(&args("storage")).unwrap();
        assert_eq!(o.storage_op, StorageOp::Mixed);
        let o = Options::parse(&args("storage --storage-op write")).unwrap();
        assert_eq!(o.storage_op, StorageOp::Write);
        assert!(Options::parse(&args("storage --storage-op erase")).is_err());
    }

    #[test]
    fn durations_take_units() {
        let o = Options::parse(&args(
            "match --duration 2m --ramp 1500ms --timeout-ms 3s --interval-ms 250",
        ))
        .unwrap();
        assert_eq!(o.duration, Duration::from_secs(120));
        assert_eq!(o.ramp, Duration::from_millis(1500));
        assert_eq!(o.timeout, Duration::from_secs(3));
        assert_eq!(o.interval, Duration::from_millis(250));
        let o = Options::parse(&args("login --duration 45")).unwrap();
        assert_eq!(
            o.duration,
            Duration::from_secs(45),
            "bare numbers are seconds"
        );
        assert!(
            error("login --duration 5y")
                .to_string()
                .contains("unknown unit")
        );
        assert!(error("login --duration soon").to_string().contains("30s"));
    }

    /// Regression: values out of range were clamped silently (`--threads
    /// 100` ran with 64, `--concurrency 0` with 1).
    #[test]
    fn out_of_range_values_are_refused() {
        for bad in [
            "login --threads 100",
            "login --threads 0",
            "login --concurrency 0",
            "echo --in-flight 5000",
            "login --duration 0s",
            "login --timeout-ms 0",
            "fanout --rooms 0",
            "ccu --rate 0",
            "login --duration 30d",
        ] {
            let e = error(bad);
            assert_eq!(e.kind(), ErrorKind::ValueValidation, "{bad}: {e}");
        }
    }

    #[test]
    fn help_is_an_answer_not_an_error() {
        for asked in ["--help", "echo --help", "match -h"] {
            let e = error(asked);
            assert_eq!(e.kind(), ErrorKind::DisplayHelp, "{asked}");
            assert!(!e.use_stderr());
        }
        let help = error("echo --help").to_string();
        assert!(help.contains("--in-flight"), "{help}");
        let help = error("--help").to_string();
        assert!(help.contains("fanout"), "{help}");
        assert!(help.contains("repeat --target"), "{help}");
        let help = error("ccu --help").to_string();
        assert!(help.contains("target i mod N"), "{help}");
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            Options::parse(&[]).unwrap_err().kind(),
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
        assert_eq!(error("fly").kind(), ErrorKind::InvalidSubcommand);
        assert_eq!(error("login --bogus 1").kind(), ErrorKind::UnknownArgument);
        assert!(
            error("login --target https://x")
                .to_string()
                .contains("http://")
        );
        assert!(Options::parse(&args("login --concurrency many")).is_err());
        assert!(error("echo --format xml").to_string().contains("protobuf"));
        let o = Options::parse(&args("echo --format protobuf")).unwrap();
        assert_eq!(o.format, Format::Protobuf);
    }

    #[test]
    fn one_target_keeps_every_user_on_it() {
        let o = Options::parse(&args(
            "ccu --concurrency 25000 --target http://127.0.0.1:9000",
        ))
        .unwrap();
        assert_eq!(o.targets.len(), 1);
        assert_eq!(o.target_text, "http://127.0.0.1:9000");
        assert!((0..100).all(|i| o.target(i).port() == 9000));
        // Sources in turn by user index, as before several targets.
        let sources: Vec<IpAddr> = (0..6).map(|i| o.source(i)).collect();
        let expected: Vec<IpAddr> = [1, 2, 3, 1, 2, 3]
            .map(|d| IpAddr::V4(Ipv4Addr::new(127, 0, 0, d)))
            .to_vec();
        assert_eq!(sources, expected);
    }

    #[test]
    fn several_targets_take_users_in_turn() {
        let o = Options::parse(&args(
            "ccu --concurrency 30000 --target http://127.0.0.1:7350 \
             --target http://127.0.0.1:7351,http://127.0.0.1:7352",
        ))
        .unwrap();
        let ports: Vec<u16> = (0..7).map(|i| o.target(i).port()).collect();
        assert_eq!(ports, [7350, 7351, 7352, 7350, 7351, 7352, 7350]);
        assert_eq!(
            o.target_text,
            "http://127.0.0.1:7350,http://127.0.0.1:7351,http://127.0.0.1:7352"
        );
        // Even shares: 30,000 users, 10,000 per target.
        let mut per_target = std::collections::HashMap::<u16, usize>::new();
        for i in 0..o.concurrency {
            *per_target.entry(o.target(i).port()).or_default() += 1;
        }
        assert!(per_target.values().all(|&n| n == 10_000), "{per_target:?}");
        // Three automatic sources and three targets: every target sees
        // every source address, each pair a ninth of the users.
        assert_eq!(o.sources.len(), 3);
        let mut pairs = std::collections::HashMap::<(u16, IpAddr), usize>::new();
        for i in 0..o.concurrency {
            *pairs.entry((o.target(i).port(), o.source(i))).or_default() += 1;
        }
        assert_eq!(pairs.len(), 9);
        assert!(
            pairs
                .values()
                .all(|&n| n == 30_000 / 9 || n == 30_000 / 9 + 1)
        );
    }

    /// The rooms of `fanout` go by user index too (`i mod rooms`): with a
    /// room count that is no multiple of the targets, each room has members
    /// on every target, so every message crosses nodes.
    #[test]
    fn fanout_rooms_span_the_targets() {
        let o = Options::parse(&args(
            "fanout --concurrency 10000 --rooms 1000 --sources 1 \
             --target http://127.0.0.1:7350,http://127.0.0.1:7351,http://127.0.0.1:7352",
        ))
        .unwrap();
        for room in [0, 1, 999] {
            let ports: std::collections::BTreeSet<u16> = (room..o.concurrency)
                .step_by(o.rooms)
                .map(|i| o.target(i).port())
                .collect();
            assert_eq!(ports.len(), 3, "room {room}");
        }
    }

    #[test]
    fn targets_outside_loopback_get_one_source() {
        let o = Options::parse(&args(
            "ccu --concurrency 25000 --target http://127.0.0.1:7350,http://10.0.0.1:7350",
        ))
        .unwrap();
        assert_eq!(o.sources, [IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        assert!(
            error("ccu --target http://127.0.0.1:1,https://x")
                .to_string()
                .contains("http://")
        );
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
