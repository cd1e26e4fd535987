//! JSON shapes of `nakama.api` bodies as Nakama's REST gateway writes and
//! reads them.

use ludus_proto::api::{
    Account, AccountDevice, AuthenticateDeviceRequest, DeleteFriendsRequest, Leaderboard,
    LeaderboardRecord, LeaderboardRecordList, ListLeaderboardRecordsRequest, Operator, Session,
    UpdateAccountRequest, User, WriteLeaderboardRecordRequest,
};
use ludus_proto::{Timestamp, from_json, to_json, to_json_string};
use serde_json::{Value, json};

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::from_slice(&to_json(value).unwrap()).unwrap()
}

#[test]
fn session_uses_snake_case_and_omits_false() {
    let mut session = Session {
        created: true,
        token: "access".into(),
        refresh_token: "refresh".into(),
    };
    assert_eq!(
        to_json_string(&session).unwrap(),
        r#"{"created":true,"token":"access","refresh_token":"refresh"}"#
    );

    session.created = false;
    assert_eq!(
        to_json_string(&session).unwrap(),
        r#"{"token":"access","refresh_token":"refresh"}"#
    );
}

#[test]
fn account_writes_timestamps_as_rfc3339_utc_and_omits_zero_values() {
    // 2024-01-02T03:04:05Z
    let created = Timestamp::from_unix_seconds(1_704_164_645);
    let account = Account {
        user: Some(User {
            id: "5f7b1e0a-0000-4000-8000-000000000001".into(),
            username: "alice".into(),
            online: false,
            edge_count: 0,
            create_time: Some(created),
            ..Default::default()
        }),
        devices: vec![AccountDevice {
            id: "device-1".into(),
            ..Default::default()
        }],
        ..Default::default()
    };

    let text = to_json_string(&account).unwrap();
    assert!(
        text.contains(r#""create_time":"2024-01-02T03:04:05Z""#),
        "{text}"
    );
    assert_eq!(
        to_value(&account),
        json!({
            "user": {
                "id": "5f7b1e0a-0000-4000-8000-000000000001",
                "username": "alice",
                "create_time": "2024-01-02T03:04:05Z"
            },
            "devices": [{"id": "device-1"}]
        })
    );
    assert_eq!(from_json::<Account>(text.as_bytes()).unwrap(), account);
}

#[test]
fn int64_is_a_string_on_output_and_a_string_or_number_on_input() {
    // 2^53 + 1 cannot survive a trip through a JSON double; as a string it does.
    let big = 9_007_199_254_740_993_i64;
    let record = LeaderboardRecord {
        leaderboard_id: "weekly".into(),
        score: big,
        subscore: -7,
        num_score: 2,
        max_num_score: 10,
        ..Default::default()
    };
    assert_eq!(
        to_value(&record),
        json!({
            "leaderboard_id": "weekly",
            "score": "9007199254740993",
            "subscore": "-7",
            "num_score": 2,
            "max_num_score": 10
        })
    );

    let from_string: LeaderboardRecord =
        from_json(br#"{"score":"9007199254740993","num_score":"2"}"#).unwrap();
    let from_number: LeaderboardRecord =
        from_json(br#"{"score":9007199254740993,"num_score":2}"#).unwrap();
    assert_eq!(from_string.score, big);
    assert_eq!(from_number.score, big);
    assert_eq!(from_string.num_score, 2);
    assert_eq!(from_number.num_score, 2);

    let list = LeaderboardRecordList {
        rank_count: 3,
        ..Default::default()
    };
    assert_eq!(to_json_string(&list).unwrap(), r#"{"rank_count":"3"}"#);
}

#[test]
fn wrapper_types_are_plain_values_and_int64_wrappers_are_strings() {
    let request = ListLeaderboardRecordsRequest {
        leaderboard_id: "weekly".into(),
        limit: Some(100.into()),
        expiry: Some(1_700_000_000_i64.into()),
        ..Default::default()
    };
    assert_eq!(
        to_value(&request),
        json!({"leaderboard_id": "weekly", "limit": 100, "expiry": "1700000000"})
    );

    // A present wrapper is written even when it holds the zero value: that is
    // how a client clears a field in a partial update.
    let update = UpdateAccountRequest {
        display_name: Some("x".to_string().into()),
        avatar_url: Some(String::new().into()),
        ..Default::default()
    };
    assert_eq!(
        to_value(&update),
        json!({"display_name": "x", "avatar_url": ""})
    );

    let auth: AuthenticateDeviceRequest =
        from_json(br#"{"account":{"id":"dev"},"create":true,"username":"bob"}"#).unwrap();
    assert_eq!(auth.create.map(|create| create.value), Some(true));
    assert_eq!(auth.account.unwrap().id, "dev");
}

#[test]
fn update_account_ignores_unknown_fields_and_accepts_camel_case() {
    let snake: UpdateAccountRequest =
        from_json(br#"{"display_name":"x","unknown_field":1,"also":{"nested":[null]}}"#).unwrap();
    assert_eq!(snake.display_name.unwrap().value, "x");
    assert_eq!(snake.username, None);

    let camel: UpdateAccountRequest = from_json(br#"{"displayName":"x"}"#).unwrap();
    assert_eq!(camel.display_name.unwrap().value, "x");
}

#[test]
fn enums_are_numbers_on_output_and_numbers_or_names_on_input() {
    let leaderboard = Leaderboard {
        id: "weekly".into(),
        operator: Operator::Increment as i32,
        sort_order: 1,
        ..Default::default()
    };
    assert_eq!(
        to_value(&leaderboard),
        json!({"id": "weekly", "sort_order": 1, "operator": 3})
    );

    // The zero variant is the default and so left out.
    let best_default = Leaderboard {
        operator: Operator::NoOverride as i32,
        ..Default::default()
    };
    assert_eq!(to_json_string(&best_default).unwrap(), "{}");

    let by_number: WriteLeaderboardRecordRequest =
        from_json(br#"{"leaderboard_id":"weekly","record":{"score":"10","operator":1}}"#).unwrap();
    let by_name: WriteLeaderboardRecordRequest =
        from_json(br#"{"leaderboard_id":"weekly","record":{"score":10,"operator":"BEST"}}"#)
            .unwrap();
    assert_eq!(by_number, by_name);
    let record = by_number.record.unwrap();
    assert_eq!(record.operator(), Operator::Best);
    assert_eq!(record.score, 10);
}

#[test]
fn null_members_mean_not_set() {
    let update: UpdateAccountRequest =
        from_json(br#"{"username":null,"display_name":"x"}"#).unwrap();
    assert_eq!(update.username, None);
    assert_eq!(update.display_name.unwrap().value, "x");

    // serde alone rejects null for a string, a bool, a map and a list.
    let with_nulls = br#"{"created":null,"token":null,"refresh_token":"r"}"#;
    assert!(serde_json::from_slice::<Session>(with_nulls).is_err());
    let session: Session = from_json(with_nulls).unwrap();
    assert_eq!(
        session,
        Session {
            refresh_token: "r".into(),
            ..Default::default()
        }
    );
    let device: AccountDevice = from_json(br#"{"id":"dev","vars":null}"#).unwrap();
    assert_eq!(device.id, "dev");
    assert!(device.vars.is_empty());
    let friends: DeleteFriendsRequest = from_json(br#"{"ids":null,"usernames":["a"]}"#).unwrap();
    assert!(friends.ids.is_empty());

    // protojson rejects null as a list element, and so do we.
    assert!(from_json::<DeleteFriendsRequest>(br#"{"ids":[null]}"#).is_err());
    // A wrong type is still an error when the text also holds a null.
    assert!(from_json::<Session>(br#"{"created":"yes","token":null}"#).is_err());
}

#[test]
fn map_entries_are_written_sorted_by_key() {
    let mut device = AccountDevice {
        id: "dev".into(),
        ..Default::default()
    };
    for key in ["zeta", "alpha", "mid"] {
        device.vars.insert(key.into(), key.to_uppercase());
    }
    assert_eq!(
        to_json_string(&device).unwrap(),
        r#"{"id":"dev","vars":{"alpha":"ALPHA","mid":"MID","zeta":"ZETA"}}"#
    );
}
