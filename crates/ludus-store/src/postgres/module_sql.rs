//! Modules' own SQL on PostgreSQL (`nk.sql_exec`, `nk.sql_query`).
//!
//! The statement is prepared first, so each parameter is converted for the
//! type PostgreSQL inferred for its `$n`: numbers and booleans are sent in
//! binary to columns of their own kind (range-checked), strings to byte
//! columns as raw bytes, and everything else as text that PostgreSQL parses
//! as the declared type (so `'…'` text reaches `uuid`, `jsonb`, `numeric` or
//! `timestamptz` columns as in SQL, and a bad value gets the server's own
//! message). Result columns are read by type; a type that has no Lua
//! counterpart asks for a cast in the query. Rows are streamed, so a query
//! past the row limit stops reading at the limit. `COPY` and the functions
//! that touch the database server's files are refused
//! (`module_sql::check_postgres`); the role's own limits do the rest.

use std::error::Error as StdError;

use bytes::{BufMut as _, BytesMut};
use futures_util::TryStreamExt as _;
use ludus_core::store::{SqlRow, SqlValue, StoreError, StoreResult};
use tokio_postgres::types::{Format, FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Row, Statement};

use super::errors::{Failure, classify, with_retry};
use super::pool::Pool;
use crate::module_sql::{check_postgres, too_many_rows, wrong_param_count};

type BoxError = Box<dyn StdError + Sync + Send>;

/// One module value bound to a `$n` of the type PostgreSQL inferred.
#[derive(Debug)]
struct Param<'a>(&'a SqlValue);

fn is_text_type(ty: &Type) -> bool {
    matches!(
        *ty,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN
    )
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        if let SqlValue::Null = self.0 {
            return Ok(IsNull::Yes);
        }
        match self.encode_format(ty) {
            Format::Text => {
                out.put_slice(self.text().as_bytes());
                return Ok(IsNull::No);
            }
            Format::Binary => {}
        }
        let out_of_range = |n: &dyn std::fmt::Display| -> BoxError {
            format!("{n} does not fit in a column of type {ty}").into()
        };
        match (self.0, ty) {
            (SqlValue::Bool(b), &Type::BOOL) => out.put_u8(u8::from(*b)),
            (SqlValue::Int(n), &Type::INT2) => {
                out.put_i16(i16::try_from(*n).map_err(|_| out_of_range(n))?)
            }
            (SqlValue::Int(n), &Type::INT4) => {
                out.put_i32(i32::try_from(*n).map_err(|_| out_of_range(n))?)
            }
            (SqlValue::Int(n), &Type::INT8) => out.put_i64(*n),
            (SqlValue::Int(n), &Type::FLOAT4) => out.put_f32(*n as f32),
            (SqlValue::Int(n), &Type::FLOAT8) => out.put_f64(*n as f64),
            (SqlValue::Float(f), &Type::FLOAT4) => out.put_f32(*f as f32),
            (SqlValue::Float(f), &Type::FLOAT8) => out.put_f64(*f),
            (SqlValue::Text(s), &Type::BYTEA) => out.put_slice(s.as_bytes()),
            (SqlValue::Bytes(b), &Type::BYTEA) => out.put_slice(b),
            (value, ty) => {
                return Err(format!(
                    "a {} cannot be stored in a column of type {ty}",
                    kind(value)
                )
                .into());
            }
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        // Checked per value in `to_sql`, where the value is known.
        true
    }

    fn encode_format(&self, ty: &Type) -> Format {
        let binary = match self.0 {
            SqlValue::Null => true,
            SqlValue::Bool(_) => *ty == Type::BOOL,
            SqlValue::Int(_) | SqlValue::Float(_) => matches!(
                *ty,
                Type::INT2 | Type::INT4 | Type::INT8 | Type::FLOAT4 | Type::FLOAT8
            ),
            SqlValue::Text(_) => *ty == Type::BYTEA,
            // Bytes only go to byte columns; elsewhere `to_sql` says why not.
            SqlValue::Bytes(_) => {
                !is_text_type(ty) || std::str::from_utf8(bytes_of(self.0)).is_err()
            }
        };
        if binary { Format::Binary } else { Format::Text }
    }

    to_sql_checked!();
}

fn bytes_of(v: &SqlValue) -> &[u8] {
    match v {
        SqlValue::Bytes(b) => b,
        _ => &[],
    }
}

impl Param<'_> {
    /// The value as PostgreSQL's text input reads it.
    fn text(&self) -> String {
        match self.0 {
            SqlValue::Null => String::new(),
            SqlValue::Bool(b) => b.to_string(),
            SqlValue::Int(n) => n.to_string(),
            SqlValue::Float(f) if f.is_infinite() => {
                if *f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
            }
            SqlValue::Float(f) => f.to_string(),
            SqlValue::Text(s) => s.clone(),
            SqlValue::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        }
    }
}

fn kind(v: &SqlValue) -> &'static str {
    match v {
        SqlValue::Null => "nil",
        SqlValue::Bool(_) => "boolean",
        SqlValue::Int(_) | SqlValue::Float(_) => "number",
        SqlValue::Text(_) => "string",
        SqlValue::Bytes(_) => "binary string",
    }
}

/// A column's bytes as PostgreSQL sent them (binary format), decoded by type below.
struct Raw<'a>(&'a [u8]);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(Raw(raw))
    }
    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// Microseconds from the UNIX epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_US: i64 = 946_684_800_000_000;

fn decode(ty: &Type, name: &str, raw: &[u8]) -> Result<SqlValue, StoreError> {
    let bad = || StoreError::Sql(format!("column {name:?} ({ty}) could not be read"));
    let fixed = |n: usize| -> Result<&[u8], StoreError> {
        if raw.len() == n { Ok(raw) } else { Err(bad()) }
    };
    Ok(match *ty {
        Type::BOOL => SqlValue::Bool(fixed(1)?[0] != 0),
        Type::INT2 => SqlValue::Int(i64::from(i16::from_be_bytes(
            fixed(2)?.try_into().map_err(|_| bad())?,
        ))),
        Type::INT4 => SqlValue::Int(i64::from(i32::from_be_bytes(
            fixed(4)?.try_into().map_err(|_| bad())?,
        ))),
        Type::OID => SqlValue::Int(i64::from(u32::from_be_bytes(
            fixed(4)?.try_into().map_err(|_| bad())?,
        ))),
        Type::INT8 => SqlValue::Int(i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| bad())?)),
        Type::FLOAT4 => SqlValue::Float(f64::from(f32::from_be_bytes(
            fixed(4)?.try_into().map_err(|_| bad())?,
        ))),
        Type::FLOAT8 => {
            SqlValue::Float(f64::from_be_bytes(fixed(8)?.try_into().map_err(|_| bad())?))
        }
        Type::BYTEA => SqlValue::Bytes(raw.to_vec()),
        Type::UUID => SqlValue::Text(
            uuid::Uuid::from_slice(raw)
                .map_err(|_| bad())?
                .hyphenated()
                .to_string(),
        ),
        // jsonb's binary form is a version byte (1) and the text.
        Type::JSONB => SqlValue::Text(
            std::str::from_utf8(raw.get(1..).ok_or_else(bad)?)
                .map_err(|_| bad())?
                .to_owned(),
        ),
        // Times as UNIX seconds, as Nakama gives them to Lua.
        Type::TIMESTAMPTZ | Type::TIMESTAMP => {
            let us = i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| bad())?);
            SqlValue::Int(us.saturating_add(PG_EPOCH_US).div_euclid(1_000_000))
        }
        Type::NUMERIC => SqlValue::Text(numeric_text(raw).ok_or_else(bad)?),
        ref t if is_text_type(t) || *t == Type::JSON || *t == Type::CHAR => {
            match std::str::from_utf8(raw) {
                Ok(s) => SqlValue::Text(s.to_owned()),
                Err(_) => SqlValue::Bytes(raw.to_vec()),
            }
        }
        _ => {
            return Err(StoreError::Sql(format!(
                "column {name:?} has type {ty}, which modules cannot read; \
                 cast it in the query (for example {name}::text)"
            )));
        }
    })
}

/// PostgreSQL's binary `numeric` (base-10000 digits) as decimal text.
fn numeric_text(raw: &[u8]) -> Option<String> {
    let word = |i: usize| -> Option<i16> {
        Some(i16::from_be_bytes(
            raw.get(i * 2..i * 2 + 2)?.try_into().ok()?,
        ))
    };
    let ndigits = usize::try_from(word(0)?).ok()?;
    let weight = i32::from(word(1)?);
    let sign = word(2)? as u16;
    let dscale = usize::try_from(word(3)?).ok()?;
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => {}
    }
    let digits: Vec<i16> = (0..ndigits).map(|i| word(4 + i)).collect::<Option<_>>()?;
    let digit = |pos: i32| -> i16 {
        usize::try_from(pos)
            .ok()
            .and_then(|p| digits.get(p).copied())
            .unwrap_or(0)
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    // Integer part: groups with weight >= 0.
    if weight < 0 {
        out.push('0');
    } else {
        for w in 0..=weight {
            let d = digit(w);
            if w == 0 {
                out.push_str(&d.to_string());
            } else {
                out.push_str(&format!("{d:04}"));
            }
        }
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut pos = weight + 1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", digit(pos)));
            pos += 1;
        }
        frac.truncate(dscale);
        out.push('.');
        out.push_str(&frac);
    }
    Some(out)
}

/// Maps a failure of module SQL: the database's own message (and SQLSTATE)
/// for mistakes in the statement or its values; retries and lost
/// connections as for every other call.
fn failure(e: tokio_postgres::Error) -> Failure {
    if let Some(db) = e.as_db_error() {
        return match classify(&e) {
            Failure::Fatal(StoreError::Backend(_)) => Failure::Fatal(StoreError::Sql(format!(
                "{} (SQLSTATE {})",
                db.message(),
                db.code().code()
            ))),
            other => other,
        };
    }
    match e.source() {
        // A parameter that could not be converted: say which and why.
        Some(source) if !e.is_closed() && !source.is::<std::io::Error>() => {
            Failure::Fatal(StoreError::Sql(format!("{e}: {source}")))
        }
        _ => classify(&e),
    }
}

async fn prepare(
    client: &tokio_postgres::Client,
    sql: &str,
    params: &[SqlValue],
) -> Result<Statement, Failure> {
    let stmt = client.prepare(sql).await.map_err(failure)?;
    if stmt.params().len() != params.len() {
        return Err(Failure::Fatal(wrong_param_count(
            stmt.params().len(),
            params.len(),
        )));
    }
    Ok(stmt)
}

pub(super) async fn exec(pool: &Pool, sql: &str, params: &[SqlValue]) -> StoreResult<u64> {
    check_postgres(sql)?;
    with_retry("module sql exec", || async {
        let conn = pool.get().await?;
        let stmt = prepare(&conn.client, sql, params).await?;
        let bound: Vec<Param<'_>> = params.iter().map(Param).collect();
        conn.client
            .execute_raw(&stmt, bound.iter())
            .await
            .map_err(failure)
    })
    .await
}

pub(super) async fn query(
    pool: &Pool,
    sql: &str,
    params: &[SqlValue],
    max_rows: usize,
) -> StoreResult<Vec<SqlRow>> {
    check_postgres(sql)?;
    with_retry("module sql query", || async {
        let conn = pool.get().await?;
        let stmt = prepare(&conn.client, sql, params).await?;
        let bound: Vec<Param<'_>> = params.iter().map(Param).collect();
        let rows = conn
            .client
            .query_raw(&stmt, bound.iter())
            .await
            .map_err(failure)?;
        let mut rows = std::pin::pin!(rows);
        let mut out = Vec::new();
        while let Some(row) = rows.try_next().await.map_err(failure)? {
            if out.len() == max_rows {
                return Err(Failure::Fatal(too_many_rows(max_rows)));
            }
            out.push(row_values(&row)?);
        }
        Ok(out)
    })
    .await
}

fn row_values(row: &Row) -> Result<SqlRow, Failure> {
    let mut values = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let raw: Option<Raw<'_>> = row.try_get(i).map_err(failure)?;
        let value = match raw {
            None => SqlValue::Null,
            Some(Raw(bytes)) => decode(column.type_(), column.name(), bytes)?,
        };
        values.push((column.name().to_owned(), value));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::numeric_text;

    fn numeric(ndigits: i16, weight: i16, sign: u16, dscale: i16, digits: &[i16]) -> Vec<u8> {
        let mut out = Vec::new();
        for w in [ndigits, weight, sign as i16, dscale] {
            out.extend_from_slice(&w.to_be_bytes());
        }
        for d in digits {
            out.extend_from_slice(&d.to_be_bytes());
        }
        out
    }

    #[test]
    fn numerics_read_as_decimal_text() {
        // 12345.678 = 1|2345|6780, weight 1, scale 3
        assert_eq!(
            numeric_text(&numeric(3, 1, 0, 3, &[1, 2345, 6780])).as_deref(),
            Some("12345.678")
        );
        // -0.05 = 500 at weight -1, scale 2
        assert_eq!(
            numeric_text(&numeric(1, -1, 0x4000, 2, &[500])).as_deref(),
            Some("-0.05")
        );
        // 10000 = 1 at weight 1, no digits after it
        assert_eq!(
            numeric_text(&numeric(1, 1, 0, 0, &[1])).as_deref(),
            Some("10000")
        );
        assert_eq!(
            numeric_text(&numeric(0, 0, 0, 0, &[])).as_deref(),
            Some("0")
        );
        assert_eq!(
            numeric_text(&numeric(0, 0, 0xC000, 0, &[])).as_deref(),
            Some("NaN")
        );
    }
}
