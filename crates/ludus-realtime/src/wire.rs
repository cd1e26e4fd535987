//! Domain values in their wire form: for the features that push them
//! (timestamps, notifications), and the records the client API, the
//! console and modules' exports answer with (users, accounts, storage
//! objects, friends, groups, leaderboard records). It sits below every
//! feature and depends on none of them.

use ludus_core::model;
use ludus_core::notification::Notification;
use ludus_proto::Timestamp;
use ludus_proto::api;

/// Microseconds to a protobuf timestamp.
pub fn timestamp_us(us: i64) -> Timestamp {
    Timestamp {
        seconds: us.div_euclid(1_000_000),
        nanos: (us.rem_euclid(1_000_000) * 1000) as i32,
    }
}

/// The wire form of a notification.
pub fn notification_to_wire(n: &Notification) -> api::Notification {
    api::Notification {
        id: n.id.to_string(),
        subject: n.subject.clone(),
        content: n.content.clone(),
        code: n.code,
        sender_id: if n.sender_id.is_nil() {
            String::new()
        } else {
            n.sender_id.to_string()
        },
        create_time: Some(timestamp_us(n.create_time_us)),
        persistent: n.persistent,
    }
}

pub fn user(u: model::User) -> api::User {
    api::User {
        id: u.id.to_string(),
        username: u.username,
        display_name: u.display_name,
        avatar_url: u.avatar_url,
        lang_tag: u.lang_tag,
        location: u.location,
        timezone: u.timezone,
        metadata: u.metadata,
        facebook_id: u.facebook_id,
        google_id: u.google_id,
        gamecenter_id: u.gamecenter_id,
        steam_id: u.steam_id,
        online: u.online,
        edge_count: u.edge_count,
        create_time: Some(Timestamp::from_unix_seconds(u.create_time)),
        update_time: Some(Timestamp::from_unix_seconds(u.update_time)),
        facebook_instant_game_id: u.facebook_instant_game_id,
        apple_id: u.apple_id,
    }
}

pub fn account(a: model::Account) -> api::Account {
    api::Account {
        user: Some(user(a.user)),
        wallet: a.wallet,
        email: a.email.unwrap_or_default(),
        devices: a
            .devices
            .into_iter()
            .map(|id| api::AccountDevice {
                id,
                vars: Default::default(),
            })
            .collect(),
        custom_id: a.custom_id.unwrap_or_default(),
        verify_time: a.verify_time.map(Timestamp::from_unix_seconds),
        disable_time: a.disable_time.map(Timestamp::from_unix_seconds),
    }
}

pub fn storage_object(o: ludus_core::storage::StorageObject) -> api::StorageObject {
    api::StorageObject {
        collection: o.collection,
        key: o.key,
        user_id: o.user_id.to_string(),
        value: o.value,
        version: o.version,
        permission_read: o.read.as_i64() as i32,
        permission_write: o.write.as_i64() as i32,
        create_time: Some(Timestamp::from_unix_seconds(o.create_time)),
        update_time: Some(Timestamp::from_unix_seconds(o.update_time)),
    }
}

pub fn friend(f: ludus_core::friend::Friend) -> api::Friend {
    api::Friend {
        user: Some(user(f.user)),
        state: Some(ludus_proto::pbjson_types::Int32Value {
            value: f.state as i32,
        }),
        update_time: Some(Timestamp::from_unix_seconds(f.update_time)),
        metadata: f.metadata,
    }
}

pub fn group(g: ludus_core::group::Group) -> api::Group {
    api::Group {
        id: g.id.to_string(),
        creator_id: g.creator_id.to_string(),
        name: g.name,
        description: g.description,
        lang_tag: g.lang_tag,
        metadata: g.metadata,
        avatar_url: g.avatar_url,
        open: Some(ludus_proto::pbjson_types::BoolValue { value: g.open }),
        edge_count: g.edge_count,
        max_count: g.max_count,
        create_time: Some(Timestamp::from_unix_seconds(g.create_time)),
        update_time: Some(Timestamp::from_unix_seconds(g.update_time)),
    }
}

pub fn leaderboard_record(r: ludus_core::leaderboard::LeaderboardRecord) -> api::LeaderboardRecord {
    api::LeaderboardRecord {
        leaderboard_id: r.leaderboard_id,
        owner_id: r.owner_id.to_string(),
        username: r
            .username
            .map(|value| ludus_proto::pbjson_types::StringValue { value }),
        score: r.score,
        subscore: r.subscore,
        num_score: r.num_score,
        metadata: r.metadata,
        create_time: Some(Timestamp::from_unix_seconds(r.create_time)),
        update_time: Some(Timestamp::from_unix_seconds(r.update_time)),
        expiry_time: (r.expiry_time != 0).then(|| Timestamp::from_unix_seconds(r.expiry_time)),
        rank: r.rank,
        max_num_score: r.max_num_score,
    }
}
