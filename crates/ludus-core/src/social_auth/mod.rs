//! Platform sign-in (Apple, Google, Facebook, Facebook Instant Games, Game
//! Center, Steam): pure verification of what each platform signs (`jwt`,
//! `gamecenter`, `instant`) and the `SocialVerifier` that fetches and caches
//! the platforms' keys and answers through one small HTTP seam
//! ([`SocialHttp`]) that the server implements.

pub mod gamecenter;
pub mod google_play;
pub mod instant;
pub mod jwt;
mod verifier;

pub use gamecenter::GameCenterProof;
pub use google_play::GooglePlayClient;
pub use verifier::{
    AppleSettings, BaseUrl, FriendSource, GameCenterSettings, GoogleSettings, InstantGameSettings,
    LimitedLoginSettings, MaxImportedFriends, SocialCredential, SocialHttp, SocialSettings,
    SocialVerifier, SteamSettings, TimeoutMs, Verified,
};
