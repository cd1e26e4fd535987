//! Console users' notes on game accounts
//! (`/v2/console/account/{account_id}/note*`, `ACCOUNT_NOTES`): add or
//! change one (write), list them newest first a page at a time with
//! Nakama's cursor (read), delete one (delete). A note goes with its
//! account.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get, post};
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::console_records::{
    self, AccountNote, NoteWrite, NotesPosition, decode_notes_cursor, encode_notes_cursor,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::accounts::account_id;
use super::{Body, Caller, ConsoleRoutes, ConsoleState};
use crate::error::HttpError;
use crate::extract::QueryParams;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let need = |level| Need::Permission(Resource::AccountNotes, level);
    r.add(
        "/v2/console/account/{account_id}/note",
        need(Level::Write),
        post(add),
    );
    r.add(
        "/v2/console/account/{account_id}/note",
        need(Level::Read),
        get(list),
    );
    r.add(
        "/v2/console/account/{account_id}/note/{note_id}",
        need(Level::Delete),
        delete(remove),
    );
}

/// Nakama's `AccountNote`, every field written.
#[derive(Serialize)]
struct NoteJson {
    id: String,
    user_id: String,
    note: String,
    create_time: ludus_proto::Timestamp,
    update_time: ludus_proto::Timestamp,
    create_id: String,
    create_username: String,
    update_id: String,
    update_username: String,
}

fn timestamp(us: i64) -> ludus_proto::Timestamp {
    ludus_proto::Timestamp {
        seconds: us.div_euclid(1_000_000),
        nanos: (us.rem_euclid(1_000_000) * 1_000) as i32,
    }
}

/// Console usernames by id, the root user's (the nil id) included, for the
/// notes' authors; a deleted console user's notes keep its id only.
async fn usernames(state: &ConsoleState) -> Result<HashMap<Uuid, String>, HttpError> {
    let mut names: HashMap<Uuid, String> = state
        .console
        .users()
        .await?
        .into_iter()
        .map(|u| (u.id, u.username))
        .collect();
    names.insert(Uuid::nil(), state.app.config.console.username.clone());
    Ok(names)
}

fn note_json(n: AccountNote, names: &HashMap<Uuid, String>) -> NoteJson {
    let name = |id: &Uuid| names.get(id).cloned().unwrap_or_default();
    NoteJson {
        id: n.id.to_string(),
        user_id: n.user_id.to_string(),
        create_username: name(&n.create_id),
        update_username: name(&n.update_id),
        note: n.note,
        create_time: timestamp(n.create_time_us),
        update_time: timestamp(n.update_time_us),
        create_id: n.create_id.to_string(),
        update_id: n.update_id.to_string(),
    }
}

/// Nakama's `AddAccountNoteRequest` (the account is in the path): no `id`
/// adds a note, an `id` changes that note.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AddNoteRequest {
    id: String,
    note: String,
}

fn note_id(text: &str) -> Result<Uuid, HttpError> {
    Uuid::parse_str(text)
        .map_err(|_| HttpError::invalid(format!("note id {text:?} is not a valid uuid")))
}

fn no_account() -> HttpError {
    HttpError::new(ludus_core::Code::NotFound, "user account not found")
}

async fn add(
    State(state): State<ConsoleState>,
    Caller(caller): Caller,
    Path(account): Path<String>,
    Body(req): Body<AddNoteRequest>,
) -> Result<Response, HttpError> {
    let user = account_id(&account)?;
    console_records::note_text(&req.note)?;
    let (id, create) = match req.id.as_str() {
        "" => (ludus_core::new_row_id(), true),
        text => (note_id(text)?, false),
    };
    state.app.accounts.account(user).await?;
    let write = NoteWrite {
        user_id: user,
        id,
        note: req.note,
        by: caller.id,
        now_us: ludus_core::unix_now_us(),
        create,
    };
    let store = state.app.accounts.store();
    let Some(note) = store.account_note_put(&write).await.map_err(api)? else {
        return Err(match create {
            true => no_account(),
            false => HttpError::new(
                ludus_core::Code::NotFound,
                "this account has no note with that id, leave id empty to add one",
            ),
        });
    };
    Ok(crate::api::json(&note_json(
        note,
        &usernames(&state).await?,
    )))
}

fn api(e: ludus_core::StoreError) -> HttpError {
    ludus_core::ApiError::from(e).into()
}

/// Nakama's `ListAccountNotesResponse`.
#[derive(Serialize)]
struct NoteList {
    notes: Vec<NoteJson>,
    cursor: String,
}

async fn list(
    State(state): State<ConsoleState>,
    Path(account): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let user = account_id(&account)?;
    let limit = console_records::notes_limit(query.int32("limit")?.map_or(0, |l| l.value));
    let from = match query.get("cursor").unwrap_or_default() {
        "" => None,
        text => Some(decode_notes_cursor(text, user)?),
    };
    state.app.accounts.account(user).await?;
    let mut notes = state
        .app
        .accounts
        .store()
        .account_notes(user, from, limit)
        .await
        .map_err(api)?;
    let cursor = match notes.len() > limit {
        true => notes.pop().map_or_else(String::new, |next| {
            encode_notes_cursor(&NotesPosition {
                user_id: user,
                create_time_us: next.create_time_us,
                id: next.id,
            })
        }),
        false => String::new(),
    };
    let names = usernames(&state).await?;
    Ok(crate::api::json(&NoteList {
        notes: notes.into_iter().map(|n| note_json(n, &names)).collect(),
        cursor,
    }))
}

async fn remove(
    State(state): State<ConsoleState>,
    Path((account, note)): Path<(String, String)>,
) -> Result<Response, HttpError> {
    let user = account_id(&account)?;
    let id = note_id(&note)?;
    let deleted = state
        .app
        .accounts
        .store()
        .account_note_delete(user, id)
        .await
        .map_err(api)?;
    if !deleted {
        return Err(HttpError::new(
            ludus_core::Code::NotFound,
            "this account has no note with that id",
        ));
    }
    Ok(crate::api::empty())
}
