//! The start-up check for `nk` functions Ludus does not have: a textual scan
//! of each module for `nk.NAME` (and `nakama.NAME`, and whatever local name
//! `require("nakama")` is given) and a list of the names not in the `nk`
//! table, each with its file and line, so a module written for Nakama tells
//! at start, not at its first call, what it would miss.
//!
//! A textual scan, not a parse: comments and strings are skipped, and a
//! name reached another way (`nk[name]`, an alias passed around) is not
//! seen. It only warns; the module loads as before.

use std::collections::BTreeSet;

use super::modules::ModuleSource;

/// One reference to an `nk` function the runtime does not install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownNkReference {
    /// The module's file as error messages name it.
    pub path: String,
    /// 1-based line of the reference.
    pub line: usize,
    /// The function's name, without the `nk.` prefix.
    pub name: String,
}

/// Every reference in `modules` to a member of the `nakama` module that
/// `known` does not know, in module and line order.
pub(crate) fn scan(
    modules: &[ModuleSource],
    known: impl Fn(&str) -> bool,
) -> Vec<UnknownNkReference> {
    let mut out = Vec::new();
    for module in modules {
        let text = String::from_utf8_lossy(&module.source);
        let code = code_only(&text);
        let aliases = aliases(&code, &text);
        if aliases.is_empty() {
            continue;
        }
        for (i, line) in code.lines().enumerate() {
            for (alias, name) in members(line) {
                if aliases.contains(alias) && !known(name) {
                    out.push(UnknownNkReference {
                        path: module.display_path.clone(),
                        line: i + 1,
                        name: name.to_owned(),
                    });
                }
            }
        }
    }
    out
}

/// The names the module gives `require("nakama")` (`local nk = …`), and
/// `nakama`, as Nakama's modules also write it.
fn aliases<'a>(code: &'a str, text: &str) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    // `code` has the same lines as `text`, with strings blanked: the call's
    // shape is read from the first, the module's name from the second.
    for (line, original) in code.lines().zip(text.lines()) {
        let Some(at) = line.find("require") else {
            continue;
        };
        let Some(eq) = line[..at].rfind('=') else {
            continue;
        };
        let lhs = line[..eq].trim();
        let lhs = lhs.strip_prefix("local").map_or(lhs, str::trim);
        let names_nakama = |q: char| original.contains(&format!("{q}nakama{q}"));
        if is_identifier(lhs) && (names_nakama('"') || names_nakama('\'')) {
            names.insert(lhs);
        }
    }
    if !names.is_empty() {
        names.insert("nakama");
    }
    names
}

/// `alias.name` pairs in one line of code: identifiers joined by one dot,
/// where the first is not itself a member (`a.nk.x` is not `nk.x`).
fn members(line: &str) -> Vec<(&str, &str)> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_start(bytes[i]) || (i > 0 && (is_part(bytes[i - 1]) || bytes[i - 1] == b'.')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_part(bytes[i]) {
            i += 1;
        }
        let first = &line[start..i];
        if i + 1 < bytes.len() && bytes[i] == b'.' && is_start(bytes[i + 1]) {
            let name_start = i + 1;
            let mut j = name_start;
            while j < bytes.len() && is_part(bytes[j]) {
                j += 1;
            }
            out.push((first, &line[name_start..j]));
        }
    }
    out
}

/// `text` with comments and the contents of string literals blanked out
/// (quotes kept, line breaks kept so line numbers hold).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        if c == b'-' && b.get(i + 1) == Some(&b'-') {
            // A comment: long (`--[[ ]]`, `--[==[ ]==]`) or to the line's end.
            if let Some(level) = long_bracket(&b[i + 2..]) {
                let end = long_end(b, i + 2 + level + 2, level);
                b[i..end].iter().for_each(|&c| blank(&mut out, c));
                i = end;
            } else {
                while i < b.len() && b[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
            }
        } else if c == b'"' || c == b'\'' {
            out.push(c);
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
            if i < b.len() {
                out.push(b[i]);
                i += 1;
            }
        } else if let Some(level) = (c == b'[').then(|| long_bracket(&b[i..])).flatten() {
            let end = long_end(b, i + level + 2, level);
            b[i..end].iter().for_each(|&c| blank(&mut out, c));
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    // Only ASCII was replaced, and by ASCII, so the text is still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// The level of a long bracket opening `s` (`[[` is 0, `[==[` is 2).
fn long_bracket(s: &[u8]) -> Option<usize> {
    if s.first() != Some(&b'[') {
        return None;
    }
    let level = s[1..].iter().take_while(|&&c| c == b'=').count();
    (s.get(1 + level) == Some(&b'[')).then_some(level)
}

/// Just past the long bracket of `level` that closes at or after `from`,
/// or the end of the text.
fn long_end(b: &[u8], from: usize, level: usize) -> usize {
    let mut i = from;
    while i < b.len() {
        if b[i] == b']'
            && b[i + 1..].iter().take(level).all(|&c| c == b'=')
            && b.get(i + 1 + level) == Some(&b']')
            && i + 1 + level <= b.len()
        {
            return i + level + 2;
        }
        i += 1;
    }
    b.len()
}

fn is_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_part(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn is_identifier(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && is_start(b[0]) && b.iter().all(|&c| is_part(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(source: &str) -> ModuleSource {
        ModuleSource {
            name: "m".into(),
            display_path: "m.lua".into(),
            source: source.as_bytes().to_vec(),
        }
    }

    #[test]
    fn finds_unknown_members_of_the_required_module_only() {
        let src = r#"local nk = require("nakama")
-- nk.in_a_comment()
local s = "nk.in_a_string"
--[[ nk.in_a_long_comment
nk.still_comment ]]
nk.logger_info(s)
local x = nk.no_such_function(1) + other.nk.not_this
local y = nakama.also_missing
local t = [==[ nk.in_long_string ]==]
"#;
        let found = scan(&[module(src)], |n| n == "logger_info");
        let got: Vec<(usize, &str)> = found.iter().map(|r| (r.line, r.name.as_str())).collect();
        assert_eq!(got, [(7, "no_such_function"), (8, "also_missing")]);
        assert_eq!(found[0].path, "m.lua");
    }

    #[test]
    fn a_module_that_does_not_require_nakama_is_not_scanned() {
        let found = scan(&[module("local nk = {}\nnk.anything()\n")], |_| false);
        assert!(found.is_empty());
        let found = scan(
            &[module("local n = require 'nakama'\nn.missing()\n")],
            |_| false,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].name.as_str()), (2, "missing"));
    }
}
