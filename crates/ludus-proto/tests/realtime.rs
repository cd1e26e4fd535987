//! The realtime `Envelope`: its JSON form on `format=json` sockets and its
//! protobuf form on `format=protobuf` sockets.

use std::collections::BTreeSet;

use ludus_proto::api;
use ludus_proto::prost::Message as _;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{
    ChannelJoin, Envelope, Error, MatchData, MatchDataSend, MatchJoin, MatchmakerMatched,
    PartyData, Pong, StatusPresenceEvent, UserPresence, match_join, matchmaker_matched,
};
use ludus_proto::{Timestamp, from_json, to_json, to_json_string};
use serde_json::{Value, json};

fn envelope(cid: &str, message: Message) -> Envelope {
    Envelope {
        cid: cid.into(),
        message: Some(message),
    }
}

fn presence(user: &str) -> UserPresence {
    UserPresence {
        user_id: format!("{user}-id"),
        session_id: format!("{user}-session"),
        username: user.into(),
        persistence: true,
        status: Some("online".to_string().into()),
    }
}

#[test]
fn channel_join_json_parses_into_its_oneof_member() {
    let expected = envelope(
        "3",
        Message::ChannelJoin(ChannelJoin {
            target: "room".into(),
            r#type: 1,
            ..Default::default()
        }),
    );
    let parsed: Envelope =
        from_json(br#"{"cid":"3","channel_join":{"target":"room","type":1}}"#).unwrap();
    assert_eq!(parsed, expected);

    let camel: Envelope =
        from_json(br#"{"cid":"3","channelJoin":{"target":"room","type":"1"}}"#).unwrap();
    assert_eq!(camel, expected);
}

#[test]
fn match_data_json_uses_snake_case_string_op_code_and_base64_data() {
    let pushed = envelope(
        "",
        Message::MatchData(MatchData {
            match_id: "m1.node".into(),
            presence: Some(presence("bob")),
            op_code: 1,
            data: b"hello"[..].into(),
            reliable: true,
        }),
    );
    let value: Value = serde_json::from_slice(&to_json(&pushed).unwrap()).unwrap();
    assert_eq!(
        value,
        json!({
            "match_data": {
                "match_id": "m1.node",
                "presence": {
                    "user_id": "bob-id",
                    "session_id": "bob-session",
                    "username": "bob",
                    "persistence": true,
                    "status": "online"
                },
                "op_code": "1",
                "data": "aGVsbG8=",
                "reliable": true
            }
        })
    );
}

#[test]
fn match_data_send_accepts_number_or_string_op_code_and_any_base64() {
    let expected = MatchDataSend {
        match_id: "m1".into(),
        op_code: 2,
        data: b"\xfb\xff"[..].into(),
        ..Default::default()
    };
    for text in [
        r#"{"match_data_send":{"match_id":"m1","op_code":"2","data":"+/8="}}"#,
        r#"{"match_data_send":{"match_id":"m1","op_code":2,"data":"+/8"}}"#,
        r#"{"match_data_send":{"match_id":"m1","op_code":2,"data":"-_8="}}"#,
    ] {
        let parsed: Envelope = from_json(text.as_bytes()).unwrap();
        assert_eq!(
            parsed.message,
            Some(Message::MatchDataSend(expected.clone())),
            "{text}"
        );
    }
}

#[test]
fn empty_messages_and_empty_oneof_values_are_still_written() {
    assert_eq!(
        to_json_string(&envelope("7", Message::Pong(Pong {}))).unwrap(),
        r#"{"cid":"7","pong":{}}"#
    );
    let ping: Envelope = from_json(br#"{"cid":"8","ping":{}}"#).unwrap();
    assert!(matches!(ping.message, Some(Message::Ping(_))));

    // A set oneof member is written even when it holds the zero value.
    let join = MatchJoin {
        id: Some(match_join::Id::MatchId(String::new())),
        ..Default::default()
    };
    assert_eq!(to_json_string(&join).unwrap(), r#"{"match_id":""}"#);
    let join: MatchJoin = from_json(br#"{"token":"t"}"#).unwrap();
    assert_eq!(join.id, Some(match_join::Id::Token("t".into())));
}

#[test]
fn two_oneof_members_in_one_envelope_are_rejected() {
    assert!(from_json::<Envelope>(br#"{"ping":{},"pong":{}}"#).is_err());
}

#[test]
fn ping_envelope_has_the_exact_nakama_bytes() {
    // cid (field 1, length-delimited) then ping (field 32: key 32 << 3 | 2 =
    // 258, varint 0x82 0x02) with an empty body.
    let bytes = envelope("1", Message::Ping(Default::default())).encode_to_vec();
    assert_eq!(bytes, [0x0a, 0x01, b'1', 0x82, 0x02, 0x00]);
}

#[test]
fn populated_envelopes_survive_a_protobuf_round_trip() {
    let created = Timestamp {
        seconds: 1_704_164_645,
        nanos: 120_000_000,
    };
    let envelopes = vec![
        envelope(
            "1",
            Message::ChannelJoin(ChannelJoin {
                target: "lobby".into(),
                r#type: 1,
                persistence: Some(true.into()),
                hidden: Some(false.into()),
            }),
        ),
        envelope(
            "",
            Message::ChannelMessage(api::ChannelMessage {
                channel_id: "2...lobby".into(),
                message_id: "msg".into(),
                code: Some(0.into()),
                sender_id: "alice-id".into(),
                content: r#"{"text":"hi"}"#.into(),
                create_time: Some(created),
                persistent: Some(true.into()),
                room_name: "lobby".into(),
                ..Default::default()
            }),
        ),
        envelope(
            "",
            Message::MatchData(MatchData {
                match_id: "m1.node".into(),
                presence: Some(presence("bob")),
                op_code: -1,
                data: vec![0, 1, 2, 255].into(),
                reliable: true,
            }),
        ),
        envelope(
            "2",
            Message::Rpc(api::Rpc {
                id: "find_match".into(),
                payload: "{}".into(),
                http_key: String::new(),
            }),
        ),
        envelope(
            "",
            Message::MatchmakerMatched(MatchmakerMatched {
                ticket: "ticket".into(),
                id: Some(matchmaker_matched::Id::Token("token".into())),
                users: vec![matchmaker_matched::MatchmakerUser {
                    presence: Some(presence("carol")),
                    party_id: "party".into(),
                    string_properties: [("region".to_string(), "eu".to_string())].into(),
                    numeric_properties: [("rank".to_string(), 12.5)].into(),
                }],
                self_: None,
            }),
        ),
        envelope(
            "3",
            Message::Error(Error {
                code: 4,
                message: "match not found".into(),
                context: [("match_id".to_string(), "m1".to_string())].into(),
            }),
        ),
        envelope(
            "",
            Message::StatusPresenceEvent(StatusPresenceEvent {
                joins: vec![presence("dave")],
                leaves: vec![presence("erin")],
            }),
        ),
        envelope(
            "",
            Message::PartyData(PartyData {
                party_id: "party".into(),
                presence: Some(presence("frank")),
                op_code: i64::MAX,
                data: b"payload"[..].into(),
            }),
        ),
        envelope(
            "",
            Message::Notifications(ludus_proto::realtime::Notifications {
                notifications: vec![api::Notification {
                    id: "n1".into(),
                    subject: "hello".into(),
                    code: -3,
                    create_time: Some(created),
                    persistent: true,
                    ..Default::default()
                }],
            }),
        ),
    ];
    let kinds: BTreeSet<_> = envelopes
        .iter()
        .map(|envelope| member(envelope.message.as_ref().unwrap()).1)
        .collect();
    assert!(kinds.len() >= 5, "only {kinds:?}");

    for original in envelopes {
        let bytes = original.encode_to_vec();
        assert_eq!(Envelope::decode(bytes.as_slice()).unwrap(), original);
        let text = to_json(&original).unwrap();
        assert_eq!(from_json::<Envelope>(&text).unwrap(), original);
    }
}

/// The field number and JSON name of each `Envelope` member. The match is
/// exhaustive, so adding or losing a member fails to compile.
fn member(message: &Message) -> (u32, &'static str) {
    match message {
        Message::Channel(_) => (2, "channel"),
        Message::ChannelJoin(_) => (3, "channel_join"),
        Message::ChannelLeave(_) => (4, "channel_leave"),
        Message::ChannelMessage(_) => (5, "channel_message"),
        Message::ChannelMessageAck(_) => (6, "channel_message_ack"),
        Message::ChannelMessageSend(_) => (7, "channel_message_send"),
        Message::ChannelMessageUpdate(_) => (8, "channel_message_update"),
        Message::ChannelMessageRemove(_) => (9, "channel_message_remove"),
        Message::ChannelPresenceEvent(_) => (10, "channel_presence_event"),
        Message::Error(_) => (11, "error"),
        Message::Match(_) => (12, "match"),
        Message::MatchCreate(_) => (13, "match_create"),
        Message::MatchData(_) => (14, "match_data"),
        Message::MatchDataSend(_) => (15, "match_data_send"),
        Message::MatchJoin(_) => (16, "match_join"),
        Message::MatchLeave(_) => (17, "match_leave"),
        Message::MatchPresenceEvent(_) => (18, "match_presence_event"),
        Message::MatchmakerAdd(_) => (19, "matchmaker_add"),
        Message::MatchmakerMatched(_) => (20, "matchmaker_matched"),
        Message::MatchmakerRemove(_) => (21, "matchmaker_remove"),
        Message::MatchmakerTicket(_) => (22, "matchmaker_ticket"),
        Message::Notifications(_) => (23, "notifications"),
        Message::Rpc(_) => (24, "rpc"),
        Message::Status(_) => (25, "status"),
        Message::StatusFollow(_) => (26, "status_follow"),
        Message::StatusPresenceEvent(_) => (27, "status_presence_event"),
        Message::StatusUnfollow(_) => (28, "status_unfollow"),
        Message::StatusUpdate(_) => (29, "status_update"),
        Message::StreamData(_) => (30, "stream_data"),
        Message::StreamPresenceEvent(_) => (31, "stream_presence_event"),
        Message::Ping(_) => (32, "ping"),
        Message::Pong(_) => (33, "pong"),
        Message::Party(_) => (34, "party"),
        Message::PartyCreate(_) => (35, "party_create"),
        Message::PartyJoin(_) => (36, "party_join"),
        Message::PartyLeave(_) => (37, "party_leave"),
        Message::PartyPromote(_) => (38, "party_promote"),
        Message::PartyLeader(_) => (39, "party_leader"),
        Message::PartyAccept(_) => (40, "party_accept"),
        Message::PartyRemove(_) => (41, "party_remove"),
        Message::PartyClose(_) => (42, "party_close"),
        Message::PartyJoinRequestList(_) => (43, "party_join_request_list"),
        Message::PartyJoinRequest(_) => (44, "party_join_request"),
        Message::PartyMatchmakerAdd(_) => (45, "party_matchmaker_add"),
        Message::PartyMatchmakerRemove(_) => (46, "party_matchmaker_remove"),
        Message::PartyMatchmakerTicket(_) => (47, "party_matchmaker_ticket"),
        Message::PartyData(_) => (48, "party_data"),
        Message::PartyDataSend(_) => (49, "party_data_send"),
        Message::PartyPresenceEvent(_) => (50, "party_presence_event"),
        Message::PartyUpdate(_) => (51, "party_update"),
    }
}

/// One empty value of every `Envelope` member.
fn every_member() -> Vec<Message> {
    vec![
        Message::Channel(Default::default()),
        Message::ChannelJoin(Default::default()),
        Message::ChannelLeave(Default::default()),
        Message::ChannelMessage(Default::default()),
        Message::ChannelMessageAck(Default::default()),
        Message::ChannelMessageSend(Default::default()),
        Message::ChannelMessageUpdate(Default::default()),
        Message::ChannelMessageRemove(Default::default()),
        Message::ChannelPresenceEvent(Default::default()),
        Message::Error(Default::default()),
        Message::Match(Default::default()),
        Message::MatchCreate(Default::default()),
        Message::MatchData(Default::default()),
        Message::MatchDataSend(Default::default()),
        Message::MatchJoin(Default::default()),
        Message::MatchLeave(Default::default()),
        Message::MatchPresenceEvent(Default::default()),
        Message::MatchmakerAdd(Default::default()),
        Message::MatchmakerMatched(Default::default()),
        Message::MatchmakerRemove(Default::default()),
        Message::MatchmakerTicket(Default::default()),
        Message::Notifications(Default::default()),
        Message::Rpc(Default::default()),
        Message::Status(Default::default()),
        Message::StatusFollow(Default::default()),
        Message::StatusPresenceEvent(Default::default()),
        Message::StatusUnfollow(Default::default()),
        Message::StatusUpdate(Default::default()),
        Message::StreamData(Default::default()),
        Message::StreamPresenceEvent(Default::default()),
        Message::Ping(Default::default()),
        Message::Pong(Default::default()),
        Message::Party(Default::default()),
        Message::PartyCreate(Default::default()),
        Message::PartyJoin(Default::default()),
        Message::PartyLeave(Default::default()),
        Message::PartyPromote(Default::default()),
        Message::PartyLeader(Default::default()),
        Message::PartyAccept(Default::default()),
        Message::PartyRemove(Default::default()),
        Message::PartyClose(Default::default()),
        Message::PartyJoinRequestList(Default::default()),
        Message::PartyJoinRequest(Default::default()),
        Message::PartyMatchmakerAdd(Default::default()),
        Message::PartyMatchmakerRemove(Default::default()),
        Message::PartyMatchmakerTicket(Default::default()),
        Message::PartyData(Default::default()),
        Message::PartyDataSend(Default::default()),
        Message::PartyPresenceEvent(Default::default()),
        Message::PartyUpdate(Default::default()),
    ]
}

#[test]
fn envelope_has_all_50_members_with_nakama_numbers_and_names() {
    let members = every_member();
    assert_eq!(members.len(), 50);
    let tags: BTreeSet<u32> = members.iter().map(|message| member(message).0).collect();
    assert_eq!(tags, (2..=51).collect());

    for message in members {
        let (tag, name) = member(&message);
        let original = envelope("", message);

        // An empty member encodes as just its key and a zero length.
        let bytes = original.encode_to_vec();
        let (key, key_len) = read_varint(&bytes);
        assert_eq!(key, u64::from(tag) << 3 | 2, "{name}");
        assert_eq!(&bytes[key_len..], [0], "{name}");
        assert_eq!(Envelope::decode(bytes.as_slice()).unwrap(), original);

        let text = to_json_string(&original).unwrap();
        assert_eq!(text, format!(r#"{{"{name}":{{}}}}"#));
        assert_eq!(from_json::<Envelope>(text.as_bytes()).unwrap(), original);
    }
}

/// Decodes the varint at the start of `bytes`: its value and its length.
fn read_varint(bytes: &[u8]) -> (u64, usize) {
    let mut value = 0;
    for (index, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return (value, index + 1);
        }
    }
    panic!("no varint at the start of {bytes:?}");
}
