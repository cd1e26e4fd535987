//! Domain records to wire types. The only place that knows both.

use ludus_core::model;
use ludus_proto::Timestamp;
use ludus_proto::api;

pub(crate) fn timestamp(unix_seconds: i64) -> Timestamp {
    Timestamp::from_unix_seconds(unix_seconds)
}

pub(crate) fn user(u: model::User) -> api::User {
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
        create_time: Some(timestamp(u.create_time)),
        update_time: Some(timestamp(u.update_time)),
        facebook_instant_game_id: u.facebook_instant_game_id,
        apple_id: u.apple_id,
    }
}

pub(crate) fn account(a: model::Account) -> api::Account {
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
        verify_time: a.verify_time.map(timestamp),
        disable_time: a.disable_time.map(timestamp),
    }
}

pub(crate) fn session(s: ludus_core::accounts::SessionTokens) -> api::Session {
    api::Session {
        created: s.created,
        token: s.token,
        refresh_token: s.refresh_token,
    }
}

pub(crate) fn storage_object(o: ludus_core::storage::StorageObject) -> api::StorageObject {
    api::StorageObject {
        collection: o.collection,
        key: o.key,
        user_id: o.user_id.to_string(),
        value: o.value,
        version: o.version,
        permission_read: o.read.as_i64() as i32,
        permission_write: o.write.as_i64() as i32,
        create_time: Some(timestamp(o.create_time)),
        update_time: Some(timestamp(o.update_time)),
    }
}

pub(crate) fn storage_ack(a: ludus_core::storage::StorageAck) -> api::StorageObjectAck {
    api::StorageObjectAck {
        collection: a.collection,
        key: a.key,
        version: a.version,
        user_id: a.user_id.to_string(),
        create_time: Some(timestamp(a.create_time)),
        update_time: Some(timestamp(a.update_time)),
    }
}

pub(crate) fn friend(f: ludus_core::friend::Friend) -> api::Friend {
    api::Friend {
        user: Some(user(f.user)),
        state: Some(ludus_proto::pbjson_types::Int32Value {
            value: f.state as i32,
        }),
        update_time: Some(timestamp(f.update_time)),
        metadata: f.metadata,
    }
}

/// A friends listing page. The handler writes its JSON with
/// `wire_json::friend_list`; this is the value after hooks see.
pub(crate) fn friend_list(page: ludus_core::friend::FriendPage) -> api::FriendList {
    api::FriendList {
        friends: page.friends.into_iter().map(friend).collect(),
        cursor: page.cursor.unwrap_or_default(),
    }
}

pub(crate) fn group(g: ludus_core::group::Group) -> api::Group {
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
        create_time: Some(timestamp(g.create_time)),
        update_time: Some(timestamp(g.update_time)),
    }
}

pub(crate) fn leaderboard_record(
    r: ludus_core::leaderboard::LeaderboardRecord,
) -> api::LeaderboardRecord {
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
        create_time: Some(timestamp(r.create_time)),
        update_time: Some(timestamp(r.update_time)),
        expiry_time: (r.expiry_time != 0).then(|| timestamp(r.expiry_time)),
        rank: r.rank,
        max_num_score: r.max_num_score,
    }
}

pub(crate) fn leaderboard_record_list(
    l: ludus_core::leaderboard_service::RecordList,
) -> api::LeaderboardRecordList {
    api::LeaderboardRecordList {
        records: l.records.into_iter().map(leaderboard_record).collect(),
        owner_records: l
            .owner_records
            .into_iter()
            .map(leaderboard_record)
            .collect(),
        next_cursor: l.next_cursor,
        prev_cursor: l.prev_cursor,
        rank_count: l.rank_count,
    }
}

pub(crate) fn tournament_record_list(
    l: ludus_core::leaderboard_service::RecordList,
) -> api::TournamentRecordList {
    let l = leaderboard_record_list(l);
    api::TournamentRecordList {
        records: l.records,
        owner_records: l.owner_records,
        next_cursor: l.next_cursor,
        prev_cursor: l.prev_cursor,
        rank_count: l.rank_count,
    }
}

pub(crate) fn tournament(t: ludus_core::leaderboard_service::TournamentView) -> api::Tournament {
    let d = t.def;
    api::Tournament {
        id: d.id,
        title: d.title,
        description: d.description,
        category: d.category,
        sort_order: d.sort_order.as_i64() as u32,
        size: t.size,
        max_size: d.max_size,
        max_num_score: d.max_num_score,
        can_enter: t.can_enter,
        end_active: t.end_active.max(0) as u32,
        next_reset: t.next_reset.max(0) as u32,
        metadata: d.metadata,
        create_time: Some(timestamp(d.create_time)),
        start_time: Some(timestamp(d.start_time)),
        end_time: (d.end_time > 0).then(|| timestamp(d.end_time)),
        duration: d.duration,
        start_active: t.start_active.max(0) as u32,
        prev_reset: t.prev_reset.max(0) as u32,
        operator: d.operator.to_api(),
        authoritative: d.authoritative,
        join_required: d.join_required,
    }
}

/// A user's groups with the user's role in each.
pub(crate) fn user_group_list(page: ludus_core::group::UserGroupPage) -> api::UserGroupList {
    api::UserGroupList {
        user_groups: page
            .groups
            .into_iter()
            .map(|g| api::user_group_list::UserGroup {
                group: Some(group(g.group)),
                state: Some(ludus_proto::pbjson_types::Int32Value {
                    value: g.role as i32,
                }),
            })
            .collect(),
        cursor: page.cursor.unwrap_or_default(),
    }
}

fn optional_millis(ms: i64) -> Option<Timestamp> {
    (ms != 0).then(|| Timestamp::from_unix_millis(ms))
}

/// A validated purchase; times not stored yet (validation without
/// persisting) or unset (no refund) are left out.
pub(crate) fn purchase(p: &ludus_core::purchase::Purchase) -> api::ValidatedPurchase {
    api::ValidatedPurchase {
        user_id: if p.user_id.is_nil() {
            String::new()
        } else {
            p.user_id.to_string()
        },
        product_id: p.product_id.clone(),
        transaction_id: p.transaction_id.clone(),
        store: p.store.code(),
        purchase_time: Some(Timestamp::from_unix_millis(p.purchase_time_ms)),
        create_time: optional_millis(p.create_time_ms),
        update_time: optional_millis(p.update_time_ms),
        refund_time: optional_millis(p.refund_time_ms),
        provider_response: p.raw_response.clone(),
        environment: p.environment.code(),
        seen_before: p.seen_before,
    }
}

/// A validated subscription, `active` as of `now_ms`.
pub(crate) fn subscription(
    s: &ludus_core::purchase::Subscription,
    now_ms: i64,
) -> api::ValidatedSubscription {
    api::ValidatedSubscription {
        user_id: if s.user_id.is_nil() {
            String::new()
        } else {
            s.user_id.to_string()
        },
        product_id: s.product_id.clone(),
        original_transaction_id: s.original_transaction_id.clone(),
        store: s.store.code(),
        purchase_time: Some(Timestamp::from_unix_millis(s.purchase_time_ms)),
        create_time: optional_millis(s.create_time_ms),
        update_time: optional_millis(s.update_time_ms),
        environment: s.environment.code(),
        expiry_time: Some(Timestamp::from_unix_millis(s.expire_time_ms)),
        refund_time: optional_millis(s.refund_time_ms),
        provider_response: s.raw_response.clone(),
        provider_notification: s.raw_notification.clone(),
        active: s.active(now_ms),
    }
}
