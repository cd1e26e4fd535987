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

both_backends!(
    grpc_answers_as_rest_does,
    grpc_errors_carry_nakamas_codes,
    every_served_call_runs_its_before_hook,
);

/// Every method of `nakama.api.Nakama` with a before hook in Nakama whose
/// route Ludus serves, and whether it signs in with the server key.
const HOOKED: &[(&str, bool)] = &[
    ("AddFriends", false),
    ("AddGroupUsers", false),
    ("SessionRefresh", true),
    ("SessionLogout", false),
    ("AuthenticateApple", true),
    ("AuthenticateCustom", true),
    ("AuthenticateDevice", true),
    ("AuthenticateEmail", true),
    ("AuthenticateFacebook", true),
    ("AuthenticateFacebookInstantGame", true),
    ("AuthenticateGameCenter", true),
    ("AuthenticateGoogle", true),
    ("AuthenticateSteam", true),
    ("BanGroupUsers", false),
    ("BlockFriends", false),
    ("CreateGroup", false),
    ("DeleteAccount", false),
    ("DeleteFriends", false),
    ("DeleteGroup", false),
    ("DeleteLeaderboardRecord", false),
    ("DeleteNotifications", false),
    ("DeleteTournamentRecord", false),
    ("DeleteStorageObjects", false),
    ("GetAccount", false),
    ("GetUsers", false),
    ("GetMatchmakerStats", false),
    ("JoinGroup", false),
    ("JoinTournament", false),
    ("KickGroupUsers", false),
    ("LeaveGroup", false),
    ("LinkApple", false),
    ("LinkCustom", false),
    ("LinkDevice", false),
    ("LinkEmail", false),
    ("LinkFacebook", false),
    ("LinkFacebookInstantGame", false),
    ("LinkGameCenter", false),
    ("LinkGoogle", false),
    ("LinkSteam", false),
    ("ListChannelMessages", false),
    ("ListFriends", false),
    ("ListFriendsOfFriends", false),
    ("ListGroups", false),
    ("ListGroupUsers", false),
    ("ListLeaderboardRecords", false),
    ("ListLeaderboardRecordsAroundOwner", false),
    ("ListMatches", false),
    ("ListParties", false),
    ("ListNotifications", false),
    ("ListStorageObjects", false),
    ("ListTournaments", false),
    ("ListTournamentRecords", false),
    ("ListTournamentRecordsAroundOwner", false),
    ("ListUserGroups", false),
    ("PromoteGroupUsers", false),
    ("DemoteGroupUsers", false),
    ("ReadStorageObjects", false),
    ("UnlinkApple", false),
    ("UnlinkCustom", false),
    ("UnlinkDevice", false),
    ("UnlinkEmail", false),
    ("UnlinkFacebook", false),
    ("UnlinkFacebookInstantGame", false),
    ("UnlinkGameCenter", false),
    ("UnlinkGoogle", false),
    ("UnlinkSteam", false),
    ("UpdateAccount", false),
    ("UpdateGroup", false),
    ("WriteLeaderboardRecord", false),
    ("WriteStorageObjects", false),
    ("WriteTournamentRecord", false),
    ("ValidatePurchaseApple", false),
    ("ValidatePurchaseGoogle", false),
    ("ValidatePurchaseHuawei", false),
    ("ValidatePurchaseFacebookInstant", false),
    ("ValidateSubscriptionApple", false),
    ("ValidateSubscriptionGoogle", false),
    ("GetSubscription", false),
    ("ListSubscriptions", false),
    ("Event", false),
];

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

const LET_IN: &str = "hooks-let-me-in-0001";

/// Each call reaches its before hook (registered under Nakama's method name)
/// with the request as sent, here an empty one, and the hook's error is the
/// caller's answer: nothing runs between the transport and the hook that
/// could refuse the call first, on either transport.
async fn every_served_call_runs_its_before_hook(backend: Backend) {
    let native = HOOKED
        .iter()
        .fold(ludus_server::NativeModule::new(), |native, (name, _)| {
            let name = (*name).to_owned();
            native.before(&name.clone(), move |_call, request| {
                let name = name.clone();
                async move {
                    // The test's own sign-in goes through.
                    if request.to_string().contains(LET_IN) {
                        return Ok(Some(request));
                    }
                    Err(ludus_server::RuntimeError::new(
                        ludus_core::Code::FailedPrecondition,
                        format!("hooked {name}"),
                    ))
                }
            })
        });
    let server = TestServer::start_native(backend, native, |_| {}).await;
    let ch = channel(&server).await;
    let session = server.device_session(LET_IN).await;
    let bearer = format!("Bearer {}", token(&session));
    let mut missed = Vec::new();
    for (name, with_key) in HOOKED {
        let auth = if *with_key {
            server_key()
        } else {
            bearer.clone()
        };
        let status = hooked_call(&ch, name, &auth).await;
        if status.code() != Code::FailedPrecondition || status.message() != format!("hooked {name}")
        {
            missed.push(format!("{name}: {:?} {}", status.code(), status.message()));
        }
    }
    assert!(
        missed.is_empty(),
        "calls that did not reach their hook: {missed:#?}"
    );
}

/// Calls `name` with an empty request, but for the path fields its route
/// needs; answers the error status.
async fn hooked_call(ch: &Channel, name: &str, auth: &str) -> tonic::Status {
    let auth = Some(auth);
    let id = || "x1".to_owned();
    let result: Result<Empty, tonic::Status> = match name {
        // The path's one id is field 1 of each of these requests.
        "DeleteGroup" | "AddGroupUsers" | "BanGroupUsers" | "JoinGroup" | "JoinTournament"
        | "KickGroupUsers" | "LeaveGroup" | "ListGroupUsers" | "ListUserGroups"
        | "PromoteGroupUsers" | "DemoteGroupUsers" | "GetSubscription" => {
            call(ch, name, api::DeleteGroupRequest { group_id: id() }, auth).await
        }

        "UpdateGroup" => {
            let request = api::UpdateGroupRequest {
                group_id: id(),
                ..Default::default()
            };
            call(ch, name, request, auth).await
        }
        "DeleteLeaderboardRecord" => {
            let request = api::DeleteLeaderboardRecordRequest {
                leaderboard_id: id(),
            };
            call(ch, name, request, auth).await
        }
        "DeleteTournamentRecord" => {
            let request = api::DeleteTournamentRecordRequest {
                tournament_id: id(),
            };
            call(ch, name, request, auth).await
        }
        "ListChannelMessages" => {
            let request = api::ListChannelMessagesRequest {
                channel_id: id(),
                ..Default::default()
            };
            call(ch, name, request, auth).await
        }
        "WriteLeaderboardRecord" => {
            let request = api::WriteLeaderboardRecordRequest {
                leaderboard_id: id(),
                record: None,
            };
            call(ch, name, request, auth).await
        }
        "WriteTournamentRecord" => {
            let request = api::WriteTournamentRecordRequest {
                tournament_id: id(),
                record: None,
            };
            call(ch, name, request, auth).await
        }
        "ListLeaderboardRecords" => {
            let request = api::ListLeaderboardRecordsRequest {
                leaderboard_id: id(),
                ..Default::default()
            };
            call(ch, name, request, auth).await
        }
        "ListLeaderboardRecordsAroundOwner" => {
            let request = api::ListLeaderboardRecordsAroundOwnerRequest {
                leaderboard_id: id(),
                owner_id: id(),
                ..Default::default()
            };
            call(ch, name, request, auth).await
        }
        "ListStorageObjects" => {
            let request = api::ListStorageObjectsRequest {
                collection: id(),
                ..Default::default()
            };
            call(ch, name, request, auth).await
        }
        "ListTournamentRecords" => {
            let request = api::ListTournamentRecordsRequest {
                tournament_id: id(),
                ..Default::default()
            };
            call(ch, name, request, auth).await
        }
        "ListTournamentRecordsAroundOwner" => {
            let request = api::ListTournamentRecordsAroundOwnerRequest {
                tournament_id: id(),
                owner_id: id(),
                ..Default::default()
            };
            call(ch, name, request, auth).await
        }
        _ => call(ch, name, Empty {}, auth).await,
    };
    result.unwrap_err()
}
