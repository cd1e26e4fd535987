//! Integration tests of the runtime: Lua and JS fixtures under `tests/fixtures`
//! loaded into a real pool, with in-memory services standing in for the
//! server. One test binary; topics live in the modules below.

mod r#await;
mod context;
mod hostile;
mod js;
mod js_nk;
mod loading;
mod native;
mod nk;
mod sandbox;
mod schedules;
mod storage;
mod support;
