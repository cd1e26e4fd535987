//! The bus: how a message reaches sessions, wherever they are connected.
//!
//! Callers name the sessions and hand over one [`Encoded`] message; the bus
//! delivers it. [`LocalBus`] delivers to this node's [`SessionRegistry`]. A
//! cluster bus (Redis) will implement the same trait and forward sessions of
//! other nodes to them, so no caller changes when it arrives.

use std::sync::Arc;

use uuid::Uuid;

use crate::codec::Encoded;
use crate::registry::SessionRegistry;

pub trait Bus: Send + Sync + 'static {
    /// Delivers `message` to each session. Sessions that are gone are
    /// skipped; a full queue closes that session only.
    fn deliver(&self, sessions: &[Uuid], message: &Arc<Encoded>);
}

/// The single-node bus: delivery straight into local outbound queues.
#[derive(Debug, Clone)]
pub struct LocalBus {
    registry: Arc<SessionRegistry>,
}

impl LocalBus {
    pub fn new(registry: Arc<SessionRegistry>) -> LocalBus {
        LocalBus { registry }
    }
}

impl Bus for LocalBus {
    fn deliver(&self, sessions: &[Uuid], message: &Arc<Encoded>) {
        for id in sessions {
            if let Some(session) = self.registry.get(*id) {
                // A full queue closes that session; the others carry on.
                let _ = session.send(message);
            }
        }
    }
}
