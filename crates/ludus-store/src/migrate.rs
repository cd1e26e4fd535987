//! The numbered schema migrations of each dialect, embedded in the binary, and
//! the version rules shared by both backends. Applied versions are recorded in
//! a `schema_migrations` table; each migration runs in one transaction.

use std::fmt;

use crate::OpenError;

/// One numbered SQL file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
}

pub(crate) const SQLITE: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../migrations/sqlite/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "chat_notifications",
        sql: include_str!("../migrations/sqlite/0002_chat_notifications.sql"),
    },
    Migration {
        version: 3,
        name: "storage_wallet",
        sql: include_str!("../migrations/sqlite/0003_storage_wallet.sql"),
    },
    Migration {
        version: 4,
        name: "social",
        sql: include_str!("../migrations/sqlite/0004_social.sql"),
    },
    Migration {
        version: 5,
        name: "leaderboards",
        sql: include_str!("../migrations/sqlite/0005_leaderboards.sql"),
    },
    Migration {
        version: 6,
        name: "friend_list_index",
        sql: include_str!("../migrations/sqlite/0006_friend_list_index.sql"),
    },
    Migration {
        version: 7,
        name: "users_id_hash",
        sql: include_str!("../migrations/sqlite/0007_users_id_hash.sql"),
    },
    Migration {
        version: 8,
        name: "ledger_without_user_fkey",
        sql: include_str!("../migrations/sqlite/0008_ledger_without_user_fkey.sql"),
    },
    Migration {
        version: 9,
        name: "ledger_user_index_slim",
        sql: include_str!("../migrations/sqlite/0009_ledger_user_index_slim.sql"),
    },
    Migration {
        version: 10,
        name: "ledger_recent",
        sql: include_str!("../migrations/sqlite/0010_ledger_recent.sql"),
    },
    Migration {
        version: 11,
        name: "ledger_key_by_trigger",
        sql: include_str!("../migrations/sqlite/0011_ledger_key_by_trigger.sql"),
    },
    Migration {
        version: 12,
        name: "console_users",
        sql: include_str!("../migrations/sqlite/0012_console_users.sql"),
    },
    Migration {
        version: 13,
        name: "purchases",
        sql: include_str!("../migrations/sqlite/0013_purchases.sql"),
    },
    Migration {
        version: 14,
        name: "console_audit_log",
        sql: include_str!("../migrations/sqlite/0014_console_audit_log.sql"),
    },
    Migration {
        version: 15,
        name: "console_notes_templates_settings_mfa",
        sql: include_str!("../migrations/sqlite/0015_console_notes_templates_settings_mfa.sql"),
    },
];

pub(crate) const POSTGRES: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../migrations/postgres/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "chat_notifications",
        sql: include_str!("../migrations/postgres/0002_chat_notifications.sql"),
    },
    Migration {
        version: 3,
        name: "storage_wallet",
        sql: include_str!("../migrations/postgres/0003_storage_wallet.sql"),
    },
    Migration {
        version: 4,
        name: "social",
        sql: include_str!("../migrations/postgres/0004_social.sql"),
    },
    Migration {
        version: 5,
        name: "leaderboards",
        sql: include_str!("../migrations/postgres/0005_leaderboards.sql"),
    },
    Migration {
        version: 6,
        name: "friend_list_index",
        sql: include_str!("../migrations/postgres/0006_friend_list_index.sql"),
    },
    Migration {
        version: 7,
        name: "users_id_hash",
        sql: include_str!("../migrations/postgres/0007_users_id_hash.sql"),
    },
    Migration {
        version: 8,
        name: "ledger_without_user_fkey",
        sql: include_str!("../migrations/postgres/0008_ledger_without_user_fkey.sql"),
    },
    Migration {
        version: 9,
        name: "ledger_user_index_slim",
        sql: include_str!("../migrations/postgres/0009_ledger_user_index_slim.sql"),
    },
    Migration {
        version: 10,
        name: "ledger_recent",
        sql: include_str!("../migrations/postgres/0010_ledger_recent.sql"),
    },
    Migration {
        version: 11,
        name: "ledger_key_by_trigger",
        sql: include_str!("../migrations/postgres/0011_ledger_key_by_trigger.sql"),
    },
    Migration {
        version: 12,
        name: "console_users",
        sql: include_str!("../migrations/postgres/0012_console_users.sql"),
    },
    Migration {
        version: 13,
        name: "purchases",
        sql: include_str!("../migrations/postgres/0013_purchases.sql"),
    },
    Migration {
        version: 14,
        name: "console_audit_log",
        sql: include_str!("../migrations/postgres/0014_console_audit_log.sql"),
    },
    Migration {
        version: 15,
        name: "console_notes_templates_settings_mfa",
        sql: include_str!("../migrations/postgres/0015_console_notes_templates_settings_mfa.sql"),
    },
];

/// The highest version in a list.
pub(crate) fn latest(migrations: &[Migration]) -> i64 {
    migrations.last().map_or(0, |m| m.version)
}

/// Migrations above `current`, in order.
pub(crate) fn pending(migrations: &[Migration], current: i64) -> impl Iterator<Item = &Migration> {
    migrations.iter().filter(move |m| m.version > current)
}

/// Refuses a schema that this build cannot use as it is.
pub(crate) fn check_version(
    target: &str,
    current: i64,
    migrations: &[Migration],
) -> Result<(), OpenError> {
    let latest = latest(migrations);
    let target = target.to_owned();
    if current > latest {
        return Err(OpenError::TooNew {
            target,
            current,
            latest,
        });
    }
    if current == 0 {
        return Err(OpenError::NotMigrated { target });
    }
    if current < latest {
        return Err(OpenError::Outdated {
            target,
            current,
            latest,
        });
    }
    Ok(())
}

/// A migration's number and name, as `ludus migrate` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrationInfo {
    pub version: i64,
    pub name: &'static str,
}

impl From<&Migration> for MigrationInfo {
    fn from(m: &Migration) -> Self {
        MigrationInfo {
            version: m.version,
            name: m.name,
        }
    }
}

impl fmt::Display for MigrationInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}_{}", self.version, self.name)
    }
}

/// Where the schema stands (`ludus migrate status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    /// `"sqlite"` or `"postgres"`.
    pub backend: &'static str,
    /// Highest applied version, 0 for none.
    pub current: i64,
    /// Highest version this build knows.
    pub latest: i64,
    pub pending: Vec<MigrationInfo>,
}

impl fmt::Display for MigrationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: schema version {}, latest known {}",
            self.backend, self.current, self.latest
        )?;
        if self.current > self.latest {
            return write!(f, "; the database is newer than this ludus, upgrade ludus");
        }
        if self.pending.is_empty() {
            return write!(f, "; up to date");
        }
        write!(f, "; pending:")?;
        for m in &self.pending {
            write!(f, " {m}")?;
        }
        write!(f, " (run `ludus migrate up`)")
    }
}

/// What `ludus migrate up` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationReport {
    pub backend: &'static str,
    /// Version before.
    pub from: i64,
    /// Version after.
    pub to: i64,
    pub applied: Vec<MigrationInfo>,
}

impl fmt::Display for MigrationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.applied.is_empty() {
            return write!(
                f,
                "{}: schema already at version {}, nothing to apply",
                self.backend, self.to
            );
        }
        write!(
            f,
            "{}: migrated from version {} to {}, applied:",
            self.backend, self.from, self.to
        )?;
        for m in &self.applied {
            write!(f, " {m}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_count_up_from_one_in_both_dialects() {
        // Strictly increasing rather than contiguous: features built on
        // branches of their own reserve numbers (0004 is the social
        // feature's, 0005 leaderboards'), and `pending` runs whatever is
        // above the applied version in order.
        for list in [SQLITE, POSTGRES] {
            let mut previous = 0;
            for m in list {
                assert!(m.version > previous, "{}", m.name);
                assert!(!m.sql.trim().is_empty());
                previous = m.version;
            }
            assert_eq!(list[0].version, 1);
        }
        let names = |l: &[Migration]| l.iter().map(|m| (m.version, m.name)).collect::<Vec<_>>();
        assert_eq!(names(SQLITE), names(POSTGRES), "dialects must stay in step");
    }

    #[test]
    fn version_rules() {
        let latest = latest(SQLITE);
        assert!(check_version("db", latest, SQLITE).is_ok());
        assert!(matches!(
            check_version("db", 0, SQLITE),
            Err(OpenError::NotMigrated { .. })
        ));
        assert!(matches!(
            check_version("db", latest + 1, SQLITE),
            Err(OpenError::TooNew { .. })
        ));
    }

    #[test]
    fn status_tells_what_to_run() {
        let status = MigrationStatus {
            backend: "postgres",
            current: 0,
            latest: 1,
            pending: vec![MigrationInfo {
                version: 1,
                name: "init",
            }],
        };
        assert_eq!(
            status.to_string(),
            "postgres: schema version 0, latest known 1; pending: 0001_init (run `ludus migrate up`)"
        );
    }
}
