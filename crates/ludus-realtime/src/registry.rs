//! The session registry: every socket session on this node, by session id and
//! by user, so that features, the runtime and matches can find a session,
//! send to it or disconnect it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use ludus_proto::realtime::Envelope;
use uuid::Uuid;

use crate::codec::{self, Encoded, Format};
use crate::outbound::{CloseReason, Outbound, PushError};

/// One connected session. Small on purpose: an idle socket is mostly this.
#[derive(Debug)]
pub struct SessionInfo {
    pub id: Uuid,
    pub user_id: Uuid,
    /// Shared: every presence of the session (streams, matches) points at it.
    pub username: Arc<str>,
    pub format: Format,
    pub outbound: Outbound,
    /// The token's variables (empty allocates nothing), expiry and `?lang=`.
    pub vars: std::collections::BTreeMap<String, String>,
    pub expiry: i64,
    pub lang: Box<str>,
}

/// A shared handle to a session; cloning it is one reference count.
#[derive(Debug, Clone)]
pub struct SessionHandle(Arc<SessionInfo>);

impl SessionHandle {
    pub fn new(
        id: Uuid,
        user_id: Uuid,
        username: &str,
        format: Format,
        queue_size: usize,
    ) -> SessionHandle {
        SessionHandle(Arc::new(SessionInfo {
            id,
            user_id,
            username: username.into(),
            format,
            outbound: Outbound::new(queue_size),
            vars: Default::default(),
            expiry: 0,
            lang: "".into(),
        }))
    }

    /// Adds what modules see of the session token; call before sharing.
    pub fn with_token_details(
        mut self,
        vars: std::collections::BTreeMap<String, String>,
        expiry: i64,
        lang: &str,
    ) -> SessionHandle {
        if let Some(info) = Arc::get_mut(&mut self.0) {
            info.vars = vars;
            info.expiry = expiry;
            info.lang = lang.into();
        }
        self
    }

    pub fn info(&self) -> &SessionInfo {
        &self.0
    }

    pub fn id(&self) -> Uuid {
        self.0.id
    }

    pub fn user_id(&self) -> Uuid {
        self.0.user_id
    }

    pub fn username(&self) -> &str {
        &self.0.username
    }

    /// The username as presences hold it (one allocation per session).
    pub fn username_shared(&self) -> Arc<str> {
        self.0.username.clone()
    }

    pub fn format(&self) -> Format {
        self.0.format
    }

    pub fn outbound(&self) -> &Outbound {
        &self.0.outbound
    }

    /// Queues an already encoded frame of this session's format.
    pub fn send_bytes(&self, frame: Bytes) -> Result<(), PushError> {
        let res = self.0.outbound.push(frame);
        if res == Err(PushError::Full) {
            tracing::warn!(session_id = %self.0.id, user_id = %self.0.user_id, "outgoing queue full, closing session");
        }
        res
    }

    /// Queues a message, in the bytes of this session's format.
    pub fn send(&self, message: &Encoded) -> Result<(), PushError> {
        match message.bytes(self.0.format) {
            Some(frame) => self.send_bytes(frame),
            None => Ok(()),
        }
    }

    /// Queues a message for this session alone, encoded once in its format
    /// (no cache for other formats, as [`Encoded`] keeps for a push to many).
    pub fn send_one(&self, envelope: &Envelope) -> Result<(), PushError> {
        match codec::encode(self.0.format, envelope) {
            Some(frame) => self.send_bytes(frame),
            None => Ok(()),
        }
    }

    pub fn close(&self, reason: CloseReason) {
        self.0.outbound.close(reason);
    }
}

/// Tells each replaced session why, then closes it (Nakama's notice -7).
fn close_replaced(user: Uuid, replaced: &[SessionHandle]) {
    if replaced.is_empty() {
        return;
    }
    let notice = Encoded::new(single_socket_notice(user));
    for old in replaced {
        tracing::info!(session_id = %old.id(), user_id = %user, "closing older socket, session.single_socket is on");
        let _ = old.send(&notice);
        old.close(CloseReason::Replaced);
    }
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<Uuid, SessionHandle>,
    by_user: HashMap<Uuid, Vec<Uuid>>,
}

/// All sessions of this node.
#[derive(Default)]
pub struct SessionRegistry {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for SessionRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRegistry")
            .field("sessions", &self.count())
            .finish()
    }
}

impl SessionRegistry {
    pub fn new() -> SessionRegistry {
        SessionRegistry::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a session. With `single_socket`, the user's other sessions are
    /// asked to close and returned (their cleanup runs in their own tasks).
    pub fn add(&self, session: SessionHandle, single_socket: bool) -> Vec<SessionHandle> {
        let mut inner = self.lock();
        let user = session.user_id();
        let id = session.id();
        let mut replaced = Vec::new();
        if single_socket && let Some(ids) = inner.by_user.get(&user) {
            replaced = ids
                .iter()
                .filter_map(|other| inner.sessions.get(other).cloned())
                .collect();
        }
        inner.sessions.insert(id, session);
        inner.by_user.entry(user).or_default().push(id);
        drop(inner);
        close_replaced(user, &replaced);
        replaced
    }

    /// `session.single_socket` on another node: the user opened a socket
    /// there, so every session of theirs here is told and closed.
    pub fn replace_user(&self, user: Uuid) -> Vec<SessionHandle> {
        let replaced = self.sessions_of(user);
        close_replaced(user, &replaced);
        replaced
    }

    /// Tells each session of a banned user so, then closes it.
    pub fn close_banned(&self, user: Uuid) {
        let sessions = self.sessions_of(user);
        if sessions.is_empty() {
            return;
        }
        let notice = Encoded::new(banned_notice(user));
        for s in sessions {
            tracing::info!(session_id = %s.id(), user_id = %user, "closing the socket of a banned user");
            let _ = s.send(&notice);
            // Nakama's close for a ban: "server-side session disconnect".
            s.close(CloseReason::Module(4));
        }
    }

    /// Removes a session; false when it was not registered.
    pub fn remove(&self, id: Uuid) -> bool {
        let mut inner = self.lock();
        let Some(session) = inner.sessions.remove(&id) else {
            return false;
        };
        let user = session.user_id();
        if let Some(ids) = inner.by_user.get_mut(&user) {
            ids.retain(|s| *s != id);
            if ids.is_empty() {
                inner.by_user.remove(&user);
            }
        }
        true
    }

    pub fn get(&self, id: Uuid) -> Option<SessionHandle> {
        self.lock().sessions.get(&id).cloned()
    }

    /// The sessions of one user on this node.
    pub fn sessions_of(&self, user: Uuid) -> Vec<SessionHandle> {
        let inner = self.lock();
        inner
            .by_user
            .get(&user)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| inner.sessions.get(id).cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Queues a message for one session; false when it is not here.
    pub fn send(&self, id: Uuid, message: &Encoded) -> bool {
        match self.get(id) {
            Some(s) => s.send(message).is_ok(),
            None => false,
        }
    }

    /// Asks one session to close; false when it is not here.
    pub fn disconnect(&self, id: Uuid, reason: CloseReason) -> bool {
        match self.get(id) {
            Some(s) => {
                s.close(reason);
                true
            }
            None => false,
        }
    }

    /// Pushes `message` to every session here; a full queue closes only
    /// its own session.
    pub fn send_to_all(&self, message: &Encoded) {
        let all: Vec<SessionHandle> = self.lock().sessions.values().cloned().collect();
        for s in all {
            let _ = s.send(message);
        }
    }

    /// Asks every session to close (shutdown).
    pub fn disconnect_all(&self, reason: CloseReason) {
        let all: Vec<SessionHandle> = self.lock().sessions.values().cloned().collect();
        for s in all {
            s.close(reason);
        }
    }

    pub fn count(&self) -> usize {
        self.lock().sessions.len()
    }
}

/// Nakama's notification to a socket that `session.single_socket` replaces:
/// code -7, subject `single_socket`, from the system, not persistent.
fn single_socket_notice(user: Uuid) -> Envelope {
    system_notice(
        user,
        "single_socket",
        ludus_core::notification::CODE_SINGLE_SOCKET,
    )
}

/// Nakama's notification to the sockets of a user being banned: code -8,
/// subject `banned`, from the system, not persistent.
fn banned_notice(user: Uuid) -> Envelope {
    system_notice(user, "banned", ludus_core::notification::CODE_USER_BANNED)
}

fn system_notice(user: Uuid, subject: &str, code: i32) -> Envelope {
    use ludus_core::notification::Notification;
    use ludus_proto::realtime::envelope::Message;
    let notice = Notification {
        id: Uuid::new_v4(),
        user_id: user,
        subject: subject.into(),
        content: "{}".into(),
        code,
        sender_id: Uuid::nil(),
        create_time_us: ludus_core::unix_now_us(),
        persistent: false,
    };
    ludus_proto::realtime::Envelope {
        cid: String::new(),
        message: Some(Message::Notifications(
            ludus_proto::realtime::Notifications {
                notifications: vec![crate::wire::notification_to_wire(&notice)],
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(user: Uuid) -> SessionHandle {
        SessionHandle::new(Uuid::new_v4(), user, "u", Format::Json, 4)
    }

    #[test]
    fn finds_sessions_by_id_and_user() {
        let r = SessionRegistry::new();
        let user = Uuid::new_v4();
        let (a, b) = (session(user), session(user));
        r.add(a.clone(), false);
        r.add(b.clone(), false);
        assert_eq!(r.count(), 2);
        assert_eq!(r.get(a.id()).unwrap().id(), a.id());
        assert_eq!(r.sessions_of(user).len(), 2);
        assert!(r.remove(a.id()));
        assert!(!r.remove(a.id()));
        assert_eq!(r.sessions_of(user).len(), 1);
        assert!(r.remove(b.id()));
        assert!(r.sessions_of(user).is_empty());
    }

    #[test]
    fn single_socket_closes_the_older_session() {
        let r = SessionRegistry::new();
        let user = Uuid::new_v4();
        let (old, new) = (session(user), session(user));
        r.add(old.clone(), true);
        let replaced = r.add(new.clone(), true);
        assert_eq!(replaced.len(), 1);
        assert_eq!(old.outbound().close_reason(), Some(CloseReason::Replaced));
        assert_eq!(new.outbound().close_reason(), None);
    }

    #[test]
    fn send_and_disconnect_by_id() {
        let r = SessionRegistry::new();
        let s = session(Uuid::new_v4());
        r.add(s.clone(), false);
        assert!(r.send(s.id(), &Encoded::new(Default::default())));
        assert_eq!(s.outbound().len(), 1);
        assert!(r.disconnect(s.id(), CloseReason::Disconnect));
        assert!(!r.send(Uuid::new_v4(), &Encoded::new(Default::default())));
    }
}
