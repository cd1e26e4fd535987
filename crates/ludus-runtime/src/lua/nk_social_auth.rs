//! `nk.authenticate_*`, `nk.link_*` and `nk.unlink_*` of the platforms
//! (Apple, Facebook, Facebook Instant Games, Game Center, Google, Steam),
//! with Nakama's argument lists; the checks are the server's
//! `SocialVerifier`, as for REST. Facebook's and Steam's `import_friends`
//! (default true, as in Nakama) imports the platform friends afterwards.

use std::sync::Arc;

use ludus_core::accounts::Credential;
use ludus_core::social_auth::{GameCenterProof, SocialCredential};
use mlua::{Lua, Table};

use super::nk_common::block_on;
use super::nk_server::{authenticate, parse_uuid, prefixed};
use super::shared::LuaShared;

/// A token-style credential (everything but Game Center).
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

/// Game Center's six arguments, in Nakama's order.
type GameCenterArgs = (String, String, i64, String, String, String);

fn gamecenter(
    (player_id, bundle_id, timestamp, salt, signature, public_key_url): GameCenterArgs,
) -> SocialCredential {
    SocialCredential::GameCenter(GameCenterProof {
        player_id,
        bundle_id,
        timestamp_ms: timestamp,
        salt,
        signature,
        public_key_url,
    })
}

/// `unlink_gamecenter`'s arguments: the user, then Game Center's six, each optional.
type UnlinkGameCenterArgs = (
    String,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
);

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    // authenticate_x(token [, username [, create]])
    for (name, make) in [
        ("authenticate_apple", apple as FromToken),
        ("authenticate_facebook_instant_game", instant),
        ("authenticate_google", google),
    ] {
        let s = shared.clone();
        nk.set(
            name,
            lua.create_function(
                move |_, (token, username, create): (String, Option<String>, Option<bool>)| {
                    authenticate(&s, Credential::Social(make(token)), username, create)
                },
            )?,
        )?;
    }
    // authenticate_x(token [, import_friends [, username [, create]]])
    for (name, make) in [
        ("authenticate_facebook", facebook as FromToken),
        ("authenticate_steam", steam),
    ] {
        let s = shared.clone();
        nk.set(
            name,
            lua.create_function(
                move |_,
                      (token, import, username, create): (
                    String,
                    Option<bool>,
                    Option<String>,
                    Option<bool>,
                )| {
                    let social = make(token);
                    let credential = Credential::Social(social.clone());
                    let (user_id, username, created) =
                        authenticate(&s, credential, username, create)?;
                    if import.unwrap_or(true) {
                        let uid = parse_uuid(&user_id)?;
                        block_on(&s, async {
                            s.services.sync_friends(uid, &username, social).await;
                            Ok(())
                        })?;
                    }
                    Ok((user_id, username, created))
                },
            )?,
        )?;
    }
    let s = shared.clone();
    nk.set(
        "authenticate_game_center",
        lua.create_function(
            move |_,
                  (player, bundle, timestamp, salt, signature, url, username, create): (
                String,
                String,
                i64,
                String,
                String,
                String,
                Option<String>,
                Option<bool>,
            )| {
                let proof = gamecenter((player, bundle, timestamp, salt, signature, url));
                authenticate(&s, Credential::Social(proof), username, create)
            },
        )?,
    )?;

    // link_x(user_id, token)
    for (name, make) in [
        ("link_apple", apple as FromToken),
        ("link_facebook_instant_game", instant),
        ("link_google", google),
    ] {
        let s = shared.clone();
        nk.set(
            name,
            lua.create_function(move |_, (user_id, token): (String, String)| {
                let uid = parse_uuid(&user_id)?;
                let linked = s.services.link(uid, Credential::Social(make(token)));
                block_on(&s, prefixed("error linking", linked))
            })?,
        )?;
    }
    // link_x(user_id, username, token [, import_friends])
    for (name, make) in [
        ("link_facebook", facebook as FromToken),
        ("link_steam", steam),
    ] {
        let s = shared.clone();
        nk.set(
            name,
            lua.create_function(
                move |_,
                      (user_id, username, token, import): (
                    String,
                    String,
                    String,
                    Option<bool>,
                )| {
                    let uid = parse_uuid(&user_id)?;
                    let social = make(token);
                    let linked = async {
                        s.services
                            .link(uid, Credential::Social(social.clone()))
                            .await?;
                        if import.unwrap_or(true) {
                            s.services.sync_friends(uid, &username, social).await;
                        }
                        Ok(())
                    };
                    block_on(&s, prefixed("error linking", linked))
                },
            )?,
        )?;
    }
    let s = shared.clone();
    nk.set(
        "link_gamecenter",
        lua.create_function(
            move |_,
                  (user_id, player, bundle, timestamp, salt, signature, url): (
                String,
                String,
                String,
                i64,
                String,
                String,
                String,
            )| {
                let uid = parse_uuid(&user_id)?;
                let proof = gamecenter((player, bundle, timestamp, salt, signature, url));
                let linked = s.services.link(uid, Credential::Social(proof));
                block_on(&s, prefixed("error linking", linked))
            },
        )?,
    )?;

    // unlink_x(user_id [, token]): the proof is checked as when linking.
    for (name, make) in [
        ("unlink_apple", apple as FromToken),
        ("unlink_facebook", facebook),
        ("unlink_facebook_instant_game", instant),
        ("unlink_google", google),
        ("unlink_steam", steam),
    ] {
        let s = shared.clone();
        nk.set(
            name,
            lua.create_function(move |_, (user_id, token): (String, Option<String>)| {
                let uid = parse_uuid(&user_id)?;
                let unlinked = s
                    .services
                    .unlink_social(uid, make(token.unwrap_or_default()));
                block_on(&s, prefixed("error unlinking", unlinked))
            })?,
        )?;
    }
    let s = shared.clone();
    nk.set(
        "unlink_gamecenter",
        lua.create_function(
            move |_,
                  (user_id, player, bundle, timestamp, salt, signature, url): UnlinkGameCenterArgs| {
                let uid = parse_uuid(&user_id)?;
                let proof = gamecenter((
                    player.unwrap_or_default(),
                    bundle.unwrap_or_default(),
                    timestamp.unwrap_or(0),
                    salt.unwrap_or_default(),
                    signature.unwrap_or_default(),
                    url.unwrap_or_default(),
                ));
                let unlinked = s.services.unlink_social(uid, proof);
                block_on(&s, prefixed("error unlinking", unlinked))
            },
        )?,
    )?;
    Ok(())
}
