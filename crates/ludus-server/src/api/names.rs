//! Nakama's API names (its gRPC method names, `AuthenticateDevice`) of the
//! routes Ludus serves, for the per-API metrics: [`api_of`] finds a
//! request's name from its method and path by matching segments, with no
//! allocation, so every request can afford it.

use axum::http::Method;

/// Every name [`api_of`] can answer, in one list so the metrics keep one
/// slot per name.
pub(crate) const API_NAMES: &[&str] = &[
    "Healthcheck",
    "AuthenticateDevice",
    "AuthenticateEmail",
    "AuthenticateCustom",
    "AuthenticateApple",
    "AuthenticateFacebook",
    "AuthenticateFacebookInstantGame",
    "AuthenticateGameCenter",
    "AuthenticateGoogle",
    "AuthenticateSteam",
    "SessionRefresh",
    "SessionLogout",
    "GetAccount",
    "UpdateAccount",
    "DeleteAccount",
    "LinkDevice",
    "LinkEmail",
    "LinkCustom",
    "UnlinkDevice",
    "UnlinkEmail",
    "UnlinkCustom",
    "LinkApple",
    "LinkFacebook",
    "LinkFacebookInstantGame",
    "LinkGameCenter",
    "LinkGoogle",
    "LinkSteam",
    "UnlinkApple",
    "UnlinkFacebook",
    "UnlinkFacebookInstantGame",
    "UnlinkGameCenter",
    "UnlinkGoogle",
    "UnlinkSteam",
    "GetUsers",
    "ListFriends",
    "AddFriends",
    "DeleteFriends",
    "BlockFriends",
    "ListFriendsOfFriends",
    "ImportFacebookFriends",
    "ImportSteamFriends",
    "ListGroups",
    "CreateGroup",
    "UpdateGroup",
    "DeleteGroup",
    "JoinGroup",
    "LeaveGroup",
    "AddGroupUsers",
    "KickGroupUsers",
    "BanGroupUsers",
    "PromoteGroupUsers",
    "DemoteGroupUsers",
    "ListGroupUsers",
    "ListUserGroups",
    "ReadStorageObjects",
    "WriteStorageObjects",
    "DeleteStorageObjects",
    "ListStorageObjects",
    "ListChannelMessages",
    "ListNotifications",
    "DeleteNotifications",
    "ListLeaderboardRecords",
    "WriteLeaderboardRecord",
    "DeleteLeaderboardRecord",
    "ListLeaderboardRecordsAroundOwner",
    "ListTournaments",
    "ListTournamentRecords",
    "WriteTournamentRecord",
    "DeleteTournamentRecord",
    "JoinTournament",
    "ListTournamentRecordsAroundOwner",
    "ListParties",
    "GetMatchmakerStats",
    "ListMatches",
    "Event",
    "ValidatePurchaseApple",
    "ValidatePurchaseGoogle",
    "ValidatePurchaseHuawei",
    "ValidatePurchaseSamsung",
    "ValidatePurchaseFacebookInstant",
    "ValidateSubscriptionApple",
    "ValidateSubscriptionGoogle",
    "ListSubscriptions",
    "GetSubscription",
];

/// What a request is, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Called<'a> {
    /// One of [`API_NAMES`].
    Api(&'static str),
    /// `/v2/rpc/{id}`: counted per RPC id.
    Rpc(&'a str),
}

/// The API a request calls, if it is one Ludus serves.
pub(crate) fn api_of<'a>(method: &Method, path: &'a str) -> Option<Called<'a>> {
    let rest = match path.strip_prefix("/v2/") {
        Some(rest) => rest,
        None => {
            return (path == "/healthcheck" && *method == Method::GET)
                .then_some(Called::Api("Healthcheck"));
        }
    };
    let mut s = rest.split('/');
    let seg: [Option<&str>; 5] = std::array::from_fn(|_| s.next());
    if s.next().is_some() {
        return None;
    }
    let m = method;
    let (get, post, put, delete) = (
        *m == Method::GET,
        *m == Method::POST,
        *m == Method::PUT,
        *m == Method::DELETE,
    );
    let name = match seg {
        [Some("rpc"), Some(id), None, ..] if get || post => return Some(Called::Rpc(id)),
        [Some("account"), None, ..] if get => "GetAccount",
        [Some("account"), None, ..] if put => "UpdateAccount",
        [Some("account"), None, ..] if delete => "DeleteAccount",
        [Some("account"), Some("authenticate"), Some(kind), None, ..] if post => match kind {
            "device" => "AuthenticateDevice",
            "email" => "AuthenticateEmail",
            "custom" => "AuthenticateCustom",
            "apple" => "AuthenticateApple",
            "facebook" => "AuthenticateFacebook",
            "facebookinstantgame" => "AuthenticateFacebookInstantGame",
            "gamecenter" => "AuthenticateGameCenter",
            "google" => "AuthenticateGoogle",
            "steam" => "AuthenticateSteam",
            _ => return None,
        },
        [Some("account"), Some("session"), Some("refresh"), None, ..] if post => "SessionRefresh",
        [Some("session"), Some("logout"), None, ..] if post => "SessionLogout",
        [
            Some("account"),
            Some(verb @ ("link" | "unlink")),
            Some(kind),
            None,
            ..,
        ] if post => match (verb, kind) {
            ("link", "device") => "LinkDevice",
            ("link", "email") => "LinkEmail",
            ("link", "custom") => "LinkCustom",
            ("unlink", "device") => "UnlinkDevice",
            ("unlink", "email") => "UnlinkEmail",
            ("unlink", "custom") => "UnlinkCustom",
            ("link", "apple") => "LinkApple",
            ("link", "facebook") => "LinkFacebook",
            ("link", "facebookinstantgame") => "LinkFacebookInstantGame",
            ("link", "gamecenter") => "LinkGameCenter",
            ("link", "google") => "LinkGoogle",
            ("link", "steam") => "LinkSteam",
            ("unlink", "apple") => "UnlinkApple",
            ("unlink", "facebook") => "UnlinkFacebook",
            ("unlink", "facebookinstantgame") => "UnlinkFacebookInstantGame",
            ("unlink", "gamecenter") => "UnlinkGameCenter",
            ("unlink", "google") => "UnlinkGoogle",
            ("unlink", "steam") => "UnlinkSteam",
            _ => return None,
        },
        [Some("user"), None, ..] if get => "GetUsers",
        [Some("user"), Some(_), Some("group"), None, ..] if get => "ListUserGroups",
        [Some("friend"), None, ..] if get => "ListFriends",
        [Some("friend"), None, ..] if post => "AddFriends",
        [Some("friend"), None, ..] if delete => "DeleteFriends",
        [Some("friend"), Some("block"), None, ..] if post => "BlockFriends",
        [Some("friend"), Some("friends"), None, ..] if get => "ListFriendsOfFriends",
        [Some("friend"), Some("facebook"), None, ..] if post => "ImportFacebookFriends",
        [Some("friend"), Some("steam"), None, ..] if post => "ImportSteamFriends",
        [Some("group"), None, ..] if get => "ListGroups",
        [Some("group"), None, ..] if post => "CreateGroup",
        [Some("group"), Some(_), None, ..] if put => "UpdateGroup",
        [Some("group"), Some(_), None, ..] if delete => "DeleteGroup",
        [Some("group"), Some(_), Some("user"), None, ..] if get => "ListGroupUsers",
        [Some("group"), Some(_), Some(verb), None, ..] if post => match verb {
            "join" => "JoinGroup",
            "leave" => "LeaveGroup",
            "add" => "AddGroupUsers",
            "kick" => "KickGroupUsers",
            "ban" => "BanGroupUsers",
            "promote" => "PromoteGroupUsers",
            "demote" => "DemoteGroupUsers",
            _ => return None,
        },
        [Some("storage"), None, ..] if post => "ReadStorageObjects",
        [Some("storage"), None, ..] if put => "WriteStorageObjects",
        [Some("storage"), Some("delete"), None, ..] if put => "DeleteStorageObjects",
        [Some("storage"), Some(_), None, ..] | [Some("storage"), Some(_), Some(_), None, ..]
            if get =>
        {
            "ListStorageObjects"
        }
        [Some("channel"), Some(_), None, ..] if get => "ListChannelMessages",
        [Some("notification"), None, ..] if get => "ListNotifications",
        [Some("notification"), None, ..] if delete => "DeleteNotifications",
        [Some("leaderboard"), Some(_), None, ..] if get => "ListLeaderboardRecords",
        [Some("leaderboard"), Some(_), None, ..] if post => "WriteLeaderboardRecord",
        [Some("leaderboard"), Some(_), None, ..] if delete => "DeleteLeaderboardRecord",
        [Some("leaderboard"), Some(_), Some("owner"), Some(_), None] if get => {
            "ListLeaderboardRecordsAroundOwner"
        }
        [Some("tournament"), None, ..] if get => "ListTournaments",
        [Some("tournament"), Some(_), None, ..] if get => "ListTournamentRecords",
        [Some("tournament"), Some(_), None, ..] if post || put => "WriteTournamentRecord",
        [Some("tournament"), Some(_), None, ..] if delete => "DeleteTournamentRecord",
        [Some("tournament"), Some(_), Some("join"), None, ..] if post => "JoinTournament",
        [Some("tournament"), Some(_), Some("owner"), Some(_), None] if get => {
            "ListTournamentRecordsAroundOwner"
        }
        [Some("party"), None, ..] if get => "ListParties",
        [Some("matchmaker"), Some("stats"), None, ..] if get => "GetMatchmakerStats",
        [Some("match"), None, ..] if get => "ListMatches",
        [Some("event"), None, ..] if post => "Event",
        [Some("iap"), Some("purchase"), Some(store), None, ..] if post => match store {
            "apple" => "ValidatePurchaseApple",
            "google" => "ValidatePurchaseGoogle",
            "huawei" => "ValidatePurchaseHuawei",
            "samsung" => "ValidatePurchaseSamsung",
            "facebookinstant" => "ValidatePurchaseFacebookInstant",
            _ => return None,
        },
        [Some("iap"), Some("subscription"), None, ..] if post => "ListSubscriptions",
        [Some("iap"), Some("subscription"), Some("apple"), None, ..] if post => {
            "ValidateSubscriptionApple"
        }
        [Some("iap"), Some("subscription"), Some("google"), None, ..] if post => {
            "ValidateSubscriptionGoogle"
        }
        [Some("iap"), Some("subscription"), Some(_), None, ..] if get => "GetSubscription",
        _ => return None,
    };
    Some(Called::Api(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_map_to_nakamas_method_names() {
        for (method, path, want) in [
            (
                Method::GET,
                "/healthcheck",
                Some(Called::Api("Healthcheck")),
            ),
            (
                Method::POST,
                "/v2/account/authenticate/device",
                Some(Called::Api("AuthenticateDevice")),
            ),
            (
                Method::PUT,
                "/v2/account",
                Some(Called::Api("UpdateAccount")),
            ),
            (
                Method::POST,
                "/v2/group/abc/kick",
                Some(Called::Api("KickGroupUsers")),
            ),
            (
                Method::GET,
                "/v2/storage/saves/u1",
                Some(Called::Api("ListStorageObjects")),
            ),
            (
                Method::GET,
                "/v2/tournament/t/owner/o",
                Some(Called::Api("ListTournamentRecordsAroundOwner")),
            ),
            (Method::POST, "/v2/rpc/echo", Some(Called::Rpc("echo"))),
            (
                Method::POST,
                "/v2/account/authenticate/steam",
                Some(Called::Api("AuthenticateSteam")),
            ),
            (Method::POST, "/v2/account/authenticate/xbox", None),
            (Method::GET, "/v2/nothing", None),
            (Method::GET, "/v2/a/b/c/d/e/f", None),
            (Method::GET, "/ws", None),
        ] {
            assert_eq!(api_of(&method, path), want, "{method} {path}");
        }
    }
}
