//! The SQL of chat history and notifications on SQLite. Uuids are stored as
//! lower-case hyphenated text (nil for "none"), times as microseconds.

use ludus_core::chat::{ChannelKey, ChannelMessage, MessageBound};
use ludus_core::notification::{Notification, NotificationUpdate};
use ludus_core::store::StoreResult;
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use super::queries::{IdText, map_err, uuid_at};

const MESSAGE_COLUMNS: &str = "id, stream_mode, stream_subject, stream_subcontext, stream_label, code, sender_id, username, content, create_time, update_time";

fn message_from_row(row: &Row<'_>) -> rusqlite::Result<ChannelMessage> {
    Ok(ChannelMessage {
        id: uuid_at(row, 0)?,
        channel: ChannelKey {
            mode: row.get::<_, i64>(1)? as u8,
            subject: uuid_at(row, 2)?,
            subcontext: uuid_at(row, 3)?,
            label: row.get(4)?,
        },
        code: row.get(5)?,
        sender_id: uuid_at(row, 6)?,
        username: row.get(7)?,
        content: row.get(8)?,
        create_time_us: row.get(9)?,
        update_time_us: row.get(10)?,
    })
}

pub(super) fn insert_message(conn: &Connection, m: &ChannelMessage) -> StoreResult<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO message (id, stream_mode, stream_subject, stream_subcontext, stream_label, code, sender_id, username, content, create_time, update_time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .map_err(map_err)?;
    stmt.execute(params![
        IdText::new(m.id),
        i64::from(m.channel.mode),
        IdText::new(m.channel.subject),
        IdText::new(m.channel.subcontext),
        m.channel.label,
        m.code,
        IdText::new(m.sender_id),
        m.username,
        m.content,
        m.create_time_us,
        m.update_time_us,
    ])
    .map(drop)
    .map_err(map_err)
}

pub(super) fn update_message(
    conn: &Connection,
    channel: &ChannelKey,
    id: Uuid,
    sender: Uuid,
    content: &str,
    update_time_us: i64,
) -> StoreResult<Option<ChannelMessage>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "UPDATE message SET content = ?3, update_time = ?4 WHERE id = ?1 AND sender_id = ?2 \
             AND stream_mode = ?5 AND stream_subject = ?6 AND stream_subcontext = ?7 AND stream_label = ?8 \
             RETURNING {MESSAGE_COLUMNS}"
        ))
        .map_err(map_err)?;
    stmt.query_row(
        params![
            IdText::new(id),
            IdText::new(sender),
            content,
            update_time_us,
            i64::from(channel.mode),
            IdText::new(channel.subject),
            IdText::new(channel.subcontext),
            channel.label,
        ],
        message_from_row,
    )
    .optional()
    .map_err(map_err)
}

pub(super) fn delete_message(
    conn: &Connection,
    channel: &ChannelKey,
    id: Uuid,
    sender: Uuid,
) -> StoreResult<Option<ChannelMessage>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "DELETE FROM message WHERE id = ?1 AND sender_id = ?2 \
             AND stream_mode = ?3 AND stream_subject = ?4 AND stream_subcontext = ?5 AND stream_label = ?6 \
             RETURNING {MESSAGE_COLUMNS}"
        ))
        .map_err(map_err)?;
    stmt.query_row(
        params![
            IdText::new(id),
            IdText::new(sender),
            i64::from(channel.mode),
            IdText::new(channel.subject),
            IdText::new(channel.subcontext),
            channel.label,
        ],
        message_from_row,
    )
    .optional()
    .map_err(map_err)
}

pub(super) fn list_messages(
    conn: &Connection,
    channel: &ChannelKey,
    bound: Option<MessageBound>,
    ascending: bool,
    limit: usize,
) -> StoreResult<Vec<ChannelMessage>> {
    let (cmp, order) = if ascending {
        (">", "ASC")
    } else {
        ("<", "DESC")
    };
    let bound_clause = if bound.is_some() {
        format!(" AND (create_time, id) {cmp} (?6, ?7)")
    } else {
        " AND ?6 IS NULL AND ?7 IS NULL".to_owned()
    };
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS} FROM message
          WHERE stream_mode = ?1 AND stream_subject = ?2 AND stream_subcontext = ?3 AND stream_label = ?4{bound_clause}
          ORDER BY create_time {order}, id {order} LIMIT +?5"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    let (time, id) = match bound {
        Some(b) => (Some(b.create_time_us), Some(b.id.to_string())),
        None => (None, None),
    };
    let rows = stmt
        .query_map(
            params![
                i64::from(channel.mode),
                IdText::new(channel.subject),
                IdText::new(channel.subcontext),
                channel.label,
                limit as i64,
                time,
                id,
            ],
            message_from_row,
        )
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

fn notification_from_row(row: &Row<'_>) -> rusqlite::Result<Notification> {
    Ok(Notification {
        id: uuid_at(row, 0)?,
        user_id: uuid_at(row, 1)?,
        subject: row.get(2)?,
        content: row.get(3)?,
        code: row.get(4)?,
        sender_id: uuid_at(row, 5)?,
        create_time_us: row.get(6)?,
        persistent: true,
    })
}

pub(super) fn insert_notifications(conn: &Connection, ns: &[Notification]) -> StoreResult<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO notification (id, user_id, subject, content, code, sender_id, create_time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(map_err)?;
    for n in ns {
        stmt.execute(params![
            IdText::new(n.id),
            IdText::new(n.user_id),
            n.subject,
            n.content,
            n.code,
            IdText::new(n.sender_id),
            n.create_time_us,
        ])
        .map_err(map_err)?;
    }
    Ok(())
}

pub(super) fn list_notifications(
    conn: &Connection,
    user: Uuid,
    after: Option<MessageBound>,
    limit: usize,
) -> StoreResult<Vec<Notification>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, user_id, subject, content, code, sender_id, create_time FROM notification
              WHERE user_id = ?1 AND (?3 IS NULL OR (create_time, id) > (?3, ?4))
              ORDER BY create_time ASC, id ASC LIMIT +?2",
        )
        .map_err(map_err)?;
    let (time, id) = match after {
        Some(b) => (Some(b.create_time_us), Some(b.id.to_string())),
        None => (None, None),
    };
    let rows = stmt
        .query_map(
            params![IdText::new(user), limit as i64, time, id],
            notification_from_row,
        )
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn notifications_by_id(
    conn: &Connection,
    user: Option<Uuid>,
    ids: &[Uuid],
) -> StoreResult<Vec<Notification>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, user_id, subject, content, code, sender_id, create_time FROM notification
              WHERE id = ?1 AND (?2 IS NULL OR user_id = ?2)",
        )
        .map_err(map_err)?;
    let user = user.map(IdText::new);
    let mut out = Vec::new();
    for id in ids {
        if let Some(n) = stmt
            .query_row(params![IdText::new(*id), user], notification_from_row)
            .optional()
            .map_err(map_err)?
        {
            out.push(n);
        }
    }
    out.sort_by_key(|n| (n.create_time_us, n.id));
    out.dedup_by_key(|n| n.id);
    Ok(out)
}

pub(super) fn delete_notifications_by_id(
    conn: &Connection,
    user: Option<Uuid>,
    ids: &[Uuid],
) -> StoreResult<u64> {
    let mut stmt = conn
        .prepare_cached("DELETE FROM notification WHERE id = ?1 AND (?2 IS NULL OR user_id = ?2)")
        .map_err(map_err)?;
    let user = user.map(IdText::new);
    let mut n = 0;
    for id in ids {
        n += stmt
            .execute(params![IdText::new(*id), user])
            .map_err(map_err)? as u64;
    }
    Ok(n)
}

pub(super) fn messages_of_sender(
    conn: &Connection,
    sender: Uuid,
    limit: usize,
) -> StoreResult<Vec<ChannelMessage>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM message WHERE sender_id = ?1
              ORDER BY create_time, id LIMIT +?2"
        ))
        .map_err(map_err)?;
    let rows = stmt
        .query_map(
            params![
                IdText::new(sender),
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            message_from_row,
        )
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn update_notifications(
    conn: &Connection,
    updates: &[NotificationUpdate],
) -> StoreResult<u64> {
    let mut stmt = conn
        .prepare_cached(
            "UPDATE notification SET content = coalesce(?1, content),
                    subject = coalesce(?2, subject), sender_id = coalesce(?3, sender_id)
              WHERE id = ?4",
        )
        .map_err(map_err)?;
    let mut n = 0;
    for u in updates {
        n += stmt
            .execute(params![
                u.content,
                u.subject,
                u.sender_id.map(IdText::new),
                IdText::new(u.id)
            ])
            .map_err(map_err)? as u64;
    }
    Ok(n)
}

pub(super) fn delete_notifications(
    conn: &Connection,
    user: Uuid,
    ids: &[Uuid],
) -> StoreResult<u64> {
    let mut stmt = conn
        .prepare_cached("DELETE FROM notification WHERE user_id = ?1 AND id = ?2")
        .map_err(map_err)?;
    let mut n = 0;
    for id in ids {
        n += stmt
            .execute(params![IdText::new(user), IdText::new(*id)])
            .map_err(map_err)? as u64;
    }
    Ok(n)
}
