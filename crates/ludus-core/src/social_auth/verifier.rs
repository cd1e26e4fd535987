//! `SocialVerifier`: turns what a client sends for a platform into the id
//! that platform vouches for, with Nakama's rules per provider. Remote calls
//! go through the [`SocialHttp`] seam, each bounded by `social.timeout_ms`;
//! signing keys are cached (an hour, or until a token names a key id not
//! seen yet, at most one such refresh per provider every ten seconds).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rsa::RsaPublicKey;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::gamecenter::{self, GameCenterProof};
use super::google_play::{self, GooglePlayClient};
use super::{instant, jwt};
use crate::error::{ApiError, Code};
use crate::model::Provider;
use crate::unix_now;
use crate::urlencode;

/// The server's outgoing HTTP, as platform sign-in and purchase validation
/// need it.
#[async_trait]
pub trait SocialHttp: Send + Sync + 'static {
    /// Fetches `url` within `timeout`; answers the status and body, or why
    /// no answer came.
    async fn get(&self, url: &str, timeout: Duration) -> Result<(u16, Vec<u8>), String>;

    /// Sends one request (`method` with `headers` and `body`) within
    /// `timeout`; answers as [`SocialHttp::get`].
    async fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), String>;
}

/// Keys under `social` (Nakama's names, and a `base_url` of ours per
/// provider, for tests and proxies).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SocialSettings {
    pub apple: AppleSettings,
    pub google: GoogleSettings,
    pub facebook: BaseUrl,
    pub facebook_limited_login: LimitedLoginSettings,
    pub facebook_instant_game: InstantGameSettings,
    pub gamecenter: GameCenterSettings,
    pub steam: SteamSettings,
    /// Longest wait for a provider's answer, in milliseconds.
    pub timeout_ms: TimeoutMs,
    /// Most friends one Facebook or Steam import reads from the platform.
    pub max_imported_friends: MaxImportedFriends,
    /// Google Play Games' OAuth client, read from Nakama's
    /// `google_auth.credentials_json` (not a `social` key).
    #[serde(skip)]
    pub google_play: Option<GooglePlayClient>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MaxImportedFriends(pub usize);

impl Default for MaxImportedFriends {
    fn default() -> Self {
        MaxImportedFriends(5_000)
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TimeoutMs(pub u64);

impl Default for TimeoutMs {
    fn default() -> Self {
        TimeoutMs(5_000)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct BaseUrl {
    pub base_url: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct AppleSettings {
    pub bundle_id: String,
    pub base_url: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct GoogleSettings {
    /// Audiences (OAuth client ids) a Google ID token must name; empty: any.
    pub client_ids: Vec<String>,
    pub base_url: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct LimitedLoginSettings {
    pub app_id: String,
    pub base_url: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct InstantGameSettings {
    pub app_secret: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GameCenterSettings {
    /// Oldest signature accepted, in seconds (0: any age).
    pub max_age_sec: i64,
    pub base_url: String,
}

impl Default for GameCenterSettings {
    fn default() -> Self {
        GameCenterSettings {
            max_age_sec: 86_400,
            base_url: String::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct SteamSettings {
    pub publisher_key: String,
    pub app_id: i64,
    pub base_url: String,
}

/// What a platform vouched for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The platform's id of the player.
    pub id: String,
    /// The email the platform gave, where it gives one (Apple, Google,
    /// Facebook).
    pub email: Option<String>,
    /// The player's name and picture, where the platform gives them
    /// (Google's ID token and Play Games, Facebook's profile).
    pub display_name: Option<String>,
    pub avatar_url: Option<String>,
    /// Play Games: the player's id before Google's per-game ids, when it
    /// differs from `id`; an account holding it moves to `id`.
    pub original_id: Option<String>,
}

impl From<String> for Verified {
    fn from(id: String) -> Self {
        Verified {
            id,
            email: None,
            display_name: None,
            avatar_url: None,
            original_id: None,
        }
    }
}

/// Where a friend import reads a player's platform friends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FriendSource {
    /// A Graph API access token with the `user_friends` permission.
    Facebook { token: String },
    /// A Steam session ticket, checked first to learn whose friends.
    SteamTicket { token: String },
    /// A Steam id already vouched for (an account's linked one).
    SteamId(String),
}

/// What a client presents for one platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocialCredential {
    Apple { token: String },
    Facebook { token: String },
    FacebookInstantGame { signed_player_info: String },
    GameCenter(GameCenterProof),
    Google { token: String },
    Steam { token: String },
}

impl SocialCredential {
    pub fn provider(&self) -> Provider {
        match self {
            SocialCredential::Apple { .. } => Provider::Apple,
            SocialCredential::Facebook { .. } => Provider::Facebook,
            SocialCredential::FacebookInstantGame { .. } => Provider::FacebookInstantGame,
            SocialCredential::GameCenter(_) => Provider::GameCenter,
            SocialCredential::Google { .. } => Provider::Google,
            SocialCredential::Steam { .. } => Provider::Steam,
        }
    }
}

const APPLE_URL: &str = "https://appleid.apple.com";
const GOOGLE_URL: &str = "https://www.googleapis.com";
const FACEBOOK_URL: &str = "https://graph.facebook.com";
const LIMITED_LOGIN_URL: &str = "https://limited.facebook.com";
const STEAM_URL: &str = "https://partner.steam-api.com";
const KEYS_TTL_SEC: i64 = 3_600;
const UNKNOWN_KID_REFRESH_SEC: i64 = 10;
const MAX_GAMECENTER_KEYS: usize = 32;

pub struct SocialVerifier {
    settings: SocialSettings,
    http: Option<Arc<dyn SocialHttp>>,
    apple_keys: KeyCache,
    google_keys: KeyCache,
    facebook_keys: KeyCache,
    /// Game Center certificates' keys by URL, with the time fetched.
    gamecenter_keys: Mutex<HashMap<String, (RsaPublicKey, i64)>>,
}

impl SocialVerifier {
    /// `http` None: providers that need a request answer `Unimplemented`.
    pub fn new(settings: SocialSettings, http: Option<Arc<dyn SocialHttp>>) -> Self {
        SocialVerifier {
            settings,
            http,
            apple_keys: KeyCache::default(),
            google_keys: KeyCache::default(),
            facebook_keys: KeyCache::default(),
            gamecenter_keys: Mutex::new(HashMap::new()),
        }
    }

    pub fn settings(&self) -> &SocialSettings {
        &self.settings
    }

    /// The platform's id for `credential`; bad input is `InvalidArgument`,
    /// a missing setting `FailedPrecondition`, anything the platform or its
    /// keys refuse (or a platform that cannot be reached) `Unauthenticated`,
    /// naming the provider and the reason.
    pub async fn verify(&self, credential: &SocialCredential) -> Result<Verified, ApiError> {
        self.check_input(credential)?;
        let provider = credential.provider();
        self.verified_id(credential).await.map_err(|why| {
            tracing::debug!(provider = provider.name(), reason = %why, "platform sign-in refused");
            ApiError::unauthenticated(format!(
                "could not authenticate {} profile: {why}",
                provider.name()
            ))
        })
    }

    fn check_input(&self, credential: &SocialCredential) -> Result<(), ApiError> {
        let s = &self.settings;
        let required = |value: &str, message: &'static str| {
            if value.is_empty() {
                Err(ApiError::invalid(message))
            } else {
                Ok(())
            }
        };
        match credential {
            SocialCredential::Apple { token } => {
                if s.apple.bundle_id.is_empty() {
                    return Err(not_configured("apple", "social.apple.bundle_id"));
                }
                required(token, "apple id token is required")
            }
            SocialCredential::Google { token } => {
                required(token, "google access token is required")
            }
            SocialCredential::Facebook { token } => {
                required(token, "facebook access token is required")
            }
            SocialCredential::FacebookInstantGame { signed_player_info } => {
                if s.facebook_instant_game.app_secret.is_empty() {
                    return Err(not_configured(
                        "facebook instant game",
                        "social.facebook_instant_game.app_secret",
                    ));
                }
                required(
                    signed_player_info,
                    "signed player info for a facebook instant game is required",
                )
            }
            SocialCredential::GameCenter(p) => {
                required(&p.bundle_id, "gamecenter bundle id is required")?;
                required(&p.player_id, "gamecenter player id is required")?;
                required(&p.public_key_url, "gamecenter public key url is required")?;
                required(&p.salt, "gamecenter salt is required")?;
                required(&p.signature, "gamecenter signature is required")?;
                if p.timestamp_ms == 0 {
                    return Err(ApiError::invalid("gamecenter timestamp is required"));
                }
                Ok(())
            }
            SocialCredential::Steam { token } => {
                if s.steam.publisher_key.is_empty() || s.steam.app_id == 0 {
                    return Err(not_configured(
                        "steam",
                        "social.steam.publisher_key and social.steam.app_id",
                    ));
                }
                required(token, "steam access token is required")
            }
        }
    }

    async fn verified_id(&self, credential: &SocialCredential) -> Result<Verified, String> {
        let s = &self.settings;
        match credential {
            SocialCredential::Apple { token } => {
                let url = format!("{}/auth/keys", base(&s.apple.base_url, APPLE_URL));
                let audiences = [s.apple.bundle_id.clone()];
                let claims = self
                    .id_token(
                        &self.apple_keys,
                        "apple",
                        &url,
                        token,
                        &["https://appleid.apple.com"],
                        &audiences,
                    )
                    .await?;
                let email = claims
                    .get("email")
                    .and_then(Value::as_str)
                    .filter(|e| !e.is_empty())
                    .map(str::to_owned);
                Ok(Verified {
                    email,
                    ..subject(&claims).into()
                })
            }
            SocialCredential::Google { token } => {
                let url = format!("{}/oauth2/v3/certs", base(&s.google.base_url, GOOGLE_URL));
                let claims = self
                    .id_token(
                        &self.google_keys,
                        "google",
                        &url,
                        token,
                        &["accounts.google.com", "https://accounts.google.com"],
                        &s.google.client_ids,
                    )
                    .await;
                match (claims, &s.google_play) {
                    (Ok(claims), _) => Ok(Verified {
                        email: claim_text(&claims, "email"),
                        display_name: claim_text(&claims, "name"),
                        avatar_url: claim_text(&claims, "picture"),
                        ..subject(&claims).into()
                    }),
                    // Not an ID token: perhaps a Play Games server auth
                    // code, as Nakama tries next.
                    (Err(why), Some(client)) => self
                        .play_games(client, token)
                        .await
                        .map_err(|play| format!("{why}; as a play games auth code: {play}")),
                    (Err(why), None) => Err(why),
                }
            }
            SocialCredential::Facebook { token } => {
                // A Limited Login token is a JWT; anything else is a Graph
                // API access token (Nakama tries them in this order).
                if token.split('.').count() == 3 {
                    let url = format!(
                        "{}/.well-known/oauth/openid/jwks/",
                        base(&s.facebook_limited_login.base_url, LIMITED_LOGIN_URL)
                    );
                    let audiences: Vec<String> = if s.facebook_limited_login.app_id.is_empty() {
                        Vec::new()
                    } else {
                        vec![s.facebook_limited_login.app_id.clone()]
                    };
                    let claims = self
                        .id_token(
                            &self.facebook_keys,
                            "facebook",
                            &url,
                            token,
                            &["https://www.facebook.com", "https://facebook.com"],
                            &audiences,
                        )
                        .await?;
                    return Ok(Verified {
                        email: claim_text(&claims, "email"),
                        display_name: claim_text(&claims, "name"),
                        avatar_url: claim_text(&claims, "picture"),
                        ..subject(&claims).into()
                    });
                }
                let url = format!(
                    "{}/v22.0/me?access_token={}&fields={}",
                    base(&s.facebook.base_url, FACEBOOK_URL),
                    urlencode::escape(token),
                    urlencode::escape("id,name,email,picture")
                );
                let body = self.get_ok("facebook profile", &url).await?;
                let profile: Value = serde_json::from_slice(&body)
                    .map_err(|_| "facebook profile answer is not json".to_owned())?;
                match profile.get("id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() => Ok(Verified {
                        email: profile["email"]
                            .as_str()
                            .filter(|e| !e.is_empty())
                            .map(str::to_owned),
                        display_name: profile["name"]
                            .as_str()
                            .filter(|n| !n.is_empty())
                            .map(str::to_owned),
                        avatar_url: profile["picture"]["data"]["url"]
                            .as_str()
                            .filter(|u| !u.is_empty())
                            .map(str::to_owned),
                        ..id.to_owned().into()
                    }),
                    _ => Err("facebook profile answer has no id".into()),
                }
            }
            SocialCredential::FacebookInstantGame { signed_player_info } => {
                instant::player_id(signed_player_info, &s.facebook_instant_game.app_secret)
                    .map(Into::into)
            }
            SocialCredential::GameCenter(proof) => {
                let path = gamecenter::check_key_url(&proof.public_key_url)?;
                let max_age = s.gamecenter.max_age_sec;
                // Game Center's timestamps are milliseconds; a client that
                // sends seconds is judged in seconds.
                let signed_at = if proof.timestamp_ms > 100_000_000_000 {
                    proof.timestamp_ms / 1000
                } else {
                    proof.timestamp_ms
                };
                if max_age > 0 && (unix_now() - signed_at).abs() > max_age {
                    return Err(format!(
                        "signature timestamp is more than {max_age} seconds from now"
                    ));
                }
                let url = if s.gamecenter.base_url.is_empty() {
                    proof.public_key_url.clone()
                } else {
                    format!("{}{path}", s.gamecenter.base_url.trim_end_matches('/'))
                };
                let key = self.gamecenter_key(&url).await?;
                gamecenter::verify(proof, &key)?;
                Ok(proof.player_id.clone().into())
            }
            SocialCredential::Steam { token } => {
                let url = format!(
                    "{}/ISteamUserAuth/AuthenticateUserTicket/v1/?format=json&key={}&appid={}&ticket={}",
                    base(&s.steam.base_url, STEAM_URL),
                    urlencode::escape(&s.steam.publisher_key),
                    s.steam.app_id,
                    urlencode::escape(token)
                );
                let body = self.get_ok("steam", &url).await?;
                let answer: Value = serde_json::from_slice(&body)
                    .map_err(|_| "steam answer is not json".to_owned())?;
                let response = &answer["response"];
                if let Some(error) = response.get("error") {
                    return Err(format!(
                        "steam refused the ticket: {}, {}",
                        error["errordesc"].as_str().unwrap_or(""),
                        error["errorcode"]
                    ));
                }
                match response["params"]["steamid"].as_str() {
                    Some(id) if !id.is_empty() => Ok(id.to_owned().into()),
                    _ => Err("steam answer has no steam id".into()),
                }
            }
        }
    }

    /// The platform ids of a player's friends on Facebook (every page of the
    /// Graph API's `/me/friends`: friends who also play) or Steam (the Web
    /// API's friend list; a private one counts as empty, as in Nakama), at
    /// most `social.max_imported_friends` of them. A platform that refuses
    /// or fails is `Unauthenticated`, naming it and the reason.
    pub async fn friend_ids(
        &self,
        source: &FriendSource,
    ) -> Result<(Provider, Vec<String>), ApiError> {
        let (provider, listed) = match source {
            FriendSource::Facebook { token } => {
                if token.is_empty() {
                    return Err(ApiError::invalid("facebook token is required"));
                }
                (Provider::Facebook, self.facebook_friends(token).await)
            }
            FriendSource::SteamTicket { token } => {
                let steam_id = self
                    .verify(&SocialCredential::Steam {
                        token: token.clone(),
                    })
                    .await?
                    .id;
                (Provider::Steam, self.steam_friends(&steam_id).await)
            }
            FriendSource::SteamId(steam_id) => {
                if self.settings.steam.publisher_key.is_empty() {
                    return Err(not_configured("steam", "social.steam.publisher_key"));
                }
                (Provider::Steam, self.steam_friends(steam_id).await)
            }
        };
        listed.map(|ids| (provider, ids)).map_err(|why| {
            tracing::info!(provider = provider.name(), reason = %why, "friend import refused");
            ApiError::unauthenticated(format!(
                "could not import {} friends: {why}",
                provider.name()
            ))
        })
    }

    async fn facebook_friends(&self, token: &str) -> Result<Vec<String>, String> {
        let max = self.settings.max_imported_friends.0;
        let base = base(&self.settings.facebook.base_url, FACEBOOK_URL);
        let mut ids = Vec::new();
        let mut after = String::new();
        while ids.len() < max {
            let mut url = format!(
                "{base}/v22.0/me/friends?access_token={}",
                urlencode::escape(token)
            );
            if !after.is_empty() {
                url.push_str(&format!("&after={}", urlencode::escape(&after)));
            }
            let body = self.get_ok("facebook friends", &url).await?;
            let page: Value = serde_json::from_slice(&body)
                .map_err(|_| "facebook friends answer is not json".to_owned())?;
            let Some(data) = page["data"].as_array() else {
                return Err("facebook friends answer has no data".into());
            };
            ids.extend(
                data.iter()
                    .filter_map(|f| f["id"].as_str())
                    .filter(|id| !id.is_empty())
                    .map(str::to_owned),
            );
            let next = page["paging"]["next"].as_str().unwrap_or_default();
            let cursor = page["paging"]["cursors"]["after"]
                .as_str()
                .unwrap_or_default();
            // A page with nothing on it, or a cursor that does not move,
            // ends the walk: a broken answer never loops.
            if next.is_empty() || cursor.is_empty() || cursor == after || data.is_empty() {
                break;
            }
            after = cursor.to_owned();
        }
        ids.truncate(max);
        Ok(ids)
    }

    async fn steam_friends(&self, steam_id: &str) -> Result<Vec<String>, String> {
        let s = &self.settings.steam;
        let url = format!(
            "{}/ISteamUser/GetFriendList/v0001/?key={}&steamid={}&relationship=friend",
            base(&s.base_url, STEAM_URL),
            urlencode::escape(&s.publisher_key),
            urlencode::escape(steam_id)
        );
        let Some(http) = &self.http else {
            return Err("steam friends: this server makes no outgoing requests".into());
        };
        let timeout = Duration::from_millis(self.settings.timeout_ms.0.max(1));
        let body = match http.get(&url, timeout).await {
            Ok((200, body)) => body,
            // Steam answers 401 for a private profile or friend list.
            Ok((401, _)) => return Ok(Vec::new()),
            Ok((status, _)) => return Err(format!("steam friends answered http {status}")),
            Err(e) => return Err(format!("steam friends unreachable: {e}")),
        };
        let answer: Value = serde_json::from_slice(&body)
            .map_err(|_| "steam friends answer is not json".to_owned())?;
        // Steam spells it `friendslist`; Nakama's decoder takes any case.
        let list = answer
            .get("friendslist")
            .or_else(|| answer.get("friendsList"));
        let Some(friends) = list.and_then(|l| l["friends"].as_array()) else {
            return Err("steam friends answer has no friend list".into());
        };
        Ok(friends
            .iter()
            .filter_map(|f| f["steamid"].as_str())
            .filter(|id| !id.is_empty())
            .take(self.settings.max_imported_friends.0)
            .map(str::to_owned)
            .collect())
    }

    /// Verifies an RS256 ID token with the provider's cached keys.
    async fn id_token(
        &self,
        cache: &KeyCache,
        provider: &str,
        url: &str,
        token: &str,
        issuers: &[&str],
        audiences: &[String],
    ) -> Result<serde_json::Map<String, Value>, String> {
        let kid = jwt::key_id(token).map_err(|e| e.to_string())?;
        let mut lookup = cache.find(&kid, unix_now());
        if let Lookup::Refresh = lookup {
            // One fetch at a time; those who waited for it look again, and
            // do not fetch again within `UNKNOWN_KID_REFRESH_SEC`, so an
            // outage costs one timeout, not one per waiting request.
            let _one_fetch = cache.fetching.lock().await;
            lookup = cache.find(&kid, unix_now());
            if let Lookup::Refresh = lookup {
                cache.attempted(unix_now());
                let fetched = self
                    .get_ok(&format!("{provider} keys"), url)
                    .await
                    .and_then(|body| {
                        jwt::parse_jwks(&body).map_err(|e| format!("{provider} keys unusable: {e}"))
                    });
                match fetched {
                    Ok(keys) => cache.store(keys, unix_now()),
                    Err(e) => cache.failed(e),
                }
                lookup = cache.find(&kid, unix_now());
            }
        }
        let key = match lookup {
            Lookup::Found(key) => key,
            _ => {
                return Err(cache.last_error().unwrap_or_else(|| {
                    format!("token key id {kid:?} is not one of {provider}'s keys")
                }));
            }
        };
        let expected = jwt::Expected {
            issuers,
            audiences,
            now: unix_now(),
        };
        jwt::verify(token, &key, &expected).map_err(|e| e.to_string())
    }

    async fn gamecenter_key(&self, url: &str) -> Result<RsaPublicKey, String> {
        let now = unix_now();
        if let Some((key, at)) = lock(&self.gamecenter_keys).get(url)
            && now - at < KEYS_TTL_SEC
        {
            return Ok(key.clone());
        }
        let body = self.get_ok("gamecenter public key", url).await?;
        let key = gamecenter::certificate_key(&body)?;
        let mut keys = lock(&self.gamecenter_keys);
        if keys.len() >= MAX_GAMECENTER_KEYS {
            keys.clear();
        }
        keys.insert(url.to_owned(), (key.clone(), now));
        Ok(key)
    }

    /// Trades a Play Games server auth code for an access token at the
    /// OAuth client's token endpoint, then reads the player.
    async fn play_games(&self, client: &GooglePlayClient, code: &str) -> Result<Verified, String> {
        let Some(http) = &self.http else {
            return Err("this server makes no outgoing requests".into());
        };
        let timeout = Duration::from_millis(self.settings.timeout_ms.0.max(1));
        let headers = [("content-type", "application/x-www-form-urlencoded")];
        let body = client.exchange_body(code).into_bytes();
        let access = match http
            .send("POST", &client.token_uri, &headers, body, timeout)
            .await
        {
            Ok((200, body)) => google_play::access_token(&body)?,
            Ok((status, _)) => return Err(format!("token endpoint answered http {status}")),
            Err(e) => return Err(format!("token endpoint unreachable: {e}")),
        };
        let url = format!(
            "{}/games/v1/players/me?access_token={}",
            base(&self.settings.google.base_url, GOOGLE_URL),
            urlencode::escape(&access)
        );
        let player = google_play::player(&self.get_ok("play games player", &url).await?)?;
        let text = |s: String| (!s.is_empty()).then_some(s);
        let original = text(player.original_player_id).filter(|o| *o != player.player_id);
        Ok(Verified {
            id: player.player_id,
            email: None,
            display_name: text(player.display_name),
            avatar_url: text(player.avatar_image_url),
            original_id: original,
        })
    }

    /// A GET that must answer 200.
    async fn get_ok(&self, what: &str, url: &str) -> Result<Vec<u8>, String> {
        let Some(http) = &self.http else {
            return Err(format!("{what}: this server makes no outgoing requests"));
        };
        let timeout = Duration::from_millis(self.settings.timeout_ms.0.max(1));
        match http.get(url, timeout).await {
            Ok((200, body)) => Ok(body),
            Ok((status, _)) => Err(format!("{what} answered http {status}")),
            Err(e) => Err(format!("{what} unreachable: {e}")),
        }
    }
}

fn not_configured(provider: &str, keys: &str) -> ApiError {
    ApiError::new(
        Code::FailedPrecondition,
        format!("{provider} authentication is not configured, set {keys}"),
    )
}

fn claim_text(claims: &serde_json::Map<String, Value>, name: &str) -> Option<String> {
    claims
        .get(name)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

fn subject(claims: &serde_json::Map<String, Value>) -> String {
    claims["sub"].as_str().unwrap_or_default().to_owned()
}

fn base<'a>(configured: &'a str, default: &'a str) -> &'a str {
    if configured.is_empty() {
        default
    } else {
        configured.trim_end_matches('/')
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
struct KeyCache {
    state: Mutex<KeyState>,
    /// One fetch at a time per provider.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct KeyState {
    keys: Vec<(String, RsaPublicKey)>,
    /// When the keys were fetched (0: never).
    fetched_at: i64,
    /// When a fetch was last tried, whatever came of it.
    attempted_at: i64,
    /// Why the last fetch failed, until one succeeds.
    error: Option<String>,
}

enum Lookup {
    Found(RsaPublicKey),
    Refresh,
    Unknown,
}

impl KeyCache {
    fn find(&self, kid: &str, now: i64) -> Lookup {
        let state = lock(&self.state);
        let fresh = now - state.fetched_at < KEYS_TTL_SEC;
        let may_fetch = now - state.attempted_at >= UNKNOWN_KID_REFRESH_SEC;
        match state.keys.iter().find(|(k, _)| k == kid) {
            // Stale keys still serve while a fetch was tried just now.
            Some((_, key)) if fresh || !may_fetch => Lookup::Found(key.clone()),
            _ if may_fetch => Lookup::Refresh,
            _ => Lookup::Unknown,
        }
    }

    fn attempted(&self, now: i64) {
        lock(&self.state).attempted_at = now;
    }

    fn store(&self, keys: Vec<(String, RsaPublicKey)>, now: i64) {
        let mut state = lock(&self.state);
        state.keys = keys;
        state.fetched_at = now;
        state.error = None;
    }

    fn failed(&self, error: String) {
        lock(&self.state).error = Some(error);
    }

    fn last_error(&self) -> Option<String> {
        lock(&self.state).error.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts requests and fails them all.
    struct Down(std::sync::atomic::AtomicUsize);

    #[async_trait]
    impl SocialHttp for Down {
        async fn get(&self, _: &str, _: Duration) -> Result<(u16, Vec<u8>), String> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err("connection refused".into())
        }

        async fn send(
            &self,
            _: &str,
            url: &str,
            _: &[(&str, &str)],
            _: Vec<u8>,
            timeout: Duration,
        ) -> Result<(u16, Vec<u8>), String> {
            self.get(url, timeout).await
        }
    }

    /// Regression: while a platform was down, every sign-in waited for a
    /// fetch of its own, one after the other behind the fetch lock.
    #[tokio::test]
    async fn a_platform_that_is_down_is_asked_once_per_interval() {
        let down = Arc::new(Down(Default::default()));
        let mut settings = SocialSettings::default();
        settings.apple.bundle_id = "com.game".into();
        let verifier = SocialVerifier::new(settings, Some(down.clone()));
        let token = format!(
            "{}.e30.c2ln",
            base64::Engine::encode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                r#"{"alg":"RS256","kid":"k1"}"#
            )
        );
        let credential = SocialCredential::Apple { token };
        for _ in 0..3 {
            let e = verifier.verify(&credential).await.unwrap_err();
            assert_eq!(e.code, Code::Unauthenticated);
            assert!(
                e.message
                    .contains("apple keys unreachable: connection refused"),
                "{}",
                e.message
            );
        }
        assert_eq!(down.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn query_values_are_escaped() {
        assert_eq!(urlencode::escape("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
