//! What the console keeps beside its users, on the PostgreSQL backend:
//! notes on accounts, ACL templates and settings, each call one statement.

use ludus_core::console_acl::Acl;
use ludus_core::console_records::{
    AccountNote, AclTemplate, ConsoleSetting, NoteWrite, NotesPosition,
};
use tokio_postgres::{Client, Row};
use uuid::Uuid;

use super::errors::Failure;

const NOTE_COLUMNS: &str = "id, user_id, note, create_time, update_time, create_id, update_id";

fn note_from_row(r: &Row) -> Result<AccountNote, Failure> {
    Ok(AccountNote {
        id: r.try_get(0)?,
        user_id: r.try_get(1)?,
        note: r.try_get(2)?,
        create_time_us: r.try_get(3)?,
        update_time_us: r.try_get(4)?,
        create_id: r.try_get(5)?,
        update_id: r.try_get(6)?,
    })
}

pub(super) async fn note_put(
    client: &Client,
    w: &NoteWrite,
) -> Result<Option<AccountNote>, Failure> {
    let sql = match w.create {
        true => format!(
            "INSERT INTO users_notes ({NOTE_COLUMNS})
             SELECT $1, $2, $3, $4, $4, $5, $5 WHERE EXISTS (SELECT 1 FROM users WHERE id = $2)
             RETURNING {NOTE_COLUMNS}"
        ),
        false => format!(
            "UPDATE users_notes SET note = $3, update_time = $4, update_id = $5
             WHERE id = $1 AND user_id = $2 RETURNING {NOTE_COLUMNS}"
        ),
    };
    let row = client
        .query_opt(&sql, &[&w.id, &w.user_id, &w.note, &w.now_us, &w.by])
        .await?;
    row.as_ref().map(note_from_row).transpose()
}

pub(super) async fn notes(
    client: &Client,
    user: Uuid,
    from: Option<NotesPosition>,
    limit: usize,
) -> Result<Vec<AccountNote>, Failure> {
    let limit = limit as i64 + 1;
    let rows = match from {
        Some(p) => {
            let sql = format!(
                "SELECT {NOTE_COLUMNS} FROM users_notes WHERE user_id = $1
                   AND (create_time, id) <= ($3, $4)
                 ORDER BY create_time DESC, id DESC LIMIT $2"
            );
            client
                .query(&sql, &[&user, &limit, &p.create_time_us, &p.id])
                .await?
        }
        None => {
            let sql = format!(
                "SELECT {NOTE_COLUMNS} FROM users_notes WHERE user_id = $1
                 ORDER BY create_time DESC, id DESC LIMIT $2"
            );
            client.query(&sql, &[&user, &limit]).await?
        }
    };
    rows.iter().map(note_from_row).collect()
}

pub(super) async fn note_delete(client: &Client, user: Uuid, id: Uuid) -> Result<bool, Failure> {
    let n = client
        .execute(
            "DELETE FROM users_notes WHERE id = $1 AND user_id = $2",
            &[&id, &user],
        )
        .await?;
    Ok(n > 0)
}

const TEMPLATE_COLUMNS: &str = "id, name, description, acl, create_time, update_time";

fn template_from_row(r: &Row) -> Result<AclTemplate, Failure> {
    let acl: String = r.try_get(3)?;
    Ok(AclTemplate {
        id: r.try_get(0)?,
        name: r.try_get(1)?,
        description: r.try_get(2)?,
        acl: Acl::from_json(&acl),
        create_time: r.try_get(4)?,
        update_time: r.try_get(5)?,
    })
}

pub(super) async fn template_add(client: &Client, t: &AclTemplate) -> Result<AclTemplate, Failure> {
    let sql = format!(
        "INSERT INTO console_acl_template ({TEMPLATE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING {TEMPLATE_COLUMNS}"
    );
    let row = client
        .query_one(
            &sql,
            &[
                &t.id,
                &t.name,
                &t.description,
                &t.acl.to_json(),
                &t.create_time,
                &t.update_time,
            ],
        )
        .await?;
    template_from_row(&row)
}

pub(super) async fn template_update(
    client: &Client,
    t: &AclTemplate,
) -> Result<Option<AclTemplate>, Failure> {
    let sql = format!(
        "UPDATE console_acl_template SET name = $2, description = $3, acl = $4, update_time = $5
         WHERE id = $1 RETURNING {TEMPLATE_COLUMNS}"
    );
    let row = client
        .query_opt(
            &sql,
            &[
                &t.id,
                &t.name,
                &t.description,
                &t.acl.to_json(),
                &t.update_time,
            ],
        )
        .await?;
    row.as_ref().map(template_from_row).transpose()
}

pub(super) async fn templates(client: &Client) -> Result<Vec<AclTemplate>, Failure> {
    let sql = format!("SELECT {TEMPLATE_COLUMNS} FROM console_acl_template ORDER BY name");
    let rows = client.query(&sql, &[]).await?;
    rows.iter().map(template_from_row).collect()
}

pub(super) async fn template_delete(client: &Client, id: Uuid) -> Result<bool, Failure> {
    let n = client
        .execute("DELETE FROM console_acl_template WHERE id = $1", &[&id])
        .await?;
    Ok(n > 0)
}

fn setting_from_row(r: &Row) -> Result<ConsoleSetting, Failure> {
    Ok(ConsoleSetting {
        name: r.try_get(0)?,
        value: r.try_get(1)?,
        update_time: r.try_get(2)?,
    })
}

pub(super) async fn settings(
    client: &Client,
    names: &[String],
) -> Result<Vec<ConsoleSetting>, Failure> {
    let rows = client
        .query(
            "SELECT name, value, update_time FROM setting
             WHERE cardinality($1::text[]) = 0 OR name = ANY($1::text[]) ORDER BY name",
            &[&names],
        )
        .await?;
    rows.iter().map(setting_from_row).collect()
}

pub(super) async fn setting_set(
    client: &Client,
    name: &str,
    value: &str,
    now: i64,
) -> Result<Option<ConsoleSetting>, Failure> {
    let row = client
        .query_opt(
            "UPDATE setting SET value = $2, update_time = $3 WHERE name = $1
             RETURNING name, value, update_time",
            &[&name, &value, &now],
        )
        .await?;
    row.as_ref().map(setting_from_row).transpose()
}
