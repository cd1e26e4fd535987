//! Lua values to and from JSON values, with Nakama's rules: a table whose
//! largest positive integer key is 0 is an object (so `{}` encodes as `{}`),
//! otherwise an array of `1..=maxn` with holes as `null`; whole numbers
//! become integers; JSON `null` becomes `nil`. Nesting is bounded, so a
//! cyclic table is an error, not a stack overflow. Functions, userdata and
//! threads have no JSON form: converting one is an error. The JSON built is
//! bounded too ([`MAX_JSON_BYTES`]): a table that refers to one big string
//! or table many times is small in Lua but would be huge, or take for ever,
//! as JSON.

use mlua::{Either, Lua, LuaString, Table, Value as LuaValue};
use serde_json::{Map, Number, Value};

use super::lazy;

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
/// it may run with the VM's memory limit lifted (`call_state::unlimited`).
pub(super) fn from_lua(lua: &Lua, value: &LuaValue) -> mlua::Result<Value> {
    from_lua_at(lua, value, 0, &mut Budget(MAX_JSON_BYTES))
}

fn from_lua_at(
    lua: &Lua,
    value: &LuaValue,
    depth: usize,
    budget: &mut Budget,
) -> mlua::Result<Value> {
    if let Some(bytes) = charge(value, depth, budget)? {
        return Ok(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    }
    // (Strings were converted above.)
    Ok(match value {
        LuaValue::Nil => Value::Null,
        LuaValue::Boolean(b) => Value::Bool(*b),
        LuaValue::Integer(i) => Value::from(*i),
        LuaValue::Number(n) => number(*n)?,
        LuaValue::Table(t) => table(lua, t, depth, budget)?,
        LuaValue::LightUserData(p) if p.0.is_null() => Value::Null,
        LuaValue::Error(e) => Value::String(super::call_state::error_text(e)),
        other => return Err(unconvertible(other)),
    })
}

/// What converting a value checks first, to a value or as text: its depth,
/// and its cost to the budget. A string's text counts too, and its bytes
/// come back, borrowed once for both (each borrow takes mlua's lock and a
/// reference).
fn charge(
    value: &LuaValue,
    depth: usize,
    budget: &mut Budget,
) -> mlua::Result<Option<mlua::BorrowedBytes>> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime(format!(
            "table nested deeper than {MAX_DEPTH} levels (is it cyclic?)"
        )));
    }
    if let LuaValue::String(s) = value {
        let bytes = s.as_bytes();
        budget.spend(bytes.len())?;
        return Ok(Some(bytes));
    }
    budget.spend(0)?;
    Ok(None)
}

fn unconvertible(value: &LuaValue) -> mlua::Error {
    mlua::Error::runtime(format!("cannot convert a {} to JSON", value.type_name()))
}

fn number(n: f64) -> mlua::Result<Value> {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        return Ok(Value::from(n as i64));
    }
    Number::from_f64(n)
        .map(Value::Number)
        .ok_or_else(|| mlua::Error::runtime("cannot convert NaN or infinity to JSON"))
}

/// How a table converts.
enum Shape {
    /// An object; `text_keys` when every key is a string.
    Object { text_keys: bool },
    /// An array of `1..=maxn`, its holes (nulls) already charged to the budget.
    Array(usize),
}

/// Most entries a table may have for its first walk to keep them, so that
/// its items need no second walk (see [`shape`]).
const SMALL: usize = 8;

#[cfg(not(test))]
fn small_limit() -> usize {
    SMALL
}

#[cfg(test)]
thread_local! {
    /// Tests set it to 0 to take the two walks of a larger table.
    static SMALL_LIMIT: std::cell::Cell<usize> = const { std::cell::Cell::new(SMALL) };
}

#[cfg(test)]
fn small_limit() -> usize {
    SMALL_LIMIT.with(std::cell::Cell::get)
}

/// A small table's entries, in the order `next` visits them.
type Entries = Vec<(LuaValue, LuaValue)>;

/// A table's keys as its shape needs them.
struct Keys {
    maxn: usize,
    present: usize,
    text_keys: bool,
}

impl Keys {
    fn new() -> Keys {
        Keys {
            maxn: 0,
            present: 0,
            text_keys: true,
        }
    }

    fn see(&mut self, k: &LuaValue) {
        if let Some(i) = array_index(k) {
            self.maxn = self.maxn.max(i);
            self.present += 1;
        }
        self.text_keys &= matches!(k, LuaValue::String(_));
    }

    fn shape(self, budget: &mut Budget) -> mlua::Result<Shape> {
        let Keys {
            maxn,
            present,
            text_keys,
        } = self;
        if maxn == 0 {
            return Ok(Shape::Object { text_keys });
        }
        if maxn > 10_000_000 {
            return Err(mlua::Error::runtime("array index too large to convert"));
        }
        // Every item, a hole (null) too, costs at least 32 bytes of the
        // budget: an array past it fails before its items are allocated.
        if maxn.saturating_mul(32) > budget.0 {
            return Err(Budget::exceeded());
        }
        for _ in present..maxn {
            budget.spend(0)?;
        }
        Ok(Shape::Array(maxn))
    }
}

/// How `t` converts, and its entries when it has at most [`SMALL`]; a
/// larger one is walked again for its items.
fn shape(lua: &Lua, t: &Table, budget: &mut Budget) -> mlua::Result<(Shape, Option<Entries>)> {
    // A table filled on first use (a call's `ctx`) is filled before it is
    // read. Such a table has a metatable; the sandbox's `complete` fills it
    // (and does nothing to any other table). A field of the metatable would
    // be one a module could set to its own function.
    if t.metatable().is_some() {
        lazy::complete(lua, t)?;
    }
    // A small table (a reply of a few fields, the usual case) is read with
    // `pairs`, whose steps make no protected call, and its entries are kept,
    // so its items need no second walk. A table that proves larger is
    // walked whole again by `Table::for_each`, whose one protected call per
    // walk (two fresh C closures of garbage under LuaJIT) costs less than a
    // step of `pairs` per entry (see BENCHMARKS.md). The references kept are
    // released before that walk.
    let limit = small_limit();
    let mut keys = Keys::new();
    let mut entries = Vec::new();
    let mut small = true;
    for pair in t.pairs::<LuaValue, LuaValue>() {
        let (k, v) = pair?;
        if entries.len() == limit {
            small = false;
            break;
        }
        keys.see(&k);
        entries.push((k, v));
    }
    if !small {
        entries = Vec::new();
        keys = Keys::new();
        t.for_each::<LuaValue, LuaValue>(|k, _| {
            keys.see(&k);
            Ok(())
        })?;
    }
    Ok((keys.shape(budget)?, small.then_some(entries)))
}

/// Calls `f` with each entry of an object and its key's text: from `small`
/// when [`shape`] kept the entries, else by a walk of its own, in which keys
/// that are all strings are read straight from Lua's stack as text, with no
/// reference made to each (only a key that is not UTF-8 takes the lossy
/// way).
fn for_each_entry(
    t: &Table,
    small: Option<Entries>,
    text_keys: bool,
    mut f: impl FnMut(String, LuaValue) -> mlua::Result<()>,
) -> mlua::Result<()> {
    if let Some(entries) = small {
        return entries
            .into_iter()
            .try_for_each(|(k, v)| f(object_key(&k)?, v));
    }
    if text_keys {
        t.for_each::<Either<String, LuaString>, LuaValue>(|k, v| {
            let key = match k {
                Either::Left(text) => text,
                Either::Right(bytes) => bytes.to_string_lossy(),
            };
            f(key, v)
        })
    } else {
        t.for_each::<LuaValue, LuaValue>(|k, v| f(object_key(&k)?, v))
    }
}

/// Calls `f` with each item of an array and its index, from `small` when
/// the table was read whole, else by a walk of its own.
fn for_each_item(
    t: &Table,
    small: Option<Entries>,
    mut f: impl FnMut(usize, LuaValue) -> mlua::Result<()>,
) -> mlua::Result<()> {
    let mut item = |k: LuaValue, v: LuaValue| match array_index(&k) {
        Some(i) => f(i, v),
        None => Ok(()),
    };
    match small {
        Some(entries) => entries.into_iter().try_for_each(|(k, v)| item(k, v)),
        None => t.for_each::<LuaValue, LuaValue>(item),
    }
}

fn table(lua: &Lua, t: &Table, depth: usize, budget: &mut Budget) -> mlua::Result<Value> {
    let (maxn, small) = match shape(lua, t, budget)? {
        (Shape::Array(maxn), small) => (maxn, small),
        (Shape::Object { text_keys }, small) => {
            let mut map = Map::new();
            for_each_entry(t, small, text_keys, |key, v| {
                budget.spend(key.len())?;
                map.insert(key, from_lua_at(lua, &v, depth + 1, budget)?);
                Ok(())
            })?;
            return Ok(Value::Object(map));
        }
    };
    let mut items = vec![Value::Null; maxn];
    for_each_item(t, small, |i, v| {
        items[i - 1] = from_lua_at(lua, &v, depth + 1, budget)?;
        Ok(())
    })?;
    Ok(Value::Array(items))
}

/// Whether `t` is a table with no entries and no metatable (a table filled
/// on first use has one), which converts to `{}`: `Table::is_empty` looks
/// for a first entry with no protected call and no reference made to it.
pub(super) fn is_plain_empty(t: &Table) -> bool {
    t.metatable().is_none() && t.is_empty()
}

/// Writes a Lua value straight as JSON text: the same text, and the same
/// errors, as `serde_json::to_string(&from_lua(lua, value)?)`, without
/// building the JSON value in between (each string and object of which is
/// an allocation). An object's keys are written in byte order, as
/// `serde_json`'s map keeps them; two Lua keys with one text (`0` and
/// `"0"`) keep the last one visited, as inserting into that map does.
pub(super) fn json_text(lua: &Lua, value: &LuaValue) -> mlua::Result<String> {
    // Room for a reply of a few fields without growing.
    let mut out = Vec::with_capacity(64);
    write_at(lua, value, 0, &mut Budget(MAX_JSON_BYTES), &mut out)?;
    // Only whole UTF-8 text is written (strings go through `from_utf8_lossy`).
    String::from_utf8(out).map_err(|e| mlua::Error::runtime(e.to_string()))
}

/// Writes `value` to `out`, counting it against `budget` as [`from_lua_at`]
/// does.
fn write_at(
    lua: &Lua,
    value: &LuaValue,
    depth: usize,
    budget: &mut Budget,
    out: &mut Vec<u8>,
) -> mlua::Result<()> {
    if let Some(bytes) = charge(value, depth, budget)? {
        return write_json(out, &*String::from_utf8_lossy(&bytes));
    }
    match value {
        LuaValue::Nil => out.extend_from_slice(b"null"),
        LuaValue::Boolean(b) => write_json(out, b)?,
        LuaValue::Integer(i) => write_json(out, i)?,
        LuaValue::Number(n) => write_json(out, &number(*n)?)?,
        LuaValue::Table(t) => write_table(lua, t, depth, budget, out)?,
        LuaValue::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        LuaValue::Error(e) => write_json(out, &super::call_state::error_text(e))?,
        other => return Err(unconvertible(other)),
    }
    Ok(())
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> mlua::Result<()> {
    serde_json::to_writer(out, value).map_err(mlua::Error::runtime)
}

/// [`table`]'s rules, written as text: each item is written to `items` as
/// it is visited, then copied out in key (or index) order.
fn write_table(
    lua: &Lua,
    t: &Table,
    depth: usize,
    budget: &mut Budget,
    out: &mut Vec<u8>,
) -> mlua::Result<()> {
    let mut items: Vec<u8> = Vec::with_capacity(32);
    let (maxn, small) = match shape(lua, t, budget)? {
        (Shape::Array(maxn), small) => (maxn, small),
        (Shape::Object { text_keys }, small) => {
            let mut entries: Vec<(String, std::ops::Range<usize>)> = Vec::new();
            for_each_entry(t, small, text_keys, |key, v| {
                budget.spend(key.len())?;
                let start = items.len();
                write_at(lua, &v, depth + 1, budget, &mut items)?;
                entries.push((key, start..items.len()));
                Ok(())
            })?;
            // Stable, so of equal keys the last visited comes last and is kept.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            out.push(b'{');
            let mut first = true;
            for (i, (key, range)) in entries.iter().enumerate() {
                if entries.get(i + 1).is_some_and(|next| next.0 == *key) {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                write_json(out, key.as_str())?;
                out.push(b':');
                out.extend_from_slice(&items[range.clone()]);
            }
            out.push(b'}');
            return Ok(());
        }
    };
    let mut ranges: Vec<Option<std::ops::Range<usize>>> = vec![None; maxn];
    for_each_item(t, small, |i, v| {
        let start = items.len();
        write_at(lua, &v, depth + 1, budget, &mut items)?;
        ranges[i - 1] = Some(start..items.len());
        Ok(())
    })?;
    out.push(b'[');
    for (i, range) in ranges.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match range {
            Some(range) => out.extend_from_slice(&items[range]),
            None => out.extend_from_slice(b"null"),
        }
    }
    out.push(b']');
    Ok(())
}

/// An object key's text: strings as they are, numbers and booleans as
/// their JSON text.
fn object_key(k: &LuaValue) -> mlua::Result<String> {
    Ok(match k {
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
    })
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

    /// A Lua value as a module might build it: keys of every kind that
    /// converts (and clashing texts such as `0` and `"0"`), strings that
    /// need escaping or are not UTF-8, numbers JSON cannot hold.
    #[derive(Debug, Clone)]
    enum Lv {
        Nil,
        Bool(bool),
        Num(f64),
        Text(Vec<u8>),
        Table(Vec<(Lv, Lv)>),
    }

    fn lua_key() -> impl Strategy<Value = Lv> {
        prop_oneof![
            (-2i32..7).prop_map(|i| Lv::Num(f64::from(i))),
            prop_oneof![Just(1.5), Just(-0.5), Just(1e300), Just(f64::INFINITY)].prop_map(Lv::Num),
            text_key(),
            any::<bool>().prop_map(Lv::Bool),
        ]
    }

    /// String keys, two of them not UTF-8 with the same lossy text.
    fn text_key() -> impl Strategy<Value = Lv> {
        prop_oneof![
            Just(&b"0"[..]),
            Just(&b"1"[..]),
            Just(&b"a"[..]),
            Just(&b"b"[..]),
            Just("é".as_bytes()),
            Just(&b"q\"\n"[..]),
            Just(&b"true"[..]),
            Just(&b"\xff"[..]),
            Just(&b"\xfe"[..]),
        ]
        .prop_map(|s| Lv::Text(s.to_vec()))
    }

    fn lua_value() -> impl Strategy<Value = Lv> {
        let leaf = prop_oneof![
            Just(Lv::Nil),
            any::<bool>().prop_map(Lv::Bool),
            any::<i32>().prop_map(|i| Lv::Num(f64::from(i))),
            prop_oneof![
                Just(0.1),
                Just(-2.5e-8),
                Just(1e16),
                Just(f64::NAN),
                Just(f64::NEG_INFINITY)
            ]
            .prop_map(Lv::Num),
            proptest::collection::vec(any::<u8>(), 0..6).prop_map(Lv::Text),
            prop_oneof![
                Just("a\"b\\c"),
                Just("\u{1}\n\t"),
                Just("é😀"),
                Just("</script>"),
                Just("")
            ]
            .prop_map(|s| Lv::Text(s.as_bytes().to_vec())),
            "[a-z ]{0,8}".prop_map(|s| Lv::Text(s.into_bytes())),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec((lua_key(), inner.clone()), 0..6).prop_map(Lv::Table),
                proptest::collection::vec((text_key(), inner), 0..6).prop_map(Lv::Table),
            ]
        })
    }

    fn build(lua: &Lua, v: &Lv) -> LuaValue {
        match v {
            Lv::Nil => LuaValue::Nil,
            Lv::Bool(b) => LuaValue::Boolean(*b),
            Lv::Num(n) => LuaValue::Number(*n),
            Lv::Text(b) => LuaValue::String(lua.create_string(b).unwrap()),
            Lv::Table(entries) => {
                let t = lua.create_table().unwrap();
                for (k, v) in entries {
                    t.raw_set(build(lua, k), build(lua, v)).unwrap();
                }
                LuaValue::Table(t)
            }
        }
    }

    /// `json_text` writes what converting to a value and then to text
    /// gives, or fails with the same error.
    fn same_text(lua: &Lua, v: &LuaValue) {
        let direct = json_text(lua, v).map_err(|e| e.to_string());
        let via_value = from_lua(lua, v)
            .map(|value| serde_json::to_string(&value).unwrap())
            .map_err(|e| e.to_string());
        assert_eq!(direct, via_value);
    }

    /// Both conversions of `v` (as text, as a value), with tables of up to
    /// `limit` entries read in one walk.
    fn converted(
        lua: &Lua,
        v: &LuaValue,
        limit: usize,
    ) -> (Result<String, String>, Result<Value, String>) {
        SMALL_LIMIT.with(|l| l.set(limit));
        let out = (
            json_text(lua, v).map_err(|e| e.to_string()),
            from_lua(lua, v).map_err(|e| e.to_string()),
        );
        SMALL_LIMIT.with(|l| l.set(SMALL));
        out
    }

    proptest! {
        // A small table's one walk gives what the two walks of a large one
        // give: the same text, value or error.
        #[test]
        fn one_walk_converts_as_two_do(v in lua_value()) {
            let lua = Lua::new();
            let v = build(&lua, &v);
            let one = converted(&lua, &v, SMALL);
            let two = converted(&lua, &v, 0);
            prop_assert_eq!(&one, &two);
            // And the text is the value's text either way.
            prop_assert_eq!(one.0, one.1.map(|value| value.to_string()));
        }

        #[test]
        fn json_text_is_the_text_of_the_value(v in lua_value()) {
            let lua = Lua::new();
            same_text(&lua, &build(&lua, &v));
        }

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
    fn plain_empty_tables() {
        let lua = Lua::new();
        let t = |code: &str| -> Table { lua.load(code).eval().unwrap() };
        assert!(is_plain_empty(&t("return {}")));
        // Emptied after it had entries: nothing is left to convert.
        assert!(is_plain_empty(&t(
            "local x = {a = 1, 2} x.a = nil x[1] = nil return x"
        )));
        assert!(!is_plain_empty(&t("return {1}")));
        assert!(!is_plain_empty(&t("return {a = false}")));
        assert!(!is_plain_empty(&t("return {[10] = 1}")));
        // A metatable may fill it on first use (a call's `ctx`).
        assert!(!is_plain_empty(&t("return setmetatable({}, {})")));
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
        let cyclic = LuaValue::Table(cyclic);
        assert!(from_lua(&lua, &cyclic).is_err());
        same_text(&lua, &cyclic);
    }

    /// A key that is not UTF-8 converts lossily, in a table whose keys are
    /// all strings (read as text straight from the stack) and in one whose
    /// keys are not; object keys come out in byte order.
    #[test]
    fn keys_that_are_not_utf8_convert_lossily() {
        let lua = Lua::new();
        for (code, want) in [
            (
                r#"return {["\255"] = 1, a = {["x\254"] = true}}"#,
                "{\"a\":{\"x\u{fffd}\":true},\"\u{fffd}\":1}",
            ),
            (
                r#"return {["\255"] = 1, a = {["x\254"] = true, [false] = 0}, [-1] = 3}"#,
                "{\"-1\":3,\"a\":{\"false\":0,\"x\u{fffd}\":true},\"\u{fffd}\":1}",
            ),
        ] {
            let v: LuaValue = lua.load(code).eval().unwrap();
            assert_eq!(json_text(&lua, &v).unwrap(), want, "{code}");
            let value = from_lua(&lua, &v).unwrap();
            assert_eq!(serde_json::to_string(&value).unwrap(), want, "{code}");
        }
    }

    /// Tables wider than mlua's reference stack convert (no reference is
    /// held beyond the path being walked); an array keeps its holes as
    /// nulls and drops its named entries unconverted, as before the walk
    /// became one lock per table.
    #[test]
    fn wide_and_mixed_tables() {
        let lua = Lua::new();
        let eval = |code: &str| -> LuaValue { lua.load(code).eval().unwrap() };
        let wide_lua = eval("local t = {} for i = 1, 50000 do t['k' .. i] = {i} end return t");
        let wide = from_lua(&lua, &wide_lua).unwrap();
        assert_eq!(wide.as_object().unwrap().len(), 50000);
        assert_eq!(wide["k50000"], json!([50000]));
        let long_lua = eval("local t = {} for i = 1, 50000 do t[i] = 'v' .. i end return t");
        let long = from_lua(&lua, &long_lua).unwrap();
        assert_eq!(long.as_array().unwrap().len(), 50000);
        assert_eq!(long[49999], json!("v50000"));
        let mixed = eval("return {1, nil, 3, x = function() end, [5] = 'e'}");
        assert_eq!(
            from_lua(&lua, &mixed).unwrap(),
            json!([1, null, 3, null, "e"])
        );
        let with_metatable = eval("return setmetatable({a = 1}, {__index = {b = 2}})");
        assert_eq!(from_lua(&lua, &with_metatable).unwrap(), json!({"a": 1}));
        for v in [wide_lua, long_lua, mixed, with_metatable] {
            same_text(&lua, &v);
        }
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
            same_text(&lua, &v);
        }
    }
}
