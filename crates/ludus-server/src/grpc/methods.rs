//! The methods of Nakama's gRPC service `nakama.api.Nakama`, each with the
//! REST route that serves the same call: its verb, its path (with `{field}`
//! parameters) and which part of the request is the JSON body. These are
//! the HTTP bindings of Nakama's `apigrpc.proto`; the REST gateway and the
//! gRPC transport meet on them, so one handler serves both.

use ludus_proto::api;
use ludus_proto::pbjson_types::Empty;
use ludus_proto::prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The HTTP verb of a method's REST route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Get,
    Post,
    Put,
    Delete,
}

/// Which part of the request message the REST route takes as its body; the
/// fields that are neither in the path nor in the body go in the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    /// No body: every field that is not in the path is a query parameter.
    None,
    /// The whole message but its path fields (`body: "*"`).
    All,
    /// One message field (`body: "account"`); absent, it is an empty object.
    Field(&'static str),
    /// One string field sent as a JSON string (`body: "payload"` of `RpcFunc`).
    StringField(&'static str),
}

/// Why a request message could not be turned into a REST request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("request is not a valid protobuf message: {0}")]
    Protobuf(#[from] ludus_proto::prost::DecodeError),
    #[error("request cannot be written as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Decodes a method's protobuf request into its protojson value.
type DecodeRequest = fn(&[u8]) -> Result<serde_json::Value, DecodeError>;
/// Reads a method's request from protojson (either field name form) into
/// the protojson value [`DecodeRequest`] makes.
type ReadRequest = fn(&[u8]) -> Result<serde_json::Value, ludus_proto::JsonError>;
/// Encodes a REST answer's JSON as the method's protobuf response.
type EncodeResponse = fn(&[u8]) -> Result<Vec<u8>, ludus_proto::JsonError>;

/// One method of the service.
pub(crate) struct Method {
    pub name: &'static str,
    pub verb: Verb,
    /// Route paths, most specific first: the first whose `{field}`s are all
    /// set in the request is used.
    pub paths: &'static [&'static str],
    pub body: Body,
    /// The request message's type as written below (`api::Name`, `Empty`).
    pub request: &'static str,
    pub decode: DecodeRequest,
    pub read_json: ReadRequest,
    pub encode: EncodeResponse,
}

fn decode<T: Message + Default + Serialize>(
    bytes: &[u8],
) -> Result<serde_json::Value, DecodeError> {
    Ok(serde_json::to_value(T::decode(bytes)?)?)
}

fn read_json<T: Message + Default + Serialize + DeserializeOwned>(
    json: &[u8],
) -> Result<serde_json::Value, ludus_proto::JsonError> {
    let message: T = ludus_proto::from_json(json)?;
    serde_json::to_value(message)
}

fn encode<T: Message + DeserializeOwned>(json: &[u8]) -> Result<Vec<u8>, ludus_proto::JsonError> {
    let message: T = if json.is_empty() {
        ludus_proto::from_json(b"{}")?
    } else {
        ludus_proto::from_json(json)?
    };
    Ok(message.encode_to_vec())
}

impl Method {
    /// The request message's name in `nakama.api`; `Empty` when it takes
    /// none.
    pub(crate) fn request_name(&self) -> &'static str {
        self.request
            .rsplit([':', ' '])
            .next()
            .unwrap_or(self.request)
    }
}

/// Finds a method by its name (the last segment of the gRPC path).
pub(crate) fn find(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

macro_rules! methods {
    ($($name:ident($req:ty) -> $res:ty: $verb:ident [$($path:literal),+] $body:expr;)*) => {
        /// Every method of `nakama.api.Nakama` that Ludus serves.
        pub(crate) static METHODS: &[Method] = &[$(Method {
            name: stringify!($name),
            verb: Verb::$verb,
            paths: &[$($path),+],
            body: $body,
            request: stringify!($req),
            decode: decode::<$req>,
            read_json: read_json::<$req>,
            encode: encode::<$res>,
        }),*];
    };
}

use Body::{All, Field, None as NoBody, StringField};

methods! {
    AddFriends(api::AddFriendsRequest) -> Empty: Post ["/v2/friend"] NoBody;
    AddGroupUsers(api::AddGroupUsersRequest) -> Empty: Post ["/v2/group/{group_id}/add"] NoBody;
    SessionRefresh(api::SessionRefreshRequest) -> api::Session: Post ["/v2/account/session/refresh"] All;
    SessionLogout(api::SessionLogoutRequest) -> Empty: Post ["/v2/session/logout"] All;
    AuthenticateApple(api::AuthenticateAppleRequest) -> api::Session: Post ["/v2/account/authenticate/apple"] Field("account");
    AuthenticateCustom(api::AuthenticateCustomRequest) -> api::Session: Post ["/v2/account/authenticate/custom"] Field("account");
    AuthenticateDevice(api::AuthenticateDeviceRequest) -> api::Session: Post ["/v2/account/authenticate/device"] Field("account");
    AuthenticateEmail(api::AuthenticateEmailRequest) -> api::Session: Post ["/v2/account/authenticate/email"] Field("account");
    AuthenticateFacebook(api::AuthenticateFacebookRequest) -> api::Session: Post ["/v2/account/authenticate/facebook"] Field("account");
    AuthenticateFacebookInstantGame(api::AuthenticateFacebookInstantGameRequest) -> api::Session: Post ["/v2/account/authenticate/facebookinstantgame"] Field("account");
    AuthenticateGameCenter(api::AuthenticateGameCenterRequest) -> api::Session: Post ["/v2/account/authenticate/gamecenter"] Field("account");
    AuthenticateGoogle(api::AuthenticateGoogleRequest) -> api::Session: Post ["/v2/account/authenticate/google"] Field("account");
    AuthenticateSteam(api::AuthenticateSteamRequest) -> api::Session: Post ["/v2/account/authenticate/steam"] Field("account");
    BanGroupUsers(api::BanGroupUsersRequest) -> Empty: Post ["/v2/group/{group_id}/ban"] NoBody;
    BlockFriends(api::BlockFriendsRequest) -> Empty: Post ["/v2/friend/block"] NoBody;
    CreateGroup(api::CreateGroupRequest) -> api::Group: Post ["/v2/group"] All;
    DeleteAccount(Empty) -> Empty: Delete ["/v2/account"] NoBody;
    DeleteFriends(api::DeleteFriendsRequest) -> Empty: Delete ["/v2/friend"] NoBody;
    DeleteGroup(api::DeleteGroupRequest) -> Empty: Delete ["/v2/group/{group_id}"] NoBody;
    DeleteLeaderboardRecord(api::DeleteLeaderboardRecordRequest) -> Empty: Delete ["/v2/leaderboard/{leaderboard_id}"] NoBody;
    DeleteNotifications(api::DeleteNotificationsRequest) -> Empty: Delete ["/v2/notification"] NoBody;
    DeleteTournamentRecord(api::DeleteTournamentRecordRequest) -> Empty: Delete ["/v2/tournament/{tournament_id}"] NoBody;
    DeleteStorageObjects(api::DeleteStorageObjectsRequest) -> Empty: Put ["/v2/storage/delete"] All;
    Event(api::Event) -> Empty: Post ["/v2/event"] All;
    GetAccount(Empty) -> api::Account: Get ["/v2/account"] NoBody;
    GetUsers(api::GetUsersRequest) -> api::Users: Get ["/v2/user"] NoBody;
    GetSubscription(api::GetSubscriptionRequest) -> api::ValidatedSubscription: Get ["/v2/iap/subscription/{product_id}"] NoBody;
    GetMatchmakerStats(Empty) -> api::MatchmakerStats: Get ["/v2/matchmaker/stats"] NoBody;
    Healthcheck(Empty) -> Empty: Get ["/healthcheck"] NoBody;
    ImportFacebookFriends(api::ImportFacebookFriendsRequest) -> Empty: Post ["/v2/friend/facebook"] Field("account");
    ImportSteamFriends(api::ImportSteamFriendsRequest) -> Empty: Post ["/v2/friend/steam"] Field("account");
    JoinGroup(api::JoinGroupRequest) -> Empty: Post ["/v2/group/{group_id}/join"] NoBody;
    JoinTournament(api::JoinTournamentRequest) -> Empty: Post ["/v2/tournament/{tournament_id}/join"] NoBody;
    KickGroupUsers(api::KickGroupUsersRequest) -> Empty: Post ["/v2/group/{group_id}/kick"] NoBody;
    LeaveGroup(api::LeaveGroupRequest) -> Empty: Post ["/v2/group/{group_id}/leave"] NoBody;
    LinkApple(api::AccountApple) -> Empty: Post ["/v2/account/link/apple"] All;
    LinkCustom(api::AccountCustom) -> Empty: Post ["/v2/account/link/custom"] All;
    LinkDevice(api::AccountDevice) -> Empty: Post ["/v2/account/link/device"] All;
    LinkEmail(api::AccountEmail) -> Empty: Post ["/v2/account/link/email"] All;
    LinkFacebook(api::LinkFacebookRequest) -> Empty: Post ["/v2/account/link/facebook"] Field("account");
    LinkFacebookInstantGame(api::AccountFacebookInstantGame) -> Empty: Post ["/v2/account/link/facebookinstantgame"] All;
    LinkGameCenter(api::AccountGameCenter) -> Empty: Post ["/v2/account/link/gamecenter"] All;
    LinkGoogle(api::AccountGoogle) -> Empty: Post ["/v2/account/link/google"] All;
    LinkSteam(api::LinkSteamRequest) -> Empty: Post ["/v2/account/link/steam"] All;
    ListChannelMessages(api::ListChannelMessagesRequest) -> api::ChannelMessageList: Get ["/v2/channel/{channel_id}"] NoBody;
    ListFriends(api::ListFriendsRequest) -> api::FriendList: Get ["/v2/friend"] NoBody;
    ListFriendsOfFriends(api::ListFriendsOfFriendsRequest) -> api::FriendsOfFriendsList: Get ["/v2/friend/friends"] NoBody;
    ListGroups(api::ListGroupsRequest) -> api::GroupList: Get ["/v2/group"] NoBody;
    ListGroupUsers(api::ListGroupUsersRequest) -> api::GroupUserList: Get ["/v2/group/{group_id}/user"] NoBody;
    ListLeaderboardRecords(api::ListLeaderboardRecordsRequest) -> api::LeaderboardRecordList: Get ["/v2/leaderboard/{leaderboard_id}"] NoBody;
    ListLeaderboardRecordsAroundOwner(api::ListLeaderboardRecordsAroundOwnerRequest) -> api::LeaderboardRecordList: Get ["/v2/leaderboard/{leaderboard_id}/owner/{owner_id}"] NoBody;
    ListMatches(api::ListMatchesRequest) -> api::MatchList: Get ["/v2/match"] NoBody;
    ListParties(api::ListPartiesRequest) -> api::PartyList: Get ["/v2/party"] NoBody;
    ListNotifications(api::ListNotificationsRequest) -> api::NotificationList: Get ["/v2/notification"] NoBody;
    ListStorageObjects(api::ListStorageObjectsRequest) -> api::StorageObjectList: Get ["/v2/storage/{collection}/{user_id}", "/v2/storage/{collection}"] NoBody;
    ListSubscriptions(api::ListSubscriptionsRequest) -> api::SubscriptionList: Post ["/v2/iap/subscription"] All;
    ListTournaments(api::ListTournamentsRequest) -> api::TournamentList: Get ["/v2/tournament"] NoBody;
    ListTournamentRecords(api::ListTournamentRecordsRequest) -> api::TournamentRecordList: Get ["/v2/tournament/{tournament_id}"] NoBody;
    ListTournamentRecordsAroundOwner(api::ListTournamentRecordsAroundOwnerRequest) -> api::TournamentRecordList: Get ["/v2/tournament/{tournament_id}/owner/{owner_id}"] NoBody;
    ListUserGroups(api::ListUserGroupsRequest) -> api::UserGroupList: Get ["/v2/user/{user_id}/group"] NoBody;
    PromoteGroupUsers(api::PromoteGroupUsersRequest) -> Empty: Post ["/v2/group/{group_id}/promote"] NoBody;
    DemoteGroupUsers(api::DemoteGroupUsersRequest) -> Empty: Post ["/v2/group/{group_id}/demote"] NoBody;
    ReadStorageObjects(api::ReadStorageObjectsRequest) -> api::StorageObjects: Post ["/v2/storage"] All;
    RpcFunc(api::Rpc) -> api::Rpc: Post ["/v2/rpc/{id}"] StringField("payload");
    UnlinkApple(api::AccountApple) -> Empty: Post ["/v2/account/unlink/apple"] All;
    UnlinkCustom(api::AccountCustom) -> Empty: Post ["/v2/account/unlink/custom"] All;
    UnlinkDevice(api::AccountDevice) -> Empty: Post ["/v2/account/unlink/device"] All;
    UnlinkEmail(api::AccountEmail) -> Empty: Post ["/v2/account/unlink/email"] All;
    UnlinkFacebook(api::AccountFacebook) -> Empty: Post ["/v2/account/unlink/facebook"] All;
    UnlinkFacebookInstantGame(api::AccountFacebookInstantGame) -> Empty: Post ["/v2/account/unlink/facebookinstantgame"] All;
    UnlinkGameCenter(api::AccountGameCenter) -> Empty: Post ["/v2/account/unlink/gamecenter"] All;
    UnlinkGoogle(api::AccountGoogle) -> Empty: Post ["/v2/account/unlink/google"] All;
    UnlinkSteam(api::AccountSteam) -> Empty: Post ["/v2/account/unlink/steam"] All;
    UpdateAccount(api::UpdateAccountRequest) -> Empty: Put ["/v2/account"] All;
    UpdateGroup(api::UpdateGroupRequest) -> Empty: Put ["/v2/group/{group_id}"] All;
    ValidatePurchaseApple(api::ValidatePurchaseAppleRequest) -> api::ValidatePurchaseResponse: Post ["/v2/iap/purchase/apple"] All;
    ValidateSubscriptionApple(api::ValidateSubscriptionAppleRequest) -> api::ValidateSubscriptionResponse: Post ["/v2/iap/subscription/apple"] All;
    ValidatePurchaseGoogle(api::ValidatePurchaseGoogleRequest) -> api::ValidatePurchaseResponse: Post ["/v2/iap/purchase/google"] All;
    ValidateSubscriptionGoogle(api::ValidateSubscriptionGoogleRequest) -> api::ValidateSubscriptionResponse: Post ["/v2/iap/subscription/google"] All;
    ValidatePurchaseHuawei(api::ValidatePurchaseHuaweiRequest) -> api::ValidatePurchaseResponse: Post ["/v2/iap/purchase/huawei"] All;
    ValidatePurchaseSamsung(api::ValidatePurchaseSamsungRequest) -> api::ValidatePurchaseResponse: Post ["/v2/iap/purchase/samsung"] All;
    ValidatePurchaseFacebookInstant(api::ValidatePurchaseFacebookInstantRequest) -> api::ValidatePurchaseResponse: Post ["/v2/iap/purchase/facebookinstant"] All;
    WriteLeaderboardRecord(api::WriteLeaderboardRecordRequest) -> api::LeaderboardRecord: Post ["/v2/leaderboard/{leaderboard_id}"] Field("record");
    WriteStorageObjects(api::WriteStorageObjectsRequest) -> api::StorageObjectAcks: Put ["/v2/storage"] All;
    WriteTournamentRecord(api::WriteTournamentRecordRequest) -> api::LeaderboardRecord: Put ["/v2/tournament/{tournament_id}"] Field("record");
}
