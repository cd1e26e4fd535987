//! Maps PostgreSQL errors to store outcomes and retries the ones that a
//! second attempt can fix (serialization failures and deadlocks), so callers
//! never see them.

use std::future::Future;
use std::time::Duration;

use ludus_core::store::{StoreError, StoreResult};
use tokio_postgres::error::{DbError, SqlState};

/// Attempts of one operation before giving up on conflicts.
const MAX_ATTEMPTS: u32 = 5;

/// What went wrong with one attempt.
#[derive(Debug)]
pub(super) enum Failure {
    /// A conflict with a concurrent transaction; running it again may succeed.
    Retry(String),
    Fatal(StoreError),
}

impl Failure {
    /// The error to give a caller that will not retry: a conflict becomes
    /// unavailable ("try again").
    pub(super) fn or_unavailable(self) -> StoreError {
        match self {
            Failure::Fatal(e) => e,
            Failure::Retry(why) => StoreError::Unavailable(why),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::Fatal(e)
    }
}

impl From<ludus_core::storage::Rejection> for Failure {
    fn from(r: ludus_core::storage::Rejection) -> Self {
        Failure::Fatal(StoreError::Rejected(r))
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Self {
        classify(&e)
    }
}

pub(super) fn classify(e: &tokio_postgres::Error) -> Failure {
    if let Some(db) = e.as_db_error() {
        return classify_db(db);
    }
    let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
    if e.is_closed() || io {
        return Failure::Fatal(StoreError::Unavailable(format!(
            "database connection lost: {e}"
        )));
    }
    Failure::Fatal(StoreError::Backend(e.to_string()))
}

fn classify_db(db: &DbError) -> Failure {
    let code = db.code();
    if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED {
        return Failure::Retry(db.message().to_owned());
    }
    if *code == SqlState::UNIQUE_VIOLATION {
        return Failure::Fatal(unique_violation(db.constraint()));
    }
    // 08: connection exception, 53: insufficient resources, 57: operator intervention.
    match code.code().get(..2) {
        Some("08" | "53" | "57") => {
            Failure::Fatal(StoreError::Unavailable(db.message().to_owned()))
        }
        _ => Failure::Fatal(StoreError::Backend(format!(
            "{} ({})",
            db.message(),
            code.code()
        ))),
    }
}

/// Unique indexes are named after what they guard (see the migrations).
pub(super) fn unique_violation(constraint: Option<&str>) -> StoreError {
    match constraint {
        Some("users_username_key") => StoreError::UsernameTaken,
        Some("console_users_username_key" | "console_users_email_key") => {
            StoreError::ConsoleUserTaken
        }
        Some("console_acl_template_name_key") => StoreError::AclTemplateTaken,
        Some("groups_name_key") => StoreError::Group(ludus_core::group::GroupRefusal::NameInUse),
        Some("users_pkey") => StoreError::Backend("user id already exists".into()),
        Some(c) if c == "user_device_pkey" || (c.starts_with("users_") && c.ends_with("_key")) => {
            StoreError::IdentityTaken
        }
        other => StoreError::Backend(format!(
            "unique violation on {}",
            other.unwrap_or("an unnamed constraint")
        )),
    }
}

/// Runs `attempt` until it succeeds, fails for good, or has conflicted too often.
pub(super) async fn with_retry<T, F, Fut>(op: &'static str, mut attempt: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    for n in 1..=MAX_ATTEMPTS {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(Failure::Fatal(e)) => return Err(e),
            Err(Failure::Retry(why)) => {
                tracing::debug!(op, attempt = n, error = %why, "transaction conflict, retrying");
                tokio::time::sleep(backoff(n)).await;
            }
        }
    }
    tracing::warn!(
        op,
        attempts = MAX_ATTEMPTS,
        "giving up after repeated transaction conflicts"
    );
    Err(StoreError::Unavailable(format!(
        "{op} kept conflicting with concurrent writes, try again"
    )))
}

/// 2, 4, 8, 16 ms: conflicts clear quickly, and the caller is waiting.
pub(super) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(1 << attempt.min(6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraint_names_map_to_outcomes() {
        assert_eq!(
            unique_violation(Some("users_username_key")),
            StoreError::UsernameTaken
        );
        assert_eq!(
            unique_violation(Some("users_email_key")),
            StoreError::IdentityTaken
        );
        assert_eq!(
            unique_violation(Some("users_custom_id_key")),
            StoreError::IdentityTaken
        );
        assert_eq!(
            unique_violation(Some("user_device_pkey")),
            StoreError::IdentityTaken
        );
        assert!(matches!(
            unique_violation(Some("users_pkey")),
            StoreError::Backend(_)
        ));
        assert!(matches!(unique_violation(None), StoreError::Backend(_)));
    }
}
