//! Platform sign-in, linking and unlinking:
//! `POST /v2/account/{authenticate,link,unlink}/{apple,facebook,facebookinstantgame,gamecenter,google,steam}`,
//! in Nakama's request shapes (`account`, and `create`, `username` and, for
//! Facebook and Steam, `sync` in the query: import the platform friends,
//! asked for when signing in, done unless refused when linking) with its
//! hooks (`authenticateapple`, `linksteam`, `unlinkgoogle`, …). The checks
//! themselves are ludus-core's `SocialVerifier`.

use axum::extract::State;
use axum::response::Response;
use ludus_core::accounts::Credential;
use ludus_core::social_auth::{GameCenterProof, SocialCredential};
use ludus_proto::api;
use ludus_proto::pbjson_types::BoolValue;

use super::authenticate::{authenticate, create_param, username_param};
use super::json;
use super::link::hooked;
use crate::error::HttpError;
use crate::extract::{ProtoJson, QueryParams, ServerKey, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

fn sync_param(query: &QueryParams) -> Result<Option<BoolValue>, HttpError> {
    Ok(query.bool("sync")?.map(|value| BoolValue { value }))
}

fn apple(a: &api::AccountApple) -> SocialCredential {
    SocialCredential::Apple {
        token: a.token.clone(),
    }
}

fn facebook(a: &api::AccountFacebook) -> SocialCredential {
    SocialCredential::Facebook {
        token: a.token.clone(),
    }
}

fn instant(a: &api::AccountFacebookInstantGame) -> SocialCredential {
    SocialCredential::FacebookInstantGame {
        signed_player_info: a.signed_player_info.clone(),
    }
}

fn gamecenter(a: &api::AccountGameCenter) -> SocialCredential {
    SocialCredential::GameCenter(GameCenterProof {
        player_id: a.player_id.clone(),
        bundle_id: a.bundle_id.clone(),
        timestamp_ms: a.timestamp_seconds,
        salt: a.salt.clone(),
        signature: a.signature.clone(),
        public_key_url: a.public_key_url.clone(),
    })
}

fn google(a: &api::AccountGoogle) -> SocialCredential {
    SocialCredential::Google {
        token: a.token.clone(),
    }
}

fn steam(a: &api::AccountSteam) -> SocialCredential {
    SocialCredential::Steam {
        token: a.token.clone(),
    }
}

/// A sign-in handler: Nakama's request from the body and query, the before
/// hook, the sign-in, the after hook.
macro_rules! sign_in {
    ($name:ident, $api:literal, $account:ident, $request:ident, $credential:ident $(, $sync:ident)?) => {
        pub(super) async fn $name(
            State(state): State<AppState>,
            _: ServerKey,
            client: ClientAddr,
            query: QueryParams,
            ProtoJson(body): ProtoJson<api::$account>,
        ) -> Result<Response, HttpError> {
            let req = api::$request {
                account: Some(body),
                create: create_param(&query)?,
                username: username_param(&query),
                $($sync: sync_param(&query)?,)?
            };
            let req = runtime::before(&state, $api, None, client, req).await?;
            let account = req.account.clone().unwrap_or_default();
            let social = $credential(&account);
            let credential = Credential::Social(social.clone());
            let session =
                authenticate(&state, client, &req.username, &req.create, credential, account.vars).await?;
            $(
                if req.$sync.as_ref().is_some_and(|s| s.value)
                    && let Ok(who) = state.accounts.verify_access(&session.token)
                {
                    state
                        .social
                        .sync_friends(&state.accounts, who.user_id, &who.claims.username, &social)
                        .await;
                }
            )?
            runtime::after_sign_in(&state, $api, client, &session, &req).await;
            Ok(json(&session))
        }
    };
}

sign_in!(
    authenticate_apple,
    "authenticateapple",
    AccountApple,
    AuthenticateAppleRequest,
    apple
);
sign_in!(
    authenticate_facebook,
    "authenticatefacebook",
    AccountFacebook,
    AuthenticateFacebookRequest,
    facebook,
    sync
);
sign_in!(
    authenticate_facebook_instant_game,
    "authenticatefacebookinstantgame",
    AccountFacebookInstantGame,
    AuthenticateFacebookInstantGameRequest,
    instant
);
sign_in!(
    authenticate_gamecenter,
    "authenticategamecenter",
    AccountGameCenter,
    AuthenticateGameCenterRequest,
    gamecenter
);
sign_in!(
    authenticate_google,
    "authenticategoogle",
    AccountGoogle,
    AuthenticateGoogleRequest,
    google
);
sign_in!(
    authenticate_steam,
    "authenticatesteam",
    AccountSteam,
    AuthenticateSteamRequest,
    steam,
    sync
);

/// A link handler whose body is the account itself.
macro_rules! link {
    ($name:ident, $api:literal, $account:ident, $credential:ident) => {
        pub(super) async fn $name(
            State(state): State<AppState>,
            Session(caller): Session,
            client: ClientAddr,
            ProtoJson(body): ProtoJson<api::$account>,
        ) -> Result<Response, HttpError> {
            let user = caller.user_id;
            hooked(&state, $api, &caller, client, body, async |s, req| {
                s.accounts
                    .link(user, Credential::Social($credential(req)))
                    .await
            })
            .await
        }
    };
}

/// A link handler whose request wraps the account with `sync` (Facebook, Steam).
macro_rules! link_sync {
    ($name:ident, $api:literal, $account:ident, $request:ident, $credential:ident) => {
        pub(super) async fn $name(
            State(state): State<AppState>,
            Session(caller): Session,
            client: ClientAddr,
            query: QueryParams,
            ProtoJson(body): ProtoJson<api::$account>,
        ) -> Result<Response, HttpError> {
            let user = caller.user_id;
            let username = caller.claims.username.clone();
            let body = api::$request {
                account: Some(body),
                sync: sync_param(&query)?,
            };
            hooked(&state, $api, &caller, client, body, async |s, req| {
                let account = req.account.clone().unwrap_or_default();
                let social = $credential(&account);
                s.accounts
                    .link(user, Credential::Social(social.clone()))
                    .await?;
                // Linking imports unless told not to (Nakama's default).
                if req.sync.as_ref().is_none_or(|s| s.value) {
                    s.social
                        .sync_friends(&s.accounts, user, &username, &social)
                        .await;
                }
                Ok(())
            })
            .await
        }
    };
}

/// An unlink handler: the proof is checked, then its id unlinked.
macro_rules! unlink {
    ($name:ident, $api:literal, $account:ident, $credential:ident) => {
        pub(super) async fn $name(
            State(state): State<AppState>,
            Session(caller): Session,
            client: ClientAddr,
            ProtoJson(body): ProtoJson<api::$account>,
        ) -> Result<Response, HttpError> {
            let user = caller.user_id;
            hooked(&state, $api, &caller, client, body, async |s, req| {
                s.accounts.unlink_social(user, &$credential(req)).await
            })
            .await
        }
    };
}

link!(link_apple, "linkapple", AccountApple, apple);
link_sync!(
    link_facebook,
    "linkfacebook",
    AccountFacebook,
    LinkFacebookRequest,
    facebook
);
link!(
    link_facebook_instant_game,
    "linkfacebookinstantgame",
    AccountFacebookInstantGame,
    instant
);
link!(
    link_gamecenter,
    "linkgamecenter",
    AccountGameCenter,
    gamecenter
);
link!(link_google, "linkgoogle", AccountGoogle, google);
link_sync!(
    link_steam,
    "linksteam",
    AccountSteam,
    LinkSteamRequest,
    steam
);

unlink!(unlink_apple, "unlinkapple", AccountApple, apple);
unlink!(unlink_facebook, "unlinkfacebook", AccountFacebook, facebook);
unlink!(
    unlink_facebook_instant_game,
    "unlinkfacebookinstantgame",
    AccountFacebookInstantGame,
    instant
);
unlink!(
    unlink_gamecenter,
    "unlinkgamecenter",
    AccountGameCenter,
    gamecenter
);
unlink!(unlink_google, "unlinkgoogle", AccountGoogle, google);
unlink!(unlink_steam, "unlinksteam", AccountSteam, steam);
