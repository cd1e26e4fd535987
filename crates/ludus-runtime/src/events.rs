//! Events: Nakama's `nk.event`, `POST /v2/event` and the session start and
//! end events, delivered to the modules' `register_event*` callbacks off
//! the caller's path. One bounded queue (`runtime.event_queue_size`) feeds
//! `runtime.event_queue_workers` tasks; an event that finds the queue full is
//! dropped, counted and logged, and the caller never waits.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::context::CallContext;

/// One event, as Nakama's `api.Event` carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    pub name: String,
    pub properties: BTreeMap<String, String>,
    /// Milliseconds since the epoch; 0 for "now".
    pub timestamp_ms: i64,
    /// Sent by a client (`POST /v2/event`) rather than by the server.
    pub external: bool,
}

impl Event {
    /// The table or object a callback gets: Nakama's `name`, `properties`,
    /// `timestamp` (seconds) and `external`.
    pub(crate) fn to_value(&self) -> Value {
        let ms = if self.timestamp_ms == 0 {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        } else {
            self.timestamp_ms
        };
        json!({
            "name": self.name,
            "properties": self.properties,
            "timestamp": ms / 1000,
            "external": self.external,
        })
    }
}

/// Which callbacks an event is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    Custom,
    SessionStart,
    SessionEnd,
}

pub(crate) struct Queued {
    pub kind: EventKind,
    pub ctx: CallContext,
    pub event: Event,
}

/// The sending side of the queue; cheap to clone.
#[derive(Clone)]
pub(crate) struct EventQueue {
    tx: mpsc::Sender<Queued>,
    dropped: Arc<AtomicU64>,
}

impl EventQueue {
    pub(crate) fn new(size: usize) -> (EventQueue, mpsc::Receiver<Queued>) {
        let (tx, rx) = mpsc::channel(size.max(1));
        let queue = EventQueue {
            tx,
            dropped: Arc::default(),
        };
        (queue, rx)
    }

    /// Queues an event; `false` when the queue was full (or closed) and the
    /// event was dropped.
    pub(crate) fn push(&self, queued: Queued) -> bool {
        match self.tx.try_send(queued) {
            Ok(()) => true,
            Err(e) => {
                let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                // One line per power of two keeps a flood from flooding the log.
                if n.is_power_of_two() {
                    let full = matches!(e, mpsc::error::TrySendError::Full(_));
                    tracing::warn!(
                        dropped = n,
                        full,
                        "event dropped: the event queue is full; raise runtime.event_queue_size or runtime.event_queue_workers"
                    );
                }
                false
            }
        }
    }

    /// Events dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(name: &str) -> Queued {
        Queued {
            kind: EventKind::Custom,
            ctx: CallContext::default(),
            event: Event {
                name: name.into(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts_without_waiting() {
        let (queue, mut rx) = EventQueue::new(2);
        assert!(queue.push(queued("a")));
        assert!(queue.push(queued("b")));
        assert!(!queue.push(queued("c")));
        assert_eq!(queue.dropped(), 1);
        assert_eq!(rx.try_recv().unwrap().event.name, "a");
        assert!(queue.push(queued("d")));
        assert_eq!(queue.dropped(), 1);
    }

    #[test]
    fn callbacks_get_nakamas_fields() {
        let event = Event {
            name: "clicked".into(),
            properties: [("k".to_owned(), "v".to_owned())].into(),
            timestamp_ms: 1_700_000_000_123,
            external: true,
        };
        assert_eq!(
            event.to_value(),
            json!({"name": "clicked", "properties": {"k": "v"}, "timestamp": 1_700_000_000, "external": true})
        );
        let now = Event::default().to_value()["timestamp"].as_i64().unwrap();
        assert!(now > 1_700_000_000, "an unset time is now: {now}");
    }
}
