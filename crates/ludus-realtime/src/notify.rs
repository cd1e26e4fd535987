//! Notifications: stored first when persistent, then pushed as one
//! `notifications` envelope per user to every socket of that user (the
//! user's notification stream, mode 0).

use std::collections::BTreeMap;

use ludus_core::StoreError;
use ludus_core::notification::Notification;
use ludus_proto::api;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{Envelope, Notifications};
use uuid::Uuid;

use crate::Realtime;
use crate::chat::timestamp_us;
use crate::stream::Stream;

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

impl Realtime {
    /// Stores the persistent notifications (all or none), then pushes every
    /// notification to its user's sockets on this node or through the bus.
    pub async fn notify(&self, notifications: Vec<Notification>) -> Result<(), StoreError> {
        let stored: Vec<Notification> = notifications
            .iter()
            .filter(|n| n.persistent)
            .cloned()
            .collect();
        self.store.insert_notifications(&stored).await?;
        let mut by_user: BTreeMap<Uuid, Vec<api::Notification>> = BTreeMap::new();
        for n in &notifications {
            by_user
                .entry(n.user_id)
                .or_default()
                .push(notification_to_wire(n));
        }
        for (user, notifications) in by_user {
            self.router.send_to_stream(
                &Stream::notifications(user),
                Envelope {
                    cid: String::new(),
                    message: Some(Message::Notifications(Notifications { notifications })),
                },
                None,
            );
        }
        Ok(())
    }
}
