//! Linking and unlinking identities on the SQLite backend. Both run on the
//! writer inside its savepoint, so the identities read to decide an unlink
//! are the ones the unlink changes: no other write can come between.

use ludus_core::model::{Identity, LinkedIdentities, Provider};
use ludus_core::store::{StoreError, StoreResult};
use rusqlite::{Connection, OptionalExtension as _, params};
use uuid::Uuid;

use super::queries::{IdText, lower, map_err};

pub(super) fn link_identity(
    conn: &Connection,
    user: Uuid,
    identity: &Identity,
    password_hash: Option<&str>,
    now: i64,
) -> StoreResult<()> {
    let id = IdText::new(user);
    let touched = conn
        .prepare_cached("UPDATE users SET update_time = ?2 WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute(params![id, now]))
        .map_err(map_err)?;
    if touched == 0 {
        return Err(StoreError::NotFound);
    }
    // Unique indexes refuse an identity another user holds (`IdentityTaken`).
    match identity {
        Identity::Device(device) => {
            let owner: Option<String> = conn
                .prepare_cached("SELECT user_id FROM user_device WHERE id = ?1")
                .and_then(|mut stmt| stmt.query_row([device], |r| r.get(0)).optional())
                .map_err(map_err)?;
            match owner {
                Some(owner) if owner == user.to_string() => {}
                Some(_) => return Err(StoreError::IdentityTaken),
                None => {
                    conn.prepare_cached("INSERT INTO user_device (id, user_id) VALUES (?1, ?2)")
                        .and_then(|mut stmt| stmt.execute(params![device, id]))
                        .map_err(map_err)?;
                }
            }
        }
        Identity::Custom(custom) => {
            conn.prepare_cached("UPDATE users SET custom_id = ?2 WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute(params![id, custom]))
                .map_err(map_err)?;
        }
        Identity::Email(email) => {
            conn.prepare_cached("UPDATE users SET email = ?2, password = ?3 WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute(params![id, lower(email), password_hash]))
                .map_err(map_err)?;
        }
        Identity::Username(_) => {
            return Err(StoreError::Backend(
                "a username is not an identity that can be linked".into(),
            ));
        }
        Identity::Social(provider, social_id) => {
            let sql = format!("UPDATE users SET {} = ?2 WHERE id = ?1", provider.column());
            conn.prepare_cached(&sql)
                .and_then(|mut stmt| stmt.execute(params![id, social_id]))
                .map_err(map_err)?;
        }
    }
    Ok(())
}

pub(super) fn unlink_identity(
    conn: &Connection,
    user: Uuid,
    identity: &Identity,
    now: i64,
) -> StoreResult<bool> {
    let id = IdText::new(user);
    let Some(mut linked) = conn
        .prepare_cached(
            "SELECT email, custom_id, apple_id, facebook_id, facebook_instant_game_id,
                    gamecenter_id, google_id, steam_id
             FROM users WHERE id = ?1",
        )
        .and_then(|mut stmt| {
            stmt.query_row([&id], |r| {
                let mut social = Vec::new();
                for (i, provider) in Provider::ALL.into_iter().enumerate() {
                    if let Some(linked) = r.get::<_, Option<String>>(2 + i)? {
                        social.push((provider, linked));
                    }
                }
                Ok(LinkedIdentities {
                    email: r.get(0)?,
                    custom_id: r.get(1)?,
                    devices: Vec::new(),
                    social,
                })
            })
            .optional()
        })
        .map_err(map_err)?
    else {
        return Ok(false);
    };
    linked.devices = conn
        .prepare_cached("SELECT id FROM user_device WHERE user_id = ?1")
        .and_then(|mut stmt| {
            stmt.query_map([&id], |r| r.get(0))?
                .collect::<Result<Vec<String>, _>>()
        })
        .map_err(map_err)?;
    if !linked.may_unlink(identity) {
        return Ok(false);
    }
    let result = match identity {
        Identity::Device(device) => conn
            .prepare_cached("DELETE FROM user_device WHERE id = ?1 AND user_id = ?2")
            .and_then(|mut stmt| stmt.execute(params![device, id])),
        Identity::Custom(_) => conn
            .prepare_cached("UPDATE users SET custom_id = NULL WHERE id = ?1")
            .and_then(|mut stmt| stmt.execute([&id])),
        Identity::Email(_) => conn
            .prepare_cached("UPDATE users SET email = NULL, password = NULL WHERE id = ?1")
            .and_then(|mut stmt| stmt.execute([&id])),
        Identity::Username(_) => return Ok(false),
        Identity::Social(provider, _) => conn
            .prepare_cached(&format!(
                "UPDATE users SET {} = NULL WHERE id = ?1",
                provider.column()
            ))
            .and_then(|mut stmt| stmt.execute([&id])),
    };
    result.map_err(map_err)?;
    conn.prepare_cached("UPDATE users SET update_time = ?2 WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute(params![id, now]))
        .map_err(map_err)?;
    Ok(true)
}
