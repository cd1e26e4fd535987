//! What the realtime layer's unit tests share: a fresh SQLite store to
//! build a `Realtime` on, sessions, and the frames a session was sent.

use std::sync::Arc;

use ludus_proto::realtime::Envelope;
use ludus_proto::realtime::envelope::Message;
use uuid::Uuid;

use crate::codec::{self, Format};
use crate::registry::SessionHandle;
use crate::{Connect, Realtime};

/// A store in a temporary folder, kept as long as the folder.
pub(crate) async fn store() -> (Arc<dyn ludus_core::Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = ludus_store::open("", dir.path(), Default::default())
        .await
        .unwrap();
    (store, dir)
}

/// A JSON session of `user` named `name`.
pub(crate) fn session(rt: &Realtime, user: Uuid, name: &str, status: bool) -> SessionHandle {
    rt.connect(Connect {
        session_id: Uuid::new_v4(),
        user_id: user,
        username: name.into(),
        format: Format::Json,
        status,
        vars: Default::default(),
        expiry: 0,
        lang: String::new(),
    })
}

/// Everything queued for a JSON session so far, taken off its queue.
pub(crate) fn sent(s: &SessionHandle) -> Vec<Envelope> {
    s.outbound()
        .take_all()
        .iter()
        .map(|f| codec::decode(Format::Json, f).unwrap())
        .collect()
}

/// As [`sent`], the messages only.
pub(crate) fn sent_messages(s: &SessionHandle) -> Vec<Message> {
    sent(s).into_iter().filter_map(|e| e.message).collect()
}

/// The module runtime of a server without modules.
pub(crate) fn no_modules() -> Arc<dyn crate::Modules> {
    Arc::new(crate::NoModules)
}
