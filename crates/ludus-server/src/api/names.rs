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
    "AuthenticateApple",
    "AuthenticateFacebook",
    "AuthenticateFacebookInstantGame",
    "AuthenticateGameCenter",
    "AuthenticateGoogle",
    "AuthenticateSteam",
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
            ("unlink", "apple") => "UnlinkApple",
            ("link", "facebook") => "LinkFacebook",
            ("unlink", "facebook") => "UnlinkFacebook",
            ("link", "facebookinstantgame") => "LinkFacebookInstantGame",
            ("unlink", "facebookinstantgame") => "UnlinkFacebookInstantGame",
            ("link", "gamecenter") => "LinkGameCenter",
            ("unlink", "gamecenter") => "UnlinkGameCenter",
            ("link", "google") => "LinkGoogle",
            ("unlink", "google") => "UnlinkGoogle",
            ("link", "steam") => "LinkSteam",
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
            (Method::POST, "/v2/account/authenticate/nowhere", None),
            (Method::GET, "/v2/nothing", None),
            (Method::GET, "/v2/a/b/c/d/e/f", None),
            (Method::GET, "/ws", None),
        ] {
            assert_eq!(api_of(&method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn every_name_answered_is_in_the_list() {
        // Each name in the list is reachable, so it has a slot, and no slot
        // is wasted on a name nothing answers.
        let paths = [
            (Method::GET, "/healthcheck"),
            (Method::POST, "/v2/account/authenticate/device"),
            (Method::POST, "/v2/account/authenticate/email"),
            (Method::POST, "/v2/account/authenticate/custom"),
            (Method::POST, "/v2/account/session/refresh"),
            (Method::POST, "/v2/session/logout"),
            (Method::GET, "/v2/account"),
            (Method::PUT, "/v2/account"),
            (Method::DELETE, "/v2/account"),
            (Method::POST, "/v2/account/link/device"),
            (Method::POST, "/v2/account/link/email"),
            (Method::POST, "/v2/account/link/custom"),
            (Method::POST, "/v2/account/unlink/device"),
            (Method::POST, "/v2/account/unlink/email"),
            (Method::POST, "/v2/account/unlink/custom"),
            (Method::GET, "/v2/user"),
            (Method::GET, "/v2/friend"),
            (Method::POST, "/v2/friend"),
            (Method::DELETE, "/v2/friend"),
            (Method::POST, "/v2/friend/block"),
            (Method::GET, "/v2/friend/friends"),
            (Method::GET, "/v2/group"),
            (Method::POST, "/v2/group"),
            (Method::PUT, "/v2/group/g"),
            (Method::DELETE, "/v2/group/g"),
            (Method::POST, "/v2/group/g/join"),
            (Method::POST, "/v2/group/g/leave"),
            (Method::POST, "/v2/group/g/add"),
            (Method::POST, "/v2/group/g/kick"),
            (Method::POST, "/v2/group/g/ban"),
            (Method::POST, "/v2/group/g/promote"),
            (Method::POST, "/v2/group/g/demote"),
            (Method::GET, "/v2/group/g/user"),
            (Method::GET, "/v2/user/u/group"),
            (Method::POST, "/v2/storage"),
            (Method::PUT, "/v2/storage"),
            (Method::PUT, "/v2/storage/delete"),
            (Method::GET, "/v2/storage/c"),
            (Method::GET, "/v2/channel/c"),
            (Method::GET, "/v2/notification"),
            (Method::DELETE, "/v2/notification"),
            (Method::GET, "/v2/leaderboard/l"),
            (Method::POST, "/v2/leaderboard/l"),
            (Method::DELETE, "/v2/leaderboard/l"),
            (Method::GET, "/v2/leaderboard/l/owner/o"),
            (Method::GET, "/v2/tournament"),
            (Method::GET, "/v2/tournament/t"),
            (Method::PUT, "/v2/tournament/t"),
            (Method::DELETE, "/v2/tournament/t"),
            (Method::POST, "/v2/tournament/t/join"),
            (Method::GET, "/v2/tournament/t/owner/o"),
            (Method::GET, "/v2/party"),
            (Method::GET, "/v2/matchmaker/stats"),
            (Method::GET, "/v2/match"),
            (Method::POST, "/v2/event"),
            (Method::POST, "/v2/account/authenticate/apple"),
            (Method::POST, "/v2/account/link/apple"),
            (Method::POST, "/v2/account/unlink/apple"),
            (Method::POST, "/v2/account/authenticate/facebook"),
            (Method::POST, "/v2/account/link/facebook"),
            (Method::POST, "/v2/account/unlink/facebook"),
            (Method::POST, "/v2/account/authenticate/facebookinstantgame"),
            (Method::POST, "/v2/account/link/facebookinstantgame"),
            (Method::POST, "/v2/account/unlink/facebookinstantgame"),
            (Method::POST, "/v2/account/authenticate/gamecenter"),
            (Method::POST, "/v2/account/link/gamecenter"),
            (Method::POST, "/v2/account/unlink/gamecenter"),
            (Method::POST, "/v2/account/authenticate/google"),
            (Method::POST, "/v2/account/link/google"),
            (Method::POST, "/v2/account/unlink/google"),
            (Method::POST, "/v2/account/authenticate/steam"),
            (Method::POST, "/v2/account/link/steam"),
            (Method::POST, "/v2/account/unlink/steam"),
        ];
        let mut answered: Vec<&str> = paths
            .iter()
            .map(|(m, p)| match api_of(m, p) {
                Some(Called::Api(name)) => name,
                other => panic!("{m} {p}: {other:?}"),
            })
            .collect();
        answered.sort();
        answered.dedup();
        let mut names = API_NAMES.to_vec();
        names.sort();
        assert_eq!(answered, names);
    }
}
