//! The matchmaker's server side: checking the `matchmaker.*` config section
//! (the section's type is `ludus_realtime::MatchmakerConfig`). The
//! matchmaker itself lives in `ludus-realtime` (its matched hook reaches the
//! modules through `ludus_realtime::Modules`); its processing loop is
//! spawned in `server.rs`.

use ludus_realtime::MatchmakerConfig;

use crate::config::ConfigError;

/// Checks the `matchmaker.*` section (`ludus_realtime::MatchmakerConfig`).
pub fn validate(config: &MatchmakerConfig) -> Result<(), ConfigError> {
    let bad = |key: &str, message: &str| {
        Err(ConfigError::BadValue {
            key: key.into(),
            message: message.into(),
        })
    };
    if config.interval_sec == 0 {
        return bad("matchmaker.interval_sec", "must be at least 1");
    }
    if config.max_tickets == 0 {
        return bad("matchmaker.max_tickets", "must be at least 1");
    }
    if config.max_intervals == 0 {
        return bad("matchmaker.max_intervals", "must be at least 1");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Config;

    use crate::config::test_flags as flags;

    #[test]
    fn matchmaker_keys_have_nakamas_defaults_and_are_checked() {
        let c = Config::load(None, [], &[]).unwrap();
        assert_eq!(c.matchmaker.interval_sec, 15);
        assert_eq!(c.matchmaker.max_tickets, 3);
        assert_eq!(c.matchmaker.max_intervals, 2);
        assert!(!c.matchmaker.rev_precision);
        let c = Config::load(
            None,
            [],
            &flags(&[
                ("matchmaker.interval_sec", "1"),
                ("matchmaker.max_tickets", "5"),
            ]),
        )
        .unwrap();
        assert_eq!(c.matchmaker.interval_sec, 1);
        assert_eq!(c.matchmaker.max_tickets, 5);
        for key in [
            "matchmaker.interval_sec",
            "matchmaker.max_tickets",
            "matchmaker.max_intervals",
        ] {
            let err = Config::load(None, [], &flags(&[(key, "0")])).unwrap_err();
            assert!(err.to_string().contains(key), "{err}");
        }
    }
}
