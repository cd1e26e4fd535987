//! The console's own users, pure rules: what a console user is, the claims
//! of its session and invitation tokens (Nakama's names), the input rules of
//! usernames, emails and passwords, and the lockout after failed sign-ins.
//! `console_service` applies them over the `Store`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::console_acl::Acl;
use crate::error::{ApiError, Code};

/// A console user as stored, without its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleUser {
    pub id: Uuid,
    pub username: String,
    pub email: String,
    pub acl: Acl,
    pub mfa_required: bool,
    /// Whether the user has set MFA up (it has a secret).
    pub mfa_enabled: bool,
    /// Seconds since the epoch.
    pub create_time: i64,
    pub update_time: i64,
    /// Milliseconds since the epoch: console tokens issued before this are
    /// refused (set by sign-out, a changed ACL, a password reset).
    pub tokens_after_ms: i64,
}

/// A console user with what signing in checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleUserAuth {
    pub user: ConsoleUser,
    /// bcrypt hash; `None` until the user sets a password with its invitation.
    pub password_hash: Option<String>,
    pub disabled: bool,
    /// The MFA secret and the recovery codes left (comma-separated), each
    /// sealed with `mfa.storage_encryption_key`; `None` until MFA is set up.
    pub mfa_secret: Option<Vec<u8>>,
    pub mfa_recovery_codes: Option<Vec<u8>>,
}

/// A change to one console user, found by username (the root user by id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsoleUserChange {
    /// New permissions; the user's tokens stop working.
    Acl(Acl),
    /// A new password hash; the user's tokens stop working. With
    /// `unchanged_since_ms`, only when no change ended the user's tokens
    /// after that millisecond (so an invitation code works once).
    Password {
        hash: String,
        unchanged_since_ms: Option<i64>,
    },
    /// Ends every console session of the user.
    SignOut,
    /// Whether the user must set MFA up to sign in; sessions go on.
    MfaRequired(bool),
    /// Sets MFA up (sealed secret and recovery codes), only while it is not
    /// set up and no change ended the user's tokens after
    /// `unchanged_since_ms` (so a setup token works once); sessions go on.
    MfaSet {
        secret: Vec<u8>,
        recovery_codes: Vec<u8>,
        unchanged_since_ms: i64,
    },
    /// The recovery codes left after one was used, only while the stored
    /// ones are still `before` (so a code works once); sessions go on.
    MfaRecoveryCodes { before: Vec<u8>, after: Vec<u8> },
    /// Removes the MFA secret and codes (the next sign-in sets it up again
    /// when it is required); the user's tokens stop working.
    MfaReset,
}

/// The claims of a console session token: Nakama's (`id`, `usn`, `ema`,
/// `acl`, `exp`, `cki`) plus `ims`, when it was issued in milliseconds, which
/// a sign-out compares with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ConsoleClaims {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(rename = "usn", default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(rename = "ema", default, skip_serializing_if = "String::is_empty")]
    pub email: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub acl: String,
    #[serde(rename = "exp", default)]
    pub expires_at: i64,
    #[serde(rename = "cki", default, skip_serializing_if = "String::is_empty")]
    pub cookie: String,
    #[serde(rename = "ims", default)]
    pub issued_at_ms: i64,
}

/// The claims of an invitation (or password reset) code: Nakama's
/// `UserInvitationClaims`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct InvitationClaims {
    #[serde(rename = "uid", default)]
    pub id: String,
    #[serde(rename = "usn", default)]
    pub username: String,
    #[serde(rename = "ema", default)]
    pub email: String,
    #[serde(rename = "exp", default)]
    pub expires_at: i64,
    #[serde(rename = "iat", default)]
    pub issued_at: i64,
    /// Ludus's own: when issued, in milliseconds.
    #[serde(rename = "ims", default)]
    pub issued_at_ms: i64,
}

/// Nakama's rule: 3-20 characters of letters, digits, `.` and `_`, starting
/// and ending with a letter or digit; stored lower-cased.
pub fn username(name: &str) -> Result<String, ApiError> {
    if name.is_empty() {
        return Err(ApiError::invalid("username is required"));
    }
    let ok_char = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '_';
    let first_last_ok = name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !(3..=20).contains(&name.len()) || !name.chars().all(ok_char) || !first_last_ok {
        return Err(ApiError::invalid(
            "username must be 3-20 letters, digits, `_` or `.`, starting and ending with a letter or digit",
        ));
    }
    Ok(name.to_lowercase())
}

/// Nakama's rule for console emails: 3-254 bytes, one `@` with text on both
/// sides, no spaces; stored lower-cased.
pub fn email(email: &str) -> Result<String, ApiError> {
    if email.is_empty() {
        return Err(ApiError::invalid("email is required"));
    }
    let well_formed = match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && !domain.is_empty() && !domain.contains('@') && domain.contains('.')
        }
        None => false,
    };
    if !(3..=254).contains(&email.len())
        || !well_formed
        || email.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(ApiError::invalid("not a valid email address"));
    }
    Ok(email.to_lowercase())
}

/// Nakama's rule for console passwords: 12-128 characters.
pub fn password(password: &str) -> Result<(), ApiError> {
    if password.trim().is_empty() {
        return Err(ApiError::invalid("password must be set"));
    }
    if !(12..=128).contains(&password.chars().count()) {
        return Err(ApiError::invalid(
            "password must be between 12 and 128 characters long",
        ));
    }
    Ok(())
}

/// The answer to a sign-in while its account is locked out.
pub fn locked_out() -> ApiError {
    ApiError::new(
        Code::ResourceExhausted,
        "too many failed sign-ins for this user, try again later",
    )
}

/// Failed sign-ins per console account, as Nakama's login-attempt cache
/// counts them: `max_attempts` failures within `period_ms` lock the account
/// for `period_ms`. Times are passed in, so the rules are tested without a
/// clock. Only accounts that exist are counted, so the map is bounded by the
/// number of console users.
#[derive(Debug)]
pub struct LoginAttempts {
    max_attempts: usize,
    period_ms: i64,
    accounts: HashMap<String, Attempts>,
}

#[derive(Debug, Default)]
struct Attempts {
    failures: Vec<i64>,
    locked_until_ms: i64,
}

impl LoginAttempts {
    pub fn new(max_attempts: u32, period_ms: i64) -> LoginAttempts {
        LoginAttempts {
            max_attempts: max_attempts.max(1) as usize,
            period_ms,
            accounts: HashMap::new(),
        }
    }

    /// Whether `account` may try to sign in at `now_ms`.
    pub fn allow(&self, account: &str, now_ms: i64) -> bool {
        self.accounts
            .get(account)
            .is_none_or(|a| a.locked_until_ms <= now_ms)
    }

    /// Counts a failure; answers whether the account is now locked.
    pub fn fail(&mut self, account: &str, now_ms: i64) -> bool {
        let period = self.period_ms;
        let a = self.accounts.entry(account.to_owned()).or_default();
        a.failures.retain(|t| now_ms - t < period);
        a.failures.push(now_ms);
        if a.failures.len() >= self.max_attempts {
            a.locked_until_ms = now_ms + period;
            a.failures.clear();
            return true;
        }
        false
    }

    /// Forgets an account's failures after it signed in.
    pub fn reset(&mut self, account: &str) {
        self.accounts.remove(account);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_in_a_minute_lock_for_a_minute() {
        let mut a = LoginAttempts::new(5, 60_000);
        for i in 0..4 {
            assert!(!a.fail("ops", i * 1_000));
            assert!(a.allow("ops", i * 1_000));
        }
        assert!(a.fail("ops", 4_000));
        assert!(!a.allow("ops", 4_000));
        assert!(!a.allow("ops", 63_999));
        assert!(a.allow("ops", 64_000));
        assert!(a.allow("other", 4_000));
    }

    #[test]
    fn old_failures_fall_out_of_the_window_and_success_resets() {
        let mut a = LoginAttempts::new(3, 10_000);
        a.fail("ops", 0);
        a.fail("ops", 1_000);
        assert!(
            !a.fail("ops", 10_500),
            "the first failure is older than the period"
        );
        a.reset("ops");
        assert!(!a.fail("ops", 11_000));
        assert!(a.allow("ops", 11_000));
    }

    #[test]
    fn input_rules() {
        assert_eq!(username("Ops.Team").unwrap(), "ops.team");
        for bad in ["", "ab", "_ops", "ops.", "a-b-c", "abcdefghijklmnopqrstu"] {
            assert_eq!(
                username(bad).unwrap_err().code,
                Code::InvalidArgument,
                "{bad}"
            );
        }
        assert_eq!(email("Ops@Example.com").unwrap(), "ops@example.com");
        for bad in ["", "ops", "ops@", "@x.io", "o p@x.io", "ops@localhost"] {
            assert!(email(bad).is_err(), "{bad}");
        }
        assert!(password("short").is_err());
        assert!(password("            ").is_err());
        assert!(password("a long enough one").is_ok());
    }
}
