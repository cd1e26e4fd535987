//! The matchmaker's server side: the `matchmaker.*` config section. The
//! matchmaker itself lives in `ludus-realtime` (its matched hook reaches the
//! modules through `ludus_realtime::Modules`); its processing loop is
//! spawned in `server.rs`.

use ludus_realtime::MatchmakerConfig as RtMatchmakerConfig;
use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `matchmaker.*`, Nakama's names and defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MatchmakerConfig {
    /// Seconds between matchmaking runs.
    pub interval_sec: u64,
    /// Tickets one session or party may hold at once.
    pub max_tickets: usize,
    /// Runs a ticket waits for a full group (its max_count) before it
    /// accepts any size from its min_count.
    pub max_intervals: u32,
    /// A candidate's query must match the searcher too (mutual matching).
    pub rev_precision: bool,
}

impl Default for MatchmakerConfig {
    fn default() -> Self {
        let d = RtMatchmakerConfig::default();
        MatchmakerConfig {
            interval_sec: d.interval_sec,
            max_tickets: d.max_tickets,
            max_intervals: d.max_intervals,
            rev_precision: d.rev_precision,
        }
    }
}

impl MatchmakerConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, message: &str| {
            Err(ConfigError::BadValue {
                key: key.into(),
                message: message.into(),
            })
        };
        if self.interval_sec == 0 {
            return bad("matchmaker.interval_sec", "must be at least 1");
        }
        if self.max_tickets == 0 {
            return bad("matchmaker.max_tickets", "must be at least 1");
        }
        if self.max_intervals == 0 {
            return bad("matchmaker.max_intervals", "must be at least 1");
        }
        Ok(())
    }

    /// The realtime layer's view of it.
    pub fn realtime(&self) -> RtMatchmakerConfig {
        RtMatchmakerConfig {
            max_tickets: self.max_tickets,
            max_intervals: self.max_intervals,
            rev_precision: self.rev_precision,
            interval_sec: self.interval_sec,
        }
    }
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
        assert_eq!(c.matchmaker.realtime().interval_sec, 1);
        assert_eq!(c.matchmaker.realtime().max_tickets, 5);
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
