//! Tables filled on first use (`nk`, a call's `ctx`): the registry slots
//! the sandbox fills when it installs, and what Rust code calls to register
//! such a table or to fill one before walking it (`convert` does, so a
//! converted table is always whole). It depends on nothing else in `lua/`.

use mlua::{Function, Lua, Table};

/// Registry slot of the sandbox's table of lazily filled tables
/// ([`Lazy::tables`]).
pub(super) const LAZY: &str = "ludus.lazy";

/// Registry slot of the sandbox's `complete(t)`, which fills `t` if it is
/// filled on first use and does nothing otherwise.
pub(super) const COMPLETE: &str = "ludus.complete";

/// Registers `t` as filled on demand by its metatable's `__index` (`nk`):
/// `pairs`, `next`, `rawget`, `rawset` and `setmetatable` call
/// `complete(t)` first, so they see every entry a full table would have; a
/// freeze keeps the metatable and the completion on the hidden contents.
/// (A call's `ctx` registers the same way, through the VM's [`Lazy`].)
pub(crate) fn make_lazy(lua: &Lua, t: &Table, complete: Function) -> mlua::Result<()> {
    let tables: Table = lua.named_registry_value(LAZY)?;
    tables.raw_set(t, complete)
}

/// Fills `t` now if it is filled on first use (a call's `ctx`, `nk`); any
/// other table is left as it is. Runs only the sandbox's own Lua.
pub(crate) fn complete(lua: &Lua, t: &Table) -> mlua::Result<()> {
    match lua.named_registry_value::<Option<Function>>(COMPLETE)? {
        Some(complete) => complete.call(t),
        // A state without the sandbox has no table filled on first use.
        None => Ok(()),
    }
}
