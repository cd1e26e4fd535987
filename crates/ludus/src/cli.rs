//! The `ludus` command line (clap): `serve` (the default), `migrate
//! up|status`, `bench`, `check`, `healthcheck`, `version` and `help`, each
//! with `--help`. Everything
//! after the command is `--config FILE` or `--section.key value`
//! configuration, handed as it is to the config loader. Binaries built on
//! the library run the same command line with their native module.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, CommandFactory as _, Parser, Subcommand};
use ludus_server::config::parse_flags;
use ludus_server::{Config, NativeModule};

const AFTER_HELP: &str = "\
With no flags, ludus stores everything in SQLite under ./data and listens on
127.0.0.1:7350. Point it at PostgreSQL with --database.address postgres://...
Every config key can be given as --section.key VALUE, in the --config FILE
(YAML, Nakama's keys), or as LUDUS_SECTION_KEY in the environment; `ludus
help` lists them all with their defaults.";

/// `ludus [COMMAND] [--config FILE] [--section.key VALUE ...]`.
#[derive(Debug, Parser)]
#[command(
    name = "ludus",
    version,
    about = "A game server that speaks Nakama's client API",
    after_help = AFTER_HELP,
    disable_help_subcommand = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    config: ConfigFlags,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server (the default command)
    Serve(ConfigFlags),
    /// Database migrations (PostgreSQL; SQLite migrates itself)
    Migrate {
        #[command(subcommand)]
        action: Migrate,
    },
    /// Load-test a Nakama-compatible server (`ludus bench --help`)
    #[command(disable_help_flag = true)]
    Bench {
        /// The workload and its flags
        #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
        args: Vec<String>,
    },
    /// Check a configuration and the runtime modules without serving
    Check(ConfigFlags),
    /// Exit 0 when a server answers its health check (for containers)
    Healthcheck(ConfigFlags),
    /// Print the version
    Version,
    /// Show this help and every config key with its default
    Help {
        /// Print the configuration reference (docs/configuration.md) in Markdown
        #[arg(long)]
        markdown: bool,
    },
}

#[derive(Debug, Subcommand)]
enum Migrate {
    /// Apply pending database migrations
    Up(ConfigFlags),
    /// Show the schema version and pending migrations
    Status(ConfigFlags),
}

/// The configuration flags, passed as they are to the config loader.
#[derive(Debug, Args, Default)]
struct ConfigFlags {
    /// --config FILE, then --section.key VALUE pairs (see `ludus help`)
    #[arg(
        value_name = "CONFIG",
        allow_hyphen_values = true,
        trailing_var_arg = true
    )]
    flags: Vec<String>,
}

/// Runs the command line in `args` (without the program name).
pub(crate) fn main(args: Vec<String>, native: NativeModule) -> ExitCode {
    // The load generator parses its own flags and prints its own help.
    if args.first().is_some_and(|a| a == "bench") {
        return ExitCode::from(ludus_bench::main(&args[1..]) as u8);
    }
    let cli = match Cli::try_parse_from(std::iter::once("ludus".to_owned()).chain(args)) {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` answer on stdout and succeed.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli, native) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ludus: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli, native: NativeModule) -> anyhow::Result<()> {
    match cli.command {
        None => serve(&cli.config.flags, native),
        Some(Command::Serve(config)) => serve(&config.flags, native),
        Some(Command::Migrate { action }) => match action {
            Migrate::Up(config) => migrate("up", &config.flags),
            Migrate::Status(config) => migrate("status", &config.flags),
        },
        // Handled before parsing; kept so help lists it.
        Some(Command::Bench { args }) => {
            anyhow::ensure!(ludus_bench::main(&args) == 0, "bench failed");
            Ok(())
        }
        Some(Command::Check(config)) => check(&config.flags),
        Some(Command::Healthcheck(config)) => healthcheck(&config.flags),
        Some(Command::Version) => {
            println!("ludus {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Some(Command::Help { markdown }) => {
            // Written without println!, which panics when the reader has gone
            // (`ludus help | head`); a closed pipe just ends the output.
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let text = if markdown {
                ludus_server::config::reference::markdown()
            } else {
                let mut text = format!(
                    "{}\nconfig keys and defaults (their meanings: `ludus help --markdown`, or docs/configuration.md):\n",
                    Cli::command().render_long_help()
                );
                for (key, default) in Config::documented_keys() {
                    text.push_str(&format!("  --{key:<38} {default}\n"));
                }
                text
            };
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
                _ => Ok(()),
            }
        }
    }
}

fn load_config(args: &[String]) -> anyhow::Result<Config> {
    let mut file: Option<PathBuf> = None;
    let mut others = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--config" {
            file = Some(it.next().context("--config needs a file path")?.into());
        } else if let Some(path) = arg.strip_prefix("--config=") {
            file = Some(path.into());
        } else {
            others.push(arg.clone());
        }
    }
    let flags = parse_flags(&others)?;
    Ok(Config::load(file.as_deref(), std::env::vars(), &flags)?)
}

/// `ludus check`: the configuration loads (every key known, every value
/// valid) and every module under `runtime.path` compiles; nothing runs and
/// nothing listens, as Nakama's `check`.
fn check(args: &[String]) -> anyhow::Result<()> {
    let config = load_config(args)?;
    let path = std::path::Path::new(&config.runtime.path);
    let lua = ludus_runtime::check_lua_modules(path)?;
    for error in &lua.errors {
        eprintln!("ludus check: {error}");
    }
    anyhow::ensure!(
        lua.errors.is_empty(),
        "{} of {} lua modules in {} do not compile",
        lua.errors.len(),
        lua.modules.len(),
        path.display()
    );
    println!(
        "ludus check: configuration ok; {} lua modules in {} compile",
        lua.modules.len(),
        path.display()
    );
    Ok(())
}

/// `ludus healthcheck [PORT] [--config FILE] [--section.key VALUE ...]`:
/// `GET /healthcheck` on the configured address and port (a bare first
/// argument is the port, as Nakama's `healthcheck PORT`); exits 0 on 200.
fn healthcheck(args: &[String]) -> anyhow::Result<()> {
    use std::io::{Read as _, Write as _};
    use std::net::{TcpStream, ToSocketAddrs as _};
    use std::time::Duration;

    let (port, rest) = match args.first().map(|a| a.parse::<u16>()) {
        Some(Ok(port)) => (Some(port), &args[1..]),
        _ => (None, args),
    };
    let config = load_config(rest)?;
    let port = port.unwrap_or(config.socket.port);
    // A server listening on every interface is asked on loopback.
    let host = match config.socket.address.as_str() {
        "" | "0.0.0.0" => "127.0.0.1",
        "::" | "[::]" => "::1",
        other => other,
    };
    let timeout = Duration::from_secs(5);
    let addr = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}:{port}"))?
        .next()
        .with_context(|| format!("no address for {host}:{port}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("healthcheck failed: cannot connect to {addr}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET /healthcheck HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut head = [0u8; 64];
    let mut read = 0;
    while read < 12 {
        match stream.read(&mut head[read..])? {
            0 => break,
            n => read += n,
        }
    }
    let status = String::from_utf8_lossy(&head[..read]);
    let status = status.lines().next().unwrap_or_default();
    anyhow::ensure!(
        status.starts_with("HTTP/1.1 200"),
        "healthcheck failed: {addr} answered {status:?}"
    );
    println!("ludus healthcheck: ok ({addr})");
    Ok(())
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn serve(args: &[String], native: NativeModule) -> anyhow::Result<()> {
    let config = load_config(args)?;
    ludus_server::logging::init(&config.logger)
        .with_context(|| format!("cannot open logger.file {}", config.logger.file))?;
    config.warn_ignored_keys();
    tracing::info!(version = env!("CARGO_PKG_VERSION"), data_dir = %config.data_dir.display(), "starting ludus");
    runtime()?.block_on(async move {
        let server = ludus_server::start_with(config, native).await?;
        server.run_until_signal().await;
        Ok(())
    })
}

fn migrate(sub: &str, args: &[String]) -> anyhow::Result<()> {
    let config = load_config(args)?;
    ludus_server::logging::init(&config.logger)
        .with_context(|| format!("cannot open logger.file {}", config.logger.file))?;
    let address = config.database.address().to_owned();
    runtime()?.block_on(async move {
        if sub == "up" {
            let report = ludus_store::migrate_up(&address, &config.data_dir).await?;
            println!("{report}");
        } else {
            let report = ludus_store::migrate_status(&address, &config.data_dir).await?;
            println!("{report}");
        }
        Ok(())
    })
}
