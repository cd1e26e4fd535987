//! Sign-in and identities of Nakama's JS `nk`: `authenticate*` (device,
//! custom, email and the six platforms), `authenticateTokenGenerate`,
//! `link*` and `unlink*`, with Nakama's argument lists. The checks are the
//! server's (`AccountService`, `SocialVerifier`), as for REST and Lua;
//! Facebook's and Steam's `importFriends` (default true, as in Nakama)
//! imports the platform friends afterwards, as Lua's does.

use std::collections::BTreeMap;
use std::sync::Arc;

use ludus_core::accounts::Credential;
use ludus_core::model::Identity;
use ludus_core::social_auth::{GameCenterProof, SocialCredential};
use rquickjs::{Ctx, Object};
use serde_json::{Value as Json, json};

use super::nk_common::{Args, NkError, NkResult, answer, arg, define, nothing, served};
use super::shared::JsShared;
use crate::services::Authenticated;

type FromToken = fn(String) -> SocialCredential;

fn apple(token: String) -> SocialCredential {
    SocialCredential::Apple { token }
}
fn facebook(token: String) -> SocialCredential {
    SocialCredential::Facebook { token }
}
fn instant(signed_player_info: String) -> SocialCredential {
    SocialCredential::FacebookInstantGame { signed_player_info }
}
fn google(token: String) -> SocialCredential {
    SocialCredential::Google { token }
}
fn steam(token: String) -> SocialCredential {
    SocialCredential::Steam { token }
}

/// Game Center's six arguments from `first` on, in Nakama's order
/// (`playerId, bundleId, timestamp, salt, signature, publicKeyUrl`).
fn gamecenter(a: &Args, first: usize) -> Result<SocialCredential, NkError> {
    Ok(SocialCredential::GameCenter(GameCenterProof {
        player_id: a.string(first, "player id")?,
        bundle_id: a.string(first + 1, "bundle id")?,
        timestamp_ms: a.int_or(first + 2, 0, "timestamp")?,
        salt: a.string(first + 3, "salt")?,
        signature: a.string(first + 4, "signature")?,
        public_key_url: a.string(first + 5, "public key url")?,
    }))
}

/// Signs in with `credential`, `username` (empty: generated) and `create`
/// (default true), answering Nakama's `{userId, username, created}`.
fn authenticate(s: &JsShared, credential: Credential, a: &Args, from: usize) -> NkResult {
    signed_in(sign_in(s, credential, a, from)?)
}

fn sign_in(
    s: &JsShared,
    credential: Credential,
    a: &Args,
    from: usize,
) -> Result<Authenticated, NkError> {
    let username = a.string(from, "username")?;
    let create = a.bool_or(from + 1, true, "create")?;
    let services = s.services.clone();
    served(s, "error authenticating", async move {
        services.authenticate(credential, username, create).await
    })
}

fn signed_in(auth: Authenticated) -> NkResult {
    answer(json!({
        "userId": auth.user_id,
        "username": auth.username,
        "created": auth.created,
    }))
}

fn link(s: &JsShared, a: &Args, credential: Credential) -> NkResult {
    let user = a.uuid(0, "user id")?;
    let services = s.services.clone();
    served(s, "error linking", async move {
        services.link(user, credential).await
    })?;
    nothing()
}

/// Imports the platform friends of `user` (Facebook, Steam); a failed
/// import is logged by the service and the call stands, as in Nakama.
fn sync_friends(
    s: &JsShared,
    user: uuid::Uuid,
    username: String,
    social: SocialCredential,
) -> Result<(), NkError> {
    let services = s.services.clone();
    served(s, "error importing friends", async move {
        services.sync_friends(user, &username, social).await;
        Ok(())
    })
}

fn unlink_social(s: &JsShared, user: uuid::Uuid, credential: SocialCredential) -> NkResult {
    let services = s.services.clone();
    served(s, "error unlinking", async move {
        services.unlink_social(user, credential).await
    })?;
    nothing()
}

pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "authenticateDevice", |s, a| {
        let id = a.required(0, "id string")?;
        authenticate(s, Credential::Device { id }, a, 1)
    })?;
    define(ctx, nk, shared, "authenticateCustom", |s, a| {
        let id = a.required(0, "id string")?;
        authenticate(s, Credential::Custom { id }, a, 1)
    })?;
    define(ctx, nk, shared, "authenticateEmail", |s, a| {
        let email = a.required(0, "email")?;
        let password = a.required(1, "password")?;
        authenticate(s, Credential::Email { email, password }, a, 2)
    })?;
    // authenticateX(token, username?, create?)
    for (name, make) in [
        ("authenticateApple", apple as FromToken),
        ("authenticateFacebookInstantGame", instant),
        ("authenticateGoogle", google),
    ] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let token = a.required(0, "token")?;
            authenticate(s, Credential::Social(make(token)), a, 1)
        })?;
    }
    // authenticateX(token, importFriends?, username?, create?)
    for (name, make) in [
        ("authenticateFacebook", facebook as FromToken),
        ("authenticateSteam", steam),
    ] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let token = a.required(0, "token")?;
            let import = a.bool_or(1, true, "import friends")?;
            let social = make(token);
            let auth = sign_in(s, Credential::Social(social.clone()), a, 2)?;
            if import {
                // Nakama imports after signing in; a failed import is
                // logged, the sign-in stands.
                let user = uuid::Uuid::parse_str(&auth.user_id)
                    .map_err(|_| NkError::Server("error authenticating: no user id".into()))?;
                sync_friends(s, user, auth.username.clone(), social)?;
            }
            signed_in(auth)
        })?;
    }
    define(ctx, nk, shared, "authenticateGameCenter", |s, a| {
        let proof = gamecenter(a, 0)?;
        authenticate(s, Credential::Social(proof), a, 6)
    })?;
    define(ctx, nk, shared, "authenticateTokenGenerate", |s, a| {
        let user = a.uuid(0, "user id")?;
        let mut username = a.string(1, "username")?;
        if username.is_empty() {
            // Nakama signs a generated name when none is given; the user's
            // own is what a module means, so read it.
            let services = s.services.clone();
            let id = user.to_string();
            let found = served(s, "error generating token", async move {
                services.users(vec![id], Vec::new()).await
            })?;
            username = found
                .into_iter()
                .next()
                .map(|u| u.username)
                .unwrap_or_default();
        }
        let exp = a.int_or(2, 0, "expiry")?;
        let mut vars = BTreeMap::new();
        if let Some(o) = a.object(3, "vars")? {
            for (k, v) in o {
                let Json::String(v) = v else {
                    return Err(arg("expects vars to be an object of strings"));
                };
                vars.insert(k.clone(), v.clone());
            }
        }
        let (token, exp) = s
            .services
            .generate_token(user, &username, exp, vars)
            .map_err(|e| NkError::Server(format!("error generating token: {}", e.message)))?;
        answer(json!({ "token": token, "exp": exp }))
    })?;
    define(ctx, nk, shared, "linkDevice", |s, a| {
        let id = a.required(1, "device id")?;
        link(s, a, Credential::Device { id })
    })?;
    define(ctx, nk, shared, "linkCustom", |s, a| {
        let id = a.required(1, "custom id")?;
        link(s, a, Credential::Custom { id })
    })?;
    define(ctx, nk, shared, "linkEmail", |s, a| {
        let email = a.required(1, "email")?;
        let password = a.required(2, "password")?;
        link(s, a, Credential::Email { email, password })
    })?;
    // linkX(userId, token)
    for (name, make) in [
        ("linkApple", apple as FromToken),
        ("linkFacebookInstantGame", instant),
        ("linkGoogle", google),
    ] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let token = a.required(1, "token")?;
            link(s, a, Credential::Social(make(token)))
        })?;
    }
    // linkX(userId, username, token, importFriends?)
    for (name, make) in [
        ("linkFacebook", facebook as FromToken),
        ("linkSteam", steam),
    ] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let token = a.required(2, "token")?;
            let import = a.bool_or(3, true, "import friends")?;
            let social = make(token);
            let linked = link(s, a, Credential::Social(social.clone()))?;
            if import {
                let user = a.uuid(0, "user id")?;
                sync_friends(s, user, a.string(1, "username")?, social)?;
            }
            Ok(linked)
        })?;
    }
    define(ctx, nk, shared, "linkGameCenter", |s, a| {
        let proof = gamecenter(a, 1)?;
        link(s, a, Credential::Social(proof))
    })?;
    // unlinkDevice needs the id; unlinkCustom and unlinkEmail without one
    // unlink whichever is linked, as Lua's.
    for (name, identity, required) in [
        (
            "unlinkDevice",
            Identity::Device as fn(String) -> Identity,
            true,
        ),
        ("unlinkCustom", Identity::Custom, false),
        ("unlinkEmail", Identity::Email, false),
    ] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let user = a.uuid(0, "user id")?;
            let id = if required {
                a.required(1, "device id")?
            } else {
                a.string(1, "id")?
            };
            let services = s.services.clone();
            served(s, "error unlinking", async move {
                services.unlink(user, identity(id)).await
            })?;
            nothing()
        })?;
    }
    for (name, make) in [
        ("unlinkApple", apple as FromToken),
        ("unlinkFacebook", facebook),
        ("unlinkFacebookInstantGame", instant),
        ("unlinkGoogle", google),
        ("unlinkSteam", steam),
    ] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let user = a.uuid(0, "user id")?;
            let token = a.string(1, "token")?;
            unlink_social(s, user, make(token))
        })?;
    }
    define(ctx, nk, shared, "unlinkGameCenter", |s, a| {
        let user = a.uuid(0, "user id")?;
        unlink_social(s, user, gamecenter(a, 1)?)
    })?;
    Ok(())
}
