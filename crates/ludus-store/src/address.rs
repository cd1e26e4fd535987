//! Parses `database.address` into a backend choice: empty for SQLite, a
//! `postgres://` URL or Nakama's bare `user:password@host:port/dbname` for
//! PostgreSQL. Defaults fill what the address leaves out.

use std::str::FromStr as _;
use std::time::Duration;

use tokio_postgres::config::Host;

use crate::{DEFAULT_POSTGRES_DATABASE, OpenError};

#[derive(Debug)]
pub(crate) enum Address {
    Sqlite,
    Postgres(Box<tokio_postgres::Config>),
}

pub(crate) fn parse(address: &str) -> Result<Address, OpenError> {
    let trimmed = address.trim();
    if trimmed.is_empty() {
        return Ok(Address::Sqlite);
    }
    let invalid = |reason: String| OpenError::InvalidAddress {
        address: redact(trimmed),
        reason,
    };
    let url = match trimmed.split_once("://") {
        Some(("postgres" | "postgresql", _)) => trimmed.to_owned(),
        Some((scheme, _)) => return Err(invalid(format!("unsupported scheme {scheme:?}"))),
        // Nakama's form is a URL without its scheme.
        None => format!("postgresql://{trimmed}"),
    };
    let mut config = tokio_postgres::Config::from_str(&url).map_err(|e| invalid(e.to_string()))?;
    if config.get_hosts().is_empty() {
        config.host("localhost");
    }
    if config.get_user().is_none() {
        config.user("postgres");
    }
    if config.get_dbname().is_none() {
        config.dbname(DEFAULT_POSTGRES_DATABASE);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    if config.get_application_name().is_none() {
        config.application_name("ludus");
    }
    Ok(Address::Postgres(Box::new(config)))
}

/// `host:port/dbname` of a PostgreSQL config, for logs and messages (never the password).
pub(crate) fn describe(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "{host}:{port}/{}",
        config.get_dbname().unwrap_or(DEFAULT_POSTGRES_DATABASE)
    )
}

/// The address with any password replaced, safe to print.
fn redact(address: &str) -> String {
    let Some((before_at, after_at)) = address.rsplit_once('@') else {
        return address.to_owned();
    };
    let (scheme, userinfo) = match before_at.split_once("://") {
        Some((s, u)) => (format!("{s}://"), u),
        None => (String::new(), before_at),
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}{user}:***@{after_at}"),
        None => address.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(address: &str) -> tokio_postgres::Config {
        match parse(address).unwrap() {
            Address::Postgres(c) => *c,
            Address::Sqlite => panic!("{address} parsed as sqlite"),
        }
    }

    #[test]
    fn empty_address_is_sqlite() {
        assert!(matches!(parse("").unwrap(), Address::Sqlite));
        assert!(matches!(parse("  ").unwrap(), Address::Sqlite));
    }

    #[test]
    fn nakama_bare_form_is_postgres() {
        let c = pg("alice:s3cret@db.example:5433/game");
        assert_eq!(c.get_user(), Some("alice"));
        assert_eq!(c.get_password(), Some(&b"s3cret"[..]));
        assert_eq!(c.get_hosts(), &[Host::Tcp("db.example".into())]);
        assert_eq!(c.get_ports(), &[5433]);
        assert_eq!(c.get_dbname(), Some("game"));
    }

    #[test]
    fn missing_database_defaults_to_ludus() {
        assert_eq!(pg("root@localhost:26257").get_dbname(), Some("ludus"));
        assert_eq!(pg("postgres://bob@localhost").get_dbname(), Some("ludus"));
        assert_eq!(pg("localhost:5432").get_user(), Some("postgres"));
    }

    #[test]
    fn urls_keep_their_parts() {
        let c = pg("postgresql://u:p@127.0.0.1:6000/x?application_name=test");
        assert_eq!(c.get_dbname(), Some("x"));
        assert_eq!(c.get_application_name(), Some("test"));
        assert_eq!(describe(&c), "127.0.0.1:6000/x");
    }

    #[test]
    fn other_schemes_are_refused_without_leaking_the_password() {
        let err = parse("mysql://u:hunter2@host/db").unwrap_err().to_string();
        assert!(err.contains("unsupported scheme"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
}
