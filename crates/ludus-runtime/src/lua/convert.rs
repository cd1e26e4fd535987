//! Lua values to and from JSON values, with Nakama's rules: a table whose
//! largest positive integer key is 0 is an object (so `{}` encodes as `{}`),
//! otherwise an array of `1..=maxn` with holes as `null`; whole numbers
//! become integers; JSON `null` becomes `nil`. Nesting is bounded, so a
//! cyclic table is an error, not a stack overflow. Functions, userdata and
//! threads have no JSON form: converting one is an error. The JSON built is
//! bounded too ([`MAX_JSON_BYTES`]): a table that refers to one big string
//! or table many times is small in Lua but would be huge, or take for ever,
//! as JSON.

use mlua::{Lua, Table, Value as LuaValue};
use serde_json::{Map, Number, Value};

use super::sandbox;

/// Deepest nesting converted either way.
pub(super) const MAX_DEPTH: usize = 64;

/// Most bytes one conversion to JSON may build (about: each value counts
/// 32 bytes plus its text), outside the VM's own memory limit.
pub(super) const MAX_JSON_BYTES: usize = 64 << 20;

/// What is left of [`MAX_JSON_BYTES`] for one conversion.
struct Budget(usize);

impl Budget {
    fn spend(&mut self, bytes: usize) -> mlua::Result<()> {
        match self.0.checked_sub(bytes.saturating_add(32)) {
            Some(left) => {
                self.0 = left;
                Ok(())
            }
            None => Err(Self::exceeded()),
        }
    }

    fn exceeded() -> mlua::Error {
        mlua::Error::runtime(format!(
            "value too large to convert: more than {} MiB as JSON (does it repeat a big string or table?)",
            MAX_JSON_BYTES >> 20
        ))
    }
}

pub(super) fn to_lua(lua: &Lua, value: &Value) -> mlua::Result<LuaValue> {
    to_lua_at(lua, value, 0)
}

fn to_lua_at(lua: &Lua, value: &Value, depth: usize) -> mlua::Result<LuaValue> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime(format!(
            "value nested deeper than {MAX_DEPTH} levels"
        )));
    }
    Ok(match value {
        Value::Null => LuaValue::Nil,
        Value::Bool(b) => LuaValue::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => LuaValue::Number(i as f64),
            None => LuaValue::Number(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => LuaValue::String(lua.create_string(s)?),
        Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua_at(lua, item, depth + 1)?)?;
            }
            LuaValue::Table(t)
        }
        Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, v) in map {
                t.raw_set(k.as_str(), to_lua_at(lua, v, depth + 1)?)?;
            }
            LuaValue::Table(t)
        }
    })
}

/// Converts a Lua value to JSON. Runs no module code: the only Lua it may
/// call is the sandbox's own completion of a table filled on first use, so
/// it may run with the VM's memory limit lifted (`vm::unlimited`).
pub(super) fn from_lua(lua: &Lua, value: &LuaValue) -> mlua::Result<Value> {
    from_lua_at(lua, value, 0, &mut Budget(MAX_JSON_BYTES))
}

fn from_lua_at(
    lua: &Lua,
    value: &LuaValue,
    depth: usize,
    budget: &mut Budget,
) -> mlua::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime(format!(
            "table nested deeper than {MAX_DEPTH} levels (is it cyclic?)"
        )));
    }
    if let LuaValue::String(s) = value {
        // One borrow of the bytes for both the budget and the text (each
        // borrow takes mlua's lock and a reference).
        let bytes = s.as_bytes();
        budget.spend(bytes.len())?;
        return Ok(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    }
    budget.spend(0)?;
    // (Strings were converted above.)
    Ok(match value {
        LuaValue::Nil => Value::Null,
        LuaValue::Boolean(b) => Value::Bool(*b),
        LuaValue::Integer(i) => Value::from(*i),
        LuaValue::Number(n) => number(*n)?,
        LuaValue::Table(t) => table(lua, t, depth, budget)?,
        LuaValue::LightUserData(p) if p.0.is_null() => Value::Null,
        LuaValue::Error(e) => Value::String(super::vm::error_text(e)),
        other => {
            return Err(mlua::Error::runtime(format!(
                "cannot convert a {} to JSON",
                other.type_name()
            )));
        }
    })
}

fn number(n: f64) -> mlua::Result<Value> {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        return Ok(Value::from(n as i64));
    }
    Number::from_f64(n)
        .map(Value::Number)
        .ok_or_else(|| mlua::Error::runtime("cannot convert NaN or infinity to JSON"))
}

fn table(lua: &Lua, t: &Table, depth: usize, budget: &mut Budget) -> mlua::Result<Value> {
    // A table filled on first use (a call's `ctx`) is filled before it is
    // read. Such a table has a metatable; the sandbox's `complete` fills it
    // (and does nothing to any other table). A field of the metatable would
    // be one a module could set to its own function.
    if t.metatable().is_some() {
        sandbox::complete(lua, t)?;
    }
    // `for_each` takes mlua's lock once per table, not once per entry as
    // `pairs` does; the first walk reads values as booleans, which makes no
    // reference to them.
    let mut maxn: usize = 0;
    let mut present: usize = 0;
    t.for_each::<LuaValue, bool>(|k, _| {
        if let Some(i) = array_index(&k) {
            maxn = maxn.max(i);
            present += 1;
        }
        Ok(())
    })?;
    if maxn == 0 {
        let mut map = Map::new();
        t.for_each::<LuaValue, LuaValue>(|k, v| {
            let key = match &k {
                LuaValue::String(s) => s.to_string_lossy(),
                LuaValue::Integer(i) => i.to_string(),
                LuaValue::Number(n) => match number(*n)? {
                    Value::Number(n) => n.to_string(),
                    _ => n.to_string(),
                },
                LuaValue::Boolean(b) => b.to_string(),
                other => {
                    return Err(mlua::Error::runtime(format!(
                        "cannot use a {} as a JSON object key",
                        other.type_name()
                    )));
                }
            };
            budget.spend(key.len())?;
            map.insert(key, from_lua_at(lua, &v, depth + 1, budget)?);
            Ok(())
        })?;
        return Ok(Value::Object(map));
    }
    if maxn > 10_000_000 {
        return Err(mlua::Error::runtime("array index too large to convert"));
    }
    // Every item, a hole (null) too, costs at least 32 bytes of the budget:
    // an array past it fails before its items are allocated.
    if maxn.saturating_mul(32) > budget.0 {
        return Err(Budget::exceeded());
    }
    for _ in present..maxn {
        budget.spend(0)?;
    }
    let mut items = vec![Value::Null; maxn];
    t.for_each::<LuaValue, LuaValue>(|k, v| {
        if let Some(i) = array_index(&k) {
            items[i - 1] = from_lua_at(lua, &v, depth + 1, budget)?;
        }
        Ok(())
    })?;
    Ok(Value::Array(items))
}

fn array_index(k: &LuaValue) -> Option<usize> {
    match k {
        LuaValue::Integer(i) if *i > 0 => usize::try_from(*i).ok(),
        LuaValue::Number(n) if *n > 0.0 && n.fract() == 0.0 && *n < 1e15 => Some(*n as usize),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z ]{0,12}".prop_map(Value::from),
        ]
    }

    /// JSON without the shapes Lua cannot tell apart (`null`, `[]` vs `{}`,
    /// objects with numeric keys), which must survive the round trip exactly.
    fn tree() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 1..6).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z_]{1,8}", inner, 1..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn json_round_trips_through_lua(value in tree()) {
            let lua = Lua::new();
            let back = from_lua(&lua, &to_lua(&lua, &value).unwrap()).unwrap();
            prop_assert_eq!(back, value);
        }

        // Whatever a module builds, conversion answers a value or an error.
        #[test]
        fn arbitrary_tables_never_panic(keys in proptest::collection::vec((any::<i16>(), "[a-z]{0,3}", any::<f32>()), 0..20)) {
            let lua = Lua::new();
            let t = lua.create_table().unwrap();
            for (i, s, f) in keys {
                t.raw_set(i, f).unwrap();
                if !s.is_empty() {
                    t.raw_set(s, i).unwrap();
                }
            }
            let _ = from_lua(&lua, &LuaValue::Table(t));
        }
    }

    #[test]
    fn nakama_shapes() {
        let lua = Lua::new();
        let empty = lua.create_table().unwrap();
        assert_eq!(from_lua(&lua, &LuaValue::Table(empty)).unwrap(), json!({}));
        assert_eq!(from_lua(&lua, &LuaValue::Number(2.0)).unwrap(), json!(2));
        assert_eq!(from_lua(&lua, &LuaValue::Number(2.5)).unwrap(), json!(2.5));
        assert!(from_lua(&lua, &LuaValue::Number(f64::NAN)).is_err());
        let cyclic = lua.create_table().unwrap();
        cyclic.raw_set("me", &cyclic).unwrap();
        assert!(from_lua(&lua, &LuaValue::Table(cyclic)).is_err());
    }

    /// Tables wider than mlua's reference stack convert (no reference is
    /// held beyond the path being walked); an array keeps its holes as
    /// nulls and drops its named entries unconverted, as before the walk
    /// became one lock per table.
    #[test]
    fn wide_and_mixed_tables() {
        let lua = Lua::new();
        let eval = |code: &str| -> LuaValue { lua.load(code).eval().unwrap() };
        let wide = eval("local t = {} for i = 1, 50000 do t['k' .. i] = {i} end return t");
        let wide = from_lua(&lua, &wide).unwrap();
        assert_eq!(wide.as_object().unwrap().len(), 50000);
        assert_eq!(wide["k50000"], json!([50000]));
        let long = eval("local t = {} for i = 1, 50000 do t[i] = 'v' .. i end return t");
        let long = from_lua(&lua, &long).unwrap();
        assert_eq!(long.as_array().unwrap().len(), 50000);
        assert_eq!(long[49999], json!("v50000"));
        let mixed = eval("return {1, nil, 3, x = function() end, [5] = 'e'}");
        assert_eq!(
            from_lua(&lua, &mixed).unwrap(),
            json!([1, null, 3, null, "e"])
        );
        let with_metatable = eval("return setmetatable({a = 1}, {__index = {b = 2}})");
        assert_eq!(from_lua(&lua, &with_metatable).unwrap(), json!({"a": 1}));
    }

    /// Small in Lua, enormous as JSON: a string repeated, a sparse array
    /// repeated, and a table that holds itself twice per level (2^60 nodes,
    /// which would take for ever).
    #[test]
    fn amplified_values_are_refused() {
        let lua = Lua::new();
        for code in [
            "local s = string.rep('x', 1e6) local t = {} for i = 1, 100 do t[i] = s end return t",
            "local big = {} big[9999999] = 1 local t = {} for i = 1, 100 do t[i] = big end return t",
            "local t = {} for i = 1, 60 do t = {t, t} end return t",
        ] {
            let v: LuaValue = lua.load(code).eval().unwrap();
            let err = from_lua(&lua, &v).unwrap_err().to_string();
            assert!(err.contains("too large to convert"), "{code}: {err}");
        }
    }
}
