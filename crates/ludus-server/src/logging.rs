//! Structured logs through `tracing`, at `logger.level`, as text or JSON, to
//! standard output and to `logger.file` (rotated by `log_file`).

use std::io::IsTerminal as _;
use std::sync::Mutex;
use std::time::Duration;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::config::LoggerConfig;
use crate::log_file::{LogFile, Rotation};

/// Installs the global subscriber; `RUST_LOG` overrides the level for
/// debugging. Fails only when `logger.file` cannot be opened.
pub fn init(config: &LoggerConfig) -> std::io::Result<()> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.level));
    let json = config.format == "json";
    let stdout = config.stdout.then(|| {
        let layer = tracing_subscriber::fmt::layer()
            .with_target(false)
            // Colour only for people at a terminal; files and collectors get plain text.
            .with_ansi(std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none());
        match json {
            true => layer.json().flatten_event(true).boxed(),
            false => layer.boxed(),
        }
    });
    let file = match config.file.as_str() {
        "" => None,
        path => {
            let rotation = config.rotation.then(|| Rotation {
                max_bytes: config.max_size.saturating_mul(1024 * 1024),
                max_age: (config.max_age > 0)
                    .then(|| Duration::from_secs(config.max_age.saturating_mul(86_400))),
                max_backups: config.max_backups,
                compress: config.compress,
            });
            let writer = Mutex::new(LogFile::open(std::path::Path::new(path), rotation)?);
            let layer = tracing_subscriber::fmt::layer()
                .with_target(false)
                .with_ansi(false)
                .with_writer(writer);
            Some(match json {
                true => layer.json().flatten_event(true).boxed(),
                false => layer.boxed(),
            })
        }
    };
    // A second call (tests) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(stdout)
        .with(file)
        .try_init();
    Ok(())
}
