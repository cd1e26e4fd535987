//! `nk.sql_exec` and `nk.sql_query`: a module's own SQL on the server's
//! database, through `RuntimeServices` (this crate links no SQL driver).
//!
//! Parameters are a Lua array bound to `$1, $2…`: `nil` → NULL, booleans,
//! whole numbers → integers, other numbers → floats, strings → text (bytes
//! when not UTF-8), tables → their JSON text. Rows come back as an array of
//! tables of column name → value (a NULL column is absent, as `nil`).

use std::sync::Arc;

use ludus_core::store::{SqlRow, SqlValue};
use mlua::{Lua, Table, Value as LuaValue};

use super::convert;
use super::shared::LuaShared;

/// Integers above this lose precision as Lua numbers (doubles).
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "sql_exec",
        lua.create_function(move |lua, (query, params): (String, Option<Table>)| {
            let params = sql_params(lua, "sql_exec", &query, params)?;
            let changed = s
                .wait(s.services.sql_exec(&query, params))
                .map_err(|e| mlua::Error::runtime(format!("sql exec error: {}", e.message)))?;
            Ok(changed as f64)
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "sql_query",
        lua.create_function(move |lua, (query, params): (String, Option<Table>)| {
            let params = sql_params(lua, "sql_query", &query, params)?;
            let rows = s
                .wait(s.services.sql_query(&query, params))
                .map_err(|e| mlua::Error::runtime(format!("sql query error: {}", e.message)))?;
            rows_table(lua, &rows)
        })?,
    )?;
    Ok(())
}

/// The parameter array as values to bind.
fn sql_params(
    lua: &Lua,
    fn_name: &str,
    query: &str,
    params: Option<Table>,
) -> mlua::Result<Vec<SqlValue>> {
    if query.trim().is_empty() {
        return Err(mlua::Error::runtime(format!(
            "{fn_name}: expects a query string"
        )));
    }
    let Some(params) = params else {
        return Ok(Vec::new());
    };
    let len = params.raw_len();
    let not_a_list = || {
        mlua::Error::runtime(format!(
            "{fn_name}: expects a list of params as a table, one value per $1, $2…"
        ))
    };
    let mut out = Vec::with_capacity(len);
    for pair in params.pairs::<LuaValue, LuaValue>() {
        let (key, _) = pair?;
        let index = match key {
            LuaValue::Integer(i) => i as f64,
            LuaValue::Number(n) => n,
            _ => return Err(not_a_list()),
        };
        if index < 1.0 || index > len as f64 || index.fract() != 0.0 {
            return Err(not_a_list());
        }
    }
    for i in 1..=len {
        let value: LuaValue = params.raw_get(i)?;
        out.push(sql_value(lua, fn_name, i, &value)?);
    }
    Ok(out)
}

fn sql_value(lua: &Lua, fn_name: &str, index: usize, value: &LuaValue) -> mlua::Result<SqlValue> {
    Ok(match value {
        LuaValue::Nil => SqlValue::Null,
        LuaValue::Boolean(b) => SqlValue::Bool(*b),
        LuaValue::Integer(i) => SqlValue::Int(*i),
        LuaValue::Number(n) if n.fract() == 0.0 && n.abs() <= MAX_EXACT => SqlValue::Int(*n as i64),
        LuaValue::Number(n) => SqlValue::Float(*n),
        LuaValue::String(s) => match s.to_str() {
            Ok(text) => SqlValue::Text(text.to_owned()),
            Err(_) => SqlValue::Bytes(s.as_bytes().to_vec()),
        },
        LuaValue::Table(_) => {
            let json = convert::from_lua(lua, value)?;
            SqlValue::Text(json.to_string())
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "{fn_name}: parameter ${index} is a {}, which cannot be sent to the database",
                other.type_name()
            )));
        }
    })
}

fn rows_table(lua: &Lua, rows: &[SqlRow]) -> mlua::Result<Table> {
    let out = lua.create_table_with_capacity(rows.len(), 0)?;
    for row in rows {
        let t = lua.create_table_with_capacity(0, row.len())?;
        for (name, value) in row {
            let value = match value {
                SqlValue::Null => LuaValue::Nil,
                SqlValue::Bool(b) => LuaValue::Boolean(*b),
                SqlValue::Int(n) => LuaValue::Number(*n as f64),
                SqlValue::Float(f) => LuaValue::Number(*f),
                SqlValue::Text(s) => LuaValue::String(lua.create_string(s)?),
                SqlValue::Bytes(b) => LuaValue::String(lua.create_string(b)?),
            };
            t.raw_set(name.as_str(), value)?;
        }
        out.raw_push(t)?;
    }
    Ok(out)
}
