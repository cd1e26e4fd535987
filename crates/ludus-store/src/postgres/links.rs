//! Linking and unlinking identities on the PostgreSQL backend, each one
//! transaction that first locks the user's row, so concurrent links and
//! unlinks of one user run one after the other: two unlinks can never each
//! see the other's identity and leave the account with none.
//!
//! Linking is rare, so these statements are not among the pool's prepared
//! ones.

use ludus_core::model::{Identity, LinkedIdentities, Provider};
use ludus_core::store::{StoreError, StoreResult};
use uuid::Uuid;

use super::errors::{Failure, with_retry};
use super::pool::Pool;

pub(super) async fn link_identity(
    pool: &Pool,
    user: Uuid,
    identity: &Identity,
    password_hash: Option<&str>,
    now: i64,
) -> StoreResult<()> {
    with_retry("link identity", || async {
        let mut conn = pool.get().await?;
        let tx = conn.client.transaction().await?;
        let touched = tx
            .execute(
                "UPDATE users SET update_time = $2 WHERE id = $1",
                &[&user, &now],
            )
            .await?;
        if touched == 0 {
            return Err(Failure::Fatal(StoreError::NotFound));
        }
        // Unique indexes refuse an identity another user holds (`IdentityTaken`).
        match identity {
            Identity::Device(device) => {
                let inserted = tx
                    .execute(
                        "INSERT INTO user_device (id, user_id) VALUES ($1, $2)
                         ON CONFLICT (id) DO NOTHING",
                        &[&device, &user],
                    )
                    .await?;
                if inserted == 0 {
                    let owner: Option<Uuid> = tx
                        .query_opt("SELECT user_id FROM user_device WHERE id = $1", &[&device])
                        .await?
                        .map(|row| row.try_get(0))
                        .transpose()?;
                    if owner != Some(user) {
                        return Err(Failure::Fatal(StoreError::IdentityTaken));
                    }
                }
            }
            Identity::Custom(custom) => {
                tx.execute(
                    "UPDATE users SET custom_id = $2 WHERE id = $1",
                    &[&user, &custom],
                )
                .await?;
            }
            Identity::Email(email) => {
                tx.execute(
                    "UPDATE users SET email = $2, password = $3 WHERE id = $1",
                    &[&user, &email.to_lowercase(), &password_hash],
                )
                .await?;
            }
            Identity::Username(_) => {
                return Err(Failure::Fatal(StoreError::Backend(
                    "a username is not an identity that can be linked".into(),
                )));
            }
            Identity::Social(provider, social_id) => {
                // The column's unique index refuses an id another user holds.
                let sql = format!("UPDATE users SET {} = $2 WHERE id = $1", provider.column());
                tx.execute(&sql, &[&user, &social_id]).await?;
            }
        }
        tx.commit().await?;
        Ok(())
    })
    .await
}

pub(super) async fn unlink_identity(
    pool: &Pool,
    user: Uuid,
    identity: &Identity,
    now: i64,
) -> StoreResult<bool> {
    with_retry("unlink identity", || async {
        let mut conn = pool.get().await?;
        let tx = conn.client.transaction().await?;
        let Some(row) = tx
            .query_opt(
                "SELECT email, custom_id, apple_id, facebook_id, facebook_instant_game_id,
                        gamecenter_id, google_id, steam_id
                 FROM users WHERE id = $1 FOR UPDATE",
                &[&user],
            )
            .await?
        else {
            return Ok(false);
        };
        let devices = tx
            .query("SELECT id FROM user_device WHERE user_id = $1", &[&user])
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<Vec<String>, _>>()?;
        let mut social = Vec::new();
        for (i, provider) in Provider::ALL.into_iter().enumerate() {
            if let Some(linked) = row.try_get::<_, Option<String>>(2 + i)? {
                social.push((provider, linked));
            }
        }
        let linked = LinkedIdentities {
            email: row.try_get(0)?,
            custom_id: row.try_get(1)?,
            devices,
            social,
        };
        if !linked.may_unlink(identity) {
            return Ok(false);
        }
        match identity {
            Identity::Device(device) => {
                tx.execute(
                    "DELETE FROM user_device WHERE id = $1 AND user_id = $2",
                    &[&device, &user],
                )
                .await?
            }
            Identity::Custom(_) => {
                tx.execute("UPDATE users SET custom_id = NULL WHERE id = $1", &[&user])
                    .await?
            }
            Identity::Email(_) => {
                tx.execute(
                    "UPDATE users SET email = NULL, password = NULL WHERE id = $1",
                    &[&user],
                )
                .await?
            }
            Identity::Username(_) => return Ok(false),
            Identity::Social(provider, _) => {
                let sql = format!(
                    "UPDATE users SET {} = NULL WHERE id = $1",
                    provider.column()
                );
                tx.execute(&sql, &[&user]).await?
            }
        };
        tx.execute(
            "UPDATE users SET update_time = $2 WHERE id = $1",
            &[&user, &now],
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    })
    .await
}
