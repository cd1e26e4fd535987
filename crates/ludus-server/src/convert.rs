//! Domain records to wire types. The only place that knows both.

use ludus_proto::Timestamp;
use ludus_proto::api;

pub(crate) use ludus_realtime::wire::{
    account, friend, group, leaderboard_record, storage_object, user,
};

pub(crate) fn timestamp(unix_seconds: i64) -> Timestamp {
    Timestamp::from_unix_seconds(unix_seconds)
}

pub(crate) fn session(s: ludus_core::accounts::SessionTokens) -> api::Session {
    api::Session {
        created: s.created,
        token: s.token,
        refresh_token: s.refresh_token,
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

/// A friends listing page. The handler writes its JSON with
/// `wire_json::friend_list`; this is the value after hooks see.
pub(crate) fn friend_list(page: ludus_core::friend::FriendPage) -> api::FriendList {
    api::FriendList {
        friends: page.friends.into_iter().map(friend).collect(),
        cursor: page.cursor.unwrap_or_default(),
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
