//! The audit issue 57 asks for, kept true by a test: every function of
//! Nakama's JS `nk` (the list in ludus-runtime's `js_nk.rs`) and every
//! callback kind Ludus's JS initializer registers is called by a JS module
//! that this crate's tests drive over the real server on SQLite and on
//! PostgreSQL (`tests/js*/`, and JS modules written inline by the tests).
//! A function or callback added without such a test fails here, naming it.

use std::path::Path;

const NK_LIST: &str = include_str!("../../../ludus-runtime/tests/runtime/js_nk.rs");
const INITIALIZER: &str = include_str!("../../../ludus-runtime/src/js/initializer.rs");

/// The quoted words between `start` and the next `];` of `text`.
fn quoted_list(text: &str, start: &str) -> Vec<String> {
    let from = text.find(start).expect("list start") + start.len();
    let body = &text[from..from + text[from..].find("];").expect("list end")];
    body.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The text of every JS module the tests of this crate load.
fn modules() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut text = String::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let name = path.to_string_lossy().into_owned();
            let inline_js = name.ends_with(".rs")
                && std::fs::read_to_string(&path)
                    .unwrap()
                    .contains("function InitModule");
            if name.contains("/tests/js") && name.ends_with(".js") || inline_js {
                text.push_str(&std::fs::read_to_string(&path).unwrap());
                text.push('\n');
            }
        }
    }
    text
}

#[test]
fn every_js_nk_function_is_called_by_a_module_the_tests_drive() {
    let names = quoted_list(NK_LIST, "const NAKAMA_JS_NK: [&str; 171] = [");
    assert_eq!(names.len(), 171);
    let text = modules();
    let untested: Vec<&String> = names
        .iter()
        .filter(|n| !text.contains(&format!("nk.{n}(")))
        .collect();
    assert!(
        untested.is_empty(),
        "nk functions no test module calls: {untested:?}"
    );
}

#[test]
fn every_js_callback_kind_is_registered_by_a_module_the_tests_drive() {
    let mut kinds: Vec<&str> = INITIALIZER
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|w| w.starts_with("register") && w[8..].chars().all(char::is_alphanumeric))
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert!(kinds.len() >= 20, "{kinds:?}");
    let text = modules();
    let untested: Vec<&&str> = kinds
        .iter()
        .filter(|k| {
            !text.contains(&format!("initializer.{k}("))
                && !text.contains(&format!("initializer.{k}"))
        })
        .collect();
    assert!(
        untested.is_empty(),
        "callback kinds no test module registers: {untested:?}"
    );
}
