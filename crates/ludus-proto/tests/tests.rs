//! Integration tests of ludus-proto: the JSON and protobuf shapes Nakama
//! clients rely on. One binary; each file is one topic.

mod api_json;
mod realtime;
mod schema;
mod timestamp;
