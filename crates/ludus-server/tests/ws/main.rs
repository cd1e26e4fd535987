//! Socket integration tests: each starts a real server on 127.0.0.1:0 and
//! talks to `/ws` over real WebSockets in JSON and protobuf, on SQLite and on
//! PostgreSQL.

#[allow(dead_code)]
#[path = "../http/support.rs"]
mod support;

mod client;

mod chat;
mod envelope;
mod events;
mod friends;
mod group_chat;
mod js_match;
mod js_rpc;
mod limits;
mod matches;
mod matchmaker;
mod native_events;
mod notification;
mod party;
mod rpc;
mod runtime_realtime;
mod send_all;
mod status;
mod upgrade;
