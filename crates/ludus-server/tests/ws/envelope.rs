//! The envelope on the wire: ping/pong and `cid`, every one of the 50 members
//! in both formats, and what bad frames do.

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::*;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::both_backends;
use crate::client::{BOTH, Fmt, WsClient, error_of, user};
use crate::support::{Backend, TestServer};

both_backends!(
    ping_is_answered_with_pong_and_cid,
    every_member_is_answered_or_closes_as_nakama,
    unknown_json_fields_are_ignored,
    malformed_frames_close_the_socket,
    empty_envelope_answers_missing_payload_and_closes,
    wrong_frame_type_closes_the_socket,
    oversize_and_invalid_utf8_frames_close_the_socket,
    validation_errors_keep_the_socket_open,
);

async fn ping_is_answered_with_pong_and_cid(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "envelope-ping-0001").await;
    for format in BOTH {
        let mut c = WsClient::connect(&server, &token, format).await;
        for _ in 0..3 {
            let reply = c.request(Message::Ping(Ping {})).await;
            assert!(matches!(reply.message, Some(Message::Pong(_))), "{reply:?}");
        }
    }
}

/// Every member of the oneof, empty.
fn all_members() -> Vec<(&'static str, Message)> {
    vec![
        ("channel", Message::Channel(Default::default())),
        ("channel_join", Message::ChannelJoin(Default::default())),
        ("channel_leave", Message::ChannelLeave(Default::default())),
        (
            "channel_message",
            Message::ChannelMessage(Default::default()),
        ),
        (
            "channel_message_ack",
            Message::ChannelMessageAck(Default::default()),
        ),
        (
            "channel_message_send",
            Message::ChannelMessageSend(Default::default()),
        ),
        (
            "channel_message_update",
            Message::ChannelMessageUpdate(Default::default()),
        ),
        (
            "channel_message_remove",
            Message::ChannelMessageRemove(Default::default()),
        ),
        (
            "channel_presence_event",
            Message::ChannelPresenceEvent(Default::default()),
        ),
        ("error", Message::Error(Default::default())),
        ("match", Message::Match(Default::default())),
        ("match_create", Message::MatchCreate(Default::default())),
        ("match_data", Message::MatchData(Default::default())),
        (
            "match_data_send",
            Message::MatchDataSend(Default::default()),
        ),
        ("match_join", Message::MatchJoin(Default::default())),
        ("match_leave", Message::MatchLeave(Default::default())),
        (
            "match_presence_event",
            Message::MatchPresenceEvent(Default::default()),
        ),
        ("matchmaker_add", Message::MatchmakerAdd(Default::default())),
        (
            "matchmaker_matched",
            Message::MatchmakerMatched(Default::default()),
        ),
        (
            "matchmaker_remove",
            Message::MatchmakerRemove(Default::default()),
        ),
        (
            "matchmaker_ticket",
            Message::MatchmakerTicket(Default::default()),
        ),
        ("notifications", Message::Notifications(Default::default())),
        ("rpc", Message::Rpc(Default::default())),
        ("status", Message::Status(Default::default())),
        ("status_follow", Message::StatusFollow(Default::default())),
        (
            "status_presence_event",
            Message::StatusPresenceEvent(Default::default()),
        ),
        (
            "status_unfollow",
            Message::StatusUnfollow(Default::default()),
        ),
        ("status_update", Message::StatusUpdate(Default::default())),
        ("stream_data", Message::StreamData(Default::default())),
        (
            "stream_presence_event",
            Message::StreamPresenceEvent(Default::default()),
        ),
        ("ping", Message::Ping(Default::default())),
        ("pong", Message::Pong(Default::default())),
        ("party", Message::Party(Default::default())),
        ("party_create", Message::PartyCreate(Default::default())),
        ("party_join", Message::PartyJoin(Default::default())),
        ("party_leave", Message::PartyLeave(Default::default())),
        ("party_promote", Message::PartyPromote(Default::default())),
        ("party_leader", Message::PartyLeader(Default::default())),
        ("party_accept", Message::PartyAccept(Default::default())),
        ("party_remove", Message::PartyRemove(Default::default())),
        ("party_close", Message::PartyClose(Default::default())),
        (
            "party_join_request_list",
            Message::PartyJoinRequestList(Default::default()),
        ),
        (
            "party_join_request",
            Message::PartyJoinRequest(Default::default()),
        ),
        (
            "party_matchmaker_add",
            Message::PartyMatchmakerAdd(Default::default()),
        ),
        (
            "party_matchmaker_remove",
            Message::PartyMatchmakerRemove(Default::default()),
        ),
        (
            "party_matchmaker_ticket",
            Message::PartyMatchmakerTicket(Default::default()),
        ),
        ("party_data", Message::PartyData(Default::default())),
        (
            "party_data_send",
            Message::PartyDataSend(Default::default()),
        ),
        (
            "party_presence_event",
            Message::PartyPresenceEvent(Default::default()),
        ),
        ("party_update", Message::PartyUpdate(Default::default())),
    ]
}

/// Messages only the server sends: a client sending one is closed.
const SERVER_ONLY: &[&str] = &[
    "channel",
    "channel_message",
    "channel_message_ack",
    "channel_presence_event",
    "error",
    "match",
    "match_data",
    "match_presence_event",
    "matchmaker_matched",
    "matchmaker_ticket",
    "notifications",
    "status",
    "status_presence_event",
    "stream_data",
    "stream_presence_event",
    "party",
    "party_leader",
    "party_join_request",
    "party_matchmaker_ticket",
    "party_data",
    "party_presence_event",
];

async fn every_member_is_answered_or_closes_as_nakama(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "envelope-all-00001").await;
    let members = all_members();
    assert_eq!(members.len(), 50);
    for format in BOTH {
        for (name, message) in all_members() {
            let mut c = WsClient::connect(&server, &token, format).await;
            if name == "pong" {
                // A pong needs no answer; the socket stays usable.
                c.send(&Envelope {
                    cid: "p".into(),
                    message: Some(message),
                })
                .await;
                let r = c.request(Message::Ping(Ping {})).await;
                assert!(matches!(r.message, Some(Message::Pong(_))));
                continue;
            }
            if SERVER_ONLY.contains(&name) {
                c.send(&Envelope {
                    cid: "s".into(),
                    message: Some(message),
                })
                .await;
                let (code, before) = c.closed().await;
                assert!(code.is_some(), "{name}: no close frame");
                let e = error_of(&before[0]);
                assert_eq!(e.code, 1, "{name}: {}", e.message);
                assert_eq!(before[0].cid, "s");
                continue;
            }
            let reply = c.request(message).await;
            match name {
                "ping" => assert!(matches!(reply.message, Some(Message::Pong(_)))),
                "status_follow" => assert!(
                    matches!(reply.message, Some(Message::Status(_))),
                    "{reply:?}"
                ),
                "status_unfollow" | "status_update" => assert_eq!(reply.message, None, "{name}"),
                // No module on this server: the function is not found.
                "rpc" => assert_eq!(error_of(&reply).code, 6),
                // Empty requests of built features fail validation.
                n if n.starts_with("channel_") => assert_eq!(error_of(&reply).code, 3, "{name}"),
                // An empty party_create makes a closed party of the
                // largest size; other party requests need a party id.
                "party_create" => assert!(
                    matches!(reply.message, Some(Message::Party(_))),
                    "{reply:?}"
                ),
                n if n.starts_with("party_") || n.starts_with("matchmaker_") => {
                    assert_eq!(error_of(&reply).code, 3, "{name}")
                }
                // An empty match_create makes a relayed match; the other
                // match requests need a match id or token.
                "match_create" => assert!(
                    matches!(reply.message, Some(Message::Match(_))),
                    "{reply:?}"
                ),
                "match_join" | "match_leave" | "match_data_send" => {
                    assert_eq!(error_of(&reply).code, 3, "{name}")
                }
                other => panic!("{other}: no expectation for this request"),
            }
            // Still open.
            let r = c.request(Message::Ping(Ping {})).await;
            assert!(
                matches!(r.message, Some(Message::Pong(_))),
                "{name}: socket closed"
            );
        }
    }
}

async fn unknown_json_fields_are_ignored(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "envelope-unknown-1").await;
    let mut c = WsClient::connect(&server, &token, Fmt::Json).await;
    c.send_frame(Frame::text(
        r#"{"cid":"u1","ping":{"extra":1},"future_field":{"a":[1,2]}}"#,
    ))
    .await;
    let reply = c.recv().await.unwrap();
    assert_eq!(reply.cid, "u1");
    assert!(matches!(reply.message, Some(Message::Pong(_))));
}

async fn malformed_frames_close_the_socket(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "envelope-malform-1").await;
    for (format, frame) in [
        (Fmt::Json, Frame::text("{not json")),
        (Fmt::Json, Frame::text("")),
        (Fmt::Json, Frame::text(r#"{"cid":"1","ping":[]}"#)),
        (Fmt::Protobuf, Frame::binary(vec![0xff, 0xff, 0xff, 0xff])),
    ] {
        let mut c = WsClient::connect(&server, &token, format).await;
        c.send_frame(frame.clone()).await;
        let (code, before) = c.closed().await;
        assert_eq!(code, Some(CloseCode::Invalid), "{frame:?}");
        assert!(before.is_empty());
    }
}

async fn empty_envelope_answers_missing_payload_and_closes(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "envelope-empty-001").await;
    for (format, frame) in [
        (Fmt::Json, Frame::text(r#"{"cid":"e"}"#)),
        (Fmt::Protobuf, Frame::binary(Vec::new())),
    ] {
        let mut c = WsClient::connect(&server, &token, format).await;
        c.send_frame(frame).await;
        let (code, before) = c.closed().await;
        assert!(code.is_some());
        assert_eq!(error_of(&before[0]).code, 2);
    }
}

async fn wrong_frame_type_closes_the_socket(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "envelope-wrongty-1").await;
    let mut c = WsClient::connect(&server, &token, Fmt::Json).await;
    c.send_frame(Frame::binary(b"{\"ping\":{}}".to_vec())).await;
    assert_eq!(c.closed().await.0, Some(CloseCode::Unsupported));
    let mut c = WsClient::connect(&server, &token, Fmt::Protobuf).await;
    c.send_frame(Frame::text("{\"ping\":{}}")).await;
    assert_eq!(c.closed().await.0, Some(CloseCode::Unsupported));
}

async fn oversize_and_invalid_utf8_frames_close_the_socket(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "envelope-oversize1").await;
    for format in BOTH {
        let mut c = WsClient::connect(&server, &token, format).await;
        // A message just under the limit is fine.
        let cid = "x".repeat(4000);
        let r = c.request_with_cid(&cid, Message::Ping(Ping {})).await;
        assert!(matches!(r.message, Some(Message::Pong(_))));
        let big = Envelope {
            cid: "y".repeat(5000),
            message: Some(Message::Ping(Ping {})),
        };
        c.send(&big).await;
        let (code, _) = c.closed().await;
        assert!(matches!(code, Some(CloseCode::Size) | None), "{code:?}");
    }
    // Invalid UTF-8 in a text frame, sent raw.
    let mut c = WsClient::connect(&server, &token, Fmt::Json).await;
    c.send_raw_text_frame(&[0x7b, 0xff, 0xfe, 0x7d]).await;
    let (code, _) = c.closed().await;
    assert!(
        matches!(
            code,
            Some(CloseCode::Invalid) | Some(CloseCode::Protocol) | None
        ),
        "{code:?}"
    );
    // The server is still up.
    let mut c = WsClient::connect(&server, &token, Fmt::Json).await;
    assert!(matches!(
        c.request(Message::Ping(Ping {})).await.message,
        Some(Message::Pong(_))
    ));
}

async fn validation_errors_keep_the_socket_open(backend: Backend) {
    let server = TestServer::start(backend).await;
    let (token, ..) = user(&server, "envelope-valid-001").await;
    for format in BOTH {
        let mut c = WsClient::connect(&server, &token, format).await;
        let r = c
            .request(Message::StatusFollow(StatusFollow {
                user_ids: vec!["not-a-uuid".into()],
                usernames: vec![],
            }))
            .await;
        assert_eq!(error_of(&r).code, 3);
        let r = c
            .request(Message::StatusUpdate(StatusUpdate {
                status: Some("s".repeat(2049).into()),
            }))
            .await;
        assert_eq!(error_of(&r).code, 3);
        assert!(matches!(
            c.request(Message::Ping(Ping {})).await.message,
            Some(Message::Pong(_))
        ));
    }
}
