//! Lua patterns (`string.find`, `match`, `gmatch` and `gsub`) matched in
//! Rust under the call's budgets.
//!
//! LuaJIT's own matcher is C code that backtracks without limit: a pattern
//! such as `(.-)x(.-)x(.-)y` over a few thousand bytes runs for minutes, and
//! neither the instruction hook nor anything else can stop C code. This one
//! follows Lua 5.1's matcher (`lstrlib.c`) step for step, and every few
//! thousand steps charges them to the call's instruction budget and checks
//! its deadline, so a runaway pattern stops like a runaway loop. Plain
//! searches are budgeted the same way.

use mlua::{Function, Lua, LuaString, MultiValue, Table, Value as LuaValue};

/// Most captures in one pattern, as in Lua.
const MAX_CAPTURES: usize = 32;
/// Deepest recursion of the matcher, as LuaJIT's `LJ_MAX_XLEVEL`.
const MAX_DEPTH: usize = 200;
/// Steps between two charges to the budget.
const CHARGE_EVERY: u32 = 4096;
/// Bytes a `gsub` result grows by between two looks at the memory limit.
const MEMORY_CHECK_EVERY: usize = 64 << 10;

#[derive(Clone, Copy)]
enum CapLen {
    Unfinished,
    Position,
    Len(usize),
}

/// One capture, as a slice of the subject or a position (1-based).
enum Capture<'s> {
    Str(&'s [u8]),
    Pos(usize),
}

type Charge<'c> = &'c mut dyn FnMut(u64) -> mlua::Result<()>;

fn malformed(message: &str) -> mlua::Error {
    mlua::Error::runtime(message.to_owned())
}

struct Matcher<'a, 'c> {
    src: &'a [u8],
    pat: &'a [u8],
    level: usize,
    caps: [(usize, CapLen); MAX_CAPTURES],
    depth: usize,
    steps: u32,
    charge: Charge<'c>,
}

impl<'a, 'c> Matcher<'a, 'c> {
    fn new(src: &'a [u8], pat: &'a [u8], charge: Charge<'c>) -> Self {
        Matcher {
            src,
            pat,
            level: 0,
            caps: [(0, CapLen::Unfinished); MAX_CAPTURES],
            depth: 0,
            steps: 0,
            charge,
        }
    }

    #[inline]
    fn step(&mut self) -> mlua::Result<()> {
        self.steps += 1;
        if self.steps >= CHARGE_EVERY {
            self.steps = 0;
            (self.charge)(u64::from(CHARGE_EVERY))?;
        }
        Ok(())
    }

    /// Where the single-character class starting at `p` ends.
    fn class_end(&self, p: usize) -> mlua::Result<usize> {
        let pat = self.pat;
        let mut p = p;
        let c = pat[p];
        p += 1;
        if c == b'%' {
            if p >= pat.len() {
                return Err(malformed("malformed pattern (ends with '%')"));
            }
            return Ok(p + 1);
        }
        if c == b'[' {
            if pat.get(p) == Some(&b'^') {
                p += 1;
            }
            // Look for the closing `]`; the first character is never it.
            loop {
                if p >= pat.len() {
                    return Err(malformed("malformed pattern (missing ']')"));
                }
                let cc = pat[p];
                p += 1;
                if cc == b'%' && p < pat.len() {
                    p += 1;
                }
                if p < pat.len() && pat[p] == b']' {
                    break;
                }
            }
            return Ok(p + 1);
        }
        Ok(p)
    }

    fn match_bracket(&self, c: u8, p: usize, ec: usize) -> bool {
        let pat = self.pat;
        let mut p = p;
        let mut sig = true;
        if pat[p + 1] == b'^' {
            sig = false;
            p += 1;
        }
        p += 1;
        while p < ec {
            if pat[p] == b'%' {
                p += 1;
                if p < ec + 1 && match_class(c, pat[p]) {
                    return sig;
                }
            } else if p + 2 < ec && pat[p + 1] == b'-' {
                if pat[p] <= c && c <= pat[p + 2] {
                    return sig;
                }
                p += 2;
            } else if pat[p] == c {
                return sig;
            }
            p += 1;
        }
        !sig
    }

    fn single_match(&self, s: usize, p: usize, ep: usize) -> bool {
        let Some(&c) = self.src.get(s) else {
            return false;
        };
        match self.pat[p] {
            b'.' => true,
            b'%' => match_class(c, self.pat[p + 1]),
            b'[' => self.match_bracket(c, p, ep - 1),
            pc => pc == c,
        }
    }

    fn do_match(&mut self, s: usize, p: usize) -> mlua::Result<Option<usize>> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(malformed("pattern too complex"));
        }
        let result = self.match_here(s, p);
        self.depth -= 1;
        result
    }

    fn match_here(&mut self, mut s: usize, mut p: usize) -> mlua::Result<Option<usize>> {
        let pat = self.pat;
        loop {
            self.step()?;
            if p == pat.len() {
                return Ok(Some(s));
            }
            match pat[p] {
                b'(' => {
                    return if pat.get(p + 1) == Some(&b')') {
                        self.start_capture(s, p + 2, CapLen::Position)
                    } else {
                        self.start_capture(s, p + 1, CapLen::Unfinished)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'$' if p + 1 == pat.len() => {
                    return Ok((s == self.src.len()).then_some(s));
                }
                b'%' if pat.get(p + 1) == Some(&b'b') => match self.match_balance(s, p + 2)? {
                    Some(next) => {
                        s = next;
                        p += 4;
                        continue;
                    }
                    None => return Ok(None),
                },
                b'%' if pat.get(p + 1) == Some(&b'f') => {
                    p += 2;
                    if pat.get(p) != Some(&b'[') {
                        return Err(malformed("missing '[' after '%f' in pattern"));
                    }
                    let ep = self.class_end(p)?;
                    let prev = if s == 0 { 0 } else { self.src[s - 1] };
                    let cur = self.src.get(s).copied().unwrap_or(0);
                    if !self.match_bracket(prev, p, ep - 1) && self.match_bracket(cur, p, ep - 1) {
                        p = ep;
                        continue;
                    }
                    return Ok(None);
                }
                b'%' if pat.get(p + 1).is_some_and(u8::is_ascii_digit) => {
                    match self.match_capture(s, pat[p + 1])? {
                        Some(next) => {
                            s = next;
                            p += 2;
                            continue;
                        }
                        None => return Ok(None),
                    }
                }
                _ => {
                    let ep = self.class_end(p)?;
                    let m = self.single_match(s, p, ep);
                    match pat.get(ep) {
                        Some(b'?') => {
                            if m && let Some(r) = self.do_match(s + 1, ep + 1)? {
                                return Ok(Some(r));
                            }
                            p = ep + 1;
                        }
                        Some(b'*') => return self.max_expand(s, p, ep),
                        Some(b'+') => {
                            return if m {
                                self.max_expand(s + 1, p, ep)
                            } else {
                                Ok(None)
                            };
                        }
                        Some(b'-') => return self.min_expand(s, p, ep),
                        _ => {
                            if !m {
                                return Ok(None);
                            }
                            s += 1;
                            p = ep;
                        }
                    }
                }
            }
        }
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> mlua::Result<Option<usize>> {
        let mut i = 0;
        while self.single_match(s + i, p, ep) {
            self.step()?;
            i += 1;
        }
        loop {
            if let Some(r) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(r));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> mlua::Result<Option<usize>> {
        loop {
            if let Some(r) = self.do_match(s, ep + 1)? {
                return Ok(Some(r));
            }
            if self.single_match(s, p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: CapLen) -> mlua::Result<Option<usize>> {
        if self.level >= MAX_CAPTURES {
            return Err(malformed("too many captures"));
        }
        self.caps[self.level] = (s, what);
        self.level += 1;
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.level -= 1;
        }
        Ok(r)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> mlua::Result<Option<usize>> {
        let l = (0..self.level)
            .rev()
            .find(|&i| matches!(self.caps[i].1, CapLen::Unfinished))
            .ok_or_else(|| malformed("invalid pattern capture"))?;
        self.caps[l].1 = CapLen::Len(s - self.caps[l].0);
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.caps[l].1 = CapLen::Unfinished;
        }
        Ok(r)
    }

    fn match_balance(&mut self, s: usize, p: usize) -> mlua::Result<Option<usize>> {
        if p + 1 >= self.pat.len() {
            return Err(malformed("malformed pattern (missing arguments to '%b')"));
        }
        let (open, close) = (self.pat[p], self.pat[p + 1]);
        if self.src.get(s) != Some(&open) {
            return Ok(None);
        }
        let mut depth = 1;
        let mut i = s + 1;
        while i < self.src.len() {
            self.step()?;
            let c = self.src[i];
            if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(Some(i + 1));
                }
            } else if c == open {
                depth += 1;
            }
            i += 1;
        }
        Ok(None)
    }

    fn match_capture(&mut self, s: usize, digit: u8) -> mlua::Result<Option<usize>> {
        let l = usize::from(digit.wrapping_sub(b'1'));
        if l >= self.level || matches!(self.caps[l].1, CapLen::Unfinished) {
            return Err(malformed("invalid capture index"));
        }
        let (start, len) = match self.caps[l] {
            (start, CapLen::Len(len)) => (start, len),
            // A position capture never matches a back reference.
            _ => return Ok(None),
        };
        let rest = &self.src[s..];
        if rest.len() >= len && rest[..len] == self.src[start..start + len] {
            return Ok(Some(s + len));
        }
        Ok(None)
    }

    /// Capture `i` of a match from `s` to `e` (the whole match when the
    /// pattern has no captures and `i` is 0).
    fn capture(&self, i: usize, s: usize, e: usize) -> mlua::Result<Capture<'a>> {
        if i >= self.level {
            if i == 0 {
                return Ok(Capture::Str(&self.src[s..e]));
            }
            return Err(malformed("invalid capture index"));
        }
        match self.caps[i] {
            (_, CapLen::Unfinished) => Err(malformed("unfinished capture")),
            (start, CapLen::Position) => Ok(Capture::Pos(start + 1)),
            (start, CapLen::Len(len)) => Ok(Capture::Str(&self.src[start..start + len])),
        }
    }

    fn push_captures(
        &self,
        lua: &Lua,
        whole: Option<(usize, usize)>,
        out: &mut MultiValue,
    ) -> mlua::Result<()> {
        let (s, e) = whole.unwrap_or((0, 0));
        let n = if self.level == 0 && whole.is_some() {
            1
        } else {
            self.level
        };
        for i in 0..n {
            out.push_back(capture_value(lua, self.capture(i, s, e)?)?);
        }
        Ok(())
    }
}

fn capture_value(lua: &Lua, c: Capture<'_>) -> mlua::Result<LuaValue> {
    Ok(match c {
        Capture::Str(b) => LuaValue::String(lua.create_string(b)?),
        Capture::Pos(p) => LuaValue::Integer(p as i64),
    })
}

/// C's `ctype` classes in the "C" locale, as Lua uses them.
fn match_class(c: u8, class: u8) -> bool {
    let m = match class.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        b's' => matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return class == c,
    };
    if class.is_ascii_uppercase() { !m } else { m }
}

/// Whether the pattern has no special characters (LuaJIT then searches for
/// it as plain text).
fn is_plain(pat: &[u8]) -> bool {
    !pat.iter().any(|c| b"^$*+?.([%-".contains(c))
}

/// Plain substring search from `from`, charging the work it does.
fn find_plain(
    src: &[u8],
    pat: &[u8],
    from: usize,
    charge: Charge<'_>,
) -> mlua::Result<Option<usize>> {
    if pat.is_empty() {
        return Ok(Some(from));
    }
    if pat.len() > src.len().saturating_sub(from) {
        return Ok(None);
    }
    let cost = 1 + (pat.len() as u64 >> 4);
    let mut work = 0u64;
    let last = src.len() - pat.len();
    let mut i = from;
    while i <= last {
        match src[i..=last].iter().position(|&c| c == pat[0]) {
            None => return Ok(None),
            Some(off) => i += off,
        }
        if src[i..i + pat.len()] == *pat {
            return Ok(Some(i));
        }
        work += cost;
        if work >= u64::from(CHARGE_EVERY) {
            charge(work)?;
            work = 0;
        }
        i += 1;
    }
    Ok(None)
}

fn bad_argument(n: usize, name: &str, expected: &str, got: &LuaValue) -> mlua::Error {
    mlua::Error::runtime(format!(
        "bad argument #{n} to '{name}' ({expected} expected, got {})",
        got.type_name()
    ))
}

/// A string argument; numbers are converted as Lua does.
fn string_arg(lua: &Lua, args: &MultiValue, n: usize, name: &str) -> mlua::Result<LuaString> {
    let v = args.get(n - 1).cloned().unwrap_or(LuaValue::Nil);
    match v {
        LuaValue::String(s) => Ok(s),
        LuaValue::Integer(_) | LuaValue::Number(_) => lua
            .coerce_string(v.clone())?
            .ok_or_else(|| bad_argument(n, name, "string", &v)),
        other => Err(bad_argument(n, name, "string", &other)),
    }
}

/// An optional integer argument; numbers are truncated as Lua does.
fn int_arg(lua: &Lua, args: &MultiValue, n: usize, name: &str, default: i64) -> mlua::Result<i64> {
    match args.get(n - 1) {
        None | Some(LuaValue::Nil) => Ok(default),
        Some(LuaValue::Integer(i)) => Ok(*i),
        Some(LuaValue::Number(f)) => Ok(*f as i64),
        Some(v) => match lua.coerce_number(v.clone())? {
            Some(f) => Ok(f as i64),
            None => Err(bad_argument(n, name, "number", v)),
        },
    }
}

/// `init` as a 0-based start: negative counts from the end; past the end
/// clamps to the end (Lua 5.1, as LuaJIT).
fn start_at(init: i64, len: usize) -> usize {
    let len_i = len as i64;
    let start = if init < 0 { init + len_i } else { init - 1 };
    start.clamp(0, len_i) as usize
}

/// `string.find` and `string.match`.
fn find_aux(lua: &Lua, args: MultiValue, find: bool) -> mlua::Result<MultiValue> {
    let name = if find { "find" } else { "match" };
    let s = string_arg(lua, &args, 1, name)?;
    let p = string_arg(lua, &args, 2, name)?;
    let init = int_arg(lua, &args, 3, name, 1)?;
    let plain = find
        && args
            .get(3)
            .is_some_and(|v| !matches!(v, LuaValue::Nil | LuaValue::Boolean(false)));
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    let start = start_at(init, src.len());
    let mut charge = |n: u64| super::call_state::charge(lua, n);
    let mut out = MultiValue::new();
    if find && (plain || is_plain(&pat)) {
        if let Some(i) = find_plain(&src, &pat, start, &mut charge)? {
            out.push_back(LuaValue::Integer(i as i64 + 1));
            out.push_back(LuaValue::Integer((i + pat.len()) as i64));
            return Ok(out);
        }
        out.push_back(LuaValue::Nil);
        return Ok(out);
    }
    let (anchor, pat) = match pat.first() {
        Some(b'^') => (true, &pat[1..]),
        _ => (false, &pat[..]),
    };
    let mut m = Matcher::new(&src, pat, &mut charge);
    let mut s1 = start;
    loop {
        m.level = 0;
        m.depth = 0;
        if let Some(e) = m.do_match(s1, 0)? {
            if find {
                out.push_back(LuaValue::Integer(s1 as i64 + 1));
                out.push_back(LuaValue::Integer(e as i64));
                m.push_captures(lua, None, &mut out)?;
            } else {
                m.push_captures(lua, Some((s1, e)), &mut out)?;
            }
            return Ok(out);
        }
        s1 += 1;
        if anchor || s1 > src.len() {
            break;
        }
    }
    out.push_back(LuaValue::Nil);
    Ok(out)
}

/// `string.gmatch`: an iterator over the matches.
fn gmatch(lua: &Lua, args: MultiValue) -> mlua::Result<Function> {
    let s = string_arg(lua, &args, 1, "gmatch")?;
    let p = string_arg(lua, &args, 2, "gmatch")?;
    let mut pos = 0usize;
    lua.create_function_mut(move |lua, ()| {
        let (src, pat) = (s.as_bytes(), p.as_bytes());
        let mut charge = |n: u64| super::call_state::charge(lua, n);
        let mut m = Matcher::new(&src, &pat, &mut charge);
        let mut out = MultiValue::new();
        let mut from = pos;
        while from <= src.len() {
            m.level = 0;
            m.depth = 0;
            if let Some(e) = m.do_match(from, 0)? {
                // An empty match moves on by at least one position.
                pos = if e == from { e + 1 } else { e };
                m.push_captures(lua, Some((from, e)), &mut out)?;
                return Ok(out);
            }
            from += 1;
        }
        pos = src.len() + 1;
        Ok(out)
    })
}

/// `string.gsub`.
fn gsub(lua: &Lua, args: MultiValue) -> mlua::Result<(LuaString, i64)> {
    let s = string_arg(lua, &args, 1, "gsub")?;
    let p = string_arg(lua, &args, 2, "gsub")?;
    let repl = args.get(2).cloned().unwrap_or(LuaValue::Nil);
    let repl = match repl {
        LuaValue::Integer(_) | LuaValue::Number(_) => {
            LuaValue::String(string_arg(lua, &args, 3, "gsub")?)
        }
        LuaValue::String(_) | LuaValue::Table(_) | LuaValue::Function(_) => repl,
        other => return Err(bad_argument(3, "gsub", "string/function/table", &other)),
    };
    let max = int_arg(lua, &args, 4, "gsub", i64::MAX)?;
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    let (anchor, pat) = match pat.first() {
        Some(b'^') => (true, &pat[1..]),
        _ => (false, &pat[..]),
    };
    let mut charge = |n: u64| super::call_state::charge(lua, n);
    let mut m = Matcher::new(&src, pat, &mut charge);
    let mut out: Vec<u8> = Vec::with_capacity(src.len());
    let mut s1 = 0usize;
    let mut n = 0i64;
    let mut next_memory_check = MEMORY_CHECK_EVERY;
    while n < max {
        m.level = 0;
        m.depth = 0;
        let e = m.do_match(s1, 0)?;
        if let Some(e) = e {
            n += 1;
            add_value(lua, &m, &repl, s1, e, &mut out)?;
            if out.len() >= next_memory_check {
                super::call_state::check_memory(lua, out.len())?;
                next_memory_check = out.len() + MEMORY_CHECK_EVERY;
            }
        }
        match e {
            Some(e) if e > s1 => s1 = e,
            _ if s1 < src.len() => {
                out.push(src[s1]);
                s1 += 1;
            }
            _ => break,
        }
        if anchor {
            break;
        }
    }
    out.extend_from_slice(&src[s1.min(src.len())..]);
    Ok((lua.create_string(&out)?, n))
}

/// Appends the replacement of the match from `s` to `e`.
fn add_value(
    lua: &Lua,
    m: &Matcher<'_, '_>,
    repl: &LuaValue,
    s: usize,
    e: usize,
    out: &mut Vec<u8>,
) -> mlua::Result<()> {
    let value = match repl {
        LuaValue::String(r) => {
            let r = r.as_bytes();
            let mut i = 0;
            while i < r.len() {
                let c = r[i];
                i += 1;
                if c != b'%' || i >= r.len() {
                    out.push(c);
                    continue;
                }
                let d = r[i];
                i += 1;
                if !d.is_ascii_digit() {
                    out.push(d);
                } else if d == b'0' {
                    out.extend_from_slice(&m.src[s..e]);
                } else {
                    match m.capture(usize::from(d - b'1'), s, e)? {
                        Capture::Str(b) => out.extend_from_slice(b),
                        Capture::Pos(p) => out.extend_from_slice(p.to_string().as_bytes()),
                    }
                }
            }
            return Ok(());
        }
        LuaValue::Table(t) => {
            let key = capture_value(lua, m.capture(0, s, e)?)?;
            Table::get::<LuaValue>(t, key)?
        }
        LuaValue::Function(f) => {
            let mut captures = MultiValue::new();
            m.push_captures(lua, Some((s, e)), &mut captures)?;
            f.call::<LuaValue>(captures)?
        }
        _ => unreachable!("checked by gsub"),
    };
    match value {
        LuaValue::Nil | LuaValue::Boolean(false) => out.extend_from_slice(&m.src[s..e]),
        LuaValue::String(r) => out.extend_from_slice(&r.as_bytes()),
        v @ (LuaValue::Integer(_) | LuaValue::Number(_)) => {
            if let Some(r) = lua.coerce_string(v)? {
                out.extend_from_slice(&r.as_bytes());
            }
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "invalid replacement value (a {})",
                other.type_name()
            )));
        }
    }
    Ok(())
}

/// Replaces LuaJIT's pattern functions in the `string` table (which is
/// also the strings' `__index`).
pub(crate) fn install(lua: &Lua) -> mlua::Result<()> {
    let string: Table = lua.globals().get("string")?;
    string.set(
        "find",
        lua.create_function(|lua, args| find_aux(lua, args, true))?,
    )?;
    string.set(
        "match",
        lua.create_function(|lua, args| find_aux(lua, args, false))?,
    )?;
    string.set("gmatch", lua.create_function(gmatch)?)?;
    string.set("gsub", lua.create_function(gsub)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `code` in a plain state with the Rust matcher installed.
    fn eval(code: &str) -> String {
        let lua = Lua::new();
        install(&lua).unwrap();
        lua.load(code).eval::<String>().unwrap()
    }

    #[test]
    fn matches_like_lua() {
        let cases = [
            (
                r#"return table.concat({string.find("hello world", "o w")}, ",")"#,
                "5,7",
            ),
            (
                r#"return table.concat({string.find("hello", "l+")}, ",")"#,
                "3,4",
            ),
            (
                r#"return table.concat({string.find("hello", "(l)(l)")}, ",")"#,
                "3,4,l,l",
            ),
            (r#"return tostring(string.find("hello", "xyz"))"#, "nil"),
            (
                r#"return table.concat({string.find("a.b", ".", 1, true)}, ",")"#,
                "2,2",
            ),
            (
                r#"return table.concat({string.find("a.b", "%.")}, ",")"#,
                "2,2",
            ),
            (
                r#"return table.concat({string.find("abc", "", 10)}, ",")"#,
                "4,3",
            ),
            (
                r#"return table.concat({string.find("abc", "b", -2)}, ",")"#,
                "2,2",
            ),
            (r#"return string.match("key=value", "(%w+)=(%w+)")"#, "key"),
            (
                r#"return select(2, string.match("key=value", "(%w+)=(%w+)"))"#,
                "value",
            ),
            (r#"return string.match("  trim  ", "^%s*(.-)%s*$")"#, "trim"),
            (r#"return tostring(string.match("hello", "()ll()"))"#, "3"),
            (r#"return string.match("f(a(b)c)d", "%b()")"#, "(a(b)c)"),
            (
                r#"return string.match("THE (quick) fox", "%f[%a]%a+")"#,
                "THE",
            ),
            (r#"return string.match("abcabc", "(abc)%1")"#, "abc"),
            (r#"return string.match("[x]", "[%[]x[]]")"#, "[x]"),
            (r#"return string.match("a-z", "[a%-z]+")"#, "a-z"),
            (r#"return string.match("hello123", "[^%d]+")"#, "hello"),
            (r#"return tostring(string.match("abc", "^b"))"#, "nil"),
            (r#"return string.match("aaa", "a-b") or "none""#, "none"),
            (r#"return string.match("aaab", "a-b")"#, "aaab"),
            (r#"return string.match("ab", "a?b")"#, "ab"),
            (r#"return string.match("end", "d$")"#, "d"),
            (r#"return string.match("a$b", "$b")"#, "$b"),
            (
                r#"return (string.gsub("hello world", "o", "0"))"#,
                "hell0 w0rld",
            ),
            (
                r#"return select(2, string.gsub("hello world", "o", "0"))"#,
                "2",
            ),
            (r#"return (string.gsub("hello", "", "-"))"#, "-h-e-l-l-o-"),
            (r#"return (string.gsub("abc", "%w", "%0%0"))"#, "aabbcc"),
            (
                r#"return (string.gsub("hello world", "(%w+)", "<%1>"))"#,
                "<hello> <world>",
            ),
            (r#"return (string.gsub("abc", "b", "%%"))"#, "a%c"),
            (
                r#"return (string.gsub("$name is $age", "%$(%w+)", {name="bob", age=3}))"#,
                "bob is 3",
            ),
            (
                r#"return (string.gsub("x y", "%w", function(c) return c:upper() end))"#,
                "X Y",
            ),
            (
                r#"return (string.gsub("x y", "%w", function() return nil end))"#,
                "x y",
            ),
            (r#"return (string.gsub("aaa", "a", "b", 2))"#, "bba"),
            (r#"return (string.gsub("aaa", "^a", "b"))"#, "baa"),
            (
                r#"local t = {} for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do t[#t+1] = k .. v end return table.concat(t, ",")"#,
                "a1,b2",
            ),
            (
                r#"local t = {} for w in ("one two"):gmatch("%a+") do t[#t+1] = w end return table.concat(t, ",")"#,
                "one,two",
            ),
            (
                r#"local n = 0 for _ in string.gmatch("abc", "") do n = n + 1 end return tostring(n)"#,
                "4",
            ),
            (r#"return (string.find(12345, 34))"#, "3"),
        ];
        for (code, want) in cases {
            assert_eq!(eval(code), want, "{code}");
        }
    }

    #[test]
    fn malformed_patterns_are_errors() {
        let lua = Lua::new();
        install(&lua).unwrap();
        for (code, message) in [
            (r#"string.find("a", "%")"#, "ends with '%'"),
            (r#"string.find("a", "[a")"#, "missing ']'"),
            (r#"string.find("a", "(a")"#, "unfinished capture"),
            (r#"string.match("a", "a)")"#, "invalid pattern capture"),
            (r#"string.find("a", "%1")"#, "invalid capture index"),
            (r#"string.find("a", "%f")"#, "missing '['"),
            (
                r#"string.gsub("a", "a", true)"#,
                "string/function/table expected",
            ),
            (
                r#"string.gsub("a", "a", function() return {} end)"#,
                "invalid replacement value (a table)",
            ),
            (r#"string.find(nil, "a")"#, "bad argument #1 to 'find'"),
        ] {
            let err = match lua.load(code).exec() {
                Ok(()) => panic!("{code} did not fail"),
                Err(e) => e.to_string(),
            };
            assert!(err.contains(message), "{code}: {err}");
        }
    }

    /// The same calls through LuaJIT's matcher and this one; answers what
    /// each returned (or `error`).
    fn both(subject: &str, pattern: &str, init: i64) -> (String, String) {
        const PROBE: &str = r##"
            local s, p, init = ...
            local function show(ok, ...)
              if not ok then return "error" end
              local out = {}
              for i = 1, select("#", ...) do out[i] = tostring((select(i, ...))) end
              return table.concat(out, ",")
            end
            local parts = {
              show(pcall(string.find, s, p, init)),
              show(pcall(string.match, s, p, init)),
              show(pcall(function() return string.gsub(s, p, "<%0>") end)),
              show(pcall(function()
                local n = {}
                for a, b in string.gmatch(s, p) do
                  n[#n + 1] = tostring(a) .. "/" .. tostring(b)
                  if #n > 50 then break end
                end
                return table.concat(n, ";")
              end)),
            }
            return table.concat(parts, " | ")
        "##;
        let run = |ours: bool| {
            let lua = Lua::new();
            if ours {
                install(&lua).unwrap();
            }
            lua.load(PROBE)
                .call::<String>((subject, pattern, init))
                .unwrap()
        };
        (run(false), run(true))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Differential test against LuaJIT's own matcher on small subjects
        /// and patterns built from every kind of pattern item.
        #[test]
        fn agrees_with_luajit(
            subject in "[ab1()x. %-]{0,12}",
            pattern in proptest::collection::vec(proptest::sample::select(vec![
                "a", "b", "x", ".", "%a", "%d", "%s", "%A", "%.", "%%", "[ab]", "[^a]", "[a-c]",
                "[%a.]", "*", "+", "-", "?", "(", ")", "()", "%b()", "%fx", "%f[a]", "%f[^a]",
                "^", "$", "%1", "%2", "[", "]", "%",
            ]), 0..7),
            init in -4i64..15,
        ) {
            let pattern = pattern.concat();
            let (luajit, ours) = both(&subject, &pattern, init);
            proptest::prop_assert_eq!(luajit, ours, "subject {:?} pattern {:?} init {}", subject, pattern, init);
        }
    }

    /// Backtracking work is charged, so a call's budget can stop it.
    #[test]
    fn backtracking_is_charged() {
        let subject = "x".repeat(3000);
        let mut charged = 0u64;
        let mut charge = |n: u64| {
            charged += n;
            if charged > 1_000_000 {
                Err(mlua::Error::runtime("over budget"))
            } else {
                Ok(())
            }
        };
        let mut m = Matcher::new(subject.as_bytes(), b"(.-)x(.-)x(.-)y", &mut charge);
        let err = m.do_match(0, 0).unwrap_err();
        assert!(err.to_string().contains("over budget"), "{err}");
    }
}
