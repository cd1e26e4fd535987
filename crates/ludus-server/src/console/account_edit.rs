//! Changes to a game account from the console: its profile
//! (`POST /v2/console/account/{id}`, Nakama's `UpdateAccount`) and the
//! unlinking of a device, custom id, email or platform (Apple, Facebook,
//! Facebook Instant Games, Game Center, Google, Steam), behind `ACCOUNT`
//! write. The console needs no proof from the platform, but never unlinks
//! an account's last way in.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::post;
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::model::{AccountUpdate, Identity, Provider};
use serde::Deserialize;

use super::accounts::account_id;
use super::{Body, ConsoleRoutes, ConsoleState};
use crate::error::HttpError;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let need = Need::Permission(Resource::Account, Level::Write);
    r.add("/v2/console/account/{account_id}", need, post(update));
    r.add(
        "/v2/console/account/{account_id}/unlink/device",
        need,
        post(unlink_device),
    );
    r.add(
        "/v2/console/account/{account_id}/unlink/custom",
        need,
        post(unlink_custom),
    );
    r.add(
        "/v2/console/account/{account_id}/unlink/email",
        need,
        post(unlink_email),
    );
    for (segment, provider) in [
        ("apple", Provider::Apple),
        ("facebook", Provider::Facebook),
        ("facebookinstantgame", Provider::FacebookInstantGame),
        ("gamecenter", Provider::GameCenter),
        ("google", Provider::Google),
        ("steam", Provider::Steam),
    ] {
        r.add(
            &format!("/v2/console/account/{{account_id}}/unlink/{segment}"),
            need,
            post(
                move |State(state): State<ConsoleState>, Path(id): Path<String>| async move {
                    unlink_platform(&state, &id, provider).await
                },
            ),
        );
    }
}

/// Unlinks the platform's id the account holds; an account without one,
/// or with nothing else to sign in with, is refused with 403 as Nakama's
/// console refuses both.
async fn unlink_platform(
    state: &ConsoleState,
    id: &str,
    provider: Provider,
) -> Result<Response, HttpError> {
    let id = account_id(id)?;
    let user = state.app.accounts.account(id).await?.user;
    let linked = match provider {
        Provider::Apple => user.apple_id,
        Provider::Facebook => user.facebook_id,
        Provider::FacebookInstantGame => user.facebook_instant_game_id,
        Provider::GameCenter => user.gamecenter_id,
        Provider::Google => user.google_id,
        Provider::Steam => user.steam_id,
    };
    if linked.is_empty() {
        return Err(HttpError::new(
            ludus_core::Code::PermissionDenied,
            format!("the account has no {} id to unlink", provider.name()),
        ));
    }
    state
        .app
        .accounts
        .unlink(id, Identity::Social(provider, linked))
        .await?;
    Ok(crate::api::empty())
}

/// Nakama's `UpdateAccountRequest`; absent fields stay as they are.
#[derive(Deserialize, Default)]
#[serde(default)]
struct UpdateBody {
    username: Option<String>,
    display_name: Option<String>,
    metadata: Option<String>,
    avatar_url: Option<String>,
    lang_tag: Option<String>,
    location: Option<String>,
    timezone: Option<String>,
    custom_id: Option<serde_json::Value>,
    email: Option<serde_json::Value>,
    password: Option<serde_json::Value>,
    device_ids: Option<serde_json::Value>,
    wallet: Option<serde_json::Value>,
}

/// Changes the profile fields given, all or none. The sign-in identities
/// and the wallet are refused by name rather than ignored: they have
/// calls of their own (unlink, and the wallet through a module).
async fn update(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    Body(body): Body<UpdateBody>,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    let unsupported = [
        ("custom_id", body.custom_id.is_some()),
        ("email", body.email.is_some()),
        ("password", body.password.is_some()),
        ("device_ids", body.device_ids.is_some()),
        ("wallet", body.wallet.is_some()),
    ];
    if let Some((field, _)) = unsupported.iter().find(|(_, given)| *given) {
        return Err(HttpError::invalid(format!(
            "{field} cannot be changed from the console in this server, leave it out and use the unlink calls or a runtime module"
        )));
    }
    let update = AccountUpdate {
        username: body.username,
        display_name: body.display_name,
        avatar_url: body.avatar_url,
        lang_tag: body.lang_tag,
        location: body.location,
        timezone: body.timezone,
        metadata: body.metadata,
    };
    state.app.accounts.account(id).await?;
    state.app.accounts.update_account(id, update).await?;
    Ok(crate::api::empty())
}

/// Nakama's `UnlinkDeviceRequest` body.
#[derive(Deserialize, Default)]
#[serde(default)]
struct DeviceBody {
    device_id: String,
}

async fn unlink_device(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    Body(body): Body<DeviceBody>,
) -> Result<Response, HttpError> {
    unlink(&state, &id, Identity::Device(body.device_id)).await
}

async fn unlink_custom(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    unlink(&state, &id, Identity::Custom(String::new())).await
}

async fn unlink_email(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    unlink(&state, &id, Identity::Email(String::new())).await
}

/// Unlinks an identity; one the account does not have, or its last one,
/// is refused with 403, as Nakama's console refuses both.
async fn unlink(state: &ConsoleState, id: &str, identity: Identity) -> Result<Response, HttpError> {
    let id = account_id(id)?;
    let account = state.app.accounts.account(id).await?;
    let linked = match &identity {
        Identity::Custom(_) => account.custom_id.is_some(),
        Identity::Email(_) => account.email.is_some(),
        _ => true,
    };
    if !linked {
        return Err(HttpError::new(
            ludus_core::Code::PermissionDenied,
            "the account has no such identifier to unlink",
        ));
    }
    state.app.accounts.unlink(id, identity).await?;
    Ok(crate::api::empty())
}
