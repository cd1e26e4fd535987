//! Notifications ([`Notifier`]): stored first when persistent, then pushed
//! as one `notifications` envelope per user to every socket of that user
//! (the user's notification stream, mode 0). A notification for everyone
//! (`nk.notification_send_all`) is one envelope to every socket when it is
//! not kept, else a copy per user, stored and pushed a page at a time.

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

    /// Pushes `notification` (not kept) to every socket of every node, as
    /// one envelope encoded once per format: Nakama's non-persistent
    /// `NotificationSendAll`. Its `user_id` is not used.
    pub fn send_to_everyone(&self, notification: &Notification) {
        self.hub.send_to_everyone(Envelope {
            cid: String::new(),
            message: Some(Message::Notifications(Notifications {
                notifications: vec![notification_to_wire(notification)],
            })),
        });
    }

    /// Gives every user a copy of `template` (its `user_id` and `id` are
    /// replaced), `page` users at a time in id order: each page is stored in
    /// one transaction, then pushed live. Answers how many users got one.
    /// Users who sign up meanwhile may or may not get one, as in Nakama.
    pub async fn notify_everyone(
        &self,
        template: &Notification,
        page: usize,
    ) -> Result<usize, StoreError> {
        let page = page.max(1);
        let mut after = Uuid::nil();
        let mut sent = 0;
        loop {
            let users = self.store.users_after(after, page).await?;
            let Some(last) = users.last() else {
                return Ok(sent);
            };
            after = last.id;
            let copies: Vec<Notification> = users
                .iter()
                .map(|u| Notification {
                    id: Uuid::new_v4(),
                    user_id: u.id,
                    ..template.clone()
                })
                .collect();
            sent += copies.len();
            self.notify(copies).await?;
            if users.len() < page {
                return Ok(sent);
            }
        }
    }
}
