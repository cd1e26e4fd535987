//! The gRPC API (`nakama.api.Nakama` on `socket.port - 1`) through a real
//! gRPC client (tonic's, over HTTP/2): the calls answer as their REST twins
//! do, and errors carry Nakama's gRPC codes.

use std::str::FromStr as _;

use axum::http::uri::PathAndQuery;
use base64::Engine as _;
use ludus_proto::api;
use ludus_proto::pbjson_types::Empty;
use serde_json::json;
use tonic::Code;
use tonic::transport::Channel;

use crate::both_backends;
use crate::support::{Backend, TestServer, token, user_id};

both_backends!(grpc_answers_as_rest_does, grpc_errors_carry_nakamas_codes,);

async fn channel(server: &TestServer) -> Channel {
    let addr = server.grpc.expect("gRPC is on by default");
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

async fn call<Req, Res>(
    channel: &Channel,
    method: &str,
    request: Req,
    authorization: Option<&str>,
) -> Result<Res, tonic::Status>
where
    Req: ludus_proto::prost::Message + Send + Sync + 'static,
    Res: ludus_proto::prost::Message + Default + Send + Sync + 'static,
{
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let mut request = tonic::Request::new(request);
    if let Some(value) = authorization {
        request
            .metadata_mut()
            .insert("authorization", value.parse().unwrap());
    }
    let path = PathAndQuery::from_str(&format!("/nakama.api.Nakama/{method}")).unwrap();
    grpc.unary(request, path, tonic_prost::ProstCodec::default())
        .await
        .map(tonic::Response::into_inner)
}

fn server_key() -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("defaultkey:")
    )
}

async fn grpc_answers_as_rest_does(backend: Backend) {
    let native = ludus_server::NativeModule::new().rpc("echo", |call, payload| async move {
        Ok(format!(
            "{}|{}",
            call.ctx.user_id.clone().unwrap_or_default(),
            payload
        ))
    });
    let server = TestServer::start_native(backend, native, |_| {}).await;
    let ch = channel(&server).await;

    let session: api::Session = call(
        &ch,
        "AuthenticateDevice",
        api::AuthenticateDeviceRequest {
            account: Some(api::AccountDevice {
                id: "grpc-device-0001".into(),
                vars: Default::default(),
            }),
            create: Some(ludus_proto::pbjson_types::BoolValue { value: true }),
            username: "grpc_ann".into(),
        },
        Some(&server_key()),
    )
    .await
    .unwrap();
    assert!(session.created);
    let bearer = format!("Bearer {}", session.token);

    // The same account through both transports.
    let account: api::Account = call(&ch, "GetAccount", Empty {}, Some(&bearer))
        .await
        .unwrap();
    let rest = server.get_bearer("/v2/account", &session.token).await;
    assert_eq!(rest.status, 200);
    let user = account.user.unwrap();
    assert_eq!(user.username, "grpc_ann");
    assert_eq!(json!(user.id), rest.body["user"]["id"]);
    assert_eq!(account.devices[0].id, "grpc-device-0001");

    // Written over gRPC, read over REST; listed over gRPC by owner.
    let acks: api::StorageObjectAcks = call(
        &ch,
        "WriteStorageObjects",
        api::WriteStorageObjectsRequest {
            objects: vec![api::WriteStorageObject {
                collection: "saves".into(),
                key: "slot/1".into(),
                value: r#"{"level":7}"#.into(),
                permission_read: Some(ludus_proto::pbjson_types::Int32Value { value: 2 }),
                ..Default::default()
            }],
        },
        Some(&bearer),
    )
    .await
    .unwrap();
    assert_eq!(acks.acks.len(), 1);
    let read = server
        .post_bearer(
            "/v2/storage",
            &session.token,
            json!({"object_ids": [{"collection": "saves", "key": "slot/1", "user_id": user.id}]}),
        )
        .await;
    let value: serde_json::Value =
        serde_json::from_str(read.body["objects"][0]["value"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"level": 7}));
    let listed: api::StorageObjectList = call(
        &ch,
        "ListStorageObjects",
        api::ListStorageObjectsRequest {
            collection: "saves".into(),
            user_id: user.id.clone(),
            limit: Some(ludus_proto::pbjson_types::Int32Value { value: 10 }),
            ..Default::default()
        },
        Some(&bearer),
    )
    .await
    .unwrap();
    assert_eq!(listed.objects.len(), 1);
    assert_eq!(listed.objects[0].key, "slot/1");

    // Path, body and query fields of one call: an RPC with the session, and
    // one with the runtime's HTTP key and no session.
    let echoed: api::Rpc = call(
        &ch,
        "RpcFunc",
        api::Rpc {
            id: "echo".into(),
            payload: r#"{"n":1}"#.into(),
            http_key: String::new(),
        },
        Some(&bearer),
    )
    .await
    .unwrap();
    assert_eq!(echoed.payload, format!(r#"{}|{{"n":1}}"#, user.id));
    let keyed: api::Rpc = call(
        &ch,
        "RpcFunc",
        api::Rpc {
            id: "echo".into(),
            payload: "x".into(),
            http_key: "defaulthttpkey".into(),
        },
        None,
    )
    .await
    .unwrap();
    assert_eq!(keyed.payload, "|x");

    // Repeated query fields (ids) and a call with no request fields.
    let users: api::Users = call(
        &ch,
        "GetUsers",
        api::GetUsersRequest {
            ids: vec![user.id.clone()],
            usernames: vec!["nobody_here".into()],
            ..Default::default()
        },
        Some(&bearer),
    )
    .await
    .unwrap();
    assert_eq!(users.users.len(), 1);
    let _: Empty = call(&ch, "Healthcheck", Empty {}, None).await.unwrap();

    // A session ended over gRPC is refused on REST too.
    let _: Empty = call(
        &ch,
        "SessionLogout",
        api::SessionLogoutRequest {
            token: session.token.clone(),
            refresh_token: session.refresh_token.clone(),
        },
        Some(&bearer),
    )
    .await
    .unwrap();
    assert_eq!(
        server
            .get_bearer("/v2/account", &session.token)
            .await
            .status,
        401
    );
}

async fn grpc_errors_carry_nakamas_codes(backend: Backend) {
    let server = TestServer::start(backend).await;
    let ch = channel(&server).await;
    let session = server.device_session("grpc-errors-0001").await;
    let bearer = format!("Bearer {}", token(&session));

    let no_auth = call::<_, api::Account>(&ch, "GetAccount", Empty {}, None)
        .await
        .unwrap_err();
    assert_eq!(no_auth.code(), Code::Unauthenticated, "{no_auth:?}");
    let wrong_key = call::<_, api::Session>(
        &ch,
        "AuthenticateDevice",
        api::AuthenticateDeviceRequest {
            account: Some(api::AccountDevice {
                id: "grpc-device-0002".into(),
                vars: Default::default(),
            }),
            ..Default::default()
        },
        Some(&format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("wrongkey:")
        )),
    )
    .await
    .unwrap_err();
    assert_eq!(wrong_key.code(), Code::Unauthenticated, "{wrong_key:?}");

    // Nakama's rule and message for a device id that is too short.
    let short = call::<_, api::Session>(
        &ch,
        "AuthenticateDevice",
        api::AuthenticateDeviceRequest {
            account: Some(api::AccountDevice {
                id: "abc".into(),
                vars: Default::default(),
            }),
            ..Default::default()
        },
        Some(&server_key()),
    )
    .await
    .unwrap_err();
    assert_eq!(short.code(), Code::InvalidArgument, "{short:?}");
    assert!(short.message().contains("10-128 bytes"), "{short:?}");

    let missing = call::<_, api::LeaderboardRecordList>(
        &ch,
        "ListLeaderboardRecords",
        api::ListLeaderboardRecordsRequest {
            leaderboard_id: "no such board".into(),
            ..Default::default()
        },
        Some(&bearer),
    )
    .await
    .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");

    let unknown = call::<_, Empty>(&ch, "NoSuchCall", Empty {}, Some(&bearer))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::Unimplemented, "{unknown:?}");

    // A request message over socket.max_request_size_bytes.
    let huge = call::<_, api::StorageObjectAcks>(
        &ch,
        "WriteStorageObjects",
        api::WriteStorageObjectsRequest {
            objects: vec![api::WriteStorageObject {
                collection: "c".into(),
                key: "k".into(),
                value: format!(
                    r#""{}""#,
                    "x".repeat(server.config.socket.max_request_size_bytes)
                ),
                ..Default::default()
            }],
        },
        Some(&bearer),
    )
    .await
    .unwrap_err();
    assert_eq!(huge.code(), Code::ResourceExhausted, "{huge:?}");

    // The account is untouched by all of the above.
    let account = server.get_bearer("/v2/account", &token(&session)).await;
    assert_eq!(account.status, 200);
    assert_eq!(account.body["user"]["id"], user_id(&session));
}
