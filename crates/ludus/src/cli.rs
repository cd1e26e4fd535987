//! The `ludus` command line: `serve` (the default), `migrate up|status`,
//! `bench`, `version` and `help`. Everything after the command is `--config FILE` or
//! `--section.key value` configuration. Binaries built on the library run the
//! same command line with their native module.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use ludus_server::config::parse_flags;
use ludus_server::{Config, NativeModule};

const USAGE: &str = "\
usage: ludus [COMMAND] [--config FILE] [--section.key VALUE ...]

commands:
  serve            run the server (the default)
  migrate up       apply pending database migrations
  migrate status   show the schema version and pending migrations
  bench WORKLOAD   load-test a Nakama-compatible server (`ludus bench --help`)
  version          print the version
  help             show this help and every config key

With no flags, ludus stores everything in SQLite under ./data and listens on
127.0.0.1:7350. Point it at PostgreSQL with --database.address postgres://...
Every key can also be set as LUDUS_SECTION_KEY in the environment.
";

/// Runs the command line in `args` (without the program name).
pub fn main(args: Vec<String>, native: NativeModule) -> ExitCode {
    // The load generator has flags of its own; hand it everything after `bench`.
    if args.first().is_some_and(|a| a == "bench") {
        return ExitCode::from(ludus_bench::main(&args[1..]) as u8);
    }
    match run(args, native) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ludus: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>, native: NativeModule) -> anyhow::Result<()> {
    let (command, rest) = split_command(args);
    match command.as_slice() {
        [] => serve(&rest, native),
        [c] if c == "serve" => serve(&rest, native),
        [c, sub] if c == "migrate" && (sub == "up" || sub == "status") => migrate(sub, &rest),
        [c] if c == "migrate" => anyhow::bail!("migrate needs `up` or `status`"),
        [c] if c == "version" || c == "--version" => {
            println!("ludus {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        [c] if c == "help" || c == "--help" || c == "-h" => {
            print!("{USAGE}\nconfig keys and defaults:\n");
            for (key, default) in Config::documented_keys() {
                println!("  --{key:<38} {default}");
            }
            Ok(())
        }
        other => anyhow::bail!("unknown command `{}`\n\n{USAGE}", other.join(" ")),
    }
}

/// Leading words are the command; the rest are flags.
fn split_command(args: Vec<String>) -> (Vec<String>, Vec<String>) {
    let split = args
        .iter()
        .position(|a| a.starts_with('-'))
        .unwrap_or(args.len());
    let mut command = args;
    let rest = command.split_off(split);
    if command
        .first()
        .is_some_and(|c| c == "--help" || c == "-h" || c == "--version")
    {
        return (command, rest);
    }
    match rest.first().map(String::as_str) {
        Some("--help" | "-h" | "--version") if command.is_empty() => {
            (vec![rest[0].clone()], rest[1..].to_vec())
        }
        _ => (command, rest),
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

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn serve(args: &[String], native: NativeModule) -> anyhow::Result<()> {
    let config = load_config(args)?;
    ludus_server::logging::init(&config.logger);
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
    ludus_server::logging::init(&config.logger);
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
