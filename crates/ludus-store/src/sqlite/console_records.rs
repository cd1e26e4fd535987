//! What the console keeps beside its users, on the SQLite backend: notes on
//! accounts, ACL templates and settings. Writes run on the writer inside
//! its transaction, reads on the reader threads.

use ludus_core::console_acl::Acl;
use ludus_core::console_records::{
    AccountNote, AclTemplate, ConsoleSetting, NoteWrite, NotesPosition,
};
use ludus_core::store::StoreResult;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use super::queries::{IdText, map_err, uuid_at};

const NOTE_COLUMNS: &str = "id, user_id, note, create_time, update_time, create_id, update_id";

fn note_from_row(r: &Row<'_>) -> rusqlite::Result<AccountNote> {
    Ok(AccountNote {
        id: uuid_at(r, 0)?,
        user_id: uuid_at(r, 1)?,
        note: r.get(2)?,
        create_time_us: r.get(3)?,
        update_time_us: r.get(4)?,
        create_id: uuid_at(r, 5)?,
        update_id: uuid_at(r, 6)?,
    })
}

pub(super) fn note_put(conn: &Connection, w: &NoteWrite) -> StoreResult<Option<AccountNote>> {
    let sql = match w.create {
        true => format!(
            "INSERT INTO users_notes ({NOTE_COLUMNS})
             SELECT ?1, ?2, ?3, ?4, ?4, ?5, ?5 WHERE EXISTS (SELECT 1 FROM users WHERE id = ?2)
             RETURNING {NOTE_COLUMNS}"
        ),
        false => format!(
            "UPDATE users_notes SET note = ?3, update_time = ?4, update_id = ?5
             WHERE id = ?1 AND user_id = ?2 RETURNING {NOTE_COLUMNS}"
        ),
    };
    conn.query_row(
        &sql,
        params![
            IdText::new(w.id),
            IdText::new(w.user_id),
            w.note,
            w.now_us,
            IdText::new(w.by)
        ],
        note_from_row,
    )
    .optional()
    .map_err(map_err)
}

pub(super) fn notes(
    conn: &Connection,
    user: Uuid,
    from: Option<NotesPosition>,
    limit: usize,
) -> StoreResult<Vec<AccountNote>> {
    let mut values: Vec<Value> = vec![user.to_string().into(), (limit as i64 + 1).into()];
    let mut sql = format!("SELECT {NOTE_COLUMNS} FROM users_notes WHERE user_id = ?1");
    if let Some(p) = from {
        values.push(p.create_time_us.into());
        values.push(p.id.to_string().into());
        sql.push_str(" AND (create_time, id) <= (?3, ?4)");
    }
    sql.push_str(" ORDER BY create_time DESC, id DESC LIMIT ?2");
    let mut stmt = conn.prepare(&sql).map_err(map_err)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(values), note_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn note_delete(conn: &Connection, user: Uuid, id: Uuid) -> StoreResult<bool> {
    conn.execute(
        "DELETE FROM users_notes WHERE id = ?1 AND user_id = ?2",
        params![IdText::new(id), IdText::new(user)],
    )
    .map(|n| n > 0)
    .map_err(map_err)
}

const TEMPLATE_COLUMNS: &str = "id, name, description, acl, create_time, update_time";

fn template_from_row(r: &Row<'_>) -> rusqlite::Result<AclTemplate> {
    let acl: String = r.get(3)?;
    Ok(AclTemplate {
        id: uuid_at(r, 0)?,
        name: r.get(1)?,
        description: r.get(2)?,
        acl: Acl::from_json(&acl),
        create_time: r.get(4)?,
        update_time: r.get(5)?,
    })
}

pub(super) fn template_add(conn: &Connection, t: &AclTemplate) -> StoreResult<AclTemplate> {
    conn.query_row(
        &format!(
            "INSERT INTO console_acl_template ({TEMPLATE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             RETURNING {TEMPLATE_COLUMNS}"
        ),
        params![
            IdText::new(t.id),
            t.name,
            t.description,
            t.acl.to_json(),
            t.create_time,
            t.update_time
        ],
        template_from_row,
    )
    .map_err(map_err)
}

pub(super) fn template_update(
    conn: &Connection,
    t: &AclTemplate,
) -> StoreResult<Option<AclTemplate>> {
    conn.query_row(
        &format!(
            "UPDATE console_acl_template SET name = ?2, description = ?3, acl = ?4, update_time = ?5
             WHERE id = ?1 RETURNING {TEMPLATE_COLUMNS}"
        ),
        params![
            IdText::new(t.id),
            t.name,
            t.description,
            t.acl.to_json(),
            t.update_time
        ],
        template_from_row,
    )
    .optional()
    .map_err(map_err)
}

pub(super) fn templates(conn: &Connection) -> StoreResult<Vec<AclTemplate>> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {TEMPLATE_COLUMNS} FROM console_acl_template ORDER BY name"
        ))
        .map_err(map_err)?;
    let rows = stmt.query_map([], template_from_row).map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn template_delete(conn: &Connection, id: Uuid) -> StoreResult<bool> {
    conn.execute(
        "DELETE FROM console_acl_template WHERE id = ?1",
        params![IdText::new(id)],
    )
    .map(|n| n > 0)
    .map_err(map_err)
}

fn setting_from_row(r: &Row<'_>) -> rusqlite::Result<ConsoleSetting> {
    Ok(ConsoleSetting {
        name: r.get(0)?,
        value: r.get(1)?,
        update_time: r.get(2)?,
    })
}

pub(super) fn settings(conn: &Connection, names: &[String]) -> StoreResult<Vec<ConsoleSetting>> {
    let names = serde_json::to_string(names).unwrap_or_default();
    let mut stmt = conn
        .prepare(
            "SELECT name, value, update_time FROM setting
             WHERE ?1 = '[]' OR name IN (SELECT value FROM json_each(?1)) ORDER BY name",
        )
        .map_err(map_err)?;
    let rows = stmt
        .query_map(params![names], setting_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn setting_set(
    conn: &Connection,
    name: &str,
    value: &str,
    now: i64,
) -> StoreResult<Option<ConsoleSetting>> {
    conn.query_row(
        "UPDATE setting SET value = ?2, update_time = ?3 WHERE name = ?1
         RETURNING name, value, update_time",
        params![name, value, now],
        setting_from_row,
    )
    .optional()
    .map_err(map_err)
}
