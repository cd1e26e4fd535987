//! HTTP integration tests: each starts a real server on 127.0.0.1:0 and talks
//! to it over HTTP, once on SQLite and once on a real PostgreSQL.

mod support;

mod absent;
mod account;
mod after_hooks;
mod authenticate;
mod console;
mod console_admin;
mod console_data;
mod console_ops;
mod friend_import;
mod grpc;
mod hooks;
mod hostile_json;
mod https_request;
mod iap_notifications;
mod js_callbacks;
mod js_nk;
mod js_rpc;
mod js_surface;
mod lane;
mod leaderboard;
mod link;
mod lua_inbox;
mod lua_metrics;
mod lua_social;
mod lua_storage;
mod platform_sign_in;
mod protocol;
mod purchases;
mod rpc;
mod session;
mod social;
mod storage;
mod storage_index;
