//! Google Play Games sign-in by server auth code, Nakama's second Google
//! path: when what the client sent is not a valid Google ID token and
//! `google_auth.credentials_json` holds an OAuth client, the server trades
//! the code for an access token at the client's token endpoint and asks
//! Play Games for the player (`/games/v1/players/me`).

use serde::Deserialize;
use serde_json::Value;

use crate::urlencode;

/// The OAuth client of `google_auth.credentials_json` (the JSON file the
/// Google Cloud console downloads: one `web` or `installed` object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GooglePlayClient {
    pub client_id: String,
    pub client_secret: String,
    pub token_uri: String,
    /// The first of `redirect_uris`, sent with the code as OAuth requires;
    /// empty when the file has none.
    pub redirect_uri: String,
}

#[derive(Deserialize)]
struct ClientFile {
    web: Option<ClientEntry>,
    installed: Option<ClientEntry>,
}

#[derive(Deserialize)]
struct ClientEntry {
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    client_secret: String,
    #[serde(default)]
    token_uri: String,
    #[serde(default)]
    redirect_uris: Vec<String>,
}

const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

impl GooglePlayClient {
    /// Reads the credentials file's text; empty text: no client. A file
    /// that is not an OAuth client is an error naming what is wrong.
    pub fn from_credentials_json(text: &str) -> Result<Option<GooglePlayClient>, String> {
        if text.trim().is_empty() {
            return Ok(None);
        }
        let file: ClientFile = serde_json::from_str(text)
            .map_err(|e| format!("not a Google OAuth client file: {e}"))?;
        let entry = file
            .web
            .or(file.installed)
            .ok_or("a Google OAuth client file has a \"web\" or \"installed\" object")?;
        if entry.client_id.is_empty() {
            return Err("the Google OAuth client has no client_id".into());
        }
        Ok(Some(GooglePlayClient {
            client_id: entry.client_id,
            client_secret: entry.client_secret,
            token_uri: if entry.token_uri.is_empty() {
                TOKEN_URI.into()
            } else {
                entry.token_uri
            },
            redirect_uri: entry.redirect_uris.into_iter().next().unwrap_or_default(),
        }))
    }

    /// The form body that trades `code` for a token (client credentials in
    /// the body, as Google's endpoint takes them).
    pub fn exchange_body(&self, code: &str) -> String {
        let mut pairs = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", &self.client_id),
            ("client_secret", &self.client_secret),
        ];
        if !self.redirect_uri.is_empty() {
            pairs.push(("redirect_uri", &self.redirect_uri));
        }
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", urlencode::query_escape(v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// The access token of a token endpoint's answer.
pub fn access_token(body: &[u8]) -> Result<String, String> {
    let answer: Value =
        serde_json::from_slice(body).map_err(|_| "token endpoint answer is not json")?;
    answer["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| "token endpoint answer has no access_token".into())
}

/// A Play Games player (`/games/v1/players/me`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct PlayGamesPlayer {
    pub player_id: String,
    pub display_name: String,
    pub avatar_image_url: String,
    /// The id the player had before Google's per-game ids, when it differs.
    pub original_player_id: String,
}

pub fn player(body: &[u8]) -> Result<PlayGamesPlayer, String> {
    let player: PlayGamesPlayer =
        serde_json::from_slice(body).map_err(|_| "play games player answer is not json")?;
    if player.player_id.is_empty() {
        return Err("play games player answer has no playerId".into());
    }
    Ok(player)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_web_and_installed_clients() {
        let web = r#"{"web":{"client_id":"c1","client_secret":"s","token_uri":"http://t/token",
            "redirect_uris":["https://game/cb","https://other"]}}"#;
        let c = GooglePlayClient::from_credentials_json(web)
            .unwrap()
            .unwrap();
        assert_eq!(c.client_id, "c1");
        assert_eq!(c.token_uri, "http://t/token");
        assert_eq!(c.redirect_uri, "https://game/cb");
        let installed = r#"{"installed":{"client_id":"c2","client_secret":"s"}}"#;
        let c = GooglePlayClient::from_credentials_json(installed)
            .unwrap()
            .unwrap();
        assert_eq!(c.token_uri, TOKEN_URI);
        assert_eq!(c.redirect_uri, "");
        assert_eq!(GooglePlayClient::from_credentials_json(" ").unwrap(), None);
        for bad in ["{", r#"{"other":{}}"#, r#"{"web":{"client_secret":"s"}}"#] {
            assert!(
                GooglePlayClient::from_credentials_json(bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn exchange_body_escapes_the_code() {
        let c = GooglePlayClient {
            client_id: "id".into(),
            client_secret: "s e/c".into(),
            token_uri: TOKEN_URI.into(),
            redirect_uri: String::new(),
        };
        assert_eq!(
            c.exchange_body("4/0A&x=1"),
            "grant_type=authorization_code&code=4%2F0A%26x%3D1&client_id=id&client_secret=s+e%2Fc"
        );
    }

    #[test]
    fn answers_are_checked() {
        assert_eq!(access_token(br#"{"access_token":"at"}"#).unwrap(), "at");
        assert!(access_token(br#"{"error":"invalid_grant"}"#).is_err());
        assert!(access_token(b"<html>").is_err());
        let p =
            player(br#"{"playerId":"p1","displayName":"Pat","originalPlayerId":"g1"}"#).unwrap();
        assert_eq!(
            (p.player_id.as_str(), p.original_player_id.as_str()),
            ("p1", "g1")
        );
        assert!(player(br#"{"displayName":"Pat"}"#).is_err());
    }
}
