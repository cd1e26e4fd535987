//! `ludus check`'s part for Lua: every module under `runtime.path` compiled
//! without running it, as Nakama's `check` command does, so a syntax error
//! is found (with file and line) before a deploy rather than at start.

use std::path::Path;

use mlua::Lua;

use super::modules::discover;
use crate::error::LoadError;

/// What checking the Lua modules found.
#[derive(Debug, Default)]
pub struct LuaCheck {
    /// Every module's name (`a/b.lua` is `a.b`), in name order.
    pub modules: Vec<String>,
    /// One [`LoadError::Module`] per module that does not compile.
    pub errors: Vec<LoadError>,
}

/// Compiles every `*.lua` module under `root`; a folder that cannot be read
/// is the error.
pub fn check_lua_modules(root: &Path) -> Result<LuaCheck, LoadError> {
    let sources = discover(root)?;
    let lua = Lua::new();
    let mut check = LuaCheck::default();
    for source in sources {
        let compiled = lua
            .load(source.source.as_slice())
            .set_name(format!("@{}", source.display_path))
            .into_function();
        if let Err(e) = compiled {
            check.errors.push(LoadError::Module {
                module: source.name.clone(),
                message: e.to_string(),
            });
        }
        check.modules.push(source.name);
    }
    Ok(check)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_are_named_with_file_and_line_and_nothing_runs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        // Running this would fail; compiling it must not.
        std::fs::write(dir.path().join("good.lua"), "error('ran')\nreturn {}\n").unwrap();
        std::fs::write(dir.path().join("lib/bad.lua"), "local x = 1\nlocal = 2\n").unwrap();
        let check = check_lua_modules(dir.path()).unwrap();
        assert_eq!(check.modules, ["good", "lib.bad"]);
        assert_eq!(check.errors.len(), 1);
        let message = check.errors[0].to_string();
        assert!(message.contains("lib.bad"), "{message}");
        assert!(message.contains("bad.lua:2:"), "{message}");
    }

    #[test]
    fn a_missing_folder_has_no_modules() {
        let check = check_lua_modules(Path::new("/nonexistent/ludus-modules")).unwrap();
        assert!(check.modules.is_empty() && check.errors.is_empty());
    }
}
