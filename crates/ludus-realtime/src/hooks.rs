//! Before and after hooks on socket messages (`nk.register_rt_before|after`):
//! the hook names of the messages a client may send and what a before hook
//! decides. The hooks themselves run through [`crate::Modules`], over
//! envelopes in their JSON form (Nakama's hooks see the whole envelope,
//! `cid` included).
//!
//! A before hook may rewrite the envelope; returning nil rejects it, which
//! answers `UNRECOGNIZED_PAYLOAD` and closes the socket, and a failing hook
//! answers `RUNTIME_FUNCTION_EXCEPTION` and keeps it open, as Nakama does.

use std::future::Future;
use std::pin::Pin;

use ludus_proto::realtime::envelope::Message;
use serde_json::Value;

pub type HookFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a before hook decided.
#[derive(Debug)]
pub enum Before {
    /// Go on with this (possibly rewritten) envelope.
    Continue(Value),
    /// The hook returned nil: the message is refused.
    Reject,
    /// The hook failed with this message.
    Failed(String),
}

/// Every name [`message_name`] answers, for implementations that look their
/// hooks up once at start-up rather than per message.
pub const MESSAGE_NAMES: [&str; 29] = [
    "channeljoin",
    "channelleave",
    "channelmessagesend",
    "channelmessageupdate",
    "channelmessageremove",
    "matchcreate",
    "matchdatasend",
    "matchjoin",
    "matchleave",
    "matchmakeradd",
    "matchmakerremove",
    "partycreate",
    "partyjoin",
    "partyleave",
    "partypromote",
    "partyaccept",
    "partyremove",
    "partyclose",
    "partyjoinrequestlist",
    "partymatchmakeradd",
    "partymatchmakerremove",
    "partydatasend",
    "partyupdate",
    "ping",
    "pong",
    "rpc",
    "statusfollow",
    "statusunfollow",
    "statusupdate",
];

/// The hook name of a message a client may send; None for server-only ones.
/// Keep in step with [`MESSAGE_NAMES`].
pub fn message_name(message: &Message) -> Option<&'static str> {
    Some(match message {
        Message::ChannelJoin(_) => "channeljoin",
        Message::ChannelLeave(_) => "channelleave",
        Message::ChannelMessageSend(_) => "channelmessagesend",
        Message::ChannelMessageUpdate(_) => "channelmessageupdate",
        Message::ChannelMessageRemove(_) => "channelmessageremove",
        Message::MatchCreate(_) => "matchcreate",
        Message::MatchDataSend(_) => "matchdatasend",
        Message::MatchJoin(_) => "matchjoin",
        Message::MatchLeave(_) => "matchleave",
        Message::MatchmakerAdd(_) => "matchmakeradd",
        Message::MatchmakerRemove(_) => "matchmakerremove",
        Message::PartyCreate(_) => "partycreate",
        Message::PartyJoin(_) => "partyjoin",
        Message::PartyLeave(_) => "partyleave",
        Message::PartyPromote(_) => "partypromote",
        Message::PartyAccept(_) => "partyaccept",
        Message::PartyRemove(_) => "partyremove",
        Message::PartyClose(_) => "partyclose",
        Message::PartyJoinRequestList(_) => "partyjoinrequestlist",
        Message::PartyMatchmakerAdd(_) => "partymatchmakeradd",
        Message::PartyMatchmakerRemove(_) => "partymatchmakerremove",
        Message::PartyDataSend(_) => "partydatasend",
        Message::PartyUpdate(_) => "partyupdate",
        Message::Ping(_) => "ping",
        Message::Pong(_) => "pong",
        Message::Rpc(_) => "rpc",
        Message::StatusFollow(_) => "statusfollow",
        Message::StatusUnfollow(_) => "statusunfollow",
        Message::StatusUpdate(_) => "statusupdate",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use ludus_proto::realtime::{ChannelJoin, Ping, StatusUpdate};

    use super::*;

    #[test]
    fn message_names_are_listed_and_unique() {
        for m in [
            Message::ChannelJoin(ChannelJoin::default()),
            Message::Ping(Ping {}),
            Message::StatusUpdate(StatusUpdate::default()),
        ] {
            let name = message_name(&m).unwrap();
            assert!(MESSAGE_NAMES.contains(&name), "{name} is not listed");
        }
        let mut names = MESSAGE_NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MESSAGE_NAMES.len());
    }
}
