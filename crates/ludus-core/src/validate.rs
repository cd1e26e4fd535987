//! Input rules shared by every transport: Nakama's limits on ids, emails,
//! passwords and usernames. Each check returns the message a client sees.

use crate::error::ApiError;

fn has_space_or_control(s: &str) -> bool {
    s.chars().any(|c| c.is_control() || c.is_whitespace())
}

pub fn device_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() {
        return Err(ApiError::invalid("device id is required"));
    }
    if has_space_or_control(id) {
        return Err(ApiError::invalid(
            "device id invalid, no spaces or control characters allowed",
        ));
    }
    if !(10..=128).contains(&id.len()) {
        return Err(ApiError::invalid("device id invalid, must be 10-128 bytes"));
    }
    Ok(())
}

pub fn custom_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() {
        return Err(ApiError::invalid("custom id is required"));
    }
    if has_space_or_control(id) {
        return Err(ApiError::invalid(
            "custom id invalid, no spaces or control characters allowed",
        ));
    }
    if !(6..=128).contains(&id.len()) {
        return Err(ApiError::invalid("custom id invalid, must be 6-128 bytes"));
    }
    Ok(())
}

/// Checks an email address and returns it lower-cased, as it is stored.
pub fn email(email: &str) -> Result<String, ApiError> {
    if has_space_or_control(email) {
        return Err(ApiError::invalid(
            "invalid email address, no spaces or control characters allowed",
        ));
    }
    let well_formed = match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain
                    .rsplit_once('.')
                    .is_some_and(|(host, tld)| !host.is_empty() && !tld.is_empty())
        }
        None => false,
    };
    if !well_formed {
        return Err(ApiError::invalid("invalid email address format"));
    }
    if !(10..=255).contains(&email.len()) {
        return Err(ApiError::invalid(
            "invalid email address, must be 10-255 bytes",
        ));
    }
    Ok(email.to_lowercase())
}

pub fn password(password: &str) -> Result<(), ApiError> {
    if password.chars().count() < 8 {
        return Err(ApiError::invalid(
            "password must be at least 8 characters long",
        ));
    }
    // bcrypt only reads the first 72 bytes; longer input would silently collide.
    if password.len() > 72 {
        return Err(ApiError::invalid("password must be at most 72 bytes long"));
    }
    Ok(())
}

pub fn username(name: &str) -> Result<(), ApiError> {
    if name.is_empty() || name.len() > 128 {
        return Err(ApiError::invalid("username invalid, must be 1-128 bytes"));
    }
    if has_space_or_control(name) {
        return Err(ApiError::invalid(
            "username invalid, no spaces or control characters allowed",
        ));
    }
    Ok(())
}

/// A free-text account field with a byte limit.
pub fn text_field(field: &'static str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.len() > max {
        return Err(ApiError::invalid(format!(
            "{field} invalid, must be at most {max} bytes"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(ApiError::invalid(format!(
            "{field} invalid, no control characters allowed"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_id_bounds() {
        assert!(device_id("123456789").is_err());
        assert!(device_id("1234567890").is_ok());
        assert!(device_id(&"a".repeat(128)).is_ok());
        assert!(device_id(&"a".repeat(129)).is_err());
        assert!(device_id("12345 67890").is_err());
        assert!(device_id("").is_err());
    }

    #[test]
    fn custom_id_bounds() {
        assert!(custom_id("12345").is_err());
        assert!(custom_id("123456").is_ok());
        assert!(custom_id(&"a".repeat(129)).is_err());
    }

    #[test]
    fn email_rules() {
        assert_eq!(email("Alice@Example.com").unwrap(), "alice@example.com");
        assert!(email("a@b.c").is_err(), "too short");
        assert!(email("alice.example.com").is_err());
        assert!(email("alice@examplecom").is_err());
        assert!(email("al ice@example.com").is_err());
        assert!(email(&format!("{}@example.com", "a".repeat(250))).is_err());
    }

    #[test]
    fn password_and_username_rules() {
        assert!(password("1234567").is_err());
        assert!(password("12345678").is_ok());
        assert!(password(&"x".repeat(73)).is_err());
        assert!(username("bob").is_ok());
        assert!(username("bob smith").is_err());
        assert!(username("bob\u{7}").is_err());
        assert!(username(&"b".repeat(129)).is_err());
        assert!(username("").is_err());
    }
}
