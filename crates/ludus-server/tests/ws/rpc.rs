//! The socket's `rpc` envelope against the Lua module in `tests/lua`: the
//! same functions `/v2/rpc/{id}` runs, with the session as context.

use ludus_proto::api::Rpc;
use ludus_proto::realtime::envelope::Message;

use crate::both_backends;
use crate::client::{BOTH, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

both_backends!(socket_rpc_runs_module_functions);

fn lua_config(config: &mut ludus_server::Config) {
    config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua").into();
    config.runtime.lua_pool_size = 2;
}

fn rpc(id: &str, payload: &str) -> Message {
    Message::Rpc(Rpc {
        id: id.into(),
        payload: payload.into(),
        http_key: String::new(),
    })
}

async fn socket_rpc_runs_module_functions(backend: Backend) {
    let server = TestServer::start_with(backend, lua_config).await;
    let (token, user_id, username) = user(&server, "socket-rpc-user-01").await;
    for format in BOTH {
        let mut c = WsClient::connect(&server, &token, format).await;
        let r = c.request(rpc("echo", "hello socket")).await;
        let Some(Message::Rpc(reply)) = r.message else {
            panic!("{r:?}")
        };
        assert_eq!(
            (reply.id.as_str(), reply.payload.as_str()),
            ("echo", "hello socket")
        );

        let r = c.request(rpc("ctx", "{}")).await;
        let Some(Message::Rpc(reply)) = r.message else {
            panic!("{r:?}")
        };
        let ctx: serde_json::Value = serde_json::from_str(&reply.payload).unwrap();
        assert_eq!(ctx["user_id"], user_id.as_str());
        assert_eq!(ctx["username"], username.as_str());
        assert_eq!(ctx["mode"], "rpc");

        let r = c.request(rpc("no_such_function", "")).await;
        assert_eq!(error_of(&r).code, 6);
        let r = c.request(rpc("denied", "")).await;
        let e = error_of(&r);
        assert_eq!(e.code, 7);
        assert!(e.message.contains("nope"), "{}", e.message);
    }
}
