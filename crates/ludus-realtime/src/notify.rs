//! Notifications ([`Notifier`]): stored first when persistent, then pushed
//! as one `notifications` envelope per user to every socket of that user
//! (the user's notification stream, mode 0).

use std::collections::BTreeMap;
use std::sync::Arc;

use ludus_core::notification::Notification;
use ludus_core::{Store, StoreError};
use ludus_proto::api;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{Envelope, Notifications};
use uuid::Uuid;

use crate::hub::Hub;
use crate::registry::SessionHandle;
use crate::stream::Stream;
use crate::wire::notification_to_wire;

/// Notifications to users, over the hub.
pub struct Notifier {
    hub: Arc<Hub>,
    store: Arc<dyn Store>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier").finish_non_exhaustive()
    }
}

impl Notifier {
    pub(crate) fn new(hub: Arc<Hub>, store: Arc<dyn Store>) -> Notifier {
        Notifier { hub, store }
    }

    /// A new session listens on its user's notification stream (hidden:
    /// nobody is told of it).
    pub(crate) fn connect(&self, session: &SessionHandle) {
        let mut presence = self.hub.presence_of(session);
        presence.meta.hidden = true;
        // Hidden: the change needs no event.
        let _ = self
            .hub
            .track(&Stream::notifications(session.user_id()), presence);
    }

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
            self.hub.send_to_stream(
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
