//! Structured logs through `tracing`, at `logger.level`, as text or JSON.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use crate::config::LoggerConfig;

/// Installs the global subscriber; `RUST_LOG` overrides the level for debugging.
pub fn init(config: &LoggerConfig) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        // Colour only for people at a terminal; files and collectors get plain text.
        .with_ansi(std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    let result = if config.format == "json" {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
    // A second call (tests) keeps the first subscriber.
    let _ = result;
}
