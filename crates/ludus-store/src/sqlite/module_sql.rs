//! Modules' own SQL on SQLite (`nk.sql_exec`, `nk.sql_query`). `$n`
//! placeholders become `?n`; statements are prepared uncached so module SQL
//! never evicts the store's own statements. `sql_exec` runs on the writer
//! (inside its savepoint, so a failing statement rolls back alone);
//! `sql_query` runs on a reader unless the statement writes
//! (`INSERT … RETURNING`), which the caller then sends to the writer.
//!
//! Every module statement is prepared under an authorizer that refuses what
//! reaches past the server's database: `ATTACH` (which created a database
//! file at any path, as the server's user, and stayed on the shared writer),
//! `DETACH`, pragmas other than a few read-only ones (several write files or
//! change the connection for every later call) and extension loading; and
//! under a progress handler that interrupts it past its time limit, since a
//! runaway statement (an endless recursive CTE) would otherwise hold the
//! writer, and every write of the server, for ever.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ludus_core::store::{SqlRow, SqlValue, StoreError, StoreResult};
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, Statement, ToSql, ffi};

use crate::module_sql::{dollar_to_question, too_many_rows, wrong_param_count};

struct Param<'a>(&'a SqlValue);

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            SqlValue::Null => ToSqlOutput::Owned(Value::Null),
            SqlValue::Bool(b) => ToSqlOutput::Owned(Value::Integer(i64::from(*b))),
            SqlValue::Int(n) => ToSqlOutput::Owned(Value::Integer(*n)),
            SqlValue::Float(f) => ToSqlOutput::Owned(Value::Real(*f)),
            SqlValue::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            SqlValue::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

fn sql_error(e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::SqliteFailure(code, _)
            if matches!(
                code.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ) =>
        {
            StoreError::Unavailable(format!("sqlite is busy: {e}"))
        }
        rusqlite::Error::MultipleStatement => {
            StoreError::Sql("expects one statement per call, without a second after `;`".into())
        }
        other => StoreError::Sql(other.to_string()),
    }
}

/// Pragmas modules may run: they only read the schema.
const READ_ONLY_PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "collation_list",
];

/// SQL functions modules may not call: they load native code.
const REFUSED_FUNCTIONS: &[&str] = &["load_extension", "fts3_tokenizer"];

/// Why module SQL may not do `action`; `None` when it may.
fn refusal(action: &AuthAction<'_>) -> Option<String> {
    match action {
        // An ATTACH of a bound or computed file name comes without it.
        AuthAction::Unknown { code, .. } if *code == ffi::SQLITE_ATTACH => Some(
            "ATTACH is not allowed in module SQL: modules use the server's database only".into(),
        ),
        AuthAction::Unknown { code, .. }
            if [ffi::SQLITE_DETACH, ffi::SQLITE_PRAGMA, ffi::SQLITE_FUNCTION].contains(code) =>
        {
            Some("this statement is not allowed in module SQL".into())
        }
        AuthAction::Attach { .. } => Some(
            "ATTACH is not allowed in module SQL: modules use the server's database only".into(),
        ),
        AuthAction::Detach { .. } => Some(
            "DETACH is not allowed in module SQL: modules use the server's database only".into(),
        ),
        AuthAction::Pragma { pragma_name, .. }
            if !READ_ONLY_PRAGMAS
                .iter()
                .any(|p| p.eq_ignore_ascii_case(pragma_name)) =>
        {
            Some(format!(
                "PRAGMA {pragma_name} is not allowed in module SQL (only {})",
                READ_ONLY_PRAGMAS.join(", ")
            ))
        }
        AuthAction::Function { function_name }
            if REFUSED_FUNCTIONS
                .iter()
                .any(|f| f.eq_ignore_ascii_case(function_name)) =>
        {
            Some(format!(
                "{function_name}() is not allowed in module SQL: it loads native code"
            ))
        }
        _ => None,
    }
}

/// SQLite VM steps between two looks at the clock.
const PROGRESS_STEPS: i32 = 10_000;

/// Removes the authorizer and the progress handler when module SQL is done
/// with the connection, whatever happened, so the store's own statements
/// never meet them.
struct Authorized<'c>(&'c Connection);

impl Drop for Authorized<'_> {
    fn drop(&mut self) {
        self.0
            .authorizer(None::<fn(AuthContext<'_>) -> Authorization>);
        self.0.progress_handler(0, None::<fn() -> bool>);
    }
}

/// Runs `f` with module SQL's authorizer on `conn` and interrupts it after
/// `limit`; a statement refused or interrupted fails with the reason instead
/// of SQLite's bare "not authorized" or "interrupted".
fn authorized<T>(
    conn: &Connection,
    limit: Duration,
    f: impl FnOnce() -> StoreResult<T>,
) -> StoreResult<T> {
    let deadline = Instant::now() + limit;
    conn.progress_handler(PROGRESS_STEPS, Some(move || Instant::now() >= deadline));
    let refused: Arc<Mutex<Option<String>>> = Arc::default();
    let sink = refused.clone();
    conn.authorizer(Some(move |ctx: AuthContext<'_>| {
        match refusal(&ctx.action) {
            None => Authorization::Allow,
            Some(why) => {
                if let Ok(mut slot) = sink.lock() {
                    slot.get_or_insert(why);
                }
                Authorization::Deny
            }
        }
    }));
    let guard = Authorized(conn);
    let result = f();
    drop(guard);
    let why = refused.lock().ok().and_then(|mut slot| slot.take());
    match (result, why) {
        (Err(_), Some(why)) => Err(StoreError::Sql(why)),
        (Err(_), None) if Instant::now() >= deadline => Err(StoreError::Sql(format!(
            "the statement ran longer than {} ms and was interrupted: make it do less work \
             (modules' statements share the database with every player)",
            limit.as_millis()
        ))),
        (result, _) => result,
    }
}

/// Prepares the statement and binds every parameter.
fn prepare<'c>(conn: &'c Connection, sql: &str, params: &[SqlValue]) -> StoreResult<Statement<'c>> {
    let mut stmt = conn.prepare(&dollar_to_question(sql)).map_err(sql_error)?;
    let expected = stmt.parameter_count();
    if expected != params.len() {
        return Err(wrong_param_count(expected, params.len()));
    }
    for (i, value) in params.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, Param(value))
            .map_err(sql_error)?;
    }
    Ok(stmt)
}

/// Runs a statement; returns the rows it changed (0 for one that changes none).
pub(super) fn exec(
    conn: &Connection,
    sql: &str,
    params: &[SqlValue],
    limit: Duration,
) -> StoreResult<u64> {
    authorized(conn, limit, || exec_unguarded(conn, sql, params))
}

fn exec_unguarded(conn: &Connection, sql: &str, params: &[SqlValue]) -> StoreResult<u64> {
    let mut stmt = prepare(conn, sql, params)?;
    let before = conn.total_changes();
    if stmt.column_count() > 0 {
        // A statement that returns rows (SELECT, … RETURNING): run it to the end.
        let mut rows = stmt.raw_query();
        while rows.next().map_err(sql_error)?.is_some() {}
    } else {
        stmt.raw_execute().map_err(sql_error)?;
    }
    // `changes()` still holds the count of an earlier statement after one
    // that changes no row (CREATE TABLE, SELECT): count only when this one
    // did. A write to a view (`wallet_ledger`, migration 10) changes rows
    // only through its INSTEAD OF triggers, which `changes()` leaves out:
    // those triggers change one row for each row of the view, so their count
    // is the statement's.
    let total = conn.total_changes();
    Ok(if total == before {
        0
    } else {
        match conn.changes() {
            0 => total - before,
            direct => direct,
        }
    })
}

/// Runs a query; `None` when the statement writes and so needs the writer.
pub(super) fn query_read_only(
    conn: &Connection,
    sql: &str,
    params: &[SqlValue],
    max_rows: usize,
    limit: Duration,
) -> StoreResult<Option<Vec<SqlRow>>> {
    authorized(conn, limit, || {
        let mut stmt = prepare(conn, sql, params)?;
        if !stmt.readonly() {
            return Ok(None);
        }
        collect(&mut stmt, max_rows).map(Some)
    })
}

/// Runs a query that may write (on the writer connection).
pub(super) fn query(
    conn: &Connection,
    sql: &str,
    params: &[SqlValue],
    max_rows: usize,
    limit: Duration,
) -> StoreResult<Vec<SqlRow>> {
    authorized(conn, limit, || {
        let mut stmt = prepare(conn, sql, params)?;
        collect(&mut stmt, max_rows)
    })
}

fn collect(stmt: &mut Statement<'_>, max_rows: usize) -> StoreResult<Vec<SqlRow>> {
    let names: Vec<String> = stmt.column_names().into_iter().map(str::to_owned).collect();
    let mut out = Vec::new();
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next().map_err(sql_error)? {
        if out.len() == max_rows {
            return Err(too_many_rows(max_rows));
        }
        let mut values = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let value = match row.get_ref(i).map_err(sql_error)? {
                ValueRef::Null => SqlValue::Null,
                ValueRef::Integer(n) => SqlValue::Int(n),
                ValueRef::Real(f) => SqlValue::Float(f),
                ValueRef::Text(t) => match std::str::from_utf8(t) {
                    Ok(s) => SqlValue::Text(s.to_owned()),
                    Err(_) => SqlValue::Bytes(t.to_vec()),
                },
                ValueRef::Blob(b) => SqlValue::Bytes(b.to_vec()),
            };
            values.push((name.clone(), value));
        }
        out.push(values);
    }
    Ok(out)
}
