//! Workloads: each drives virtual users against the target until the
//! deadline and returns what they measured.

pub mod centrifugo;
pub mod envelope;
pub mod http;
pub mod social;
pub mod socket;
