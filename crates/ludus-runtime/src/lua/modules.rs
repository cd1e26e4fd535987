//! Finding the modules: every `*.lua` file under `runtime.path`, named by its
//! relative path (`a/b.lua` is module `a.b`), read once at start so every VM
//! loads the same code even if the files change while the server runs.

use std::path::{Path, PathBuf};

use crate::error::LoadError;

#[derive(Debug, Clone)]
pub(crate) struct ModuleSource {
    pub name: String,
    /// The file as error messages name it.
    pub display_path: String,
    pub source: Vec<u8>,
}

/// Modules sorted by name; a missing folder means no modules.
pub(crate) fn discover(root: &Path) -> Result<Vec<ModuleSource>, LoadError> {
    let mut out = Vec::new();
    if !root.exists() {
        return Ok(out);
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let read = |e| LoadError::Read {
            path: dir.clone(),
            source: e,
        };
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(read)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(read)?;
        entries.sort();
        for path in entries {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "lua") {
                let source = std::fs::read(&path).map_err(|e| LoadError::Read {
                    path: path.clone(),
                    source: e,
                })?;
                let rel = path.strip_prefix(root).unwrap_or(&path).with_extension("");
                let name = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(".");
                out.push(ModuleSource {
                    name,
                    display_path: path.display().to_string(),
                    source,
                });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
