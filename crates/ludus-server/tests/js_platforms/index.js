// nk.authenticate*, nk.link* and nk.unlink* of the platforms with Nakama's
// JS argument lists, and Facebook's and Steam's importFriends argument:
// the JS twins of tests/lua/platform_sign_in_test.lua and
// friend_import_test.lua, driven by tests/http/platform_sign_in.rs and
// tests/http/friend_import.rs. Each call's outcome is its answer or its
// error message.

function outcome(f) {
  try {
    var r = f();
    return r === undefined || r === null ? {} : r;
  } catch (e) {
    return String(e.message || e);
  }
}

function platforms(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  var gc = p.gamecenter;
  var gc2 = p.gamecenter2;
  // Sign-in: created, then found; create false finds no one.
  out.apple_new = outcome(function () { return nk.authenticateApple(p.apple, "jsapple", true); });
  out.apple_again = outcome(function () { return nk.authenticateApple(p.apple); });
  out.google_new = outcome(function () { return nk.authenticateGoogle(p.google, undefined, true); });
  out.facebook_new = outcome(function () { return nk.authenticateFacebook(p.facebook, false, "jsfacebook", true); });
  out.instant_new = outcome(function () { return nk.authenticateFacebookInstantGame(p.instant); });
  out.gamecenter_new = outcome(function () {
    return nk.authenticateGameCenter(gc.player_id, gc.bundle_id, gc.timestamp_seconds, gc.salt,
      gc.signature, gc.public_key_url, "jsgamecenter", true);
  });
  out.steam_new = outcome(function () { return nk.authenticateSteam(p.steam, false, "jssteam", true); });
  out.steam_no_create = outcome(function () { return nk.authenticateSteam(p.steam_unknown, false, undefined, false); });
  out.google_forged = outcome(function () { return nk.authenticateGoogle(p.forged); });

  // Linking to the caller, then unlinking (the caller's device stays).
  var uid = ctx.userId;
  out.link_apple = outcome(function () { return nk.linkApple(uid, p.apple2); });
  out.link_google = outcome(function () { return nk.linkGoogle(uid, p.google2); });
  out.link_facebook = outcome(function () { return nk.linkFacebook(uid, "name", p.facebook2, false); });
  out.link_instant = outcome(function () { return nk.linkFacebookInstantGame(uid, p.instant2); });
  out.link_gamecenter = outcome(function () {
    return nk.linkGameCenter(uid, gc2.player_id, gc2.bundle_id, gc2.timestamp_seconds, gc2.salt,
      gc2.signature, gc2.public_key_url);
  });
  out.link_steam = outcome(function () { return nk.linkSteam(uid, "name", p.steam2, false); });
  out.link_taken = outcome(function () { return nk.linkApple(uid, p.apple); });
  out.link_device = outcome(function () { return nk.linkDevice(uid, "js-platform-device-2"); });
  out.unlink_apple = outcome(function () { return nk.unlinkApple(uid, p.apple2); });
  out.unlink_google = outcome(function () { return nk.unlinkGoogle(uid, p.google2); });
  out.unlink_facebook = outcome(function () { return nk.unlinkFacebook(uid, p.facebook2); });
  out.unlink_instant = outcome(function () { return nk.unlinkFacebookInstantGame(uid, p.instant2); });
  out.unlink_gamecenter = outcome(function () {
    return nk.unlinkGameCenter(uid, gc2.player_id, gc2.bundle_id, gc2.timestamp_seconds, gc2.salt,
      gc2.signature, gc2.public_key_url);
  });
  out.unlink_forged = outcome(function () { return nk.unlinkGoogle(uid, p.forged); });
  // A Steam id the caller does not hold is refused; its own goes. The
  // second device goes, and the email linking Google brought (unlinkEmail
  // without an id: whichever is linked).
  out.unlink_steam_other = outcome(function () { return nk.unlinkSteam(uid, p.steam_unknown); });
  out.unlink_steam = outcome(function () { return nk.unlinkSteam(uid, p.steam2); });
  out.unlink_device = outcome(function () { return nk.unlinkDevice(uid, "js-platform-device-2"); });
  out.unlink_email = outcome(function () { return nk.unlinkEmail(uid); });
  return JSON.stringify(out);
}

// importFriends: authenticateSteam imports by default and not with false;
// linkFacebook imports by default.
function friendImport(ctx, logger, nk, payload) {
  var p = JSON.parse(payload);
  var out = {};
  function count(userId) {
    return nk.friendsList(userId, 100).friends.length;
  }
  var imported = nk.authenticateSteam(p.steam, undefined, "jssteam800");
  out.steam = count(imported.userId);
  var quiet = nk.authenticateSteam(p.steam_quiet, false, "jssteam900");
  out.steam_quiet = count(quiet.userId);
  nk.linkFacebook(ctx.userId, ctx.username, p.facebook);
  return JSON.stringify(out);
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerRpc("js_platforms", platforms);
  initializer.registerRpc("js_friend_import", friendImport);
}
