//! Domain values in their wire form, for the features that push them:
//! timestamps and notifications. It sits below every feature and depends on
//! none of them.

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
