//! Integration tests of the `ludus` crate: the command line through the
//! real binary, and `ludus bench` against a real Ludus.

mod bench;
mod cli;
mod js_bundle;
mod metrics;
