//! The socket's `rpc` envelope against the JS module in `tests/js`: the
//! same functions `/v2/rpc/{id}` runs, with the session as `ctx`.

use ludus_proto::api::Rpc;
use ludus_proto::realtime::envelope::Message;

use crate::both_backends;
use crate::client::{BOTH, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

both_backends!(socket_rpc_runs_js_functions);

fn js_config(config: &mut ludus_server::Config) {
    config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js").into();
    config.runtime.js_max_count = 2;
}

fn rpc(id: &str, payload: &str) -> Message {
    Message::Rpc(Rpc {
        id: id.into(),
        payload: payload.into(),
        http_key: String::new(),
    })
}

async fn socket_rpc_runs_js_functions(backend: Backend) {
    let server = TestServer::start_with(backend, js_config).await;
    let (token, user_id, username) = user(&server, "socket-js-rpc-user-01").await;
    for format in BOTH {
        let mut c = WsClient::connect(&server, &token, format).await;
        let r = c.request(rpc("js_echo", "hello socket")).await;
        let Some(Message::Rpc(reply)) = r.message else {
            panic!("{r:?}")
        };
        assert_eq!(
            (reply.id.as_str(), reply.payload.as_str()),
            ("js_echo", "hello socket")
        );
        let r = c.request(rpc("js_whoami", "")).await;
        let Some(Message::Rpc(reply)) = r.message else {
            panic!("{r:?}")
        };
        let me: serde_json::Value = serde_json::from_str(&reply.payload).unwrap();
        assert_eq!(me["userId"], user_id.as_str());
        assert_eq!(me["username"], username.as_str());
        let r = c.request(rpc("js_denied", "")).await;
        let e = error_of(&r);
        assert_eq!(e.code, 7);
        assert_eq!(e.message, "nope, not for you");
    }
}
