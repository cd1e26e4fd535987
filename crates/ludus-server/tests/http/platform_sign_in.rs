//! Platform sign-in, linking and unlinking over REST against a stand-in for
//! the platforms, started by the test on 127.0.0.1: it serves Apple's,
//! Google's and Facebook's key sets, a Game Center certificate (a real X.509
//! one, made here), Facebook's Graph `/me` and Steam's ticket check. Tokens
//! are signed with RSA keys generated here; the server's own code checks
//! them. Each provider signs in (create false and true), links, unlinks and
//! refuses forged, expired and wrong-audience (or wrong-host) proofs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rsa::pkcs8::EncodePrivateKey as _;
use rsa::traits::PublicKeyParts as _;
use rsa::{Pkcs1v15Sign, RsaPrivateKey};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error, token, user_id};

both_backends!(
    every_platform_signs_in_links_and_unlinks,
    forged_expired_and_foreign_proofs_are_refused,
    platforms_that_fail_or_hang_are_named,
    lua_platform_functions_with_nakamas_arguments,
    platform_profiles_fill_empty_account_fields,
    google_play_games_auth_codes_sign_in_link_and_move_old_ids,
    linking_facebook_or_google_copies_the_profile,
    js_platform_functions_with_nakamas_arguments,
);

const BUNDLE: &str = "com.ludus.game";
const GOOGLE_CLIENT: &str = "ludus-client.apps.googleusercontent.com";
const FB_APP: &str = "4242";
const FBIG_SECRET: &str = "instant-secret";
const STEAM_KEY: &str = "steam-publisher-key";
const STEAM_APP: i64 = 480;
const GC_KEY_PATH: &str = "/public-key/gc-prod-9.cer";
const PLAY_CLIENT: &str = "play-client.apps.googleusercontent.com";
const PLAY_SECRET: &str = "play-secret";

/// The pairs of a form body (`+` and `%XX` decoded).
fn url_pairs(body: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        let bytes = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' && i + 2 < bytes.len() {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    };
    body.split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

/// The platforms' signing keys, made once per test.
struct Keys {
    signer: RsaPrivateKey,
    forger: RsaPrivateKey,
    /// DER of a certificate for `signer`'s key (Game Center).
    certificate: Vec<u8>,
}

fn keys() -> Arc<Keys> {
    let mut rng = rsa::rand_core::OsRng;
    let signer = RsaPrivateKey::new(&mut rng, 2048).unwrap();
    let forger = RsaPrivateKey::new(&mut rng, 2048).unwrap();
    let pem = signer.to_pkcs8_pem(rsa::pkcs8::LineEnding::LF).unwrap();
    let key = rcgen::KeyPair::from_pkcs8_pem_and_sign_algo(&pem, &rcgen::PKCS_RSA_SHA256).unwrap();
    let cert = rcgen::CertificateParams::new(vec!["static.gc.apple.com".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    Arc::new(Keys {
        signer,
        forger,
        certificate: cert.der().to_vec(),
    })
}

#[derive(Clone)]
struct StandIn {
    keys: Arc<Keys>,
    key_fetches: Arc<AtomicUsize>,
}

fn jwks(key: &RsaPrivateKey) -> Value {
    json!({"keys": [{
        "kty": "RSA", "kid": "kid-1", "alg": "RS256", "use": "sig",
        "n": URL_SAFE_NO_PAD.encode(key.n().to_bytes_be()),
        "e": URL_SAFE_NO_PAD.encode(key.e().to_bytes_be()),
    }]})
}

/// Starts the stand-in; answers its base URL.
async fn stand_in(state: StandIn) -> String {
    async fn keys(State(s): State<StandIn>) -> axum::Json<Value> {
        s.key_fetches.fetch_add(1, Ordering::SeqCst);
        axum::Json(jwks(&s.keys.signer))
    }
    async fn certificate(State(s): State<StandIn>) -> Vec<u8> {
        s.keys.certificate.clone()
    }
    async fn graph_me(Query(q): Query<Vec<(String, String)>>) -> axum::response::Response {
        let token = q
            .iter()
            .find(|(k, _)| k == "access_token")
            .map(|(_, v)| v.as_str());
        let fields = q
            .iter()
            .find(|(k, _)| k == "fields")
            .map(|(_, v)| v.as_str());
        assert_eq!(fields, Some("id,name,email,picture"));
        match token.and_then(|t| t.strip_prefix("fb-token:")) {
            // Players whose id starts with "mail-" granted the email scope.
            Some(id) if id.starts_with("mail-") => axum::Json(json!({"id": id, "name": "Fay",
                "email": format!("{id}@fb.example"),
                "picture": {"data": {"url": "https://example.com/fb.png"}}}))
            .into_response(),
            Some(id) => axum::Json(json!({"id": id, "name": "Fay"})).into_response(),
            None if token == Some("garbage") => "<html>oops</html>".into_response(),
            None => (
                axum::http::StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": {"message": "Invalid OAuth access token"}})),
            )
                .into_response(),
        }
    }
    async fn steam(Query(q): Query<Vec<(String, String)>>) -> axum::response::Response {
        let get = |name: &str| q.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        if get("key").as_deref() != Some(STEAM_KEY) || get("appid") != Some(STEAM_APP.to_string()) {
            return (axum::http::StatusCode::FORBIDDEN, "bad key").into_response();
        }
        let ticket = get("ticket").unwrap_or_default();
        if ticket == "garbage" {
            return "not json".into_response();
        }
        match ticket.strip_prefix("ticket:") {
            Some(id) => axum::Json(json!({"response": {"params": {
                "result": "OK", "steamid": id, "ownersteamid": id,
                "vacbanned": false, "publisherbanned": false}}}))
            .into_response(),
            None => axum::Json(json!({"response": {"error": {
                "errorcode": 101, "errordesc": "Invalid ticket"}}}))
            .into_response(),
        }
    }
    // Google's OAuth token endpoint: a code "play-code:PLAYER[:ORIGINAL]"
    // becomes the access token "at:PLAYER:ORIGINAL" for this client only.
    async fn play_token(body: String) -> axum::response::Response {
        let form: Vec<(String, String)> = url_pairs(&body);
        let get = |name: &str| {
            form.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        if get("grant_type") != Some("authorization_code")
            || get("client_id") != Some(PLAY_CLIENT)
            || get("client_secret") != Some(PLAY_SECRET)
            || get("redirect_uri") != Some("https://game.example/oauth")
        {
            return (
                axum::http::StatusCode::UNAUTHORIZED,
                axum::Json(json!({"error": "invalid_client"})),
            )
                .into_response();
        }
        match get("code").and_then(|c| c.strip_prefix("play-code:")) {
            Some(rest) => {
                let (player, original) = rest.split_once(':').unwrap_or((rest, ""));
                axum::Json(json!({"access_token": format!("at:{player}:{original}"),
                    "token_type": "Bearer", "expires_in": 3599}))
                .into_response()
            }
            None => (
                axum::http::StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": "invalid_grant"})),
            )
                .into_response(),
        }
    }
    async fn play_player(Query(q): Query<Vec<(String, String)>>) -> axum::response::Response {
        let token = q
            .iter()
            .find(|(k, _)| k == "access_token")
            .map(|(_, v)| v.as_str());
        match token.and_then(|t| t.strip_prefix("at:")) {
            Some(rest) => {
                let (player, original) = rest.split_once(':').unwrap_or((rest, ""));
                axum::Json(json!({"kind": "games#player", "playerId": player,
                    "displayName": "Pat", "avatarImageUrl": "https://example.com/pat.png",
                    "originalPlayerId": original}))
                .into_response()
            }
            None => (axum::http::StatusCode::UNAUTHORIZED, "bad token").into_response(),
        }
    }
    async fn hang() -> &'static str {
        tokio::time::sleep(Duration::from_secs(30)).await;
        "late"
    }
    let app = Router::new()
        .route("/auth/keys", get(keys))
        .route("/oauth2/v3/certs", get(keys))
        .route("/.well-known/oauth/openid/jwks/", get(keys))
        .route(GC_KEY_PATH, get(certificate))
        .route("/v22.0/me", get(graph_me))
        .route("/ISteamUserAuth/AuthenticateUserTicket/v1/", get(steam))
        .route("/hang/auth/keys", get(hang))
        .route("/token", post(play_token))
        .route("/games/v1/players/me", get(play_player))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn start(b: Backend, keys: &Arc<Keys>) -> (TestServer, Arc<AtomicUsize>) {
    start_tweaked(b, keys, |_| {}).await
}

async fn start_tweaked(
    b: Backend,
    keys: &Arc<Keys>,
    tweak: impl FnOnce(&mut ludus_server::Config),
) -> (TestServer, Arc<AtomicUsize>) {
    let fetches = Arc::new(AtomicUsize::new(0));
    let base = stand_in(StandIn {
        keys: keys.clone(),
        key_fetches: fetches.clone(),
    })
    .await;
    let t = TestServer::start_with(b, |c| {
        let s = &mut c.social;
        s.apple.bundle_id = BUNDLE.into();
        s.apple.base_url = base.clone();
        s.google.base_url = base.clone();
        s.google.client_ids = vec![GOOGLE_CLIENT.into()];
        s.facebook.base_url = base.clone();
        s.facebook_limited_login.base_url = base.clone();
        s.facebook_limited_login.app_id = FB_APP.into();
        s.facebook_instant_game.app_secret = FBIG_SECRET.into();
        s.gamecenter.base_url = base.clone();
        s.steam.base_url = base.clone();
        s.steam.publisher_key = STEAM_KEY.into();
        s.steam.app_id = STEAM_APP;
        s.timeout_ms.0 = 500;
        tweak(c);
    })
    .await;
    (t, fetches)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn id_token(key: &RsaPrivateKey, iss: &str, aud: &str, sub: &str, exp: i64) -> String {
    let claims = json!({"iss": iss, "aud": aud, "sub": sub, "exp": exp, "iat": now(),
        "email": "player@example.com"});
    signed_claims(key, claims)
}

fn signed_claims(key: &RsaPrivateKey, claims: Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","kid":"kid-1","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let digest = Sha256::digest(format!("{header}.{payload}"));
    let sig = key.sign(Pkcs1v15Sign::new::<Sha256>(), &digest).unwrap();
    format!("{header}.{payload}.{}", URL_SAFE_NO_PAD.encode(sig))
}

fn instant_info(player: &str, secret: &str) -> String {
    let payload = URL_SAFE_NO_PAD.encode(
        json!({"algorithm": "HMAC-SHA256", "issued_at": now(), "player_id": player,
            "request_payload": ""})
        .to_string(),
    );
    use hmac_sign::sign;
    format!("{}.{payload}", sign(secret.as_bytes(), payload.as_bytes()))
}

/// HMAC-SHA256 written out from its definition (RFC 2104), so the test
/// does not share the server's HMAC code.
mod hmac_sign {
    use base64::Engine as _;
    use sha2::{Digest as _, Sha256};
    pub(super) fn sign(key: &[u8], message: &[u8]) -> String {
        let mut k = [0u8; 64];
        k[..key.len()].copy_from_slice(key);
        let inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
        let outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
        let inner = Sha256::new()
            .chain_update(&inner)
            .chain_update(message)
            .finalize();
        let mac = Sha256::new()
            .chain_update(&outer)
            .chain_update(inner)
            .finalize();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac)
    }
}

fn gamecenter(key: &RsaPrivateKey, player: &str, url: &str, timestamp_ms: i64) -> Value {
    let salt = b"pinch of salt";
    let mut payload = player.as_bytes().to_vec();
    payload.extend(BUNDLE.as_bytes());
    payload.extend((timestamp_ms as u64).to_be_bytes());
    payload.extend(salt);
    let sig = key
        .sign(Pkcs1v15Sign::new::<Sha256>(), &Sha256::digest(&payload))
        .unwrap();
    json!({"player_id": player, "bundle_id": BUNDLE, "timestamp_seconds": timestamp_ms.to_string(),
        "salt": STANDARD.encode(salt), "signature": STANDARD.encode(sig), "public_key_url": url})
}

const GC_URL: &str = "https://static.gc.apple.com/public-key/gc-prod-9.cer";

/// Makes a good proof for a platform id.
type Proof<'a> = Box<dyn Fn(&str) -> Value + 'a>;

/// `(path name, account field, a good proof for an id)` of every platform.
fn platforms(keys: &Keys) -> Vec<(&'static str, &'static str, Proof<'_>)> {
    let exp = now() + 600;
    vec![
        (
            "apple",
            "apple_id",
            Box::new(
                move |id| json!({"token": id_token(&keys.signer, "https://appleid.apple.com", BUNDLE, id, exp)}),
            ),
        ),
        (
            "google",
            "google_id",
            Box::new(
                move |id| json!({"token": id_token(&keys.signer, "https://accounts.google.com", GOOGLE_CLIENT, id, exp)}),
            ),
        ),
        (
            "facebook",
            "facebook_id",
            Box::new(|id| json!({"token": format!("fb-token:{id}")})),
        ),
        (
            "facebookinstantgame",
            "facebook_instant_game_id",
            Box::new(|id| json!({"signed_player_info": instant_info(id, FBIG_SECRET)})),
        ),
        (
            "gamecenter",
            "gamecenter_id",
            Box::new(move |id| gamecenter(&keys.signer, id, GC_URL, now() * 1000)),
        ),
        (
            "steam",
            "steam_id",
            Box::new(|id| json!({"token": format!("ticket:{id}")})),
        ),
    ]
}

async fn every_platform_signs_in_links_and_unlinks(b: Backend) {
    let keys = keys();
    let (t, fetches) = start(b, &keys).await;
    for (name, field, proof) in platforms(&keys) {
        let path = format!("/v2/account/authenticate/{name}");
        let first = format!("{name}-player-1");
        // create=false finds no one.
        let r = t
            .post_key(&format!("{path}?create=false"), proof(&first))
            .await;
        assert_error(&r, 404, 5);
        // Sign-up, then sign-in to the same account.
        let r = t
            .post_key(&format!("{path}?username={name}user"), proof(&first))
            .await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        assert_eq!(r.body["created"], true, "{name}");
        let owner = r.body.clone();
        let r = t
            .post_key(&format!("{path}?create=false"), proof(&first))
            .await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        assert_eq!(r.body.get("created"), None, "{name}: created is false");
        assert_eq!(user_id(&r.body), user_id(&owner));
        let account = t.get_bearer("/v2/account", &token(&owner)).await;
        assert_eq!(account.body["user"][field], first.as_str(), "{name}");
        assert_eq!(account.body["user"]["username"], format!("{name}user"));
        // Apple's email comes with the sign-up, as in Nakama. Google's
        // token names the same email, which Apple's account already holds,
        // so Google's account goes without.
        let email = (name == "apple").then_some("player@example.com");
        assert_eq!(account.body["email"].as_str(), email, "{name}");

        // Another account cannot link an id that is taken.
        let other = t.device_session(&format!("{name}-linker-device")).await;
        let link = format!("/v2/account/link/{name}");
        let r = t.post_bearer(&link, &token(&other), proof(&first)).await;
        assert_error(&r, 409, 6);
        // It links one of its own, which then signs in to it.
        let second = format!("{name}-player-2");
        let r = t.post_bearer(&link, &token(&other), proof(&second)).await;
        assert_eq!(r.status, 200, "{name} link: {}", r.body);
        let r = t
            .post_key(&format!("{path}?create=false"), proof(&second))
            .await;
        assert_eq!(user_id(&r.body), user_id(&other), "{name}");
        let account = t.get_bearer("/v2/account", &token(&other)).await;
        assert_eq!(account.body["user"][field], second.as_str(), "{name}");

        // The owner's platform id is its only way in: it stays. Apple's
        // owner also has the token's email, which counts as a link (as in
        // Nakama), so its Apple id may go.
        let unlink = format!("/v2/account/unlink/{name}");
        let r = t.post_bearer(&unlink, &token(&owner), proof(&first)).await;
        if name == "apple" {
            assert_eq!(r.status, 200, "{}", r.body);
        } else {
            assert_error(&r, 403, 7);
        }
        // Unlinking someone else's id does nothing.
        let r = t.post_bearer(&unlink, &token(&other), proof(&first)).await;
        assert_error(&r, 403, 7);
        // The linker keeps its device, so its platform id goes.
        let r = t.post_bearer(&unlink, &token(&other), proof(&second)).await;
        assert_eq!(r.status, 200, "{name} unlink: {}", r.body);
        let account = t.get_bearer("/v2/account", &token(&other)).await;
        assert_eq!(account.body["user"].get(field), None, "{name}");
        let r = t
            .post_key(&format!("{path}?create=false"), proof(&second))
            .await;
        assert_error(&r, 404, 5);
    }
    // Apple, Google and Facebook Limited Login share one stand-in: each
    // fetched its keys once and used its cache after.
    assert_eq!(fetches.load(Ordering::SeqCst), 2, "apple and google keys");
}

async fn forged_expired_and_foreign_proofs_are_refused(b: Backend) {
    let keys = keys();
    let (t, _) = start(b, &keys).await;
    let exp = now() + 600;
    let apple = "https://appleid.apple.com";
    let google = "https://accounts.google.com";
    let fb = "https://www.facebook.com";
    let refused: Vec<(&str, Value)> = vec![
        (
            "apple",
            json!({"token": id_token(&keys.forger, apple, BUNDLE, "a", exp)}),
        ),
        (
            "apple",
            json!({"token": id_token(&keys.signer, apple, BUNDLE, "a", now() - 5)}),
        ),
        (
            "apple",
            json!({"token": id_token(&keys.signer, apple, "com.other", "a", exp)}),
        ),
        (
            "apple",
            json!({"token": id_token(&keys.signer, google, BUNDLE, "a", exp)}),
        ),
        (
            "google",
            json!({"token": id_token(&keys.forger, google, GOOGLE_CLIENT, "g", exp)}),
        ),
        (
            "google",
            json!({"token": id_token(&keys.signer, google, GOOGLE_CLIENT, "g", now() - 5)}),
        ),
        (
            "google",
            json!({"token": id_token(&keys.signer, google, "other-client", "g", exp)}),
        ),
        (
            "facebook",
            json!({"token": id_token(&keys.forger, fb, FB_APP, "f", exp)}),
        ),
        (
            "facebook",
            json!({"token": id_token(&keys.signer, fb, FB_APP, "f", now() - 5)}),
        ),
        (
            "facebook",
            json!({"token": id_token(&keys.signer, fb, "9999", "f", exp)}),
        ),
        ("facebook", json!({"token": "not-a-facebook-token"})),
        (
            "facebookinstantgame",
            json!({"signed_player_info": instant_info("p", "wrong")}),
        ),
        (
            "facebookinstantgame",
            json!({"signed_player_info": "no-dot"}),
        ),
        (
            "gamecenter",
            gamecenter(&keys.forger, "G:1", GC_URL, now() * 1000),
        ),
        (
            "gamecenter",
            gamecenter(
                &keys.signer,
                "G:1",
                "https://evil.example.com/public-key/gc-prod-9.cer",
                now() * 1000,
            ),
        ),
        (
            "gamecenter",
            gamecenter(
                &keys.signer,
                "G:1",
                "http://static.gc.apple.com/public-key/gc-prod-9.cer",
                now() * 1000,
            ),
        ),
        (
            "gamecenter",
            gamecenter(
                &keys.signer,
                "G:1",
                "https://127.0.0.1/public-key/gc-prod-9.cer",
                now() * 1000,
            ),
        ),
        (
            "gamecenter",
            gamecenter(&keys.signer, "G:1", GC_URL, (now() - 3 * 86_400) * 1000),
        ),
        ("steam", json!({"token": "bad-ticket"})),
    ];
    for (name, proof) in refused {
        let r = t
            .post_key(&format!("/v2/account/authenticate/{name}"), proof.clone())
            .await;
        let message = assert_error(&r, 401, 16);
        let provider = if name == "facebookinstantgame" {
            "facebook instant game"
        } else {
            name
        };
        assert!(
            message.starts_with(&format!("could not authenticate {provider} profile")),
            "{name}: {message}"
        );
    }
    // A good Limited Login token signs in (the Graph API is not asked).
    let good = id_token(&keys.signer, fb, FB_APP, "fb-limited-1", exp);
    let r = t
        .post_key("/v2/account/authenticate/facebook", json!({"token": good}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let account = t.get_bearer("/v2/account", &token(&r.body)).await;
    assert_eq!(account.body["user"]["facebook_id"], "fb-limited-1");
    // Required fields, as Nakama names them.
    let r = t
        .post_key("/v2/account/authenticate/apple", json!({}))
        .await;
    assert_eq!(assert_error(&r, 400, 3), "apple id token is required");
    let r = t
        .post_key(
            "/v2/account/authenticate/gamecenter",
            json!({"player_id": "p"}),
        )
        .await;
    assert_eq!(assert_error(&r, 400, 3), "gamecenter bundle id is required");
}

async fn platforms_that_fail_or_hang_are_named(b: Backend) {
    let keys = keys();
    let (t, _) = start(b, &keys).await;
    // Garbage answers.
    for (name, proof, says) in [
        (
            "facebook",
            json!({"token": "garbage"}),
            "facebook profile answer is not json",
        ),
        (
            "steam",
            json!({"token": "garbage"}),
            "steam answer is not json",
        ),
    ] {
        let r = t
            .post_key(&format!("/v2/account/authenticate/{name}"), proof)
            .await;
        let message = assert_error(&r, 401, 16);
        assert!(message.ends_with(says), "{name}: {message}");
    }
    // A platform that does not answer in time, and one that is not there.
    let hang = stand_in(StandIn {
        keys: keys.clone(),
        key_fetches: Arc::new(AtomicUsize::new(0)),
    })
    .await;
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    drop(t);
    for (base_url, says) in [
        (format!("{hang}/hang"), "no answer within"),
        (closed, "unreachable"),
    ] {
        let t = TestServer::start_with(b, |c| {
            c.social.apple.bundle_id = BUNDLE.into();
            c.social.apple.base_url = base_url.clone();
            c.social.timeout_ms.0 = 300;
        })
        .await;
        let started = std::time::Instant::now();
        let token = id_token(
            &keys.signer,
            "https://appleid.apple.com",
            BUNDLE,
            "a",
            now() + 60,
        );
        let r = t
            .post_key("/v2/account/authenticate/apple", json!({"token": token}))
            .await;
        let message = assert_error(&r, 401, 16);
        assert!(message.contains(says), "{message}");
        assert!(message.contains("apple keys"), "{message}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
    // Not configured: Nakama's FailedPrecondition.
    let t = TestServer::start(b).await;
    let r = t
        .post_key(
            "/v2/account/authenticate/steam",
            json!({"token": "ticket:1"}),
        )
        .await;
    assert_error(&r, 400, 9);
}

async fn lua_platform_functions_with_nakamas_arguments(b: Backend) {
    let keys = keys();
    let (t, _) = start_tweaked(b, &keys, |c| {
        crate::rpc::lua_config(c);
        c.runtime.max_rpc_payload_bytes = 1 << 16;
    })
    .await;
    let s = t.device_session("lua-platform-device").await;
    let out = platform_module(&t, &s, "lua_platforms", &keys, "lua").await;
    assert_platform_outcomes(&out, "lua", "user_id");
    // Only Steam stays linked to the caller; the platform sign-ups have their ids.
    let account = t.get_bearer("/v2/account", &token(&s)).await;
    let user = &account.body["user"];
    assert_eq!(user["steam_id"], "7656119002", "{user}");
    for field in [
        "apple_id",
        "google_id",
        "facebook_id",
        "facebook_instant_game_id",
        "gamecenter_id",
    ] {
        assert_eq!(user.get(field), None, "{field}: {user}");
    }
    assert_gamecenter_signs_in(&t, &keys, "lua", &out, "user_id").await;
}

/// Calls the platform RPC `rpc` of a Lua or JS module (`lang`) as the
/// session `s` with that language's proofs; answers what each call gave.
async fn platform_module(t: &TestServer, s: &Value, rpc: &str, keys: &Keys, lang: &str) -> Value {
    let proofs = module_proofs(keys, lang);
    let r = t
        .post_bearer(
            &format!("/v2/rpc/{rpc}"),
            &token(s),
            json!(proofs.to_string()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap()
}

/// What the Lua and JS platform modules both answer, the user id under
/// `id_key` (Lua's `user_id`, JS's `userId`).
fn assert_platform_outcomes(out: &Value, lang: &str, id_key: &str) {
    for call in [
        "apple_new",
        "google_new",
        "facebook_new",
        "instant_new",
        "gamecenter_new",
        "steam_new",
    ] {
        assert_eq!(out[call]["created"], true, "{call}: {out}");
    }
    assert_eq!(out["apple_new"]["username"], format!("{lang}apple"));
    assert_eq!(out["apple_again"]["created"], false, "{out}");
    assert_eq!(out["apple_again"][id_key], out["apple_new"][id_key]);
    let text = |call: &str| out[call].as_str().unwrap_or_default().to_owned();
    for (call, says) in [
        ("steam_no_create", "user account not found"),
        ("google_forged", "could not authenticate google"),
        ("link_taken", "error linking: apple id is already in use"),
        ("unlink_forged", "error unlinking: could not authenticate"),
    ] {
        assert!(text(call).contains(says), "{call}: {out}");
    }
    for call in [
        "link_apple",
        "link_google",
        "link_facebook",
        "link_instant",
        "link_gamecenter",
        "link_steam",
        "unlink_apple",
        "unlink_google",
        "unlink_facebook",
        "unlink_instant",
        "unlink_gamecenter",
    ] {
        assert!(out[call].is_object(), "{call}: {out}");
    }
}

/// The module's Game Center sign-up signs in again over REST.
async fn assert_gamecenter_signs_in(
    t: &TestServer,
    keys: &Keys,
    lang: &str,
    out: &Value,
    id_key: &str,
) {
    let r = t
        .post_key(
            "/v2/account/authenticate/gamecenter?create=false",
            gamecenter(&keys.signer, &format!("G:{lang}-1"), GC_URL, now() * 1000),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(json!(user_id(&r.body)), out["gamecenter_new"][id_key]);
}

/// The proofs the Lua and JS platform modules sign in, link and unlink
/// with, ids prefixed with `lang`; Game Center's timestamp as a number, as
/// modules pass it.
fn module_proofs(keys: &Keys, lang: &str) -> Value {
    let exp = now() + 600;
    let apple = |id: &str| id_token(&keys.signer, "https://appleid.apple.com", BUNDLE, id, exp);
    let google = |id: &str| {
        id_token(
            &keys.signer,
            "https://accounts.google.com",
            GOOGLE_CLIENT,
            id,
            exp,
        )
    };
    let proofs = json!({
        "apple": apple(&format!("{lang}-apple-1")),
        "apple2": apple(&format!("{lang}-apple-2")),
        "google": google(&format!("{lang}-google-1")),
        "google2": google(&format!("{lang}-google-2")),
        "forged": id_token(&keys.forger, "https://accounts.google.com", GOOGLE_CLIENT, "x", exp),
        "facebook": format!("fb-token:{lang}-fb-1"),
        "facebook2": format!("fb-token:{lang}-fb-2"),
        "instant": instant_info(&format!("{lang}-ig-1"), FBIG_SECRET),
        "instant2": instant_info(&format!("{lang}-ig-2"), FBIG_SECRET),
        "gamecenter": gamecenter(&keys.signer, &format!("G:{lang}-1"), GC_URL, now() * 1000),
        "gamecenter2": gamecenter(&keys.signer, &format!("G:{lang}-2"), GC_URL, now() * 1000),
        "steam": format!("ticket:{}1", steam_base(lang)),
        "steam2": format!("ticket:{}2", steam_base(lang)),
        "steam_unknown": format!("ticket:{}3", steam_base(lang)),
    });
    let mut proofs = proofs;
    for gc in ["gamecenter", "gamecenter2"] {
        let ts: i64 = proofs[gc]["timestamp_seconds"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        proofs[gc]["timestamp_seconds"] = json!(ts);
    }
    proofs
}

/// Steam ids of a language's players: 7656119001.. for Lua, 7656119101.. for JS.
fn steam_base(lang: &str) -> &'static str {
    if lang == "lua" {
        "765611900"
    } else {
        "765611910"
    }
}

/// Nakama copies a platform's name and picture into the account: Google's
/// at every sign-in and Facebook's at sign-up, never over the player's own.
async fn platform_profiles_fill_empty_account_fields(b: Backend) {
    let keys = keys();
    let (t, _) = start(b, &keys).await;
    let google = |name: &str| {
        signed_claims(
            &keys.signer,
            json!({"iss": "https://accounts.google.com", "aud": GOOGLE_CLIENT,
                "sub": "profile-google-1", "exp": now() + 600, "iat": now(),
                "name": name, "picture": "https://example.com/g.png"}),
        )
    };
    let r = t
        .post_key(
            "/v2/account/authenticate/google",
            json!({"token": google("Gail")}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let g = r.body;
    let user = t.get_bearer("/v2/account", &token(&g)).await.body["user"].clone();
    assert_eq!(user["display_name"], "Gail", "{user}");
    assert_eq!(user["avatar_url"], "https://example.com/g.png", "{user}");
    // The player's own name stays; an emptied avatar is filled again.
    let r = t
        .put_bearer(
            "/v2/account",
            &token(&g),
            json!({"display_name": "Mine", "avatar_url": ""}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = t
        .post_key(
            "/v2/account/authenticate/google",
            json!({"token": google("Other")}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let user = t.get_bearer("/v2/account", &token(&g)).await.body["user"].clone();
    assert_eq!(user["display_name"], "Mine", "{user}");
    assert_eq!(user["avatar_url"], "https://example.com/g.png", "{user}");

    // Facebook: the Graph profile's name at sign-up.
    let r = t
        .post_key(
            "/v2/account/authenticate/facebook",
            json!({"token": "fb-token:profile-fb-1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let user = t.get_bearer("/v2/account", &token(&r.body)).await.body["user"].clone();
    assert_eq!(user["display_name"], "Fay", "{user}");
}

/// With `google_auth.credentials_json` set, what is not a Google ID token
/// is tried as a Play Games server auth code (Nakama's `CheckGoogleToken`):
/// traded at the client's token endpoint, then the player read from Play
/// Games. An account holding the player's original Google id moves to the
/// Play Games id (Nakama's `RemapGoogleId`), on sign-in and on link.
async fn google_play_games_auth_codes_sign_in_link_and_move_old_ids(b: Backend) {
    let keys = keys();
    let (t, _) = start_tweaked(b, &keys, |c| {
        let token_uri = format!("{}/token", c.social.google.base_url);
        c.google_auth.credentials_json = json!({"web": {
            "client_id": PLAY_CLIENT, "client_secret": PLAY_SECRET,
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": token_uri,
            "redirect_uris": ["https://game.example/oauth"]}})
        .to_string();
    })
    .await;
    let path = "/v2/account/authenticate/google";
    // A new player by auth code: the Play Games profile fills the account.
    let r = t
        .post_key(
            &format!("{path}?username=pat"),
            json!({"token": "play-code:p-1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["created"], true);
    let pat = r.body;
    let account = t.get_bearer("/v2/account", &token(&pat)).await.body;
    assert_eq!(account["user"]["google_id"], "p-1", "{account}");
    assert_eq!(account["user"]["display_name"], "Pat", "{account}");
    assert_eq!(account["user"]["avatar_url"], "https://example.com/pat.png");
    let r = t
        .post_key(
            &format!("{path}?create=false"),
            json!({"token": "play-code:p-1"}),
        )
        .await;
    assert_eq!(user_id(&r.body), user_id(&pat), "{}", r.body);

    // An account made with an ID token (the player's original Google id)
    // moves to the Play Games id when the player signs in with a code.
    let exp = now() + 600;
    let google = "https://accounts.google.com";
    let old = t
        .post_key(
            path,
            json!({"token": id_token(&keys.signer, google, GOOGLE_CLIENT, "g-old-1", exp)}),
        )
        .await;
    assert_eq!(old.status, 200, "{}", old.body);
    let r = t
        .post_key(
            &format!("{path}?create=false"),
            json!({"token": "play-code:p-2:g-old-1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(user_id(&r.body), user_id(&old.body));
    let account = t.get_bearer("/v2/account", &token(&old.body)).await.body;
    assert_eq!(account["user"]["google_id"], "p-2", "{account}");
    let r = t
        .post_key(
            &format!("{path}?create=false"),
            json!({"token": id_token(&keys.signer, google, GOOGLE_CLIENT, "g-old-1", exp)}),
        )
        .await;
    assert_error(&r, 404, 5);

    // Link by code: the linker's account gets the Play Games id and, its
    // name being empty, the profile.
    let linker = t.device_session("play-linker-device").await;
    let r = t
        .post_bearer(
            "/v2/account/link/google",
            &token(&linker),
            json!({"token": "play-code:p-3"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let account = t.get_bearer("/v2/account", &token(&linker)).await.body;
    assert_eq!(account["user"]["google_id"], "p-3", "{account}");
    assert_eq!(account["user"]["display_name"], "Pat", "{account}");
    // A code for an id another account holds is refused as taken.
    let r = t
        .post_bearer(
            "/v2/account/link/google",
            &token(&linker),
            json!({"token": "play-code:p-1"}),
        )
        .await;
    assert_error(&r, 409, 6);
    // Unlink by code, the device staying.
    let r = t
        .post_bearer(
            "/v2/account/unlink/google",
            &token(&linker),
            json!({"token": "play-code:p-3"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // A code the token endpoint refuses, and a forged ID token that is no
    // code either, sign no one in and create nothing.
    for bad in [
        json!({"token": "stolen-code"}),
        json!({"token": id_token(&keys.forger, google, GOOGLE_CLIENT, "p-9", exp)}),
    ] {
        let r = t.post_key(path, bad).await;
        assert_error(&r, 401, 16);
        assert!(
            r.body["message"]
                .as_str()
                .unwrap_or_default()
                .contains("play games auth code"),
            "{}",
            r.body
        );
    }
}

/// Nakama's link copies Facebook's and Google's name and picture into the
/// empty fields of the account, and the platform's email: Ludus fills an
/// empty email only (Nakama overwrites it, changing how an email player
/// signs in).
async fn linking_facebook_or_google_copies_the_profile(b: Backend) {
    let keys = keys();
    let (t, _) = start(b, &keys).await;
    let player = t.device_session("fb-linker-device").await;
    let r = t
        .post_bearer(
            "/v2/account/link/facebook",
            &token(&player),
            json!({"token": "fb-token:mail-fb-1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let account = t.get_bearer("/v2/account", &token(&player)).await.body;
    assert_eq!(account["user"]["facebook_id"], "mail-fb-1", "{account}");
    assert_eq!(account["user"]["display_name"], "Fay", "{account}");
    assert_eq!(account["user"]["avatar_url"], "https://example.com/fb.png");
    assert_eq!(account["email"], "mail-fb-1@fb.example", "{account}");

    // An account with its own name and email keeps them.
    let r = t
        .post_key(
            "/v2/account/authenticate/email?username=emma",
            json!({"email": "emma@example.com", "password": "password-1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let emma = r.body;
    let r = t
        .put_bearer(
            "/v2/account",
            &token(&emma),
            json!({"display_name": "Emma"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let exp = now() + 600;
    let google_token = signed_claims(
        &keys.signer,
        json!({"iss": "https://accounts.google.com", "aud": GOOGLE_CLIENT,
            "sub": "link-google-1", "exp": exp, "iat": now(), "name": "Gail",
            "picture": "https://example.com/g.png", "email": "gail@example.com"}),
    );
    let r = t
        .post_bearer(
            "/v2/account/link/google",
            &token(&emma),
            json!({"token": google_token}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let account = t.get_bearer("/v2/account", &token(&emma)).await.body;
    assert_eq!(account["user"]["google_id"], "link-google-1", "{account}");
    assert_eq!(account["user"]["display_name"], "Emma", "{account}");
    assert_eq!(account["user"]["avatar_url"], "https://example.com/g.png");
    assert_eq!(account["email"], "emma@example.com", "{account}");
    // Her password still signs her in.
    let r = t
        .post_key(
            "/v2/account/authenticate/email?create=false",
            json!({"email": "emma@example.com", "password": "password-1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The JS twin of the Lua test above: Nakama's JS argument lists for every
/// platform's authenticate, link and unlink.
async fn js_platform_functions_with_nakamas_arguments(b: Backend) {
    let keys = keys();
    let (t, _) = start_tweaked(b, &keys, |c| {
        c.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js_platforms").into();
        c.runtime.max_rpc_payload_bytes = 1 << 16;
    })
    .await;
    let s = t.device_session("js-platform-device").await;
    let out = platform_module(&t, &s, "js_platforms", &keys, "js").await;
    assert_platform_outcomes(&out, "js", "userId");
    assert_eq!(out["facebook_new"]["username"], "jsfacebook");
    let text = |call: &str| out[call].as_str().unwrap_or_default().to_owned();
    assert!(
        text("unlink_steam_other").contains("error unlinking"),
        "{out}"
    );
    for call in [
        "link_device",
        "unlink_steam",
        "unlink_device",
        // The email linking Google brought (its token names one).
        "unlink_email",
    ] {
        assert!(out[call].is_object(), "{call}: {out}");
    }
    // Everything linked went again: only the first device is left.
    let account = t.get_bearer("/v2/account", &token(&s)).await;
    let user = &account.body["user"];
    for field in [
        "apple_id",
        "google_id",
        "facebook_id",
        "facebook_instant_game_id",
        "gamecenter_id",
        "steam_id",
    ] {
        assert_eq!(user.get(field), None, "{field}: {user}");
    }
    let devices: Vec<&str> = account.body["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(devices, ["js-platform-device"]);
    assert_eq!(account.body.get("email"), None, "{}", account.body);
    assert_gamecenter_signs_in(&t, &keys, "js", &out, "userId").await;
}
