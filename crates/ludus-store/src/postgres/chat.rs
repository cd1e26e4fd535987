//! Rows of chat history and notifications on PostgreSQL, read into domain
//! records. The statements live with the others in `statements.rs`.

use ludus_core::chat::{ChannelKey, ChannelMessage};
use ludus_core::notification::Notification;
use tokio_postgres::Row;

pub(super) fn message_from_row(row: &Row) -> Result<ChannelMessage, tokio_postgres::Error> {
    Ok(ChannelMessage {
        id: row.try_get(0)?,
        channel: ChannelKey {
            mode: row.try_get::<_, i16>(1)? as u8,
            subject: row.try_get(2)?,
            subcontext: row.try_get(3)?,
            label: row.try_get(4)?,
        },
        code: row.try_get(5)?,
        sender_id: row.try_get(6)?,
        username: row.try_get(7)?,
        content: row.try_get(8)?,
        create_time_us: row.try_get(9)?,
        update_time_us: row.try_get(10)?,
    })
}

pub(super) fn notification_from_row(row: &Row) -> Result<Notification, tokio_postgres::Error> {
    Ok(Notification {
        id: row.try_get(0)?,
        user_id: row.try_get(1)?,
        subject: row.try_get(2)?,
        content: row.try_get(3)?,
        code: row.try_get(4)?,
        sender_id: row.try_get(5)?,
        create_time_us: row.try_get(6)?,
        persistent: true,
    })
}
