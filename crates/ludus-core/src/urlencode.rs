//! Percent-encoding of the values Ludus puts in the query strings and form
//! bodies it sends to providers, and in the URIs it hands out.

/// Percent-encodes everything but RFC 3986's unreserved characters
/// (letters, digits, `-._~`); a space is `%20`.
pub(crate) fn escape(text: &str) -> String {
    encode(text, "%20")
}

/// Go's `url.QueryEscape`, which Nakama's URLs and form bodies use: as
/// [`escape`], but a space is `+`.
pub(crate) fn query_escape(text: &str) -> String {
    encode(text, "+")
}

fn encode(text: &str, space: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3 / 2);
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push_str(space),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_differ_and_the_rest_is_the_same() {
        assert_eq!(escape("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(query_escape("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
        assert_eq!(escape("x.y-z_~"), "x.y-z_~");
    }
}
